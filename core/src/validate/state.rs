//! State cells (V-W31..V-W3B, V-L2..V-L5), state-service groups
//! (V-G01..V-G13) and the serving contract (V-SV1..V-SV3).

use super::inputs::check_contract;
use super::walk::{Walked, inferred_ports};
use super::{Ctx, workflow_path};
use crate::contracts::{bool_control, integer_control, integer_scalar, is_integer};
use std::collections::{BTreeSet, HashMap};
use wfstudio_schema::DocPath;
use wfstudio_schema::types::contract::{BatchLayout, TensorContract};
use wfstudio_schema::types::state::{
    PortAccess, Recurrence, ReleaseBoundary, SessionPolicy, StateCell, StateClass, StateGroup,
    StateKind, StateManagement, StatePortRole, StateScope, StateUpdate,
};
use wfstudio_schema::types::workflow::{Implementation, WorkflowSpec};

fn is_attention(kind: StateKind) -> bool {
    matches!(
        kind,
        StateKind::FullAttention
            | StateKind::SlidingAttention
            | StateKind::MultiLatentAttention
            | StateKind::CrossAttention
    )
}

fn is_self_attention(kind: StateKind) -> bool {
    matches!(
        kind,
        StateKind::FullAttention | StateKind::SlidingAttention | StateKind::MultiLatentAttention
    )
}

pub(super) fn check(ctx: &mut Ctx<'_>, wf: &WorkflowSpec) {
    let groups = wf
        .serving
        .as_ref()
        .and_then(|s| s.state_service.groups.as_ref());
    for (name, cell) in wf.state.iter().flatten() {
        cell_rules(ctx, wf, name, cell, groups);
    }
    if let Some(serving) = &wf.serving {
        let at = workflow_path().key("serving");
        let count = groups.map_or(0, |g| g.len());
        if count == 0 {
            ctx.report(
                "V-SV1",
                at.key("state_service"),
                "state_service.groups must declare at least one bound state group".to_string(),
            );
        } else if serving.accepted_len.is_none() {
            ctx.report(
                "V-SV2",
                at.clone(),
                "serving.accepted_len is required when state service groups are declared"
                    .to_string(),
            );
        }
        for (name, group) in groups.into_iter().flatten() {
            group_rules(
                ctx,
                wf,
                name,
                group,
                groups
                    .into_iter()
                    .flatten()
                    .map(|(n, _)| n.as_str())
                    .collect(),
            );
        }
    }
}

