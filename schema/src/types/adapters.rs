//! Top-level `adapters`: the LoRA adapter service contract. Closed throughout.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// Discovery fallback policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum DiscoveryFallback {
    Disabled,
    ToolingOnly,
}

/// `adapters`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Adapters {
    /// The adaptable targets of the package's graphs.
    pub target_manifest: TargetManifest,
    /// Discovery fallback (default disabled).
    pub discovery_fallback: Option<DiscoveryFallback>,
    /// Which workflow inputs carry the per-row selection.
    pub selection: Selection,
    /// Must be `onnx-genai.adapters@1`.
    pub application_capability: String,
    /// Whether the portable runtime path is allowed (default false).
    pub portable_fallback: Option<bool>,
    /// Adapter cache policy.
    pub cache: Option<AdapterCache>,
    /// Planning hints.
    pub planning: Option<AdapterPlanning>,
    /// Adapter artifacts by alias.
    pub artifacts: Option<IndexMap<String, AdapterArtifact>>,
}

/// `adapters.target_manifest`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetManifest {
    /// Adaptable targets.
    pub targets: Vec<LoraTarget>,
}

/// One LoRA target.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct LoraTarget {
    pub id: String,
    pub component: String,
    pub initializer: String,
    pub node_name: String,
    pub output_name: String,
    pub activation_dtype: String,
    pub input_features: u64,
    pub output_features: u64,
    pub layer_index: Option<u64>,
    pub rank: Option<u64>,
    pub alpha: Option<serde_json::Number>,
    pub output_slice: Option<TargetSlice>,
    pub graph_inputs: Option<GraphInputs>,
}

/// A slice of a fused target's output.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct TargetSlice {
    pub role: String,
    pub offset: u64,
    pub width: u64,
    pub rank: Option<u64>,
    pub alpha: Option<serde_json::Number>,
}

/// Graph inputs that receive LoRA factors.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct GraphInputs {
    pub a: String,
    pub b: String,
    pub scale: Option<String>,
}

/// `adapters.selection`: workflow inputs carrying the per-row selection.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Selection {
    pub segments: String,
    pub adapter_counts: String,
    pub scales: String,
    pub active: Option<String>,
    pub max_adapters: u64,
}

/// Cache eviction policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Eviction {
    Lru,
}

/// `adapters.cache`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct AdapterCache {
    pub max_entries: Option<u64>,
    pub eviction: Option<Eviction>,
}

/// `adapters.planning`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct AdapterPlanning {
    pub bucket_by_adapter_set: Option<bool>,
    pub stable_buffers: Option<bool>,
    pub invalidate_capture_on_eviction: Option<bool>,
}

/// `adapters.artifacts.<alias>`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct AdapterArtifact {
    pub index: u64,
    pub identity: String,
    pub version: String,
    pub rank: u64,
    pub alpha: serde_json::Number,
    pub dtype: String,
    pub provenance: Option<Provenance>,
    pub weights: Option<Vec<WeightArtifact>>,
    pub bindings: Option<Vec<TargetBinding>>,
}

/// Where an adapter came from.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct Provenance {
    pub producer: String,
    pub source: Option<String>,
    pub revision: Option<String>,
}

/// Weight file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum WeightFormat {
    Json,
    OrtGenai,
    HfPeft,
    Safetensors,
}

/// How adapter scales are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum ScaleEncoding {
    AlphaOverRank,
    Baked,
}

/// One weight file of an adapter.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct WeightArtifact {
    pub location: String,
    pub loader_capability: String,
    pub config_location: Option<String>,
    pub scale_encoding: ScaleEncoding,
    pub format: Option<WeightFormat>,
}

/// Binding of a weight key to a target.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct TargetBinding {
    pub target: String,
    pub weight_key: String,
    pub rank: Option<u64>,
    pub alpha: Option<serde_json::Number>,
}
