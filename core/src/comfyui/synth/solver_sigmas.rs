//! `solver_sigmas`: the sigmas (output `sigmas`) and the denoiser's
//! timesteps (`timesteps`) a sampler steps by where they are not the
//! schedule's (input `schedule`, `model_timesteps`), over the run from
//! schedule index `start` (0 without that input) to `end` (the schedule's
//! end without it; 0 there for a fully denoising window):
//! - `dpm_fast` (`Needs::grid`) steps over DPM-Solver-fast's grid, as
//!   ComfyUI's `dpm_fast_function` lays it: `floor(n / 3) + 1` steps
//!   evenly spaced in `t = -ln sigma` from the run's first sigma to its last
//!   nonzero one (`n` the run's steps), each point held as float32; past
//!   the grid's end the last point repeats (steps of length 0, which the
//!   solver leaves alone), before `start` the schedule stands.
//! - a half log-SNR sampler on a flow model (`Needs::half_log_snr`):
//!   where the run's first sigma is 1 or more, whose half log-SNR is
//!   infinite, ComfyUI moves it to the model's `percent_to_sigma(1e-4)`,
//!   the shift's sigma at time 0.9999, held as float32
//!   (`offset_first_sigma_for_snr`); the shift comes from the flow's shift
//!   inputs.

use super::SynthError;
use super::estimate::model_timestep;
use super::graph::{Family, PolicyGraph};
use super::sampling::sampler;
use super::schedule::{percent_to_sigma, shift_alpha};
use super::steps::{fast_steps, fully_denoising, last_nonzero_sigma};
use super::tables::ModelSampling;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// Builds the policy for `family`'s sampler.
pub fn build(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    // Every port it is bound to, whichever form reads it.
    g.declare_inputs()?;
    let schedule = g.input("schedule")?;
    let timesteps = g.input("model_timesteps")?;
    let start = match g.has_input("start") {
        true => g.input("start")?,
        false => g.b.vec_i64(&[0]),
    };
    let length = family.run_steps() + 1;
    let indices: Vec<i64> = (0..length as i64).collect();
    let indices = g.b.vec_i64(&indices);
    let (sigmas, timesteps) = match sampler(&family.solver).is_some_and(|k| k.needs.grid) {
        true => {
            let sigmas = grid(g, &schedule, &start, &indices, length)?;
            let sigmas64 = g.cast(&sigmas, DataType::DOUBLE);
            let all = model_timestep(g, &family.sampling, &sigmas64);
            (sigmas, per_step(g, &all, &timesteps))
        }
        false => moved_first(g, family, (&schedule, &timesteps), &start, &indices)?,
    };
    g.output(&sigmas, "sigmas")?;
    g.output(&timesteps, "timesteps")
}

/// DPM-Solver-fast's grid over the run (see the module).
fn grid(
    g: &mut PolicyGraph<'_>,
    schedule: &str,
    start: &str,
    indices: &str,
    length: usize,
) -> Result<String, SynthError> {
    let sigmas = g.cast(schedule, DataType::DOUBLE);
    let last_index = g.b.vec_i64(&[length as i64 - 1]);
    let end = match g.has_input("end") {
        true => {
            let end = g.input("end")?;
            g.op("Min", &[&end, &last_index])
        }
        false => last_index,
    };
    let full = fully_denoising(g);
    let sigma_min = last_nonzero_sigma(g, &sigmas, &end, full);
    let first = g.gather(&sigmas, start);
    let n = g.op("Sub", &[&end, start]);
    let points = fast_steps(g, &n);
    let points = g.cast(&points, DataType::DOUBLE);
    let into = g.op("Sub", &[indices, start]);
    let into = g.cast(&into, DataType::DOUBLE);
    let fraction = g.op("Div", &[&into, &points]);
    let one = g.d(1.0);
    let fraction = g.op("Min", &[&fraction, &one]);
    // -t = ln first + r (ln sigma_min - ln first).
    let (log_first, log_min) = (g.op("Log", &[&first]), g.op("Log", &[&sigma_min]));
    let span = g.op("Sub", &[&log_min, &log_first]);
    let moved = g.op("Mul", &[&fraction, &span]);
    let minus_t = g.op("Add", &[&log_first, &moved]);
    let laid = g.op("Exp", &[&minus_t]);
    let before_run = g.op("Less", &[indices, start]);
    let laid = g.op("Where", &[&before_run, &sigmas, &laid]);
    Ok(g.cast(&laid, DataType::FLOAT))
}

/// The schedule and timesteps with a flow run's first sigma moved (see the
/// module).
fn moved_first(
    g: &mut PolicyGraph<'_>,
    family: &Family,
    (schedule, timesteps): (&str, &str),
    start: &str,
    indices: &str,
) -> Result<(String, String), SynthError> {
    let ModelSampling::Flow { multiplier, .. } = &family.sampling else {
        return Err(g.error("only a flow model's half log-SNR differs from -ln sigma"));
    };
    let alpha = shift_alpha(g)?;
    let moved = percent_to_sigma(g, &alpha, 1e-4);
    let moved = g.cast(&moved, DataType::FLOAT);
    let at_start = g.op("Equal", &[indices, start]);
    let one = g.f(1.0);
    let high = g.op("GreaterOrEqual", &[schedule, &one]);
    let moves = g.op("And", &[&at_start, &high]);
    let sigmas = g.op("Where", &[&moves, &moved, schedule]);
    let head = per_step(g, &moves, timesteps);
    let m = g.f(*multiplier);
    let moved_timestep = g.op("Mul", &[&moved, &m]);
    let timesteps = g.op("Where", &[&head, &moved_timestep, timesteps]);
    Ok((sigmas, timesteps))
}

/// The first entries of per-sigma `values`, one per step as `timesteps`
/// has them (the schedule's last sigma has no step).
fn per_step(g: &mut PolicyGraph<'_>, values: &str, timesteps: &str) -> String {
    let (first, count) = (g.b.vec_i64(&[0]), g.op("Shape", &[timesteps]));
    g.op("Slice", &[values, &first, &count])
}
