//! ComfyUI's resizes, as an ONNX `Resize` over the last two axes of
//! `[batch, channels, h, w]`:
//! - `latent_upscale`: `LatentUpscale` / `LatentUpscaleBy` on a latent;
//! - `image_scale` (a decoded picture's, numbered `image_scale_2`, ...)
//!   and `input_scale` (a loaded picture's): `ImageScale`, `ImageScaleBy`
//!   and `ImageScaleToTotalPixels` on pixels (with `crop: center`, first
//!   the centred part of the new aspect, as ComfyUI's `common_upscale`
//!   cuts it), then (parameter `multiple`) the centred crop to whole
//!   multiples that `VAEEncode` makes; between the two, the picture
//!   operations the parameter `then` lists (see `picture_ops`).
//!
//! The contract parameters say how the new size is found and how it is
//! sampled:
//! - `size`: `fixed` (`width`, `height`: the new extents; for pictures a 0
//!   takes that side from the aspect, `max(1, round(side * asked / other))`),
//!   `scale` (`scale_by`: each side `round_half_even(side * scale_by)`, as
//!   Python's `round` does, at least 1) or `total_pixels` (`pixels`: each
//!   side times `sqrt(pixels / (h * w))`, rounded so, in whole `step`s
//!   where that is set, as Qwen's edit encoders size their pictures) or `flux_kontext`
//!   (the [`KONTEXT_SIDES`] entry whose aspect is nearest the picture's,
//!   the first of equals) or `longer` / `shorter` (`side`: that side made
//!   `side`, the other `round(other / that * side)`) or `fit` (`width`,
//!   `height`, `pad`: `ResizeAndPadImage`'s resize by `min(width / w,
//!   height / h)`, each side its whole part, centred on a `width` x
//!   `height` picture of `pad`, the left and top margins the smaller) or `same` (no resize:
//!   a picture resized already, only cut) or `latent` (input `like`'s
//!   last two extents times `scale`: a latent's size in pixels);
//! - `method`: `nearest-exact` (PyTorch's: source index
//!   `floor((i + 0.5) * in / out)`, which is ONNX's half-pixel nearest
//!   rounding halves up), `bilinear` (PyTorch's `align_corners=False`
//!   linear, ONNX's `pytorch_half_pixel`) or `bicubic` (PyTorch's cubic
//!   convolution with `a = -0.75`, edge samples repeated: ONNX's cubic),
//!   `area` and, for pictures, `lanczos` (see `resample`).

use super::SynthError;
use super::graph::PolicyGraph;
use serde_json::Value;
use wfstudio_onnx::builder::Attr;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// The methods the policies resize pictures by (ComfyUI's names).
pub const PICTURE_METHODS: &[&str] = &["nearest-exact", "bilinear", "area", "bicubic", "lanczos"];

/// The methods the policies resize latents by (ComfyUI's `lanczos` works
/// on 8-bit pictures only).
pub const LATENT_METHODS: &[&str] = &["nearest-exact", "bilinear", "area", "bicubic"];

/// Flux Kontext's preferred sizes `(width, height)`, as ComfyUI's
/// `FluxKontextImageScale` lists them.
const KONTEXT_SIDES: [(i64, i64); 17] = [
    (672, 1568),
    (688, 1504),
    (720, 1456),
    (752, 1392),
    (800, 1328),
    (832, 1248),
    (880, 1184),
    (944, 1104),
    (1024, 1024),
    (1104, 944),
    (1184, 880),
    (1248, 832),
    (1328, 800),
    (1392, 752),
    (1456, 720),
    (1504, 688),
    (1568, 672),
];

/// Builds the resize of `latent` to the parameters' size.
pub fn latent_upscale(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let latent = g.input("latent")?;
    let side = match g.text("size")?.as_str() {
        "fixed" => {
            let (width, height) = (g.positive_integer("width")?, g.positive_integer("height")?);
            g.b.vec_i64(&[height, width])
        }
        "scale" => scaled_sides(g, &latent)?,
        other => return Err(g.error(format!("size `{other}` is not fixed or scale"))),
    };
    let out = resize(g, &latent, &side, LATENT_METHODS)?;
    g.output(&out, "upscaled")
}

