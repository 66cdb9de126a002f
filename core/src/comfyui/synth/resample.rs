//! The resizes ONNX's `Resize` cannot make, as two matrix products over
//! the last two axes of `[batch, channels, h, w]` (a weight matrix per
//! axis, `[new, old]`, computed from the extents at run time):
//! - `area`: PyTorch's `interpolate(mode="area")`, adaptive average
//!   pooling: new index `i` averages old `floor(i old / new)` up to
//!   `ceil((i + 1) old / new)`;
//! - `lanczos`: ComfyUI's, which resizes 8-bit pictures with Pillow's
//!   `LANCZOS`: the picture is `trunc(clip(255 x, 0, 255))`, then each
//!   axis whose extent changes is resampled with Pillow's 22-bit
//!   fixed-point coefficients in int32, rounded and clipped to 0..255 (the width
//!   first unless the height shrinks by more than twice what the width
//!   does, as Pillow 13 orders them), and the result is divided by 255.

use super::graph::PolicyGraph;
use wfstudio_onnx::builder::Attr;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// Pillow's fixed-point precision for 8-bit pictures.
const PRECISION_BITS: i32 = 22;

/// The lanczos kernel's half width, in old samples at a scale of 1.
const LANCZOS_SUPPORT: f64 = 3.0;

/// `x` resized to `side` (int64 `[h, w]`) by area averaging (a NaN
/// spreads over the whole result, each weight matrix being dense).
pub(super) fn area(g: &mut PolicyGraph<'_>, x: &str, side: &str) -> String {
    let [(old_h, new_h), (old_w, new_w)] = extents(g, x, side);
    let rows = area_weights(g, &old_h, &new_h);
    let columns = area_weights(g, &old_w, &new_w);
    let rows = g.cast(&rows, DataType::FLOAT);
    let columns = g.cast(&columns, DataType::FLOAT);
    let columns = transposed(g, &columns);
    let across = g.op("MatMul", &[x, &columns]);
    g.op("MatMul", &[&rows, &across])
}

/// `x` (pixels in 0..1) resized to `side` by Pillow's lanczos on its
/// 8-bit form, back in 0..1. The passes run in int32, as Pillow's, so
/// the sums are exact.
pub(super) fn lanczos(g: &mut PolicyGraph<'_>, x: &str, side: &str) -> String {
    let [(old_h, new_h), (old_w, new_w)] = extents(g, x, side);
    let wide = g.cast(x, DataType::DOUBLE);
    // A NaN byte is 0 (what numpy's cast to uint8 gives on this machine).
    let (zero, full) = (g.d(0.0), g.d(255.0));
    let nan = g.op("IsNaN", &[&wide]);
    let wide = g.op("Where", &[&nan, &zero, &wide]);
    let scaled = g.op("Mul", &[&wide, &full]);
    let clipped = g.op("Clip", &[&scaled, &zero, &full]);
    let bytes = g.op("Floor", &[&clipped]);
    let bytes = g.cast(&bytes, DataType::INT32);
    let columns = lanczos_weights(g, &old_w, &new_w);
    let columns = transposed(g, &columns);
    let rows = lanczos_weights(g, &old_h, &new_h);
    let across = |g: &mut PolicyGraph<'_>, x: &str| {
        let sum = g.op("MatMul", &[x, &columns]);
        fixed_point_round(g, &sum)
    };
    let along_height = |g: &mut PolicyGraph<'_>, x: &str| {
        let sum = g.op("MatMul", &[&rows, x]);
        fixed_point_round(g, &sum)
    };
    // Pillow resamples the width first unless the height shrinks by more
    // than twice what the width does. A pass whose extent stays is the
    // identity (each new sample's weight on its own old one is 2^22, the
    // others round to 0), so both orders run, and the extents choose.
    let width_first = across(g, &bytes);
    let width_first = along_height(g, &width_first);
    let height_first = along_height(g, &bytes);
    let height_first = across(g, &height_first);
    let shrink_h = g.op("Sub", &[&old_h, &new_h]);
    let shrink_w = g.op("Sub", &[&old_w, &new_w]);
    let two = g.i(2);
    let twice_w = g.op("Mul", &[&shrink_w, &two]);
    let none = g.i(0);
    let shrinks = g.op("Greater", &[&shrink_h, &none]);
    let more = g.op("Greater", &[&shrink_h, &twice_w]);
    let height_leads = g.op("And", &[&shrinks, &more]);
    let resized = g.op("Where", &[&height_leads, &height_first, &width_first]);
    let resized = g.cast(&resized, DataType::FLOAT);
    let full = g.f(255.0);
    g.op("Div", &[&resized, &full])
}

