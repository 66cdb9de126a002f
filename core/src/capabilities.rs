//! Capability derivation: the one table of which structures require which
//! manifest capability, used by the validator (V-C1, V-C2), `check --fix`
//! and the studio.

use crate::paths::workflow_path;
use std::collections::BTreeMap;
use wfstudio_schema::types::state::{Recurrence, StateClass, StateScope};
use wfstudio_schema::types::steps::Step;
use wfstudio_schema::types::workflow::{Implementation, InputRole, RuntimeInputRole, WorkflowSpec};
use wfstudio_schema::{DocPath, Document};

/// A capability the structure of a workflow can require.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(missing_docs)]
pub enum Capability {
    WorkflowSsa,
    ServingServiceContract,
    SessionStateLease,
    BoundedStateRecurrence,
    AdvisoryState,
    InputPresence,
    HeterogeneousAdapterBatching,
    ParameterAdapters,
    LinearEffects,
    AdaptiveProposalBudget,
    GrammarGuidanceAdapter,
    TelemetryAdapter,
    NestedControlFlow,
    LoopInductionValues,
    TypedEmit,
    StreamingEmit,
    EmitValidLength,
}

/// Every derivable capability: its manifest id and when it is required.
pub const CAPABILITIES: &[(Capability, &str, &str)] = &[
    (Capability::WorkflowSsa, "workflow_ssa", "every workflow"),
    (
        Capability::ServingServiceContract,
        "serving_service_contract",
        "`serving` is declared",
    ),
    (
        Capability::SessionStateLease,
        "session_state_lease",
        "a state cell has scope: session",
    ),
    (
        Capability::BoundedStateRecurrence,
        "bounded_state_recurrence",
        "a state cell has a bounded recurrence",
    ),
    (
        Capability::AdvisoryState,
        "advisory_state",
        "a state cell has class: advisory",
    ),
    (
        Capability::InputPresence,
        "input_presence",
        "an input has present_as",
    ),
    (
        Capability::HeterogeneousAdapterBatching,
        "heterogeneous_adapter_batching",
        "an input has an adapter_* runtime role",
    ),
    (
        Capability::ParameterAdapters,
        "parameter_adapters",
        "a component uses onnx-genai.parameter-overlay",
    ),
    (
        Capability::LinearEffects,
        "linear_effects",
        "effects are declared or threaded: effect domains, effectful components, loops that carry state or emit, branches whose cases emit or carry",
    ),
    (
        Capability::AdaptiveProposalBudget,
        "adaptive_proposal_budget",
        "a component uses onnx-genai.adaptive-proposal-budget",
    ),
    (
        Capability::GrammarGuidanceAdapter,
        "grammar_guidance_adapter",
        "a component uses onnx-genai.grammar-guidance",
    ),
    (
        Capability::TelemetryAdapter,
        "telemetry_adapter",
        "a component uses onnx-genai.telemetry",
    ),
    (
        Capability::NestedControlFlow,
        "nested_control_flow",
        "the workflow has a loop or a branch",
    ),
    (
        Capability::LoopInductionValues,
        "loop_induction_values",
        "a loop declares an iteration value",
    ),
    (
        Capability::TypedEmit,
        "typed_emit",
        "the workflow has an emit",
    ),
    (
        Capability::StreamingEmit,
        "streaming_emit",
        "an emit has mode: event",
    ),
    (
        Capability::EmitValidLength,
        "emit_valid_length",
        "an emit has valid_length",
    ),
];

/// The capabilities adapters require whenever top-level `adapters` exists (V-C2).
pub const ADAPTER_CAPABILITIES: &[&str] = &["parameter_adapters", "heterogeneous_adapter_batching"];

impl Capability {
    /// The manifest id.
    pub fn id(self) -> &'static str {
        CAPABILITIES
            .iter()
            .find(|(c, ..)| *c == self)
            .map_or("", |(_, id, _)| id)
    }

    /// When it is required, in words.
    pub fn reason(self) -> &'static str {
        CAPABILITIES
            .iter()
            .find(|(c, ..)| *c == self)
            .map_or("", |(_, _, why)| why)
    }
}

