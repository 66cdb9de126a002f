//! Rendering diagnostics for people (text) and tools (JSON).

use serde::Serialize;
use std::path::Path;
use wfstudio_schema::{Diagnostic, Severity};

/// One diagnostic in the JSON output contract.
#[derive(Debug, Serialize)]
pub struct JsonDiagnostic<'a> {
    file: String,
    line: Option<usize>,
    column: Option<usize>,
    severity: Severity,
    code: &'a str,
    path: String,
    message: &'a str,
    help: Option<&'a str>,
}

impl<'a> JsonDiagnostic<'a> {
    /// The JSON form of `diagnostic` found in `file`.
    pub fn new(file: &Path, diagnostic: &'a Diagnostic) -> Self {
        Self {
            file: file.display().to_string(),
            line: diagnostic.span.map(|s| s.start.line),
            column: diagnostic.span.map(|s| s.start.column),
            severity: diagnostic.severity,
            code: diagnostic.code,
            path: diagnostic.path.to_string(),
            message: &diagnostic.message,
            help: diagnostic.help.as_deref(),
        }
    }
}

/// `FILE:LINE:COL: severity[CODE]: path: message` and an indented help line.
pub fn text(file: &Path, diagnostic: &Diagnostic) -> String {
    let (line, column) = diagnostic
        .span
        .map_or((1, 1), |s| (s.start.line, s.start.column));
    let subject = if diagnostic.path.is_root() {
        String::new()
    } else {
        format!("{}: ", diagnostic.path)
    };
    let mut out = format!(
        "{}:{line}:{column}: {}[{}]: {subject}{}",
        file.display(),
        diagnostic.severity,
        diagnostic.code,
        diagnostic.message
    );
    if let Some(help) = &diagnostic.help {
        out.push_str("\n    help: ");
        out.push_str(help);
    }
    out
}
