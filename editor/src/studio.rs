//! The studio window's contents: menu bar, graph and YAML tabs, inspector,
//! diagnostics panel, palette, search and status line, over one open
//! document. Parsing, validation and layout happen on the [`Worker`]; this
//! type only draws, turns input into [`Command`]s and applies them.

use crate::canvas::{self, CanvasAction, CanvasState, CanvasView, RunOverlay};
use crate::comfy_panel::{ComfyAction, ComfyPanel};
use crate::diagnostics::{self, DiagnosticAction};
use crate::document::OpenDocument;
use crate::inspector::{self, InspectorState};
use crate::palette::PaletteState;
use crate::worker::{Job, Outcome, Worker};
use crate::yaml_view::{self, YamlState};
use egui::Key;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wfstudio_core::comfyui::package::Models;
use wfstudio_core::edit::Command;
use wfstudio_schema::DocPath;

/// Which view fills the centre.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    /// The node graph.
    Graph,
    /// The document text.
    Yaml,
}

/// A line in the status bar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The text.
    pub text: String,
    /// Whether it reports a failure.
    pub error: bool,
}

/// The whole studio state.
pub struct Studio {
    pub(crate) worker: Worker,
    /// The open document, if any.
    pub doc: Option<OpenDocument>,
    /// Files or folders being opened.
    pub(crate) opening: Vec<PathBuf>,
    /// The newest status line.
    pub status: Option<Status>,
    /// Recently opened documents, newest first.
    pub recent: Vec<PathBuf>,
    /// Selected items (document paths).
    pub selection: Vec<DocPath>,
    /// The centre tab.
    pub tab: Tab,
    pub(crate) canvas: CanvasState,
    pub(crate) inspector: InspectorState,
    pub(crate) yaml: YamlState,
    pub(crate) palette: PaletteState,
    pub(crate) search: Option<String>,
    pub(crate) clipboard: Vec<Value>,
    pub(crate) confirm_close: bool,
    /// A file to open once the user has said what to do with unsaved edits.
    /// A ComfyUI graph to lower again for a package folder, once the user
    /// has said what to do with unsaved edits.
    pub(crate) relower_for: Option<PathBuf>,
    pub(crate) replace_with: Option<PathBuf>,
    /// Set once the user agreed to close (the app then closes the window).
    pub close_confirmed: bool,
    /// Dark theme on.
    pub dark: bool,
    /// The revision whose recovery copy was last written.
    pub(crate) autosaved: Option<u64>,
    /// When the pending recovery copy is due (edits are batched).
    pub(crate) autosave_due: Option<Instant>,
    /// A recovery-copy job was sent and has not reported back.
    pub(crate) autosave_pending: bool,
    /// The config folder (recent files, recovery copies).
    pub(crate) config: Option<PathBuf>,
    /// Run progress and timing shown on the canvas (set by the run panel).
    pub run_overlay: RunOverlay,
    /// The SSA value last clicked on the canvas (a wire or a bound port),
    /// for the run panel's value inspector.
    pub inspected_value: Option<String>,
    /// The imported ComfyUI graph shown beside its lowered workflow.
    pub comfy: Option<ComfyPanel>,
    /// The Save as package dialog, while open.
    pub package_dialog: Option<crate::package_dialog::PackageDialog>,
    /// Import ▸ ComfyUI template…
    pub templates: crate::template_browser::TemplateBrowser,
    /// The document of a package written to be run (Run with stand-ins /
    /// with models): the run panel runs it once it is open.
    pub(crate) run_requested: Option<PathBuf>,
}

/// How long edits wait before their recovery copy is written.
pub const AUTOSAVE_DELAY: Duration = Duration::from_millis(500);

impl Studio {
    /// A studio with no document; `notify` wakes the UI when background
    /// work finishes (`egui::Context::request_repaint`).
    pub fn new(notify: impl Fn() + Send + 'static) -> Self {
        Self::with_config_dir(notify, crate::recent::config_dir())
    }

