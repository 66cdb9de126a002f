//! The small policies: schedule lookups, the model's input scaling,
//! classifier-free guidance (and `DualCFGGuider`'s and `VideoLinearCFGGuidance`'s), the loop
//! predicate, step windows, latent
//! shapes, inpainting masks, SDXL conditioning, the ControlNet window and
//! joining two embeddings' tokens or videos' frames.

use super::SynthError;
use super::graph::{Family, PolicyGraph};
use serde_json::Value;
use wfstudio_onnx::builder::Attr;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// Builds the policy named by the graph.
pub fn build(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let name = g.name();
    match name {
        "schedule_lookup" => schedule_lookup(g),
        "model_input" => model_input(g, family),
        "continue_predicate" => continue_predicate(g),
        "latent_row_shape" => latent_row_shape(g),
        "guidance_combine" => guidance_combine(g),
        "linear_guidance_combine" => linear_guidance_combine(g),
        "dual_guidance_combine" => dual_guidance_combine(g),
        "denoise_window" => denoise_window(g, family),
        "step_window" => step_window(g, family),
        "step_offset" => step_offset(g),
        "empty_latent" => empty_latent(g),
        "inpaint_pixels" => inpaint_pixels(g),
        "latent_mask" => latent_mask(g),
        "sdxl_conditioning" => sdxl_conditioning(g),
        "control_scale" => control_scale(g),
        "zero_conditioning" | "zero_latent" => zero_conditioning(g),
        "no_reference" => no_reference(g),
        "audio_loudness" => audio_loudness(g),
        "video_pixels" => unit_pixels(g, true),
        "join_frames" => join_frames(g),
        "av_split" => av_split(g),
        "av_join" => av_join(g),
        "trim_latent" => trim_latent(g),
        "one_frame" => one_frame(g),
        "pixel_decoder" => pixel_decoder(g),
        "join_tokens" => join_tokens(g),
        "append_style" => append_style(g),
        "decoded_pixels" => unit_pixels(g, true),
        "cfg_norm" => super::guidance_norm::cfg_norm(g, family),
        other => Err(g.error(format!("`{other}` is not a policy this importer makes"))),
    }
}

/// Builds the policies on pixels that need no sampler stage (a graph of
/// loaded pictures or videos alone has none): moving an upscale model's
/// pixels into 0..1, a batch of pictures as one video's frames and the
/// reverse; `None` for other kinds.
pub fn pixels_alone(g: &mut PolicyGraph<'_>) -> Option<Result<(), SynthError>> {
    Some(match g.name() {
        "upscale_pixels" => unit_pixels(g, true),
        "upscaled_pixels" => unit_pixels(g, false),
        "batch_frames" => batch_frames(g),
        "frame_pictures" => frame_pictures(g),
        _ => return None,
    })
}

/// `schedule[step]`.
fn schedule_lookup(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let schedule = g.input("schedule")?;
    let step = g.input("step")?;
    let out = g.gather(&schedule, &step);
    g.output(&out, "timestep")
}

/// The denoiser's input: `x / sqrt(sigma^2 + sigma_data^2)` for
/// noise-predicting models (k-diffusion's c_in), the sample itself for flow
/// and image-to-image models.
fn model_input(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let sample = g.input("sample")?;
    let step = g.input("step")?;
    let schedule = g.input("schedule")?;
    let out = if family.is_flow() || family.prediction.unscaled_input() {
        sample
    } else {
        let sigma = g.gather(&schedule, &step);
        let s = g.rows(&sigma);
        super::estimate::model_input(g, &family.prediction, &sample, &s)
    };
    g.output(&out, "model_input")
}

/// Continue while any row is not done.
fn continue_predicate(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let done = g.input("done")?;
    let as_int = g.cast(&done, DataType::INT32);
    let axes = g.b.vec_i64(&[0]);
    let all = g.op_with(
        "ReduceMin",
        &[&as_int, &axes],
        &[("keepdims", Attr::Int(1))],
    );
    let all = g.cast(&all, DataType::BOOL);
    let out = g.op("Not", &[&all]);
    g.output(&out, "continue")
}

