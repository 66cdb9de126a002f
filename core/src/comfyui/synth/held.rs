//! LTX-Video's and LTX-2's held first frame (`LTXVImgToVideo`,
//! `LTXVImgToVideoInplace`), on a video latent `[batch, channels, frames,
//! height, width]` or (`packed`) LTX-2's audio-video row `[batch, 1,
//! video + audio]`, whose video part is `video_shape` (`[channels,
//! frames, height, width]`) per batch entry:
//! - `held_frames`: the encoded frames `frame` (`[1, channels, t, height,
//!   width]`) written over the first `t` video frames of every entry of
//!   `source`; the noise mask over the latent, `1 - strength` on those
//!   frames and 1 elsewhere (audio included); and the same mask over the
//!   video's cells, `[batch, 1, frames, height, width]`, which the
//!   denoiser scales its tokens' timesteps by.
//! - `held_input`: `mask x + (1 - mask) held`, the sample the model sees
//!   (LTX-2 takes the masked part of the latent as it is, unnoised).
//! - `held_estimate`: on a flow model at `sigma = timestep / multiplier`,
//!   the guided denoised sample `D = input - sigma v` blended back,
//!   `D' = mask D + (1 - mask) held`, as the velocity `(sample - D') /
//!   sigma` at the sampler's own sample.
//!
//! In float32, as ComfyUI's model runs.

use super::SynthError;
use super::graph::{Family, PolicyGraph};
use super::policies::extents;
use super::tables::ModelSampling;
use wfstudio_onnx::builder::Attr;

/// `held_frames`.
pub fn held_frames(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let video = extents(g, "video_shape")?;
    let [channels, frames, height, width] = video[..] else {
        return Err(g.error("`video_shape` is not four extents"));
    };
    let strength = g
        .parameter("strength")
        .and_then(serde_json::Value::as_f64)
        .filter(|s| (0.0..=1.0).contains(s))
        .ok_or_else(|| g.error("its `strength` is not a number from 0 to 1"))?;
    let elements: i64 = video.iter().product();
    let packed = g.parameter("packed").and_then(serde_json::Value::as_bool) == Some(true);
    let source = g.input("source")?;
    let frame = g.input("frame")?;
    let batch = g.op_with(
        "Shape",
        &[&source],
        &[("start", Attr::Int(0)), ("end", Attr::Int(1))],
    );
    let slice = |g: &mut PolicyGraph<'_>, x: &str, (start, end): (i64, i64)| {
        let (s, e, a) = (
            g.b.vec_i64(&[start]),
            g.b.vec_i64(&[end]),
            g.b.vec_i64(&[2]),
        );
        g.op("Slice", &[x, &s, &e, &a])
    };
    let shaped = |g: &mut PolicyGraph<'_>, rest: &[i64]| {
        let rest = g.b.vec_i64(rest);
        g.op_with("Concat", &[&batch, &rest], &[("axis", Attr::Int(0))])
    };
    let video_shape = shaped(g, &[channels, frames, height, width]);
    let (video_part, audio_part) = match packed {
        true => {
            let video_part = slice(g, &source, (0, elements));
            let video_part = g.op("Reshape", &[&video_part, &video_shape]);
            (video_part, Some(slice(g, &source, (elements, i64::MAX))))
        }
        false => (source.clone(), None),
    };
    // Which frames are held: those before the encoded frames' count.
    let held_count = g.op_with(
        "Shape",
        &[&frame],
        &[("start", Attr::Int(2)), ("end", Attr::Int(3))],
    );
    let (zero, one_i, all) = (g.i(0), g.i(1), g.i(frames));
    let index = g.op("Range", &[&zero, &all, &one_i]);
    let held = g.op("Less", &[&index, &held_count]);
    let on_frames = g.b.vec_i64(&[1, 1, frames, 1, 1]);
    let held = g.op("Reshape", &[&held, &on_frames]);
    // Frame i of the encoded frames for every held frame i.
    let last = g.op("Sub", &[&held_count, &one_i]);
    let within = g.op("Min", &[&index, &last]);
    let spread = g.op_with("Gather", &[&frame, &within], &[("axis", Attr::Int(2))]);
    let written = g.op("Where", &[&held, &spread, &video_part]);
    let (kept, free) = (g.f(1.0 - strength), g.f(1.0));
    let mask = g.op("Where", &[&held, &kept, &free]);
    let cells = shaped(g, &[1, frames, height, width]);
    let denoise_mask = g.op("Expand", &[&mask, &cells]);
    g.output(&denoise_mask, "denoise_mask")?;
    let video_mask = g.op("Expand", &[&mask, &video_shape]);
    let Some(audio_part) = audio_part else {
        g.output(&written, "held")?;
        return g.output(&video_mask, "mask");
    };
    // The row: the video part flattened, then the audio part (its mask 1).
    let row = g.b.vec_i64(&[0, 1, -1]);
    let join = |g: &mut PolicyGraph<'_>, video: &str, audio: &str| {
        let video = g.op("Reshape", &[video, &row]);
        g.op_with("Concat", &[&video, audio], &[("axis", Attr::Int(2))])
    };
    let out = join(g, &written, &audio_part);
    g.output(&out, "held")?;
    let audio_shape = g.op("Shape", &[&audio_part]);
    let audio_mask = g.op("Expand", &[&free, &audio_shape]);
    let mask = join(g, &video_mask, &audio_mask);
    g.output(&mask, "mask")
}

