//! `diffusion_schedule` (the run's sigmas, ending in 0, or rising where
//! flipped) and `diffusion_timesteps` (the denoiser's timestep input per
//! step). Both are constants computed at import for discrete models and for
//! a scheduler node's stated schedule on any model; a flow model's own
//! schedule is computed from the run-time shift inputs.

use super::SynthError;
use super::graph::{Family, PolicyGraph};
use super::sampling::{SCHEDULES, linear_quadratic, sgm_ramp};
use super::spacing::{FLIPPED_ZERO, Spacing};
use super::tables::{ModelSampling, linspace};
use wfstudio_onnx::builder::Attr;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// `diffusion_schedule`: the run's steps and one sigmas.
pub fn sigmas(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let sigmas = schedule(g, family)?;
    g.output(&sigmas, "schedule")
}

/// `diffusion_timesteps`: the model's timestep for each of the run's
/// sigmas: for discrete models the nearest training timestep, the integer
/// ComfyUI feeds them (a continuous EDM model's `0.25 ln sigma`); for flow
/// models sigma times the multiplier.
pub fn timesteps(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let out = match &family.sampling {
        ModelSampling::Discrete { sigmas, timesteps } => {
            let schedule = constant_schedule(g, family)?;
            // Of the sigmas as the run keeps them (float32, as ComfyUI's
            // tensors), compared in float64 as the numpy reference does;
            // ComfyUI compares float32 logs, which can break an exact tie
            // between two table entries the other way.
            let ts: Vec<f32> = schedule[..family.run_steps()]
                .iter()
                .map(|s| timesteps.of(sigmas, f64::from(*s as f32)) as f32)
                .collect();
            g.b.vec_f32(&ts)
        }
        ModelSampling::Flow { multiplier, .. } => {
            let all = schedule(g, family)?;
            let (start, end) = (g.b.vec_i64(&[0]), g.b.vec_i64(&[family.run_steps() as i64]));
            let head = g.op("Slice", &[&all, &start, &end]);
            let m = g.f(*multiplier);
            g.op("Mul", &[&head, &m])
        }
    };
    g.output(&out, "schedule")
}

/// A flow model's `percent_to_sigma(percent)` at shift factor `alpha`
/// (see [`shift_alpha`]): `a t / (1 + (a - 1) t)` at `t = 1 - percent`, in
/// float64 (ComfyUI's Python floats).
pub(super) fn percent_to_sigma(g: &mut PolicyGraph<'_>, alpha: &str, percent: f64) -> String {
    let alpha = g.cast(alpha, DataType::DOUBLE);
    let (t, one) = (g.d(1.0 - percent), g.d(1.0));
    let top = g.op("Mul", &[&alpha, &t]);
    let a1 = g.op("Sub", &[&alpha, &one]);
    let a1t = g.op("Mul", &[&a1, &t]);
    let bottom = g.op("Add", &[&one, &a1t]);
    g.op("Div", &[&top, &bottom])
}

/// The schedule's sigmas known at import, checked to be as many as the
/// run's steps and one.
fn constant_schedule(g: &PolicyGraph<'_>, family: &Family) -> Result<Vec<f64>, SynthError> {
    let schedule = family.constant_schedule().ok_or_else(|| {
        g.error(format!(
            "the `{}` schedule follows the model's run-time shift",
            family.schedule.name()
        ))
    })?;
    if schedule.len() != family.run_steps() + 1 {
        return Err(g.error(format!(
            "the `{}` scheduler gives {} sigmas for {} steps, not {}",
            family.schedule.name(),
            schedule.len(),
            family.steps,
            family.run_steps() + 1
        )));
    }
    Ok(schedule)
}

