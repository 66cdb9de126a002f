//! The recipe JSON form of tensors, `{dtype, shape, data}`, and bare JSON
//! values typed by a declared input (`--input NAME=[[1,2]]`), read by the
//! literal rules of `literal`.

use crate::literal::{Scalar, encode};
use crate::tensor::{DType, Data, Tensor, TensorError};
use serde_json::Value;

impl Tensor {
    /// Reads the recipe JSON form `{dtype, shape, data}`.
    pub fn from_json(value: &Value) -> Result<Tensor, TensorError> {
        let dtype = value
            .get("dtype")
            .and_then(Value::as_str)
            .ok_or_else(|| TensorError("tensor needs a string `dtype`".into()))?;
        let dtype = DType::from_contract(dtype)
            .ok_or_else(|| TensorError(format!("unsupported dtype `{dtype}`")))?;
        let shape: Vec<usize> = value
            .get("shape")
            .and_then(Value::as_array)
            .ok_or_else(|| TensorError("tensor needs a `shape` list".into()))?
            .iter()
            .map(|d| d.as_u64().map(|d| d as usize))
            .collect::<Option<_>>()
            .ok_or_else(|| TensorError("shape entries must be non-negative integers".into()))?;
        let items = value
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| TensorError("tensor needs a `data` list".into()))?;
        let scalars: Vec<Scalar> = items
            .iter()
            .map(Scalar::from_json)
            .collect::<Result<_, _>>()?;
        let data = encode(dtype, &scalars)?;
        Tensor::new(shape, data)
    }

    /// A tensor of `dtype` from a bare JSON value, as typed on a command
    /// line: nested lists give the shape (they must be rectangular); a
    /// single scalar fills a tensor of `rank` axes of extent 1.
    pub fn from_nested(dtype: DType, value: &Value, rank: usize) -> Result<Tensor, TensorError> {
        let mut shape = Vec::new();
        let mut level = value;
        while let Value::Array(items) = level {
            shape.push(items.len());
            match items.first() {
                Some(first) => level = first,
                None => break,
            }
        }
        let mut scalars = Vec::new();
        gather_nested(value, &shape, &mut scalars)?;
        if shape.is_empty() {
            shape = vec![1; rank];
        }
        let data = encode(dtype, &scalars)?;
        Tensor::new(shape, data)
    }

    /// The recipe JSON form `{dtype, shape, data}`.
    pub fn to_json(&self) -> Value {
        let data: Vec<Value> = match &self.data {
            Data::Bool(v) => v.iter().map(|b| Value::Bool(*b)).collect(),
            d if d.dtype().is_float() => (0..d.len())
                .map(|i| {
                    let x = match d {
                        Data::F32(v) => serde_json::Number::from_f64(f64::from(v[i])),
                        _ => serde_json::Number::from_f64(d.get_f64(i)),
                    };
                    x.map_or(Value::Null, Value::Number)
                })
                .collect(),
            Data::U64(v) => v.iter().map(|x| Value::from(*x)).collect(),
            d => (0..d.len())
                .map(|i| Value::from(d.get_i64(i).unwrap_or_default()))
                .collect(),
        };
        serde_json::json!({"dtype": self.dtype().name(), "shape": self.shape, "data": data})
    }
}

/// Appends the scalars of `value`, nested as `shape` says (every list at a
/// depth has that depth's length, scalars only below the last), to `out`.
fn gather_nested(value: &Value, shape: &[usize], out: &mut Vec<Scalar>) -> Result<(), TensorError> {
    match (shape.split_first(), value) {
        (None, Value::Array(_)) => Err(TensorError(
            "the nested lists are not rectangular (a list where a number was expected)".into(),
        )),
        (None, scalar) => {
            out.push(Scalar::from_json(scalar)?);
            Ok(())
        }
        (Some((&len, inner)), Value::Array(items)) if items.len() == len => items
            .iter()
            .try_for_each(|item| gather_nested(item, inner, out)),
        (Some((&len, _)), _) => Err(TensorError(format!(
            "the nested lists are not rectangular (expected a list of {len})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_values_take_their_shape_from_the_nesting() {
        let json = |text: &str| serde_json::from_str::<Value>(text).expect("json");
        let ids = Tensor::from_nested(DType::I64, &json("[[1, 2, 3]]"), 2).expect("ids");
        assert_eq!(ids.shape, vec![1, 3]);
        assert_eq!(ids.data, Data::I64(vec![1, 2, 3]));
        let steps = Tensor::from_nested(DType::I64, &json("8"), 1).expect("scalar");
        assert_eq!((steps.shape, steps.data), (vec![1], Data::I64(vec![8])));
        let scale = Tensor::from_nested(DType::F32, &json("7.5"), 0).expect("rank 0");
        assert_eq!((scale.shape, scale.data), (vec![], Data::F32(vec![7.5])));
        let flags = Tensor::from_nested(DType::Bool, &json("[true, false]"), 1).expect("bools");
        assert_eq!(flags.data, Data::Bool(vec![true, false]));
        let empty = Tensor::from_nested(DType::F32, &json("[]"), 1).expect("empty");
        assert_eq!((empty.numel(), empty.shape), (0, vec![0]));
        let ragged = Tensor::from_nested(DType::I64, &json("[[1, 2], [3]]"), 2);
        assert_eq!(
            ragged.expect_err("ragged").0,
            "the nested lists are not rectangular (expected a list of 2)"
        );
        let deeper = Tensor::from_nested(DType::I64, &json("[1, [2]]"), 1);
        assert_eq!(
            deeper.expect_err("deeper").0,
            "the nested lists are not rectangular (a list where a number was expected)"
        );
        assert!(Tensor::from_nested(DType::I64, &json(r#"["a"]"#), 1).is_err());
    }
}
