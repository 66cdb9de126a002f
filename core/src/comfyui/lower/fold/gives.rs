//! What a node whose inputs are all written gives its readers, computed as
//! ComfyUI's node would: primitives and `SeedNode`, a written switch's
//! chosen branch, the text a `PreviewAny` shows of a written value and
//! passes on, string joins and replacements,
//! a `CustomCombo`'s choice, a `ResolutionSelector`'s size, number
//! conversions and `ComfyMathExpression`'s arithmetic (see `expr`),
//! an `ImageStitch` without a second picture, which returns its first,
//! a `GetImageSize` of pictures whose size the graph writes (`sizes`), and
//! the shot description a `CameraAngle` writes for a prompt (not its
//! camera, output 0, which is no value: `Null`).

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
    pub passes: Vec<String>,
    /// Whether it folds only where it is read (a preview, which is also a
    /// sink of its own).
    pub needs_reader: bool,
    /// Nodes it read that are not folded (a `GetImageSize`'s blank picture
    /// and its scaling), used where it is.
    pub read: Vec<String>,
}

impl Gift {
    fn of(outputs: Vec<Value>, passes: &[&str]) -> Gift {
        Gift {
            outputs,
            passes: passes.iter().map(|p| p.to_string()).collect(),
            needs_reader: false,
            read: Vec::new(),
        }
    }

    /// What a computation gives: every input it read passes on.
    fn computed(outputs: Vec<Value>, inputs: &Map<String, Value>) -> Gift {
        Gift {
            outputs,
            passes: inputs.keys().cloned().collect(),
            needs_reader: false,
            read: Vec::new(),
        }
    }
}

