//! `latent_composite`: ComfyUI's `LatentComposite`, one paste after
//! another on the base latent `to`. Each paste crops `from_<k>` to what
//! fits, pads it to the base's extents at its offset, and blends:
//! `placed · mask + latent · (1 − mask)`. The mask over the pasted cells is
//! a constant built here from the contract parameters as ComfyUI's node
//! builds it (padded with 0 to the base at run time): 1, and with a
//! feather of `f` cells each edge that does not touch the base's border
//! fades over `f` rows or columns,
//! the factors `(t + 1) / f` multiplied in as the node's loop does
//! (including Python's wrap-around of negative slice bounds), in float32.
//! Where the mask is 1 the sum is the pasted value exactly, as the node's
//! assignment gives.

use super::SynthError;
use super::graph::PolicyGraph;
use serde_json::Value;

/// The largest latent side, in cells, a composite takes: ComfyUI's
/// largest picture side (16384 pixels) over the latent scale 8. Its masks
/// are constants of the paste's size, so larger sides are refused before
/// anything is allocated.
pub const MAX_LATENT_SIDE: i64 = 16384 / 8;

/// One paste, in latent cells.
struct Paste {
    x: i64,
    y: i64,
    feather: i64,
    height: i64,
    width: i64,
}

/// Builds the composite of `to` and every `from_<k>`.
pub fn latent_composite(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let (height, width) = (g.positive_integer("height")?, g.positive_integer("width")?);
    if height > MAX_LATENT_SIDE || width > MAX_LATENT_SIDE {
        return Err(g.error(format!(
            "its base latent of {height}x{width} cells is past the {MAX_LATENT_SIDE} cells a side a composite takes"
        )));
    }
    let pastes = g.positive_integer("pastes")?;
    let mut out = g.input("to")?;
    for k in 0..pastes {
        let field = |key: &str| {
            let key = format!("{key}_{}", k + 1);
            g.parameter(&key)
                .and_then(Value::as_i64)
                .filter(|v| (0..=MAX_LATENT_SIDE).contains(v))
                .ok_or_else(|| {
                    g.error(format!(
                        "its contract parameter `{key}` is not a whole number of cells from 0 to {MAX_LATENT_SIDE}"
                    ))
                })
        };
        let p = Paste {
            x: field("x")?,
            y: field("y")?,
            feather: field("feather")?,
            height: field("height")?,
            width: field("width")?,
        };
        if p.x >= width || p.y >= height || p.height == 0 || p.width == 0 {
            return Err(g.error(format!(
                "paste {} does not land on the {height}x{width} base",
                k + 1
            )));
        }
        // What of the pasted latent fits on the base.
        let (h, w) = (p.height.min(height - p.y), p.width.min(width - p.x));
        let from = g.input(&format!("from_{}", k + 1))?;
        let starts = g.b.vec_i64(&[0, 0]);
        let ends = g.b.vec_i64(&[h, w]);
        let axes = g.b.vec_i64(&[2, 3]);
        let cropped = g.op("Slice", &[&from, &starts, &ends, &axes]);
        let pads =
            g.b.vec_i64(&[0, 0, p.y, p.x, 0, 0, height - p.y - h, width - p.x - w]);
        let placed = g.op("Pad", &[&cropped, &pads]);
        // The mask over the pasted cells, padded with 0 to the base; the
        // kept share `1 - mask` in float32, as the node takes it.
        let region = feather(&p, (h, w), (height, width));
        let region = g.b.f32s(&region, &[1, 1, h, w]);
        let mask = g.op("Pad", &[&region, &pads]);
        let one = g.f(1.0);
        let keep = g.op("Sub", &[&one, &mask]);
        let pasted = g.op("Mul", &[&placed, &mask]);
        let kept = g.op("Mul", &[&out, &keep]);
        out = g.op("Add", &[&pasted, &kept]);
    }
    g.output(&out, "latent")
}

/// The node's feathered mask over the cropped paste, `[h, w]`.
fn feather(p: &Paste, (h, w): (i64, i64), (height, width): (i64, i64)) -> Vec<f32> {
    let mut mask = vec![1f32; (h * w) as usize];
    let at = |i: i64, j: i64| (i * w + j) as usize;
    for t in 0..p.feather {
        // Python's float (1.0 / feather) * (t + 1), taken to float32 by
        // the in-place product.
        let factor = ((1.0 / p.feather as f64) * (t + 1) as f64) as f32;
        // The rows (top, then bottom) and columns (left, then right) the
        // node scales at this t, in its order.
        let mut rows = Vec::new();
        let mut columns = Vec::new();
        if p.y != 0 {
            rows.extend(slice(t, t + 1, h));
        }
        if p.y + h < height {
            rows.extend(slice(h - 1 - t, h - t, h));
        }
        if p.x != 0 {
            columns.extend(slice(t, t + 1, w));
        }
        if p.x + w < width {
            columns.extend(slice(w - 1 - t, w - t, w));
        }
        for i in rows {
            (0..w).for_each(|j| mask[at(i, j)] *= factor);
        }
        for j in columns {
            (0..h).for_each(|i| mask[at(i, j)] *= factor);
        }
    }
    mask
}

/// The indices Python's `a[start:end]` selects of a length-`len` axis
/// (negative bounds count from the end; bounds are clamped).
fn slice(start: i64, end: i64, len: i64) -> std::ops::Range<i64> {
    let bound = |b: i64| if b < 0 { (b + len).max(0) } else { b.min(len) };
    let (start, end) = (bound(start), bound(end));
    start..end.max(start)
}

#[cfg(test)]
mod tests {
    use super::slice;

    #[test]
    fn slices_follow_python() {
        assert_eq!(slice(1, 2, 5), 1..2);
        assert_eq!(slice(-1, 0, 5), 4..4);
        assert_eq!(slice(-3, -2, 5), 2..3);
        assert_eq!(slice(7, 8, 5), 5..5);
        assert_eq!(slice(-9, -8, 5), 0..0);
    }
}
