//! The policies of ComfyUI's `WanVaceToVideo` without a control video:
//! `grey_video` makes the video it encodes, `vace_context` the context a
//! VACE model reads beside the sample.

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