    /// A studio keeping its recent files and recovery copies in `config`
    /// (`None`: keep none).
    pub fn with_config_dir(notify: impl Fn() + Send + 'static, config: Option<PathBuf>) -> Self {
        Studio {
            worker: Worker::start(notify),
            doc: None,
            opening: Vec::new(),
            status: None,
            recent: crate::recent::load(config.as_deref()),
            selection: Vec::new(),
            tab: Tab::Graph,
            canvas: CanvasState::default(),
            inspector: InspectorState::default(),
            yaml: YamlState::default(),
            palette: PaletteState::default(),
            search: None,
            clipboard: Vec::new(),
            confirm_close: false,
            replace_with: None,
            relower_for: None,
            close_confirmed: false,
            dark: true,
            autosaved: None,
            autosave_due: None,
            autosave_pending: false,
            config,
            run_overlay: RunOverlay::default(),
            inspected_value: None,
            comfy: None,
            package_dialog: None,
            templates: Default::default(),
            run_requested: None,
        }
    }

    /// Starts opening a document file or package folder.
    pub fn open(&mut self, path: &Path) {
        self.opening.push(path.to_path_buf());
        self.worker.submit(Job::Open {
            path: path.to_path_buf(),
            config: self.config.clone(),
        });
    }

    /// The config folder (recent files, recovery copies), if any.
    pub fn config_dir(&self) -> Option<&Path> {
        self.config.as_deref()
    }

    /// The canvas's view state (read-only: where the view is).
    pub fn canvas(&self) -> &CanvasState {
        &self.canvas
    }

    /// Whether nothing is pending: no open in flight and the current
    /// revision validated and laid out (the screenshot mode waits for it).
    pub fn settled(&self) -> bool {
        self.opening.is_empty() && self.doc.as_ref().is_none_or(OpenDocument::settled)
    }

    /// Applies an edit, reporting a refusal in the status bar.
    pub fn apply(&mut self, command: &Command) -> bool {
        let Some(doc) = &mut self.doc else {
            return false;
        };
        match doc.history.apply(command) {
            Ok(()) => {
                self.status = Some(Status {
                    text: command.label(),
                    error: false,
                });
                true
            }
            Err(error) => {
                self.status = Some(Status {
                    text: error.to_string(),
                    error: true,
                });
                false
            }
        }
    }

    /// Undoes the last edit.
    pub fn undo(&mut self) {
        if let Some(label) = self.doc.as_mut().and_then(|d| d.history.undo()) {
            self.say(format!("Undid: {label}"), false);
        }
    }

    /// Redoes the last undone edit.
    pub fn redo(&mut self) {
        if let Some(label) = self.doc.as_mut().and_then(|d| d.history.redo()) {
            self.say(format!("Redid: {label}"), false);
        }
    }

    pub(crate) fn say(&mut self, text: impl Into<String>, error: bool) {
        self.status = Some(Status {
            text: text.into(),
            error,
        });
    }

    /// Saves to the document's own path, or to `target` (Save As).
    pub fn save(&mut self, target: Option<&Path>) {
        let Some(doc) = &mut self.doc else { return };
        let target = target
            .map(Path::to_path_buf)
            .unwrap_or_else(|| doc.path.clone());
        let dropped = doc.dropped_comments;
        let previous = doc.path.clone();
        // An imported document's package folder may not exist yet.
        if let Some(parent) = target.parent()
            && let Err(error) = std::fs::create_dir_all(parent)
        {
            self.say(
                format!("Could not create {}: {error}", parent.display()),
                true,
            );
            return;
        }
        match doc.save_to(&target) {
            Ok(()) => {
                if previous != target {
                    let _ = crate::autosave::discard(self.config.as_deref(), &previous);
                }
                let note = if dropped > 0 {
                    format!(" ({dropped} comments after the top block were not kept)")
                } else {
                    String::new()
                };
                let _ = crate::recent::remember(self.config.as_deref(), &mut self.recent, &target);
                self.say(format!("Saved {}{note}", target.display()), false);
            }
            Err(error) => self.say(
                format!("Could not save {}: {error}", target.display()),
                true,
            ),
        }
    }

