//! The other top-level sections: `model`, `preprocessing`, `package`,
//! `generation`, `profiles` and `speculative`. Closed where the format closes
//! them; open sections keep unknown keys verbatim.

use super::contract::TensorContract;
use crate::{open_struct, tagged_enum};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

open_struct! {
    /// `model`: package-wide baked facts. Open: unknown keys are kept.
    pub struct Model {
        /// Deprecated legacy port ABI; forbidden beside a workflow.
        "io" => io: ModelIo,
        /// Parallelism facts.
        "sharding" => sharding: Sharding,
        /// Runtime-configurable features.
        "runtime_configurable" => runtime_configurable: RuntimeConfigurable,
        /// The longest token sequence the model takes; prompt-token inputs
        /// beyond it are refused before a run.
        "max_sequence_length" => max_sequence_length: u64,
    }
}

/// `model.io` (legacy, closed). Field contents are kept as written.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct ModelIo {
    pub token_input: Option<Value>,
    pub inputs_embeds_input: Option<Value>,
    pub sequence_source: Option<Value>,
    pub attention_mask_input: Option<Value>,
    pub position_ids_input: Option<Value>,
    pub encoder_hidden_states_input: Option<Value>,
    pub audio_features_input: Option<Value>,
    pub logits_output: Option<Value>,
    pub hidden_output: Option<Value>,
    pub kv_inputs: Option<Value>,
    pub kv_outputs: Option<Value>,
    pub kv_layout: Option<Value>,
    pub kv_ownership: Option<Value>,
    pub cross_kv_inputs: Option<Value>,
    pub cross_kv_outputs: Option<Value>,
    pub aliasing: Option<Value>,
    pub state_pairs: Option<Value>,
    pub optional_inputs: Option<Value>,
    pub static_cache: Option<Value>,
}

/// `model.sharding` (closed).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Sharding {
    pub tensor_parallel: Option<IndexMap<String, TensorShard>>,
    pub pipeline_parallel: Option<Vec<PipelineStage>>,
    pub expert_parallel: Option<ExpertShard>,
}

/// One tensor-parallel shard fact.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct TensorShard {
    pub shard_axis: u64,
    pub max_shards: u64,
    pub replicated: Option<Vec<String>>,
}

/// One pipeline-parallel stage.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct PipelineStage {
    pub components: Vec<String>,
    pub outputs: Option<Vec<String>>,
    pub state_groups: Option<Vec<String>>,
}

/// Expert-parallel facts.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct ExpertShard {
    pub expert_count: u64,
    pub contiguous_groups_only: Option<bool>,
    pub replicated: Option<Vec<String>>,
}

/// `model.runtime_configurable` (closed).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct RuntimeConfigurable {
    pub prefix_cache: Option<bool>,
    pub continuous_batching: Option<bool>,
    pub chunked_prefill: Option<Value>,
}

open_struct! {
    /// `preprocessing`: image/audio programs. Open.
    pub struct Preprocessing {
        /// The image program.
        "image" => image: PreprocessingProgram,
        /// The audio program.
        "audio" => audio: PreprocessingProgram,
    }
}

open_struct! {
    /// One preprocessing program: transforms (kept verbatim) and the SSA
    /// values it defines.
    pub struct PreprocessingProgram {
        /// Ordered transforms, kept as written.
        "transforms" => transforms: Vec<Value>,
        /// Output bindings.
        "outputs" => outputs: Vec<PreprocessingOutput>,
    }
}

open_struct! {
    /// One program output: an SSA value the program defines.
    pub struct PreprocessingOutput {
        /// SSA value name.
        "name" => name: String,
        /// Content kind (pixels, waveform, ...).
        "content" => content: String,
        /// Element type.
        "dtype" => dtype: String,
        /// Transform output it takes.
        "source" => source: String,
        /// Rank (audio programs).
        "rank" => rank: u64,
        /// Exact contract of the value.
        "contract" => contract: TensorContract,
        /// Must not be true.
        "optional" => optional: bool,
        /// Padding value.
        "pad_value" => pad_value: serde_json::Number,
    }
}

/// `package` (closed).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Package {
    /// Tokenizer facts.
    pub tokenizer: Option<Tokenizer>,
    /// Constraint languages.
    pub constraint_languages: Option<Vec<ConstraintLanguage>>,
}

/// `package.tokenizer`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Tokenizer {
    pub algorithm: String,
    pub vocab_size: u64,
    pub byte_level: Option<bool>,
    pub artifacts: Option<Vec<TokenizerArtifact>>,
    pub special_tokens: Option<IndexMap<String, SpecialToken>>,
}

