//! `LTXVAddGuide` on LTX-2's video latent: a loaded picture (through the
//! graph's resizes and maybe `LTXVPreprocess`) resized to the latent's
//! size and encoded as one latent frame appended after the video's, its
//! noise mask `1 - strength`, and its place in the video (`frame_idx`,
//! negative from the end) given to the model as the appended tokens'
//! positions (`keyframe_idxs`), with the guide's strength for its
//! attention; `LTXVCropGuides` drops the appended frames again.

use super::super::graph::Graph;
use super::held::{self, HeldFrame};
use crate::comfyui::lower::Refusal;

/// The node that appends a guide frame.
pub(super) const ADD_GUIDE: &str = "LTXVAddGuide";

/// LTX-2's video frames per latent frame after the first.
const TEMPORAL_SCALE: i64 = 8;

/// One guide: its picture, node and strength, and the video frame it
/// stands at.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct VideoGuide {
    pub frame: HeldFrame,
    /// The video frame the guide stands at, resolved from the end where
    /// the graph counts from it (see [`place`]).
    pub video_frame: i64,
}

/// Steps back from the video latent input `reads` through the
/// `LTXVAddGuide` nodes at `node` (output `slot`), returning their
/// guides in the order ComfyUI appends them (the nearest the empty
/// latent first), each at the frame the graph writes (see [`place`]);
/// `loader` is the stage's checkpoint, whose VAE must encode the picture.
pub(super) fn read(
    g: &Graph<'_>,
    (node, slot): (&mut String, &mut i64),
    reads: &mut (String, &'static str),
    loader: &str,
) -> Result<Vec<VideoGuide>, Refusal> {
    let mut guides = Vec::new();
    while g.class(node) == ADD_GUIDE {
        if guides.len() > g.nodes.len() {
            return Err(g.refuse(
                node,
                None,
                "is part of a loop of guides".into(),
                "break the loop",
            ));
        }
        if *slot != 2 {
            return Err(g.refuse(
                &reads.0,
                Some(reads.1),
                format!("reads output {slot} of node {node} (a conditioning) as its latent; LTXVAddGuide's latent is output 2"),
                "connect the latent output",
            ));
        }
        let at = node.clone();
        for (input, why) in [
            (
                "iclora_parameters",
                "IC-LoRA parameters; the lowering adds guides at the latent's own size only",
            ),
            (
                "attention_mask",
                "an attention mask; the lowering gives the model a guide's strength only",
            ),
        ] {
            if g.has(&at, input) {
                return Err(g.refuse(
                    &at,
                    Some(input),
                    format!("takes {why}"),
                    &format!("disconnect {input}"),
                ));
            }
        }
        guides.push(VideoGuide {
            frame: held::held_by(g, &at, loader)?,
            video_frame: g.whole(&at, "frame_idx", -9999..=9999)?,
        });
        *reads = (at.clone(), "latent");
        (*node, *slot) = g.source(&at, "latent")?;
    }
    guides.reverse();
    Ok(guides)
}

/// Resolves each guide's frame in a video of `latent_frames` latent
/// frames as `LTXVAddGuide` does (a negative index counts from the
/// video's last frame, at least 0), refusing a guide past the video's
/// end and two guides of one frame (which ComfyUI versions that count
/// guides by their distinct frames take as one).
pub(super) fn place(
    g: &Graph<'_>,
    guides: &mut [VideoGuide],
    latent_frames: i64,
) -> Result<(), Refusal> {
    let last = (latent_frames - 1) * TEMPORAL_SCALE;
    let mut placed: Vec<i64> = Vec::new();
    for guide in guides.iter_mut() {
        let written = guide.video_frame;
        let frame = match written {
            f if f >= 0 => f,
            f => (last + 1 + f).max(0),
        };
        if (frame + TEMPORAL_SCALE - 1) / TEMPORAL_SCALE >= latent_frames {
            return Err(g.refuse(
                &guide.frame.node,
                Some("frame_idx"),
                format!(
                    "guides frame {written}, past the last of the video's {} frames",
                    last + 1
                ),
                "choose a frame within the video",
            ));
        }
        // ComfyUI versions that count a stage's guides by their distinct
        // frames would place and crop two of one frame as one.
        if placed.contains(&frame) {
            return Err(g.refuse(
                &guide.frame.node,
                Some("frame_idx"),
                format!("guides frame {frame}, which another guide of the video guides already"),
                "guide each frame once",
            ));
        }
        placed.push(frame);
        guide.video_frame = frame;
    }
    Ok(())
}

/// Refuses a stage whose prompts do not carry exactly the guides its
/// latent holds: ComfyUI gives the model the guides' places from the
/// prompts, and the lowering from the latent.
pub(super) fn prompts_pass(g: &Graph<'_>, plan: &super::Plan) -> Result<(), Refusal> {
    let held: Vec<&String> = plan
        .audio
        .iter()
        .flat_map(|av| &av.guides)
        .map(|guide| &guide.frame.node)
        .collect();
    for (name, prompt) in plan.named_conditionings() {
        let carried: Vec<&String> = prompt.guides.iter().rev().collect();
        if carried != held {
            let listed = |nodes: &[&String]| match nodes.is_empty() {
                true => "none".to_string(),
                false => nodes
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            return Err(g.refuse(
                &plan.sampler.node,
                Some(name),
                format!("reads a {name} prompt carrying the guides of nodes {} where its latent holds those of nodes {}; the model takes the guides' places from the prompts", listed(&carried), listed(&held)),
                "condition the sampler on the prompts of the LTXVAddGuide nodes that make its latent",
            ));
        }
    }
    Ok(())
}
