//! The target package a lowering is for: LoRA loaders are routed through
//! the adapters it declares (top-level `adapters`), and refused when it
//! has models of its own but no adapters (into a package without a
//! document, a LoRA is merged into the models it will get: `loras`).

use super::Refusal;
use super::build::Built;
use super::graph::Graph;
use super::parts::{contract, runtime};
use super::recognise::Plan;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Facts about the package the lowered document will live in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Target {
    /// Its top-level `adapters` block, when it declares one.
    pub adapters: Option<Value>,
    /// Artifact paths that replace the default layout's, by component name
    /// (the target's own components, then any explicit layout).
    pub artifacts: BTreeMap<String, String>,
    /// Its components' contract parameters, by component name.
    pub parameters: BTreeMap<String, Value>,
    /// Whether the package already has a document, so its models exist
    /// and a LoRA cannot be merged into them.
    pub existing: bool,
}

impl Target {
    /// Whether the graph's model patches (LoRAs, merges) are merged into
    /// the models the package gets, rather than routed through the
    /// target's adapters: the target declares none and has no document.
    pub(super) fn merges_patches(&self) -> bool {
        self.adapters.is_none() && !self.existing
    }

    /// Reads the package's current document (`inference_metadata.yaml` or
    /// `.json` in `dir`); a folder without one is a target with no adapters.
    pub fn from_package(dir: &std::path::Path) -> Result<Target, String> {
        let Ok(path) = wfstudio_schema::locate_document(dir) else {
            return Ok(Target::default());
        };
        let limits = wfstudio_schema::Limits::default();
        let text = wfstudio_schema::load::read_text(&path, &limits).map_err(|e| e.to_string())?;
        let value = wfstudio_schema::tree::parse_value(&text, &limits)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let artifacts = value
            .pointer("/pipeline/workflow/components")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(name, c)| {
                let artifact = c.pointer("/implementation/artifact")?.as_str()?;
                Some((name.clone(), artifact.to_string()))
            })
            .collect();
        let parameters = value
            .pointer("/pipeline/workflow/components")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(name, c)| {
                let parameters = c.pointer("/contract/parameters")?;
                Some((name.clone(), parameters.clone()))
            })
            .collect();
        Ok(Target {
            adapters: value.get("adapters").cloned(),
            artifacts,
            parameters,
            existing: true,
        })
    }

    /// Adds a layout override: a JSON object `{component: artifact path}`.
    pub fn with_layout(mut self, layout: &Value) -> Result<Target, String> {
        let map = layout
            .as_object()
            .ok_or("a layout is a JSON object of component name -> artifact path")?;
        for (name, path) in map {
            let path = path
                .as_str()
                .ok_or_else(|| format!("layout entry '{name}' is not a path string"))?;
            self.artifacts.insert(name.clone(), path.to_string());
        }
        Ok(self)
    }

    /// Points the document's components at the overridden artifacts.
    pub(super) fn apply_layout(&self, document: &mut Value) {
        let Some(components) = document
            .pointer_mut("/pipeline/workflow/components")
            .and_then(Value::as_object_mut)
        else {
            return;
        };
        for (name, component) in components {
            if let Some(path) = self.artifacts.get(name) {
                component["implementation"]["artifact"] = json!(path);
            }
        }
    }
}

/// How the graph's LoRAs map onto the target's adapters.
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterUse {
    /// The target's `adapters` block, carried into the document.
    pub block: Value,
    /// The LoRA loader nodes.
    pub nodes: Vec<String>,
    /// Per LoRA in order: adapter alias, its index and the graph's strength.
    pub selection: Vec<(String, i64, f64)>,
}

impl AdapterUse {
    /// The selection inputs the `adapters.selection` block names:
    /// (input name, contract, runtime role).
    pub(super) fn selection_inputs(&self) -> Vec<(String, Value, &'static str)> {
        let selection = &self.block["selection"];
        let max = selection["max_adapters"].as_i64().unwrap_or(1);
        let aligned = |dtype: &str, shape: Value| contract(dtype, shape, true);
        [
            (
                "segments",
                aligned("int64", json!(["batch", max])),
                "adapter_segments",
            ),
            (
                "adapter_counts",
                aligned("int64", json!(["batch"])),
                "adapter_counts",
            ),
            (
                "scales",
                aligned("float32", json!(["batch", max])),
                "adapter_scales",
            ),
            (
                "active",
                aligned("bool", json!(["batch"])),
                "adapter_active",
            ),
        ]
        .into_iter()
        .filter_map(|(field, c, role)| {
            selection[field]
                .as_str()
                .map(|name| (name.to_string(), c, role))
        })
        .collect()
    }
}

/// The file stem of a LoRA name (`loras/detail.safetensors` -> `detail`).
fn stem(name: &str) -> &str {
    let file = name.rsplit(['/', '\\']).next().unwrap_or(name);
    file.rsplit_once('.').map_or(file, |(stem, _)| stem)
}

/// Components of the lowered document that a LoRA target may name.
const TEXT_ENCODERS: &[&str] = &["text_encoder", "text_encoder_2"];

