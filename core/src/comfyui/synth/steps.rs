//! What the solver builders share: the step's graph values ([`Step`],
//! the model's outputs read as epsilon estimates by `estimate`), the
//! step's fresh noise, latent combinations with per-row float64 weights,
//! and the ancestral step's sigmas.

use super::SynthError;
use super::estimate::to_epsilon;
use super::graph::Family;
use super::graph::PolicyGraph;
use wfstudio_onnx::builder::Attr;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;
use wfstudio_onnx::random::gaussian;

/// A solver step's graph values: the sample `x`, the guided estimate `d`
/// (as epsilon), the step's sigmas per row (float32; the next one 0 at the
/// end of a fully denoising window), the schedule, the step, a window's end
/// step and what the model's outputs mean.
pub(super) struct Step<'a> {
    pub x: &'a str,
    pub d: &'a str,
    pub sigma: &'a str,
    pub sigma_next: &'a str,
    pub schedule: &'a str,
    pub step: &'a str,
    pub end_step: Option<&'a str>,
    /// Whether the window's end step has sigma 0 (a fully denoising
    /// KSamplerAdvanced window).
    pub ends_at_zero: bool,
    /// The sampling facts: what the model's outputs mean.
    pub family: &'a Family,
}

impl Step<'_> {
    /// Input `name`, another of the model's (guided or unguided) outputs,
    /// taken at `sample` and per-row `sigma`, as an epsilon estimate.
    pub fn estimate(
        &self,
        g: &mut PolicyGraph<'_>,
        name: &str,
        sample: &str,
        sigma: &str,
    ) -> Result<String, SynthError> {
        let out = g.input(name)?;
        Ok(to_epsilon(g, self.family, sample, sigma, &out))
    }

    /// `x - sigma e`: the denoised sample of estimate `e` (the guided `d`,
    /// or another pass's).
    pub fn denoised(&self, g: &mut PolicyGraph<'_>, e: &str) -> String {
        let s = g.rows(self.sigma);
        let se = g.op("Mul", &[&s, e]);
        g.op("Sub", &[self.x, &se])
    }

    /// `schedule[step + offset]` per row, as float64.
    pub fn sigma_at(&self, g: &mut PolicyGraph<'_>, offset: i64) -> String {
        g.sigma_at(self.schedule, self.step, offset)
    }

    /// `schedule[step + 1]` per row as float64, the index kept within the
    /// schedule, whatever a window's end step (the next point of a grid
    /// the solver lays itself).
    pub fn grid_next(&self, g: &mut PolicyGraph<'_>) -> String {
        let one = g.i(1);
        let length = g.op("Shape", &[self.schedule]);
        let last = g.op("Sub", &[&length, &one]);
        let next = g.op("Add", &[self.step, &one]);
        let next = g.op("Min", &[&next, &last]);
        let sigma = window_sigma(g, self.schedule, &next, None);
        g.cast(&sigma, DataType::DOUBLE)
    }

    /// The run's sigma at schedule index `index` per row, as float64 (0 at
    /// the end step of a fully denoising window).
    pub fn window_sigma(&self, g: &mut PolicyGraph<'_>, index: &str) -> String {
        let end = self.end_step.filter(|_| self.ends_at_zero);
        let sigma = window_sigma(g, self.schedule, index, end);
        g.cast(&sigma, DataType::DOUBLE)
    }

    /// Where a run (a whole schedule, or a window of it) stands at
    /// `iteration`: its last schedule index, its step count and whether
    /// this is its last iteration, per row.
    pub fn run_position(&self, g: &mut PolicyGraph<'_>, iteration: &str) -> RunPosition {
        let one = g.i(1);
        let start = g.op("Sub", &[self.step, iteration]);
        let length = g.op("Shape", &[self.schedule]);
        let mut last = g.op("Sub", &[&length, &one]);
        if let Some(end) = self.end_step {
            last = g.op("Min", &[&last, end]);
        }
        let steps = g.op("Sub", &[&last, &start]);
        let next = g.op("Add", &[iteration, &one]);
        let is_last = g.op("Equal", &[&next, &steps]);
        RunPosition {
            last,
            steps,
            is_last,
        }
    }

    /// The next sigma per row as float64, and whether it is 0 (a step to 0
    /// returns the denoised sample: [`Step::denoised_at_zero`]).
    pub fn next_sigma(&self, g: &mut PolicyGraph<'_>) -> (String, String) {
        let next = g.cast(self.sigma_next, DataType::DOUBLE);
        let zero = g.d(0.0);
        let last = g.op("Equal", &[&next, &zero]);
        (next, last)
    }

    /// `stepped`, or `denoised` on the rows whose step goes to 0 (`last`).
    pub fn denoised_at_zero(
        &self,
        g: &mut PolicyGraph<'_>,
        last: &str,
        denoised: &str,
        stepped: &str,
    ) -> String {
        let last = g.rows(last);
        g.op("Where", &[&last, denoised, stepped])
    }

    /// The model's half log-SNR `lambda = ln(alpha / sigma)` at per-row
    /// float64 sigma `s`: `-ln s`, or a flow model's `ln((1 - s) / s)`
    /// (ComfyUI's `sigma_to_half_log_snr`).
    pub fn half_log_snr(&self, g: &mut PolicyGraph<'_>, s: &str) -> String {
        let exploded = self.exploded(g, s);
        let log = g.op("Log", &[&exploded]);
        g.op("Neg", &[&log])
    }

    /// The sigma of half log-SNR `l`: `e^-l`, or a flow model's `1 / (1 +
    /// e^l)`.
    pub fn sigma_of_half_log_snr(&self, g: &mut PolicyGraph<'_>, l: &str) -> String {
        let minus = g.op("Neg", &[l]);
        let exploded = g.op("Exp", &[&minus]);
        if !self.family.is_flow() {
            return exploded;
        }
        let one = g.d(1.0);
        let grown = g.op("Add", &[&one, &exploded]);
        g.op("Div", &[&exploded, &grown])
    }

    /// The signal's scale `alpha = sigma e^lambda` at per-row float64
    /// sigma `s`: 1, or a flow model's `1 - s`.
    pub fn signal(&self, g: &mut PolicyGraph<'_>, s: &str) -> String {
        let one = g.d(1.0);
        match self.family.is_flow() {
            true => g.op("Sub", &[&one, s]),
            false => one,
        }
    }

    /// `alpha' / alpha` and `alpha'` (see [`Step::signal`]) from per-row
    /// float64 sigma `s` to `to`.
    pub fn signal_ratio(&self, g: &mut PolicyGraph<'_>, s: &str, to: &str) -> (String, String) {
        let (alpha, alpha_to) = (self.signal(g, s), self.signal(g, to));
        let alpha = g.nonzero(&alpha);
        (g.op("Div", &[&alpha_to, &alpha]), alpha_to)
    }

    /// `e^-lambda = sigma / alpha` at per-row float64 sigma `s`: `s`
    /// itself, or a flow model's `s / (1 - s)`.
    pub fn exploded(&self, g: &mut PolicyGraph<'_>, s: &str) -> String {
        match self.family.is_flow() {
            true => {
                let alpha = self.signal(g, s);
                g.op("Div", &[s, &alpha])
            }
            false => s.to_string(),
        }
    }
}