fn cell_rules(
    ctx: &mut Ctx<'_>,
    wf: &WorkflowSpec,
    name: &str,
    cell: &StateCell,
    groups: Option<&indexmap::IndexMap<String, StateGroup>>,
) {
    let at = workflow_path().key("state").key(name);
    let owner = format!("state '{name}'");
    check_contract(ctx, || at.key("contract"), || owner.clone(), &cell.contract);
    if let Some(lease) = &cell.session {
        let s = at.key("session");
        if cell.scope == StateScope::Invocation {
            ctx.report(
                "V-W31",
                s.clone(),
                format!("{owner} has session lease settings but invocation scope"),
            );
        }
        if lease.policy == Some(SessionPolicy::CopyOnWrite) {
            ctx.report(
                "V-W32",
                s.key("policy"),
                format!("{owner}: this runtime does not support copy_on_write session leases"),
            );
        }
        if lease.ttl_seconds.is_some() {
            ctx.report(
                "V-W33",
                s.key("ttl_seconds"),
                format!("{owner}: this runtime does not yet enforce session lease ttl_seconds"),
            );
        }
        if lease.optimistic_metadata_version == Some(true) {
            ctx.report(
                "V-W34",
                s.key("optimistic_metadata_version"),
                format!("{owner}: this runtime does not support optimistic metadata versioning"),
            );
        }
    }
    let varying = cell.recurrence.varying_axis();
    if let Some(axis) = varying
        && axis >= cell.contract.rank
    {
        ctx.report(
            "V-W35",
            at.key("recurrence").key("axis"),
            format!(
                "{owner} varies on axis {axis}, outside rank {}",
                cell.contract.rank
            ),
        );
    }
    let management = cell.state_management();
    match (management, cell.release_boundary) {
        (StateManagement::Runtime | StateManagement::External, None) => ctx.report(
            "V-L3",
            at.clone(),
            format!("{owner} is runtime-managed but declares no release_boundary"),
        ),
        (StateManagement::Workflow, Some(_)) => ctx.report(
            "V-L4",
            at.key("release_boundary"),
            format!("{owner} declares a release_boundary but is workflow-owned"),
        ),
        _ => {}
    }
    if cell.release_boundary == Some(ReleaseBoundary::Session) && cell.scope != StateScope::Session
    {
        ctx.report(
            "V-L5",
            at.key("release_boundary"),
            format!("{owner} releases at a session boundary but is not session-scoped"),
        );
    }
    let Some(group_name) = &cell.service_group else {
        return;
    };
    let group = groups.and_then(|g| g.get(group_name));
    let g = at.key("service_group");
    if management != StateManagement::Runtime {
        ctx.report(
            "V-L2",
            g.clone(),
            format!("{owner} binds a state service group but is not declared management: runtime"),
        );
    }
    let Some(group) = group else {
        ctx.report(
            "V-W36",
            g,
            format!("{owner} binds unknown state service group '{group_name}'"),
        );
        return;
    };
    if let Some(axis) = group.sequence_axis
        && axis >= cell.contract.rank
    {
        ctx.report(
            "V-W37",
            g.clone(),
            format!(
                "sequence_axis {axis} of group '{group_name}' is outside {owner} rank {}",
                cell.contract.rank
            ),
        );
    }
    match (varying, group.sequence_axis) {
        (Some(v), Some(s)) if v != s => ctx.report(
            "V-W38",
            at.key("recurrence").key("axis"),
            format!("{owner} recurrence axis Some({v}) disagrees with state service group '{group_name}' sequence_axis {s}"),
        ),
        (Some(v), None) => ctx.report(
            "V-W39",
            at.key("recurrence"),
            format!("{owner} varies along axis Some({v}), but state service group '{group_name}' declares no sequence_axis"),
        ),
        _ => {}
    }
    if !matches!(
        cell.contract.layout(),
        BatchLayout::RequestAligned(_) | BatchLayout::RequestExpanded(_)
    ) {
        ctx.report(
            "V-W3A",
            at.key("contract"),
            format!("{owner} binds state service group '{group_name}' but its contract does not declare a request_aligned batch_layout; compaction would be underivable"),
        );
    }
    if let Recurrence::Growing(growing) = &cell.recurrence {
        let accepted = wf.serving.as_ref().and_then(|s| s.accepted_len.as_ref());
        if accepted != Some(&growing.increment) {
            ctx.report(
                "V-W3B",
                at.key("recurrence").key("increment"),
                format!("{owner} grows by '{}', but serving.accepted_len does not bind that per-row value", growing.increment),
            );
        }
    }
    let invariant = matches!(cell.recurrence, Recurrence::Invariant);
    match &group.update {
        Some(StateUpdate::Replace) if !invariant => ctx.report(
            "V-G06",
            at.key("recurrence"),
            format!("{owner} binds replace-updated group '{group_name}' but declares a varying shape"),
        ),
        Some(StateUpdate::IndexedScatter(scatter))
            if !invariant
                && scatter.write_indices != name
                && group.logical_lengths.as_deref() != Some(name) =>
        {
            ctx.report(
                "V-G07",
                at.key("recurrence"),
                format!("{owner} binds indexed_scatter group '{group_name}' but declares a varying shape"),
            )
        }
        _ => {}
    }
}

fn cell_contract<'w>(wf: &'w WorkflowSpec, name: &str) -> Option<&'w StateCell> {
    wf.state.as_ref().and_then(|s| s.get(name))
}

