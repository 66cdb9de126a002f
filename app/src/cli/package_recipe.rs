//! The package's default recipe (`recipes/default.json`, written by the
//! importer with the graph's prompts and generated pictures): where it is.

use std::path::{Path, PathBuf};
use wfstudio_core::comfyui::package::DEFAULT_RECIPE;

/// The package's default recipe, when `path` is a package folder with one.
pub fn default_recipe_of(path: &Path) -> Option<PathBuf> {
    let candidate = path.join(DEFAULT_RECIPE);
    (path.is_dir() && candidate.is_file()).then_some(candidate)
}
