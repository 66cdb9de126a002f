//! Calls on a session whose ports are in a device's memory (a GPU's), made
//! through an ONNX Runtime I/O binding: each output stays in the memory the
//! execution provider made it in, so the next call on that device reads it
//! where it is instead of a round trip through the host per call. Host
//! values handed to such a session, and device values the host reads, are
//! counted ([`crate::transfers`]).

use super::{
    CallSite, OrtTensor, Produced, bools_of_bytes, cpu_memory, describe, read, status, tensor_view,
};
use crate::clock::{Span, Tick};
use crate::tensor::{DType, Data, Tensor};
use crate::{ortlib, transfers};
use ort::AsPointer;
use ort::session::Session;
use ort::sys::{self, OrtMemoryInfo, OrtMemoryInfoDeviceType};
use std::ffi::{CStr, CString, c_char, c_void};
use std::ptr::{self, NonNull};
use std::rc::Rc;

use super::Held;

/// A session's I/O binding and where its ports are.
pub(crate) struct Binding {
    binding: NonNull<sys::OrtIoBinding>,
    /// Each graph input's name and whether its memory is a device's.
    inputs: Vec<(CString, bool)>,
    /// Each graph output's name, the memory ONNX Runtime makes it in (the
    /// session's, which outlives the binding) and whether that is a
    /// device's.
    outputs: Vec<(CString, *const OrtMemoryInfo, bool)>,
}

// SAFETY: the binding and the memory descriptions belong to the session the
// binding travels with; ONNX Runtime does not tie them to a thread, and a
// binding is only used through `&mut`.
unsafe impl Send for Binding {}

impl Drop for Binding {
    fn drop(&mut self) {
        // SAFETY: made by `CreateIoBinding`, released once.
        unsafe { (ort::api().ReleaseIoBinding)(self.binding.as_ptr()) }
    }
}

impl std::fmt::Debug for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on = |d: bool| if d { "device" } else { "host" };
        let inputs: Vec<_> = self.inputs.iter().map(|(n, d)| (n, on(*d))).collect();
        let outputs: Vec<_> = self.outputs.iter().map(|(n, _, d)| (n, on(*d))).collect();
        write!(f, "Binding {{ inputs: {inputs:?}, outputs: {outputs:?} }}")
    }
}

/// ONNX Runtime's number for memory of a CPU and of a GPU
/// (`OrtMemoryInfoDeviceType`), read as plain integers: a newer runtime
/// may answer a kind this crate's enum does not list.
const CPU: i32 = OrtMemoryInfoDeviceType::OrtMemoryInfoDeviceType_CPU as i32;
const GPU: i32 = OrtMemoryInfoDeviceType::OrtMemoryInfoDeviceType_GPU as i32;

/// NVIDIA's PCI vendor number, as ONNX Runtime gives a device's vendor.
const NVIDIA: u32 = 0x10de;

/// The kind of device `info` describes ([`CPU`], [`GPU`], ...); `CPU` for
/// none.
fn device_kind(info: *const OrtMemoryInfo) -> i32 {
    if info.is_null() {
        return CPU;
    }
    let mut kind = CPU;
    // SAFETY: `info` is a live description; the out parameter is read as
    // the C int it is, never as the Rust enum.
    unsafe {
        (ort::api().MemoryInfoGetDeviceType)(
            info,
            (&mut kind as *mut i32).cast::<OrtMemoryInfoDeviceType>(),
        )
    };
    kind
}

/// Whether `info` describes memory other than the host's.
fn is_device(info: *const OrtMemoryInfo) -> bool {
    device_kind(info) != CPU
}

impl Binding {
    /// The binding of `session` (whose graph inputs and outputs are named
    /// `inputs` and `outputs`) when some port is in a device's memory, or
    /// when `simulate` asks every port to be treated as if it were (which
    /// runs the device path on a machine without one); `None` otherwise.
    pub(crate) fn of(
        session: &mut Session,
        inputs: &[String],
        outputs: &[String],
        simulate: bool,
    ) -> Result<Option<Binding>, String> {
        let api = ort::api();
        let mut input_memory = vec![ptr::null(); inputs.len()];
        let mut output_memory = vec![ptr::null(); outputs.len()];
        // SAFETY: each array has room for one description per port; the
        // descriptions belong to the session.
        unsafe {
            status((api.SessionGetMemoryInfoForInputs)(
                session.ptr(),
                input_memory.as_mut_ptr(),
                inputs.len(),
            ))?;
            status((api.SessionGetMemoryInfoForOutputs)(
                session.ptr(),
                output_memory.as_mut_ptr(),
                outputs.len(),
            ))?;
        }
        let name =
            |n: &String| CString::new(n.as_str()).map_err(|_| format!("port '{n}' holds NUL"));
        let inputs: Vec<(CString, bool)> = inputs
            .iter()
            .zip(&input_memory)
            .map(|(n, &m)| Ok((name(n)?, simulate || is_device(m))))
            .collect::<Result<_, String>>()?;
        let outputs: Vec<(CString, *const OrtMemoryInfo, bool)> = outputs
            .iter()
            .zip(&output_memory)
            .map(|(n, &m)| {
                let memory = if m.is_null() {
                    cpu_memory()?.0.as_ptr().cast_const()
                } else {
                    m
                };
                Ok((name(n)?, memory, simulate || is_device(m)))
            })
            .collect::<Result<_, String>>()?;
        if !inputs.iter().any(|i| i.1) && !outputs.iter().any(|o| o.2) {
            return Ok(None);
        }
        let mut binding = ptr::null_mut();
        // SAFETY: `binding` receives a new object on success.
        status(unsafe { (api.CreateIoBinding)(session.ptr_mut(), &mut binding) })?;
        let binding = NonNull::new(binding).ok_or("ONNX Runtime returned no I/O binding")?;
        Ok(Some(Binding {
            binding,
            inputs,
            outputs,
        }))
    }

