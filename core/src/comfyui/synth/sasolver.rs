//! `sa_solver`: SA-Solver (Xue et al. 2023), the stochastic Adams
//! predictor-corrector ComfyUI runs with data prediction (eta 1 between the
//! sigmas at 20% and 80% of the model's timesteps, else 0; s_noise 1;
//! predictor order up to 3, corrector order up to 4, both lowered near the
//! end where the run ends at sigma 0), in the model's half log-SNR
//! `lambda` (see `Step::half_log_snr`: `-ln sigma` on epsilon models; on
//! flow models from the run's first sigma moved below 1 by
//! `solver_sigmas`, which also gives the interval from the run-time
//! shift), the estimates' weights scaled by the step's `alpha`; and
//! `sa_solver_pece`, which evaluates the corrected sample again (a second
//! model call at the step's sigma, `solver_midpoint` giving its input) and
//! takes that estimate for `D_i` from there on, correcting on a step to 0
//! too.
//!
//! Each loop iteration i, after the model's call at step i gives `D_i`:
//! - the corrector (not on the first iteration, nor on a step to 0) makes
//!   the corrected sample of step i from the previous one: `(s_i / s_{i-1})
//!   e^(-tau^2 h) x_c + sum_j b_j D_j + the previous step's noise`, with
//!   `b` the weights of the last `K` estimates over `[lambda_{i-1},
//!   lambda_i]`; without it the corrected sample is the sample itself;
//! - the predictor makes the next sample the same way from the corrected
//!   one over `[lambda_i, lambda_{i+1}]` (the newest estimates, its own
//!   order and tau), plus `s' sqrt(1 - e^(-2 tau^2 h))` of fresh noise;
//!   a step to 0 returns `D_i`. ComfyUI returns the corrected sample where
//!   a run ends with leftover noise; so does the last iteration here.
//!
//! The weights `b_j = sum_p a_jp E_p` integrate each estimate's Lagrange
//! basis polynomial in lambda (monomial coefficients `a_jp`, from the
//! other nodes' elementary symmetric polynomials) against the exponential
//! moments `E_p = sum_(k <= p) (-1)^(p-k) p!/k! (1 + tau^2)^-(p-k) (t^k -
//! s^k e^(-(1 + tau^2) h))`: ComfyUI's `compute_exponential_coeffs` and
//! its Vandermonde solve in closed form. The step's noise is the seeded
//! noise at offset `step + 1` (ComfyUI draws plain normal noise), so the
//! corrector re-draws the previous step's at offset `step`. In float64.

use super::SynthError;
use super::graph::{Family, PolicyGraph};
use super::steps::{Step, combine, final_step, noise_at};
use super::tables::{ModelSampling, Timesteps, sigma_at};
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// Whether `sampler` is SA-Solver, and if so whether it is the PECE form.
pub fn variant(sampler: &str) -> Option<bool> {
    match sampler {
        "sa_solver" => Some(false),
        "sa_solver_pece" => Some(true),
        _ => None,
    }
}

/// The sigmas between which SA-Solver is stochastic: ComfyUI's
/// `percent_to_sigma` of 0.2 and 0.8 on table `sigmas` (the log-linear
/// interpolation at timestep `(1 - percent) * 999`, in the table's index).
fn stochastic_interval(sigmas: &[f64], timesteps: Timesteps) -> (f64, f64) {
    let at = |percent: f64| sigma_at(sigmas, timesteps.percent_index(percent, sigmas.len()));
    (at(0.2), at(0.8))
}

/// The sigmas between which the steps are stochastic, as graph values
/// (float64): a table model's known at import, a flow model's
/// `percent_to_sigma` of its run-time shift inputs.
pub struct Interval {
    start: String,
    end: String,
}

