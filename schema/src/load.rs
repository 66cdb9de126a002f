//! Reading documents: locating the metadata file of a package, strict typed
//! parsing of YAML or JSON, and turning every failure into a located
//! [`Diagnostic`] with a fix hint.

use crate::de::{DeError, DeErrorKind, from_node};
use crate::diagnostic::{Diagnostic, codes};
use crate::limits::Limits;
use crate::path::DocPath;
use crate::source::{Position, SourceMap, Span};
use crate::tree::{Comment, TreeError, parse_tree};
use crate::types::document::Document;
use std::path::{Path, PathBuf};

/// File names a package folder may hold its document under, in lookup order.
pub const DOCUMENT_NAMES: [&str; 3] = [
    "inference_metadata.yaml",
    "inference_metadata.yml",
    "inference_metadata.json",
];

/// Source syntax of a document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// YAML (also used for unknown extensions: JSON is valid YAML).
    Yaml,
    /// JSON (checked as strict JSON first).
    Json,
}

impl Format {
    /// The format implied by a file name.
    pub fn from_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Yaml,
        }
    }
}

/// A successfully read document with everything a later stage needs.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The typed document.
    pub document: Document,
    /// Path -> source span of every node.
    pub source_map: SourceMap,
    /// The comment block at the top of the file, as written (kept on save).
    pub leading_comments: Option<String>,
    /// Comments after the leading block (a save cannot keep them).
    pub other_comments: Vec<Comment>,
    /// Non-fatal findings (duplicate keys).
    pub warnings: Vec<Diagnostic>,
    /// The syntax it was read from.
    pub format: Format,
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file or folder could not be read.
    #[error("cannot read {}: {error}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error (in the message, so not also its source: a report
        /// of the error chain would say it twice).
        error: std::io::Error,
    },
    /// A folder holds no metadata document.
    #[error("{} holds no inference_metadata.yaml, .yml or .json", path.display())]
    NoDocument {
        /// The folder.
        path: PathBuf,
    },
    /// The file is larger than the configured bound.
    #[error("{} is {size} bytes, over the {limit}-byte document limit", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The bound.
        limit: usize,
    },
    /// The text is not valid UTF-8.
    #[error("{} is not UTF-8 text", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
}

/// Resolves a file or package folder to the document file.
pub fn locate_document(path: &Path) -> Result<PathBuf, LoadError> {
    let meta = std::fs::metadata(path).map_err(|error| LoadError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    if !meta.is_dir() {
        return Ok(path.to_path_buf());
    }
    DOCUMENT_NAMES
        .iter()
        .map(|name| path.join(name))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| LoadError::NoDocument {
            path: path.to_path_buf(),
        })
}

