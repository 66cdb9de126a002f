//! The hot path of an invoke on ONNX Runtime's C API. Host tensors are
//! handed over as views of their memory (no copy), an output whose shape is
//! known ahead is written by ONNX Runtime straight into a host buffer, and
//! the names of ports are prepared once per invoke step. On graphs whose
//! calls take microseconds this is what keeps the runner's own time small
//! (`docs/PERFORMANCE.md`). A model whose ports are in a device's memory
//! is called through an I/O binding instead ([`binding`]), which leaves its
//! outputs on the device.
//!
//! This module and its children hold the runner's `unsafe` calls into ONNX
//! Runtime. Their rule: a view never outlives the memory it points at
//! ([`Held`] keeps both and drops the view first; an output buffer is owned
//! by the caller across the run) and that memory is never written while
//! ONNX Runtime reads it.

mod binding;
mod held;

pub(crate) use binding::Binding;
pub(crate) use held::{Held, Preset};

use crate::clock::{Span, Tick};
use crate::tensor::{DType, Data, Tensor};
use half::{bf16, f16};
use ort::AsPointer;
use ort::session::{RunOptions, Session};
use ort::sys::{self, ONNXTensorElementDataType as Element, OrtStatusPtr, OrtValue};
use std::ffi::{CStr, CString, c_char, c_void};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

/// An ONNX Runtime tensor value, released when dropped. It either views
/// host memory owned elsewhere or owns memory ONNX Runtime allocated.
pub(crate) struct OrtTensor(NonNull<OrtValue>);

impl Drop for OrtTensor {
    fn drop(&mut self) {
        // SAFETY: the pointer came from ONNX Runtime and is released once.
        unsafe { (ort::api().ReleaseValue)(self.0.as_ptr()) }
    }
}

fn element(dtype: DType) -> Element {
    match dtype {
        DType::F32 => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
        DType::F16 => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16,
        DType::Bf16 => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16,
        DType::F64 => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE,
        DType::I8 => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8,
        DType::I16 => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16,
        DType::I32 => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32,
        DType::I64 => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64,
        DType::U8 => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8,
        DType::U16 => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16,
        DType::U32 => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32,
        DType::U64 => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64,
        DType::Bool => Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL,
    }
}

/// The host dtype of an ONNX element type, `None` for those the host cannot
/// hold (strings, FP8, 4-bit, complex).
pub(crate) fn dtype_of(element: Element) -> Option<DType> {
    Some(match element {
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT => DType::F32,
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 => DType::F16,
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16 => DType::Bf16,
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE => DType::F64,
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 => DType::I8,
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16 => DType::I16,
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 => DType::I32,
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 => DType::I64,
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 => DType::U8,
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16 => DType::U16,
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32 => DType::U32,
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64 => DType::U64,
        Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL => DType::Bool,
        _ => return None,
    })
}

/// The CPU memory description every view uses (made once, never freed).
struct CpuMemory(NonNull<sys::OrtMemoryInfo>);
// SAFETY: an OrtMemoryInfo is immutable after creation; ONNX Runtime reads it
// from any thread.
unsafe impl Send for CpuMemory {}
unsafe impl Sync for CpuMemory {}