/// The old and new extents of the last two axes, as int64 scalars:
/// `[(old h, new h), (old w, new w)]`.
fn extents(g: &mut PolicyGraph<'_>, x: &str, side: &str) -> [(String, String); 2] {
    let old = g.op_with("Shape", &[x], &[("start", Attr::Int(2))]);
    let mut at = |v: &str, i: i64| {
        let index = g.i(i);
        g.gather(v, &index)
    };
    [(at(&old, 0), at(side, 0)), (at(&old, 1), at(side, 1))]
}

/// `weightsᵀ` (`[old, new]`), which resamples the last axis of what it
/// multiplies from the right.
fn transposed(g: &mut PolicyGraph<'_>, weights: &str) -> String {
    g.op_with("Transpose", &[weights], &[("perm", Attr::Ints(vec![1, 0]))])
}

/// `(new index [new, 1], old index [1, old])` as float64 grids.
fn grid(g: &mut PolicyGraph<'_>, old: &str, new: &str) -> (String, String) {
    let (zero, one) = (g.i(0), g.i(1));
    let new_index = g.op("Range", &[&zero, new, &one]);
    let old_index = g.op("Range", &[&zero, old, &one]);
    let (last, first) = (g.b.vec_i64(&[1]), g.b.vec_i64(&[0]));
    let new_index = g.op("Unsqueeze", &[&new_index, &last]);
    let old_index = g.op("Unsqueeze", &[&old_index, &first]);
    (
        g.cast(&new_index, DataType::DOUBLE),
        g.cast(&old_index, DataType::DOUBLE),
    )
}

/// The area weights `[new, old]` (float64): `1 / count` over each new
/// index's span of old ones, 0 elsewhere.
fn area_weights(g: &mut PolicyGraph<'_>, old: &str, new: &str) -> String {
    let (i, j) = grid(g, old, new);
    let (old, new) = (g.cast(old, DataType::DOUBLE), g.cast(new, DataType::DOUBLE));
    let one = g.d(1.0);
    let from = g.op("Mul", &[&i, &old]);
    let from = g.op("Div", &[&from, &new]);
    let start = g.op("Floor", &[&from]);
    let next = g.op("Add", &[&i, &one]);
    let to = g.op("Mul", &[&next, &old]);
    let to = g.op("Div", &[&to, &new]);
    let end = g.op("Ceil", &[&to]);
    let after_start = g.op("GreaterOrEqual", &[&j, &start]);
    let before_end = g.op("Less", &[&j, &end]);
    let inside = g.op("And", &[&after_start, &before_end]);
    let count = g.op("Sub", &[&end, &start]);
    let share = g.op("Div", &[&one, &count]);
    let zero = g.d(0.0);
    g.op("Where", &[&inside, &share, &zero])
}

