//! The background worker: opening (documents and ComfyUI imports), parsing, validating and laying out run
//! here, never on the UI thread. Jobs go in on one channel, results come
//! back on another, and the UI is asked to repaint when one arrives. A panic
//! inside a job is caught and reported as that job's failure; the worker
//! and the open documents carry on.

use crate::import::ImportedGraph;
use crate::opened::Opened;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};
use wfstudio_core::comfyui::package::{PackageOptions, Written, write_package};
use wfstudio_core::graph::{Layout, ViewGraph};
use wfstudio_core::{Options, Report};
use wfstudio_schema::types::document::Document;
use wfstudio_schema::{Diagnostic, Format, Limits, SourceMap, parse_text};

/// Work for the background thread.
#[derive(Debug)]
pub enum Job {
    /// Load a file or package folder (and any recovery copy in `config`).
    Open {
        /// The file or folder.
        path: PathBuf,
        /// The config folder holding recovery copies.
        config: Option<PathBuf>,
    },
    /// Import a ComfyUI file, lowering it for the package in `target`.
    Import {
        /// The ComfyUI file.
        path: PathBuf,
        /// The target package folder (its adapters serve LoRA loaders).
        target: Option<PathBuf>,
    },
    /// Validate and lay out one revision of a document.
    Analyze(Box<AnalyzeJob>),
    /// Write (`Some` text) or remove (`None`) the crash-recovery copy.
    Autosave {
        /// The config folder.
        config: Option<PathBuf>,
        /// The document file.
        document: PathBuf,
        /// Its unsaved text.
        text: Option<String>,
    },
    /// Write a lowered ComfyUI graph as a whole package.
    WritePackage(Box<PackageJob>),
    /// Parse YAML text typed in the YAML tab.
    ParseText {
        /// The revision the text was edited from.
        base_revision: u64,
        /// The text.
        text: String,
    },
}

/// A package to write.
#[derive(Debug)]
pub struct PackageJob {
    /// The lowered document.
    pub document: Document,
    /// The destination folder.
    pub out: PathBuf,
    /// Models, force and the graph's prompts.
    pub options: PackageOptions,
    /// Run the package once it is written and open.
    pub run: bool,
}

/// One revision to analyze.
#[derive(Debug)]
pub struct AnalyzeJob {
    /// The revision it belongs to.
    pub revision: u64,
    /// The document.
    pub document: Document,
    /// Its text and source map when it is exactly what was read from disk
    /// (so line numbers match the file); otherwise the canonical text is made.
    pub original: Option<(String, SourceMap)>,
    /// Comment block kept at the top of the canonical text.
    pub leading_comments: Option<String>,
    /// Package folder for the artifact checks.
    pub package_root: Option<PathBuf>,
}

/// Validation and view of one revision.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// The revision it belongs to.
    pub revision: u64,
    /// Diagnostics with line/column in `text`.
    pub report: Report,
    /// The document text the YAML tab shows.
    pub text: String,
    /// The graph view.
    pub graph: ViewGraph,
    /// Its automatic layout.
    pub layout: Layout,
}

/// What a job produced.
#[derive(Debug)]
pub enum Outcome {
    /// A file was opened (or could not be).
    Opened {
        /// The path asked for.
        requested: PathBuf,
        /// The document, or why it could not be opened.
        result: Result<Opened, String>,
    },
    /// A ComfyUI file was imported (or could not be read).
    Imported {
        /// The path asked for.
        requested: PathBuf,
        /// The import, or why the file could not be read.
        result: Result<Box<ImportedGraph>, String>,
    },
    /// A revision was analyzed.
    Analyzed(Box<Analysis>),
    /// YAML text was parsed.
    Parsed {
        /// The revision it was edited from.
        base_revision: u64,
        /// The document, or the syntax/structure diagnostics.
        result: Result<Box<Document>, Vec<Diagnostic>>,
    },
    /// A package was written (or refused).
    PackageWritten {
        /// The destination folder.
        out: PathBuf,
        /// What was written, or why nothing was.
        result: Result<Written, String>,
        /// Whether a run was asked for.
        run: bool,
    },
    /// The recovery copy was written or removed.
    Autosaved,
    /// The recovery copy could not be written or removed.
    AutosaveFailed(String),
    /// A job panicked; the message names the job.
    Failed(String),
}

