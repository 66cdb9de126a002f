//! Seeded noise and noising. Noise is standard normal, made by the
//! Box–Muller transform from a counter-based hash, so the same seed and
//! offset give the same noise on every machine: per row, the key is
//! `(seed mod M) * 1000003 + (offset mod M) * 9176` and element `i` takes
//! the counters `key + 2i` and `key + 2i + 1`, each hashed as
//! `((c mod M) * 1103515245 + 12345) mod M` with `M = 2^31 - 1` and mapped to
//! `u = (h + 0.5) / 2^31`; then `z = sqrt(-2 ln u1) * cos(2 pi u2)`.
//! (ComfyUI draws from torch's generator, which no ONNX graph reproduces:
//! the same seed gives other noise here.)

use super::SynthError;
use super::graph::{Family, PolicyGraph};
use super::sampling::{ModelSampling, discrete_schedule};
use wfstudio_onnx::builder::Attr;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

const MODULUS: i64 = 2_147_483_647;

/// Standard normal noise of shape `[batch] ++ row_shape` from per-row
/// `seed` and `offset` (both `[batch]` int64) and a rank-1 `row_shape`.
pub fn gaussian(g: &mut PolicyGraph<'_>, seed: &str, offset: &str, row_shape: &str) -> String {
    let m = g.i(MODULUS);
    let seed_m = g.op("Mod", &[seed, &m]);
    let offset_m = g.op("Mod", &[offset, &m]);
    let seed_stride = g.i(1_000_003);
    let offset_stride = g.i(9176);
    let a = g.op("Mul", &[&seed_m, &seed_stride]);
    let b = g.op("Mul", &[&offset_m, &offset_stride]);
    let key = g.op("Add", &[&a, &b]);
    let column = g.b.vec_i64(&[-1, 1]);
    let key = g.op("Reshape", &[&key, &column]);
    let count = g.op_with("ReduceProd", &[row_shape], &[("keepdims", Attr::Int(0))]);
    let (zero, one, two) = (g.i(0), g.i(1), g.i(2));
    let index = g.op("Range", &[&zero, &count, &one]);
    let twice = g.op("Mul", &[&index, &two]);
    let c1 = g.op("Add", &[&key, &twice]);
    let c2 = g.op("Add", &[&c1, &one]);
    let u1 = uniform(g, &c1);
    let u2 = uniform(g, &c2);
    let ln = g.op("Log", &[&u1]);
    let minus_two = g.f(-2.0);
    let r2 = g.op("Mul", &[&ln, &minus_two]);
    let r = g.op("Sqrt", &[&r2]);
    let tau = g.f(std::f64::consts::TAU);
    let angle = g.op("Mul", &[&u2, &tau]);
    let cos = g.op("Cos", &[&angle]);
    let z = g.op("Mul", &[&r, &cos]);
    let rows = g.op("Shape", &[seed]);
    let full = g.op_with("Concat", &[&rows, row_shape], &[("axis", Attr::Int(0))]);
    g.op("Reshape", &[&z, &full])
}

fn uniform(g: &mut PolicyGraph<'_>, counter: &str) -> String {
    let m = g.i(MODULUS);
    let multiplier = g.i(1_103_515_245);
    let increment = g.i(12_345);
    let base = g.op("Mod", &[counter, &m]);
    let stepped = g.op("Mul", &[&base, &multiplier]);
    let biased = g.op("Add", &[&stepped, &increment]);
    let hashed = g.op("Mod", &[&biased, &m]);
    let as_float = g.cast(&hashed, DataType::FLOAT);
    let half = g.f(0.5);
    let centred = g.op("Add", &[&as_float, &half]);
    let scale = g.f(2f64.powi(31));
    g.op("Div", &[&centred, &scale])
}

/// `latent_noise`: the seeded noise for a latent of `[batch] ++ row_shape`;
/// with parameter `scale: initial_sigma` (the loop starts from the noise
/// itself, ComfyUI's full-denoise txt2img) it is scaled as ComfyUI scales
/// the first sample: by `sqrt(1 + sigma_0^2)` for epsilon models (1 for flow
/// models, whose first sigma is 1).
pub fn latent_noise(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let seed = g.input("seed")?;
    let offset = g.input("offset")?;
    let row_shape = g.input("row_shape")?;
    let mut noise = gaussian(g, &seed, &offset, &row_shape);
    let initial = g
        .parameter("scale")
        .and_then(|v| v.as_str())
        .is_some_and(|s| s == "initial_sigma");
    if initial && let ModelSampling::Discrete { sigmas } = &family.sampling {
        let schedule = discrete_schedule(sigmas, &family.scheduler, family.steps)
            .ok_or_else(|| g.error(format!("unknown scheduler `{}`", family.scheduler)))?;
        let scale = g.f((1.0 + schedule[0] * schedule[0]).sqrt());
        noise = g.op("Mul", &[&noise, &scale]);
    }
    let one = g.i(1);
    let next = g.op("Add", &[&offset, &one]);
    g.output(&noise, "noise")?;
    g.output(&next, "next_offset")
}

/// The noised latent at `sigma` (per row, broadcastable): epsilon models
/// add `noise * sigma`; flow models mix `sigma * noise + (1 - sigma) * latent`.
fn noised(
    g: &mut PolicyGraph<'_>,
    family: &Family,
    latent: &str,
    noise: &str,
    sigma: &str,
) -> String {
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

/// `add_noise`: the start latent noised to the schedule's sigma at `step`.
pub fn add_noise(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let latent = g.input("latent")?;
    let noise = g.input("noise")?;
    let schedule = g.input("schedule")?;
    let step = g.input("step")?;
    let sigma = g.gather(&schedule, &step);
    let sigma = g.rows4(&sigma);
    let out = noised(g, family, &latent, &noise, &sigma);
    g.output(&out, "noised")
}

/// `masked_blend`: the solved latent inside the mask, the source noised to
/// the next step's sigma outside it.
pub fn masked_blend(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let solved = g.input("solved")?;
    let source = g.input("source")?;
    let noise = g.input("noise")?;
    let mask = g.input("mask")?;
    let step = g.input("step")?;
    let schedule = g.input("schedule")?;
    let one_i = g.i(1);
    let next = g.op("Add", &[&step, &one_i]);
    let sigma = g.gather(&schedule, &next);
    let sigma = g.rows4(&sigma);
    let outside_value = noised(g, family, &source, &noise, &sigma);
    let one = g.f(1.0);
    let keep = g.op("Sub", &[&one, &mask]);
    let inside = g.op("Mul", &[&solved, &mask]);
    let outside = g.op("Mul", &[&outside_value, &keep]);
    let out = g.op("Add", &[&inside, &outside]);
    g.output(&out, "next_state")
}
