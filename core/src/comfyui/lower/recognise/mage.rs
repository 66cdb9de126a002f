//! Mage-Flow's encoder, `TextEncodeMageFlowEdit`: one node encodes the
//! positive prompt (output 0, its `prompt`), the negative (output 1, its
//! `negative_prompt`, or a space where that is empty, as ComfyUI encodes
//! it) and gives the empty latent (output 2): 128 channels, 16 pixels a
//! cell, at `width` x `height` floored to whole 16s (a side of 0 is
//! 1024, the size ComfyUI takes without a reference picture). Its
//! reference pictures are refused for now.

use super::super::graph::Graph;
use super::{LatentSource, MAX_BATCH, MAX_RESOLUTION};
use crate::comfyui::lower::Refusal;

/// The class.
pub(super) const MAGE: &str = "TextEncodeMageFlowEdit";

/// The latent's channels (ComfyUI's Mage latent).
const CHANNELS: i64 = 128;
/// The latent's pixels a cell; the node floors its sides to whole cells.
const SCALE: i64 = 16;

/// The side ComfyUI takes for a side of 0 without a reference picture.
const DEFAULT_SIDE: i64 = 1024;

/// The text the node encodes at its output `slot` (0 positive, 1
/// negative); a reference picture is refused.
pub(super) fn text(g: &Graph<'_>, node: &str, slot: i64) -> Result<String, Refusal> {
    no_pictures(g, node)?;
    Ok(match slot {
        0 => g.text(node, "prompt")?.to_string(),
        _ => match g.text(node, "negative_prompt")? {
            "" => " ".to_string(),
            negative => negative.to_string(),
        },
    })
}

/// The empty latent the node gives (output 2).
pub(super) fn latent(g: &Graph<'_>, node: &str) -> Result<LatentSource, Refusal> {
    no_pictures(g, node)?;
    let side = |name: &str| -> Result<i64, Refusal> {
        let side = match g.whole(node, name, 0..=MAX_RESOLUTION)? {
            0 => DEFAULT_SIDE,
            side => side,
        };
        Ok((side / SCALE * SCALE).max(SCALE))
    };
    Ok(LatentSource::Empty {
        node: node.to_string(),
        width: side("width")?,
        height: side("height")?,
        batch: g.whole(node, "batch_size", 1..=MAX_BATCH)?,
        channels: CHANNELS,
        scale: SCALE,
        frames: None,
    })
}

/// Refuses the node's reference pictures (`images.image_1`, ..., an
/// `images` group, or the older `image1`, ...).
fn no_pictures(g: &Graph<'_>, node: &str) -> Result<(), Refusal> {
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
            "gives the text encoder and the model a reference picture, which the lowering does not make for Mage-Flow yet".into(),
            "disconnect the reference pictures for text-to-image",
        )),
        None => Ok(()),
    }
}