/// The schedule's sigmas (with the final 0, or flipped) as a graph value:
/// a constant where they are known at import, else computed from a flow
/// model's shift inputs.
fn schedule(g: &mut PolicyGraph<'_>, family: &Family) -> Result<String, SynthError> {
    if family.constant_schedule().is_some() {
        let values: Vec<f32> = constant_schedule(g, family)?
            .iter()
            .map(|s| *s as f32)
            .collect();
        return Ok(g.b.vec_f32(&values));
    }
    match &family.sampling {
        ModelSampling::Flow { .. } if family.schedule.spacing == Spacing::Flux2Measured => {
            let sigmas = flux2_measured(g, family)?;
            let sigmas = discard_penultimate(g, family, &sigmas);
            let sigmas = set_first(g, family, &sigmas);
            Ok(flip(g, family, &sigmas))
        }
        ModelSampling::Flow { table, .. } => {
            let sigmas = flow_schedule(g, family, *table)?;
            let sigmas = discard_penultimate(g, family, &sigmas);
            let sigmas = set_first(g, family, &sigmas);
            Ok(flip(g, family, &sigmas))
        }
        ModelSampling::Discrete { .. } => Err(g.error("a discrete model's schedule is a constant")),
    }
}

/// The flow schedule: `sigma = a t / (1 + (a - 1) t)` with `a` the shift
/// (SD3, AuraFlow) or `exp(mu)` for Flux's resolution-dependent `mu`.
fn flow_schedule(
    g: &mut PolicyGraph<'_>,
    family: &Family,
    table: usize,
) -> Result<String, SynthError> {
    let alpha = shift_alpha(g)?;
    let steps = family.computed_steps();
    let n = table as f64;
    let scheduler = family.schedule.name();
    let sigmas = match scheduler {
        "linear_quadratic" => {
            // Its sigmas scale with sigma_max, which is 1 at every shift.
            let values: Vec<f32> = linear_quadratic(steps).iter().map(|s| *s as f32).collect();
            return Ok(g.b.vec_f32(&values));
        }
        "simple" | "ddim_uniform" | "beta" => {
            let indices = family
                .schedule
                .table_indices(table, steps)
                .unwrap_or_default();
            let discarded = usize::from(family.schedule.discard_penultimate);
            if indices.len().saturating_sub(discarded) != family.run_steps() {
                return Err(g.error(format!(
                    "the {scheduler} scheduler gives {} sigmas for {steps} steps",
                    indices.len()
                )));
            }
            let t: Vec<f32> = indices
                .iter()
                .map(|i| ((*i + 1) as f64 / n) as f32)
                .collect();
            let t = g.b.vec_f32(&t);
            shifted(g, &alpha, &t)
        }
        "normal" | "sgm_uniform" | "karras" | "exponential" | "kl_optimal" => {
            let first = g.f(1.0 / n);
            let sigma_min = shifted(g, &alpha, &first);
            let ramp = match scheduler {
                "sgm_uniform" => sgm_ramp(steps),
                _ => linspace(0.0, 1.0, steps),
            };
            let ramp: Vec<f32> = ramp.iter().map(|r| *r as f32).collect();
            let ramp = g.b.vec_f32(&ramp);
            match scheduler {
                "normal" | "sgm_uniform" => {
                    // Timesteps evenly spaced from sigma_max (1) to sigma_min.
                    let one = g.f(1.0);
                    let span = g.op("Sub", &[&sigma_min, &one]);
                    let step = g.op("Mul", &[&ramp, &span]);
                    let t = g.op("Add", &[&one, &step]);
                    shifted(g, &alpha, &t)
                }
                "karras" => {
                    let one = g.f(1.0);
                    let inv_rho = g.f(1.0 / 7.0);
                    let rho = g.f(7.0);
                    let min_inv = g.op("Pow", &[&sigma_min, &inv_rho]);
                    let span = g.op("Sub", &[&min_inv, &one]);
                    let step = g.op("Mul", &[&ramp, &span]);
                    let base = g.op("Add", &[&one, &step]);
                    g.op("Pow", &[&base, &rho])
                }
                "kl_optimal" => {
                    // tan(r atan(sigma_min) + (1 - r) atan(1)).
                    let low = g.op("Atan", &[&sigma_min]);
                    let high = g.f(std::f64::consts::FRAC_PI_4);
                    let span = g.op("Sub", &[&low, &high]);
                    let step = g.op("Mul", &[&ramp, &span]);
                    let angle = g.op("Add", &[&high, &step]);
                    g.op("Tan", &[&angle])
                }
                _ => {
                    let log_min = g.op("Log", &[&sigma_min]);
                    let scaled = g.op("Mul", &[&ramp, &log_min]);
                    g.op("Exp", &[&scaled])
                }
            }
        }
        other => {
            return Err(g.error(format!(
                "the `{other}` scheduler is not synthesized for flow models ({} are)",
                SCHEDULES.join(", ")
            )));
        }
    };
    let zero = g.b.vec_f32(&[0.0]);
    Ok(g.op_with("Concat", &[&sigmas, &zero], &[("axis", Attr::Int(0))]))
}

