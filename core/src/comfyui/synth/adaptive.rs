//! `dpm_adaptive`: DPM-Solver-23 with an adaptive step size, k-diffusion's
//! `dpm_solver_adaptive` as ComfyUI's `KSampler` runs it (order 3, rtol
//! 0.05, atol 0.0078, h_init 0.05, PID coefficients p 0, i 1, d 0,
//! accept_safety 0.81, eta 0) from the run's first sigma to its last
//! nonzero one, in `t = -ln sigma`.
//!
//! A state cell (input `control`, output `next_control`) carries `(t, h)`
//! as float32; iteration 0 starts at the first sigma's `t` with `h_init`.
//! Each iteration tries the step from `t` to `t' = min(t_end, t + h)`:
//! calls at `t`, `t + r/3` and `t + 2r/3` (`r = t' - t`; the points are
//! DPM-Solver-fast's order-3 ones, `super::three_calls`), `x_low` the
//! second-order step with `r_1 = 1/3` and `x_high` the third-order one.
//! The error is the root mean square, over the whole batch, of `(x_low -
//! x_high) / max(atol, rtol max(|x_low|, |x_prev|))`; the controller's
//! factor `1 + atan((1 / (error + 1e-8))^(1/3) - 1)` (Atan in float32)
//! accepts the step where it is at least 0.81 (then `x = x_high`, `x_prev
//! = x_low`, `t = t'`) and scales `h` by it either way. `x_prev` (input
//! `previous_low`, output `low`) starts as the first sample. The step says
//! the loop goes on (`continue`) while `t < t_end - 1e-5`.

use super::SynthError;
use super::graph::{Family, PolicyGraph};
use super::model_call::ModelCall;
use super::steps::{Step, fully_denoising, last_nonzero_sigma};
use wfstudio_onnx::builder::Attr;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

const RTOL: f64 = 0.05;
const ATOL: f64 = 0.0078;
const H_INIT: f64 = 0.05;
const ACCEPT_SAFETY: f64 = 0.81;
const ERROR_EPS: f64 = 1e-8;
/// The integral coefficient over the order: `1 / 3`.
const EXPONENT: f64 = 1.0 / 3.0;
/// How close to `t_end` the run counts as done.
const END_TOLERANCE: f64 = 1e-5;

/// The controller's place at this iteration (float64 `[1]`).
pub(super) struct Controller {
    /// Where the step starts, its size and where it would end.
    pub t: String,
    pub h: String,
    pub t_next: String,
    /// The run's end: `-ln` of its last nonzero sigma.
    pub t_end: String,
}

impl Controller {
    /// Reads inputs `control`, `iteration`, `step` and `schedule` (the run
    /// starts at schedule index `step - iteration` and ends at `end_step`,
    /// or the schedule's end without it).
    pub(super) fn read(g: &mut PolicyGraph<'_>) -> Result<Controller, SynthError> {
        let control = g.input("control")?;
        let iteration = g.input("iteration")?;
        let step = g.input("step")?;
        let schedule = g.input("schedule")?;
        let zero = g.i(0);
        let first_row = g.b.vec_i64(&[0]);
        let iteration = g.gather(&iteration, &first_row);
        let step = g.gather(&step, &first_row);
        let start = g.op("Sub", &[&step, &iteration]);
        let starting = g.op("Equal", &[&iteration, &zero]);
        let stored = g.cast(&control, DataType::DOUBLE);
        let (t_at, h_at) = (g.b.vec_i64(&[0]), g.b.vec_i64(&[1]));
        let t_stored = g.gather(&stored, &t_at);
        let h_stored = g.gather(&stored, &h_at);
        let sigma_0 = g.gather(&schedule, &start);
        let t_start = minus_log(g, &sigma_0);
        let one = g.i(1);
        let length = g.op("Shape", &[&schedule]);
        let mut last = g.op("Sub", &[&length, &one]);
        if g.has_input("end_step") {
            let end = g.input("end_step")?;
            last = g.op("Min", &[&last, &end]);
        }
        let sigmas = g.cast(&schedule, DataType::DOUBLE);
        let full = fully_denoising(g);
        let sigma_min = last_nonzero_sigma(g, &sigmas, &last, full);
        let t_end = minus_log(g, &sigma_min);
        let t = g.op("Where", &[&starting, &t_start, &t_stored]);
        let h_init = g.d(H_INIT);
        let h = g.op("Where", &[&starting, &h_init, &h_stored]);
        let reach = g.op("Add", &[&t, &h]);
        let t_next = g.op("Min", &[&t_end, &reach]);
        Ok(Controller {
            t,
            h,
            t_next,
            t_end,
        })
    }

