//! Keeping sampler stages apart: every stage is built with the first
//! stage's names, and a later stage's own definitions (values, state cells,
//! inputs, policy components) are renamed with its [`StageNames`] before it
//! joins the document, as a compiler renames the locals of an inlined
//! function. Names the stage shares are left alone: model components, the
//! inputs it shares (literal constants, the prompts of the same encoder
//! nodes). A stage reads an earlier stage's latent through a placeholder
//! ([`earlier_latent`]), resolved here to that stage's final name.

use super::super::parts::{nested, nested_mut};
use super::names::{StageNames, earlier_latent};
use super::stage::StageParts;
use crate::comfyui::synth::policy_kind;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The latent extents a later stage's state cells name apart: a run binds
/// state cells' symbols once for the whole workflow, an upscaled stage's
/// latent is larger than the one before it, and a stage may sample another
/// model's latent (SD3 after a Lotus depth stage).
const STAGE_SYMBOLS: &[&str] = &[
    "channels",
    "latent_frames",
    "latent_height",
    "latent_width",
    "av_elements",
];

/// Symbols of a stage's own inputs whose extents are the input's alone
/// (a control video's), named apart in a later stage as its inputs are.
const INPUT_SYMBOLS: &[&str] = &[
    "control_video_frames",
    "control_video_height",
    "control_video_width",
];

/// Renames what `parts` defines, except the inputs of `shared`, and
/// resolves its placeholders for earlier stages' latents to `latents`.
pub(super) fn rename(
    parts: &mut StageParts,
    names: &StageNames,
    shared: &BTreeSet<String>,
    latents: &[String],
) {
    let mut map: BTreeMap<String, String> = latents
        .iter()
        .enumerate()
        .map(|(index, name)| (earlier_latent(index), name.clone()))
        .collect();
    for name in parts.inputs.keys().filter(|n| !shared.contains(*n)) {
        map.insert(name.clone(), names.value(name));
    }
    for name in parts.state.keys() {
        map.insert(name.clone(), names.value(name));
    }
    for (name, alias) in names.aliases() {
        map.entry(name.clone()).or_insert_with(|| alias.clone());
    }
    defined(&parts.step, names, &mut map);
    let components: BTreeMap<String, String> = parts
        .components
        .keys()
        .filter(|c| policy_kind(c).is_some())
        .map(|c| (c.clone(), names.word(c)))
        .collect();
    let renamer = Renamer {
        values: &map,
        components: &components,
    };
    parts.inputs = std::mem::take(&mut parts.inputs)
        .into_iter()
        .map(|(name, mut input)| {
            if !shared.contains(&name)
                && input.pointer("/source/kind") == Some(&Value::from("application"))
                && let Some(app) = input.pointer_mut("/source/name")
                && let Some(text) = app.as_str()
            {
                *app = Value::from(names.word(text));
            }
            if !shared.contains(&name)
                && let Some(shape) = input
                    .pointer_mut("/contract/shape")
                    .and_then(Value::as_array_mut)
            {
                for dim in shape.iter_mut() {
                    if let Some(symbol) = dim.as_str().filter(|s| INPUT_SYMBOLS.contains(s)) {
                        *dim = Value::from(names.word(symbol));
                    }
                }
            }
            (renamer.value(&name), input)
        })
        .collect();
    parts.components = rekeyed(std::mem::take(&mut parts.components), &components);
    parts.state = std::mem::take(&mut parts.state)
        .into_iter()
        .map(|(name, mut cell)| {
            if let Some(init) = cell.get_mut("initializer") {
                renamer.rewrite(init);
            }
            if let Some(shape) = cell
                .pointer_mut("/contract/shape")
                .and_then(Value::as_array_mut)
            {
                for dim in shape.iter_mut() {
                    if let Some(symbol) = dim.as_str().filter(|s| STAGE_SYMBOLS.contains(s)) {
                        *dim = Value::from(names.word(symbol));
                    }
                }
            }
            (renamer.value(&name), cell)
        })
        .collect();
    renamer.step(&mut parts.step);
    for prompt in &mut parts.prompts {
        prompt.input = renamer.value(&prompt.input);
    }
}

/// Adds every value `step` defines (invoke outputs, a loop's iteration
/// value, nested steps') to `map`.
fn defined(step: &Value, names: &StageNames, map: &mut BTreeMap<String, String>) {
    if let Some(outputs) = step.get("outputs").and_then(Value::as_object) {
        for value in outputs.values().filter_map(Value::as_str) {
            map.insert(value.to_string(), names.value(value));
        }
    }
    if let Some(value) = step.pointer("/iteration/value").and_then(Value::as_str) {
        map.insert(value.to_string(), names.value(value));
    }
    for inner in nested(step) {
        defined(inner, names, map);
    }
}

/// The components under their new names; a renamed policy's default
/// artifact (`policies/<name>.onnx`) follows its name.
fn rekeyed(map: Map<String, Value>, names: &BTreeMap<String, String>) -> Map<String, Value> {
    map.into_iter()
        .map(|(name, mut component)| match names.get(&name) {
            Some(renamed) => {
                if let Some(artifact) = component.pointer_mut("/implementation/artifact")
                    && artifact.as_str() == Some(&format!("policies/{name}.onnx"))
                {
                    *artifact = Value::from(format!("policies/{renamed}.onnx"));
                }
                (renamed.clone(), component)
            }
            None => (name, component),
        })
        .collect()
}

/// The renaming of one stage's values and policy components.
struct Renamer<'a> {
    values: &'a BTreeMap<String, String>,
    components: &'a BTreeMap<String, String>,
}

impl Renamer<'_> {
    fn value(&self, name: &str) -> String {
        self.values
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_string())
    }

    /// Renames a value reference held in `v` (a string).
    fn rewrite(&self, v: &mut Value) {
        if let Some(name) = v.as_str() {
            *v = Value::from(self.value(name));
        }
    }

    /// Renames the references of a step and the steps it nests.
    fn step(&self, step: &mut Value) {
        if let Some(component) = step.get_mut("component")
            && let Some(name) = component.as_str()
            && let Some(renamed) = self.components.get(name)
        {
            *component = Value::from(renamed.clone());
        }
        for ports in ["inputs", "outputs"] {
            for v in step
                .get_mut(ports)
                .and_then(Value::as_object_mut)
                .into_iter()
                .flat_map(|m| m.values_mut())
            {
                self.rewrite(v);
            }
        }
        for key in ["continue_when", "max_iterations", "value"] {
            if let Some(v) = step.get_mut(key) {
                self.rewrite(v);
            }
        }
        if let Some(v) = step.pointer_mut("/iteration/value") {
            self.rewrite(v);
        }
        for carry in step
            .get_mut("carried")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            for key in ["cell", "next", "initial"] {
                if let Some(v) = carry.get_mut(key) {
                    self.rewrite(v);
                }
            }
        }
        for inner in nested_mut(step) {
            self.step(inner);
        }
    }
}
