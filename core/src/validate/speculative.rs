//! Speculative decoding rules (V-S*): proposer and target, chained
//! proposals, rollback state and the speculative region.

use super::values::blank;
use super::walk::{for_each_step, inferred_ports};
use super::{Ctx, workflow_path};
use std::collections::{BTreeSet, HashSet};
use wfstudio_schema::DocPath;
use wfstudio_schema::types::facts::{ProposalExecution, Speculative};
use wfstudio_schema::types::state::PortAccess;
use wfstudio_schema::types::steps::{LoopStep, Step};
use wfstudio_schema::types::workflow::{Implementation, SpeculationSafety, WorkflowSpec};

pub(super) fn speculative_rules(ctx: &mut Ctx<'_>, s: &Speculative, wf: Option<&WorkflowSpec>) {
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
