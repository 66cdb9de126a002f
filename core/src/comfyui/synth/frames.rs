//! The `video_frames` policy: the video a Wan image-to-video node makes of
//! its pictures, and the mask the denoiser takes beside it (its contract
//! parameters `length`, `temporal_scale`: video frames a latent frame
//! holds after the first, `latent_frames` and `scale`: pixels a cell). Pictures
//! `start` and `end` (either may be absent; each `[batch, 3, height,
//! width]`, already at the video's size) become `length` frames of grey
//! 0.5 with `start` first and `end` last (`[batch, length, 3, height,
//! width]`; one frame takes `end` where both are given, as ComfyUI writes
//! the end after the start). The mask `[batch, 4, latent_frames, height /
//! scale, width / scale]` is ComfyUI's `1 - concat_mask` as its Wan model
//! reads it: 1 on every channel of the first latent frame where a start
//! picture is given, and 1 on the last channel of the last latent frame
//! where an end picture is (the first-last-frame node masks the last
//! video frame of the latent's four per frame).
//!
//! The `start_latent` policy: HunyuanVideo 1.5's and Wan's camera video
//! latent, the start picture's one latent frame `first` (`[batch,
//! channels, 1, h, w]`) ahead of frames up to `latent_frames` (contract
//! parameter) of zeros, or (`fill: wan21_mean`) of Wan 2.1's latent mean,
//! what ComfyUI's camera node puts there; and its mask `[batch,
//! mask_channels (1, or 4 for Wan), latent_frames, h, w]`, ComfyUI's `1 -
//! concat_mask` as its model reads it: 1 on the first frame, 0 after.

use super::SynthError;
use super::graph::PolicyGraph;
use wfstudio_onnx::builder::Attr;

/// Mask channels the Wan model reads.
const MASK_CHANNELS: i64 = 4;

/// Builds the `video_frames` policy.
pub(super) fn video_frames(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let length = g.positive_integer("length")?;
    let scale = g.positive_integer("scale")?;
    let temporal = g.positive_integer("temporal_scale")?;
    if length > 16384 || scale > 64 || temporal > 64 {
        return Err(g.error("length must be at most 16384, scale and temporal_scale at most 64"));
    }
    let latent_frames = (length - 1) / temporal + 1;
    if g.parameter("latent_frames")
        .and_then(serde_json::Value::as_i64)
        != Some(latent_frames)
    {
        return Err(g.error(format!(
            "latent_frames must be (length - 1) / temporal_scale + 1 = {latent_frames}"
        )));
    }
    let start = match g.has_input("start") {
        true => Some(g.input("start")?),
        false => None,
    };
    let end = match g.has_input("end") {
        true => Some(g.input("end")?),
        false => None,
    };
    let Some(any) = start.clone().or(end.clone()) else {
        return Err(g.error("it declares neither a start nor an end picture"));
    };
    let part = |g: &mut PolicyGraph<'_>, from: i64, to: i64| {
        g.op_with(
            "Shape",
            &[&any],
            &[("start", Attr::Int(from)), ("end", Attr::Int(to))],
        )
    };
    let (batch, picture) = (part(g, 0, 1), part(g, 1, 4));
    let time_axis = g.b.vec_i64(&[1]);
    let frame = |g: &mut PolicyGraph<'_>, x: &str| g.op("Unsqueeze", &[x, &time_axis]);
    let grey = |g: &mut PolicyGraph<'_>, n: i64| {
        let n = g.b.vec_i64(&[n]);
        let shape = g.op_with("Concat", &[&batch, &n, &picture], &[("axis", Attr::Int(0))]);
        let half = g.f(0.5);
        g.op("Expand", &[&half, &shape])
    };
    let frames = if length == 1 {
        // The end picture where given (else `any` is the start).
        let only = end.clone().unwrap_or_else(|| any.clone());
        frame(g, &only)
    } else {
        let first = match &start {
            Some(s) => frame(g, s),
            None => grey(g, 1),
        };
        let last = match &end {
            Some(e) => frame(g, e),
            None => grey(g, 1),
        };
        let mut parts = vec![first];
        if length > 2 {
            parts.push(grey(g, length - 2));
        }
        parts.push(last);
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        g.op_with("Concat", &refs, &[("axis", Attr::Int(1))])
    };
    g.output(&frames, "frames")?;
    // The mask's pattern over channels and latent frames, then spread
    // over the batch and the latent grid.
    let mut pattern = vec![0f32; (MASK_CHANNELS * latent_frames) as usize];
    for channel in 0..MASK_CHANNELS {
        let at = |frame: i64| (channel * latent_frames + frame) as usize;
        if start.is_some() {
            pattern[at(0)] = 1.0;
        }
        if end.is_some() && channel == MASK_CHANNELS - 1 {
            pattern[at(latent_frames - 1)] = 1.0;
        }
    }
    let pattern = g.b.f32s(&pattern, &[1, MASK_CHANNELS, latent_frames, 1, 1]);
    let sides = part(g, 2, 4);
    let scale = g.b.vec_i64(&[scale]);
    let cells = g.op("Div", &[&sides, &scale]);
    let fixed = g.b.vec_i64(&[MASK_CHANNELS, latent_frames]);
    let shape = g.op_with(
        "Concat",
        &[&batch, &fixed, &cells],
        &[("axis", Attr::Int(0))],
    );
    let mask = g.op("Expand", &[&pattern, &shape]);
    g.output(&mask, "mask")
}