fn cpu_memory() -> Result<&'static CpuMemory, String> {
    static MEMORY: OnceLock<Result<CpuMemory, String>> = OnceLock::new();
    MEMORY
        .get_or_init(|| {
            let mut info = ptr::null_mut();
            // SAFETY: `info` receives a new object on success.
            status(unsafe {
                (ort::api().CreateCpuMemoryInfo)(
                    sys::OrtAllocatorType::OrtArenaAllocator,
                    sys::OrtMemType::OrtMemTypeDefault,
                    &mut info,
                )
            })?;
            NonNull::new(info)
                .map(CpuMemory)
                .ok_or_else(|| "ONNX Runtime returned no memory info".to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Turns an ONNX Runtime status into a result (releasing the status).
#[inline]
fn status(code: OrtStatusPtr) -> Result<(), String> {
    if code.0.is_null() {
        return Ok(());
    }
    failure(code)
}

/// The message of a failed status (releasing the status).
#[cold]
fn failure(code: OrtStatusPtr) -> Result<(), String> {
    let api = ort::api();
    // SAFETY: a non-null status carries a NUL-terminated message and is
    // released once, after the message is copied.
    unsafe {
        let message = CStr::from_ptr((api.GetErrorMessage)(code.0))
            .to_string_lossy()
            .into_owned();
        (api.ReleaseStatus)(code.0);
        Err(message)
    }
}

/// A tensor value over `data` (`numel(shape)` elements of `dtype`).
///
/// # Safety
/// `data` must stay valid, unmoved and (while ONNX Runtime reads it)
/// unchanged for as long as the returned value lives.
unsafe fn tensor_view(
    data: *mut c_void,
    dtype: DType,
    shape: &[usize],
) -> Result<OrtTensor, String> {
    let dims: smallvec::SmallVec<[i64; 8]> = shape.iter().map(|&d| d as i64).collect();
    let bytes = shape.iter().product::<usize>() * dtype.size();
    let mut value = ptr::null_mut();
    // SAFETY: the caller guarantees `data` covers `bytes` for the value's life.
    status(unsafe {
        (ort::api().CreateTensorWithDataAsOrtValue)(
            cpu_memory()?.0.as_ptr(),
            data,
            bytes,
            dims.as_ptr(),
            dims.len(),
            element(dtype),
            &mut value,
        )
    })?;
    NonNull::new(value)
        .map(OrtTensor)
        .ok_or_else(|| "ONNX Runtime returned no tensor".into())
}

/// The dtype and shape of a tensor value.
fn describe(value: &OrtTensor) -> Result<(DType, Vec<usize>), String> {
    let api = ort::api();
    let mut info = ptr::null_mut();
    // SAFETY: `value` is a live tensor; `info` is released below.
    status(unsafe { (api.GetTensorTypeAndShape)(value.0.as_ptr(), &mut info) })?;
    let described = (|| {
        let mut element = Element::ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
        let mut rank = 0;
        // SAFETY: `info` is live; `dims` has room for `rank` entries.
        unsafe {
            status((api.GetTensorElementType)(info, &mut element))?;
            status((api.GetDimensionsCount)(info, &mut rank))?;
            let mut dims = vec![0i64; rank];
            status((api.GetDimensions)(info, dims.as_mut_ptr(), rank))?;
            Ok::<_, String>((element, dims))
        }
    })();
    // SAFETY: released once.
    unsafe { (api.ReleaseTensorTypeAndShapeInfo)(info) };
    let (element, dims) = described?;
    let dtype = dtype_of(element).ok_or_else(|| {
        format!("the graph produced an element type the host cannot hold ({element:?})")
    })?;
    let shape: Vec<usize> = dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("the graph produced extent {d}")))
        .collect::<Result<_, _>>()?;
    Ok((dtype, shape))
}

/// Copies a tensor ONNX Runtime allocated in host memory.
fn read(value: &OrtTensor) -> Result<Tensor, String> {
    let api = ort::api();
    let (dtype, shape) = describe(value)?;
    let numel: usize = shape.iter().product();
    let mut data: *mut c_void = ptr::null_mut();
    // SAFETY: a live tensor's data holds `numel` elements of `dtype`.
    status(unsafe { (api.GetTensorMutableData)(value.0.as_ptr(), &mut data) })?;
    macro_rules! copy {
        ($t:ty, $variant:ident) => {
            Data::$variant(if numel == 0 {
                Vec::new()
            } else {
                // SAFETY: see above; the slice is copied before `value` is released.
                unsafe { std::slice::from_raw_parts(data as *const $t, numel) }.to_vec()
            })
        };
    }
    let data = match dtype {
        DType::F32 => copy!(f32, F32),
        DType::F16 => copy!(f16, F16),
        DType::Bf16 => copy!(bf16, Bf16),
        DType::F64 => copy!(f64, F64),
        DType::I8 => copy!(i8, I8),
        DType::I16 => copy!(i16, I16),
        DType::I32 => copy!(i32, I32),
        DType::I64 => copy!(i64, I64),
        DType::U8 => copy!(u8, U8),
        DType::U16 => copy!(u16, U16),
        DType::U32 => copy!(u32, U32),
        DType::U64 => copy!(u64, U64),
        // Read as bytes: a bool's byte other than 0 or 1 would be undefined.
        DType::Bool => bools_of_bytes(copy!(u8, U8)),
    };
    Tensor::new(shape, data).map_err(|e| e.0)
}

/// Bools read from the bytes of a bool tensor copied as `U8` (any other
/// data is returned as it is).
fn bools_of_bytes(data: Data) -> Data {
    match data {
        Data::U8(bytes) => Data::Bool(bytes.into_iter().map(|b| b != 0).collect()),
        other => other,
    }
}

/// One invoke step's ports as ONNX Runtime takes them: the names (and the
/// arrays of pointers to them), and room for the values of a call, so a
/// call builds no arrays of its own.
#[derive(Debug)]
pub(crate) struct CallSite {
    /// The names the two pointer arrays point into (input ports first).
    _names: Vec<CString>,
    input_names: Vec<*const c_char>,
    output_names: Vec<*const c_char>,
    /// Filled at the start of each call and read only within it.
    input_values: Vec<*const OrtValue>,
    /// Filled at the start of each call and read only within it.
    output_values: Vec<*mut OrtValue>,
    /// One slot per output port: the buffer the next call writes into, or
    /// `None` for ONNX Runtime to allocate (each taken by the call).
    pub(crate) presets: Presets,
}

// SAFETY: the name pointers point into the `CString`s the site owns (heap
// memory that moving the site does not move); the value arrays are filled
// at the start of each call and never read outside it.
unsafe impl Send for CallSite {}

impl CallSite {
    /// A site for these input and output ports; `None` when a name holds NUL.
    pub(crate) fn new<'a>(
        inputs: impl IntoIterator<Item = &'a str>,
        outputs: impl IntoIterator<Item = &'a str>,
    ) -> Option<Self> {
        let c = |names: &mut dyn Iterator<Item = &'a str>| -> Option<Vec<CString>> {
            names.map(|n| CString::new(n).ok()).collect()
        };
        let inputs = c(&mut inputs.into_iter())?;
        let outputs = c(&mut outputs.into_iter())?;
        Some(Self {
            input_names: inputs.iter().map(|n| n.as_ptr()).collect(),
            output_names: outputs.iter().map(|n| n.as_ptr()).collect(),
            input_values: Vec::with_capacity(inputs.len()),
            output_values: Vec::with_capacity(outputs.len()),
            presets: (0..outputs.len()).map(|_| None).collect(),
            _names: inputs.into_iter().chain(outputs).collect(),
        })
    }
}

