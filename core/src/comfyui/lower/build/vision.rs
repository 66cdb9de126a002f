//! The pictures of Qwen's image-edit encoders (see `recognise::vision`),
//! as setup steps from the loaded picture (`request.image`), through the
//! graph's resize (`source_scale`, not cut to whole 8s: the encoder
//! resizes the picture the graph gives it):
//! - `vision.pixels` (`vision_scale`), the picture the text encoder's
//!   language model sees, its input `image`;
//! - `reference.pixels` (`reference_scale`, cut to whole 8s as a VAE
//!   encode cuts), the picture whose latent the encoder appends as a
//!   reference.

use super::super::parts::{Steps, contract, invoke};
use super::super::recognise::{PixelSize, Plan, Resize};
use super::StageNames;
use super::pixels::resize_policy;
use serde_json::{Map, Value, json};

/// The values the text encoder and the reference encode read.
pub(super) struct Pictures {
    /// The picture shown to the text encoder.
    pub seen: String,
    /// The picture the reference latent is encoded from, where the
    /// encoders append one.
    pub reference: Option<String>,
}

/// The text encoder's picture port.
pub(super) fn port() -> Value {
    contract(
        "float32",
        json!(["batch", 3, "vision_height", "vision_width"]),
        true,
    )
}

/// Adds the steps making the plan's edit-encoder pictures, where its
/// prompts show the text encoder one.
pub(super) fn pictures(
    plan: &Plan,
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) -> Option<Pictures> {
    let vision = plan.conditionings().find_map(|c| c.vision.as_ref())?;
    let mut scale = |kind: &str, resize: &Resize, image: &str, for_encode: bool| {
        components.insert(kind.into(), resize_policy(kind, resize, for_encode));
        let value = format!("{}.pixels", kind.trim_end_matches("_scale"));
        setup.push(
            invoke(kind, json!({"image": image}), json!({"scaled": value})),
            &[&resize.node],
        );
        value
    };
    let source = match &vision.resize {
        Some(resize) => scale("source_scale", resize, "request.image", false),
        None => "request.image".to_string(),
    };
    let seen = scale("vision_scale", &vision.seen, &source, false);
    let reference = plan
        .conditionings()
        .flat_map(|c| &c.references.latents)
        .find_map(|r| r.then.as_ref())
        .map(|then| scale("reference_scale", then, &source, true));
    Some(Pictures { seen, reference })
}

/// The note saying what the text encoder sees and how the prompts are
/// tokenized, where edit encoders show it a picture.
pub(in crate::comfyui::lower) fn note(plan: &Plan, names: &StageNames) -> Option<String> {
    let vision = plan.conditionings().find_map(|c| c.vision.as_ref())?;
    let mut nodes: Vec<&str> = Vec::new();
    for node in plan
        .conditionings()
        .filter_map(|c| c.vision.as_ref())
        .map(|v| v.node.as_str())
    {
        if !nodes.contains(&node) {
            nodes.push(node);
        }
    }
    let nodes = match nodes.as_slice() {
        [one] => format!("node {one} ({}) shows", vision.class),
        many => format!("nodes {} ({}) show", many.join(", "), vision.class),
    };
    let picture = match &vision.resize {
        Some(resize) => format!(
            "{} resized by node {}",
            names.value("request.image"),
            resize.node
        ),
        None => names.value("request.image"),
    };
    Some(format!(
        "{nodes} the text encoder {picture}, then resized by the node itself {}, as its input `image`; ComfyUI tokenizes the prompts with the node's edit template (a system prompt describing the input picture), which the package's tokenizer must apply",
        own_resize(&vision.seen),
    ))
}

/// How an edit encoder resizes a picture itself, in words (`by area to
/// about ...`).
pub(super) fn own_resize(resize: &Resize) -> String {
    match resize.size {
        PixelSize::TotalPixels { pixels, step } => {
            let side = pixels.sqrt().round() as i64;
            let steps = match step {
                1 => String::new(),
                step => format!(" in whole {step}s"),
            };
            format!("by {} to about {side}x{side} pixels{steps}", resize.method)
        }
        _ => format!("by {}", resize.method),
    }
}
