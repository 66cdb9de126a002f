//! Editing a document as undoable commands. The GUI only issues
//! [`Command`]s; [`apply`] turns one into a new document or refuses it with
//! the reason, and [`History`] keeps unlimited undo/redo per file.

mod history;
pub mod templates;
pub mod tree;
pub mod values;

pub use history::History;

use crate::contracts;
use serde_json::{Value, json};
use wfstudio_schema::DocPath;
use wfstudio_schema::types::document::Document;

/// Why an edit was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EditError {
    /// The document has no `pipeline.workflow`.
    #[error("the document has no pipeline.workflow")]
    NoWorkflow,
    /// Nothing is at this path.
    #[error("nothing at {0}")]
    NotFound(DocPath),
    /// The path does not name a list.
    #[error("{0} is not a list")]
    NotAList(DocPath),
    /// The path does not name an invoke step.
    #[error("{0} is not an invoke step")]
    NotAnInvoke(DocPath),
    /// The component has no such input port.
    #[error("component '{component}' has no input port '{port}'")]
    UnknownPort {
        /// Component name.
        component: String,
        /// Port name.
        port: String,
    },
    /// The component is not declared.
    #[error("no component named '{0}'")]
    UnknownComponent(String),
    /// The value's contract does not fit the port's.
    #[error("cannot connect '{value}' to port '{port}': {reason}")]
    Incompatible {
        /// Value name.
        value: String,
        /// Port name.
        port: String,
        /// What differs.
        reason: String,
    },
    /// A rename's source is not used anywhere.
    #[error("no value named '{0}'")]
    UnknownValue(String),
    /// A new name is already in use.
    #[error("the name '{0}' is already in use")]
    NameTaken(String),
    /// A name is empty.
    #[error("a name cannot be empty")]
    EmptyName,
    /// The edited document would not pass the strict loader.
    #[error("the edit would make the document invalid: {0}")]
    Invalid(String),
}

/// One undoable edit.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Sets (or adds) the field at `path` to `value` (the inspector's edit).
    Set {
        /// Field path.
        path: DocPath,
        /// New value, as JSON.
        value: Value,
    },
    /// Deletes the map entry or list element at `path`.
    Remove {
        /// What to delete.
        path: DocPath,
    },
    /// Inserts `value` into the list at `list` before `index`.
    Insert {
        /// The list (created when absent).
        list: DocPath,
        /// Position (clamped to the end).
        index: usize,
        /// The new element.
        value: Value,
    },
    /// Binds invoke `step`'s input `port` to the SSA value `value`, after
    /// checking the value's contract against the port's.
    Connect {
        /// The invoke step.
        step: DocPath,
        /// Input port.
        port: String,
        /// Existing value.
        value: String,
    },
    /// Unbinds invoke `step`'s input `port`.
    Disconnect {
        /// The invoke step.
        step: DocPath,
        /// Input port.
        port: String,
    },
    /// Renames an SSA value at its definition and every read.
    RenameValue {
        /// Current name.
        from: String,
        /// New name.
        to: String,
    },
    /// Adds an invoke of `component` into the step list `list` at `index`,
    /// with every output port bound to a fresh value name.
    AddInvoke {
        /// The step list.
        list: DocPath,
        /// Position.
        index: usize,
        /// Component name.
        component: String,
    },
    /// Several commands as one undo step (paste, multi-delete).
    Batch {
        /// What the undo menu calls it.
        label: String,
        /// The commands, in order.
        commands: Vec<Command>,
    },
}

impl Command {
    /// A short description for the undo/redo menu.
    pub fn label(&self) -> String {
        match self {
            Command::Set { path, .. } => format!("Edit {path}"),
            Command::Remove { path } => format!("Delete {path}"),
            Command::Insert { list, .. } => format!("Insert into {list}"),
            Command::Connect { port, value, .. } => format!("Connect {value} -> {port}"),
            Command::Disconnect { port, .. } => format!("Disconnect {port}"),
            Command::RenameValue { from, to } => format!("Rename {from} -> {to}"),
            Command::AddInvoke { component, .. } => format!("Add invoke {component}"),
            Command::Batch { label, .. } => label.clone(),
        }
    }
}

/// The workflow path inside a document.
fn workflow() -> DocPath {
    crate::validate::workflow_path()
}

/// The component named by the invoke at `step`, checked to be one.
fn invoke_component(root: &Value, step: &DocPath) -> Result<String, EditError> {
    let node = tree::get(root, step).ok_or_else(|| EditError::NotFound(step.clone()))?;
    if node.get("kind").and_then(Value::as_str) != Some("invoke") {
        return Err(EditError::NotAnInvoke(step.clone()));
    }
    node.get("component")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| EditError::NotAnInvoke(step.clone()))
}

fn check_name(name: &str) -> Result<(), EditError> {
    if name.trim().is_empty() {
        Err(EditError::EmptyName)
    } else {
        Ok(())
    }
}