/// A call's outputs, in the order of its output names.
pub(crate) type Produced = smallvec::SmallVec<[Rc<Held>; 4]>;

/// One slot per output of a call: its buffer, or `None` for ONNX Runtime
/// to allocate.
pub(crate) type Presets = Vec<Option<Preset>>;

/// A call being put together on its site: the views of its inputs, each
/// borrowed for as long as the call (so none can go before ONNX Runtime has
/// read it), and for each output a buffer, or none for ONNX Runtime to
/// allocate. Started by [`CallSite::call`], made by [`Call::run`].
pub(crate) struct Call<'a> {
    site: &'a mut CallSite,
    /// Whether some output has a buffer.
    buffered: bool,
    _inputs: PhantomData<&'a Held>,
}

impl CallSite {
    /// Starts a call on this site, with no inputs or outputs yet.
    #[inline]
    pub(crate) fn call(&mut self) -> Call<'_> {
        self.input_values.clear();
        self.output_values.clear();
        Call {
            site: self,
            buffered: false,
            _inputs: PhantomData,
        }
    }

    /// Whether the last call wrote every output into its buffer.
    #[inline]
    pub(crate) fn written(&self) -> bool {
        self.presets.len() == self.output_values.len()
            && self
                .presets
                .iter()
                .zip(&self.output_values)
                .all(|(p, &v)| p.as_ref().is_some_and(|p| p.output_slot() == v))
    }

    /// Appends the outputs of the last (successful) call to `produced`, in
    /// order: each buffer written into, or a host copy of each value ONNX
    /// Runtime allocated (released after). Returns whether all were written
    /// into buffers.
    pub(crate) fn collect(&mut self, produced: &mut Produced) -> Result<bool, String> {
        let mut written = true;
        for (preset, &value) in self.presets.iter_mut().zip(&self.output_values) {
            match preset.take() {
                Some(p) if value == p.output_slot() => produced.push(p.into_held()),
                _ => {
                    let value = NonNull::new(value)
                        .map(OrtTensor)
                        .ok_or("ONNX Runtime returned no output value")?;
                    produced.push(Held::new(Arc::new(read(&value)?)));
                    written = false;
                }
            }
        }
        Ok(written)
    }
}

