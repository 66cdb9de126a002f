//! The Run panel: recipe and device choice, Run (Ctrl+Enter) and Cancel,
//! progress (invokes done, per-loop iteration k of n, the running node
//! highlighted on the canvas), then timing badges on every invoke, the
//! slowest steps, a timeline of every call, the value inspector for the
//! wire or port clicked on the canvas, and output previews (images per batch
//! row, zoomable without blur; audio waveforms; saving PNG/WAV; token
//! outputs as text, streamed while the run goes, or as raw ids). Runs use the
//! document as edited, unsaved edits included, and reuse the results of
//! calls whose inputs did not change since the previous run (the canvas
//! marks those steps), unless asked to run every call.

use super::pixels::texture;
use super::previews::{MediaState, previews};
use super::run_job::{Finished, RunJob, RunMessage, RunSpec, WorkerSlot};
use crate::output_media::{self, Media};
use crate::worker::client::WorkerConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use wfstudio_editor::Studio;
use wfstudio_editor::canvas::RunOverlay;
use wfstudio_runner::{Device, Event};

/// Where a run stands.
#[derive(Default)]
enum Phase {
    #[default]
    Idle,
    Running(RunJob),
    Done(Box<Finished>),
    Failed(String),
}

/// The panel's state.
#[derive(Default)]
pub struct RunPanel {
    /// The recipe whose inputs are used.
    pub recipe: Option<PathBuf>,
    /// Requested device.
    pub device: Device,
    /// Output shown first (the scripted mode's `--select-output`).
    pub selected_output: Option<String>,
    phase: Phase,
    invokes_done: usize,
    loops: BTreeMap<String, (usize, usize)>,
    running: Option<String>,
    media: MediaState,
    zoom: f32,
    package: Option<PathBuf>,
    note: Option<String>,
    /// A recipe given on the command line (kept when the package opens).
    pinned_recipe: Option<PathBuf>,
    /// Start a run as soon as a document is open.
    autostart: bool,
    timeline: super::timeline::Timeline,
    value: super::value_view::ValueView,
    inputs: super::inputs_form::InputsForm,
    /// The run worker (a child process, kept warm between runs).
    worker: WorkerSlot,
    /// How a run worker is started (memory ceiling, plugin libraries).
    pub worker_config: WorkerConfig,
    /// The devices the picker offers.
    devices: super::device_list::DeviceList,
    /// Run every call even when its inputs did not change.
    pub run_every_call: bool,
    /// Token outputs' text so far, while running.
    streamed: BTreeMap<String, Vec<String>>,
    /// Show token outputs as ids instead of text.
    raw_ids: bool,
}

impl RunPanel {
    /// Uses `recipe` instead of the package's first recipe.
    pub fn pin_recipe(&mut self, recipe: Option<PathBuf>) {
        self.pinned_recipe = recipe;
    }

    /// Runs as soon as a document is open (`wfstudio open PKG --run`).
    pub fn start_when_open(&mut self) {
        self.autostart = true;
    }

    /// Whether a run is in flight.
    pub fn running(&self) -> bool {
        matches!(self.phase, Phase::Running(_))
    }

    /// Whether the inputs form is still reading the package's files (its
    /// tokenizer, the names of its inputs' values).
    pub fn reading_package(&self) -> bool {
        self.inputs.reading_package()
    }

    /// `Some(true)` after a successful run, `Some(false)` after a failed one.
    pub fn outcome(&self) -> Option<bool> {
        match self.phase {
            Phase::Done(_) => Some(true),
            Phase::Failed(_) => Some(false),
            _ => None,
        }
    }

    /// The failure message of the last run.
    pub fn failure(&self) -> Option<&str> {
        match &self.phase {
            Phase::Failed(message) => Some(message),
            _ => None,
        }
    }