/// A latent row's shape: `[channels, height / scale, width / scale]` of
/// the empty latent (its frames after the channels for a video's) or of
/// the input picture; a latent's own row shape when it takes one (a
/// chained sampler's).
fn latent_row_shape(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    if g.has_input("latent") {
        let latent = g.input("latent")?;
        let out = g.op_with("Shape", &[&latent], &[("start", Attr::Int(1))]);
        return g.output(&out, "shape");
    }
    if g.parameter("av_elements").is_some() {
        // LTX-2's packed audio-video row.
        let elements = g.positive_integer("av_elements")?;
        let out = g.b.vec_i64(&[1, elements]);
        return g.output(&out, "shape");
    }
    let channels = g.positive_integer("channels")?;
    let scale = g.positive_integer("scale")?;
    let out = if g.parameter("audio_length").is_some() {
        // An audio latent: channels by steps.
        let length = g.positive_integer("audio_length")?;
        g.b.vec_i64(&[channels, length])
    } else if g.has_input("image") {
        let image = g.input("image")?;
        let hw = g.op_with("Shape", &[&image], &[("start", Attr::Int(2))]);
        let s = g.b.vec_i64(&[scale]);
        let latent_hw = g.op("Div", &[&hw, &s]);
        let c = g.b.vec_i64(&[channels]);
        g.op_with("Concat", &[&c, &latent_hw], &[("axis", Attr::Int(0))])
    } else {
        let (width, height) = (g.positive_integer("width")?, g.positive_integer("height")?);
        match g.parameter("length") {
            // A video latent: `(length - 1) / temporal_scale + 1` frames
            // after `leading_frames` (a VACE reference picture's).
            Some(_) => {
                let length = g.positive_integer("length")?;
                let temporal = g.positive_integer("temporal_scale")?;
                let leading = match g.parameter("leading_frames") {
                    Some(_) => g.positive_integer("leading_frames")?,
                    None => 0,
                };
                let frames = latent_frames(length, temporal) + leading;
                g.b.vec_i64(&[channels, frames, height / scale, width / scale])
            }
            None => g.b.vec_i64(&[channels, height / scale, width / scale]),
        }
    };
    g.output(&out, "shape")
}

/// The latent frames of a video of `length` frames, `temporal` frames a
/// latent frame after the first (ComfyUI's video latent nodes).
fn latent_frames(length: i64, temporal: i64) -> i64 {
    (length - 1) / temporal + 1
}

/// The frames a video VAE decodes the latent of a `length`-frame video
/// into: the first, then `temporal` for each further latent frame (at
/// most `length`).
pub fn decoded_frames(length: i64, temporal: i64) -> i64 {
    (latent_frames(length, temporal) - 1) * temporal + 1
}

/// `VAEDecodeAudio`'s guard on loud waveforms `[batch, channels,
/// samples]`: each row divided by `max(1, m * std)`, with `std` its
/// unbiased standard deviation over channels and samples and `m` the
/// parameter `std_multiple` (5 in ComfyUI).
fn audio_loudness(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let x = g.input("audio")?;
    let multiple = g.positive_number("std_multiple")?;
    let axes = g.b.vec_i64(&[1, 2]);
    let keep = [("keepdims", Attr::Int(1))];
    let mean = g.op_with("ReduceMean", &[&x, &axes], &keep);
    let centred = g.op("Sub", &[&x, &mean]);
    let squared = g.op("Mul", &[&centred, &centred]);
    let sum = g.op_with("ReduceSum", &[&squared, &axes], &keep);
    let extents = g.op_with("Shape", &[&x], &[("start", Attr::Int(1))]);
    let count = g.op_with("ReduceProd", &[&extents], &[("keepdims", Attr::Int(0))]);
    let one = g.i(1);
    let less_one = g.op("Sub", &[&count, &one]);
    let less_one = g.op("Max", &[&less_one, &one]);
    let less_one = g.cast(&less_one, DataType::FLOAT);
    let variance = g.op("Div", &[&sum, &less_one]);
    let deviation = g.op("Sqrt", &[&variance]);
    let factor = g.f(multiple);
    let scaled = g.op("Mul", &[&deviation, &factor]);
    let floor = g.f(1.0);
    let divisor = g.op("Max", &[&scaled, &floor]);
    let out = g.op("Div", &[&x, &divisor]);
    g.output(&out, "normalized")
}

