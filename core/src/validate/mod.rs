//! The semantic validator: every rule of the format over a typed document,
//! accumulated (not fail-fast) into diagnostics keyed by document path.
//!
//! [`validate`] is cheap enough to run after every edit (see the
//! `validate` benchmark); the editor calls it from a background thread
//! with the edited document and gets a [`Report`].

mod adapters;
mod components;
mod document;
mod emits;
mod inputs;
mod manifest;
pub mod rules;
mod speculative;
mod state;
mod values;
pub(crate) mod walk;

pub use walk::for_each_step;

use std::collections::{BTreeMap, HashSet};
use wfstudio_schema::types::workflow::WorkflowSpec;
use wfstudio_schema::{Diagnostic, DocPath, Document, SourceMap};

/// Validator settings.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Rule codes to skip (used by the tests that prove each rule is needed).
    pub disabled: HashSet<&'static str>,
}

/// The diagnostics of one validation, with lookups by document path.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Every diagnostic, in rule order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Report {
    /// Diagnostics grouped by the path they are about.
    pub fn by_path(&self) -> BTreeMap<&DocPath, Vec<&Diagnostic>> {
        let mut map: BTreeMap<&DocPath, Vec<&Diagnostic>> = BTreeMap::new();
        for d in &self.diagnostics {
            map.entry(&d.path).or_default().push(d);
        }
        map
    }

    /// Diagnostics about `path` or anything below it (a node and its ports,
    /// a loop and its body).
    pub fn under<'r>(&'r self, path: &'r DocPath) -> impl Iterator<Item = &'r Diagnostic> + 'r {
        self.diagnostics
            .iter()
            .filter(move |d| d.path.starts_with(path))
    }

    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Fills in source spans from `map` where a diagnostic has none.
    pub fn locate(&mut self, map: &SourceMap) {
        for d in &mut self.diagnostics {
            if d.span.is_none() {
                d.span = map.locate(&d.path);
            }
        }
    }
}

/// Collects diagnostics; drops those of disabled rules.
pub(crate) struct Ctx<'o> {
    options: &'o Options,
    out: Vec<Diagnostic>,
}

impl Ctx<'_> {
    /// Reports a violation of rule `code` at `path`.
    pub fn report(&mut self, code: &'static str, path: DocPath, message: impl Into<String>) {
        if self.options.disabled.contains(code) {
            return;
        }
        let help = rules::rule(code).map_or("", |r| r.help);
        self.out
            .push(Diagnostic::error(code, path, message).with_help(help));
    }

    /// Adds a prepared diagnostic (one with a fix, say).
    pub fn push(&mut self, diagnostic: Diagnostic) {
        if !self.options.disabled.contains(diagnostic.code) {
            self.out.push(diagnostic);
        }
    }
}

pub use crate::paths::workflow_path;

/// Validates `document` with every rule.
pub fn validate(document: &Document, options: &Options) -> Report {
    let mut ctx = Ctx {
        options,
        out: Vec::new(),
    };
    let workflow = document.pipeline.as_ref().map(|p| &p.workflow);
    if let Some(wf) = workflow {
        validate_workflow(&mut ctx, document, wf);
    }
    document::check(&mut ctx, document, workflow);
    Report {
        diagnostics: ctx.out,
    }
}

fn validate_workflow(ctx: &mut Ctx<'_>, document: &Document, wf: &WorkflowSpec) {
    if !walk::lowering_succeeds(ctx, wf) {
        return;
    }
    inputs::check(ctx, wf);
    components::check(ctx, wf);
    state::check(ctx, wf);
    let walked = walk::walk(ctx, wf);
    emits::check(ctx, wf, &walked);
    state::check_serving_values(ctx, wf, &walked);
    manifest::check_manifest(ctx, document, wf);
}
