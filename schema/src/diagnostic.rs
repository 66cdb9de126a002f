//! Diagnostics: what is wrong, where, and how to fix it. Shared by the
//! reader, the validator, the CLI and the GUI.

use crate::path::DocPath;
use crate::source::Span;
use serde::Serialize;
use std::fmt;

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The document is invalid.
    Error,
    /// Accepted, but probably not what the author meant.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// Stable codes of the reader's diagnostics (documented in
/// `docs/VALIDATION.md`).
pub mod codes {
    /// Malformed YAML or JSON.
    pub const SYNTAX: &str = "S001";
    /// A key the structure does not declare.
    pub const UNKNOWN_FIELD: &str = "S002";
    /// A key that the format removed (with a migration hint).
    pub const REMOVED_FIELD: &str = "S003";
    /// A required key is missing.
    pub const MISSING_FIELD: &str = "S004";
    /// A value of the wrong type.
    pub const INVALID_TYPE: &str = "S005";
    /// A `kind` or enumerated string outside the vocabulary.
    pub const UNKNOWN_VARIANT: &str = "S006";
    /// A value of the right type that is not acceptable.
    pub const INVALID_VALUE: &str = "S007";
    /// A key repeated in one mapping (warning; the last value wins).
    pub const DUPLICATE_KEY: &str = "S008";
    /// A mapping key that is not a string.
    pub const NON_STRING_KEY: &str = "S009";
    /// `model.io` beside `pipeline.workflow`.
    pub const MODEL_IO_BESIDE_WORKFLOW: &str = "S010";
    /// A size, depth or expansion bound was exceeded.
    pub const LIMIT: &str = "S011";
}

/// One finding about a document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// Stable code, e.g. `S002`.
    pub code: &'static str,
    /// Document path of the offending node.
    pub path: DocPath,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
    /// Where it is in the source text.
    pub span: Option<Span>,
    /// A machine-applicable fix, when one is known.
    pub fix: Option<Fix>,
}

/// A machine-applicable fix offered with a diagnostic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// What applying it does, for a button or a log line.
    pub title: String,
    /// The edit.
    pub edit: FixEdit,
}

/// An edit to the document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum FixEdit {
    /// Append string items to the list at `path` (creating it if absent).
    AppendToList {
        /// The list.
        path: DocPath,
        /// Items to append, in order.
        items: Vec<String>,
    },
}

impl Diagnostic {
    /// A new error.
    pub fn error(code: &'static str, path: DocPath, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            code,
            path,
            message: message.into(),
            help: None,
            span: None,
            fix: None,
        }
    }

    /// A new warning.
    pub fn warning(code: &'static str, path: DocPath, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(code, path, message)
        }
    }

    /// Adds a fix hint.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Attaches a machine-applicable fix.
    pub fn with_fix(mut self, fix: Fix) -> Self {
        self.fix = Some(fix);
        self
    }

    /// Sets the source span.
    pub fn with_span(mut self, span: Option<Span>) -> Self {
        self.span = span;
        self
    }

    /// Whether this is an error (not a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl Serialize for DocPath {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl Serialize for Span {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Span", 2)?;
        s.serialize_field("line", &self.start.line)?;
        s.serialize_field("column", &self.start.column)?;
        s.end()
    }
}
