//! Second-order samplers that call the model twice per step (k-diffusion's
//! forms, as ComfyUI runs them, eta 1; written below for epsilon models,
//! the flow forms after the list): the first call's
//! estimate `d` at sigma `s` gives a midpoint sample `x_2` at `s_mid`; the
//! `solver_midpoint` policy hands the loop that call's model input and
//! timestep, and `solver_step` finishes the step from both estimates (it
//! recomputes `x_2` where it needs it, from the same inputs):
//! - `heun`: `s_mid = s'`, `x_2 = x + d (s' - s)`, then
//!   `x + (d + d_2) / 2 (s' - s)`.
//! - `dpm_2`: `s_mid = sqrt(s s')` (the log-space middle), `x_2 = x + d
//!   (s_mid - s)`, then `x + d_2 (s' - s)`.
//! - `dpm_2_ancestral`: as `dpm_2` towards the ancestral step's `s_down`,
//!   then `s_up` of fresh noise.
//! - `dpmpp_2s_ancestral` (DPM-Solver++(2S)): with `D = x - s d`,
//!   `s_mid = sqrt(s s_down)`, `x_2 = (s_mid / s) x + (1 - s_mid / s) D`,
//!   then `(s_down / s) x + (1 - s_down / s) D_2` (`D_2 = x_2 - s_mid
//!   d_2`) and `s_up` of fresh noise.
//! - `dpmpp_2s_ancestral_cfg_pp`: its CFG++ form (ComfyUI's, on its own
//!   unconditional passes): `x_2 = (s_mid / s) (x + D - D_u) + (1 - s_mid
//!   / s) D`, then `(s_down / s) (x + D - D_u2) + (1 - s_down / s) D_2`,
//!   with `D_u2` the second call's unconditional pass (input
//!   `second_unconditional`), and `s_up` of fresh noise.
//! - `dpmpp_sde`, `dpmpp_sde_gpu` (DPM-Solver++ SDE, r = 1/2): `s_mid =
//!   sqrt(s s')`; `x_2` is the ancestral DPM-Solver++ step from `s` to
//!   `s_mid` (its own `s_down`, `s_up`), then the same from `s` to `s'`
//!   with `D_2`. ComfyUI draws both noises from a Brownian tree; here the
//!   midpoint's noise is the seeded noise at offset `-(step + 1)` and the
//!   step's at `step + 1` (the documented, deterministic noise stream).
//! - `seeds_2` (SEEDS-2, eta 1, r = 1/2, data prediction; for these models
//!   the half log-SNR is `-ln s`): with `q = e^-h = (s_mid / s)^2`, `x_2 =
//!   q x + (1 - q) D + sqrt(1 - q) s_mid n_1`, then `q^2 x + (1 - q^2) D_2
//!   + s' (sqrt(q (1 - q)) n_1 + sqrt(1 - q) n_2)`; `n_1` and `n_2` (plain
//!   normal draws in ComfyUI) are the seeded noise at offsets `-(step + 1)`
//!   and `step + 1`.
//!
//! On flow models `dpm_2_ancestral` and `dpmpp_2s_ancestral` take
//! ComfyUI's rectified-flow forms (`s_down = s'^2 / s`, the result rescaled
//! by `(1 - s') / (1 - s_down)` before its fresh noise, see
//! [`RfAncestral`]; 2S's midpoint halfway in `ln((1 - s) / s)`, 0.9999
//! from sigma 1), and `dpmpp_sde` and `seeds_2` step in the model's half
//! log-SNR (`Step::half_log_snr`): their midpoint halfway in it, their
//! `q` and ancestral steps over `s / alpha`, `x` weighed by `alpha_to /
//! alpha` and `D` by `alpha_to`.
//!
//! A step to sigma 0 is Euler's (ComfyUI makes no second call there); the
//! loop still makes the second call, at the step's own sigma, and drops
//! its estimate.