/// The capabilities `wf` requires, each with the path of the first structure
/// that requires it.
pub fn derive(wf: &WorkflowSpec) -> BTreeMap<Capability, DocPath> {
    let mut found = BTreeMap::new();
    let root = workflow_path();
    let mut need = |c: Capability, path: &dyn Fn() -> DocPath| {
        found.entry(c).or_insert_with(path);
    };
    need(Capability::WorkflowSsa, &|| root.clone());
    if wf.serving.is_some() {
        need(Capability::ServingServiceContract, &|| root.key("serving"));
    }
    for (name, cell) in wf.state.iter().flatten() {
        let at = root.key("state").key(name.as_str());
        if cell.scope == StateScope::Session {
            need(Capability::SessionStateLease, &|| at.key("scope"));
        }
        if matches!(cell.recurrence, Recurrence::Bounded(_)) {
            need(Capability::BoundedStateRecurrence, &|| at.key("recurrence"));
        }
        if cell.state_class() == StateClass::Advisory {
            need(Capability::AdvisoryState, &|| at.key("class"));
        }
    }
    for (name, input) in wf.inputs.iter().flatten() {
        let at = root.key("inputs").key(name.as_str());
        if input.present_as.is_some() {
            need(Capability::InputPresence, &|| at.key("present_as"));
        }
        if let InputRole::Runtime(r) = &input.role
            && matches!(
                r.role,
                RuntimeInputRole::AdapterSegments
                    | RuntimeInputRole::AdapterCounts
                    | RuntimeInputRole::AdapterScales
                    | RuntimeInputRole::AdapterActive
            )
        {
            need(Capability::HeterogeneousAdapterBatching, &|| at.key("role"));
        }
    }
    if wf.effects.as_ref().is_some_and(|e| !e.is_empty()) {
        need(Capability::LinearEffects, &|| root.key("effects"));
    }
    for (name, component) in &wf.components {
        let at = root.key("components").key(name.as_str());
        if component.effects.as_ref().is_some_and(|e| !e.is_empty()) {
            need(Capability::LinearEffects, &|| at.key("effects"));
        }
        let ids = [
            component.contract.as_ref().map(|c| c.id.as_str()),
            match &component.implementation {
                Implementation::Adapter(a) => Some(a.abi.as_str()),
                _ => None,
            },
        ];
        for id in ids.into_iter().flatten() {
            let capability = match id {
                "onnx-genai.parameter-overlay" => Capability::ParameterAdapters,
                "onnx-genai.adaptive-proposal-budget" => Capability::AdaptiveProposalBudget,
                "onnx-genai.grammar-guidance" => Capability::GrammarGuidanceAdapter,
                "onnx-genai.telemetry" => Capability::TelemetryAdapter,
                _ => continue,
            };
            need(capability, &|| at.clone());
        }
    }
    crate::validate::walk::for_each_step(
        &wf.steps,
        &root.key("steps"),
        &mut |step, path| match step {
            Step::Loop(l) => {
                need(Capability::NestedControlFlow, &|| path.clone());
                if l.iteration.is_some() {
                    need(Capability::LoopInductionValues, &|| path.key("iteration"));
                }
                let carries = l.carried.as_ref().is_some_and(|c| !c.is_empty());
                if carries || l.steps.iter().any(|s| changes_effects(s, wf)) {
                    need(Capability::LinearEffects, &|| path.clone());
                }
            }
            Step::Branch(b) => {
                need(Capability::NestedControlFlow, &|| path.clone());
                if b.cases
                    .values()
                    .chain(b.default.as_deref())
                    .any(|s| changes_effects(s, wf))
                {
                    need(Capability::LinearEffects, &|| path.clone());
                }
            }
            Step::Emit(e) => {
                need(Capability::TypedEmit, &|| path.clone());
                if e.mode == wfstudio_schema::types::steps::EmitMode::Event {
                    need(Capability::StreamingEmit, &|| path.key("mode"));
                }
                if e.valid_length.is_some() {
                    need(Capability::EmitValidLength, &|| path.key("valid_length"));
                }
            }
            Step::Sequence(_) | Step::Invoke(_) => {}
        },
    );
    found
}

/// Every capability id the document requires in its manifest: the
/// structure-derived ones and, with top-level `adapters`, the adapter ones.
pub fn required_ids(document: &Document) -> std::collections::BTreeSet<&'static str> {
    let mut ids: std::collections::BTreeSet<&'static str> = document
        .pipeline
        .as_ref()
        .map(|p| {
            derive(&p.workflow)
                .into_keys()
                .map(Capability::id)
                .collect()
        })
        .unwrap_or_default();
    if document.adapters.is_some() {
        ids.extend(ADAPTER_CAPABILITIES);
    }
    ids
}

/// Whether lowering `step` advances any effect token: an effectful invoke,
/// an emit (the `stream` domain), or a loop that carries state or contains
/// either.
fn changes_effects(step: &Step, wf: &WorkflowSpec) -> bool {
    match step {
        Step::Invoke(i) => wf
            .components
            .get(&i.component)
            .is_some_and(|c| c.effects.as_ref().is_some_and(|e| !e.is_empty())),
        Step::Emit(_) => true,
        Step::Sequence(s) => s.steps.iter().any(|c| changes_effects(c, wf)),
        Step::Loop(l) => {
            l.carried.as_ref().is_some_and(|c| !c.is_empty())
                || l.setup
                    .iter()
                    .flatten()
                    .chain(&l.steps)
                    .any(|c| changes_effects(c, wf))
        }
        Step::Branch(b) => b
            .cases
            .values()
            .chain(b.default.as_deref())
            .any(|c| changes_effects(c, wf)),
    }
}