/// `ConditioningZeroOut` (`zero_conditioning`) and a zeroed latent
/// (`zero_latent`): zeros shaped like the input.
fn zero_conditioning(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let x = match g.has_input("latent") {
        true => g.input("latent")?,
        false => g.input("conditioning")?,
    };
    let shape = g.op("Shape", &[&x]);
    // ConstantOfShape's default value is a float32 0.
    let zeros = g.op("ConstantOfShape", &[&shape]);
    g.output(&zeros, "zeroed")
}

/// `no_reference`: a latent of no cells, `like` cut to 0 rows and 0
/// columns (its batch and channels kept).
fn no_reference(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let like = g.input("like")?;
    let (start, axes) = (g.b.vec_i64(&[0, 0]), g.b.vec_i64(&[2, 3]));
    let none = g.op("Slice", &[&like, &start, &start, &axes]);
    g.output(&none, "none")
}

/// Pixels for (`upscale_pixels`, from the decoder's -1..1) and from
/// (`upscaled_pixels`) an upscale model, a decode that is processed
/// further (`decoded_pixels`) and a video's frames (`video_pixels`, both
/// from the decoder's -1..1), in 0..1 as ComfyUI's are:
/// `(x + 1) / 2`, then clamped; or clamped only.
fn unit_pixels(g: &mut PolicyGraph<'_>, from_signed: bool) -> Result<(), SynthError> {
    let x = match g.has_input("video") {
        true => g.input("video")?,
        false => g.input("image")?,
    };
    let out = to_unit(g, &x, from_signed);
    g.output(&out, "pixels")
}

/// Pixels `x` in 0..1: `(x + 1) / 2` where `from_signed`, then clamped.
fn to_unit(g: &mut PolicyGraph<'_>, x: &str, from_signed: bool) -> String {
    let x = match from_signed {
        true => {
            let half = g.f(0.5);
            let scaled = g.op("Mul", &[x, &half]);
            g.op("Add", &[&scaled, &half])
        }
        false => x.to_string(),
    };
    let (zero, one) = (g.f(0.0), g.f(1.0));
    g.op("Clip", &[&x, &zero, &one])
}

/// `batch_frames`: pictures `[batch, 3, height, width]` (0..1) as the
/// frames of one video `[1, batch, 3, height, width]`.
fn batch_frames(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let x = g.input("image")?;
    let axis = g.b.vec_i64(&[0]);
    let out = g.op("Unsqueeze", &[&x, &axis]);
    g.output(&out, "frames")
}

/// `join_frames`: the frames of videos `video_0`, `video_1`, ... (each
/// `[batch, frames, 3, h, w]`) one after another.
fn join_frames(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let mut videos = Vec::new();
    while g.has_input(&format!("video_{}", videos.len())) {
        let port = format!("video_{}", videos.len());
        videos.push(g.input(&port)?);
    }
    if videos.len() < 2 {
        return Err(g.error("it joins fewer than two videos (ports video_0, video_1, ...)"));
    }
    let refs: Vec<&str> = videos.iter().map(String::as_str).collect();
    let out = g.op_with("Concat", &refs, &[("axis", Attr::Int(1))]);
    g.output(&out, "joined")
}

