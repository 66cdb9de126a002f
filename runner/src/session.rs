//! ONNX Runtime sessions, one per component, created once and reused.

use crate::clock::{Span, Tick};
use crate::device::Device;
use crate::model::{is_textproto, model_bytes};
use crate::model_scan::{Scan, scan_model};
use crate::ortcall::{self, Binding, Call, CallSite, Held, Produced};
use crate::tensor::DType;
use crate::{RunError, ortlib};
use ort::logging::LogLevel;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{RunOptions, Session};
use ort::value::ValueType;
use protobuf::Message;
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;
use wfstudio_onnx::labels::{ValueFacts, input_facts};
use wfstudio_onnx::proto::onnx::{GraphProto, ModelProto};

/// One component's session.
pub struct ComponentSession {
    /// The I/O binding when some port is in a device's memory (declared
    /// before the session it belongs to, so dropped first).
    binding: Option<Binding>,
    session: Session,
    /// Graph input names.
    pub inputs: Vec<String>,
    /// Graph output names.
    pub outputs: Vec<String>,
    /// Host dtype of each graph output.
    output_dtypes: Vec<Option<DType>>,
    /// Options for a run into predicted output buffers: a wrong prediction
    /// is expected (the call is made again), so ONNX Runtime does not log it.
    quiet: RunOptions,
    /// Identity of the model bytes (for reusing results across runs).
    pub(crate) fingerprint: u64,
    /// Whether results may be reused (no random operators).
    pub(crate) reusable: bool,
    /// What the model says of its inputs' values (labels, ranges), by
    /// input name.
    pub value_facts: BTreeMap<String, ValueFacts>,
    /// Nodes per execution provider, as ONNX Runtime assigned them (empty
    /// when it could not say).
    pub assignment: Vec<(String, usize)>,
    /// How long the session took to make (its model read, its scan beside).
    pub created_in: std::time::Duration,
}

