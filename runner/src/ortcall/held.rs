//! The values of a run's environment ([`Held`]): a host tensor with the
//! view ONNX Runtime reads, or a tensor in a device's memory that an
//! execution provider made and the next call on that device reads where it
//! is (copied to the host only when the host reads it); and the buffers an
//! output is written into ([`Preset`]).

use super::{OrtTensor, binding, describe, tensor_view};
use crate::predict::{ShapeId, ShapeIds, UNKNOWN};
use crate::tensor::{DType, Data, Described, Tensor};
use ort::sys::OrtValue;
use std::cell::{Cell, OnceCell};
use std::ptr;
use std::rc::Rc;
use std::sync::Arc;

/// A value of a run's environment: its tensor and, once an invoke has
/// passed it to ONNX Runtime, the value ONNX Runtime reads. The view is
/// made once and shared by every later reader. Held values stay on the
/// thread of their run (`Rc`); only a [`Preset`], the one reference to its
/// value, crosses runs.
pub(crate) struct Held {
    // Declared first so that it is dropped before the memory it views.
    view: OnceCell<OrtTensor>,
    store: Store,
    /// The slot of the invoke output that produced it ([`NO_HOME`] for
    /// other values), where its buffer is parked when a run ends.
    home: Cell<u32>,
    /// The number of the tensor's dtype and shape, once asked for.
    shape_id: Cell<ShapeId>,
}

/// Where a held value's elements are.
enum Store {
    /// In host memory; the view (made on first use) points at them.
    Host(Arc<Tensor>),
    /// In memory an execution provider allocated, which the view owns;
    /// the host copy is made on first read, and its own view (declared
    /// first, so dropped before the copy) when a model on the host reads it.
    Device {
        dtype: DType,
        shape: Vec<usize>,
        host_view: OnceCell<OrtTensor>,
        host: OnceCell<Arc<Tensor>>,
    },
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = if self.on_device() { " on device" } else { "" };
        write!(f, "Held({} {:?}{place})", self.dtype(), self.shape())
    }
}

/// The home of a value no invoke output produced.
pub(crate) const NO_HOME: u32 = u32::MAX;

impl Described for Held {
    fn dtype(&self) -> DType {
        match &self.store {
            Store::Host(t) => t.dtype(),
            Store::Device { dtype, .. } => *dtype,
        }
    }

    fn shape(&self) -> &[usize] {
        match &self.store {
            Store::Host(t) => &t.shape,
            Store::Device { shape, .. } => shape,
        }
    }
}

impl Held {
    /// A host value with no view yet.
    pub(crate) fn new(tensor: Arc<Tensor>) -> Rc<Held> {
        Rc::new(Held {
            view: OnceCell::new(),
            store: Store::Host(tensor),
            home: Cell::new(NO_HOME),
            shape_id: Cell::new(UNKNOWN),
        })
    }

    /// A value an execution provider made in its device's memory.
    pub(crate) fn on_device_value(value: OrtTensor) -> Result<Rc<Held>, String> {
        let (dtype, shape) = describe(&value)?;
        Ok(Rc::new(Held {
            view: OnceCell::from(value),
            store: Store::Device {
                dtype,
                shape,
                host_view: OnceCell::new(),
                host: OnceCell::new(),
            },
            home: Cell::new(NO_HOME),
            shape_id: Cell::new(UNKNOWN),
        }))
    }

    /// Whether the value is in a device's memory.
    pub(crate) fn on_device(&self) -> bool {
        matches!(self.store, Store::Device { .. })
    }

    /// Bytes of the elements.
    pub(crate) fn bytes(&self) -> usize {
        self.shape().iter().product::<usize>() * self.dtype().size()
    }

    /// Whether the tensor has `dtype` and `shape`, whose number is `id`
    /// ([`UNKNOWN`] if not known): told by the number when both are known.
    #[inline]
    pub(crate) fn is(&self, dtype: DType, shape: &[usize], id: ShapeId) -> bool {
        match self.shape_id.get() {
            known if known != UNKNOWN && id != UNKNOWN => known == id,
            _ => self.dtype() == dtype && self.shape() == shape,
        }
    }

