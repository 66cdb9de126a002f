//! Naming a UI node's `widgets_values`: by its class's definition (its
//! layout, frontend-only slots skipped, the widgets a dynamic combo's
//! chosen option adds), or, for a class without one, by the names the
//! file itself gives: a newer frontend's `widgets_values_named`, else the
//! widget inputs it lists.

use super::defs::ClassDef;
use indexmap::IndexMap;
use serde_json::{Value, json};

/// The values ComfyUI's frontend stores after a seed for its
/// "control after generate" widget; never sent to the API.
const SEED_CONTROLS: &[&str] = &["fixed", "increment", "decrement", "randomize"];

/// The widget values of `node`, named by `class`.
pub(super) fn by_definition(node: &Value, class: &ClassDef) -> IndexMap<String, Value> {
    let mut values = IndexMap::new();
    match node.get("widgets_values") {
        Some(Value::Array(list)) => {
            let mut at = 0;
            for name in &class.widget_layout {
                let slot = at;
                at += 1;
                if name.starts_with('<') {
                    continue;
                }
                let input = class.inputs.iter().find(|i| &i.name == name);
                let kind = input.map(|i| i.kind.as_str());
                let value = list
                    .get(slot)
                    .cloned()
                    .or_else(|| input.and_then(|i| i.default.clone()));
                let Some(value) = value else { continue };
                if class.is_dynamic(name) {
                    let option = value.as_str().unwrap_or_default();
                    let Some(added) = class.dynamic_widgets(name, option) else {
                        // An option this definition does not know: where
                        // the later values sit is unknown, so they stay
                        // unnamed.
                        values.insert(name.clone(), value);
                        break;
                    };
                    values.insert(name.clone(), value.clone());
                    for widget in added {
                        if let Some(v) = list.get(at) {
                            values.insert(format!("{name}.{widget}"), wrap_array(v.clone()));
                        }
                        at += 1;
                    }
                    continue;
                }
                values.insert(name.clone(), wrap_array(typed(value, kind)));
            }
        }
        Some(Value::Object(map)) => {
            for input in class.inputs.iter().filter(|i| i.widget) {
                if let Some(v) = map.get(&input.name) {
                    values.insert(input.name.clone(), wrap_array(v.clone()));
                }
            }
        }
        _ => {}
    }
    values
}

/// Names a newer frontend writes in `widgets_values_named` for values it
/// keeps to itself: the seed's "control after generate", an upload
/// button.
const FRONTEND_ONLY: &[&str] = &["control_after_generate", "upload"];

/// The widget values of `node` as the file names them: its
/// `widgets_values_named` (frontend-only entries left out; a primitive's
/// control is stored under its own value's name, `"fixed": "fixed"`),
/// else its widget inputs ([`by_file`]).
pub(super) fn by_file_names(node: &Value) -> Option<IndexMap<String, Value>> {
    let named = node.get("widgets_values_named").and_then(Value::as_object);
    let Some(named) = named.filter(|n| !n.is_empty()) else {
        return by_file(node);
    };
    // A repeated name is suffixed (`control_after_generate#1`); a
    // primitive's control is stored under a control's name.
    let frontend = |name: &str, value: &Value| {
        let base = name.split('#').next().unwrap_or(name);
        FRONTEND_ONLY.contains(&base)
            || (SEED_CONTROLS.contains(&base)
                && value.as_str().is_some_and(|v| SEED_CONTROLS.contains(&v)))
    };
    Some(
        named
            .iter()
            .filter(|(name, value)| !frontend(name, value))
            .map(|(name, value)| (name.clone(), wrap_array(value.clone())))
            .collect(),
    )
}