/// Builds the resize of picture `image` to the parameters' size (none
/// for size `same`, a picture resized already), then the operations of
/// parameter `then`, cropped to whole `multiple`s where that parameter is
/// set.
pub fn image_scale(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let image = g.input("image")?;
    let mut out = match g.text("size")?.as_str() {
        "same" => image,
        "fit" => fit(g, &image)?,
        _ => {
            let side = new_sides(g, &image)?;
            let source = match g.parameter("crop").and_then(Value::as_str) {
                None | Some("disabled") => image,
                Some("center") => centre_of_aspect(g, &image, &side),
                Some(other) => {
                    return Err(g.error(format!("crop `{other}` is not disabled or center")));
                }
            };
            let resized = resize(g, &source, &side, PICTURE_METHODS)?;
            match g.parameter("unless_same").and_then(Value::as_bool) {
                Some(true) => unless_same(g, &source, &side, &resized),
                _ => resized,
            }
        }
    };
    out = super::picture_ops::then(g, out)?;
    if g.parameter("multiple").is_some() {
        out = crop_to_multiple(g, &out)?;
    }
    g.output(&out, "scaled")
}

/// The last two extents of `x`, as float64 `[h, w]`.
fn sides(g: &mut PolicyGraph<'_>, x: &str) -> String {
    let hw = g.op_with("Shape", &[x], &[("start", Attr::Int(2))]);
    g.cast(&hw, DataType::DOUBLE)
}

/// `max(1, round_half_even(hw * factor))` as int64.
fn rounded(g: &mut PolicyGraph<'_>, hw: &str, factor: &str) -> String {
    let scaled = g.op("Mul", &[hw, factor]);
    let rounded = g.op("Round", &[&scaled]);
    let one = g.d(1.0);
    let at_least_one = g.op("Max", &[&rounded, &one]);
    g.cast(&at_least_one, DataType::INT64)
}

/// Each side of `x` times the positive parameter `scale_by`, rounded.
fn scaled_sides(g: &mut PolicyGraph<'_>, x: &str) -> Result<String, SynthError> {
    let scale = g.positive_number("scale_by")?;
    let hw = sides(g, x);
    let factor = g.d(scale);
    Ok(rounded(g, &hw, &factor))
}

/// The sides (int64 `[h, w]`) the parameters' `size` gives `image`.
fn new_sides(g: &mut PolicyGraph<'_>, image: &str) -> Result<String, SynthError> {
    Ok(match g.text("size")?.as_str() {
        "fixed" => fixed_sides(g, image)?,
        "scale" => scaled_sides(g, image)?,
        "total_pixels" => total_pixel_sides(g, image)?,
        "steps" => {
            let step = g.positive_integer("step")?;
            let hw = sides(g, image);
            in_steps(g, &hw, step)
        }
        "aspect_square" => aspect_square_sides(g, image)?,
        "longer_down" => {
            // ComfyUI's Mage-Flow node: a factor of side / longer where
            // the longer side is above `side`, times each side, rounded.
            let side = g.positive_integer("side")?;
            let hw = sides(g, image);
            let longer = g.op_with("ReduceMax", &[&hw], &[("keepdims", Attr::Int(1))]);
            let target = g.d(side as f64);
            let factor = g.op("Div", &[&target, &longer]);
            let one = g.d(1.0);
            let factor = g.op("Min", &[&factor, &one]);
            rounded(g, &hw, &factor)
        }
        "floor_steps" => {
            let step = g.positive_integer("step")?;
            let hw = g.op_with("Shape", &[image], &[("start", Attr::Int(2))]);
            let step = g.i(step);
            let whole = g.op("Div", &[&hw, &step]);
            let one = g.i(1);
            let whole = g.op("Max", &[&whole, &one]);
            g.op("Mul", &[&whole, &step])
        }
        "flux_kontext" => kontext_sides(g, image),
        size @ ("longer" | "shorter") => one_side(g, image, size == "shorter")?,
        "same" => g.op_with("Shape", &[image], &[("start", Attr::Int(2))]),
        "latent" => latent_sides(g)?,
        other => {
            return Err(g.error(format!(
                "size `{other}` is not fixed, scale, total_pixels, steps, aspect_square, longer_down, floor_steps, longer, shorter, flux_kontext, same or latent"
            )));
        }
    })
}

