//! Property tests over generated documents: random valid workflows (inputs
//! of random dtypes and shapes, chains of invokes over random earlier values,
//! an optional loop with a carried cell, emits into outputs; names chosen to
//! trip YAML up) validate without errors, and survive a canonical YAML save,
//! a JSON save and a reload unchanged; saving the reloaded document again
//! gives the same text.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use wfstudio_core::{Options, validate};
use wfstudio_schema::{Document, Format, Limits, parse_text};

/// Value, cell and component names YAML would read as something else
/// unless quoted, plus ordinary dotted names.
const NAMES: &[&str] = &[
    "latent",
    "request.input_ids",
    "s.next",
    "yes",
    "No",
    "null",
    "~",
    "true",
    "1",
    "0x1F",
    "1e3",
    "on",
    "- a",
    "a: b",
    "#hash",
    "&anchor",
    "*alias",
    "! tag",
    "'quoted'",
    "\"dq\"",
    "tab\there",
    "trailing ",
    " leading",
    "日本語",
    "",
    "%percent",
    "@at",
    "back`tick",
    "[list]",
    "{map}",
];

const DTYPES: &[&str] = &["float32", "float16", "int64", "int32", "bool", "uint8"];

#[derive(Clone, Debug)]
enum Dim {
    Symbol(&'static str),
    Fixed(u32),
}

#[derive(Clone, Debug)]
struct Contract {
    dtype: &'static str,
    shape: Vec<Dim>,
}

impl Contract {
    fn json(&self) -> Value {
        let shape: Vec<Value> = self
            .shape
            .iter()
            .map(|d| match d {
                Dim::Symbol(s) => json!(s),
                Dim::Fixed(n) => json!(n),
            })
            .collect();
        json!({"dtype": self.dtype, "rank": shape.len(), "shape": shape})
    }
}

fn contract() -> impl Strategy<Value = Contract> {
    let dim = prop_oneof![
        prop::sample::select(vec!["batch", "sequence", "2d", "null", "yes"]).prop_map(Dim::Symbol),
        (0u32..9).prop_map(Dim::Fixed),
    ];
    (
        prop::sample::select(DTYPES.to_vec()),
        prop::collection::vec(dim, 0..4),
    )
        .prop_map(|(dtype, shape)| Contract { dtype, shape })
}

/// One invoke: which earlier values it reads and the contracts it makes.
#[derive(Clone, Debug)]
struct InvokePlan {
    reads: Vec<prop::sample::Index>,
    makes: Vec<Contract>,
}

#[derive(Clone, Debug)]
struct Plan {
    inputs: Vec<(Contract, bool)>,
    invokes: Vec<InvokePlan>,
    looped: Option<Contract>,
    emits: Vec<prop::sample::Index>,
    names: Vec<prop::sample::Index>,
    /// Free text, used as the application alias of inputs.
    alias: String,
}

fn plan() -> impl Strategy<Value = Plan> {
    let invoke = (
        prop::collection::vec(any::<prop::sample::Index>(), 1..4),
        prop::collection::vec(contract(), 1..3),
    )
        .prop_map(|(reads, makes)| InvokePlan { reads, makes });
    (
        prop::collection::vec((contract(), any::<bool>()), 1..4),
        prop::collection::vec(invoke, 0..5),
        prop::option::of(contract()),
        prop::collection::vec(any::<prop::sample::Index>(), 1..3),
        prop::collection::vec(any::<prop::sample::Index>(), 40),
        "[ -~]{1,30}",
    )
        .prop_map(|(inputs, invokes, looped, emits, names, alias)| Plan {
            inputs,
            invokes,
            looped,
            emits,
            names,
            alias,
        })
}

/// Hands out distinct names, preferring the tricky ones the plan picked.
struct Namer<'p> {
    picks: std::slice::Iter<'p, prop::sample::Index>,
    used: BTreeSet<String>,
}

impl Namer<'_> {
    fn next(&mut self, fallback: &str, dots_allowed: bool) -> String {
        let pick = self
            .picks
            .next()
            .map(|i| *i.get(NAMES))
            .filter(|n| !n.is_empty() && (dots_allowed || !n.contains('.')));
        let mut name = pick.unwrap_or(fallback).to_string();
        let mut n = 0;
        while self.used.contains(&name) {
            n += 1;
            name = format!("{fallback}{n}");
        }
        self.used.insert(name.clone());
        name
    }
}

fn ports(contracts: &[&Contract], prefix: &str) -> Map<String, Value> {
    contracts
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("{prefix}{i}"), c.json()))
        .collect()
}

