//! `latent_composite`: ComfyUI's `LatentComposite`, one paste after
//! another on the base latent `to`. Each paste crops `from_<k>` to what
//! fits, pads it to the base's extents at its offset, and blends:
//! `placed · mask + latent · (1 − mask)`. The mask is a constant built here
//! from the contract parameters as ComfyUI's node builds it: 1 over the
//! pasted cells and 0 elsewhere, and with a feather of `f` cells each edge
//! that does not touch the base's border fades over `f` rows or columns,
//! the factors `(t + 1) / f` multiplied in as the node's loop does
//! (including Python's wrap-around of negative slice bounds), in float32.
//! Where the mask is 1 the sum is the pasted value exactly, as the node's
//! assignment gives.

use super::SynthError;
use super::graph::PolicyGraph;
use serde_json::Value;

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
    let pastes = g.positive_integer("pastes")?;
    let mut out = g.input("to")?;
    for k in 0..pastes {
        let field = |key: &str| {
            let key = format!("{key}_{}", k + 1);
            g.parameter(&key)
                .and_then(Value::as_i64)
                .filter(|v| (0..=1 << 20).contains(v))
                .ok_or_else(|| {
                    g.error(format!(
                        "its contract parameter `{key}` is not a whole number of at least 0"
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
        let (mask, keep) = masks(&p, (h, w), (height, width));
        let dims = [1, 1, height, width];
        let mask = g.b.f32s(&mask, &dims);
        let keep = g.b.f32s(&keep, &dims);
        let pasted = g.op("Mul", &[&placed, &mask]);
        let kept = g.op("Mul", &[&out, &keep]);
        out = g.op("Add", &[&pasted, &kept]);
    }
    g.output(&out, "latent")
}

/// The blend masks over the base: the pasted share and the kept share
/// (`1 − share`), row-major `[height, width]`.
fn masks(p: &Paste, (h, w): (i64, i64), (height, width): (i64, i64)) -> (Vec<f32>, Vec<f32>) {
    let feathered = feather(p, (h, w), (height, width));
    let size = (height * width) as usize;
    let (mut mask, mut keep) = (vec![0f32; size], vec![1f32; size]);
    for i in 0..h {
        for j in 0..w {
            let at = ((p.y + i) * width + p.x + j) as usize;
            let m = feathered[(i * w + j) as usize];
            mask[at] = m;
            keep[at] = 1.0 - m;
        }
    }
    (mask, keep)
}

/// The node's feathered mask over the cropped paste, `[h, w]`.
fn feather(p: &Paste, (h, w): (i64, i64), (height, width): (i64, i64)) -> Vec<f32> {
    let mut mask = vec![1f32; (h * w) as usize];
    for t in 0..p.feather {
        // Python's float (1.0 / feather) * (t + 1), taken to float32 by
        // the in-place product.
        let factor = ((1.0 / p.feather as f64) * (t + 1) as f64) as f32;
        if p.y != 0 {
            for i in slice(t, t + 1, h) {
                (0..w).for_each(|j| mask[(i * w + j) as usize] *= factor);
            }
        }
        if p.y + h < height {
            for i in slice(h - 1 - t, h - t, h) {
                (0..w).for_each(|j| mask[(i * w + j) as usize] *= factor);
            }
        }
        if p.x != 0 {
            for j in slice(t, t + 1, w) {
                (0..h).for_each(|i| mask[(i * w + j) as usize] *= factor);
            }
        }
        if p.x + w < width {
            for j in slice(w - 1 - t, w - t, w) {
                (0..h).for_each(|i| mask[(i * w + j) as usize] *= factor);
            }
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
