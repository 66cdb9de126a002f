//! LTX-2's audio-video latents: `LTXVConcatAVLatent` joins a video latent
//! (`EmptyLTXVLatentVideo`, or an earlier stage's video part through
//! `LTXVLatentUpsampler`, maybe after `LTXVCropGuides`) and an audio
//! latent (`LTXVEmptyLatentAudio`: 8 channels by 16 frequency bins, 25
//! latents a second of the video's frames, or the same earlier stage's
//! audio part), which one sampler samples together, as ComfyUI does (it
//! packs the two into one row per batch entry, `[batch, 1, video +
//! audio]`, and the model reads each part); `LTXVSeparateAVLatent` gives
//! a sampled latent's video (0) and audio (1) parts back, for
//! `VAEDecode`/`VAEDecodeTiled` and `LTXVAudioVAEDecode`, whose sound
//! `CreateVideo` puts beside the frames.

use super::super::graph::Graph;
use super::MAX_BATCH;
use super::av_nodes::{
    AudioVideo, AvAudio, AvLayout, AvModel, CONCAT, CROP_GUIDES, H3_IMAGE_TO_VIDEO,
    LatentUpsampler, SEPARATE,
};
pub(in crate::comfyui::lower) use super::guide::VideoGuide;
use super::held;
pub(in crate::comfyui::lower) use super::held::HeldFrame;
use super::latent::{self, LatentSource};
use super::vae_source;
use super::walk::Walk;
use crate::comfyui::lower::Refusal;

const UPSAMPLER: &str = "LTXVLatentUpsampler";
const UPSAMPLER_LOADER: &str = "LatentUpscaleModelLoader";
const EMPTY_VIDEO: &str = "EmptyLTXVLatentVideo";
const EMPTY_AUDIO: &str = "LTXVEmptyLatentAudio";
const AUDIO_DECODE: &str = "LTXVAudioVAEDecode";
/// ComfyUI's decode of any audio VAE's latent.
const VAE_AUDIO_DECODE: &str = "VAEDecodeAudio";
/// The audio VAE's loaders: from a checkpoint, or a file of its own
/// (LTX-2.5's).
const AUDIO_VAE_LOADERS: &[&str] = &["LTXVAudioVAELoader", "VAELoader"];

/// Audio latents a second: the audio VAE's 16 kHz mel frames (hop 160)
/// four to a latent.
const AUDIO_LATENTS_PER_SECOND: f64 = 25.0;
/// A sampled audio-video latent's sound beside a video: LTX-2's
/// `LTXVAudioVAEDecode`, or MiniMax H3's `VAEDecodeAudio` (which scales
/// loud waveforms down, `loudness`), of stage `stage`'s audio part with
/// the audio VAE `loader`, at `sample_rate`.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Sound {
    pub decode: String,
    pub loader: String,
    pub stage: usize,
    pub sample_rate: i64,
    pub loudness: bool,
}

/// The rate the audio VAE of checkpoint `file` decodes at: LTX-2.3's and
/// LTX-2.5's vocoders extend the band to 48 kHz, LTX-2's (and, as the
/// lowering assumes, another file's) give 24 kHz.
fn sample_rate(file: &str) -> i64 {
    let name = file.to_ascii_lowercase().replace(['_', '-'], ".");
    match ["ltx.2.3", "ltx.2.5", "ltx2.3", "ltx2.5"]
        .iter()
        .any(|v| name.contains(v))
    {
        true => 48_000,
        false => 24_000,
    }
}

