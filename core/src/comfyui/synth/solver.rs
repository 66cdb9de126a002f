//! `solver_step`: one sampler update from sigma `s = schedule[step]` to
//! `s' = schedule[step + 1]` (0 at the end step of a KSamplerAdvanced window
//! that fully denoises), given the sample `x` and the guided estimate `d`
//! (the predicted noise of an epsilon model, the velocity of a flow model;
//! both are the ODE derivative dx/dsigma, so the denoised sample is
//! `D = x - s d`). The rules are k-diffusion's as ComfyUI runs them:
//! - `euler` (and `ddim`, which ComfyUI runs as Euler): `x + d (s' - s)`.
//! - `euler_ancestral` (eta 1): epsilon models step to
//!   `s_down = sqrt(s'^2 - s_up^2)` with `s_up = min(s', sqrt(s'^2 (s^2 - s'^2) / s^2))`
//!   and add `s_up` of fresh noise; flow models use the rectified-flow form
//!   (`s_down = s'^2 / s`, the step rescaled by `(1 - s') / (1 - s_down)`
//!   and renoised by `sqrt(s'^2 - s_down^2 (1 - s')^2 / (1 - s_down)^2)`).
//!   The fresh noise is the seeded noise at offset `step + 1`.
//! - `dpmpp_2m` (DPM-Solver++(2M), Lu et al. 2022): with `h = ln(s / s')`,
//!   `x' = (s'/s) x + (1 - s'/s) D'` where `D' = D` on the first iteration
//!   and the last step, else `D' = (1 + 1/(2r)) D - 1/(2r) D_prev` with
//!   `r = ln(s_prev / s) / h`; the step's `D` is returned as `denoised`.
//! - `lcm`: `D`, renoised to `s'` with fresh noise as the family adds noise.
//! - `ddpm`: the DDPM posterior step (see [`ddpm`]), with fresh noise.
//! - `uni_pc`, `uni_pc_bh2`: UniPC's predictor-corrector (`super::unipc`).
//! - `dpmpp_2m_sde`, `dpmpp_2m_sde_heun`, `dpmpp_3m_sde` (and their `_gpu`
//!   names): DPM-Solver++ multistep SDE steps (`super::sde`).
//! - `res_multistep`, `res_multistep_ancestral`, `gradient_estimation`,
//!   `ipndm`, `ipndm_v`, `lms`, `deis`: multistep steps over earlier
//!   estimates (`super::multistep`), with the CFG++ forms of the first two
//!   and `gradient_estimation`.
//! - `euler_cfg_pp`, `euler_ancestral_cfg_pp`, `dpmpp_2m_cfg_pp`: CFG++
//!   steps along the unconditional estimate (`super::cfgpp`).
//! - `er_sde`: the ER-SDE-Solver-3 step (`super::ersde`).
//! - `sa_solver`, `sa_solver_pece`: SA-Solver's stochastic Adams
//!   predictor-corrector (`super::sasolver`).
//! - `heun`, `dpm_2`, `dpm_2_ancestral`, `dpmpp_2s_ancestral`,
//!   `dpmpp_sde` (and `_gpu`), `seeds_2`: two model calls per step, the second's
//!   estimate as input `second` (`super::midpoint`).
//! - `heunpp2`, `seeds_3`, `dpm_fast`: three model calls per step, the
//!   others' estimates as `second` and `third` (`super::three_calls`);
//!   `dpm_adaptive` too, over steps its controller sizes
//!   (`super::adaptive`).

use super::SynthError;
use super::graph::{Family, PolicyGraph};
use super::steps::{RfAncestral, StepInputs, combine, fresh_noise};
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// Builds the solver of the family's sampler.
pub fn step(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let inputs = StepInputs::read(g, family)?;
    let at = inputs.at();
    let (x, d, step, schedule) = (at.x, at.d, at.step, at.schedule);
    let out = if let Some(bh2) = super::unipc::variant(&family.solver) {
        Some(super::unipc::step(g, bh2, &at)?)
    } else if let Some(kind) = super::cfgpp::Kind::of(&family.solver) {
        Some(super::cfgpp::step(g, family, kind, &at)?)
    } else if let Some(kind) = super::multistep::Kind::of(&family.solver) {
        Some(super::multistep::step(g, kind, &at)?)
    } else if let Some(kind) = super::sde::Kind::of(&family.solver) {
        Some(super::sde::step(g, kind, &at)?)
    } else if family.solver == "er_sde" {
        Some(super::ersde::step(g, &at)?)
    } else if let Some(pece) = super::sasolver::variant(&family.solver) {
        let interval = super::sasolver::Interval::of(g, family)?;
        Some(super::sasolver::step(g, &at, &interval, pece)?)
    } else if let Some(kind) = super::midpoint::Kind::of(&family.solver) {
        Some(super::midpoint::step(g, kind, &at)?)
    } else if let Some(kind) = super::three_calls::Kind::of(&family.solver) {
        Some(super::three_calls::step(g, kind, &at)?)
    } else {
        None
    };
    if let Some(out) = out {
        return g.output(&out, "next_state");
    }
    let s = g.rows(at.sigma);
    let sn = g.rows(at.sigma_next);
    let out = match family.solver.as_str() {
        "euler" | "ddim" => {
            let dt = g.op("Sub", &[&sn, &s]);
            let move_ = g.op("Mul", &[d, &dt]);
            g.op("Add", &[x, &move_])
        }
        "euler_ancestral" => ancestral(g, family, x, d, &s, &sn, step)?,
        "dpmpp_2m" => {
            let (out, denoised) = dpmpp_2m(g, x, d, &s, &sn, schedule, step)?;
            g.output(&denoised, "denoised")?;
            out
        }
        "lcm" => lcm(g, family, x, d, &s, &sn, step)?,
        "ddpm" => ddpm(g, x, d, &s, &sn, step)?,
        other => return Err(g.error(format!("the `{other}` sampler is not synthesized"))),
    };
    g.output(&out, "next_state")
}

