//! ComfyUI's per-picture operations on 0..1 pixels `[batch, 3, h, w]`,
//! run after a picture's resize (the `image_scale` family's contract
//! parameter `then`, names joined by commas, applied in order):
//! - `invert`: `ImageInvert`, `1 - x`;
//! - `canny` (parameters `canny_low_threshold`, `canny_high_threshold`):
//!   ComfyUI's `Canny` node, which is kornia's `canny` (5x5 Gaussian of
//!   sigma 1 and 3x3 Sobel) with its edges (0 or 1) on every channel;
//! - `marigold_depth`, `marigold_normals`, `marigold_albedo`:
//!   `MarigoldV2PostProcess` (see `marigold`).
//!
//! Kornia's steps, in float32 as it computes them:
//! 1. grey `0.299 r + 0.587 g + 0.114 b`;
//! 2. the Gaussian blur, separable (the row pass first), each pass over
//!    the picture padded by reflection (the edge itself not repeated),
//!    kernel `exp(-x² / 2)` for `x` in -2..=2, divided by its sum;
//! 3. the Sobel gradients (`[-1 0 1; -2 0 2; -1 0 1]` and its transpose,
//!    correlated, not flipped) over the picture padded by repeating the
//!    edge; magnitude `sqrt(gx² + gy² + 1e-6)`;
//! 4. non-maximum suppression: the direction `atan2(gy, gx)` rounded to a
//!    whole 45° sector `k` (half to even); the pixel is kept where its
//!    magnitude exceeds both neighbours in sectors `k mod 8` and
//!    `(k + 4) mod 8` (neighbour 0 to the right, then clockwise: below
//!    right, below, ... above right; outside the picture a neighbour is 0);
//! 5. weak (`> low`) and strong (`> high`) edges, then hysteresis: a weak
//!    edge with a strong one among its 8 neighbours becomes strong,
//!    repeated until nothing changes (an ONNX `Loop`); the strong edges
//!    are the result.

use super::SynthError;
use super::graph::PolicyGraph;
use serde_json::Value;
use std::f32::consts::PI;
use wfstudio_onnx::builder::{Attr, Dim, GraphBuilder};
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// `image` through the operations contract parameter `then` names, in
/// order (none where it is absent).
pub fn then(g: &mut PolicyGraph<'_>, image: String) -> Result<String, SynthError> {
    let Some(then) = g.parameter("then") else {
        return Ok(image);
    };
    let then = then
        .as_str()
        .ok_or_else(|| g.error("its contract parameter `then` is not text"))?;
    let mut out = image;
    for op in then.split(',') {
        out = match op {
            "invert" => {
                let one = g.f(1.0);
                g.op("Sub", &[&one, &out])
            }
            "canny" => {
                let threshold = |key: &str| {
                    g.parameter(key)
                        .and_then(Value::as_f64)
                        .filter(|t| *t > 0.0 && *t < 1.0)
                        .ok_or_else(|| g.error(format!("`{key}` is not between 0 and 1")))
                };
                let low = threshold("canny_low_threshold")?;
                let high = threshold("canny_high_threshold")?;
                if low > high {
                    return Err(g.error("canny's low threshold is above its high threshold"));
                }
                canny(g, &out, (low as f32, high as f32))
            }
            "marigold_depth" => super::marigold::depth(g, &out),
            "marigold_normals" => super::marigold::normals(g, &out),
            "marigold_albedo" => super::marigold::albedo(g, &out),
            other => return Err(g.error(format!("`then` names an unknown operation `{other}`"))),
        };
    }
    Ok(out)
}

/// Kornia's Canny edges of 0..1 pixels `x`, on all three channels.
fn canny(g: &mut PolicyGraph<'_>, x: &str, (low, high): (f32, f32)) -> String {
    let grey = grey(g, x);
    let blurred = gaussian(g, &grey);
    let (magnitude, sector) = gradients(g, &blurred);
    let kept = suppressed(g, &magnitude, &sector);
    let (low, high) = (g.b.scalar_f32(low), g.b.scalar_f32(high));
    let half = g.f(0.5);
    let weak = g.op("Greater", &[&kept, &low]);
    let strong = g.op("Greater", &[&kept, &high]);
    let (weak, strong) = (
        g.cast(&weak, DataType::FLOAT),
        g.cast(&strong, DataType::FLOAT),
    );
    let (weak, strong) = (g.op("Mul", &[&weak, &half]), g.op("Mul", &[&strong, &half]));
    let edges = g.op("Add", &[&weak, &strong]);
    let edges = hysteresis(g, &edges);
    g.op_with(
        "Concat",
        &[&edges, &edges, &edges],
        &[("axis", Attr::Int(1))],
    )
}

