//! Checks over all emits together (V-X1..V-X4) and publication of
//! runtime-managed state (V-L1).

use super::walk::Walked;
use super::{Ctx, workflow_path};
use crate::contracts::has_request_axis;
use std::collections::HashMap;
use wfstudio_schema::types::contract::BatchLayout;
use wfstudio_schema::types::state::StateManagement;
use wfstudio_schema::types::workflow::WorkflowSpec;

pub(super) fn check(ctx: &mut Ctx<'_>, wf: &WorkflowSpec, walked: &Walked<'_>) {
    let outputs = wf.outputs.as_ref();
    let mut first_layout: HashMap<&str, BatchLayout> = HashMap::new();
    for emit in &walked.emits {
        let step = emit.step;
        let Some(output) = outputs.and_then(|o| o.get(&step.output)) else {
            continue;
        };
        let declared = output.contract.layout();
        if (step.valid_length.is_some() || step.when.is_some())
            && !has_request_axis(&output.contract)
        {
            ctx.report(
                "V-X2",
                emit.path.clone(),
                format!(
                    "emits '{}' into output '{}' with a per-row valid_length or guard, but the output declares no request_aligned batch_layout",
                    step.value, step.output
                ),
            );
        }
        let Some(value) = emit.value else {
            continue;
        };
        let layout = value.layout();
        match first_layout.get(step.output.as_str()) {
            Some(first) if *first != layout => ctx.report(
                "V-X1",
                emit.path.clone(),
                format!(
                    "pipeline.workflow output '{}' mixes batch layouts across emits",
                    step.output
                ),
            ),
            Some(_) => {}
            None => {
                first_layout.insert(&step.output, layout.clone());
            }
        }
        if layout != declared {
            ctx.report(
                "V-X3",
                emit.path.key("value"),
                format!(
                    "emits '{}' into output '{}' with a different batch_layout ({} vs declared {})",
                    step.value,
                    step.output,
                    layout.kind(),
                    declared.kind()
                ),
            );
        }
        if wf.serving.is_some() && value.rank > 0 && layout == BatchLayout::Shared {
            ctx.report(
                "V-X4",
                emit.path.key("value"),
                format!(
                    "emits per-request value '{}' without a declared batch_layout",
                    step.value
                ),
            );
        }
    }
    let groups = wf
        .serving
        .as_ref()
        .and_then(|s| s.state_service.groups.as_ref());
    for (name, cell) in wf.state.iter().flatten() {
        if !matches!(
            cell.state_management(),
            StateManagement::Runtime | StateManagement::External
        ) {
            continue;
        }
        let emitted = walked.emits.iter().any(|e| e.step.value == *name);
        let named_output = outputs.is_some_and(|o| o.contains_key(name));
        if !(emitted || named_output) {
            continue;
        }
        let checkpointed = cell
            .service_group
            .as_ref()
            .and_then(|g| groups.and_then(|groups| groups.get(g)))
            .is_some_and(|g| g.checkpoint.is_some());
        if !checkpointed {
            ctx.report(
                "V-L1",
                workflow_path().key("state").key(name.as_str()),
                format!(
                    "runtime-managed state '{name}' is published as a package output, but its service group declares no checkpoint adapter"
                ),
            );
        }
    }
}
