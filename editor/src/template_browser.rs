//! Import ▸ ComfyUI template…: the installed official templates by
//! category, each with its title, description, models and whether it
//! lowers into a workflow (or the sentence that says why not). The
//! catalogue is read and every template imported on a thread of its own,
//! so the window fills in while the studio stays responsive; Open imports
//! the chosen one beside its lowered workflow.

use egui::{Color32, RichText};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use wfstudio_core::comfyui::NodeDefs;
use wfstudio_core::comfyui::lower::Cause;
use wfstudio_core::comfyui::templates::{Catalogue, Outcome, Template, TemplatesError};

/// What the background reading has found so far.
#[derive(Default)]
struct Found {
    /// The catalogue, or why it could not be read.
    catalogue: Option<Result<Catalogue, String>>,
    /// How many templates it lists (each once).
    listed: usize,
    /// Each imported template's outcome, by name.
    outcomes: HashMap<String, Outcome>,
}

/// The template browser window.
#[derive(Default)]
pub struct TemplateBrowser {
    /// Whether the window is shown.
    pub open: bool,
    /// The templates' folder; `None` looks where set-up installs them
    /// ([`Catalogue::find`]).
    pub dir: Option<PathBuf>,
    found: Option<Arc<Mutex<Found>>>,
    /// Set when the window closes: the reading thread stops.
    stop: Arc<AtomicBool>,
    category: usize,
    search: String,
    /// Show the cloud (`api_*`) templates too.
    with_cloud: bool,
    /// Show only the templates that lower.
    only_lowering: bool,
}

impl TemplateBrowser {
    /// How many templates have an outcome, of how many listed (0 of 0
    /// until the catalogue is read).
    pub fn progress(&self) -> (usize, usize) {
        let Some(found) = &self.found else {
            return (0, 0);
        };
        let found = found.lock().unwrap_or_else(PoisonError::into_inner);
        (found.outcomes.len(), found.listed)
    }

    /// Whether the reading is over: every template checked, or the
    /// catalogue unreadable.
    pub fn settled(&self) -> bool {
        let Some(found) = &self.found else {
            return false;
        };
        let found = found.lock().unwrap_or_else(PoisonError::into_inner);
        match &found.catalogue {
            None => false,
            Some(Err(_)) => true,
            Some(Ok(_)) => found.outcomes.len() == found.listed,
        }
    }

