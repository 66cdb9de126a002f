//! Samplers that call the model three times per step (k-diffusion's and
//! ComfyUI's forms; `seeds_3` written below for epsilon models, on flow
//! models in their half log-SNR as `Step::half_log_snr` says: levels of
//! half log-SNR `lambda + r h`, `x` weighed by `alpha_k / alpha` and the
//! estimates by `alpha_k`): the first call's
//! estimate `d` at `(x, s)`; `solver_midpoint` gives the second call its
//! point, `solver_third_call` the third's (from the second's estimate,
//! input `second`), and `solver_step` finishes the step from all three
//! (`third`). Each policy recomputes the points it needs from the same
//! inputs; a call the step does not need is made at `(x, s)` and dropped.
//! - `heunpp2` (Heun++ 2, s_churn 0): with `s_0` the run's first sigma,
//!   `s_end` its last and `s''` the sigma after `s'`: a step to `s_end` is
//!   Euler's; a step with `s'' = s_end` is Heun's with `d' = (1 - w) d +
//!   w d_2`, `w = s' / (2 s_0)`, `x_2 = x + d (s' - s)`; otherwise Heun++:
//!   `x_3 = x_2 + d_2 (s'' - s')`, `d' = (1 - w_2 - w_3) d + w_2 d_2 + w_3
//!   d_3`, `w_2 = s' / (3 s_0)`, `w_3 = s'' / (3 s_0)`; then `x + d' (s' -
//!   s)`. Sigmas compare by value, as ComfyUI's do.
//! - `seeds_3` (SEEDS-3, eta 1, `r_1 = 1/3`, `r_2 = 2/3`, data prediction,
//!   half log-SNR `-ln s`): with `h = ln(s / s')`, `s_k = s e^(-r_k h)`,
//!   `q_k = (s_k / s)^2` and `phi_2(z) = (e^z - 1 - z) / z`, the points are
//!   `x_2 = q_1 x + (1 - q_1) D + s_1 N_1` and
//!   `x_3 = q_2 x + (1 - q_2 + a) D - a D_2 + s_2 N_2` with
//!   `a = (r_2 / r_1) phi_2(-2 r_2 h)`, and the step ends at
//!   `x' = q x + (1 - q + b) D - b D_3 + s' N_3` with
//!   `b = phi_2(-2h) / r_2`; the noise is `N_1 = sqrt(1 - q_1) n_1` and
//!   `N_k = N_(k-1) e^(g h) + sqrt(1 - e^(2 g h)) n_k` with
//!   `g = r_(k-1) - r_k` (`r_3 = 1`), where `n_1`, `n_2` and `n_3` are the
//!   seeded noise at offsets `-(step + 1)`, `-(step + 1) - 2^32` and
//!   `step + 1`; a step to 0 returns `D`.
//! - `dpm_fast` (DPM-Solver-fast, eta 0) steps over its own grid
//!   (laid by its `solver_sigmas` policy), in `t = -ln s` with `h = t' - t`, at
//!   order 3 but for the last one or two steps (k-diffusion's `orders`,
//!   the model called `steps` times in all). Its calls are at
//!   `u_1 = x - s_1 (e^(r_1 h) - 1) e` with `s_1 = s e^(-r_1 h)` and
//!   `u_2 = x - s_2 (e^(r_2 h) - 1) e - s_2 (r_2 / r_1) c (e_1 - e)` with
//!   `c = (e^(r_2 h) - 1) / (r_2 h) - 1`. Order 1 gives
//!   `x_1 = x - s' (e^h - 1) e`, order 2 (`r_1 = 1/2`) gives
//!   `x_1 - s' / (2 r_1) (e^h - 1) (e_1 - e)`, and order 3
//!   (`r_1 = 1/3`, `r_2 = 2/3`) gives `x_1 - s' / r_2 c' (e_2 - e)` with
//!   `c' = (e^h - 1) / h - 1`; `e`, `e_1` and `e_2` are the calls' noise
//!   estimates. A step of length 0 leaves `x` alone.

