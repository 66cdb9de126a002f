//! Host tensors: a dtype, a shape and row-major data, with the few
//! layout operations the interpreter needs (axis slices and concatenation)
//! and conversion to and from recipe JSON.

use half::{bf16, f16};
use std::fmt;

/// Element types the runner moves between ONNX Runtime and the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum DType {
    F32,
    F16,
    Bf16,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Bool,
}

impl DType {
    /// The dtype for a contract spelling (aliases included); FP8 and other
    /// spellings the host cannot hold return `None`.
    pub fn from_contract(name: &str) -> Option<Self> {
        Some(match name {
            "float32" | "fp32" => DType::F32,
            "float16" | "fp16" => DType::F16,
            "bfloat16" | "bf16" => DType::Bf16,
            "float64" => DType::F64,
            "int8" => DType::I8,
            "int16" => DType::I16,
            "int32" => DType::I32,
            "int64" => DType::I64,
            "uint8" => DType::U8,
            "uint16" => DType::U16,
            "uint32" => DType::U32,
            "uint64" => DType::U64,
            "bool" => DType::Bool,
            _ => return None,
        })
    }

    /// Canonical spelling.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::Bf16 => "bfloat16",
            DType::F64 => "float64",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::Bool => "bool",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::F16 | DType::Bf16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    /// Whether values are floating point.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::Bf16 | DType::F64)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Row-major element storage.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Data {
    F32(Vec<f32>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
    F64(Vec<f64>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    Bool(Vec<bool>),
}

/// Applies `$body` to the vector inside a [`Data`], rebuilding the same
/// variant when `$wrap` is given.
macro_rules! each {
    ($data:expr, $v:ident => wrap $body:expr) => {
        match $data {
            Data::F32($v) => Data::F32($body),
            Data::F16($v) => Data::F16($body),
            Data::Bf16($v) => Data::Bf16($body),
            Data::F64($v) => Data::F64($body),
            Data::I8($v) => Data::I8($body),
            Data::I16($v) => Data::I16($body),
            Data::I32($v) => Data::I32($body),
            Data::I64($v) => Data::I64($body),
            Data::U8($v) => Data::U8($body),
            Data::U16($v) => Data::U16($body),
            Data::U32($v) => Data::U32($body),
            Data::U64($v) => Data::U64($body),
            Data::Bool($v) => Data::Bool($body),
        }
    };
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            Data::F32($v) => $body,
            Data::F16($v) => $body,
            Data::Bf16($v) => $body,
            Data::F64($v) => $body,
            Data::I8($v) => $body,
            Data::I16($v) => $body,
            Data::I32($v) => $body,
            Data::I64($v) => $body,
            Data::U8($v) => $body,
            Data::U16($v) => $body,
            Data::U32($v) => $body,
            Data::U64($v) => $body,
            Data::Bool($v) => $body,
        }
    };
}