fn denoised(g: &mut PolicyGraph<'_>, x: &str, d: &str, s: &str) -> String {
    let sd = g.op("Mul", &[s, d]);
    g.op("Sub", &[x, &sd])
}

fn ancestral(
    g: &mut PolicyGraph<'_>,
    family: &Family,
    x: &str,
    d: &str,
    s: &str,
    sn: &str,
    step: &str,
) -> Result<String, SynthError> {
    let noise = fresh_noise(g, x, step)?;
    let sn2 = g.op("Mul", &[sn, sn]);
    let out = if family.is_flow() {
        // Rectified flow: x' = rescale ((s_down / s) x + (1 - s_down / s) D) + renoise n.
        let big_d = denoised(g, x, d, s);
        let (s, sn) = (g.cast(s, DataType::DOUBLE), g.cast(sn, DataType::DOUBLE));
        let rf = RfAncestral::new(g, &s, &sn);
        let s = g.nonzero(&s);
        let ratio = g.op("Div", &[&rf.down, &s]);
        let one = g.d(1.0);
        let rest = g.op("Sub", &[&one, &ratio]);
        let (a, b) = (
            g.op("Mul", &[&ratio, &rf.rescale]),
            g.op("Mul", &[&rest, &rf.rescale]),
        );
        combine(g, &[(a, x.to_string()), (b, big_d), (rf.renoise, noise)])
    } else {
        let s2 = g.op("Mul", &[s, s]);
        let gap = g.op("Sub", &[&s2, &sn2]);
        let top = g.op("Mul", &[&sn2, &gap]);
        let frac = g.op("Div", &[&top, &s2]);
        let zero = g.f(0.0);
        let frac = g.op("Max", &[&frac, &zero]);
        let up = g.op("Sqrt", &[&frac]);
        let up = g.op("Min", &[sn, &up]);
        let up2 = g.op("Mul", &[&up, &up]);
        let down2 = g.op("Sub", &[&sn2, &up2]);
        let down2 = g.op("Max", &[&down2, &zero]);
        let down = g.op("Sqrt", &[&down2]);
        let dt = g.op("Sub", &[&down, s]);
        let move_ = g.op("Mul", &[d, &dt]);
        let stepped = g.op("Add", &[x, &move_]);
        let fresh = g.op("Mul", &[&noise, &up]);
        g.op("Add", &[&stepped, &fresh])
    };
    Ok(out)
}

/// `lcm`: the denoised estimate, renoised to the next sigma with fresh
/// noise as the model family adds noise (`D + s' n` for epsilon models,
/// `s' n + (1 - s') D` for flow models).
fn lcm(
    g: &mut PolicyGraph<'_>,
    family: &Family,
    x: &str,
    d: &str,
    s: &str,
    sn: &str,
    step: &str,
) -> Result<String, SynthError> {
    let noise = fresh_noise(g, x, step)?;
    let big_d = denoised(g, x, d, s);
    let fresh = g.op("Mul", &[sn, &noise]);
    let kept = if family.is_flow() {
        let one = g.f(1.0);
        let rest = g.op("Sub", &[&one, sn]);
        g.op("Mul", &[&rest, &big_d])
    } else {
        big_d
    };
    Ok(g.op("Add", &[&kept, &fresh]))
}

