//! The loaded pictures a stage reads, each `LoadImage` an input of its
//! own: the stage's own picture (its latent's, an edit node's, or else
//! the first its prompts carry, a Wan node's first) is `request.image`;
//! the other `LoadImage`s its prompts carry (references, pictures shown
//! to the text encoder, a Wan node's other picture) and its model's
//! control patch's are
//! `request.image_2`, `request.image_3`, ... in the order the prompts
//! carry them. A picture is a `LoadImage` through one resize (or none):
//! values and policies made per picture are numbered apart the same way
//! (`source.pixels`, `source_2.pixels`, ...).

use super::super::parts::{contract, media, parameter, row};
use super::super::recognise::{Plan, Resize, reference};
use serde_json::{Map, Value, json};

/// A loaded picture: its `LoadImage` and the last node that resizes or
/// processes it, if any.
pub(super) type Key = (String, Option<String>);

/// The key of `loader`'s picture through `resize` (and its operations).
pub(super) fn key(loader: &str, resize: Option<&Resize>) -> Key {
    (loader.to_string(), resize.map(|r| r.last().to_string()))
}

/// The stage's `LoadImage`s, its own picture's first.
fn loaders(plan: &Plan) -> Vec<&String> {
    let own = reference::stage_picture(plan).map(|(loader, _)| loader);
    let carried = reference::prompt_pictures(plan.conditionings()).map(|(_, _, (l, _))| l);
    let framed = reference::frame_pictures(plan.conditionings());
    let patched = plan.model.control_patch.as_ref().map(|p| &p.picture.0);
    let held = plan.held_frames().map(|h| &h.loader);
    let mut loaders: Vec<&String> = Vec::new();
    let all = own.into_iter().chain(carried).chain(framed).chain(patched);
    for loader in all.chain(held) {
        if !loaders.contains(&loader) {
            loaders.push(loader);
        }
    }
    loaders
}

/// The stage's picture inputs, each with its `LoadImage`.
pub(super) fn inputs(plan: &Plan) -> Vec<(String, &String)> {
    loaders(plan)
        .into_iter()
        .map(|loader| (input(plan, loader), loader))
        .collect()
}

/// The input holding `loader`'s picture.
pub(super) fn input(plan: &Plan, loader: &str) -> String {
    match loaders(plan).iter().position(|l| *l == loader) {
        Some(n) if n > 0 => format!("request.image_{}", n + 1),
        _ => "request.image".into(),
    }
}

/// A picture input whose extents are its own (`<word>_height`,
/// `<word>_width`): it may differ in size from the stage's other pictures.
pub(super) fn sized_input(word: &str) -> Value {
    let shape = json!([
        "batch",
        3,
        format!("{word}_height"),
        format!("{word}_width")
    ]);
    media(contract("float32", shape, true))
}

/// Declares video input `input` (`[1, frames, 3, height, width]` in
/// 0..1, its sides named after `word`) and the input of its frames a
/// second beside it (24 unless the file read says otherwise).
pub(super) fn declare_video(input: &str, word: &str, inputs: &mut Map<String, Value>) {
    let shape = json!([
        1,
        format!("{word}_frames"),
        3,
        format!("{word}_height"),
        format!("{word}_width")
    ]);
    inputs.insert(input.into(), media(contract("float32", shape, false)));
    let rate = crate::media::frame_rate_output(word);
    let declared = parameter(
        row("float32"),
        json!({"kind": "opaque"}),
        &rate,
        json!(24.0),
    );
    inputs.insert(crate::media::frame_rate_output(input), declared);
}

/// Declares the inputs of the stage's other `LoadImage`s (the first,
/// `request.image`, is declared with the stage's own picture).
pub(super) fn declare_others(plan: &Plan, inputs: &mut Map<String, Value>) {
    for n in 1..loaders(plan).len() {
        inputs.insert(
            format!("request.image_{}", n + 1),
            sized_input(&format!("image_{}", n + 1)),
        );
    }
}

/// `base` numbered apart for the `n`th (from 0) of its kind: `base`,
/// then `base_2`, `base_3`, ...
pub(super) fn numbered(base: &str, n: usize) -> String {
    match n {
        0 => base.to_string(),
        n => format!("{base}_{}", n + 1),
    }
}