impl Interval {
    /// `family`'s interval.
    pub fn of(g: &mut PolicyGraph<'_>, family: &Family) -> Result<Interval, SynthError> {
        if let ModelSampling::Discrete { sigmas, timesteps } = &family.sampling {
            let (start, end) = stochastic_interval(sigmas, *timesteps);
            return Ok(Interval {
                start: g.d(start),
                end: g.d(end),
            });
        }
        let alpha = super::schedule::shift_alpha(g)?;
        Ok(Interval {
            start: super::schedule::percent_to_sigma(g, &alpha, 0.2),
            end: super::schedule::percent_to_sigma(g, &alpha, 0.8),
        })
    }
}

/// Whether the run is a window that ends with leftover noise.
fn keeps_leftover_noise(g: &PolicyGraph<'_>) -> bool {
    final_step(g) == Some("keep_leftover_noise")
}

/// The stochastic strength `tau^2` (1 or 0) at sigma `s`, per row.
fn tau2(g: &mut PolicyGraph<'_>, s: &str, interval: &Interval) -> String {
    let above = g.op("GreaterOrEqual", &[s, &interval.end]);
    let below = g.op("LessOrEqual", &[s, &interval.start]);
    let inside = g.op("And", &[&above, &below]);
    let (one, zero) = (g.d(1.0), g.d(0.0));
    g.op("Where", &[&inside, &one, &zero])
}

/// Iteration i of the run, per row: its sigmas and half log-SNRs (step i
/// and the three before, newest first; the next), the orders, the
/// corrected sample and the estimates it weighed (`D_i` first).
struct Corrected {
    sigmas: [String; 4],
    lambdas: [String; 4],
    safe_next: String,
    lambda_next: String,
    to_zero: String,
    is_last: String,
    predictor_order: String,
    estimates: [String; 4],
    sample: String,
}

/// The corrector of iteration i (see the module): with PECE (`pece`) it
/// also corrects on a step to 0.
fn corrected(
    g: &mut PolicyGraph<'_>,
    at: &Step<'_>,
    interval: &Interval,
    pece: bool,
) -> Result<Corrected, SynthError> {
    let x = at.x.to_string();
    let iteration = g.input("iteration")?;
    let base = g.input("previous_sample")?;
    let old = [
        g.input("previous")?,
        g.input("previous_2")?,
        g.input("previous_3")?,
    ];
    let position = at.run_position(g, &iteration);
    let (run, is_last) = (position.steps, position.is_last);
    // Orders lower near the end only where the run ends at sigma 0.
    let lower = if keeps_leftover_noise(g) {
        let last_sigma = g.gather(at.schedule, &position.last);
        let zero_f = g.f(0.0);
        g.op("Equal", &[&last_sigma, &zero_f])
    } else {
        let zero = g.i(0);
        g.op("Equal", &[&zero, &zero])
    };
    let sigmas = [0, -1, -2, -3].map(|offset| at.sigma_at(g, offset));
    let (next, to_zero) = at.next_sigma(g);
    let safe_next = g.op("Where", &[&to_zero, &sigmas[0], &next]);
    let lambdas = [0, 1, 2, 3].map(|k| at.half_log_snr(g, &sigmas[k]));
    let lambda_next = at.half_log_snr(g, &safe_next);
    let corrector_skips = match pece {
        true => None,
        false => Some(to_zero.as_str()),
    };
    let (predictor_order, corrector_order) = orders(g, &iteration, &run, &lower, corrector_skips);
    let denoised = at.denoised(g, at.d);
    let estimates = [denoised, old[0].clone(), old[1].clone(), old[2].clone()];

    // Over [lambda_{i-1}, lambda_i], with the previous step's noise.
    let tau_c = tau2(g, &sigmas[0], interval);
    let weights = weights_by_order(
        g,
        &lambdas,
        (&lambdas[1], &lambdas[0]),
        &tau_c,
        &corrector_order,
        4,
    );
    let alpha = at.signal(g, &sigmas[0]);
    let weights = weights.map(|w| g.op("Mul", &[&w, &alpha]));
    let h = g.op("Sub", &[&lambdas[0], &lambdas[1]]);
    let keep_c = keep(g, (&sigmas[0], &sigmas[1]), &tau_c, &h);
    let previous_noise = noise_at(g, &x, at.step)?;
    let spread_c = spread(g, &sigmas[0], &tau_c, &h);
    let mut terms = vec![(keep_c, base), (spread_c, previous_noise)];
    terms.extend(weights.into_iter().zip(estimates.iter().cloned()));
    let formula = combine(g, &terms);
    let zero_i = g.i(0);
    let none = g.op("Equal", &[&corrector_order, &zero_i]);
    let none = g.rows(&none);
    let sample = g.op("Where", &[&none, &x, &formula]);
    Ok(Corrected {
        sigmas,
        lambdas,
        safe_next,
        lambda_next,
        to_zero,
        is_last,
        predictor_order,
        estimates,
        sample,
    })
}