    /// Runs `session` once on `inputs` (one per input port of `site`, in
    /// order), appending the outputs to `produced` in the order of the
    /// site's output ports: those in device memory stay there. The span of
    /// ONNX Runtime's run.
    pub(crate) fn run(
        &mut self,
        session: &mut Session,
        site: &CallSite,
        inputs: &[&Rc<Held>],
        produced: &mut Produced,
    ) -> Result<Span, String> {
        let api = ort::api();
        let binding = self.binding.as_ptr();
        let ran = (|| {
            if inputs.len() != site.input_names.len() {
                return Err("port names and values differ in number".to_string());
            }
            for (held, &name) in inputs.iter().zip(&site.input_names) {
                // A device value for a port in host memory goes as its host
                // copy (counted when made); a host value for a port in
                // device memory is copied there by ONNX Runtime.
                let on_device = self.input_on_device(name);
                let value = match (held.on_device(), on_device) {
                    (true, false) => held.host_view()?,
                    _ => held.view()?,
                };
                // SAFETY: the name is NUL-terminated and lives in `site`;
                // the value is live; ONNX Runtime keeps its own reference
                // until the inputs are cleared below.
                status(unsafe { (api.BindInput)(binding, name, value.0.as_ptr()) })?;
                if on_device && !held.on_device() {
                    transfers::to_device(held.bytes());
                }
            }
            let mut on_device = smallvec::SmallVec::<[bool; 4]>::new();
            for &name in &site.output_names {
                let (memory, device) = self.output_memory(name)?;
                // SAFETY: as above; the memory description is the session's.
                status(unsafe { (api.BindOutputToDevice)(binding, name, memory) })?;
                on_device.push(device);
            }
            let start = Tick::now();
            // SAFETY: the binding belongs to this session; every bound value
            // outlives the run.
            status(unsafe { (api.RunWithBinding)(session.ptr_mut(), ptr::null(), binding) })?;
            // SAFETY: as above; the outputs are complete when it returns.
            status(unsafe { (api.SynchronizeBoundOutputs)(binding) })?;
            let end = Tick::now();
            let outputs = self.bound_outputs()?;
            if outputs.len() != on_device.len() {
                return Err(format!(
                    "ONNX Runtime returned {} outputs for {} ports",
                    outputs.len(),
                    on_device.len()
                ));
            }
            for (value, device) in outputs.into_iter().zip(on_device) {
                produced.push(if device {
                    Held::on_device_value(value)?
                } else {
                    Held::new(std::sync::Arc::new(read(&value)?))
                });
            }
            Ok(Span { start, end })
        })();
        // SAFETY: the binding is live; clearing drops its references to this
        // call's values.
        unsafe {
            (api.ClearBoundInputs)(binding);
            (api.ClearBoundOutputs)(binding);
        }
        ran
    }

    fn input_on_device(&self, name: *const c_char) -> bool {
        // SAFETY: the site's names are NUL-terminated.
        let name = unsafe { CStr::from_ptr(name) };
        self.inputs.iter().any(|(n, d)| *d && n.as_c_str() == name)
    }

    fn output_memory(&self, name: *const c_char) -> Result<(*const OrtMemoryInfo, bool), String> {
        // SAFETY: the site's names are NUL-terminated.
        let name = unsafe { CStr::from_ptr(name) };
        self.outputs
            .iter()
            .find(|(n, ..)| n.as_c_str() == name)
            .map(|(_, memory, device)| (*memory, *device))
            .ok_or_else(|| format!("the model has no output '{}'", name.to_string_lossy()))
    }

    /// The values the last run bound, each owned (released when dropped).
    fn bound_outputs(&self) -> Result<Vec<OrtTensor>, String> {
        let api = ort::api();
        let mut allocator = ptr::null_mut();
        // SAFETY: the default allocator is ONNX Runtime's and never freed.
        status(unsafe { (api.GetAllocatorWithDefaultOptions)(&mut allocator) })?;
        let mut values: *mut *mut sys::OrtValue = ptr::null_mut();
        let mut count = 0usize;
        // SAFETY: ONNX Runtime allocates the array with `allocator` and
        // hands over one reference per value.
        status(unsafe {
            (api.GetBoundOutputValues)(self.binding.as_ptr(), allocator, &mut values, &mut count)
        })?;
        if values.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: the array holds `count` values, each taken once; the array
        // is freed with the allocator that made it.
        let (owned, freed) = unsafe {
            let owned = (0..count)
                .filter_map(|i| NonNull::new(*values.add(i)).map(OrtTensor))
                .collect::<Vec<_>>();
            (owned, status((api.AllocatorFree)(allocator, values.cast())))
        };
        freed?;
        if owned.len() != count {
            return Err("ONNX Runtime returned no value for an output".into());
        }
        Ok(owned)
    }
}

