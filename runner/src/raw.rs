//! Tensors as raw little-endian bytes: how a tensor crosses a process
//! boundary (the studio's run worker) without a text encoding. Booleans
//! are one byte each (0 or 1); every other dtype is its IEEE or two's
//! complement little-endian form.

use crate::tensor::{DType, Data, Tensor, TensorError, checked_numel};
use half::{bf16, f16};

/// Appends the elements of `data` to `out` as little-endian bytes.
pub fn write_le(data: &Data, out: &mut Vec<u8>) {
    out.reserve(data.len() * data.dtype().size());
    macro_rules! put {
        ($v:expr) => {
            for x in $v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        };
    }
    match data {
        Data::F32(v) => put!(v),
        Data::F16(v) => put!(v),
        Data::Bf16(v) => put!(v),
        Data::F64(v) => put!(v),
        Data::I8(v) => put!(v),
        Data::I16(v) => put!(v),
        Data::I32(v) => put!(v),
        Data::I64(v) => put!(v),
        Data::U8(v) => out.extend_from_slice(v),
        Data::U16(v) => put!(v),
        Data::U32(v) => put!(v),
        Data::U64(v) => put!(v),
        Data::Bool(v) => out.extend(v.iter().map(|b| u8::from(*b))),
    }
}

/// The tensor of `dtype` and `shape` whose elements are `bytes` (as
/// [`write_le`] wrote them); the byte count must match the shape exactly,
/// and the shape must fit `max_bytes`.
pub fn read_le(
    dtype: DType,
    shape: Vec<usize>,
    bytes: &[u8],
    max_bytes: usize,
) -> Result<Tensor, TensorError> {
    let numel = checked_numel(&shape, dtype, max_bytes)?;
    if numel * dtype.size() != bytes.len() {
        return Err(TensorError(format!(
            "{dtype} {shape:?} needs {} bytes, {} were given",
            numel * dtype.size(),
            bytes.len()
        )));
    }
    macro_rules! get {
        ($variant:ident, $t:ty) => {
            Data::$variant(
                bytes
                    .chunks_exact(size_of::<$t>())
                    .map(|c| <$t>::from_le_bytes(c.try_into().expect("chunk of the element size")))
                    .collect(),
            )
        };
    }
    let data = match dtype {
        DType::F32 => get!(F32, f32),
        DType::F16 => get!(F16, f16),
        DType::Bf16 => get!(Bf16, bf16),
        DType::F64 => get!(F64, f64),
        DType::I8 => get!(I8, i8),
        DType::I16 => get!(I16, i16),
        DType::I32 => get!(I32, i32),
        DType::I64 => get!(I64, i64),
        DType::U8 => Data::U8(bytes.to_vec()),
        DType::U16 => get!(U16, u16),
        DType::U32 => get!(U32, u32),
        DType::U64 => get!(U64, u64),
        DType::Bool => Data::Bool(bytes.iter().map(|b| *b != 0).collect()),
    };
    Tensor::new(shape, data)
}

#[cfg(test)]
mod tests {
    use super::{read_le, write_le};
    use crate::tensor::{DType, Data, Tensor};
    use half::{bf16, f16};

    /// Every dtype comes back bit for bit, NaN payloads and signs included.
    #[test]
    fn every_dtype_round_trips_bit_for_bit() {
        let tensors = [
            Data::F32(vec![1.5, -0.0, f32::NAN, f32::INFINITY]),
            Data::F16(vec![f16::from_f32(0.5), f16::NAN]),
            Data::Bf16(vec![bf16::from_f32(-2.0), bf16::MAX]),
            Data::F64(vec![std::f64::consts::PI]),
            Data::I8(vec![-128, 127]),
            Data::I16(vec![-3]),
            Data::I32(vec![i32::MIN]),
            Data::I64(vec![i64::MAX, -1]),
            Data::U8(vec![0, 255]),
            Data::U16(vec![65535]),
            Data::U32(vec![7]),
            Data::U64(vec![u64::MAX]),
            Data::Bool(vec![true, false, true]),
        ];
        for data in tensors {
            let tensor = Tensor::new(vec![data.len()], data).expect("tensor");
            let mut bytes = Vec::new();
            write_le(&tensor.data, &mut bytes);
            let back =
                read_le(tensor.dtype(), tensor.shape.clone(), &bytes, 1 << 20).expect("reads back");
            assert!(back.data.same_bits(&tensor.data), "{:?}", tensor.dtype());
            assert_eq!(back.shape, tensor.shape);
        }
    }

    /// A byte count that disagrees with the shape, or a shape over the
    /// budget, is refused before anything is allocated.
    #[test]
    fn wrong_sizes_are_refused() {
        let error = read_le(DType::F32, vec![2, 2], &[0; 12], 1 << 20).expect_err("short");
        assert_eq!(error.0, "float32 [2, 2] needs 16 bytes, 12 were given");
        let error = read_le(DType::F32, vec![1 << 20, 1 << 20], &[], 1 << 30).expect_err("huge");
        assert!(
            error.0.contains("over the 1073741824-byte tensor budget"),
            "{}",
            error.0
        );
    }
}
