//! The policies of the terrain diffusion package (a consistency-model UNet
//! that denoises 128 x 128 heightmaps, `fixtures/real/terrain-diffusion`),
//! built as ONNX models: the seeded noise, heights to and from the model's
//! space, the start of a fresh terrain (noise at sigma 80) or of a variation
//! of a source (noised to the strength's sigma), the multistep consistency
//! schedule, each step's model conditioning, the re-noising between steps,
//! and a terrain colour map for the preview. The constants are the model's
//! own (its package's `generator.py`).
//!
//! Schedule: for `steps` steps from `sigma_start`, Karras et al. (2022) with
//! rho 7 towards `SIGMA_MIN`: `sigma_k = (a + k / steps * (b - a))^7`,
//! `a = sigma_start^(1/7)`, `b = SIGMA_MIN^(1/7)`, `k = 0..steps-1`; one step
//! is the package's own one-step sampler. Between steps (Song et al. 2023,
//! multistep consistency sampling) the denoised terrain is noised to the
//! next sigma (the last step's is kept): `x = denoised + sqrt(sigma_(k+1)^2 - SIGMA_MIN^2) * z_k`,
//! with `z_k` the seeded noise at offset `k + 1` (the start's noise is at
//! offset 0).

use wfstudio_onnx::builder::{Attr, Dim, GraphBuilder};
use wfstudio_onnx::labels::RANGE_KEY;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;
use wfstudio_onnx::random::gaussian;

/// The largest noise level, where a fresh terrain starts.
pub const SIGMA_MAX: f64 = 80.0;
/// The smallest noise level.
pub const SIGMA_MIN: f64 = 0.002;
/// The highest terrain, in metres (model value 1).
pub const HEIGHT_RANGE: f64 = 22.16864013671875;
/// The scale of the heights' asinh compression.
pub const ASINH_SCALE: f64 = 0.1;
/// The side of the model's heightmaps.
pub const SIZE: i64 = 128;
/// The most sampling steps a request may ask for.
pub const MAX_STEPS: i64 = 64;
/// The difficulty classes the model knows.
pub const DIFFICULTY_RANGE: (f64, f64) = (0.0, 99.0);

const PRODUCER: &str = "wfstudio make terrain-policies";

fn batch() -> Dim {
    Dim::Named("batch".into())
}

fn latent() -> Vec<Dim> {
    vec![batch(), Dim::Fixed(1), Dim::Fixed(SIZE), Dim::Fixed(SIZE)]
}

fn heightmap() -> Vec<Dim> {
    vec![batch(), Dim::Fixed(SIZE), Dim::Fixed(SIZE)]
}

fn one() -> Vec<Dim> {
    vec![Dim::Fixed(1)]
}

fn f(g: &mut GraphBuilder, value: f64) -> String {
    g.scalar_f32(value as f32)
}

/// Every policy of the package: `(component name, model bytes)`.
pub fn terrain_policies() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("terrain_noise", terrain_noise()),
        ("supplied_noise", supplied_noise()),
        ("to_model_space", to_model_space()),
        ("start_fresh", start_fresh()),
        ("start_variation", start_variation()),
        ("terrain_schedule", terrain_schedule()),
        ("denoise_inputs", denoise_inputs()),
        ("renoise", renoise()),
        ("keep_terrain", keep_terrain()),
        ("from_model_space", from_model_space()),
        ("colour_map", colour_map()),
    ]
}

/// `seed [batch]` -> `noise [batch, 1, 128, 128]`, offset 0.
fn terrain_noise() -> Vec<u8> {
    let mut g = GraphBuilder::new("terrain_noise", PRODUCER);
    let seed = g.input("seed", DataType::INT64, &[batch()]);
    let offset = g.op("Sub", &[&seed, &seed]);
    let row = g.vec_i64(&[1, SIZE, SIZE]);
    let noise = gaussian(&mut g, &seed, &offset, &row);
    g.output(&noise, "noise", DataType::FLOAT, &latent());
    g.to_bytes()
}

