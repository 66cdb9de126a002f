//! `uni_pc` and `uni_pc_bh2`: UniPC (Zhao et al. 2023), the multistep
//! predictor-corrector ComfyUI runs with data prediction over the sigmas
//! of its schedule (`t = sigma`, `lambda = -ln sigma`; a last sigma under
//! 0.001 becomes 0.001), order `min(3, N - 1)` for a run of N steps (at
//! least 1 here, where ComfyUI's order 0 would leave a 1-step run
//! unsampled), lowered near the end (`min(k, order, N + 1 - k)` for the
//! update to step k). With `h = ln(s_a / s_t) > 0` the step's half
//! log-SNR gain, `uni_pc` takes `B = -h` and `uni_pc_bh2` `B = e^-h - 1`
//! (UniPC's `B(hh)` at `hh = -h`).
//!
//! Written in the sampler's own space (the sample before the model's input
//! scaling), where ComfyUI's conversions to and from its VP form cancel:
//! the update from step a to step t with `h = ln(s_a / s_t)` is
//! `(s_t / s_a) x_a - (e^-h - 1) D_a - B(h) * residuals`. Each loop
//! iteration i, after the model's call at step i gives `D_i`, corrects the
//! sample of step i from step i - 1 (not on the first iteration) and
//! predicts the sample of step i + 1, which the next call evaluates; the
//! last prediction is the result. The coefficients (solutions of UniPC's
//! small Vandermonde systems, in closed form) are computed in float64.

use super::SynthError;
use super::graph::PolicyGraph;
use super::steps::{Step, combine};

/// Whether `sampler` is UniPC, and if so whether it is the bh2 variant.
pub fn variant(sampler: &str) -> Option<bool> {
    match sampler {
        "uni_pc" => Some(false),
        "uni_pc_bh2" => Some(true),
        _ => None,
    }
}

/// Builds the UniPC step (see [`Step`]); returns the predicted next sample
/// (the other outputs, the corrected sample and the shifted estimates, are
/// declared here).
pub fn step(g: &mut PolicyGraph<'_>, bh2: bool, at: &Step<'_>) -> Result<String, SynthError> {
    let x = at.x.to_string();
    let iteration = g.input("iteration")?;
    let base = g.input("previous_sample")?;
    let m1 = g.input("previous")?;
    let m2 = g.input("previous_2")?;
    let m3 = g.input("previous_3")?;

    // Where the run is: N steps, this is step i of them.
    let run = at.run_position(g, &iteration);
    let (n, is_last) = (run.steps, run.is_last);
    let one_i = g.i(1);
    let next_i = g.op("Add", &[&iteration, &one_i]);
    let n_less = g.op("Sub", &[&n, &one_i]);
    let three = g.i(3);
    let order = g.op("Min", &[&n_less, &three]);
    let order = g.op("Max", &[&order, &one_i]);
    let n_more = g.op("Add", &[&n, &one_i]);
    // The order of the update to step k (k relative to the run's start).
    let order_to = |g: &mut PolicyGraph<'_>, k: &str| {
        let tail = g.op("Sub", &[&n_more, k]);
        let k_order = g.op("Min", &[k, &order]);
        g.op("Min", &[&k_order, &tail])
    };
    let corrector_order = order_to(g, &iteration);
    let predictor_order = order_to(g, &next_i);

    // Sigmas around step i, in float64 (earlier indices clamped at 0; they
    // are read only where they exist); the next one is the solver's (0 at
    // the end of a fully denoising window), floored at 0.001 on the run's
    // last step.
    let s0 = at.sigma_at(g, 0);
    let s_1 = at.sigma_at(g, -1);
    let s_2 = at.sigma_at(g, -2);
    let s_3 = at.sigma_at(g, -3);
    let (s_next, _) = at.next_sigma(g);
    let floor = g.d(0.001);
    let floored = g.op("Max", &[&s_next, &floor]);
    let s_next = g.op("Where", &[&is_last, &floored, &s_next]);

    // The model's denoised estimate at step i.
    let m0 = at.denoised(g, at.d);

    // Corrector: the sample of step i from step i - 1 and D_i.
    let corrector = Update::new(g, &s_1, &s0, &s_2, &s_3, bh2);
    let c = corrector.corrector(g, &corrector_order);
    let zero_i = g.i(0);
    let first = g.op("Equal", &[&iteration, &zero_i]);
    let one = g.d(1.0);
    let zero = g.d(0.0);
    let mut terms = vec![];
    for (coefficient, latent) in [
        (&corrector.keep, &base),
        (&c.prev0, &m1),
        (&c.prev1, &m2),
        (&c.prev2, &m3),
        (&c.current, &m0),
    ] {
        let coefficient = g.op("Where", &[&first, &zero, coefficient]);
        terms.push((coefficient, latent.clone()));
    }
    let keep_state = g.op("Where", &[&first, &one, &zero]);
    terms.push((keep_state, x.clone()));
    let corrected = combine(g, &terms);

    // Predictor: the sample of step i + 1 from step i.
    let predictor = Update::new(g, &s0, &s_next, &s_1, &s_2, bh2);
    let p = predictor.predictor(g, &predictor_order);
    let next = combine(
        g,
        &[
            (predictor.keep.clone(), corrected.clone()),
            (p.prev0, m0.clone()),
            (p.prev1, m1.clone()),
            (p.prev2, m2.clone()),
        ],
    );
    g.output(&corrected, "corrected")?;
    g.output(&m0, "denoised")?;
    let shifted = g.op("Identity", &[&m1]);
    g.output(&shifted, "denoised_1")?;
    let shifted = g.op("Identity", &[&m2]);
    g.output(&shifted, "denoised_2")?;
    Ok(next)
}