/// Wan 2.1's latent mean per channel (ComfyUI's `Wan21` latent format):
/// what its `process_out` makes of a zero latent.
pub const WAN21_MEAN: [f32; 16] = [
    -0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508, 0.4134, -0.0715, 0.5517,
    -0.3632, -0.1922, -0.9497, 0.2503, -0.2921,
];

/// Wan 2.2's latent mean per channel (ComfyUI's `Wan22` latent format):
/// what its `process_out` makes of a zero latent.
pub const WAN22_MEAN: [f32; 48] = [
    -0.2289, -0.0052, -0.1323, -0.2339, -0.2799, 0.0174, 0.1838, 0.1557, -0.1382, 0.0542, 0.2813,
    0.0891, 0.1570, -0.0098, 0.0375, -0.1825, -0.2246, -0.1207, -0.0698, 0.5109, 0.2665, -0.2108,
    -0.2158, 0.2502, -0.2055, -0.0322, 0.1109, 0.1567, -0.0729, 0.0899, -0.2799, -0.1230, -0.0313,
    -0.1649, 0.0117, 0.0723, -0.2839, -0.2083, -0.0520, 0.3748, 0.0152, 0.1957, 0.1433, -0.2944,
    0.3573, -0.0548, -0.1681, -0.0667,
];

/// The largest latent side and frame count `fun_concat` makes.
const MAX_LATENT: i64 = 16384;