    /// The step's sigmas per row (float64, as rows of `x`) and its size
    /// `t' - t`.
    pub(super) fn sigmas(&self, g: &mut PolicyGraph<'_>, x: &str) -> [String; 3] {
        let rows = g.op_with("Shape", &[x], &[("end", Attr::Int(1))]);
        let mut per_row = |value: &str| g.op("Expand", &[value, &rows]);
        let (t, t_next) = (per_row(&self.t), per_row(&self.t_next));
        let size = g.op("Sub", &[&t_next, &t]);
        [sigma_of(g, &t), sigma_of(g, &t_next), size]
    }
}

/// `-ln sigma` of float32 `sigma`, as float64.
fn minus_log(g: &mut PolicyGraph<'_>, sigma: &str) -> String {
    let sigma = g.cast(sigma, DataType::DOUBLE);
    let log = g.op("Log", &[&sigma]);
    g.op("Neg", &[&log])
}

/// `e^-t`.
fn sigma_of(g: &mut PolicyGraph<'_>, t: &str) -> String {
    let minus = g.op("Neg", &[t]);
    g.op("Exp", &[&minus])
}

/// `solver_first_call`: the first call's model input and timestep at the
/// controller's `t` (outputs `first_input`, `first_timestep`).
pub fn first_call(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let call = ModelCall::on(g, family)?;
    let sample = g.input("sample")?;
    let controller = Controller::read(g)?;
    let [sigma, _, _] = controller.sigmas(g, &sample);
    call.build(g, &sample, &sigma, "first")
}

/// The step's end from its second-order (`x_low`, with `r_1 = 1/3`) and
/// third-order (`x_high`) ends: the accepted step or the sample as it was,
/// with outputs `low`, `next_control` and `continue`.
pub(super) fn finish(
    g: &mut PolicyGraph<'_>,
    at: &Step<'_>,
    controller: &Controller,
    [x_low, x_high]: [&str; 2],
) -> Result<String, SynthError> {
    let previous = g.input("previous_low")?;
    let error = error(g, x_low, x_high, &previous);
    // The controller: factor = 1 + atan(inv^(1/3) - 1).
    let eps = g.d(ERROR_EPS);
    let padded = g.op("Add", &[&error, &eps]);
    let unit = g.d(1.0);
    let inverse = g.op("Div", &[&unit, &padded]);
    let exponent = g.d(EXPONENT);
    let factor = g.op("Pow", &[&inverse, &exponent]);
    let lean = g.op("Sub", &[&factor, &unit]);
    let lean = g.cast(&lean, DataType::FLOAT);
    let turned = g.op("Atan", &[&lean]);
    let turned = g.cast(&turned, DataType::DOUBLE);
    let factor = g.op("Add", &[&unit, &turned]);
    let safety = g.d(ACCEPT_SAFETY);
    let accept = g.op("GreaterOrEqual", &[&factor, &safety]);
    let h = g.op("Mul", &[&controller.h, &factor]);
    let t = g.op("Where", &[&accept, &controller.t_next, &controller.t]);
    let control = g.op_with("Concat", &[&t, &h], &[("axis", Attr::Int(0))]);
    let control = g.cast(&control, DataType::FLOAT);
    g.output(&control, "next_control")?;
    let tolerance = g.d(END_TOLERANCE);
    let end = g.op("Sub", &[&controller.t_end, &tolerance]);
    let going = g.op("Less", &[&t, &end]);
    g.output(&going, "continue")?;
    let low = g.op("Where", &[&accept, x_low, &previous]);
    g.output(&low, "low")?;
    Ok(g.op("Where", &[&accept, x_high, at.x]))
}

/// The root mean square over every element of `(low - high) / max(atol,
/// rtol max(|low|, |previous|))`, as float64 `[1]`.
fn error(g: &mut PolicyGraph<'_>, low: &str, high: &str, previous: &str) -> String {
    let (a, b) = (g.op("Abs", &[low]), g.op("Abs", &[previous]));
    let larger = g.op("Max", &[&a, &b]);
    let rtol = g.f(RTOL);
    let relative = g.op("Mul", &[&larger, &rtol]);
    let atol = g.f(ATOL);
    let delta = g.op("Max", &[&relative, &atol]);
    let gap = g.op("Sub", &[low, high]);
    let ratio = g.op("Div", &[&gap, &delta]);
    let ratio = g.cast(&ratio, DataType::DOUBLE);
    let squares = g.op("Mul", &[&ratio, &ratio]);
    let total = g.op_with("ReduceSum", &[&squares], &[("keepdims", Attr::Int(0))]);
    let shape = g.op("Shape", &[&ratio]);
    let count = g.op_with("ReduceProd", &[&shape], &[("keepdims", Attr::Int(0))]);
    let count = g.cast(&count, DataType::DOUBLE);
    let mean = g.op("Div", &[&total, &count]);
    let rms = g.op("Sqrt", &[&mean]);
    let one = g.b.vec_i64(&[1]);
    g.op("Reshape", &[&rms, &one])
}
