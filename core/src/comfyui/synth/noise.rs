//! Seeded noise and noising: the counter-based standard normal noise of
//! `wfstudio_onnx::random` (the same seed and offset give the same noise
//! on every machine; ComfyUI draws from torch's generator, which no ONNX
//! graph reproduces, so the same seed gives other noise here), scaled for
//! the first sample, and the noised latents of windows and masks.

use super::SynthError;
use super::graph::{Family, PolicyGraph};
use super::prediction::PredictionKind;
use super::tables::ModelSampling;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;
use wfstudio_onnx::random::gaussian;

/// `latent_noise`: the seeded noise for a latent of `[batch] ++ row_shape`;
/// with parameter `scale: initial_sigma` (the loop starts from the noise
/// itself, ComfyUI's full-denoise txt2img) it is scaled as ComfyUI scales
/// the first sample of an epsilon model (see [`first_sample_scale`]; flow
/// models start at sigma 1 and are left as they are).
pub fn latent_noise(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let seed = g.input("seed")?;
    let offset = g.input("offset")?;
    let row_shape = g.input("row_shape")?;
    let mut noise = gaussian(&mut g.b, &seed, &offset, &row_shape);
    let initial = g
        .parameter("scale")
        .and_then(|v| v.as_str())
        .is_some_and(|s| s == "initial_sigma");
    if initial && let ModelSampling::Discrete { sigmas, .. } = &family.sampling {
        let first = family.constant_schedule().and_then(|s| s.first().copied());
        let first = first.ok_or_else(|| g.error("the schedule has no sigmas"))?;
        let sigma_max = sigmas[sigmas.len() - 1];
        let scale = g.f(first_sample_scale(first, sigma_max));
        noise = g.op("Mul", &[&noise, &scale]);
    }
    let one = g.i(1);
    let next = g.op("Add", &[&offset, &one]);
    g.output(&noise, "noise")?;
    g.output(&next, "next_offset")
}

/// How much noise an epsilon model's first sample gets at `sigma`, as
/// ComfyUI's `noise_scaling` decides: `sqrt(1 + sigma^2)` where the run
/// starts from the top of the table (sigma within a relative 1e-5 of
/// `sigma_max`, or above it), else `sigma`.
pub fn first_sample_scale(sigma: f64, sigma_max: f64) -> f64 {
    if sigma >= sigma_max * (1.0 - MAX_DENOISE_TOLERANCE) {
        (1.0 + sigma * sigma).sqrt()
    } else {
        sigma
    }
}

/// ComfyUI's relative tolerance for "this run starts at sigma_max".
const MAX_DENOISE_TOLERANCE: f64 = 1e-5;

/// The noised latent at `sigma` (per row, broadcastable): epsilon models
/// add `noise * sigma`; flow models mix `sigma * noise + (1 - sigma) *
/// latent`; an image-to-image velocity model takes the latent as it is
/// (ComfyUI's `IMG_TO_IMG_VELOCITY` noise scaling).
fn noised(
    g: &mut PolicyGraph<'_>,
    family: &Family,
    latent: &str,
    noise: &str,
    sigma: &str,
) -> String {
    if family.prediction.kind == PredictionKind::ImgToImgVelocity {
        return latent.to_string();
    }
    let scaled = g.op("Mul", &[noise, sigma]);
    if family.is_flow() {
        let one = g.f(1.0);
        let keep = g.op("Sub", &[&one, sigma]);
        let kept = g.op("Mul", &[latent, &keep]);
        g.op("Add", &[&kept, &scaled])
    } else {
        g.op("Add", &[latent, &scaled])
    }
}

/// `add_noise`: the start latent noised to the schedule's sigma at `step`;
/// an epsilon model's run that starts at the top of its table gets
/// [`first_sample_scale`]'s `sqrt(1 + sigma^2)` in place of sigma.
pub fn add_noise(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let latent = g.input("latent")?;
    let noise = g.input("noise")?;
    let schedule = g.input("schedule")?;
    let step = g.input("step")?;
    let sigma = g.gather(&schedule, &step);
    let mut sigma = g.rows(&sigma);
    if let ModelSampling::Discrete { sigmas, .. } = &family.sampling {
        let threshold = g.f(sigmas[sigmas.len() - 1] * (1.0 - MAX_DENOISE_TOLERANCE));
        let at_top = g.op("GreaterOrEqual", &[&sigma, &threshold]);
        let squared = g.op("Mul", &[&sigma, &sigma]);
        let one = g.f(1.0);
        let grown = g.op("Add", &[&squared, &one]);
        let grown = g.op("Sqrt", &[&grown]);
        sigma = g.op("Where", &[&at_top, &grown, &sigma]);
    }
    let out = noised(g, family, &latent, &noise, &sigma);
    g.output(&out, "noised")
}

