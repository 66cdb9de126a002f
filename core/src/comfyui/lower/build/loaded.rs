//! A loaded prompt in the document (`ConditioningLoader`): the file's
//! conditioning is a model of its own, `loaded_conditioning`, which takes
//! no input and gives the denoiser's `encoder_hidden_states` (the file's
//! `conditioning` tensor, `[1, tokens, width]`, exported as the model's
//! output); each side of the stage takes it.

use super::super::parts::{Steps, component, contract, invoke};
use super::super::recognise::{Plan, Prompt};
use super::StageNames;
use super::prompts::PromptSide;
use serde_json::{Map, Value, json};

/// The model giving the loaded conditioning.
const MODEL: &str = "loaded_conditioning";

/// The file the stage's prompt is loaded from, if it is loaded.
fn file(plan: &Plan) -> Option<&str> {
    match &plan.positive.text {
        Prompt::Loaded(file) => Some(file),
        _ => None,
    }
}

/// Declares the model and gives each side of a stage whose prompt is
/// loaded its conditioning (`conditioning.conditional`, ...); `false`
/// where the prompt is not loaded.
pub(super) fn encode(
    plan: &Plan,
    sides: &[PromptSide<'_>],
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) -> bool {
    if file(plan).is_none() {
        return false;
    }
    let hidden = contract("float32", json!([1, "prompt_sequence", "hidden"]), false);
    components.insert(
        MODEL.into(),
        component(
            &format!("{MODEL}/model.onnx"),
            json!({}),
            json!({"encoder_hidden_states": hidden}),
            None,
        ),
    );
    for side in sides {
        setup.push(
            invoke(
                MODEL,
                json!({}),
                json!({"encoder_hidden_states": format!("conditioning.{}", side.name)}),
            ),
            &[side.encoder],
        );
    }
    true
}

/// Tells the exporter where the loaded conditioning goes.
pub(in crate::comfyui::lower) fn note(plan: &Plan, names: &StageNames) -> Option<String> {
    let file = file(plan)?;
    Some(format!(
        "node {} (ConditioningLoader) loads the conditioning '{file}', which the package's `{}` model gives: export the file's `conditioning` tensor as that model's output `encoder_hidden_states` (it takes no input)",
        plan.positive.encoder,
        names.word(MODEL)
    ))
}
