//! `dpmpp_2m_sde` (midpoint, and `_heun`) and `dpmpp_3m_sde`: DPM-Solver++
//! (Lu et al. 2022) multistep SDE samplers with eta 1, as ComfyUI runs them
//! in the model's half log-SNR `lambda` and signal scale `alpha` (see
//! `Step::half_log_snr`: `-ln sigma` and 1 on epsilon models; on flow
//! models the run's first sigma moved below 1 by `solver_sigmas`). With
//! `h = lambda' - lambda`:
//! `x' = (s'/s) e^-h x + alpha' (1 - e^-2h) D` plus `alpha'` times the
//! multistep correction
//! (2M midpoint: `(1 - e^-2h) / (2r) (D - D_1)`; 2M Heun:
//! `(1 - (1 - e^-2h) / 2h) / r (D - D_1)`; 3M: `phi_2 d1 - phi_3 d2` from the
//! last three estimates, 2M on the second step), where `r` is the previous
//! step's `h` over this one's, plus `s' sqrt(1 - e^-2h)` of fresh noise; the
//! last step (`s' = 0`) returns `D`. The `_gpu` variants differ in ComfyUI
//! only in where their Brownian noise is drawn; here every variant takes
//! the seeded noise stream at offset `step + 1`. Coefficients are computed
//! in float64.

use super::SynthError;
use super::graph::PolicyGraph;
use super::steps::{Step, combine, fresh_noise};

/// Which multistep SDE sampler.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// `dpmpp_2m_sde`: the midpoint correction.
    Midpoint,
    /// `dpmpp_2m_sde_heun`: Heun's correction.
    Heun,
    /// `dpmpp_3m_sde`.
    ThirdOrder,
}

impl Kind {
    /// The kind of a ComfyUI sampler name, if it is one of these.
    pub fn of(sampler: &str) -> Option<Kind> {
        match sampler {
            "dpmpp_2m_sde" | "dpmpp_2m_sde_gpu" => Some(Kind::Midpoint),
            "dpmpp_2m_sde_heun" | "dpmpp_2m_sde_heun_gpu" => Some(Kind::Heun),
            "dpmpp_3m_sde" | "dpmpp_3m_sde_gpu" => Some(Kind::ThirdOrder),
            _ => None,
        }
    }
}

/// Builds the step (see [`Step`]); returns the next sample (the denoised
/// estimate and, for 3M, the shifted previous one are declared as outputs
/// here).
pub fn step(g: &mut PolicyGraph<'_>, kind: Kind, at: &Step<'_>) -> Result<String, SynthError> {
    let iteration = g.input("iteration")?;
    let d1 = g.input("previous")?;
    let d2 = match kind {
        Kind::ThirdOrder => Some(g.input("previous_2")?),
        _ => None,
    };
    let x = at.x;
    let noise = fresh_noise(g, x, at.step)?;
    let denoised = at.denoised(g, at.d);
    let s = at.sigma_at(g, 0);
    let (sn, last) = at.next_sigma(g);
    let s1 = at.sigma_at(g, -1);
    let s2 = at.sigma_at(g, -2);
    let zero = g.d(0.0);
    let one = g.d(1.0);
    let half = g.d(0.5);
    let sn_safe = g.op("Where", &[&last, &half, &sn]);
    // h = lambda' - lambda, and the earlier steps' h.
    let lambdas = [&s2, &s1, &s, &sn_safe].map(|sigma| at.half_log_snr(g, sigma));
    let step_h = |g: &mut PolicyGraph<'_>, k: usize| {
        let h = g.op("Sub", &[&lambdas[k + 1], &lambdas[k]]);
        g.nonzero(&h)
    };
    let (h2, h1, h) = (step_h(g, 0), step_h(g, 1), step_h(g, 2));
    let alpha_next = at.signal(g, &sn_safe);
    let minus_h = g.op("Neg", &[&h]);
    let decay = g.op("Exp", &[&minus_h]);
    let two = g.d(2.0);
    let h_eta = g.op("Mul", &[&h, &two]);
    let minus_h_eta = g.op("Neg", &[&h_eta]);
    let decay2 = g.op("Exp", &[&minus_h_eta]);
    // 1 - e^-2h, the weight of D and (its root) of the fresh noise.
    let pull = g.op("Sub", &[&one, &decay2]);
    let ratio = g.op("Div", &[&sn, &s]);
    let keep = g.op("Mul", &[&ratio, &decay]);
    // phi_2 = 1 - (1 - e^-2h) / 2h.
    let over = g.op("Div", &[&pull, &h_eta]);
    let phi2 = g.op("Sub", &[&one, &over]);
    let r = g.op("Div", &[&h1, &h]);
    let second = match kind {
        Kind::Midpoint => {
            let c = g.op("Mul", &[&pull, &half]);
            g.op("Div", &[&c, &r])
        }
        Kind::Heun | Kind::ThirdOrder => g.op("Div", &[&phi2, &r]),
    };
    let one_i = g.i(1);
    let later = g.op("GreaterOrEqual", &[&iteration, &one_i]);
    let second = g.op("Where", &[&later, &second, &zero]);
    let mut correction = [second.clone(), g.op("Neg", &[&second]), zero.clone()];
    if kind == Kind::ThirdOrder {
        let third = third_order(g, &h, &h1, &h2, &phi2, &h_eta);
        let two_i = g.i(2);
        let latest = g.op("GreaterOrEqual", &[&iteration, &two_i]);
        correction = std::array::from_fn(|k| g.op("Where", &[&latest, &third[k], &correction[k]]));
    }
    let [c_d, w_d1, w_d2] = correction.map(|c| g.op("Mul", &[&c, &alpha_next]));
    let pulled = g.op("Mul", &[&pull, &alpha_next]);
    let w_d = g.op("Add", &[&pulled, &c_d]);
    let spread = g.op("Sqrt", &[&pull]);
    let w_noise = g.op("Mul", &[&sn, &spread]);
    let mut terms = vec![
        (keep, x.to_string()),
        (w_d, denoised.clone()),
        (w_d1, d1.clone()),
        (w_noise, noise),
    ];
    if let Some(d2) = &d2 {
        terms.push((w_d2, d2.clone()));
        let shifted = g.op("Identity", &[&d1]);
        g.output(&shifted, "denoised_1")?;
    }
    let stepped = combine(g, &terms);
    let next = at.denoised_at_zero(g, &last, &denoised, &stepped);
    g.output(&denoised, "denoised")?;
    Ok(next)
}