fn group_rules(
    ctx: &mut Ctx<'_>,
    wf: &WorkflowSpec,
    name: &str,
    group: &StateGroup,
    all: Vec<&str>,
) {
    let at = workflow_path()
        .key("serving")
        .key("state_service")
        .key("groups")
        .key(name);
    let owner = format!("state service group '{name}'");
    if group.layout.trim().is_empty() {
        ctx.report(
            "V-G01",
            at.key("layout"),
            format!("{owner} layout must not be empty"),
        );
    }
    if let Some(lengths) = &group.logical_lengths {
        let l = at.key("logical_lengths");
        match cell_contract(wf, lengths) {
            None => ctx.report(
                "V-G02",
                l,
                format!("{owner} references unknown logical_lengths state '{lengths}'"),
            ),
            Some(cell) => {
                if !is_integer(&cell.contract.dtype) {
                    ctx.report(
                        "V-G02",
                        l.clone(),
                        format!("{owner} logical_lengths '{lengths}' must have an integer dtype"),
                    );
                }
                if cell.contract.rank != 1 {
                    ctx.report("V-G02", l.clone(), format!("{owner} logical_lengths '{lengths}' must be rank one with one value per row"));
                }
                if cell.state_class() != StateClass::Semantic {
                    ctx.report("V-G02", l, format!("{owner} logical_lengths '{lengths}' must be semantic for checkpoint/replay"));
                }
            }
        }
    }
    if let Some(total) = &group.total_length
        && cell_contract(wf, total).is_none()
    {
        ctx.report(
            "V-G03",
            at.key("total_length"),
            format!("{owner} total_length references value '{total}' before definition"),
        );
    }
    match &group.update {
        Some(StateUpdate::Append | StateUpdate::IndexedScatter(_))
            if group.sequence_axis.is_none() =>
        {
            ctx.report(
                "V-G04",
                at.key("update"),
                format!("{owner} uses a sequence update but declares no sequence_axis"),
            )
        }
        Some(StateUpdate::Replace) if group.sequence_axis.is_some() => ctx.report(
            "V-G05",
            at.key("sequence_axis"),
            format!("{owner} uses replace for fixed-size state but declares sequence_axis"),
        ),
        _ => {}
    }
    if let Some(StateUpdate::IndexedScatter(scatter)) = &group.update {
        indexed_scatter(ctx, wf, &owner, &at, group, scatter);
    }
    if let Some(capabilities) = &group.capabilities {
        let c = at.key("capabilities");
        for (i, other) in capabilities.cascade.iter().flatten().enumerate() {
            if !all.contains(&other.as_str()) {
                ctx.report(
                    "V-G11",
                    c.key("cascade").index(i),
                    format!("{owner} cascades to unknown group '{other}'"),
                );
            }
        }
        if capabilities.rollback_positions == Some(0) {
            ctx.report(
                "V-G12",
                c.key("rollback_positions"),
                format!("{owner} rollback_positions must be greater than zero"),
            );
        }
    }
    let onnx_count = wf
        .components
        .values()
        .filter(|c| matches!(c.implementation, Implementation::Onnx(_)))
        .count();
    for (component_name, aliases) in group.ports.iter().flatten() {
        let p = at.key("ports").key(component_name.as_str());
        let Some(component) = wf.components.get(component_name) else {
            ctx.report(
                "V-G13",
                p,
                format!("{owner} binds unknown component '{component_name}'"),
            );
            continue;
        };
        let inferred = inferred_ports(component);
        let ports = component.ports.as_ref();
        let inputs = ports.and_then(|p| p.inputs.as_ref());
        let outputs = ports.and_then(|p| p.outputs.as_ref());
        let mut by_role: HashMap<StatePortRole, Vec<(&str, Option<u64>)>> = HashMap::new();
        for (cell_name, alias) in aliases {
            let a = p.key(cell_name.as_str());
            match cell_contract(wf, cell_name) {
                None => ctx.report("V-G13", a.clone(), format!("{owner} port alias references unknown state '{cell_name}'")),
                Some(cell) if cell.service_group.as_deref() != Some(name) => ctx.report(
                    "V-G13",
                    a.clone(),
                    format!("{owner} port alias references state '{cell_name}', which is bound to another service group"),
                ),
                Some(_) => {}
            }
            if !inferred && !inputs.is_some_and(|m| m.contains_key(&alias.input)) {
                ctx.report(
                    "V-G13",
                    a.key("input"),
                    format!(
                        "{owner} input alias '{}' is not a declared port",
                        alias.input
                    ),
                );
            }
            match &alias.output {
                Some(output) if !inferred && !outputs.is_some_and(|m| m.contains_key(output)) => {
                    ctx.report("V-G13", a.key("output"), format!("{owner} output alias '{output}' is not a declared port"));
                }
                None if alias.access != Some(PortAccess::ReadOnly) => ctx.report(
                    "V-G13",
                    a.clone(),
                    format!("{owner} read-write alias for input '{}' declares no output; only a read_only borrow may omit one", alias.input),
                ),
                _ => {}
            }
            if let Some(role) = alias.role {
                by_role
                    .entry(role)
                    .or_default()
                    .push((cell_name, alias.layer));
            }
        }
        for (role, entries) in &by_role {
            if entries.len() < 2 {
                continue;
            }
            let missing: Vec<&str> = entries
                .iter()
                .filter(|(_, l)| l.is_none())
                .map(|(n, _)| *n)
                .collect();
            if !missing.is_empty() {
                ctx.report(
                    "V-G08",
                    p.clone(),
                    format!(
                        "{owner} binds {} '{}' ports for component '{component_name}' but {} declare no layer",
                        entries.len(),
                        role_name(*role),
                        missing.join(", ")
                    ),
                );
                continue;
            }
            let mut seen = BTreeSet::new();
            for (cell_name, layer) in entries {
                if let Some(layer) = layer
                    && !seen.insert(*layer)
                {
                    ctx.report(
                        "V-G08",
                        p.key(*cell_name),
                        format!("{owner} binds '{cell_name}' to layer {layer}, which another '{}' port already claims", role_name(*role)),
                    );
                }
            }
        }
        if is_attention(group.kind)
            && (by_role.contains_key(&StatePortRole::Key)
                || by_role.contains_key(&StatePortRole::Value))
        {
            let layers = |role| -> BTreeSet<u64> {
                by_role
                    .get(&role)
                    .into_iter()
                    .flatten()
                    .map(|(_, l)| l.unwrap_or(0))
                    .collect()
            };
            let (keys, values) = (layers(StatePortRole::Key), layers(StatePortRole::Value));
            if keys != values {
                let missing: Vec<String> = keys
                    .symmetric_difference(&values)
                    .map(u64::to_string)
                    .collect();
                ctx.report(
                    "V-G09",
                    p.clone(),
                    format!(
                        "{owner} must bind exactly one key and one value alias per layer for component '{component_name}': key layers {keys:?}, value layers {values:?}, unpaired layers [{}]",
                        missing.join(", ")
                    ),
                );
            }
        }
        if is_self_attention(group.kind)
            && onnx_count == 1
            && matches!(component.implementation, Implementation::Onnx(_))
        {
            let has_sequence_role = ports.and_then(|p| p.roles.as_ref()).is_some_and(|roles| {
                roles.values().any(|r| {
                    matches!(
                        r,
                        wfstudio_schema::types::workflow::PortRole::TokenIds
                            | wfstudio_schema::types::workflow::PortRole::InputsEmbeds
                    )
                })
            });
            if !has_sequence_role {
                ctx.report(
                    "V-G10",
                    p.clone(),
                    format!("{owner} binds the sole ONNX decoder '{component_name}', which declares no token_ids or inputs_embeds role; the decode ABI cannot find its sequence input"),
                );
            }
        }
    }
}

