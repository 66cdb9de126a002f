//! Opening a ComfyUI file in the studio (on the worker): recognise it,
//! import it with the bundled node definitions (plus any `$WFSTUDIO_NODE_DEFS` names), and
//! turn a lowered graph into an in-memory document proposed at
//! `<folder>/<stem>/inference_metadata.yaml` until it is saved as a package.

use crate::opened::Opened;
use std::path::{Path, PathBuf};
use wfstudio_core::comfyui::lower::Target;
use wfstudio_core::comfyui::{Imported, NodeDefs, import};
use wfstudio_schema::{Format, Limits, parse_text};

/// The largest ComfyUI file (JSON or image) the studio reads.
const MAX_IMPORT_BYTES: u64 = 256 << 20;

/// An imported ComfyUI file.
#[derive(Debug)]
pub struct ImportedGraph {
    /// The file it came from.
    pub source: PathBuf,
    /// The target package it was lowered for, if one was chosen.
    pub target: Option<PathBuf>,
    /// The graph, its lowering or refusals.
    pub imported: Imported,
    /// The lowered document, ready to edit (when not refused).
    pub opened: Option<Opened>,
}

/// The bytes of `path` when it holds a ComfyUI graph rather than a
/// workflow document: a PNG or WebP, or JSON that reads as a ComfyUI graph
/// and has no `schema_version` or `pipeline`. `None` for anything else (it
/// is opened as a document); a PNG or WebP that cannot be read is an error.
pub fn comfyui_bytes(path: &Path) -> Option<Result<Vec<u8>, String>> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("png" | "webp") => Some(read_bounded(path)),
        Some("json") => {
            let bytes = read_bounded(path).ok()?;
            let document = serde_json::from_slice::<serde_json::Value>(&bytes)
                .is_ok_and(|v| v.get("schema_version").is_some() || v.get("pipeline").is_some());
            (!document && wfstudio_core::comfyui::read(&bytes).is_ok()).then_some(Ok(bytes))
        }
        _ => None,
    }
}

/// The file's bytes, refusing files over [`MAX_IMPORT_BYTES`].
fn read_bounded(source: &Path) -> Result<Vec<u8>, String> {
    let size = std::fs::metadata(source)
        .map_err(|e| format!("reading {}: {e}", source.display()))?
        .len();
    if size > MAX_IMPORT_BYTES {
        return Err(format!(
            "{} is {size} bytes; ComfyUI files over {MAX_IMPORT_BYTES} bytes are not read",
            source.display()
        ));
    }
    std::fs::read(source).map_err(|e| format!("reading {}: {e}", source.display()))
}

/// The bundled node definitions, with those of the file
/// `$WFSTUDIO_NODE_DEFS` names (if set) added or overriding them.
fn node_defs() -> Result<Option<NodeDefs>, String> {
    let extra = std::env::var_os("WFSTUDIO_NODE_DEFS").map(PathBuf::from);
    NodeDefs::builtin_with(extra.as_deref()).map(Some)
}

/// The name of a ComfyUI file without any extension (`txt2img.api.json`
/// gives `txt2img`).
pub fn graph_stem(source: &Path) -> &str {
    let name = source
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("comfyui");
    name.split('.')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("comfyui")
}

/// Where the lowered document of `source` is proposed to be saved.
pub fn proposed_document(source: &Path) -> PathBuf {
    let stem = graph_stem(source);
    source
        .parent()
        .unwrap_or(Path::new("."))
        .join(format!("{stem}-package"))
        .join("inference_metadata.yaml")
}

/// Imports `source` (its `bytes`, or read now), lowering for the package
/// in `target` (its adapters).
pub fn import_file(
    source: &Path,
    bytes: Option<Vec<u8>>,
    target: Option<&Path>,
) -> Result<ImportedGraph, String> {
    let bytes = match bytes {
        Some(bytes) => bytes,
        None => read_bounded(source)?,
    };
    let package = match target {
        Some(dir) => Target::from_package(dir)?,
        None => Target::default(),
    };
    let defs = node_defs()?;
    let imported = import(&bytes, defs.as_ref(), &package)
        .map_err(|e| format!("{}: {e}", source.display()))?;
    let opened = match &imported.outcome {
        Ok(lowered) => {
            let text = wfstudio_schema::emit::to_yaml(&lowered.document);
            let loaded = parse_text(&text, Format::Yaml, &Limits::default()).map_err(|d| {
                format!(
                    "the lowered document does not parse: {}",
                    d.first().map(|d| d.message.as_str()).unwrap_or_default()
                )
            })?;
            Some(Opened {
                file: target
                    .map(|dir| dir.join("inference_metadata.yaml"))
                    .unwrap_or_else(|| proposed_document(source)),
                text,
                loaded: Box::new(loaded),
                recovered: None,
            })
        }
        Err(_) => None,
    };
    Ok(ImportedGraph {
        source: source.to_path_buf(),
        target: target.map(Path::to_path_buf),
        imported,
        opened,
    })
}
