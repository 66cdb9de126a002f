//! The inspector: edits the selected item. Invokes get binding controls
//! (a value picker per input port, a rename box per output value); every
//! field gets a typed editor ([`crate::fields`]); the item's YAML text can
//! be edited as a whole (to change a kind, or paste); and a delete button.
//! All changes leave as [`Command`]s.

use egui::{RichText, Ui};
use std::collections::BTreeSet;
use wfstudio_core::edit::{Command, tree, values};
use wfstudio_schema::types::document::Document;
use wfstudio_schema::types::steps::Step;
use wfstudio_schema::{DocPath, Limits};

/// The inspector's editing buffers.
#[derive(Clone, Debug, Default)]
pub struct InspectorState {
    /// The item and revision the buffers were filled from.
    loaded_for: Option<(DocPath, u64)>,
    /// The item's YAML text being edited.
    pub text: String,
    /// Rename boxes, one per output value of an invoke.
    renames: Vec<String>,
    /// Why the last Apply of the text was refused.
    pub error: Option<String>,
    /// Whether the item exists in the loaded revision.
    exists: bool,
    /// Every value name of the loaded revision, sorted (the binding pickers).
    names: Vec<String>,
    /// The item as a JSON tree (what the field editors show).
    item: serde_json::Value,
    /// The field editors' buffers.
    fields: crate::fields::FieldBuffers,
}

/// The step at `path`, if it names one.
fn step_at<'d>(document: &'d Document, path: &DocPath) -> Option<&'d Step> {
    let wf = &document.pipeline.as_ref()?.workflow;
    let mut segments = path.segments().into_iter().skip(2);
    let mut list: &[Step] = match segments.next()? {
        wfstudio_schema::path::Segment::Key(k) if k == "steps" => &wf.steps,
        _ => return None,
    };
    let mut current: Option<&Step> = None;
    while let Some(segment) = segments.next() {
        use wfstudio_schema::path::Segment::{Index, Key};
        match (segment, current) {
            (Index(i), _) => current = Some(list.get(i)?),
            (Key(k), Some(Step::Sequence(s))) if k == "steps" => list = &s.steps,
            (Key(k), Some(Step::Loop(l))) if k == "steps" => list = &l.steps,
            (Key(k), Some(Step::Loop(l))) if k == "setup" => list = l.setup.as_deref()?,
            (Key(k), Some(Step::Branch(b))) if k == "cases" => {
                let Some(Key(case)) = segments.next() else {
                    return None;
                };
                current = Some(b.cases.get(&case)?);
            }
            (Key(k), Some(Step::Branch(b))) if k == "default" => {
                current = Some(b.default.as_deref()?)
            }
            _ => return None,
        }
    }
    current
}