    /// Starts a run of the studio's document file.
    pub fn start(&mut self, studio: &Studio, ctx: &egui::Context) {
        let Some(doc) = &studio.doc else { return };
        if self.running() {
            return;
        }
        self.note = doc
            .history
            .is_dirty()
            .then(|| "this run includes the unsaved edits".to_string());
        let overrides = match self.inputs.overrides() {
            Ok(overrides) => overrides,
            Err(message) => {
                self.phase = Phase::Failed(message);
                return;
            }
        };
        let waker = ctx.clone();
        let spec = RunSpec {
            package: doc.path.clone(),
            document: Some(Box::new(doc.history.document().clone())),
            recipe: self.recipe.clone(),
            device: self.device.clone(),
            overrides,
            reuse: !self.run_every_call,
            worker: self.worker.clone(),
            config: self.worker_config.clone(),
        };
        self.streamed.clear();
        self.invokes_done = 0;
        self.loops.clear();
        self.running = None;
        self.media.textures.clear();
        self.media.videos.clear();
        self.media.audio.stop();
        self.media.audio_note = None;
        self.value.reset();
        self.timeline = Default::default();
        self.phase = Phase::Running(RunJob::start(spec, move || waker.request_repaint()));
    }

    /// Takes the run thread's messages and mirrors progress on the canvas.
    fn receive(&mut self, studio: &mut Studio, ctx: &egui::Context) {
        let Phase::Running(job) = &self.phase else {
            return;
        };
        let messages: Vec<RunMessage> = job.messages.try_iter().collect();
        for message in messages {
            match message {
                RunMessage::Event(Event::InvokeStarted { path, .. }) => {
                    self.running = Some(path.to_string())
                }
                RunMessage::Event(Event::InvokeFinished { .. }) => self.invokes_done += 1,
                RunMessage::Event(Event::LoopIteration { path, index, limit }) => {
                    self.loops
                        .insert(path.to_string(), (index.saturating_add(1), limit));
                }
                RunMessage::Event(_) => {}
                RunMessage::Text { key, rows } => {
                    self.streamed.insert(key, rows);
                }
                RunMessage::Done(Ok(finished)) => {
                    self.load_textures(&finished, ctx);
                    studio.run_overlay = overlay(&finished);
                    studio.run_overlay.thumbnails = self
                        .media
                        .textures
                        .iter()
                        .filter_map(|(key, rows)| {
                            let first = rows.first()?;
                            Some((key.clone(), (first.id(), first.size_vec2())))
                        })
                        .collect();
                    self.phase = Phase::Done(finished);
                }
                RunMessage::Done(Err(message)) => {
                    studio.run_overlay = RunOverlay {
                        failed: self.running.take(),
                        ..RunOverlay::default()
                    };
                    self.phase = Phase::Failed(message);
                }
            }
        }
        if self.running() {
            studio.run_overlay.running = self.running.clone();
        }
    }

    fn load_textures(&mut self, finished: &Finished, ctx: &egui::Context) {
        for (key, media) in &finished.media {
            if let Media::Image(rows) = media {
                let handles = rows
                    .iter()
                    .enumerate()
                    .map(|(b, rgb)| texture(ctx, format!("{key}.{b}"), rgb))
                    .collect();
                self.media.textures.insert(key.clone(), handles);
            }
            if let Media::Video(rows) = media {
                self.media.videos.insert(
                    key.clone(),
                    super::video_player::VideoPlayer::new(
                        ctx,
                        key,
                        rows,
                        output_media::frame_rate(&finished.output.outputs, key, 0),
                    ),
                );
            }
        }
    }

