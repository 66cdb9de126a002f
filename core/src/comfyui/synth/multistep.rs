//! Multistep samplers that reuse earlier steps' estimates, as k-diffusion
//! runs them in ComfyUI (the same form for every model family):
//! - `res_multistep` (eta 0) and `res_multistep_ancestral` (eta 1): the
//!   second-order exponential multistep step of Zhang et al. 2023 towards
//!   `s_down`, from the denoised estimates `D` and `D_old`, with `c2` the
//!   previous step's log-sigma distance (to its own `s_down`) over `h`; the
//!   first step and a step to 0 are Euler steps; the ancestral one adds
//!   `s_up` of fresh seeded noise.
//! - `gradient_estimation` (gamma 2): Euler plus `(d - d_old) dt` after the
//!   first step; `D` at the end.
//! - the `_cfg_pp` forms of both (CFG++, Chung et al. 2024): they step with
//!   the unconditional estimate and add the guided one back.
//! - `ipndm` (up to fourth order, Adams-Bashforth weights) and `ipndm_v`
//!   (the variable-step weights) over the last four derivatives `d`; `D`
//!   at the end.
//! - `lms` (k-diffusion's linear multistep, order up to 4): the weight of
//!   each of the last derivatives is the integral over `[s, next]` of its
//!   Lagrange basis polynomial through the last sigmas, which ComfyUI
//!   finds by quadrature; a two-point Gauss-Legendre rule is exact for
//!   these cubics. `D` at the end.
//! - `deis` (DEIS's "tab" form, order up to 3, as ComfyUI's port of
//!   zju-pi's diff-solvers runs it): the same sum over the last
//!   derivatives, each weighed by the integral over `[s, next]` of its
//!   Lagrange basis polynomial in the VP time `t(sigma)` of EDM's schedule
//!   (sigma 0.002 to 80, epsilon 1e-3) against `dsigma/dt`, by ComfyUI's
//!   own 10000-point sum; Euler on the first step, `D` at the end.
//!
//! The memory cells hold `D` for res_multistep (`D_u` in CFG++ form) and
//! `d` (`d_u`) for the others.
//! Coefficients are computed in float64.

use super::SynthError;
use super::graph::PolicyGraph;
use super::steps::{Step, ancestral, combine, fresh_noise};
use wfstudio_onnx::builder::Attr;

/// Which multistep sampler.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// `res_multistep` (`ancestral`: `res_multistep_ancestral`; `cfg_pp`:
    /// the `_cfg_pp` form).
    Res { ancestral: bool, cfg_pp: bool },
    /// `gradient_estimation` (`cfg_pp`: `gradient_estimation_cfg_pp`).
    GradientEstimation { cfg_pp: bool },
    /// `ipndm` (`variable`: `ipndm_v`).
    Ipndm { variable: bool },
    /// `lms`.
    Lms,
    /// `deis`.
    Deis,
}

impl Kind {
    /// The kind of a ComfyUI sampler name, if it is one of these.
    pub fn of(sampler: &str) -> Option<Kind> {
        Some(match sampler {
            "res_multistep" | "res_multistep_cfg_pp" => Kind::Res {
                ancestral: false,
                cfg_pp: sampler.ends_with("_cfg_pp"),
            },
            "res_multistep_ancestral" | "res_multistep_ancestral_cfg_pp" => Kind::Res {
                ancestral: true,
                cfg_pp: sampler.ends_with("_cfg_pp"),
            },
            "gradient_estimation" | "gradient_estimation_cfg_pp" => Kind::GradientEstimation {
                cfg_pp: sampler.ends_with("_cfg_pp"),
            },
            "ipndm" => Kind::Ipndm { variable: false },
            "ipndm_v" => Kind::Ipndm { variable: true },
            "lms" => Kind::Lms,
            "deis" => Kind::Deis,
            _ => return None,
        })
    }
}

/// The step's per-row float64 quantities.
struct At {
    iteration: String,
    /// sigma at this step and the three before (indices clamped at 0).
    s: [String; 4],
    /// The next sigma.
    next: String,
    /// Whether the next sigma is 0.
    last: String,
}

