//! MiniMax H3's graphs: `MiniMaxH3ImageToVideo` encodes its `prompt` with
//! its CLIP (the sampler's conditioning, output 0) and gives the empty
//! joint latent (output 1): a video part `[batch, 24, T, height / 16,
//! width / 16]` and an audio part `[batch, 32, 2, A]`, which one sampler
//! samples packed, as LTX-2's (see `av`). Its frames snap up to the
//! model's 17k + 5 grid at 24 a second: `T = 5k + 2` latent frames (the
//! first covers one frame, the others four each, five to 17 frames) and
//! `A = round(frames / 24 * 40)` audio latents. `MiniMaxH3SigmaShift`
//! sets the video and audio flow shifts (12 and 3 by default); ComfyUI's
//! sampler carries the audio part at `shift_video / shift_audio` times its
//! scale.
//!
//! Its keyframe pictures (`first_frame`, `last_frame`: a loaded picture,
//! maybe resized) are resized by lanczos to the video's size (the first
//! stretched, the last cover-cropped from the centre); the text encoder
//! sees them beside the prompt, and their latents (the video VAE's
//! encode of each) ride with the conditioning as references, which the
//! model re-injects at every step at the first and the last frame.

use super::super::graph::Graph;
use super::av_nodes::{
    AudioVideo, AvAudio, AvLayout, AvModel, H3_CELL as CELL, H3_CHANNELS,
    H3_IMAGE_TO_VIDEO as IMAGE_TO_VIDEO, H3_SIGMA_SHIFT,
};
use super::latent::LatentSource;
use super::pixels::loaded_picture;
use super::reference::Reference;
use super::resize::{PixelSize, Resize};
use super::vision::Read;
use super::{Conditioning, MAX_RESOLUTION, ModelChain, Vision, round_half_even, vae_source};
use crate::comfyui::lower::Refusal;
/// The audio shift of H3's own sampling (`supported_models`).
pub(in crate::comfyui::lower) const AUDIO_SHIFT: f64 = 3.0;
/// Samples a second of the audio VAE's stereo waveform.
pub(super) const SAMPLE_RATE: i64 = 32_000;
/// Waveform samples the audio VAE decodes each audio latent into (800).
pub(in crate::comfyui::lower) const SAMPLES_PER_LATENT: i64 =
    SAMPLE_RATE / AUDIO_LATENTS_PER_SECOND as i64;

/// Frames a second, and audio latents a second.
const FPS: f64 = 24.0;
const AUDIO_LATENTS_PER_SECOND: f64 = 40.0;
/// ComfyUI's limit on the node's `length`.
const MAX_LENGTH: i64 = 3600;
/// Video frames each latent frame of a five-frame group covers.
const FRAMES_PER_TOKEN: [i64; 5] = [1, 4, 4, 4, 4];

/// `length` snapped up to the 17k + 5 grid (at least 5 frames).
fn frame_count(length: i64) -> i64 {
    let n = length.max(5);
    n + (5 - n).rem_euclid(17)
}

/// The latent frames of `frames` (on the grid, at least 5) video frames.
fn latent_frames(frames: i64) -> i64 {
    (frames - 5) / 17 * 5 + 2
}

/// The video frames the VAE decodes `latent` latent frames into.
pub(in crate::comfyui::lower) fn decoded_frames(latent: i64) -> i64 {
    (0..latent)
        .map(|k| FRAMES_PER_TOKEN[(k % 5) as usize])
        .sum()
}

/// The keyframe inputs, each with whether its picture is cover-cropped
/// (from the centre) rather than stretched to the video's size.
const KEYFRAMES: [(&str, bool); 2] = [("first_frame", false), ("last_frame", true)];

/// Reads `MiniMaxH3ImageToVideo` `node` as a prompt: its text, the
/// keyframe pictures its text encoder sees and the references their
/// latents give the model (encoded by its VAE, which must be the stage's
/// checkpoint's or a `VAELoader`'s: `loader` is the checkpoint).
pub(super) fn read(g: &Graph<'_>, node: &str, loader: &str) -> Result<Read, Refusal> {
    let mut read = Read {
        text: g.text(node, "prompt")?.to_string(),
        vision: Vec::new(),
        references: Vec::new(),
    };
    let (width, height) = size(g, node)?;
    let linked = KEYFRAMES.iter().filter(|(input, _)| g.is_link(node, input));
    if linked.clone().next().is_some() {
        let (vae, _) = g.source(node, "vae")?;
        vae_source(g, &vae, loader, (node, "vae"))?;
    }
    for &(input, centre) in linked {
        let (picture, resize) = loaded_picture(g, node, input)?;
        let fitted = Resize {
            node: node.to_string(),
            method: "lanczos".into(),
            size: PixelSize::Fixed {
                width,
                height,
                centre,
            },
            then: Vec::new(),
        };
        read.references.push(Reference {
            node: node.to_string(),
            class: IMAGE_TO_VIDEO.to_string(),
            encode: node.to_string(),
            loader: picture.clone(),
            resize: resize.clone(),
            then: Some(fitted.clone()),
        });
        read.vision.push(Vision {
            node: node.to_string(),
            class: IMAGE_TO_VIDEO.to_string(),
            loader: picture,
            resize,
            seen: fitted,
        });
    }
    Ok(read)
}