/// Creates the session for the model at `artifact` on `device` (treating
/// its ports as in device memory when `simulate_device_memory`).
pub fn create(
    artifact: &Path,
    device: &Device,
    threads: usize,
    simulate_device_memory: bool,
) -> Result<ComponentSession, RunError> {
    let started = std::time::Instant::now();
    let (env, _) = ortlib::environment()?;
    // A TextFormat model is encoded here and handed over as bytes; a binary
    // one ONNX Runtime reads itself while the scan streams it on another
    // thread, so no copy of its bytes stays in memory and the scan adds no
    // time to the load.
    let bytes = if is_textproto(artifact) {
        Some(model_bytes(artifact)?)
    } else {
        None
    };
    let fail = |e: ort::Error| RunError::Artifact {
        path: artifact.to_path_buf(),
        message: format!("ONNX Runtime refused the model: {e}"),
    };
    let (scanned, session) = std::thread::scope(|threads_scope| {
        let scanning = threads_scope.spawn(|| scan_model(artifact, bytes.as_deref()));
        let session = open(env, artifact, bytes.as_deref(), device, threads).map_err(fail);
        let scanned = scanning
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the model scan panicked")));
        (scanned, session)
    });
    let scanned = scanned.map_err(|e| RunError::Artifact {
        path: artifact.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut session = session?;
    let value_facts = scanned_value_facts(artifact, bytes.as_deref(), &scanned)?;
    let inputs: Vec<String> = session
        .inputs()
        .iter()
        .map(|o| o.name().to_string())
        .collect();
    let outputs: Vec<String> = session
        .outputs()
        .iter()
        .map(|o| o.name().to_string())
        .collect();
    let output_dtypes = session
        .outputs()
        .iter()
        .map(|o| output_dtype(o.dtype()))
        .collect();
    let assignment = ortcall::ep_assignment(&session).unwrap_or_default();
    let binding =
        Binding::of(&mut session, &inputs, &outputs, simulate_device_memory).map_err(|why| {
            RunError::Artifact {
                path: artifact.to_path_buf(),
                message: format!("cannot bind the model's ports to its device: {why}"),
            }
        })?;
    let mut quiet = RunOptions::new().map_err(fail)?;
    quiet.set_log_level(LogLevel::Fatal).map_err(fail)?;
    Ok(ComponentSession {
        binding,
        session,
        quiet,
        inputs,
        outputs,
        output_dtypes,
        fingerprint: scanned.fingerprint,
        reusable: scanned.reusable,
        value_facts,
        assignment,
        created_in: started.elapsed(),
    })
}

/// The ONNX Runtime session of the model at `artifact` (from `bytes` when
/// given, else read by ONNX Runtime from the file).
fn open(
    env: &ort::environment::Environment,
    artifact: &Path,
    bytes: Option<&[u8]>,
    device: &Device,
    threads: usize,
) -> Result<Session, ort::Error> {
    let folder = artifact.parent().unwrap_or(Path::new("."));
    let mut builder = Session::builder(env)?
        .with_optimization_level(GraphOptimizationLevel::All)
        .map_err(|e| -> ort::Error { e.into() })?
        .with_intra_threads(threads)
        .map_err(|e| -> ort::Error { e.into() })?
        .with_config_entry(
            "session.model_external_initializers_file_folder_path",
            folder.to_string_lossy(),
        )
        .map_err(|e| -> ort::Error { e.into() })?;
    builder = builder
        .with_config_entry("session.record_ep_graph_assignment_info", "1")
        .map_err(|e| -> ort::Error { e.into() })?;
    match device {
        Device::Cpu | Device::Auto => {}
        Device::Cuda => {
            builder = builder
                .with_execution_providers([ort::ep::CUDA::default().build().error_on_failure()])
                .map_err(|e| -> ort::Error { e.into() })?;
        }
        Device::Ep { ep, index } => {
            let chosen: Vec<_> = env
                .devices()
                .filter(|d| d.ep().is_ok_and(|name| name == ep))
                .skip(*index)
                .take(1)
                .collect();
            if chosen.is_empty() {
                return Err(ort::Error::new(format!("no device {device}")));
            }
            builder = builder
                .with_devices(chosen, None)
                .map_err(|e| -> ort::Error { e.into() })?;
        }
    }
    match bytes {
        Some(bytes) => builder.commit_from_memory(bytes),
        None => builder.commit_from_file(artifact),
    }
}

/// What the model at `artifact` says of its inputs' values, as its scan
/// found them: nothing unless the scan met a value-fact key; else read from
/// the model's bytes held in memory (`bytes`), from the graph inputs the
/// scan kept, or (when it kept none) from the whole file.
pub(crate) fn scanned_value_facts(
    artifact: &Path,
    bytes: Option<&[u8]>,
    scanned: &Scan,
) -> Result<BTreeMap<String, ValueFacts>, RunError> {
    if !scanned.may_have_value_facts {
        return Ok(BTreeMap::new());
    }
    Ok(match (bytes, &scanned.graph_inputs) {
        (Some(bytes), _) => value_facts_of(bytes),
        (None, Some(inputs)) => graph_input_facts(inputs),
        (None, None) => value_facts_of(&model_bytes(artifact)?),
    })
}

/// The value facts of the inputs of the serialized model `bytes`.
fn value_facts_of(bytes: &[u8]) -> BTreeMap<String, ValueFacts> {
    ModelProto::parse_from_bytes(bytes)
        .map(|model| input_facts(&model))
        .unwrap_or_default()
}

/// The value facts of the graph inputs encoded in `inputs` (a `GraphProto`
/// holding only them, as the model scan keeps them).
pub(crate) fn graph_input_facts(inputs: &[u8]) -> BTreeMap<String, ValueFacts> {
    GraphProto::parse_from_bytes(inputs)
        .map(|graph| {
            let mut model = ModelProto::new();
            model.graph = Some(graph).into();
            input_facts(&model)
        })
        .unwrap_or_default()
}

/// The host dtype of a graph output, `None` when not a tensor the host holds.
fn output_dtype(dtype: &ValueType) -> Option<DType> {
    match dtype {
        ValueType::Tensor { ty, .. } => ortcall::dtype_of((*ty).into()),
        _ => None,
    }
}

impl ComponentSession {
    /// The host dtype of graph output `index`, known before any run.
    pub(crate) fn output_dtype(&self, index: usize) -> Option<DType> {
        self.output_dtypes.get(index).copied().flatten()
    }

    /// Whether calls go through the I/O binding (some port is in a
    /// device's memory), which keeps outputs where the device made them.
    pub(crate) fn bound(&self) -> bool {
        self.binding.is_some()
    }

    /// Makes `call` (quietly when some output has a buffer: a buffer of
    /// the wrong shape is a failure the caller handles, not news); the span
    /// of ONNX Runtime's `Run`.
    #[inline]
    pub(crate) fn run_call(&mut self, call: Call<'_>) -> Result<Span, String> {
        let options = call.buffered().then_some(&self.quiet);
        call.run(&mut self.session, options)
    }

    /// Runs the graph once on `inputs` (one per input port of `site`, in
    /// order), writing into the site's presets (which the call takes);
    /// appends the outputs to `produced` in the order of the site's output
    /// ports and returns the span of ONNX Runtime's `Run`, when the outputs
    /// were in hand (as `Run` returned, unless some had to be copied out of
    /// ONNX Runtime's memory) and whether all were written into the presets.
    pub(crate) fn run(
        &mut self,
        site: &mut CallSite,
        inputs: &[&Rc<Held>],
        produced: &mut Produced,
    ) -> Result<(Span, Tick, bool), String> {
        if let Some(binding) = &mut self.binding {
            let ort = binding.run(&mut self.session, site, inputs, produced)?;
            return Ok((ort, Tick::now(), false));
        }
        let mut call = site.call();
        for held in inputs {
            call.input(held)?;
        }
        call.outputs_from_presets();
        let ort = self.run_call(call)?;
        let written = site.collect(produced)?;
        let in_hand = if written { ort.end } else { Tick::now() };
        Ok((ort, in_hand, written))
    }
}