/// `0.299 r + 0.587 g + 0.114 b`, `[batch, 1, h, w]`.
fn grey(g: &mut PolicyGraph<'_>, x: &str) -> String {
    let names = g.b.op_outputs("Split", &[x], 3, &split(3));
    let mut sum = String::new();
    for (channel, weight) in names.iter().zip([0.299f32, 0.587, 0.114]) {
        let w = g.b.scalar_f32(weight);
        let part = g.op("Mul", &[channel, &w]);
        sum = match sum.is_empty() {
            true => part,
            false => g.op("Add", &[&sum, &part]),
        };
    }
    sum
}

/// The 5x5 Gaussian of sigma 1, rows then columns, reflection-padded.
fn gaussian(g: &mut PolicyGraph<'_>, x: &str) -> String {
    let raw: Vec<f32> = (-2..=2)
        .map(|k: i32| (-((k * k) as f32) / 2.0).exp())
        .collect();
    let sum: f32 = raw.iter().sum();
    let kernel: Vec<f32> = raw.iter().map(|v| v / sum).collect();
    let mut out = x.to_string();
    for (pads, dims) in [
        ([0, 0, 0, 2, 0, 0, 0, 2], [1, 1, 1, 5]),
        ([0, 0, 2, 0, 0, 0, 2, 0], [1, 1, 5, 1]),
    ] {
        let pads = g.b.vec_i64(&pads);
        let padded = g.op_with(
            "Pad",
            &[&out, &pads],
            &[("mode", Attr::Str("reflect".into()))],
        );
        let weight = g.b.f32s(&kernel, &dims);
        out = g.op("Conv", &[&padded, &weight]);
    }
    out
}

/// The Sobel gradients' magnitude and their direction's 45° sector
/// (int64, `[batch, 1, h, w]`), over the edge-padded picture.
fn gradients(g: &mut PolicyGraph<'_>, x: &str) -> (String, String) {
    let pads = g.b.vec_i64(&[0, 0, 1, 1, 0, 0, 1, 1]);
    let padded = g.op_with("Pad", &[x, &pads], &[("mode", Attr::Str("edge".into()))]);
    let sobel = [
        -1.0, 0.0, 1.0, -2.0, 0.0, 2.0, -1.0, 0.0, 1.0, -1.0, -2.0, -1.0, 0.0, 0.0, 0.0, 1.0, 2.0,
        1.0,
    ];
    let weight = g.b.f32s(&sobel, &[2, 1, 3, 3]);
    let both = g.op("Conv", &[&padded, &weight]);
    let split = g.b.op_outputs("Split", &[&both], 2, &split(2));
    let (gx, gy) = (&split[0], &split[1]);
    let xx = g.op("Mul", &[gx, gx]);
    let yy = g.op("Mul", &[gy, gy]);
    let sum = g.op("Add", &[&xx, &yy]);
    let eps = g.f(1e-6);
    let sum = g.op("Add", &[&sum, &eps]);
    let magnitude = g.op("Sqrt", &[&sum]);
    let angle = atan2(g, gy, gx);
    let per_sector = g.b.scalar_f32(4.0 / PI);
    let scaled = g.op("Mul", &[&angle, &per_sector]);
    let rounded = g.op("Round", &[&scaled]);
    let sector = g.cast(&rounded, DataType::INT64);
    (magnitude, sector)
}

/// `atan2(y, x)` from `Atan` by quadrant (0 where both are 0).
fn atan2(g: &mut PolicyGraph<'_>, y: &str, x: &str) -> String {
    let zero = g.f(0.0);
    let (pi, half_pi) = (g.b.scalar_f32(PI), g.b.scalar_f32(PI / 2.0));
    let minus_half_pi = g.b.scalar_f32(-PI / 2.0);
    let x_positive = g.op("Greater", &[x, &zero]);
    let x_negative = g.op("Less", &[x, &zero]);
    let y_negative = g.op("Less", &[y, &zero]);
    let y_positive = g.op("Greater", &[y, &zero]);
    let one = g.f(1.0);
    // A zero x divides by 1 instead: that quadrant is chosen below.
    let x_zero = g.op("Equal", &[x, &zero]);
    let divisor = g.op("Where", &[&x_zero, &one, x]);
    let ratio = g.op("Div", &[y, &divisor]);
    let a = g.op("Atan", &[&ratio]);
    let up = g.op("Add", &[&a, &pi]);
    let down = g.op("Sub", &[&a, &pi]);
    let left = g.op("Where", &[&y_negative, &down, &up]);
    let vertical = g.op("Where", &[&y_negative, &minus_half_pi, &zero]);
    let vertical = g.op("Where", &[&y_positive, &half_pi, &vertical]);
    let not_right = g.op("Where", &[&x_negative, &left, &vertical]);
    g.op("Where", &[&x_positive, &a, &not_right])
}