/// The latent sampler `sampler` starts from (the video part of an
/// audio-video latent), for one the rest of it, and the picture held as
/// its video's first frame.
pub(super) fn latent_source(
    g: &Graph<'_>,
    sampler: &str,
    loader: &str,
    walk: &mut Walk,
) -> Result<(LatentSource, Option<AudioVideo>, Option<HeldFrame>), Refusal> {
    let (concat, slot) = g.source(sampler, "latent_image")?;
    if g.class(&concat) == H3_IMAGE_TO_VIDEO {
        let from = (sampler, "latent_image");
        let (source, av) = super::minimax::latent_source(g, &concat, slot, from)?;
        return Ok((source, Some(av), None));
    }
    if g.class(&concat) != CONCAT {
        let source = latent::latent_source(g, (sampler, "latent_image"), loader, walk)?;
        let held = match &source {
            LatentSource::Empty { node, .. } if g.class(node) == held::CONDITIONING => {
                Some(held::held_by(g, node, loader)?)
            }
            _ => None,
        };
        let earlier = match &source {
            LatentSource::Stage { stage, .. } => Some(*stage),
            LatentSource::Composite(c) => Some(c.base),
            _ => None,
        };
        if earlier.and_then(|stage| walk.av_layout(stage)).is_some() {
            return Err(g.refuse(
                &concat,
                None,
                format!("gives sampler {sampler} LTX-2's audio-video latent other than through {CONCAT}; the lowering samples one further from {SEPARATE}'s parts joined again, the video part through LTXVLatentUpsampler"),
                "separate the latent with LTXVSeparateAVLatent, upsample its video part with LTXVLatentUpsampler and join the parts with LTXVConcatAVLatent",
            ));
        }
        return Ok((source, None, held));
    }
    g.first_output((sampler, "latent_image"), &concat, slot)?;
    let (mut video, mut slot) = g.source(&concat, "video_latent")?;
    let mut reads = (concat.clone(), "video_latent");
    let mut guides = super::guide::read(g, (&mut video, &mut slot), &mut reads, loader)?;
    let held = held::read(g, (&mut video, &mut slot), &mut reads, loader)?;
    let (source, upsampler) = match g.class(&video) {
        UPSAMPLER => {
            g.first_output((&reads.0, reads.1), &video, slot)?;
            let (stage, upsampler) = upsampled(g, &video, loader, walk)?;
            let stage = LatentSource::Stage {
                stage,
                upscale: None,
            };
            (stage, Some(upsampler))
        }
        EMPTY_VIDEO => (
            latent::latent_source(g, (&reads.0, reads.1), loader, walk)?,
            None,
        ),
        _ => {
            return Err(g.refuse(
                &video,
                None,
                format!("gives node {} ({}) its video latent; the lowering takes an {EMPTY_VIDEO}, or an {UPSAMPLER} of an earlier sampler's video part, maybe through {}", reads.0, g.class(&reads.0), held::IN_PLACE),
                "connect an EmptyLTXVLatentVideo, or LTXVLatentUpsampler of LTXVSeparateAVLatent's video",
            ));
        }
    };
    let (audio_node, slot) = g.source(&concat, "audio_latent")?;
    let audio = match (g.class(&audio_node), slot) {
        (EMPTY_AUDIO, 0) => empty_audio(g, &audio_node)?,
        (SEPARATE, 1) => AvAudio::Stage(walk.separated(g, &audio_node)?),
        _ => {
            return Err(g.refuse(
                &audio_node,
                None,
                format!("gives node {concat} ({CONCAT}) its audio latent; the lowering takes an {EMPTY_AUDIO}, or the audio part (output 1) of an {SEPARATE}"),
                "connect an LTXVEmptyLatentAudio, or LTXVSeparateAVLatent's audio",
            ));
        }
    };
    let (layout, earlier) = match (&source, &audio) {
        (LatentSource::Stage { stage, .. }, AvAudio::Stage(from)) if stage == from => {
            // The video part of an earlier stage comes through the
            // upsampler.
            let earlier = walk.av_layout(*stage);
            if let Some(guide) = guides.first() {
                return Err(g.refuse(
                    &guide.frame.node,
                    None,
                    format!("adds a guide to the video latent an upsampler enlarges (node {video}); the lowering adds guides to an empty video latent only"),
                    "guide the first sampler's latent",
                ));
            }
            if earlier.is_some_and(|e| e.guides > 0) {
                return Err(g.refuse(
                    &video,
                    None,
                    "enlarges a video whose sampler appended guide frames; the lowering does not yet crop them before the upsampler".into(),
                    "sample the guided video and decode it, through LTXVCropGuides",
                ));
            }
            (earlier.map(AvLayout::upsampled), earlier)
        }
        (
            LatentSource::Empty {
                width,
                height,
                batch,
                scale,
                channels,
                frames: Some(frames),
                ..
            },
            AvAudio::Empty {
                length,
                batch: audio_batch,
                ..
            },
        ) if batch == audio_batch => {
            let video_frames = (frames.length - 1) / frames.temporal + 1;
            super::guide::place(g, &mut guides, video_frames)?;
            let appended = guides.len() as i64;
            let video = [
                *channels,
                video_frames + appended,
                height / scale,
                width / scale,
            ];
            let layout = AvLayout {
                model: AvModel::Ltx2,
                video,
                audio_length: *length,
                guides: appended,
            };
            (Some(layout), None)
        }
        _ => (None, None),
    };
    let Some(layout) = layout else {
        return Err(g.refuse(
            &concat,
            None,
            "joins parts that do not come from one place: both must be empty latents of one batch size, or both one earlier sampler's".into(),
            "join the video and audio parts of one LTXVSeparateAVLatent, or two empty latents",
        ));
    };
    let av = AudioVideo {
        concat,
        audio,
        upsampler,
        layout,
        earlier,
        guides,
        keyframes: Vec::new(),
    };
    Ok((source, Some(av), held))
}