use super::SynthError;
use super::adaptive::Controller;
use super::graph::{Family, PolicyGraph};
use super::model_call::{ModelCall, denoised_at};
use super::steps::{Step, StepInputs, combine, fast_steps, fresh_noise, noise_at};
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// A three-call sampler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Heunpp2,
    Seeds3,
    DpmFast,
    /// `dpm_adaptive`: DPM-Solver-fast's order-3 calls over a step its
    /// controller sizes (`super::adaptive`).
    DpmAdaptive,
}

impl Kind {
    /// The kind of ComfyUI sampler `name`, if it is one of these.
    pub fn of(name: &str) -> Option<Kind> {
        Some(match name {
            "heunpp2" => Kind::Heunpp2,
            "seeds_3" => Kind::Seeds3,
            "dpm_fast" => Kind::DpmFast,
            "dpm_adaptive" => Kind::DpmAdaptive,
            _ => return None,
        })
    }
}

/// SEEDS-3's and DPM-Solver-fast's third-order fractions of the step.
const R_1: f64 = 1.0 / 3.0;
const R_2: f64 = 2.0 / 3.0;

/// Where a model call is made: its sample and per-row float64 sigma.
pub(super) struct Point {
    pub sample: String,
    pub sigma: String,
}

/// `solver_third_call`: the third call's model input and timestep (as
/// outputs `third_input` and `third_timestep`).
pub fn policy(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let kind = Kind::of(&family.solver)
        .ok_or_else(|| g.error(format!("`{}` makes no third model call", family.solver)))?;
    let call = ModelCall::on(g, family)?;
    let inputs = StepInputs::read(g, family)?;
    let at = inputs.at();
    let frame = Frame::of(g, kind, &at)?;
    let second = frame.second(g, &at)?;
    let d2 = at.estimate(g, "second", &second.sample, &second.sigma)?;
    let third = frame.third(g, &at, &second, &d2)?;
    call.build(g, &third.sample, &third.sigma, "third")
}

/// The second call's point (for `solver_midpoint`).
pub(super) fn second_point(
    g: &mut PolicyGraph<'_>,
    kind: Kind,
    at: &Step<'_>,
) -> Result<Point, SynthError> {
    Frame::of(g, kind, at)?.second(g, at)
}

/// The step's end from the three calls' estimates (inputs `second` and
/// `third`).
pub fn step(g: &mut PolicyGraph<'_>, kind: Kind, at: &Step<'_>) -> Result<String, SynthError> {
    let frame = Frame::of(g, kind, at)?;
    let second = frame.second(g, at)?;
    let d2 = at.estimate(g, "second", &second.sample, &second.sigma)?;
    let third = frame.third(g, at, &second, &d2)?;
    let d3 = at.estimate(g, "third", &third.sample, &third.sigma)?;
    match &frame.controller {
        Some(controller) => {
            let ends = frame.dpm_solver(g, at, [&d2, &d3]);
            super::adaptive::finish(g, at, controller, [&ends.low, &ends.stepped])
        }
        None => frame.finish(g, at, &third, [&d2, &d3]),
    }
}

/// A DPM-Solver step's ends: the second-order one (`r_1` of the frame)
/// and the step at the row's order (the sample where the step is empty).
struct DpmSolverEnds {
    low: String,
    stepped: String,
}

/// A step's facts every policy of the sampler recomputes (per-row float64
/// sigmas).
struct Frame {
    kind: Kind,
    /// The first call's estimate as epsilon, at the step's own sigma.
    d: String,
    sigma: String,
    next: String,
    /// Rows whose step is a plain first-order one (or none): the calls
    /// after the first are made at `(x, s)`.
    first_order: String,
    /// Rows whose third call is not needed.
    no_third: String,
    /// `heunpp2`: `s''` and the run's first sigma.
    after_next: String,
    start: String,
    /// `dpm_fast`: the step's order and `h`; `seeds_3`: `h`.
    order: String,
    h: String,
    /// `dpm_adaptive`: its controller's place.
    controller: Option<Controller>,
}

