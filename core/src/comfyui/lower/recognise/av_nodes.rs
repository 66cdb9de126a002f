//! The LTX-2 audio-video classes and latent layout the other recognisers
//! name (see `av`), apart so that naming them ties no module to `av`'s.

/// The node that joins a video and an audio latent.
pub(super) const CONCAT: &str = "LTXVConcatAVLatent";
/// The node that gives the two parts back.
pub(super) const SEPARATE: &str = "LTXVSeparateAVLatent";
/// Drops the keyframe guides from a latent and its prompts (a latent
/// without guides passes unchanged).
pub(super) const CROP_GUIDES: &str = "LTXVCropGuides";

/// The audio latent's channels and frequency bins.
pub(in crate::comfyui::lower) const AUDIO_CHANNELS: i64 = 8;
pub(in crate::comfyui::lower) const AUDIO_BINS: i64 = 16;

/// How much LTX-2's spatial latent upsampler enlarges each side.
const LATENT_UPSCALE: i64 = 2;

/// How a packed audio-video row holds its parts: the video latent's
/// `[channels, frames, height, width]` (the last `guides` frames the
/// guides `LTXVAddGuide` appends), then the audio latent's `[8,
/// audio_length, 16]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct AvLayout {
    pub video: [i64; 4],
    pub audio_length: i64,
    pub guides: i64,
}

impl AvLayout {
    /// The packed row's elements.
    pub(in crate::comfyui::lower) fn elements(&self) -> i64 {
        self.video.iter().product::<i64>() + AUDIO_CHANNELS * self.audio_length * AUDIO_BINS
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
