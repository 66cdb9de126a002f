//! The Save as package dialog of an imported ComfyUI graph: where to write
//! it and where its model components come from (deterministic stand-ins,
//! a models folder copied or hard-linked, or the document alone).

use std::path::PathBuf;
use wfstudio_core::comfyui::package::Models;

/// Where the model components of the written package come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelsChoice {
    /// Stand-in models with exactly the declared contracts.
    StandIns,
    /// The files of a models folder laid out as a package.
    Folder,
    /// Only `inference_metadata.yaml` (no policies, no models).
    DocumentOnly,
}

/// What the user chose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackageChoice {
    /// Write the whole package.
    Write {
        /// The destination folder.
        out: PathBuf,
        /// Where the models come from.
        models: Models,
        /// Replace a non-empty destination.
        force: bool,
    },
    /// Write the lowered document alone into this folder.
    DocumentOnly(PathBuf),
}

/// The dialog's state while it is open.
#[derive(Clone, Debug)]
pub struct PackageDialog {
    /// The destination folder.
    pub out: Option<PathBuf>,
    /// Where the models come from.
    pub models: ModelsChoice,
    /// The models folder, for [`ModelsChoice::Folder`].
    pub models_dir: Option<PathBuf>,
    /// Hard-link the models folder's files instead of copying them.
    pub link: bool,
    /// Replace a non-empty destination.
    pub force: bool,
}

impl Default for PackageDialog {
    fn default() -> Self {
        PackageDialog {
            out: None,
            models: ModelsChoice::StandIns,
            models_dir: None,
            link: false,
            force: false,
        }
    }
}

/// What one frame of the dialog asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DialogEvent {
    /// Pick the destination folder.
    PickOut,
    /// Pick the models folder.
    PickModels,
    /// Write with these choices.
    Chosen(PackageChoice),
    /// Close without writing.
    Cancel,
}

impl PackageDialog {
    /// The choice the current fields make, if complete.
    pub fn choice(&self) -> Option<PackageChoice> {
        let out = self.out.clone()?;
        Some(match self.models {
            ModelsChoice::DocumentOnly => PackageChoice::DocumentOnly(out),
            ModelsChoice::StandIns => PackageChoice::Write {
                out,
                models: Models::StandIns { seed: 0 },
                force: self.force,
            },
            ModelsChoice::Folder => PackageChoice::Write {
                out,
                models: Models::Folder {
                    dir: self.models_dir.clone()?,
                    link: self.link,
                },
                force: self.force,
            },
        })
    }

    /// Draws the dialog window.
    pub fn show(&mut self, ctx: &egui::Context) -> Option<DialogEvent> {
        let mut event = None;
        egui::Window::new("Save as package")
            .collapsible(false)
            .resizable(false)
            .anchor(egui::Align2::CENTER_CENTER, egui::Vec2::ZERO)
            .show(ctx, |ui| {
                ui.horizontal(|ui| {
                    if ui.button("Folder…").clicked() {
                        event = Some(DialogEvent::PickOut);
                    }
                    ui.label(folder_label(self.out.as_ref(), "no folder chosen"));
                });
                ui.separator();
                ui.label("Model components:");
                ui.radio_value(
                    &mut self.models,
                    ModelsChoice::StandIns,
                    "Stand-in models (tiny, seeded, with the declared ports)",
                );
                ui.radio_value(
                    &mut self.models,
                    ModelsChoice::Folder,
                    "From a models folder (ports checked against the workflow)",
                );
                if self.models == ModelsChoice::Folder {
                    ui.indent("models", |ui| {
                        ui.horizontal(|ui| {
                            if ui.button("Models folder…").clicked() {
                                event = Some(DialogEvent::PickModels);
                            }
                            ui.label(folder_label(self.models_dir.as_ref(), "none chosen"));
                        });
                        ui.checkbox(
                            &mut self.link,
                            "Hard-link the files instead of copying them",
                        );
                    });
                }
                ui.radio_value(
                    &mut self.models,
                    ModelsChoice::DocumentOnly,
                    "The workflow document only",
                );
                if self.models != ModelsChoice::DocumentOnly {
                    ui.checkbox(&mut self.force, "Replace the folder if it is not empty");
                }
                ui.separator();
                ui.horizontal(|ui| {
                    let choice = self.choice();
                    if ui
                        .add_enabled(choice.is_some(), egui::Button::new("Write package"))
                        .clicked()
                        && let Some(choice) = choice
                    {
                        event = Some(DialogEvent::Chosen(choice));
                    }
                    if ui.button("Cancel").clicked() {
                        event = Some(DialogEvent::Cancel);
                    }
                });
            });
        event
    }
}

fn folder_label(path: Option<&PathBuf>, none: &str) -> String {
    path.map_or_else(|| none.to_string(), |p| p.display().to_string())
}
