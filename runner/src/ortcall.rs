//! The hot path of an invoke on ONNX Runtime's C API. Host tensors are
//! handed over as views of their memory (no copy), an output whose shape is
//! known ahead is written by ONNX Runtime straight into a host buffer, and
//! the names of ports are prepared once per invoke step. On graphs whose
//! calls take microseconds this is what keeps the runner's own time small
//! (`docs/PERFORMANCE.md`).
//!
//! This is the runner's one module with `unsafe` code. Its rule: a view
//! never outlives the memory it points at ([`Held`] keeps both and drops the
//! view first; an output buffer is owned by the caller across the run) and
//! that memory is never written while ONNX Runtime reads it.

use crate::clock::{Span, Tick};
use crate::predict::{ShapeId, ShapeIds, UNKNOWN};
use crate::tensor::{DType, Data, Tensor};
use half::{bf16, f16};
use ort::AsPointer;
use ort::session::{RunOptions, Session};
use ort::sys::{self, ONNXTensorElementDataType as Element, OrtStatusPtr, OrtValue};
use std::cell::{Cell, OnceCell};
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

/// A value of a run's environment: the host tensor and, once an invoke has
/// passed it to ONNX Runtime, the view of its memory that ONNX Runtime
/// reads. The view is made once and shared by every later reader. Held
/// values stay on the thread of their run (`Rc`); only a [`Preset`], the
/// one reference to its value, crosses runs.
pub(crate) struct Held {
    // Declared first so that it is dropped before the memory it views.
    view: OnceCell<OrtTensor>,
    tensor: Arc<Tensor>,
    /// The slot of the invoke output that produced it ([`NO_HOME`] for
    /// other values), where its buffer is parked when a run ends.
    home: Cell<u32>,
    /// The number of the tensor's dtype and shape, once asked for.
    shape_id: Cell<ShapeId>,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Held({} {:?})", self.tensor.dtype(), self.tensor.shape)
    }
}

/// The home of a value no invoke output produced.
pub(crate) const NO_HOME: u32 = u32::MAX;

impl Held {
    /// A value with no view yet.
    pub(crate) fn new(tensor: Arc<Tensor>) -> Rc<Held> {
        Rc::new(Held {
            view: OnceCell::new(),
            tensor,
            home: Cell::new(NO_HOME),
            shape_id: Cell::new(UNKNOWN),
        })
    }

    /// Whether the tensor has `dtype` and `shape`, whose number is `id`
    /// ([`UNKNOWN`] if not known): told by the number when both are known.
    #[inline]
    pub(crate) fn is(&self, dtype: DType, shape: &[usize], id: ShapeId) -> bool {
        match self.shape_id.get() {
            known if known != UNKNOWN && id != UNKNOWN => known == id,
            _ => self.tensor.dtype() == dtype && self.tensor.shape == shape,
        }
    }

    /// The number of the tensor's dtype and shape in `ids` (which numbers
    /// it the first time; the tensor never changes, so neither does it).
    #[inline]
    pub(crate) fn shape_id(&self, ids: &mut ShapeIds) -> ShapeId {
        match self.shape_id.get() {
            UNKNOWN => {
                let id = ids.of(self.tensor.dtype(), &self.tensor.shape);
                self.shape_id.set(id);
                id
            }
            id => id,
        }
    }

    /// The slot of the invoke output that produced it, if one did.
    pub(crate) fn home(&self) -> Option<u32> {
        Some(self.home.get()).filter(|h| *h != NO_HOME)
    }

    /// Records that the invoke output of `slot` produced it.
    pub(crate) fn set_home(&self, slot: u32) {
        self.home.set(slot);
    }

    /// The host tensor.
    pub(crate) fn tensor(&self) -> &Arc<Tensor> {
        &self.tensor
    }

