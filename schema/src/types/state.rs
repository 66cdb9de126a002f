//! State cells (`pipeline.workflow.state`) and the serving / state-service
//! contract (`pipeline.workflow.serving`).

use super::contract::TensorContract;
use crate::tagged_enum;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// Semantic (default) or advisory (droppable) state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum StateClass {
    Semantic,
    Advisory,
}

/// Lifetime of a state cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum StateScope {
    Invocation,
    Session,
}

/// Who owns a cell's storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum StateManagement {
    Workflow,
    Runtime,
    External,
}

/// When runtime-managed state is released.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum ReleaseBoundary {
    Invocation,
    Session,
    Row,
}

/// Fields of a growing recurrence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Growing {
    /// The growing axis.
    pub axis: u64,
    /// Integer-scalar value: growth per iteration.
    pub increment: String,
    /// Integer-scalar value: the bound.
    pub max: String,
}

/// Fields of a bounded recurrence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bounded {
    /// The varying axis.
    pub axis: u64,
    /// Integer-scalar value: the bound.
    pub max: String,
}

tagged_enum! {
    /// How a carried tensor's shape may change per iteration.
    pub enum Recurrence {
        /// The shape never changes.
        "invariant" => Invariant,
        /// `axis` grows by `increment` per iteration up to `max`.
        "growing" => Growing(Growing),
        /// `axis` varies but stays within `max`.
        "bounded" => Bounded(Bounded),
    }
}

impl Recurrence {
    /// The axis whose extent may change, if any.
    pub fn varying_axis(&self) -> Option<u64> {
        match self {
            Recurrence::Invariant => None,
            Recurrence::Growing(g) => Some(g.axis),
            Recurrence::Bounded(b) => Some(b.axis),
        }
    }
}

/// Session mutation policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum SessionPolicy {
    Exclusive,
    CopyOnWrite,
}

/// `state.<cell>.session`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionLease {
    /// Mutation policy (default exclusive).
    pub policy: Option<SessionPolicy>,
    /// Lease time-to-live.
    pub ttl_seconds: Option<u64>,
    /// Optimistic metadata versioning (default false).
    pub optimistic_metadata_version: Option<bool>,
}

/// `state.<cell>`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateCell {
    /// The cell's contract.
    pub contract: TensorContract,
    /// Semantic (default) or advisory.
    pub class: Option<StateClass>,
    /// Invocation or session lifetime.
    pub scope: StateScope,
    /// SSA value that initialises the cell.
    pub initializer: String,
    /// Shape recurrence.
    pub recurrence: Recurrence,
    /// State-service group the cell is bound to.
    pub service_group: Option<String>,
    /// Ownership (default workflow).
    pub management: Option<StateManagement>,
    /// Release point of runtime/external state.
    pub release_boundary: Option<ReleaseBoundary>,
    /// Session lease (session scope only).
    pub session: Option<SessionLease>,
}

impl StateCell {
    /// Class with the default applied.
    pub fn state_class(&self) -> StateClass {
        self.class.unwrap_or(StateClass::Semantic)
    }

    /// Management with the default applied.
    pub fn state_management(&self) -> StateManagement {
        self.management.unwrap_or(StateManagement::Workflow)
    }
}

/// `serving`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServingContract {
    /// Bool value: which rows are active.
    pub active: String,
    /// Bool value: which rows are done.
    pub done: String,
    /// Integer value: accepted length per row.
    pub accepted_len: Option<String>,
    /// State-service groups.
    pub state_service: StateService,
}

/// `serving.state_service`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateService {
    /// Groups by name.
    pub groups: Option<IndexMap<String, StateGroup>>,
}

/// Kind of state a group holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum StateKind {
    FullAttention,
    SlidingAttention,
    MultiLatentAttention,
    Recurrent,
    CrossAttention,
    Encoder,
}

/// Whether present outputs may alias past inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Aliasing {
    Forbidden,
    Permitted,
    Required,
}

/// Fields of an indexed-scatter update.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexedScatter {
    /// State cell holding the write destinations.
    pub write_indices: String,
    /// Integer-scalar input or state cell: buffer capacity.
    pub capacity: String,
    /// Component -> port receiving the write indices.
    pub write_indices_ports: Option<IndexMap<String, String>>,
    /// Component -> port receiving the KV length.
    pub kv_length_ports: Option<IndexMap<String, String>>,
}

tagged_enum! {
    /// The graph's write discipline for a group's state.
    pub enum StateUpdate {
        /// New positions extend the tensor along `sequence_axis`.
        "append" => Append,
        /// Each step emits the complete next tensor.
        "replace" => Replace,
        /// Writes go to data-dependent slots of a fixed-capacity buffer.
        "indexed_scatter" => IndexedScatter(IndexedScatter),
    }
}

/// `reuse` of a group.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateReuse {
    /// Prefix reuse allowed (default false).
    pub prefix_reusable: Option<bool>,
    /// Prefix may be evicted (default false).
    pub evictable_prefix: Option<bool>,
}

/// `capabilities` of a group.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupCapabilities {
    /// How many positions can be rolled back (absent: none).
    pub rollback_positions: Option<u64>,
    /// Snapshots supported (default false).
    pub snapshot: Option<bool>,
    /// Forks supported (default false).
    pub fork: Option<bool>,
    /// Groups rolled back / forked together.
    pub cascade: Option<Vec<String>>,
}

/// `checkpoint` of a group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// Checkpoint adapter id.
    pub adapter: String,
    /// Adapter version.
    pub version: String,
}

/// Access of a state port alias.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum PortAccess {
    ReadWrite,
    ReadOnly,
}

/// Key/value role of a state port alias.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum StatePortRole {
    Key,
    Value,
    Combined,
}

/// `ports.<component>.<cell>`: how a cell maps onto a component's ports.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatePortAlias {
    /// Input (past) port.
    pub input: String,
    /// Output (present) port; may be omitted for read-only borrows.
    pub output: Option<String>,
    /// Read-write (default) or read-only.
    pub access: Option<PortAccess>,
    /// Key/value/combined role.
    pub role: Option<StatePortRole>,
    /// Zero-based layer index.
    pub layer: Option<u64>,
}

/// `serving.state_service.groups.<group>`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateGroup {
    /// Kind of state.
    pub kind: StateKind,
    /// Sequence axis (append / indexed-scatter updates).
    pub sequence_axis: Option<u64>,
    /// Memory layout name, e.g. `bnsh`.
    pub layout: String,
    /// Rank-1 integer state cell with per-row logical lengths.
    pub logical_lengths: Option<String>,
    /// State cell holding the total length.
    pub total_length: Option<String>,
    /// Aliasing policy (default forbidden).
    pub aliasing: Option<Aliasing>,
    /// Update discipline (absent: append-like).
    pub update: Option<StateUpdate>,
    /// Prefix reuse.
    pub reuse: Option<StateReuse>,
    /// Rollback/snapshot/fork capabilities.
    pub capabilities: Option<GroupCapabilities>,
    /// Checkpoint adapter (absent: private state).
    pub checkpoint: Option<Checkpoint>,
    /// Component -> cell -> port alias.
    pub ports: Option<IndexMap<String, IndexMap<String, StatePortAlias>>>,
}
