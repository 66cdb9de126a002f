//! Flattening group nodes before the UI -> API conversion.
//!
//! Subgraph instances (frontend from mid-2025): an instance whose `type` is the id of a
//! `definitions.subgraphs[]` entry is replaced by its inner nodes, with ids
//! `"<instance>:<inner>"` (nested to any depth). Inner links from the
//! subgraph's input node (`-10`) take the instance's outer input of the same
//! name, or none when it is unlinked (the inner widget value then stands);
//! outer links from the instance's outputs start at the inner node wired to
//! the subgraph's output node (`-20`).
//!
//! Legacy group nodes (2024, `type` `workflow/<name>` or `workflow><name>`,
//! defined in `extra.groupNodes`): inner node *i* becomes `"<group>:<i>"`;
//! inner links from `null` are the group's inputs, in (node, slot) order;
//! the group's outputs are the inner outputs no inner link consumes, in
//! (node, slot) order; the instance's `widgets_values` are split over the
//! inner nodes in index order, each taking as many as its stored copy holds.

use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// The subgraph input and output node ids.
const INPUT_NODE: i64 = -10;
const OUTPUT_NODE: i64 = -20;
/// Expansions allowed per file (nesting and repeats together).
const MAX_EXPANSIONS: usize = 512;

fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// A link as `[id, origin, origin_slot, target, target_slot, type]`.
fn link_parts(link: &Value) -> Option<(i64, Value, i64, Value, i64, Value)> {
    match link {
        Value::Array(a) if a.len() >= 5 => Some((
            a[0].as_i64()?,
            a[1].clone(),
            a[2].as_i64().unwrap_or(0),
            a[3].clone(),
            a[4].as_i64().unwrap_or(0),
            a.get(5).cloned().unwrap_or(json!("*")),
        )),
        Value::Object(o) => Some((
            o.get("id")?.as_i64()?,
            o.get("origin_id")?.clone(),
            o.get("origin_slot").and_then(Value::as_i64).unwrap_or(0),
            o.get("target_id")?.clone(),
            o.get("target_slot").and_then(Value::as_i64).unwrap_or(0),
            o.get("type").cloned().unwrap_or(json!("*")),
        )),
        _ => None,
    }
}

/// The workflow with every subgraph instance and legacy group node
/// replaced by its inner nodes (links in the array form); unchanged when
/// there are none.
pub fn flatten(ui: &Value) -> Value {
    expand_legacy_groups(&flatten_subgraphs(ui))
}

