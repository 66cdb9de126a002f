//! Building the [`ViewGraph`] of a workflow.

use super::{Edge, Frame, FrameId, FrameKind, Node, NodeId, NodeKind, Port, ViewGraph};
use crate::validate::workflow_path;
use indexmap::IndexMap;
use std::collections::HashMap;
use wfstudio_schema::DocPath;
use wfstudio_schema::types::contract::TensorContract;
use wfstudio_schema::types::steps::Step;
use wfstudio_schema::types::workflow::WorkflowSpec;

/// Ports of an invoke: every declared component port in declared order
/// (bound or not), then bound names the component does not declare.
fn invoke_ports(
    declared: Option<&IndexMap<String, TensorContract>>,
    bound: Option<&IndexMap<String, String>>,
) -> Vec<Port> {
    let mut ports: Vec<Port> = declared
        .into_iter()
        .flatten()
        .map(|(name, contract)| Port {
            name: name.clone(),
            contract: Some(describe(contract)),
            value: bound.and_then(|b| b.get(name)).cloned(),
        })
        .collect();
    for (name, value) in bound.into_iter().flatten() {
        if !declared.is_some_and(|d| d.contains_key(name)) {
            ports.push(Port {
                name: name.clone(),
                contract: None,
                value: Some(value.clone()),
            });
        }
    }
    ports
}

fn describe(c: &TensorContract) -> String {
    match &c.shape {
        Some(shape) => format!(
            "{} [{}]",
            c.dtype,
            shape
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => format!("{} rank {}", c.dtype, c.rank),
    }
}

struct Builder<'w> {
    wf: &'w WorkflowSpec,
    graph: ViewGraph,
    /// Value name -> producing (node, output port), innermost definition last.
    producers: HashMap<String, (NodeId, usize)>,
    dtypes: HashMap<String, String>,
    cell_nodes: HashMap<String, NodeId>,
    /// Emits to wire to their output nodes once those exist.
    emits: Vec<(NodeId, String)>,
    step: usize,
}

impl<'w> Builder<'w> {
    fn node(&mut self, node: Node) -> NodeId {
        self.graph.nodes.push(node);
        self.graph.nodes.len() - 1
    }

    /// Wires `value` (as visible now, in document order) into `node`'s port.
    fn consume(&mut self, value: &str, node: NodeId, port: usize, back_edge: bool) {
        if let Some(&from) = self.producers.get(value) {
            self.graph.edges.push(Edge {
                from,
                to: (node, port),
                value: value.to_string(),
                dtype: self.dtypes.get(value).cloned(),
                back_edge,
            });
        }
    }

    fn produce(
        &mut self,
        value: &str,
        node: NodeId,
        port: usize,
        contract: Option<&TensorContract>,
    ) {
        self.producers.insert(value.to_string(), (node, port));
        if let Some(c) = contract {
            self.dtypes.insert(value.to_string(), c.dtype.clone());
        }
    }

    fn steps(&mut self, steps: &'w [Step], path: &DocPath, frame: Option<FrameId>) {
        for (i, step) in steps.iter().enumerate() {
            self.one(step, &path.index(i), frame);
        }
    }

    fn frame(
        &mut self,
        kind: FrameKind,
        label: String,
        path: &DocPath,
        parent: Option<FrameId>,
    ) -> FrameId {
        self.graph.frames.push(Frame {
            kind,
            label,
            path: path.clone(),
            parent,
        });
        self.graph.frames.len() - 1
    }

