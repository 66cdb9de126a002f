//! The audio-video classes and latent layout the other recognisers name
//! (see `av` and `minimax`), apart so that naming them ties no module to
//! theirs.

use super::guide::VideoGuide;

/// The node that joins a video and an audio latent.
pub(super) const CONCAT: &str = "LTXVConcatAVLatent";
/// The node that gives the two parts back.
pub(super) const SEPARATE: &str = "LTXVSeparateAVLatent";
/// Drops the keyframe guides from a latent and its prompts (a latent
/// without guides passes unchanged).
pub(super) const CROP_GUIDES: &str = "LTXVCropGuides";
/// MiniMax H3's node that encodes the prompt (and its keyframe pictures)
/// and makes the empty joint latent (see `minimax`).
pub(in crate::comfyui::lower) const H3_IMAGE_TO_VIDEO: &str = "MiniMaxH3ImageToVideo";
/// MiniMax H3's node that sets its video and audio shifts.
pub(super) const H3_SIGMA_SHIFT: &str = "MiniMaxH3SigmaShift";
/// MiniMax H3's video latent channels and pixels per cell.
pub(super) const H3_CHANNELS: i64 = 24;
pub(super) const H3_CELL: i64 = 16;

/// LTX-2's audio latent's channels and frequency bins.
const LTX_AUDIO_CHANNELS: i64 = 8;
const LTX_AUDIO_BINS: i64 = 16;
/// MiniMax H3's audio latent's channels and stereo sides.
const H3_AUDIO_CHANNELS: i64 = 32;
const H3_AUDIO_SIDES: i64 = 2;

/// The model whose audio-video latent a packed row holds: it settles the
/// audio part's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::comfyui::lower) enum AvModel {
    /// LTX-2: audio `[8, length, 16]` (channels, latents, frequency bins).
    Ltx2,
    /// MiniMax H3: audio `[32, 2, length]` (channels, stereo, latents).
    MiniMaxH3,
}

impl AvModel {
    /// The audio part's extents after the batch, `length` latents long.
    pub(in crate::comfyui::lower) fn audio_shape(self, length: i64) -> [i64; 3] {
        match self {
            AvModel::Ltx2 => [LTX_AUDIO_CHANNELS, length, LTX_AUDIO_BINS],
            AvModel::MiniMaxH3 => [H3_AUDIO_CHANNELS, H3_AUDIO_SIDES, length],
        }
    }

    /// The audio part's contract extents: the batch, then
    /// [`Self::audio_shape`]'s with the length named `audio_length`.
    pub(in crate::comfyui::lower) fn audio_axes(self) -> serde_json::Value {
        // No extent is negative: -1 marks the length.
        let named = self.audio_shape(-1).map(|e| match e {
            -1 => serde_json::json!("audio_length"),
            e => serde_json::json!(e),
        });
        let mut axes = vec![serde_json::json!("batch")];
        axes.extend(named);
        serde_json::Value::Array(axes)
    }
}

/// How much LTX-2's spatial latent upsampler enlarges each side.
const LATENT_UPSCALE: i64 = 2;

/// How a packed audio-video row holds its parts: the video latent's
/// `[channels, frames, height, width]` (the last `guides` frames the
/// guides `LTXVAddGuide` appends), then the audio latent's (its shape
/// `model`'s, `audio_length` latents long).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct AvLayout {
    pub model: AvModel,
    pub video: [i64; 4],
    pub audio_length: i64,
    pub guides: i64,
}

impl AvLayout {
    /// The packed row's elements.
    pub(in crate::comfyui::lower) fn elements(&self) -> i64 {
        self.video.iter().product::<i64>() + self.audio().iter().product::<i64>()
    }

    /// The audio part's extents after the batch.
    pub(in crate::comfyui::lower) fn audio(&self) -> [i64; 3] {
        self.model.audio_shape(self.audio_length)
    }

    /// The layout after a spatial upsampler's doubling of the video.
    pub(super) fn upsampled(self) -> AvLayout {
        let [c, f, h, w] = self.video;
        AvLayout {
            video: [c, f, h * LATENT_UPSCALE, w * LATENT_UPSCALE],
            ..self
        }
    }
}

/// A stage's audio-video latent: what joins it, its audio part, the
/// model that enlarges its video part, and how both lie in the packed
/// row (the graph fixes every size).
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct AudioVideo {
    /// The node that makes the joint latent: LTX-2's
    /// `LTXVConcatAVLatent`, MiniMax H3's `MiniMaxH3ImageToVideo`.
    pub concat: String,
    pub audio: AvAudio,
    /// `LTXVLatentUpsampler` on an earlier stage's video part.
    pub upsampler: Option<LatentUpsampler>,
    pub layout: AvLayout,
    /// The earlier stage's layout, where this one continues it.
    pub earlier: Option<AvLayout>,
    /// The guide frames appended after the video's (`LTXVAddGuide`), in
    /// the order they are appended.
    pub guides: Vec<VideoGuide>,
    /// The frames MiniMax H3's keyframe references anchor, in the order
    /// the prompt carries them.
    pub keyframes: Vec<i64>,
}

/// Where an audio-video latent's audio part comes from.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) enum AvAudio {
    /// `LTXVEmptyLatentAudio`'s (or `MiniMaxH3ImageToVideo`'s) `length`
    /// latents of silence.
    Empty {
        node: String,
        length: i64,
        batch: i64,
    },
    /// The audio part of stage `0`'s latent (`LTXVSeparateAVLatent`).
    Stage(usize),
}

/// `LTXVLatentUpsampler` and the `LatentUpscaleModelLoader` it runs (the
/// VAE's per-channel statistics it reads are the exported model's).
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct LatentUpsampler {
    pub node: String,
    pub loader: String,
}
