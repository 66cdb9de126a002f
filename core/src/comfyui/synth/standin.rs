//! Stand-in model components: tiny deterministic models with exactly the
//! declared port contracts, so a workflow's structure runs before any
//! weights exist. Each output is `a * carrier + b * context + c`:
//! - `carrier` is the first float input of the output's rank resized
//!   (nearest) to the output's shape, or, without one, `sin(0.7 i + phase)`
//!   over the output's elements;
//! - `context` is the sum over every input of `sin(k * mean + phase)` (the
//!   input cast to float; `k` in [0.01, 0.06)), so every port, a timestep
//!   in the hundreds included, changes the result and none can blow it up;
//! - `a`, `b`, `c` and `phase` come from a seeded generator per output.
//!
//! An output extent is the same-named extent of an input; else a name the
//! caller knows (the latent's `channels`, a video's `frames`) is its known
//! extent (but `latent_frames` of an input's `video_frames` is what a
//! video VAE makes of them, and `frames` of an input's `latent_frames`
//! what it decodes of them, where the temporal scale is known);
//! `height`/`width` are the latent scale (8 unless the document
//! says otherwise) times an input's `latent_height`/`latent_width` (and the
//! reverse); `upscaled_height`/`upscaled_width` twice an input's
//! `height`/`width`; a fixed extent is itself; any other name is 8.

use super::SynthError;
use super::graph::{PRODUCER, port_type};
use serde_json::Value;
use wfstudio_onnx::builder::{Attr, Dim, GraphBuilder};
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// The extent given to an output name no input explains.
pub const UNEXPLAINED_EXTENT: i64 = 8;

/// How much a stand-in upscaler enlarges: an output extent `upscaled_X`
/// is this many times an input's `X`.
pub const STAND_IN_UPSCALE: i64 = 2;

/// What the document fixes that stand-ins' shapes follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownExtents {
    /// Extents of names no same-named input explains (the latent's
    /// `channels`, a video's `frames`).
    pub named: std::collections::BTreeMap<String, i64>,
    /// Pixels per latent cell: `height` is this many times an input's
    /// `latent_height`.
    pub latent_scale: i64,
    /// Video frames per latent frame after the first: an output's
    /// `latent_frames` is `(video_frames - 1) / this + 1` of an input's
    /// `video_frames`, as a video VAE encodes.
    pub temporal_scale: Option<i64>,
}

impl Default for KnownExtents {
    fn default() -> Self {
        KnownExtents {
            named: Default::default(),
            latent_scale: 8,
            temporal_scale: None,
        }
    }
}

/// A stand-in for `component` (its declared `ports`), seeded by `seed`.
pub fn stand_in(
    name: &str,
    component: &Value,
    seed: u64,
    known: &KnownExtents,
) -> Result<Vec<u8>, SynthError> {
    let fail = |reason: String| SynthError {
        component: name.to_string(),
        reason,
    };
    let ports = |side: &str| -> Result<Vec<(String, DataType, Vec<Dim>)>, SynthError> {
        component
            .pointer(&format!("/ports/{side}"))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(port, c)| {
                let (dtype, dims) =
                    port_type(c).map_err(|e| fail(format!("port `{port}`: {e}")))?;
                Ok((port.clone(), dtype, dims))
            })
            .collect()
    };
    let inputs = ports("inputs")?;
    let outputs = ports("outputs")?;
    if outputs.is_empty() {
        return Err(fail("it declares no output ports".into()));
    }
    let mut g = GraphBuilder::new(name, PRODUCER);
    let mut rng = SplitMix(seed ^ hash(name));
    for (port, dtype, dims) in &inputs {
        g.input(port, *dtype, dims);
    }
    let context = context(&mut g, &mut rng, &inputs);
    for (port, dtype, dims) in &outputs {
        let shape = output_shape(&mut g, dims, &inputs, known);
        let carrier = carrier(&mut g, &mut rng, &shape, dims.len(), &inputs);
        let a = g.scalar_f32(0.5 + 0.4 * rng.unit());
        let b = g.scalar_f32(0.1 * rng.unit());
        let c = g.scalar_f32(0.2 * (rng.unit() - 0.5));
        let scaled = g.op("Mul", &[&carrier, &a]);
        let mut value = scaled;
        if let Some(context) = &context {
            let mixed = g.op("Mul", &[context, &b]);
            value = g.op("Add", &[&value, &mixed]);
        }
        let value = g.op("Add", &[&value, &c]);
        let value = if *dtype == DataType::FLOAT {
            value
        } else {
            g.op_with("Cast", &[&value], &[("to", Attr::Int(*dtype as i64))])
        };
        g.output(&value, port, *dtype, dims);
    }
    Ok(g.to_bytes())
}

/// `sum_j sin(k_j * mean(input_j) + phase_j)` (a float scalar).
fn context(
    g: &mut GraphBuilder,
    rng: &mut SplitMix,
    inputs: &[(String, DataType, Vec<Dim>)],
) -> Option<String> {
    let mut sum: Option<String> = None;
    for (port, dtype, _) in inputs {
        let as_float = if *dtype == DataType::FLOAT {
            port.clone()
        } else {
            g.op_with(
                "Cast",
                &[port],
                &[("to", Attr::Int(DataType::FLOAT as i64))],
            )
        };
        let mean = g.op_with("ReduceMean", &[&as_float], &[("keepdims", Attr::Int(0))]);
        let k = g.scalar_f32(0.01 + 0.05 * rng.unit());
        let phase = g.scalar_f32(6.0 * rng.unit());
        let scaled = g.op("Mul", &[&mean, &k]);
        let shifted = g.op("Add", &[&scaled, &phase]);
        let term = g.op("Sin", &[&shifted]);
        sum = Some(match sum {
            None => term,
            Some(s) => g.op("Add", &[&s, &term]),
        });
    }
    sum
}