impl Data {
    /// Whether both hold the same elements bit for bit (`-0.0` and `0.0`
    /// differ, a NaN equals the same NaN): when one may stand for the other.
    pub fn same_bits(&self, other: &Data) -> bool {
        fn bits<T: Copy, B: PartialEq>(a: &[T], b: &[T], to_bits: impl Fn(T) -> B) -> bool {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| to_bits(*x) == to_bits(*y))
        }
        match (self, other) {
            (Data::F32(a), Data::F32(b)) => bits(a, b, f32::to_bits),
            (Data::F16(a), Data::F16(b)) => bits(a, b, f16::to_bits),
            (Data::Bf16(a), Data::Bf16(b)) => bits(a, b, bf16::to_bits),
            (Data::F64(a), Data::F64(b)) => bits(a, b, f64::to_bits),
            // Integers and bools: equality is bit equality.
            (a, b) => a == b,
        }
    }

    /// Empty storage of `dtype` with room for `n` elements.
    pub fn with_capacity(dtype: DType, n: usize) -> Data {
        match dtype {
            DType::F32 => Data::F32(Vec::with_capacity(n)),
            DType::F16 => Data::F16(Vec::with_capacity(n)),
            DType::Bf16 => Data::Bf16(Vec::with_capacity(n)),
            DType::F64 => Data::F64(Vec::with_capacity(n)),
            DType::I8 => Data::I8(Vec::with_capacity(n)),
            DType::I16 => Data::I16(Vec::with_capacity(n)),
            DType::I32 => Data::I32(Vec::with_capacity(n)),
            DType::I64 => Data::I64(Vec::with_capacity(n)),
            DType::U8 => Data::U8(Vec::with_capacity(n)),
            DType::U16 => Data::U16(Vec::with_capacity(n)),
            DType::U32 => Data::U32(Vec::with_capacity(n)),
            DType::U64 => Data::U64(Vec::with_capacity(n)),
            DType::Bool => Data::Bool(Vec::with_capacity(n)),
        }
    }

    /// `n` zero elements of `dtype` (false for bool).
    pub fn zeros(dtype: DType, n: usize) -> Data {
        match dtype {
            DType::F32 => Data::F32(vec![0.0; n]),
            DType::F16 => Data::F16(vec![f16::ZERO; n]),
            DType::Bf16 => Data::Bf16(vec![bf16::ZERO; n]),
            DType::F64 => Data::F64(vec![0.0; n]),
            DType::I8 => Data::I8(vec![0; n]),
            DType::I16 => Data::I16(vec![0; n]),
            DType::I32 => Data::I32(vec![0; n]),
            DType::I64 => Data::I64(vec![0; n]),
            DType::U8 => Data::U8(vec![0; n]),
            DType::U16 => Data::U16(vec![0; n]),
            DType::U32 => Data::U32(vec![0; n]),
            DType::U64 => Data::U64(vec![0; n]),
            DType::Bool => Data::Bool(vec![false; n]),
        }
    }

    /// The address of the first element (for handing the memory to ONNX
    /// Runtime without a copy).
    pub(crate) fn as_ptr(&self) -> *const std::ffi::c_void {
        each!(self, v => v.as_ptr().cast())
    }

    /// The address of the first element, for writing.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut std::ffi::c_void {
        each!(self, v => v.as_mut_ptr().cast())
    }

    /// Appends `src[range]`; `src` must have the same dtype.
    pub fn extend_from(&mut self, src: &Data, range: std::ops::Range<usize>) {
        macro_rules! pairs {
            ($($variant:ident),*) => {
                match (self, src) {
                    $((Data::$variant(d), Data::$variant(s)) => d.extend_from_slice(&s[range]),)*
                    _ => debug_assert!(false, "extend_from with mismatched dtypes"),
                }
            };
        }
        pairs!(
            F32, F16, Bf16, F64, I8, I16, I32, I64, U8, U16, U32, U64, Bool
        );
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        each!(self, v => v.len())
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Data::F32(_) => DType::F32,
            Data::F16(_) => DType::F16,
            Data::Bf16(_) => DType::Bf16,
            Data::F64(_) => DType::F64,
            Data::I8(_) => DType::I8,
            Data::I16(_) => DType::I16,
            Data::I32(_) => DType::I32,
            Data::I64(_) => DType::I64,
            Data::U8(_) => DType::U8,
            Data::U16(_) => DType::U16,
            Data::U32(_) => DType::U32,
            Data::U64(_) => DType::U64,
            Data::Bool(_) => DType::Bool,
        }
    }

    /// Element `i` as a double (bools as 0/1).
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            Data::F32(v) => f64::from(v[i]),
            Data::F16(v) => f64::from(v[i].to_f32()),
            Data::Bf16(v) => f64::from(v[i].to_f32()),
            Data::F64(v) => v[i],
            Data::I8(v) => f64::from(v[i]),
            Data::I16(v) => f64::from(v[i]),
            Data::I32(v) => f64::from(v[i]),
            Data::I64(v) => v[i] as f64,
            Data::U8(v) => f64::from(v[i]),
            Data::U16(v) => f64::from(v[i]),
            Data::U32(v) => f64::from(v[i]),
            Data::U64(v) => v[i] as f64,
            Data::Bool(v) => f64::from(u8::from(v[i])),
        }
    }

    /// Element `i` as an integer, for integer dtypes.
    pub fn get_i64(&self, i: usize) -> Option<i64> {
        Some(match self {
            Data::I8(v) => i64::from(v[i]),
            Data::I16(v) => i64::from(v[i]),
            Data::I32(v) => i64::from(v[i]),
            Data::I64(v) => v[i],
            Data::U8(v) => i64::from(v[i]),
            Data::U16(v) => i64::from(v[i]),
            Data::U32(v) => i64::from(v[i]),
            Data::U64(v) => i64::try_from(v[i]).ok()?,
            _ => return None,
        })
    }
}

/// A host tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Extent of each axis.
    pub shape: Vec<usize>,
    /// Row-major elements (`shape.iter().product()` of them).
    pub data: Data,
}

