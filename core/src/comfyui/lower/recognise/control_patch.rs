//! A control model patched into the denoiser's blocks
//! (`QwenImageDiffsynthControlnet` with a `ModelPatchLoader`: DiffSynth's
//! Qwen-Image control patches and Z-Image's union control): the patch
//! reads the VAE's latent of a control picture, resized by area (centre
//! crop) to the sampled latent's size in pixels where it differs, and
//! adds its blocks' output, times `strength`, to the model's.

use super::super::graph::Graph;
use super::{LoadedPicture, loaded_picture};
use crate::comfyui::lower::Refusal;

/// The patch node's class.
pub(super) const CLASS: &str = "QwenImageDiffsynthControlnet";

/// A control patch on the model path.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct ControlPatch {
    pub node: String,
    /// The `ModelPatchLoader` of the patch's weights.
    pub loader: String,
    /// The VAE encoding the picture (a `VAELoader` or the model's own
    /// checkpoint, see `vae_source`).
    pub vae: String,
    /// The control picture: a `LoadImage`, maybe resized and processed.
    pub picture: LoadedPicture,
    pub strength: f64,
}

/// Reads control patch node `node` (of [`CLASS`]).
pub(super) fn read(g: &Graph<'_>, node: &str) -> Result<ControlPatch, Refusal> {
    if g.has(node, "mask") {
        return Err(g.refuse(
            node,
            Some("mask"),
            "gives the control patch an inpainting mask, which the lowering does not build".into(),
            "disconnect the mask",
        ));
    }
    let (loader, _) = g.source(node, "model_patch")?;
    g.expect(
        &loader,
        &["ModelPatchLoader"],
        "model_patch",
        (node, "model_patch"),
    )?;
    // Checked against the model's loader by `vae_source` once the model
    // path is read.
    let (vae, _) = g.source(node, "vae")?;
    Ok(ControlPatch {
        node: node.to_string(),
        loader,
        vae,
        picture: loaded_picture(g, node, "image")?,
        strength: g.number_in(node, "strength", -10.0..=10.0, "strength")?,
    })
}