    /// Draws the panel (left side of the window).
    pub fn show(&mut self, ui: &mut egui::Ui, studio: &mut Studio) {
        let ctx = ui.ctx().clone();
        let package = studio.doc.as_ref().map(|d| d.path.clone());
        if package != self.package {
            self.recipe = self.pinned_recipe.clone().or_else(|| {
                package
                    .as_deref()
                    .and_then(|p| recipes(p).into_iter().next())
            });
            self.package = package;
            self.phase = Phase::Idle;
            studio.run_overlay = RunOverlay::default();
        }
        self.receive(studio, &ctx);
        let Some(doc) = &studio.doc else {
            return;
        };
        self.inputs.config = studio.config_dir().map(Path::to_path_buf);
        self.inputs.sync(
            doc.history.document(),
            &doc.path,
            doc.history.revision(),
            self.recipe.as_deref(),
        );
        let shortcut = ctx.input_mut(|i| i.consume_key(egui::Modifiers::COMMAND, egui::Key::Enter));
        let requested = studio.take_run_request();
        if shortcut || requested || std::mem::take(&mut self.autostart) {
            self.start(studio, &ctx);
        }
        egui::Panel::left("run")
            .resizable(true)
            .default_size(300.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| self.contents(ui, studio, &ctx));
            });
    }

    fn contents(&mut self, ui: &mut egui::Ui, studio: &mut Studio, ctx: &egui::Context) {
        ui.heading("Run");
        let options = self.package.as_deref().map(recipes).unwrap_or_default();
        let shown = self
            .recipe
            .as_deref()
            .and_then(Path::file_name)
            .map_or("(no recipe: defaults)".to_string(), |n| {
                n.to_string_lossy().into_owned()
            });
        egui::ComboBox::from_label("recipe")
            .selected_text(shown)
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut self.recipe, None, "(no recipe: defaults)");
                for path in options {
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    ui.selectable_value(&mut self.recipe, Some(path), name);
                }
            });
        let offers = self.devices.offers(&self.worker_config, ctx).to_vec();
        egui::ComboBox::from_label("device")
            .selected_text(self.device.to_string())
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut self.device, Device::Cpu, "cpu");
                ui.selectable_value(
                    &mut self.device,
                    Device::Auto,
                    "auto (CUDA, a plugin GPU, else CPU)",
                );
                for offer in offers {
                    ui.selectable_value(&mut self.device, offer.device, offer.label);
                }
                if let Some(why) = self.devices.error() {
                    ui.weak(format!("devices could not be listed: {why}"));
                }
            });
        egui::CollapsingHeader::new("Inputs")
            .default_open(true)
            .show(ui, |ui| {
                self.inputs.show(ui);
                ui.horizontal(|ui| {
                    if ui.small_button("Load recipe…").clicked()
                        && let Some(file) = rfd::FileDialog::new()
                            .add_filter("recipe", &["json"])
                            .pick_file()
                    {
                        self.recipe = Some(file);
                    }
                    if ui.small_button("Save as recipe…").clicked() {
                        self.save_recipe();
                    }
                });
            });
        ui.horizontal(|ui| {
            if ui
                .add_enabled(!self.running(), egui::Button::new("▶ Run (Ctrl+Enter)"))
                .clicked()
            {
                self.start(studio, ctx);
            }
            if let Phase::Running(job) = &self.phase
                && ui.button("Cancel").clicked()
            {
                job.cancel();
            }
        });
        let mut reuse = !self.run_every_call;
        ui.checkbox(&mut reuse, "Reuse unchanged results")
            .on_hover_text("calls whose component and inputs equal the previous run's take its outputs instead of running");
        self.run_every_call = !reuse;
        if let Some(limit) = self.worker_config.memory_limit {
            ui.weak(format!(
                "runs in a worker process (memory ceiling {})",
                crate::worker::limits::human(limit)
            ))
            .on_hover_text("a crash or out-of-memory in a run ends the worker, not the studio");
        }
        if let Some(note) = &self.note {
            ui.weak(note);
        }
        ui.separator();
        match &self.phase {
            Phase::Idle => {
                ui.weak("Not run yet.");
            }
            Phase::Running(_) => {
                let fraction = self
                    .loops
                    .values()
                    .next()
                    .map_or(0.0, |(k, n)| *k as f32 / (*n).max(1) as f32);
                ui.add(
                    egui::ProgressBar::new(fraction)
                        .show_percentage()
                        .animate(true),
                );
                ui.label(format!("{} invokes done", self.invokes_done));
                self.loop_lines(ui);
                texts(ui, &self.streamed, None, &mut self.raw_ids);
            }
            Phase::Failed(message) => {
                ui.colored_label(
                    egui::Color32::from_rgb(230, 70, 60),
                    format!("Run failed: {message}"),
                );
            }
            Phase::Done(finished) => {
                ui.add(egui::ProgressBar::new(1.0).text(format!(
                    "finished in {:.1} ms ({:.1} ms in ONNX Runtime)",
                    finished.output.wall.as_secs_f64() * 1e3,
                    finished.output.ort_time().as_secs_f64() * 1e3
                )));
                if let Some(note) = &finished.device_note {
                    ui.weak(note);
                }
                if finished.warm {
                    ui.weak("the run worker still had the package loaded");
                }
                for placement in &finished.placements {
                    if placement.worth_showing() {
                        let line = format!("{} ran on {}", placement.component, placement.label());
                        if placement.fallbacks > 0 {
                            ui.colored_label(egui::Color32::from_rgb(230, 160, 40), line);
                        } else {
                            ui.weak(line);
                        }
                    }
                }
                if let Some(line) = crate::cli::run::transfers_line(&finished.output.transfers) {
                    ui.weak(line);
                }
                let reused = finished.output.invokes.iter().filter(|i| i.reused).count();
                if reused > 0 {
                    ui.label(format!(
                        "{reused} of {} calls reused (same component and inputs as an earlier call)",
                        finished.output.invokes.len()
                    ));
                }
                self.loop_lines(ui);
                texts(ui, &finished.texts, Some(finished), &mut self.raw_ids);
                ui.strong("Slowest steps");
                for (path, (total, calls, _)) in slowest(finished).into_iter().take(5) {
                    ui.label(format!("{:>8.2} ms × {calls}  {path}", total * 1e3));
                }
                egui::CollapsingHeader::new("Timeline")
                    .default_open(true)
                    .show(ui, |ui| {
                        if let Some(path) = super::timeline::show(
                            ui,
                            &finished.output,
                            &finished.placements,
                            &mut self.timeline,
                        ) && let Some(step) = wfstudio_schema::DocPath::parse(&path)
                        {
                            studio.reveal(&step);
                        }
                    });
                ui.separator();
                match studio.inspected_value.as_deref() {
                    Some(name) => super::value_view::show(ui, name, finished, &mut self.value),
                    None => {
                        ui.weak("Click a wire or a port to inspect its value.");
                    }
                }
                ui.separator();
                previews(
                    ui,
                    finished,
                    &mut self.media,
                    self.zoom,
                    self.selected_output.as_deref(),
                );
            }
        }
    }

    /// Writes the recipe's inputs and the form's values as a new recipe.
    fn save_recipe(&mut self) {
        let folder = self
            .package
            .as_deref()
            .and_then(Path::parent)
            .map(|p| p.join("recipes"));
        let mut dialog = rfd::FileDialog::new().set_file_name("inputs.json");
        if let Some(folder) = folder.filter(|f| f.is_dir()) {
            dialog = dialog.set_directory(folder);
        }
        let Some(file) = dialog.save_file() else {
            return;
        };
        let written = self.inputs.recipe_json().and_then(|text| {
            wfstudio_schema::save::write_atomic(&file, text.as_bytes()).map_err(|e| e.to_string())
        });
        self.note = Some(match written {
            Ok(()) => format!("saved the inputs as {}", file.display()),
            Err(e) => format!("could not save {}: {e}", file.display()),
        });
    }

    fn loop_lines(&self, ui: &mut egui::Ui) {
        for (path, (k, n)) in &self.loops {
            ui.label(format!("loop {path}: iteration {k} of {n}"));
        }
    }
}