    /// Starts reading the catalogue and importing every template.
    fn start(&mut self, ctx: &egui::Context) {
        let found = Arc::new(Mutex::new(Found::default()));
        self.found = Some(found.clone());
        self.stop = Arc::new(AtomicBool::new(false));
        let stop = self.stop.clone();
        let dir = self.dir.clone();
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            let catalogue = dir
                .or_else(Catalogue::find)
                .ok_or(TemplatesError::NotInstalled)
                .and_then(|dir| Catalogue::read(&dir))
                .map_err(|e| e.to_string());
            let mut templates = catalogue.as_ref().map(unique).unwrap_or_default();
            {
                let mut found = found.lock().unwrap_or_else(PoisonError::into_inner);
                found.listed = templates.len();
                found.catalogue = Some(catalogue.clone());
            }
            ctx.request_repaint();
            let Ok(catalogue) = &catalogue else { return };
            let defs = NodeDefs::builtin();
            // The local ones first: those are the ones that can lower.
            templates.sort_by_key(|t| t.is_cloud());
            for template in templates {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                // A panic in one import is that template's outcome, not
                // the end of the list.
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    catalogue.outcome(template, &defs)
                }))
                .unwrap_or_else(|_| Outcome::Unreadable("its import failed unexpectedly".into()));
                found
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .outcomes
                    .insert(template.name.clone(), outcome);
                ctx.request_repaint();
            }
        });
    }

    /// Draws the window; returns the workflow file the user chose to open.
    pub fn show(&mut self, ctx: &egui::Context) -> Option<PathBuf> {
        if !self.open {
            return None;
        }
        if self.found.is_none() {
            self.start(ctx);
        }
        let found = self.found.clone()?;
        let found = found.lock().unwrap_or_else(PoisonError::into_inner);
        let mut open = self.open;
        let mut chosen = None;
        let screen = ctx.content_rect();
        egui::Window::new("ComfyUI templates")
            .open(&mut open)
            .pivot(egui::Align2::CENTER_CENTER)
            .default_pos(screen.center())
            .default_size([
                (screen.width() - 80.0).clamp(400.0, 1100.0),
                (screen.height() - 120.0).clamp(300.0, 760.0),
            ])
            .resizable(true)
            .show(ctx, |ui| match &found.catalogue {
                None => {
                    ui.spinner();
                    ui.label("Reading the installed templates…");
                }
                Some(Err(why)) => {
                    ui.label(RichText::new(why).color(ui.visuals().error_fg_color));
                }
                Some(Ok(catalogue)) => {
                    chosen = self.catalogue_ui(ui, catalogue, &found.outcomes, found.listed);
                }
            });
        self.open = open && chosen.is_none();
        if !self.open {
            // Closed: stop checking; opening again reads the folder anew
            // (templates installed meanwhile included).
            self.stop.store(true, Ordering::Relaxed);
            self.found = None;
        }
        chosen
    }

    fn catalogue_ui(
        &mut self,
        ui: &mut egui::Ui,
        catalogue: &Catalogue,
        outcomes: &HashMap<String, Outcome>,
        listed: usize,
    ) -> Option<PathBuf> {
        ui.horizontal(|ui| {
            ui.label("Search");
            ui.text_edit_singleline(&mut self.search);
            ui.checkbox(&mut self.only_lowering, "Only those that lower");
            ui.checkbox(&mut self.with_cloud, "Show cloud templates");
            if outcomes.len() < listed {
                ui.spinner();
                ui.label(format!("checked {} of {listed}", outcomes.len()));
            }
        });
        ui.separator();
        let mut chosen = None;
        ui.horizontal_top(|ui| {
            ui.vertical(|ui| {
                ui.set_width(210.0);
                for (index, category) in catalogue.categories.iter().enumerate() {
                    let shown: Vec<&Template> = self.shown(category.templates.iter()).collect();
                    if shown.is_empty() {
                        continue;
                    }
                    let lowers = shown
                        .iter()
                        .filter(|t| outcomes.get(&t.name) == Some(&Outcome::Lowers))
                        .count();
                    let label = format!("{} ({lowers} of {} lower)", category.title, shown.len());
                    if ui.selectable_label(self.category == index, label).clicked() {
                        self.category = index;
                    }
                }
            });
            ui.separator();
            let Some(category) = catalogue.categories.get(self.category) else {
                return;
            };
            ui.vertical(|ui| {
                egui::ScrollArea::vertical()
                    .auto_shrink(false)
                    .show(ui, |ui| {
                        let search = self.search.to_lowercase();
                        let matching = self.shown(category.templates.iter()).filter(|t| {
                            search.is_empty()
                                || t.title.to_lowercase().contains(&search)
                                || t.description.to_lowercase().contains(&search)
                                || t.models.iter().any(|m| m.to_lowercase().contains(&search))
                        });
                        for template in matching {
                            if template_ui(ui, template, outcomes.get(&template.name)) {
                                chosen = Some(catalogue.file(template));
                            }
                        }
                    });
            });
        });
        chosen
    }

    /// The templates shown: the local ones, and the cloud ones when asked.
    fn shown<'a>(
        &self,
        templates: impl Iterator<Item = &'a Template>,
    ) -> impl Iterator<Item = &'a Template> {
        let with_cloud = self.with_cloud;
        templates.filter(move |t| with_cloud || !t.is_cloud())
    }
}

/// One template's card; whether its Open button was clicked.
fn template_ui(ui: &mut egui::Ui, template: &Template, outcome: Option<&Outcome>) -> bool {
    let mut clicked = false;
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.set_width(ui.available_width());
        ui.horizontal(|ui| {
            ui.label(RichText::new(&template.title).strong().size(15.0));
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                clicked = ui
                    .button("Open")
                    .on_hover_text(format!("Import {}.json", template.name))
                    .clicked();
            });
        });
        let (verdict, color) = verdict(outcome);
        ui.label(RichText::new(verdict).color(color));
        if let Some(Outcome::Refused { sentence, .. } | Outcome::Unreadable(sentence)) = outcome {
            ui.label(RichText::new(sentence).weak());
        }
        if !template.description.is_empty() {
            ui.label(&template.description);
        }
        if !template.models.is_empty() {
            ui.label(RichText::new(format!("Models: {}", template.models.join(", "))).weak());
        }
    });
    clicked
}

/// The one-line verdict on a template and its colour.
fn verdict(outcome: Option<&Outcome>) -> (String, Color32) {
    let refused = Color32::from_rgb(230, 150, 70);
    match outcome {
        None => ("checking…".into(), Color32::GRAY),
        Some(Outcome::Lowers) => (
            "✔ lowers into a workflow".into(),
            Color32::from_rgb(90, 190, 110),
        ),
        Some(Outcome::Unreadable(_)) => ("cannot be read".into(), refused),
        Some(Outcome::Refused { cause, .. }) => {
            let why = match cause {
                Cause::Cloud(provider) => format!("cloud node: runs on the {provider} service"),
                Cause::Mesh => "makes a 3D mesh".into(),
                Cause::LanguageModel => "generates text with a language model".into(),
                Cause::Undefined => "uses a class no definition describes".into(),
                Cause::Lowering => "uses what the lowering does not build yet".into(),
            };
            (format!("refused: {why}"), refused)
        }
    }
}

/// Every template once (a template may be listed in several categories).
fn unique(catalogue: &Catalogue) -> Vec<&Template> {
    let mut seen = std::collections::HashSet::new();
    catalogue
        .categories
        .iter()
        .flat_map(|c| &c.templates)
        .filter(|t| seen.insert(t.name.as_str()))
        .collect()
}
