//! Starting points for new items (inputs, outputs, state cells, components,
//! loops, branches, emits): each is a complete, strictly valid entry with a
//! fresh name, added as one [`Command`] and then edited in the inspector.

use super::{Command, top_level_steps, values};
use serde_json::{Value, json};
use wfstudio_schema::DocPath;
use wfstudio_schema::types::workflow::WorkflowSpec;

/// The kinds of item the studio's Add menu offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewItem {
    /// A workflow input (an application tensor).
    Input,
    /// A workflow output.
    Output,
    /// A state cell.
    StateCell,
    /// An ONNX component with no ports yet.
    Component,
    /// A loop over the first integer and bool values.
    Loop,
    /// A branch.
    Branch,
    /// An emit of the first value into the first output.
    Emit,
}

impl NewItem {
    /// Every kind, in menu order.
    pub const ALL: [NewItem; 7] = [
        NewItem::Input,
        NewItem::Output,
        NewItem::StateCell,
        NewItem::Component,
        NewItem::Loop,
        NewItem::Branch,
        NewItem::Emit,
    ];

    /// The menu label.
    pub fn label(self) -> &'static str {
        match self {
            NewItem::Input => "input",
            NewItem::Output => "output",
            NewItem::StateCell => "state cell",
            NewItem::Component => "component",
            NewItem::Loop => "loop",
            NewItem::Branch => "branch",
            NewItem::Emit => "emit",
        }
    }
}

fn contract() -> Value {
    json!({"dtype": "float32", "rank": 1, "shape": [1]})
}

/// The command that adds `item` to `wf`; steps go into `list` at `index`.
/// Returns the command and the path of the new item.
pub fn add(wf: &WorkflowSpec, item: NewItem, list: Option<(DocPath, usize)>) -> (Command, DocPath) {
    let root = crate::validate::workflow_path();
    let mut taken = values::value_names(wf);
    taken.extend(wf.components.keys().cloned());
    taken.extend(wf.outputs.iter().flat_map(|o| o.keys().cloned()));
    let first_value = wf
        .inputs
        .iter()
        .flat_map(|i| i.keys())
        .next()
        .cloned()
        .unwrap_or_default();
    let entry = |section: &str, base: &str, value: Value| {
        let name = values::fresh_name(base, &taken);
        let path = root.key(section).key(name.as_str());
        (
            Command::Set {
                path: path.clone(),
                value,
            },
            path,
        )
    };
    let step = |value: Value| {
        let (list, index) = list.clone().unwrap_or((top_level_steps(), usize::MAX));
        let count = wf_len(wf, &list);
        let at = index.min(count);
        (
            Command::Insert {
                list: list.clone(),
                index: at,
                value,
            },
            list.index(at),
        )
    };
    match item {
        NewItem::Input => {
            let name = values::fresh_name("input", &taken);
            entry(
                "inputs",
                "input",
                json!({
                    "contract": contract(),
                    "role": {"kind": "opaque"},
                    "source": {"kind": "application", "name": name},
                }),
            )
        }
        NewItem::Output => entry(
            "outputs",
            "output",
            json!({
                "contract": contract(), "role": "tensor", "stage": "pre_adapter",
            }),
        ),
        NewItem::StateCell => entry(
            "state",
            "cell",
            json!({
                "contract": contract(),
                "scope": "invocation",
                "initializer": first_value,
                "recurrence": {"kind": "invariant"},
            }),
        ),
        NewItem::Component => entry(
            "components",
            "component",
            json!({
                "implementation": {"kind": "onnx", "artifact": "component/model.onnx"},
                "ports": {"inputs": {}, "outputs": {}},
            }),
        ),
        NewItem::Loop => step(json!({
            "kind": "loop", "steps": [], "continue_when": first_value, "max_iterations": first_value,
        })),
        NewItem::Branch => step(json!({"kind": "branch", "predicate": first_value, "cases": {}})),
        NewItem::Emit => {
            let output = wf
                .outputs
                .iter()
                .flat_map(|o| o.keys())
                .next()
                .cloned()
                .unwrap_or_default();
            step(json!({"kind": "emit", "value": first_value, "output": output, "mode": "replace"}))
        }
    }
}

/// Length of the step list at `list` (0 when it does not exist yet).
fn wf_len(wf: &WorkflowSpec, list: &DocPath) -> usize {
    let value = json!({"pipeline": {"workflow": serde_json::to_value(wf).unwrap_or(Value::Null)}});
    super::tree::get(&value, list)
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}