/// `Flux2Scheduler`'s sigmas (see `shifted::flux2`) for the picture
/// size the inputs `width` and `height` measure at run time, in float64
/// as the import computes a written size's: `mu` fitted to the token
/// count `round(width * height / 256)` (half to even) and, up to 4300
/// tokens, the step count; `e^mu / (e^mu + 1/t - 1)` on `linspace(1, 0,
/// steps + 1)`, 0 kept.
fn flux2_measured(g: &mut PolicyGraph<'_>, family: &Family) -> Result<String, SynthError> {
    let steps = family.computed_steps();
    let width = g.input("width")?;
    let height = g.input("height")?;
    let (width, height) = (
        g.cast(&width, DataType::DOUBLE),
        g.cast(&height, DataType::DOUBLE),
    );
    let area = g.op("Mul", &[&width, &height]);
    let cell = g.d(256.0);
    let tokens = g.op("Div", &[&area, &cell]);
    let tokens = g.op("Round", &[&tokens]);
    let line = |g: &mut PolicyGraph<'_>, (a, b): (f64, f64)| {
        let (a, b) = (g.d(a), g.d(b));
        let at = g.op("Mul", &[&a, &tokens]);
        g.op("Add", &[&at, &b])
    };
    let (many, few) = super::shifted::FLUX2_FIT;
    let m_200 = line(g, many);
    let m_10 = line(g, few);
    // Through (10 steps, m_10) and (200 steps, m_200), at the run's
    // steps, in the import's order of operations.
    let rise = g.op("Sub", &[&m_200, &m_10]);
    let span = g.d(190.0);
    let slope = g.op("Div", &[&rise, &span]);
    let far = g.d(200.0);
    let drop = g.op("Mul", &[&far, &slope]);
    let base = g.op("Sub", &[&m_200, &drop]);
    let count = g.d(steps as f64);
    let along = g.op("Mul", &[&slope, &count]);
    let fitted = g.op("Add", &[&along, &base]);
    let limit = g.d(super::shifted::FLUX2_STEPLESS_ABOVE);
    let above = g.op("Greater", &[&tokens, &limit]);
    let mu = g.op("Where", &[&above, &m_200, &fitted]);
    let shift = g.op("Exp", &[&mu]);
    let t: Vec<f64> = linspace(1.0, 0.0, steps + 1);
    let t = g.b.f64s(&t, &[t.len() as i64]);
    let (zero, one) = (g.d(0.0), g.d(1.0));
    let at_zero = g.op("Equal", &[&t, &zero]);
    let safe = g.op("Where", &[&at_zero, &one, &t]);
    let inverse = g.op("Div", &[&one, &safe]);
    let rest = g.op("Sub", &[&inverse, &one]);
    let bottom = g.op("Add", &[&shift, &rest]);
    let sigma = g.op("Div", &[&shift, &bottom]);
    let sigma = g.op("Where", &[&at_zero, &zero, &sigma]);
    Ok(g.cast(&sigma, DataType::FLOAT))
}

