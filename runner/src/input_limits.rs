//! What a supplied input may hold beyond its contract, checked before the
//! first step runs so that a bad request is refused by name instead of
//! failing inside a model: prompt tokens within the package's
//! `model.max_sequence_length`; an input bound straight to a model input
//! with value facts (see `wfstudio_onnx::labels`) within its labels and its
//! range; no NaN in a float input. The value facts are also read without a
//! session, for a form (`package_value_facts`).

use crate::model::model_bytes;
use crate::model_scan::scan;
use crate::session::{ComponentSession, value_facts_of};
use crate::tensor::{Data, Tensor};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use wfstudio_core::artifacts::resolve_inside;
use wfstudio_core::text::takes_prompt_tokens;
use wfstudio_onnx::labels::ValueFacts;
use wfstudio_schema::Document;
use wfstudio_schema::types::contract::Dim;
use wfstudio_schema::types::steps::Step;
use wfstudio_schema::types::workflow::{Implementation, WorkflowInput, WorkflowSpec};

/// The limits of a package's inputs.
#[derive(Debug, Default)]
pub(crate) struct InputLimits {
    /// `model.max_sequence_length`, for prompt-token inputs.
    token_limit: Option<u64>,
    /// The value facts of each workflow input bound straight to a model
    /// input that has some.
    facts: HashMap<String, ValueFacts>,
}

impl InputLimits {
    /// The limits of `document`'s workflow `wf`, whose components have the
    /// `sessions` (in component order).
    pub(crate) fn of(
        document: &Document,
        wf: &WorkflowSpec,
        sessions: &[Option<ComponentSession>],
    ) -> InputLimits {
        let token_limit = document.model.as_ref().and_then(|m| m.max_sequence_length);
        let facts = inputs_with_facts(wf, |index, port| {
            let session = sessions.get(index)?.as_ref()?;
            session.value_facts.get(port).cloned()
        });
        InputLimits { token_limit, facts }
    }

    /// The value labels of workflow input `name`, if it has any.
    pub(crate) fn labels(&self, name: &str) -> Option<&[String]> {
        self.facts.get(name)?.labels.as_deref()
    }

    /// Why `tensor` cannot be workflow input `name` (declared as `input`).
    pub(crate) fn check(
        &self,
        name: &str,
        input: &WorkflowInput,
        tensor: &Tensor,
    ) -> Result<(), String> {
        if let Some(limit) = self.token_limit
            && takes_prompt_tokens(input)
            && let Some(&length) = tensor.shape.last()
            && length as u64 > limit
        {
            return Err(format!(
                "input '{name}' has {length} tokens, more than the {limit} the model takes (model.max_sequence_length); shorten the prompt"
            ));
        }
        let nan = match &tensor.data {
            Data::F32(v) => v.iter().position(|x| x.is_nan()),
            Data::F64(v) => v.iter().position(|x| x.is_nan()),
            _ => None,
        };
        if let Some(at) = nan {
            return Err(format!("input '{name}' holds NaN (element {at})"));
        }
        let Some(facts) = self.facts.get(name) else {
            return Ok(());
        };
        if let Some(labels) = &facts.labels {
            for i in 0..tensor.numel() {
                let value = tensor.data.get_i64(i);
                if !value.is_some_and(|v| usize::try_from(v).is_ok_and(|v| v < labels.len())) {
                    let shown = value.map_or_else(|| "not an integer".into(), |v| v.to_string());
                    return Err(format!(
                        "input '{name}' is {shown}, not one of its {} values: {}",
                        labels.len(),
                        numbered(labels)
                    ));
                }
            }
        }
        if let Some((low, high)) = facts.range {
            for i in 0..tensor.numel() {
                let value = tensor.data.get_f64(i);
                if !(low..=high).contains(&value) {
                    return Err(format!(
                        "input '{name}' is {value} (element {i}), outside {low}..={high}"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The value facts of each workflow input that an invoke binds straight
/// to a model input with some: `port_facts(component index, port)`.
fn inputs_with_facts(
    wf: &WorkflowSpec,
    mut port_facts: impl FnMut(usize, &str) -> Option<ValueFacts>,
) -> HashMap<String, ValueFacts> {
    let declared = |name: &str| wf.inputs.as_ref().is_some_and(|i| i.contains_key(name));
    let mut facts = HashMap::new();
    wfstudio_core::validate::for_each_step(
        &wf.steps,
        &wfstudio_schema::DocPath::root(),
        &mut |step, _| {
            let Step::Invoke(invoke) = step else { return };
            let Some(index) = wf.components.get_index_of(&invoke.component) else {
                return;
            };
            for (port, value) in invoke.inputs.iter().flatten() {
                if declared(value)
                    && let Some(found) = port_facts(index, port)
                {
                    facts.insert(value.clone(), found);
                }
            }
        },
    );
    facts
}

/// The value facts of `document`'s single-element workflow inputs, read
/// from the model files (in the package folder `root`) of the components
/// they are bound to, without loading a session: what a form offers before
/// any run. Unreadable models give none (the run reports them).
pub fn package_value_facts(document: &Document, root: &Path) -> HashMap<String, ValueFacts> {
    let Some(wf) = document.pipeline.as_ref().map(|p| &p.workflow) else {
        return HashMap::new();
    };
    let single = |name: &str| {
        wf.inputs
            .as_ref()
            .and_then(|i| i.get(name))
            .is_some_and(|input| {
                let c = &input.contract;
                c.shape
                    .as_deref()
                    .is_some_and(|s| s.iter().all(|d| *d == Dim::Fixed(1)))
            })
    };
    let mut read: HashMap<usize, BTreeMap<String, ValueFacts>> = HashMap::new();
    let facts = inputs_with_facts(wf, |index, port| {
        let model = read.entry(index).or_insert_with(|| {
            let Some((_, component)) = wf.components.get_index(index) else {
                return BTreeMap::new();
            };
            let Implementation::Onnx(onnx) = &component.implementation else {
                return BTreeMap::new();
            };
            let Ok(file) = resolve_inside(root, &onnx.artifact) else {
                return BTreeMap::new();
            };
            let has_facts = match std::fs::File::open(&file).and_then(scan) {
                Ok(scanned) => scanned.may_have_value_facts,
                Err(_) => false,
            };
            has_facts
                .then(|| model_bytes(&file).ok())
                .flatten()
                .map(|bytes| value_facts_of(&bytes))
                .unwrap_or_default()
        });
        model.get(port).cloned()
    });
    facts.into_iter().filter(|(name, _)| single(name)).collect()
}

/// `0 jf_alpha, 1 jf_gongitsune, ...`.
fn numbered(labels: &[String]) -> String {
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{i} {l}"))
        .collect::<Vec<_>>()
        .join(", ")
}