impl Frame {
    fn of(g: &mut PolicyGraph<'_>, kind: Kind, at: &Step<'_>) -> Result<Frame, SynthError> {
        let sigma = g.cast(at.sigma, DataType::DOUBLE);
        let (next, to_zero) = at.next_sigma(g);
        let zero = g.d(0.0);
        let mut frame = Frame {
            kind,
            d: at.d.to_string(),
            sigma,
            next,
            first_order: to_zero.clone(),
            no_third: to_zero,
            after_next: zero.clone(),
            start: zero.clone(),
            order: zero.clone(),
            h: zero,
            controller: None,
        };
        match kind {
            Kind::Heunpp2 => frame.heunpp2(g, at)?,
            Kind::Seeds3 => {
                // h = lambda' - lambda (a step to 0 takes s' = s / 2; dropped).
                let half = g.d(0.5);
                let half_sigma = g.op("Mul", &[&frame.sigma, &half]);
                let safe = g.op("Where", &[&frame.first_order, &half_sigma, &frame.next]);
                let (from, to) = (at.half_log_snr(g, &frame.sigma), at.half_log_snr(g, &safe));
                frame.h = g.op("Sub", &[&to, &from]);
            }
            Kind::DpmFast => frame.dpm_fast(g, at)?,
            Kind::DpmAdaptive => {
                let controller = Controller::read(g)?;
                let [sigma, next, size] = controller.sigmas(g, at.x);
                let (zero, three) = (g.d(0.0), g.d(3.0));
                let still = g.op("Equal", &[&size, &zero]);
                // The first call was made at the controller's sigma, not
                // the schedule's.
                let d = at.estimate(g, "estimate", at.x, &sigma)?;
                frame = Frame {
                    d,
                    sigma,
                    next,
                    first_order: still.clone(),
                    no_third: still,
                    order: three,
                    h: size,
                    controller: Some(controller),
                    ..frame
                };
            }
        }
        Ok(frame)
    }

    /// Heun++'s cases: a step to `s_end` is first-order, one whose `s''`
    /// is `s_end` makes no third call.
    fn heunpp2(&mut self, g: &mut PolicyGraph<'_>, at: &Step<'_>) -> Result<(), SynthError> {
        let iteration = g.input("iteration")?;
        let position = at.run_position(g, &iteration);
        let end = at.window_sigma(g, &position.last);
        let two = g.i(2);
        let after = g.op("Add", &[at.step, &two]);
        let after = g.op("Min", &[&after, &position.last]);
        self.after_next = at.window_sigma(g, &after);
        let first = g.op("Sub", &[at.step, &iteration]);
        let start = g.gather(at.schedule, &first);
        self.start = g.cast(&start, DataType::DOUBLE);
        self.first_order = g.op("Equal", &[&self.next, &end]);
        let heun = g.op("Equal", &[&self.after_next, &end]);
        self.no_third = g.op("Or", &[&self.first_order, &heun]);
        Ok(())
    }

    /// DPM-Solver-fast's `h` and order (k-diffusion's `orders` for the
    /// run's `steps` calls, one past them on the grid's padding).
    fn dpm_fast(&mut self, g: &mut PolicyGraph<'_>, at: &Step<'_>) -> Result<(), SynthError> {
        // Of the run's n calls, floor(n / 3) + 1 = m steps: order 3 but
        // for the last two (2, 1) where 3 divides n, else the last (n mod
        // 3); none past them.
        let iteration = g.input("iteration")?;
        let n = at.run_position(g, &iteration).steps;
        let (one_i, two_i, three_i) = (g.i(1), g.i(2), g.i(3));
        let m = fast_steps(g, &n);
        let rest = g.op("Mod", &[&n, &three_i]);
        let zero_i = g.i(0);
        let divisible = g.op("Equal", &[&rest, &zero_i]);
        let (m_2, m_1) = (g.op("Sub", &[&m, &two_i]), g.op("Sub", &[&m, &one_i]));
        let cut = g.op("Where", &[&divisible, &m_2, &m_1]);
        let tail = g.op("Where", &[&divisible, &two_i, &rest]);
        let at_cut = g.op("Equal", &[&iteration, &cut]);
        let tail = g.op("Where", &[&at_cut, &tail, &one_i]);
        let before = g.op("Less", &[&iteration, &cut]);
        let order = g.op("Where", &[&before, &three_i, &tail]);
        self.order = g.cast(&order, DataType::DOUBLE);
        // Its grid ends at the run's last nonzero sigma: the next point is
        // the grid's, even at a fully denoising window's end step (a
        // one-step window's grid stands still there, as ComfyUI's does).
        self.next = at.grid_next(g);
        let ratio = g.op("Div", &[&self.sigma, &self.next]);
        self.h = g.op("Log", &[&ratio]);
        let zero = g.d(0.0);
        let (one, three) = (g.d(1.0), g.d(3.0));
        let still = g.op("Equal", &[&self.h, &zero]);
        let single = g.op("Equal", &[&self.order, &one]);
        self.first_order = g.op("Or", &[&still, &single]);
        let lower = g.op("Less", &[&self.order, &three]);
        self.no_third = g.op("Or", &[&still, &lower]);
        Ok(())
    }

