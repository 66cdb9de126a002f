//! Facts about tensor contracts shared by the validator rules: the dtype
//! vocabulary, alias normalisation, and the compatibility and control-value
//! predicates of the format.

use std::sync::LazyLock;
use wfstudio_schema::types::contract::{BatchLayout, Dim, TensorContract};

/// The dtype spellings the validator accepts on workflow tensors.
pub const TENSOR_DTYPES: &[&str] = &[
    "float16",
    "fp16",
    "float32",
    "fp32",
    "bfloat16",
    "bf16",
    "float8_e4m3fn",
    "fp8_e4m3fn",
    "float8_e4m3",
    "fp8_e4m3",
    "float8_e5m2",
    "fp8_e5m2",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
];

/// Integer dtypes (control values, lengths, indices).
pub const INTEGER_DTYPES: &[&str] = &[
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
];

/// Float dtypes (alias spellings included, FP8 excluded).
pub const FLOAT_DTYPES: &[&str] = &["float32", "fp32", "float16", "fp16", "bfloat16", "bf16"];

/// The contract of a `present_as` presence value: a shared bool scalar.
pub static PRESENCE_CONTRACT: LazyLock<TensorContract> = LazyLock::new(|| TensorContract {
    dtype: "bool".into(),
    rank: 0,
    shape: Some(Vec::new()),
    optional: None,
    batch_layout: None,
});

/// Maps the three alias spellings to their canonical names.
pub fn normalize_dtype(dtype: &str) -> &str {
    match dtype {
        "fp32" => "float32",
        "fp16" => "float16",
        "bf16" => "bfloat16",
        other => other,
    }
}

/// Whether `dtype` is an integer dtype.
pub fn is_integer(dtype: &str) -> bool {
    INTEGER_DTYPES.contains(&dtype)
}

/// `float32 rank 2`, as the compatibility messages spell a contract.
pub fn describe(contract: &TensorContract) -> String {
    format!("{} rank {}", contract.dtype, contract.rank)
}

/// Compatibility of a value with a port or output: normalised dtypes and
/// ranks equal, and every axis fixed on both sides equal (symbols match
/// anything). Returns the reason when incompatible.
pub fn compatible(value: &TensorContract, target: &TensorContract) -> Result<(), String> {
    if normalize_dtype(&value.dtype) != normalize_dtype(&target.dtype) || value.rank != target.rank
    {
        return Err(format!(
            "has incompatible tensor contracts: {} -> {}",
            describe(value),
            describe(target)
        ));
    }
    if let (Some(a), Some(b)) = (&value.shape, &target.shape) {
        for (axis, (x, y)) in a.iter().zip(b).enumerate() {
            if let (Dim::Fixed(x), Dim::Fixed(y)) = (x, y)
                && x != y
            {
                return Err(format!("has incompatible fixed dimension at axis {axis}"));
            }
        }
    }
    Ok(())
}

/// Compatibility with a state cell: as [`compatible`], but the cell's bounded
/// axis is always exempt and its growing axis is exempt for `next` values.
pub fn state_compatible(
    value: &TensorContract,
    cell: &TensorContract,
    exempt_axis: Option<u64>,
) -> Result<(), String> {
    if normalize_dtype(&value.dtype) != normalize_dtype(&cell.dtype) || value.rank != cell.rank {
        return Err(format!(
            "is incompatible with state contract {}",
            describe(cell)
        ));
    }
    if let (Some(a), Some(b)) = (&value.shape, &cell.shape) {
        for (axis, (x, y)) in a.iter().zip(b).enumerate() {
            if Some(axis as u64) == exempt_axis {
                continue;
            }
            if let (Dim::Fixed(x), Dim::Fixed(y)) = (x, y)
                && x != y
            {
                return Err(format!("has incompatible state dimension at axis {axis}"));
            }
        }
    }
    Ok(())
}

fn shape_is(contract: &TensorContract, expected: &[u64]) -> bool {
    contract.shape.as_ref().is_some_and(|shape| {
        shape.len() == expected.len()
            && shape
                .iter()
                .zip(expected)
                .all(|(d, e)| matches!(d, Dim::Fixed(n) if n == e))
    })
}