/// Builds the document a plan describes; valid by construction.
fn build(plan: &Plan) -> Value {
    let mut namer = Namer {
        picks: plan.names.iter(),
        used: BTreeSet::new(),
    };
    let mut pool: Vec<(String, Contract)> = Vec::new();
    let mut inputs = Map::new();
    for (i, (contract, from_request)) in plan.inputs.iter().enumerate() {
        let name = namer.next(&format!("in{i}"), true);
        // A request source needs a runtime role (V-W10).
        let (role, source) = if *from_request {
            (
                json!({"kind": "runtime", "version": "1.0", "role": "media"}),
                json!({"kind": "request"}),
            )
        } else {
            (
                json!({"kind": "opaque"}),
                json!({"kind": "application", "name": format!("{}{i}", plan.alias)}),
            )
        };
        inputs.insert(
            name.clone(),
            json!({"contract": contract.json(), "role": role, "source": source}),
        );
        pool.push((name, contract.clone()));
    }
    let mut components = Map::new();
    let mut steps = Vec::new();
    for (k, invoke) in plan.invokes.iter().enumerate() {
        let read: Vec<&(String, Contract)> = invoke.reads.iter().map(|i| i.get(&pool)).collect();
        let component = namer.next(&format!("c{k}"), false);
        let made: Vec<(String, Contract)> = invoke
            .makes
            .iter()
            .enumerate()
            .map(|(j, c)| (namer.next(&format!("v{k}_{j}"), true), c.clone()))
            .collect();
        components.insert(
            component.clone(),
            json!({
                "implementation": {"kind": "onnx", "artifact": format!("{k}/model.onnx")},
                "ports": {
                    "inputs": ports(&read.iter().map(|(_, c)| c).collect::<Vec<_>>(), "in"),
                    "outputs": ports(&made.iter().map(|(_, c)| c).collect::<Vec<_>>(), "out"),
                },
            }),
        );
        let bind_in: Map<String, Value> = read
            .iter()
            .enumerate()
            .map(|(j, (name, _))| (format!("in{j}"), json!(name)))
            .collect();
        let bind_out: Map<String, Value> = made
            .iter()
            .enumerate()
            .map(|(j, (name, _))| (format!("out{j}"), json!(name)))
            .collect();
        steps.push(json!({"kind": "invoke", "component": component, "inputs": bind_in, "outputs": bind_out}));
        pool.extend(made);
    }
    let mut state = Map::new();
    if let Some(carried) = &plan.looped {
        let init = namer.next("loop.init", true);
        let steps_in = namer.next("loop.steps", true);
        let go = namer.next("loop.go", true);
        let cell = namer.next("cell", true);
        let next = namer.next("cell.next", true);
        let step = namer.next("step", true);
        let body = namer.next("body", false);
        inputs.insert(
            init.clone(),
            json!({"contract": carried.json(), "role": {"kind": "opaque"}, "source": {"kind": "application", "name": "init"}}),
        );
        inputs.insert(
            steps_in.clone(),
            json!({
                "contract": {"dtype": "int64", "rank": 1, "shape": [1]},
                "role": {"kind": "runtime", "version": "1.0", "role": "max_iterations"},
                "source": {"kind": "request"},
                "required": false,
                "default": 3,
            }),
        );
        inputs.insert(
            go.clone(),
            json!({
                "contract": {"dtype": "bool", "rank": 1, "shape": [1]},
                "role": {"kind": "opaque"},
                "source": {"kind": "literal"},
                "required": false,
                "default": true,
            }),
        );
        state.insert(
            cell.clone(),
            json!({"contract": carried.json(), "scope": "invocation", "initializer": init, "recurrence": {"kind": "invariant"}}),
        );
        let scalar = json!({"dtype": "int64", "rank": 0});
        components.insert(
            body.clone(),
            json!({
                "implementation": {"kind": "onnx", "artifact": "body/model.onnx"},
                "ports": {
                    "inputs": {"x": carried.json(), "step": scalar},
                    "outputs": {"y": carried.json()},
                },
            }),
        );
        steps.push(json!({
            "kind": "loop",
            "steps": [{"kind": "invoke", "component": body, "inputs": {"x": cell, "step": step}, "outputs": {"y": next}}],
            "continue_when": go,
            "max_iterations": steps_in,
            "carried": [{"cell": cell, "next": next}],
            "iteration": {"value": step, "contract": scalar},
        }));
        pool.push((cell, carried.clone()));
    }
    let mut outputs = Map::new();
    let mut emitted = BTreeSet::new();
    for (i, pick) in plan.emits.iter().enumerate() {
        let (value, contract) = pick.get(&pool);
        if !emitted.insert(value.clone()) {
            continue;
        }
        let output = namer.next(&format!("out{i}"), true);
        outputs.insert(
            output.clone(),
            json!({"contract": contract.json(), "role": "tensor", "stage": "pre_adapter"}),
        );
        steps.push(json!({"kind": "emit", "value": value, "output": output, "mode": "replace"}));
    }
    let mut workflow = json!({
        "manifest": {"capabilities": [
            "workflow_ssa", "linear_effects", "nested_control_flow", "loop_induction_values", "typed_emit"
        ]},
        "inputs": inputs,
        "outputs": outputs,
        "components": components,
        "steps": steps,
    });
    if !state.is_empty() {
        workflow["state"] = Value::Object(state);
    }
    json!({"schema_version": "v1", "pipeline": {"workflow": workflow}})
}

fn reload(text: &str, format: Format) -> Result<Document, String> {
    parse_text(text, format, &Limits::default())
        .map(|l| l.document)
        .map_err(|d| format!("{d:?}\n--- text ---\n{text}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn generated_documents_validate_and_round_trip(plan in plan()) {
        let json_text = serde_json::to_string_pretty(&build(&plan)).expect("json");
        let document = reload(&json_text, Format::Json).map_err(TestCaseError::fail)?;
        let report = validate(&document, &Options::default());
        let errors: Vec<String> = report
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("{} {}: {}", d.code, d.path, d.message))
            .collect();
        prop_assert!(errors.is_empty(), "{errors:#?}\n{json_text}");

        let yaml = wfstudio_schema::save::to_yaml(&document, None);
        let from_yaml = reload(&yaml, Format::Yaml).map_err(TestCaseError::fail)?;
        prop_assert_eq!(&from_yaml, &document, "YAML save changed the document:\n{}", yaml);
        prop_assert_eq!(wfstudio_schema::save::to_yaml(&from_yaml, None), yaml, "saving is not a fixed point");

        let json = wfstudio_schema::save::to_json(&document);
        let from_json = reload(&json, Format::Json).map_err(TestCaseError::fail)?;
        prop_assert_eq!(&from_json, &document, "JSON save changed the document:\n{}", json);
    }
}