/// A tokenizer file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenizerArtifact {
    /// Package-relative path.
    pub location: String,
}

/// A special token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct SpecialToken {
    pub id: u32,
    pub content: String,
}

/// A constraint language.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct ConstraintLanguage {
    pub dialect: String,
    pub version: String,
    pub component: String,
}

/// `generation` (closed; `defaults` is open and kept verbatim).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generation {
    /// Sampling defaults, kept as written.
    pub defaults: Option<Value>,
    /// Field -> the request input that overrides it.
    pub overrides: Option<IndexMap<String, GenerationOverride>>,
}

/// `generation.overrides.<field>`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerationOverride {
    /// The request-sourced workflow input.
    pub input: String,
    /// Accepted range.
    pub constraint: Option<OverrideConstraint>,
}

/// Accepted range of an override.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct OverrideConstraint {
    pub minimum: Option<serde_json::Number>,
    pub maximum: Option<serde_json::Number>,
}

/// Whether a reader must understand a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Requirement {
    Required,
    Ignorable,
}

/// `profiles.<name>` (closed, even when ignorable).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Profile {
    pub kind: String,
    pub version: String,
    pub requirement: Option<Requirement>,
    /// Role -> workflow output.
    pub outputs: Option<IndexMap<String, String>>,
    pub pooling: Option<Pooling>,
    pub batch_invariance: Option<String>,
    pub decoding: Option<Decoding>,
    pub generation_affecting: Option<bool>,
}

impl Profile {
    /// Whether the profile may be skipped by readers that do not know it.
    pub fn is_ignorable(&self) -> bool {
        self.requirement == Some(Requirement::Ignorable)
    }
}

/// Pooling kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum PoolingKind {
    Mean,
    Max,
    Cls,
    LastToken,
}

/// `pooling` of a profile.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Pooling {
    pub kind: PoolingKind,
    pub axis: u64,
    pub normalize: Option<bool>,
}

/// `decoding` of a profile.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Decoding {
    pub kind: String,
    pub blank_id: Option<u32>,
    pub collapse_repeats: Option<bool>,
    pub time_axis: u64,
    pub class_axis: u64,
    pub lengths: Option<String>,
    pub vocabulary: Option<DecodingVocabulary>,
}

/// `decoding.vocabulary`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct DecodingVocabulary {
    pub source: String,
    pub size: Option<u64>,
    pub tokens: Option<Vec<String>>,
    pub word_delimiter: Option<String>,
    pub ignored_tokens: Option<Vec<String>>,
}

/// Fields of a chained proposal execution.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct ChainedProposal {
    pub token_embedding_input: String,
    pub logits_output: String,
    pub recurrent: Option<Vec<RecurrentBinding>>,
    pub folded_carry_output: Option<String>,
    pub folded_carry_seed: Option<ValueRef>,
    pub token_embedding: Option<TokenEmbedding>,
}

/// A recurrent binding of a chained proposal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct RecurrentBinding {
    pub state: String,
    pub input: String,
    pub output: String,
}

/// A component output reference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct ValueRef {
    pub component: String,
    pub output: String,
}

/// Where token embeddings come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct TokenEmbedding {
    pub component: String,
    pub table: String,
}

tagged_enum! {
    /// How the proposer runs.
    pub enum ProposalExecution {
        /// One proposer call proposes a block.
        "block" => Block,
        /// The proposer is chained token by token.
        "chained" => Chained(ChainedProposal),
    }
}

/// Size of a subset vocabulary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct SubsetVocabulary {
    pub proposer_vocab_size: u64,
}

/// Mapping artifact of a mapped vocabulary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct MappedVocabulary {
    pub artifact: String,
}

tagged_enum! {
    /// Relation of proposer and target vocabularies.
    pub enum SpeculativeVocabulary {
        /// Same vocabulary.
        "identical" => Identical,
        /// The proposer uses a prefix subset.
        "subset" => Subset(SubsetVocabulary),
        /// Mapped through an artifact.
        "mapped" => Mapped(MappedVocabulary),
    }
}

/// `speculative` (closed).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Speculative {
    pub proposer: String,
    pub target: String,
    pub proposal_execution: Option<ProposalExecution>,
    pub port_bindings: Option<IndexMap<String, String>>,
    pub shared_state: Option<Vec<String>>,
    pub shared_weights: Option<Vec<String>>,
    pub vocabulary: SpeculativeVocabulary,
    pub max_proposal_width: u64,
    pub distribution_preserving: Option<bool>,
    pub rollback_state: Option<Vec<String>>,
}
