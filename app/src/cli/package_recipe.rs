//! The package's default recipe (`recipes/default.json`, written by the
//! importer with the graph's prompts and generated pictures): where it is,
//! and the encoder of a models folder's tokenizer for its prompts.

use anyhow::Context;
use std::path::{Path, PathBuf};
use wfstudio_core::comfyui::package::DEFAULT_RECIPE;
use wfstudio_runner::text::PackageTokenizer;

/// The package's default recipe, when `path` is a package folder with one.
pub fn default_recipe_of(path: &Path) -> Option<PathBuf> {
    let candidate = path.join(DEFAULT_RECIPE);
    (path.is_dir() && candidate.is_file()).then_some(candidate)
}

/// The tokenizer of a models folder (`DIR/tokenizer.json`), if it has one.
pub fn models_tokenizer(dir: &Path) -> anyhow::Result<Option<PackageTokenizer>> {
    let path = dir.join("tokenizer.json");
    if !path.is_file() {
        return Ok(None);
    }
    PackageTokenizer::from_file(&path)
        .map(Some)
        .with_context(|| format!("loading {}", path.display()))
}
