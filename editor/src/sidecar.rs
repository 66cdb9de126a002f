//! The layout sidecar: node positions the user moved and frames they
//! collapsed, kept beside the document (`inference_metadata.wfstudio.json`)
//! because the document itself is strict and takes no extra keys.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What the sidecar stores, keyed by document path text (`pipeline.workflow.steps[2]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sidecar {
    /// Moved nodes: top-left corner in canvas units.
    #[serde(default)]
    pub positions: BTreeMap<String, [f32; 2]>,
    /// Collapsed loop and branch frames.
    #[serde(default)]
    pub collapsed: BTreeSet<String>,
}

/// The sidecar file of the document at `document`.
pub fn sidecar_path(document: &Path) -> PathBuf {
    document.with_extension("wfstudio.json")
}

impl Sidecar {
    /// Reads the sidecar of `document`; a missing or unreadable one is empty
    /// (it only holds cosmetic state).
    pub fn load(document: &Path) -> Self {
        std::fs::read_to_string(sidecar_path(document))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// Writes the sidecar of `document` atomically; an empty one removes the file.
    pub fn save(&self, document: &Path) -> std::io::Result<()> {
        let path = sidecar_path(document);
        if self.positions.is_empty() && self.collapsed.is_empty() {
            return match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
        }
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        wfstudio_schema::save::write_atomic(&path, text.as_bytes())
    }
}
