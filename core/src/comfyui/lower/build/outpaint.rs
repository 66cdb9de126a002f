//! A stage whose inpainting node reads a padded picture and the pad's
//! mask (see `recognise::outpaint`): `outpaint_pad` makes both of the
//! stage's picture input first in its setup, and the stage reads them
//! where it would read its picture and mask inputs (it has no mask input).

use super::super::parts::{Steps, contract, invoke, nested_mut, picture, policy};
use super::super::recognise::{Pad, Plan};
use super::StageNames;
use serde_json::{Map, Value, json};

/// The padded picture.
const PIXELS: &str = "outpaint.pixels";
/// The pad's mask.
const MASK: &str = "outpaint.mask";
/// The picture and mask inputs a stage would read otherwise.
const INPUTS: [(&str, &str); 2] = [("request.image", PIXELS), ("request.mask", MASK)];

/// The pad the plan's inpainting node reads, if any.
fn pad(plan: &Plan) -> Option<&Pad> {
    plan.latent.pad()
}

/// Declares `outpaint_pad` and adds its step (first in `setup`).
pub(super) fn pad_step(plan: &Plan, components: &mut Map<String, Value>, setup: &mut Steps) {
    let Some(pad) = pad(plan) else {
        return;
    };
    let padded = |channels: i64| {
        contract(
            "float32",
            json!(["batch", channels, "padded_height", "padded_width"]),
            true,
        )
    };
    components.insert(
        "outpaint_pad".into(),
        policy(
            "outpaint_pad",
            json!({"image": picture(json!(3))}),
            json!({"pixels": padded(3), "mask": padded(1)}),
            Some(
                json!({"id": "wfstudio.outpaint-pad", "version": "1", "parameters": {
                    "left": pad.left,
                    "top": pad.top,
                    "right": pad.right,
                    "bottom": pad.bottom,
                    "feathering": pad.feathering,
                }}),
            ),
        ),
    );
    setup.push(
        invoke(
            "outpaint_pad",
            json!({"image": "request.image"}),
            json!({"pixels": PIXELS, "mask": MASK}),
        ),
        &[&pad.node, &pad.loader],
    );
}

/// Makes the stage's `step` read the pad's picture and mask where it
/// reads its picture and mask inputs (the pad itself reads the picture
/// input), and drops the mask input from its `inputs`.
pub(super) fn read_padded(plan: &Plan, (inputs, step): (&mut Map<String, Value>, &mut Value)) {
    if pad(plan).is_none() {
        return;
    }
    inputs.remove("request.mask");
    reads(step);
}

/// Renames the picture and mask inputs the steps under `step` read (their
/// `inputs`), but in the pad's own step.
fn reads(step: &mut Value) {
    if step["component"] != "outpaint_pad"
        && let Some(inputs) = step.get_mut("inputs").and_then(Value::as_object_mut)
    {
        for value in inputs.values_mut() {
            if let Some((_, padded)) = INPUTS.iter().find(|(input, _)| value == input) {
                *value = json!(padded);
            }
        }
    }
    for inner in nested_mut(step) {
        reads(inner);
    }
}

/// The picture and the mask the plan's inpainting node reads through its
/// pad, in words.
pub(in crate::comfyui::lower) fn words(
    plan: &Plan,
    names: &StageNames,
) -> Option<(String, String)> {
    let pad = pad(plan)?;
    let picture = format!(
        "{} padded with grey by node {} ({} left, {} top, {} right, {} bottom: {})",
        names.value("request.image"),
        pad.node,
        pad.left,
        pad.top,
        pad.right,
        pad.bottom,
        names.value(PIXELS)
    );
    let mask = format!(
        "the pad's, feathered over {} pixels: {}",
        pad.feathering,
        names.value(MASK)
    );
    Some((picture, mask))
}
