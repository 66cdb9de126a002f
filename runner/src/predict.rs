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
//!
//! Inputs are compared by number: each dtype-and-shape pair a runner meets
//! is numbered once ([`ShapeIds`]) and a value keeps its number, so telling
//! whether a call's inputs are like the last call's reads one number per
//! input from the value in hand.

use crate::fastmap::FastMap;
use crate::tensor::DType;
use smallvec::SmallVec;

/// Calls remembered per step besides the last (a decoder loop's calls
/// differ in shape on every iteration; past this, no more are added).
const REMEMBERED: usize = 1024;

/// Dtype-and-shape pairs numbered per runner; past this, new pairs get no
/// number (and calls with them are not predicted).
const MOST_IDS: usize = 1 << 16;

/// The number of a dtype-and-shape pair; [`UNKNOWN`] for none.
pub(crate) type ShapeId = u32;

/// The number of no pair: a value not numbered yet, or past the table.
pub(crate) const UNKNOWN: ShapeId = 0;

/// Numbers for the dtype-and-shape pairs a runner meets.
#[derive(Debug, Default)]
pub(crate) struct ShapeIds {
    /// Dtype then extents -> number (from 1).
    ids: FastMap<Vec<usize>, ShapeId>,
}

impl ShapeIds {
    /// The number of `dtype` and `shape`, made when new; [`UNKNOWN`] when
    /// the table is full.
    pub(crate) fn of(&mut self, dtype: DType, shape: &[usize]) -> ShapeId {
        let mut key: SmallVec<[usize; 8]> = SmallVec::with_capacity(shape.len() + 1);
        key.push(dtype as usize);
        key.extend_from_slice(shape);
        if let Some(id) = self.ids.get(key.as_slice()) {
            return *id;
        }
        if self.ids.len() >= MOST_IDS {
            return UNKNOWN;
        }
        let id = ShapeId::try_from(self.ids.len() + 1).unwrap_or(UNKNOWN);
        self.ids.insert(key.to_vec(), id);
        id
    }
}

/// The numbers of one call's inputs, in port order.
pub(crate) type Ids = SmallVec<[ShapeId; 8]>;

/// The outputs a remembered call gave: their shapes, and the numbers of
/// their dtypes and shapes (by which a buffer is told to fit).
#[derive(Debug)]
pub(crate) struct Outputs {
    pub(crate) shapes: Vec<Vec<usize>>,
    pub(crate) ids: Ids,
}

/// What one step's calls produced, by their inputs' numbers.
#[derive(Debug, Default)]
pub(crate) struct ShapeMemo {
    /// The last call, looked at first and with no hashing.
    last: Option<(Ids, Outputs)>,
    /// Earlier calls.
    earlier: FastMap<Ids, Outputs>,
    /// Set once the same inputs gave other output shapes.
    volatile: bool,
}

impl ShapeMemo {
    /// The output shapes of an earlier call whose inputs had the same
    /// dtypes and shapes (which therefore pass their checks).
    #[inline]
    pub(crate) fn predict(&self, inputs: &[ShapeId]) -> Option<&Outputs> {
        // A step that stopped being predicted keeps no calls.
        match &self.last {
            Some((ids, outputs)) if ids.as_slice() == inputs && !inputs.contains(&UNKNOWN) => {
                Some(outputs)
            }
            _ => self.predict_earlier(inputs),
        }
    }

    /// The last call remembered: its inputs' numbers and its outputs.
    #[inline]
    pub(crate) fn last(&self) -> Option<(&[ShapeId], &Outputs)> {
        self.last
            .as_ref()
            .map(|(ids, outputs)| (ids.as_slice(), outputs))
    }

    /// [`Self::predict`] among the calls before the last.
    fn predict_earlier(&self, inputs: &[ShapeId]) -> Option<&Outputs> {
        if self.earlier.is_empty() || inputs.contains(&UNKNOWN) {
            return None;
        }
        self.earlier.get(inputs)
    }