/// The output's shape as an int64 vector.
fn output_shape(
    g: &mut GraphBuilder,
    dims: &[Dim],
    inputs: &[(String, DataType, Vec<Dim>)],
    known: &KnownExtents,
) -> String {
    if dims.is_empty() {
        return g.i64s(&[], &[0]);
    }
    let parts: Vec<String> = dims.iter().map(|d| extent(g, d, inputs, known)).collect();
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    g.op_with("Concat", &refs, &[("axis", Attr::Int(0))])
}

/// One extent as a 1-element int64 vector.
fn extent(
    g: &mut GraphBuilder,
    dim: &Dim,
    inputs: &[(String, DataType, Vec<Dim>)],
    known: &KnownExtents,
) -> String {
    let name = match dim {
        Dim::Fixed(n) => return g.vec_i64(&[*n]),
        Dim::Named(name) => name,
    };
    let find = |wanted: &str| {
        inputs.iter().find_map(|(port, _, dims)| {
            dims.iter()
                .position(|d| matches!(d, Dim::Named(n) if n == wanted))
                .map(|axis| (port.clone(), axis as i64))
        })
    };
    let axis_of = |g: &mut GraphBuilder, (port, axis): (String, i64)| {
        g.op_with(
            "Shape",
            &[&port],
            &[("start", Attr::Int(axis)), ("end", Attr::Int(axis + 1))],
        )
    };
    if let Some(found) = find(name) {
        return axis_of(g, found);
    }
    if let (Some(temporal), Some(found)) = (
        known.temporal_scale.filter(|_| name == "latent_frames"),
        find("video_frames"),
    ) {
        let frames = axis_of(g, found);
        let (one, temporal) = (g.vec_i64(&[1]), g.vec_i64(&[temporal]));
        let after_first = g.op("Sub", &[&frames, &one]);
        let whole = g.op("Div", &[&after_first, &temporal]);
        return g.op("Add", &[&whole, &one]);
    }
    if let (Some(temporal), Some(found)) = (
        known.temporal_scale.filter(|_| name == "frames"),
        find("latent_frames"),
    ) {
        // What a video VAE decodes of its input's latent frames.
        let latent = axis_of(g, found);
        let (one, temporal) = (g.vec_i64(&[1]), g.vec_i64(&[temporal]));
        let after_first = g.op("Sub", &[&latent, &one]);
        let spread = g.op("Mul", &[&after_first, &temporal]);
        return g.op("Add", &[&spread, &one]);
    }
    if let Some(&n) = known.named.get(name) {
        return g.vec_i64(&[n]);
    }
    if let Some(found) = find(&format!("latent_{name}")) {
        let e = axis_of(g, found);
        let scale = g.vec_i64(&[known.latent_scale]);
        return g.op("Mul", &[&e, &scale]);
    }
    if let Some(found) = name.strip_prefix("latent_").and_then(find) {
        let e = axis_of(g, found);
        let scale = g.vec_i64(&[known.latent_scale]);
        return g.op("Div", &[&e, &scale]);
    }
    if let Some(found) = name.strip_prefix("upscaled_").and_then(find) {
        let e = axis_of(g, found);
        let two = g.vec_i64(&[STAND_IN_UPSCALE]);
        return g.op("Mul", &[&e, &two]);
    }
    g.vec_i64(&[UNEXPLAINED_EXTENT])
}

/// A float tensor of the output's shape that varies by element.
fn carrier(
    g: &mut GraphBuilder,
    rng: &mut SplitMix,
    shape: &str,
    rank: usize,
    inputs: &[(String, DataType, Vec<Dim>)],
) -> String {
    let source = inputs
        .iter()
        .find(|(_, dtype, dims)| *dtype == DataType::FLOAT && dims.len() == rank && rank > 0);
    if let Some((port, _, _)) = source {
        return g.op_with(
            "Resize",
            &[port, "", "", shape],
            &[("mode", Attr::Str("nearest".into()))],
        );
    }
    let count = g.op_with("ReduceProd", &[shape], &[("keepdims", Attr::Int(0))]);
    let (zero, one) = (g.scalar_i64(0), g.scalar_i64(1));
    let index = g.op("Range", &[&zero, &count, &one]);
    let index = g.op_with(
        "Cast",
        &[&index],
        &[("to", Attr::Int(DataType::FLOAT as i64))],
    );
    let k = g.scalar_f32(0.7);
    let phase = g.scalar_f32(6.0 * rng.unit());
    let angle = g.op("Mul", &[&index, &k]);
    let angle = g.op("Add", &[&angle, &phase]);
    let wave = g.op("Sin", &[&angle]);
    g.op("Reshape", &[&wave, shape])
}

/// SplitMix64: a small seeded generator for the stand-in constants.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A float in [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// FNV-1a of a name, so each component gets its own constants.
fn hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