/// What the contract checks look at: a tensor's dtype and shape, which a
/// value kept in device memory tells without a copy to the host.
pub trait Described {
    /// Element type.
    fn dtype(&self) -> DType;
    /// Extent of each axis.
    fn shape(&self) -> &[usize];
}

impl Described for Tensor {
    fn dtype(&self) -> DType {
        self.data.dtype()
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
}

/// Why a tensor could not be built or reshaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TensorError(pub String);

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The first of `parts` when all of them can be joined along `axis` (same
/// dtype and rank, equal extents off `axis`), else why not.
fn joinable<'t>(axis: usize, parts: &[&'t Tensor]) -> Result<&'t Tensor, TensorError> {
    let first = parts
        .first()
        .ok_or_else(|| TensorError("nothing to concatenate".into()))?;
    let rank = first.shape.len();
    if axis >= rank {
        return Err(TensorError(format!("axis {axis} is outside rank {rank}")));
    }
    for p in parts {
        let same = p.dtype() == first.dtype()
            && p.shape.len() == rank
            && (0..rank).all(|a| a == axis || p.shape[a] == first.shape[a]);
        if !same {
            return Err(TensorError(format!(
                "cannot concatenate {} {:?} with {} {:?} on axis {axis}",
                first.dtype(),
                first.shape,
                p.dtype(),
                p.shape
            )));
        }
    }
    Ok(first)
}

/// The element count of `shape`, refusing shapes whose count or byte size
/// overflows or exceeds `max_bytes` for elements of `dtype` — checked before
/// anything is allocated.
pub fn checked_numel(
    shape: &[usize],
    dtype: DType,
    max_bytes: usize,
) -> Result<usize, TensorError> {
    let count = shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            TensorError(format!(
                "shape {shape:?} has more elements than can be counted"
            ))
        })?;
    let bytes = count.checked_mul(dtype.size()).ok_or_else(|| {
        TensorError(format!(
            "shape {shape:?} of {dtype} has more bytes than can be counted"
        ))
    })?;
    if bytes > max_bytes {
        return Err(TensorError(format!(
            "shape {shape:?} of {dtype} needs {bytes} bytes, over the {max_bytes}-byte tensor budget"
        )));
    }
    Ok(count)
}

impl Tensor {
    /// A tensor from parts; the element count must match the shape.
    pub fn new(shape: Vec<usize>, data: Data) -> Result<Self, TensorError> {
        let count = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        if count != Some(data.len()) {
            return Err(TensorError(format!(
                "shape {shape:?} does not hold the {} elements given",
                data.len()
            )));
        }
        Ok(Self { shape, data })
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.data.len()
    }

    /// A scalar int64.
    pub fn scalar_i64(value: i64) -> Self {
        Self {
            shape: Vec::new(),
            data: Data::I64(vec![value]),
        }
    }

    /// An int64 tensor of `shape` filled with `value`.
    pub fn full_i64(shape: Vec<usize>, value: i64) -> Self {
        let n = numel(&shape);
        Self {
            shape,
            data: Data::I64(vec![value; n]),
        }
    }

    /// A bool scalar.
    pub fn scalar_bool(value: bool) -> Self {
        Self {
            shape: Vec::new(),
            data: Data::Bool(vec![value]),
        }
    }