fn flatten_subgraphs(ui: &Value) -> Value {
    let definitions: HashMap<&str, &Value> = ui
        .pointer("/definitions/subgraphs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| Some((s.get("id")?.as_str()?, s)))
        .collect();
    let is_instance = |n: &Value| {
        n.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| definitions.contains_key(t))
    };
    let Some(top) = ui.get("nodes").and_then(Value::as_array) else {
        return ui.clone();
    };
    if !top.iter().any(is_instance) {
        return ui.clone();
    }
    let mut nodes: Vec<Value> = top.clone();
    // Link id -> [id, origin, origin_slot, target, target_slot, type].
    let mut links: Vec<Value> = Vec::new();
    let mut index: HashMap<i64, usize> = HashMap::new();
    for link in ui
        .get("links")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some((id, o, os, t, ts, kind)) = link_parts(link) {
            index.insert(id, links.len());
            links.push(json!([id, o, os, t, ts, kind]));
        }
    }
    let mut next_link = index.keys().copied().max().unwrap_or(0) + 1;
    for _ in 0..MAX_EXPANSIONS {
        let Some(at) = nodes.iter().position(is_instance) else {
            break;
        };
        let instance = nodes.remove(at);
        let Some(instance_id) = instance.get("id").and_then(id_text) else {
            continue;
        };
        let def = definitions[instance["type"].as_str().unwrap_or_default()];
        if matches!(instance.get("mode").and_then(Value::as_i64), Some(2)) {
            continue; // A muted instance mutes everything inside it.
        }
        let inner_id = |v: &Value| id_text(v).map(|id| format!("{instance_id}:{id}"));
        // The instance's outer input link per subgraph input slot, by name.
        let outer_inputs: Vec<Option<i64>> = def["inputs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|input| {
                instance["inputs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|i| i["name"] == input["name"])
                    .and_then(|i| i["link"].as_i64())
            })
            .collect();
        let mut renamed: HashMap<i64, Option<i64>> = HashMap::new();
        let mut outputs: HashMap<i64, (Value, i64)> = HashMap::new();
        for link in def["links"].as_array().into_iter().flatten() {
            let Some((id, origin, oslot, target, tslot, kind)) = link_parts(link) else {
                continue;
            };
            let from_input = origin.as_i64() == Some(INPUT_NODE);
            if target.as_i64() == Some(OUTPUT_NODE) {
                let source = if from_input {
                    outer_inputs
                        .get(oslot as usize)
                        .copied()
                        .flatten()
                        .and_then(|l| index.get(&l))
                        .map(|&i| (links[i][1].clone(), links[i][2].as_i64().unwrap_or(0)))
                } else {
                    inner_id(&origin).map(|o| (json!(o), oslot))
                };
                if let Some(source) = source {
                    outputs.insert(tslot, source);
                }
                continue;
            }
            if from_input {
                renamed.insert(id, outer_inputs.get(oslot as usize).copied().flatten());
                continue;
            }
            let (Some(o), Some(t)) = (inner_id(&origin), inner_id(&target)) else {
                continue;
            };
            renamed.insert(id, Some(next_link));
            index.insert(next_link, links.len());
            links.push(json!([next_link, o, oslot, t, tslot, kind]));
            next_link += 1;
        }
        // Outer consumers of the instance's outputs now read the inner node.
        for link in &mut links {
            if id_text(&link[1]).as_deref() == Some(instance_id.as_str())
                && let Some((origin, slot)) = outputs.get(&link[2].as_i64().unwrap_or(-1))
            {
                link[1] = origin.clone();
                link[2] = json!(slot);
            }
        }
        for inner in def["nodes"].as_array().into_iter().flatten() {
            let mut node = inner.clone();
            let Some(id) = inner.get("id").and_then(inner_id) else {
                continue;
            };
            node["id"] = json!(id);
            if let Some(inputs) = node.get_mut("inputs").and_then(Value::as_array_mut) {
                for input in inputs {
                    if let Some(link) = input.get("link").and_then(Value::as_i64) {
                        input["link"] = match renamed.get(&link) {
                            Some(Some(new)) => json!(new),
                            _ => Value::Null,
                        };
                    }
                }
            }
            nodes.push(node);
        }
    }
    let mut flat: Map<String, Value> = ui.as_object().cloned().unwrap_or_default();
    flat.insert("nodes".into(), Value::Array(nodes));
    flat.insert("links".into(), Value::Array(links));
    Value::Object(flat)
}

/// The legacy group name of a node type, if it is one.
fn group_name(kind: &str) -> Option<&str> {
    kind.strip_prefix("workflow/")
        .or_else(|| kind.strip_prefix("workflow>"))
}

