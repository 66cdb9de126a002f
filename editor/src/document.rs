//! One open document: its file, edit history, the latest analysis from the
//! worker and the layout sidecar. Saving writes canonical YAML (or JSON for
//! a `.json` file) atomically, keeping the previous file as a backup.

use crate::opened::Opened;
use crate::sidecar::Sidecar;
use crate::worker::{Analysis, AnalyzeJob};
use std::path::{Path, PathBuf};
use wfstudio_core::edit::History;
use wfstudio_schema::{Format, SourceMap};

/// An open document.
pub struct OpenDocument {
    /// The document file.
    pub path: PathBuf,
    /// Its syntax on disk.
    pub format: Format,
    /// The comment block at its top (kept on save).
    pub leading_comments: Option<String>,
    /// Comments elsewhere that a save would drop (the user is warned).
    pub dropped_comments: usize,
    /// Undo/redo and the current document.
    pub history: History,
    /// The newest analysis (possibly of an older revision while one runs).
    pub analysis: Option<Analysis>,
    /// The revision last sent to the worker.
    pub requested: Option<u64>,
    /// Moved positions and collapsed frames.
    pub sidecar: Sidecar,
    /// The text and source map as read from disk (revision 0).
    original: Option<(String, SourceMap)>,
}

impl OpenDocument {
    /// Wraps a document read from disk.
    pub fn from_opened(opened: Opened) -> Self {
        let Opened {
            file, text, loaded, ..
        } = opened;
        OpenDocument {
            sidecar: Sidecar::load(&file),
            format: loaded.format,
            leading_comments: loaded.leading_comments.clone(),
            dropped_comments: loaded.other_comments.len(),
            history: History::new(loaded.document.clone()),
            analysis: None,
            requested: None,
            original: Some((text, loaded.source_map.clone())),
            path: file,
        }
    }

    /// The package folder (the document's folder).
    pub fn package_root(&self) -> Option<&Path> {
        self.path.parent()
    }

    /// The title-bar text: file name, a `*` when unsaved, the folder.
    pub fn title(&self) -> String {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let folder = self
            .package_root()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let dirty = if self.history.is_dirty() { "*" } else { "" };
        format!("{dirty}{name} — {folder} — Workflow Studio")
    }

    /// Whether the newest analysis belongs to the current revision.
    pub fn settled(&self) -> bool {
        self.analysis
            .as_ref()
            .is_some_and(|a| a.revision == self.history.revision())
    }

    /// The analysis job for the current revision, unless one was already sent.
    pub fn analyze_job(&mut self) -> Option<AnalyzeJob> {
        let revision = self.history.revision();
        if self.requested == Some(revision) {
            return None;
        }
        self.requested = Some(revision);
        let original = if revision == 0 {
            self.original.clone()
        } else {
            None
        };
        Some(AnalyzeJob {
            revision,
            document: self.history.document().clone(),
            original,
            leading_comments: self.leading_comments.clone(),
            package_root: self.package_root().map(Path::to_path_buf),
        })
    }

    /// The text a save writes.
    pub fn saved_text(&self, format: Format) -> String {
        match format {
            Format::Json => wfstudio_schema::save::to_json(self.history.document()),
            _ => wfstudio_schema::save::to_yaml(
                self.history.document(),
                self.leading_comments.as_deref(),
            ),
        }
    }

    /// Saves to `target` (Save As when it differs from the current path):
    /// the previous file is kept as `<name>.bak`, the new text is written
    /// atomically, then the sidecar. The original text is forgotten, since
    /// line numbers now follow the saved text.
    pub fn save_to(&mut self, target: &Path) -> std::io::Result<()> {
        let format = Format::from_path(target);
        let text = self.saved_text(format);
        if target.exists() {
            let backup = backup_path(target);
            std::fs::copy(target, &backup)?;
        }
        wfstudio_schema::save::write_atomic(target, text.as_bytes())?;
        self.path = target.to_path_buf();
        self.format = format;
        self.history.mark_saved();
        self.dropped_comments = 0;
        self.original = None;
        self.sidecar.save(target)
    }
}

/// Where the previous version of `file` is kept on save.
pub fn backup_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".bak");
    file.with_file_name(name)
}