    /// The values as bools (bool tensors only).
    pub fn bools(&self) -> Option<&[bool]> {
        match &self.data {
            Data::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// Elements `[start, start + len)` along `axis`.
    pub fn slice_axis(&self, axis: usize, start: usize, len: usize) -> Result<Tensor, TensorError> {
        let extent = *self.shape.get(axis).ok_or_else(|| {
            TensorError(format!("axis {axis} is outside rank {}", self.shape.len()))
        })?;
        if start + len > extent {
            return Err(TensorError(format!(
                "slice {start}..{} exceeds extent {extent} of axis {axis}",
                start + len
            )));
        }
        let outer = numel(&self.shape[..axis]);
        let inner = numel(&self.shape[axis + 1..]);
        let mut shape = self.shape.clone();
        shape[axis] = len;
        let data = each!(&self.data, v => wrap {
            let mut out = Vec::with_capacity(outer * len * inner);
            for o in 0..outer {
                let base = (o * extent + start) * inner;
                out.extend_from_slice(&v[base..base + len * inner]);
            }
            out
        });
        Ok(Tensor { shape, data })
    }

    /// Concatenates tensors along `axis`; all other extents and the dtype
    /// must agree.
    pub fn concat(axis: usize, parts: &[&Tensor]) -> Result<Tensor, TensorError> {
        let first = joinable(axis, parts)?;
        let outer = numel(&first.shape[..axis]);
        let inner = numel(&first.shape[axis + 1..]);
        let mut shape = first.shape.clone();
        shape[axis] = parts.iter().map(|p| p.shape[axis]).sum();
        let mut data = Data::with_capacity(first.dtype(), numel(&shape));
        for o in 0..outer {
            for p in parts {
                let chunk = p.shape[axis] * inner;
                data.extend_from(&p.data, o * chunk..(o + 1) * chunk);
            }
        }
        Ok(Tensor { shape, data })
    }

    /// Appends `other` along `axis` in place: what `concat(axis, [self,
    /// other])` makes, without copying `self` when the axes before `axis`
    /// hold one element (a stream of tokens or samples grows at its end).
    pub fn append(&mut self, axis: usize, other: &Tensor) -> Result<(), TensorError> {
        joinable(axis, &[self, other])?;
        if numel(&self.shape[..axis]) == 1 {
            self.data.extend_from(&other.data, 0..other.data.len());
            self.shape[axis] += other.shape[axis];
        } else {
            *self = Tensor::concat(axis, &[self, other])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[usize], v: &[f32]) -> Tensor {
        Tensor::new(shape.to_vec(), Data::F32(v.to_vec())).unwrap()
    }

    #[test]
    fn slices_and_concatenates_along_an_inner_axis() {
        let a = t(&[2, 3], &[0., 1., 2., 3., 4., 5.]);
        let s = a.slice_axis(1, 1, 2).unwrap();
        assert_eq!(s, t(&[2, 2], &[1., 2., 4., 5.]));
        let c = Tensor::concat(1, &[&s, &a]).unwrap();
        assert_eq!(c, t(&[2, 5], &[1., 2., 0., 1., 2., 4., 5., 3., 4., 5.]));
        let rows = a.slice_axis(0, 1, 1).unwrap();
        assert_eq!(rows, t(&[1, 3], &[3., 4., 5.]));
        assert!(a.slice_axis(1, 2, 2).is_err());
    }

    /// In place or not, an append makes what `concat` makes.
    #[test]
    fn append_matches_concat() {
        let a = t(&[2, 3], &[0., 1., 2., 3., 4., 5.]);
        let b = t(&[2, 1], &[6., 7.]);
        for (axis, left, right) in [(1, &a, &b), (0, &a, &a)] {
            let mut grown = left.clone();
            grown.append(axis, right).unwrap();
            assert_eq!(grown, Tensor::concat(axis, &[left, right]).unwrap());
        }
        let mut row = t(&[1, 2], &[1., 2.]);
        row.append(1, &t(&[1, 1], &[3.])).unwrap();
        assert_eq!(row, t(&[1, 3], &[1., 2., 3.]));
        assert!(row.append(1, &t(&[2, 1], &[0., 0.])).is_err());
        assert_eq!(
            row,
            t(&[1, 3], &[1., 2., 3.]),
            "unchanged by a refused append"
        );
    }

    #[test]
    fn json_round_trip() {
        let value = serde_json::json!({"dtype": "int64", "shape": [1, 2], "data": [4, 5]});
        let tensor = Tensor::from_json(&value).unwrap();
        assert_eq!(tensor.data, Data::I64(vec![4, 5]));
        assert_eq!(tensor.to_json(), value);
    }
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    #[test]
    fn hostile_shapes_are_refused_before_allocation() {
        let huge = [1usize << 40, 1 << 40];
        assert!(
            checked_numel(&huge, DType::F32, 1 << 30)
                .unwrap_err()
                .0
                .contains("more elements than can be counted")
        );
        let big = [1usize << 20, 1 << 10];
        assert!(
            checked_numel(&big, DType::F32, 1 << 30)
                .unwrap_err()
                .0
                .contains("over the 1073741824-byte tensor budget")
        );
        assert_eq!(checked_numel(&[2, 3], DType::F32, 1 << 30), Ok(6));
        let e = Tensor::new(huge.to_vec(), Data::F32(vec![0.0; 2])).unwrap_err();
        assert!(e.0.contains("does not hold the 2 elements given"));
        let json = serde_json::json!({"dtype": "float32", "shape": [4294967296u64, 4294967296u64, 4294967296u64], "data": [1.0]});
        assert!(Tensor::from_json(&json).is_err());
    }
}
