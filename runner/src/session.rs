//! ONNX Runtime sessions, one per component, created once and reused, and
//! the conversion of tensors to and from ONNX Runtime values.

use crate::device::Device;
use crate::model::model_bytes;
use crate::tensor::{Data, Tensor};
use crate::{RunError, ortlib};
use ort::session::{Session, SessionInputValue};
use ort::value::{DynValue, TensorElementType, ValueType};
use std::path::Path;
use std::time::{Duration, Instant};

/// One component's session.
pub struct ComponentSession {
    session: Session,
    /// Graph input names.
    pub inputs: Vec<String>,
    /// Graph output names.
    pub outputs: Vec<String>,
    /// Identity of the model bytes (for reusing results across runs).
    pub(crate) fingerprint: u64,
    /// Whether results may be reused (no random operators).
    pub(crate) reusable: bool,
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
    Ok(ComponentSession {
        session,
        inputs,
        outputs,
        fingerprint,
        reusable,
    })
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

/// A view of `tensor` for ONNX Runtime (no copy: the run borrows the data).
fn to_value(tensor: &Tensor) -> Result<SessionInputValue<'_>, ort::Error> {
    let shape: Vec<i64> = tensor.shape.iter().map(|&d| d as i64).collect();
    macro_rules! value {
        ($v:expr) => {
            ort::value::TensorRef::from_array_view((shape, $v.as_slice()))
                .map(|t| SessionInputValue::from(t.into_dyn()))
        };
    }
    match &tensor.data {
        Data::F32(v) => value!(v),
        Data::F16(v) => value!(v),
        Data::Bf16(v) => value!(v),
        Data::F64(v) => value!(v),
        Data::I8(v) => value!(v),
        Data::I16(v) => value!(v),
        Data::I32(v) => value!(v),
        Data::I64(v) => value!(v),
        Data::U8(v) => value!(v),
        Data::U16(v) => value!(v),
        Data::U32(v) => value!(v),
        Data::U64(v) => value!(v),
        Data::Bool(v) => value!(v),
    }
}

fn from_value(value: &DynValue) -> Result<Tensor, String> {
    let ValueType::Tensor { ty, .. } = value.dtype() else {
        return Err("the graph produced a non-tensor value".into());
    };
    macro_rules! extract {
        ($t:ty, $variant:ident) => {{
            let (shape, data) = value
                .try_extract_tensor::<$t>()
                .map_err(|e| e.to_string())?;
            let shape = shape.iter().map(|&d| d as usize).collect();
            Tensor::new(shape, Data::$variant(data.to_vec())).map_err(|e| e.to_string())
        }};
    }
    match ty {
        TensorElementType::Float32 => extract!(f32, F32),
        TensorElementType::Float16 => extract!(half::f16, F16),
        TensorElementType::Bfloat16 => extract!(half::bf16, Bf16),
        TensorElementType::Float64 => extract!(f64, F64),
        TensorElementType::Int8 => extract!(i8, I8),
        TensorElementType::Int16 => extract!(i16, I16),
        TensorElementType::Int32 => extract!(i32, I32),
        TensorElementType::Int64 => extract!(i64, I64),
        TensorElementType::Uint8 => extract!(u8, U8),
        TensorElementType::Uint16 => extract!(u16, U16),
        TensorElementType::Uint32 => extract!(u32, U32),
        TensorElementType::Uint64 => extract!(u64, U64),
        TensorElementType::Bool => extract!(bool, Bool),
        other => Err(format!(
            "the graph produced an unsupported element type {other:?}"
        )),
    }
}

/// The result of one session run.
pub struct Ran {
    /// Produced outputs by graph output name.
    pub outputs: Vec<(String, Tensor)>,
    /// Time inside `Session::run`.
    pub ort_time: Duration,
}

impl ComponentSession {
    /// Runs the graph on named inputs and returns the outputs in `wanted`.
    pub fn run(&mut self, inputs: &[(&str, &Tensor)], wanted: &[&str]) -> Result<Ran, String> {
        let values: Vec<(String, SessionInputValue<'_>)> = inputs
            .iter()
            .map(|(name, t)| to_value(t).map(|v| (name.to_string(), v)))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let start = Instant::now();
        let mut outputs = self.session.run(values).map_err(|e| e.to_string())?;
        let ort_time = start.elapsed();
        let mut produced = Vec::with_capacity(wanted.len());
        for name in wanted {
            let value = outputs
                .remove(*name)
                .ok_or_else(|| format!("the graph has no output '{name}'"))?;
            produced.push((name.to_string(), from_value(&value)?));
        }
        Ok(Ran {
            outputs: produced,
            ort_time,
        })
    }
}