/// Builds the `fun_concat` policy: Wan 2.2 Fun Control's `concat` `[1,
/// 2C, latent_frames, latent_height, latent_width]` (contract
/// parameters), the control latent `control` (`[1, C, frames, h, w]`,
/// where given) on the first `C` channels, cut to `latent_frames`, the
/// latent mean (`fill`: `wan21_mean` or `wan22_mean`) on the frames after
/// it and on the other `C` channels; and its `mask` `[1, 4,
/// latent_frames, h, w]` of zeros (ComfyUI's 1 - its mask of ones).
pub(super) fn fun_concat(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let frames = g.positive_integer("latent_frames")?;
    let (h, w) = (
        g.positive_integer("latent_height")?,
        g.positive_integer("latent_width")?,
    );
    if frames > MAX_LATENT || h > MAX_LATENT || w > MAX_LATENT {
        return Err(g.error(format!(
            "latent_frames, latent_height and latent_width must be at most {MAX_LATENT}"
        )));
    }
    let mean: &[f32] = match g.parameter("fill").and_then(|f| f.as_str()) {
        Some("wan21_mean") => &WAN21_MEAN,
        Some("wan22_mean") => &WAN22_MEAN,
        other => {
            return Err(g.error(format!(
                "fill `{}` is not wan21_mean or wan22_mean",
                other.unwrap_or("(not text)")
            )));
        }
    };
    let channels = mean.len() as i64;
    let mean = g.b.f32s(mean, &[1, channels, 1, 1, 1]);
    let shape = g.b.vec_i64(&[1, channels, frames, h, w]);
    let filled = g.op("Expand", &[&mean, &shape]);
    let first = match g.has_input("control") {
        false => filled.clone(),
        true => {
            let control = g.input("control")?;
            let (starts, ends, axes) =
                (g.b.vec_i64(&[0]), g.b.vec_i64(&[frames]), g.b.vec_i64(&[2]));
            let cut = g.op("Slice", &[&control, &starts, &ends, &axes]);
            // The frames after the control's take the mean's: the
            // control as it is, then the filled frames from there on.
            let cut_shape = g.op("Shape", &[&cut]);
            let axis = g.b.vec_i64(&[2]);
            let kept = g.op_with("Gather", &[&cut_shape, &axis], &[("axis", Attr::Int(0))]);
            let rest = g.op("Slice", &[&filled, &kept, &ends, &axes]);
            g.op_with("Concat", &[&cut, &rest], &[("axis", Attr::Int(2))])
        }
    };
    let concat = g.op_with("Concat", &[&first, &filled], &[("axis", Attr::Int(1))]);
    g.output(&concat, "concat")?;
    let zero = g.f(0.0);
    let mask_shape = g.b.vec_i64(&[1, 4, frames, h, w]);
    let mask = g.op("Expand", &[&zero, &mask_shape]);
    g.output(&mask, "mask")
}

/// Builds the `start_latent` policy.
pub(super) fn start_latent(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let frames = g.positive_integer("latent_frames")?;
    if frames > 16384 {
        return Err(g.error("latent_frames must be at most 16384"));
    }
    let mask_channels = match g.parameter("mask_channels") {
        None => 1,
        Some(_) => match g.positive_integer("mask_channels")? {
            n @ (1 | 4) => n,
            _ => return Err(g.error("mask_channels must be 1 or 4")),
        },
    };
    let first = g.input("first")?;
    // After the first frame on the frame axis: ONNX pads hold (begins,
    // ends) for every axis.
    let after = |g: &mut PolicyGraph<'_>, rows: i64| {
        let mut pads = vec![0i64; 10];
        pads[7] = rows;
        g.b.vec_i64(&pads)
    };
    let pads = after(g, frames - 1);
    let mut latent = g.op("Pad", &[&first, &pads]);
    let fill = match g.parameter("fill") {
        None => Some("zeros"),
        Some(fill) => fill.as_str(),
    };
    match fill {
        Some("zeros") => {}
        // ComfyUI's `process_out` of zeros on the frames after the first.
        Some("wan21_mean") => {
            let mut fill = vec![0f32; WAN21_MEAN.len() * frames as usize];
            for (channel, mean) in WAN21_MEAN.iter().enumerate() {
                for frame in 1..frames as usize {
                    fill[channel * frames as usize + frame] = *mean;
                }
            }
            let channels = WAN21_MEAN.len() as i64;
            let fill = g.b.f32s(&fill, &[1, channels, frames, 1, 1]);
            latent = g.op("Add", &[&latent, &fill]);
        }
        other => {
            return Err(g.error(format!(
                "fill `{}` is not zeros or wan21_mean",
                other.unwrap_or("(not text)")
            )));
        }
    }
    g.output(&latent, "latent")?;
    let (start, end, axis) = (g.b.vec_i64(&[0]), g.b.vec_i64(&[1]), g.b.vec_i64(&[1]));
    let one_channel = g.op("Slice", &[&first, &start, &end, &axis]);
    let shape = g.op("Shape", &[&one_channel]);
    // ConstantOfShape's default value is a float32 0.
    let zeros = g.op("ConstantOfShape", &[&shape]);
    let one = g.f(1.0);
    let ones = g.op("Add", &[&zeros, &one]);
    let copies: Vec<&str> = (0..mask_channels).map(|_| ones.as_str()).collect();
    let ones = g.op_with("Concat", &copies, &[("axis", Attr::Int(1))]);
    let pads = after(g, frames - 1);
    let mask = g.op("Pad", &[&ones, &pads]);
    g.output(&mask, "mask")
}
