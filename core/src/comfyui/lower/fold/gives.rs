//! What a node whose inputs are all written gives its readers, computed as
//! ComfyUI's node would: primitives and `SeedNode`, a written switch's chosen branch, the
//! text a `PreviewAny` shows and passes on, string joins and replacements,
//! a `CustomCombo`'s choice, a `ResolutionSelector`'s size, number
//! conversions and `ComfyMathExpression`'s arithmetic (see `expr`).

use super::super::expr::{self, Num};
use crate::comfyui::link::api_link;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// The primitive node classes, whose output is their `value` input.
const PRIMITIVES: &[&str] = &[
    "PrimitiveInt",
    "PrimitiveFloat",
    "PrimitiveBoolean",
    "PrimitiveString",
    "PrimitiveStringMultiline",
];

/// What a foldable node gives.
pub(super) struct Gift {
    /// Per output slot, the value (or link) its readers take.
    pub outputs: Vec<Value>,
    /// Its own inputs whose values it gives on.
    pub passes: [&'static str; 2],
    /// Whether it folds only where it is read (a preview, which is also a
    /// sink of its own).
    pub needs_reader: bool,
}

impl Gift {
    fn of(outputs: Vec<Value>, passes: [&'static str; 2]) -> Gift {
        Gift {
            outputs,
            passes,
            needs_reader: false,
        }
    }
}

/// What `node` gives, if it folds.
pub(super) fn gives(node: &Value) -> Option<Gift> {
    let class = node.get("class_type")?.as_str()?;
    let inputs = node.get("inputs")?.as_object()?;
    let literal = |name: &str| inputs.get(name).filter(|v| api_link(v).is_none());
    let text = |name: &str| literal(name)?.as_str();
    if PRIMITIVES.contains(&class) {
        return Some(Gift::of(
            vec![literal("value")?.clone()],
            ["value", "value"],
        ));
    }
    if class == "SeedNode" {
        return Some(Gift::of(vec![literal("seed")?.clone()], ["seed", "seed"]));
    }
    match class {
        "ComfySwitchNode" => {
            let chosen = match literal("switch")? {
                Value::Bool(true) => "on_true",
                Value::Bool(false) => "on_false",
                _ => return None,
            };
            Some(Gift::of(
                vec![inputs.get(chosen)?.clone()],
                ["switch", chosen],
            ))
        }
        "PreviewAny" => Some(Gift {
            outputs: vec![inputs.get("source")?.clone()],
            passes: ["source", "source"],
            needs_reader: true,
        }),
        "StringConcatenate" => {
            let delimiter = text("delimiter").unwrap_or_default();
            let joined = format!("{}{delimiter}{}", text("string_a")?, text("string_b")?);
            Some(Gift::of(vec![json!(joined)], ["string_a", "string_b"]))
        }
        "StringReplace" => {
            let replaced = text("string")?.replace(text("find")?, text("replace")?);
            Some(Gift::of(vec![json!(replaced)], ["string", "string"]))
        }
        "CustomCombo" => Some(Gift::of(
            vec![json!(text("choice")?), literal("index").cloned()?],
            ["choice", "choice"],
        )),
        "ResolutionSelector" => {
            let (width, height) = resolution(inputs)?;
            Some(Gift::of(
                vec![json!(width), json!(height)],
                ["megapixels", "aspect_ratio"],
            ))
        }
        "ComfyNumberConvert" => {
            let value = number(literal("value")?)?;
            Some(Gift::of(
                vec![json!(value.to_float()), json!(value.to_int()?)],
                ["value", "value"],
            ))
        }
        "ComfyMathExpression" => {
            let result = math(inputs)?;
            Some(Gift::of(
                vec![
                    json!(result.to_float()),
                    json!(result.to_int()?),
                    json!(result.to_bool()),
                ],
                ["expression", "expression"],
            ))
        }
        _ => None,
    }
}

/// A written number, boolean or numeric text as an expression value.
fn number(value: &Value) -> Option<Num> {
    match value {
        Value::Bool(b) => Some(Num::Bool(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Some(Num::Int(i)),
            None => n.as_f64().map(Num::Float),
        },
        Value::String(s) => match s.trim().parse::<i64>() {
            Ok(i) => Some(Num::Int(i)),
            Err(_) => s.trim().parse::<f64>().ok().map(Num::Float),
        },
        _ => None,
    }
}

/// `ComfyMathExpression`: its `values.<name>` inputs bound by name and by
/// position (`a`, `b`, ... in input order), every one written.
fn math(inputs: &Map<String, Value>) -> Option<Num> {
    let expression = inputs.get("expression")?.as_str()?;
    let mut names = HashMap::new();
    let values = inputs
        .iter()
        .filter_map(|(name, v)| Some((name.strip_prefix("values.")?, v)));
    for (position, (name, value)) in values.enumerate() {
        let value = number(value)?;
        let letter = u8::try_from(position).ok().filter(|p| *p < 26)?;
        names.insert(char::from(b'a' + letter).to_string(), value);
        names.insert(name.to_string(), value);
    }
    expr::evaluate(expression, &names)
}

/// `ResolutionSelector`: the aspect ratio's sides scaled to the target
/// megapixels, each rounded (ties to even) to the multiple, and raised
/// to the least whole multiple of the ratio that keeps both sides at
/// `minimum` or more.
fn resolution(inputs: &Map<String, Value>) -> Option<(i64, i64)> {
    let ratio = inputs.get("aspect_ratio")?.as_str()?;
    let (w, h) = ratio.split_whitespace().next()?.split_once(':')?;
    let (w, h): (i64, i64) = (w.parse().ok()?, h.parse().ok()?);
    let megapixels = inputs.get("megapixels")?.as_f64()?;
    let multiple = inputs.get("multiple").map_or(Some(8), Value::as_i64)?;
    let minimum = inputs.get("minimum").map_or(Some(0), Value::as_i64)?;
    if w <= 0 || h <= 0 || multiple <= 0 || megapixels.is_nan() || megapixels <= 0.0 {
        return None;
    }
    let scale = (megapixels * 1024.0 * 1024.0 / (w * h) as f64).sqrt();
    let side = |r: i64| (r as f64 * scale / multiple as f64).round_ties_even() as i64 * multiple;
    let (width, height) = (side(w), side(h));
    if width >= minimum && height >= minimum {
        return Some((width, height));
    }
    let step_w = multiple / gcd(w, multiple);
    let step_h = multiple / gcd(h, multiple);
    let k_step = step_w * step_h / gcd(step_w, step_h);
    let least = (minimum as f64 / w as f64)
        .max(minimum as f64 / h as f64)
        .ceil() as i64;
    let k = (least + k_step - 1) / k_step * k_step;
    Some((w * k, h * k))
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::gives;
    use serde_json::{Value, json};

    fn outputs(class: &str, inputs: Value) -> Option<Vec<Value>> {
        gives(&json!({"class_type": class, "inputs": inputs})).map(|g| g.outputs)
    }

    #[test]
    fn written_nodes_give_what_comfyui_computes() {
        assert_eq!(
            outputs(
                "ResolutionSelector",
                json!({"aspect_ratio": "16:9 (Widescreen)", "megapixels": 0.4, "multiple": 32, "minimum": 256})
            ),
            Some(vec![json!(864), json!(480)])
        );
        assert_eq!(
            outputs(
                "ResolutionSelector",
                json!({"aspect_ratio": "1:1 (Square)", "megapixels": 1.0, "multiple": 8})
            ),
            Some(vec![json!(1024), json!(1024)])
        );
        // Below the minimum: the least multiple of the ratio on the grid.
        assert_eq!(
            outputs(
                "ResolutionSelector",
                json!({"aspect_ratio": "21:9 (Ultrawide)", "megapixels": 0.1, "multiple": 8, "minimum": 256})
            ),
            Some(vec![json!(672), json!(288)])
        );
        assert_eq!(
            outputs(
                "StringConcatenate",
                json!({"string_a": "cat", "string_b": "gummy", "delimiter": ", "})
            ),
            Some(vec![json!("cat, gummy")])
        );
        assert_eq!(
            outputs(
                "StringReplace",
                json!({"string": "a-b-c", "find": "-", "replace": "+"})
            ),
            Some(vec![json!("a+b+c")])
        );
        assert_eq!(
            outputs(
                "ComfyMathExpression",
                json!({"expression": "(a // 32) * 32", "values.a": 1000})
            ),
            Some(vec![json!(992.0), json!(992), json!(true)])
        );
        assert_eq!(
            outputs(
                "ComfyMathExpression",
                json!({"expression": "a / b", "values.a": 7, "values.b": 2})
            ),
            Some(vec![json!(3.5), json!(3), json!(true)])
        );
        assert_eq!(
            outputs("ComfyNumberConvert", json!({"value": "2.75"})),
            Some(vec![json!(2.75), json!(2)])
        );
        assert_eq!(
            outputs("CustomCombo", json!({"choice": "Turbo", "index": 2})),
            Some(vec![json!("Turbo"), json!(2)])
        );
    }

    #[test]
    fn a_linked_operand_does_not_fold() {
        assert_eq!(
            outputs(
                "ComfyMathExpression",
                json!({"expression": "a + 1", "values.a": ["5", 0]})
            ),
            None
        );
        assert_eq!(
            outputs(
                "StringConcatenate",
                json!({"string_a": ["1", 0], "string_b": "x"})
            ),
            None
        );
    }
}
