//! The editors of the run inputs form's rows: number boxes (kept within
//! the range the model gives; a menu of names for a labelled input, a dice
//! button for seeds), checkboxes, JSON
//! and prompt text boxes, and the file picker with its value range.

use super::{Row, Widget};
use serde_json::Value;
use std::hash::{BuildHasher, Hasher};
use wfstudio_runner::media_input::InputMedia;
use wfstudio_schema::types::workflow::ValueRange;

/// Longest tensor JSON edited in a text box; larger tensors (latents,
/// images) come from the recipe and are only described.
const MAX_EDITABLE_TEXT: usize = 512;

/// A random seed that fits every integer dtype's positive range.
fn dice() -> i64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (hasher.finish() % (i32::MAX as u64)) as i64
}

/// The recipe spelling of a value range.
pub(super) fn range_name(range: ValueRange) -> &'static str {
    match range {
        ValueRange::ZeroToOne => "zero_to_one",
        ValueRange::NegativeOneToOne => "negative_one_to_one",
        ValueRange::ZeroTo255 => "zero_to_255",
    }
}

/// Every value range, in menu order.
pub(super) const RANGES: [ValueRange; 3] = [
    ValueRange::ZeroToOne,
    ValueRange::NegativeOneToOne,
    ValueRange::ZeroTo255,
];

/// The colour of an error line.
pub(super) const ERROR_COLOR: egui::Color32 = egui::Color32::from_rgb(230, 70, 60);

/// The editor of one row's value.
pub(super) fn value_widget(
    ui: &mut egui::Ui,
    row: &mut Row,
    label: egui::Id,
    recipe: Option<&Value>,
) {
    match &mut row.widget {
        Widget::Int(i) if row.labels.is_some() => {
            let labels = row.labels.as_deref().unwrap_or_default();
            let name = |i: i64| {
                usize::try_from(i)
                    .ok()
                    .and_then(|i| labels.get(i))
                    .map_or_else(|| format!("{i} (none of the names)"), Clone::clone)
            };
            egui::ComboBox::from_id_salt(("labels", &row.name))
                .selected_text(name(*i))
                .show_ui(ui, |ui| {
                    for (value, label) in labels.iter().enumerate() {
                        ui.selectable_value(i, value as i64, label);
                    }
                })
                .response
                .labelled_by(label)
                .on_hover_text(format!("{i}"));
        }
        Widget::Int(i) => {
            let mut value = egui::DragValue::new(i);
            if let Some((low, high)) = row.range {
                value = value.range(low..=high);
            }
            ui.add(value).labelled_by(label);
            if row.seed && ui.button("🎲").on_hover_text("random seed").clicked() {
                *i = dice();
            }
        }
        Widget::Float(f) => {
            let mut value = egui::DragValue::new(f).speed(0.01);
            if let Some((low, high)) = row.range {
                value = value.range(low..=high);
            }
            ui.add(value).labelled_by(label);
        }
        Widget::Bool(b) => {
            ui.checkbox(b, "");
        }
        Widget::Json(text) if text.len() > MAX_EDITABLE_TEXT => {
            // Too big to edit as text: say what it is.
            ui.weak(format!("{} (from {})", row.contract, row.origin));
        }
        Widget::Json(text) => {
            let hint = match row.origin {
                "runtime" => "(bound by the runtime)",
                "required" => "(required) {dtype, shape, data}",
                _ => "{dtype, shape, data}",
            };
            ui.add(
                egui::TextEdit::singleline(text)
                    .hint_text(hint)
                    .desired_width(160.0),
            )
            .labelled_by(label);
        }
        Widget::Prompt(text) => {
            let hint = match recipe.and_then(|r| r.get("data")) {
                Some(ids) => format!("prompt text (empty: the recipe's ids {ids})"),
                None => "prompt text".to_string(),
            };
            ui.add(
                egui::TextEdit::multiline(text)
                    .hint_text(hint)
                    .desired_rows(2)
                    .desired_width(200.0),
            )
            .labelled_by(label);
        }
        Widget::File {
            path,
            range,
            summary,
        } => {
            let name = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            ui.label(format!("{name}: {summary}"))
                .on_hover_text(path.display().to_string());
            if matches!(
                row.media,
                Some(InputMedia::Image { .. } | InputMedia::Video)
            ) && row.dtype != "uint8"
            {
                let mut chosen = *range;
                egui::ComboBox::from_id_salt(("range", &row.name))
                    .selected_text(range_name(chosen))
                    .show_ui(ui, |ui| {
                        for r in RANGES {
                            ui.selectable_value(&mut chosen, r, range_name(r));
                        }
                    });
                if chosen != *range {
                    let path = path.clone();
                    row.widget = row.file_widget(path, chosen);
                }
            }
        }
    }
}

/// The file picker of a row whose input takes a picture, sound or file.
pub(super) fn pick_file(ui: &mut egui::Ui, row: &mut Row, media: InputMedia) {
    let what = match media {
        InputMedia::Image { .. } => "Choose a picture…",
        InputMedia::Video => "Choose a video (animated GIF, WebP or PNG)…",
        InputMedia::Waveform => "Choose a WAV file…",
        InputMedia::EncodedFile => "Choose a file…",
    };
    if !ui.small_button("📂").on_hover_text(what).clicked() {
        return;
    }
    let mut dialog = rfd::FileDialog::new().set_title(what);
    let extensions = crate::input_media::extensions(media);
    if !extensions.is_empty() {
        dialog = dialog.add_filter(what.trim_end_matches('…'), extensions);
    }
    if let Some(path) = dialog.pick_file() {
        let range = match &row.widget {
            Widget::File { range, .. } => *range,
            _ => ValueRange::ZeroToOne,
        };
        row.widget = row.file_widget(path, range);
    }
}