/// 3M's weights on `D`, `D_1`, `D_2`: `phi_2 d1 - phi_3 d2` with
/// `r0 = h_1 / h`, `r1 = h_2 / h`, `d1_0 = (D - D_1) / r0`,
/// `d1_1 = (D_1 - D_2) / r1`, `d1 = d1_0 + (d1_0 - d1_1) r0 / (r0 + r1)`,
/// `d2 = (d1_0 - d1_1) / (r0 + r1)`, `phi_3 = phi_2 / 2h - 1/2`.
fn third_order(
    g: &mut PolicyGraph<'_>,
    h: &str,
    h1: &str,
    h2: &str,
    phi2: &str,
    h_eta: &str,
) -> [String; 3] {
    let r0 = g.op("Div", &[h1, h]);
    let r1 = g.op("Div", &[h2, h]);
    let sum = g.op("Add", &[&r0, &r1]);
    let sum = g.nonzero(&sum);
    let one = g.d(1.0);
    let a = g.op("Div", &[&one, &r0]);
    let b = g.op("Div", &[&one, &r1]);
    let w = g.op("Div", &[&r0, &sum]);
    let v = g.op("Div", &[&one, &sum]);
    let half = g.d(0.5);
    let phi3 = g.op("Div", &[phi2, h_eta]);
    let phi3 = g.op("Sub", &[&phi3, &half]);
    // d1 = a (1 + w) D - (a (1 + w) + w b) D_1 + w b D_2;
    // d2 = v a D - v (a + b) D_1 + v b D_2.
    let one_w = g.op("Add", &[&one, &w]);
    let a1w = g.op("Mul", &[&a, &one_w]);
    let wb = g.op("Mul", &[&w, &b]);
    let va = g.op("Mul", &[&v, &a]);
    let vb = g.op("Mul", &[&v, &b]);
    let ab = g.op("Add", &[&a, &b]);
    let vab = g.op("Mul", &[&v, &ab]);
    let d1_mid = g.op("Add", &[&a1w, &wb]);
    let weight = |g: &mut PolicyGraph<'_>, of_d1: &str, of_d2: &str, negate: bool| {
        let p = g.op("Mul", &[phi2, of_d1]);
        let q = g.op("Mul", &[&phi3, of_d2]);
        let w = g.op("Sub", &[&p, &q]);
        if negate { g.op("Neg", &[&w]) } else { w }
    };
    [
        weight(g, &a1w, &va, false),
        weight(g, &d1_mid, &vab, true),
        weight(g, &wb, &vb, false),
    ]
}