/// The last nonzero sigma of a run over float64 `sigmas` that ends at
/// index `end` (`[1]`): the sigma there, or the one before where the run
/// ends at 0 (the sigma there is 0, or `full`: a fully denoising window's
/// end step takes 0).
pub(super) fn last_nonzero_sigma(
    g: &mut PolicyGraph<'_>,
    sigmas: &str,
    end: &str,
    full: bool,
) -> String {
    let one = g.i(1);
    let before_end = g.op("Sub", &[end, &one]);
    let (at_end, before) = (g.gather(sigmas, end), g.gather(sigmas, &before_end));
    let zero = g.d(0.0);
    let to_zero = match full {
        true => g.op("Equal", &[&zero, &zero]),
        false => g.op("Equal", &[&at_end, &zero]),
    };
    g.op("Where", &[&to_zero, &before, &at_end])
}

/// DPM-Solver-fast's steps over a run of `n` model calls (int64):
/// `floor(n / 3) + 1`, as `sampling::iterations` counts them.
pub(super) fn fast_steps(g: &mut PolicyGraph<'_>, n: &str) -> String {
    let (one, three) = (g.i(1), g.i(3));
    let thirds = g.op("Div", &[n, &three]);
    g.op("Add", &[&thirds, &one])
}

/// How a `KSamplerAdvanced` window of the policy's run ends (contract
/// parameter `final_step`): `full_denoise` or `keep_leftover_noise`; none
/// for other runs.
pub(super) fn final_step<'g>(g: &'g PolicyGraph<'_>) -> Option<&'g str> {
    g.parameter("final_step").and_then(|v| v.as_str())
}

