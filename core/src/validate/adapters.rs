//! Adapter rules (V-A*): the LoRA service, its selection inputs, targets
//! and artifacts, and the parameter-overlay components.

use super::values::{blank, positive_finite};
use super::{Ctx, workflow_path};
use crate::contracts::FLOAT_DTYPES;
use std::collections::{BTreeSet, HashMap, HashSet};
use wfstudio_schema::DocPath;
use wfstudio_schema::types::adapters::{Adapters, WeightFormat};
use wfstudio_schema::types::contract::{Dim, ScalarValue};
use wfstudio_schema::types::workflow::{InputRole, InputSource, WorkflowSpec};

pub(super) fn adapter_service(ctx: &mut Ctx<'_>, adapters: &Adapters, wf: Option<&WorkflowSpec>) {
    let at = DocPath::root().key("adapters");
    if adapters.application_capability != "onnx-genai.adapters@1" {
        ctx.report(
            "V-A1",
            at.key("application_capability"),
            format!(
                "adapters.application_capability must be onnx-genai.adapters@1, got '{}'",
                adapters.application_capability
            ),
        );
    }
    if adapters.cache.as_ref().and_then(|c| c.max_entries) == Some(0) {
        ctx.report(
            "V-A1",
            at.key("cache").key("max_entries"),
            "adapters.cache.max_entries must be greater than zero".to_string(),
        );
    }
    let max_adapters = adapters.selection.max_adapters;
    if max_adapters == 0 {
        ctx.report(
            "V-A1",
            at.key("selection").key("max_adapters"),
            "adapters.selection.max_adapters must be greater than zero".to_string(),
        );
    }
    if adapters.artifacts.as_ref().is_none_or(|a| a.is_empty()) {
        ctx.report(
            "V-A1",
            at.clone(),
            "adapters.artifacts must declare at least one adapter".to_string(),
        );
    }
    if adapters.target_manifest.targets.is_empty() {
        ctx.report(
            "V-A1",
            at.key("target_manifest").key("targets"),
            "adapters.target_manifest.targets must not be empty".to_string(),
        );
    }
    selection(ctx, adapters, wf, &at);
    targets(ctx, adapters, wf, &at);
    artifacts(ctx, adapters, &at);
}

fn selection(ctx: &mut Ctx<'_>, adapters: &Adapters, wf: Option<&WorkflowSpec>, at: &DocPath) {
    let sel = &adapters.selection;
    let max = sel.max_adapters;
    let fields: [(&str, Option<&String>, &str, &str, bool); 4] = [
        (
            "segments",
            Some(&sel.segments),
            "int64",
            "adapter_segments",
            true,
        ),
        (
            "adapter_counts",
            Some(&sel.adapter_counts),
            "int64",
            "adapter_counts",
            false,
        ),
        (
            "scales",
            Some(&sel.scales),
            "float32",
            "adapter_scales",
            true,
        ),
        (
            "active",
            sel.active.as_ref(),
            "bool",
            "adapter_active",
            false,
        ),
    ];
    for (field, name, dtype, role, wide) in fields {
        let Some(name) = name else { continue };
        let f = at.key("selection").key(field);
        let Some(wf) = wf else {
            if blank(name) {
                ctx.report(
                    "V-A2",
                    f,
                    format!("adapters.selection.{field} must not be blank"),
                );
            }
            continue;
        };
        let shape = if wide {
            format!("[batch,{max}]")
        } else {
            "[batch]".to_string()
        };
        let Some(input) = wf.inputs.as_ref().and_then(|i| i.get(name)) else {
            ctx.report(
                "V-A2",
                f,
                format!(
                    "adapters.selection.{field} '{name}' references an undeclared workflow input"
                ),
            );
            continue;
        };
        let c = &input.contract;
        let role_ok = matches!(&input.role, InputRole::Runtime(r)
            if r.version == "1.0" && serde_json::to_value(r.role).ok().and_then(|v| v.as_str().map(str::to_string)).as_deref() == Some(role));
        let source_ok = matches!(
            input.source,
            InputSource::Request | InputSource::Application(_)
        );
        let layout_ok = c.layout().request_axis() == Some(0)
            && matches!(
                c.layout(),
                wfstudio_schema::types::contract::BatchLayout::RequestAligned(_)
            );
        let shape_ok = c.shape.as_ref().is_some_and(|s| {
            let batch = matches!(s.first(), Some(Dim::Symbol(b)) if b == "batch");
            if wide {
                s.len() == 2 && batch && s[1] == Dim::Fixed(max)
            } else {
                s.len() == 1 && batch
            }
        });
        if !(input.is_required()
            && source_ok
            && layout_ok
            && role_ok
            && shape_ok
            && c.dtype == dtype)
        {
            ctx.report(
                "V-A2",
                f,
                format!(
                    "adapters.selection.{field} '{name}' must reference a required request/application-sourced {dtype}{shape} workflow input, request_aligned on axis 0, with runtime role {role} version '1.0'"
                ),
            );
        }
    }
}