/// Handle to the worker thread.
pub struct Worker {
    jobs: Sender<Job>,
    outcomes: Receiver<Outcome>,
}

impl Worker {
    /// Starts the thread; `notify` is called after each outcome (repaint).
    pub fn start(notify: impl Fn() + Send + 'static) -> Self {
        let (jobs, inbox) = channel::<Job>();
        let (outbox, outcomes) = channel();
        std::thread::Builder::new()
            .name("wfstudio-worker".into())
            .spawn(move || {
                while let Ok(first) = inbox.recv() {
                    // Only the newest analysis matters: skip superseded ones.
                    let mut batch = vec![first];
                    batch.extend(inbox.try_iter());
                    let newest = batch.iter().rposition(|j| matches!(j, Job::Analyze(_)));
                    for (i, job) in batch.into_iter().enumerate() {
                        if matches!(job, Job::Analyze(_)) && Some(i) != newest {
                            continue;
                        }
                        if outbox.send(run_caught(job)).is_err() {
                            return;
                        }
                        notify();
                    }
                }
            })
            .expect("the worker thread starts");
        Worker { jobs, outcomes }
    }

    /// Queues a job.
    pub fn submit(&self, job: Job) {
        let _ = self.jobs.send(job);
    }

    /// Results that have arrived, without waiting.
    pub fn poll(&self) -> Vec<Outcome> {
        self.outcomes.try_iter().collect()
    }
}

fn run_caught(job: Job) -> Outcome {
    let name = match &job {
        Job::Open { path, .. } => format!("opening {}", path.display()),
        Job::Import { path, .. } => format!("importing {}", path.display()),
        Job::Analyze(a) => format!("validating revision {}", a.revision),
        Job::ParseText { .. } => "parsing the YAML text".to_string(),
        Job::Autosave { .. } => "writing the recovery copy".to_string(),
        Job::WritePackage(job) => format!("writing the package {}", job.out.display()),
    };
    caught(&name, || run(job)).unwrap_or_else(Outcome::Failed)
}

/// Runs `work`, turning a panic into an error message that names the job
/// (`"internal error while {job}: {panic message}"`), so a bug in a
/// background job is reported on that job instead of killing the studio.
/// Used by every background thread (this worker, the run job).
pub fn caught<T>(job: &str, work: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|panic| {
        let detail = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        format!("internal error while {job}: {detail}")
    })
}

/// Runs one job on the calling thread (the worker, or a test).
pub fn run(job: Job) -> Outcome {
    match job {
        Job::Open {
            path: requested,
            config,
        } => {
            if let Some(bytes) = crate::import::comfyui_bytes(&requested) {
                let result = bytes.and_then(|bytes| {
                    crate::import::import_file(&requested, Some(bytes), None).map(Box::new)
                });
                return Outcome::Imported { requested, result };
            }
            let result = open(&requested, config.as_deref());
            Outcome::Opened { requested, result }
        }
        Job::Import { path, target } => imported(path, target),
        Job::Analyze(job) => Outcome::Analyzed(Box::new(analyze(*job))),
        Job::WritePackage(job) => {
            let result = serde_json::to_value(&job.document)
                .map_err(|e| e.to_string())
                .and_then(|value| {
                    write_package(&value, &job.out, &job.options).map_err(|e| e.to_string())
                });
            Outcome::PackageWritten {
                out: job.out,
                result,
                run: job.run,
            }
        }
        Job::Autosave {
            config,
            document,
            text,
        } => {
            let config = config.as_deref();
            let result = match text {
                Some(text) => crate::autosave::write(config, &document, text),
                None => crate::autosave::discard(config, &document),
            };
            match result {
                Ok(()) => Outcome::Autosaved,
                Err(e) => Outcome::AutosaveFailed(format!(
                    "could not keep a recovery copy of {}: {e}",
                    document.display()
                )),
            }
        }
        Job::ParseText {
            base_revision,
            text,
        } => Outcome::Parsed {
            base_revision,
            result: parse_text(&text, Format::Yaml, &Limits::default())
                .map(|loaded| Box::new(loaded.document)),
        },
    }
}

