//! A document read from disk: what opening a file gives the worker, the
//! ComfyUI import and the studio's document state.

use std::path::PathBuf;
use wfstudio_schema::Loaded;
use wfstudio_schema::types::document::Document;

/// A document read from disk.
#[derive(Debug)]
pub struct Opened {
    /// The document file (inside a package folder when a folder was given).
    pub file: PathBuf,
    /// Its text as read.
    pub text: String,
    /// Its parse.
    pub loaded: Box<Loaded>,
    /// Unsaved edits recovered after a crash.
    pub recovered: Option<(crate::autosave::Recovery, Box<Document>)>,
}
