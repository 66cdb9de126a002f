//! Seeded noise and noising. Noise is standard normal, made by the
//! Box–Muller transform from a counter-based hash, so the same seed and
//! offset give the same noise on every machine. All arithmetic is on
//! unsigned 64-bit integers, modulo 2^64, with the SplitMix64 finaliser
//! `mix(z)`: `z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27;
//! z *= 0x94d049bb133111eb; z ^= z >> 31` (Steele, Lea and Flood 2014).
//! Row `b` of a batch has the key `k = mix(mix(seed + G) ^ offset)` with
//! `G = 0x9e3779b97f4a7c15`, and its element `i` (row-major) the hash
//! `h = mix(k + G * (n + 1))` with `n = b * count + i`, so the rows of a
//! batch continue one stream, as one seeded draw of a whole batch does.
//! The top 24 bits of `h` and the 24 below them give `u1` and `u2` as
//! `(bits + 0.5) / 2^24` (exact in float32, never 0 or 1), and
//! `z = sqrt(-2 ln u1) * cos(2 pi u2)`.
//! (ComfyUI draws from torch's generator, which no ONNX graph reproduces:
//! the same seed gives other noise here.)

use super::SynthError;
use super::graph::{Family, PolicyGraph};
use super::sampling::{ModelSampling, discrete_schedule};
use wfstudio_onnx::builder::Attr;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// SplitMix64's increment, the golden ratio in 64-bit fixed point.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// Standard normal noise of shape `[batch] ++ row_shape` from per-row
/// `seed` and `offset` (both `[batch]` int64) and a rank-1 `row_shape`.
pub fn gaussian(g: &mut PolicyGraph<'_>, seed: &str, offset: &str, row_shape: &str) -> String {
    let golden = g.b.scalar_u64(GOLDEN);
    let seed_u = g.cast(seed, DataType::UINT64);
    let offset_u = g.cast(offset, DataType::UINT64);
    let seeded = g.op("Add", &[&seed_u, &golden]);
    let seed_key = mix(g, &seeded);
    let keyed = g.op("BitwiseXor", &[&seed_key, &offset_u]);
    let key = mix(g, &keyed);
    let column = g.b.vec_i64(&[-1, 1]);
    let key = g.op("Reshape", &[&key, &column]);
    // n = b * count + i + 1, for row b and element i.
    let keep_none = [("keepdims", Attr::Int(0))];
    let count = g.op_with("ReduceProd", &[row_shape], &keep_none);
    let rows = g.op("Shape", &[seed]);
    let batch = g.op_with("ReduceProd", &[&rows], &keep_none);
    let (zero, one) = (g.i(0), g.i(1));
    let row_index = g.op("Range", &[&zero, &batch, &one]);
    let row_index = g.op("Reshape", &[&row_index, &column]);
    let row_start = g.op("Mul", &[&row_index, &count]);
    let element = g.op("Range", &[&zero, &count, &one]);
    let first = g.op("Add", &[&row_start, &one]);
    let n = g.op("Add", &[&first, &element]);
    let n = g.cast(&n, DataType::UINT64);
    let stride = g.op("Mul", &[&n, &golden]);
    let counter = g.op("Add", &[&key, &stride]);
    let h = mix(g, &counter);
    let high = shift_right(g, &h, 40);
    let low = shift_right(g, &h, 16);
    let bits = g.b.scalar_u64(0xff_ffff);
    let low = g.op("BitwiseAnd", &[&low, &bits]);
    let u1 = unit_interval(g, &high);
    let u2 = unit_interval(g, &low);
    let ln = g.op("Log", &[&u1]);
    let minus_two = g.f(-2.0);
    let r2 = g.op("Mul", &[&ln, &minus_two]);
    let r = g.op("Sqrt", &[&r2]);
    let tau = g.f(std::f64::consts::TAU);
    let angle = g.op("Mul", &[&u2, &tau]);
    let cos = g.op("Cos", &[&angle]);
    let z = g.op("Mul", &[&r, &cos]);
    let full = g.op_with("Concat", &[&rows, row_shape], &[("axis", Attr::Int(0))]);
    g.op("Reshape", &[&z, &full])
}

/// The SplitMix64 finaliser of a uint64 tensor.
fn mix(g: &mut PolicyGraph<'_>, z: &str) -> String {
    let z = xor_shift(g, z, 30);
    let m1 = g.b.scalar_u64(0xbf58_476d_1ce4_e5b9);
    let z = g.op("Mul", &[&z, &m1]);
    let z = xor_shift(g, &z, 27);
    let m2 = g.b.scalar_u64(0x94d0_49bb_1331_11eb);
    let z = g.op("Mul", &[&z, &m2]);
    xor_shift(g, &z, 31)
}

/// `z ^ (z >> bits)` of a uint64 tensor.
fn xor_shift(g: &mut PolicyGraph<'_>, z: &str, bits: u64) -> String {
    let shifted = shift_right(g, z, bits);
    g.op("BitwiseXor", &[z, &shifted])
}

/// `z >> bits` of a uint64 tensor.
fn shift_right(g: &mut PolicyGraph<'_>, z: &str, bits: u64) -> String {
    let amount = g.b.scalar_u64(bits);
    g.op_with(
        "BitShift",
        &[z, &amount],
        &[("direction", Attr::Str("RIGHT".into()))],
    )
}

/// `(bits + 0.5) / 2^24` in float32 for 24-bit unsigned `bits`.
fn unit_interval(g: &mut PolicyGraph<'_>, bits: &str) -> String {
    let as_float = g.cast(bits, DataType::FLOAT);
    let half = g.f(0.5);
    let centred = g.op("Add", &[&as_float, &half]);
    let scale = g.f(2f64.powi(-24));
    g.op("Mul", &[&centred, &scale])
}

/// `latent_noise`: the seeded noise for a latent of `[batch] ++ row_shape`;
/// with parameter `scale: initial_sigma` (the loop starts from the noise
/// itself, ComfyUI's full-denoise txt2img) it is scaled as ComfyUI scales
/// the first sample of an epsilon model (see [`first_sample_scale`]; flow
/// models start at sigma 1 and are left as they are).
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
        let sigma_max = sigmas[sigmas.len() - 1];
        let scale = g.f(first_sample_scale(schedule[0], sigma_max));
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

/// `add_noise`: the start latent noised to the schedule's sigma at `step`;
/// an epsilon model's run that starts at the top of its table gets
/// [`first_sample_scale`]'s `sqrt(1 + sigma^2)` in place of sigma.
pub fn add_noise(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let latent = g.input("latent")?;
    let noise = g.input("noise")?;
    let schedule = g.input("schedule")?;
    let step = g.input("step")?;
    let sigma = g.gather(&schedule, &step);
    let mut sigma = g.rows4(&sigma);
    if let ModelSampling::Discrete { sigmas } = &family.sampling {
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
