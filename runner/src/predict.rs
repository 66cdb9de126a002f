//! Output shapes predicted from input dtypes and shapes. The output shapes
//! of most graphs follow from their inputs' shapes alone, so a step called
//! with inputs like those of an earlier call (the same call in the next
//! run, every iteration of a steady loop) is handed buffers of the shapes
//! it produced then, and ONNX Runtime writes its outputs straight into
//! them. A step whose outputs once took other shapes for the same inputs
//! (shapes that follow from input values) is never predicted again.
//!
//! Only calls whose inputs and outputs passed their port checks are
//! remembered. Those checks look at dtypes and shapes alone, so a call
//! whose inputs match a remembered one passes the input checks, and
//! outputs of the predicted shapes pass the output checks.

use crate::exec::FastMap;
use crate::tensor::DType;
use std::hash::{BuildHasher, Hasher};

/// Calls remembered per step besides the last (a decoder loop's calls
/// differ in shape on every iteration; past this, no more are added).
const REMEMBERED: usize = 1024;

/// The inputs of one call, flattened as dtype, rank, then extents per input.
type Key = Vec<usize>;

/// One input as the memory sees it: its dtype and shape.
pub(crate) type Seen<'a> = (DType, &'a [usize]);

/// One remembered call: its inputs and the output shapes they gave.
type Call = (Key, Vec<Vec<usize>>);

/// What one step's calls produced, by their inputs' dtypes and shapes.
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

/// Whether `key` spells `inputs`.
#[inline]
fn spells<'a>(key: &[usize], inputs: impl IntoIterator<Item = Seen<'a>>) -> bool {
    let mut rest = key;
    for (dtype, shape) in inputs {
        let Some(([kind, rank], tail)) = rest.split_first_chunk::<2>() else {
            return false;
        };
        if *kind != dtype as usize || *rank != shape.len() {
            return false;
        }
        let Some((dims, tail)) = tail.split_at_checked(shape.len()) else {
            return false;
        };
        // Short, so compared in place rather than by `memcmp`.
        if dims.iter().zip(shape).any(|(a, b)| a != b) {
            return false;
        }
        rest = tail;
    }
    rest.is_empty()
}

/// The entries of the key of `inputs`, in order.
fn parts<'a>(inputs: impl IntoIterator<Item = Seen<'a>>) -> impl Iterator<Item = usize> {
    inputs.into_iter().flat_map(|(dtype, shape)| {
        [dtype as usize, shape.len()]
            .into_iter()
            .chain(shape.iter().copied())
    })
}

/// The hash of a key, from its entries (so a lookup builds no key).
fn hash(parts: impl Iterator<Item = usize>) -> u64 {
    let mut hasher = foldhash::fast::FixedState::default().build_hasher();
    for part in parts {
        hasher.write_usize(part);
    }
    hasher.finish()
}

impl ShapeMemo {
    /// The output shapes of an earlier call whose inputs had the same
    /// dtypes and shapes (which therefore pass their checks).
    #[inline]
    pub(crate) fn predict<'a, I>(&self, inputs: I) -> Option<&[Vec<usize>]>
    where
        I: IntoIterator<Item = Seen<'a>> + Clone,
    {
        // A step that stopped being predicted keeps no calls.
        match &self.last {
            Some((key, outputs)) if spells(key, inputs.clone()) => Some(outputs),
            _ => self.predict_earlier(inputs),
        }
    }

    /// [`Self::predict`] among the calls before the last.
    fn predict_earlier<'a, I>(&self, inputs: I) -> Option<&[Vec<usize>]>
    where
        I: IntoIterator<Item = Seen<'a>> + Clone,
    {
        if self.earlier.is_empty() {
            return None;
        }
        self.earlier
            .get(&hash(parts(inputs.clone())))?
            .iter()
            .find(|(key, _)| spells(key, inputs.clone()))
            .map(|(_, outputs)| outputs.as_slice())
    }

    /// Remembers what a call with these inputs produced (both passed their
    /// checks); other output shapes than before for the same inputs end all
    /// predictions.
    pub(crate) fn remember<'a, I>(&mut self, inputs: I, outputs: &[&[usize]])
    where
        I: IntoIterator<Item = Seen<'a>> + Clone,
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
        let call = (
            parts(inputs).collect(),
            outputs.iter().map(|s| s.to_vec()).collect(),
        );
        let Some(previous) = self.last.replace(call) else {
            return;
        };
        let bucket = self
            .earlier
            .entry(hash(previous.0.iter().copied()))
            .or_default();
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
    use super::{Seen, ShapeMemo};
    use crate::tensor::DType;

    fn call<'a>(shapes: &'a [&'a [usize]]) -> impl Iterator<Item = Seen<'a>> + Clone {
        shapes.iter().map(|s| (DType::F32, *s))
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
        let other_dtype = [(DType::F32, &[1, 4][..]), (DType::I64, &[][..])];
        assert!(
            memo.predict(other_dtype.iter().copied()).is_none(),
            "another dtype"
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