/// The coefficients of one update's latents: the denoised estimates of
/// the step it starts from (`prev0`) and the two before (`prev1`,
/// `prev2`), and the estimate at the step it reaches (`current`, the
/// corrector's only).
struct Weights {
    prev0: String,
    prev1: String,
    prev2: String,
    current: String,
}

/// One UniPC update from sigma `from` to sigma `to`, with the two sigmas
/// before `from`: the per-row float64 quantities both halves share.
struct Update {
    /// `B(h)`.
    b_h: String,
    /// `e^-h - 1`.
    phi1: String,
    /// UniPC's right-hand sides `b_1..b_3`.
    b: [String; 3],
    /// `r_1`, `r_2`: the earlier steps' log-sigma distance over `h`.
    r: [String; 2],
    /// The coefficient of the sample at `from`: `to / from`.
    keep: String,
}

impl Update {
    fn new(
        g: &mut PolicyGraph<'_>,
        from: &str,
        to: &str,
        before1: &str,
        before2: &str,
        bh2: bool,
    ) -> Update {
        let ratio = g.op("Div", &[from, to]);
        let h = g.op("Log", &[&ratio]);
        let h = g.nonzero(&h);
        let hh = g.op("Neg", &[&h]);
        let e = g.op("Exp", &[&hh]);
        let one = g.d(1.0);
        let phi1 = g.op("Sub", &[&e, &one]);
        let b_h = if bh2 { phi1.clone() } else { hh.clone() };
        // h_phi_k recursion: phi_{k+1} = phi_k / hh - 1 / (k + 1)!.
        let mut phi = g.op("Div", &[&phi1, &hh]);
        phi = g.op("Sub", &[&phi, &one]);
        let b: [String; 3] = std::array::from_fn(|k| {
            let (factorial, next_inverse) = [(1.0, 0.5), (2.0, 1.0 / 6.0), (6.0, 0.0)][k];
            let f = g.d(factorial);
            let scaled = g.op("Mul", &[&phi, &f]);
            let b_k = g.op("Div", &[&scaled, &b_h]);
            let over = g.op("Div", &[&phi, &hh]);
            let inverse = g.d(next_inverse);
            phi = g.op("Sub", &[&over, &inverse]);
            b_k
        });
        let r = [before1, before2].map(|before| {
            let ratio = g.op("Div", &[from, before]);
            let distance = g.op("Log", &[&ratio]);
            let r = g.op("Div", &[&distance, &h]);
            g.nonzero(&r)
        });
        let keep = g.op("Div", &[to, from]);
        Update {
            b_h,
            phi1,
            b,
            r,
            keep,
        }
    }

    /// The predictor's weights for `order` (1: none beyond the first-order
    /// step; 2: rho = 1/2; 3: the 2x2 system at `r_1`, `r_2`).
    fn predictor(&self, g: &mut PolicyGraph<'_>, order: &str) -> Weights {
        let [r1, r2] = &self.r;
        let [b1, b2, _] = &self.b;
        let zero = g.d(0.0);
        // Order 2.
        let half = g.d(0.5);
        let second = self.residual(g, &half, r1);
        // Order 3: rho_j = (b_2 - r_other b_1) / (r_j - r_other).
        let rho1 = two_point(g, b1, b2, r1, r2);
        let rho2 = two_point(g, b1, b2, r2, r1);
        let third1 = self.residual(g, &rho1, r1);
        let third2 = self.residual(g, &rho2, r2);
        let prev1 = by_order(g, order, &zero, &second, &third1);
        let prev2 = by_order(g, order, &zero, &zero, &third2);
        let prev0 = self.first_weight(g, &[&prev1, &prev2]);
        Weights {
            prev0,
            prev1,
            prev2,
            current: zero,
        }
    }