/// Builds the step (see [`Step`]); returns the next sample.
pub fn step(g: &mut PolicyGraph<'_>, kind: Kind, st: &Step<'_>) -> Result<String, SynthError> {
    let (x, d, step) = (st.x, st.d, st.step);
    let iteration = g.input("iteration")?;
    let s = [0, -1, -2, -3].map(|offset| st.sigma_at(g, offset));
    let (next, last) = st.next_sigma(g);
    let at = At {
        iteration,
        s,
        next,
        last,
    };
    let denoised = st.denoised(g, d);
    // CFG++ steps with the unconditional estimate (`d_u`, `D_u`) where the
    // plain forms take the guided one, and adds the guided D back.
    let unconditional = match kind {
        Kind::Res { cfg_pp: true, .. } | Kind::GradientEstimation { cfg_pp: true } => {
            let d_u = st.estimate(g, "unconditional", st.x, st.sigma)?;
            Some((st.denoised(g, &d_u), d_u))
        }
        _ => None,
    };
    let stepped = match kind {
        Kind::Res { ancestral, .. } => {
            let guided = (
                denoised.as_str(),
                unconditional.as_ref().map(|u| u.0.as_str()),
            );
            res(g, &at, ancestral, x, guided, step)?
        }
        Kind::GradientEstimation { .. } => {
            let (base, slope) = match &unconditional {
                Some((_, d_u)) => (denoised.as_str(), d_u.as_str()),
                None => (x, d),
            };
            gradient_estimation(g, &at, base, slope, unconditional.is_some())?
        }
        Kind::Ipndm { variable } => ipndm(g, &at, variable, x, d)?,
        Kind::Lms => lms(g, &at, x, d)?,
        Kind::Deis => deis(g, &at, x, d)?,
    };
    Ok(st.denoised_at_zero(g, &at.last, &denoised, &stepped))
}

/// `res_multistep` from `x` and the guided estimate `D`, or in CFG++ form
/// (`D_u` given) stepping with the unconditional one: the Euler branch is
/// `D + (s_down / s)(x - D_u)`, the multistep one starts from
/// `x + D - D_u` and weighs `D_u` and the previous `D_u`.
fn res(
    g: &mut PolicyGraph<'_>,
    at: &At,
    ancestral_step: bool,
    x: &str,
    (denoised, unconditional): (&str, Option<&str>),
    step: &str,
) -> Result<String, SynthError> {
    let old = g.input("previous")?;
    let [s, s1, ..] = &at.s;
    let (down, up, old_down) = if ancestral_step {
        let (down, up) = ancestral(g, s, &at.next);
        let (old_down, _) = ancestral(g, s1, s);
        (down, Some(up), old_down)
    } else {
        (at.next.clone(), None, s.clone())
    };
    let zero = g.d(0.0);
    let one = g.d(1.0);
    let safe_down = g.nonzero(&down);
    // Euler towards s_down: (s_down / s) x + (1 - s_down / s) D.
    let euler_keep = g.op("Div", &[&down, s]);
    let euler_pull = g.op("Sub", &[&one, &euler_keep]);
    // The multistep step: e^-h x + h (b1 D + b2 D_old).
    let ratio = g.op("Div", &[s, &safe_down]);
    let h = g.op("Log", &[&ratio]);
    let h = g.nonzero(&h);
    let minus_h = g.op("Neg", &[&h]);
    let decay = g.op("Exp", &[&minus_h]);
    let expm1 = g.op("Sub", &[&decay, &one]);
    let phi1 = g.op("Div", &[&expm1, &minus_h]);
    let phi1_less = g.op("Sub", &[&phi1, &one]);
    let phi2 = g.op("Div", &[&phi1_less, &minus_h]);
    let old_ratio = g.op("Div", &[&old_down, s1]);
    let c2 = g.op("Log", &[&old_ratio]);
    let c2 = g.op("Div", &[&c2, &h]);
    let c2 = g.nonzero(&c2);
    let b2 = g.op("Div", &[&phi2, &c2]);
    let b1 = g.op("Sub", &[&phi1, &b2]);
    let w_d = g.op("Mul", &[&h, &b1]);
    let w_old = g.op("Mul", &[&h, &b2]);
    let zero_i = g.i(0);
    let first = g.op("Equal", &[&at.iteration, &zero_i]);
    let to_zero = g.op("Equal", &[&down, &zero]);
    let euler = g.op("Or", &[&first, &to_zero]);
    let keep = g.op("Where", &[&euler, &euler_keep, &decay]);
    let reuse = g.op("Where", &[&euler, &zero, &w_old]);
    let mut terms = vec![(keep, x.to_string()), (reuse, old)];
    match unconditional {
        None => {
            let pull = g.op("Where", &[&euler, &euler_pull, &w_d]);
            terms.push((pull, denoised.to_string()));
            g.output(denoised, "denoised")?;
        }
        Some(d_u) => {
            // Euler: D + (s_down / s) x - (s_down / s) D_u; multistep:
            // e^-h (x + D - D_u) + h b1 D_u + h b2 D_u_old.
            let guided = g.op("Where", &[&euler, &one, &decay]);
            let euler_u = g.op("Neg", &[&euler_keep]);
            let step_u = g.op("Sub", &[&w_d, &decay]);
            let pull_u = g.op("Where", &[&euler, &euler_u, &step_u]);
            terms.push((guided, denoised.to_string()));
            terms.push((pull_u, d_u.to_string()));
            g.output(d_u, "denoised")?;
        }
    }
    if let Some(up) = up {
        terms.push((up, fresh_noise(g, x, step)?));
    }
    Ok(combine(g, &terms))
}

