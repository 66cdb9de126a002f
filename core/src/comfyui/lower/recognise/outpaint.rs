//! `ImagePadForOutpaint`: a loaded picture padded with grey 0.5 on each
//! side and the mask of what to paint (ones over the padding, and a
//! feathered edge inside the picture along the padded sides), read by an
//! inpainting node as its picture (output 0) and mask (output 1).

use super::super::graph::Graph;
use super::{MAX_RESOLUTION, loaded_image};
use crate::comfyui::lower::Refusal;

/// ComfyUI's class.
pub(super) const PAD: &str = "ImagePadForOutpaint";

/// A pad node and its sides.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Pad {
    pub node: String,
    /// The `LoadImage` it pads.
    pub loader: String,
    pub left: i64,
    pub top: i64,
    pub right: i64,
    pub bottom: i64,
    /// Pixels inside the picture over which the mask fades out.
    pub feathering: i64,
}

/// Reads pad node `node`.
pub(super) fn read(g: &Graph<'_>, node: &str) -> Result<Pad, Refusal> {
    let side = |name: &str| g.whole(node, name, 0..=MAX_RESOLUTION);
    Ok(Pad {
        loader: loaded_image(g, node, "image")?,
        left: side("left")?,
        top: side("top")?,
        right: side("right")?,
        bottom: side("bottom")?,
        feathering: side("feathering")?,
        node: node.to_string(),
    })
}

/// The `LoadImage` input `pixels` of inpainting node `node` reads, through
/// the pad that makes its mask (`pad`), which it must be.
pub(super) fn padded_picture(g: &Graph<'_>, node: &str, pad: &Pad) -> Result<String, Refusal> {
    let (source, slot) = g.source(node, "pixels")?;
    if source != pad.node || slot != 0 {
        return Err(g.refuse(
            node,
            Some("pixels"),
            format!(
                "reads its mask from node {} ({PAD}) but not that node's padded picture",
                pad.node
            ),
            &format!("connect pixels to node {}'s IMAGE output", pad.node),
        ));
    }
    Ok(pad.loader.clone())
}