/// PECE's second model call: the corrected sample of iteration i, which
/// the call evaluates at step i's sigma.
pub fn pece_sample(
    g: &mut PolicyGraph<'_>,
    at: &Step<'_>,
    interval: &Interval,
) -> Result<String, SynthError> {
    Ok(corrected(g, at, interval, true)?.sample)
}

/// Builds the step (see [`Step`]) with the stochastic interval `(start,
/// end)` of sigmas; returns the next sample (the corrected sample and the
/// shifted estimates are declared here). With PECE (`pece`) the second
/// call's estimate at the corrected sample (input `second`) replaces
/// `D_i`.
pub fn step(
    g: &mut PolicyGraph<'_>,
    at: &Step<'_>,
    interval: &Interval,
    pece: bool,
) -> Result<String, SynthError> {
    let Corrected {
        sigmas,
        lambdas,
        safe_next,
        lambda_next,
        to_zero,
        is_last,
        predictor_order,
        mut estimates,
        sample: corrected,
    } = corrected(g, at, interval, pece)?;
    if pece {
        let second = at.estimate(g, "second", &corrected, at.sigma)?;
        let s = g.cast(at.sigma, DataType::DOUBLE);
        let s = g.rows(&s);
        let minus = g.op("Neg", &[&s]);
        let one = g.d(1.0);
        estimates[0] = combine(g, &[(one, corrected.clone()), (minus, second)]);
    }
    let denoised = estimates[0].clone();

    // Predictor over [lambda_i, lambda_{i+1}].
    let tau_p = tau2(g, &safe_next, interval);
    let weights = weights_by_order(
        g,
        &lambdas,
        (&lambdas[0], &lambda_next),
        &tau_p,
        &predictor_order,
        3,
    );
    let alpha_next = at.signal(g, &safe_next);
    let weights = weights.map(|w| g.op("Mul", &[&w, &alpha_next]));
    let h = g.op("Sub", &[&lambda_next, &lambdas[0]]);
    let keep_p = keep(g, (&safe_next, &sigmas[0]), &tau_p, &h);
    let one_i = g.i(1);
    let offset = g.op("Add", &[at.step, &one_i]);
    let fresh = noise_at(g, at.x, &offset)?;
    let spread_p = spread(g, &safe_next, &tau_p, &h);
    let mut terms = vec![(keep_p, corrected.clone()), (spread_p, fresh)];
    terms.extend(weights.into_iter().zip(estimates.iter().cloned()));
    let predicted = combine(g, &terms);
    let predicted = at.denoised_at_zero(g, &to_zero, &denoised, &predicted);
    // A run ending with leftover noise returns its corrected sample.
    let next_sample = if keeps_leftover_noise(g) {
        let not_zero = g.op("Not", &[&to_zero]);
        let ends = g.op("And", &[&is_last, &not_zero]);
        let ends = g.rows(&ends);
        g.op("Where", &[&ends, &corrected, &predicted])
    } else {
        predicted
    };
    g.output(&corrected, "corrected")?;
    g.output(&denoised, "denoised")?;
    let shifted = g.op("Identity", &[&estimates[1]]);
    g.output(&shifted, "denoised_1")?;
    let shifted = g.op("Identity", &[&estimates[2]]);
    g.output(&shifted, "denoised_2")?;
    Ok(next_sample)
}