/// Reads a document file's text within the size bound.
pub fn read_text(path: &Path, limits: &Limits) -> Result<String, LoadError> {
    let io = |error| LoadError::Io {
        path: path.to_path_buf(),
        error,
    };
    let size = std::fs::metadata(path).map_err(io)?.len();
    if size > limits.max_bytes as u64 {
        return Err(LoadError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit: limits.max_bytes,
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    String::from_utf8(bytes).map_err(|_| LoadError::NotText {
        path: path.to_path_buf(),
    })
}

/// Locates, reads and parses a document. The outer error is an I/O failure;
/// the inner one holds the document's diagnostics.
pub fn load_file(
    path: &Path,
    limits: &Limits,
) -> Result<(PathBuf, Result<Loaded, Vec<Diagnostic>>), LoadError> {
    let file = locate_document(path)?;
    let text = read_text(&file, limits)?;
    let parsed = parse_text(&text, Format::from_path(&file), limits);
    Ok((file, parsed))
}

/// Parses document text strictly. On failure returns the diagnostics (the
/// typed parse stops at the first structural error, as the reference does).
pub fn parse_text(text: &str, format: Format, limits: &Limits) -> Result<Loaded, Vec<Diagnostic>> {
    if text.len() > limits.max_bytes {
        return Err(vec![Diagnostic::error(
            codes::LIMIT,
            DocPath::root(),
            format!(
                "the document is {} bytes, over the {}-byte limit",
                text.len(),
                limits.max_bytes
            ),
        )]);
    }
    if format == Format::Json {
        check_json(text)?;
    }
    let tree = parse_tree(text, limits).map_err(|e| vec![tree_diagnostic(e)])?;
    let Some(root) = tree.source_map.root() else {
        return Err(vec![
            Diagnostic::error(
                codes::INVALID_TYPE,
                DocPath::root(),
                "the document is empty",
            )
            .with_help("a metadata document is a mapping with at least `pipeline`")
            .with_span(Some(Span {
                start: Position {
                    line: 1,
                    column: 1,
                    offset: 0,
                },
                end: Position {
                    line: 1,
                    column: 1,
                    offset: 0,
                },
            })),
        ]);
    };
    let document: Document =
        from_node(root).map_err(|e| vec![de_diagnostic(e, &tree.source_map)])?;
    if document.pipeline.is_some() && document.model.as_ref().is_some_and(|m| m.io.is_some()) {
        let path = DocPath::root().key("model").key("io");
        return Err(vec![
            Diagnostic::error(
                codes::MODEL_IO_BESIDE_WORKFLOW,
                path.clone(),
                "model.io and pipeline.workflow both declare the graph ABI",
            )
            .with_help(
                "remove model.io and use component ports/roles, state_service groups and \
                 indexed_scatter updates",
            )
            .with_span(tree.source_map.locate(&path)),
        ]);
    }
    let warnings = tree
        .duplicates
        .iter()
        .map(|dup| {
            Diagnostic::warning(
                codes::DUPLICATE_KEY,
                dup.path.clone(),
                format!(
                    "key `{}` appears again in the same mapping (first on line {}); the last value wins",
                    dup.path.last_key().unwrap_or_default(),
                    dup.first_line
                ),
            )
            .with_help("delete one of the two entries")
            .with_span(Some(Span {
                start: dup.position,
                end: dup.position,
            }))
        })
        .collect();
    let (leading_comments, other_comments) = split_leading_comments(text, tree.comments);
    Ok(Loaded {
        document,
        source_map: tree.source_map,
        leading_comments,
        other_comments,
        warnings,
        format,
    })
}

fn check_json(text: &str) -> Result<(), Vec<Diagnostic>> {
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Ok(_) => Ok(()),
        Err(e) => {
            let at = Position {
                line: e.line(),
                column: e.column(),
                offset: 0,
            };
            let message = e.to_string();
            let message = message
                .rsplit_once(" at line ")
                .map_or(message.as_str(), |(m, _)| m)
                .to_string();
            Err(vec![
                Diagnostic::error(codes::SYNTAX, DocPath::root(), message)
                    .with_help("fix the JSON syntax at this position")
                    .with_span(Some(Span { start: at, end: at })),
            ])
        }
    }
}

fn tree_diagnostic(error: TreeError) -> Diagnostic {
    let at = |p: Position| Some(Span { start: p, end: p });
    match error {
        TreeError::Syntax { message, position } => {
            Diagnostic::error(codes::SYNTAX, DocPath::root(), message)
                .with_help("fix the YAML syntax at this position")
                .with_span(at(position))
        }
        TreeError::Limit { message, position } => {
            Diagnostic::error(codes::LIMIT, DocPath::root(), message)
                .with_help("metadata documents are small; remove the deep nesting or alias chains")
                .with_span(at(position))
        }
        TreeError::NonStringKey {
            message,
            position,
            path,
        } => Diagnostic::error(codes::NON_STRING_KEY, path, message)
            .with_help("quote keys that look like booleans or numbers, e.g. 'true': or '0':")
            .with_span(at(position)),
        TreeError::MultipleDocuments { position } => Diagnostic::error(
            codes::SYNTAX,
            DocPath::root(),
            TreeError::MultipleDocuments { position }.to_string(),
        )
        .with_help("remove the `---` separator and the second document")
        .with_span(at(position)),
    }
}

/// Migration hints for keys the format removed.
const REMOVED_FIELDS: &[(&str, &str)] = &[
    (
        "slot_ids",
        "`slot_ids` was removed: rows are positional and the runtime assigns slots; delete the key",
    ),
    (
        "row_ids",
        "`row_ids` was removed from emit steps: rows are positional; use `when` or `valid_length` for per-row publication",
    ),
    (
        "request_epochs",
        "`request_epochs` was removed from adapter selection; delete the key",
    ),
    (
        "kv_service",
        "`kv_service` was renamed: declare the groups under `serving.state_service`",
    ),
    (
        "storage",
        "`storage` was removed from state groups: storage is a runtime choice; delete the key",
    ),
    (
        "paging",
        "`paging` was removed from state groups: paging is a runtime choice; delete the key",
    ),
    (
        "slot_allocation",
        "`slot_allocation` was removed from state groups; delete the key",
    ),
    (
        "shared_buffer",
        "`shared_buffer` was replaced by `aliasing: permitted` or `aliasing: required`",
    ),
    (
        "models",
        "`pipeline.models` (composite IR) was removed: declare components under pipeline.workflow.components and wire them with steps",
    ),
    (
        "location",
        "ONNX implementations name their file with `artifact`, not `location`",
    ),
    (
        "phi",
        "branch phis are spelled `outputs: {name: {cases: {...}}}`",
    ),
];

fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(word, c), *c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

fn de_diagnostic(error: DeError, map: &SourceMap) -> Diagnostic {
    let path = error.path.clone().unwrap_or_default();
    let span = error.span.or_else(|| map.locate(&path));
    let message = error.message.clone();
    let diagnostic = match &error.kind {
        DeErrorKind::UnknownField { field, expected } => {
            match REMOVED_FIELDS.iter().find(|(name, _)| name == field) {
                Some((_, hint)) => Diagnostic::error(
                    codes::REMOVED_FIELD,
                    path,
                    format!("removed field `{field}`"),
                )
                .with_help(*hint),
                None => {
                    let help = match closest(field, expected) {
                        Some(near) => format!("did you mean `{near}`?"),
                        None => format!("remove `{field}`; this structure does not accept it"),
                    };
                    Diagnostic::error(codes::UNKNOWN_FIELD, path, message).with_help(help)
                }
            }
        }
        DeErrorKind::MissingField { field } => {
            Diagnostic::error(codes::MISSING_FIELD, path, message)
                .with_help(format!("add `{field}`"))
        }
        DeErrorKind::UnknownVariant { variant, expected } => {
            let help = if variant == "transfer" {
                "`transfer` steps exist only in the lowered IR and cannot be written; bind the value directly".to_string()
            } else {
                match closest(variant, expected) {
                    Some(near) => format!("did you mean `{near}`?"),
                    None => format!("use one of: {}", expected.join(", ")),
                }
            };
            Diagnostic::error(codes::UNKNOWN_VARIANT, path, message).with_help(help)
        }
        DeErrorKind::InvalidType => {
            let help = if message.contains("expected a string")
                && (message.contains("floating point") || message.contains("integer"))
            {
                "quote the value: version strings are written as '1.0'".to_string()
            } else if message.contains("expected a map with a `kind` key") {
                "write a map with a `kind` key, e.g. {kind: none}".to_string()
            } else {
                "change the value to the expected type".to_string()
            };
            Diagnostic::error(codes::INVALID_TYPE, path, message).with_help(help)
        }
        DeErrorKind::InvalidValue => Diagnostic::error(codes::INVALID_VALUE, path, message)
            .with_help("change the value to one the field accepts"),
        DeErrorKind::Other => Diagnostic::error(codes::INVALID_TYPE, path, message)
            .with_help("change the value to the expected type"),
    };
    diagnostic.with_span(span)
}

/// Splits comments into the leading block (kept verbatim) and the rest.
fn split_leading_comments(text: &str, comments: Vec<Comment>) -> (Option<String>, Vec<Comment>) {
    let mut block_end_line = 0;
    let mut block = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || trimmed.is_empty() {
            block.push(line.trim_end());
            block_end_line = i + 1;
        } else {
            break;
        }
    }
    while block.last().is_some_and(|l| l.is_empty()) {
        block.pop();
    }
    let leading = (!block.is_empty()).then(|| block.join("\n"));
    let rest = comments
        .into_iter()
        .filter(|c| c.position.line > block_end_line)
        .collect();
    (leading, rest)
}
