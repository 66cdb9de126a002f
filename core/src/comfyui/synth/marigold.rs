//! ComfyUI's `MarigoldV2PostProcess` on Marigold's decoded prediction,
//! 0..1 pixels `[batch, 3, h, w]` (VAEDecode's clamped output):
//! - depth: the channels' mean, per picture scaled so its farthest is 0
//!   and its nearest 1 (`(max - d) / max(max - min, 1e-6)`), on all three
//!   channels;
//! - normals: `2x - 1` made unit length over the channels (its norm at
//!   least 1e-12, as torch's `normalize`), back to 0..1;
//! - albedo: linear light to sRGB, `12.92 x` up to 0.0031308, else
//!   `1.055 x^(1/2.4) - 0.055`.

use super::graph::PolicyGraph;
use wfstudio_onnx::builder::Attr;

/// The channel axis.
const CHANNELS: i64 = 1;

/// `op` over `axes` of `x`, keeping them.
fn reduce(g: &mut PolicyGraph<'_>, op: &str, x: &str, axes: &[i64]) -> String {
    let axes = g.b.vec_i64(axes);
    g.op_with(op, &[x, &axes], &[("keepdims", Attr::Int(1))])
}

/// Depth: near bright, per picture.
pub(super) fn depth(g: &mut PolicyGraph<'_>, x: &str) -> String {
    let d = reduce(g, "ReduceMean", x, &[CHANNELS]);
    let low = reduce(g, "ReduceMin", &d, &[1, 2, 3]);
    let high = reduce(g, "ReduceMax", &d, &[1, 2, 3]);
    let span = g.op("Sub", &[&high, &low]);
    let floor = g.f(1e-6);
    let span = g.op("Max", &[&span, &floor]);
    let near = g.op("Sub", &[&high, &d]);
    let out = g.op("Div", &[&near, &span]);
    g.op_with(
        "Concat",
        &[&out, &out, &out],
        &[("axis", Attr::Int(CHANNELS))],
    )
}

/// Surface normals as unit vectors in 0..1.
pub(super) fn normals(g: &mut PolicyGraph<'_>, x: &str) -> String {
    let (two, one, half) = (g.f(2.0), g.f(1.0), g.f(0.5));
    let doubled = g.op("Mul", &[x, &two]);
    let n = g.op("Sub", &[&doubled, &one]);
    let squared = g.op("Mul", &[&n, &n]);
    let sum = reduce(g, "ReduceSum", &squared, &[CHANNELS]);
    let norm = g.op("Sqrt", &[&sum]);
    let floor = g.f(1e-12);
    let norm = g.op("Max", &[&norm, &floor]);
    let unit = g.op("Div", &[&n, &norm]);
    let lifted = g.op("Add", &[&unit, &one]);
    g.op("Mul", &[&lifted, &half])
}

/// Albedo from linear light to sRGB.
pub(super) fn albedo(g: &mut PolicyGraph<'_>, x: &str) -> String {
    let knee = g.f(0.003_130_8);
    let low = g.f(12.92);
    let linear = g.op("Mul", &[x, &low]);
    let above = g.op("Max", &[x, &knee]);
    let exponent = g.f(1.0 / 2.4);
    let curved = g.op("Pow", &[&above, &exponent]);
    let (scale, offset) = (g.f(1.055), g.f(0.055));
    let curved = g.op("Mul", &[&curved, &scale]);
    let curved = g.op("Sub", &[&curved, &offset]);
    let dark = g.op("LessOrEqual", &[x, &knee]);
    g.op("Where", &[&dark, &linear, &curved])
}