use super::SynthError;
use super::graph::{Family, PolicyGraph};
use super::model_call::{ModelCall, denoised_at};
use super::steps::{RfAncestral, Step, StepInputs, ancestral, combine, fresh_noise, noise_at};
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// A two-call sampler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Heun,
    Dpm2,
    Dpm2Ancestral,
    Dpmpp2sAncestral,
    Dpmpp2sAncestralCfgPp,
    DpmppSde,
    Seeds2,
}

impl Kind {
    /// The kind of ComfyUI sampler `name`, if it is one of these.
    pub fn of(name: &str) -> Option<Kind> {
        Some(match name {
            "heun" => Kind::Heun,
            "dpm_2" => Kind::Dpm2,
            "dpm_2_ancestral" => Kind::Dpm2Ancestral,
            "dpmpp_2s_ancestral" => Kind::Dpmpp2sAncestral,
            "dpmpp_2s_ancestral_cfg_pp" => Kind::Dpmpp2sAncestralCfgPp,
            "dpmpp_sde" | "dpmpp_sde_gpu" => Kind::DpmppSde,
            "seeds_2" => Kind::Seeds2,
            _ => return None,
        })
    }

    fn ancestral(self) -> bool {
        matches!(
            self,
            Kind::Dpm2Ancestral | Kind::Dpmpp2sAncestral | Kind::Dpmpp2sAncestralCfgPp
        )
    }
}

/// A step's midpoint, per row (sigmas float64).
struct Mid {
    x2: String,
    sigma: String,
    s_mid: String,
    /// Rows whose step goes to sigma 0.
    last: String,
    /// Where the step goes: `s'`, or the ancestral step's `s_down`.
    target: String,
    /// An ancestral step's fresh noise.
    renoise: Option<Renoise>,
}

/// An ancestral step's fresh noise: `weight` of it (`s_up`, 0 where
/// none), the sample first scaled by `rescale` (the rectified-flow form's
/// `(1 - s') / (1 - s_down)`).
struct Renoise {
    weight: String,
    rescale: Option<String>,
}

fn midpoint(g: &mut PolicyGraph<'_>, kind: Kind, at: &Step<'_>) -> Result<Mid, SynthError> {
    let sigma = g.cast(at.sigma, DataType::DOUBLE);
    let (next, last) = at.next_sigma(g);
    // ComfyUI steps flow models with the rectified-flow forms of
    // dpm_2_ancestral and dpmpp_2s_ancestral (not of the CFG++ one).
    let rectified =
        at.family.is_flow() && matches!(kind, Kind::Dpm2Ancestral | Kind::Dpmpp2sAncestral);
    let (target, renoise) = match kind.ancestral() {
        true if rectified => {
            let rf = RfAncestral::new(g, &sigma, &next);
            let renoise = Renoise {
                weight: rf.renoise,
                rescale: Some(rf.rescale),
            };
            (rf.down, Some(renoise))
        }
        true => {
            let (down, up) = ancestral(g, &sigma, &next);
            let renoise = Renoise {
                weight: up,
                rescale: None,
            };
            (down, Some(renoise))
        }
        false => (next, None),
    };
    // The rows that step to 0 take their midpoint at their own sigma.
    let safe = g.op("Where", &[&last, &sigma, &target]);
    let s_mid = match kind {
        Kind::Heun => safe.clone(),
        Kind::Dpmpp2sAncestral if rectified => rf_midpoint(g, at, &sigma, &safe),
        Kind::DpmppSde | Kind::Seeds2 => snr_midpoint(g, at, &sigma, &safe),
        _ => {
            let product = g.op("Mul", &[&sigma, &safe]);
            g.op("Sqrt", &[&product])
        }
    };
    let one = g.d(1.0);
    let x2 = match kind {
        Kind::Heun | Kind::Dpm2 | Kind::Dpm2Ancestral => {
            let dt = g.op("Sub", &[&s_mid, &sigma]);
            combine(g, &[(one, at.x.to_string()), (dt, at.d.to_string())])
        }
        Kind::Dpmpp2sAncestral => exponential_step(g, at, &sigma, &s_mid, at.d),
        Kind::Dpmpp2sAncestralCfgPp => {
            // (s_mid / s) (x + D - D_u) + (1 - s_mid / s) D.
            let d_u = at.estimate(g, "unconditional", at.x, at.sigma)?;
            let unguided = at.denoised(g, &d_u);
            let denoised = at.denoised(g, at.d);
            let moved = shifted_sample(g, at.x, &denoised, &unguided);
            exponential_from(g, &moved, &sigma, &s_mid, &denoised)
        }
        Kind::DpmppSde => {
            let denoised = at.denoised(g, at.d);
            let noise = midpoint_noise(g, at)?;
            snr_ancestral(g, at, (&sigma, &s_mid), &denoised, &noise)
        }
        Kind::Seeds2 => {
            // (alpha_mid / alpha) q x + alpha_mid (1 - q) D + sqrt(1 - q) s_mid n_1.
            let q = seeds_decay(g, at, &sigma, &s_mid);
            let rest = g.op("Sub", &[&one, &q]);
            let denoised = at.denoised(g, at.d);
            let spread = g.op("Sqrt", &[&rest]);
            let spread = g.op("Mul", &[&spread, &s_mid]);
            let noise = midpoint_noise(g, at)?;
            let (carry, alpha_mid) = at.signal_ratio(g, &sigma, &s_mid);
            let kept = g.op("Mul", &[&q, &carry]);
            let rest = g.op("Mul", &[&rest, &alpha_mid]);
            combine(
                g,
                &[(kept, at.x.to_string()), (rest, denoised), (spread, noise)],
            )
        }
    };
    Ok(Mid {
        x2,
        sigma,
        s_mid,
        last,
        target,
        renoise,
    })
}

