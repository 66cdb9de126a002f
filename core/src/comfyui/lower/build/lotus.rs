//! Lotus' prompt and task in the document: the denoiser takes Lotus' fixed
//! prompt (`package.lotus_prompt`, ComfyUI's `LotusConditioning`) in place
//! of a text encoder's, and its task embedding (`package.lotus_task`) as
//! `y`, on both sides; both are literals a caller may override.

use super::super::parts::{contract, opaque_literal};
use super::super::recognise::{Plan, Prompt};
use serde_json::{Map, Value, json};

/// `LotusConditioning`'s embedding `[1, 2, 1024]`, row by row: the frozen
/// encoder's output for the empty prompt, which the node holds rather
/// than computes.
const PROMPT: &str = include_str!("lotus_prompt.txt");

/// The prompt's shape.
const PROMPT_SHAPE: [i64; 3] = [1, 2, 1024];

/// The input holding the prompt.
const PROMPT_INPUT: &str = "package.lotus_prompt";

/// The input holding the task embedding.
const TASK_INPUT: &str = "package.lotus_task";

/// Whether the stage's prompts are Lotus'.
fn takes(plan: &Plan) -> bool {
    plan.positive.text == Prompt::Lotus
}

/// Declares the prompt and task inputs of a Lotus stage and its
/// denoiser's `y` port.
pub(super) fn declare(plan: &Plan, inputs: &mut Map<String, Value>, denoiser_ports: &mut Value) {
    if !takes(plan) {
        return;
    }
    inputs.insert(
        PROMPT_INPUT.into(),
        opaque_literal(
            contract("float32", json!(PROMPT_SHAPE), false),
            json!(prompt()),
        ),
    );
    inputs.insert(
        TASK_INPUT.into(),
        opaque_literal(contract("float32", json!([1, 4]), false), json!(task())),
    );
    denoiser_ports["y"] = contract("float32", json!(["batch", 4]), true);
}

/// Binds a Lotus stage's denoiser call to the prompt and task.
pub(super) fn bind(plan: &Plan, bind: &mut Value) {
    if takes(plan) {
        bind["encoder_hidden_states"] = json!(PROMPT_INPUT);
        bind["y"] = json!(TASK_INPUT);
    }
}

/// The prompt's values, row-major.
fn prompt() -> Vec<f32> {
    PROMPT
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect()
}

/// Lotus' task embedding as ComfyUI's `Lotus` model makes it for depth:
/// the sines then cosines of `[1, 0]`.
fn task() -> [f32; 4] {
    let (one, zero) = (1f32, 0f32);
    [one.sin(), zero.sin(), one.cos(), zero.cos()]
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_prompt_has_its_shape_of_values() {
        let values = super::prompt();
        let count: i64 = super::PROMPT_SHAPE.iter().product();
        assert_eq!(values.len() as i64, count);
        assert_eq!(super::PROMPT.split_whitespace().count() as i64, count);
        assert_eq!(values[0], -0.313_476_56);
    }
}
