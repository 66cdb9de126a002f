//! V-C1 and V-C2: the manifest declares every capability the structure
//! derives (`crate::capabilities`) and, with adapters, the adapter ones;
//! each missing one is reported with a quick fix.

use super::{Ctx, workflow_path};
use crate::capabilities::{ADAPTER_CAPABILITIES, derive};
use wfstudio_schema::types::workflow::WorkflowSpec;
use wfstudio_schema::{Diagnostic, Document, Fix, FixEdit};

fn missing_diagnostics(
    ctx: &mut Ctx<'_>,
    code: &'static str,
    declared: &[String],
    required: impl Iterator<Item = (&'static str, String)>,
) {
    let missing: Vec<(&str, String)> = required
        .filter(|(id, _)| !declared.iter().any(|d| d == id))
        .collect();
    if missing.is_empty() {
        return;
    }
    let ids: Vec<String> = missing.iter().map(|(id, _)| id.to_string()).collect();
    let path = workflow_path().key("manifest").key("capabilities");
    let help = format!(
        "add to pipeline.workflow.manifest.capabilities: [{}]",
        ids.join(", ")
    );
    for (id, why) in &missing {
        ctx.push(
            Diagnostic::error(
                code,
                path.clone(),
                format!("manifest capabilities is missing used capability '{id}' ({why})"),
            )
            .with_help(help.clone())
            .with_fix(Fix {
                title: format!("Add {} to the manifest capabilities", ids.join(", ")),
                edit: FixEdit::AppendToList {
                    path: path.clone(),
                    items: ids.clone(),
                },
            }),
        );
    }
}

/// V-C1 (structure-derived capabilities) and V-C2 (adapter capabilities).
pub(super) fn check_manifest(ctx: &mut Ctx<'_>, document: &Document, wf: &WorkflowSpec) {
    let declared = wf.manifest.capabilities.as_deref().unwrap_or_default();
    let derived = derive(wf);
    let required = derived
        .iter()
        .filter(|(c, _)| !declared.iter().any(|d| d == c.id()))
        .map(|(c, path)| (c.id(), format!("{} at {path}", c.reason())));
    missing_diagnostics(ctx, "V-C1", declared, required);
    if document.adapters.is_some() {
        let required = ADAPTER_CAPABILITIES
            .iter()
            .map(|id| (*id, "top-level adapters are declared".to_string()));
        missing_diagnostics(ctx, "V-C2", declared, required);
    }
}
