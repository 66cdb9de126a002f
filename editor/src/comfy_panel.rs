//! The pane of an imported ComfyUI graph: what became of it (lowered, or
//! refused and why), the graph as drawn with badges, and the links between
//! its nodes and the lowered steps in both directions.

use crate::comfy_view::{self, ComfyOverlay, ComfyViewState};
use crate::import::ImportedGraph;
use std::collections::BTreeSet;
use std::path::PathBuf;
use wfstudio_core::comfyui::lower::Refusal;
use wfstudio_core::comfyui::view::ComfyView;
use wfstudio_schema::DocPath;

/// What the user asked for in the pane.
#[derive(Clone, Debug, PartialEq)]
pub enum ComfyAction {
    /// Select these lowered steps (the ones a clicked node became).
    SelectSteps(Vec<DocPath>),
    /// Open the Save as package dialog.
    SaveAsPackage,
    /// Write the package with stand-in models to a scratch folder and run it.
    RunWithStandIns,
    /// Write the package with a models folder's files and run it.
    RunWithModels,
    /// Lower again for a package folder (its adapters serve LoRA loaders).
    ChooseTarget,
}

/// An imported ComfyUI graph beside its lowered workflow.
pub struct ComfyPanel {
    /// The ComfyUI file.
    pub source: PathBuf,
    /// The package it was lowered for, if chosen.
    pub target: Option<PathBuf>,
    /// The graph as drawn.
    pub view: ComfyView,
    /// Why it was refused (empty when lowered).
    pub refusals: Vec<Refusal>,
    /// Drawn nodes that cannot reach the image sink.
    pub ignored: BTreeSet<usize>,
    /// Facts about the lowering and conversion warnings.
    pub notes: Vec<String>,
    /// Lowered step -> the drawn nodes it came from.
    pub provenance: Vec<(DocPath, BTreeSet<usize>)>,
    /// The node last clicked.
    pub selected: Option<usize>,
    /// Pan and zoom.
    pub state: ComfyViewState,
    /// The graph's prompts, `(input, text)`.
    pub prompts: Vec<(String, String)>,
    /// The document revision the provenance describes (the links are off
    /// once the lowered document is edited, since step paths shift).
    pub revision: Option<u64>,
}

impl ComfyPanel {
    /// The pane of one import.
    pub fn new(graph: &ImportedGraph) -> Self {
        let view = graph.imported.view.clone();
        let nodes = |ids: &[String]| -> BTreeSet<usize> {
            ids.iter().filter_map(|id| view.node_for(id)).collect()
        };
        let mut notes = graph.imported.warnings.clone();
        let (refusals, ignored, provenance) = match &graph.imported.outcome {
            Ok(lowered) => {
                if graph.target.is_none() {
                    notes.push(
                        "Components follow the default package layout (docs/COMFYUI.md): Save as package… or ▶ Run with stand-ins writes the policies and models."
                            .into(),
                    );
                }
                notes.extend(lowered.notes.iter().cloned());
                notes.extend(
                    lowered
                        .prompts
                        .iter()
                        .map(|(input, text)| format!("{input}: {text:?}")),
                );
                let provenance = lowered
                    .provenance
                    .iter()
                    .filter_map(|(path, ids)| Some((DocPath::parse(path)?, nodes(ids))))
                    .collect();
                // A drawn node (a subgraph instance, say) is ignored only
                // when none of its members is used.
                let used = nodes(&lowered.used);
                let ignored = nodes(&lowered.ignored).difference(&used).copied().collect();
                (Vec::new(), ignored, provenance)
            }
            Err(refusals) => (refusals.clone(), BTreeSet::new(), Vec::new()),
        };
        ComfyPanel {
            source: graph.source.clone(),
            target: graph.target.clone(),
            view,
            refusals,
            ignored,
            notes,
            provenance,
            selected: None,
            state: ComfyViewState::default(),
            prompts: graph
                .imported
                .outcome
                .as_ref()
                .map(|l| l.prompts.clone())
                .unwrap_or_default(),
            revision: None,
        }
    }