    /// The number of the tensor's dtype and shape in `ids` (which numbers
    /// it the first time; the tensor never changes, so neither does it).
    #[inline]
    pub(crate) fn shape_id(&self, ids: &mut ShapeIds) -> ShapeId {
        match self.shape_id.get() {
            UNKNOWN => {
                let id = ids.of(self.dtype(), self.shape());
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

    /// The host tensor; a value in device memory is copied to the host on
    /// the first read (counted in the run's transfers).
    #[inline]
    pub(crate) fn tensor(&self) -> Result<&Arc<Tensor>, String> {
        match &self.store {
            Store::Host(t) => Ok(t),
            Store::Device { host, .. } => match host.get() {
                Some(t) => Ok(t),
                None => self.copy_to_host(host),
            },
        }
    }

    #[cold]
    fn copy_to_host<'a>(&self, host: &'a OnceCell<Arc<Tensor>>) -> Result<&'a Arc<Tensor>, String> {
        let value = self
            .view
            .get()
            .ok_or("a value in device memory has no ONNX Runtime value")?;
        let tensor = binding::to_host(value)?;
        Ok(host.get_or_init(|| Arc::new(tensor)))
    }

    /// The host tensor when the value was made on the host (no copy).
    pub(crate) fn host(&self) -> Option<&Arc<Tensor>> {
        match &self.store {
            Store::Host(t) => Some(t),
            Store::Device { .. } => None,
        }
    }

    /// The ONNX Runtime value of the host tensor, for a model that reads
    /// host memory: [`Self::view`] for a host value; for a device value the
    /// view of its host copy (the copy made, and counted, on first use).
    #[inline]
    pub(crate) fn host_view(&self) -> Result<&OrtTensor, String> {
        match &self.store {
            Store::Host(_) => self.view(),
            Store::Device { host_view, .. } => match host_view.get() {
                Some(view) => Ok(view),
                // SAFETY: `host_view` is dropped before `host`, which holds
                // the copy.
                None => unsafe { viewed(host_view, self.tensor()?) },
            },
        }
    }

    /// The ONNX Runtime value: the view of a host tensor (made on first
    /// use), or the device value itself.
    pub(crate) fn view(&self) -> Result<&OrtTensor, String> {
        if let Some(view) = self.view.get() {
            return Ok(view);
        }
        let Store::Host(t) = &self.store else {
            return Err("a value in device memory has no ONNX Runtime value".into());
        };
        // SAFETY: `self.view` is dropped before `self.store`, which holds `t`.
        unsafe { viewed(&self.view, t) }
    }
}

/// The view of host tensor `t`, made into `cell` (which may already hold
/// it).
///
/// # Safety
/// `cell` must be dropped before `t`'s memory, which must never be written
/// while it lives (a tensor behind an `Arc` never is; ONNX Runtime only
/// reads an input's memory, so the const pointer is never written
/// through).
unsafe fn viewed<'c>(cell: &'c OnceCell<OrtTensor>, t: &Tensor) -> Result<&'c OrtTensor, String> {
    if let Some(view) = cell.get() {
        return Ok(view);
    }
    // SAFETY: as the caller guarantees.
    let view = unsafe { tensor_view(t.data.as_ptr().cast_mut(), t.dtype(), &t.shape)? };
    Ok(cell.get_or_init(|| view))
}

/// A host value with a view whose every reference is this one (no other
/// `Rc` to the [`Held`], no other `Arc` to its tensor): its buffer may be
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
    /// The buffer's dtype, shape and elements.
    pub(crate) fn tensor(&self) -> &Arc<Tensor> {
        match &self.0.store {
            Store::Host(t) => t,
            Store::Device { .. } => unreachable!("a preset is made only of a host buffer"),
        }
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
            store: Store::Host(Arc::new(tensor)),
            home: Cell::new(NO_HOME),
            shape_id: Cell::new(id),
        })))
    }

    /// `held` as a preset, when it is the only reference to a viewed host
    /// value.
    pub(crate) fn reclaim(held: Rc<Held>) -> Option<Preset> {
        let Store::Host(tensor) = &held.store else {
            return None;
        };
        // Counts read, not compare-exchanged: with one strong reference in
        // hand and no weak ones, no other can appear.
        let unique = Rc::strong_count(&held) == 1
            && Rc::weak_count(&held) == 0
            && Arc::strong_count(tensor) == 1
            && Arc::weak_count(tensor) == 0;
        (unique && held.view.get().is_some()).then_some(Preset(held))
    }

    /// The value, for the environment of a run.
    pub(crate) fn into_held(self) -> Rc<Held> {
        self.0
    }

    /// The value's view, as an output slot ONNX Runtime writes into.
    pub(super) fn output_slot(&self) -> *mut OrtValue {
        // `reclaim` and `new` only make presets of values with a view.
        self.0.view.get().map_or(ptr::null_mut(), |v| v.0.as_ptr())
    }
}
