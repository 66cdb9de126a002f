//! `er_sde`: ComfyUI's Extended Reverse-Time SDE solver (ER-SDE-Solver-3,
//! Cui et al. 2023) as its KSampler runs it: the default noise scaler
//! `phi(x) = x (e^(x^0.3) + 10)`, up to three stages, the integrals over
//! 200 points, fresh seeded noise. Its `lambda` is `sigma / alpha` (see
//! `Step::exploded`: sigma itself on epsilon models, where `alpha` is 1;
//! on flow models from the run's first sigma moved below 1 by
//! `solver_sigmas`); below, `s`, `s'`, `s_1`, `s_2` are those lambdas, and
//! every term but `x`'s is scaled by `alpha'` (`x`'s by `alpha' /
//! alpha`):
//! - stage 1: `x' = r x + (1 - r) D` with `r = phi(s') / phi(s)`;
//! - stage 2 (from the second step): `+ (dt + S phi(s')) D_d`, with
//!   `dt = s' - s`, `D_d = (D - D_old) / (s - s_1)` and `S` the sum of
//!   `1 / phi` over the points `s' + k (s - s') / 200`, times the spacing;
//! - stage 3 (from the third): `+ (dt^2 / 2 + S_u phi(s')) D_u`, with
//!   `D_u = (D_d - D_d_old) / ((s - s_2) / 2)` and `S_u` the sum of
//!   `(point - s) / phi(point)`, times the spacing;
//! - noise `sqrt(max(s'^2 - s^2 r^2, 0))`; `D` on a step to 0.
//!
//! The memory cells carry `D` (`previous`) and `D_d` (`previous_2`).

use super::SynthError;
use super::graph::PolicyGraph;
use super::steps::{Step, combine, fresh_noise};
use wfstudio_onnx::builder::Attr;

/// Points of the stage integrals (ComfyUI's `num_integration_points`).
const POINTS: f64 = 200.0;

/// The default noise scaler `phi(x) = x (e^(x^0.3) + 10)`.
fn scaler(g: &mut PolicyGraph<'_>, x: &str) -> String {
    let power = g.d(0.3);
    let raised = g.op("Pow", &[x, &power]);
    let grown = g.op("Exp", &[&raised]);
    let ten = g.d(10.0);
    let factor = g.op("Add", &[&grown, &ten]);
    g.op("Mul", &[x, &factor])
}

/// The sum over the rows' integration points of `f(points)` (shape
/// `[batch, 200]`), times the spacing `h`.
fn integral(g: &mut PolicyGraph<'_>, values: &str, h: &str) -> String {
    let axes = g.b.vec_i64(&[1]);
    let sum = g.op_with("ReduceSum", &[values, &axes], &[("keepdims", Attr::Int(0))]);
    g.op("Mul", &[&sum, h])
}

