//! `outpaint_pad`: ComfyUI's `ImagePadForOutpaint` (contract parameters
//! `left`, `top`, `right`, `bottom`, `feathering`, whole pixels). The
//! picture `[batch, 3, h, w]` is padded with grey 0.5 (`pixels`); the mask
//! `[batch, 1, h + top + bottom, w + left + right]` is 1 over the padding
//! and, inside the picture, `((f - d) / f)^2` where `d < f`, `d` the
//! distance (in pixels, from 0) to the nearest padded side (a side not
//! padded counts as `h` or `w` away), else 0; no feathering where
//! `f = 0` or `2f` is not below both sides.

use super::SynthError;
use super::graph::PolicyGraph;
use wfstudio_onnx::builder::Attr;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// The most pixels a side may gain or fade over.
const MAX_PAD: i64 = 16384;

/// A contract parameter: a whole number of pixels, 0 included.
fn pixels(g: &PolicyGraph<'_>, key: &str) -> Result<i64, SynthError> {
    g.parameter(key)
        .and_then(serde_json::Value::as_i64)
        .filter(|n| (0..=MAX_PAD).contains(n))
        .ok_or_else(|| {
            g.error(format!(
                "`{key}` must be a whole number from 0 to {MAX_PAD}"
            ))
        })
}

/// Builds the policy.
pub(super) fn outpaint_pad(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let [left, top, right, bottom, feathering] =
        ["left", "top", "right", "bottom", "feathering"].map(|k| pixels(g, k));
    let (left, top, right, bottom, f) = (left?, top?, right?, bottom?, feathering?);
    let image = g.input("image")?;
    let pads = g.b.vec_i64(&[0, 0, top, left, 0, 0, bottom, right]);
    let grey = g.f(0.5);
    let padded = g.op("Pad", &[&image, &pads, &grey]);
    g.output(&padded, "pixels")?;
    // The picture's sides, as int64 scalars and float scalars.
    let side = |g: &mut PolicyGraph<'_>, axis: i64| {
        let at = g.op_with(
            "Shape",
            &[&image],
            &[("start", Attr::Int(axis)), ("end", Attr::Int(axis + 1))],
        );
        let axes = g.b.vec_i64(&[0]);
        let n = g.op("Squeeze", &[&at, &axes]);
        let real = g.cast(&n, DataType::FLOAT);
        (n, real)
    };
    let ((h, hf), (w, wf)) = (side(g, 2), side(g, 3));
    // Distances from 0 along each axis: rows `[h, 1]`, columns `[1, w]`.
    let along = |g: &mut PolicyGraph<'_>, n: &str, shape: &[i64]| {
        let (zero, one) = (g.i(0), g.i(1));
        let index = g.op("Range", &[&zero, n, &one]);
        let index = g.cast(&index, DataType::FLOAT);
        let shape = g.b.vec_i64(shape);
        g.op("Reshape", &[&index, &shape])
    };
    let (i, j) = (along(g, &h, &[-1, 1]), along(g, &w, &[1, -1]));
    let to_end = |g: &mut PolicyGraph<'_>, n: &str, x: &str| g.op("Sub", &[n, x]);
    let dt = if top != 0 { i.clone() } else { hf.clone() };
    let db = if bottom != 0 {
        to_end(g, &hf, &i)
    } else {
        hf.clone()
    };
    let dl = if left != 0 { j.clone() } else { wf.clone() };
    let dr = if right != 0 {
        to_end(g, &wf, &j)
    } else {
        wf.clone()
    };
    // Zeros over rows and columns make `d` a whole `[h, w]` where a side
    // is not padded.
    let zero = g.f(0.0);
    let (rows, columns) = (g.op("Mul", &[&i, &zero]), g.op("Mul", &[&j, &zero]));
    let grid = g.op("Add", &[&rows, &columns]);
    let d = g.op("Min", &[&dt, &db, &dl, &dr]);
    let d = g.op("Add", &[&d, &grid]);
    let inside = if f == 0 {
        let zero = g.f(0.0);
        g.op("Mul", &[&d, &zero])
    } else {
        let ff = g.f(f as f64);
        let gap = g.op("Sub", &[&ff, &d]);
        let v = g.op("Div", &[&gap, &ff]);
        let squared = g.op("Mul", &[&v, &v]);
        let near = g.op("Less", &[&d, &ff]);
        let zero = g.f(0.0);
        let faded = g.op("Where", &[&near, &squared, &zero]);
        // Feathering only where twice it is below both sides.
        let twice = g.f(2.0 * f as f64);
        let (fits_h, fits_w) = (g.op("Less", &[&twice, &hf]), g.op("Less", &[&twice, &wf]));
        let fits = g.op("And", &[&fits_h, &fits_w]);
        g.op("Where", &[&fits, &faded, &zero])
    };
    let axes = g.b.vec_i64(&[0, 1]);
    let inside = g.op("Unsqueeze", &[&inside, &axes]);
    let one = g.f(1.0);
    let mask = g.op("Pad", &[&inside, &pads, &one]);
    // One mask for every picture of the batch.
    let batch = g.op_with(
        "Shape",
        &[&image],
        &[("start", Attr::Int(0)), ("end", Attr::Int(1))],
    );
    let rest = g.op_with("Shape", &[&mask], &[("start", Attr::Int(1))]);
    let shape = g.op_with("Concat", &[&batch, &rest], &[("axis", Attr::Int(0))]);
    let mask = g.op("Expand", &[&mask, &shape]);
    g.output(&mask, "mask")
}
