//! What a run reports while it goes: for the GUI's progress, timing badges
//! and previews, and for the CLI's trace.

use crate::tensor::Tensor;
use std::sync::Arc;
use std::time::Duration;
use wfstudio_schema::types::steps::EmitMode;

/// One event of a run, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The run began.
    Started,
    /// An invoke is about to run.
    InvokeStarted {
        /// Document path of the invoke step.
        path: Arc<str>,
        /// Component name.
        component: Arc<str>,
    },
    /// An invoke finished.
    InvokeFinished {
        /// Document path of the invoke step.
        path: Arc<str>,
        /// Component name.
        component: Arc<str>,
        /// Wall time of the step (conversion, checks and ONNX Runtime).
        wall: Duration,
        /// Time inside ONNX Runtime.
        ort: Duration,
        /// Produced values and their shapes.
        outputs: Vec<(Arc<str>, Vec<usize>)>,
        /// Whether the outputs were reused from an earlier run.
        reused: bool,
    },
    /// A loop starts iteration `index` (zero-based) of at most `limit`.
    LoopIteration {
        /// Document path of the loop step.
        path: Arc<str>,
        /// Zero-based iteration.
        index: usize,
        /// `max_iterations`.
        limit: usize,
    },
    /// A value was published to an output: what a streaming view (text as
    /// it is generated) builds on.
    Emitted {
        /// Output key (`image`, `tokens.row.0`).
        key: String,
        /// The published piece, before it is appended to earlier ones.
        chunk: Arc<Tensor>,
        /// Whether it replaces the output, extends it along its axis, or is
        /// one more event (stored as `key.N`).
        mode: EmitMode,
        /// Shape of the output after this publish.
        shape: Vec<usize>,
    },
    /// The run finished.
    Finished {
        /// Wall time of the whole run.
        wall: Duration,
    },
    /// The run failed.
    Failed {
        /// The error, naming the step and component.
        message: String,
    },
    /// The run was cancelled between invokes.
    Cancelled,
}
