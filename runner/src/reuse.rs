//! Re-running only what changed: the outputs of earlier invoke calls, keyed
//! by the component (its model bytes) and a content hash of the exact
//! inputs. A call whose component and inputs equal a stored call's takes
//! the stored outputs instead of running; equality is checked element by
//! element, so a hash collision can never return a wrong value. Components
//! with random operators are never reused. The cache keeps only what the
//! latest run used or produced, within a byte budget.

use crate::fastmap::FastMap;
use crate::tensor::{Data, Tensor};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

/// Default memory for stored outputs.
pub const DEFAULT_REUSE_BYTES: usize = 512 << 20;

struct Entry {
    component: u64,
    inputs: Vec<(String, Arc<Tensor>)>,
    outputs: Vec<(String, Arc<Tensor>)>,
    bytes: usize,
    generation: u64,
}

/// Stored invoke results, kept by the caller between runs (the studio's
/// run worker keeps one, emptied when it loads a different package).
pub struct ReuseCache {
    entries: FastMap<u64, Vec<Entry>>,
    bytes: usize,
    budget: usize,
    generation: u64,
    hasher: foldhash::fast::FixedState,
}

impl Default for ReuseCache {
    fn default() -> Self {
        Self::new(DEFAULT_REUSE_BYTES)
    }
}