/// DPM-Solver++(2S)'s midpoint on a flow model: [`snr_midpoint`], and
/// 0.9999 where `s` is 1 (ComfyUI's `sample_dpmpp_2s_ancestral_RF`).
fn rf_midpoint(g: &mut PolicyGraph<'_>, at: &Step<'_>, s: &str, down: &str) -> String {
    let mid = snr_midpoint(g, at, s, down);
    let one = g.d(1.0);
    let at_one = g.op("Equal", &[s, &one]);
    let near_one = g.d(0.9999);
    g.op("Where", &[&at_one, &near_one, &mid])
}

/// The sigma halfway from `s` to `to` in the model's half log-SNR
/// (`sqrt(s to)` on epsilon models).
fn snr_midpoint(g: &mut PolicyGraph<'_>, at: &Step<'_>, s: &str, to: &str) -> String {
    let (a, b) = (at.half_log_snr(g, s), at.half_log_snr(g, to));
    let sum = g.op("Add", &[&a, &b]);
    let half = g.d(0.5);
    let middle = g.op("Mul", &[&sum, &half]);
    at.sigma_of_half_log_snr(g, &middle)
}

/// DPM-Solver++ SDE's ancestral step from sigma `s` to `to` with denoised
/// sample `denoised` and fresh `noise`, in the model's half log-SNR: with
/// `(s_down, s_up)` the ancestral step between `e = s / alpha` and `to /
/// alpha'`, `(alpha' / alpha) (s_down / e) x + alpha' (1 - s_down / e) D +
/// alpha' s_up n`.
fn snr_ancestral(
    g: &mut PolicyGraph<'_>,
    at: &Step<'_>,
    (s, to): (&str, &str),
    denoised: &str,
    noise: &str,
) -> String {
    let (e, e_to) = (at.exploded(g, s), at.exploded(g, to));
    let (down, up) = ancestral(g, &e, &e_to);
    let (carry, alpha_to) = at.signal_ratio(g, s, to);
    let e = g.nonzero(&e);
    let ratio = g.op("Div", &[&down, &e]);
    let one = g.d(1.0);
    let rest = g.op("Sub", &[&one, &ratio]);
    let kept = g.op("Mul", &[&ratio, &carry]);
    let pulled = g.op("Mul", &[&rest, &alpha_to]);
    let fresh = g.op("Mul", &[&up, &alpha_to]);
    combine(
        g,
        &[
            (kept, at.x.to_string()),
            (pulled, denoised.to_string()),
            (fresh, noise.to_string()),
        ],
    )
}