    /// DPM-Solver-fast's `r_1`: 1/2 at order 2, else 1/3.
    fn r_1(&self, g: &mut PolicyGraph<'_>) -> String {
        let two = g.d(2.0);
        let second_order = g.op("Equal", &[&self.order, &two]);
        let (half, third) = (g.d(0.5), g.d(R_1));
        g.op("Where", &[&second_order, &half, &third])
    }

    /// The second call's point.
    fn second(&self, g: &mut PolicyGraph<'_>, at: &Step<'_>) -> Result<Point, SynthError> {
        let one = g.d(1.0);
        let point = match self.kind {
            Kind::Heunpp2 => {
                let dt = g.op("Sub", &[&self.next, &self.sigma]);
                let x2 = combine(g, &[(one, at.x.to_string()), (dt, self.d.clone())]);
                Point {
                    sample: x2,
                    sigma: self.next.clone(),
                }
            }
            Kind::Seeds3 => {
                let (s1, q1) = self.seeds_level(g, at, R_1);
                let x2 = self.seeds_point(g, at, (&q1, &s1), None, 1)?;
                Point {
                    sample: x2,
                    sigma: s1,
                }
            }
            Kind::DpmFast | Kind::DpmAdaptive => {
                let r_1 = self.r_1(g);
                self.dpm_fast_point(g, at, r_1, None)
            }
        };
        Ok(self.at_own_sigma(g, at, &self.first_order, point))
    }

    /// The third call's point, from the second's point and estimate `d2`.
    fn third(
        &self,
        g: &mut PolicyGraph<'_>,
        at: &Step<'_>,
        second: &Point,
        d2: &str,
    ) -> Result<Point, SynthError> {
        let one = g.d(1.0);
        let point = match self.kind {
            Kind::Heunpp2 => {
                let dt = g.op("Sub", &[&self.after_next, &self.next]);
                let x3 = combine(g, &[(one, second.sample.clone()), (dt, d2.to_string())]);
                Point {
                    sample: x3,
                    sigma: self.after_next.clone(),
                }
            }
            Kind::Seeds3 => {
                let (s2, q2) = self.seeds_level(g, at, R_2);
                let a = self.seeds_weight(g, R_2, R_2 / R_1);
                let denoised_2 = denoised_at(g, &second.sample, &second.sigma, d2);
                let x3 = self.seeds_point(g, at, (&q2, &s2), Some((&a, &denoised_2)), 2)?;
                Point {
                    sample: x3,
                    sigma: s2,
                }
            }
            Kind::DpmFast | Kind::DpmAdaptive => {
                let r_2 = g.d(R_2);
                self.dpm_fast_point(g, at, r_2, Some(d2))
            }
        };
        Ok(self.at_own_sigma(g, at, &self.no_third, point))
    }