/// `sigmas` reversed where the schedule is flipped, a first 0 made
/// [`FLIPPED_ZERO`].
fn flip(g: &mut PolicyGraph<'_>, family: &Family, sigmas: &str) -> String {
    if !family.schedule.flip {
        return sigmas.to_string();
    }
    let (last, before_first, axis, backwards) = (
        g.b.vec_i64(&[-1]),
        g.b.vec_i64(&[i64::MIN]),
        g.b.vec_i64(&[0]),
        g.b.vec_i64(&[-1]),
    );
    let reversed = g.op("Slice", &[sigmas, &last, &before_first, &axis, &backwards]);
    let zero = g.f(0.0);
    let small = g.f(FLIPPED_ZERO);
    let (start, second, end) = (
        g.b.vec_i64(&[0]),
        g.b.vec_i64(&[1]),
        g.b.vec_i64(&[i64::MAX]),
    );
    let first = g.op("Slice", &[&reversed, &start, &second]);
    let rest = g.op("Slice", &[&reversed, &second, &end]);
    let is_zero = g.op("Equal", &[&first, &zero]);
    let first = g.op("Where", &[&is_zero, &small, &first]);
    g.op_with("Concat", &[&first, &rest], &[("axis", Attr::Int(0))])
}

/// `sigmas` with its first entry replaced where the schedule sets it
/// (`SetFirstSigma`).
fn set_first(g: &mut PolicyGraph<'_>, family: &Family, sigmas: &str) -> String {
    let Some(first) = family.schedule.first else {
        return sigmas.to_string();
    };
    let (second, end) = (g.b.vec_i64(&[1]), g.b.vec_i64(&[i64::MAX]));
    let rest = g.op("Slice", &[sigmas, &second, &end]);
    let first = g.b.vec_f32(&[first as f32]);
    g.op_with("Concat", &[&first, &rest], &[("axis", Attr::Int(0))])
}

/// `sigmas` without its penultimate entry where the family discards it.
fn discard_penultimate(g: &mut PolicyGraph<'_>, family: &Family, sigmas: &str) -> String {
    if !family.schedule.discard_penultimate {
        return sigmas.to_string();
    }
    let (zero, penultimate, last, end) = (
        g.b.vec_i64(&[0]),
        g.b.vec_i64(&[-2]),
        g.b.vec_i64(&[-1]),
        g.b.vec_i64(&[i64::MAX]),
    );
    let head = g.op("Slice", &[sigmas, &zero, &penultimate]);
    let tail = g.op("Slice", &[sigmas, &last, &end]);
    g.op_with("Concat", &[&head, &tail], &[("axis", Attr::Int(0))])
}

/// `a t / (1 + (a - 1) t)`.
fn shifted(g: &mut PolicyGraph<'_>, alpha: &str, t: &str) -> String {
    let one = g.f(1.0);
    let top = g.op("Mul", &[alpha, t]);
    let a1 = g.op("Sub", &[alpha, &one]);
    let a1t = g.op("Mul", &[&a1, t]);
    let bottom = g.op("Add", &[&one, &a1t]);
    g.op("Div", &[&top, &bottom])
}

/// The shift factor `a` from the schedule's shift input ports: `shift`
/// itself, or Flux's `exp(mu)` with `mu` linear in the latent token count
/// between (256, base_shift) and (4096, max_shift).
pub(super) fn shift_alpha(g: &mut PolicyGraph<'_>) -> Result<String, SynthError> {
    if g.has_input("shift") {
        return g.input("shift");
    }
    let max_shift = g.input("max_shift")?;
    let base_shift = g.input("base_shift")?;
    let width = g.input("width")?;
    let height = g.input("height")?;
    let span = g.op("Sub", &[&max_shift, &base_shift]);
    let per_token_scale = g.f(1.0 / (4096.0 - 256.0));
    let slope = g.op("Mul", &[&span, &per_token_scale]);
    let area = g.op("Mul", &[&width, &height]);
    let per_token = g.f(1.0 / (8.0 * 8.0 * 2.0 * 2.0));
    let tokens = g.op("Mul", &[&area, &per_token]);
    let x1 = g.f(256.0);
    let above = g.op("Sub", &[&tokens, &x1]);
    let rise = g.op("Mul", &[&slope, &above]);
    let mu = g.op("Add", &[&base_shift, &rise]);
    Ok(g.op("Exp", &[&mu]))
}
