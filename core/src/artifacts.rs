//! Package file checks (V-F1, V-F2): every artifact a document names must be
//! a file inside the package folder — relative, without `..`, and inside the
//! root after symlinks are resolved.

use crate::validate::{Options, Report, rules, workflow_path};
use std::path::{Component, Path, PathBuf};
use wfstudio_schema::types::workflow::{Implementation, InputSource};
use wfstudio_schema::{Diagnostic, DocPath, Document};

/// Every file path the document names, with its document path.
pub fn referenced_files(document: &Document) -> Vec<(DocPath, &str)> {
    let mut files = Vec::new();
    if let Some(wf) = document.pipeline.as_ref().map(|p| &p.workflow) {
        let components = workflow_path().key("components");
        for (name, component) in &wf.components {
            let imp = components
                .key(name.as_str())
                .key("implementation")
                .key("artifact");
            match &component.implementation {
                Implementation::Onnx(o) if !o.artifact.trim().is_empty() => {
                    files.push((imp, o.artifact.as_str()));
                }
                Implementation::Adapter(a) => {
                    if let Some(artifact) = &a.artifact {
                        files.push((imp, artifact.as_str()));
                    }
                }
                _ => {}
            }
        }
        for (name, input) in wf.inputs.iter().flatten() {
            if let InputSource::Artifact(a) = &input.source {
                let at = workflow_path()
                    .key("inputs")
                    .key(name.as_str())
                    .key("source")
                    .key("path");
                files.push((at, a.path.as_str()));
            }
        }
    }
    if let Some(tokenizer) = document.package.as_ref().and_then(|p| p.tokenizer.as_ref()) {
        for (i, artifact) in tokenizer.artifacts.iter().flatten().enumerate() {
            let at = DocPath::root()
                .key("package")
                .key("tokenizer")
                .key("artifacts")
                .index(i)
                .key("location");
            files.push((at, artifact.location.as_str()));
        }
    }
    files
}

/// Why a referenced path is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum PathProblem {
    /// Absolute, `..`, or resolving outside the package.
    Escapes(String),
    /// Inside the package but not an existing file.
    Missing,
}

/// Resolves `relative` inside `root`, refusing anything that escapes it.
pub fn resolve_inside(root: &Path, relative: &str) -> Result<PathBuf, PathProblem> {
    let path = Path::new(relative);
    if path.is_absolute() || relative.starts_with('/') || relative.starts_with('\\') {
        return Err(PathProblem::Escapes("is absolute".into()));
    }
    if path.components().any(|c| {
        matches!(
            c,
            Component::ParentDir | Component::Prefix(_) | Component::RootDir
        )
    }) {
        return Err(PathProblem::Escapes("contains '..'".into()));
    }
    let joined = root.join(path);
    if !joined.is_file() {
        return Err(PathProblem::Missing);
    }
    let real_root = root.canonicalize().map_err(|_| PathProblem::Missing)?;
    let real = joined.canonicalize().map_err(|_| PathProblem::Missing)?;
    if !real.starts_with(&real_root) {
        return Err(PathProblem::Escapes(format!(
            "resolves to {} outside the package",
            real.display()
        )));
    }
    Ok(real)
}

/// V-F1/V-F2 for every file `document` names, relative to `root` (the
/// folder holding the metadata file).
pub fn check_files(document: &Document, root: &Path, options: &Options) -> Report {
    let mut diagnostics = Vec::new();
    for (path, file) in referenced_files(document) {
        let (code, message) = match resolve_inside(root, file) {
            Ok(_) => continue,
            Err(PathProblem::Missing) => (
                "V-F1",
                format!("artifact '{file}' does not exist in the package"),
            ),
            Err(PathProblem::Escapes(why)) => ("V-F2", format!("artifact path '{file}' {why}")),
        };
        if options.disabled.contains(code) {
            continue;
        }
        let help = rules::rule(code).map_or("", |r| r.help);
        diagnostics.push(Diagnostic::error(code, path, message).with_help(help));
    }
    Report { diagnostics }
}