/// Recipe files in the package's `recipes/` folder, sorted, `default.json`
/// (the one `wfstudio run` takes) first.
fn recipes(document: &Path) -> Vec<PathBuf> {
    let Some(folder) = document.parent().map(|p| p.join("recipes")) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = std::fs::read_dir(folder)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect()
        })
        .unwrap_or_default();
    found.sort_by_key(|p| (p.file_name().is_none_or(|n| n != "default.json"), p.clone()));
    found
}

/// The text of token outputs (the finished run's ids under the toggle).
fn texts(
    ui: &mut egui::Ui,
    texts: &BTreeMap<String, Vec<String>>,
    finished: Option<&Finished>,
    raw_ids: &mut bool,
) {
    if texts.is_empty() {
        return;
    }
    if finished.is_some() {
        ui.checkbox(raw_ids, "raw ids");
    }
    for (key, rows) in texts {
        ui.strong(format!("{key} (text)"));
        let ids = finished
            .filter(|_| *raw_ids)
            .and_then(|f| f.output.outputs.get(key));
        match ids {
            Some(tensor) => {
                let values: Vec<i64> = (0..tensor.numel())
                    .filter_map(|i| tensor.data.get_i64(i))
                    .collect();
                ui.monospace(format!("{values:?}"));
            }
            None => {
                for row in rows {
                    ui.label(egui::RichText::new(row).monospace());
                }
            }
        }
    }
    ui.separator();
}

