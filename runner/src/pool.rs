//! Output buffers kept for reuse. When a value nobody else holds is
//! replaced (a loop's next iteration), its buffer and ONNX Runtime view
//! (the whole held value) wait here for the next output of the same dtype
//! and shape, so a steady loop allocates nothing and makes no new views.
//! When a run ends, each value nobody else holds is parked under its slot:
//! the next run's output of that slot takes it back without a look-up, and
//! a workflow input given the same small value again reuses it, view and
//! all. A workflow input the caller shares (and so may give again) is
//! parked too, for its view alone.

use crate::ortcall::{Held, Preset};
use crate::predict::ShapeId;
use crate::tensor::{DType, Tensor};
use std::hash::BuildHasher;
use std::rc::Rc;
use std::sync::Arc;

/// Bytes the pool may hold in all.
const BUDGET: usize = 64 << 20;
/// Buffers kept per dtype and shape.
const PER_SHAPE: usize = 4;

/// Bytes the values parked at the end of a run may hold in all.
const PARKED_BUDGET: usize = 256 << 20;
/// The largest workflow input compared with the parked value of its slot
/// (comparing costs about what a new view does at this size).
const MOST_COMPARED: usize = 4096;

/// Free buffers by dtype and shape, and the values parked by slot.
#[derive(Default)]
pub(crate) struct Pool {
    free: crate::fastmap::FastMap<u64, Vec<Preset>>,
    bytes: usize,
    parked: Vec<Option<Preset>>,
    parked_bytes: usize,
    /// Workflow inputs whose tensor the caller shares, by slot.
    shared: Vec<Option<SharedInput>>,
}

/// A workflow input whose tensor the caller also holds: the one reference
/// to its held value (the tensor is never written, so it is not a buffer
/// for outputs), kept for its view.
struct SharedInput(Rc<Held>);

// SAFETY: the `Rc` is the only one to its held value (checked when it is
// parked), so moving it to another thread shares no reference count; the
// tensor is behind an `Arc` and never written; an ONNX Runtime value has no
// affinity to the thread that made it.
unsafe impl Send for SharedInput {}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pool({} bytes)", self.bytes)
    }
}

fn key(dtype: DType, shape: &[usize]) -> u64 {
    foldhash::fast::FixedState::default().hash_one((dtype, shape))
}

fn bytes(preset: &Preset) -> usize {
    let t = preset.tensor();
    t.numel() * t.dtype().size()
}

impl Pool {
    /// Parks `held`, the value of `slot` when a run ended, if nobody else
    /// holds it and there is room: under the slot of the invoke output that
    /// produced it (where the next run's output of that step looks first),
    /// or else under `slot`. A value bound to several slots (a carried cell
    /// and the value that became it) is parked when its last one is.
    pub(crate) fn park(&mut self, slot: u32, held: Rc<Held>) {
        let slot = held.home().unwrap_or(slot);
        if let Some(preset) = Preset::reclaim(held) {
            self.park_preset(slot, preset);
        }
    }

    fn park_preset(&mut self, slot: u32, preset: Preset) {
        let size = bytes(&preset);
        if self.parked_bytes + size > PARKED_BUDGET {
            return self.keep(preset);
        }
        let at = slot as usize;
        if self.parked.len() <= at {
            self.parked.resize_with(at + 1, || None);
        }
        self.parked_bytes += size;
        if let Some(old) = self.parked[at].replace(preset) {
            self.parked_bytes -= bytes(&old);
            self.keep(old);
        }
    }

    fn unpark(&mut self, slot: u32, fits: impl FnOnce(&Held) -> bool) -> Option<Preset> {
        let parked = self.parked.get_mut(slot as usize)?;
        if !parked.as_ref().is_some_and(|p| fits(p.held())) {
            return None;
        }
        let preset = parked.take()?;
        self.parked_bytes -= bytes(&preset);
        Some(preset)
    }

    /// Parks `held`, the value of workflow input `slot` when a run ended, if
    /// nobody else in the run holds it: as a buffer when the caller does not
    /// hold its tensor either, else as a shared input.
    pub(crate) fn park_input(&mut self, slot: u32, held: Rc<Held>) {
        if Rc::strong_count(&held) != 1 || Rc::weak_count(&held) != 0 || held.home().is_some() {
            return self.park(slot, held);
        }
        if held.host().is_none_or(|t| Arc::strong_count(t) == 1) {
            return self.park(slot, held);
        }
        let at = slot as usize;
        if self.shared.len() <= at {
            self.shared.resize_with(at + 1, || None);
        }
        self.shared[at] = Some(SharedInput(held));
    }

