//! `latent_upscale`: ComfyUI's `LatentUpscale` / `LatentUpscaleBy` on a
//! latent `[batch, channels, h, w]`, as an ONNX `Resize` over the last two
//! axes. The contract parameters say how the new size is found and how it
//! is sampled:
//! - `size`: `fixed` (`width`, `height`: the latent's new extents) or
//!   `scale` (`scale_by`: each side `round_half_even(side * scale_by)`, as
//!   Python's `round` does);
//! - `method`: `nearest-exact` (PyTorch's: source index
//!   `floor((i + 0.5) * in / out)`, which is ONNX's half-pixel nearest
//!   rounding halves up) or `bilinear` (PyTorch's `align_corners=False`
//!   linear, ONNX's `pytorch_half_pixel`).

use super::SynthError;
use super::graph::PolicyGraph;
use serde_json::Value;
use wfstudio_onnx::builder::Attr;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// The upscale methods the policy makes (ComfyUI's names).
pub const METHODS: &[&str] = &["nearest-exact", "bilinear"];

/// Builds the resize of `latent` to the parameters' size.
pub fn latent_upscale(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let latent = g.input("latent")?;
    let text = |g: &PolicyGraph<'_>, key: &str| {
        g.parameter(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| g.error(format!("its contract parameter `{key}` is not text")))
    };
    let method = text(g, "method")?;
    let (mode, coordinates, nearest) = match method.as_str() {
        "nearest-exact" => ("nearest", "half_pixel", Some("round_prefer_ceil")),
        "bilinear" => ("linear", "pytorch_half_pixel", None),
        other => {
            return Err(g.error(format!(
                "upscale method `{other}` is not one of {}",
                METHODS.join(", ")
            )));
        }
    };
    let lead = g.op_with(
        "Shape",
        &[&latent],
        &[("start", Attr::Int(0)), ("end", Attr::Int(2))],
    );
    let side = match text(g, "size")?.as_str() {
        "fixed" => {
            let (width, height) = (g.positive_integer("width")?, g.positive_integer("height")?);
            g.b.vec_i64(&[height, width])
        }
        "scale" => {
            let scale = g
                .parameter("scale_by")
                .and_then(Value::as_f64)
                .filter(|s| *s > 0.0)
                .ok_or_else(|| {
                    g.error("its contract parameter `scale_by` is not a positive number")
                })?;
            let hw = g.op_with("Shape", &[&latent], &[("start", Attr::Int(2))]);
            let hw = g.cast(&hw, DataType::DOUBLE);
            let factor = g.d(scale);
            let scaled = g.op("Mul", &[&hw, &factor]);
            let rounded = g.op("Round", &[&scaled]);
            let one = g.d(1.0);
            let at_least_one = g.op("Max", &[&rounded, &one]);
            g.cast(&at_least_one, DataType::INT64)
        }
        other => return Err(g.error(format!("size `{other}` is not fixed or scale"))),
    };
    let sizes = g.op_with("Concat", &[&lead, &side], &[("axis", Attr::Int(0))]);
    let mut attrs = vec![
        ("mode", Attr::Str(mode.into())),
        (
            "coordinate_transformation_mode",
            Attr::Str(coordinates.into()),
        ),
    ];
    if let Some(nearest) = nearest {
        attrs.push(("nearest_mode", Attr::Str(nearest.into())));
    }
    let out = g.op_with("Resize", &[&latent, "", "", &sizes], &attrs);
    g.output(&out, "upscaled")
}