fn targets(ctx: &mut Ctx<'_>, adapters: &Adapters, wf: Option<&WorkflowSpec>, at: &DocPath) {
    let mut ids = HashSet::new();
    let mut slots = HashSet::new();
    for (i, t) in adapters.target_manifest.targets.iter().enumerate() {
        let p = at.key("target_manifest").key("targets").index(i);
        for (field, value) in [
            ("id", &t.id),
            ("component", &t.component),
            ("initializer", &t.initializer),
            ("node_name", &t.node_name),
            ("output_name", &t.output_name),
        ] {
            if blank(value) {
                ctx.report(
                    "V-A3",
                    p.key(field),
                    format!("LoRA target {field} must not be blank"),
                );
            }
        }
        if !ids.insert(t.id.as_str()) {
            ctx.report(
                "V-A3",
                p.key("id"),
                format!("LoRA target id '{}' is declared twice", t.id),
            );
        }
        let slice = t
            .output_slice
            .as_ref()
            .map(|s| (s.role.clone(), s.offset, s.width));
        if !slots.insert((t.component.clone(), t.initializer.clone(), slice)) {
            ctx.report(
                "V-A3",
                p.clone(),
                format!(
                    "LoRA target '{}' repeats component/initializer/slice of another target",
                    t.id
                ),
            );
        }
        if t.input_features == 0 || t.output_features == 0 {
            ctx.report(
                "V-A3",
                p.clone(),
                format!("LoRA target '{}' features must be greater than zero", t.id),
            );
        }
        if !FLOAT_DTYPES.contains(&t.activation_dtype.as_str()) {
            ctx.report(
                "V-A3",
                p.key("activation_dtype"),
                format!(
                    "LoRA target '{}' activation_dtype must be a float dtype",
                    t.id
                ),
            );
        }
        if t.rank == Some(0) {
            ctx.report(
                "V-A3",
                p.key("rank"),
                format!("LoRA target '{}' rank must be greater than zero", t.id),
            );
        }
        if t.alpha.as_ref().is_some_and(|a| !positive_finite(a)) {
            ctx.report(
                "V-A3",
                p.key("alpha"),
                format!(
                    "LoRA target '{}' alpha must be finite and greater than zero",
                    t.id
                ),
            );
        }
        if let Some(s) = &t.output_slice
            && (blank(&s.role) || s.width == 0 || s.offset + s.width > t.output_features)
        {
            ctx.report(
                "V-A3",
                p.key("output_slice"),
                format!("LoRA target '{}' output_slice needs a role, a width > 0 and a range within output_features", t.id),
            );
        }
        if let Some(g) = &t.graph_inputs {
            let names: Vec<&str> = [Some(&g.a), Some(&g.b), g.scale.as_ref()]
                .into_iter()
                .flatten()
                .map(String::as_str)
                .collect();
            let distinct: HashSet<&str> = names.iter().copied().collect();
            if names.iter().any(|n| blank(n)) || distinct.len() != names.len() {
                ctx.report(
                    "V-A3",
                    p.key("graph_inputs"),
                    format!(
                        "LoRA target '{}' graph_inputs must be non-blank and distinct",
                        t.id
                    ),
                );
            }
        }
        let declared = match wf {
            Some(wf) => wf.components.contains_key(&t.component),
            None => t.component == "model",
        };
        if !declared {
            ctx.report(
                "V-A3",
                p.key("component"),
                format!(
                    "LoRA target '{}' names undeclared component '{}'",
                    t.id, t.component
                ),
            );
        }
    }
}