/// Builds the step (see [`Step`]); returns the next sample.
pub fn step(g: &mut PolicyGraph<'_>, st: &Step<'_>) -> Result<String, SynthError> {
    let (x, d, step) = (st.x, st.d, st.step);
    let iteration = g.input("iteration")?;
    let old = g.input("previous")?;
    let old_d = g.input("previous_2")?;
    let sigmas = [0, -1, -2].map(|offset| st.sigma_at(g, offset));
    let [s, s1, s2] = sigmas.each_ref().map(|sigma| st.exploded(g, sigma));
    let (sigma_next, last) = st.next_sigma(g);
    let next = st.exploded(g, &sigma_next);
    let (carry, alpha_next) = st.signal_ratio(g, &sigmas[0], &sigma_next);
    let denoised = st.denoised(g, d);
    let (zero, one, half) = (g.d(0.0), g.d(1.0), g.d(0.5));
    // Stage 1. (A step to 0 returns D; its guards keep the rest finite.)
    let next_safe = g.nonzero(&next);
    let phi_next = scaler(g, &next_safe);
    let phi_s = scaler(g, &s);
    let phi_s = g.nonzero(&phi_s);
    let r = g.op("Div", &[&phi_next, &phi_s]);
    let pull = g.op("Sub", &[&one, &r]);
    // The integration points s' + k h, k = 0..199, h = (s - s') / 200.
    let dt = g.op("Sub", &[&next, &s]);
    let points = g.d(POINTS);
    let width = g.op("Neg", &[&dt]);
    let h = g.op("Div", &[&width, &points]);
    let k = g.op("Range", &[&zero, &points, &one]);
    let column = g.b.vec_i64(&[-1, 1]);
    let from = g.op("Reshape", &[&next_safe, &column]);
    let spacing = g.op("Reshape", &[&h, &column]);
    let offsets = g.op("Mul", &[&spacing, &k]);
    let at = g.op("Add", &[&from, &offsets]);
    let phi_at = scaler(g, &at);
    let inverse = g.op("Div", &[&one, &phi_at]);
    let big_s = integral(g, &inverse, &h);
    let s_column = g.op("Reshape", &[&s, &column]);
    let past = g.op("Sub", &[&at, &s_column]);
    let ratio = g.op("Div", &[&past, &phi_at]);
    let big_s_u = integral(g, &ratio, &h);
    // Stage 2: D_d = (D - D_old) / (s - s_1), weighed dt + S phi(s').
    let gap_1 = g.op("Sub", &[&s, &s1]);
    let gap_1 = g.nonzero(&gap_1);
    let inverse_gap_1 = g.op("Div", &[&one, &gap_1]);
    let minus_inverse_gap_1 = g.op("Neg", &[&inverse_gap_1]);
    let denoised_d = combine(
        g,
        &[
            (inverse_gap_1, denoised.clone()),
            (minus_inverse_gap_1, old.clone()),
        ],
    );
    let scaled = g.op("Mul", &[&big_s, &phi_next]);
    let w_2 = g.op("Add", &[&dt, &scaled]);
    // Stage 3: D_u = (D_d - D_d_old) / ((s - s_2) / 2), weighed
    // dt^2 / 2 + S_u phi(s').
    let gap_2 = g.op("Sub", &[&s, &s2]);
    let gap_2 = g.op("Mul", &[&gap_2, &half]);
    let gap_2 = g.nonzero(&gap_2);
    let dt2 = g.op("Mul", &[&dt, &dt]);
    let dt2 = g.op("Mul", &[&dt2, &half]);
    let scaled_u = g.op("Mul", &[&big_s_u, &phi_next]);
    let w_3 = g.op("Add", &[&dt2, &scaled_u]);
    let w_3 = g.op("Div", &[&w_3, &gap_2]);
    let (one_i, two_i) = (g.i(1), g.i(2));
    let second = g.op("GreaterOrEqual", &[&iteration, &one_i]);
    let third = g.op("GreaterOrEqual", &[&iteration, &two_i]);
    let w_2 = g.op("Where", &[&second, &w_2, &zero]);
    let w_3 = g.op("Where", &[&third, &w_3, &zero]);
    let w_d = g.op("Add", &[&w_2, &w_3]);
    let w_old_d = g.op("Neg", &[&w_3]);
    // Noise: sqrt(max(s'^2 - s^2 r^2, 0)).
    let next2 = g.op("Mul", &[&next, &next]);
    let kept = g.op("Mul", &[&s, &r]);
    let kept2 = g.op("Mul", &[&kept, &kept]);
    let spread = g.op("Sub", &[&next2, &kept2]);
    let spread = g.op("Max", &[&spread, &zero]);
    let w_noise = g.op("Sqrt", &[&spread]);
    let noise = fresh_noise(g, x, step)?;
    let kept = g.op("Mul", &[&r, &carry]);
    let [pull, w_d, w_old_d, w_noise] =
        [pull, w_d, w_old_d, w_noise].map(|w| g.op("Mul", &[&w, &alpha_next]));
    let stepped = combine(
        g,
        &[
            (kept, x.to_string()),
            (pull, denoised.clone()),
            (w_d, denoised_d.clone()),
            (w_old_d, old_d),
            (w_noise, noise),
        ],
    );
    g.output(&denoised, "denoised")?;
    g.output(&denoised_d, "denoised_1")?;
    Ok(st.denoised_at_zero(g, &last, &denoised, &stepped))
}
