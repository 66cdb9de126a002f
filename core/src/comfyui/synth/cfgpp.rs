//! CFG++ samplers (Chung et al. 2024) as ComfyUI runs them: the step goes
//! from the guided estimate `D` along the unconditional one (`d_u`, with
//! `D_u = x - s d_u`):
//! - `euler_cfg_pp` / `euler_ancestral_cfg_pp` (eta 0 / 1): with the
//!   family's `alpha` (1 for epsilon models, `1 - sigma` for flow models),
//!   `x' = alpha' D + s_down (x - alpha D_u) / s` where `(s_down, s_up)` is
//!   the ancestral step from `s / alpha` to `s' / alpha'` (scaled by
//!   `alpha'`; at eta 0 `s_down = s'`; from a flow model's sigma 1,
//!   `s_down = 0` and `s_up = s' / alpha'`), plus `alpha' s_up` of fresh
//!   noise.
//! - `dpmpp_2m_cfg_pp`: with `h = ln(s / s')`,
//!   `x' = D - e^-h D_u + e^-h x`, less `(e^-h - 1) / 2r (D - D_u_prev)`
//!   after the first step (`r` the previous step's `h` over this one's).
//!
//! A step to 0 returns `D`. Coefficients are computed in float64.

use super::SynthError;
use super::graph::{Family, PolicyGraph};
use super::steps::{Step, combine, fresh_noise};

/// Which CFG++ sampler.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// `euler_cfg_pp` (`ancestral`: `euler_ancestral_cfg_pp`).
    Euler { ancestral: bool },
    /// `dpmpp_2m_cfg_pp`.
    Dpmpp2m,
}

impl Kind {
    /// The kind of a ComfyUI sampler name, if it is one of these.
    pub fn of(sampler: &str) -> Option<Kind> {
        Some(match sampler {
            "euler_cfg_pp" => Kind::Euler { ancestral: false },
            "euler_ancestral_cfg_pp" => Kind::Euler { ancestral: true },
            "dpmpp_2m_cfg_pp" => Kind::Dpmpp2m,
            _ => return None,
        })
    }
}

/// Builds the step (see [`Step`]); returns the next sample.
pub fn step(
    g: &mut PolicyGraph<'_>,
    family: &Family,
    kind: Kind,
    at: &Step<'_>,
) -> Result<String, SynthError> {
    let (x, step) = (at.x, at.step);
    let d_u = at.estimate(g, "unconditional", at.x, at.sigma)?;
    let denoised = at.denoised(g, at.d);
    let denoised_u = at.denoised(g, &d_u);
    let s = at.sigma_at(g, 0);
    let (sn, last) = at.next_sigma(g);
    let zero = g.d(0.0);
    let one = g.d(1.0);
    let terms = match kind {
        Kind::Euler { ancestral } => {
            let alpha = |g: &mut PolicyGraph<'_>, sigma: &str| match family.is_flow() {
                true => g.op("Sub", &[&one, sigma]),
                false => one.clone(),
            };
            let (a, a_next) = (alpha(g, &s), alpha(g, &sn));
            let (down, up) = if ancestral {
                let a_safe = g.nonzero(&a);
                let a_next_safe = g.nonzero(&a_next);
                let from = g.op("Div", &[&s, &a_safe]);
                let to = g.op("Div", &[&sn, &a_next_safe]);
                let (down, up) = super::steps::ancestral(g, &from, &to);
                // At a flow model's sigma 1 (alpha 0) the step starts from
                // an infinite sigma: all noise (ComfyUI's NaN there keeps
                // `min`'s sigma_to).
                let infinite = g.op("Equal", &[&a, &zero]);
                let down = g.op("Where", &[&infinite, &zero, &down]);
                let up = g.op("Where", &[&infinite, &to, &up]);
                (g.op("Mul", &[&a_next, &down]), Some(up))
            } else {
                (sn.clone(), None)
            };
            // s_down (x - alpha D_u) / s + alpha' D.
            let per = g.op("Div", &[&down, &s]);
            let scaled = g.op("Mul", &[&per, &a]);
            let w_u = g.op("Neg", &[&scaled]);
            let mut terms = vec![
                (a_next.clone(), denoised.clone()),
                (per, x.to_string()),
                (w_u, denoised_u.clone()),
            ];
            if let Some(up) = up {
                let w_noise = g.op("Mul", &[&a_next, &up]);
                terms.push((w_noise, fresh_noise(g, x, step)?));
            }
            terms
        }
        Kind::Dpmpp2m => {
            let iteration = g.input("iteration")?;
            let old = g.input("previous")?;
            let s_prev = at.sigma_at(g, -1);
            let zero_i = g.i(0);
            let sn_safe = g.op("Where", &[&last, &one, &sn]);
            let ratio = g.op("Div", &[&s, &sn_safe]);
            let h = g.op("Log", &[&ratio]);
            let h = g.nonzero(&h);
            let ratio_last = g.op("Div", &[&s_prev, &s]);
            let h_last = g.op("Log", &[&ratio_last]);
            let minus_h = g.op("Neg", &[&h]);
            let decay = g.op("Exp", &[&minus_h]);
            let expm1 = g.op("Sub", &[&decay, &one]);
            // -(e^-h - 1) / (2r) with r = h_last / h, after the first step.
            let two = g.d(2.0);
            let two_h_last = g.op("Mul", &[&two, &h_last]);
            let two_h_last = g.nonzero(&two_h_last);
            let over_2r = g.op("Div", &[&h, &two_h_last]);
            let c = g.op("Mul", &[&expm1, &over_2r]);
            let c = g.op("Neg", &[&c]);
            let first = g.op("Equal", &[&iteration, &zero_i]);
            let c = g.op("Where", &[&first, &zero, &c]);
            let w_d = g.op("Add", &[&one, &c]);
            let w_u = g.op("Neg", &[&decay]);
            let w_old = g.op("Neg", &[&c]);
            g.output(&denoised_u, "denoised")?;
            vec![
                (w_d, denoised.clone()),
                (w_u, denoised_u.clone()),
                (decay, x.to_string()),
                (w_old, old),
            ]
        }
    };
    let stepped = combine(g, &terms);
    Ok(at.denoised_at_zero(g, &last, &denoised, &stepped))
}
