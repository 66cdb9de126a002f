//! Document-level rules outside the workflow walk: adapters (V-A*),
//! preprocessing (V-P*), generation overrides (V-O1), profiles (V-R*) and
//! speculative decoding (V-S*).

use super::walk::{for_each_step, inferred_ports};
use super::{Ctx, workflow_path};
use crate::contracts::{FLOAT_DTYPES, normalize_dtype};
use std::collections::{BTreeSet, HashMap, HashSet};
use wfstudio_schema::types::adapters::{Adapters, WeightFormat};
use wfstudio_schema::types::contract::{Dim, ScalarValue, TensorContract};
use wfstudio_schema::types::facts::{
    Decoding, PreprocessingProgram, ProposalExecution, Speculative,
};
use wfstudio_schema::types::state::PortAccess;
use wfstudio_schema::types::steps::{LoopStep, Step};
use wfstudio_schema::types::workflow::{
    Implementation, InputRole, InputSource, SpeculationSafety, WorkflowSpec,
};
use wfstudio_schema::{DocPath, Document};

pub(super) fn check(ctx: &mut Ctx<'_>, document: &Document, wf: Option<&WorkflowSpec>) {
    if let Some(adapters) = &document.adapters {
        adapter_service(ctx, adapters, wf);
    }
    if let Some(wf) = wf {
        overlay_components(ctx, document.adapters.as_ref(), wf);
        preprocessing(ctx, document, wf);
    }
    overrides(ctx, document, wf);
    profiles(ctx, document, wf);
    if let Some(speculative) = &document.speculative {
        speculative_rules(ctx, speculative, wf);
    }
}

fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

fn positive_finite(n: &serde_json::Number) -> bool {
    n.as_f64().is_some_and(|f| f.is_finite() && f > 0.0)
}