/// Pillow's lanczos coefficients `[new, old]` (int32, the 22-bit
/// fixed-point integers): with `scale = old / new` and `f = max(scale,
/// 1)`, new index `i` reads old indices from `max(trunc(c - 3f + 0.5),
/// 0)` to `min(trunc(c + 3f + 0.5), old)` around `c = (i + 0.5) scale`,
/// weighted `L((j - c + 0.5) / f)` normalised to sum 1, each rounded half
/// away from zero at `2^22`.
fn lanczos_weights(g: &mut PolicyGraph<'_>, old: &str, new: &str) -> String {
    let (i, j) = grid(g, old, new);
    let (old, new) = (g.cast(old, DataType::DOUBLE), g.cast(new, DataType::DOUBLE));
    let (half, one) = (g.d(0.5), g.d(1.0));
    let scale = g.op("Div", &[&old, &new]);
    let filter_scale = g.op("Max", &[&scale, &one]);
    let support = g.d(LANCZOS_SUPPORT);
    let support = g.op("Mul", &[&support, &filter_scale]);
    let at = g.op("Add", &[&i, &half]);
    let centre = g.op("Mul", &[&at, &scale]);
    let low = g.op("Sub", &[&centre, &support]);
    let low = g.op("Add", &[&low, &half]);
    let low = g.op("Floor", &[&low]);
    let zero = g.d(0.0);
    let low = g.op("Max", &[&low, &zero]);
    let high = g.op("Add", &[&centre, &support]);
    let high = g.op("Add", &[&high, &half]);
    let high = g.op("Floor", &[&high]);
    let high = g.op("Min", &[&high, &old]);
    let from_low = g.op("GreaterOrEqual", &[&j, &low]);
    let below_high = g.op("Less", &[&j, &high]);
    let inside = g.op("And", &[&from_low, &below_high]);
    let offset = g.op("Sub", &[&j, &centre]);
    let offset = g.op("Add", &[&offset, &half]);
    // Times the reciprocal, as Pillow computes it.
    let reciprocal = g.op("Div", &[&one, &filter_scale]);
    let t = g.op("Mul", &[&offset, &reciprocal]);
    let kernel = lanczos_kernel(g, &t);
    let weight = g.op("Where", &[&inside, &kernel, &zero]);
    let axis = g.b.vec_i64(&[1]);
    let total = g.op_with(
        "ReduceSum",
        &[&weight, &axis],
        &[("keepdims", Attr::Int(1))],
    );
    let empty = g.op("Equal", &[&total, &zero]);
    let divisor = g.op("Where", &[&empty, &one, &total]);
    let normal = g.op("Div", &[&weight, &divisor]);
    let unit = g.d(f64::from(1 << PRECISION_BITS));
    let fixed = g.op("Mul", &[&normal, &unit]);
    // Half away from zero, then toward zero: C's `(int)(w + 0.5)` for a
    // positive weight and `(int)(w - 0.5)` for a negative one.
    let sign = g.op("Sign", &[&fixed]);
    let nudge = g.op("Mul", &[&sign, &half]);
    let nudged = g.op("Add", &[&fixed, &nudge]);
    let magnitude = g.op("Abs", &[&nudged]);
    let magnitude = g.op("Floor", &[&magnitude]);
    let fixed = g.op("Mul", &[&sign, &magnitude]);
    g.cast(&fixed, DataType::INT32)
}

/// `sinc(t) sinc(t / 3)` on `[-3, 3)`, 0 outside (`sinc(0) = 1`).
fn lanczos_kernel(g: &mut PolicyGraph<'_>, t: &str) -> String {
    let sinc = |g: &mut PolicyGraph<'_>, x: &str| {
        let pi = g.d(std::f64::consts::PI);
        let angle = g.op("Mul", &[x, &pi]);
        let sine = g.op("Sin", &[&angle]);
        let zero = g.d(0.0);
        let one = g.d(1.0);
        let at_zero = g.op("Equal", &[&angle, &zero]);
        let safe = g.op("Where", &[&at_zero, &one, &angle]);
        let ratio = g.op("Div", &[&sine, &safe]);
        g.op("Where", &[&at_zero, &one, &ratio])
    };
    let support = g.d(LANCZOS_SUPPORT);
    let stretched = g.op("Div", &[t, &support]);
    let near = sinc(g, t);
    let far = sinc(g, &stretched);
    let value = g.op("Mul", &[&near, &far]);
    let (low, high) = (g.d(-LANCZOS_SUPPORT), g.d(LANCZOS_SUPPORT));
    let from_low = g.op("GreaterOrEqual", &[t, &low]);
    let below_high = g.op("Less", &[t, &high]);
    let inside = g.op("And", &[&from_low, &below_high]);
    let zero = g.d(0.0);
    g.op("Where", &[&inside, &value, &zero])
}

/// Pillow's `clip8` of an int32 fixed-point sum: `(sum + 2^21) >> 22`
/// clipped to 0..255. Division truncates toward zero where floor would
/// not, but only below 0, which clips to 0 either way.
fn fixed_point_round(g: &mut PolicyGraph<'_>, sum: &str) -> String {
    let half = g.b.scalar_i32(1 << (PRECISION_BITS - 1));
    let unit = g.b.scalar_i32(1 << PRECISION_BITS);
    let rounded = g.op("Add", &[sum, &half]);
    let shifted = g.op("Div", &[&rounded, &unit]);
    let (low, high) = (g.b.scalar_i32(0), g.b.scalar_i32(255));
    g.op("Clip", &[&shifted, &low, &high])
}
