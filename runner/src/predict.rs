//! Output shapes predicted from input shapes. The output shapes of most
//! graphs follow from their input shapes alone, so a step called with
//! input shapes it has seen before (the same call in the next run, every
//! iteration of a steady loop) is handed buffers of the shapes it produced
//! then, and ONNX Runtime writes its outputs straight into them. A step
//! whose outputs once took other shapes for the same input shapes (shapes
//! that follow from input values) is never predicted again.

use crate::exec::FastMap;
use std::hash::{BuildHasher, Hash, Hasher};

/// Calls remembered per step besides the last (a decoder loop's calls
/// differ in shape on every iteration; past this, no more are added).
const REMEMBERED: usize = 1024;

/// The input shapes of one call, flattened as rank then extents per input.
type Key = Vec<usize>;

/// One remembered call: its input shapes and the output shapes they gave.
type Call = (Key, Vec<Vec<usize>>);

/// What one step's calls produced, by input shapes.
#[derive(Debug, Default)]
pub(crate) struct ShapeMemo {
    /// The last call, looked at first and with no hashing.
    last: Option<Call>,
    /// Earlier calls by the hash of their input shapes.
    earlier: FastMap<u64, Vec<Call>>,
    remembered: usize,
    /// Set once the same input shapes gave other output shapes.
    volatile: bool,
}

/// Whether `key` spells the shapes of `inputs`.
fn spells<'a>(key: &[usize], inputs: impl IntoIterator<Item = &'a [usize]>) -> bool {
    let mut at = 0;
    for shape in inputs {
        let rank = shape.len();
        if key.get(at) != Some(&rank) || key.get(at + 1..at + 1 + rank) != Some(shape) {
            return false;
        }
        at += 1 + rank;
    }
    at == key.len()
}

/// The shapes a key spells.
fn shapes(key: &[usize]) -> impl Iterator<Item = &[usize]> + Clone {
    let mut rest = key;
    std::iter::from_fn(move || {
        let (&rank, tail) = rest.split_first()?;
        let (shape, next) = tail.split_at(rank.min(tail.len()));
        rest = next;
        Some(shape)
    })
}

fn hash<'a>(inputs: impl IntoIterator<Item = &'a [usize]>) -> u64 {
    let mut hasher = foldhash::fast::FixedState::default().build_hasher();
    for shape in inputs {
        shape.hash(&mut hasher);
    }
    hasher.finish()
}

impl ShapeMemo {
    /// The output shapes of an earlier call with the same input shapes.
    pub(crate) fn predict<'a, I>(&self, inputs: I) -> Option<&[Vec<usize>]>
    where
        I: IntoIterator<Item = &'a [usize]> + Clone,
    {
        if self.volatile {
            return None;
        }
        if let Some((key, outputs)) = &self.last
            && spells(key, inputs.clone())
        {
            return Some(outputs);
        }
        if self.earlier.is_empty() {
            return None;
        }
        self.earlier
            .get(&hash(inputs.clone()))?
            .iter()
            .find(|(key, _)| spells(key, inputs.clone()))
            .map(|(_, outputs)| outputs.as_slice())
    }

    /// Remembers what a call with these input shapes produced; other output
    /// shapes than before for the same input shapes end all predictions.
    pub(crate) fn remember<'a, I>(&mut self, inputs: I, outputs: &[&[usize]])
    where
        I: IntoIterator<Item = &'a [usize]> + Clone,
    {
        if let Some(known) = self.predict(inputs.clone()) {
            if !known.iter().map(Vec::as_slice).eq(outputs.iter().copied()) {
                self.forget();
            }
            return;
        }
        if self.volatile {
            return;
        }
        let key: Key = inputs
            .into_iter()
            .flat_map(|shape| std::iter::once(shape.len()).chain(shape.iter().copied()))
            .collect();
        let call = (key, outputs.iter().map(|s| s.to_vec()).collect());
        let Some(previous) = self.last.replace(call) else {
            return;
        };
        let bucket = self.earlier.entry(hash(shapes(&previous.0))).or_default();
        if bucket.iter().any(|(key, _)| *key == previous.0) || self.remembered >= REMEMBERED {
            return;
        }
        self.remembered += 1;
        bucket.push(previous);
    }
}

impl ShapeMemo {
    /// Ends all predictions for the step (its output shapes do not follow
    /// from its input shapes, or ONNX Runtime refused a buffer).
    pub(crate) fn forget(&mut self) {
        self.volatile = true;
        self.last = None;
        self.earlier.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::ShapeMemo;

    fn call<'a>(shapes: &'a [&'a [usize]]) -> impl Iterator<Item = &'a [usize]> + Clone {
        shapes.iter().copied()
    }

    #[test]
    fn predicts_the_outputs_of_seen_input_shapes() {
        let mut memo = ShapeMemo::default();
        assert!(memo.predict(call(&[&[1, 4], &[]])).is_none());
        // A growing cache: each iteration's input is one longer.
        for len in 4..8 {
            memo.remember(call(&[&[1, len], &[]]), &[&[1, len + 1], &[2]]);
        }
        for len in 4..8 {
            let predicted = memo.predict(call(&[&[1, len], &[]])).expect("seen");
            assert_eq!(predicted, &[vec![1, len + 1], vec![2]]);
        }
        assert!(memo.predict(call(&[&[1, 8], &[]])).is_none(), "not seen");
        assert!(memo.predict(call(&[&[1, 4]])).is_none(), "fewer inputs");
        assert!(
            memo.predict(call(&[&[1, 4], &[0]])).is_none(),
            "another rank"
        );
    }

    #[test]
    fn value_dependent_shapes_end_the_predictions() {
        let mut memo = ShapeMemo::default();
        memo.remember(call(&[&[1]]), &[&[5]]);
        memo.remember(call(&[&[2]]), &[&[3]]);
        assert!(memo.predict(call(&[&[1]])).is_some());
        // Same input shape, another output shape: a schedule of `steps + 1`.
        memo.remember(call(&[&[1]]), &[&[9]]);
        assert!(memo.predict(call(&[&[1]])).is_none());
        assert!(memo.predict(call(&[&[2]])).is_none());
        memo.remember(call(&[&[2]]), &[&[3]]);
        assert!(memo.predict(call(&[&[2]])).is_none(), "never again");
    }
}