    fn one(&mut self, step: &'w Step, path: &DocPath, frame: Option<FrameId>) {
        match step {
            Step::Sequence(s) => self.steps(&s.steps, &path.key("steps"), frame),
            Step::Invoke(invoke) => {
                self.step += 1;
                let ports = self
                    .wf
                    .components
                    .get(&invoke.component)
                    .and_then(|c| c.ports.as_ref());
                let output_contract = |port: &str| {
                    ports
                        .and_then(|p| p.outputs.as_ref())
                        .and_then(|m| m.get(port))
                };
                let inputs = invoke_ports(
                    ports.and_then(|p| p.inputs.as_ref()),
                    invoke.inputs.as_ref(),
                );
                let outputs = invoke_ports(
                    ports.and_then(|p| p.outputs.as_ref()),
                    invoke.outputs.as_ref(),
                );
                let bound_inputs: Vec<(usize, String)> = inputs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, p)| Some((i, p.value.clone()?)))
                    .collect();
                let produced: Vec<(usize, String, String)> = outputs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, p)| Some((i, p.name.clone(), p.value.clone()?)))
                    .collect();
                let id = self.node(Node {
                    kind: NodeKind::Invoke {
                        component: invoke.component.clone(),
                    },
                    label: invoke.component.clone(),
                    path: path.clone(),
                    inputs,
                    outputs,
                    frame,
                    step: Some(self.step),
                });
                for (i, value) in bound_inputs {
                    self.consume(&value, id, i, false);
                }
                for (i, port, value) in produced {
                    self.produce(&value, id, i, output_contract(&port));
                }
            }
            Step::Emit(emit) => {
                self.step += 1;
                let id = self.node(Node {
                    kind: NodeKind::Emit,
                    label: format!("emit {} ({:?})", emit.output, emit.mode).to_lowercase(),
                    path: path.clone(),
                    inputs: vec![Port {
                        name: emit.value.clone(),
                        contract: None,
                        value: Some(emit.value.clone()),
                    }],
                    outputs: vec![Port {
                        name: emit.output.clone(),
                        contract: None,
                        value: None,
                    }],
                    frame,
                    step: Some(self.step),
                });
                self.consume(&emit.value, id, 0, false);
                self.emits.push((id, emit.output.clone()));
            }
            Step::Loop(l) => {
                let loop_frame = self.frame(
                    FrameKind::Loop,
                    format!("loop (at most {})", l.max_iterations),
                    path,
                    frame,
                );
                if let Some(setup) = l.setup.as_deref().filter(|s| !s.is_empty()) {
                    let part = self.frame(
                        FrameKind::Setup,
                        "setup".into(),
                        &path.key("setup"),
                        Some(loop_frame),
                    );
                    self.steps(setup, &path.key("setup"), Some(part));
                }
                let cells: Vec<_> = l
                    .carried
                    .iter()
                    .flatten()
                    .filter_map(|carry| {
                        let cell = *self.cell_nodes.get(&carry.cell)?;
                        let entry = carry.initial.as_ref().or_else(|| {
                            self.wf
                                .state
                                .as_ref()?
                                .get(&carry.cell)
                                .map(|c| &c.initializer)
                        })?;
                        Some((carry, cell, entry.clone()))
                    })
                    .collect();
                for (carry, cell, entry) in &cells {
                    // A carried cell is drawn inside the (first) loop that carries it.
                    if self.graph.nodes[*cell].frame.is_none() {
                        self.graph.nodes[*cell].frame = Some(loop_frame);
                    }
                    self.consume(entry, *cell, 0, false);
                    self.producers.insert(carry.cell.clone(), (*cell, 0));
                }
                let condition = self.frame(
                    FrameKind::Condition,
                    "condition".into(),
                    &path.key("continue_when"),
                    Some(loop_frame),
                );
                let control = self.node(Node {
                    kind: NodeKind::LoopControl,
                    label: format!("while {}", l.continue_when),
                    path: path.clone(),
                    inputs: [
                        ("continue_when", &l.continue_when),
                        ("max_iterations", &l.max_iterations),
                    ]
                    .into_iter()
                    .map(|(name, value)| Port {
                        name: name.into(),
                        contract: self.dtypes.get(value.as_str()).cloned(),
                        value: Some(value.clone()),
                    })
                    .collect(),
                    outputs: l
                        .iteration
                        .iter()
                        .map(|it| Port {
                            name: it.value.clone(),
                            contract: Some(describe(&it.contract)),
                            value: Some(it.value.clone()),
                        })
                        .collect(),
                    frame: Some(condition),
                    step: None,
                });
                self.consume(&l.continue_when, control, 0, false);
                self.consume(&l.max_iterations, control, 1, false);
                if let Some(it) = &l.iteration {
                    self.produce(&it.value, control, 0, Some(&it.contract));
                }
                let body = self.frame(
                    FrameKind::Body,
                    "body".into(),
                    &path.key("steps"),
                    Some(loop_frame),
                );
                self.steps(&l.steps, &path.key("steps"), Some(body));
                for (carry, cell, _) in &cells {
                    self.consume(&carry.next, *cell, 0, true);
                }
            }
            Step::Branch(b) => {
                let branch = self.frame(
                    FrameKind::Branch,
                    format!("branch on {}", b.predicate),
                    path,
                    frame,
                );
                let select = self.node(Node {
                    kind: NodeKind::BranchSelect,
                    label: format!("select on {}", b.predicate),
                    path: path.clone(),
                    inputs: vec![Port {
                        name: "predicate".into(),
                        contract: self.dtypes.get(b.predicate.as_str()).cloned(),
                        value: Some(b.predicate.clone()),
                    }],
                    outputs: Vec::new(),
                    frame: Some(branch),
                    step: None,
                });
                self.consume(&b.predicate, select, 0, false);
                let cases = b
                    .cases
                    .iter()
                    .map(|(k, s)| (k.clone(), s, path.key("cases").key(k.as_str())))
                    .chain(
                        b.default
                            .as_deref()
                            .map(|s| ("default".to_string(), s, path.key("default"))),
                    );
                for (key, case, case_path) in cases {
                    let lane = self.frame(
                        FrameKind::Case { key: key.clone() },
                        format!("case {key}"),
                        &case_path,
                        Some(branch),
                    );
                    self.one(case, &case_path, Some(lane));
                }
                for (phi, output) in b.outputs.iter().flatten() {
                    if let Some(source) = output.cases.values().next()
                        && let Some(&producer) = self.producers.get(source)
                    {
                        self.producers.insert(phi.clone(), producer);
                    }
                }
            }
        }
    }
}

