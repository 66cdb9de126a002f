//! `LTXVConditioning` on a sampler's prompts: it sets the frame rate
//! LTX-Video's model takes with every prompt (its positional embedding
//! follows the video's time), which the lowered denoiser takes as its
//! `frame_rate` input.

use super::super::graph::Graph;
use super::Conditioning;
use crate::comfyui::lower::Refusal;

/// The class that sets the frame rate.
const CONDITIONING: &str = "LTXVConditioning";
/// The frame rate LTX-Video's model takes for a prompt without one.
const DEFAULT_RATE: f64 = 25.0;

/// One `LTXVConditioning` node and its frame rate.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct FrameRate {
    pub node: String,
    pub value: f64,
}

/// Steps back through an `LTXVConditioning` at `node` (output `slot`: 0
/// positive, 1 negative), recording its frame rate.
fn frame_rate(
    g: &Graph<'_>,
    node: &mut String,
    slot: &mut i64,
    from: &mut (String, String),
) -> Result<Option<FrameRate>, Refusal> {
    if g.class(node) != CONDITIONING {
        return Ok(None);
    }
    let rate = FrameRate {
        value: g.number_in(node, "frame_rate", 0.0..=1000.0, "frame rate")?,
        node: node.clone(),
    };
    g.through_prompt_pair(
        node,
        slot,
        from,
        "which gives conditionings on outputs 0 and 1 only",
    )?;
    Ok(Some(rate))
}

/// Steps back through the nodes at `node` (output `slot`: 0 positive, 1
/// negative) that give the prompts they are given: `LTXVImgToVideo`
/// (whose latent holds its picture), `LTXVAddGuide` (whose guide the
/// latent's appended frames hold: the model takes their places from the
/// prompts) and `LTXVCropGuides` (which drops those before it: `cropped`
/// once one is met); returns the `LTXVAddGuide` nodes whose guides the
/// prompts carry, the first met first.
fn through_prompts(
    g: &Graph<'_>,
    (node, slot, from): (&mut String, &mut i64, &mut (String, String)),
    cropped: &mut bool,
) -> Result<Vec<String>, Refusal> {
    let passing = [
        super::av_nodes::CROP_GUIDES,
        super::held::CONDITIONING,
        super::guide::ADD_GUIDE,
    ];
    let mut guides = Vec::new();
    for _ in 0..=g.nodes.len() {
        match g.class(node) {
            super::guide::ADD_GUIDE if !*cropped => guides.push(node.clone()),
            super::av_nodes::CROP_GUIDES => *cropped = true,
            class if !passing.contains(&class) => return Ok(guides),
            _ => {}
        }
        g.through_prompt_pair(
            node,
            slot,
            from,
            "which gives conditionings on outputs 0 and 1 (its latent on 2)",
        )?;
    }
    Err(g.refuse(
        node,
        None,
        "is part of a loop of prompts".into(),
        "break the loop",
    ))
}

/// Steps back through a prompt's LTX nodes at `node` (output `slot`,
/// read by `from`): the pass-through ones (see [`through_prompts`]) and
/// one `LTXVConditioning` among them; returns the `LTXVAddGuide` nodes
/// whose guides the prompt carries, the first met first, and the frame
/// rate.
pub(super) fn prompt_chain(
    g: &Graph<'_>,
    node: &mut String,
    slot: &mut i64,
    from: &mut (String, String),
) -> Result<(Vec<String>, Option<FrameRate>), Refusal> {
    let mut cropped = false;
    let mut guides = through_prompts(g, (node, slot, from), &mut cropped)?;
    let rate = frame_rate(g, node, slot, from)?;
    guides.extend(through_prompts(g, (node, slot, from), &mut cropped)?);
    Ok((guides, rate))
}

/// The `LTXVAddGuide` nodes whose guides the prompt at (`node`, `slot`),
/// read by `from`, carries (see [`prompt_chain`]).
pub(super) fn carried_guides(
    g: &Graph<'_>,
    (mut node, mut slot): (String, i64),
    mut from: (String, String),
) -> Result<Vec<String>, Refusal> {
    prompt_chain(g, &mut node, &mut slot, &mut from).map(|(guides, _)| guides)
}

/// The frame rate the sampler's denoiser takes where a prompt has an
/// `LTXVConditioning`: the prompts' own, and ComfyUI's default (25) for a
/// prompt without one; refused where they differ (the denoiser takes one
/// frame rate with every prompt).
pub(super) fn frame_rate_taken(
    g: &Graph<'_>,
    prompts: &[&Conditioning],
) -> Result<Option<FrameRate>, Refusal> {
    let Some(first) = prompts.iter().find_map(|c| c.frame_rate.as_ref()) else {
        return Ok(None);
    };
    let rate = |c: &&Conditioning| c.frame_rate.as_ref().map_or(DEFAULT_RATE, |r| r.value);
    if prompts.iter().all(|c| rate(c) == first.value) {
        return Ok(Some(first.clone()));
    }
    Err(g.refuse(
        &first.node,
        None,
        "gives the sampler's prompts different frame rates (a prompt without LTXVConditioning has 25), and the denoiser takes one frame rate with every prompt".into(),
        "condition every prompt of the sampler through one LTXVConditioning",
    ))
}
