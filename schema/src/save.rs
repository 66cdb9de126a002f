//! Saving documents: canonical YAML or JSON text and atomic file writes.

use crate::emit;
use crate::types::document::Document;
use std::io::Write;
use std::path::Path;

/// Canonical YAML for `document`: keys in schema order (name maps in the
/// order written), with `leading_comments` (the file's top comment block)
/// kept verbatim above it.
pub fn to_yaml(document: &Document, leading_comments: Option<&str>) -> String {
    let value = serde_json::to_value(document).unwrap_or_default();
    let body = emit::to_yaml(&value);
    match leading_comments {
        Some(comments) if !comments.is_empty() => format!("{comments}\n{body}"),
        _ => body,
    }
}

/// Canonical pretty-printed JSON for `document` (comments cannot be kept).
pub fn to_json(document: &Document) -> String {
    let value = serde_json::to_value(document).unwrap_or_default();
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes `contents` to `path` atomically: a temporary file in the same
/// folder is written, flushed to disk and renamed over the target, so a
/// crash leaves either the old or the new file, never a torn one.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "document".into());
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}
