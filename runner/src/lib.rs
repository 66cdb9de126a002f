//! Workflow Studio's runner: executes `pipeline.workflow` packages on ONNX
//! Runtime, with per-invoke timing and a stream of events. No GUI dependency.
//!
//! [`Runner::load`] reads and validates a package, refuses what it cannot
//! run (adapter components, invalid documents), and creates one ONNX Runtime
//! session per component; [`Runner::run`] executes it as often as needed.

mod at;
pub mod check;
mod clock;
pub mod device;
mod env;
pub mod events;
mod exec;
mod fastmap;
mod input_limits;
pub mod literal;
pub mod media;
pub mod media_input;
pub mod model;
mod model_scan;
mod ortcall;
pub mod ortlib;
mod output;
pub mod placement;
mod pool;
mod predict;
mod prepared;
pub mod providers;
pub mod raw;
pub mod recipe;
pub mod request;
pub mod reuse;
pub mod session;
pub mod stats;
mod supplied;
pub mod tensor;
mod tensor_json;
pub mod text;
pub mod transfers;

pub use wfstudio_onnx::proto as onnx;

pub use device::Device;
pub use events::Event;
pub use exec::RunControl;
pub use input_limits::package_value_facts;
pub use output::{InvokeTiming, InvokedStep, KeptValue, RunOutput};
pub use placement::Placement;
pub use request::{Request, Sampling};
pub use tensor::{DType, Data, Described, Tensor};
pub use transfers::Transfers;
pub use wfstudio_onnx::labels::ValueFacts;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wfstudio_core::artifacts::{check_files, resolve_inside};
use wfstudio_core::{Options, validate};
use wfstudio_schema::types::contract::TensorContract;
use wfstudio_schema::types::workflow::{Implementation, WorkflowSpec};
use wfstudio_schema::{Diagnostic, Document, Limits, load_file};

/// Why a package could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The package could not be read.
    #[error("{0}")]
    Load(#[from] wfstudio_schema::LoadError),
    /// The document has errors (parse or validation).
    #[error("{} has {} error(s); first: {}", path.display(), diagnostics.len(), diagnostics.first().map_or(String::new(), |d| format!("{}: {}", d.path, d.message)))]
    Invalid {
        /// The document.
        path: PathBuf,
        /// Its errors.
        diagnostics: Vec<Diagnostic>,
    },
    /// The package needs something this runner does not implement.
    #[error("{0}")]
    Unsupported(String),
    /// A component file is missing or broken.
    #[error("artifact {}: {message}", path.display())]
    Artifact {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// ONNX Runtime could not be found or started.
    #[error("{0}")]
    Runtime(String),
    /// The inputs do not fit the workflow.
    #[error("{0}")]
    Input(String),
    /// A step failed.
    #[error("{path}: {message}")]
    Step {
        /// Document path of the step.
        path: String,
        /// What failed (names the component for invokes).
        message: String,
    },
    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
    /// The requested device is not there.
    #[error("{0}")]
    Device(String),
}

/// Load settings.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Requested device.
    pub device: Device,
    /// ONNX Runtime intra-op threads per session.
    pub threads: usize,
    /// Treats every model port as if it were in a device's memory: calls
    /// go through the I/O binding, outputs stay in ONNX Runtime's memory
    /// between calls and copies are counted as on a GPU. For checking the
    /// device path (and its cost) on a machine without one.
    pub simulate_device_memory: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            device: Device::Cpu,
            threads: 1,
            simulate_device_memory: false,
        }
    }
}

/// A loaded package, ready to run repeatedly.
pub struct Runner {
    document: Document,
    root: PathBuf,
    /// Sessions by component index (`None` for components that do not run
    /// on ONNX Runtime).
    sessions: Vec<Option<session::ComponentSession>>,
    plan: exec::Plan,
    /// The device in use.
    pub device: Device,
    /// Why the requested device was not used, if so.
    pub device_note: Option<String>,
    /// Time to load and create the sessions.
    pub load_time: Duration,
}

impl Runner {
    /// Reads, validates and prepares the package at `path` (a folder or its
    /// metadata file).
    pub fn load(path: &Path, options: &LoadOptions) -> Result<Runner, RunError> {
        let start = Instant::now();
        let (file, parsed) = load_file(path, &Limits::default())?;
        let loaded = parsed.map_err(|diagnostics| RunError::Invalid {
            path: file.clone(),
            diagnostics,
        })?;
        let mut runner =
            Runner::prepare(loaded.document, &file, Some(&loaded.source_map), options)?;
        runner.load_time = start.elapsed();
        Ok(runner)
    }

