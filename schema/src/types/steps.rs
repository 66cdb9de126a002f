//! The five step kinds of `pipeline.workflow.steps`.

use super::contract::TensorContract;
use crate::tagged_enum;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

tagged_enum! {
    /// One workflow step.
    pub enum Step {
        /// Ordered child steps.
        "sequence" => Sequence(SequenceStep),
        /// A component call.
        "invoke" => Invoke(InvokeStep),
        /// A pre-test loop.
        "loop" => Loop(LoopStep),
        /// A branch with phi outputs.
        "branch" => Branch(BranchStep),
        /// Publication of a value into a workflow output.
        "emit" => Emit(EmitStep),
    }
}

/// `kind: sequence`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceStep {
    /// Child steps, in order.
    pub steps: Vec<Step>,
}

/// `kind: invoke`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InvokeStep {
    /// Component name.
    pub component: String,
    /// Port -> existing SSA value.
    pub inputs: Option<IndexMap<String, String>>,
    /// Port -> new SSA value.
    pub outputs: Option<IndexMap<String, String>>,
}

/// How a loop decides to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Termination {
    Predicate,
    GenerationEos,
}

/// `iteration` of a loop: the zero-based induction value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopIteration {
    /// SSA name of the induction value.
    pub value: String,
    /// Its contract (int64, rank 0 or 1).
    pub contract: TensorContract,
}

/// One entry of `carried`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Carry {
    /// State cell carried by the loop.
    pub cell: String,
    /// Body value that becomes the cell's next value.
    pub next: String,
    /// Entry value overriding the cell's initializer.
    pub initial: Option<String>,
}

/// `kind: loop`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopStep {
    /// Runs once on entry, in the enclosing scope.
    pub setup: Option<Vec<Step>>,
    /// The body.
    pub steps: Vec<Step>,
    /// Bool value read before each iteration.
    pub continue_when: String,
    /// Integer-scalar value bounding the trip count.
    pub max_iterations: String,
    /// Carried state cells.
    pub carried: Option<Vec<Carry>>,
    /// Termination mode (default predicate).
    pub termination: Option<Termination>,
    /// Induction value.
    pub iteration: Option<LoopIteration>,
}

/// `outputs.<phi>` of a branch.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BranchOutput {
    /// Case key -> source value in that case.
    pub cases: IndexMap<String, String>,
    /// Source value in the default case.
    pub default: Option<String>,
}

/// `kind: branch`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BranchStep {
    /// Bool or integer scalar value selecting the case.
    pub predicate: String,
    /// Case key -> single step.
    pub cases: IndexMap<String, Step>,
    /// Step run when no case matches.
    pub default: Option<Box<Step>>,
    /// Phi outputs.
    pub outputs: Option<IndexMap<String, BranchOutput>>,
}

/// How an emit combines with earlier emits into the same output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum EmitMode {
    Replace,
    Append,
    Event,
}

/// `kind: emit`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmitStep {
    /// The SSA value published.
    pub value: String,
    /// The declared workflow output.
    pub output: String,
    /// Replace, append or event.
    pub mode: EmitMode,
    /// Integer value: prefix length to publish.
    pub valid_length: Option<String>,
    /// Bool value: guard.
    pub when: Option<String>,
    /// Growth axis (default: last axis).
    pub axis: Option<u64>,
}