impl std::fmt::Debug for ReuseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReuseCache")
            .field("calls", &self.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

fn tensor_bytes(tensor: &Tensor) -> usize {
    tensor.numel() * tensor.dtype().size()
}

fn hash_data(data: &Data, state: &mut impl Hasher) {
    match data {
        Data::F32(v) => v.iter().for_each(|x| state.write_u32(x.to_bits())),
        Data::F64(v) => v.iter().for_each(|x| state.write_u64(x.to_bits())),
        Data::F16(v) => v.iter().for_each(|x| state.write_u16(x.to_bits())),
        Data::Bf16(v) => v.iter().for_each(|x| state.write_u16(x.to_bits())),
        Data::I8(v) => v.hash(state),
        Data::I16(v) => v.hash(state),
        Data::I32(v) => v.hash(state),
        Data::I64(v) => v.hash(state),
        Data::U8(v) => state.write(v),
        Data::U16(v) => v.hash(state),
        Data::U32(v) => v.hash(state),
        Data::U64(v) => v.hash(state),
        Data::Bool(v) => v.hash(state),
    }
}

impl ReuseCache {
    /// An empty cache that stores at most `budget` bytes of outputs.
    pub fn new(budget: usize) -> Self {
        Self {
            entries: FastMap::default(),
            bytes: 0,
            budget,
            generation: 0,
            hasher: foldhash::fast::FixedState::with_seed(0x5eed),
        }
    }

    /// Stored calls.
    pub fn len(&self) -> usize {
        self.entries.values().map(Vec::len).sum()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes of stored outputs.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Forgets everything (the package or its components changed).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    /// The lookup key of a call: component fingerprint, then each input's
    /// port, dtype, shape and elements.
    pub(crate) fn key(&self, component: u64, inputs: &[(&str, Arc<Tensor>)]) -> u64 {
        let mut state = self.hasher.build_hasher();
        state.write_u64(component);
        for (port, tensor) in inputs {
            port.hash(&mut state);
            state.write_u8(tensor.dtype() as u8);
            tensor.shape.hash(&mut state);
            hash_data(&tensor.data, &mut state);
        }
        state.finish()
    }

    /// Starts a run: entries not touched by it are dropped at its end.
    pub(crate) fn begin_run(&mut self) {
        self.generation += 1;
    }

    /// Drops what the finished run neither used nor produced.
    pub(crate) fn end_run(&mut self) {
        let generation = self.generation;
        let mut freed = 0;
        self.entries.retain(|_, list| {
            list.retain(|e| {
                let keep = e.generation == generation;
                if !keep {
                    freed += e.bytes;
                }
                keep
            });
            !list.is_empty()
        });
        self.bytes -= freed;
    }

    /// The stored outputs of an equal call, with every port in `wanted`.
    pub(crate) fn take(
        &mut self,
        key: u64,
        component: u64,
        inputs: &[(&str, Arc<Tensor>)],
        wanted: &[&str],
    ) -> Option<Vec<(String, Arc<Tensor>)>> {
        let generation = self.generation;
        let entry = self.entries.get_mut(&key)?.iter_mut().find(|e| {
            e.component == component
                && e.inputs.len() == inputs.len()
                && e.inputs
                    .iter()
                    .zip(inputs)
                    .all(|((p, a), (q, b))| p == q && (Arc::ptr_eq(a, b) || a == b))
        })?;
        let outputs = wanted
            .iter()
            .map(|w| {
                entry
                    .outputs
                    .iter()
                    .find(|(p, _)| p == w)
                    .map(|(p, t)| (p.clone(), t.clone()))
            })
            .collect::<Option<Vec<_>>>()?;
        entry.generation = generation;
        Some(outputs)
    }

    /// Stores a call's outputs, unless that would pass the budget.
    pub(crate) fn store(
        &mut self,
        key: u64,
        component: u64,
        inputs: &[(&str, Arc<Tensor>)],
        outputs: &[(String, Arc<Tensor>)],
    ) {
        let bytes = outputs.iter().map(|(_, t)| tensor_bytes(t)).sum::<usize>()
            + inputs.iter().map(|(_, t)| tensor_bytes(t)).sum::<usize>();
        if self.bytes + bytes > self.budget {
            return;
        }
        self.bytes += bytes;
        self.entries.entry(key).or_default().push(Entry {
            component,
            inputs: inputs
                .iter()
                .map(|(p, t)| (p.to_string(), t.clone()))
                .collect(),
            outputs: outputs.to_vec(),
            bytes,
            generation: self.generation,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(values: Vec<f32>) -> Arc<Tensor> {
        Arc::new(Tensor::new(vec![values.len()], Data::F32(values)).unwrap())
    }

    #[test]
    fn equal_inputs_hit_changed_inputs_miss_and_unused_entries_go() {
        let mut cache = ReuseCache::new(1 << 20);
        cache.begin_run();
        let a = [("x", t(vec![1.0, 2.0]))];
        let key = cache.key(7, &a);
        assert!(cache.take(key, 7, &a, &["y"]).is_none());
        cache.store(key, 7, &a, &[("y".into(), t(vec![3.0]))]);
        cache.end_run();
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.bytes(), 12);

        cache.begin_run();
        let same = [("x", t(vec![1.0, 2.0]))];
        let hit = cache
            .take(cache.key(7, &same), 7, &same, &["y"])
            .expect("hit");
        assert_eq!(hit[0].1.data, Data::F32(vec![3.0]));
        assert!(
            cache.take(key, 8, &same, &["y"]).is_none(),
            "other component"
        );
        assert!(cache.take(key, 7, &same, &["z"]).is_none(), "other output");
        let changed = [("x", t(vec![1.0, 2.5]))];
        assert_ne!(cache.key(7, &changed), key);
        // Same hash bucket, different values: refused by the equality check.
        assert!(cache.take(key, 7, &changed, &["y"]).is_none());
        cache.end_run();
        assert_eq!(cache.len(), 1, "the hit keeps the entry");

        cache.begin_run();
        cache.end_run();
        assert!(cache.is_empty(), "a run that did not use it drops it");
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn the_budget_stops_storing() {
        let mut cache = ReuseCache::new(8);
        cache.begin_run();
        let a = [("x", t(vec![1.0, 2.0]))];
        cache.store(cache.key(1, &a), 1, &a, &[("y".into(), t(vec![3.0]))]);
        assert!(cache.is_empty(), "12 bytes is over the 8-byte budget");
    }
}