/// Per step path: total wall seconds, calls, and calls reused; slowest first.
fn slowest(finished: &Finished) -> Vec<(String, (f64, usize, usize))> {
    let mut per_step: BTreeMap<String, (f64, usize, usize)> = BTreeMap::new();
    for (step, invoke) in finished.output.calls() {
        let entry = per_step.entry(step.path.to_string()).or_default();
        entry.0 += invoke.wall.as_secs_f64();
        entry.1 += 1;
        entry.2 += usize::from(invoke.reused);
    }
    let mut list: Vec<_> = per_step.into_iter().collect();
    list.sort_by(|a, b| b.1.0.total_cmp(&a.1.0));
    list
}

/// The canvas badges of a finished run: total time and calls per invoke,
/// and how many calls were reused; steps reused in full are marked, and so
/// are steps whose nodes fell back to another provider. The inspector's
/// lines per step tell the same in full, with where each node ran.
fn overlay(finished: &Finished) -> RunOverlay {
    let steps = slowest(finished);
    let placement_of = |path: &str| {
        let step = finished.output.steps.iter().find(|s| &*s.path == path)?;
        let placement = finished
            .placements
            .iter()
            .find(|p| p.component == *step.component)?;
        Some((&*step.component, placement))
    };
    let mut overlay = RunOverlay::default();
    for (path, (total, calls, reused)) in steps {
        let ms = total * 1e3;
        let badge = match reused {
            0 => format!("{ms:.2} ms × {calls}"),
            r if r == calls => format!("reused × {calls}"),
            r => format!("{ms:.2} ms × {calls} ({r} reused)"),
        };
        let mut details = vec![match reused {
            0 => format!("{ms:.2} ms in {}", count(calls, "call")),
            r if r == calls => format!("reused in {}", count(calls, "call")),
            r => format!("{ms:.2} ms in {}, {r} of them reused", count(calls, "call")),
        }];
        let badge = match placement_of(&path) {
            Some((component, placement)) => {
                match placement.nodes.len() {
                    0 | 1 if placement.fallbacks == 0 => {
                        details.push(format!("{component} ran on {}", placement.short_ep()))
                    }
                    _ => {
                        details.push(format!("{component} asked for {}", placement.short_ep()));
                        details.push(placement.breakdown());
                    }
                }
                if placement.fallbacks > 0 {
                    overlay.fell_back.insert(path.clone());
                }
                match placement.worth_showing() {
                    true => format!("{badge} · {}", placement.label()),
                    false => badge,
                }
            }
            None => badge,
        };
        if reused == calls {
            overlay.reused.insert(path.clone());
        }
        overlay.details.insert(path.clone(), details);
        overlay.badges.insert(path, badge);
    }
    overlay
}

/// `n` and the noun, plural unless `n` is 1.
fn count(n: usize, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

#[cfg(test)]
mod tests;