    /// The drawn nodes behind the selected lowered steps: for each selected
    /// path, the deepest provenance entry that holds it.
    pub fn highlighted(&self, selection: &[DocPath]) -> BTreeSet<usize> {
        selection
            .iter()
            .filter_map(|sel| {
                self.provenance
                    .iter()
                    .filter(|(path, _)| sel.starts_with(path))
                    .max_by_key(|(path, _)| path.depth())
            })
            .flat_map(|(_, nodes)| nodes.iter().copied())
            .collect()
    }

    /// The lowered steps drawn node `n` became.
    pub fn steps_from(&self, n: usize) -> Vec<DocPath> {
        self.provenance
            .iter()
            .filter(|(_, nodes)| nodes.contains(&n))
            .map(|(path, _)| path.clone())
            .collect()
    }

    /// Draws the pane; `revision` is the open lowered document's, if any.
    pub fn show(
        &mut self,
        ui: &mut egui::Ui,
        selection: &[DocPath],
        revision: Option<u64>,
    ) -> Option<ComfyAction> {
        let lowered = revision.is_some();
        let linked = lowered && revision == self.revision;
        let mut action = None;
        let name = self
            .source
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        ui.horizontal(|ui| {
            ui.strong(format!("ComfyUI: {name}"));
            if self.refusals.is_empty() {
                ui.label(format!("lowered, {} steps linked", self.provenance.len()));
            } else {
                ui.colored_label(
                    crate::style::severity_color(wfstudio_schema::Severity::Error),
                    format!("refused ({})", self.refusals.len()),
                );
            }
            if ui
                .add_enabled(lowered, egui::Button::new("Save as package…"))
                .clicked()
            {
                action = Some(ComfyAction::SaveAsPackage);
            }
            if ui.button("Lower for package…").clicked() {
                action = Some(ComfyAction::ChooseTarget);
            }
        });
        ui.horizontal(|ui| {
            if ui
                .add_enabled(lowered, egui::Button::new("▶ Run with stand-ins"))
                .on_hover_text("Write the package with tiny stand-in models and run it")
                .clicked()
            {
                action = Some(ComfyAction::RunWithStandIns);
            }
            if ui
                .add_enabled(lowered, egui::Button::new("▶ Run with models…"))
                .on_hover_text("Write the package with the files of a models folder and run it")
                .clicked()
            {
                action = Some(ComfyAction::RunWithModels);
            }
        });
        if let Some(target) = &self.target {
            ui.small(format!("for package {}", target.display()));
        }
        if !self.view.drawn_in_comfyui {
            ui.small("API prompt: no positions in the file, laid out by link depth");
        }
        for r in &self.refusals {
            if ui.link(comfy_view::refusal_text(r)).clicked() {
                self.selected = self.view.node_for(&r.node);
            }
        }
        for note in &self.notes {
            ui.small(note);
        }
        if lowered && !linked {
            ui.small("Edited since the import: the links between ComfyUI nodes and steps are off.");
        }
        if !self.ignored.is_empty() {
            ui.small(format!(
                "{} nodes do not reach the image sink and were ignored (faded)",
                self.ignored.len()
            ));
        }
        let highlighted = if linked {
            self.highlighted(selection)
        } else {
            BTreeSet::new()
        };
        let overlay = ComfyOverlay {
            refusals: &self.refusals,
            ignored: &self.ignored,
            highlighted: &highlighted,
            selected: self.selected,
        };
        if let Some(n) = comfy_view::show(ui, &self.view, &overlay, &mut self.state) {
            self.selected = Some(n);
            let steps = self.steps_from(n);
            if linked && !steps.is_empty() {
                action = Some(ComfyAction::SelectSteps(steps));
            }
        }
        action
    }
}
