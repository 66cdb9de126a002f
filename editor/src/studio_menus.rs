//! The studio's menu bar, keyboard shortcuts, dropped files, status bar and welcome screen.

use crate::studio::{Studio, Tab, rfd_dialog};
use egui::{Key, KeyboardShortcut, Modifiers};
use std::path::PathBuf;
use wfstudio_core::edit::templates::NewItem;

impl Studio {
    pub(crate) fn shortcuts(&mut self, ctx: &egui::Context) {
        let pressed = |ctx: &egui::Context, modifiers, key| {
            ctx.input_mut(|i| i.consume_shortcut(&KeyboardShortcut::new(modifiers, key)))
        };
        let typing = ctx.egui_wants_keyboard_input();
        if pressed(ctx, Modifiers::COMMAND | Modifiers::SHIFT, Key::Z)
            || pressed(ctx, Modifiers::COMMAND, Key::Y)
        {
            self.redo();
        }
        if pressed(ctx, Modifiers::COMMAND, Key::Z) {
            self.undo();
        }
        if pressed(ctx, Modifiers::COMMAND, Key::S) {
            self.save(None);
        }
        if pressed(ctx, Modifiers::COMMAND, Key::O) {
            self.pick_and_open(false);
        }
        if pressed(ctx, Modifiers::COMMAND, Key::F) {
            self.search = Some(String::new());
        }
        if !typing {
            if ctx.input_mut(|i| i.consume_key(Modifiers::NONE, Key::Delete)) {
                self.delete_selection();
            }
            if ctx.input_mut(|i| i.consume_key(Modifiers::NONE, Key::F)) {
                self.canvas.fit_pending = true;
            }
            let copied = ctx.input(|i| i.events.iter().any(|e| matches!(e, egui::Event::Copy)));
            if copied || pressed(ctx, Modifiers::COMMAND, Key::C) {
                self.copy(ctx);
            }
            let pasted = ctx.input(|i| i.events.iter().any(|e| matches!(e, egui::Event::Paste(_))));
            if pasted || pressed(ctx, Modifiers::COMMAND, Key::V) {
                self.paste();
            }
        }
        if pressed(ctx, Modifiers::NONE, Key::Escape) {
            self.search = None;
            self.palette.open = false;
        }
    }