    /// The ONNX Runtime view of the tensor, made on first use.
    pub(crate) fn view(&self) -> Result<&OrtTensor, String> {
        if let Some(view) = self.view.get() {
            return Ok(view);
        }
        let t = &*self.tensor;
        // SAFETY: the view lives in `self.view`, dropped before `self.tensor`
        // (which is never mutated behind the `Arc`); ONNX Runtime only reads
        // input memory, so the const pointer is never written through.
        let view = unsafe { tensor_view(t.data.as_ptr().cast_mut(), t.dtype(), &t.shape)? };
        Ok(self.view.get_or_init(|| view))
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

/// Copies a tensor ONNX Runtime allocated into host memory.
fn read(value: &OrtTensor) -> Result<Tensor, String> {
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
        DType::Bool => match copy!(u8, U8) {
            Data::U8(bytes) => Data::Bool(bytes.into_iter().map(|b| b != 0).collect()),
            _ => unreachable!("copied as bytes"),
        },
    };
    Tensor::new(shape, data).map_err(|e| e.0)
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

/// A value with a view whose every reference is this one (no other `Rc`
/// to the [`Held`], no other `Arc` to its tensor): its buffer may be
/// written again, as the output of a call whose shape is predicted (ONNX
/// Runtime writes into it, or fails the run when the output has another
/// shape), or kept across runs.
pub(crate) struct Preset(Rc<Held>);

// SAFETY: a preset is the only reference to its value (checked when it is
// made), so moving it to another thread shares neither the `Rc` count nor
// the tensor; an ONNX Runtime value has no affinity to the thread that
// made it.
unsafe impl Send for Preset {}

impl std::fmt::Debug for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Preset({:?})", self.0)
    }
}

impl Preset {
    /// The buffer's dtype and shape.
    pub(crate) fn tensor(&self) -> &Tensor {
        &self.0.tensor
    }

    /// The buffer's value.
    pub(crate) fn held(&self) -> &Held {
        &self.0
    }

    /// A zeroed buffer of `dtype` and `shape` (numbered `id`, or
    /// [`UNKNOWN`]); `None` past `max_bytes`.
    pub(crate) fn new(
        dtype: DType,
        shape: &[usize],
        id: ShapeId,
        max_bytes: usize,
    ) -> Option<Preset> {
        let numel = crate::tensor::checked_numel(shape, dtype, max_bytes).ok()?;
        let mut tensor = Tensor::new(shape.to_vec(), Data::zeros(dtype, numel)).ok()?;
        let data = tensor.data.as_mut_ptr();
        // SAFETY: the buffer is owned by `tensor`, which the held value keeps
        // beside the view (dropped after it); moving the `Tensor` into its
        // `Arc` does not move its heap buffer.
        let view = unsafe { tensor_view(data, dtype, shape) }.ok()?;
        Some(Preset(Rc::new(Held {
            view: OnceCell::from(view),
            tensor: Arc::new(tensor),
            home: Cell::new(NO_HOME),
            shape_id: Cell::new(id),
        })))
    }

    /// `held` as a preset, when it is the only reference to a viewed value.
    pub(crate) fn reclaim(held: Rc<Held>) -> Option<Preset> {
        // Counts read, not compare-exchanged: with one strong reference in
        // hand and no weak ones, no other can appear.
        let unique = Rc::strong_count(&held) == 1
            && Rc::weak_count(&held) == 0
            && Arc::strong_count(&held.tensor) == 1
            && Arc::weak_count(&held.tensor) == 0;
        (unique && held.view.get().is_some()).then_some(Preset(held))
    }

    /// The value, for the environment of a run.
    pub(crate) fn into_held(self) -> Rc<Held> {
        self.0
    }

    /// The value's view, as an output slot ONNX Runtime writes into.
    fn output_slot(&self) -> *mut OrtValue {
        // `reclaim` and `new` only make presets of values with a view.
        self.0.view.get().map_or(ptr::null_mut(), |v| v.0.as_ptr())
    }
}

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
    /// Adds the next input (its view is made on first use).
    #[inline]
    pub(crate) fn input(&mut self, held: &'a Held) -> Result<(), String> {
        let view = held.view()?;
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
