//! The JSON parts a lowered document is made of: tensor contracts, workflow
//! inputs, components of the default package layout, invoke steps, and a
//! step list that remembers which ComfyUI nodes each step came from.

use serde_json::{Map, Value, json};

/// Where the ComfyUI nodes went: document path -> node ids.
pub(super) type Provenance = Vec<(String, Vec<String>)>;

/// A tensor contract; `aligned` adds the request-aligned batch layout.
pub(super) fn contract(dtype: &str, shape: Value, aligned: bool) -> Value {
    let rank = shape.as_array().map_or(0, Vec::len);
    let mut c = json!({"dtype": dtype, "rank": rank, "shape": shape});
    if aligned {
        c["batch_layout"] = json!({"kind": "request_aligned", "axis": 0});
    }
    c
}

/// The axes of a stage's latent: a picture's, a video's (frames between
/// channels and height, as ComfyUI's video latents) or audio's (channels
/// and steps).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Axes {
    Image,
    Video,
    Audio,
    /// LTX-2's video and audio latents packed into one row per batch
    /// entry, as ComfyUI samples them (`recognise::av`).
    AudioVideo,
}

impl Axes {
    /// The latent's contract.
    pub(super) fn latent(self) -> Value {
        let shape = match self {
            Axes::Image => json!(["batch", "channels", "latent_height", "latent_width"]),
            Axes::Video => json!([
                "batch",
                "channels",
                "latent_frames",
                "latent_height",
                "latent_width"
            ]),
            Axes::Audio => json!(["batch", "channels", "latent_samples"]),
            Axes::AudioVideo => json!(["batch", 1, "av_elements"]),
        };
        contract("float32", shape, true)
    }
}

/// Decoded video frames `[batch, frames, 3, height, width]`.
pub(super) fn video() -> Value {
    contract(
        "float32",
        json!(["batch", "frames", 3, "height", "width"]),
        true,
    )
}

/// A batch of pictures as one video's frames `[1, frames, 3, height,
/// width]`.
pub(super) fn batch_video() -> Value {
    contract("float32", json!([1, "frames", 3, "height", "width"]), false)
}

/// A decoded waveform `[batch, channels, samples]` of `channels` channels.
pub(super) fn audio(channels: i64) -> Value {
    contract("float32", json!(["batch", channels, "samples"]), true)
}

pub(super) fn picture(channels: Value) -> Value {
    contract(
        "float32",
        json!(["batch", channels, "height", "width"]),
        true,
    )
}

pub(super) fn row(dtype: &str) -> Value {
    contract(dtype, json!(["batch"]), true)
}

pub(super) fn one(dtype: &str) -> Value {
    contract(dtype, json!([1]), false)
}

pub(super) fn tokens() -> Value {
    contract("int64", json!(["batch", "prompt_sequence"]), true)
}

pub(super) fn hidden() -> Value {
    contract(
        "float32",
        json!(["batch", "prompt_sequence", "hidden"]),
        true,
    )
}

pub(super) fn runtime(role: &str) -> Value {
    json!({"kind": "runtime", "version": "1.0", "role": role})
}

/// An input the caller may override by name; its default is the graph's value.
pub(super) fn parameter(c: Value, role: Value, name: &str, default: Value) -> Value {
    json!({"contract": c, "role": role, "source": {"kind": "application", "name": name}, "required": false, "default": default})
}

pub(super) fn opaque_literal(c: Value, default: Value) -> Value {
    json!({"contract": c, "role": {"kind": "opaque"}, "source": {"kind": "literal"}, "required": false, "default": default})
}

pub(super) fn media(c: Value) -> Value {
    json!({"contract": c, "role": runtime("media"), "source": {"kind": "request"}, "required": true})
}

pub(super) fn component(
    artifact: &str,
    inputs: Value,
    outputs: Value,
    contract: Option<Value>,
) -> Value {
    let mut c = json!({"implementation": {"kind": "onnx", "artifact": artifact}, "ports": {"inputs": inputs, "outputs": outputs}});
    if let Some(contract) = contract {
        c["contract"] = contract;
    }
    c
}

pub(super) fn policy(name: &str, inputs: Value, outputs: Value, contract: Option<Value>) -> Value {
    component(&format!("policies/{name}.onnx"), inputs, outputs, contract)
}

pub(super) fn invoke(component: &str, inputs: Value, outputs: Value) -> Value {
    json!({"kind": "invoke", "component": component, "inputs": inputs, "outputs": outputs})
}

/// A step list that remembers which ComfyUI nodes each step came from.
#[derive(Default)]
pub(super) struct Steps {
    /// The steps.
    pub steps: Vec<Value>,
    from: Vec<Vec<String>>,
}

impl Steps {
    /// Appends `step`, made from the nodes `from`.
    pub(super) fn push(&mut self, step: Value, from: &[&String]) {
        self.steps.push(step);
        self.from.push(from.iter().map(|s| s.to_string()).collect());
    }

    /// Each step's nodes, by document path under `prefix`.
    pub(super) fn provenance(&self, prefix: &str, out: &mut Provenance) {
        for (i, from) in self.from.iter().enumerate() {
            if !from.is_empty() {
                out.push((format!("{prefix}[{i}]"), from.clone()));
            }
        }
    }
}

/// SDXL's pooled text embedding, `[batch, pooled]`.
pub(super) fn pooled() -> Value {
    contract("float32", json!(["batch", "pooled"]), true)
}

/// SDXL's size conditioning as the denoiser takes it, `[batch, 6]`.
pub(super) fn sdxl_time_ids() -> Value {
    contract("float32", json!(["batch", 6]), true)
}

/// A fixed-length float vector contract.
pub(super) fn one_of(n: i64) -> Value {
    contract("float32", json!([n]), false)
}

/// The name of `key` in `names`: on first sight, `name(n)` for the n-th
/// key seen (counted from 1).
pub(super) fn numbered<K: Ord>(
    names: &mut std::collections::BTreeMap<K, String>,
    key: K,
    name: impl FnOnce(usize) -> String,
) -> String {
    let n = names.len() + 1;
    names.entry(key).or_insert_with(|| name(n)).clone()
}

/// The first of `base`, `base_2`, `base_3`, ... among `components` that is
/// free or already holds what `declare` makes of that name, declared
/// there: one component per distinct declaration.
pub(super) fn declared_once(
    components: &mut Map<String, Value>,
    base: &str,
    declare: impl Fn(&str) -> Value,
) -> String {
    let mut n = 1;
    loop {
        let name = match n {
            1 => base.to_string(),
            n => format!("{base}_{n}"),
        };
        let declared = declare(&name);
        match components.get(&name) {
            Some(existing) if *existing != declared => n += 1,
            Some(_) => return name,
            None => {
                components.insert(name.clone(), declared);
                return name;
            }
        }
    }
}

/// The steps `step` nests (a loop's setup, then its body).
pub(super) fn nested(step: &Value) -> impl Iterator<Item = &Value> {
    ["setup", "steps"]
        .into_iter()
        .filter_map(|list| step.get(list).and_then(Value::as_array))
        .flatten()
}

/// [`nested`], to change.
pub(super) fn nested_mut(step: &mut Value) -> impl Iterator<Item = &mut Value> {
    let Some(object) = step.as_object_mut() else {
        return Vec::new().into_iter();
    };
    let mut out = Vec::new();
    for (key, value) in object.iter_mut() {
        if let ("setup" | "steps", Some(list)) = (key.as_str(), value.as_array_mut()) {
            out.extend(list.iter_mut());
        }
    }
    out.into_iter()
}