/// A host copy of `value`, counted as a copy to the host (which it is on a
/// device; on the host, when [`Binding::of`] was asked to simulate one, a
/// copy out of ONNX Runtime's memory). Device memory is copied by the
/// execution provider's own data transfer (a plugin EP's, through
/// `CopyTensors`) or, for NVIDIA memory of an EP that offers none there
/// (the built-in CUDA EP), by the CUDA driver.
pub(super) fn to_host(value: &OrtTensor) -> Result<Tensor, String> {
    let (dtype, shape) = describe(value)?;
    let numel: usize = shape.iter().product();
    let bytes = numel * dtype.size();
    let api = ort::api();
    let mut memory = ptr::null();
    // SAFETY: `value` is a live tensor; the description is its own.
    status(unsafe { (api.GetTensorMemoryInfo)(value.0.as_ptr(), &mut memory) })?;
    let tensor = if is_device(memory) {
        // Bools are copied as bytes (a byte other than 0 or 1 would not be
        // a Rust bool), then read as `read` reads them.
        let as_bytes = dtype == DType::Bool;
        let landing = if as_bytes { DType::U8 } else { dtype };
        let mut tensor = Tensor::new(shape, Data::zeros(landing, numel)).map_err(|e| e.0)?;
        copy_tensor(value, &mut tensor).or_else(|why| {
            // SAFETY: `memory` is the value's live description.
            let vendor = unsafe { (api.MemoryInfoGetVendorId)(memory) };
            if device_kind(memory) != GPU || vendor != NVIDIA {
                return Err(why);
            }
            let mut ordinal = 0;
            // SAFETY: as above.
            status(unsafe { (api.MemoryInfoGetId)(memory, &mut ordinal) })?;
            let mut source = ptr::null_mut();
            // SAFETY: a live tensor's data pointer (device memory, not read
            // here).
            status(unsafe { (api.GetTensorMutableData)(value.0.as_ptr(), &mut source) })?;
            // SAFETY: the tensor's buffer holds `bytes` bytes and nothing
            // else refers to it while the copy writes.
            let destination = unsafe {
                std::slice::from_raw_parts_mut(tensor.data.as_mut_ptr().cast::<u8>(), bytes)
            };
            cuda_to_host(ordinal, source, destination)
                .map_err(|cuda| format!("{why}; through the CUDA driver: {cuda}"))
        })?;
        if as_bytes {
            tensor.data = bools_of_bytes(tensor.data);
        }
        tensor
    } else {
        read(value)?
    };
    transfers::to_host(bytes);
    Ok(tensor)
}

/// Copies `value` into `tensor` (of its type and shape) with the data
/// transfer that ONNX Runtime's environment has for the value's device.
fn copy_tensor(value: &OrtTensor, tensor: &mut Tensor) -> Result<(), String> {
    let api = ort::api();
    // SAFETY: `destination` views `tensor`'s buffer and is dropped before
    // this function returns, before the buffer is read or moved.
    let destination =
        unsafe { tensor_view(tensor.data.as_mut_ptr(), tensor.dtype(), &tensor.shape)? };
    let (env, _) = ortlib::environment().map_err(|e| e.to_string())?;
    let sources = [value.0.as_ptr().cast_const()];
    let mut destinations = [destination.0.as_ptr().cast_const()];
    // SAFETY: one source and one destination of the same type and shape,
    // both live; without a stream the copy has finished when it returns.
    status(unsafe {
        (api.CopyTensors)(
            env.ptr().cast_mut(),
            sources.as_ptr(),
            destinations.as_mut_ptr(),
            ptr::null_mut(),
            1,
        )
    })
}

/// Copies CUDA memory at `source` on device `ordinal` into `destination`
/// with the CUDA driver (loaded at run time).
fn cuda_to_host(ordinal: i32, source: *mut c_void, destination: &mut [u8]) -> Result<(), String> {
    let ordinal = usize::try_from(ordinal).map_err(|_| format!("CUDA device {ordinal}"))?;
    // cudarc panics when it cannot load the driver library.
    let context = std::panic::catch_unwind(|| cudarc::driver::CudaContext::new(ordinal))
        .map_err(|_| "the CUDA driver library cannot be loaded".to_string())?
        .map_err(|e| e.to_string())?;
    context.bind_to_thread().map_err(|e| e.to_string())?;
    // SAFETY: `source` is NVIDIA device memory of at least
    // `destination.len()` bytes (the tensor ONNX Runtime allocated there),
    // and the device pointer is its address as the driver numbers it; the
    // copy is synchronous.
    unsafe { cudarc::driver::result::memcpy_dtoh_sync(destination, source as u64) }
        .map_err(|e| e.to_string())
}