/// DPM-Solver++'s first-order step from `sigma` to `to` with the denoised
/// sample of estimate `e` at `x`: `(to / sigma) x + (1 - to / sigma) D`.
fn exponential_step(
    g: &mut PolicyGraph<'_>,
    at: &Step<'_>,
    sigma: &str,
    to: &str,
    e: &str,
) -> String {
    let denoised = at.denoised(g, e);
    exponential_from(g, at.x, sigma, to, &denoised)
}

/// `x + D - D_u`: CFG++'s sample, moved along the guidance.
fn shifted_sample(g: &mut PolicyGraph<'_>, x: &str, denoised: &str, unguided: &str) -> String {
    let gap = g.op("Sub", &[denoised, unguided]);
    g.op("Add", &[x, &gap])
}

fn exponential_from(
    g: &mut PolicyGraph<'_>,
    x: &str,
    sigma: &str,
    to: &str,
    denoised: &str,
) -> String {
    let ratio = g.op("Div", &[to, sigma]);
    let one = g.d(1.0);
    let rest = g.op("Sub", &[&one, &ratio]);
    combine(g, &[(ratio, x.to_string()), (rest, denoised.to_string())])
}

/// SEEDS-2's `q = e^-h`, per row: `(e_mid / e)^2` of the sigmas over
/// their signal scale (see `Step::exploded`).
fn seeds_decay(g: &mut PolicyGraph<'_>, at: &Step<'_>, sigma: &str, s_mid: &str) -> String {
    let (e, e_mid) = (at.exploded(g, sigma), at.exploded(g, s_mid));
    let ratio = g.op("Div", &[&e_mid, &e]);
    g.op("Mul", &[&ratio, &ratio])
}

/// The midpoint's noise: the seeded noise at offset `-(step + 1)`.
fn midpoint_noise(g: &mut PolicyGraph<'_>, at: &Step<'_>) -> Result<String, SynthError> {
    let one = g.i(1);
    let after = g.op("Add", &[at.step, &one]);
    let offset = g.op("Neg", &[&after]);
    noise_at(g, at.x, &offset)
}

/// `x + up * noise` with a per-row float64 `up`.
fn plus_noise(g: &mut PolicyGraph<'_>, x: &str, up: &str, noise: &str) -> String {
    let one = g.d(1.0);
    combine(
        g,
        &[(one, x.to_string()), (up.to_string(), noise.to_string())],
    )
}

/// `solver_midpoint`: the second call's model input (`x_2` scaled by
/// `1 / sqrt(s_mid^2 + sigma_data^2)`) and timestep (the training timestep
/// whose sigma is nearest `s_mid` in log space, ComfyUI's
/// `timestep(sigma)`, or a continuous model's `0.25 ln s_mid`);
/// for `sa_solver_pece`, its corrected sample at the step's sigma; for a
/// three-call sampler, its second point (`super::three_calls`).
pub fn policy(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let call = ModelCall::on(g, family)?;
    let inputs = StepInputs::read(g, family)?;
    let at = inputs.at();
    if super::sasolver::variant(&family.solver) == Some(true) {
        // PECE evaluates the corrected sample at the step's own sigma.
        let interval = super::sasolver::Interval::of(g, family)?;
        let sample = super::sasolver::pece_sample(g, &at, &interval)?;
        let sigma = g.cast(at.sigma, DataType::DOUBLE);
        return call.build(g, &sample, &sigma, "mid");
    }
    if let Some(kind) = super::three_calls::Kind::of(&family.solver) {
        let point = super::three_calls::second_point(g, kind, &at)?;
        return call.build(g, &point.sample, &point.sigma, "mid");
    }
    let kind = Kind::of(&family.solver)
        .ok_or_else(|| g.error(format!("`{}` makes one model call per step", family.solver)))?;
    let mid = midpoint(g, kind, &at)?;
    call.build(g, &mid.x2, &mid.s_mid, "mid")
}

