//! What a run gives back: its outputs, the invoke steps that ran and the
//! timing of each call, kept intermediate values, loop iteration counts.

use crate::clock::{Span, Tick};
use crate::tensor::Tensor;
use crate::transfers::Transfers;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// An invoke step that ran: where it is and what it calls (shared by all
/// of its calls, see [`RunOutput::steps`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvokedStep {
    /// Document path of the invoke step.
    pub path: Arc<str>,
    /// Component name.
    pub component: Arc<str>,
}

/// Timing of one invoke call.
#[derive(Clone, Debug, PartialEq)]
pub struct InvokeTiming {
    /// The step that made the call: its index in [`RunOutput::steps`]
    /// (an index rather than the names, so timing a call copies nothing).
    pub step: usize,
    /// Wall time, from the start of the call until its outputs were in hand
    /// (binding them to their values after is the run's time). A steady
    /// call (one like its step's last, which checks nothing) starts as it
    /// enters ONNX Runtime; any other starts before its checks.
    pub wall: Duration,
    /// Time inside ONNX Runtime.
    pub ort: Duration,
    /// Start offset from the beginning of the run.
    pub start: Duration,
    /// Whether the outputs were reused from an earlier run instead of run.
    pub reused: bool,
}

/// An invoke call as timed on the hot path (clock readings), turned into
/// an [`InvokeTiming`] when the run ends.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TimedCall {
    /// Index of the step in [`RunOutput::steps`].
    pub(crate) step: usize,
    /// When the call began.
    pub(crate) start: Tick,
    /// When the outputs were in hand.
    pub(crate) in_hand: Tick,
    /// Inside ONNX Runtime (empty for calls that did not run on it).
    pub(crate) ort: Span,
    /// Whether the results were reused.
    pub(crate) reused: bool,
}

impl TimedCall {
    /// The call's timing, its start counted from `run_start`.
    pub(crate) fn timing(self, run_start: Tick) -> InvokeTiming {
        InvokeTiming {
            step: self.step,
            wall: self.in_hand.since(self.start),
            ort: self.ort.duration(),
            start: self.start.since(run_start),
            reused: self.reused,
        }
    }
}

/// A value kept for inspection.
#[derive(Clone, Debug, PartialEq)]
pub struct KeptValue {
    /// SSA value name.
    pub name: String,
    /// Document path of the step that produced it.
    pub path: String,
    /// Loop iterations enclosing the step (outermost first).
    pub iterations: Vec<usize>,
    /// The value.
    pub tensor: Arc<Tensor>,
}

/// Everything a finished run produced.
#[derive(Clone, Debug, Default)]
pub struct RunOutput {
    /// Output values by key (`image`, `tokens.row.0`, `audio.2`).
    pub outputs: BTreeMap<String, Tensor>,
    /// Every invoke call, in order.
    pub invokes: Vec<InvokeTiming>,
    /// The invoke steps the calls name (see [`InvokeTiming::step`]).
    pub steps: Arc<Vec<InvokedStep>>,
    /// Loop path -> iterations run.
    pub loop_iterations: BTreeMap<String, usize>,
    /// Wall time of the run.
    pub wall: Duration,
    /// Values kept for inspection (when asked for), within the budget.
    pub kept: Vec<KeptValue>,
    /// Whether the budget cut the kept values short.
    pub kept_truncated: bool,
    /// Copies between host and device memory (none on the CPU).
    pub transfers: Transfers,
}

impl RunOutput {
    /// Sum of the time spent inside ONNX Runtime.
    pub fn ort_time(&self) -> Duration {
        self.invokes.iter().map(|i| i.ort).sum()
    }

    /// The step that made `call`.
    pub fn step_of(&self, call: &InvokeTiming) -> Option<&InvokedStep> {
        self.steps.get(call.step)
    }

    /// Every invoke call with its step, in order.
    pub fn calls(&self) -> impl Iterator<Item = (&InvokedStep, &InvokeTiming)> {
        self.invokes
            .iter()
            .filter_map(|call| Some((self.step_of(call)?, call)))
    }
}
