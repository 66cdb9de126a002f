//! Helpers shared by the studio's kittests.

use egui_kittest::Harness;
use std::path::{Path, PathBuf};
use wfstudio_editor::Studio;

/// A file dropped onto the window, as the native backend hands it over.
#[derive(Debug)]
struct DroppedPath(PathBuf);

impl egui::DroppedFile for DroppedPath {
    fn path(&self) -> &Path {
        &self.0
    }

    fn bytes(&self) -> Result<Vec<u8>, String> {
        std::fs::read(&self.0).map_err(|e| e.to_string())
    }
}

/// Drops `path` onto the window and lets two frames handle it.
pub fn drop_file(harness: &mut Harness<'static, Studio>, path: &Path) {
    harness
        .input_mut()
        .dropped_files
        .push(std::sync::Arc::new(DroppedPath(path.to_path_buf())));
    harness.run_steps(2);
}