/// The view of `wf`.
pub fn build(wf: &WorkflowSpec) -> ViewGraph {
    let mut b = Builder {
        wf,
        graph: ViewGraph::default(),
        producers: HashMap::new(),
        dtypes: HashMap::new(),
        cell_nodes: HashMap::new(),
        emits: Vec::new(),
        step: 0,
    };
    let root = workflow_path();
    for (name, input) in wf.inputs.iter().flatten() {
        let id = b.node(Node {
            kind: NodeKind::Input,
            label: name.clone(),
            path: root.key("inputs").key(name.as_str()),
            inputs: Vec::new(),
            outputs: vec![Port {
                name: name.clone(),
                contract: Some(describe(&input.contract)),
                value: Some(name.clone()),
            }],
            frame: None,
            step: None,
        });
        b.produce(name, id, 0, Some(&input.contract));
        if let Some(presence) = &input.present_as {
            b.produce(presence, id, 0, None);
        }
    }
    for (name, cell) in wf.state.iter().flatten() {
        let id = b.node(Node {
            kind: NodeKind::State,
            label: name.clone(),
            path: root.key("state").key(name.as_str()),
            inputs: vec![Port {
                name: "next".into(),
                contract: None,
                value: None,
            }],
            outputs: vec![Port {
                name: name.clone(),
                contract: Some(describe(&cell.contract)),
                value: Some(name.clone()),
            }],
            frame: None,
            step: None,
        });
        b.cell_nodes.insert(name.clone(), id);
        b.dtypes.insert(name.clone(), cell.contract.dtype.clone());
    }
    b.steps(&wf.steps, &root.key("steps"), None);
    let mut output_nodes = HashMap::new();
    for (name, output) in wf.outputs.iter().flatten() {
        let id = b.node(Node {
            kind: NodeKind::Output,
            label: name.clone(),
            path: root.key("outputs").key(name.as_str()),
            inputs: vec![Port {
                name: name.clone(),
                contract: Some(describe(&output.contract)),
                value: None,
            }],
            outputs: Vec::new(),
            frame: None,
            step: None,
        });
        output_nodes.insert(name.clone(), id);
    }
    for (emit, output) in std::mem::take(&mut b.emits) {
        if let Some(&to) = output_nodes.get(&output) {
            b.graph.edges.push(Edge {
                from: (emit, 0),
                to: (to, 0),
                value: output,
                dtype: None,
                back_edge: false,
            });
        }
    }
    b.graph
}
