//! Crash recovery: while a document has unsaved edits, its current text is
//! copied (atomically, debounced) into the config folder's `recovery/`;
//! saving or returning to the saved state removes the copy. Opening a
//! document that has a copy restores the unsaved edits as one undoable step.
//! The document's own folder is never written.

use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// One recovery copy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recovery {
    /// The document it belongs to.
    pub document: PathBuf,
    /// Seconds since the Unix epoch when it was written.
    pub written_unix: u64,
    /// The unsaved document, as canonical YAML.
    pub text: String,
}

/// The recovery copy's file for `document` under the config folder
/// `config`.
pub fn recovery_file(config: Option<&Path>, document: &Path) -> Option<PathBuf> {
    document_file(config, "recovery", document)
}

/// A per-document file in `config/<folder>/`, named by a hash of the
/// document's absolute path (recovery copies, remembered run inputs).
pub fn document_file(config: Option<&Path>, folder: &str, document: &Path) -> Option<PathBuf> {
    let absolute = document
        .canonicalize()
        .unwrap_or_else(|_| document.to_path_buf());
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    absolute.hash(&mut hasher);
    let name = format!("{:016x}.json", hasher.finish());
    Some(config?.join(folder).join(name))
}

/// Writes the recovery copy of `document`.
pub fn write(config: Option<&Path>, document: &Path, text: String) -> std::io::Result<()> {
    let Some(file) = recovery_file(config, document) else {
        return Ok(());
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let written_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let recovery = Recovery {
        document: document
            .canonicalize()
            .unwrap_or_else(|_| document.to_path_buf()),
        written_unix,
        text,
    };
    let json = serde_json::to_string(&recovery).map_err(std::io::Error::other)?;
    wfstudio_schema::save::write_atomic(&file, json.as_bytes())
}

/// The recovery copy of `document`, if one exists and belongs to it.
pub fn read(config: Option<&Path>, document: &Path) -> Option<Recovery> {
    let text = std::fs::read_to_string(recovery_file(config, document)?).ok()?;
    let recovery: Recovery = serde_json::from_str(&text).ok()?;
    let absolute = document
        .canonicalize()
        .unwrap_or_else(|_| document.to_path_buf());
    (recovery.document == absolute).then_some(recovery)
}

/// Removes the recovery copy of `document` (none is fine).
pub fn discard(config: Option<&Path>, document: &Path) -> std::io::Result<()> {
    match recovery_file(config, document).map(std::fs::remove_file) {
        Some(Err(e)) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}
