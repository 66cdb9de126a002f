//! `pipeline.workflow`: the typed SSA workflow — manifest, effects, inputs,
//! outputs, components, state, serving and steps. Every structure here is
//! closed: an unknown key is an error.

use super::contract::{LiteralValue, ScalarValue, TensorContract};
use super::state::{ServingContract, StateCell};
use super::steps::Step;
use crate::tagged_enum;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// `pipeline`: the container of the workflow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    /// The executable workflow.
    pub workflow: WorkflowSpec,
}

/// `pipeline.workflow`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowSpec {
    /// Capabilities and pinned adapter ABIs.
    pub manifest: Manifest,
    /// Workflow inputs by SSA value name.
    pub inputs: Option<IndexMap<String, WorkflowInput>>,
    /// Workflow outputs by name.
    pub outputs: Option<IndexMap<String, WorkflowOutput>>,
    /// Components by name.
    pub components: IndexMap<String, Component>,
    /// State cells by name.
    pub state: Option<IndexMap<String, StateCell>>,
    /// Serving/state-service contract.
    pub serving: Option<ServingContract>,
    /// The top-level step list (executed in order).
    pub steps: Vec<Step>,
    /// Effect domains by name.
    pub effects: Option<IndexMap<String, EffectContract>>,
}

/// `manifest`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Adapter ABI id -> pinned version.
    pub adapter_abis: Option<IndexMap<String, String>>,
    /// Declared capability ids (a set; order kept as written).
    pub capabilities: Option<Vec<String>>,
}

/// Retry class of an effect domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryClass {
    /// No observable effect.
    Pure,
    /// Safe to repeat.
    Idempotent,
    /// All-or-nothing.
    Transactional,
    /// Must not be repeated.
    NonRetryable,
}

/// `max_depth` of a rewindable domain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rewindable {
    /// How many positions the domain can rewind.
    pub max_depth: u64,
}

tagged_enum! {
    /// Whether an effect domain tolerates speculative execution.
    pub enum SpeculationSafety {
        /// Speculation is not allowed.
        "none" => None,
        /// The domain state can be cloned.
        "clonable" => Clonable,
        /// The domain can rewind up to `max_depth` positions.
        "rewindable" => Rewindable(Rewindable),
    }
}

/// `effects.<domain>`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffectContract {
    /// Retry class.
    pub retry: RetryClass,
    /// Speculation safety (default `{kind: none}`).
    pub speculation_safety: Option<SpeculationSafety>,
}

/// Runtime meaning of a request input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum RuntimeInputRole {
    PromptText,
    PromptTokens,
    NegativePromptText,
    NegativePromptTokens,
    Media,
    MaxIterations,
    MaxOutputTokens,
    Seed,
    GuidanceScale,
    Width,
    Height,
    DenoisingStrength,
    SamplingTemperature,
    SamplingTopK,
    SamplingTopP,
    SamplingMinP,
    Constraint,
    SessionId,
    AdapterSegments,
    AdapterCounts,
    AdapterScales,
    AdapterActive,
    RowSelection,
}

/// A versioned runtime role.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeRole {
    /// Role version string (e.g. `'1.0'`).
    pub version: String,
    /// The role.
    pub role: RuntimeInputRole,
}

tagged_enum! {
    /// `inputs.<name>.role`.
    pub enum InputRole {
        /// A runtime-interpreted role.
        "runtime" => Runtime(RuntimeRole),
        /// An application tensor with no runtime meaning.
        "opaque" => Opaque,
    }
}

/// `name` of an application source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplicationSource {
    /// Alias under which the caller may supply the tensor.
    pub name: String,
}

/// `path` of an artifact source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactSource {
    /// Package-relative file path.
    pub path: String,
}

tagged_enum! {
    /// `inputs.<name>.source`: where an input's value comes from.
    pub enum InputSource {
        /// From the request (role table) or a caller tensor of the same name.
        "request" => Request,
        /// From the application, by name or alias; else the default.
        "application" => Application(ApplicationSource),
        /// The literal `default`.
        "literal" => Literal,
        /// A file in the package.
        "artifact" => Artifact(ArtifactSource),
    }
}

/// `inputs.<name>`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowInput {
    /// The value's contract.
    pub contract: TensorContract,
    /// Runtime or opaque role.
    pub role: InputRole,
    /// Value source.
    pub source: InputSource,
    /// Whether the input must be present (default true).
    pub required: Option<bool>,
    /// Literal default (scalar or flat list).
    pub default: Option<LiteralValue>,
    /// Name of the bool presence value defined for an optional input.
    pub present_as: Option<String>,
    /// Cache-dependency fact (default false).
    pub externally_suppliable: Option<bool>,
}