/// The sides of input `like` (a latent, `[..., h, w]`) in pixels: each
/// times the parameter `scale`.
fn latent_sides(g: &mut PolicyGraph<'_>) -> Result<String, SynthError> {
    let scale = g.positive_integer("scale")?;
    let like = g.input("like")?;
    let cells = g.op_with("Shape", &[&like], &[("start", Attr::Int(-2))]);
    let scale = g.i(scale);
    Ok(g.op("Mul", &[&cells, &scale]))
}

/// Each side of `image` times `sqrt(pixels / (h * w))`, in whole
/// `step`s (parameter, 1 unless set): `max(1, round(side * factor /
/// step)) * step`, in Python's order of float operations.
fn total_pixel_sides(g: &mut PolicyGraph<'_>, image: &str) -> Result<String, SynthError> {
    let pixels = g.positive_number("pixels")?;
    let step = match g.parameter("step") {
        Some(_) => g.positive_integer("step")?,
        None => 1,
    };
    let hw = sides(g, image);
    let area = g.op_with("ReduceProd", &[&hw], &[("keepdims", Attr::Int(1))]);
    let total = g.d(pixels);
    let ratio = g.op("Div", &[&total, &area]);
    let factor = g.op("Sqrt", &[&ratio]);
    if step == 1 {
        return Ok(rounded(g, &hw, &factor));
    }
    let scaled = g.op("Mul", &[&hw, &factor]);
    Ok(in_steps(g, &scaled, step))
}

/// The sides of a `side` x `side` square at `image`'s aspect, in whole
/// `step`s (parameters), as `TextEncodeQwenImage21` computes them (its
/// order of float operations, so ties round alike): with `ratio = w / h`,
/// width `sqrt(side² ratio)`, height `sqrt(side² / ratio)`.
fn aspect_square_sides(g: &mut PolicyGraph<'_>, image: &str) -> Result<String, SynthError> {
    let side = g.positive_integer("side")?;
    let step = g.positive_integer("step")?;
    let hw = sides(g, image);
    let at = |g: &mut PolicyGraph<'_>, i: i64| {
        let index = g.b.vec_i64(&[i]);
        g.op_with("Gather", &[&hw, &index], &[("axis", Attr::Int(0))])
    };
    let (h, w) = (at(g, 0), at(g, 1));
    let ratio = g.op("Div", &[&w, &h]);
    let square = g.d((side * side) as f64);
    let wide = g.op("Mul", &[&square, &ratio]);
    let tall = g.op("Div", &[&square, &ratio]);
    let (width, height) = (g.op("Sqrt", &[&wide]), g.op("Sqrt", &[&tall]));
    let new = g.op_with("Concat", &[&height, &width], &[("axis", Attr::Int(0))]);
    Ok(in_steps(g, &new, step))
}

/// Float64 sides `hw` in whole `step`s: `max(1, round(side / step)) *
/// step`, as int64.
fn in_steps(g: &mut PolicyGraph<'_>, hw: &str, step: i64) -> String {
    let step_d = g.d(step as f64);
    let steps = g.op("Div", &[hw, &step_d]);
    let one = g.d(1.0);
    let steps = g.op("Round", &[&steps]);
    let steps = g.op("Max", &[&steps, &one]);
    let sides = g.op("Mul", &[&steps, &step_d]);
    g.cast(&sides, DataType::INT64)
}

/// `resized` (`x` resized to `side`), or `x` itself where `side` is its
/// own size (parameter `unless_same`: `TextEncodeQwenImage21` keeps such
/// a picture as it is, where a lanczos resize would still round it to 8
/// bits). Both sides of the choice have the new shape: `x` resized to
/// `side` by nearest, which is `x` where the size is its own.
fn unless_same(g: &mut PolicyGraph<'_>, x: &str, side: &str, resized: &str) -> String {
    let attrs = [
        ("mode", Attr::Str("nearest".into())),
        (
            "coordinate_transformation_mode",
            Attr::Str("half_pixel".into()),
        ),
        ("nearest_mode", Attr::Str("round_prefer_ceil".into())),
    ];
    let lead = g.op_with(
        "Shape",
        &[x],
        &[("start", Attr::Int(0)), ("end", Attr::Int(2))],
    );
    let sizes = g.op_with("Concat", &[&lead, side], &[("axis", Attr::Int(0))]);
    let kept = g.op_with("Resize", &[x, "", "", &sizes], &attrs);
    let own = g.op_with("Shape", &[x], &[("start", Attr::Int(2))]);
    let equal = g.op("Equal", &[&own, side]);
    let equal = g.cast(&equal, DataType::INT32);
    let axes = g.b.vec_i64(&[0]);
    let both = g.op_with("ReduceMin", &[&equal, &axes], &[("keepdims", Attr::Int(1))]);
    let same = g.cast(&both, DataType::BOOL);
    g.op("Where", &[&same, &kept, resized])
}

