//! Per-class node facts (inputs in order, widget layout, outputs), read
//! from a `node_defs.json` such as the shared corpus's. The core classes
//! ship with the product (`assets/comfyui/node_defs.json`, made by
//! [`compact`] from the corpus file, whose provenance it keeps), so a UI
//! workflow converts offline; a file given by the user adds or overrides
//! classes.

use serde_json::Value;
use std::collections::HashMap;

/// One input of a node class.
#[derive(Clone, Debug, PartialEq)]
pub struct InputDef {
    /// Input name.
    pub name: String,
    /// Socket or widget type (`MODEL`, `INT`, `COMBO`, ...).
    pub kind: String,
    /// Whether it is a widget (a value in `widgets_values`).
    pub widget: bool,
    /// Default value, if declared.
    pub default: Option<Value>,
}

/// One node class.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassDef {
    /// Inputs, required then optional, in declaration order.
    pub inputs: Vec<InputDef>,
    /// Slot layout of `widgets_values`: input names and frontend-only
    /// placeholders such as `<control_after_generate>` and `<upload>`.
    pub widget_layout: Vec<String>,
    /// Output types by slot.
    pub outputs: Vec<String>,
    /// Dynamic combos (ComfyUI's `io.DynamicCombo`): per combo input, the
    /// widgets each option adds right after it, named `combo.widget`.
    pub dynamic_combos: Vec<DynamicCombo>,
}

/// A combo whose chosen option adds widgets of its own after it.
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicCombo {
    /// The combo input's name.
    pub input: String,
    /// Per option, the names of the widgets it adds, in order.
    pub options: Vec<(String, Vec<String>)>,
}

impl ClassDef {
    /// The widgets option `option` of combo `input` adds, if it is dynamic.
    pub fn dynamic_widgets(&self, input: &str, option: &str) -> Option<&[String]> {
        let combo = self.dynamic_combos.iter().find(|c| c.input == input)?;
        combo
            .options
            .iter()
            .find(|(name, _)| name == option)
            .map(|(_, widgets)| widgets.as_slice())
    }

    /// Whether input `name` is a dynamic combo.
    pub fn is_dynamic(&self, name: &str) -> bool {
        self.dynamic_combos.iter().any(|c| c.input == name)
    }
}

/// The node classes known to the importer.
#[derive(Clone, Debug, Default)]
pub struct NodeDefs {
    classes: HashMap<String, ClassDef>,
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// The bundled definitions of ComfyUI's core node classes.
pub const BUILTIN_JSON: &str = include_str!("../../../assets/comfyui/node_defs.json");

/// The product's own definitions of newer classes the bundled file lacks,
/// and of bundled classes whose inputs grew since (written from ComfyUI's
/// source); they replace the bundled ones.
pub const OWN_JSON: &str = include_str!("../../../assets/comfyui/node_defs_own.json");

impl NodeDefs {
    /// The bundled core node classes, with the product's own definitions.
    pub fn builtin() -> NodeDefs {
        let mut defs = NodeDefs::parse(BUILTIN_JSON).unwrap_or_default();
        for (name, class) in NodeDefs::parse(OWN_JSON).unwrap_or_default().classes {
            defs.classes.insert(name, class);
        }
        defs
    }

    /// The bundled classes, with those of the file at `extra` (if any)
    /// added or overriding them.
    pub fn builtin_with(extra: Option<&std::path::Path>) -> Result<NodeDefs, String> {
        let mut defs = NodeDefs::builtin();
        if let Some(path) = extra {
            defs.classes.extend(NodeDefs::read(path)?.classes);
        }
        Ok(defs)
    }

    /// Reads a `node_defs.json` file; the error names the file.
    pub fn read(path: &std::path::Path) -> Result<NodeDefs, String> {
        std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| NodeDefs::parse(&text))
            .map_err(|e| format!("reading node definitions {}: {e}", path.display()))
    }