/// The predictor's and the corrector's orders at `iteration` of a run of
/// `run` steps: `min(3, i + 1)` and (none on the first iteration, nor on a
/// step to 0 where `to_zero` is given) `min(4, i + 1)`, lowered to `run -
/// 1 - i` and `run - i` where the run ends at sigma 0 (`lower`).
fn orders(
    g: &mut PolicyGraph<'_>,
    iteration: &str,
    run: &str,
    lower: &str,
    to_zero: Option<&str>,
) -> (String, String) {
    let (one, three, four) = (g.i(1), g.i(3), g.i(4));
    let count = g.op("Add", &[iteration, &one]);
    let predictor = g.op("Min", &[&count, &three]);
    let corrector = g.op("Min", &[&count, &four]);
    let left = g.op("Sub", &[run, iteration]);
    let left_less = g.op("Sub", &[&left, &one]);
    let lowered_p = g.op("Min", &[&predictor, &left_less]);
    let lowered_c = g.op("Min", &[&corrector, &left]);
    let predictor = g.op("Where", &[lower, &lowered_p, &predictor]);
    let corrector = g.op("Where", &[lower, &lowered_c, &corrector]);
    let zero = g.i(0);
    let first = g.op("Equal", &[iteration, &zero]);
    let none = match to_zero {
        Some(to_zero) => g.op("Or", &[&first, to_zero]),
        None => first,
    };
    let corrector = g.op("Where", &[&none, &zero, &corrector]);
    (predictor, corrector)
}

/// `(to / from) e^(-tau^2 h)`, per row.
fn keep(g: &mut PolicyGraph<'_>, (to, from): (&str, &str), tau2: &str, h: &str) -> String {
    let ratio = g.op("Div", &[to, from]);
    let exponent = g.op("Mul", &[tau2, h]);
    let exponent = g.op("Neg", &[&exponent]);
    let decay = g.op("Exp", &[&exponent]);
    g.op("Mul", &[&ratio, &decay])
}

/// `to sqrt(1 - e^(-2 tau^2 h))`, per row: the noise a step adds.
fn spread(g: &mut PolicyGraph<'_>, to: &str, tau2: &str, h: &str) -> String {
    let minus_two = g.d(-2.0);
    let exponent = g.op("Mul", &[tau2, h]);
    let exponent = g.op("Mul", &[&exponent, &minus_two]);
    let decay = g.op("Exp", &[&exponent]);
    let one = g.d(1.0);
    let rest = g.op("Sub", &[&one, &decay]);
    let zero = g.d(0.0);
    let rest = g.op("Max", &[&rest, &zero]);
    let root = g.op("Sqrt", &[&rest]);
    g.op("Mul", &[to, &root])
}

/// The weights of the estimates, newest first (`lambdas` their nodes,
/// newest first), for the update over `(s, t)` at the order `order` (1 to
/// `most`; 0 gives zeros).
fn weights_by_order(
    g: &mut PolicyGraph<'_>,
    lambdas: &[String],
    (s, t): (&str, &str),
    tau2: &str,
    order: &str,
    most: usize,
) -> [String; 4] {
    let zero = g.d(0.0);
    let mut chosen: [String; 4] = std::array::from_fn(|_| zero.clone());
    for k in 1..=most {
        // Nodes oldest first: lambda_{i-k+1} .. lambda_i.
        let nodes: Vec<&str> = lambdas[..k].iter().rev().map(String::as_str).collect();
        let b = adams_weights(g, &nodes, (s, t), tau2);
        let n = g.i(k as i64);
        let is = g.op("Equal", &[order, &n]);
        for (j, weight) in b.iter().enumerate() {
            // Node j (oldest first) is the estimate k - 1 - j back.
            let slot = k - 1 - j;
            chosen[slot] = g.op("Where", &[&is, weight, &chosen[slot]]);
        }
    }
    chosen
}

