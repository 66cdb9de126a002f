//! `LatentComposite` between sampler stages: one stage's latent (the base,
//! `samples_to`) with the latents of others pasted on it in turn, as
//! ComfyUI's node does (`x`, `y` and `feather` in pixels, over 8 in latent
//! cells). A chain of composites whose `samples_to` is the next composite
//! is one base and its pastes in order; each `samples_from` is a sampler's
//! latent. The sizes must be ones the graph fixes: the composite's mask is
//! built from them.

use super::super::graph::Graph;
use super::chain::Walk;
use super::latent::{LatentSource, UpscaleSize};
use super::round_half_even;
use crate::comfyui::lower::Refusal;
use crate::comfyui::lower::parts::Axes;

/// ComfyUI's largest `x`, `y` and `feather`.
const MAX_OFFSET: i64 = 16384;

/// One `LatentComposite`'s paste of a stage's latent, in latent cells.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Paste {
    pub node: String,
    /// The stage whose latent is pasted.
    pub stage: usize,
    pub x: i64,
    pub y: i64,
    pub feather: i64,
    /// The pasted latent's extents `(height, width)`.
    pub extents: (i64, i64),
}

/// The composite `node` (a `LatentComposite`) feeding input `from.1` of
/// node `from.0`: the base stage and the pastes on it in order, the
/// stages recognised through `walk`.
pub(super) fn composite(
    g: &Graph<'_>,
    node: &str,
    walk: &mut Walk,
) -> Result<LatentSource, Refusal> {
    let mut pastes = Vec::new();
    let mut current = node.to_string();
    for _ in 0..=g.nodes.len() {
        let (source, slot) = g.source(&current, "samples_from")?;
        let stage = walk.sampled(g, &source, slot, (&current, "samples_from"))?;
        pastes.push(Paste {
            x: offset(g, &current, "x")?,
            y: offset(g, &current, "y")?,
            feather: offset(g, &current, "feather")?,
            extents: known_extents(g, walk, stage, &current, "samples_from")?,
            node: current.clone(),
            stage,
        });
        let (to, slot) = g.source(&current, "samples_to")?;
        if g.class(&to) == "LatentComposite" && slot == 0 {
            current = to;
            continue;
        }
        let base = walk.sampled(g, &to, slot, (&current, "samples_to"))?;
        let extents = known_extents(g, walk, base, &current, "samples_to")?;
        pastes.reverse();
        for paste in &pastes {
            fits(g, walk, base, extents, paste)?;
        }
        return Ok(LatentSource::Composite {
            base,
            extents,
            pastes,
        });
    }
    Err(g.refuse(
        &current,
        Some("samples_to"),
        "is part of a loop of latent composites".into(),
        "connect samples_to to a sampler",
    ))
}

/// Input `name` of `node`, a pixel offset or width, in latent cells
/// (ComfyUI divides by 8, rounding down).
fn offset(g: &Graph<'_>, node: &str, name: &str) -> Result<i64, Refusal> {
    Ok(g.whole(node, name, 0..=MAX_OFFSET)? / 8)
}

/// A paste must land on the base, in a latent of the same kind.
fn fits(
    g: &Graph<'_>,
    walk: &Walk,
    base: usize,
    (height, width): (i64, i64),
    paste: &Paste,
) -> Result<(), Refusal> {
    if walk.axes(base) == Axes::Video || walk.axes(paste.stage) == Axes::Video {
        return Err(g.refuse(
            &paste.node,
            None,
            "composites video latents; the lowering composites picture latents only".into(),
            "composite the pictures before making the video",
        ));
    }
    if walk.channels(base) != walk.channels(paste.stage) {
        return Err(g.refuse(
            &paste.node,
            Some("samples_from"),
            format!(
                "pastes a latent of {} channels on one of {}",
                walk.channels(paste.stage),
                walk.channels(base)
            ),
            "sample both latents with the same model family",
        ));
    }
    for (name, at, side) in [("x", paste.x, width), ("y", paste.y, height)] {
        if at >= side {
            return Err(g.refuse(
                &paste.node,
                Some(name),
                format!(
                    "is {} pixels, past the base latent's {} pixels, so nothing is pasted",
                    at * 8,
                    side * 8
                ),
                "paste within the base latent",
            ));
        }
    }
    Ok(())
}

/// The latent extents `(height, width)` of stage `stage`, which input
/// `input` of composite `node` reads; refused where a loaded picture sets
/// them.
fn known_extents(
    g: &Graph<'_>,
    walk: &Walk,
    stage: usize,
    node: &str,
    input: &str,
) -> Result<(i64, i64), Refusal> {
    walk.extents(stage).ok_or_else(|| {
        g.refuse(
            node,
            Some(input),
            "reads a latent whose size comes from a loaded picture; the lowering composites latents whose sizes the graph fixes (empty latents, maybe resized)".into(),
            "start the composited samplers from empty latents",
        )
    })
}

/// The extents of the latent `latent` starts a stage from, where the
/// graph fixes them; `earlier` gives an earlier stage's.
pub(super) fn source_extents(
    latent: &LatentSource,
    earlier: impl Fn(usize) -> Option<(i64, i64)>,
) -> Option<(i64, i64)> {
    match latent {
        LatentSource::Empty {
            width,
            height,
            scale,
            ..
        } => Some((height / scale, width / scale)),
        LatentSource::Stage { stage, upscale } => {
            let (height, width) = earlier(*stage)?;
            match upscale.as_ref().map(|u| &u.size) {
                None => Some((height, width)),
                Some(UpscaleSize::Fixed { width, height }) => Some((*height, *width)),
                Some(UpscaleSize::Scale(s)) => {
                    let side = |x: i64| (round_half_even(x as f64 * s) as i64).max(1);
                    Some((side(height), side(width)))
                }
            }
        }
        LatentSource::Composite { extents, .. } => Some(*extents),
        LatentSource::Encoded { .. } | LatentSource::Inpaint { .. } => None,
    }
}