    /// The step's end from the second and third calls' estimates.
    fn finish(
        &self,
        g: &mut PolicyGraph<'_>,
        at: &Step<'_>,
        third: &Point,
        [d2, d3]: [&str; 2],
    ) -> Result<String, SynthError> {
        let one = g.d(1.0);
        let (x, d) = (at.x.to_string(), self.d.clone());
        match self.kind {
            Kind::Heunpp2 => {
                let dt = g.op("Sub", &[&self.next, &self.sigma]);
                let euler = combine(g, &[(one.clone(), x.clone()), (dt.clone(), d.clone())]);
                // Heun's weight and Heun++'s two.
                let w = self.share(g, &self.next, 2.0);
                let w_rest = g.op("Sub", &[&one, &w]);
                let heun = self.slope_step(g, &x, &dt, &[(w_rest, d.clone()), (w, d2.into())]);
                let w_2 = self.share(g, &self.next, 3.0);
                let w_3 = self.share(g, &self.after_next, 3.0);
                let w_1 = g.op("Sub", &[&one, &w_2]);
                let w_1 = g.op("Sub", &[&w_1, &w_3]);
                let terms = [(w_1, d), (w_2, d2.into()), (w_3, d3.into())];
                let plus = self.slope_step(g, &x, &dt, &terms);
                let no_third = g.rows(&self.no_third);
                let out = g.op("Where", &[&no_third, &heun, &plus]);
                let first = g.rows(&self.first_order);
                Ok(g.op("Where", &[&first, &euler, &out]))
            }
            Kind::Seeds3 => {
                let (_, q) = self.seeds_level(g, at, 1.0);
                let b = self.seeds_weight(g, 1.0, 1.0 / R_2);
                let denoised_3 = denoised_at(g, &third.sample, &third.sigma, d3);
                let level = (q.as_str(), self.next.as_str());
                let stepped = self.seeds_point(g, at, level, Some((&b, &denoised_3)), 3)?;
                let denoised = at.denoised(g, &self.d);
                Ok(at.denoised_at_zero(g, &self.first_order, &denoised, &stepped))
            }
            Kind::DpmFast | Kind::DpmAdaptive => Ok(self.dpm_solver(g, at, [d2, d3]).stepped),
        }
    }

    /// DPM-Solver's steps of order 1 to 3 from the calls' estimates, and
    /// the one of each row's order.
    fn dpm_solver(
        &self,
        g: &mut PolicyGraph<'_>,
        at: &Step<'_>,
        [d2, d3]: [&str; 2],
    ) -> DpmSolverEnds {
        let one = g.d(1.0);
        let (x, d) = (at.x.to_string(), self.d.clone());
        let sn = self.next.clone();
        let grown = g.op("Exp", &[&self.h]);
        let grown = g.op("Sub", &[&grown, &one]);
        let e1 = g.op("Mul", &[&sn, &grown]);
        let e1 = g.op("Neg", &[&e1]);
        let x_1 = combine(g, &[(one.clone(), x.clone()), (e1, d.clone())]);
        // Order 2: - s' / (2 r_1) (e^h - 1) (e_1 - e).
        let r_1 = self.r_1(g);
        let two_r = g.op("Add", &[&r_1, &r_1]);
        let c2 = g.op("Mul", &[&sn, &grown]);
        let c2 = g.op("Div", &[&c2, &two_r]);
        let c2 = g.op("Neg", &[&c2]);
        let gap_2 = g.op("Sub", &[d2, &d]);
        let x_2 = combine(g, &[(one.clone(), x_1.clone()), (c2, gap_2)]);
        // Order 3: - s' / r_2 ((e^h - 1) / h - 1) (e_2 - e).
        let h = g.nonzero(&self.h);
        let ratio = g.op("Div", &[&grown, &h]);
        let ratio = g.op("Sub", &[&ratio, &one]);
        let c3 = g.op("Mul", &[&sn, &ratio]);
        let k = g.d(-1.0 / R_2);
        let c3 = g.op("Mul", &[&c3, &k]);
        let gap_3 = g.op("Sub", &[d3, &d]);
        let x_3 = combine(g, &[(one, x_1.clone()), (c3, gap_3)]);
        let (two, three) = (g.d(2.0), g.d(3.0));
        let is_3 = g.op("Equal", &[&self.order, &three]);
        let is_3 = g.rows(&is_3);
        let is_2 = g.op("Equal", &[&self.order, &two]);
        let is_2 = g.rows(&is_2);
        let out = g.op("Where", &[&is_2, &x_2, &x_1]);
        let out = g.op("Where", &[&is_3, &x_3, &out]);
        let zero = g.d(0.0);
        let still = g.op("Equal", &[&self.h, &zero]);
        let still = g.rows(&still);
        DpmSolverEnds {
            stepped: g.op("Where", &[&still, &x, &out]),
            low: x_2,
        }
    }