/// The extents a contract parameter lists (`"128,2,1,1"`), each 1 or
/// more.
pub(super) fn extents(g: &PolicyGraph<'_>, key: &str) -> Result<Vec<i64>, SynthError> {
    let text = g
        .parameter(key)
        .and_then(Value::as_str)
        .ok_or_else(|| g.error(format!("it has no `{key}` parameter")))?;
    text.split(',')
        .map(|e| e.trim().parse::<i64>().ok().filter(|e| *e >= 1))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| g.error(format!("`{key}` is '{text}', not extents of 1 or more")))
}

/// `av_split`: a packed audio-video row `[batch, 1, video + audio]` as
/// its video part (`video_shape` per batch entry) and its audio part
/// (`audio_shape`), divided by `audio_divisor` where it has one (the
/// factor MiniMax H3's sampler carries the audio part at).
fn av_split(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let (video, audio) = (extents(g, "video_shape")?, extents(g, "audio_shape")?);
    let packed = g.input("packed")?;
    let [video, mut audio] = unpacked(g, &packed, [&video, &audio]);
    if g.parameter("audio_divisor").is_some() {
        let divisor = g.positive_number("audio_divisor")?;
        let factor = g.b.scalar_f32((1.0 / divisor) as f32);
        audio = g.op("Mul", &[&audio, &factor]);
    }
    g.output(&video, "video")?;
    g.output(&audio, "audio")
}

/// LTX-2's packed row `packed` (`[batch, 1, video + audio]`) apart: its
/// video part and its audio part, each reshaped to its `shapes` entry
/// per batch entry (the video's, which fixes where the audio starts,
/// then the audio's; a -1 takes the rest).
pub(super) fn unpacked(g: &mut PolicyGraph<'_>, packed: &str, shapes: [&[i64]; 2]) -> [String; 2] {
    let video_elements: i64 = shapes[0].iter().product();
    let batch = g.op_with(
        "Shape",
        &[packed],
        &[("start", Attr::Int(0)), ("end", Attr::Int(1))],
    );
    let mut part = |(start, end): (i64, i64), shape: &[i64]| {
        let (starts, ends, axes) = (
            g.b.vec_i64(&[start]),
            g.b.vec_i64(&[end]),
            g.b.vec_i64(&[2]),
        );
        let part = g.op("Slice", &[packed, &starts, &ends, &axes]);
        let rest = g.b.vec_i64(shape);
        let shape = g.op_with("Concat", &[&batch, &rest], &[("axis", Attr::Int(0))]);
        g.op("Reshape", &[&part, &shape])
    };
    [
        part((0, video_elements), shapes[0]),
        part((video_elements, i64::MAX), shapes[1]),
    ]
}

/// `av_join`: a video and an audio part as one packed row `[batch, 1,
/// video + audio]`, as ComfyUI packs them.
fn av_join(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let (video, audio) = (g.input("video")?, g.input("audio")?);
    let out = packed(g, &video, &audio);
    g.output(&out, "packed")
}

/// A video and an audio part as one packed row `[batch, 1, video +
/// audio]`, as ComfyUI packs them.
pub(super) fn packed(g: &mut PolicyGraph<'_>, video: &str, audio: &str) -> String {
    let row = g.b.vec_i64(&[0, 1, -1]);
    let parts = [video, audio].map(|part| g.op("Reshape", &[part, &row]));
    g.op_with("Concat", &[&parts[0], &parts[1]], &[("axis", Attr::Int(2))])
}

/// `one_frame`: each picture `[batch, 3, h, w]` as a one-frame video
/// `[batch, 1, 3, h, w]`.
fn one_frame(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let x = g.input("image")?;
    let axis = g.b.vec_i64(&[1]);
    let out = g.op("Unsqueeze", &[&x, &axis]);
    g.output(&out, "frames")
}

