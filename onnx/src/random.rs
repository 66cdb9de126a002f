//! Counter-based standard normal noise as ONNX operators, so that the same
//! seed and offset give the same noise on every machine and runtime. All
//! arithmetic is on unsigned 64-bit integers, modulo 2^64, with the
//! SplitMix64 finaliser `mix(z)`: `z ^= z >> 30; z *= 0xbf58476d1ce4e5b9;
//! z ^= z >> 27; z *= 0x94d049bb133111eb; z ^= z >> 31` (Steele, Lea and
//! Flood 2014). Row `b` of a batch has the key `k = mix(mix(seed + G) ^
//! offset)` with `G = 0x9e3779b97f4a7c15`, and its element `i` (row-major)
//! the hash `h = mix(k + G * (n + 1))` with `n = b * count + i`, so the rows
//! of a batch continue one stream, as one seeded draw of a whole batch does.
//! The top 24 bits of `h` and the 24 below them give `u1` and `u2` as
//! `(bits + 0.5) / 2^24` (exact in float32, never 0 or 1), and
//! `z = sqrt(-2 ln u1) * cos(2 pi u2)` (Box–Muller).

use crate::builder::{Attr, GraphBuilder};
use crate::proto::onnx::tensor_proto::DataType;

/// SplitMix64's increment, the golden ratio in 64-bit fixed point.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// Standard normal noise of shape `[batch] ++ row_shape` from per-row
/// `seed` and `offset` (both `[batch]` int64) and a rank-1 `row_shape`.
pub fn gaussian(g: &mut GraphBuilder, seed: &str, offset: &str, row_shape: &str) -> String {
    let golden = g.scalar_u64(GOLDEN);
    let seed_u = g.cast(seed, DataType::UINT64);
    let offset_u = g.cast(offset, DataType::UINT64);
    let seeded = g.op("Add", &[&seed_u, &golden]);
    let seed_key = mix(g, &seeded);
    let keyed = g.op("BitwiseXor", &[&seed_key, &offset_u]);
    let key = mix(g, &keyed);
    let column = g.vec_i64(&[-1, 1]);
    let key = g.op("Reshape", &[&key, &column]);
    // n = b * count + i + 1, for row b and element i.
    let keep_none = [("keepdims", Attr::Int(0))];
    let count = g.op_with("ReduceProd", &[row_shape], &keep_none);
    let rows = g.op("Shape", &[seed]);
    let batch = g.op_with("ReduceProd", &[&rows], &keep_none);
    let (zero, one) = (g.scalar_i64(0), g.scalar_i64(1));
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
    let bits = g.scalar_u64(0xff_ffff);
    let low = g.op("BitwiseAnd", &[&low, &bits]);
    let u1 = unit_interval(g, &high);
    let u2 = unit_interval(g, &low);
    let ln = g.op("Log", &[&u1]);
    let minus_two = g.scalar_f32(-2.0);
    let r2 = g.op("Mul", &[&ln, &minus_two]);
    let r = g.op("Sqrt", &[&r2]);
    let tau = g.scalar_f32(std::f32::consts::TAU);
    let angle = g.op("Mul", &[&u2, &tau]);
    let cos = g.op("Cos", &[&angle]);
    let z = g.op("Mul", &[&r, &cos]);
    let full = g.op_with("Concat", &[&rows, row_shape], &[("axis", Attr::Int(0))]);
    g.op("Reshape", &[&z, &full])
}

/// The SplitMix64 finaliser of a uint64 tensor.
fn mix(g: &mut GraphBuilder, z: &str) -> String {
    let z = xor_shift(g, z, 30);
    let m1 = g.scalar_u64(0xbf58_476d_1ce4_e5b9);
    let z = g.op("Mul", &[&z, &m1]);
    let z = xor_shift(g, &z, 27);
    let m2 = g.scalar_u64(0x94d0_49bb_1331_11eb);
    let z = g.op("Mul", &[&z, &m2]);
    xor_shift(g, &z, 31)
}

/// `z ^ (z >> bits)` of a uint64 tensor.
fn xor_shift(g: &mut GraphBuilder, z: &str, bits: u64) -> String {
    let shifted = shift_right(g, z, bits);
    g.op("BitwiseXor", &[z, &shifted])
}

/// `z >> bits` of a uint64 tensor.
fn shift_right(g: &mut GraphBuilder, z: &str, bits: u64) -> String {
    let amount = g.scalar_u64(bits);
    g.op_with(
        "BitShift",
        &[z, &amount],
        &[("direction", Attr::Str("RIGHT".into()))],
    )
}

/// `(bits + 0.5) / 2^24` in float32 for 24-bit unsigned `bits`.
fn unit_interval(g: &mut GraphBuilder, bits: &str) -> String {
    let as_float = g.cast(bits, DataType::FLOAT);
    let half = g.scalar_f32(0.5);
    let centred = g.op("Add", &[&as_float, &half]);
    let scale = g.scalar_f32(2f64.powi(-24) as f32);
    g.op("Mul", &[&centred, &scale])
}