    /// `x + dt sum(w_k d_k)`.
    fn slope_step(
        &self,
        g: &mut PolicyGraph<'_>,
        x: &str,
        dt: &str,
        terms: &[(String, String)],
    ) -> String {
        let one = g.d(1.0);
        let mut all = vec![(one, x.to_string())];
        for (w, d) in terms {
            all.push((g.op("Mul", &[w, dt]), d.clone()));
        }
        combine(g, &all)
    }

    /// Heun++'s weight `sigma / (k s_0)`.
    fn share(&self, g: &mut PolicyGraph<'_>, sigma: &str, k: f64) -> String {
        let k = g.d(k);
        let scaled = g.op("Mul", &[&self.start, &k]);
        let scaled = g.nonzero(&scaled);
        g.op("Div", &[sigma, &scaled])
    }

    /// SEEDS-3's level at fraction `r` of the step: the sigma `s_r` of
    /// half log-SNR `lambda + r h` (`s e^(-r h)` on epsilon models) and
    /// `q_r = e^(-2 r h)`.
    fn seeds_level(&self, g: &mut PolicyGraph<'_>, at: &Step<'_>, r: f64) -> (String, String) {
        let minus_r = g.d(-r);
        let rh = g.op("Mul", &[&self.h, &minus_r]);
        let decay = g.op("Exp", &[&rh]);
        let lambda = at.half_log_snr(g, &self.sigma);
        let moved = g.op("Sub", &[&lambda, &rh]);
        let level = at.sigma_of_half_log_snr(g, &moved);
        (level, g.op("Mul", &[&decay, &decay]))
    }

    /// A SEEDS-3 point at `(q, level)`: `(alpha_k / alpha) q x + alpha_k
    /// (1 - q + w) D - alpha_k w D_k + level N_k`, with `alpha_k` the signal
    /// scale at `level` (see `Step::signal`), `(w, D_k)` the weighted later
    /// estimate, if any, and `N_k` the noise of point `k`.
    fn seeds_point(
        &self,
        g: &mut PolicyGraph<'_>,
        at: &Step<'_>,
        (q, level): (&str, &str),
        weighted: Option<(&str, &str)>,
        k: usize,
    ) -> Result<String, SynthError> {
        let one = g.d(1.0);
        let denoised = at.denoised(g, &self.d);
        let noise = self.seeds_noise(g, at, k)?;
        let (carry, alpha) = at.signal_ratio(g, &self.sigma, level);
        let mut rest = g.op("Sub", &[&one, q]);
        let mut terms = vec![(g.op("Mul", &[q, &carry]), at.x.to_string())];
        if let Some((w, later)) = weighted {
            rest = g.op("Add", &[&rest, w]);
            let w = g.op("Mul", &[w, &alpha]);
            terms.push((g.op("Neg", &[&w]), later.to_string()));
        }
        terms.push((g.op("Mul", &[&rest, &alpha]), denoised));
        terms.push((level.to_string(), noise));
        Ok(combine(g, &terms))
    }

    /// SEEDS-3's weight `scale phi_2(-2 r h)`, `phi_2(z) = (e^z - 1 - z) / z`.
    fn seeds_weight(&self, g: &mut PolicyGraph<'_>, r: f64, scale: f64) -> String {
        let k = g.d(-2.0 * r);
        let z = g.op("Mul", &[&self.h, &k]);
        let e = g.op("Exp", &[&z]);
        let one = g.d(1.0);
        let em1 = g.op("Sub", &[&e, &one]);
        let top = g.op("Sub", &[&em1, &z]);
        let z = g.nonzero(&z);
        let phi = g.op("Div", &[&top, &z]);
        let scale = g.d(scale);
        g.op("Mul", &[&phi, &scale])
    }