impl<'a> Call<'a> {
    /// Adds the next input (its view is made on first use; a value in a
    /// device's memory is read from its host copy, as this session's
    /// inputs are the host's).
    #[inline]
    pub(crate) fn input(&mut self, held: &'a Held) -> Result<(), String> {
        let view = held.host_view()?;
        self.site.input_values.push(view.0.as_ptr().cast_const());
        Ok(())
    }

    /// Adds the next output, written into `preset` or, for `None`, into a
    /// value ONNX Runtime allocates. (An output past the site's ports is
    /// dropped here, and the call fails its count check before `Run`.)
    #[inline]
    pub(crate) fn output(&mut self, preset: Option<Preset>) {
        let at = self.site.output_values.len();
        let slot = preset.as_ref().map_or(ptr::null_mut(), Preset::output_slot);
        self.site.output_values.push(slot);
        self.buffered |= preset.is_some();
        if let Some(room) = self.site.presets.get_mut(at) {
            *room = preset;
        }
    }

    /// Adds every output, each with the buffer the site holds for it.
    pub(crate) fn outputs_from_presets(&mut self) {
        for at in 0..self.site.presets.len() {
            let preset = self.site.presets[at].take();
            self.output(preset);
        }
    }

    /// Whether some output has a buffer.
    pub(crate) fn buffered(&self) -> bool {
        self.buffered
    }

    /// Runs `session` (with `options`, if any) once on the call; the span of
    /// ONNX Runtime's `Run`. The outputs are then on the site
    /// ([`CallSite::written`], [`CallSite::collect`]).
    #[inline]
    pub(crate) fn run(
        self,
        session: &mut Session,
        options: Option<&RunOptions>,
    ) -> Result<Span, String> {
        let site = self.site;
        if site.input_values.len() != site.input_names.len()
            || site.output_values.len() != site.output_names.len()
        {
            return Err("port names and values differ in number".into());
        }
        let start = Tick::now();
        // SAFETY: every array has the length passed with it; the names are
        // NUL-terminated and live in `site`; the input views are borrowed
        // for the call's life (`input`), so they outlive it; each buffer is
        // the only reference to its memory, held by `site` across the call;
        // null output slots receive new values.
        let ran = status(unsafe {
            (ort::api().Run)(
                session.ptr_mut(),
                options.map_or(ptr::null(), |o| o.ptr()),
                site.input_names.as_ptr(),
                site.input_values.as_ptr(),
                site.input_values.len(),
                site.output_names.as_ptr(),
                site.output_names.len(),
                site.output_values.as_mut_ptr(),
            )
        });
        let end = Tick::now();
        ran.map(|()| Span { start, end })
    }
}

/// How many nodes of `session`'s graph each execution provider was given,
/// in the order ONNX Runtime lists them (recorded when the session was made
/// with `session.record_ep_graph_assignment_info`).
pub(crate) fn ep_assignment(session: &Session) -> Result<Vec<(String, usize)>, String> {
    let api = ort::api();
    let mut subgraphs: *const *const sys::OrtEpAssignedSubgraph = ptr::null();
    let mut count = 0usize;
    let mut by_ep: Vec<(String, usize)> = Vec::new();
    // SAFETY: the session outlives the call; ONNX Runtime owns the arrays
    // and strings it hands out for the session's life, and they are only
    // read here, each pointer checked before use.
    unsafe {
        status((api.Session_GetEpGraphAssignmentInfo)(
            session.ptr(),
            &mut subgraphs,
            &mut count,
        ))?;
        if subgraphs.is_null() {
            return Ok(by_ep);
        }
        for i in 0..count {
            let subgraph = *subgraphs.add(i);
            if subgraph.is_null() {
                continue;
            }
            let mut name: *const c_char = ptr::null();
            status((api.EpAssignedSubgraph_GetEpName)(subgraph, &mut name))?;
            let name = if name.is_null() {
                "?".to_string()
            } else {
                CStr::from_ptr(name).to_string_lossy().into_owned()
            };
            let mut nodes: *const *const sys::OrtEpAssignedNode = ptr::null();
            let mut n = 0usize;
            status((api.EpAssignedSubgraph_GetNodes)(
                subgraph, &mut nodes, &mut n,
            ))?;
            match by_ep.iter_mut().find(|(ep, _)| *ep == name) {
                Some(entry) => entry.1 += n,
                None => by_ep.push((name, n)),
            }
        }
    }
    Ok(by_ep)
}