fn role_name(role: StatePortRole) -> &'static str {
    match role {
        StatePortRole::Key => "key",
        StatePortRole::Value => "value",
        StatePortRole::Combined => "combined",
    }
}

fn indexed_scatter(
    ctx: &mut Ctx<'_>,
    wf: &WorkflowSpec,
    owner: &str,
    at: &DocPath,
    group: &StateGroup,
    scatter: &wfstudio_schema::types::state::IndexedScatter,
) {
    let u = at.key("update");
    if group.logical_lengths.is_none() {
        ctx.report(
            "V-G07",
            at.clone(),
            format!("{owner} declares an indexed_scatter update but no logical_lengths"),
        );
    }
    let w = u.key("write_indices");
    match cell_contract(wf, &scatter.write_indices) {
        None => ctx.report(
            "V-G07",
            w,
            format!(
                "{owner} references unknown write_indices state '{}'",
                scatter.write_indices
            ),
        ),
        Some(cell) => {
            if !is_integer(&cell.contract.dtype) {
                ctx.report(
                    "V-G07",
                    w.clone(),
                    format!("{owner} write_indices must have an integer dtype"),
                );
            }
            if cell.contract.rank != 1 {
                ctx.report(
                    "V-G07",
                    w.clone(),
                    format!("{owner} write_indices must be rank one with one destination per row"),
                );
            }
            if cell.state_class() != StateClass::Semantic {
                ctx.report(
                    "V-G07",
                    w,
                    format!("{owner} write_indices must be semantic"),
                );
            }
        }
    }
    let capacity: Option<&TensorContract> = wf
        .inputs
        .as_ref()
        .and_then(|i| i.get(&scatter.capacity))
        .map(|i| &i.contract)
        .or_else(|| cell_contract(wf, &scatter.capacity).map(|c| &c.contract));
    match capacity {
        None => ctx.report(
            "V-G07",
            u.key("capacity"),
            format!(
                "{owner} capacity references value '{}' before definition",
                scatter.capacity
            ),
        ),
        Some(c) => {
            if let Err(reason) = integer_scalar(c) {
                ctx.report(
                    "V-G07",
                    u.key("capacity"),
                    format!("{owner} capacity {reason}"),
                );
            }
        }
    }
    for (field, ports) in [
        ("write_indices_ports", &scatter.write_indices_ports),
        ("kv_length_ports", &scatter.kv_length_ports),
    ] {
        for (component_name, port) in ports.iter().flatten() {
            let p = u.key(field).key(component_name.as_str());
            let what = if field == "write_indices_ports" {
                "write_indices"
            } else {
                "kv_length"
            };
            match wf.components.get(component_name) {
                None => ctx.report(
                    "V-G07",
                    p,
                    format!("{owner} binds {what} to unknown component '{component_name}'"),
                ),
                Some(component) => {
                    let declared = component
                        .ports
                        .as_ref()
                        .and_then(|ports| ports.inputs.as_ref())
                        .is_some_and(|m| m.contains_key(port));
                    if !inferred_ports(component) && !declared {
                        ctx.report(
                            "V-G07",
                            p,
                            format!("{owner} {what} port '{port}' is not a declared port"),
                        );
                    }
                }
            }
        }
    }
    for (component_name, aliases) in group.ports.iter().flatten() {
        if !scatter
            .write_indices_ports
            .as_ref()
            .is_some_and(|m| m.contains_key(component_name))
        {
            ctx.report(
                "V-G07",
                u.clone(),
                format!("{owner} binds component '{component_name}' but declares no write_indices port for it"),
            );
        }
        let key_value = aliases
            .values()
            .any(|a| matches!(a.role, Some(StatePortRole::Key | StatePortRole::Value)));
        if key_value
            && !scatter
                .kv_length_ports
                .as_ref()
                .is_some_and(|m| m.contains_key(component_name))
        {
            ctx.report(
                "V-G07",
                u.clone(),
                format!("{owner} gives component '{component_name}' key/value cache ports but declares no kv_length port for it"),
            );
        }
    }
}

