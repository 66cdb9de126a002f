//! The diagnostics panel: one row per finding (severity, code, message,
//! help, line:column); clicking a row selects and frames its node; a quick
//! fix, when the rule offers one, is a button.

use crate::style::severity_color;
use egui::{RichText, Ui};
use wfstudio_core::Report;
use wfstudio_core::edit::{Command, fix_command};
use wfstudio_schema::DocPath;

/// What the user picked in the panel.
#[derive(Clone, Debug, PartialEq)]
pub enum DiagnosticAction {
    /// Go to the item at this path.
    Reveal(DocPath),
    /// Apply a quick fix.
    Fix(Command),
}

/// Draws the list; `stale` greys it while a newer revision is validated.
pub fn show(ui: &mut Ui, report: &Report, stale: bool) -> Option<DiagnosticAction> {
    let errors = report
        .diagnostics
        .iter()
        .filter(|d| d.severity == wfstudio_schema::Severity::Error)
        .count();
    let warnings = report.diagnostics.len() - errors;
    ui.horizontal(|ui| {
        ui.strong(format!("{errors} errors, {warnings} warnings"));
        if stale {
            ui.spinner();
            ui.weak("validating…");
        }
    });
    let mut action = None;
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            for (i, d) in report.diagnostics.iter().enumerate() {
                ui.push_id(i, |ui| {
                    ui.horizontal_wrapped(|ui| {
                        let place = d
                            .span
                            .map(|s| format!("{}:{}", s.start.line, s.start.column))
                            .unwrap_or_default();
                        ui.label(
                            RichText::new(format!("{}[{}]", d.severity, d.code))
                                .color(severity_color(d.severity))
                                .monospace(),
                        );
                        let row = ui.add(egui::Label::new(&d.message).sense(egui::Sense::click()));
                        ui.weak(place);
                        if row.on_hover_text(d.path.to_string()).clicked() {
                            action = Some(DiagnosticAction::Reveal(d.path.clone()));
                        }
                        if let Some(fix) = &d.fix
                            && ui.small_button(format!("Fix: {}", fix.title)).clicked()
                        {
                            action = Some(DiagnosticAction::Fix(fix_command(fix)));
                        }
                    });
                    if let Some(help) = &d.help {
                        ui.weak(format!("    help: {help}"));
                    }
                });
            }
        });
    action
}
