//! Stable Video Diffusion's image-to-video conditioning:
//! `SVD_img2vid_Conditioning` gives a sampler both prompts (the init
//! picture's CLIP vision embedding, and that zeroed) and its latent (an
//! empty video of `video_frames` frames); the denoiser also takes the init
//! picture's latent (zeros for the negative prompt) and the frame rate,
//! motion bucket and augmentation level. A model whose prompts come from
//! it samples as SVD's checkpoints do, unless the model path states
//! another sampling; its latent must be the node's own (output 2).

use super::super::graph::Graph;
use super::model::TableSampling;
use super::pixels::{Pixels, picture};
use super::walk::Walk;
use super::{Conditioning, MAX_RESOLUTION, Prompt, SVD_CONDITIONING, vae_source};
use crate::comfyui::lower::Refusal;
use crate::comfyui::synth::tables::Table;

/// ComfyUI's SVD checkpoints' sampling: v-prediction on continuous EDM
/// sigmas from 0.002 to 700 (`sigma_data` 1).
const SIGMA_MIN: f64 = 0.002;
const SIGMA_MAX: f64 = 700.0;

/// What `SVD_img2vid_Conditioning` states.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct VideoPrompt {
    /// The init picture.
    pub image: Pixels,
    /// The loader of the CLIP vision model (`clip_vision`): the
    /// sampler's own checkpoint.
    pub clip_vision: String,
    /// The VAE node that encodes the picture.
    pub vae: String,
    pub width: i64,
    pub height: i64,
    pub motion_bucket_id: i64,
    pub fps: i64,
    pub augmentation_level: f64,
}

impl VideoPrompt {
    /// The denoiser's `added_time_ids`: `fps - 1`, the motion bucket and
    /// the augmentation level, as ComfyUI's SVD model embeds them.
    pub fn time_ids(&self) -> [f64; 3] {
        [
            (self.fps - 1) as f64,
            self.motion_bucket_id as f64,
            self.augmentation_level,
        ]
    }
}

/// Both prompts of a sampler whose positive and negative are outputs 0
/// and 1 of one `SVD_img2vid_Conditioning`, or `None` where the positive
/// does not come from one.
pub(super) fn prompts(
    g: &Graph<'_>,
    sampler: &str,
    (positive, negative): (&(String, &str), &(String, &str)),
    (middle, loader): (bool, &str),
    walk: &mut Walk,
) -> Result<Option<(Conditioning, Conditioning)>, Refusal> {
    let (node, slot) = g.source(&positive.0, positive.1)?;
    if g.class(&node) != SVD_CONDITIONING {
        return Ok(None);
    }
    let (other, other_slot) = g.source(&negative.0, negative.1)?;
    if slot != 0 || other != node || other_slot != 1 || middle {
        return Err(g.refuse(
            &node,
            None,
            format!("conditions sampler {sampler} other than as its positive (output 0) and negative (output 1) prompt, which the lowering takes together"),
            "connect positive to output 0 and negative to output 1, and guide with CFGGuider",
        ));
    }
    let prompt = video_prompt(g, &node, loader, walk)?;
    let conditioning = |zeroed: Option<String>| Conditioning {
        zeroed,
        ..Conditioning::unencoded(
            &node,
            Prompt::Video(Box::new(prompt.clone())),
            &prompt.clip_vision,
        )
    };
    Ok(Some((conditioning(None), conditioning(Some(node.clone())))))
}

/// SVD's own sampling, stated by conditioning node `node`.
pub(super) fn sampling(node: &str) -> TableSampling {
    TableSampling::v_prediction(
        node,
        Table::ContinuousEdm {
            sigma_min: SIGMA_MIN,
            sigma_max: SIGMA_MAX,
        },
    )
}

fn video_prompt(
    g: &Graph<'_>,
    node: &str,
    loader: &str,
    walk: &mut Walk,
) -> Result<VideoPrompt, Refusal> {
    let augmentation_level = g.number_in(node, "augmentation_level", 0.0..=10.0, "level")?;
    if augmentation_level != 0.0 {
        return Err(g.refuse(
            node,
            Some("augmentation_level"),
            format!("is {augmentation_level}: ComfyUI adds noise of its own random state (not the graph's seed) to the init picture, which no seeded run repeats"),
            "set augmentation_level to 0",
        ));
    }
    let (clip_vision, slot) = g.source(node, "clip_vision")?;
    if clip_vision != loader || slot != 1 {
        return Err(g.refuse(
            node,
            Some("clip_vision"),
            format!("reads output {slot} of node {clip_vision}; the lowering takes the CLIP vision model of the sampler's own checkpoint (node {loader}, output 1)"),
            "connect clip_vision to the ImageOnlyCheckpointLoader's CLIP_VISION output",
        ));
    }
    let (vae, _) = g.source(node, "vae")?;
    vae_source(g, &vae, loader, (node, "vae"))?;
    let image = picture(g, node, "init_image", walk)?;
    Ok(VideoPrompt {
        image,
        clip_vision,
        vae,
        width: g.whole(node, "width", 16..=MAX_RESOLUTION)?,
        height: g.whole(node, "height", 16..=MAX_RESOLUTION)?,
        motion_bucket_id: g.whole(node, "motion_bucket_id", 1..=1023)?,
        fps: g.whole(node, "fps", 1..=1024)?,
        augmentation_level,
    })
}
