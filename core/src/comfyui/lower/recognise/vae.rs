//! Where a stage's VAE comes from: its checkpoint or a `VAELoader`; the
//! `pixel_space` one (a picture is its own latent) decodes only.

use super::super::graph::Graph;
use crate::comfyui::lower::Refusal;

/// Whether VAE node `vae` is ComfyUI's `pixel_space` one (a picture is
/// its own latent: Chroma Radiance's).
pub(super) fn pixel_space(g: &Graph<'_>, vae: &str) -> bool {
    g.class(vae) == "VAELoader" && g.text(vae, "vae_name").ok() == Some("pixel_space")
}

/// Refuses VAE node `vae` (read by input `from`) unless it is the stage's
/// checkpoint `loader`'s or a `VAELoader`'s, and the pixel-space VAE
/// anywhere but at a decode.
pub(in crate::comfyui::lower::recognise) fn vae_source(
    g: &Graph<'_>,
    vae: &str,
    loader: &str,
    from: (&str, &str),
) -> Result<(), Refusal> {
    if pixel_space(g, vae) && !["VAEDecode", "VAEDecodeTiled"].contains(&g.class(from.0)) {
        return Err(g.refuse(
            vae,
            None,
            format!("is the pixel-space VAE, which node {} uses; the lowering takes it to decode pixel-space latents only", from.0),
            "load the model's own VAE for this node",
        ));
    }
    let checkpoints = ["CheckpointLoaderSimple", "ImageOnlyCheckpointLoader"];
    g.expect(
        vae,
        &[checkpoints[0], checkpoints[1], "VAELoader"],
        "vae",
        from,
    )?;
    if checkpoints.contains(&g.class(vae)) && vae != loader {
        return Err(g.refuse(vae, None, "is a second checkpoint; the VAE must come from the denoiser's checkpoint or a VAELoader".into(), "load one checkpoint"));
    }
    Ok(())
}