fn rank_zero_or_one_of_one(contract: &TensorContract) -> Result<(), &'static str> {
    match contract.rank {
        0 => match &contract.shape {
            Some(shape) if !shape.is_empty() => Err("rank-zero contract must have shape []"),
            _ => Ok(()),
        },
        1 if shape_is(contract, &[1]) => Ok(()),
        1 => Err("rank-one control contract must have static shape [1]"),
        _ => Err("must be a scalar or rank-one tensor"),
    }
}

/// Integer dtype and rank 0 (shape absent or `[]`) or rank 1 shape `[1]`.
pub fn integer_scalar(contract: &TensorContract) -> Result<(), &'static str> {
    if !is_integer(&contract.dtype) {
        return Err("must have an integer dtype");
    }
    rank_zero_or_one_of_one(contract)
}

/// Integer dtype, rank 0 or 1 (any shape).
pub fn integer_control(contract: &TensorContract) -> Result<(), &'static str> {
    if !is_integer(&contract.dtype) {
        return Err("must have an integer dtype");
    }
    if contract.rank > 1 {
        return Err("must be a scalar or rank-one row tensor");
    }
    Ok(())
}

/// Bool dtype, rank 0 or 1 (any shape).
pub fn bool_control(contract: &TensorContract) -> Result<(), &'static str> {
    if contract.dtype != "bool" {
        return Err("must have bool dtype");
    }
    if contract.rank > 1 {
        return Err("must be a scalar or rank-one row tensor");
    }
    Ok(())
}

/// Bool or integer dtype, rank 0 or rank 1 shape `[1]`.
pub fn predicate(contract: &TensorContract) -> Result<(), &'static str> {
    if contract.dtype != "bool" && !is_integer(&contract.dtype) {
        return Err("must have a bool or integer dtype");
    }
    match contract.rank {
        0 => Ok(()),
        1 if shape_is(contract, &[1]) => Ok(()),
        1 => Err("rank-one predicate contract must have static shape [1]"),
        _ => Err("must be a scalar or rank-one tensor"),
    }
}

/// Whether a control value is a singleton (rank 0, or rank 1 shape `[1]`).
pub fn is_singleton(contract: &TensorContract) -> bool {
    contract.rank == 0 || shape_is(contract, &[1])
}

/// Whether the layout has a request axis (request-aligned or -expanded).
pub fn has_request_axis(contract: &TensorContract) -> bool {
    contract.layout().request_axis().is_some()
}

/// Whether the layout is anything but `shared`.
pub fn is_row_scoped(contract: &TensorContract) -> bool {
    !matches!(contract.layout(), BatchLayout::Shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract(dtype: &str, shape: &[Dim]) -> TensorContract {
        TensorContract {
            dtype: dtype.into(),
            rank: shape.len() as u64,
            shape: Some(shape.to_vec()),
            optional: None,
            batch_layout: None,
        }
    }

    #[test]
    fn compatibility_treats_symbols_as_wildcards_and_aliases_as_equal() {
        let sym = |s: &str| Dim::Symbol(s.into());
        let a = contract("fp32", &[sym("batch"), Dim::Fixed(8)]);
        let b = contract("float32", &[Dim::Fixed(2), sym("n")]);
        assert_eq!(compatible(&a, &b), Ok(()));
        let c = contract("float32", &[sym("batch"), Dim::Fixed(4)]);
        assert_eq!(
            compatible(&a, &c),
            Err("has incompatible fixed dimension at axis 1".into())
        );
        let d = contract("float16", &[sym("batch"), Dim::Fixed(8)]);
        assert_eq!(
            compatible(&a, &d),
            Err("has incompatible tensor contracts: fp32 rank 2 -> float16 rank 2".into())
        );
        assert_eq!(state_compatible(&c, &a, Some(1)), Ok(()));
    }

    #[test]
    fn control_predicates() {
        let scalar = contract("int64", &[]);
        assert_eq!(integer_scalar(&scalar), Ok(()));
        let one = contract("int64", &[Dim::Fixed(1)]);
        assert_eq!(integer_scalar(&one), Ok(()));
        let batch = contract("int64", &[Dim::Symbol("batch".into())]);
        assert_eq!(
            integer_scalar(&batch),
            Err("rank-one control contract must have static shape [1]")
        );
        assert_eq!(integer_control(&batch), Ok(()));
        assert_eq!(
            predicate(&contract("float32", &[])),
            Err("must have a bool or integer dtype")
        );
        assert_eq!(bool_control(&batch), Err("must have bool dtype"));
    }
}