/// `gradient_estimation` (gamma 2) from `base + slope dt` (`x` and `d`; in
/// CFG++ form `D` and `d_u` with `dt = s'`), plus `(slope - slope_old) dt`
/// after the first step, `dt` being `s' - s` there.
fn gradient_estimation(
    g: &mut PolicyGraph<'_>,
    at: &At,
    base: &str,
    slope: &str,
    cfg_pp: bool,
) -> Result<String, SynthError> {
    let old = g.input("previous")?;
    let dt = g.op("Sub", &[&at.next, &at.s[0]]);
    let zero = g.d(0.0);
    let one = g.d(1.0);
    let zero_i = g.i(0);
    let first = g.op("Equal", &[&at.iteration, &zero_i]);
    let extra = g.op("Where", &[&first, &zero, &dt]);
    let euler = if cfg_pp { at.next.clone() } else { dt };
    let w_slope = g.op("Add", &[&euler, &extra]);
    let w_old = g.op("Neg", &[&extra]);
    g.output(slope, "denoised")?;
    Ok(combine(
        g,
        &[
            (one, base.to_string()),
            (w_slope, slope.to_string()),
            (w_old, old),
        ],
    ))
}

fn ipndm(
    g: &mut PolicyGraph<'_>,
    at: &At,
    variable: bool,
    x: &str,
    d: &str,
) -> Result<String, SynthError> {
    let old = remembered(g, d)?;
    let [s, s1, s2, s3] = &at.s;
    let dt = g.op("Sub", &[&at.next, s]);
    // The weights of d, d_1, d_2, d_3 (times dt) for orders 1 to 4.
    let weights: [[String; 4]; 4] = if variable {
        variable_weights(g, [&at.next, s, s1, s2, s3])
    } else {
        let fixed: [[f64; 4]; 4] = [
            [1.0, 0.0, 0.0, 0.0],
            [1.5, -0.5, 0.0, 0.0],
            [23.0 / 12.0, -16.0 / 12.0, 5.0 / 12.0, 0.0],
            [55.0 / 24.0, -59.0 / 24.0, 37.0 / 24.0, -9.0 / 24.0],
        ];
        fixed.map(|row| row.map(|w| g.d(w)))
    };
    let chosen = by_order(g, at, weights);
    let one = g.d(1.0);
    let mut terms = vec![(one, x.to_string())];
    for (weight, latent) in chosen.iter().zip([d, &old[0], &old[1], &old[2]]) {
        terms.push((g.op("Mul", &[weight, &dt]), latent.to_string()));
    }
    Ok(combine(g, &terms))
}

/// `lms`: `x` plus each of the last derivatives (newest first) times the
/// integral of its Lagrange basis polynomial over `[s, next]`, the nodes
/// being the last `order` sigmas.
fn lms(g: &mut PolicyGraph<'_>, at: &At, x: &str, d: &str) -> Result<String, SynthError> {
    let old = remembered(g, d)?;
    // Two-point Gauss-Legendre on [s, next]: nodes mid -+ half / sqrt(3),
    // each weighted half.
    let s = at.s[0].clone();
    let sum = g.op("Add", &[&at.next, &s]);
    let two = g.d(2.0);
    let mid = g.op("Div", &[&sum, &two]);
    let span = g.op("Sub", &[&at.next, &s]);
    let half = g.op("Div", &[&span, &two]);
    let root3 = g.d(3f64.sqrt());
    let offset = g.op("Div", &[&half, &root3]);
    let taus = [g.op("Sub", &[&mid, &offset]), g.op("Add", &[&mid, &offset])];
    let zero = g.d(0.0);
    let weights: [[String; 4]; 4] = std::array::from_fn(|k| {
        let order = k + 1;
        std::array::from_fn(|j| {
            if j >= order {
                return zero.clone();
            }
            let mut integral = zero.clone();
            for tau in &taus {
                let product = lagrange_basis(g, tau, &at.s[..order], j);
                integral = g.op("Add", &[&integral, &product]);
            }
            g.op("Mul", &[&integral, &half])
        })
    });
    let chosen = by_order(g, at, weights);
    let one = g.d(1.0);
    let mut terms = vec![(one, x.to_string())];
    for (weight, latent) in chosen.into_iter().zip([d, &old[0], &old[1], &old[2]]) {
        terms.push((weight, latent.to_string()));
    }
    Ok(combine(g, &terms))
}

