//! UI (LiteGraph) workflow -> API prompt, as ComfyUI's frontend builds it:
//! virtual nodes dropped, muted and bypassed nodes removed (bypassed ones
//! passed through), widget values mapped to input names per class, links
//! resolved through reroutes, primitives, bypassed nodes and the named
//! `SetNode`/`GetNode` pairs of KJNodes (a `GetNode` passes on the input of
//! the `SetNode` with the same name, as their frontend extension does).

use super::defs::NodeDefs;
use super::link::{id_text, ui_link};
use super::widgets::{self, wrap_array};
use indexmap::IndexMap;
use serde_json::{Value, json};
use std::collections::HashMap;

/// Frontend-only node classes that never reach the API.
const VIRTUAL: &[&str] = &[
    "Reroute",
    "PrimitiveNode",
    "Note",
    "MarkdownNote",
    "SetNode",
    "GetNode",
];
/// Node modes that are not emitted: 2 = never (muted), 4 = bypass.
const MUTED: i64 = 2;
const BYPASSED: i64 = 4;

/// One API node.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiNode {
    /// Node class.
    pub class_type: String,
    /// Inputs in the class's order: literals or `["id", slot]` links.
    pub inputs: IndexMap<String, Value>,
    /// The node's title, when the UI gives one.
    pub title: Option<String>,
}

/// An API prompt: node id -> node.
pub type ApiGraph = IndexMap<String, ApiNode>;

/// Something the conversion could not represent exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvertIssue {
    /// UI node id.
    pub node: String,
    /// Node class.
    pub class: String,
    /// What is wrong and what to do.
    pub message: String,
}

/// The JSON form ComfyUI writes ("Save (API Format)").
pub fn api_json(graph: &ApiGraph) -> Value {
    let nodes: serde_json::Map<String, Value> = graph
        .iter()
        .map(|(id, n)| {
            let mut node = json!({"inputs": n.inputs, "class_type": n.class_type});
            if let Some(title) = &n.title {
                node["_meta"] = json!({"title": title});
            }
            (id.clone(), node)
        })
        .collect();
    Value::Object(nodes)
}

struct Link {
    origin: String,
    slot: i64,
    kind: String,
}

struct Ui<'a> {
    nodes: HashMap<String, &'a Value>,
    links: HashMap<i64, Link>,
}

fn node_type(node: &Value) -> &str {
    node.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn mode(node: &Value) -> i64 {
    node.get("mode").and_then(Value::as_i64).unwrap_or(0)
}

fn parse_links(ui: &Value) -> HashMap<i64, Link> {
    ui.get("links")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(ui_link)
        .filter_map(|l| {
            let origin = id_text(&l.origin)?;
            Some((
                l.id,
                Link {
                    origin,
                    slot: l.origin_slot as i64,
                    kind: l.kind,
                },
            ))
        })
        .collect()
}

fn types_fit(a: &str, b: &str) -> bool {
    a == b || a == "*" || b == "*"
}

impl Ui<'_> {
    /// The input link of the `SetNode` named `name` (the one with the
    /// lowest id, should several share it).
    fn setter_input(&self, name: &Value) -> Option<i64> {
        self.nodes
            .iter()
            .filter(|(_, n)| {
                node_type(n) == "SetNode" && n.pointer("/widgets_values/0") == Some(name)
            })
            .min_by_key(|(id, _)| id.parse::<i64>().unwrap_or(i64::MAX))?
            .1
            .pointer("/inputs/0/link")
            .and_then(Value::as_i64)
    }

    /// What a consumer wired to `link` receives: a link to an emitted node,
    /// a primitive's literal, or nothing (muted source, dangling reroute).
    fn resolve(&self, link: i64, consumer: &str, depth: usize) -> Option<Value> {
        if depth > 64 {
            return None;
        }
        let link = self.links.get(&link)?;
        let origin = self.nodes.get(&link.origin)?;
        match (node_type(origin), mode(origin)) {
            ("Reroute", _) => {
                let upstream = origin.pointer("/inputs/0/link").and_then(Value::as_i64)?;
                self.resolve(upstream, consumer, depth + 1)
            }
            ("PrimitiveNode", _) => origin.pointer("/widgets_values/0").cloned().map(wrap_array),
            ("GetNode", _) => {
                let upstream = self.setter_input(origin.pointer("/widgets_values/0")?)?;
                self.resolve(upstream, consumer, depth + 1)
            }
            (_, MUTED) => None,
            (_, BYPASSED) => {
                let inputs = origin.get("inputs").and_then(Value::as_array)?;
                let kind_of = |i: &Value| {
                    i.get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("*")
                        .to_string()
                };
                let slot = link.slot as usize;
                let pick = inputs
                    .get(slot)
                    .filter(|i| {
                        types_fit(&kind_of(i), &link.kind) && types_fit(&kind_of(i), consumer)
                    })
                    .or_else(|| inputs.iter().find(|i| kind_of(i) == consumer))
                    .or_else(|| inputs.iter().find(|i| types_fit(&kind_of(i), consumer)))?;
                let upstream = pick.get("link").and_then(Value::as_i64)?;
                self.resolve(upstream, consumer, depth + 1)
            }
            (kind, _) if VIRTUAL.contains(&kind) => None,
            _ => Some(json!([link.origin, link.slot])),
        }
    }
}