/// What `node` gives, if it folds; `nodes` are the graph's nodes as
/// folded so far.
pub(super) fn gives(node: &Value, nodes: &Map<String, Value>) -> Option<Gift> {
    let class = node.get("class_type")?.as_str()?;
    let inputs = node.get("inputs")?.as_object()?;
    let literal = |name: &str| inputs.get(name).filter(|v| api_link(v).is_none());
    let text = |name: &str| literal(name)?.as_str();
    if PRIMITIVES.contains(&class) {
        return Some(Gift::of(vec![literal("value")?.clone()], &["value"]));
    }
    if class == "SeedNode" {
        return Some(Gift::of(vec![literal("seed")?.clone()], &["seed"]));
    }
    match class {
        // Without a second picture it returns its first as it is.
        "ImageStitch" if !inputs.contains_key("image2") => {
            Some(Gift::of(vec![inputs.get("image1")?.clone()], &["image1"]))
        }
        "GetImageSize" => {
            let (size, read) = super::sizes::written_size(inputs.get("image")?, nodes)?;
            let outputs = size.map(|side| json!(side)).to_vec();
            Some(Gift {
                read,
                ..Gift::of(outputs, &["image"])
            })
        }
        "CameraAngle" => {
            let angle = |name: &str| literal(name)?.as_f64();
            let shot = camera_shot(
                angle("horizontal_angle")?,
                angle("vertical_angle")?,
                angle("zoom")?,
            );
            Some(Gift::computed(vec![Value::Null, json!(shot)], inputs))
        }
        "ComfySwitchNode" => {
            let chosen = match literal("switch")? {
                Value::Bool(true) => "on_true",
                Value::Bool(false) => "on_false",
                _ => return None,
            };
            Some(Gift::of(
                vec![inputs.get(chosen)?.clone()],
                &["switch", chosen],
            ))
        }
        // Its output is the text it shows: a written value as Python
        // prints it.
        "PreviewAny" => Some(Gift {
            outputs: vec![json!(python_str(literal("source")?)?)],
            passes: vec!["source".into()],
            needs_reader: true,
            read: Vec::new(),
        }),
        "StringConcatenate" => {
            let delimiter = match inputs.get("delimiter") {
                None => "",
                Some(_) => text("delimiter")?,
            };
            let joined = format!("{}{delimiter}{}", text("string_a")?, text("string_b")?);
            Some(Gift::computed(vec![json!(joined)], inputs))
        }
        "StringReplace" => {
            let replaced = text("string")?.replace(text("find")?, text("replace")?);
            Some(Gift::computed(vec![json!(replaced)], inputs))
        }
        "CustomCombo" => {
            let index = match inputs.get("index") {
                None => json!(0),
                Some(_) => json!(literal("index")?.as_i64()?),
            };
            Some(Gift::computed(vec![json!(text("choice")?), index], inputs))
        }
        "ResolutionSelector" => {
            let (width, height) = resolution(inputs)?;
            Some(Gift::computed(vec![json!(width), json!(height)], inputs))
        }
        "ComfyNumberConvert" => {
            let value = number(literal("value")?)?;
            Some(Gift::computed(
                vec![json!(value.to_float()), json!(value.to_int()?)],
                inputs,
            ))
        }
        "ComfyMathExpression" => {
            let result = math(inputs)?;
            Some(Gift::computed(
                vec![
                    json!(result.to_float()),
                    json!(result.to_int()?),
                    json!(result.to_bool()),
                ],
                inputs,
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

/// `ComfyMathExpression`: its `values.<name>` inputs bound by name (`a`,
/// `b`, ...), every one written.
fn math(inputs: &Map<String, Value>) -> Option<Num> {
    let expression = inputs.get("expression")?.as_str()?;
    let mut names = HashMap::new();
    for (name, value) in inputs.iter() {
        if let Some(name) = name.strip_prefix("values.") {
            names.insert(name.to_string(), number(value)?);
        }
    }
    expr::evaluate(expression, &names)
}

/// A float as Python's `repr` writes it: the shortest digits that read
/// back, with an exponent (`1e-05`, `1.5e+20`) below 1e-4 and from 1e16,
/// else a point (`2.0`).
fn python_float(f: f64) -> Option<String> {
    if !f.is_finite() {
        return None;
    }
    let a = f.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        let text = format!("{f:e}");
        let (mantissa, exponent) = text.split_once('e')?;
        let exponent: i32 = exponent.parse().ok()?;
        let sign = if exponent < 0 { '-' } else { '+' };
        return Some(format!("{mantissa}e{sign}{:02}", exponent.abs()));
    }
    Some(match f.fract() == 0.0 {
        true => format!("{f:.1}"),
        false => format!("{f}"),
    })
}

/// A written value as Python's `str` gives it (`True`, `2.0`, text as is).
pub(in crate::comfyui::lower) fn python_str(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(true) => Some("True".into()),
        Value::Bool(false) => Some("False".into()),
        Value::Number(n) if n.is_f64() => python_float(n.as_f64()?),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
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
    // ComfyUI's ranges (its ratios' sides are at most 21): beyond them
    // the node would not run.
    let sides = 1..=64;
    if !sides.contains(&w)
        || !sides.contains(&h)
        || !(1..=128).contains(&multiple)
        || !(0..=4096).contains(&minimum)
        || !(0.01..=16.0).contains(&megapixels)
    {
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

/// `CameraAngle`'s prompt: the shot described in words, as ComfyUI's
/// node does (angles truncated to whole degrees and clamped, the
/// azimuth's eighth, the elevation's and the zoom's bands).
fn camera_shot(horizontal: f64, vertical: f64, zoom: f64) -> String {
    const AROUND: [&str; 8] = [
        "front view",
        "front-right quarter view",
        "right side view",
        "back-right quarter view",
        "back view",
        "back-left quarter view",
        "left side view",
        "front-left quarter view",
    ];
    let horizontal = horizontal.trunc().clamp(0.0, 360.0);
    let vertical = vertical.trunc().clamp(-30.0, 60.0);
    let zoom = zoom.clamp(0.0, 10.0);
    let sector = (((horizontal % 360.0) + 22.5) / 45.0).floor() as usize % AROUND.len();
    let elevation = match vertical {
        v if v < -15.0 => "low-angle shot",
        v if v < 15.0 => "eye-level shot",
        v if v < 45.0 => "elevated shot",
        _ => "high-angle shot",
    };
    let distance = match zoom {
        z if z < 2.0 => "wide shot",
        z if z < 6.0 => "medium shot",
        _ => "close-up",
    };
    format!("{} {elevation} {distance}", AROUND[sector])
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::gives;
    use serde_json::{Map, Value, json};

    fn outputs(class: &str, inputs: Value) -> Option<Vec<Value>> {
        gives(&json!({"class_type": class, "inputs": inputs}), &Map::new()).map(|g| g.outputs)
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
        assert_eq!(
            outputs(
                "ComfyMathExpression",
                json!({"expression": "a - b", "values.b": 1, "values.a": 5})
            ),
            Some(vec![json!(4.0), json!(4), json!(true)]),
            "operands bind by name, whatever their order"
        );
        assert_eq!(
            outputs("PreviewAny", json!({"source": 2.0})),
            Some(vec![json!("2.0")])
        );
        assert_eq!(
            outputs("PreviewAny", json!({"source": true})),
            Some(vec![json!("True")])
        );
        assert_eq!(
            outputs(
                "CameraAngle",
                json!({"horizontal_angle": 333, "vertical_angle": 17, "zoom": 5, "view": "camera", "image": ["1", 0]})
            ),
            Some(vec![
                Value::Null,
                json!("front-left quarter view elevated shot medium shot")
            ])
        );
        // The bands' edges, a full turn and values past the node's range.
        assert_eq!(
            outputs(
                "CameraAngle",
                json!({"horizontal_angle": 22.5, "vertical_angle": -15, "zoom": 6.0})
            ),
            Some(vec![
                Value::Null,
                json!("front view eye-level shot close-up")
            ])
        );
        assert_eq!(
            outputs(
                "CameraAngle",
                json!({"horizontal_angle": 400, "vertical_angle": -90, "zoom": 1.9})
            ),
            Some(vec![
                Value::Null,
                json!("front view low-angle shot wide shot")
            ])
        );
        assert_eq!(
            outputs(
                "CameraAngle",
                json!({"horizontal_angle": 67.6, "vertical_angle": 45, "zoom": 2})
            ),
            Some(vec![
                Value::Null,
                json!("front-right quarter view high-angle shot medium shot")
            ])
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
        assert_eq!(
            outputs(
                "StringConcatenate",
                json!({"string_a": "a", "string_b": "b", "delimiter": ["1", 0]})
            ),
            None,
            "a linked delimiter is not taken as empty"
        );
        assert_eq!(outputs("PreviewAny", json!({"source": ["1", 0]})), None);
        // Out of ComfyUI's ranges: no overflow, no fold.
        assert_eq!(
            outputs(
                "ResolutionSelector",
                json!({"aspect_ratio": "9223372036854775807:2 (x)", "megapixels": 1.0, "multiple": 8})
            ),
            None
        );
        assert_eq!(
            outputs(
                "ResolutionSelector",
                json!({"aspect_ratio": "1:1", "megapixels": 1.0, "multiple": 8, "minimum": 9223372036854775807i64})
            ),
            None
        );
    }
}