fn adapter_service(ctx: &mut Ctx<'_>, adapters: &Adapters, wf: Option<&WorkflowSpec>) {
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

fn overlay_components(ctx: &mut Ctx<'_>, adapters: Option<&Adapters>, wf: &WorkflowSpec) {
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

fn preprocessing(ctx: &mut Ctx<'_>, document: &Document, wf: &WorkflowSpec) {
    let pre = document.preprocessing.as_ref();
    let programs = [
        (
            "image",
            "onnx-genai.image-preprocess",
            pre.and_then(|p| p.image.as_ref()),
        ),
        (
            "audio",
            "onnx-genai.audio-preprocess",
            pre.and_then(|p| p.audio.as_ref()),
        ),
    ];
    for (modality, abi, program) in programs {
        let adapters: Vec<&String> = wf
            .components
            .iter()
            .filter(|(_, c)| matches!(&c.implementation, Implementation::Adapter(a) if a.abi == abi && a.version == "1"))
            .map(|(n, _)| n)
            .collect();
        let at = DocPath::root().key("preprocessing").key(modality);
        let Some(program) = program else {
            for name in adapters {
                ctx.report(
                    "V-P1",
                    workflow_path().key("components").key(name.as_str()),
                    format!("workflow adapter components using {abi}@1 require preprocessing.{modality} metadata"),
                );
            }
            continue;
        };
        let [adapter] = adapters[..] else {
            ctx.report(
                "V-P2",
                at,
                format!("preprocessing.{modality} requires exactly one workflow adapter component using {abi}@1, found {}", adapters.len()),
            );
            continue;
        };
        preprocessing_adapter(ctx, wf, modality, adapter, program, &at);
    }
}

fn preprocessing_adapter(
    ctx: &mut Ctx<'_>,
    wf: &WorkflowSpec,
    modality: &str,
    adapter: &str,
    program: &PreprocessingProgram,
    at: &DocPath,
) {
    let component = &wf.components[adapter];
    let cp = workflow_path().key("components").key(adapter);
    let ports = component.ports.as_ref();
    let encoded = ports
        .and_then(|p| p.inputs.as_ref())
        .and_then(|m| m.get("encoded"));
    if !encoded.is_some_and(|c| c.dtype == "uint8" && c.rank == 1) {
        ctx.report(
            "V-P3",
            cp.key("ports").key("inputs"),
            format!("preprocessing adapter '{adapter}' must declare input port `encoded` with dtype uint8 and rank 1"),
        );
    }
    let mut invokes = Vec::new();
    for_each_step(&wf.steps, &workflow_path().key("steps"), &mut |step, _| {
        if let Step::Invoke(i) = step
            && i.component == adapter
        {
            invokes.push(i);
        }
    });
    if invokes.len() != 1 {
        ctx.report(
            "V-P4",
            cp.clone(),
            format!(
                "preprocessing adapter '{adapter}' must be invoked exactly once, found {}",
                invokes.len()
            ),
        );
    }
    let produced: HashMap<&str, &str> = invokes
        .iter()
        .flat_map(|i| i.outputs.iter().flatten())
        .map(|(port, value)| (value.as_str(), port.as_str()))
        .collect();
    let out_ports = ports.and_then(|p| p.outputs.as_ref());
    for (i, output) in program.outputs.iter().flatten().enumerate() {
        let p = at.key("outputs").index(i);
        let name = output.name.as_deref().unwrap_or_default();
        let problem = (|| {
            if output.optional == Some(true) {
                return Some("must not be optional".to_string());
            }
            let Some(contract) = &output.contract else {
                return Some("must declare a contract".to_string());
            };
            if output.dtype.as_deref() != Some(contract.dtype.as_str()) {
                return Some("dtype must equal contract.dtype".to_string());
            }
            let Some(port) = produced.get(name) else {
                return Some(format!(
                    "'{name}' is not produced by the {modality} preprocessing invoke"
                ));
            };
            let Some(port_contract) = out_ports.and_then(|m| m.get(*port)) else {
                return Some(format!(
                    "port '{port}' is not declared by adapter '{adapter}'"
                ));
            };
            (!exactly_equal(contract, port_contract))
                .then(|| format!("contract must equal adapter port '{port}' exactly (dtype, rank, shape, batch_layout)"))
        })();
        if let Some(problem) = problem {
            ctx.report(
                "V-P5",
                p,
                format!("preprocessing.{modality} output '{name}' {problem}"),
            );
        }
    }
}

fn exactly_equal(a: &TensorContract, b: &TensorContract) -> bool {
    normalize_dtype(&a.dtype) == normalize_dtype(&b.dtype)
        && a.rank == b.rank
        && a.shape == b.shape
        && a.layout() == b.layout()
}

fn overrides(ctx: &mut Ctx<'_>, document: &Document, wf: Option<&WorkflowSpec>) {
    let Some(overrides) = document
        .generation
        .as_ref()
        .and_then(|g| g.overrides.as_ref())
    else {
        return;
    };
    for (field, o) in overrides {
        let p = DocPath::root()
            .key("generation")
            .key("overrides")
            .key(field.as_str());
        if blank(field) {
            ctx.report(
                "V-O1",
                p.clone(),
                "generation override names must not be blank".to_string(),
            );
        }
        let Some(wf) = wf else {
            ctx.report("V-O1", p.key("input"), format!("generation override '{field}' requires pipeline.workflow to declare the request-sourced input"));
            continue;
        };
        match wf.inputs.as_ref().and_then(|i| i.get(&o.input)) {
            None => ctx.report("V-O1", p.key("input"), format!("generation override '{field}' references undeclared workflow input '{}'", o.input)),
            Some(input) if !(matches!(input.source, InputSource::Request) && matches!(input.role, InputRole::Runtime(_))) => ctx.report(
                "V-O1",
                p.key("input"),
                format!("generation override '{field}' input '{}' must be a request-sourced workflow input with a versioned runtime role", o.input),
            ),
            Some(_) => {}
        }
        if let Some(c) = &o.constraint
            && let (Some(min), Some(max)) = (
                c.minimum.as_ref().and_then(|n| n.as_f64()),
                c.maximum.as_ref().and_then(|n| n.as_f64()),
            )
            && min > max
        {
            ctx.report(
                "V-O1",
                p.key("constraint"),
                format!("generation override '{field}' minimum {min} exceeds maximum {max}"),
            );
        }
    }
}

const KNOWN_PROFILE_KINDS: &[&str] = &[
    "generation",
    "embedding",
    "reranking",
    "classification",
    "reward",
    "transcription",
];

fn profiles(ctx: &mut Ctx<'_>, document: &Document, wf: Option<&WorkflowSpec>) {
    for (name, profile) in document.profiles.iter().flatten() {
        let p = DocPath::root().key("profiles").key(name.as_str());
        if !KNOWN_PROFILE_KINDS.contains(&profile.kind.as_str()) {
            if !profile.is_ignorable() {
                ctx.report(
                    "V-R1",
                    p.key("kind"),
                    format!("profile '{name}' declares required kind '{}', which this reader cannot execute", profile.kind),
                );
            }
            continue;
        }
        for (role, output) in profile.outputs.iter().flatten() {
            let declared = wf
                .and_then(|w| w.outputs.as_ref())
                .is_some_and(|o| o.contains_key(output));
            if !declared {
                ctx.report(
                    "V-R2",
                    p.key("outputs").key(role.as_str()),
                    format!(
                        "profile '{name}' role '{role}' names undeclared workflow output '{output}'"
                    ),
                );
            }
        }
        match &profile.decoding {
            None if profile.kind == "transcription" => {
                ctx.report(
                    "V-R3",
                    p.clone(),
                    format!("transcription profile '{name}' requires decoding"),
                );
            }
            None => {}
            Some(decoding) => decoding_rules(ctx, name, profile, decoding, &p.key("decoding")),
        }
        if profile.batch_invariance.as_deref() == Some("padding_sensitive")
            && profile
                .decoding
                .as_ref()
                .is_none_or(|d| d.lengths.is_none())
        {
            ctx.report(
                "V-R3",
                p.key("batch_invariance"),
                format!("profile '{name}' is padding_sensitive and must declare decoding.lengths"),
            );
        }
    }
}

fn decoding_rules(
    ctx: &mut Ctx<'_>,
    name: &str,
    profile: &wfstudio_schema::types::facts::Profile,
    d: &Decoding,
    p: &DocPath,
) {
    if d.kind == "ctc" && d.blank_id.is_none() {
        ctx.report(
            "V-R3",
            p.clone(),
            format!("profile '{name}' ctc decoding requires blank_id"),
        );
    }
    if d.time_axis == d.class_axis {
        ctx.report(
            "V-R3",
            p.key("class_axis"),
            format!("profile '{name}' decoding time_axis and class_axis must differ"),
        );
    }
    if let Some(lengths) = &d.lengths
        && !profile
            .outputs
            .as_ref()
            .is_some_and(|o| o.contains_key(lengths))
    {
        ctx.report("V-R3", p.key("lengths"), format!("profile '{name}' decoding lengths '{lengths}' is not a key of the profile's outputs"));
    }
    let Some(v) = &d.vocabulary else {
        return;
    };
    let vp = p.key("vocabulary");
    let tokens = v.tokens.as_deref().unwrap_or_default();
    if v.source == "inline" && tokens.is_empty() {
        ctx.report(
            "V-R3",
            vp.clone(),
            format!("profile '{name}' inline vocabulary needs tokens"),
        );
    }
    if let Some(size) = v.size
        && !tokens.is_empty()
        && size != tokens.len() as u64
    {
        ctx.report(
            "V-R3",
            vp.key("size"),
            format!(
                "profile '{name}' vocabulary size {size} differs from its {} tokens",
                tokens.len()
            ),
        );
    }
    if !tokens.is_empty() {
        let listed = |t: &String| tokens.contains(t);
        if v.word_delimiter.as_ref().is_some_and(|w| !listed(w))
            || v.ignored_tokens.iter().flatten().any(|t| !listed(t))
        {
            ctx.report(
                "V-R3",
                vp.clone(),
                format!("profile '{name}' word_delimiter and ignored_tokens must occur in tokens"),
            );
        }
        if d.blank_id.is_some_and(|b| b as usize >= tokens.len()) {
            ctx.report(
                "V-R3",
                p.key("blank_id"),
                format!("profile '{name}' blank_id is outside the vocabulary"),
            );
        }
    }
}

fn speculative_rules(ctx: &mut Ctx<'_>, s: &Speculative, wf: Option<&WorkflowSpec>) {
    let at = DocPath::root().key("speculative");
    let Some(wf) = wf else {
        ctx.report(
            "V-S1",
            at,
            "speculative decoding requires pipeline.workflow".to_string(),
        );
        return;
    };
    for (field, name) in [("proposer", &s.proposer), ("target", &s.target)] {
        if !wf.components.contains_key(name) {
            ctx.report(
                "V-S1",
                at.key(field),
                format!("speculative {field} '{name}' is not a declared component"),
            );
        }
    }
    if let Some(ProposalExecution::Chained(chained)) = &s.proposal_execution {
        chained_rules(ctx, s, chained, wf, &at.key("proposal_execution"));
    }
    rollback_rules(ctx, s, wf, &at);
    region_rules(ctx, s, wf);
}

fn port_of(wf: &WorkflowSpec, component: &str, output: bool, port: &str) -> bool {
    wf.components.get(component).is_some_and(|c| {
        inferred_ports(c)
            || c.ports
                .as_ref()
                .and_then(|p| {
                    if output {
                        p.outputs.as_ref()
                    } else {
                        p.inputs.as_ref()
                    }
                })
                .is_some_and(|m| m.contains_key(port))
    })
}

fn chained_rules(
    ctx: &mut Ctx<'_>,
    s: &Speculative,
    c: &wfstudio_schema::types::facts::ChainedProposal,
    wf: &WorkflowSpec,
    p: &DocPath,
) {
    let proposer = s.proposer.as_str();
    if !port_of(wf, proposer, false, &c.token_embedding_input) {
        ctx.report(
            "V-S2",
            p.key("token_embedding_input"),
            format!(
                "token_embedding_input '{}' is not an input port of proposer '{proposer}'",
                c.token_embedding_input
            ),
        );
    }
    if !port_of(wf, proposer, true, &c.logits_output) {
        ctx.report(
            "V-S2",
            p.key("logits_output"),
            format!(
                "logits_output '{}' is not an output port of proposer '{proposer}'",
                c.logits_output
            ),
        );
    }
    let recurrent = c.recurrent.as_deref().unwrap_or_default();
    if recurrent.is_empty() && c.folded_carry_output.is_none() {
        ctx.report(
            "V-S2",
            p.clone(),
            "a chained proposal needs a recurrent binding or a folded_carry_output".to_string(),
        );
    }
    if let Some(folded) = &c.folded_carry_output {
        if !port_of(wf, proposer, true, folded) {
            ctx.report(
                "V-S2",
                p.key("folded_carry_output"),
                format!(
                    "folded_carry_output '{folded}' is not an output port of proposer '{proposer}'"
                ),
            );
        }
        let hidden = s
            .port_bindings
            .as_ref()
            .and_then(|b| b.get("target_hidden_context"));
        if hidden != Some(&c.token_embedding_input)
            || !port_of(wf, proposer, false, &c.token_embedding_input)
        {
            ctx.report(
                "V-S2",
                DocPath::root().key("speculative").key("port_bindings"),
                "a folded carry requires port_bindings.target_hidden_context equal to token_embedding_input".to_string(),
            );
        }
        match &c.folded_carry_seed {
            Some(seed)
                if seed.component == s.target && port_of(wf, &s.target, true, &seed.output) => {}
            _ => ctx.report(
                "V-S2",
                p.key("folded_carry_seed"),
                "a folded carry needs a folded_carry_seed naming an output of the target"
                    .to_string(),
            ),
        }
        let embedding_ok = c.token_embedding.as_ref().is_some_and(|t| {
            t.component == s.target
                && !blank(&t.table)
                && wf.components.get(&t.component).is_some_and(|comp| {
                    matches!(&comp.implementation, Implementation::Onnx(o) if !blank(&o.artifact))
                })
        });
        if !embedding_ok {
            ctx.report(
                "V-S2",
                p.key("token_embedding"),
                "a folded carry needs a token_embedding table of the ONNX target".to_string(),
            );
        }
    }
    let rollback: HashSet<&str> = s
        .rollback_state
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let groups = wf
        .serving
        .as_ref()
        .and_then(|sv| sv.state_service.groups.as_ref());
    let mut seen = HashSet::new();
    for (i, r) in recurrent.iter().enumerate() {
        let rp = p.key("recurrent").index(i);
        let exists = wf
            .state
            .as_ref()
            .is_some_and(|st| st.contains_key(&r.state));
        if !seen.insert(r.state.as_str()) || !exists || !rollback.contains(r.state.as_str()) {
            ctx.report(
                "V-S2",
                rp.key("state"),
                format!(
                    "recurrent state '{}' must be a unique declared cell listed in rollback_state",
                    r.state
                ),
            );
            continue;
        }
        if !port_of(wf, proposer, false, &r.input) || !port_of(wf, proposer, true, &r.output) {
            ctx.report(
                "V-S2",
                rp.clone(),
                format!(
                    "recurrent binding of '{}' names ports proposer '{proposer}' does not declare",
                    r.state
                ),
            );
            continue;
        }
        let resolves = groups.into_iter().flatten().any(|(_, g)| {
            g.ports
                .as_ref()
                .and_then(|ports| ports.get(proposer))
                .and_then(|aliases| aliases.get(&r.state))
                .is_some_and(|a| {
                    a.access != Some(PortAccess::ReadOnly)
                        && a.input == r.input
                        && a.output.as_deref() == Some(r.output.as_str())
                })
        });
        if !resolves {
            ctx.report(
                "V-S2",
                rp,
                format!("recurrent binding of '{}' does not resolve to a read_write alias of proposer '{proposer}' with the same ports", r.state),
            );
        }
    }
}

fn rollback_rules(ctx: &mut Ctx<'_>, s: &Speculative, wf: &WorkflowSpec, at: &DocPath) {
    let groups = wf
        .serving
        .as_ref()
        .and_then(|sv| sv.state_service.groups.as_ref());
    let mut pending: Vec<String> = Vec::new();
    for (i, cell) in s.rollback_state.iter().flatten().enumerate() {
        match wf.state.as_ref().and_then(|st| st.get(cell)) {
            None => ctx.report(
                "V-S3",
                at.key("rollback_state").index(i),
                format!("rollback_state references unknown workflow state '{cell}'"),
            ),
            Some(c) => pending.extend(c.service_group.clone()),
        }
    }
    let mut seen = HashSet::new();
    while let Some(name) = pending.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let gp = workflow_path()
            .key("serving")
            .key("state_service")
            .key("groups")
            .key(name.as_str());
        let Some(group) = groups.and_then(|g| g.get(&name)) else {
            ctx.report(
                "V-S3",
                at.key("rollback_state"),
                format!("rollback covers unknown state service group '{name}'"),
            );
            continue;
        };
        let caps = group.capabilities.as_ref();
        match caps.and_then(|c| c.rollback_positions) {
            None => ctx.report("V-S3", gp, format!("state service group '{name}' declares no rollback_positions")),
            Some(n) if n < s.max_proposal_width => ctx.report(
                "V-S3",
                gp.key("capabilities").key("rollback_positions"),
                format!("state service group '{name}' rolls back {n} positions but the declared maximum proposal width is {}", s.max_proposal_width),
            ),
            Some(_) => {}
        }
        pending.extend(
            caps.into_iter()
                .flat_map(|c| c.cascade.iter().flatten().cloned()),
        );
    }
}

fn invoked_components<'d>(steps: &'d [Step], out: &mut Vec<&'d str>) {
    for_each_step(steps, &DocPath::root(), &mut |step, _| {
        if let Step::Invoke(i) = step {
            out.push(&i.component);
        }
    });
}