    /// The value parked under `slot` when it is `tensor`: the same shared
    /// tensor, or the same small one bit for bit (only small tensors are
    /// compared). A workflow input given again.
    pub(crate) fn same_as_parked(&mut self, slot: u32, tensor: &Arc<Tensor>) -> Option<Rc<Held>> {
        if let Some(shared) = self.shared.get_mut(slot as usize).and_then(Option::take)
            && shared.0.host().is_some_and(|t| Arc::ptr_eq(t, tensor))
        {
            return Some(shared.0);
        }
        if tensor.numel() * tensor.dtype().size() > MOST_COMPARED {
            return None;
        }
        self.unpark(slot, |p| {
            p.host()
                .is_some_and(|t| t.shape == tensor.shape && t.data.same_bits(&tensor.data))
        })
        .map(Preset::into_held)
    }

    /// A buffer of `dtype` and `shape` for the output of `slot`: the one
    /// parked there, or a free one.
    /// (`id` is the pair's number, or [`crate::predict::UNKNOWN`].)
    pub(crate) fn take_for(
        &mut self,
        slot: u32,
        dtype: DType,
        shape: &[usize],
        id: ShapeId,
    ) -> Option<Preset> {
        self.unpark(slot, |p| p.is(dtype, shape, id))
            .or_else(|| self.take(dtype, shape))
    }

    /// A free buffer of `dtype` and `shape`.
    pub(crate) fn take(&mut self, dtype: DType, shape: &[usize]) -> Option<Preset> {
        let list = self.free.get_mut(&key(dtype, shape))?;
        let at = list
            .iter()
            .position(|p| p.tensor().dtype() == dtype && p.tensor().shape == shape)?;
        let preset = list.swap_remove(at);
        self.bytes -= bytes(&preset);
        Some(preset)
    }

    /// Keeps the buffer of `held` if nobody else holds it and there is room:
    /// parked under the slot of the output that produced it when nothing is
    /// parked there (the next call of that step finds it without a
    /// look-up), else among the free buffers.
    pub(crate) fn give(&mut self, held: Rc<Held>) {
        let home = held.home();
        let Some(preset) = Preset::reclaim(held) else {
            return;
        };
        match home {
            Some(slot) if self.parked.get(slot as usize).is_some_and(Option::is_none) => {
                self.park_preset(slot, preset);
            }
            _ => self.keep(preset),
        }
    }