/// Applies `command` to `document`, returning the edited document; the
/// original is untouched, so a refused command changes nothing.
pub fn apply(document: &Document, command: &Command) -> Result<Document, EditError> {
    let wf = || {
        document
            .pipeline
            .as_ref()
            .map(|p| &p.workflow)
            .ok_or(EditError::NoWorkflow)
    };
    match command {
        Command::RenameValue { from, to } => {
            check_name(to)?;
            let names = values::value_names(wf()?);
            if !names.contains(from) {
                return Err(EditError::UnknownValue(from.clone()));
            }
            if from == to {
                return Ok(document.clone());
            }
            if names.contains(to) || wf()?.components.contains_key(to) {
                return Err(EditError::NameTaken(to.clone()));
            }
            let mut edited = document.clone();
            let spec = &mut edited
                .pipeline
                .as_mut()
                .ok_or(EditError::NoWorkflow)?
                .workflow;
            values::rename_value(spec, from, to);
            Ok(edited)
        }
        Command::Connect { step, port, value } => {
            let spec = wf()?;
            let root = tree::to_value(document);
            let component = invoke_component(&root, step)?;
            let declared = spec
                .components
                .get(&component)
                .ok_or_else(|| EditError::UnknownComponent(component.clone()))?;
            let port_contract = declared
                .ports
                .as_ref()
                .and_then(|p| p.inputs.as_ref())
                .and_then(|inputs| inputs.get(port))
                .ok_or_else(|| EditError::UnknownPort {
                    component: component.clone(),
                    port: port.clone(),
                })?;
            let known = values::value_contracts(spec);
            if let Some(value_contract) = known.get(value) {
                contracts::compatible(value_contract, port_contract).map_err(|reason| {
                    EditError::Incompatible {
                        value: value.clone(),
                        port: port.clone(),
                        reason,
                    }
                })?;
            } else if !values::value_names(spec).contains(value) {
                return Err(EditError::UnknownValue(value.clone()));
            }
            edit_tree(root, |root| {
                tree::set(root, &step.key("inputs").key(port.as_str()), json!(value))
            })
        }
        Command::Disconnect { step, port } => {
            let root = tree::to_value(document);
            invoke_component(&root, step)?;
            edit_tree(root, |root| {
                tree::remove(root, &step.key("inputs").key(port.as_str()))?;
                let inputs = step.key("inputs");
                if tree::get(root, &inputs)
                    .and_then(Value::as_object)
                    .is_some_and(|m| m.is_empty())
                {
                    tree::remove(root, &inputs)?;
                }
                Ok(())
            })
        }
        Command::AddInvoke {
            list,
            index,
            component,
        } => {
            let spec = wf()?;
            let declared = spec
                .components
                .get(component)
                .ok_or_else(|| EditError::UnknownComponent(component.clone()))?;
            let mut taken = values::value_names(spec);
            let mut outputs = serde_json::Map::new();
            for port in declared
                .ports
                .as_ref()
                .and_then(|p| p.outputs.as_ref())
                .into_iter()
                .flat_map(|o| o.keys())
            {
                let name = values::fresh_name(&format!("{component}_{port}"), &taken);
                taken.insert(name.clone());
                outputs.insert(port.clone(), json!(name));
            }
            let mut step = json!({"kind": "invoke", "component": component});
            if !outputs.is_empty() {
                step["outputs"] = Value::Object(outputs);
            }
            let root = tree::to_value(document);
            edit_tree(root, |root| tree::insert(root, list, *index, step))
        }
        Command::Set { path, value } => edit_tree(tree::to_value(document), |root| {
            tree::set(root, path, value.clone())
        }),
        Command::Remove { path } => edit_tree(tree::to_value(document), |root| {
            tree::remove(root, path).map(drop)
        }),
        Command::Insert { list, index, value } => edit_tree(tree::to_value(document), |root| {
            tree::insert(root, list, *index, value.clone())
        }),
        Command::Batch { commands, .. } => commands
            .iter()
            .try_fold(document.clone(), |doc, command| apply(&doc, command)),
    }
}

/// Runs a structural edit on the JSON form and reads the result back.
fn edit_tree(
    mut root: Value,
    edit: impl FnOnce(&mut Value) -> Result<(), EditError>,
) -> Result<Document, EditError> {
    edit(&mut root)?;
    tree::from_value(&root)
}

/// The path of the workflow's top-level step list (where new steps go by
/// default).
pub fn top_level_steps() -> DocPath {
    workflow().key("steps")
}

/// The command that applies a validator quick fix (one undo step).
pub fn fix_command(fix: &wfstudio_schema::Fix) -> Command {
    match &fix.edit {
        wfstudio_schema::FixEdit::AppendToList { path, items } => Command::Batch {
            label: fix.title.clone(),
            commands: items
                .iter()
                .map(|item| Command::Insert {
                    list: path.clone(),
                    index: usize::MAX,
                    value: json!(item),
                })
                .collect(),
        },
    }
}
