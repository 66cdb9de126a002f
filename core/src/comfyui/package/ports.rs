//! Checking a model file's ports against the contracts a document declares
//! for its component: every declared port must be in the model with the
//! same dtype and rank and no conflicting fixed extent, and the model may
//! need no input the document does not feed.

use serde_json::Value;
use std::fmt;
use wfstudio_onnx::signature::{Port, PortDim, Signature};

/// One way a model's ports differ from the declared contracts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortMismatch {
    /// The component.
    pub component: String,
    /// `input` or `output`.
    pub side: &'static str,
    /// The port.
    pub port: String,
    /// What the document declares (`float32 [batch, 4]`), or `not declared`.
    pub expected: String,
    /// What the model has, or `missing`.
    pub found: String,
}

impl fmt::Display for PortMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "component {}, {} {}: expected {}, found {}",
            self.component, self.side, self.port, self.expected, self.found
        )
    }
}

/// The mismatches between `component`'s declared `ports` and `signature`.
pub fn check(component: &str, declared: &Value, signature: &Signature) -> Vec<PortMismatch> {
    let mut out = Vec::new();
    for (side, key, ports) in [
        ("input", "inputs", &signature.inputs),
        ("output", "outputs", &signature.outputs),
    ] {
        let wanted = declared
            .pointer(&format!("/ports/{key}"))
            .and_then(Value::as_object);
        for (name, contract) in wanted.into_iter().flatten() {
            let expected = describe(contract);
            let mismatch = |found: String| PortMismatch {
                component: component.to_string(),
                side,
                port: name.clone(),
                expected: expected.clone(),
                found,
            };
            match ports.iter().find(|p| &p.name == name) {
                None => out.push(mismatch("missing".into())),
                Some(port) if !fits(contract, port) => out.push(mismatch(port.to_string())),
                Some(_) => {}
            }
        }
        if side == "input" {
            for port in ports {
                if wanted.is_none_or(|w| !w.contains_key(&port.name)) {
                    out.push(PortMismatch {
                        component: component.to_string(),
                        side,
                        port: port.name.clone(),
                        expected: "not declared (the workflow does not feed it)".into(),
                        found: port.to_string(),
                    });
                }
            }
        }
    }
    out
}

/// `dtype [d0, d1, ...]` of a declared contract.
fn describe(contract: &Value) -> String {
    let dtype = contract.get("dtype").and_then(Value::as_str).unwrap_or("?");
    match contract.get("shape").and_then(Value::as_array) {
        Some(shape) => {
            let dims: Vec<String> = shape
                .iter()
                .map(|d| match d {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            format!("{dtype} [{}]", dims.join(", "))
        }
        None => {
            let rank = contract.get("rank").and_then(Value::as_u64).unwrap_or(0);
            format!("{dtype} rank {rank}")
        }
    }
}

fn fits(contract: &Value, port: &Port) -> bool {
    let dtype = contract.get("dtype").and_then(Value::as_str).unwrap_or("");
    if crate::contracts::normalize_dtype(dtype) != port.dtype {
        return false;
    }
    let Some(dims) = &port.shape else {
        return true;
    };
    let rank = contract.get("rank").and_then(Value::as_u64);
    if rank.is_some_and(|r| r as usize != dims.len()) {
        return false;
    }
    let Some(shape) = contract.get("shape").and_then(Value::as_array) else {
        return true;
    };
    shape.len() == dims.len()
        && shape
            .iter()
            .zip(dims)
            .all(|(want, have)| match (want.as_i64(), have) {
                (Some(n), PortDim::Fixed(m)) => n == *m,
                _ => true,
            })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn port(name: &str, dtype: &str, dims: Vec<PortDim>) -> Port {
        Port {
            name: name.into(),
            dtype: dtype.into(),
            shape: Some(dims),
        }
    }

    #[test]
    fn each_difference_is_named_with_expected_and_found() {
        let declared = json!({"ports": {
            "inputs": {"sample": {"dtype": "float32", "rank": 2, "shape": ["batch", 4]},
                       "timestep": {"dtype": "float32", "rank": 1, "shape": ["batch"]}},
            "outputs": {"noise_pred": {"dtype": "float32", "rank": 2, "shape": ["batch", 4]}}}});
        let signature = Signature {
            inputs: vec![
                port(
                    "sample",
                    "float16",
                    vec![PortDim::Fixed(1), PortDim::Fixed(4)],
                ),
                port("extra", "int64", vec![PortDim::Open]),
            ],
            outputs: vec![port(
                "noise_pred",
                "float32",
                vec![PortDim::Named("b".into()), PortDim::Fixed(5)],
            )],
        };
        let found: Vec<String> = check("denoiser", &declared, &signature)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "component denoiser, input sample: expected float32 [batch, 4], found float16 [1, 4]",
                "component denoiser, input timestep: expected float32 [batch], found missing",
                "component denoiser, input extra: expected not declared (the workflow does not feed it), found int64 [?]",
                "component denoiser, output noise_pred: expected float32 [batch, 4], found float32 [b, 5]",
            ]
        );
    }

    #[test]
    fn symbols_and_open_extents_fit_anything() {
        let declared = json!({"ports": {"inputs": {"x": {"dtype": "fp32", "rank": 2, "shape": [2, "n"]}}, "outputs": {}}});
        let signature = Signature {
            inputs: vec![port("x", "float32", vec![PortDim::Open, PortDim::Fixed(7)])],
            outputs: vec![],
        };
        assert_eq!(check("c", &declared, &signature), vec![]);
    }
}