fn loader_id(format: WeightFormat) -> &'static str {
    match format {
        WeightFormat::Json => "onnx-genai.adapters.json@1",
        WeightFormat::OrtGenai => "onnxruntime.lora-adapter@1",
        WeightFormat::HfPeft => "onnx-genai.adapters.hf-peft@1",
        WeightFormat::Safetensors => "onnx-genai.adapters.safetensors@1",
    }
}

fn inside_alias_folder(location: &str, alias: &str) -> bool {
    let prefix = format!("adapters/{alias}/");
    location.starts_with(&prefix)
        && location.len() > prefix.len()
        && !location.split('/').any(|part| part == "..")
}

fn artifacts(ctx: &mut Ctx<'_>, adapters: &Adapters, at: &DocPath) {
    use wfstudio_schema::types::adapters::ScaleEncoding;
    let targets: HashMap<&str, &wfstudio_schema::types::adapters::LoraTarget> = adapters
        .target_manifest
        .targets
        .iter()
        .map(|t| (t.id.as_str(), t))
        .collect();
    let mut indexes = BTreeSet::new();
    let mut identities = HashSet::new();
    let all = adapters.artifacts.iter().flatten();
    let count = all.clone().count();
    for (alias, a) in all {
        let p = at.key("artifacts").key(alias.as_str());
        let owner = format!("adapter '{alias}'");
        if blank(&a.identity) || blank(&a.version) {
            ctx.report(
                "V-A4",
                p.clone(),
                format!("{owner} identity and version must not be blank"),
            );
        }
        if let Some(prov) = &a.provenance
            && (blank(&prov.producer)
                || prov.source.as_deref().is_some_and(blank)
                || prov.revision.as_deref().is_some_and(blank))
        {
            ctx.report(
                "V-A4",
                p.key("provenance"),
                format!("{owner} provenance fields must not be blank"),
            );
        }
        if !indexes.insert(a.index) {
            ctx.report(
                "V-A4",
                p.key("index"),
                format!("{owner} index {} is used by another adapter", a.index),
            );
        }
        if !identities.insert(format!("{}@{}", a.identity, a.version)) {
            ctx.report(
                "V-A4",
                p.key("identity"),
                format!(
                    "{owner} identity {}@{} is declared twice",
                    a.identity, a.version
                ),
            );
        }
        if a.rank == 0 {
            ctx.report(
                "V-A4",
                p.key("rank"),
                format!("{owner} rank must be greater than zero"),
            );
        }
        if !positive_finite(&a.alpha) {
            ctx.report(
                "V-A4",
                p.key("alpha"),
                format!("{owner} alpha must be finite and greater than zero"),
            );
        }
        if !FLOAT_DTYPES.contains(&a.dtype.as_str()) {
            ctx.report(
                "V-A4",
                p.key("dtype"),
                format!("{owner} dtype must be a float dtype"),
            );
        }
        let weights = a.weights.as_deref().unwrap_or_default();
        if weights.is_empty() {
            ctx.report(
                "V-A4",
                p.clone(),
                format!("{owner} must declare at least one weights file"),
            );
        }
        let mut formats = HashSet::new();
        for (i, w) in weights.iter().enumerate() {
            let wp = p.key("weights").index(i);
            let format = w.format.unwrap_or(WeightFormat::Json);
            if !formats.insert(format) {
                ctx.report(
                    "V-A4",
                    wp.key("format"),
                    format!("{owner} declares two weights of one format"),
                );
            }
            if !inside_alias_folder(&w.location, alias) {
                ctx.report(
                    "V-A4",
                    wp.key("location"),
                    format!(
                        "{owner} weights location '{}' must lie under adapters/{alias}/",
                        w.location
                    ),
                );
            }
            if w.loader_capability != loader_id(format) {
                ctx.report(
                    "V-A4",
                    wp.key("loader_capability"),
                    format!(
                        "{owner} loader_capability must be {} for its format",
                        loader_id(format)
                    ),
                );
            }
            match format {
                WeightFormat::HfPeft => {
                    if w.scale_encoding != ScaleEncoding::AlphaOverRank {
                        ctx.report(
                            "V-A4",
                            wp.key("scale_encoding"),
                            format!("{owner} hf_peft weights use scale_encoding alpha_over_rank"),
                        );
                    }
                    match &w.config_location {
                        None => ctx.report(
                            "V-A4",
                            wp.clone(),
                            format!("{owner} hf_peft weights need a config_location"),
                        ),
                        Some(c) if !inside_alias_folder(c, alias) => ctx.report(
                            "V-A4",
                            wp.key("config_location"),
                            format!(
                                "{owner} config_location '{c}' must lie under adapters/{alias}/"
                            ),
                        ),
                        Some(_) => {}
                    }
                }
                other => {
                    if other == WeightFormat::OrtGenai && w.scale_encoding != ScaleEncoding::Baked {
                        ctx.report(
                            "V-A4",
                            wp.key("scale_encoding"),
                            format!("{owner} ort_genai weights use scale_encoding baked"),
                        );
                    }
                    if w.config_location.is_some() {
                        ctx.report(
                            "V-A4",
                            wp.key("config_location"),
                            format!("{owner} only hf_peft weights take a config_location"),
                        );
                    }
                }
            }
        }
        let bindings = a.bindings.as_deref().unwrap_or_default();
        if bindings.is_empty() {
            ctx.report(
                "V-A4",
                p.clone(),
                format!("{owner} must declare at least one binding"),
            );
        }
        let ort = weights
            .iter()
            .any(|w| w.format == Some(WeightFormat::OrtGenai));
        let (mut keys, mut bound) = (HashSet::new(), HashSet::new());
        for (i, b) in bindings.iter().enumerate() {
            let bp = p.key("bindings").index(i);
            if !keys.insert(b.weight_key.as_str()) || !bound.insert(b.target.as_str()) {
                ctx.report(
                    "V-A4",
                    bp.clone(),
                    format!("{owner} bindings repeat a weight_key or target"),
                );
            }
            let Some(target) = targets.get(b.target.as_str()) else {
                ctx.report(
                    "V-A4",
                    bp.key("target"),
                    format!("{owner} binds unknown LoRA target '{}'", b.target),
                );
                continue;
            };
            if ort && target.graph_inputs.is_none() {
                ctx.report(
                    "V-A4",
                    bp.key("target"),
                    format!(
                        "{owner} has ort_genai weights but target '{}' declares no graph_inputs",
                        b.target
                    ),
                );
            }
            let rank = b.rank.unwrap_or(a.rank);
            let alpha = b.alpha.as_ref().unwrap_or(&a.alpha).as_f64();
            let slice = target.output_slice.as_ref();
            let policy_rank = slice.and_then(|s| s.rank).or(target.rank);
            let policy_alpha = slice
                .and_then(|s| s.alpha.as_ref())
                .or(target.alpha.as_ref())
                .and_then(|a| a.as_f64());
            if policy_rank.is_some_and(|r| r != rank)
                || policy_alpha.is_some_and(|p| Some(p) != alpha)
            {
                ctx.report(
                    "V-A4",
                    bp.clone(),
                    format!("{owner} effective rank/alpha for target '{}' differ from the target's policy", b.target),
                );
            }
        }
    }
    let contiguous: BTreeSet<u64> = (0..count as u64).collect();
    if !indexes.is_empty() && indexes != contiguous {
        ctx.report(
            "V-A4",
            at.key("artifacts"),
            "adapter indexes must be contiguous from 0".to_string(),
        );
    }
}