fn imported(requested: PathBuf, target: Option<PathBuf>) -> Outcome {
    let result = crate::import::import_file(&requested, None, target.as_deref()).map(Box::new);
    Outcome::Imported { requested, result }
}

fn open(requested: &Path, config: Option<&Path>) -> Result<Opened, String> {
    let file = wfstudio_schema::locate_document(requested).map_err(|e| e.to_string())?;
    let limits = Limits::default();
    let text = wfstudio_schema::load::read_text(&file, &limits).map_err(|e| e.to_string())?;
    match parse_text(&text, Format::from_path(&file), &limits) {
        Ok(loaded) => Ok(Opened {
            recovered: recovered(config, &file, &loaded.document),
            file,
            text,
            loaded: Box::new(loaded),
        }),
        Err(diagnostics) => Err(diagnostics
            .iter()
            .map(|d| match d.span {
                Some(span) => format!(
                    "{}:{}:{}: error[{}]: {}",
                    file.display(),
                    span.start.line,
                    span.start.column,
                    d.code,
                    d.message
                ),
                None => format!("{}: error[{}]: {}", file.display(), d.code, d.message),
            })
            .collect::<Vec<_>>()
            .join("\n")),
    }
}

/// The unsaved edits kept for `file` after a crash, when they differ from
/// what is on disk (an identical or unreadable copy is removed).
fn recovered(
    config: Option<&Path>,
    file: &Path,
    on_disk: &Document,
) -> Option<(crate::autosave::Recovery, Box<Document>)> {
    let recovery = crate::autosave::read(config, file)?;
    match parse_text(&recovery.text, Format::Yaml, &Limits::default()) {
        Ok(loaded) if &loaded.document != on_disk => Some((recovery, Box::new(loaded.document))),
        _ => {
            let _ = crate::autosave::discard(config, file);
            None
        }
    }
}

/// Validation (semantic rules and, with a package folder, artifact files),
/// located in the text the user sees, plus the graph and its layout.
pub fn analyze(job: AnalyzeJob) -> Analysis {
    let (text, map) = match job.original {
        Some(original) => original,
        None => {
            let text =
                wfstudio_schema::save::to_yaml(&job.document, job.leading_comments.as_deref());
            let map = parse_text(&text, Format::Yaml, &Limits::default())
                .map(|loaded| loaded.source_map)
                .unwrap_or_default();
            (text, map)
        }
    };
    let options = Options::default();
    let mut report = wfstudio_core::validate(&job.document, &options);
    if let Some(root) = &job.package_root {
        let files = wfstudio_core::artifacts::check_files(&job.document, root, &options);
        report.diagnostics.extend(files.diagnostics);
    }
    report.locate(&map);
    let (graph, layout) = match job.document.pipeline.as_ref() {
        Some(pipeline) => {
            let graph = wfstudio_core::graph::build(&pipeline.workflow);
            let layout = wfstudio_core::graph::layout(&graph);
            (graph, layout)
        }
        None => Default::default(),
    };
    Analysis {
        revision: job.revision,
        report,
        text,
        graph,
        layout,
    }
}

#[cfg(test)]
mod tests {
    use super::caught;

    #[test]
    fn a_panicking_job_becomes_an_error_naming_it() {
        let formatted = caught("parsing the YAML text", || -> u8 {
            panic!("index {} out of range", 7)
        });
        let literal = caught("opening x.yaml", || -> u8 { panic!("boom") });
        assert_eq!(
            formatted,
            Err("internal error while parsing the YAML text: index 7 out of range".into())
        );
        assert_eq!(
            literal,
            Err("internal error while opening x.yaml: boom".into())
        );
        assert_eq!(caught("adding", || 2 + 2), Ok(4));
    }
}
