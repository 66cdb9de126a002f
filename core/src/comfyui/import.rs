//! One import of a ComfyUI file, shared by the CLI and the studio: read the
//! bytes, take the API graph (converted from the UI workflow when node
//! definitions are at hand, else the embedded prompt), lower it, and keep
//! the graph as drawn for display.

use super::lower::{self, Lowered, Refusal, Target};
use super::to_api::{ConvertIssue, api_json, ui_to_api};
use super::view::ComfyView;
use super::{ComfyInput, NodeDefs, ReadError, read};
use serde_json::Value;

/// The API graph of what a file holds.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiOf {
    /// The API prompt.
    pub api: Value,
    /// What the UI-to-API conversion could not represent exactly.
    pub issues: Vec<ConvertIssue>,
}

/// Why no API graph could be had.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// Only a UI workflow, and no node definitions to convert it.
    #[error(
        "a UI workflow needs node definitions to be converted: pass node_defs.json (--node-defs or WFSTUDIO_NODE_DEFS), or export with Save (API Format)"
    )]
    NeedsNodeDefs,
}

/// The API graph of `found`: the UI workflow converted with `defs` when
/// both are there (that is what ComfyUI would submit), else the embedded
/// API prompt.
pub fn api_of(found: &ComfyInput, defs: Option<&NodeDefs>) -> Result<ApiOf, ApiError> {
    match (&found.ui, defs, &found.api) {
        (Some(ui), Some(defs), _) => {
            let (graph, issues) = ui_to_api(ui, defs);
            Ok(ApiOf {
                api: api_json(&graph),
                issues,
            })
        }
        (_, _, Some(api)) => Ok(ApiOf {
            api: api.clone(),
            issues: Vec::new(),
        }),
        _ => Err(ApiError::NeedsNodeDefs),
    }
}

/// A ComfyUI file, imported.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    /// The graph as drawn in ComfyUI (or laid out, for an API prompt).
    pub view: ComfyView,
    /// The lowered document, or why the graph was refused.
    pub outcome: Result<Lowered, Vec<Refusal>>,
    /// Conversion issues, as `node N (Class): message` lines.
    pub warnings: Vec<String>,
}

/// Imports a file's bytes for `target`.
pub fn import(
    bytes: &[u8],
    defs: Option<&NodeDefs>,
    target: &Target,
) -> Result<Imported, ReadError> {
    let found = read(bytes)?;
    let view = match (&found.ui, &found.api) {
        (Some(ui), _) => ComfyView::from_ui(ui),
        (None, Some(api)) => ComfyView::from_api(api),
        (None, None) => ComfyView::default(),
    };
    let (outcome, warnings) = match api_of(&found, defs) {
        Ok(ApiOf { api, issues }) => (
            lower::lower_for(&api, target),
            issues
                .iter()
                .map(|i| format!("node {} ({}): {}", i.node, i.class, i.message))
                .collect(),
        ),
        Err(error) => (
            Err(vec![Refusal {
                node: String::new(),
                class: String::new(),
                input: None,
                message: error.to_string(),
                remedy: "point WFSTUDIO_NODE_DEFS at ComfyUI's node_defs.json".into(),
            }]),
            Vec::new(),
        ),
    };
    Ok(Imported {
        view,
        outcome,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_ui_workflow_without_node_definitions_is_refused_with_the_way_out() {
        let ui = json!({"nodes": [{"id": 1, "type": "SaveImage", "pos": [0, 0]}], "links": []});
        let imported = import(ui.to_string().as_bytes(), None, &Target::default()).expect("read");
        assert_eq!(imported.view.nodes.len(), 1);
        let refusals = imported.outcome.expect_err("refused");
        assert!(
            refusals[0]
                .message
                .starts_with("a UI workflow needs node definitions")
        );
    }

    #[test]
    fn an_api_prompt_is_lowered_and_laid_out() {
        let api = json!({"1": {"class_type": "SaveImage", "inputs": {}}});
        let imported = import(api.to_string().as_bytes(), None, &Target::default()).expect("read");
        assert!(!imported.view.drawn_in_comfyui);
        let refusals = imported.outcome.expect_err("no decoder");
        assert_eq!(refusals[0].node, "1");
    }
}