    /// Reads `node_defs.json` text (`{"nodes": {class: {inputs, outputs,
    /// widgets_values_layout?}}}`).
    pub fn parse(json: &str) -> Result<NodeDefs, String> {
        let root: Value = serde_json::from_str(json)
            .map_err(|e| format!("node definitions are not JSON: {e}"))?;
        let nodes = root
            .get("nodes")
            .and_then(Value::as_object)
            .ok_or("node definitions need a `nodes` object")?;
        let mut classes = HashMap::new();
        for (name, class) in nodes {
            let inputs: Vec<InputDef> = class
                .get("inputs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|i| {
                    Some(InputDef {
                        name: text(i.get("name")?)?,
                        kind: i
                            .get("type")
                            .and_then(text)
                            .unwrap_or_else(|| "COMBO".into()),
                        widget: i.get("widget").and_then(Value::as_bool).unwrap_or(false),
                        default: i.get("default").cloned(),
                    })
                })
                .collect();
            let widget_layout = match class.get("widgets_values_layout").and_then(Value::as_array) {
                Some(layout) => layout.iter().filter_map(text).collect(),
                None => derived_layout(class),
            };
            let outputs = class
                .get("outputs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|o| o.get("type").and_then(text).unwrap_or_else(|| "*".into()))
                .collect();
            classes.insert(
                name.clone(),
                ClassDef {
                    inputs,
                    widget_layout,
                    outputs,
                    dynamic_combos: dynamic_combos(class),
                },
            );
        }
        Ok(NodeDefs { classes })
    }

    /// The class named `name`.
    pub fn class(&self, name: &str) -> Option<&ClassDef> {
        self.classes.get(name)
    }

    /// Number of classes.
    pub fn len(&self) -> usize {
        self.classes.len()
    }

    /// Whether no class is known.
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }
}

/// The bundled form of a full `node_defs.json` (as `GET /object_info`
/// gives it): per class only what the importer reads (inputs with name,
/// type, widget flag, default and the frontend-widget flags; output types;
/// an explicit widget layout), and the source's provenance.
pub fn compact(full: &Value) -> Value {
    let keep_input = |input: &Value| {
        let mut kept = serde_json::Map::new();
        for key in ["name", "type", "widget", "default"] {
            if let Some(v) = input.get(key) {
                kept.insert(key.into(), v.clone());
            }
        }
        for flag in [
            "control_after_generate",
            "image_upload",
            "video_upload",
            "audio_upload",
        ] {
            if input.get(flag).and_then(Value::as_bool) == Some(true) {
                kept.insert(flag.into(), Value::Bool(true));
            }
        }
        Value::Object(kept)
    };
    let mut nodes = serde_json::Map::new();
    for (name, class) in full
        .get("nodes")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let mut kept = serde_json::Map::new();
        let inputs: Vec<Value> = class
            .get("inputs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(keep_input)
            .collect();
        kept.insert("inputs".into(), Value::Array(inputs));
        let outputs: Vec<Value> = class
            .get("outputs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|o| serde_json::json!({"type": o.get("type").cloned().unwrap_or(Value::Null)}))
            .collect();
        kept.insert("outputs".into(), Value::Array(outputs));
        if let Some(layout) = class.get("widgets_values_layout") {
            kept.insert("widgets_values_layout".into(), layout.clone());
        }
        nodes.insert(name.clone(), Value::Object(kept));
    }
    serde_json::json!({
        "source": full.get("source").cloned().unwrap_or(Value::Null),
        "derived": "shared/corpus/comfyui/node_defs.json compacted by wfstudio_core::comfyui::defs::compact (tests/comfyui_convert.rs checks it; WFSTUDIO_UPDATE_ASSETS=1 rewrites it)",
        "nodes": nodes,
    })
}

/// The `dynamic_combos` object of a class (`{combo: {option: [widget,
/// ...]}}`), in the file's order.
fn dynamic_combos(class: &Value) -> Vec<DynamicCombo> {
    let Some(combos) = class.get("dynamic_combos").and_then(Value::as_object) else {
        return Vec::new();
    };
    combos
        .iter()
        .map(|(input, options)| DynamicCombo {
            input: input.clone(),
            options: options
                .as_object()
                .into_iter()
                .flatten()
                .map(|(option, widgets)| {
                    let names = widgets
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(text)
                        .collect();
                    (option.clone(), names)
                })
                .collect(),
        })
        .collect()
}

/// The widget layout from the inputs: widgets in order, a control slot after
/// inputs with `control_after_generate`, an upload slot after upload combos.
fn derived_layout(class: &Value) -> Vec<String> {
    let mut layout = Vec::new();
    for input in class
        .get("inputs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !input
            .get("widget")
            .and_then(Value::as_bool)
            .unwrap_or(false)
        {
            continue;
        }
        let Some(name) = input.get("name").and_then(text) else {
            continue;
        };
        layout.push(name);
        let flag = |k: &str| input.get(k).and_then(Value::as_bool).unwrap_or(false);
        if flag("control_after_generate") {
            layout.push("<control_after_generate>".into());
        }
        if flag("image_upload") || flag("video_upload") || flag("audio_upload") {
            layout.push("<upload>".into());
        }
    }
    layout
}
