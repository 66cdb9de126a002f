//! The YAML tab: the document text, with the lines that carry diagnostics
//! highlighted. Edits are parsed off the UI thread; a text that parses
//! becomes the new document state (one undo step), so graph and text stay
//! in sync both ways.

use crate::style::severity_color;
use egui::text::{LayoutJob, TextFormat};
use egui::{FontId, Ui};
use std::collections::BTreeMap;
use wfstudio_core::Report;
use wfstudio_schema::Severity;

/// The tab's buffer.
#[derive(Clone, Debug, Default)]
pub struct YamlState {
    /// The text shown (and edited).
    pub text: String,
    /// The revision the text shows.
    pub revision: Option<u64>,
    /// The user typed since the text was loaded.
    pub edited: bool,
    /// Why the typed text does not parse.
    pub error: Option<String>,
}

/// Worst severity per 1-based line.
fn marked_lines(report: &Report) -> BTreeMap<usize, Severity> {
    let mut lines = BTreeMap::new();
    for d in &report.diagnostics {
        if let Some(span) = d.span {
            let entry = lines.entry(span.start.line).or_insert(d.severity);
            if d.severity == Severity::Error {
                *entry = Severity::Error;
            }
        }
    }
    lines
}

/// Shows the text; returns true when the user changed it this frame.
pub fn show(ui: &mut Ui, state: &mut YamlState, report: &Report) -> bool {
    if let Some(error) = &state.error {
        ui.colored_label(severity_color(Severity::Error), error);
    }
    let marks = marked_lines(report);
    let mut layouter = |ui: &Ui, text: &dyn egui::TextBuffer, wrap: f32| {
        let mut job = LayoutJob::default();
        let color = ui.visuals().text_color();
        for (i, line) in text.as_str().split_inclusive('\n').enumerate() {
            let mut format = TextFormat::simple(FontId::monospace(13.0), color);
            if let Some(&severity) = marks.get(&(i + 1)) {
                format.background = severity_color(severity).gamma_multiply(0.25);
            }
            job.append(line, 0.0, format);
        }
        job.wrap.max_width = wrap;
        ui.fonts_mut(|f| f.layout_job(job))
    };
    let mut changed = false;
    egui::ScrollArea::both()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            let response = ui.add(
                egui::TextEdit::multiline(&mut state.text)
                    .id_salt("yaml_tab")
                    .code_editor()
                    .desired_width(f32::INFINITY)
                    .layouter(&mut layouter),
            );
            changed = response.changed();
        });
    if changed {
        state.edited = true;
    }
    changed
}