/// V-SV3: serving's `active`, `done` and `accepted_len` are top-level values
/// visible after the whole walk, correctly typed and request-aligned on axis 0.
pub(super) fn check_serving_values(ctx: &mut Ctx<'_>, wf: &WorkflowSpec, walked: &Walked<'_>) {
    let Some(serving) = &wf.serving else {
        return;
    };
    let at = workflow_path().key("serving");
    let fields = [
        ("active", Some(&serving.active), true),
        ("done", Some(&serving.done), true),
        ("accepted_len", serving.accepted_len.as_ref(), false),
    ];
    for (field, value, is_bool) in fields {
        let Some(value) = value else {
            continue;
        };
        let f = at.key(field);
        let Some(contract) = walked.top_level.get(value.as_str()) else {
            ctx.report(
                "V-SV3",
                f,
                format!("serving.{field} references value '{value}' before definition"),
            );
            continue;
        };
        let Some(contract) = contract else {
            continue;
        };
        let typed = if is_bool {
            bool_control(contract)
        } else {
            integer_control(contract)
        };
        if let Err(reason) = typed {
            ctx.report(
                "V-SV3",
                f.clone(),
                format!("serving.{field} '{value}' {reason}"),
            );
        }
        if contract.rank > 0
            && !matches!(contract.layout(), BatchLayout::RequestAligned(ref l) if l.axis == 0)
        {
            ctx.report(
                "V-SV3",
                f,
                format!("serving.{field} '{value}' must declare a request_aligned batch_layout on axis 0"),
            );
        }
    }
}
