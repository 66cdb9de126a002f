//! `LatentComposite` between sampler stages: one stage's latent (the base,
//! `samples_to`) with the latents of others pasted on it in turn, as
//! ComfyUI's node does (`x`, `y` and `feather` in pixels, over 8 in latent
//! cells). A chain of composites whose `samples_to` is the next composite
//! is one base and its pastes in order; each `samples_from` is a sampler's
//! latent. The sizes must be ones the graph fixes: the composite's mask is
//! built from them.

use super::super::graph::Graph;
use super::walk::Walk;
use crate::comfyui::lower::Refusal;
use crate::comfyui::lower::parts::Axes;

/// ComfyUI's largest `x`, `y` and `feather`, and latent side in cells
/// (what the synthesized composite takes).
const MAX_OFFSET: i64 = 16384;
const MAX_CELLS: i64 = crate::comfyui::synth::MAX_LATENT_SIDE;

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

/// A recognised composite: the base stage, its extents and the pastes.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Composite {
    /// The stage whose latent is the base (`samples_to`).
    pub base: usize,
    /// The base's extents `(height, width)`, which the result keeps.
    pub extents: (i64, i64),
    pub pastes: Vec<Paste>,
}

/// The composite `node` (a `LatentComposite`): the base stage and the
/// pastes on it in order, the stages recognised through `walk` (the base
/// first, then each pasted one in paste order).
pub(super) fn composite(g: &Graph<'_>, node: &str, walk: &mut Walk) -> Result<Composite, Refusal> {
    // The chain of composites down `samples_to`, last paste first.
    let mut nodes = vec![node.to_string()];
    let (mut to, mut slot) = g.source(node, "samples_to")?;
    while g.class(&to) == "LatentComposite" && slot == 0 {
        if nodes.len() > g.nodes.len() {
            return Err(g.refuse(
                &to,
                Some("samples_to"),
                "is part of a loop of latent composites".into(),
                "connect samples_to to a sampler",
            ));
        }
        nodes.push(to.clone());
        (to, slot) = g.source(&to, "samples_to")?;
    }
    let first = nodes.last().cloned().unwrap_or_default();
    let base = walk.sampled(g, &to, slot, (&first, "samples_to"))?;
    let extents = known_extents(g, walk, base, &first, "samples_to")?;
    let mut pastes = Vec::new();
    for current in nodes.iter().rev() {
        let (source, slot) = g.source(current, "samples_from")?;
        let stage = walk.sampled(g, &source, slot, (current, "samples_from"))?;
        let paste = Paste {
            x: offset(g, current, "x")?,
            y: offset(g, current, "y")?,
            feather: offset(g, current, "feather")?,
            extents: known_extents(g, walk, stage, current, "samples_from")?,
            node: current.clone(),
            stage,
        };
        fits(g, walk, base, extents, &paste)?;
        pastes.push(paste);
    }
    Ok(Composite {
        base,
        extents,
        pastes,
    })
}

/// Input `name` of `node`, a pixel offset or width, in latent cells
/// (ComfyUI divides by 8, rounding down).
fn offset(g: &Graph<'_>, node: &str, name: &str) -> Result<i64, Refusal> {
    Ok(g.whole(node, name, 0..=MAX_OFFSET)? / 8)
}

/// A paste must land on the base, in a latent of the same kind and batch.
fn fits(
    g: &Graph<'_>,
    walk: &Walk,
    base: usize,
    (height, width): (i64, i64),
    paste: &Paste,
) -> Result<(), Refusal> {
    if walk.axes(base) != Axes::Image || walk.axes(paste.stage) != Axes::Image {
        return Err(g.refuse(
            &paste.node,
            None,
            "composites video or audio latents; the lowering composites picture latents only"
                .into(),
            "composite pictures only",
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
    if walk.batch(base) != walk.batch(paste.stage) {
        // ComfyUI pastes one latent on every row of a larger batch; the
        // lowering samples each row with its own noise.
        return Err(g.refuse(
            &paste.node,
            Some("samples_from"),
            "pastes a latent of another batch size than the base's".into(),
            "give every composited latent the same batch_size",
        ));
    }
    for (name, at, side) in [("x", paste.x, width), ("y", paste.y, height)] {
        if at >= side {
            return Err(g.refuse(
                &paste.node,
                Some(name),
                format!(
                    "is {} pixels, at or past the base latent's {} pixels, so nothing is pasted",
                    g.number(&paste.node, name)?,
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
/// them, or where they pass the lowering's limit.
fn known_extents(
    g: &Graph<'_>,
    walk: &Walk,
    stage: usize,
    node: &str,
    input: &str,
) -> Result<(i64, i64), Refusal> {
    let Some((height, width)) = walk.extents(stage) else {
        return Err(g.refuse(
            node,
            Some(input),
            "reads a latent whose size comes from a loaded picture; the lowering composites latents whose sizes the graph fixes (empty latents, maybe resized)".into(),
            "start the composited samplers from empty latents",
        ));
    };
    if height > MAX_CELLS || width > MAX_CELLS {
        return Err(g.refuse(
            node,
            Some(input),
            format!(
                "reads a latent of {height}x{width} cells, past the {MAX_CELLS} cells a side the lowering composites"
            ),
            "composite smaller latents",
        ));
    }
    Ok((height, width))
}
