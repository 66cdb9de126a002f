//! Whether a sampler's inputs are ones only flow-matching models take (a
//! video latent, a latent made for SD3, Flux or Flux 2 or a pixel-space
//! model, a flow-matching
//! sampler's latent, prompts through `FluxGuidance`), so that the model's
//! own sampling must be stated or known.

use super::super::graph::Graph;
use super::walk::Walk;
use super::{Composite, Conditioning, LatentSource};
use crate::comfyui::lower::parts::Axes;

/// What of a sampler's inputs only flow-matching models take, if any: a
/// video latent, an `EmptySD3LatentImage`'s (SD3, Flux and their kin) or
/// a pixel-space model's, an
/// earlier flow-matching sampler's latent, or prompts through
/// `FluxGuidance` (guidance-distilled Flux models).
pub(super) fn flow_only(
    g: &Graph<'_>,
    walk: &Walk,
    latent: &LatentSource,
    axes: Axes,
    prompts: [&Conditioning; 2],
) -> Option<String> {
    if let Some(guidance) = prompts.iter().find_map(|c| c.guidance.as_ref()) {
        return Some(format!(
            "prompts guided by FluxGuidance (node {})",
            guidance.node
        ));
    }
    match latent {
        _ if matches!(axes, Axes::Video | Axes::AudioVideo) => Some("a video latent".into()),
        LatentSource::Empty { node, .. } | LatentSource::Sized { node, .. }
            if matches!(
                g.class(node),
                "EmptySD3LatentImage" | "EmptyFlux2LatentImage" | "EmptyChromaRadianceLatentImage"
            ) =>
        {
            Some(format!("an {} latent", g.class(node)))
        }
        LatentSource::Stage { stage, .. }
        | LatentSource::Composite(Composite { base: stage, .. }) => walk
            .flow_sampler(*stage)
            .map(|node| format!("the latent of flow-matching sampler {node}")),
        _ => None,
    }
}
