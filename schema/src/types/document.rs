//! The document root.

use super::adapters::Adapters;
use super::facts::{Generation, Model, Package, Preprocessing, Profile, Speculative};
use super::workflow::Pipeline;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An inference-metadata document (`inference_metadata.yaml|json`).
///
/// Every optional key is an `Option`, so a key that was absent stays absent
/// and an explicit default stays explicit: saving never adds or drops data,
/// which keeps the semantic identity stable.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    /// Format version (absent means `v1`).
    pub schema_version: Option<String>,
    /// Capabilities a runtime must implement (open vocabulary).
    pub required_capabilities: Option<Vec<String>>,
    /// Package-wide model facts (open).
    pub model: Option<Model>,
    /// Quantization intent (open, kept verbatim).
    pub quantization: Option<Value>,
    /// Image/audio preprocessing programs (open).
    pub preprocessing: Option<Preprocessing>,
    /// The executable workflow.
    pub pipeline: Option<Pipeline>,
    /// LoRA adapter service.
    pub adapters: Option<Adapters>,
    /// Tokenizer and constraint-language facts.
    pub package: Option<Package>,
    /// Generation defaults and overrides.
    pub generation: Option<Generation>,
    /// Task profiles by name.
    pub profiles: Option<IndexMap<String, Profile>>,
    /// Speculative decoding contract.
    pub speculative: Option<Speculative>,
    /// Hardware requirements (open, kept verbatim).
    pub hardware_requirements: Option<Value>,
}