/// The stage whose video part `LTXVLatentUpsampler` `node` enlarges, and
/// the upsampler.
fn upsampled(
    g: &Graph<'_>,
    node: &str,
    loader: &str,
    walk: &mut Walk,
) -> Result<(usize, LatentUpsampler), Refusal> {
    let (mut samples, mut slot) = g.source(node, "samples")?;
    let mut from = (node.to_string(), "samples");
    if g.class(&samples) == CROP_GUIDES && slot == 2 {
        from = (samples.clone(), "latent");
        (samples, slot) = g.source(&samples, "latent")?;
    }
    if g.class(&samples) != SEPARATE || slot != 0 {
        return Err(g.refuse(
            &from.0,
            Some(from.1),
            format!("enlarges node {samples}'s latent; the lowering enlarges the video part (output 0) of an {SEPARATE}"),
            "connect LTXVSeparateAVLatent's video output",
        ));
    }
    let stage = walk.separated(g, &samples)?;
    let (model, _) = g.source(node, "upscale_model")?;
    g.expect(
        &model,
        &[UPSAMPLER_LOADER],
        "upscale_model",
        (node, "upscale_model"),
    )?;
    let file = g.text(&model, "model_name")?;
    let name = file.to_ascii_lowercase();
    if !(name.contains("spatial") && name.contains("x2")) {
        return Err(g.refuse(
            &model,
            Some("model_name"),
            format!("loads '{file}', which the lowering does not know as LTX-2's spatial upsampler of twice the height and width"),
            "load an LTX-2 spatial-upscaler-x2 model",
        ));
    }
    let (vae, _) = g.source(node, "vae")?;
    vae_source(g, &vae, loader, (node, "vae"))?;
    Ok((
        stage,
        LatentUpsampler {
            node: node.to_string(),
            loader: model,
        },
    ))
}

/// `LTXVEmptyLatentAudio`'s latent: `round(frames / frame_rate * 25)`
/// latents (ties to even, as Python rounds).
fn empty_audio(g: &Graph<'_>, node: &str) -> Result<AvAudio, Refusal> {
    let frames = g.whole(node, "frames_number", 1..=1000)?;
    let rate = g.number_in(node, "frame_rate", 1.0..=1000.0, "frame rate")?;
    let (vae, _) = g.source(node, "audio_vae")?;
    g.expect(&vae, AUDIO_VAE_LOADERS, "audio_vae", (node, "audio_vae"))?;
    let length = (frames as f64 / rate * AUDIO_LATENTS_PER_SECOND).round_ties_even() as i64;
    if length < 1 {
        return Err(g.refuse(
            node,
            Some("frames_number"),
            format!(
                "asks for {frames} frames at {rate} a second, less than one audio latent (1/25 s)"
            ),
            "ask for more frames",
        ));
    }
    Ok(AvAudio::Empty {
        node: node.to_string(),
        length,
        batch: g.whole(node, "batch_size", 1..=MAX_BATCH)?,
    })
}