/// `pixel_decoder`: a pixel-space latent `[batch, 3, h, w]` (in -1..1)
/// as the picture it is, as ComfyUI's `pixel_space` VAE decodes.
fn pixel_decoder(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let x = g.input("latent")?;
    let out = g.op("Identity", &[&x]);
    g.output(&out, "image")
}

/// `frame_pictures`: video frames `[batch, frames, 3, h, w]` as pictures
/// `[batch * frames, 3, h, w]`.
fn frame_pictures(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let x = g.input("video")?;
    let picture = g.op_with("Shape", &[&x], &[("start", Attr::Int(2))]);
    let all = g.b.vec_i64(&[-1]);
    let shape = g.op_with("Concat", &[&all, &picture], &[("axis", Attr::Int(0))]);
    let out = g.op("Reshape", &[&x, &shape]);
    g.output(&out, "pictures")
}

/// `trim_latent`: a video latent `[batch, channels, frames, h, w]`
/// without its first `frames` latent frames (contract parameter), as
/// ComfyUI's `TrimVideoLatent`, or (`from: end`) its last, as
/// `LTXVCropGuides` drops appended guide frames.
fn trim_latent(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let frames = g.positive_integer("frames")?;
    let x = g.input("latent")?;
    let from_end = g.parameter("from").and_then(Value::as_str) == Some("end");
    let (start, end) = match from_end {
        true => (0, -frames),
        false => (frames, i64::MAX),
    };
    let (starts, ends, axes) = (
        g.b.vec_i64(&[start]),
        g.b.vec_i64(&[end]),
        g.b.vec_i64(&[2]),
    );
    let out = g.op("Slice", &[&x, &starts, &ends, &axes]);
    g.output(&out, "trimmed")
}

/// `append_style`: ComfyUI's `StyleModelApply` (multiply): the style
/// tokens `[pictures, tokens, hidden]` flattened into one row, times
/// `strength`, after the conditioning's own `[batch, sequence, hidden]`
/// (every row of the batch takes them).
fn append_style(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let conditioning = g.input("conditioning")?;
    let style = g.input("style")?;
    let strength = g.input("strength")?;
    let scaled = g.op("Mul", &[&style, &strength]);
    let hidden = g.op_with("Shape", &[&style], &[("start", Attr::Int(2))]);
    let row = g.b.vec_i64(&[1, -1]);
    let shape = g.op_with("Concat", &[&row, &hidden], &[("axis", Attr::Int(0))]);
    let flat = g.op("Reshape", &[&scaled, &shape]);
    let batch = g.op_with(
        "Shape",
        &[&conditioning],
        &[("start", Attr::Int(0)), ("end", Attr::Int(1))],
    );
    let rest = g.op_with("Shape", &[&flat], &[("start", Attr::Int(1))]);
    let shape = g.op_with("Concat", &[&batch, &rest], &[("axis", Attr::Int(0))]);
    let rows = g.op("Expand", &[&flat, &shape]);
    let out = g.op_with("Concat", &[&conditioning, &rows], &[("axis", Attr::Int(1))]);
    g.output(&out, "styled")
}

/// `first`'s tokens, then `second`'s (axis 1 of `[batch, tokens, hidden]`).
fn join_tokens(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let first = g.input("first")?;
    let second = g.input("second")?;
    let out = g.op_with("Concat", &[&first, &second], &[("axis", Attr::Int(1))]);
    g.output(&out, "joined")
}

/// `unconditional + (conditional - unconditional) * scale`.
fn guidance_combine(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let unconditional = g.input("unconditional")?;
    let conditional = g.input("conditional")?;
    let scale = g.input("scale")?;
    let d = g.op("Sub", &[&conditional, &unconditional]);
    let s = g.rows(&scale);
    let m = g.op("Mul", &[&d, &s]);
    let out = g.op("Add", &[&unconditional, &m]);
    g.output(&out, "estimate")
}