    /// Validates and prepares an in-memory `document` whose file is (or
    /// would be) `file`: artifacts resolve inside `file`'s folder. The
    /// studio runs its current revision this way, unsaved edits included.
    pub fn from_document(
        document: Document,
        file: &Path,
        options: &LoadOptions,
    ) -> Result<Runner, RunError> {
        Runner::prepare(document, file, None, options)
    }

    fn prepare(
        document: Document,
        file: &Path,
        source_map: Option<&wfstudio_schema::SourceMap>,
        options: &LoadOptions,
    ) -> Result<Runner, RunError> {
        let start = Instant::now();
        clock::calibrate();
        let root = file
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let root = if root.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            root
        };
        let mut diagnostics = validate(&document, &Options::default()).diagnostics;
        diagnostics.extend(check_files(&document, &root, &Options::default()).diagnostics);
        diagnostics.retain(Diagnostic::is_error);
        if !diagnostics.is_empty() {
            let mut report = wfstudio_core::Report { diagnostics };
            if let Some(map) = source_map {
                report.locate(map);
            }
            return Err(RunError::Invalid {
                path: file.to_path_buf(),
                diagnostics: report.diagnostics,
            });
        }
        let wf = workflow(&document)?;
        refuse_unsupported(wf)?;
        let (device, device_note) = device::resolve(&options.device)?;
        let artifacts = wf
            .components
            .values()
            .map(|component| match &component.implementation {
                Implementation::Onnx(onnx) => resolve_inside(&root, &onnx.artifact)
                    .map(Some)
                    .map_err(|_| RunError::Artifact {
                        path: root.join(&onnx.artifact),
                        message: "missing or outside the package".into(),
                    }),
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let sessions = create_sessions(&artifacts, &device, options)?;
        let limits = input_limits::InputLimits::of(&document, wf, &sessions);
        let plan = exec::Plan::new(wf, limits);
        Ok(Runner {
            plan,
            document,
            root,
            sessions,
            device,
            device_note,
            load_time: start.elapsed(),
        })
    }

    /// The value labels of workflow input `name` (the names of the values
    /// of the labelled model input it is bound to), if it has any.
    pub fn input_labels(&self, name: &str) -> Option<&[String]> {
        self.plan.limits.labels(name)
    }

    /// Where each component with a model runs (read when its session was
    /// made), in component order.
    pub fn placements(&self) -> Vec<Placement> {
        let Some(wf) = self.document.pipeline.as_ref().map(|p| &p.workflow) else {
            return Vec::new();
        };
        wf.components
            .keys()
            .zip(&self.sessions)
            .filter_map(|(name, session)| {
                let session = session.as_ref()?;
                Some(Placement::new(
                    name,
                    &self.device,
                    session.assignment.clone(),
                ))
            })
            .collect()
    }

    /// How long each component's session took to make, in component
    /// order (components without a model left out).
    pub fn session_load_times(&self) -> Vec<(&str, Duration)> {
        let Some(wf) = self.document.pipeline.as_ref().map(|p| &p.workflow) else {
            return Vec::new();
        };
        wf.components
            .keys()
            .zip(&self.sessions)
            .filter_map(|(name, s)| Some((name.as_str(), s.as_ref()?.created_in)))
            .collect()
    }

    /// The package document.
    pub fn document(&self) -> &Document {
        &self.document
    }

    /// The package folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The contract of the workflow input a run binds a value supplied as
    /// `name` to: the input declared under that name, else the one whose
    /// application alias it is (the matching [`Runner::run`] does).
    pub fn input_contract(&self, name: &str) -> Option<&TensorContract> {
        let index = self.plan.declared_input(name)?;
        let inputs = self.document.pipeline.as_ref()?.workflow.inputs.as_ref()?;
        inputs.get_index(index).map(|(_, input)| &input.contract)
    }

    /// Runs the workflow on `inputs` (workflow input name -> tensor; a
    /// `HashMap` or any other list of pairs). A tensor may be shared
    /// (`Arc<Tensor>`): given again in a later run, it is not compared or
    /// copied, and ONNX Runtime's view of it is reused.
    pub fn run<K, V>(
        &mut self,
        inputs: impl IntoIterator<Item = (K, V)>,
        control: RunControl<'_>,
    ) -> Result<RunOutput, RunError>
    where
        K: AsRef<str>,
        V: Into<Arc<Tensor>>,
    {
        self.run_request(inputs, &Request::default(), control)
    }

    /// Runs the workflow on `inputs` (as [`Runner::run`]); `source: request`
    /// inputs that are not supplied take their value from `request` by
    /// runtime role.
    pub fn run_request<K, V>(
        &mut self,
        inputs: impl IntoIterator<Item = (K, V)>,
        request: &Request,
        control: RunControl<'_>,
    ) -> Result<RunOutput, RunError>
    where
        K: AsRef<str>,
        V: Into<Arc<Tensor>>,
    {
        let wf = workflow(&self.document)?;
        exec::Exec::new(wf, &mut self.plan, &mut self.sessions, control).run(inputs, request)
    }
}

/// The session of each component with a model file, in component order,
/// created on threads of their own as many at a time as the cores hold at
/// the sessions' thread count (on more cores a large model's load then
/// hides the small ones').
fn create_sessions(
    artifacts: &[Option<PathBuf>],
    device: &Device,
    options: &LoadOptions,
) -> Result<Vec<Option<session::ComponentSession>>, RunError> {
    // As many at a time as the cores hold at the sessions' thread count
    // (a session's creation keeps its threads busy too; on two cores with
    // two threads one at a time is as fast and holds less memory at its
    // peak), and at most four: each large model holds its weights while
    // it loads.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    // Zero threads is ONNX Runtime's default: every core.
    let per_session = if options.threads == 0 {
        cores
    } else {
        options.threads
    };
    let at_once = (cores / per_session).clamp(1, 4);
    let mut sessions = Vec::with_capacity(artifacts.len());
    for batch in artifacts.chunks(at_once) {
        let created = std::thread::scope(|scope| {
            let loading: Vec<_> = batch
                .iter()
                .map(|artifact| {
                    artifact.as_ref().map(|path| {
                        (
                            path,
                            scope.spawn(move || {
                                session::create(
                                    path,
                                    device,
                                    options.threads,
                                    options.simulate_device_memory,
                                )
                            }),
                        )
                    })
                })
                .collect();
            // Every thread is joined before the first error is reported.
            let joined: Vec<_> = loading
                .into_iter()
                .map(|loading| {
                    let (path, handle) = loading?;
                    Some(handle.join().unwrap_or_else(|_| {
                        Err(RunError::Artifact {
                            path: path.clone(),
                            message: "loading the model panicked".into(),
                        })
                    }))
                })
                .collect();
            joined
                .into_iter()
                .map(Option::transpose)
                .collect::<Result<Vec<_>, _>>()
        })?;
        sessions.extend(created);
    }
    Ok(sessions)
}

fn workflow(document: &Document) -> Result<&WorkflowSpec, RunError> {
    document
        .pipeline
        .as_ref()
        .map(|p| &p.workflow)
        .ok_or_else(|| RunError::Unsupported("metadata has no pipeline section".into()))
}

/// Adapter components are host ABIs this runner does not implement: refuse
/// any the steps invoke before anything runs, naming each contract. (A
/// declared but never invoked adapter, such as an API-boundary
/// text-assembly contract, does not stop a run.)
fn refuse_unsupported(wf: &WorkflowSpec) -> Result<(), RunError> {
    let mut invoked = std::collections::BTreeSet::new();
    wfstudio_core::validate::for_each_step(
        &wf.steps,
        &wfstudio_schema::DocPath::root(),
        &mut |step, _| {
            if let wfstudio_schema::types::steps::Step::Invoke(i) = step {
                invoked.insert(i.component.as_str());
            }
        },
    );
    let adapters: Vec<String> = wf
        .components
        .iter()
        .filter(|(name, _)| invoked.contains(name.as_str()))
        .filter_map(|(name, c)| match &c.implementation {
            Implementation::Adapter(a) => Some(format!("'{name}' ({}@{})", a.abi, a.version)),
            _ => None,
        })
        .collect();
    if adapters.is_empty() {
        return Ok(());
    }
    Err(RunError::Unsupported(format!(
        "this runner does not implement adapter components: {}",
        adapters.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    /// A loaded package can move to another thread (the studio loads and
    /// runs on a worker): the values it keeps between runs are only
    /// references to themselves.
    #[test]
    fn a_runner_can_move_between_threads() {
        fn send<T: Send>() {}
        send::<super::Runner>();
    }
}