/// Shows the inspector for `selected` in `document` at `revision`; `last_run`
/// gives, per step path, the lines that tell of its last run.
pub fn show(
    ui: &mut Ui,
    document: &Document,
    revision: u64,
    selected: Option<&DocPath>,
    last_run: &std::collections::HashMap<String, Vec<String>>,
    state: &mut InspectorState,
) -> Option<Command> {
    let Some(path) = selected else {
        ui.weak("Select a node to inspect it.");
        return None;
    };
    let step = step_at(document, path);
    // Derived once per item and revision, not every frame.
    if state.loaded_for.as_ref() != Some(&(path.clone(), revision)) {
        state.loaded_for = Some((path.clone(), revision));
        let root = tree::to_value(document);
        let node = tree::get(&root, path);
        state.exists = node.is_some();
        state.text = node.map(wfstudio_schema::emit::to_yaml).unwrap_or_default();
        state.item = node.cloned().unwrap_or_default();
        state.fields.clear();
        state.error = None;
        state.renames = match step {
            Some(Step::Invoke(invoke)) => invoke
                .outputs
                .iter()
                .flatten()
                .map(|(_, v)| v.clone())
                .collect(),
            _ => Vec::new(),
        };
        state.names = match document.pipeline.as_ref() {
            Some(p) => {
                let mut names: BTreeSet<String> =
                    values::value_names(&p.workflow).into_iter().collect();
                names.extend(values::value_contracts(&p.workflow).into_keys());
                names.into_iter().collect()
            }
            None => Vec::new(),
        };
    }
    if !state.exists {
        ui.weak("The selected item no longer exists.");
        return None;
    }
    let mut command = None;
    ui.label(RichText::new(path.to_string()).monospace().weak());
    if let Some(lines) = last_run.get(&path.to_string()) {
        ui.separator();
        ui.strong("Last run");
        for line in lines {
            ui.label(line);
        }
    }
    if let (Some(Step::Invoke(invoke)), Some(wf)) =
        (step, document.pipeline.as_ref().map(|p| &p.workflow))
    {
        ui.separator();
        ui.strong(format!("invoke {}", invoke.component));
        let ports = wf
            .components
            .get(&invoke.component)
            .and_then(|c| c.ports.as_ref());
        egui::Grid::new("bindings")
            .num_columns(2)
            .striped(true)
            .show(ui, |ui| {
                for (port, contract) in ports.and_then(|p| p.inputs.as_ref()).into_iter().flatten()
                {
                    let bound = invoke.inputs.as_ref().and_then(|i| i.get(port));
                    ui.label(port)
                        .on_hover_text(wfstudio_core::contracts::describe(contract));
                    let shown = bound.cloned().unwrap_or_else(|| "(unbound)".into());
                    egui::ComboBox::from_id_salt(("bind", port))
                        .selected_text(shown)
                        .width(180.0)
                        .show_ui(ui, |ui| {
                            if bound.is_some() && ui.selectable_label(false, "(unbound)").clicked()
                            {
                                command = Some(Command::Disconnect {
                                    step: path.clone(),
                                    port: port.clone(),
                                });
                            }
                            for name in &state.names {
                                if ui.selectable_label(bound == Some(name), name).clicked()
                                    && bound != Some(name)
                                {
                                    command = Some(Command::Connect {
                                        step: path.clone(),
                                        port: port.clone(),
                                        value: name.clone(),
                                    });
                                }
                            }
                        });
                    ui.end_row();
                }
                for (i, (port, value)) in invoke.outputs.iter().flatten().enumerate() {
                    ui.label(format!("{port} →"));
                    if let Some(buffer) = state.renames.get_mut(i) {
                        let edit = ui.add(
                            egui::TextEdit::singleline(buffer)
                                .id_salt(("rename", port))
                                .desired_width(180.0),
                        );
                        if edit.lost_focus()
                            && ui.input(|i| i.key_pressed(egui::Key::Enter))
                            && buffer != value
                        {
                            command = Some(Command::RenameValue {
                                from: value.clone(),
                                to: buffer.clone(),
                            });
                        }
                    }
                    ui.end_row();
                }
            });
    }
    ui.separator();
    // Bindings of an invoke are edited above (renames must follow reads).
    let skip: &[&str] = if matches!(step, Some(Step::Invoke(_))) {
        &["inputs", "outputs"]
    } else {
        &[]
    };
    if let Some(edit) = crate::fields::show(ui, path, &state.item, skip, &mut state.fields) {
        command = Some(edit);
    }
    ui.separator();
    ui.label("YAML");
    ui.add(
        egui::TextEdit::multiline(&mut state.text)
            .id_salt("inspector_yaml")
            .code_editor()
            .desired_rows(8)
            .desired_width(f32::INFINITY),
    );
    ui.horizontal(|ui| {
        if ui.button("Apply").clicked() {
            match wfstudio_schema::tree::parse_value(&state.text, &Limits::default()) {
                Ok(value) => {
                    state.error = None;
                    command = Some(Command::Set {
                        path: path.clone(),
                        value,
                    });
                }
                Err(error) => state.error = Some(error.to_string()),
            }
        }
        if ui.button("Revert").clicked() {
            state.loaded_for = None;
        }
        if ui.button("Delete").clicked() {
            command = Some(Command::Remove { path: path.clone() });
        }
    });
    if let Some(error) = &state.error {
        ui.colored_label(
            crate::style::severity_color(wfstudio_schema::Severity::Error),
            error,
        );
    }
    command
}