/// `VideoLinearCFGGuidance`'s guidance on a video latent `[batch,
/// channels, frames, h, w]`: frame `f` of `F` is guided with `min_scale +
/// (scale - min_scale) * f / max(F - 1, 1)` (ComfyUI's `linspace` from
/// the node's `min_cfg` to the sampler's cfg over the frames).
fn linear_guidance_combine(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let unconditional = g.input("unconditional")?;
    let conditional = g.input("conditional")?;
    let scale = g.input("scale")?;
    let min_scale = g
        .parameter("min_scale")
        .and_then(Value::as_f64)
        .ok_or_else(|| g.error("its contract parameter `min_scale` is not a number"))?;
    let frames = g.op_with(
        "Shape",
        &[&conditional],
        &[("start", Attr::Int(2)), ("end", Attr::Int(3))],
    );
    let first = g.b.vec_i64(&[0]);
    let frames = g.op("Squeeze", &[&frames, &first]);
    let (zero, one) = (g.i(0), g.i(1));
    let index = g.op("Range", &[&zero, &frames, &one]);
    let index = g.cast(&index, DataType::FLOAT);
    let last = g.op("Sub", &[&frames, &one]);
    let last = g.op("Max", &[&last, &one]);
    let last = g.cast(&last, DataType::FLOAT);
    let fraction = g.op("Div", &[&index, &last]);
    let along_frames = g.b.vec_i64(&[1, 1, -1, 1, 1]);
    let fraction = g.op("Reshape", &[&fraction, &along_frames]);
    let low = g.f(min_scale);
    let s = g.rows(&scale);
    let span = g.op("Sub", &[&s, &low]);
    let rise = g.op("Mul", &[&span, &fraction]);
    let per_frame = g.op("Add", &[&low, &rise]);
    let d = g.op("Sub", &[&conditional, &unconditional]);
    let m = g.op("Mul", &[&d, &per_frame]);
    let out = g.op("Add", &[&unconditional, &m]);
    g.output(&out, "estimate")
}

/// `DualCFGGuider`'s estimate from the unconditional (negative), middle
/// and conditional (positive) ones, with `scale` its `cfg_conds` and
/// `scale_2` its `cfg_cond2_negative`: `regular` style `n + s2 (m - n) +
/// s1 (p - m)`, `nested` style `n + s2 (m + s1 (p - m) - n)`.
fn dual_guidance_combine(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let negative = g.input("unconditional")?;
    let middle = g.input("middle")?;
    let positive = g.input("conditional")?;
    let scale = g.input("scale")?;
    let s1 = g.rows(&scale);
    let scale_2 = g.input("scale_2")?;
    let s2 = g.rows(&scale_2);
    let nested = match g.parameter("style").and_then(Value::as_str) {
        Some("regular") => false,
        Some("nested") => true,
        other => return Err(g.error(format!("style {other:?} is not regular or nested"))),
    };
    let text = g.op("Sub", &[&positive, &middle]);
    let text = g.op("Mul", &[&text, &s1]);
    let out = if nested {
        let guided = g.op("Add", &[&middle, &text]);
        let away = g.op("Sub", &[&guided, &negative]);
        let away = g.op("Mul", &[&away, &s2]);
        g.op("Add", &[&negative, &away])
    } else {
        let away = g.op("Sub", &[&middle, &negative]);
        let away = g.op("Mul", &[&away, &s2]);
        let base = g.op("Add", &[&negative, &away]);
        g.op("Add", &[&base, &text])
    };
    g.output(&out, "estimate")
}

/// `start = steps - round_half_even(steps * denoise)`, `iterations = steps - start`.
fn denoise_window(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let steps = g.input("steps")?;
    let denoise = g.input("denoise")?;
    let sf = g.cast(&steps, DataType::FLOAT);
    let p = g.op("Mul", &[&sf, &denoise]);
    let r = g.op("Round", &[&p]);
    let ri = g.cast(&r, DataType::INT64);
    let start = g.op("Sub", &[&steps, &ri]);
    let iterations = g.op("Sub", &[&steps, &start]);
    let iterations = run_iterations(g, family, &iterations);
    let iterations = capped(g, &iterations)?;
    g.output(&start, "start")?;
    g.output(&iterations, "iterations")
}

