//! A prompt loaded from a file: `ConditioningLoader` gives a conditioning
//! ComfyUI saved from a text encoder (Marigold's task prompt, from the
//! embeddings folder), fed to the guider with no text encoder; and the
//! image-to-image velocity sampling (`img_to_img_velocity`) Marigold's
//! model takes, whose one-step Euler run the lowering makes.

use super::super::graph::Graph;
use super::model::ModelChain;
use super::{Conditioning, Prompt};
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

/// Refuses another sampler than `euler` on a model sampling as
/// `img_to_img_velocity`: ComfyUI's noise scaling of that sampling keeps
/// the latent as it is, so samplers that add fresh noise on the way add
/// none there, which the lowering's solvers do not follow.
pub(super) fn velocity_sampler(
    g: &Graph<'_>,
    (sampler, sampler_name): (&str, &str),
    model: &ModelChain,
) -> Result<(), Refusal> {
    let Some(flow) = model.flow.as_ref().filter(|f| f.velocity) else {
        return Ok(());
    };
    if sampler_name == "euler" {
        return Ok(());
    }
    Err(g.refuse(
        sampler,
        None,
        format!(
            "samples with '{sampler_name}' a model that node {} samples as img_to_img_velocity; the lowering runs that sampling with euler only",
            flow.node
        ),
        "use the euler sampler",
    ))
}