/// The sound `CreateVideo` `node` puts beside its frames: none without
/// an `audio` input, else a sampled audio-video latent's decoded audio
/// part (LTX-2's through `LTXVSeparateAVLatent`, MiniMax H3's also
/// straight from its sampler, which ComfyUI's `VAEDecodeAudio` reads the
/// last part of).
pub(super) fn sound(g: &Graph<'_>, node: &str, walk: &mut Walk) -> Result<Option<Sound>, Refusal> {
    if !g.has(node, "audio") {
        return Ok(None);
    }
    let (decode, slot) = g.source(node, "audio")?;
    let loudness = g.class(&decode) == VAE_AUDIO_DECODE;
    if g.class(&decode) != AUDIO_DECODE && !loudness {
        return Err(g.refuse(
            node,
            Some("audio"),
            format!("adds a sound track from node {decode}; the lowering adds a sampled audio-video latent's decoded audio ({AUDIO_DECODE}, or {VAE_AUDIO_DECODE} of MiniMax H3's) only"),
            "disconnect the audio input",
        ));
    }
    g.first_output((node, "audio"), &decode, slot)?;
    let (samples, slot) = g.source(&decode, "samples")?;
    let stage = match (g.class(&samples), slot) {
        (SEPARATE, 1) => walk.separated(g, &samples)?,
        _ if loudness => walk.sampled(g, &samples, slot, (&decode, "samples"))?,
        _ => {
            return Err(g.refuse(
                &decode,
                Some("samples"),
                format!("decodes node {samples}'s latent; the lowering decodes the audio part (output 1) of an {SEPARATE}"),
                "connect LTXVSeparateAVLatent's audio output",
            ));
        }
    };
    let model = walk.av_layout(stage).map(|layout| layout.model);
    let class = g.class(&decode);
    let expected = match model {
        Some(AvModel::MiniMaxH3) => VAE_AUDIO_DECODE,
        _ => AUDIO_DECODE,
    };
    if class != expected {
        return Err(g.refuse(
            &decode,
            Some("samples"),
            format!("decodes node {samples}'s latent with {class} beside a video; the lowering decodes LTX-2's audio with {AUDIO_DECODE} and MiniMax H3's with {VAE_AUDIO_DECODE}"),
            &format!("decode the audio with {expected}"),
        ));
    }
    let vae_input = if loudness { "vae" } else { "audio_vae" };
    let (loader, _) = g.source(&decode, vae_input)?;
    g.expect(&loader, AUDIO_VAE_LOADERS, vae_input, (&decode, vae_input))?;
    let file = match g.class(&loader) {
        "VAELoader" => g.text(&loader, "vae_name")?,
        _ => g.text(&loader, "ckpt_name")?,
    };
    Ok(Some(Sound {
        sample_rate: match model {
            Some(AvModel::MiniMaxH3) => super::minimax::SAMPLE_RATE,
            _ => sample_rate(file),
        },
        decode,
        loader,
        stage,
        loudness,
    }))
}

#[cfg(test)]
mod tests {
    use super::sample_rate;

    #[test]
    fn ltx_2_3_and_2_5_decode_at_48_khz_ltx_2_at_24() {
        assert_eq!(sample_rate("ltx-2-19b-dev-fp8.safetensors"), 24_000);
        assert_eq!(sample_rate("ltx-2.3-22b-dev-fp8.safetensors"), 48_000);
        assert_eq!(sample_rate("ltx-2.5-audio-vae-bf16.safetensors"), 48_000);
        assert_eq!(sample_rate("models/LTX_2_3_distilled.safetensors"), 48_000);
        assert_eq!(sample_rate("ltx-2-3-dev.safetensors"), 48_000);
    }
}