/// `iterations`, at most the request's `max_iterations` where the policy
/// takes it (a run cut short, as the loop's own bound cuts an unwindowed
/// run).
fn capped(g: &mut PolicyGraph<'_>, iterations: &str) -> Result<String, SynthError> {
    if !g.has_input("max_iterations") {
        return Ok(iterations.to_string());
    }
    let cap = g.input("max_iterations")?;
    Ok(g.op("Min", &[iterations, &cap]))
}

/// The loop iterations of a run of `steps` steps (see
/// `sampling::iterations`): `floor(steps / 3) + 1` for `dpm_fast` (none
/// for none).
fn run_iterations(g: &mut PolicyGraph<'_>, family: &Family, steps: &str) -> String {
    if family.solver != "dpm_fast" {
        return steps.to_string();
    }
    let iterations = super::steps::fast_steps(g, steps);
    g.op("Min", &[&iterations, steps])
}

/// `last_end = min(end, steps)`, `iterations = max(last_end - start, 0)`.
fn step_window(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let steps = g.input("steps")?;
    let start = g.input("start")?;
    let end = g.input("end")?;
    let last_end = g.op("Min", &[&end, &steps]);
    let span = g.op("Sub", &[&last_end, &start]);
    let zero = g.b.vec_i64(&[0]);
    let iterations = g.op("Max", &[&span, &zero]);
    let iterations = run_iterations(g, family, &iterations);
    let iterations = capped(g, &iterations)?;
    g.output(&start, "first_step")?;
    g.output(&iterations, "iterations")?;
    g.output(&last_end, "last_end")
}

/// `iteration + start`.
fn step_offset(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let iteration = g.input("iteration")?;
    let start = g.input("start")?;
    let out = g.op("Add", &[&iteration, &start]);
    g.output(&out, "step")
}

/// Zeros shaped like the noise (ComfyUI's empty latent).
fn empty_latent(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let _row_shape = g.input("row_shape")?;
    let like = g.input("like")?;
    let shape = g.op("Shape", &[&like]);
    let out = g.op("ConstantOfShape", &[&shape]);
    g.output(&out, "latent")
}

/// The picture with masked pixels set to `masked_value`.
fn inpaint_pixels(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let number = |g: &PolicyGraph<'_>, key: &str, default: f64| {
        g.parameter(key).and_then(Value::as_f64).unwrap_or(default)
    };
    let (value, threshold) = (number(g, "masked_value", 0.5), number(g, "threshold", 0.5));
    let image = g.input("image")?;
    let mask = g.input("mask")?;
    let t = g.f(threshold);
    let masked = g.op("Greater", &[&mask, &t]);
    let v = g.f(value);
    let out = g.op("Where", &[&masked, &v, &image]);
    g.output(&out, "pixels")
}