/// The step's end, from the first estimate `d` and the second `d_2`
/// (input `second`).
pub fn step(g: &mut PolicyGraph<'_>, kind: Kind, at: &Step<'_>) -> Result<String, SynthError> {
    let mid = midpoint(g, kind, at)?;
    let d2 = at.estimate(g, "second", &mid.x2, &mid.s_mid)?;
    let one = g.d(1.0);
    let dt = g.op("Sub", &[&mid.target, &mid.sigma]);
    let euler = combine(
        g,
        &[
            (one.clone(), at.x.to_string()),
            (dt.clone(), at.d.to_string()),
        ],
    );
    let stepped = match kind {
        Kind::Heun => {
            let half = g.d(0.5);
            let half_dt = g.op("Mul", &[&dt, &half]);
            combine(
                g,
                &[
                    (one, at.x.to_string()),
                    (half_dt.clone(), at.d.to_string()),
                    (half_dt, d2),
                ],
            )
        }
        Kind::Dpm2 | Kind::Dpm2Ancestral => combine(g, &[(one, at.x.to_string()), (dt, d2)]),
        Kind::Dpmpp2sAncestral => {
            let denoised_2 = denoised_at(g, &mid.x2, &mid.s_mid, &d2);
            exponential_from(g, at.x, &mid.sigma, &mid.target, &denoised_2)
        }
        Kind::Dpmpp2sAncestralCfgPp => {
            // ComfyUI's step takes the second call's unconditional pass.
            let denoised_2 = denoised_at(g, &mid.x2, &mid.s_mid, &d2);
            let d_u2 = at.estimate(g, "second_unconditional", &mid.x2, &mid.s_mid)?;
            let unguided_2 = denoised_at(g, &mid.x2, &mid.s_mid, &d_u2);
            let denoised = at.denoised(g, at.d);
            let moved = shifted_sample(g, at.x, &denoised, &unguided_2);
            exponential_from(g, &moved, &mid.sigma, &mid.target, &denoised_2)
        }
        Kind::DpmppSde => {
            let denoised_2 = denoised_at(g, &mid.x2, &mid.s_mid, &d2);
            let noise = fresh_noise(g, at.x, at.step)?;
            snr_ancestral(g, at, (&mid.sigma, &mid.target), &denoised_2, &noise)
        }
        Kind::Seeds2 => {
            // (alpha' / alpha) q^2 x + alpha' (1 - q^2) D_2
            // + s' (sqrt(q (1 - q)) n_1 + sqrt(1 - q) n_2).
            let denoised_2 = denoised_at(g, &mid.x2, &mid.s_mid, &d2);
            let q = seeds_decay(g, at, &mid.sigma, &mid.s_mid);
            let q2 = g.op("Mul", &[&q, &q]);
            let rest2 = g.op("Sub", &[&one, &q2]);
            let (carry, alpha_next) = at.signal_ratio(g, &mid.sigma, &mid.target);
            let kept = g.op("Mul", &[&q2, &carry]);
            let rest2 = g.op("Mul", &[&rest2, &alpha_next]);
            let rest = g.op("Sub", &[&one, &q]);
            let carried = g.op("Mul", &[&q, &rest]);
            let carried = g.op("Sqrt", &[&carried]);
            let carried = g.op("Mul", &[&carried, &mid.target]);
            let fresh = g.op("Sqrt", &[&rest]);
            let fresh = g.op("Mul", &[&fresh, &mid.target]);
            let n_1 = midpoint_noise(g, at)?;
            let n_2 = fresh_noise(g, at.x, at.step)?;
            combine(
                g,
                &[
                    (kept, at.x.to_string()),
                    (rest2, denoised_2),
                    (carried, n_1),
                    (fresh, n_2),
                ],
            )
        }
    };
    let last = g.rows(&mid.last);
    let out = g.op("Where", &[&last, &euler, &stepped]);
    let Some(renoise) = &mid.renoise else {
        return Ok(out);
    };
    let noise = fresh_noise(g, at.x, at.step)?;
    Ok(match &renoise.rescale {
        Some(rescale) => combine(
            g,
            &[(rescale.clone(), out), (renoise.weight.clone(), noise)],
        ),
        None => plus_noise(g, &out, &renoise.weight, &noise),
    })
}