/// Converts a UI workflow to the API prompt, subgraph instances and legacy
/// group nodes flattened first. Node classes missing from `defs` and legacy group nodes are
/// reported as issues (their nodes are emitted with links only).
pub fn ui_to_api(ui: &Value, defs: &NodeDefs) -> (ApiGraph, Vec<ConvertIssue>) {
    let flat = super::subgraph::flatten(ui);
    let ui = &flat;
    let mut graph = ApiGraph::new();
    let mut issues = Vec::new();
    let nodes: Vec<&Value> = ui
        .get("nodes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let view = Ui {
        nodes: nodes
            .iter()
            .filter_map(|n| Some((id_text(n.get("id")?)?, *n)))
            .collect(),
        links: parse_links(ui),
    };
    let subgraphs: Vec<&str> = ui
        .pointer("/definitions/subgraphs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("id").and_then(Value::as_str))
        .collect();
    for node in nodes {
        let Some(id) = node.get("id").and_then(id_text) else {
            continue;
        };
        let class_type = node_type(node).to_string();
        if VIRTUAL.contains(&class_type.as_str()) || matches!(mode(node), MUTED | BYPASSED) {
            continue;
        }
        let issue = |message: String| ConvertIssue {
            node: id.clone(),
            class: class_type.clone(),
            message,
        };
        let grouped = class_type.starts_with("workflow/")
            || class_type.starts_with("workflow>")
            || subgraphs.contains(&class_type.as_str());
        if grouped {
            issues.push(issue("group node or subgraph not expanded (its definition is missing or recursive, or the file would grow past 20000 nodes): it is kept as one node, which the lowering refuses; ungroup it in ComfyUI".into()));
        }
        let class = defs.class(&class_type).filter(|_| !grouped);
        let mut collected = match class {
            Some(class) => widgets::by_definition(node, class),
            None if grouped => IndexMap::new(),
            None => widgets::by_file_names(node).unwrap_or_else(|| {
                issues.push(issue(format!(
                    "unknown node class '{class_type}': the file does not name each of its widget values, and no definition does; add its definition to the node definitions"
                )));
                IndexMap::new()
            }),
        };
        for input in node
            .get("inputs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = input.get("name").and_then(Value::as_str) else {
                continue;
            };
            let Some(link) = input.get("link").and_then(Value::as_i64) else {
                continue;
            };
            let consumer = input.get("type").and_then(Value::as_str).unwrap_or("*");
            match view.resolve(link, consumer, 0) {
                Some(value) => {
                    collected.insert(name.to_string(), value);
                }
                None => {
                    collected.shift_remove(name);
                }
            }
        }
        // ComfyUI's order: widget values in layout order, then linked inputs.
        let inputs = collected;
        let title = node
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_string);
        graph.insert(
            id,
            ApiNode {
                class_type,
                inputs,
                title,
            },
        );
    }
    (graph, issues)
}
