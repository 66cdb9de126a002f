//! Typed field editors for the inspector: every field of the selected item
//! as a widget (checkbox for booleans, a dtype picker, a text box for
//! strings, numbers and flat lists; nested maps and lists of maps as
//! collapsible groups). A change leaves as a [`Command::Set`] on that
//! field's document path, so it is undoable and revalidated like any edit.

use egui::{RichText, Ui};
use serde_json::Value;
use std::collections::BTreeMap;
use wfstudio_core::contracts::TENSOR_DTYPES;
use wfstudio_core::edit::Command;
use wfstudio_schema::{DocPath, Limits};

/// Text being typed into field boxes and the last refusal, per field path;
/// cleared whenever the inspected item or the revision changes.
#[derive(Clone, Debug, Default)]
pub struct FieldBuffers {
    text: BTreeMap<String, String>,
    errors: BTreeMap<String, String>,
}

impl FieldBuffers {
    /// Forgets every buffer (the document changed under them).
    pub fn clear(&mut self) {
        self.text.clear();
        self.errors.clear();
    }
}

/// Shows the fields of `value` (the item at `path`), leaving out the keys in
/// `skip` (edited by other controls). Returns the edit the user made.
pub fn show(
    ui: &mut Ui,
    path: &DocPath,
    value: &Value,
    skip: &[&str],
    buffers: &mut FieldBuffers,
) -> Option<Command> {
    let mut command = None;
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter().filter(|(k, _)| !skip.contains(&k.as_str())) {
                field(
                    ui,
                    key,
                    &path.key(key.as_str()),
                    child,
                    buffers,
                    &mut command,
                );
            }
        }
        other => field(ui, "value", path, other, buffers, &mut command),
    }
    command
}

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Object(_) | Value::Array(_))
}

fn field(
    ui: &mut Ui,
    key: &str,
    path: &DocPath,
    value: &Value,
    buffers: &mut FieldBuffers,
    command: &mut Option<Command>,
) {
    let id = path.to_string();
    match value {
        Value::Object(map) => {
            egui::CollapsingHeader::new(key)
                .id_salt(&id)
                .default_open(map.len() <= 6)
                .show(ui, |ui| {
                    for (k, child) in map {
                        field(ui, k, &path.key(k.as_str()), child, buffers, command);
                    }
                });
        }
        Value::Array(items) if !items.iter().all(is_scalar) => {
            egui::CollapsingHeader::new(format!("{key} ({})", items.len()))
                .id_salt(&id)
                .default_open(items.len() <= 4)
                .show(ui, |ui| {
                    for (i, item) in items.iter().enumerate() {
                        field(
                            ui,
                            &format!("[{i}]"),
                            &path.index(i),
                            item,
                            buffers,
                            command,
                        );
                    }
                });
        }
        Value::Bool(current) => {
            ui.horizontal(|ui| {
                let mut checked = *current;
                if ui.checkbox(&mut checked, key).changed() {
                    *command = Some(set(path, Value::Bool(checked)));
                }
            });
        }
        Value::String(current) if key == "dtype" => {
            ui.horizontal(|ui| {
                ui.label(key);
                egui::ComboBox::from_id_salt(("dtype", &id))
                    .selected_text(current.as_str())
                    .show_ui(ui, |ui| {
                        for dtype in TENSOR_DTYPES {
                            if ui.selectable_label(current == dtype, *dtype).clicked()
                                && current != dtype
                            {
                                *command = Some(set(path, Value::String((*dtype).into())));
                            }
                        }
                    });
            });
        }
        Value::String(current) if key == "kind" => {
            // Changing a kind changes which fields exist: done in the YAML text.
            ui.horizontal(|ui| {
                ui.label(key);
                ui.label(RichText::new(current).monospace())
                    .on_hover_text("edit the YAML below to change the kind");
            });
        }
        scalar_or_list => text_field(ui, key, path, scalar_or_list, buffers, command),
    }
}

/// How a scalar or a flat list is shown in a text box: strings as they are,
/// everything else as JSON (which the YAML reader also accepts).
fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn text_field(
    ui: &mut Ui,
    key: &str,
    path: &DocPath,
    value: &Value,
    buffers: &mut FieldBuffers,
    command: &mut Option<Command>,
) {
    let id = path.to_string();
    let original = as_text(value);
    ui.horizontal(|ui| {
        ui.label(key);
        let buffer = buffers
            .text
            .entry(id.clone())
            .or_insert_with(|| original.clone());
        let edit = ui.add(
            egui::TextEdit::singleline(buffer)
                .id_salt(("field", &id))
                .desired_width(f32::INFINITY),
        );
        if edit.lost_focus() && *buffer != original {
            match parse_like(value, buffer) {
                Ok(new) => {
                    buffers.errors.remove(&id);
                    *command = Some(set(path, new));
                }
                Err(error) => {
                    buffers.errors.insert(id.clone(), error);
                }
            }
        }
    });
    if let Some(error) = buffers.errors.get(&id) {
        ui.colored_label(
            crate::style::severity_color(wfstudio_schema::Severity::Error),
            error,
        );
    }
}

/// Reads `text` as a new value for a field that now holds `old`: a string
/// stays a string; a number must stay a number; a list or null is read as
/// YAML (so `[batch, 4]` and `~` work).
fn parse_like(old: &Value, text: &str) -> Result<Value, String> {
    if old.is_string() {
        return Ok(Value::String(text.to_string()));
    }
    let parsed =
        wfstudio_schema::tree::parse_value(text, &Limits::default()).map_err(|e| e.to_string())?;
    match (old, &parsed) {
        (Value::Number(_), Value::Number(_)) => Ok(parsed),
        (Value::Number(_), _) => Err(format!("`{text}` is not a number")),
        _ => Ok(parsed),
    }
}

fn set(path: &DocPath, value: Value) -> Command {
    Command::Set {
        path: path.clone(),
        value,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_like;
    use serde_json::json;

    #[test]
    fn typed_text_keeps_the_field_type() {
        assert_eq!(parse_like(&json!("a"), "12"), Ok(json!("12")));
        assert_eq!(parse_like(&json!(4), "12"), Ok(json!(12)));
        assert_eq!(parse_like(&json!(0.5), "1e-3"), Ok(json!(0.001)));
        assert_eq!(
            parse_like(&json!(4), "four"),
            Err("`four` is not a number".into())
        );
        assert_eq!(
            parse_like(&json!(["batch", 4]), "[batch, 8, 2]"),
            Ok(json!(["batch", 8, 2]))
        );
    }
}
