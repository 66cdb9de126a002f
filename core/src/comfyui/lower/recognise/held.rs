//! `LTXVImgToVideoInplace` on LTX-2's video latent, and LTX-Video's
//! `LTXVImgToVideo` (an empty latent of its size, its prompts passed on):
//! a loaded picture (through the graph's resizes and maybe
//! `LTXVPreprocess`) resized to the latent's size, encoded as one video
//! frame and written over the latent's first frame, whose noise mask
//! becomes `1 - strength`. While
//! sampling, ComfyUI shows the model the held frame (its own latent, for
//! LTX-2 takes a masked latent as it is), scales the timestep of its
//! tokens by the mask and blends the estimate back to it by the mask;
//! `bypass` passes the latent unchanged.

use super::super::graph::Graph;
use super::resize::{self, Resize};
use super::vae_source;
use crate::comfyui::lower::Refusal;

/// The node that writes a picture over the first latent frame.
pub(super) const IN_PLACE: &str = "LTXVImgToVideoInplace";
/// The node that makes an empty latent holding a picture as its first
/// frame.
pub(super) const CONDITIONING: &str = "LTXVImgToVideo";
/// The node that passes a picture through H.264 to look like a frame.
const PREPROCESS: &str = "LTXVPreprocess";

/// A picture held as a latent frame: the video's first
/// (`LTXVImgToVideoInplace`, `LTXVImgToVideo`) or a guide's
/// (`LTXVAddGuide`).
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct HeldFrame {
    /// The node that holds it.
    pub node: String,
    /// The picture's `LoadImage`.
    pub loader: String,
    /// The graph's resizes of the picture, the loader's first.
    pub resizes: Vec<Resize>,
    /// `LTXVPreprocess` on the resized picture, if any.
    pub preprocess: Option<Preprocess>,
    /// How firmly the frame is held: its noise mask is `1 - strength`.
    pub strength: f64,
}

/// `LTXVPreprocess`: the picture cut to even sides (top left) and its
/// H.264 compression at `compression` (CRF; 0 for none).
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Preprocess {
    pub node: String,
    pub compression: i64,
}

impl HeldFrame {
    /// The nodes the picture passes through, the loader's first, then
    /// the in-place node.
    pub(in crate::comfyui::lower) fn nodes(&self) -> Vec<&String> {
        let resized = self.resizes.iter().flat_map(|r| r.nodes());
        std::iter::once(&self.loader)
            .chain(resized)
            .chain(self.preprocess.as_ref().map(|p| &p.node))
            .chain(std::iter::once(&self.node))
            .collect()
    }
}

/// Steps back from the video latent input `reads` through an
/// `LTXVImgToVideoInplace` at `node` (output `slot`), returning the frame
/// it holds (none where it is bypassed); `loader` is the stage's
/// checkpoint, whose VAE must encode the picture.
pub(super) fn read(
    g: &Graph<'_>,
    (node, slot): (&mut String, &mut i64),
    reads: &mut (String, &'static str),
    loader: &str,
) -> Result<Option<HeldFrame>, Refusal> {
    if g.class(node) != IN_PLACE {
        return Ok(None);
    }
    g.first_output((&reads.0, reads.1), node, *slot)?;
    let at = node.clone();
    let bypass = match g.has(&at, "bypass") {
        true => g.boolean(&at, "bypass")?,
        false => false,
    };
    *reads = (at.clone(), "latent");
    (*node, *slot) = g.source(&at, "latent")?;
    if bypass {
        return Ok(None);
    }
    held_by(g, &at, loader).map(Some)
}

/// The frame `node` holds (or guides by): its picture, encoded by
/// `loader`'s VAE, at its strength.
pub(super) fn held_by(g: &Graph<'_>, node: &str, loader: &str) -> Result<HeldFrame, Refusal> {
    let (vae, _) = g.source(node, "vae")?;
    vae_source(g, &vae, loader, (node, "vae"))?;
    let strength = g.number_in(node, "strength", 0.0..=1.0, "strength")?;
    let (picture, preprocess, resizes) = picture(g, node)?;
    Ok(HeldFrame {
        node: node.to_string(),
        loader: picture,
        resizes,
        preprocess,
        strength,
    })
}

/// Refuses a sampler that steps with the model's unconditional estimate
/// (the CFG++ ones) on a stage holding frames (`node` the first's): the
/// held frames' blend is made on the guided estimate only.
pub(super) fn solvable(g: &Graph<'_>, node: &str, sampler: &str) -> Result<(), Refusal> {
    let needs = crate::comfyui::synth::sampling::sampler(sampler).map(|s| s.needs);
    if !needs.is_some_and(|n| n.unconditional) {
        return Ok(());
    }
    Err(g.refuse(
        node,
        None,
        format!("holds a picture as a frame of a video that {sampler} samples; the lowering blends the held frame into the guided estimate only, and CFG++ samplers step with the unconditional one"),
        "choose a sampler without _cfg_pp",
    ))
}

/// The picture `node` holds: its `LoadImage`, `LTXVPreprocess` and the
/// resizes between them (the loader's first).
fn picture(
    g: &Graph<'_>,
    node: &str,
) -> Result<(String, Option<Preprocess>, Vec<Resize>), Refusal> {
    let (mut at, mut slot) = g.source(node, "image")?;
    let mut from = (node.to_string(), "image");
    let mut preprocess = None;
    if g.class(&at) == PREPROCESS {
        g.first_output((&from.0, from.1), &at, slot)?;
        preprocess = Some(Preprocess {
            compression: g.whole(&at, "img_compression", 0..=100)?,
            node: at.clone(),
        });
        from = (at.clone(), "image");
        (at, slot) = g.source(&from.0, "image")?;
    }
    let mut resizes = Vec::new();
    let mut passed = 0;
    while let Some(input) = resize::picture_input(g.class(&at)) {
        passed += 1;
        if passed > g.nodes.len() {
            return Err(g.refuse(
                &at,
                None,
                "is part of a loop of resizes".into(),
                "break the loop",
            ));
        }
        g.first_output((&from.0, from.1), &at, slot)?;
        resizes.extend(resize::read(g, &at)?);
        from = (at.clone(), input);
        (at, slot) = g.source(&from.0, input)?;
    }
    if g.class(&at) != "LoadImage" || slot != 0 {
        return Err(g.refuse(
            &from.0,
            Some(from.1),
            format!("reads output {slot} of node {at} ({}); the lowering holds a LoadImage's picture as the first frame, maybe resized and through LTXVPreprocess", g.class(&at)),
            "load the picture with LoadImage",
        ));
    }
    resizes.reverse();
    Ok((at, preprocess, resizes))
}
