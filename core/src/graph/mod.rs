//! The node-graph view of a workflow: inputs, state cells, invokes with
//! typed ports, emits and outputs as nodes; loops and branch cases as nested
//! frames; SSA values as wires (carried state as back-edges); execution
//! order as step numbers. Built from the typed document, no GUI involved;
//! [`layout`] places it without overlaps.

pub mod build;
pub mod layout;

pub use build::build;
pub use layout::{Layout, Rect, layout};

use wfstudio_schema::DocPath;

/// Index of a node in [`ViewGraph::nodes`].
pub type NodeId = usize;
/// Index of a frame in [`ViewGraph::frames`].
pub type FrameId = usize;

/// What a node stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A workflow input (or a presence value).
    Input,
    /// A state cell.
    State,
    /// An invoke of a component.
    Invoke {
        /// The component.
        component: String,
    },
    /// An emit into an output.
    Emit,
    /// A loop's control: reads `continue_when` and `max_iterations`, and
    /// makes the iteration value (when the loop declares one).
    LoopControl,
    /// A branch's selector: reads the predicate.
    BranchSelect,
    /// A workflow output.
    Output,
}

/// A typed port of a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port {
    /// Port (or value) name.
    pub name: String,
    /// `float32 [batch, 4]`, when the contract is known.
    pub contract: Option<String>,
    /// The SSA value bound here (read by an input port, defined by an
    /// output port); `None` for an unbound component port.
    pub value: Option<String>,
}

/// One node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// What it is.
    pub kind: NodeKind,
    /// Its title.
    pub label: String,
    /// Document path of what it shows (the step, input, cell or output).
    pub path: DocPath,
    /// Input ports.
    pub inputs: Vec<Port>,
    /// Output ports.
    pub outputs: Vec<Port>,
    /// The innermost frame holding it.
    pub frame: Option<FrameId>,
    /// Execution order (1-based) for steps.
    pub step: Option<usize>,
}

/// A wire: an SSA value from a producer's output port to a consumer's input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// Producer node and output port index.
    pub from: (NodeId, usize),
    /// Consumer node and input port index.
    pub to: (NodeId, usize),
    /// The SSA value.
    pub value: String,
    /// Element type, for colouring.
    pub dtype: Option<String>,
    /// A loop-carried `next` value flowing back to its cell.
    pub back_edge: bool,
}

/// What a frame groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// A loop (its setup, condition and body inside).
    Loop,
    /// The `setup` steps of a loop (run once on entry).
    Setup,
    /// The condition of a loop (its control node).
    Condition,
    /// The body steps of a loop.
    Body,
    /// One case (or the default) of a branch.
    Case {
        /// The case key, or `default`.
        key: String,
    },
    /// A branch (its cases inside, one lane each).
    Branch,
}

/// A nested frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// What it groups.
    pub kind: FrameKind,
    /// Its title.
    pub label: String,
    /// Document path of the step.
    pub path: DocPath,
    /// The enclosing frame.
    pub parent: Option<FrameId>,
}

/// The whole view.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewGraph {
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Wires.
    pub edges: Vec<Edge>,
    /// Frames.
    pub frames: Vec<Frame>,
}