/// One adapter selection applies one scale to every target it patches, so
/// when the target patches a text encoder the LoRA must be on both
/// prompts' CLIP paths at the model's strength, and when it does not, the
/// LoRA must not be meant for CLIP.
fn clip_routing(
    g: &Graph<'_>,
    plan: &Plan,
    lora: &super::recognise::Lora,
    touches_text: bool,
) -> Result<(), Refusal> {
    let on = |c: &super::recognise::Conditioning| c.clip_loras.contains(&lora.node);
    let (both, either) = (
        on(&plan.positive) && on(&plan.negative),
        on(&plan.positive) || on(&plan.negative),
    );
    let clip = lora.strength_clip.unwrap_or(0.0);
    if touches_text && !both {
        return Err(g.refuse(
            &lora.node,
            Some("clip"),
            "is routed through adapters that also patch the text encoder, but it is not on both prompts' CLIP paths".into(),
            "feed both text encoders from this LoraLoader's CLIP output, or use a package whose adapters patch only the denoiser",
        ));
    }
    if touches_text && clip != lora.strength_model {
        return Err(g.refuse(
            &lora.node,
            Some("strength_clip"),
            format!("has strength_clip {clip} but strength_model {}; one adapter selection has one scale", lora.strength_model),
            "use the same strength for the model and CLIP",
        ));
    }
    if !touches_text && either && clip != 0.0 {
        return Err(g.refuse(
            &lora.node,
            Some("strength_clip"),
            format!("has strength_clip {clip}, but the target package's adapters patch only the denoiser, so it would be dropped"),
            "set strength_clip to 0 or use LoraLoaderModelOnly",
        ));
    }
    Ok(())
}

/// Maps each LoRA of `plan` onto an adapter of `target`.
pub(super) fn route_loras(
    g: &Graph<'_>,
    plan: &Plan,
    target: &Target,
    components: &[&str],
) -> Result<Option<AdapterUse>, Refusal> {
    let loras = plan.model.loras();
    let Some(first) = loras.first() else {
        return Ok(None);
    };
    let Some(block) = &target.adapters else {
        return Err(g.refuse(
            &first.node,
            Some("lora_name"),
            format!("loads LoRA '{}', but the target package declares no adapters", first.name),
            "lower into a package whose inference_metadata declares this LoRA under `adapters` (--package DIR), or remove the LoRA loader",
        ));
    };
    let artifacts = block["artifacts"].as_object();
    let max = block["selection"]["max_adapters"].as_i64().unwrap_or(0);
    if loras.len() as i64 > max {
        return Err(g.refuse(
            &loras[max.max(0) as usize].node,
            None,
            format!(
                "is LoRA number {} on the model path; the target package selects at most {max}",
                max + 1
            ),
            "remove LoRA loaders or raise adapters.selection.max_adapters",
        ));
    }
    let targets = block["target_manifest"]["targets"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for t in &targets {
        let component = t["component"].as_str().unwrap_or_default();
        if !components.contains(&component) {
            return Err(g.refuse(
                &first.node,
                None,
                format!("is routed through the target package's adapters, whose target '{}' patches component '{component}', which the lowered workflow does not have", t["id"].as_str().unwrap_or_default()),
                &format!("patch one of the lowered components ({})", components.join(", ")),
            ));
        }
    }
    let touches_text = targets
        .iter()
        .any(|t| TEXT_ENCODERS.contains(&t["component"].as_str().unwrap_or_default()));
    let mut selection = Vec::new();
    for lora in &loras {
        let wanted = stem(&lora.name);
        let found = artifacts
            .into_iter()
            .flatten()
            .find(|(alias, a)| alias.as_str() == wanted || a["identity"].as_str() == Some(wanted));
        let Some((alias, artifact)) = found else {
            let declared: Vec<&str> = artifacts
                .into_iter()
                .flatten()
                .map(|(a, _)| a.as_str())
                .collect();
            return Err(g.refuse(
                &lora.node,
                Some("lora_name"),
                format!(
                    "loads LoRA '{}', which the target package does not declare (it declares: {})",
                    lora.name,
                    declared.join(", ")
                ),
                "choose a LoRA the package declares, or add it to the package's adapters",
            ));
        };
        clip_routing(g, plan, lora, touches_text)?;
        let Some(index) = artifact["index"].as_i64() else {
            return Err(g.refuse(
                &lora.node,
                Some("lora_name"),
                format!(
                    "loads LoRA '{}', whose adapter '{alias}' in the target package has no index",
                    lora.name
                ),
                "give the adapter artifact its `index` in the target package",
            ));
        };
        selection.push((alias.clone(), index, lora.strength_model));
    }
    Ok(Some(AdapterUse {
        block: block.clone(),
        nodes: loras.iter().map(|l| l.node.clone()).collect(),
        selection,
    }))
}

/// Routes the graph's LoRAs through the target's adapters: the block, its
/// selection inputs (after the others), the capabilities it requires and
/// the LoRA loaders' provenance.
pub(super) fn add_adapters(built: &mut Built, adapters: &AdapterUse) {
    let workflow = &mut built.document["pipeline"]["workflow"];
    if let Some(capabilities) = workflow["manifest"]["capabilities"].as_array_mut() {
        capabilities.extend([
            json!("parameter_adapters"),
            json!("heterogeneous_adapter_batching"),
        ]);
    }
    for (name, c, role) in adapters.selection_inputs() {
        workflow["inputs"][name] = json!({"contract": c, "role": runtime(role), "source": {"kind": "request"}, "required": true});
    }
    // `adapters` goes before `pipeline`, as the schema lists them.
    if let Some(document) = built.document.as_object_mut()
        && let Some(pipeline) = document.remove("pipeline")
    {
        document.insert("adapters".into(), adapters.block.clone());
        document.insert("pipeline".into(), pipeline);
    }
    built
        .provenance
        .push(("adapters".into(), adapters.nodes.clone()));
}

/// The adapter selection a run must pass, when LoRAs are routed.
pub(super) fn adapter_notes(adapters: Option<&AdapterUse>) -> Vec<String> {
    adapters
        .map(|a| a.selection.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|(alias, index, scale)| {
            format!(
                "LoRA '{alias}' is adapter {index} at scale {scale}: pass it in the adapter selection inputs"
            )
        })
        .collect()
}