/// Whether the policy's run is a fully denoising window.
pub(super) fn fully_denoising(g: &PolicyGraph<'_>) -> bool {
    final_step(g) == Some("full_denoise")
}

/// Where a run stands (see [`Step::run_position`]).
pub(super) struct RunPosition {
    pub last: String,
    pub steps: String,
    pub is_last: String,
}

/// The step's fresh noise, shaped like `x`: the seeded noise at offset
/// `step + 1`.
pub(super) fn fresh_noise(
    g: &mut PolicyGraph<'_>,
    x: &str,
    step: &str,
) -> Result<String, SynthError> {
    let one_i = g.i(1);
    let offset = g.op("Add", &[step, &one_i]);
    noise_at(g, x, &offset)
}

/// The seeded noise at per-row `offset`, shaped like `x`.
pub(super) fn noise_at(
    g: &mut PolicyGraph<'_>,
    x: &str,
    offset: &str,
) -> Result<String, SynthError> {
    let seed = g.input("seed")?;
    let row_shape = g.op_with("Shape", &[x], &[("start", Attr::Int(1))]);
    Ok(gaussian(&mut g.b, &seed, offset, &row_shape))
}

/// `sum(coefficient * latent)` with per-row float64 coefficients.
pub(super) fn combine(g: &mut PolicyGraph<'_>, terms: &[(String, String)]) -> String {
    debug_assert!(!terms.is_empty(), "a combination of no latents");
    let mut sum: Option<String> = None;
    for (coefficient, latent) in terms {
        let c = g.cast(coefficient, DataType::FLOAT);
        let c = g.rows(&c);
        let term = g.op("Mul", &[&c, latent]);
        sum = Some(match sum {
            Some(s) => g.op("Add", &[&s, &term]),
            None => term,
        });
    }
    sum.unwrap_or_default()
}

/// A rectified-flow ancestral step (ComfyUI's `_RF` samplers, eta 1) from
/// per-row float64 `from` to `to`: `s_down = to^2 / from`, the sample's
/// rescale `(1 - to) / (1 - s_down)` and the fresh noise's weight
/// `sqrt(to^2 - s_down^2 rescale^2)` (at `to` 0: 0, 1 and 0).
pub(super) struct RfAncestral {
    pub down: String,
    pub rescale: String,
    pub renoise: String,
}

impl RfAncestral {
    /// The step from `from` to `to`.
    pub(super) fn new(g: &mut PolicyGraph<'_>, from: &str, to: &str) -> RfAncestral {
        let to2 = g.op("Mul", &[to, to]);
        let from = g.nonzero(from);
        let down = g.op("Div", &[&to2, &from]);
        let one = g.d(1.0);
        let alpha_to = g.op("Sub", &[&one, to]);
        let alpha_down = g.op("Sub", &[&one, &down]);
        let alpha_down = g.nonzero(&alpha_down);
        let rescale = g.op("Div", &[&alpha_to, &alpha_down]);
        let kept = g.op("Mul", &[&down, &rescale]);
        let kept2 = g.op("Mul", &[&kept, &kept]);
        let gap = g.op("Sub", &[&to2, &kept2]);
        let zero = g.d(0.0);
        let gap = g.op("Max", &[&gap, &zero]);
        let renoise = g.op("Sqrt", &[&gap]);
        RfAncestral {
            down,
            rescale,
            renoise,
        }
    }
}

