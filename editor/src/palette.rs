//! The node palette (double-click on the canvas, as in ComfyUI): a search
//! box over the package's components; picking one adds an invoke of it.

use egui::Ui;
use wfstudio_schema::types::workflow::WorkflowSpec;

/// The palette's search text.
#[derive(Clone, Debug, Default)]
pub struct PaletteState {
    /// Whether it is open.
    pub open: bool,
    /// The filter.
    pub query: String,
}

/// Components whose name contains `query` (case-insensitive), in declared order.
pub fn matches<'w>(wf: &'w WorkflowSpec, query: &str) -> Vec<&'w str> {
    let query = query.to_lowercase();
    wf.components
        .keys()
        .filter(|name| name.to_lowercase().contains(&query))
        .map(String::as_str)
        .collect()
}

/// Shows the palette window; returns the component picked.
pub fn show(ctx: &egui::Context, wf: &WorkflowSpec, state: &mut PaletteState) -> Option<String> {
    if !state.open {
        return None;
    }
    let mut picked = None;
    let mut open = state.open;
    egui::Window::new("Add node")
        .open(&mut open)
        .collapsible(false)
        .resizable(false)
        .show(ctx, |ui: &mut Ui| {
            let search = ui.text_edit_singleline(&mut state.query);
            search.request_focus();
            let found = matches(wf, &state.query);
            if ui.input(|i| i.key_pressed(egui::Key::Enter))
                && let Some(first) = found.first()
            {
                picked = Some(first.to_string());
            }
            for name in found {
                if ui.button(format!("invoke {name}")).clicked() {
                    picked = Some(name.to_string());
                }
            }
        });
    state.open = open && picked.is_none();
    if picked.is_some() {
        state.query.clear();
    }
    picked
}
