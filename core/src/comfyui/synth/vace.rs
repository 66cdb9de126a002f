//! The policies of ComfyUI's `WanVaceToVideo`: `grey_video` makes the
//! grey video it encodes, `fit_frames` cuts or pads a control video to
//! its length, `vace_context` makes the context a VACE model reads beside
//! the sample.

use super::SynthError;
use super::graph::PolicyGraph;
use wfstudio_onnx::builder::Attr;

/// Mask channels of the context: the pixels of an 8x8 latent cell.
const MASK_CHANNELS: i64 = 64;

/// The largest video `grey_video` makes: frames and sides.
const MAX_LENGTH: i64 = 16384;
const MAX_SIDE: i64 = 16384;

/// `grey_video`: `[1, length, 3, height, width]` of 0.5 (contract
/// parameters `length`, `width`, `height`), the control video
/// `WanVaceToVideo` encodes where none is given.
pub(super) fn grey_video(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let length = g.positive_integer("length")?;
    let (width, height) = (g.positive_integer("width")?, g.positive_integer("height")?);
    if length > MAX_LENGTH || width > MAX_SIDE || height > MAX_SIDE {
        return Err(g.error(format!(
            "length must be at most {MAX_LENGTH}, width and height at most {MAX_SIDE}"
        )));
    }
    let shape = g.b.vec_i64(&[1, length, 3, height, width]);
    let half = g.f(0.5);
    let out = g.op("Expand", &[&half, &shape]);
    g.output(&out, "frames")
}

/// `fit_frames` and `take_frames`: video `[1, frames, 3, h, w]` cut to
/// its first `length` frames (contract parameter); `fit_frames` pads it
/// after its last with frames of `value` (parameter) to `length`, as
/// `WanVaceToVideo` fits its control video (`Wan22FunControlToVideo`
/// takes its control video cut only).
pub(super) fn fit_frames(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let length = g.positive_integer("length")?;
    if length > MAX_LENGTH {
        return Err(g.error(format!("length must be at most {MAX_LENGTH}")));
    }
    let video = g.input("video")?;
    let (starts, ends, axes) = (g.b.vec_i64(&[0]), g.b.vec_i64(&[length]), g.b.vec_i64(&[1]));
    let cut = g.op("Slice", &[&video, &starts, &ends, &axes]);
    if g.name().starts_with("take_frames") {
        return g.output(&cut, "fitted");
    }
    let value = g.positive_number("value")?;
    // Frames to add: length minus the frames kept (never negative).
    let shape = g.op("Shape", &[&cut]);
    let one = g.b.vec_i64(&[1]);
    let kept = g.op_with("Gather", &[&shape, &one], &[("axis", Attr::Int(0))]);
    let target = g.b.vec_i64(&[length]);
    let missing = g.op("Sub", &[&target, &kept]);
    let (zeros_before, zeros_after) = (g.b.vec_i64(&[0, 0, 0, 0, 0]), g.b.vec_i64(&[0]));
    let rest = g.b.vec_i64(&[0, 0, 0]);
    let pads = g.op_with(
        "Concat",
        &[&zeros_before, &zeros_after, &missing, &rest],
        &[("axis", Attr::Int(0))],
    );
    let fill = g.f(value);
    let out = g.op("Pad", &[&cut, &pads, &fill]);
    g.output(&out, "fitted")
}

/// `vace_context`: the latents `inactive` and `reactive` `[batch, 16,
/// frames, h, w]` on channels, then a mask of ones over 64 channels; a
/// `reference` latent `[batch, 16, r, h, w]` goes ahead of them on the
/// frame axis with zeros for its second 16 channels (ComfyUI's
/// `process_out` of zeros, read back in) and a mask of zeros. This is
/// ComfyUI's `vace_frames` concatenated with `vace_mask` as its VACE model
/// reads them.
pub(super) fn vace_context(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let inactive = g.input("inactive")?;
    let reactive = g.input("reactive")?;
    let reference = match g.has_input("reference") {
        true => Some(g.input("reference")?),
        false => None,
    };
    let channels = |g: &mut PolicyGraph<'_>, parts: &[&str]| {
        g.op_with("Concat", parts, &[("axis", Attr::Int(1))])
    };
    let frames = |g: &mut PolicyGraph<'_>, parts: &[&str]| {
        g.op_with("Concat", parts, &[("axis", Attr::Int(2))])
    };
    // A mask of `value` shaped as `like` with 64 channels.
    let mask = |g: &mut PolicyGraph<'_>, like: &str, value: f64| {
        let shape = g.op("Shape", &[like]);
        let (at, count) = (g.b.vec_i64(&[1]), g.b.vec_i64(&[MASK_CHANNELS]));
        let shape = g.op_with(
            "ScatterElements",
            &[&shape, &at, &count],
            &[("axis", Attr::Int(0))],
        );
        let v = g.f(value);
        g.op("Expand", &[&v, &shape])
    };
    let latents = channels(g, &[&inactive, &reactive]);
    let ones = mask(g, &inactive, 1.0);
    let context = match reference {
        None => channels(g, &[&latents, &ones]),
        Some(reference) => {
            let zero = g.f(0.0);
            let blank = g.op("Mul", &[&reference, &zero]);
            let ahead = channels(g, &[&reference, &blank]);
            let zeros = mask(g, &reference, 0.0);
            let latents = frames(g, &[&ahead, &latents]);
            let masks = frames(g, &[&zeros, &ones]);
            channels(g, &[&latents, &masks])
        }
    };
    g.output(&context, "context")
}
