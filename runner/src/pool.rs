//! Output buffers kept for reuse. When a value nobody else holds is
//! replaced (a loop's next iteration) or its run ends, its buffer and
//! ONNX Runtime view wait here for the next output of the same dtype and
//! shape, so a steady loop allocates nothing and makes no new views.

use crate::ortcall::{Held, Preset};
use crate::tensor::DType;
use std::hash::BuildHasher;
use std::rc::Rc;

/// Bytes the pool may hold in all.
const BUDGET: usize = 64 << 20;
/// Buffers kept per dtype and shape.
const PER_SHAPE: usize = 4;

/// Free buffers by dtype and shape.
#[derive(Default)]
pub(crate) struct Pool {
    free: crate::exec::FastMap<u64, Vec<Preset>>,
    bytes: usize,
}

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

    /// Keeps the buffer of `held` if nobody else holds it and there is room.
    pub(crate) fn give(&mut self, held: Rc<Held>) {
        let Some(preset) = Held::into_preset(held) else {
            return;
        };
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
}