/// The request's own noise, passed on (the branch that uses it).
fn supplied_noise() -> Vec<u8> {
    let mut g = GraphBuilder::new("supplied_noise", PRODUCER);
    let noise = g.input("noise", DataType::FLOAT, &latent());
    g.output(&noise, "start_noise", DataType::FLOAT, &latent());
    g.to_bytes()
}

/// Heights in metres `[batch, 128, 128]` -> model space `[batch, 1, 128,
/// 128]`: lowest point at 0, clipped to the range, asinh-compressed to
/// [0, 1], then to [-1, 1].
fn to_model_space() -> Vec<u8> {
    let mut g = GraphBuilder::new("to_model_space", PRODUCER);
    let heights = g.input("heights", DataType::FLOAT, &heightmap());
    let axes = g.vec_i64(&[1, 2]);
    let floor = g.op("ReduceMin", &[&heights, &axes]);
    let lifted = g.op("Sub", &[&heights, &floor]);
    let (zero, top) = (f(&mut g, 0.0), f(&mut g, HEIGHT_RANGE));
    let clipped = g.op("Clip", &[&lifted, &zero, &top]);
    let scale = f(&mut g, ASINH_SCALE);
    let scaled = g.op("Div", &[&clipped, &scale]);
    let compressed = g.op("Asinh", &[&scaled]);
    let normalizer = f(&mut g, (HEIGHT_RANGE / ASINH_SCALE).asinh());
    let unit = g.op("Div", &[&compressed, &normalizer]);
    let (two, one_f) = (f(&mut g, 2.0), f(&mut g, 1.0));
    let doubled = g.op("Mul", &[&unit, &two]);
    let centred = g.op("Sub", &[&doubled, &one_f]);
    let channel = g.vec_i64(&[1]);
    let model = g.op("Unsqueeze", &[&centred, &channel]);
    g.output(&model, "model", DataType::FLOAT, &latent());
    g.to_bytes()
}

/// A fresh terrain: `noise * 80`, at sigma 80.
fn start_fresh() -> Vec<u8> {
    let mut g = GraphBuilder::new("start_fresh", PRODUCER);
    let noise = g.input("noise", DataType::FLOAT, &latent());
    let sigma = g.f32s(&[SIGMA_MAX as f32], &[1]);
    let start = g.op("Mul", &[&noise, &sigma]);
    g.output(&start, "start", DataType::FLOAT, &latent());
    g.output(&sigma, "sigma_start", DataType::FLOAT, &one());
    g.to_bytes()
}

/// A variation of `model` (a source terrain in model space): noised to
/// `SIGMA_MIN * (SIGMA_MAX / SIGMA_MIN)^strength`, strength in [0, 1].
fn start_variation() -> Vec<u8> {
    let mut g = GraphBuilder::new("start_variation", PRODUCER);
    let model = g.input("model", DataType::FLOAT, &latent());
    let noise = g.input("noise", DataType::FLOAT, &latent());
    let strength = g.input("strength", DataType::FLOAT, &one());
    g.input_metadata("strength", RANGE_KEY, "[0, 1]");
    let log_ratio = f(&mut g, (SIGMA_MAX / SIGMA_MIN).ln());
    let exponent = g.op("Mul", &[&strength, &log_ratio]);
    let grown = g.op("Exp", &[&exponent]);
    let low = f(&mut g, SIGMA_MIN);
    let sigma = g.op("Mul", &[&grown, &low]);
    let scaled = g.op("Mul", &[&noise, &sigma]);
    let start = g.op("Add", &[&model, &scaled]);
    g.output(&start, "start", DataType::FLOAT, &latent());
    g.output(&sigma, "sigma_start", DataType::FLOAT, &one());
    g.to_bytes()
}

