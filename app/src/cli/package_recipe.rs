//! The default recipe of a package written from a ComfyUI graph:
//! `recipes/default.json` holds the graph's prompts (encoded with the
//! package tokenizer) and generated pictures for its picture inputs, so
//! `wfstudio run DIR` runs the graph as it was drawn.

use anyhow::Context;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use wfstudio_core::comfyui::lower::Lowered;
use wfstudio_core::comfyui::package::inputs::generated_pictures;
use wfstudio_runner::text::PackageTokenizer;

/// The default recipe's path inside a package folder.
pub const DEFAULT_RECIPE: &str = "recipes/default.json";

/// The package's default recipe, when `path` is a package folder with one.
pub fn default_recipe_of(path: &Path) -> Option<PathBuf> {
    let candidate = path.join(DEFAULT_RECIPE);
    (path.is_dir() && candidate.is_file()).then_some(candidate)
}

/// Writes `DIR/recipes/default.json` for the package `dir` lowered as
/// `lowered`; returns its path.
pub fn write_default_recipe(dir: &Path, lowered: &Lowered) -> anyhow::Result<PathBuf> {
    let mut inputs = generated_pictures(&lowered.document);
    let tokenizer_path = dir.join("tokenizer.json");
    let tokenizer = if tokenizer_path.is_file() {
        Some(PackageTokenizer::from_file(&tokenizer_path).context("loading tokenizer.json")?)
    } else {
        None
    };
    let mut prompts = Vec::new();
    for (input, text) in &lowered.prompts {
        let Some(tokenizer) = &tokenizer else {
            eprintln!(
                "note: {input}: the package has no tokenizer.json; pass the prompt's token ids (--prompt-tokens or --input)"
            );
            continue;
        };
        let ids = tokenizer
            .encode(text)
            .with_context(|| format!("encoding the prompt of {input}"))?;
        prompts.push((input, ids));
    }
    // The prompts share one sequence length: shorter ones repeat their last
    // id (the end-of-text token, as CLIP pads).
    let length = prompts.iter().map(|(_, ids)| ids.len()).max().unwrap_or(0);
    for (input, mut ids) in prompts {
        if let Some(&last) = ids.last() {
            ids.resize(length, last);
        }
        inputs.insert(
            input.clone(),
            json!({"dtype": "int64", "shape": [1, ids.len()], "data": ids}),
        );
    }
    let recipe = json!({
        "description": "the ComfyUI graph's prompts and generated pictures for its picture inputs, written by wfstudio import-comfyui",
        "inputs": Value::Object(inputs),
        "outputs": Value::Object(Map::new()),
    });
    let path = dir.join(DEFAULT_RECIPE);
    std::fs::create_dir_all(dir.join("recipes"))?;
    let mut text = serde_json::to_string_pretty(&recipe)?;
    text.push('\n');
    wfstudio_schema::save::write_atomic(&path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