/// The widget values of `node`, named by the widget inputs the file lists
/// (`inputs[].widget.name`, in order), when they name every value (a
/// seed's control value skipped); `None` when they do not.
fn by_file(node: &Value) -> Option<IndexMap<String, Value>> {
    let names: Vec<&str> = node
        .get("inputs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| i.pointer("/widget/name").and_then(Value::as_str))
        .collect();
    let list: &[Value] = match node.get("widgets_values") {
        Some(Value::Array(list)) => list,
        None | Some(Value::Null) => &[],
        Some(_) => return None,
    };
    let mut kept = Vec::new();
    let mut skipped_after = None;
    for value in list {
        let after_seed = kept
            .len()
            .checked_sub(1)
            .and_then(|i| names.get(i))
            .is_some_and(|n| n.contains("seed"));
        let is_control = value.as_str().is_some_and(|v| SEED_CONTROLS.contains(&v));
        if after_seed && is_control && skipped_after != Some(kept.len()) {
            skipped_after = Some(kept.len());
            continue;
        }
        kept.push(value);
    }
    (kept.len() == names.len()).then(|| {
        names
            .iter()
            .zip(kept)
            .map(|(name, value)| (name.to_string(), wrap_array(value.clone())))
            .collect()
    })
}

/// FLOAT widgets are floats in the API (`8.0`), even when the UI wrote `8`.
fn typed(value: Value, kind: Option<&str>) -> Value {
    match (&value, kind) {
        (Value::Number(n), Some("FLOAT")) if !n.is_f64() => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(value, Value::Number),
        _ => value,
    }
}

/// Array literals are wrapped so they are not read as links.
pub(super) fn wrap_array(v: Value) -> Value {
    match v {
        Value::Array(_) => json!({"__value__": v}),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::{by_definition, by_file, by_file_names};
    use crate::comfyui::NodeDefs;
    use serde_json::json;

    #[test]
    fn a_dynamic_combo_names_the_widgets_its_option_adds() {
        let defs = NodeDefs::builtin();
        let class = defs.class("ResizeImageMaskNode").expect("own definition");
        let node = json!({"widgets_values": ["scale dimensions", 640, 360, "center", "lanczos"]});
        let named = by_definition(&node, class);
        assert_eq!(
            serde_json::to_value(&named).expect("json"),
            json!({"resize_type": "scale dimensions", "resize_type.width": 640,
                   "resize_type.height": 360, "resize_type.crop": "center",
                   "scale_method": "lanczos"})
        );
        let node = json!({"widgets_values": ["scale longer dimension", 1024, "area"]});
        let named = by_definition(&node, class);
        assert_eq!(named["resize_type.longer_size"], json!(1024));
        assert_eq!(named["scale_method"], json!("area"));
        // An option the definition does not know leaves the rest unnamed.
        let node = json!({"widgets_values": ["scale by magic", 3, "area"]});
        let named = by_definition(&node, class);
        assert_eq!(named.len(), 1);
    }

    #[test]
    fn the_file_names_widgets_where_it_names_each_value() {
        let node = json!({
            "inputs": [
                {"name": "model", "link": 3},
                {"name": "noise_seed", "widget": {"name": "noise_seed"}, "link": null},
                {"name": "cfg", "widget": {"name": "cfg"}, "link": null}
            ],
            "widgets_values": [42, "randomize", 3.5]
        });
        let named = by_file(&node).expect("named");
        assert_eq!(
            serde_json::to_value(&named).expect("json"),
            json!({"noise_seed": 42, "cfg": 3.5})
        );
        // Three values, two names: which is which is unknown.
        let node = json!({
            "inputs": [{"name": "width", "widget": {"name": "width"}},
                       {"name": "height", "widget": {"name": "height"}}],
            "widgets_values": [1024, 1024, 1]
        });
        assert_eq!(by_file(&node), None);
        // No widgets and no values: nothing to name.
        assert_eq!(by_file(&json!({"inputs": []})), Some(Default::default()));
    }

    #[test]
    fn a_newer_frontend_names_every_value_itself() {
        let node = json!({
            "inputs": [{"name": "image", "link": 5}],
            "widgets_values": [333, 17, 5, "camera"],
            "widgets_values_named": {"horizontal_angle": 333, "vertical_angle": 17, "zoom": 5, "view": "camera"}
        });
        let named = by_file_names(&node).expect("named");
        assert_eq!(
            serde_json::to_value(&named).expect("json"),
            json!({"horizontal_angle": 333, "vertical_angle": 17, "zoom": 5, "view": "camera"})
        );
        // What only the frontend keeps is left out; a list stays a value.
        let node = json!({"widgets_values_named": {"noise_seed": 56, "control_after_generate": "randomize",
            "fixed": "randomize", "upload": "image", "control_after_generate#1": "fixed", "sizes": [1, 2]}});
        let named = by_file_names(&node).expect("named");
        assert_eq!(
            serde_json::to_value(&named).expect("json"),
            json!({"noise_seed": 56, "sizes": {"__value__": [1, 2]}})
        );
        // Without them, the widget inputs name the values.
        let node = json!({"inputs": [{"name": "cfg", "widget": {"name": "cfg"}}], "widgets_values": [3.5]});
        assert_eq!(by_file_names(&node), by_file(&node));
    }
}
