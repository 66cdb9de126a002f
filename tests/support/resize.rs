//! PyTorch's `interpolate` (`align_corners=False`, no antialiasing), the
//! resize ComfyUI's `common_upscale` makes, written from PyTorch's index
//! rules as an independent reference for the synthesized resizes.

/// One `[c, h, w]` tensor resized to `[c, oh, ow]` by `method`:
/// `nearest-exact` takes source index `floor((i + 0.5) * in / out)`;
/// `bilinear` blends the two samples around `max((i + 0.5) * in / out -
/// 0.5, 0)`; `bicubic` weighs the four around `(i + 0.5) * in / out - 0.5`
/// by the cubic convolution with `a = -0.75`, repeating edge samples.
pub fn torch_resize(
    x: &[f32],
    c: usize,
    (h, w): (usize, usize),
    (oh, ow): (usize, usize),
    method: &str,
) -> Vec<f32> {
    let source = |i: usize, from: usize, to: usize| (i as f64 + 0.5) * from as f64 / to as f64;
    let mut out = Vec::with_capacity(c * oh * ow);
    for ch in 0..c {
        let at = |y: i64, x_: i64| {
            let (y, x_) = (y.clamp(0, h as i64 - 1), x_.clamp(0, w as i64 - 1));
            x[ch * h * w + y as usize * w + x_ as usize] as f64
        };
        for y in 0..oh {
            for x_ in 0..ow {
                let v = match method {
                    "nearest-exact" => at(
                        source(y, h, oh).floor() as i64,
                        source(x_, w, ow).floor() as i64,
                    ),
                    "bilinear" => {
                        let fy = (source(y, h, oh) - 0.5).max(0.0);
                        let fx = (source(x_, w, ow) - 0.5).max(0.0);
                        let (y0, x0) = (fy.floor() as i64, fx.floor() as i64);
                        let (ly, lx) = (fy - y0 as f64, fx - x0 as f64);
                        (1.0 - ly) * ((1.0 - lx) * at(y0, x0) + lx * at(y0, x0 + 1))
                            + ly * ((1.0 - lx) * at(y0 + 1, x0) + lx * at(y0 + 1, x0 + 1))
                    }
                    "bicubic" => {
                        let fy = source(y, h, oh) - 0.5;
                        let fx = source(x_, w, ow) - 0.5;
                        let (y0, x0) = (fy.floor() as i64, fx.floor() as i64);
                        let (wy, wx) =
                            (cubic_weights(fy - y0 as f64), cubic_weights(fx - x0 as f64));
                        let mut v = 0.0;
                        for (i, wy) in wy.iter().enumerate() {
                            for (j, wx) in wx.iter().enumerate() {
                                v += wy * wx * at(y0 - 1 + i as i64, x0 - 1 + j as i64);
                            }
                        }
                        v
                    }
                    other => panic!("no reference for method {other}"),
                };
                out.push(v as f32);
            }
        }
    }
    out
}

/// The weights of the samples at -1, 0, 1 and 2 from a point `t` past
/// sample 0 (PyTorch's `get_cubic_upsample_coefficients`, `a = -0.75`).
fn cubic_weights(t: f64) -> [f64; 4] {
    const A: f64 = -0.75;
    let near = |x: f64| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let far = |x: f64| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}