/// `ddpm`: the DDPM posterior step in variance-preserving form, with
/// `a = 1 / (s^2 + 1)`, `a' = 1 / (s'^2 + 1)`, `alpha = a / a'`:
/// `mu = (x sqrt(a) - (1 - alpha) d / sqrt(1 - a)) / sqrt(alpha)` plus
/// `sqrt((1 - alpha)(1 - a') / (1 - a))` of fresh noise, scaled back by
/// `sqrt(s'^2 + 1)` (both vanish when `s'` is 0).
fn ddpm(
    g: &mut PolicyGraph<'_>,
    x: &str,
    d: &str,
    s: &str,
    sn: &str,
    step: &str,
) -> Result<String, SynthError> {
    let noise = fresh_noise(g, x, step)?;
    let one = g.f(1.0);
    let s2 = g.op("Mul", &[s, s]);
    let sn2 = g.op("Mul", &[sn, sn]);
    let s2_1 = g.op("Add", &[&s2, &one]);
    let sn2_1 = g.op("Add", &[&sn2, &one]);
    // alpha = (s'^2 + 1) / (s^2 + 1); 1 - alpha = (s^2 - s'^2) / (s^2 + 1).
    let alpha = g.op("Div", &[&sn2_1, &s2_1]);
    let gap = g.op("Sub", &[&s2, &sn2]);
    let rest = g.op("Div", &[&gap, &s2_1]);
    // 1 - a = s^2 / (s^2 + 1), 1 - a' = s'^2 / (s'^2 + 1).
    let sqrt_s2_1 = g.op("Sqrt", &[&s2_1]);
    let xv = g.op("Div", &[x, &sqrt_s2_1]);
    let s_safe = positive(g, s);
    let sqrt_rest_a = g.op("Div", &[&s_safe, &sqrt_s2_1]);
    let pulled = g.op("Mul", &[&rest, d]);
    let pulled = g.op("Div", &[&pulled, &sqrt_rest_a]);
    let inner = g.op("Sub", &[&xv, &pulled]);
    let sqrt_alpha = g.op("Sqrt", &[&alpha]);
    let mu = g.op("Div", &[&inner, &sqrt_alpha]);
    let rest_next = g.op("Div", &[&sn2, &sn2_1]);
    let rest_a = g.op("Div", &[&s2, &s2_1]);
    let rest_a = positive(g, &rest_a);
    let variance = g.op("Mul", &[&rest, &rest_next]);
    let variance = g.op("Div", &[&variance, &rest_a]);
    let zero = g.f(0.0);
    let variance = g.op("Max", &[&variance, &zero]);
    let spread = g.op("Sqrt", &[&variance]);
    let fresh = g.op("Mul", &[&noise, &spread]);
    let mu = g.op("Add", &[&mu, &fresh]);
    let scale = g.op("Sqrt", &[&sn2_1]);
    Ok(g.op("Mul", &[&mu, &scale]))
}

/// `max(x, 1e-12)`, so a division by it never divides by zero.
fn positive(g: &mut PolicyGraph<'_>, x: &str) -> String {
    let tiny = g.f(1e-12);
    g.op("Max", &[x, &tiny])
}

fn dpmpp_2m(
    g: &mut PolicyGraph<'_>,
    x: &str,
    d: &str,
    s: &str,
    sn: &str,
    schedule: &str,
    step: &str,
) -> Result<(String, String), SynthError> {
    let previous = g.input("previous")?;
    let iteration = g.input("iteration")?;
    let big_d = denoised(g, x, d, s);
    // The previous step's sigma (step - 1, clamped at 0 for the first).
    let one_i = g.i(1);
    let zero_i = g.i(0);
    let before = g.op("Sub", &[step, &one_i]);
    let before = g.op("Max", &[&before, &zero_i]);
    let sigma_prev = g.gather(schedule, &before);
    let sp = g.rows(&sigma_prev);
    let safe_sn = positive(g, sn);
    let h_ratio = g.op("Div", &[s, &safe_sn]);
    let h = g.op("Log", &[&h_ratio]);
    let h_last_ratio = g.op("Div", &[&sp, s]);
    let h_last = g.op("Log", &[&h_last_ratio]);
    let safe_h_last = positive(g, &h_last);
    // 1 / (2r) = h / (2 h_last).
    let two = g.f(2.0);
    let twice_last = g.op("Mul", &[&safe_h_last, &two]);
    let c = g.op("Div", &[&h, &twice_last]);
    let one = g.f(1.0);
    let one_c = g.op("Add", &[&one, &c]);
    let a = g.op("Mul", &[&one_c, &big_d]);
    let b = g.op("Mul", &[&c, &previous]);
    let corrected = g.op("Sub", &[&a, &b]);
    let first = g.op("Equal", &[&iteration, &zero_i]);
    let zero = g.f(0.0);
    let last = g.op("Equal", &[sn, &zero]);
    let first_rows = g.rows(&first);
    let plain = g.op("Or", &[&first_rows, &last]);
    let effective = g.op("Where", &[&plain, &big_d, &corrected]);
    let ratio = g.op("Div", &[sn, s]);
    let rest = g.op("Sub", &[&one, &ratio]);
    let kept = g.op("Mul", &[&ratio, x]);
    let pulled = g.op("Mul", &[&rest, &effective]);
    Ok((g.op("Add", &[&kept, &pulled]), big_d))
}