/// The sides with the longer one (the shorter where `shorter`) made the
/// positive parameter `side` and the other `round(other / that * side)`,
/// a square's both `side`, as `ResizeImageMaskNode` computes them.
fn one_side(g: &mut PolicyGraph<'_>, image: &str, shorter: bool) -> Result<String, SynthError> {
    let side = g.positive_integer("side")?;
    let hw = sides(g, image);
    let swap = g.b.vec_i64(&[1, 0]);
    let wh = g.gather(&hw, &swap);
    // [h / w, w / h] times the side: each side's size where the other is
    // the one made `side`.
    let ratio = g.op("Div", &[&hw, &wh]);
    let side_d = g.d(side as f64);
    let scaled = g.op("Mul", &[&ratio, &side_d]);
    let scaled = g.op("Round", &[&scaled]);
    let one = g.d(1.0);
    let scaled = g.op("Max", &[&scaled, &one]);
    // The side that is the longer (shorter) one, or equal, is `side`.
    let kept = match shorter {
        false => g.op("GreaterOrEqual", &[&hw, &wh]),
        true => g.op("LessOrEqual", &[&hw, &wh]),
    };
    let sides = g.op("Where", &[&kept, &side_d, &scaled]);
    Ok(g.cast(&sides, DataType::INT64))
}

/// `picture_size`: the width and height (float32 `[1]` each) of
/// `image` as the parameters' resize would make it, before any cut to
/// whole multiples (what ComfyUI's `GetImageSize` reads after the resize
/// node); `image`'s own without a `size` parameter.
pub fn picture_size(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let image = g.input("image")?;
    let side = match g.parameter("size") {
        Some(_) => new_sides(g, &image)?,
        None => g.op_with("Shape", &[&image], &[("start", Attr::Int(2))]),
    };
    let side = g.cast(&side, DataType::FLOAT);
    let at = |g: &mut PolicyGraph<'_>, i: i64| {
        let index = g.b.vec_i64(&[i]);
        g.gather(&side, &index)
    };
    let (height, width) = (at(g, 0), at(g, 1));
    g.output(&width, "width")?;
    g.output(&height, "height")
}

/// The [`KONTEXT_SIDES`] entry (as int64 `[h, w]`) whose aspect is
/// nearest the picture's `w / h` (ArgMin keeps the first of equals, the
/// narrowest, as Python's `min` over `(distance, w, h)` does).
fn kontext_sides(g: &mut PolicyGraph<'_>, image: &str) -> String {
    let hw = sides(g, image);
    let (h, w) = (g.b.vec_i64(&[0]), g.b.vec_i64(&[1]));
    let h = g.gather(&hw, &h);
    let w = g.gather(&hw, &w);
    let aspect = g.op("Div", &[&w, &h]);
    let aspects: Vec<f64> = KONTEXT_SIDES
        .iter()
        .map(|(w, h)| *w as f64 / *h as f64)
        .collect();
    let aspects = g.b.f64s(&aspects, &[aspects.len() as i64]);
    let distance = g.op("Sub", &[&aspect, &aspects]);
    let distance = g.op("Abs", &[&distance]);
    let nearest = g.op_with("ArgMin", &[&distance], &[("keepdims", Attr::Int(0))]);
    let table: Vec<i64> = KONTEXT_SIDES.iter().flat_map(|(w, h)| [*h, *w]).collect();
    let table = g.b.i64s(&table, &[KONTEXT_SIDES.len() as i64, 2]);
    g.gather(&table, &nearest)
}