    /// The corrector's weights for `order` (1: rho = 1/2; 2 and 3: the
    /// Vandermonde systems at `r_1`[, `r_2`] and 1).
    fn corrector(&self, g: &mut PolicyGraph<'_>, order: &str) -> Weights {
        let [r1, r2] = &self.r;
        let [b1, b2, b3] = &self.b;
        let zero = g.d(0.0);
        let one = g.d(1.0);
        let half = g.d(0.5);
        let first_current = self.residual(g, &half, &one);
        // Order 2: points r_1 and 1.
        let rho1 = two_point(g, b1, b2, r1, &one);
        let rho_t = two_point(g, b1, b2, &one, r1);
        let second1 = self.residual(g, &rho1, r1);
        let second_current = self.residual(g, &rho_t, &one);
        // Order 3: points r_1, r_2 and 1.
        let rho1 = three_point(g, [b1, b2, b3], r1, r2, &one);
        let rho2 = three_point(g, [b1, b2, b3], r2, r1, &one);
        let rho_t = three_point(g, [b1, b2, b3], &one, r1, r2);
        let third1 = self.residual(g, &rho1, r1);
        let third2 = self.residual(g, &rho2, r2);
        let third_current = self.residual(g, &rho_t, &one);
        let prev1 = by_order(g, order, &zero, &second1, &third1);
        let prev2 = by_order(g, order, &zero, &zero, &third2);
        let current = by_order(g, order, &first_current, &second_current, &third_current);
        let prev0 = self.first_weight(g, &[&prev1, &prev2, &current]);
        Weights {
            prev0,
            prev1,
            prev2,
            current,
        }
    }

    /// The weight of a difference term `rho (D_j - D_from) / r`: `-B(h) rho / r`
    /// on `D_j` (and its negation on `D_from`, gathered by `first_weight`).
    fn residual(&self, g: &mut PolicyGraph<'_>, rho: &str, r: &str) -> String {
        let weighted = g.op("Mul", &[&self.b_h, rho]);
        let per = g.op("Div", &[&weighted, r]);
        g.op("Neg", &[&per])
    }

    /// The weight of `D_from`: `-(e^-h - 1)` less every difference weight.
    fn first_weight(&self, g: &mut PolicyGraph<'_>, others: &[&str]) -> String {
        let mut weight = g.op("Neg", &[&self.phi1]);
        for other in others {
            weight = g.op("Sub", &[&weight, other]);
        }
        weight
    }
}

/// The solution at point `x` of the 2x2 system `sum_j rho_j p_j^k = b_k`
/// (k = 0, 1) over the points `x` and `other`.
fn two_point(g: &mut PolicyGraph<'_>, b1: &str, b2: &str, x: &str, other: &str) -> String {
    let shifted = g.op("Mul", &[other, b1]);
    let top = g.op("Sub", &[b2, &shifted]);
    let gap = g.op("Sub", &[x, other]);
    let gap = g.nonzero(&gap);
    g.op("Div", &[&top, &gap])
}

/// The solution at point `x` of the 3x3 system `sum_j rho_j p_j^k = b_k`
/// (k = 0, 1, 2) over the points `x`, `a` and `c` (Lagrange's basis).
fn three_point(g: &mut PolicyGraph<'_>, b: [&str; 3], x: &str, a: &str, c: &str) -> String {
    let [b1, b2, b3] = b;
    let sum = g.op("Add", &[a, c]);
    let product = g.op("Mul", &[a, c]);
    let middle = g.op("Mul", &[&sum, b2]);
    let low = g.op("Mul", &[&product, b1]);
    let top = g.op("Sub", &[b3, &middle]);
    let top = g.op("Add", &[&top, &low]);
    let gap_a = g.op("Sub", &[x, a]);
    let gap_c = g.op("Sub", &[x, c]);
    let den = g.op("Mul", &[&gap_a, &gap_c]);
    let den = g.nonzero(&den);
    g.op("Div", &[&top, &den])
}

/// `first`, `second` or `third` by `order` (1, 2, else 3).
fn by_order(
    g: &mut PolicyGraph<'_>,
    order: &str,
    first: &str,
    second: &str,
    third: &str,
) -> String {
    let one = g.i(1);
    let two = g.i(2);
    let is_one = g.op("Equal", &[order, &one]);
    let is_two = g.op("Equal", &[order, &two]);
    let rest = g.op("Where", &[&is_two, second, third]);
    g.op("Where", &[&is_one, first, &rest])
}