/// `magnitude` where it exceeds both neighbours across its direction's
/// sector, else 0.
fn suppressed(g: &mut PolicyGraph<'_>, magnitude: &str, sector: &str) -> String {
    // Neighbour (row, column) offsets of sectors 0..8.
    let offsets = [
        (0, 1),
        (1, 1),
        (1, 0),
        (1, -1),
        (0, -1),
        (-1, -1),
        (-1, 0),
        (-1, 1),
    ];
    let mut kernels = vec![0.0f32; 8 * 9];
    for (k, (dr, dc)) in offsets.iter().enumerate() {
        kernels[k * 9 + 4] = 1.0;
        kernels[k * 9 + ((1 + dr) * 3 + (1 + dc)) as usize] = -1.0;
    }
    let weight = g.b.f32s(&kernels, &[8, 1, 3, 3]);
    let differences = g.op_with(
        "Conv",
        &[magnitude, &weight],
        &[("pads", Attr::Ints(vec![1, 1, 1, 1]))],
    );
    let (eight, four) = (g.i(8), g.i(4));
    let positive = g.op("Mod", &[sector, &eight]);
    let opposite = g.op("Add", &[sector, &four]);
    let negative = g.op("Mod", &[&opposite, &eight]);
    let axis = [("axis", Attr::Int(1))];
    let ahead = g.op_with("GatherElements", &[&differences, &positive], &axis);
    let behind = g.op_with("GatherElements", &[&differences, &negative], &axis);
    let least = g.op("Min", &[&ahead, &behind]);
    let zero = g.f(0.0);
    let is_max = g.op("Greater", &[&least, &zero]);
    let is_max = g.cast(&is_max, DataType::FLOAT);
    g.op("Mul", &[magnitude, &is_max])
}

/// Kornia's hysteresis over `edges` (0, 0.5 weak, 1 strong): weak edges
/// beside strong ones made strong until nothing changes; the strong
/// edges (0 or 1).
fn hysteresis(g: &mut PolicyGraph<'_>, edges: &str) -> String {
    let rank4: Vec<Dim> = ["b", "c", "h", "w"]
        .iter()
        .map(|d| Dim::Named(format!("hysteresis_{d}")))
        .collect();
    let body = g.b.subgraph("hysteresis", |b| {
        b.input("hysteresis_iteration", DataType::INT64, &[]);
        b.input("hysteresis_going", DataType::BOOL, &[]);
        let edges = b.input("hysteresis_edges", DataType::FLOAT, &rank4);
        let next = hysteresis_step(b, &edges);
        let difference = b.op("Sub", &[&next, &edges]);
        let difference = b.op("Abs", &[&difference]);
        let largest = b.op_with("ReduceMax", &[&difference], &[("keepdims", Attr::Int(0))]);
        let zero = b.scalar_f32(0.0);
        let changed = b.op("Greater", &[&largest, &zero]);
        b.output(&changed, "hysteresis_changed", DataType::BOOL, &[]);
        b.output(&next, "hysteresis_next", DataType::FLOAT, &rank4);
    });
    let going = g.b.scalar_bool(true);
    let settled = g.op_with(
        "Loop",
        &["", &going, edges],
        &[("body", Attr::Graph(Box::new(body)))],
    );
    let one = g.f(1.0);
    let strong = g.op("Equal", &[&settled, &one]);
    g.cast(&strong, DataType::FLOAT)
}

/// One hysteresis pass: a weak edge with a strong one among its 8
/// neighbours becomes strong.
fn hysteresis_step(b: &mut GraphBuilder, edges: &str) -> String {
    let (half, one, zero) = (b.scalar_f32(0.5), b.scalar_f32(1.0), b.scalar_f32(0.0));
    let weak = b.op("Equal", &[edges, &half]);
    let weak = b.cast(&weak, DataType::FLOAT);
    let strong = b.op("Equal", &[edges, &one]);
    let strong = b.cast(&strong, DataType::FLOAT);
    // The largest strong value of the 3x3 window: the pixel itself counts
    // only where it is strong already, so not weak.
    let beside = b.op_with(
        "MaxPool",
        &[&strong],
        &[
            ("kernel_shape", Attr::Ints(vec![3, 3])),
            ("pads", Attr::Ints(vec![1, 1, 1, 1])),
        ],
    );
    let promoted = b.op("Mul", &[&beside, &weak]);
    let now_strong = b.op("Add", &[&promoted, &strong]);
    let none = b.op("Equal", &[&now_strong, &zero]);
    let none = b.cast(&none, DataType::FLOAT);
    let still_weak = b.op("Mul", &[&none, &weak]);
    let still_weak = b.op("Mul", &[&still_weak, &half]);
    b.op("Add", &[&now_strong, &still_weak])
}

/// `Split`'s attributes for `n` equal parts along the channels.
fn split(n: i64) -> [(&'static str, Attr); 2] {
    [("axis", Attr::Int(1)), ("num_outputs", Attr::Int(n))]
}
