//! LTX-Video's and LTX-2's held latent frames (`LTXVImgToVideo`,
//! `LTXVImgToVideoInplace`, `LTXVAddGuide`), on a video latent `[batch,
//! channels, frames, height, width]` or (`packed`) LTX-2's audio-video row `[batch, 1,
//! video + audio]`, whose video part is `video_shape` (`[channels,
//! frames, height, width]`) per batch entry:
//! - `held_frames`: the encoded frames `frame`, `frame_2`, ... (each `[1,
//!   channels, 1, height, width]`) written over the latent frames
//!   `positions` of every entry of `source`; the noise mask over the
//!   latent, `1 - strength` (`strengths`) on those frames and 1 elsewhere
//!   (audio included); the same mask over the video's cells, `[batch, 1,
//!   frames, height, width]`, which the denoiser scales its tokens'
//!   timesteps by; and for LTX-2's guides (`guide_frames`,
//!   `guide_strengths`) their tokens' positions and strengths.
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
use super::policies::{extents, packed as packed_row, unpacked};
use super::tables::ModelSampling;
use wfstudio_onnx::builder::Attr;

/// A contract parameter listing numbers (`0,12`).
fn numbers(g: &PolicyGraph<'_>, key: &str) -> Result<Vec<f64>, SynthError> {
    let text = g
        .parameter(key)
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| g.error(format!("it has no `{key}` parameter")))?;
    text.split(',')
        .map(|v| v.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| g.error(format!("`{key}` is '{text}', not numbers")))
}

/// `held_frames`.
pub fn held_frames(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let video = extents(g, "video_shape")?;
    let [channels, frames, height, width] = video[..] else {
        return Err(g.error("`video_shape` is not four extents"));
    };
    let (positions, strengths) = (numbers(g, "positions")?, numbers(g, "strengths")?);
    let placed = positions.len() == strengths.len()
        && positions
            .iter()
            .all(|p| p.fract() == 0.0 && (0.0..frames as f64).contains(p))
        && strengths.iter().all(|s| (0.0..=1.0).contains(s));
    if !placed {
        return Err(g.error("its `positions` and `strengths` are not one latent frame and one strength from 0 to 1 for each held frame"));
    }
    let packed = g.parameter("packed").and_then(serde_json::Value::as_bool) == Some(true);
    let source = g.input("source")?;
    let batch = g.op_with(
        "Shape",
        &[&source],
        &[("start", Attr::Int(0)), ("end", Attr::Int(1))],
    );
    let shaped = |g: &mut PolicyGraph<'_>, rest: &[i64]| {
        let rest = g.b.vec_i64(rest);
        g.op_with("Concat", &[&batch, &rest], &[("axis", Attr::Int(0))])
    };
    let video_shape = shaped(g, &[channels, frames, height, width]);
    let (mut written, audio_part) = match packed {
        true => {
            let [video, audio] = unpacked(g, &source, [&video, &[1, -1]]);
            (video, Some(audio))
        }
        false => (source.clone(), None),
    };
    // Each encoded frame (one latent frame, its picture's batch
    // broadcast) written at its place, its mask 1 - strength there.
    let (zero, one_i, all) = (g.i(0), g.i(1), g.i(frames));
    let index = g.op("Range", &[&zero, &all, &one_i]);
    let on_frames = g.b.vec_i64(&[1, 1, frames, 1, 1]);
    let index = g.op("Reshape", &[&index, &on_frames]);
    let mut mask = g.f(1.0);
    for (n, (at, strength)) in positions.iter().zip(&strengths).enumerate() {
        let port = match n {
            0 => "frame".to_string(),
            n => format!("frame_{}", n + 1),
        };
        let frame = g.input(&port)?;
        let at = g.i(*at as i64);
        let here = g.op("Equal", &[&index, &at]);
        written = g.op("Where", &[&here, &frame, &written]);
        let kept = g.f(1.0 - strength);
        mask = g.op("Where", &[&here, &kept, &mask]);
    }
    let cells = shaped(g, &[1, frames, height, width]);
    let denoise_mask = g.op("Expand", &[&mask, &cells]);
    g.output(&denoise_mask, "denoise_mask")?;
    let video_mask = g.op("Expand", &[&mask, &video_shape]);
    if g.parameter("guide_frames").is_some() {
        guide_tokens(g, (height, width))?;
    }
    let Some(audio_part) = audio_part else {
        g.output(&written, "held")?;
        return g.output(&video_mask, "mask");
    };
    // The row: the video part, then the audio part (its mask 1).
    let out = packed_row(g, &written, &audio_part);
    g.output(&out, "held")?;
    let audio_shape = g.op("Shape", &[&audio_part]);
    let free = g.f(1.0);
    let audio_mask = g.op("Expand", &[&free, &audio_shape]);
    let mask = packed_row(g, &video_mask, &audio_mask);
    g.output(&mask, "mask")
}

/// Pixels per latent cell (height and width) of LTX-2's video VAE.
const SPATIAL_SCALE: f64 = 32.0;

/// The guide frames' tokens, each guide's `height x width` in order:
/// their positions in pixels `[1, 3, tokens, 2]` (time from the guide's
/// video frame to the next, as `LTXVAddGuide` places a one-frame guide
/// with the VAE's causal first frame; height and width from the cell's
/// first pixel to the next cell's) and their guides' strengths.
fn guide_tokens(g: &mut PolicyGraph<'_>, (height, width): (i64, i64)) -> Result<(), SynthError> {
    let (frames, strengths) = (numbers(g, "guide_frames")?, numbers(g, "guide_strengths")?);
    if frames.len() != strengths.len() {
        return Err(g.error("its `guide_frames` and `guide_strengths` differ in length"));
    }
    let cells = (height * width) as usize;
    let tokens = frames.len() * cells;
    // [3][tokens][2], time first.
    let mut positions = vec![0f32; 3 * tokens * 2];
    let mut strength = Vec::with_capacity(tokens);
    for (guide, (frame, s)) in frames.iter().zip(&strengths).enumerate() {
        for cell in 0..cells {
            let token = guide * cells + cell;
            let (y, x) = (
                (cell / width as usize) as f64,
                (cell % width as usize) as f64,
            );
            let spans = [
                (*frame, frame + 1.0),
                (y * SPATIAL_SCALE, (y + 1.0) * SPATIAL_SCALE),
                (x * SPATIAL_SCALE, (x + 1.0) * SPATIAL_SCALE),
            ];
            for (axis, (from, to)) in spans.into_iter().enumerate() {
                positions[(axis * tokens + token) * 2] = from as f32;
                positions[(axis * tokens + token) * 2 + 1] = to as f32;
            }
            strength.push(*s as f32);
        }
    }
    let positions = g.b.vec_f32(&positions);
    let shape = g.b.vec_i64(&[1, 3, tokens as i64, 2]);
    let positions = g.op("Reshape", &[&positions, &shape]);
    g.output(&positions, "keyframe_idxs")?;
    let strength = g.b.vec_f32(&strength);
    let strength = g.op("Identity", &[&strength]);
    g.output(&strength, "guide_strength")
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