/// The innermost loop whose subtree invokes both components, searching
/// nested steps before setup before the loop itself.
fn speculative_loop<'d>(steps: &'d [Step], proposer: &str, target: &str) -> Option<&'d LoopStep> {
    fn search<'d>(step: &'d Step, proposer: &str, target: &str) -> Option<&'d LoopStep> {
        match step {
            Step::Sequence(s) => s.steps.iter().find_map(|c| search(c, proposer, target)),
            Step::Branch(b) => b
                .cases
                .values()
                .chain(b.default.as_deref())
                .find_map(|c| search(c, proposer, target)),
            Step::Loop(l) => l
                .steps
                .iter()
                .chain(l.setup.iter().flatten())
                .find_map(|c| search(c, proposer, target))
                .or_else(|| {
                    let mut invoked = Vec::new();
                    invoked_components(&l.steps, &mut invoked);
                    invoked_components(l.setup.as_deref().unwrap_or_default(), &mut invoked);
                    (invoked.contains(&proposer) && invoked.contains(&target)).then_some(l)
                }),
            Step::Invoke(_) | Step::Emit(_) => None,
        }
    }
    steps.iter().find_map(|s| search(s, proposer, target))
}

fn region_rules(ctx: &mut Ctx<'_>, s: &Speculative, wf: &WorkflowSpec) {
    let mut region: Vec<&str> = Vec::new();
    match speculative_loop(&wf.steps, &s.proposer, &s.target) {
        Some(l) => {
            invoked_components(&l.steps, &mut region);
            invoked_components(l.setup.as_deref().unwrap_or_default(), &mut region);
        }
        None => region.extend([s.proposer.as_str(), s.target.as_str()]),
    }
    let region: BTreeSet<&str> = region.into_iter().collect();
    let mut reported = HashSet::new();
    for component in region {
        for domain in wf
            .components
            .get(component)
            .and_then(|c| c.effects.as_ref())
            .into_iter()
            .flatten()
        {
            let Some(effect) = wf.effects.as_ref().and_then(|e| e.get(domain)) else {
                continue;
            };
            if !reported.insert(domain.as_str()) {
                continue;
            }
            let p = workflow_path()
                .key("effects")
                .key(domain.as_str())
                .key("speculation_safety");
            match effect.speculation_safety.as_ref().unwrap_or(&SpeculationSafety::None) {
                SpeculationSafety::None => ctx.report(
                    "V-S4",
                    p,
                    format!("effect domain '{domain}' of component '{component}' runs inside the speculative region but declares speculation_safety none"),
                ),
                SpeculationSafety::Rewindable(r) if r.max_depth < s.max_proposal_width => ctx.report(
                    "V-S4",
                    p,
                    format!("effect domain '{domain}' rewinds {} positions but the declared maximum proposal width is {}", r.max_depth, s.max_proposal_width),
                ),
                _ => {}
            }
        }
    }
}
