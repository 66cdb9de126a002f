//! Encoders that encode both prompts in one node and give the empty
//! latent: Mage-Flow's `TextEncodeMageFlowEdit` and Qwen-Image 2.1's
//! `TextEncodeQwenImage21`. Output 0 is the positive prompt (`prompt`),
//! output 1 the negative (`negative_prompt`, or a space where it is
//! empty, as ComfyUI encodes it), output 2 the empty latent. Their
//! reference pictures are refused for now.

use super::super::graph::Graph;
use super::{LatentSource, MAX_BATCH, MAX_RESOLUTION};
use crate::comfyui::lower::Refusal;

/// Mage-Flow's encoder.
pub(super) const MAGE: &str = "TextEncodeMageFlowEdit";
/// Qwen-Image 2.1's encoder.
pub(super) const QWEN21: &str = "TextEncodeQwenImage21";

/// The side ComfyUI takes for a side of 0 without a reference picture.
const DEFAULT_SIDE: i64 = 1024;

/// What one encoder class makes.
struct Paired {
    class: &'static str,
    /// The family, as refusals name it.
    family: &'static str,
    /// The latent's channels and pixels a cell.
    channels: i64,
    scale: i64,
    /// The latent's sides come from `width` and `height` floored to whole
    /// cells (Mage), or are both `resolution` (Qwen-Image 2.1), batch 1.
    sides_from_resolution: bool,
    /// An empty positive prompt is encoded as a space too.
    space_for_empty_positive: bool,
}

const PAIRED: &[Paired] = &[
    Paired {
        class: MAGE,
        family: "Mage-Flow",
        channels: 128,
        scale: 16,
        sides_from_resolution: false,
        space_for_empty_positive: false,
    },
    Paired {
        class: QWEN21,
        family: "Qwen-Image 2.1",
        channels: 64,
        scale: 16,
        sides_from_resolution: true,
        space_for_empty_positive: true,
    },
];

/// Whether `class` is one of these encoders.
pub(super) fn is_paired(class: &str) -> bool {
    PAIRED.iter().any(|p| p.class == class)
}

/// The entry of `node`'s class, which [`is_paired`] accepts.
fn paired(g: &Graph<'_>, node: &str) -> Result<&'static Paired, Refusal> {
    let class = g.class(node);
    PAIRED.iter().find(|p| p.class == class).ok_or_else(|| {
        g.refuse(
            node,
            None,
            "is not an encoder of both prompts".into(),
            "connect a TextEncodeMageFlowEdit or TextEncodeQwenImage21",
        )
    })
}

/// The text the node encodes at its output `slot` (0 positive, 1
/// negative); a reference picture is refused.
pub(super) fn text(g: &Graph<'_>, node: &str, slot: i64) -> Result<String, Refusal> {
    let paired = paired(g, node)?;
    no_pictures(g, node, paired)?;
    let (name, space) = match slot {
        0 => ("prompt", paired.space_for_empty_positive),
        _ => ("negative_prompt", true),
    };
    Ok(match g.text(node, name)? {
        "" if space => " ".to_string(),
        text => text.to_string(),
    })
}

/// The empty latent the node gives (output 2).
pub(super) fn latent(g: &Graph<'_>, node: &str) -> Result<LatentSource, Refusal> {
    let paired = paired(g, node)?;
    no_pictures(g, node, paired)?;
    let scale = paired.scale;
    let side = |name: &str| -> Result<i64, Refusal> {
        let side = match g.whole(node, name, 0..=MAX_RESOLUTION)? {
            0 => DEFAULT_SIDE,
            side => side,
        };
        Ok((side / scale * scale).max(scale))
    };
    let (width, height, batch) = if paired.sides_from_resolution {
        let side = side("resolution")?;
        (side, side, 1)
    } else {
        (
            side("width")?,
            side("height")?,
            g.whole(node, "batch_size", 1..=MAX_BATCH)?,
        )
    };
    Ok(LatentSource::Empty {
        node: node.to_string(),
        width,
        height,
        batch,
        channels: paired.channels,
        scale,
        frames: None,
    })
}

/// Refuses the node's reference pictures (`images.image_1`, ..., an
/// `images` group, or the older `image1`, ...).
fn no_pictures(g: &Graph<'_>, node: &str, paired: &Paired) -> Result<(), Refusal> {
    let picture = g
        .nodes
        .get(node)
        .and_then(|n| n["inputs"].as_object())
        .and_then(|inputs| {
            inputs
                .iter()
                .find(|(k, v)| {
                    k.starts_with("image")
                        && (g.is_link(node, k) || v.as_object().is_some_and(|o| !o.is_empty()))
                })
                .map(|(k, _)| k.clone())
        });
    match picture {
        Some(input) => Err(g.refuse(
            node,
            Some(&input),
            format!(
                "gives the text encoder and the model a reference picture, which the lowering does not make for {} yet",
                paired.family
            ),
            "disconnect the reference pictures for text-to-image",
        )),
        None => Ok(()),
    }
}