pub(super) fn overlay_components(
    ctx: &mut Ctx<'_>,
    adapters: Option<&Adapters>,
    wf: &WorkflowSpec,
) {
    for (name, component) in &wf.components {
        let Some(contract) = component
            .contract
            .as_ref()
            .filter(|c| c.id == "onnx-genai.parameter-overlay")
        else {
            continue;
        };
        let p = workflow_path()
            .key("components")
            .key(name.as_str())
            .key("contract")
            .key("parameters");
        let text = |key: &str| {
            contract
                .parameters
                .as_ref()
                .and_then(|m| m.get(key))
                .and_then(|v| match v {
                    ScalarValue::Str(s) if !blank(s) => Some(s.as_str()),
                    _ => None,
                })
        };
        let (Some(target_component), Some(parameter)) = (text("component"), text("parameter"))
        else {
            ctx.report("V-A5", p, format!("overlay component '{name}' needs non-blank string parameters component and parameter"));
            continue;
        };
        let known = adapters.is_some_and(|a| {
            a.target_manifest
                .targets
                .iter()
                .any(|t| t.component == target_component && t.initializer == parameter)
        });
        if !known {
            ctx.report(
                "V-A5",
                p,
                format!("overlay component '{name}' targets {target_component}/{parameter}, which no LoRA target declares"),
            );
        }
    }
}
