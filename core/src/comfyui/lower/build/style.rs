//! A prompt's style tokens (see `recognise::style`): the style picture
//! embedded by the CLIP vision model (`style_vision`: 0..1 pixels in, its
//! own resize and normalisation as ComfyUI's `clip_preprocess` with the
//! node's crop; its last hidden state out), the style model's tokens of
//! that (`style_model`), and `append_style` appending them (flattened over
//! the pictures, times the node's strength) to the prompt's conditioning.

use super::super::parts::{Steps, component, contract, hidden, invoke, one, parameter, policy};
use super::super::recognise::{Plan, Style};
use super::StageNames;
use serde_json::{Map, Value, json};

/// The embedding's contract: `[batch, vision_tokens, vision_hidden]`.
fn embedding() -> Value {
    contract(
        "float32",
        json!(["batch", "vision_tokens", "vision_hidden"]),
        true,
    )
}

/// The styles of the plan's prompts, each once, in the order they append.
fn styles(plan: &Plan) -> Vec<&Style> {
    let mut out: Vec<&Style> = Vec::new();
    for style in plan.conditionings().flat_map(|c| &c.styles) {
        if !out.iter().any(|s| s.node == style.node) {
            out.push(style);
        }
    }
    out
}

/// The input holding style node `node`'s strength.
fn strength_input(plan: &Plan, node: &str) -> String {
    match styles(plan).iter().position(|s| s.node == node) {
        Some(n) if n > 0 => format!("request.style_strength_{}", n + 1),
        _ => "request.style_strength".into(),
    }
}

/// The tokens of style node `node`.
fn tokens(node: &str) -> String {
    format!("style.{node}.tokens")
}

/// Declares the style components and strength inputs, and the setup steps
/// making every style's tokens once.
pub(super) fn declare(
    plan: &Plan,
    (inputs, components, setup): (&mut Map<String, Value>, &mut Map<String, Value>, &mut Steps),
) {
    let styles = styles(plan);
    let Some(first) = styles.first() else {
        return;
    };
    // The style model's tokens of each picture the vision model embeds;
    // `append_style` takes them as one picture batch.
    let style_tokens = |pictures: &str| {
        contract(
            "float32",
            json!([pictures, "style_tokens", "hidden"]),
            pictures == "batch",
        )
    };
    components.insert(
        "style_vision".into(),
        component(
            "style_vision/model.onnx",
            json!({"image": super::super::parts::picture(json!(3))}),
            json!({"last_hidden_state": embedding()}),
            Some(json!({"id": "comfyui.clip-vision", "version": "1", "parameters": {"crop": first.crop, "size": first.vision_size}})),
        ),
    );
    components.insert(
        "style_model".into(),
        component(
            "style_model/model.onnx",
            json!({"image_embeds": embedding()}),
            json!({"tokens": style_tokens("batch")}),
            None,
        ),
    );
    components.insert(
        "append_style".into(),
        policy(
            "append_style",
            json!({"conditioning": hidden(), "style": style_tokens("pictures"), "strength": one("float32")}),
            json!({"styled": contract("float32", json!(["batch", "styled_sequence", "hidden"]), true)}),
            Some(json!({"id": "wfstudio.append-style", "version": "1"})),
        ),
    );
    for style in styles {
        let embeds = format!("style.{}.embeds", style.node);
        let picture = super::pictures::input(plan, &style.picture);
        setup.push(
            invoke(
                "style_vision",
                json!({"image": picture}),
                json!({"last_hidden_state": embeds}),
            ),
            &[&style.encode, &style.vision, &style.picture],
        );
        setup.push(
            invoke(
                "style_model",
                json!({"image_embeds": embeds}),
                json!({"tokens": tokens(&style.node)}),
            ),
            &[&style.node, &style.loader],
        );
        let input = strength_input(plan, &style.node);
        let word = input.trim_start_matches("request.").to_string();
        inputs.insert(
            input,
            parameter(
                one("float32"),
                json!({"kind": "opaque"}),
                &word,
                json!(style.strength),
            ),
        );
    }
}

/// Adds the steps appending `styles`' tokens, in order, to the encoded
/// prompt `text`, the last writing `value`.
pub(super) fn append(
    plan: &Plan,
    styles: &[Style],
    (text, value): (&str, &str),
    setup: &mut Steps,
) {
    let mut previous = text.to_string();
    for (k, style) in styles.iter().enumerate() {
        let next = match k + 1 == styles.len() {
            true => value.to_string(),
            false => format!("{value}_style_{}", k + 1),
        };
        setup.push(
            invoke(
                "append_style",
                json!({"conditioning": previous, "style": tokens(&style.node), "strength": strength_input(plan, &style.node)}),
                json!({"styled": next}),
            ),
            &[&style.node],
        );
        previous = next;
    }
}

/// What the plan's prompts take of style models, in words.
pub(in crate::comfyui::lower) fn note(plan: &Plan, names: &StageNames) -> Option<String> {
    let styles = styles(plan);
    let first = styles.first()?;
    let each: Vec<String> = styles
        .iter()
        .map(|s| {
            format!(
                "node {} embeds {} (crop {}) at strength {} ({})",
                s.node,
                names.value(&super::pictures::input(plan, &s.picture)),
                s.crop,
                s.strength,
                names.value(&strength_input(plan, &s.node))
            )
        })
        .collect();
    Some(format!(
        "style tokens: node {}'s CLIP vision model (`style_vision`: its last hidden state) and node {}'s style model (`style_model`) make tokens of a picture, which `append_style` appends, times the strength, to the conditioning of each prompt the node is on: {}",
        first.vision,
        first.loader,
        each.join("; ")
    ))
}