/// `steps [1]` (1..=64), `sigma_start [1]` -> `sigmas [steps]` (see the
/// module's schedule).
fn terrain_schedule() -> Vec<u8> {
    let mut g = GraphBuilder::new("terrain_schedule", PRODUCER);
    let steps = g.input("steps", DataType::INT64, &one());
    g.input_metadata("steps", RANGE_KEY, &format!("[1, {MAX_STEPS}]"));
    let start = g.input("sigma_start", DataType::FLOAT, &one());
    let keep_none = [("keepdims", Attr::Int(0))];
    let count = g.op_with("ReduceMax", &[&steps], &keep_none);
    let (zero, step) = (g.scalar_i64(0), g.scalar_i64(1));
    let k = g.op("Range", &[&zero, &count, &step]);
    let k = g.cast(&k, DataType::FLOAT);
    let total = g.cast(&steps, DataType::FLOAT);
    let t = g.op("Div", &[&k, &total]);
    let inverse_rho = f(&mut g, 1.0 / 7.0);
    let a = g.op("Pow", &[&start, &inverse_rho]);
    let b = f(&mut g, SIGMA_MIN.powf(1.0 / 7.0));
    let span = g.op("Sub", &[&b, &a]);
    let along = g.op("Mul", &[&t, &span]);
    let root = g.op("Add", &[&a, &along]);
    let rho = f(&mut g, 7.0);
    let sigmas = g.op("Pow", &[&root, &rho]);
    // The first sigma is the start's exactly (the 7th power of its 7th
    // root is not, in float32).
    let (from, to) = (g.vec_i64(&[1]), g.vec_i64(&[i64::MAX]));
    let later = g.op("Slice", &[&sigmas, &from, &to]);
    let sigmas = g.op_with("Concat", &[&start, &later], &[("axis", Attr::Int(0))]);
    g.output(
        &sigmas,
        "sigmas",
        DataType::FLOAT,
        &[Dim::Named("steps".into())],
    );
    g.to_bytes()
}

/// The model's conditioning at loop step `step`: that step's sigma for
/// every row, the difficulty classes (0..=99) as the model takes them
/// (`class / 99`, in [0, 1], as the wheel's `generator.py` feeds its
/// classes 1..=100 as `(class - 1) / 99`), and whether another step
/// follows.
fn denoise_inputs() -> Vec<u8> {
    let mut g = GraphBuilder::new("denoise_inputs", PRODUCER);
    let sigmas = g.input("sigmas", DataType::FLOAT, &[Dim::Named("steps".into())]);
    let step = g.input("step", DataType::INT64, &one());
    let difficulty = g.input("difficulty", DataType::INT64, &[batch()]);
    let (low, high) = DIFFICULTY_RANGE;
    g.input_metadata("difficulty", RANGE_KEY, &format!("[{low}, {high}]"));
    let sigma = g.op_with("Gather", &[&sigmas, &step], &[("axis", Attr::Int(0))]);
    let rows = g.op("Shape", &[&difficulty]);
    let sigma = g.op("Expand", &[&sigma, &rows]);
    let classes = g.cast(&difficulty, DataType::FLOAT);
    let top_class = f(&mut g, DIFFICULTY_RANGE.1);
    let classes = g.op("Div", &[&classes, &top_class]);
    let one_i = g.vec_i64(&[1]);
    let next = g.op("Add", &[&step, &one_i]);
    let count = g.op("Shape", &[&sigmas]);
    let more = g.op("Less", &[&next, &count]);
    g.output(&sigma, "sigma", DataType::FLOAT, &[batch()]);
    g.output(&classes, "difficulty_value", DataType::FLOAT, &[batch()]);
    g.output(&more, "more", DataType::BOOL, &one());
    g.to_bytes()
}

