//! Lowering helpers shared by the ComfyUI lowering tests.

use serde_json::Value;
use wfstudio_core::comfyui::lower::{self, Lowered, Target};

/// A pattern fixture (`fixtures/comfyui/patterns/NAME.api.json`).
pub fn pattern(name: &str) -> Value {
    let path = super::fixtures().join(format!("comfyui/patterns/{name}.api.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("JSON")
}

/// The LoRA target package fixture.
pub fn lora_target() -> Target {
    Target::from_package(&super::fixtures().join("comfyui/lora-target")).expect("target")
}

/// Lowers and checks the document validates with no diagnostics.
pub fn lowered(api: &Value, target: &Target) -> Lowered {
    let lowered = lower::lower_for(api, target).unwrap_or_else(|r| panic!("refused: {r:#?}"));
    super::validated(&lowered.document, "lowered graph");
    lowered
}

/// The lowered document's workflow.
pub fn workflow(l: &Lowered) -> &Value {
    &l.document["pipeline"]["workflow"]
}

/// An input's default in the lowered workflow.
pub fn default_of<'a>(l: &'a Lowered, input: &str) -> &'a Value {
    &workflow(l)["inputs"][input]["default"]
}