impl WorkflowInput {
    /// Whether the input is required (default true).
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(true)
    }
}

/// What an output carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum OutputRole {
    Tokens,
    Text,
    Image,
    Video,
    Audio,
    Tensor,
    Event,
}

/// Whether an output is delivered before or after the boundary adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum OutputStage {
    PreAdapter,
    PostAdapter,
}

/// Pixel value range of an image output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum ValueRange {
    ZeroToOne,
    NegativeOneToOne,
    ZeroTo255,
}

/// Audio container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum MediaContainer {
    Raw,
    Wav,
}

/// Audio sample encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum MediaEncoding {
    PcmS16Le,
    PcmF32Le,
}

/// Audio delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum MediaDelivery {
    Buffered,
    Streaming,
}

/// `outputs.<name>.media` (audio outputs).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaContract {
    /// Container format.
    pub container: MediaContainer,
    /// Sample encoding.
    pub encoding: MediaEncoding,
    /// Output sample rate.
    pub sample_rate_hz: Option<u32>,
    /// Rate of the produced samples, when the boundary resamples.
    pub source_sample_rate_hz: Option<u32>,
    /// Channel count.
    pub channels: Option<u16>,
    /// Buffered (default) or streaming.
    pub delivery: Option<MediaDelivery>,
}

/// `outputs.<name>`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowOutput {
    /// The output contract.
    pub contract: TensorContract,
    /// What the output carries.
    pub role: OutputRole,
    /// Image value range (image outputs only).
    pub value_range: Option<ValueRange>,
    /// Adapter stage.
    pub stage: OutputStage,
    /// Audio media contract (audio outputs only).
    pub media: Option<MediaContract>,
}

/// `artifact` of an ONNX implementation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnnxImplementation {
    /// Package-relative path of the `.onnx` or `.onnx.textproto` file.
    pub artifact: String,
}

/// Fields of an adapter implementation.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterImplementation {
    /// ABI id.
    pub abi: String,
    /// Pinned ABI version.
    pub version: String,
    /// Optional package-relative artifact.
    pub artifact: Option<String>,
}

tagged_enum! {
    /// `components.<name>.implementation`.
    pub enum Implementation {
        /// An ONNX graph.
        "onnx" => Onnx(OnnxImplementation),
        /// A manifest-pinned native ABI.
        "adapter" => Adapter(AdapterImplementation),
        /// A runtime binding (identity pass-through in the reference).
        "binding" => Binding,
    }
}

/// Semantic role of a component port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum PortRole {
    TokenIds,
    InputsEmbeds,
    AttentionMask,
    PositionIds,
    Logits,
    HiddenStates,
    EncoderHiddenStates,
    AudioFeatures,
}

/// `components.<name>.ports`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ports {
    /// Input ports by name.
    pub inputs: Option<IndexMap<String, TensorContract>>,
    /// Output ports by name.
    pub outputs: Option<IndexMap<String, TensorContract>>,
    /// Port name -> role.
    pub roles: Option<IndexMap<String, PortRole>>,
}

/// Substitution class of a component contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Equivalence {
    Bitwise,
    DistributionPreserving,
    Semantic,
}

/// `components.<name>.contract`: a semantic ABI `id@version`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentContract {
    /// Contract id, e.g. `onnx-genai.token-sampler`.
    pub id: String,
    /// Contract version string.
    pub version: String,
    /// Semantic role -> concrete port name.
    pub bindings: Option<IndexMap<String, String>>,
    /// Role-less scalar parameters.
    pub parameters: Option<IndexMap<String, ScalarValue>>,
    /// Equivalence class (default `semantic`).
    pub equivalence: Option<Equivalence>,
}

/// `components.<name>.row_scope`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowScope {
    /// The request axis of row-scoped ports.
    pub axis: u64,
    /// Whether the component keeps per-row state (default false).
    pub stateful: Option<bool>,
}

/// `components.<name>`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// How the component is executed.
    pub implementation: Implementation,
    /// Declared ports (absent on an ONNX component: inferred from the graph).
    pub ports: Option<Ports>,
    /// Semantic contract.
    pub contract: Option<ComponentContract>,
    /// Whether a request may substitute another component (default false).
    pub application_overridable: Option<bool>,
    /// Effect domains the component threads.
    pub effects: Option<Vec<String>>,
    /// Row scope of per-request state.
    pub row_scope: Option<RowScope>,
    /// State facts that affect caching.
    pub cache_affects_state: Option<Vec<String>>,
}
