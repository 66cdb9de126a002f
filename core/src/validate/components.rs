//! Components (V-W20..V-W29), their port contracts, effect domains
//! (V-E1, V-E2) and row scope (V-RS1, V-RS2).

use super::inputs::check_contract;
use super::{Ctx, workflow_path};
use crate::contracts::has_request_axis;
use wfstudio_schema::types::contract::ScalarValue;
use wfstudio_schema::types::workflow::{
    Component, Implementation, SpeculationSafety, WorkflowSpec,
};

/// Known adapter contracts: (id@version, action, input roles, output roles).
const ADAPTER_OBLIGATIONS: &[(&str, &str, &[&str], &[&str])] = &[
    (
        "onnx-genai.grammar-guidance@1",
        "clone",
        &["state"],
        &["next_state"],
    ),
    (
        "onnx-genai.grammar-guidance@1",
        "lookahead",
        &["state", "tokens", "valid_length", "transition_table"],
        &[
            "next_state",
            "consumed_length",
            "logits_mask",
            "forced_tokens",
            "forced_length",
        ],
    ),
    (
        "onnx-genai.grammar-guidance@1",
        "commit",
        &["state", "tokens", "valid_length", "transition_table"],
        &["next_state", "consumed_length"],
    ),
    ("onnx-genai.telemetry@1", "start", &[], &["timestamp"]),
    (
        "onnx-genai.telemetry@1",
        "elapsed",
        &["timestamp"],
        &["duration_ms"],
    ),
    (
        "onnx-genai.parameter-overlay@1",
        "apply",
        &["input"],
        &["output"],
    ),
];

pub(super) fn check(ctx: &mut Ctx<'_>, wf: &WorkflowSpec) {
    let components_path = workflow_path().key("components");
    for (name, component) in &wf.components {
        let at = components_path.key(name.as_str());
        if name.trim().is_empty() || name.contains('.') {
            ctx.report(
                "V-W20",
                at.clone(),
                format!("workflow component name is invalid: '{name}'"),
            );
        }
        if let Some(ports) = &component.ports {
            for (direction, map) in [("inputs", &ports.inputs), ("outputs", &ports.outputs)] {
                for (port, contract) in map.iter().flatten() {
                    check_contract(
                        ctx,
                        || at.key("ports").key(direction).key(port.as_str()),
                        || format!("component '{name}' port '{port}'"),
                        contract,
                    );
                }
            }
        }
        implementation(ctx, wf, name, component, &at);
        contract(ctx, name, component, &at);
        for (i, domain) in component.effects.iter().flatten().enumerate() {
            let declared = wf.effects.as_ref().is_some_and(|e| e.contains_key(domain));
            if domain.trim().is_empty() || !declared {
                ctx.report(
                    "V-E1",
                    at.key("effects").index(i),
                    format!("component '{name}' declares effect domain '{domain}' that pipeline.workflow.effects does not describe"),
                );
            }
        }
        row_scope(ctx, name, component, &at);
    }
    for (domain, effect) in wf.effects.iter().flatten() {
        let at = workflow_path().key("effects").key(domain.as_str());
        if domain.trim().is_empty() {
            ctx.report(
                "V-E2",
                at.clone(),
                "effect domain names must not be blank".to_string(),
            );
        }
        if let Some(SpeculationSafety::Rewindable(r)) = &effect.speculation_safety
            && r.max_depth == 0
        {
            ctx.report(
                "V-E2",
                at.key("speculation_safety").key("max_depth"),
                format!("effect domain '{domain}' rewindable max_depth must be greater than zero"),
            );
        }
    }
}

fn implementation(
    ctx: &mut Ctx<'_>,
    wf: &WorkflowSpec,
    name: &str,
    component: &Component,
    at: &wfstudio_schema::DocPath,
) {
    let imp = at.key("implementation");
    match &component.implementation {
        Implementation::Onnx(onnx) if onnx.artifact.trim().is_empty() => ctx.report(
            "V-W21",
            imp.key("artifact"),
            format!("workflow component '{name}' has an empty ONNX artifact"),
        ),
        Implementation::Adapter(adapter) => {
            let pinned = wf
                .manifest
                .adapter_abis
                .as_ref()
                .and_then(|abis| abis.get(&adapter.abi));
            if pinned != Some(&adapter.version) {
                ctx.report(
                    "V-W22",
                    imp.key("abi"),
                    format!(
                        "workflow component '{name}' requires adapter ABI {}@{}, but the manifest does not pin that exact version",
                        adapter.abi, adapter.version
                    ),
                );
            }
            if let Some(contract) = &component.contract {
                let (id, abi) = (
                    format!("{}@{}", contract.id, contract.version),
                    format!("{}@{}", adapter.abi, adapter.version),
                );
                if id != abi {
                    ctx.report(
                        "V-W25",
                        at.key("contract"),
                        format!(
                            "workflow component '{name}' contract {id} must match its ABI {abi}"
                        ),
                    );
                }
                obligations(ctx, name, component, &id, at);
            }
        }
        _ => {}
    }
    if component.application_overridable == Some(true) {
        if component.contract.is_none() {
            ctx.report(
                "V-W28",
                at.key("application_overridable"),
                format!("workflow component '{name}' is application-overridable but has no versioned contract"),
            );
        }
        if !matches!(component.implementation, Implementation::Onnx(_)) {
            ctx.report(
                "V-W29",
                at.key("application_overridable"),
                format!("workflow component '{name}' is application-overridable but is not an ONNX component"),
            );
        }
    }
}