    /// Writes the imported document as `dir/inference_metadata.yaml`
    /// (Save as package); a folder that already holds another package
    /// document is refused rather than overwritten.
    pub fn save_as_package(&mut self, dir: &Path) {
        let target = dir.join("inference_metadata.yaml");
        let own = self.doc.as_ref().map(|d| d.path.clone());
        if let Ok(existing) = wfstudio_schema::locate_document(dir)
            && Some(&existing) != own.as_ref()
        {
            self.say(
                format!(
                    "{} already holds {}; choose an empty folder, or use Lower for package to lower into that package",
                    dir.display(),
                    existing.display()
                ),
                true,
            );
            return;
        }
        self.save(Some(&target));
    }

    /// Lowers the open ComfyUI graph again for the package in `dir`; with
    /// unsaved edits to the lowered document, asks first.
    pub fn lower_for_package(&mut self, dir: &Path) {
        if self.is_dirty() {
            self.relower_for = Some(dir.to_path_buf());
        } else {
            self.relower_now(dir);
        }
    }

    pub(crate) fn relower_now(&mut self, dir: &Path) {
        if let Some(comfy) = &self.comfy {
            let path = comfy.source.clone();
            self.opening.push(path.clone());
            self.worker.submit(Job::Import {
                path,
                target: Some(dir.to_path_buf()),
            });
        }
    }

    pub(crate) fn imported(&mut self, graph: crate::import::ImportedGraph) {
        let _ = crate::recent::remember(self.config.as_deref(), &mut self.recent, &graph.source);
        let mut panel = ComfyPanel::new(&graph);
        let name = graph.source.display();
        match panel.refusals.first() {
            None => self.say(
                format!(
                    "Imported {name}: lowered to a workflow (unsaved; Save as package writes it)"
                ),
                false,
            ),
            Some(first) => self.say(
                format!(
                    "Imported {name}: refused, {}",
                    crate::comfy_view::refusal_text(first)
                ),
                true,
            ),
        }
        self.doc = graph.opened.map(|opened| {
            let mut doc = OpenDocument::from_opened(opened);
            doc.history.mark_unsaved();
            doc
        });
        panel.revision = self.doc.as_ref().map(|d| d.history.revision());
        self.autosaved = None;
        self.autosave_due = None;
        self.selection.clear();
        self.canvas = CanvasState::default();
        self.yaml = YamlState::default();
        self.inspector = InspectorState::default();
        self.comfy = Some(panel);
    }

    pub(crate) fn receive(&mut self) {
        for outcome in self.worker.poll() {
            match outcome {
                Outcome::Imported { requested, result } => {
                    self.opening.retain(|p| p != &requested);
                    match result {
                        Ok(graph) => self.imported(*graph),
                        Err(error) => self.say(
                            format!("Could not import {}: {error}", requested.display()),
                            true,
                        ),
                    }
                }
                Outcome::Opened { requested, result } => {
                    self.opening.retain(|p| p != &requested);
                    match result {
                        Ok(mut opened) => {
                            let _ = crate::recent::remember(
                                self.config.as_deref(),
                                &mut self.recent,
                                &opened.file,
                            );
                            self.say(format!("Opened {}", opened.file.display()), false);
                            let recovered = opened.recovered.take();
                            let mut doc = OpenDocument::from_opened(opened);
                            if let Some((recovery, document)) = recovered {
                                doc.history
                                    .replace(*document, "Recover unsaved edits".into());
                                self.say(
                                    format!(
                                        "Recovered unsaved edits of {} (kept {}); undo shows the saved file",
                                        doc.path.display(),
                                        age(recovery.written_unix)
                                    ),
                                    false,
                                );
                            }
                            // A recovered state's copy is already on disk; a clean one has none.
                            self.autosaved = doc.history.is_dirty().then(|| doc.history.revision());
                            self.autosave_due = None;
                            // A package written to run the imported graph keeps
                            // the ComfyUI pane: its document is the lowered one.
                            let ran = self.run_requested.as_ref() == Some(&doc.path);
                            match &mut self.comfy {
                                Some(comfy) if ran => comfy.revision = Some(doc.history.revision()),
                                _ => self.comfy = None,
                            }
                            self.doc = Some(doc);
                            self.selection.clear();
                            self.canvas = CanvasState::default();
                            self.yaml = YamlState::default();
                            self.inspector = InspectorState::default();
                        }
                        Err(error) => self.say(
                            format!("Could not open {}: {error}", requested.display()),
                            true,
                        ),
                    }
                }
                Outcome::Analyzed(analysis) => {
                    if let Some(doc) = &mut self.doc {
                        if analysis.revision == doc.history.revision()
                            && self.yaml.revision != Some(analysis.revision)
                        {
                            self.yaml.text = analysis.text.clone();
                            self.yaml.revision = Some(analysis.revision);
                            self.yaml.edited = false;
                        }
                        doc.analysis = Some(*analysis);
                    }
                }
                Outcome::Parsed {
                    base_revision,
                    result,
                } => {
                    let Some(doc) = &mut self.doc else { continue };
                    if base_revision != doc.history.revision() {
                        continue;
                    }
                    match result {
                        Ok(document) => {
                            doc.history.replace(*document, "Edit YAML".into());
                            self.yaml.revision = Some(doc.history.revision());
                            self.yaml.error = None;
                        }
                        Err(diagnostics) => {
                            self.yaml.error = diagnostics.first().map(|d| match d.span {
                                Some(s) => {
                                    format!("{}:{}: {}", s.start.line, s.start.column, d.message)
                                }
                                None => d.message.clone(),
                            });
                        }
                    }
                }
                Outcome::PackageWritten { out, result, run } => {
                    self.package_written(out, result, run);
                }
                Outcome::Autosaved => self.autosave_pending = false,
                Outcome::AutosaveFailed(message) => {
                    self.autosave_pending = false;
                    self.say(message, true);
                }
                Outcome::Failed(message) => self.say(message, true),
            }
        }
        if let Some(job) = self.doc.as_mut().and_then(OpenDocument::analyze_job) {
            self.worker.submit(Job::Analyze(Box::new(job)));
        }
    }

