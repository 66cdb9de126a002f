//! The sizes of the empty latents the lowering makes: each video latent
//! class's channels, pixels a cell and frames a latent frame, and the
//! cells of an empty latent the graph sizes.

use super::super::graph::Graph;
use super::MAX_RESOLUTION;
use crate::comfyui::lower::Refusal;

/// An empty video latent class: channels, spatial and temporal scale
/// (ComfyUI's `comfy_extras` nodes of each model family).
pub(super) struct VideoLatent {
    pub class: &'static str,
    pub channels: i64,
    pub scale: i64,
    pub temporal: i64,
    /// ComfyUI's least width and height for the class.
    pub min_side: i64,
}

/// Kandinsky 5's image-to-video node: without a start picture it passes
/// both prompts on unchanged (outputs 0 and 1) and gives an empty video
/// latent (output 2) of 16 channels, 8 pixels a cell and 4 frames a latent
/// frame; with one it conditions both prompts on the picture's latent.
pub(super) const KANDINSKY5: &str = "Kandinsky5ImageToVideo";

/// Steps back through a [`KANDINSKY5`] node at the walk's position, if it
/// is one: its output `slot` (0 positive, 1 negative) is the prompt on
/// that input as it is. A start picture is refused.
pub(super) fn through_kandinsky5(
    g: &Graph<'_>,
    node: &mut String,
    slot: &mut i64,
    from: &mut (String, String),
) -> Result<(), Refusal> {
    if g.class(node) != KANDINSKY5 {
        return Ok(());
    }
    if g.has(node, "start_image") {
        return Err(start_picture(g, node));
    }
    g.through_prompt_pair(node, slot, from, "its latent, as a conditioning")
}

/// The refusal of a start picture on an empty video latent's node.
pub(super) fn start_picture(g: &Graph<'_>, node: &str) -> Refusal {
    g.refuse(
        node,
        Some("start_image"),
        "starts the video from a picture, which the lowering does not encode into video latents yet".into(),
        "disconnect start_image to make a text-to-video latent",
    )
}

/// The empty video latent class `class` makes: its own, or LTX-Video's
/// for `LTXVImgToVideo` (an empty latent of its size holding a picture).
pub(super) fn video_latent(class: &str) -> Option<&'static VideoLatent> {
    let class = match class {
        super::held::CONDITIONING => "EmptyLTXVLatentVideo",
        other => other,
    };
    VIDEO_LATENTS.iter().find(|v| v.class == class)
}

pub(super) const VIDEO_LATENTS: &[VideoLatent] = &[
    VideoLatent {
        class: "EmptyHunyuanLatentVideo",
        channels: 16,
        scale: 8,
        temporal: 4,
        min_side: 16,
    },
    VideoLatent {
        class: "EmptyHunyuanVideo15Latent",
        channels: 32,
        scale: 16,
        temporal: 4,
        min_side: 16,
    },
    VideoLatent {
        class: KANDINSKY5,
        channels: 16,
        scale: 8,
        temporal: 4,
        min_side: 16,
    },
    VideoLatent {
        class: "EmptyMochiLatentVideo",
        channels: 12,
        scale: 8,
        temporal: 6,
        min_side: 16,
    },
    VideoLatent {
        class: "EmptyCosmosLatentVideo",
        channels: 16,
        scale: 8,
        temporal: 8,
        min_side: 16,
    },
    VideoLatent {
        class: "EmptyLTXVLatentVideo",
        channels: 128,
        scale: 32,
        temporal: 8,
        min_side: 64,
    },
    VideoLatent {
        class: "Wan22ImageToVideoLatent",
        channels: 48,
        scale: 16,
        temporal: 4,
        min_side: 32,
    },
];

/// The cells of empty latent `node` (frames times height times width of
/// a video latent, height times width of a picture's), as written; `None`
/// for any other node.
pub(super) fn latent_cells(g: &Graph<'_>, node: &str) -> Result<Option<i64>, Refusal> {
    let class = g.class(node);
    // LTX-2's audio-video latent counts its video's cells (ComfyUI reads
    // the packed latent's shape as its first part's).
    if class == super::av_nodes::CONCAT {
        let (video, _) = g.source(node, "video_latent")?;
        if g.class(&video) == super::av_nodes::CONCAT {
            return Ok(None);
        }
        return latent_cells(g, &video);
    }
    // A picture written over its first frame keeps the latent's shape.
    if class == super::held::IN_PLACE {
        let (latent, _) = g.source(node, "latent")?;
        if [super::av_nodes::CONCAT, super::held::IN_PLACE].contains(&g.class(&latent)) {
            return Ok(None);
        }
        return latent_cells(g, &latent);
    }
    let (scale, temporal) = match video_latent(class) {
        Some(video) => (video.scale, Some(video.temporal)),
        None => match class {
            "EmptyLatentImage" | "EmptySD3LatentImage" => (8, None),
            "EmptyFlux2LatentImage" => (16, None),
            _ => return Ok(None),
        },
    };
    let side = |name: &str| Ok::<_, Refusal>(g.whole(node, name, 1..=MAX_RESOLUTION)? / scale);
    let frames = match temporal {
        Some(t) => (g.whole(node, "length", 1..=MAX_RESOLUTION)? - 1) / t + 1,
        None => 1,
    };
    Ok(Some(frames * side("height")? * side("width")?))
}