/// After loop step `step`, when another follows: the denoised terrain
/// noised to the next sigma (the seeded noise at offset `step + 1`).
fn renoise() -> Vec<u8> {
    let mut g = GraphBuilder::new("renoise", PRODUCER);
    let denoised = g.input("denoised", DataType::FLOAT, &latent());
    let seed = g.input("seed", DataType::INT64, &[batch()]);
    let step = g.input("step", DataType::INT64, &one());
    let sigmas = g.input("sigmas", DataType::FLOAT, &[Dim::Named("steps".into())]);
    let one_i = g.vec_i64(&[1]);
    let next = g.op("Add", &[&step, &one_i]);
    let sigma = g.op_with("Gather", &[&sigmas, &next], &[("axis", Attr::Int(0))]);
    let squared = g.op("Mul", &[&sigma, &sigma]);
    let floor = f(&mut g, SIGMA_MIN * SIGMA_MIN);
    let excess = g.op("Sub", &[&squared, &floor]);
    let zero = f(&mut g, 0.0);
    let excess = g.op("Max", &[&excess, &zero]);
    let amount = g.op("Sqrt", &[&excess]);
    let rows = g.op("Shape", &[&seed]);
    let offset = g.op("Expand", &[&next, &rows]);
    let row = g.vec_i64(&[1, SIZE, SIZE]);
    let z = gaussian(&mut g, &seed, &offset, &row);
    let added = g.op("Mul", &[&z, &amount]);
    let out = g.op("Add", &[&denoised, &added]);
    g.output(&out, "next", DataType::FLOAT, &latent());
    g.to_bytes()
}

/// After the last step: the denoised terrain, kept.
fn keep_terrain() -> Vec<u8> {
    let mut g = GraphBuilder::new("keep_terrain", PRODUCER);
    let denoised = g.input("denoised", DataType::FLOAT, &latent());
    g.output(&denoised, "next", DataType::FLOAT, &latent());
    g.to_bytes()
}

/// Model space `[batch, 1, 128, 128]` -> heights in metres `[batch, 128,
/// 128]`: `0.1 sinh(clip((v + 1) / 2, 0, 1) asinh(H / 0.1))`, within [0, H].
fn from_model_space() -> Vec<u8> {
    let mut g = GraphBuilder::new("from_model_space", PRODUCER);
    let model = g.input("model", DataType::FLOAT, &latent());
    let (one_f, half, zero) = (f(&mut g, 1.0), f(&mut g, 0.5), f(&mut g, 0.0));
    let shifted = g.op("Add", &[&model, &one_f]);
    let unit = g.op("Mul", &[&shifted, &half]);
    let unit = g.op("Clip", &[&unit, &zero, &one_f]);
    let normalizer = f(&mut g, (HEIGHT_RANGE / ASINH_SCALE).asinh());
    let expanded = g.op("Mul", &[&unit, &normalizer]);
    let grown = g.op("Sinh", &[&expanded]);
    let scale = f(&mut g, ASINH_SCALE);
    let heights = g.op("Mul", &[&grown, &scale]);
    let top = f(&mut g, HEIGHT_RANGE);
    let heights = g.op("Clip", &[&heights, &zero, &top]);
    let channel = g.vec_i64(&[1]);
    let heights = g.op("Squeeze", &[&heights, &channel]);
    g.output(&heights, "heights", DataType::FLOAT, &heightmap());
    g.to_bytes()
}

/// Colour stops of the preview, by height as a share of the terrain's
/// relief: water, lowland green, highland, rock, snow.
const COLOUR_STOPS: [(f64, [f64; 3]); 5] = [
    (0.0, [0.16, 0.34, 0.55]),
    (0.08, [0.24, 0.52, 0.25]),
    (0.35, [0.62, 0.62, 0.34]),
    (0.7, [0.50, 0.40, 0.33]),
    (1.0, [0.96, 0.96, 0.96]),
];

/// Entries of the colour map's table.
const COLOUR_LEVELS: usize = 256;