/// `mask a + (1 - mask) held`.
fn blend(g: &mut PolicyGraph<'_>, a: &str, held: &str, mask: &str) -> String {
    let one = g.f(1.0);
    let rest = g.op("Sub", &[&one, mask]);
    let from_a = g.op("Mul", &[mask, a]);
    let from_held = g.op("Mul", &[&rest, held]);
    g.op("Add", &[&from_a, &from_held])
}

/// `held_input`.
pub fn held_input(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let (x, held, mask) = (g.input("sample")?, g.input("source")?, g.input("mask")?);
    let out = blend(g, &x, &held, &mask);
    g.output(&out, "input")
}

/// `held_estimate`.
pub fn held_estimate(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let ModelSampling::Flow { multiplier, .. } = &family.sampling else {
        return Err(g.error("a held frame is built for flow-matching models only"));
    };
    let x = g.input("sample")?;
    let input = g.input("input")?;
    let timestep = g.input("timestep")?;
    let guided = g.input("guided")?;
    let (held, mask) = (g.input("source")?, g.input("mask")?);
    let per = g.f(1.0 / multiplier);
    let sigma = g.op("Mul", &[&timestep, &per]);
    let sigma = g.rows(&sigma);
    let moved = g.op("Mul", &[&sigma, &guided]);
    let denoised = g.op("Sub", &[&input, &moved]);
    let blended = blend(g, &denoised, &held, &mask);
    let gap = g.op("Sub", &[&x, &blended]);
    let tiny = g.f(1e-12);
    let sigma = g.op("Max", &[&sigma, &tiny]);
    let out = g.op("Div", &[&gap, &sigma]);
    g.output(&out, "estimate")
}

/// `even_sides`: the picture's top left part of even height and width,
/// as `LTXVPreprocess` cuts it before its H.264 round trip.
pub fn even_sides(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let x = g.input("image")?;
    let sides = g.op_with(
        "Shape",
        &[&x],
        &[("start", Attr::Int(2)), ("end", Attr::Int(4))],
    );
    let two = g.i(2);
    let halves = g.op("Div", &[&sides, &two]);
    let even = g.op("Mul", &[&halves, &two]);
    let (starts, axes) = (g.b.vec_i64(&[0, 0]), g.b.vec_i64(&[2, 3]));
    let out = g.op("Slice", &[&x, &starts, &even, &axes]);
    g.output(&out, "even")
}