    /// Remembers what a call with these inputs produced (both passed their
    /// checks): the outputs' shapes and their numbers. Other output shapes
    /// than before for the same inputs end all predictions.
    pub(crate) fn remember(&mut self, inputs: &[ShapeId], outputs: &[&[usize]], ids: &[ShapeId]) {
        if let Some(known) = self.predict(inputs) {
            if !known
                .shapes
                .iter()
                .map(Vec::as_slice)
                .eq(outputs.iter().copied())
            {
                self.forget();
            }
            return;
        }
        if self.volatile || inputs.contains(&UNKNOWN) {
            return;
        }
        let call = (
            Ids::from_slice(inputs),
            Outputs {
                shapes: outputs.iter().map(|s| s.to_vec()).collect(),
                ids: Ids::from_slice(ids),
            },
        );
        let Some((ids, shapes)) = self.last.replace(call) else {
            return;
        };
        if self.earlier.len() < REMEMBERED {
            self.earlier.entry(ids).or_insert(shapes);
        }
    }

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
    use super::{ShapeIds, ShapeMemo, UNKNOWN};
    use crate::tensor::DType;

    /// The numbers of float inputs of `shapes`.
    fn call(ids: &mut ShapeIds, shapes: &[&[usize]]) -> Vec<u32> {
        shapes.iter().map(|s| ids.of(DType::F32, s)).collect()
    }

    #[test]
    fn pairs_are_numbered_once_and_apart() {
        let mut ids = ShapeIds::default();
        let a = ids.of(DType::F32, &[1, 4]);
        assert_ne!(a, UNKNOWN);
        assert_eq!(ids.of(DType::F32, &[1, 4]), a);
        assert_ne!(ids.of(DType::I64, &[1, 4]), a, "another dtype");
        assert_ne!(ids.of(DType::F32, &[4, 1]), a, "another shape");
        assert_ne!(ids.of(DType::F32, &[1, 4, 1]), a, "another rank");
        assert_ne!(ids.of(DType::F32, &[]), ids.of(DType::F32, &[1]));
    }

    #[test]
    fn predicts_the_outputs_of_seen_inputs() {
        let mut ids = ShapeIds::default();
        let mut memo = ShapeMemo::default();
        let first = call(&mut ids, &[&[1, 4], &[]]);
        assert!(memo.predict(&first).is_none());
        // A growing cache: each iteration's input is one longer.
        for len in 4..8 {
            let inputs = call(&mut ids, &[&[1, len], &[]]);
            memo.remember(&inputs, &[&[1, len + 1], &[2]], &[]);
        }
        for len in 4..8 {
            let inputs = call(&mut ids, &[&[1, len], &[]]);
            let predicted = memo.predict(&inputs).expect("seen");
            assert_eq!(predicted.shapes, [vec![1, len + 1], vec![2]]);
        }
        assert!(
            memo.predict(&call(&mut ids, &[&[1, 8], &[]])).is_none(),
            "not seen"
        );
        assert!(
            memo.predict(&call(&mut ids, &[&[1, 4]])).is_none(),
            "fewer inputs"
        );
        let other_dtype = [ids.of(DType::F32, &[1, 4]), ids.of(DType::I64, &[])];
        assert!(memo.predict(&other_dtype).is_none(), "another dtype");
        assert!(memo.predict(&[UNKNOWN, UNKNOWN]).is_none(), "not numbered");
    }

    #[test]
    fn value_dependent_shapes_end_the_predictions() {
        let mut ids = ShapeIds::default();
        let mut memo = ShapeMemo::default();
        let (one, two) = (call(&mut ids, &[&[1]]), call(&mut ids, &[&[2]]));
        memo.remember(&one, &[&[5]], &[]);
        memo.remember(&two, &[&[3]], &[]);
        assert!(memo.predict(&one).is_some());
        // Same input shape, another output shape: a schedule of `steps + 1`.
        memo.remember(&one, &[&[9]], &[]);
        assert!(memo.predict(&one).is_none());
        assert!(memo.predict(&two).is_none());
        memo.remember(&two, &[&[3]], &[]);
        assert!(memo.predict(&two).is_none(), "never again");
    }
}