/// Heights `[batch, 128, 128]` -> a colour picture `[batch, 3, 128, 128]`
/// in [0, 1]: the colour stops, linearly between them (a 256-entry
/// table), by height within each terrain's own relief (its lowest point
/// water, its highest snow: the model's terrains span centimetres to
/// metres), lit by a light from the north-west (brighter where the ground
/// rises towards it, by the slope over the relief).
fn colour_map() -> Vec<u8> {
    let mut g = GraphBuilder::new("colour_map", PRODUCER);
    let heights = g.input("heights", DataType::FLOAT, &heightmap());
    let mut table = vec![0f32; COLOUR_LEVELS * 3];
    for (level, rgb) in table.chunks_mut(3).enumerate() {
        let t = level as f64 / (COLOUR_LEVELS - 1) as f64;
        let colour = ramp(t);
        for (out, value) in rgb.iter_mut().zip(colour) {
            *out = value as f32;
        }
    }
    let table = g.f32s(&table, &[COLOUR_LEVELS as i64, 3]);
    // Each terrain's own relief, lowest to highest point.
    let axes = g.vec_i64(&[1, 2]);
    let floor = g.op("ReduceMin", &[&heights, &axes]);
    let peak = g.op("ReduceMax", &[&heights, &axes]);
    let span = g.op("Sub", &[&peak, &floor]);
    let least = f(&mut g, 1e-3);
    let span = g.op("Max", &[&span, &least]);
    let lifted = g.op("Sub", &[&heights, &floor]);
    let share = g.op("Div", &[&lifted, &span]);
    let levels = f(&mut g, (COLOUR_LEVELS - 1) as f64);
    let (zero, top, half) = (
        f(&mut g, 0.0),
        f(&mut g, (COLOUR_LEVELS - 1) as f64),
        f(&mut g, 0.5),
    );
    let level = g.op("Mul", &[&share, &levels]);
    let level = g.op("Add", &[&level, &half]);
    let level = g.op("Clip", &[&level, &zero, &top]);
    let level = g.cast(&level, DataType::INT64);
    // [batch, 128, 128, 3] -> [batch, 3, 128, 128]
    let colour = g.op_with("Gather", &[&table, &level], &[("axis", Attr::Int(0))]);
    let colour = g.op_with(
        "Transpose",
        &[&colour],
        &[("perm", Attr::Ints(vec![0, 3, 1, 2]))],
    );
    // Shading: the slope towards the north-west, from the heights shifted
    // by one pixel (edge pixels repeat).
    let pads = g.vec_i64(&[0, 1, 1, 0, 0, 0]);
    let edge = [("mode", Attr::Str("edge".into()))];
    let padded = g.op_with("Pad", &[&heights, &pads], &edge);
    let (starts, ends, axes) = (
        g.vec_i64(&[0, 0]),
        g.vec_i64(&[SIZE, SIZE]),
        g.vec_i64(&[1, 2]),
    );
    let north_west = g.op("Slice", &[&padded, &starts, &ends, &axes]);
    let rise = g.op("Sub", &[&heights, &north_west]);
    let rise = g.op("Div", &[&rise, &span]);
    let gain = f(&mut g, 6.0);
    let lit = g.op("Mul", &[&rise, &gain]);
    let one_f = f(&mut g, 1.0);
    let lit = g.op("Add", &[&lit, &one_f]);
    let (dark, bright) = (f(&mut g, 0.55), f(&mut g, 1.25));
    let lit = g.op("Clip", &[&lit, &dark, &bright]);
    let axis = g.vec_i64(&[1]);
    let lit = g.op("Unsqueeze", &[&lit, &axis]);
    let shaded = g.op("Mul", &[&colour, &lit]);
    let image = g.op("Clip", &[&shaded, &zero, &one_f]);
    let dims = [batch(), Dim::Fixed(3), Dim::Fixed(SIZE), Dim::Fixed(SIZE)];
    g.output(&image, "image", DataType::FLOAT, &dims);
    g.to_bytes()
}

/// The colour at height share `t` in [0, 1]: linear between the stops.
fn ramp(t: f64) -> [f64; 3] {
    let mut colour = COLOUR_STOPS[0].1;
    for pair in COLOUR_STOPS.windows(2) {
        let ((t0, c0), (t1, c1)) = (pair[0], pair[1]);
        let share = ((t - t0) / (t1 - t0)).clamp(0.0, 1.0);
        for c in 0..3 {
            colour[c] += share * (c1[c] - c0[c]);
        }
    }
    colour
}
