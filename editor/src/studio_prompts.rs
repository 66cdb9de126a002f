//! The studio's prompts before losing unsaved edits: closing the window, opening another document, discarding a recovery copy.

use crate::studio::Studio;
use std::path::PathBuf;

impl Studio {
    pub(crate) fn close_prompt(&mut self, ctx: &egui::Context) {
        let dirty = self.doc.as_ref().is_some_and(|d| d.history.is_dirty());
        if ctx.input(|i| i.viewport().close_requested()) && dirty && !self.close_confirmed {
            ctx.send_viewport_cmd(egui::ViewportCommand::CancelClose);
            self.confirm_close = true;
        }
        if !self.confirm_close {
            return;
        }
        egui::Modal::new(egui::Id::new("close_prompt")).show(ctx, |ui| {
            ui.heading("Unsaved changes");
            ui.label("Save the document before closing?");
            ui.horizontal(|ui| {
                if ui.button("Save").clicked() {
                    self.save(None);
                    // A failed save keeps the window (and the edits) open.
                    if !self.is_dirty() {
                        self.finish_close(ctx);
                    }
                }
                if ui.button("Discard").clicked() {
                    self.discard_recovery();
                    self.finish_close(ctx);
                }
                if ui.button("Cancel").clicked() {
                    self.confirm_close = false;
                }
            });
        });
    }

    /// The user threw the unsaved edits away: so does the recovery copy.
    pub(crate) fn discard_recovery(&mut self) {
        if let Some(doc) = &self.doc {
            let _ = crate::autosave::discard(self.config.as_deref(), &doc.path);
        }
    }

    pub(crate) fn is_dirty(&self) -> bool {
        self.doc.as_ref().is_some_and(|d| d.history.is_dirty())
    }

    /// Opens `path` from a user action (menu, recent list, drop): with
    /// unsaved edits, asks first.
    pub(crate) fn request_open(&mut self, path: PathBuf) {
        if self.is_dirty() {
            self.replace_with = Some(path);
        } else {
            self.open(&path);
        }
    }

    /// "Save changes before …?" while a [`Self::request_open`] or a
    /// [`Self::lower_for_package`] waits.
    pub(crate) fn replace_prompt(&mut self, ctx: &egui::Context) {
        let (what, relower) = match (&self.replace_with, &self.relower_for) {
            (Some(next), _) => (format!("opening {}", next.display()), false),
            (None, Some(dir)) => (format!("lowering again for {}", dir.display()), true),
            (None, None) => return,
        };
        let current = self
            .doc
            .as_ref()
            .map(|d| d.path.display().to_string())
            .unwrap_or_default();
        let verb = if relower { "lower" } else { "open" };
        let mut proceed = false;
        egui::Modal::new(egui::Id::new("replace_prompt")).show(ctx, |ui| {
            ui.heading("Unsaved changes");
            ui.label(format!("Save the changes to {current} before {what}?"));
            ui.horizontal(|ui| {
                if ui.button(format!("Save and {verb}")).clicked() {
                    self.save(None);
                    proceed = !self.is_dirty();
                }
                if ui.button(format!("Discard and {verb}")).clicked() {
                    self.discard_recovery();
                    proceed = true;
                }
                if ui.button("Cancel").clicked() {
                    self.replace_with = None;
                    self.relower_for = None;
                }
            });
        });
        if proceed {
            if relower {
                if let Some(dir) = self.relower_for.take() {
                    self.relower_now(&dir);
                }
            } else if let Some(next) = self.replace_with.take() {
                self.open(&next);
            }
        }
    }

    pub(crate) fn finish_close(&mut self, ctx: &egui::Context) {
        self.confirm_close = false;
        self.close_confirmed = true;
        ctx.send_viewport_cmd(egui::ViewportCommand::Close);
    }
}
