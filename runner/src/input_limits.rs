//! What a supplied input may hold beyond its contract, checked before the
//! first step runs so that a bad request is refused by name instead of
//! failing inside a model: prompt tokens within the package's
//! `model.max_sequence_length`; an input bound straight to a model input
//! with value facts (see `wfstudio_onnx::labels`) within its labels, its
//! range and its length range; nothing but finite numbers in a float input. The value facts are also read without a
//! session, for a form (`package_value_facts`).

use crate::model::{is_textproto, model_bytes};
use crate::model_scan::scan_model;
use crate::session::{ComponentSession, scanned_value_facts};
use crate::tensor::Tensor;
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
        let facts = inputs_with_facts(wf, |index, port, _| {
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
        if tensor.dtype().is_float()
            && let Some(at) = (0..tensor.numel()).find(|&i| !tensor.data.get_f64(i).is_finite())
        {
            let value = tensor.data.get_f64(at);
            return Err(format!(
                "input '{name}' holds {value} (element {at}), not a finite number"
            ));
        }
        let Some(facts) = self.facts.get(name) else {
            return Ok(());
        };
        if let Some((shortest, longest)) = facts.length {
            let length = tensor.shape.last().copied().unwrap_or(1) as u64;
            if !(shortest..=longest).contains(&length) {
                return Err(format!(
                    "input '{name}' is {length} long, outside {shortest}..={longest} (too short: an empty prompt?)"
                ));
            }
        }
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
/// to a model input with some: `port_facts(component index, port, input)`.
fn inputs_with_facts(
    wf: &WorkflowSpec,
    mut port_facts: impl FnMut(usize, &str, &str) -> Option<ValueFacts>,
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
                    && let Some(found) = port_facts(index, port, value)
                {
                    facts
                        .entry(value.clone())
                        .and_modify(|known: &mut ValueFacts| *known = both(known, &found))
                        .or_insert(found);
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
    // Only the models that feed a single-element input are read.
    inputs_with_facts(wf, |index, port, input| {
        if !single(input) {
            return None;
        }
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
            // A TextFormat model is encoded first (its keys are looked for
            // as they are encoded); a binary one is scanned without its
            // weights. As a session reads them.
            let bytes = match is_textproto(&file) {
                true => match model_bytes(&file) {
                    Ok(bytes) => Some(bytes),
                    Err(_) => return BTreeMap::new(),
                },
                false => None,
            };
            scan_model(&file, bytes.as_deref())
                .ok()
                .and_then(|scanned| scanned_value_facts(&file, bytes.as_deref(), &scanned).ok())
                .unwrap_or_default()
        });
        model.get(port).cloned()
    })
}

/// What holds for an input that feeds two ports: the first port's labels,
/// and the ranges and lengths both allow.
fn both(a: &ValueFacts, b: &ValueFacts) -> ValueFacts {
    fn within<T: PartialOrd + Copy>(a: Option<(T, T)>, b: Option<(T, T)>) -> Option<(T, T)> {
        match (a, b) {
            (Some((l1, h1)), Some((l2, h2))) => {
                Some((if l1 > l2 { l1 } else { l2 }, if h1 < h2 { h1 } else { h2 }))
            }
            (one, None) | (None, one) => one,
        }
    }
    ValueFacts {
        labels: a.labels.clone().or_else(|| b.labels.clone()),
        range: within(a.range, b.range),
        length: within(a.length, b.length),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Data;

    /// An opaque input and a prompt-token input, read as a document.
    fn inputs() -> (WorkflowInput, WorkflowInput) {
        let yaml = "schema_version: v1\npipeline:\n  workflow:\n    manifest: {capabilities: [workflow_ssa]}\n    inputs:\n      a: {contract: {dtype: int64, rank: 2}, role: {kind: opaque}, source: {kind: application, name: a}}\n      p: {contract: {dtype: int64, rank: 2}, role: {kind: runtime, version: '1.0', role: prompt_tokens}, source: {kind: request}}\n    outputs: {}\n    components: {}\n    steps: []\n";
        let limits = wfstudio_schema::Limits::default();
        let document = wfstudio_schema::parse_text(yaml, wfstudio_schema::Format::Yaml, &limits)
            .expect("parses")
            .document;
        let declared = document
            .pipeline
            .and_then(|p| p.workflow.inputs)
            .expect("inputs");
        (declared["a"].clone(), declared["p"].clone())
    }

    fn limits() -> InputLimits {
        let voice = ValueFacts {
            labels: Some(vec!["alto".into(), "bass".into()]),
            ..ValueFacts::default()
        };
        let strength = ValueFacts {
            range: Some((0.0, 1.0)),
            ..ValueFacts::default()
        };
        let tokens = ValueFacts {
            length: Some((3, 6)),
            ..ValueFacts::default()
        };
        InputLimits {
            token_limit: Some(5),
            facts: [("voice", voice), ("strength", strength), ("tokens", tokens)]
                .into_iter()
                .map(|(n, f)| (n.to_string(), f))
                .collect(),
        }
    }

    fn ints(values: Vec<i64>) -> Tensor {
        Tensor::new(vec![1, values.len()], Data::I64(values)).expect("tensor")
    }

    fn floats(values: Vec<f32>) -> Tensor {
        Tensor::new(vec![values.len()], Data::F32(values)).expect("tensor")
    }

    #[test]
    fn each_limit_refuses_by_name_and_passes_what_is_within() {
        let l = limits();
        let (opaque, prompt) = inputs();
        let check = |name: &str, input: &WorkflowInput, t: Tensor| l.check(name, input, &t);
        assert_eq!(check("voice", &opaque, ints(vec![1])), Ok(()));
        assert_eq!(
            check("voice", &opaque, ints(vec![2])),
            Err("input 'voice' is 2, not one of its 2 values: 0 alto, 1 bass".into())
        );
        assert_eq!(check("strength", &opaque, floats(vec![0.0, 1.0])), Ok(()));
        assert_eq!(
            check("strength", &opaque, floats(vec![0.5, 1.5])),
            Err("input 'strength' is 1.5 (element 1), outside 0..=1".into())
        );
        assert_eq!(
            check("anything", &opaque, floats(vec![1.0, f32::NAN])),
            Err("input 'anything' holds NaN (element 1), not a finite number".into())
        );
        assert_eq!(
            check("anything", &opaque, floats(vec![f32::INFINITY])),
            Err("input 'anything' holds inf (element 0), not a finite number".into())
        );
        assert_eq!(check("tokens", &opaque, ints(vec![0, 5, 0])), Ok(()));
        assert_eq!(
            check("tokens", &opaque, ints(vec![0, 0])),
            Err("input 'tokens' is 2 long, outside 3..=6 (too short: an empty prompt?)".into())
        );
        // The package's token limit applies to prompt tokens only.
        assert_eq!(check("other", &opaque, ints(vec![1; 6])), Ok(()));
        assert_eq!(
            check("other", &prompt, ints(vec![1; 6])),
            Err("input 'other' has 6 tokens, more than the 5 the model takes (model.max_sequence_length); shorten the prompt".into())
        );
    }
}