/// `ImageScale`'s sides: `width` and `height`, a 0 taken from the
/// picture's aspect.
fn fixed_sides(g: &mut PolicyGraph<'_>, image: &str) -> Result<String, SynthError> {
    let side = |g: &PolicyGraph<'_>, key: &str| {
        g.parameter(key)
            .and_then(Value::as_i64)
            .filter(|n| *n >= 0)
            .ok_or_else(|| {
                g.error(format!(
                    "its contract parameter `{key}` is not a whole number of at least 0"
                ))
            })
    };
    let (width, height) = (side(g, "width")?, side(g, "height")?);
    if width > 0 && height > 0 {
        return Ok(g.b.vec_i64(&[height, width]));
    }
    // The missing side is the picture's times asked / its other side.
    let (asked, from, kept) = match (width, height) {
        (0, 0) => return Err(g.error("its width and height are both 0")),
        (0, h) => (h, 0, 1),
        (w, _) => (w, 1, 0),
    };
    let hw = sides(g, image);
    let other = g.b.vec_i64(&[from]);
    let other = g.op_with("Gather", &[&hw, &other], &[("axis", Attr::Int(0))]);
    let missing = g.b.vec_i64(&[kept]);
    let missing = g.op_with("Gather", &[&hw, &missing], &[("axis", Attr::Int(0))]);
    let asked_value = g.d(asked as f64);
    let times = g.op("Mul", &[&missing, &asked_value]);
    let factor = g.op("Div", &[&times, &other]);
    let one = g.d(1.0);
    let computed = rounded(g, &factor, &one);
    let fixed = g.b.vec_i64(&[asked]);
    let parts = match kept {
        0 => [computed, fixed],
        _ => [fixed, computed],
    };
    Ok(g.op_with("Concat", &[&parts[0], &parts[1]], &[("axis", Attr::Int(0))]))
}

/// `ResizeAndPadImage`: `image` resized by `min(width / w, height / h)`
/// (each side the whole part of the side times that) and centred on a
/// `width` x `height` picture of the parameter `pad`.
fn fit(g: &mut PolicyGraph<'_>, image: &str) -> Result<String, SynthError> {
    let (width, height) = (g.positive_integer("width")?, g.positive_integer("height")?);
    let pad = g
        .parameter("pad")
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite())
        .ok_or_else(|| g.error("its contract parameter `pad` is not a number"))?;
    let hw = sides(g, image);
    let target = g.b.f64s(&[height as f64, width as f64], &[2]);
    let ratios = g.op("Div", &[&target, &hw]);
    let scale = g.op_with("ReduceMin", &[&ratios], &[("keepdims", Attr::Int(1))]);
    let scaled = g.op("Mul", &[&hw, &scale]);
    let whole = g.op("Floor", &[&scaled]);
    let one = g.d(1.0);
    let whole = g.op("Max", &[&whole, &one]);
    let new = g.cast(&whole, DataType::INT64);
    let resized = resize(g, image, &new, PICTURE_METHODS)?;
    let target = g.b.vec_i64(&[height, width]);
    let spare = g.op("Sub", &[&target, &new]);
    let zero = g.i(0);
    let spare = g.op("Max", &[&spare, &zero]);
    let two = g.i(2);
    let before = g.op("Div", &[&spare, &two]);
    let after = g.op("Sub", &[&spare, &before]);
    let none = g.b.vec_i64(&[0, 0]);
    let pads = g.op_with(
        "Concat",
        &[&none, &before, &none, &after],
        &[("axis", Attr::Int(0))],
    );
    let value = g.f(pad);
    Ok(g.op("Pad", &[&resized, &pads, &value]))
}

/// `x` resized over its last two axes to `side` (int64 `[h, w]`) by the
/// parameters' `method`, one of `methods`.
fn resize(
    g: &mut PolicyGraph<'_>,
    x: &str,
    side: &str,
    methods: &[&str],
) -> Result<String, SynthError> {
    let method = g.text("method")?;
    let not_made = |g: &PolicyGraph<'_>| {
        g.error(format!(
            "upscale method `{method}` is not one of {}",
            methods.join(", ")
        ))
    };
    if !methods.contains(&method.as_str()) {
        return Err(not_made(g));
    }
    let attrs = match method.as_str() {
        "area" => return Ok(super::resample::area(g, x, side)),
        "lanczos" => return Ok(super::resample::lanczos(g, x, side)),
        "nearest-exact" => vec![
            ("mode", Attr::Str("nearest".into())),
            (
                "coordinate_transformation_mode",
                Attr::Str("half_pixel".into()),
            ),
            ("nearest_mode", Attr::Str("round_prefer_ceil".into())),
        ],
        "bilinear" => vec![
            ("mode", Attr::Str("linear".into())),
            (
                "coordinate_transformation_mode",
                Attr::Str("pytorch_half_pixel".into()),
            ),
        ],
        "bicubic" => vec![
            ("mode", Attr::Str("cubic".into())),
            (
                "coordinate_transformation_mode",
                Attr::Str("pytorch_half_pixel".into()),
            ),
            ("cubic_coeff_a", Attr::Float(-0.75)),
        ],
        _ => return Err(not_made(g)),
    };
    let lead = g.op_with(
        "Shape",
        &[x],
        &[("start", Attr::Int(0)), ("end", Attr::Int(2))],
    );
    let sizes = g.op_with("Concat", &[&lead, side], &[("axis", Attr::Int(0))]);
    Ok(g.op_with("Resize", &[x, "", "", &sizes], &attrs))
}