    pub(crate) fn dropped_files(&mut self, ctx: &egui::Context) {
        let dropped: Vec<PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .collect()
        });
        if let Some(path) = dropped.into_iter().next() {
            self.request_open(path);
        }
        // While files are dragged over the window, say what a drop does.
        let hovering = ctx.input(|i| {
            i.raw
                .hovered_files
                .first()
                .and_then(|f| f.path.as_ref())
                .map(|p| p.display().to_string())
        });
        if let Some(name) = hovering {
            let painter = ctx.layer_painter(egui::LayerId::new(
                egui::Order::Foreground,
                egui::Id::new("drop_overlay"),
            ));
            let screen = ctx.content_rect();
            painter.rect_filled(screen, 0.0, egui::Color32::from_black_alpha(170));
            painter.text(
                screen.center(),
                egui::Align2::CENTER_CENTER,
                format!("Drop to open {name}"),
                egui::FontId::proportional(22.0),
                egui::Color32::WHITE,
            );
        }
    }

    pub(crate) fn pick_and_open(&mut self, folder: bool) {
        let dialog = rfd_dialog();
        let picked = if folder {
            dialog.pick_folder()
        } else {
            dialog.pick_file()
        };
        if let Some(path) = picked {
            self.request_open(path);
        }
    }

    pub(crate) fn menu_bar(&mut self, ui: &mut egui::Ui) {
        egui::Panel::top("menu").show(ui, |ui| {
            egui::MenuBar::new().ui(ui, |ui| {
                ui.menu_button("File", |ui| {
                    if ui.button("Open file…").clicked() {
                        self.pick_and_open(false);
                    }
                    if ui.button("Open package folder…").clicked() {
                        self.pick_and_open(true);
                    }
                    ui.menu_button("Open recent", |ui| {
                        for path in self.recent.clone() {
                            if ui.button(path.display().to_string()).clicked() {
                                self.request_open(path);
                            }
                        }
                    });
                    ui.separator();
                    let has_doc = self.doc.is_some();
                    if ui.add_enabled(has_doc, egui::Button::new("Save")).clicked() {
                        self.save(None);
                    }
                    if ui
                        .add_enabled(has_doc, egui::Button::new("Save as…"))
                        .clicked()
                        && let Some(target) = rfd_dialog().save_file()
                    {
                        self.save(Some(&target));
                    }
                    let imported = has_doc && self.comfy.is_some();
                    if ui
                        .add_enabled(imported, egui::Button::new("Save as package…"))
                        .clicked()
                    {
                        self.open_package_dialog();
                    }
                });
                ui.menu_button("Import", |ui| {
                    if ui.button("ComfyUI graph…").clicked() {
                        self.pick_and_open(false);
                    }
                    if ui.button("ComfyUI template…").clicked() {
                        self.templates.open = true;
                    }
                });
                ui.menu_button("Edit", |ui| {
                    let undo = self
                        .doc
                        .as_ref()
                        .and_then(|d| d.history.undo_label())
                        .map(str::to_string);
                    let redo = self
                        .doc
                        .as_ref()
                        .and_then(|d| d.history.redo_label())
                        .map(str::to_string);
                    if ui
                        .add_enabled(
                            undo.is_some(),
                            egui::Button::new(format!("Undo {}", undo.unwrap_or_default())),
                        )
                        .clicked()
                    {
                        self.undo();
                    }
                    if ui
                        .add_enabled(
                            redo.is_some(),
                            egui::Button::new(format!("Redo {}", redo.unwrap_or_default())),
                        )
                        .clicked()
                    {
                        self.redo();
                    }
                    if ui.button("Add invoke…").clicked() {
                        self.palette.open = true;
                    }
                    ui.menu_button("Add", |ui| {
                        for item in NewItem::ALL {
                            if ui.button(item.label()).clicked() {
                                self.add_item(item);
                            }
                        }
                    });
                    if ui.button("Delete selection").clicked() {
                        self.delete_selection();
                    }
                });
                ui.menu_button("View", |ui| {
                    if ui.button("Fit to view (F)").clicked() {
                        self.canvas.fit_pending = true;
                    }
                    if ui.button("Find… (Ctrl+F)").clicked() {
                        self.search = Some(String::new());
                    }
                    let theme = if self.dark {
                        "Light theme"
                    } else {
                        "Dark theme"
                    };
                    if ui.button(theme).clicked() {
                        self.dark = !self.dark;
                    }
                });
                ui.separator();
                ui.selectable_value(&mut self.tab, Tab::Graph, "Graph");
                ui.selectable_value(&mut self.tab, Tab::Yaml, "YAML");
            });
        });
    }

    pub(crate) fn status_bar(&mut self, ui: &mut egui::Ui) {
        egui::Panel::bottom("status").show(ui, |ui| {
            ui.horizontal(|ui| {
                if !self.opening.is_empty() {
                    ui.spinner();
                    ui.label("opening…");
                }
                if let Some(status) = &self.status {
                    if status.error {
                        ui.colored_label(
                            crate::style::severity_color(wfstudio_schema::Severity::Error),
                            &status.text,
                        );
                    } else {
                        ui.label(&status.text);
                    }
                }
            });
        });
    }

    pub(crate) fn welcome(&mut self, ui: &mut egui::Ui) {
        egui::CentralPanel::default().show(ui, |ui| {
            ui.vertical_centered(|ui| {
                ui.add_space(60.0);
                ui.heading("Workflow Studio");
                ui.label("Open an inference_metadata.yaml, a package folder or a ComfyUI graph (.json, .png, .webp), or drop one here.");
                if ui.button("Open file…").clicked() {
                    self.pick_and_open(false);
                }
                if ui.button("Open package folder…").clicked() {
                    self.pick_and_open(true);
                }
                if ui.button("Browse ComfyUI templates…").clicked() {
                    self.templates.open = true;
                }
                if !self.recent.is_empty() {
                    ui.add_space(20.0);
                    ui.strong("Recent");
                    for path in self.recent.clone() {
                        if ui.link(path.display().to_string()).clicked() {
                            self.request_open(path);
                        }
                    }
                }
            });
        });
    }
}
