//! ONNX Runtime sessions, one per component, created once and reused.

use crate::clock::{Span, Tick};
use crate::device::Device;
use crate::model::model_bytes;
use crate::ortcall::{self, Call, CallSite, Held, Produced};
use crate::tensor::DType;
use crate::{RunError, ortlib};
use ort::logging::LogLevel;
use ort::session::{RunOptions, Session};
use ort::value::ValueType;
use protobuf::Message;
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;
use wfstudio_onnx::labels::{LABELS_KEY, input_labels};
use wfstudio_onnx::proto::onnx::ModelProto;

/// One component's session.
pub struct ComponentSession {
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
    /// Value labels of the graph inputs that have them, by input name.
    pub labels: BTreeMap<String, Vec<String>>,
}

/// Creates the session for the model at `artifact` on `device`.
pub fn create(
    artifact: &Path,
    device: Device,
    threads: usize,
) -> Result<ComponentSession, RunError> {
    let (env, _) = ortlib::environment()?;
    let bytes = model_bytes(artifact)?;
    let fingerprint = crate::reuse::fingerprint(&bytes);
    let reusable = crate::reuse::is_deterministic(&bytes);
    let labels = labels_of(&bytes);
    let folder = artifact.parent().unwrap_or(Path::new("."));
    let fail = |e: ort::Error| RunError::Artifact {
        path: artifact.to_path_buf(),
        message: format!("ONNX Runtime refused the model: {e}"),
    };
    let mut builder = Session::builder(env).map_err(fail)?;
    builder = builder
        .with_intra_threads(threads)
        .map_err(|e| fail(e.into()))?
        .with_config_entry(
            "session.model_external_initializers_file_folder_path",
            folder.to_string_lossy(),
        )
        .map_err(|e| fail(e.into()))?;
    if device == Device::Cuda {
        builder = with_cuda(builder).map_err(fail)?;
    }
    let session = builder.commit_from_memory(&bytes).map_err(fail)?;
    let inputs = session
        .inputs()
        .iter()
        .map(|o| o.name().to_string())
        .collect();
    let outputs = session
        .outputs()
        .iter()
        .map(|o| o.name().to_string())
        .collect();
    let output_dtypes = session
        .outputs()
        .iter()
        .map(|o| output_dtype(o.dtype()))
        .collect();
    let mut quiet = RunOptions::new().map_err(fail)?;
    quiet.set_log_level(LogLevel::Fatal).map_err(fail)?;
    Ok(ComponentSession {
        session,
        quiet,
        inputs,
        outputs,
        output_dtypes,
        fingerprint,
        reusable,
        labels,
    })
}

/// The value labels of a model's inputs; the bytes are parsed only when
/// they hold the labels key at all.
pub(crate) fn labels_of(bytes: &[u8]) -> BTreeMap<String, Vec<String>> {
    if memchr::memmem::find(bytes, LABELS_KEY.as_bytes()).is_none() {
        return BTreeMap::new();
    }
    ModelProto::parse_from_bytes(bytes)
        .map(|model| input_labels(&model))
        .unwrap_or_default()
}

#[cfg(feature = "cuda")]
fn with_cuda(
    builder: ort::session::builder::SessionBuilder,
) -> Result<ort::session::builder::SessionBuilder, ort::Error> {
    builder
        .with_execution_providers([ort::ep::CUDA::default().build()])
        .map_err(Into::into)
}

#[cfg(not(feature = "cuda"))]
fn with_cuda(
    builder: ort::session::builder::SessionBuilder,
) -> Result<ort::session::builder::SessionBuilder, ort::Error> {
    Ok(builder)
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
