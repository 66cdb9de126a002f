//! Document-level rules outside the workflow walk: the entry that runs
//! them all, preprocessing (V-P*), generation overrides (V-O1) and profiles
//! (V-R*); adapters (V-A*) are in `adapters`, speculative decoding (V-S*)
//! in `speculative`.

use super::values::blank;
use super::walk::for_each_step;
use super::{Ctx, workflow_path};
use crate::contracts::normalize_dtype;
use std::collections::HashMap;
use wfstudio_schema::types::contract::TensorContract;
use wfstudio_schema::types::facts::{Decoding, PreprocessingProgram};
use wfstudio_schema::types::steps::Step;
use wfstudio_schema::types::workflow::{Implementation, InputRole, InputSource, WorkflowSpec};
use wfstudio_schema::{DocPath, Document};

pub(super) fn check(ctx: &mut Ctx<'_>, document: &Document, wf: Option<&WorkflowSpec>) {
    if let Some(adapters) = &document.adapters {
        super::adapters::adapter_service(ctx, adapters, wf);
    }
    if let Some(wf) = wf {
        super::adapters::overlay_components(ctx, document.adapters.as_ref(), wf);
        preprocessing(ctx, document, wf);
    }
    overrides(ctx, document, wf);
    profiles(ctx, document, wf);
    if let Some(speculative) = &document.speculative {
        super::speculative::speculative_rules(ctx, speculative, wf);
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