fn expand_legacy_groups(ui: &Value) -> Value {
    let Some(groups) = ui.pointer("/extra/groupNodes").and_then(Value::as_object) else {
        return ui.clone();
    };
    let is_group = |n: &Value| {
        n.get("type")
            .and_then(Value::as_str)
            .and_then(group_name)
            .is_some_and(|g| groups.contains_key(g))
    };
    let Some(top) = ui.get("nodes").and_then(Value::as_array) else {
        return ui.clone();
    };
    if !top.iter().any(is_group) {
        return ui.clone();
    }
    let mut nodes: Vec<Value> = Vec::new();
    let mut links: Vec<Value> = ui
        .get("links")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(link_parts)
        .map(|(id, o, os, t, ts, kind)| json!([id, o, os, t, ts, kind]))
        .collect();
    let mut next_link = links
        .iter()
        .filter_map(|l| l[0].as_i64())
        .max()
        .unwrap_or(0)
        + 1;
    for instance in top {
        if !is_group(instance) {
            nodes.push(instance.clone());
            continue;
        }
        let (Some(group_id), Some(def)) = (
            instance.get("id").and_then(id_text),
            instance["type"]
                .as_str()
                .and_then(group_name)
                .and_then(|g| groups.get(g)),
        ) else {
            nodes.push(instance.clone());
            continue;
        };
        let inner: Vec<&Value> = def["nodes"].as_array().into_iter().flatten().collect();
        let def_links: Vec<&Vec<Value>> = def["links"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_array)
            .filter(|l| l.len() >= 4)
            .collect();
        let slot = |l: &Vec<Value>, i: usize| l[i].as_i64().unwrap_or(-1);
        // (inner node, input slot) -> the link that feeds it.
        let mut feeds: HashMap<(i64, i64), Value> = HashMap::new();
        let mut group_inputs: Vec<(i64, i64)> = def_links
            .iter()
            .filter(|l| l[0].is_null())
            .map(|l| (slot(l, 2), slot(l, 3)))
            .collect();
        group_inputs.sort_unstable();
        group_inputs.dedup();
        let instance_inputs = instance["inputs"].as_array().cloned().unwrap_or_default();
        for (k, target) in group_inputs.iter().enumerate() {
            feeds.insert(
                *target,
                instance_inputs
                    .get(k)
                    .map_or(Value::Null, |i| i["link"].clone()),
            );
        }
        let mut consumed: Vec<(i64, i64)> = Vec::new();
        for l in def_links.iter().filter(|l| !l[0].is_null()) {
            let (src, sslot, dst, dslot) = (slot(l, 0), slot(l, 1), slot(l, 2), slot(l, 3));
            consumed.push((src, sslot));
            let kind = l.get(5).cloned().unwrap_or(json!("*"));
            links.push(json!([
                next_link,
                format!("{group_id}:{src}"),
                sslot,
                format!("{group_id}:{dst}"),
                dslot,
                kind
            ]));
            feeds.insert((dst, dslot), json!(next_link));
            next_link += 1;
        }
        // The group's outputs: inner outputs no inner link consumes.
        let mut exposed: Vec<(i64, i64)> = Vec::new();
        for (i, node) in inner.iter().enumerate() {
            if node["type"] == "Reroute" {
                continue;
            }
            let count = node["outputs"].as_array().map_or(0, Vec::len);
            for s in 0..count as i64 {
                if !consumed.contains(&(i as i64, s)) {
                    exposed.push((i as i64, s));
                }
            }
        }
        for link in &mut links {
            if id_text(&link[1]).as_deref() == Some(group_id.as_str())
                && let Some((node, s)) = link[2].as_i64().and_then(|j| exposed.get(j as usize))
            {
                link[1] = json!(format!("{group_id}:{node}"));
                link[2] = json!(s);
            }
        }
        let mut widgets = instance["widgets_values"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter();
        for (i, node) in inner.iter().enumerate() {
            let mut node = (*node).clone();
            node["id"] = json!(format!("{group_id}:{i}"));
            node["mode"] = instance.get("mode").cloned().unwrap_or(json!(0));
            if let Some(inputs) = node.get_mut("inputs").and_then(Value::as_array_mut) {
                for (s, input) in inputs.iter_mut().enumerate() {
                    input["link"] = feeds
                        .get(&(i as i64, s as i64))
                        .cloned()
                        .unwrap_or(Value::Null);
                }
            }
            if let Some(own) = node.get("widgets_values").and_then(Value::as_array) {
                let taken: Vec<Value> = widgets.by_ref().take(own.len()).collect();
                node["widgets_values"] = Value::Array(taken);
            }
            nodes.push(node);
        }
    }
    let mut flat: Map<String, Value> = ui.as_object().cloned().unwrap_or_default();
    flat.insert("nodes".into(), Value::Array(nodes));
    flat.insert("links".into(), Value::Array(links));
    Value::Object(flat)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_is_replaced_by_its_inner_nodes_with_rewired_links() {
        let ui = json!({
            "nodes": [
                {"id": 1, "type": "Loader", "outputs": [{"name": "X", "links": [10]}]},
                {"id": 5, "type": "sg-1", "inputs": [{"name": "x", "link": 10}, {"name": "seed", "link": null}],
                 "outputs": [{"name": "Y", "links": [11]}]},
                {"id": 9, "type": "Sink", "inputs": [{"name": "y", "link": 11}]}
            ],
            "links": [[10, 1, 0, 5, 0, "X"], [11, 5, 0, 9, 0, "Y"]],
            "definitions": {"subgraphs": [{
                "id": "sg-1",
                "inputs": [{"name": "x"}, {"name": "seed"}],
                "nodes": [
                    {"id": 3, "type": "Step", "inputs": [{"name": "a", "link": 1}, {"name": "seed", "link": 4}], "widgets_values": [7]},
                    {"id": 4, "type": "Step2", "inputs": [{"name": "b", "link": 2}]}
                ],
                "links": [
                    {"id": 1, "origin_id": -10, "origin_slot": 0, "target_id": 3, "target_slot": 0, "type": "X"},
                    {"id": 4, "origin_id": -10, "origin_slot": 1, "target_id": 3, "target_slot": 1, "type": "INT"},
                    {"id": 2, "origin_id": 3, "origin_slot": 0, "target_id": 4, "target_slot": 0, "type": "Z"},
                    {"id": 3, "origin_id": 4, "origin_slot": 0, "target_id": -20, "target_slot": 0, "type": "Y"}
                ]
            }]}
        });
        let flat = flatten(&ui);
        let ids: Vec<&str> = flat["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_str().unwrap_or("top"))
            .collect();
        assert_eq!(ids, ["top", "top", "5:3", "5:4"]);
        let step = &flat["nodes"][2];
        assert_eq!(step["inputs"][0]["link"], 10, "the outer input link");
        assert_eq!(
            step["inputs"][1]["link"],
            Value::Null,
            "unlinked: the widget stands"
        );
        let inner = step.clone();
        let b = flat["nodes"][3]["inputs"][0]["link"].as_i64().unwrap();
        let link = flat["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l[0] == b)
            .unwrap();
        assert_eq!(link[1], "5:3");
        let out = flat["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l[0] == 11)
            .unwrap();
        assert_eq!((out[1].clone(), out[2].clone()), (json!("5:4"), json!(0)));
        assert_eq!(inner["widgets_values"], json!([7]));
    }

    #[test]
    fn a_legacy_group_node_is_expanded_with_its_inputs_outputs_and_widgets() {
        let ui = json!({
            "nodes": [
                {"id": 1, "type": "Loader"},
                {"id": 7, "type": "workflow/Pair", "mode": 0,
                 "inputs": [{"name": "model", "link": 20}],
                 "outputs": [{"name": "LATENT", "links": [21]}],
                 "widgets_values": ["euler", 42, "fixed"]},
                {"id": 9, "type": "Sink", "inputs": [{"name": "x", "link": 21}]}
            ],
            "links": [[20, 1, 0, 7, 0, "MODEL"], [21, 7, 0, 9, 0, "LATENT"]],
            "extra": {"groupNodes": {"Pair": {
                "nodes": [
                    {"index": 0, "type": "Pick", "outputs": [{"name": "S"}], "widgets_values": ["ddim"]},
                    {"index": 1, "type": "Sample", "inputs": [{"name": "model", "link": null}, {"name": "s", "link": null}],
                     "outputs": [{"name": "LATENT"}], "widgets_values": [0, "fixed"]}
                ],
                "links": [[null, 0, 1, 0, 20, "MODEL"], [0, 0, 1, 1, 5, "S"]]
            }}}
        });
        let flat = flatten(&ui);
        let nodes = flat["nodes"].as_array().unwrap();
        let ids: Vec<String> = nodes.iter().map(|n| id_text(&n["id"]).unwrap()).collect();
        assert_eq!(ids, ["1", "7:0", "7:1", "9"]);
        assert_eq!(nodes[1]["widgets_values"], json!(["euler"]));
        assert_eq!(nodes[2]["widgets_values"], json!([42, "fixed"]));
        assert_eq!(nodes[2]["inputs"][0]["link"], 20, "the group's input");
        let inner = nodes[2]["inputs"][1]["link"].as_i64().unwrap();
        let link = flat["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l[0] == inner)
            .unwrap();
        assert_eq!((link[1].clone(), link[2].clone()), (json!("7:0"), json!(0)));
        let out = flat["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l[0] == 21)
            .unwrap();
        assert_eq!(
            out[1], "7:1",
            "the unconsumed inner output is the group's output"
        );
    }
}