    /// SEEDS-3's noise `N_k` at point `k` (1 and 2 the calls, 3 the step's
    /// end).
    fn seeds_noise(
        &self,
        g: &mut PolicyGraph<'_>,
        at: &Step<'_>,
        k: usize,
    ) -> Result<String, SynthError> {
        let one = g.d(1.0);
        let (_, q1) = self.seeds_level(g, at, R_1);
        let keep = g.op("Sub", &[&one, &q1]);
        let keep = g.op("Sqrt", &[&keep]);
        let n1 = call_noise(g, at, 0)?;
        let mut noise = combine(g, &[(keep, n1)]);
        let fractions = [R_1, R_2, 1.0];
        for (stage, pair) in fractions.windows(2).enumerate().take(k - 1) {
            // N e^(g h) + sqrt(1 - e^(2 g h)) n, g = r_(k-1) - r_k.
            let gap = g.d(pair[0] - pair[1]);
            let gh = g.op("Mul", &[&self.h, &gap]);
            let carried = g.op("Exp", &[&gh]);
            let two = g.d(2.0);
            let twice = g.op("Mul", &[&gh, &two]);
            let spread = g.op("Exp", &[&twice]);
            let spread = g.op("Sub", &[&one, &spread]);
            let spread = g.op("Sqrt", &[&spread]);
            let fresh = match stage {
                0 => call_noise(g, at, 1)?,
                _ => fresh_noise(g, at.x, at.step)?,
            };
            noise = combine(g, &[(carried, noise), (spread, fresh)]);
        }
        Ok(noise)
    }

    /// DPM-Solver-fast's call points: `u_1` at fraction `r` (`r_1`) of the
    /// step, or `u_2` at `r` (`r_2`) given the `u_1` call's estimate `d1`.
    fn dpm_fast_point(
        &self,
        g: &mut PolicyGraph<'_>,
        at: &Step<'_>,
        r: String,
        d1: Option<&str>,
    ) -> Point {
        let rh = g.op("Mul", &[&r, &self.h]);
        let minus = g.op("Neg", &[&rh]);
        let decay = g.op("Exp", &[&minus]);
        let level = g.op("Mul", &[&self.sigma, &decay]);
        let grown = g.op("Exp", &[&rh]);
        let one = g.d(1.0);
        let grown = g.op("Sub", &[&grown, &one]);
        let c = g.op("Mul", &[&level, &grown]);
        let c = g.op("Neg", &[&c]);
        let mut terms = vec![(one.clone(), at.x.to_string()), (c, self.d.clone())];
        if let Some(d1) = d1 {
            // - s_2 (r_2 / r_1) ((e^(r_2 h) - 1) / (r_2 h) - 1) (e_1 - e).
            let rh_safe = g.nonzero(&rh);
            let ratio = g.op("Div", &[&grown, &rh_safe]);
            let ratio = g.op("Sub", &[&ratio, &one]);
            let c = g.op("Mul", &[&level, &ratio]);
            let k = g.d(-R_2 / R_1);
            let c = g.op("Mul", &[&c, &k]);
            let gap = g.op("Sub", &[d1, &self.d]);
            terms.push((c, gap));
        }
        Point {
            sample: combine(g, &terms),
            sigma: level,
        }
    }

    /// `point`, or `(x, s)` on the rows of `unneeded`.
    fn at_own_sigma(
        &self,
        g: &mut PolicyGraph<'_>,
        at: &Step<'_>,
        unneeded: &str,
        point: Point,
    ) -> Point {
        let rows = g.rows(unneeded);
        Point {
            sample: g.op("Where", &[&rows, at.x, &point.sample]),
            sigma: g.op("Where", &[unneeded, &self.sigma, &point.sigma]),
        }
    }
}

/// SEEDS-3's call noise `n_1` (`k` 0: offset `-(step + 1)`) or `n_2` (`k`
/// 1: `-(step + 1) - 2^32`).
fn call_noise(g: &mut PolicyGraph<'_>, at: &Step<'_>, k: i64) -> Result<String, SynthError> {
    let one = g.i(1);
    let after = g.op("Add", &[at.step, &one]);
    let offset = g.op("Neg", &[&after]);
    let shift = g.i(k << 32);
    let offset = g.op("Sub", &[&offset, &shift]);
    noise_at(g, at.x, &offset)
}