/// Points of DEIS's weight integrals (ComfyUI's `N`).
const DEIS_POINTS: f64 = 10000.0;

/// `deis`: `x` plus the last (up to three) derivatives, newest first, each
/// weighed by `sum_k f(tau_k) L_j(tau_k) (t' - t) / N` over `N` points
/// `tau_k` from `t` to `t'` (both included), with `f = dsigma/dt` and
/// `L_j` the Lagrange basis through the last times; Euler at order 1.
fn deis(g: &mut PolicyGraph<'_>, at: &At, x: &str, d: &str) -> Result<String, SynthError> {
    let old = remembered(g, d)?;
    // EDM's schedule as a VP one: beta_d and beta_min from sigma 0.002 to
    // 80 at epsilon 1e-3.
    let (sigma_min, sigma_max, epsilon): (f64, f64, f64) = (0.002, 80.0, 1e-3);
    let log_max = (sigma_max * sigma_max).ln_1p();
    let beta_d = 2.0 * ((sigma_min * sigma_min).ln_1p() / epsilon - log_max) / (epsilon - 1.0);
    let beta_min = log_max - 0.5 * beta_d;
    let [bd, bm] = [beta_d, beta_min].map(|v| g.d(v));
    let (zero, one, half, two) = (g.d(0.0), g.d(1.0), g.d(0.5), g.d(2.0));
    // t(sigma) = (sqrt(beta_min^2 + 2 beta_d ln(1 + sigma^2)) - beta_min) / beta_d.
    let time = |g: &mut PolicyGraph<'_>, sigma: &str| {
        let squared = g.op("Mul", &[sigma, sigma]);
        let grown = g.op("Add", &[&one, &squared]);
        let log = g.op("Log", &[&grown]);
        let scaled = g.op("Mul", &[&log, &bd]);
        let scaled = g.op("Mul", &[&scaled, &two]);
        let bm2 = g.op("Mul", &[&bm, &bm]);
        let under = g.op("Add", &[&bm2, &scaled]);
        let root = g.op("Sqrt", &[&under]);
        let less = g.op("Sub", &[&root, &bm]);
        g.op("Div", &[&less, &bd])
    };
    let [s, s1, s2, _] = &at.s;
    let times = [time(g, s), time(g, s1), time(g, s2)];
    let t_next = time(g, &at.next);
    // tau_k = t + (t' - t) k / (N - 1), per row: [batch, N].
    let points = g.d(DEIS_POINTS);
    let k = g.op("Range", &[&zero, &points, &one]);
    let last_k = g.d(DEIS_POINTS - 1.0);
    let fraction = g.op("Div", &[&k, &last_k]);
    let span = g.op("Sub", &[&t_next, &times[0]]);
    let column = g.b.vec_i64(&[-1, 1]);
    let span_column = g.op("Reshape", &[&span, &column]);
    let from = g.op("Reshape", &[&times[0], &column]);
    let offsets = g.op("Mul", &[&span_column, &fraction]);
    let taus = g.op("Add", &[&from, &offsets]);
    // f(tau) = 0.5 (beta_d tau + beta_min) / sqrt(alpha (1 - alpha)), with
    // alpha = exp(-beta_d tau^2 / 2 - beta_min tau).
    let slope = g.op("Mul", &[&taus, &bd]);
    let rate = g.op("Add", &[&slope, &bm]);
    let tau2 = g.op("Mul", &[&taus, &taus]);
    let quadratic = g.op("Mul", &[&tau2, &bd]);
    let quadratic = g.op("Mul", &[&quadratic, &half]);
    let linear = g.op("Mul", &[&taus, &bm]);
    let exponent = g.op("Add", &[&quadratic, &linear]);
    let exponent = g.op("Neg", &[&exponent]);
    let alpha = g.op("Exp", &[&exponent]);
    let rest = g.op("Sub", &[&one, &alpha]);
    let product = g.op("Mul", &[&alpha, &rest]);
    let root = g.op("Sqrt", &[&product]);
    let root = g.nonzero(&root);
    let integrand = g.op("Div", &[&rate, &root]);
    let integrand = g.op("Mul", &[&integrand, &half]);
    let width = g.op("Div", &[&span, &points]);
    let axes = g.b.vec_i64(&[1]);
    let nodes: [String; 3] = std::array::from_fn(|m| g.op("Reshape", &[&times[m], &column]));
    let dt = g.op("Sub", &[&at.next, s]);
    // Orders 1 to 3; the fourth row repeats the third (DEIS stops at 3).
    let rows: [[String; 4]; 3] = std::array::from_fn(|k| {
        let order = k + 1;
        std::array::from_fn(|j| {
            if j >= order {
                return zero.clone();
            }
            if order == 1 {
                return dt.clone();
            }
            let basis = lagrange_basis(g, &taus, &nodes[..order], j);
            let basis = g.op("Mul", &[&integrand, &basis]);
            let sum = g.op_with("ReduceSum", &[&basis, &axes], &[("keepdims", Attr::Int(0))]);
            g.op("Mul", &[&sum, &width])
        })
    });
    let [first, second, third] = rows;
    let chosen = by_order(g, at, [first, second, third.clone(), third]);
    let one = g.d(1.0);
    let mut terms = vec![(one, x.to_string())];
    for (weight, latent) in chosen.into_iter().zip([d, &old[0], &old[1], &old[2]]) {
        terms.push((weight, latent.to_string()));
    }
    Ok(combine(g, &terms))
}