/// The centred part of `x` with the aspect of `side` (int64 `[h, w]`):
/// `round((w - w * new / old) / 2)` columns off each side where the
/// picture is wider (`new`, `old`: width over height), else as many rows
/// by the inverse ratio, as ComfyUI's `common_upscale` crops.
fn centre_of_aspect(g: &mut PolicyGraph<'_>, x: &str, side: &str) -> String {
    let hw = sides(g, x);
    let new = g.cast(side, DataType::DOUBLE);
    let at = |g: &mut PolicyGraph<'_>, v: &str, i: i64| {
        let index = g.b.vec_i64(&[i]);
        g.op_with("Gather", &[v, &index], &[("axis", Attr::Int(0))])
    };
    let (h, w) = (at(g, &hw, 0), at(g, &hw, 1));
    let (nh, nw) = (at(g, &new, 0), at(g, &new, 1));
    let old_aspect = g.op("Div", &[&w, &h]);
    let new_aspect = g.op("Div", &[&nw, &nh]);
    let half = g.d(0.5);
    let zero = g.d(0.0);
    // Columns: w - w * (new / old), halved and rounded, where wider.
    let ratio = g.op("Div", &[&new_aspect, &old_aspect]);
    let kept = g.op("Mul", &[&w, &ratio]);
    let cut = g.op("Sub", &[&w, &kept]);
    let cut = g.op("Mul", &[&cut, &half]);
    let cut = g.op("Round", &[&cut]);
    let wider = g.op("Greater", &[&old_aspect, &new_aspect]);
    let x0 = g.op("Where", &[&wider, &cut, &zero]);
    // Rows: h - h * (old / new), where narrower.
    let ratio = g.op("Div", &[&old_aspect, &new_aspect]);
    let kept = g.op("Mul", &[&h, &ratio]);
    let cut = g.op("Sub", &[&h, &kept]);
    let cut = g.op("Mul", &[&cut, &half]);
    let cut = g.op("Round", &[&cut]);
    let narrower = g.op("Less", &[&old_aspect, &new_aspect]);
    let y0 = g.op("Where", &[&narrower, &cut, &zero]);
    let start = g.op_with("Concat", &[&y0, &x0], &[("axis", Attr::Int(0))]);
    let end = g.op("Sub", &[&hw, &start]);
    let (start, end) = (
        g.cast(&start, DataType::INT64),
        g.cast(&end, DataType::INT64),
    );
    let axes = g.b.vec_i64(&[2, 3]);
    g.op("Slice", &[x, &start, &end, &axes])
}

/// `x`'s last two axes cut to whole multiples of the parameter
/// `multiple`, centred as `VAEEncode` does (`(side % m) // 2` dropped
/// before).
fn crop_to_multiple(g: &mut PolicyGraph<'_>, x: &str) -> Result<String, SynthError> {
    let m = g.positive_integer("multiple")?;
    let hw = g.op_with("Shape", &[x], &[("start", Attr::Int(2))]);
    let multiple = g.b.vec_i64(&[m, m]);
    let rest = g.op("Mod", &[&hw, &multiple]);
    let kept = g.op("Sub", &[&hw, &rest]);
    let two = g.b.vec_i64(&[2, 2]);
    let start = g.op("Div", &[&rest, &two]);
    let end = g.op("Add", &[&start, &kept]);
    let axes = g.b.vec_i64(&[2, 3]);
    Ok(g.op("Slice", &[x, &start, &end, &axes]))
}
