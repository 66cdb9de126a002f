//! A prompt loaded from a file: `ConditioningLoader` gives a conditioning
//! ComfyUI saved from a text encoder (Marigold's task prompt, from the
//! embeddings folder), fed to the guider with no text encoder; and the
//! image-to-image velocity sampling (`img_to_img_velocity`) Marigold's
//! model takes, whose one-step Euler run the lowering makes.

use super::super::graph::Graph;
use super::model::ModelChain;
use super::{Conditioning, LatentSource, Prompt, Sampler};
use crate::comfyui::lower::Refusal;

/// ComfyUI's node loading a saved conditioning.
pub(super) const LOADER: &str = "ConditioningLoader";

/// The conditioning `ConditioningLoader` node `node` gives the prompt
/// input it feeds straight (output `slot`, read by input `from`).
pub(super) fn conditioning(
    g: &Graph<'_>,
    node: &str,
    slot: i64,
    from: (&str, &str),
) -> Result<Conditioning, Refusal> {
    g.first_output(from, node, slot)?;
    let file = g.text(node, "conditioning_name")?.to_string();
    Ok(Conditioning::unencoded(node, Prompt::Loaded(file), node))
}

/// Refuses what the lowering cannot make of a saved prompt and of
/// `img_to_img_velocity` sampling: a saved prompt on a model whose
/// family no file name settles (its latent channels unknown); another
/// sampler than `euler` on a velocity model (ComfyUI's noise scaling of
/// that sampling keeps the latent as it is, so samplers that add fresh
/// noise on the way add none there, which the lowering's solvers do not
/// follow); a velocity model on an empty latent (ComfyUI starts it from
/// the zeros, the lowering's full-denoise run from noise).
pub(super) fn check(
    g: &Graph<'_>,
    sampler: &Sampler,
    model: &ModelChain,
    (prompt, settled): (&Conditioning, bool),
    latent: &LatentSource,
) -> Result<(), Refusal> {
    let (sampler_name, sampler) = (sampler.sampler_name.as_str(), sampler.node.as_str());
    if matches!(prompt.text, Prompt::Loaded(_)) && !settled {
        return Err(g.refuse(
            &prompt.encoder,
            None,
            format!(
                "gives node {}'s model a saved prompt; the lowering knows such a model's family only by a UNETLoader file holding 'qwen_image'",
                model.loader
            ),
            "load Marigold's Qwen-Image Edit model with a UNETLoader, keeping 'qwen_image' in its file name",
        ));
    }
    let Some(flow) = model.flow.as_ref().filter(|f| f.velocity) else {
        return Ok(());
    };
    if sampler_name != "euler" {
        return Err(g.refuse(
            sampler,
            None,
            format!(
                "samples with '{sampler_name}' a model that node {} samples as img_to_img_velocity; the lowering runs that sampling with euler only",
                flow.node
            ),
            "use the euler sampler",
        ));
    }
    if let LatentSource::Empty { node, .. } | LatentSource::Sized { node, .. } = latent {
        return Err(g.refuse(
            node,
            None,
            format!(
                "gives an empty latent to a model that node {} samples as img_to_img_velocity, which starts from the latent itself",
                flow.node
            ),
            "encode a picture with VAEEncode as the latent",
        ));
    }
    Ok(())
}