/// Lagrange basis polynomial `j` through `nodes` at `tau` (per row; the
/// shapes broadcast): `prod_(m != j) (tau - nodes_m) / (nodes_j - nodes_m)`.
fn lagrange_basis(g: &mut PolicyGraph<'_>, tau: &str, nodes: &[String], j: usize) -> String {
    let mut product = g.d(1.0);
    for m in (0..nodes.len()).filter(|m| *m != j) {
        let num = g.op("Sub", &[tau, &nodes[m]]);
        let den = g.op("Sub", &[&nodes[j], &nodes[m]]);
        let den = g.nonzero(&den);
        let factor = g.op("Div", &[&num, &den]);
        product = g.op("Mul", &[&product, &factor]);
    }
    product
}

/// The three remembered derivatives (newest first), and the memory
/// outputs: `d` joins them and the oldest drops out.
fn remembered(g: &mut PolicyGraph<'_>, d: &str) -> Result<[String; 3], SynthError> {
    let old = [
        g.input("previous")?,
        g.input("previous_2")?,
        g.input("previous_3")?,
    ];
    g.output(d, "denoised")?;
    let shifted = g.op("Identity", &[&old[0]]);
    g.output(&shifted, "denoised_1")?;
    let shifted = g.op("Identity", &[&old[1]]);
    g.output(&shifted, "denoised_2")?;
    Ok(old)
}

/// The row of `weights` (one per order 1 to 4) for this step's order,
/// `min(4, iteration + 1)`.
fn by_order(g: &mut PolicyGraph<'_>, at: &At, weights: [[String; 4]; 4]) -> [String; 4] {
    let one_i = g.i(1);
    let order = g.op("Add", &[&at.iteration, &one_i]);
    let four = g.i(4);
    let order = g.op("Min", &[&order, &four]);
    let mut chosen = weights[3].clone();
    for k in (0..3).rev() {
        let n = g.i(k as i64 + 1);
        let is = g.op("Equal", &[&order, &n]);
        chosen = std::array::from_fn(|j| g.op("Where", &[&is, &weights[k][j], &chosen[j]]));
    }
    chosen
}

