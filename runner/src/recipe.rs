//! Run recipes: the JSON format of `shared/corpus/expected/*/*.json` —
//! explicit inputs, and optionally the outputs to compare against with a
//! tolerance.

use crate::tensor::{Data, Tensor, TensorError};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// A parsed recipe.
#[derive(Clone, Debug, Default)]
pub struct Recipe {
    /// Workflow input name -> tensor.
    pub inputs: HashMap<String, Tensor>,
    /// Expected output key -> tensor (may be empty).
    pub outputs: BTreeMap<String, Tensor>,
    /// Absolute tolerance for floats.
    pub abs: f64,
    /// Relative tolerance for floats.
    pub rel: f64,
}

/// Reads a recipe from JSON text.
pub fn parse(text: &str) -> Result<Recipe, TensorError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| TensorError(format!("recipe is not JSON: {e}")))?;
    let tensors = |key: &str| -> Result<Vec<(String, Tensor)>, TensorError> {
        match value.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(name, t)| {
                    Tensor::from_json(t)
                        .map(|t| (name.clone(), t))
                        .map_err(|e| TensorError(format!("{key}.{name}: {e}")))
                })
                .collect(),
            Some(_) => Err(TensorError(format!("recipe `{key}` must be an object"))),
        }
    };
    let tolerance = value.get("tolerance");
    let number = |k: &str, default: f64| {
        tolerance
            .and_then(|t| t.get(k))
            .and_then(Value::as_f64)
            .unwrap_or(default)
    };
    Ok(Recipe {
        inputs: tensors("inputs")?.into_iter().collect(),
        outputs: tensors("outputs")?.into_iter().collect(),
        abs: number("abs", 1e-4),
        rel: number("rel", 1e-5),
    })
}

/// Compares produced outputs with the expected ones: names, dtypes and
/// shapes exactly, integers and bools exactly, floats within
/// `abs + rel * |want|`. Returns one line per mismatch.
pub fn compare(
    got: &BTreeMap<String, Tensor>,
    want: &BTreeMap<String, Tensor>,
    abs: f64,
    rel: f64,
) -> Vec<String> {
    let mut problems = Vec::new();
    let got_keys: Vec<&String> = got.keys().collect();
    let want_keys: Vec<&String> = want.keys().collect();
    if got_keys != want_keys {
        problems.push(format!("outputs {got_keys:?}, expected {want_keys:?}"));
    }
    for (name, w) in want {
        let Some(g) = got.get(name) else { continue };
        if g.dtype() != w.dtype() || g.shape != w.shape {
            problems.push(format!(
                "{name}: {} {:?}, expected {} {:?}",
                g.dtype(),
                g.shape,
                w.dtype(),
                w.shape
            ));
            continue;
        }
        let float = g.dtype().is_float();
        let mut worst: Option<(usize, f64, f64)> = None;
        for i in 0..w.numel() {
            let (a, b) = (g.data.get_f64(i), w.data.get_f64(i));
            let ok = if float {
                (a - b).abs() <= abs + rel * b.abs()
            } else {
                a == b
            };
            if !ok && worst.is_none_or(|(_, x, y)| (a - b).abs() > (x - y).abs()) {
                worst = Some((i, a, b));
            }
        }
        if let Some((i, a, b)) = worst {
            problems.push(format!(
                "{name}[{i}]: got {a}, expected {b} (|diff| {:.3e})",
                (a - b).abs()
            ));
        }
    }
    problems
}

/// The largest absolute difference between two float tensors of one shape.
pub fn max_abs_diff(a: &Tensor, b: &Tensor) -> Option<f64> {
    (a.shape == b.shape && a.numel() == b.numel() && !matches!(a.data, Data::Bool(_))).then(|| {
        (0..a.numel())
            .map(|i| (a.data.get_f64(i) - b.data.get_f64(i)).abs())
            .fold(0.0, f64::max)
    })
}