/// The frames the keyframe references of `node` anchor in its video of
/// `frames` frames, in their order: 0 for `first_frame`, the last for
/// `last_frame`.
fn keyframe_frames(g: &Graph<'_>, node: &str, frames: i64) -> Vec<i64> {
    KEYFRAMES
        .iter()
        .filter(|(input, _)| g.is_link(node, input))
        .map(|(input, _)| match *input {
            "first_frame" => 0,
            _ => frames - 1,
        })
        .collect()
}

/// Refuses what the lowering cannot make of a MiniMax H3 stage (`av`
/// its joint latent, if it samples one; `prompts` its conditionings):
/// another model sampling than H3's own or `MiniMaxH3SigmaShift`'s
/// (ComfyUI's other nodes drop the audio part's own shift), and an H3
/// prompt on a sampler whose latent is not that node's (its keyframes
/// anchor in its own latent).
pub(super) fn check_stage(
    g: &Graph<'_>,
    model: &ModelChain,
    av: Option<&AudioVideo>,
    prompts: &[&Conditioning],
) -> Result<(), Refusal> {
    let own = av.filter(|av| av.layout.model == AvModel::MiniMaxH3);
    for prompt in prompts
        .iter()
        .filter(|c| g.class(&c.encoder) == IMAGE_TO_VIDEO)
    {
        if own.is_none_or(|av| av.concat != prompt.encoder) {
            return Err(g.refuse(
                &prompt.encoder,
                None,
                "encodes the prompt of a sampler that does not sample its own latent (output 1); the lowering anchors its keyframes in that latent".into(),
                "connect the sampler's latent_image to the node's latent output",
            ));
        }
    }
    let Some(av) = own else {
        return Ok(());
    };
    match &model.flow {
        Some(flow) if flow.assumed.is_some() || g.class(&flow.node) == H3_SIGMA_SHIFT => Ok(()),
        Some(flow) => Err(g.refuse(
            &flow.node,
            None,
            format!("sets the sampling of node {}'s MiniMax H3 model, which ComfyUI then samples without its audio part's own shift; the lowering takes H3's own sampling or MiniMaxH3SigmaShift's", av.concat),
            "set the shifts with MiniMaxH3SigmaShift",
        )),
        None => Err(g.refuse(
            &model.loader,
            None,
            format!("loads a model that samples node {}'s MiniMax H3 latent without its sampling: the lowering knows it from a CLIPLoader of type 'minimax' or MiniMaxH3SigmaShift", av.concat),
            "load the text encoder with CLIPLoader type 'minimax'",
        )),
    }
}

/// The video's width and height on `node`, whole cells of 16 pixels.
fn size(g: &Graph<'_>, node: &str) -> Result<(i64, i64), Refusal> {
    let mut sides = [0; 2];
    for (side, name) in sides.iter_mut().zip(["width", "height"]) {
        *side = g.whole(node, name, CELL..=MAX_RESOLUTION)?;
        if *side % CELL != 0 {
            return Err(g.refuse(
                node,
                Some(name),
                format!("asks for a {name} of {side} pixels, which MiniMax H3's 16-pixel latent cells do not divide"),
                "use a multiple of 32, as the node's step",
            ));
        }
    }
    Ok((sides[0], sides[1]))
}

/// The empty joint latent `MiniMaxH3ImageToVideo` `node` gives (output
/// `slot`, read by input `from`) and how it lies in the packed row.
pub(super) fn latent_source(
    g: &Graph<'_>,
    node: &str,
    slot: i64,
    from: (&str, &str),
) -> Result<(LatentSource, AudioVideo), Refusal> {
    if slot != 1 {
        return Err(g.refuse(
            from.0,
            Some(from.1),
            format!("reads output {slot} of node {node}, its conditioning, as a latent"),
            "connect the input to the node's latent output (1)",
        ));
    }
    let (width, height) = size(g, node)?;
    let frames = frame_count(g.whole(node, "length", 1..=MAX_LENGTH)?);
    let audio_length = round_half_even(frames as f64 / FPS * AUDIO_LATENTS_PER_SECOND) as i64;
    let layout = AvLayout {
        model: AvModel::MiniMaxH3,
        video: [
            H3_CHANNELS,
            latent_frames(frames),
            height / CELL,
            width / CELL,
        ],
        audio_length,
        guides: 0,
    };
    let source = LatentSource::Empty {
        node: node.to_string(),
        width,
        height,
        batch: 1,
        channels: H3_CHANNELS,
        scale: CELL,
        frames: None,
    };
    let av = AudioVideo {
        concat: node.to_string(),
        audio: AvAudio::Empty {
            node: node.to_string(),
            length: audio_length,
            batch: 1,
        },
        upsampler: None,
        layout,
        earlier: None,
        guides: Vec::new(),
        keyframes: keyframe_frames(g, node, frames),
    };
    Ok((source, av))
}

#[cfg(test)]
mod tests {
    use super::{decoded_frames, frame_count, latent_frames};

    #[test]
    fn frames_snap_to_the_17k_plus_5_grid_and_decode_back() {
        // ComfyUI's `temporal_shape`: 124 frames stay, 49 become 56.
        for (length, frames, latent) in [
            (1, 5, 2),
            (5, 5, 2),
            (6, 22, 7),
            (49, 56, 17),
            (124, 124, 37),
        ] {
            assert_eq!(frame_count(length), frames, "length {length}");
            assert_eq!(latent_frames(frames), latent, "frames {frames}");
            assert_eq!(decoded_frames(latent), frames, "latent {latent}");
        }
    }
}