    /// Keeps the crash-recovery copy in step with the unsaved state: written
    /// [`AUTOSAVE_DELAY`] after the last edit, removed once saved (or undone
    /// back to the saved state). Returns when it next needs a frame.
    pub(crate) fn autosave(&mut self) -> Option<Duration> {
        let doc = self.doc.as_ref()?;
        let revision = doc.history.revision();
        if !doc.history.is_dirty() {
            if self.autosaved.take().is_some() {
                self.autosave_pending = true;
                self.worker.submit(Job::Autosave {
                    config: self.config.clone(),
                    document: doc.path.clone(),
                    text: None,
                });
            }
            self.autosave_due = None;
            return None;
        }
        if self.autosaved == Some(revision) {
            return None;
        }
        let now = Instant::now();
        let due = *self.autosave_due.get_or_insert(now + AUTOSAVE_DELAY);
        if now < due {
            return Some(due - now);
        }
        self.autosave_pending = true;
        self.worker.submit(Job::Autosave {
            config: self.config.clone(),
            document: doc.path.clone(),
            text: Some(doc.saved_text(wfstudio_schema::Format::Yaml)),
        });
        self.autosaved = Some(revision);
        self.autosave_due = None;
        None
    }

    /// Whether the recovery copy on disk matches the current state (tests
    /// wait for it).
    pub fn autosave_current(&self) -> bool {
        !self.autosave_pending
            && self.doc.as_ref().is_none_or(|d| {
                if d.history.is_dirty() {
                    self.autosaved == Some(d.history.revision())
                } else {
                    self.autosaved.is_none()
                }
            })
    }

    /// Draws one frame of the studio into the window's root `ui`.
    pub fn show(&mut self, ui: &mut egui::Ui) {
        let ctx = &ui.ctx().clone();
        self.receive();
        if let Some(wait) = self.autosave() {
            ctx.request_repaint_after(wait);
        }
        ctx.set_theme(if self.dark {
            egui::Theme::Dark
        } else {
            egui::Theme::Light
        });
        self.shortcuts(ctx);
        self.dropped_files(ctx);
        self.package_dialog_ui(ctx);
        if let Some(file) = self.templates.show(ctx) {
            self.request_open(file);
        }
        self.menu_bar(ui);
        self.status_bar(ui);
        if self.doc.is_none() {
            if self.comfy.is_some() {
                egui::CentralPanel::default().show(ui, |ui| self.comfy_pane(ui));
                self.replace_prompt(ctx);
            } else {
                self.welcome(ui);
            }
            return;
        }
        self.side_panels(ui);
        self.centre(ui);
        self.palette(ctx);
        self.close_prompt(ctx);
        self.replace_prompt(ctx);
        if let Some(doc) = &self.doc {
            ctx.send_viewport_cmd(egui::ViewportCommand::Title(doc.title()));
        }
        if !self.settled() {
            ctx.request_repaint_after(std::time::Duration::from_millis(50));
        }
    }