    /// Keeps `preset` if there is room.
    pub(crate) fn keep(&mut self, preset: Preset) {
        let size = bytes(&preset);
        let t = preset.tensor();
        let list = self.free.entry(key(t.dtype(), &t.shape)).or_default();
        if self.bytes + size <= BUDGET && list.len() < PER_SHAPE {
            self.bytes += size;
            list.push(preset);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Pool;
    use crate::ortcall::Held;
    use crate::predict::UNKNOWN;
    use crate::tensor::{DType, Data, Tensor};
    use std::sync::Arc;

    #[test]
    fn keeps_only_buffers_nobody_else_holds() {
        if crate::ortlib::environment().is_err() {
            return;
        }
        let mut pool = Pool::default();
        let tensor = Arc::new(Tensor::new(vec![2, 3], Data::zeros(DType::F32, 6)).expect("shape"));
        let held = Held::new(tensor.clone());
        held.view().expect("view");
        pool.give(held);
        assert!(
            pool.take(DType::F32, &[2, 3]).is_none(),
            "shared buffer kept"
        );
        drop(tensor);
        let held = Held::new(Arc::new(
            Tensor::new(vec![2, 3], Data::zeros(DType::F32, 6)).expect("shape"),
        ));
        held.view().expect("view");
        pool.give(held);
        assert!(pool.take(DType::F32, &[3, 2]).is_none(), "other shape");
        assert!(pool.take(DType::I64, &[2, 3]).is_none(), "other dtype");
        let preset = pool.take(DType::F32, &[2, 3]).expect("kept");
        assert_eq!(preset.tensor().shape, vec![2, 3]);
        assert!(pool.take(DType::F32, &[2, 3]).is_none(), "taken once");
    }

    fn viewed(shape: Vec<usize>, data: Data) -> std::rc::Rc<Held> {
        let held = Held::new(Arc::new(Tensor::new(shape, data).expect("shape")));
        held.view().expect("view");
        held
    }

    #[test]
    fn a_parked_value_comes_back_only_for_the_same_bits_or_its_slot() {
        if crate::ortlib::environment().is_err() {
            return;
        }
        let mut pool = Pool::default();
        pool.park(3, viewed(vec![2], Data::F32(vec![0.0, 1.5])));
        let same = |v: Vec<f32>| Arc::new(Tensor::new(vec![2], Data::F32(v)).expect("shape"));
        assert!(
            pool.same_as_parked(2, &same(vec![0.0, 1.5])).is_none(),
            "other slot"
        );
        assert!(
            pool.same_as_parked(3, &same(vec![-0.0, 1.5])).is_none(),
            "-0.0 is not 0.0"
        );
        let back = pool
            .same_as_parked(3, &same(vec![0.0, 1.5]))
            .expect("same bits");
        assert_eq!(
            back.host().expect("a host value").data,
            Data::F32(vec![0.0, 1.5])
        );
        assert!(
            pool.same_as_parked(3, &same(vec![0.0, 1.5])).is_none(),
            "taken once"
        );
        // An output of the slot takes it as its buffer; another dtype does not.
        pool.park(4, viewed(vec![2, 2], Data::I64(vec![1, 2, 3, 4])));
        assert!(pool.take_for(4, DType::F32, &[2, 2], UNKNOWN).is_none());
        let buffer = pool
            .take_for(4, DType::I64, &[2, 2], UNKNOWN)
            .expect("parked");
        assert_eq!(buffer.tensor().shape, vec![2, 2]);
        // Large inputs are not compared.
        let big = vec![0.0f32; 2048];
        pool.park(5, viewed(vec![2048], Data::F32(big.clone())));
        let big = Arc::new(Tensor::new(vec![2048], Data::F32(big)).expect("shape"));
        assert!(pool.same_as_parked(5, &big).is_none());
        // A value someone else holds is not parked.
        let shared = viewed(vec![1], Data::I64(vec![7]));
        pool.park(6, shared.clone());
        let seven = Arc::new(Tensor::new(vec![1], Data::I64(vec![7])).expect("shape"));
        assert!(pool.same_as_parked(6, &seven).is_none());
        drop(shared);
    }

    #[test]
    fn a_shared_input_comes_back_only_for_the_same_tensor() {
        if crate::ortlib::environment().is_err() {
            return;
        }
        let mut pool = Pool::default();
        let big = Arc::new(Tensor::new(vec![2048], Data::F32(vec![0.5; 2048])).expect("shape"));
        pool.park_input(1, viewed_shared(&big));
        let copy = Arc::new((*big).clone());
        assert!(
            pool.same_as_parked(1, &copy).is_none(),
            "a copy, too large to compare"
        );
        pool.park_input(1, viewed_shared(&big));
        assert!(pool.same_as_parked(2, &big).is_none(), "other slot");
        let back = pool.same_as_parked(1, &big).expect("the same tensor");
        assert!(Arc::ptr_eq(back.host().expect("a host value"), &big));
        assert!(back.view().is_ok());
        assert!(pool.same_as_parked(1, &big).is_none(), "taken once");
        // Nor is it a buffer for outputs: the caller may read it.
        pool.park_input(1, back);
        assert!(pool.take_for(1, DType::F32, &[2048], UNKNOWN).is_none());
        assert!(pool.take(DType::F32, &[2048]).is_none());
    }

    #[test]
    fn a_value_is_told_by_its_number_when_both_are_known() {
        let mut ids = crate::predict::ShapeIds::default();
        let held = Held::new(Arc::new(
            Tensor::new(vec![2, 3], Data::zeros(DType::F32, 6)).expect("shape"),
        ));
        let (same, other) = (ids.of(DType::F32, &[2, 3]), ids.of(DType::F32, &[3, 2]));
        assert!(
            held.is(DType::F32, &[2, 3], same),
            "not numbered yet: by shape"
        );
        assert!(!held.is(DType::I64, &[2, 3], UNKNOWN));
        assert_eq!(held.shape_id(&mut ids), same);
        assert!(held.is(DType::F32, &[2, 3], same));
        assert!(!held.is(DType::F32, &[3, 2], other));
        assert!(
            held.is(DType::F32, &[2, 3], UNKNOWN),
            "no number asked: by shape"
        );
    }

    fn viewed_shared(tensor: &Arc<Tensor>) -> std::rc::Rc<Held> {
        let held = Held::new(tensor.clone());
        held.view().expect("view");
        held
    }
}