fn contract(ctx: &mut Ctx<'_>, name: &str, component: &Component, at: &wfstudio_schema::DocPath) {
    let Some(contract) = &component.contract else {
        return;
    };
    let c = at.key("contract");
    if contract.id.trim().is_empty() || contract.version.trim().is_empty() {
        ctx.report(
            "V-W23",
            c.clone(),
            format!("workflow component '{name}' contract id and version must not be empty"),
        );
    } else if contract.id.contains('@') || contract.id.contains(char::is_whitespace) {
        ctx.report(
            "V-W23",
            c.key("id"),
            format!(
                "workflow component '{name}' contract id '{}' must be a bare name: write the version in `version`",
                contract.id
            ),
        );
    }
    let ports = component.ports.as_ref();
    let declared: Vec<&String> = ports
        .into_iter()
        .flat_map(|p| p.inputs.iter().flatten().chain(p.outputs.iter().flatten()))
        .map(|(n, _)| n)
        .collect();
    if declared.is_empty() {
        return;
    }
    for (role, port) in contract.bindings.iter().flatten() {
        if role.trim().is_empty() || !declared.contains(&port) {
            ctx.report(
                "V-W24",
                c.key("bindings").key(role.as_str()),
                format!("workflow component '{name}' contract binding '{role}' references unknown port '{port}'"),
            );
        }
    }
}

fn obligations(
    ctx: &mut Ctx<'_>,
    name: &str,
    component: &Component,
    id: &str,
    at: &wfstudio_schema::DocPath,
) {
    if !ADAPTER_OBLIGATIONS.iter().any(|(known, ..)| *known == id) {
        return;
    }
    let Some(contract) = &component.contract else {
        return;
    };
    let action = contract
        .parameters
        .as_ref()
        .and_then(|p| p.get("action"))
        .and_then(|v| match v {
            ScalarValue::Str(s) => Some(s.as_str()),
            _ => None,
        });
    let Some((_, _, inputs, outputs)) = ADAPTER_OBLIGATIONS
        .iter()
        .find(|(known, act, ..)| *known == id && Some(*act) == action)
    else {
        ctx.report(
            "V-W26",
            at.key("contract").key("parameters"),
            format!(
                "workflow component '{name}' has unsupported action {action:?} for contract {id}"
            ),
        );
        return;
    };
    let ports = component.ports.as_ref();
    for (roles, direction, map) in [
        (inputs, "input", ports.and_then(|p| p.inputs.as_ref())),
        (outputs, "output", ports.and_then(|p| p.outputs.as_ref())),
    ] {
        for role in roles.iter() {
            let bindings = at.key("contract").key("bindings");
            match contract.bindings.as_ref().and_then(|b| b.get(*role)) {
                None => ctx.report(
                    "V-W27",
                    bindings,
                    format!("workflow component '{name}' is missing required binding '{role}'"),
                ),
                Some(port) if !map.is_some_and(|m| m.contains_key(port)) => ctx.report(
                    "V-W27",
                    bindings.key(*role),
                    format!("workflow component '{name}' contract role '{role}' must bind an {direction} port"),
                ),
                Some(_) => {}
            }
        }
    }
}

fn row_scope(ctx: &mut Ctx<'_>, name: &str, component: &Component, at: &wfstudio_schema::DocPath) {
    let ports = component.ports.as_ref();
    let all_ports = ports.into_iter().flat_map(|p| {
        p.inputs
            .iter()
            .flatten()
            .map(|(n, c)| ("input", n, c))
            .chain(p.outputs.iter().flatten().map(|(n, c)| ("output", n, c)))
    });
    match &component.row_scope {
        None => {
            let stateful = component.effects.as_ref().is_some_and(|e| !e.is_empty())
                || component
                    .cache_affects_state
                    .as_ref()
                    .is_some_and(|c| !c.is_empty());
            if stateful && all_ports.into_iter().any(|(_, _, c)| has_request_axis(c)) {
                ctx.report(
                    "V-RS1",
                    at.clone(),
                    format!("workflow component '{name}' holds per-request state and has request-aligned ports but declares no row_scope"),
                );
            }
        }
        Some(scope) => {
            for (direction, port, contract) in all_ports {
                if !crate::contracts::is_row_scoped(contract) {
                    continue;
                }
                let p = at
                    .key("ports")
                    .key(format!("{direction}s"))
                    .key(port.as_str());
                if scope.axis >= contract.rank {
                    ctx.report(
                        "V-RS2",
                        p,
                        format!(
                            "workflow component '{name}' declares row_scope axis {} but {direction} port '{port}' has rank {}",
                            scope.axis, contract.rank
                        ),
                    );
                } else if let Some(axis) = contract.layout().request_axis()
                    && axis != scope.axis
                {
                    ctx.report(
                        "V-RS2",
                        p,
                        format!(
                            "workflow component '{name}' {direction} port '{port}' is request-aligned on a different axis than the declared row_scope axis {}",
                            scope.axis
                        ),
                    );
                }
            }
        }
    }
}