    pub(crate) fn side_panels(&mut self, ui: &mut egui::Ui) {
        let Some(doc) = &self.doc else { return };
        let stale = !doc.settled();
        let mut picked = None;
        egui::Panel::bottom("diagnostics")
            .resizable(true)
            .default_size(150.0)
            .show(ui, |ui| {
                if let Some(analysis) = &doc.analysis {
                    picked = diagnostics::show(ui, &analysis.report, stale);
                } else {
                    ui.spinner();
                }
            });
        let mut edit = None;
        egui::Panel::right("inspector")
            .resizable(true)
            .default_size(320.0)
            .show(ui, |ui| {
                ui.heading("Inspector");
                egui::ScrollArea::vertical().show(ui, |ui| {
                    edit = inspector::show(
                        ui,
                        doc.history.document(),
                        doc.history.revision(),
                        self.selection.last(),
                        &self.run_overlay.details,
                        &mut self.inspector,
                    );
                });
            });
        match picked {
            Some(DiagnosticAction::Reveal(path)) => self.reveal(&path),
            Some(DiagnosticAction::Fix(command)) => {
                self.apply(&command);
            }
            None => {}
        }
        if let Some(command) = edit {
            self.apply(&command);
        }
    }

    /// Selects and frames the node that holds `path`.
    pub fn reveal(&mut self, path: &DocPath) {
        let Some(analysis) = self.doc.as_ref().and_then(|d| d.analysis.as_ref()) else {
            return;
        };
        let best = analysis
            .graph
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| path.starts_with(&n.path))
            .max_by_key(|(_, n)| n.path.depth());
        if let Some((n, node)) = best {
            self.selection = vec![node.path.clone()];
            let r = analysis.layout.nodes[n];
            self.canvas.frame(egui::Rect::from_min_size(
                egui::pos2(r.x, r.y),
                egui::vec2(r.w, r.h),
            ));
            self.tab = Tab::Graph;
        } else {
            self.tab = Tab::Yaml;
        }
    }

    pub(crate) fn centre(&mut self, ui: &mut egui::Ui) {
        egui::CentralPanel::default().show(ui, |ui| match self.tab {
            Tab::Graph => self.graph_tab(ui),
            Tab::Yaml => {
                let Some(doc) = &self.doc else { return };
                let empty = wfstudio_core::Report::default();
                let report = doc.analysis.as_ref().map_or(&empty, |a| &a.report);
                if yaml_view::show(ui, &mut self.yaml, report) {
                    self.worker.submit(Job::ParseText {
                        base_revision: doc.history.revision(),
                        text: self.yaml.text.clone(),
                    });
                }
            }
        });
    }

    /// The ComfyUI pane and what its buttons and clicks ask for.
    pub(crate) fn comfy_pane(&mut self, ui: &mut egui::Ui) {
        let Some(comfy) = &mut self.comfy else { return };
        let revision = self.doc.as_ref().map(|d| d.history.revision());
        match comfy.show(ui, &self.selection, revision) {
            Some(ComfyAction::SelectSteps(steps)) => {
                if let Some(first) = steps.first().cloned() {
                    self.reveal(&first);
                }
                self.selection = steps;
            }
            Some(ComfyAction::SaveAsPackage) => self.open_package_dialog(),
            Some(ComfyAction::RunWithStandIns) => {
                self.run_in_place(Models::StandIns { seed: 0 });
            }
            Some(ComfyAction::RunWithModels) => {
                if let Some(dir) = rfd_dialog().pick_folder() {
                    self.run_in_place(Models::Folder { dir, link: true });
                }
            }
            Some(ComfyAction::ChooseTarget) => {
                if let Some(dir) = rfd_dialog().pick_folder() {
                    self.lower_for_package(&dir);
                }
            }
            None => {}
        }
    }

    pub(crate) fn graph_tab(&mut self, ui: &mut egui::Ui) {
        if self.comfy.is_some() {
            let width = ui.available_width() * 0.45;
            egui::Panel::left("comfy_pane")
                .resizable(true)
                .default_size(width)
                .show(ui, |ui| self.comfy_pane(ui));
        }
        let Some(doc) = &mut self.doc else { return };
        let Some(analysis) = &doc.analysis else {
            ui.centered_and_justified(|ui| ui.spinner());
            return;
        };
        if let Some(query) = &mut self.search {
            let mut reveal = None;
            ui.horizontal(|ui| {
                ui.label("Find:");
                let field = ui.text_edit_singleline(query);
                field.request_focus();
                let q = query.to_lowercase();
                let hits: Vec<&wfstudio_core::graph::Node> = analysis
                    .graph
                    .nodes
                    .iter()
                    .filter(|n| {
                        !q.is_empty()
                            && (n.label.to_lowercase().contains(&q)
                                || n.inputs.iter().chain(&n.outputs).any(|p| {
                                    p.value
                                        .as_deref()
                                        .is_some_and(|v| v.to_lowercase().contains(&q))
                                }))
                    })
                    .take(12)
                    .collect();
                if ui.input(|i| i.key_pressed(Key::Enter))
                    && let Some(first) = hits.first()
                {
                    reveal = Some(first.path.clone());
                }
                for hit in hits {
                    if ui.small_button(&hit.label).clicked() {
                        reveal = Some(hit.path.clone());
                    }
                }
            });
            if let Some(path) = reveal {
                self.search = None;
                self.reveal(&path);
                return;
            }
        }
        let mut view = CanvasView::new(
            &analysis.graph,
            &analysis.layout,
            &analysis.report,
            &doc.sidecar,
            &self.selection,
        );
        view.overlay = Some(&self.run_overlay);
        let actions = canvas::show(ui, &view, &mut self.canvas);
        for action in actions {
            match action {
                CanvasAction::Select { path, add } => {
                    if !add {
                        self.selection.clear();
                    }
                    if let Some(i) = self.selection.iter().position(|p| p == &path) {
                        self.selection.remove(i);
                    } else {
                        self.selection.push(path);
                    }
                }
                CanvasAction::ClearSelection => self.selection.clear(),
                CanvasAction::InspectValue(value) => self.inspected_value = Some(value),
                CanvasAction::SelectMany { paths, add } => {
                    if !add {
                        self.selection.clear();
                    }
                    for path in paths {
                        if !self.selection.contains(&path) {
                            self.selection.push(path);
                        }
                    }
                }
                CanvasAction::Edit(command) => {
                    self.apply(&command);
                }
                CanvasAction::Move { key, to } => {
                    if let Some(doc) = &mut self.doc {
                        doc.sidecar.positions.insert(key, to);
                    }
                }
                CanvasAction::ToggleCollapse(key) => {
                    if let Some(doc) = &mut self.doc
                        && !doc.sidecar.collapsed.remove(&key)
                    {
                        doc.sidecar.collapsed.insert(key);
                    }
                }
                CanvasAction::OpenPalette => self.palette.open = true,
            }
        }
    }
}

/// "3 min ago"-style age of a Unix timestamp.
pub(crate) fn age(unix: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(unix, |d| d.as_secs());
    match now.saturating_sub(unix) {
        s if s < 120 => format!("{s} s ago"),
        s if s < 7200 => format!("{} min ago", s / 60),
        s => format!("{} h ago", s / 3600),
    }
}

/// The file dialog, starting in the current folder.
pub(crate) fn rfd_dialog() -> rfd::FileDialog {
    let dialog = rfd::FileDialog::new()
        .add_filter("inference metadata", &["yaml", "yml", "json"])
        .add_filter("ComfyUI graph", &["json", "png", "webp"]);
    match std::env::current_dir() {
        Ok(dir) => dialog.set_directory(dir),
        Err(_) => dialog,
    }
}