/// The latent's noise mask as ComfyUI's sampler reads it: `round`ed where
/// the contract says so (`VAEEncodeForInpaint` rounds its mask), grown
/// where `grow_mask_by` is above 0 as that node grows it (the maximum over
/// a `grow_mask_by`-wide window padded by `ceil((grow_mask_by - 1) / 2)`,
/// cut back to the mask's size), then resized to the latent's cells
/// (`like`'s last two extents) by PyTorch's bilinear interpolation
/// (`align_corners=False`), as `comfy.utils.reshape_mask` does.
fn latent_mask(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let grow = g
        .parameter("grow_mask_by")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if !(0..=256).contains(&grow) {
        return Err(g.error("grow_mask_by must be 0..=256"));
    }
    let round = match g.parameter("round") {
        None => false,
        Some(value) => value
            .as_bool()
            .ok_or_else(|| g.error("its contract parameter `round` is not true or false"))?,
    };
    if grow > 0 && !round {
        return Err(g.error("a grown mask is rounded first (VAEEncodeForInpaint's)"));
    }
    if g.parameter("resize").and_then(Value::as_str) != Some("bilinear") {
        return Err(g.error("its contract parameter `resize` must be `bilinear`"));
    }
    let mask = g.input("mask")?;
    let like = g.input("like")?;
    let mut shaped = mask.clone();
    if round {
        shaped = g.op("Round", &[&shaped]);
    }
    if grow > 0 {
        let pad = grow / 2;
        let grown = g.op_with(
            "MaxPool",
            &[&shaped],
            &[
                ("kernel_shape", Attr::Ints(vec![grow, grow])),
                ("pads", Attr::Ints(vec![pad; 4])),
                ("strides", Attr::Ints(vec![1, 1])),
            ],
        );
        let sides = g.op_with(
            "Shape",
            &[&mask],
            &[("start", Attr::Int(2)), ("end", Attr::Int(4))],
        );
        let (zeros, axes) = (g.b.vec_i64(&[0, 0]), g.b.vec_i64(&[2, 3]));
        shaped = g.op("Slice", &[&grown, &zeros, &sides, &axes]);
    }
    let lead = g.op_with(
        "Shape",
        &[&mask],
        &[("start", Attr::Int(0)), ("end", Attr::Int(2))],
    );
    let cells = g.op_with("Shape", &[&like], &[("start", Attr::Int(-2))]);
    let sizes = g.op_with("Concat", &[&lead, &cells], &[("axis", Attr::Int(0))]);
    let out = g.op_with(
        "Resize",
        &[&shaped, "", "", &sizes],
        &[
            ("mode", Attr::Str("linear".into())),
            (
                "coordinate_transformation_mode",
                Attr::Str("pytorch_half_pixel".into()),
            ),
        ],
    );
    g.output(&out, "latent_mask")
}

/// CLIP-L and bigG states side by side, the pooled bigG embedding, and the
/// six size numbers per row.
fn sdxl_conditioning(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let hidden_l = g.input("hidden_l")?;
    let hidden_g = g.input("hidden_g")?;
    let pooled = g.input("pooled")?;
    let size = g.input("size")?;
    let states = g.op_with("Concat", &[&hidden_l, &hidden_g], &[("axis", Attr::Int(2))]);
    let rows = g.op_with("Shape", &[&pooled], &[("end", Attr::Int(1))]);
    let six = g.b.vec_i64(&[6]);
    let shape = g.op_with("Concat", &[&rows, &six], &[("axis", Attr::Int(0))]);
    let time_ids = g.op("Expand", &[&size, &shape]);
    g.output(&states, "encoder_hidden_states")?;
    g.output(&pooled, "text_embeds")?;
    g.output(&time_ids, "time_ids")
}

/// The ControlNet strength while `start <= step / steps < end`, else 0.
fn control_scale(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let strength = g.input("strength")?;
    let start = g.input("start")?;
    let end = g.input("end")?;
    let step = g.input("step")?;
    let schedule = g.input("schedule")?;
    let length = g.op("Shape", &[&schedule]);
    let unit = g.b.vec_i64(&[1]);
    let steps = g.op("Sub", &[&length, &unit]);
    let sf = g.cast(&steps, DataType::FLOAT);
    let k = g.cast(&step, DataType::FLOAT);
    let percent = g.op("Div", &[&k, &sf]);
    let after = g.op("GreaterOrEqual", &[&percent, &start]);
    let before = g.op("Less", &[&percent, &end]);
    let active = g.op("And", &[&after, &before]);
    let zero = g.b.vec_f32(&[0.0]);
    let out = g.op("Where", &[&active, &strength, &zero]);
    g.output(&out, "scale")
}