/// `ipndm_v`'s weights for orders 1 to 4 from the sigmas `[next, s, s_1,
/// s_2, s_3]`, with `h_n = next - s`, `h_n_1 = s - s_1`, `h_n_2 = s_1 -
/// s_2`, `h_n_3 = s_2 - s_3`.
fn variable_weights(g: &mut PolicyGraph<'_>, sigmas: [&str; 5]) -> [[String; 4]; 4] {
    let [next, s, s1, s2, s3] = sigmas;
    let diff = |g: &mut PolicyGraph<'_>, a: &str, b: &str| {
        let d = g.op("Sub", &[a, b]);
        g.nonzero(&d)
    };
    let hn = diff(g, next, s);
    let hn1 = diff(g, s, s1);
    let hn2 = diff(g, s1, s2);
    let hn3 = diff(g, s2, s3);
    let [zero, one, two, three, six] = [0.0, 1.0, 2.0, 3.0, 6.0].map(|v| g.d(v));
    // Shorthands over float64 values.
    macro_rules! op {
        ($name:literal, $a:expr, $b:expr) => {
            g.op($name, &[&$a, &$b])
        };
    }
    let r = op!("Div", hn, hn1); // h_n / h_n_1
    let two_r = op!("Add", two, r);
    let c1_2 = op!("Div", two_r, two); // (2 + r) / 2
    let c2_2 = {
        let t = op!("Div", r, two);
        g.op("Neg", &[&t])
    };
    let s01 = op!("Add", hn, hn1); // h_n + h_n_1
    let s12 = op!("Add", hn1, hn2); // h_n_1 + h_n_2
    // temp = (1 - h_n / (3 (h_n + h_n_1)) * (h_n (h_n + h_n_1)) / (h_n_1 (h_n_1 + h_n_2))) / 2
    let three_s01 = op!("Mul", three, s01);
    let a = op!("Div", hn, three_s01);
    let num = op!("Mul", hn, s01);
    let den = op!("Mul", hn1, s12);
    let q = op!("Div", num, den);
    let aq = op!("Mul", a, q);
    let inner = op!("Sub", one, aq);
    let temp = op!("Div", inner, two);
    let ratio12 = op!("Div", hn1, hn2); // h_n_1 / h_n_2
    let one_ratio12 = op!("Add", one, ratio12);
    let c1_3 = op!("Add", c1_2, temp);
    let c2_3 = {
        let t = op!("Mul", one_ratio12, temp);
        op!("Sub", c2_2, t)
    };
    let c3_3 = op!("Mul", temp, ratio12);
    // temp2 = ((1 - h_n / (3 s01)) / 2 + (1 - h_n / (2 s01)) * h_n / (6 (s01 + h_n_2)))
    //         * (h_n s01 (s01 + h_n_2)) / (h_n_1 s12 (s12 + h_n_3))
    let s012 = op!("Add", s01, hn2);
    let s123 = op!("Add", s12, hn3);
    let one_a = op!("Sub", one, a);
    let first = op!("Div", one_a, two);
    let two_s01 = op!("Mul", two, s01);
    let b = op!("Div", hn, two_s01);
    let one_b = op!("Sub", one, b);
    let six_s012 = op!("Mul", six, s012);
    let c = op!("Div", hn, six_s012);
    let second = op!("Mul", one_b, c);
    let bracket = op!("Add", first, second);
    let top = op!("Mul", num, s012);
    let bottom = op!("Mul", den, s123);
    let scale = op!("Div", top, bottom);
    let temp2 = op!("Mul", bracket, scale);
    // m = h_n_1 (h_n_1 + h_n_2) / (h_n_2 (h_n_2 + h_n_3))
    let s23 = op!("Add", hn2, hn3);
    let m_top = op!("Mul", hn1, s12);
    let m_bottom = op!("Mul", hn2, s23);
    let m = op!("Div", m_top, m_bottom);
    let c1_4 = op!("Add", c1_3, temp2);
    let c2_4 = {
        let w = op!("Add", one_ratio12, m);
        let t = op!("Mul", w, temp2);
        let t1 = op!("Mul", one_ratio12, temp);
        let base = op!("Sub", c2_2, t1);
        op!("Sub", base, t)
    };
    let c3_4 = {
        let ratio23 = op!("Div", hn2, hn3);
        let one_ratio23 = op!("Add", one, ratio23);
        let mm = op!("Mul", m, one_ratio23);
        let w = op!("Add", ratio12, mm);
        let t = op!("Mul", w, temp2);
        op!("Add", c3_3, t)
    };
    let c4_4 = {
        let t = op!("Mul", temp2, m);
        let t = op!("Mul", t, ratio12);
        g.op("Neg", &[&t])
    };
    [
        [one.clone(), zero.clone(), zero.clone(), zero.clone()],
        [c1_2, c2_2, zero.clone(), zero.clone()],
        [c1_3, c2_3, c3_3, zero],
        [c1_4, c2_4, c3_4, c4_4],
    ]
}