/// `(s_down, s_up)` of an ancestral step from `from` to `to` (eta 1).
pub(super) fn ancestral(g: &mut PolicyGraph<'_>, from: &str, to: &str) -> (String, String) {
    let to2 = g.op("Mul", &[to, to]);
    let from2 = g.op("Mul", &[from, from]);
    let gap = g.op("Sub", &[&from2, &to2]);
    let top = g.op("Mul", &[&to2, &gap]);
    let from2 = g.nonzero(&from2);
    let frac = g.op("Div", &[&top, &from2]);
    let zero = g.d(0.0);
    let frac = g.op("Max", &[&frac, &zero]);
    let up = g.op("Sqrt", &[&frac]);
    let up = g.op("Min", &[to, &up]);
    let up2 = g.op("Mul", &[&up, &up]);
    let down2 = g.op("Sub", &[&to2, &up2]);
    let down2 = g.op("Max", &[&down2, &zero]);
    (g.op("Sqrt", &[&down2]), up)
}

/// `schedule[index]` (float32), 0 where `index` is `zero_end` (the end
/// step of a fully denoising window).
fn window_sigma(
    g: &mut PolicyGraph<'_>,
    schedule: &str,
    index: &str,
    zero_end: Option<&str>,
) -> String {
    let sigma = g.gather(schedule, index);
    let Some(end) = zero_end else {
        return sigma;
    };
    let at_end = g.op("Equal", &[index, end]);
    let zero = g.f(0.0);
    g.op("Where", &[&at_end, &zero, &sigma])
}

/// A solver policy's inputs read into the graph: the sample, the guided
/// estimate (as epsilon), the step, the schedule, a window's end step and
/// the step's sigmas (the next one 0 at the end step of a fully denoising
/// window).
pub(super) struct StepInputs<'f> {
    x: String,
    d: String,
    step: String,
    schedule: String,
    end: Option<String>,
    ends_at_zero: bool,
    sigma: String,
    sigma_next: String,
    family: &'f Family,
}

impl<'f> StepInputs<'f> {
    /// Reads the inputs every solver policy has, the model's outputs read
    /// as `family`'s model gives them.
    pub(super) fn read(
        g: &mut PolicyGraph<'_>,
        family: &'f Family,
    ) -> Result<StepInputs<'f>, SynthError> {
        let x = g.input("sample")?;
        let out = g.input("estimate")?;
        let step = g.input("step")?;
        let schedule = g.input("schedule")?;
        // Past the schedule's end (a loop run longer than it, or an
        // adaptive sampler's iteration) the last sigma stands.
        let one_i = g.i(1);
        let length = g.op("Shape", &[&schedule]);
        let last = g.op("Sub", &[&length, &one_i]);
        let here = g.op("Min", &[&step, &last]);
        let sigma = g.gather(&schedule, &here);
        let d = to_epsilon(g, family, &x, &sigma, &out);
        let next = g.op("Add", &[&step, &one_i]);
        let next = g.op("Min", &[&next, &last]);
        let end = match g.has_input("end_step") {
            true => Some(g.input("end_step")?),
            false => None,
        };
        let ends_at_zero = end.is_some() && final_step(g) != Some("keep_leftover_noise");
        let zero_end = end.as_deref().filter(|_| ends_at_zero);
        let sigma_next = window_sigma(g, &schedule, &next, zero_end);
        Ok(StepInputs {
            x,
            d,
            step,
            schedule,
            end,
            ends_at_zero,
            sigma,
            sigma_next,
            family,
        })
    }

    /// The inputs as a [`Step`].
    pub(super) fn at(&self) -> Step<'_> {
        Step {
            x: &self.x,
            d: &self.d,
            sigma: &self.sigma,
            sigma_next: &self.sigma_next,
            schedule: &self.schedule,
            step: &self.step,
            end_step: self.end.as_deref(),
            ends_at_zero: self.ends_at_zero,
            family: self.family,
        }
    }
}
