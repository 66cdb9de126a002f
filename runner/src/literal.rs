//! Literal values (YAML defaults, recipe JSON) encoded into tensors of a
//! declared dtype, with the format's typing rules.

use crate::tensor::{DType, Data, TensorError};
use half::{bf16, f16};
use serde_json::Value;
use wfstudio_schema::types::contract::{LiteralValue, ScalarValue};

/// The largest tensor a literal default may materialise (checked before
/// allocating, so a hostile shape cannot exhaust memory).
pub const MAX_LITERAL_BYTES: usize = 1 << 30;

/// One literal element.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// `true` / `false`.
    Bool(bool),
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
}

impl Scalar {
    /// A scalar from recipe JSON.
    pub fn from_json(value: &Value) -> Result<Scalar, TensorError> {
        match value {
            Value::Bool(b) => Ok(Scalar::Bool(*b)),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Ok(Scalar::Int(i)),
                None => n
                    .as_f64()
                    .map(Scalar::Float)
                    .ok_or_else(|| TensorError(format!("number {n} is out of range"))),
            },
            other => Err(TensorError(format!(
                "tensor element {other} is not a number or bool"
            ))),
        }
    }

    fn from_yaml(value: &ScalarValue) -> Result<Scalar, TensorError> {
        match value {
            ScalarValue::Bool(b) => Ok(Scalar::Bool(*b)),
            ScalarValue::Int(i) => Ok(Scalar::Int(*i)),
            ScalarValue::Float(f) => Ok(Scalar::Float(*f)),
            ScalarValue::Str(s) => Err(TensorError(format!(
                "the literal '{s}' is a string; tensor literals are numbers or booleans"
            ))),
        }
    }
}

fn int_in<T: TryFrom<i64>>(v: i64, dtype: DType) -> Result<T, TensorError> {
    T::try_from(v).map_err(|_| TensorError(format!("{v} does not fit {dtype}")))
}

/// Encodes `scalars` as `dtype`. Integers fill float tensors too (recipe JSON
/// writes `0` for `0.0`); use [`encode_default`] for YAML defaults.
pub fn encode(dtype: DType, scalars: &[Scalar]) -> Result<Data, TensorError> {
    let float = |s: &Scalar| match *s {
        Scalar::Float(f) => Ok(f),
        Scalar::Int(i) => Ok(i as f64),
        Scalar::Bool(_) => Err(TensorError(format!(
            "a boolean cannot fill a {dtype} tensor"
        ))),
    };
    let int = |s: &Scalar| match *s {
        Scalar::Int(i) => Ok(i),
        Scalar::Float(f) if f.fract() == 0.0 => Ok(f as i64),
        _ => Err(TensorError(format!("{s:?} cannot fill a {dtype} tensor"))),
    };
    macro_rules! ints {
        ($variant:ident) => {
            Data::$variant(
                scalars
                    .iter()
                    .map(|s| int(s).and_then(|i| int_in(i, dtype)))
                    .collect::<Result<_, _>>()?,
            )
        };
    }
    Ok(match dtype {
        DType::F32 => Data::F32(
            scalars
                .iter()
                .map(|s| float(s).map(|f| f as f32))
                .collect::<Result<_, _>>()?,
        ),
        DType::F16 => Data::F16(
            scalars
                .iter()
                .map(|s| float(s).map(f16::from_f64))
                .collect::<Result<_, _>>()?,
        ),
        DType::Bf16 => Data::Bf16(
            scalars
                .iter()
                .map(|s| float(s).map(bf16::from_f64))
                .collect::<Result<_, _>>()?,
        ),
        DType::F64 => Data::F64(scalars.iter().map(float).collect::<Result<_, _>>()?),
        DType::I8 => ints!(I8),
        DType::I16 => ints!(I16),
        DType::I32 => ints!(I32),
        DType::I64 => ints!(I64),
        DType::U8 => ints!(U8),
        DType::U16 => ints!(U16),
        DType::U32 => ints!(U32),
        DType::U64 => Data::U64(
            scalars
                .iter()
                .map(|s| {
                    int(s).and_then(|i| {
                        u64::try_from(i)
                            .map_err(|_| TensorError(format!("{i} does not fit uint64")))
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
        DType::Bool => Data::Bool(
            scalars
                .iter()
                .map(|s| match s {
                    Scalar::Bool(b) => Ok(*b),
                    other => Err(TensorError(format!("{other:?} cannot fill a bool tensor"))),
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// Materialises a YAML `default` for a contract of `dtype` and `numel`
/// elements: a scalar broadcasts, a list must have exactly `numel` items.
/// As in the reference, YAML integers fill only integer tensors, floats only
/// float tensors and booleans only bool tensors.
pub fn encode_default(
    dtype: DType,
    numel: usize,
    literal: &LiteralValue,
) -> Result<Data, TensorError> {
    let scalars: Vec<Scalar> = match literal {
        LiteralValue::Scalar(s) => vec![Scalar::from_yaml(s)?; numel],
        LiteralValue::List(items) => {
            if items.len() != numel {
                return Err(TensorError(format!(
                    "the default lists {} elements but the contract holds {numel}",
                    items.len()
                )));
            }
            items
                .iter()
                .map(Scalar::from_yaml)
                .collect::<Result<_, _>>()?
        }
    };
    for s in &scalars {
        let fits = match s {
            Scalar::Int(_) => !dtype.is_float() && dtype != DType::Bool,
            Scalar::Float(_) => dtype.is_float(),
            Scalar::Bool(_) => dtype == DType::Bool,
        };
        if !fits {
            let hint = match s {
                Scalar::Int(i) if dtype.is_float() => format!(" (write {i}.0)"),
                _ => String::new(),
            };
            return Err(TensorError(format!(
                "literal {s:?} cannot fill a {dtype} input{hint}"
            )));
        }
    }
    encode(dtype, &scalars)
}