/// SA-Solver's `b` for Lagrange nodes `nodes` (oldest first) over the
/// half log-SNR interval `(s, t)`, per row.
fn adams_weights(
    g: &mut PolicyGraph<'_>,
    nodes: &[&str],
    (s, t): (&str, &str),
    tau2: &str,
) -> Vec<String> {
    let k = nodes.len();
    let one = g.d(1.0);
    let tau_mul = g.op("Add", &[&one, tau2]);
    let h = g.op("Sub", &[t, s]);
    let exponent = g.op("Mul", &[&tau_mul, &h]);
    let exponent = g.op("Neg", &[&exponent]);
    let decay = g.op("Exp", &[&exponent]);
    // t^q - s^q e^(-(1 + tau^2) h), q = 0..k.
    let mut products = Vec::new();
    let (mut tq, mut sq) = (one.clone(), one.clone());
    for q in 0..k {
        if q > 0 {
            tq = g.op("Mul", &[&tq, t]);
            sq = g.op("Mul", &[&sq, s]);
        }
        let decayed = g.op("Mul", &[&sq, &decay]);
        products.push(g.op("Sub", &[&tq, &decayed]));
    }
    // E_p = sum_(q <= p) (-1)^(p-q) p!/q! tau_mul^-(p-q) product_q.
    let moments: Vec<String> = (0..k)
        .map(|p| {
            let mut sum = g.d(0.0);
            for (q, product) in products.iter().enumerate().take(p + 1) {
                let factorial_ratio: f64 = ((q + 1)..=p).map(|v| v as f64).product();
                let sign = if (p - q).is_multiple_of(2) { 1.0 } else { -1.0 };
                let mut term = g.d(sign * factorial_ratio);
                for _ in q..p {
                    term = g.op("Div", &[&term, &tau_mul]);
                }
                let term = g.op("Mul", &[&term, product]);
                sum = g.op("Add", &[&sum, &term]);
            }
            sum
        })
        .collect();
    (0..k)
        .map(|j| {
            let others: Vec<&str> = (0..k).filter(|m| *m != j).map(|m| nodes[m]).collect();
            let symmetric = elementary_symmetric(g, &others);
            let r = others.len();
            // sum_q (-1)^(r-q) e_(r-q) E_q over the basis polynomial's
            // denominator prod (lambda_j - lambda_m).
            let mut sum = g.d(0.0);
            for (q, moment) in moments.iter().enumerate() {
                let sign = g.d(if (r - q).is_multiple_of(2) { 1.0 } else { -1.0 });
                let term = g.op("Mul", &[&symmetric[r - q], moment]);
                let term = g.op("Mul", &[&term, &sign]);
                sum = g.op("Add", &[&sum, &term]);
            }
            let mut denominator = g.d(1.0);
            for other in &others {
                let gap = g.op("Sub", &[nodes[j], other]);
                denominator = g.op("Mul", &[&denominator, &gap]);
            }
            let denominator = g.nonzero(&denominator);
            g.op("Div", &[&sum, &denominator])
        })
        .collect()
}

/// `e_0 .. e_r` of `values` (`e_0` = 1).
fn elementary_symmetric(g: &mut PolicyGraph<'_>, values: &[&str]) -> Vec<String> {
    let mut e = vec![g.d(1.0)];
    for value in values {
        let mut next = e.clone();
        next.push(g.d(0.0));
        for q in 1..next.len() {
            let term = g.op("Mul", &[&e[q - 1], value]);
            next[q] = g.op("Add", &[&next[q], &term]);
        }
        e = next;
    }
    e
}
