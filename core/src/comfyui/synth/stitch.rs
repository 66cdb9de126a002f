//! The `image_stitch` policy: ComfyUI's `ImageStitch` of pictures `image1`
//! and `image2` (`[batch, 3, h, w]` in 0..1, one batch) into `stitched`.
//! Contract parameters: `direction` (`right`, `left`: side by side; `down`,
//! `up`: one over the other; the second picture goes that way from the
//! first), `match_size` (the second resized by Pillow's lanczos to the
//! first's height, or width, its other side `int(side * aspect)` as
//! ComfyUI computes it in float64; else the smaller one padded in the
//! middle to the other's, with the colour's grey, 0 for red, green and
//! blue), `spacing` (even pixels between them) and `colour` (`white`,
//! `black`, `red`, `green`, `blue`: the spacing's).

use super::SynthError;
use super::graph::PolicyGraph;
use serde_json::Value;
use wfstudio_onnx::builder::Attr;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// Builds the stitch.
pub fn image_stitch(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let first = g.input("image1")?;
    let second = g.input("image2")?;
    let direction = g.text("direction")?;
    let horizontal = match direction.as_str() {
        "right" | "left" => true,
        "down" | "up" => false,
        other => {
            return Err(g.error(format!(
                "direction `{other}` is not right, down, left or up"
            )));
        }
    };
    let colour = g.text("colour")?;
    let rgb: [f32; 3] = match colour.as_str() {
        "white" => [1.0; 3],
        "black" => [0.0; 3],
        "red" => [1.0, 0.0, 0.0],
        "green" => [0.0, 1.0, 0.0],
        "blue" => [0.0, 0.0, 1.0],
        other => {
            return Err(g.error(format!(
                "colour `{other}` is not white, black, red, green or blue"
            )));
        }
    };
    let (first, second) = match g.parameter("match_size").and_then(Value::as_bool) {
        Some(true) => {
            let second = matched(g, &first, &second, horizontal);
            (first, second)
        }
        Some(false) => {
            // ComfyUI pads with a grey colour's value, else black.
            let grey = if rgb.iter().all(|c| *c == rgb[0]) {
                rgb[0]
            } else {
                0.0
            };
            padded(g, [&first, &second], horizontal, grey)
        }
        None => return Err(g.error("its contract parameter `match_size` is not a boolean")),
    };
    let mut parts = match direction.as_str() {
        "left" | "up" => vec![second, first],
        _ => vec![first, second],
    };
    let spacing = g
        .parameter("spacing")
        .and_then(Value::as_i64)
        .filter(|s| *s >= 0)
        .ok_or_else(|| {
            g.error("its contract parameter `spacing` is not a whole number of pixels")
        })?;
    if spacing > 0 {
        let strip = strip(g, &parts[0], (spacing, horizontal), rgb);
        parts.insert(1, strip);
    }
    let axis = if horizontal { 3 } else { 2 };
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    let stitched = g.op_with("Concat", &refs, &[("axis", Attr::Int(axis))]);
    g.output(&stitched, "stitched")
}

/// The extent of `x` along `axis`, as an int64 `[1]`.
fn extent(g: &mut PolicyGraph<'_>, x: &str, axis: i64) -> String {
    let attrs = [("start", Attr::Int(axis)), ("end", Attr::Int(axis + 1))];
    g.op_with("Shape", &[x], &attrs)
}

/// The extent of `x` along `axis`, as a float64 `[1]`.
fn wide_extent(g: &mut PolicyGraph<'_>, x: &str, axis: i64) -> String {
    let side = extent(g, x, axis);
    g.cast(&side, DataType::DOUBLE)
}

/// `second` resized by lanczos to `first`'s height (side by side) or
/// width, keeping its aspect: `int(h1 * (w2 / h2))` wide, or
/// `int(w1 / (w2 / h2))` high.
fn matched(g: &mut PolicyGraph<'_>, first: &str, second: &str, horizontal: bool) -> String {
    let (h2, w2) = (wide_extent(g, second, 2), wide_extent(g, second, 3));
    let aspect = g.op("Div", &[&w2, &h2]);
    let (kept, other) = match horizontal {
        true => {
            let h1 = wide_extent(g, first, 2);
            let w = g.op("Mul", &[&h1, &aspect]);
            (h1, w)
        }
        false => {
            let w1 = wide_extent(g, first, 3);
            let h = g.op("Div", &[&w1, &aspect]);
            (w1, h)
        }
    };
    let other = g.op("Floor", &[&other]);
    let [kept, other] = [kept, other].map(|v| g.cast(&v, DataType::INT64));
    let (h, w) = match horizontal {
        true => (kept, other),
        false => (other, kept),
    };
    let side = g.op_with("Concat", &[&h, &w], &[("axis", Attr::Int(0))]);
    super::resample::lanczos(g, second, &side)
}

/// `pictures` padded in the middle to the larger height (side by side) or
/// width with `value`: `(larger - own) // 2` before, the rest after.
fn padded(
    g: &mut PolicyGraph<'_>,
    pictures: [&str; 2],
    horizontal: bool,
    value: f32,
) -> (String, String) {
    let axis = if horizontal { 2 } else { 3 };
    let sides = pictures.map(|p| extent(g, p, axis));
    let larger = g.op("Max", &[&sides[0], &sides[1]]);
    let value = g.f(value.into());
    let two = g.b.vec_i64(&[2]);
    let zero = g.b.vec_i64(&[0]);
    let [first, second] = [0, 1].map(|i| {
        let missing = g.op("Sub", &[&larger, &sides[i]]);
        let before = g.op("Div", &[&missing, &two]);
        let after = g.op("Sub", &[&missing, &before]);
        // NCHW's four begins, then its four ends.
        let z = zero.as_str();
        let pads = match horizontal {
            true => [z, z, &before, z, z, z, &after, z],
            false => [z, z, z, &before, z, z, z, &after],
        };
        let pads = g.op_with("Concat", &pads, &[("axis", Attr::Int(0))]);
        g.op("Pad", &[pictures[i], &pads, &value])
    });
    (first, second)
}

/// The spacing strip beside `like`: `spacing` pixels wide (side by side)
/// or high, its channels `rgb`.
fn strip(
    g: &mut PolicyGraph<'_>,
    like: &str,
    (spacing, horizontal): (i64, bool),
    rgb: [f32; 3],
) -> String {
    let colour = g.b.f32s(&rgb, &[1, 3, 1, 1]);
    let batch = extent(g, like, 0);
    let three = g.b.vec_i64(&[3]);
    let spacing = g.b.vec_i64(&[spacing]);
    let sides = match horizontal {
        true => [extent(g, like, 2), spacing],
        false => [spacing, extent(g, like, 3)],
    };
    let parts = [batch.as_str(), &three, &sides[0], &sides[1]];
    let shape = g.op_with("Concat", &parts, &[("axis", Attr::Int(0))]);
    g.op("Expand", &[&colour, &shape])
}
