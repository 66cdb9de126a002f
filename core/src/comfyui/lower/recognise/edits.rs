//! The pictures a sampler's prompts carry and the masks its model
//! reshapes: an edit node's picture (one node's, on a sampler starting
//! from its latent), `DifferentialDiffusion` (only where no noise mask is
//! in play), and the `LoadImage` a control or edit picture comes from.

use super::super::graph::Graph;
use super::{Conditioning, LatentSource, ModelChain, Sampler, Window};
use crate::comfyui::lower::Refusal;

/// Refuses prompts carrying a picture (`InstructPixToPixConditioning`,
/// `InpaintModelConditioning`) unless it is one node's and the sampler
/// starts from that node's latent, whose size the picture's latent sets;
/// an inpainting node's must be on every prompt.
pub(super) fn edits(
    g: &Graph<'_>,
    prompts: &[&Conditioning],
    latent: &LatentSource,
) -> Result<(), Refusal> {
    let Some(edit) = prompts.iter().find_map(|c| c.edit.as_ref()) else {
        return Ok(());
    };
    if let Some(other) = prompts
        .iter()
        .filter_map(|c| c.edit.as_ref())
        .find(|e| *e != edit)
    {
        return Err(g.refuse(
            other,
            None,
            format!("attaches a second picture to the sampler's prompts, beside node {edit}'s"),
            &format!("condition the prompts through one {}", g.class(edit)),
        ));
    }
    match latent {
        LatentSource::Edit {
            node,
            inpaint: Some(_),
            ..
        } if node == edit && prompts.iter().any(|c| c.edit.is_none()) => Err(g.refuse(
            edit,
            None,
            "attaches its picture and mask to some of the sampler's prompts only; the lowering gives an inpainting model's to every prompt".into(),
            "feed every prompt of the sampler through this node",
        )),
        LatentSource::Edit { node, .. } if node == edit => Ok(()),
        _ => Err(g.refuse(
            edit,
            None,
            "attaches its picture to the prompts of a sampler that does not start from its latent"
                .into(),
            "connect the sampler's latent_image to this node's latent output",
        )),
    }
}

/// Checks a `DifferentialDiffusion`: without a noise mask it changes
/// nothing (noted); with one it reshapes the mask at every step by the
/// step's sigma, which the lowering builds where that is exact: a flow
/// model (its timesteps are sigmas times a constant) sampled by `euler`
/// (one model call a step and no history, so the step's mask applied
/// after the step is ComfyUI's blend of the call's input and output), on
/// a schedule that follows the model's shift, over the whole run or a
/// denoise window, at `strength` 1 (a weaker one blends the binary mask
/// with the mask itself). A mask the latent may carry from an earlier
/// stage is refused.
pub(super) fn differential(
    g: &Graph<'_>,
    model: &ModelChain,
    latent: &LatentSource,
    sampler: &Sampler,
) -> Result<(), Refusal> {
    let Some(node) = &model.differential else {
        return Ok(());
    };
    let unmasked = match latent {
        LatentSource::Empty { .. } | LatentSource::Sized { .. } | LatentSource::Audio { .. } => {
            true
        }
        LatentSource::Encoded { mask, .. } => mask.is_none(),
        LatentSource::Edit { inpaint, .. } => inpaint.as_ref().is_none_or(|i| !i.noise_mask),
        LatentSource::Inpaint { .. } | LatentSource::Stage { .. } | LatentSource::Composite(_) => {
            false
        }
    };
    if unmasked {
        return Ok(());
    }
    let refuse = |why: String, remedy: &str| {
        Err(g.refuse(
            node,
            None,
            format!(
                "reshapes the latent's noise mask at every step, which the lowering builds {why}"
            ),
            &format!("{remedy}, or remove DifferentialDiffusion (the mask then applies as it is)"),
        ))
    };
    if matches!(
        latent,
        LatentSource::Stage { .. } | LatentSource::Composite(_)
    ) {
        return refuse(
            "only over a mask the stage sets itself, not one an earlier stage's latent may carry"
                .into(),
            "mask the latent in this stage",
        );
    }
    if model.flow.is_none() {
        return refuse(
            "on flow-matching models only (their timesteps are sigmas times a constant)".into(),
            "use it with a flow-matching model",
        );
    }
    if sampler.sampler_name != "euler" {
        return refuse(
            format!(
                "with sampler euler only (one model call a step, no history: the step's mask applied after the step is ComfyUI's blend), not {}",
                sampler.sampler_name
            ),
            "sample with euler",
        );
    }
    if !sampler.schedule.follows_model() {
        return refuse(
            "on a scheduler that follows the model's shift only".into(),
            "use KSampler's or BasicScheduler's scheduler",
        );
    }
    if matches!(sampler.window, Window::Steps { .. }) {
        return refuse(
            "over a whole run or a denoise window only, not a window of steps".into(),
            "sample with KSampler",
        );
    }
    let strength = match g.has(node, "strength") {
        true => g.number_in(node, "strength", 0.0..=1.0, "strength")?,
        false => 1.0,
    };
    // ComfyUI takes a strength of 0 as 1 (`if strength and strength < 1`).
    if strength > 0.0 && strength < 1.0 {
        return Err(g.refuse(
            node,
            Some("strength"),
            format!("is {strength}: below 1 the mask of each step blends the thresholded mask with the mask itself, which the lowering does not build yet"),
            "set strength to 1",
        ));
    }
    Ok(())
}

/// A `LoadImage` behind input `name` of `node`.
pub(in crate::comfyui::lower::recognise) fn loaded_image(
    g: &Graph<'_>,
    node: &str,
    name: &str,
) -> Result<String, Refusal> {
    let (image, slot) = g.source(node, name)?;
    if g.class(&image) != "LoadImage" || slot != 0 {
        return Err(Refusal {
            message: format!(
                "feeds `{name}` of node {node}; the importer takes pictures only straight from LoadImage (its image becomes a workflow input)"
            ),
            remedy: "save the processed picture and load it with LoadImage".into(),
            ..g.refuse(&image, None, String::new(), "")
        });
    }
    Ok(image)
}
