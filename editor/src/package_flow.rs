//! Writing an imported ComfyUI graph as a runnable package from the studio:
//! the Save as package dialog, and Run with stand-ins / with models, which
//! write the package into a scratch folder, open it and ask the run panel
//! to run it. The writing happens on the worker thread.

use crate::package_dialog::{DialogEvent, PackageChoice, PackageDialog};
use crate::studio::{Studio, rfd_dialog};
use crate::worker::{Job, PackageJob};
use std::path::{Path, PathBuf};
use wfstudio_core::comfyui::package::{Models, PackageOptions, Written};

impl Studio {
    /// Opens the Save as package dialog (an imported graph must be open).
    pub fn open_package_dialog(&mut self) {
        if self.comfy.is_some() && self.doc.is_some() {
            self.package_dialog = Some(PackageDialog::default());
        }
    }

    /// Writes the open lowered graph as a whole package into `out` (on the
    /// worker); with `run`, opens and runs it once written.
    pub fn write_package(&mut self, out: &Path, models: Models, force: bool, run: bool) {
        let (Some(doc), Some(comfy)) = (&self.doc, &self.comfy) else {
            return;
        };
        let options = PackageOptions {
            models,
            force,
            prompts: comfy.prompts.clone(),
        };
        let job = PackageJob {
            document: doc.history.document().clone(),
            out: out.to_path_buf(),
            options,
            run,
        };
        self.worker.submit(Job::WritePackage(Box::new(job)));
        self.say(format!("Writing the package {}…", out.display()), false);
    }

    /// Writes the lowered graph into a scratch package with `models` and
    /// runs it there (ComfyUI pane: Run with stand-ins / Run with models).
    pub fn run_in_place(&mut self, models: Models) {
        let Some(comfy) = &self.comfy else { return };
        let stem = crate::import::graph_stem(&comfy.source).to_string();
        let root = self
            .config_dir()
            .map_or_else(|| std::env::temp_dir().join("wfstudio"), Path::to_path_buf);
        let out = root.join("comfyui-runs").join(stem);
        self.write_package(&out, models, true, true);
    }

    /// A run the studio asks for: true once, when the package written by
    /// Run with stand-ins / with models is the open document.
    pub fn take_run_request(&mut self) -> bool {
        let open = self.doc.as_ref().map(|d| d.path.as_path());
        if open.is_some() && open == self.run_requested.as_deref() {
            self.run_requested = None;
            return true;
        }
        false
    }

    /// Draws the Save as package dialog when it is open.
    pub(crate) fn package_dialog_ui(&mut self, ctx: &egui::Context) {
        let Some(dialog) = &mut self.package_dialog else {
            return;
        };
        match dialog.show(ctx) {
            Some(DialogEvent::PickOut) => {
                if let Some(dir) = rfd_dialog().pick_folder() {
                    dialog.out = Some(dir);
                }
            }
            Some(DialogEvent::PickModels) => {
                if let Some(dir) = rfd_dialog().pick_folder() {
                    dialog.models_dir = Some(dir);
                }
            }
            Some(DialogEvent::Chosen(choice)) => {
                self.package_dialog = None;
                match choice {
                    PackageChoice::DocumentOnly(dir) => self.save_as_package(&dir),
                    PackageChoice::Write { out, models, force } => {
                        self.write_package(&out, models, force, false);
                    }
                }
            }
            Some(DialogEvent::Cancel) => self.package_dialog = None,
            None => {}
        }
    }

    /// The worker wrote (or refused) a package.
    pub(crate) fn package_written(
        &mut self,
        out: PathBuf,
        result: Result<Written, String>,
        run: bool,
    ) {
        match result {
            Ok(written) => {
                let mut message = format!(
                    "Wrote the package {}: {} policies synthesized, {} models from the folder, {} stand-ins",
                    out.display(),
                    written.synthesized.len(),
                    written.taken.len(),
                    written.stand_ins.len()
                );
                for note in &written.notes {
                    message.push_str("; ");
                    message.push_str(note);
                }
                self.say(message, false);
                if run {
                    self.run_requested = Some(out.join("inference_metadata.yaml"));
                }
                self.open(&out);
            }
            Err(error) => self.say(format!("Could not write the package: {error}"), true),
        }
    }
}