/// `masked_blend`: the solved latent inside the mask, the source noised to
/// the next step's sigma outside it. With contract parameter
/// `differential` (`DifferentialDiffusion` on a flow model) the mask is
/// the cells at or above the step's threshold `(sigma - sigma_to) /
/// (sigma_from - sigma_to)`, as ComfyUI's node computes it of the
/// timesteps (a flow model's are sigmas times a constant): `sigma` the
/// step's, `sigma_from` the run's first, `sigma_to` the larger of its last
/// and the model's least (its table's first entry, `a t / (1 + (a - 1) t)`
/// at `t = 1 / table` for shift factor `a`).
pub fn masked_blend(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let solved = g.input("solved")?;
    let source = g.input("source")?;
    let noise = g.input("noise")?;
    let mut mask = g.input("mask")?;
    let step = g.input("step")?;
    let schedule = g.input("schedule")?;
    if g.parameter("differential").is_some() {
        mask = differential_mask(g, family, (&mask, &step, &schedule))?;
    }
    let one_i = g.i(1);
    let next = g.op("Add", &[&step, &one_i]);
    let sigma = g.gather(&schedule, &next);
    let sigma = g.rows(&sigma);
    let outside_value = noised(g, family, &source, &noise, &sigma);
    let one = g.f(1.0);
    let keep = g.op("Sub", &[&one, &mask]);
    let inside = g.op("Mul", &[&solved, &mask]);
    let outside = g.op("Mul", &[&outside_value, &keep]);
    let out = g.op("Add", &[&inside, &outside]);
    g.output(&out, "next_state")
}

/// `DifferentialDiffusion`'s mask at `step`: the cells of `mask` at or
/// above the step's threshold (see [`masked_blend`]).
fn differential_mask(
    g: &mut PolicyGraph<'_>,
    family: &Family,
    (mask, step, schedule): (&str, &str, &str),
) -> Result<String, SynthError> {
    let ModelSampling::Flow { table, .. } = family.sampling else {
        return Err(g.error("DifferentialDiffusion's threshold is built for flow models only"));
    };
    let alpha = super::schedule::shift_alpha(g)?;
    let least = super::schedule::percent_to_sigma(g, &alpha, 1.0 - 1.0 / table as f64);
    let least = g.cast(&least, DataType::FLOAT);
    // A masked latent's run is a window of its schedule, which names its
    // first step; a run from the schedule's top starts at 0.
    let first = match g.has_input("first") {
        true => g.input("first")?,
        false => g.i(0),
    };
    let from = g.gather(schedule, &first);
    let count = g.op("Shape", &[schedule]);
    let one = g.b.vec_i64(&[1]);
    let last = g.op("Sub", &[&count, &one]);
    let last = g.gather(schedule, &last);
    let to = g.op("Max", &[&least, &last]);
    let sigma = g.gather(schedule, step);
    let above = g.op("Sub", &[&sigma, &to]);
    let span = g.op("Sub", &[&from, &to]);
    let threshold = g.op("Div", &[&above, &span]);
    let threshold = g.rows(&threshold);
    let kept = g.op("GreaterOrEqual", &[mask, &threshold]);
    Ok(g.cast(&kept, DataType::FLOAT))
}

#[cfg(test)]
mod tests {
    use super::first_sample_scale;

    #[test]
    fn the_first_sample_takes_sqrt_one_plus_sigma_squared_only_at_the_top() {
        let sigma_max = 14.614642;
        let grown = |s: f64| (1.0 + s * s).sqrt();
        assert_eq!(first_sample_scale(sigma_max, sigma_max), grown(sigma_max));
        // Within a relative 1e-5 below, and anything above, counts as the top.
        let near = sigma_max * (1.0 - 0.9e-5);
        assert_eq!(first_sample_scale(near, sigma_max), grown(near));
        assert_eq!(first_sample_scale(20.0, sigma_max), grown(20.0));
        let below = sigma_max * (1.0 - 1.1e-5);
        assert_eq!(first_sample_scale(below, sigma_max), below);
        assert_eq!(first_sample_scale(3.0, sigma_max), 3.0);
    }
}
