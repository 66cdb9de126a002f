//! Flattening group nodes before the UI -> API conversion.
//!
//! Subgraph instances (frontend from mid-2025): an instance whose `type` is the id of a
//! `definitions.subgraphs[]` entry is replaced by its inner nodes, with ids
//! `"<instance>:<inner>"` (nested to any depth). Inner links from the
//! subgraph's input node (`-10`) take the instance's outer input of the same
//! name; when that is unlinked, the instance's promoted widget value (its
//! `widgets_values`, one per widget input) becomes a primitive, and without
//! one the inner widget value stands. Outer links from the instance's
//! outputs start at the inner node wired to the subgraph's output node
//! (`-20`). Bypassed instances stay whole (their inputs pass through);
//! muted ones vanish with their contents; recursive definitions and files
//! that would grow past [`MAX_NODES`] are left unexpanded (and refused).
//!
//! Legacy group nodes (2024, `type` `workflow/<name>` or `workflow><name>`,
//! defined in `extra.groupNodes`): inner node *i* becomes `"<group>:<i>"`;
//! inner links from `null` are the group's inputs, in (node, slot) order;
//! the group's outputs are the inner outputs no inner link consumes, in
//! (node, slot) order; the instance's `widgets_values` are split over the
//! inner nodes in index order, each taking as many as its stored copy holds.

use super::link::{id_text, ui_link};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};

/// The subgraph input and output node ids.
const INPUT_NODE: i64 = -10;
const OUTPUT_NODE: i64 = -20;
/// The most nodes flattening may produce.
pub const MAX_NODES: usize = 20_000;

/// Fresh link ids above every id in the file.
struct LinkIds(Option<i64>);

impl LinkIds {
    fn after(links: &[Value]) -> Self {
        LinkIds(
            links
                .iter()
                .filter_map(|l| l[0].as_i64())
                .max()
                .unwrap_or(0)
                .checked_add(1),
        )
    }

    /// The next id, or `None` once ids would overflow.
    fn next(&mut self) -> Option<i64> {
        let id = self.0?;
        self.0 = id.checked_add(1);
        Some(id)
    }
}

/// The links of a workflow in the array form.
fn array_links(ui: &Value) -> Vec<Value> {
    ui.get("links")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(ui_link)
        .map(|l| {
            json!([
                l.id,
                l.origin,
                l.origin_slot,
                l.target,
                l.target_slot,
                l.kind
            ])
        })
        .collect()
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
    let definition = |n: &Value| -> Option<String> {
        n.get("type")
            .and_then(Value::as_str)
            .filter(|t| definitions.contains_key(t))
            .map(str::to_string)
    };
    let Some(top) = ui.get("nodes").and_then(Value::as_array) else {
        return ui.clone();
    };
    if !top.iter().any(|n| definition(n).is_some()) {
        return ui.clone();
    }
    let mut nodes: Vec<Value> = top.clone();
    let mut links = array_links(ui);
    let mut ids = LinkIds::after(&links);
    // The definitions each produced node sits inside (recursion guard).
    let mut inside: HashMap<String, Vec<String>> = HashMap::new();
    let mut kept: HashSet<String> = HashSet::new();
    let expandable = |n: &Value, kept: &HashSet<String>| {
        definition(n).is_some()
            && n.get("mode").and_then(Value::as_i64) != Some(4)
            && id_text(&n["id"]).is_some_and(|id| !kept.contains(&id))
    };
    while let Some(at) = nodes.iter().position(|n| expandable(n, &kept)) {
        let Some(instance_id) = id_text(&nodes[at]["id"]) else {
            break;
        };
        let def_id = definition(&nodes[at]).unwrap_or_default();
        let def = definitions[def_id.as_str()];
        let chain = inside.get(&instance_id).cloned().unwrap_or_default();
        let size = def["nodes"].as_array().map_or(0, Vec::len);
        if chain.contains(&def_id) || nodes.len() + size > MAX_NODES {
            kept.insert(instance_id);
            continue;
        }
        let instance = nodes.remove(at);
        if instance.get("mode").and_then(Value::as_i64) == Some(2) {
            continue; // A muted instance mutes everything inside it.
        }
        let mut chain = chain;
        chain.push(def_id);
        let inner_id = |v: &Value| id_text(v).map(|id| format!("{instance_id}:{id}"));
        let instance_inputs = instance["inputs"].as_array().cloned().unwrap_or_default();
        let promoted_values = instance["widgets_values"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let def_inputs: Vec<&Value> = def["inputs"].as_array().into_iter().flatten().collect();
        let value_of = promoted_value(&def_inputs, &instance_inputs, &promoted_values);
        // The instance's outer input link per subgraph input slot, by name;
        // an unlinked promoted widget becomes a primitive holding its value.
        let mut outer_inputs: Vec<Option<i64>> = Vec::new();
        for (k, input) in def_inputs.iter().enumerate() {
            let outer = instance_inputs.iter().find(|i| i["name"] == input["name"]);
            let linked = outer.and_then(|i| i["link"].as_i64());
            outer_inputs.push(match (linked, value_of(k)) {
                (Some(link), _) => Some(link),
                (None, Some(value)) => {
                    let Some(id) = ids.next() else { return ui.clone() };
                    let primitive = format!("{instance_id}:promoted{k}");
                    nodes.push(json!({"id": primitive, "type": "PrimitiveNode", "mode": 0, "widgets_values": [value]}));
                    links.push(json!([id, primitive, 0, instance_id, k, input["type"].clone()]));
                    Some(id)
                }
                (None, None) => None,
            });
        }
        let origin_of = |links: &[Value], link: i64| {
            links
                .iter()
                .find(|l| l[0] == link)
                .map(|l| (l[1].clone(), l[2].as_u64().unwrap_or(0)))
        };
        let mut renamed: HashMap<i64, Option<i64>> = HashMap::new();
        let mut outputs: HashMap<u64, (Value, u64)> = HashMap::new();
        for link in def["links"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(ui_link)
        {
            let from_input = link.origin.as_i64() == Some(INPUT_NODE);
            let outer = || {
                outer_inputs
                    .get(link.origin_slot as usize)
                    .copied()
                    .flatten()
            };
            if link.target.as_i64() == Some(OUTPUT_NODE) {
                let source = if from_input {
                    outer().and_then(|l| origin_of(&links, l))
                } else {
                    inner_id(&link.origin).map(|o| (json!(o), link.origin_slot))
                };
                if let Some(source) = source {
                    outputs.insert(link.target_slot, source);
                }
                continue;
            }
            if from_input {
                renamed.insert(link.id, outer());
                continue;
            }
            let (Some(o), Some(t)) = (inner_id(&link.origin), inner_id(&link.target)) else {
                continue;
            };
            let Some(id) = ids.next() else {
                return ui.clone();
            };
            renamed.insert(link.id, Some(id));
            links.push(json!([
                id,
                o,
                link.origin_slot,
                t,
                link.target_slot,
                link.kind
            ]));
        }
        // Outer consumers of the instance's outputs now read the inner node.
        for link in &mut links {
            if id_text(&link[1]).as_deref() == Some(instance_id.as_str())
                && let Some((origin, slot)) = link[2].as_u64().and_then(|s| outputs.get(&s))
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
            inside.insert(id, chain.clone());
            nodes.push(node);
        }
    }
    let mut flat: Map<String, Value> = ui.as_object().cloned().unwrap_or_default();
    flat.insert("nodes".into(), Value::Array(nodes));
    flat.insert("links".into(), Value::Array(links));
    Value::Object(flat)
}

/// Widget types a subgraph input can carry a value of.
const WIDGET_TYPES: &[&str] = &["INT", "FLOAT", "STRING", "BOOLEAN", "COMBO"];

/// The value an instance holds for subgraph input `k`: its
/// `widgets_values` hold one value per widget-typed subgraph input, in
/// order (the current frontend), or one per widget input of the instance
/// (files from before); `None` when neither count fits or the input has
/// none.
fn promoted_value<'a>(
    def_inputs: &[&Value],
    instance_inputs: &'a [Value],
    values: &'a [Value],
) -> impl Fn(usize) -> Option<&'a Value> + use<'a> {
    let typed: Vec<Option<usize>> = def_inputs
        .iter()
        .scan(0, |next, input| {
            let kind = input["type"].as_str().unwrap_or_default();
            Some(WIDGET_TYPES.contains(&kind).then(|| {
                *next += 1;
                *next - 1
            }))
        })
        .collect();
    let per_typed = typed.iter().flatten().count() == values.len();
    let names: Vec<Option<String>> = def_inputs
        .iter()
        .map(|i| i["name"].as_str().map(str::to_string))
        .collect();
    move |k| {
        if per_typed {
            return values.get((*typed.get(k)?)?);
        }
        let name = names.get(k)?.as_deref()?;
        let promoted: Vec<&Value> = instance_inputs
            .iter()
            .filter(|i| i.get("widget").is_some())
            .collect();
        (promoted.len() == values.len())
            .then(|| promoted.iter().position(|p| p["name"] == name))
            .flatten()
            .and_then(|j| values.get(j))
    }
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
    let mut links = array_links(ui);
    let mut ids = LinkIds::after(&links);
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
        let mut consumed: HashSet<(i64, i64)> = HashSet::new();
        for l in def_links.iter().filter(|l| !l[0].is_null()) {
            let (src, sslot, dst, dslot) = (slot(l, 0), slot(l, 1), slot(l, 2), slot(l, 3));
            consumed.insert((src, sslot));
            let Some(next_link) = ids.next() else {
                return ui.clone();
            };
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
            // Anything but an object is not a node (a hand-edited or broken
            // file); it is left out, keeping the others' indices.
            if !node.is_object() {
                continue;
            }
            let mut node = (*node).clone();
            node["id"] = json!(format!("{group_id}:{i}"));
            // A muted or bypassed group mutes or bypasses its contents.
            if let Some(mode @ (2 | 4)) = instance.get("mode").and_then(Value::as_i64) {
                node["mode"] = json!(mode);
            }
            if let Some(inputs) = node.get_mut("inputs").and_then(Value::as_array_mut) {
                for (s, input) in inputs.iter_mut().enumerate() {
                    if let Some(input) = input.as_object_mut() {
                        let feed = feeds.get(&(i as i64, s as i64)).cloned();
                        input.insert("link".into(), feed.unwrap_or(Value::Null));
                    }
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

    /// The flattened link with id `id`.
    fn link_with_id(flat: &Value, id: i64) -> &Value {
        flat["links"]
            .as_array()
            .and_then(|links| links.iter().find(|l| l[0] == id))
            .expect("the link")
    }

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
        let link = link_with_id(&flat, b);
        assert_eq!(link[1], "5:3");
        let out = link_with_id(&flat, 11);
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
        let link = link_with_id(&flat, inner);
        assert_eq!((link[1].clone(), link[2].clone()), (json!("7:0"), json!(0)));
        let out = link_with_id(&flat, 21);
        assert_eq!(
            out[1], "7:1",
            "the unconsumed inner output is the group's output"
        );
    }

    #[test]
    fn recursive_bypassed_and_promoted_instances() {
        let def = |inner: Value| {
            json!({"id": "sg", "inputs": [{"name": "seed", "type": "INT"}],
                   "nodes": [inner],
                   "links": [{"id": 1, "origin_id": -10, "origin_slot": 0, "target_id": 2, "target_slot": 0, "type": "INT"}]})
        };
        // A definition that holds an instance of itself stops after one level.
        let recursive = json!({
            "nodes": [{"id": 5, "type": "sg", "inputs": [{"name": "seed", "link": null}]}],
            "links": [],
            "definitions": {"subgraphs": [def(json!({"id": 2, "type": "sg", "inputs": [{"name": "seed", "link": 1}]}))]}
        });
        let flat = flatten(&recursive);
        let ids: Vec<Value> = flat["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].clone())
            .collect();
        assert_eq!(ids, [json!("5:2")], "the inner instance is left whole");
        // A bypassed instance stays as it is.
        let mut bypassed = recursive.clone();
        bypassed["nodes"][0]["mode"] = json!(4);
        assert_eq!(flatten(&bypassed)["nodes"][0]["id"], 5);
        // A promoted widget value feeds the inner input through a primitive.
        let promoted = json!({
            "nodes": [{"id": 5, "type": "sg", "inputs": [{"name": "seed", "link": null, "widget": {"name": "seed"}}], "widgets_values": [99]}],
            "links": [],
            "definitions": {"subgraphs": [def(json!({"id": 2, "type": "KSampler", "inputs": [{"name": "seed", "link": 1}]}))]}
        });
        let flat = flatten(&promoted);
        let primitive = flat["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["type"] == "PrimitiveNode")
            .unwrap();
        assert_eq!(primitive["widgets_values"], json!([99]));
        let sampler = flat["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == "5:2")
            .unwrap();
        let link = sampler["inputs"][0]["link"].as_i64().unwrap();
        let origin = link_with_id(&flat, link);
        assert_eq!(origin[1], primitive["id"]);
    }

    #[test]
    fn an_instance_holds_one_value_per_widget_typed_subgraph_input() {
        // Today's frontend: the instance's values follow the subgraph's
        // inputs of widget types (the model input takes none), whichever
        // of them the instance shows as widgets.
        let file = json!({
            "nodes": [{"id": 5, "type": "sg",
                       "inputs": [{"name": "model", "link": null},
                                  {"name": "steps", "link": null, "widget": {"name": "steps"}}],
                       "widgets_values": ["a prompt", 25, "euler"]}],
            "links": [],
            "definitions": {"subgraphs": [{
                "id": "sg",
                "inputs": [{"name": "text", "type": "STRING"}, {"name": "model", "type": "MODEL"},
                           {"name": "steps", "type": "INT"}, {"name": "sampler", "type": "COMBO"}],
                "nodes": [{"id": 2, "type": "KSampler", "inputs": [
                    {"name": "model", "link": 1}, {"name": "steps", "link": 2},
                    {"name": "sampler_name", "link": 3}]}],
                "links": [
                    {"id": 1, "origin_id": -10, "origin_slot": 1, "target_id": 2, "target_slot": 0, "type": "MODEL"},
                    {"id": 2, "origin_id": -10, "origin_slot": 2, "target_id": 2, "target_slot": 1, "type": "INT"},
                    {"id": 3, "origin_id": -10, "origin_slot": 3, "target_id": 2, "target_slot": 2, "type": "COMBO"}]
            }]}
        });
        let flat = flatten(&file);
        let nodes = flat["nodes"].as_array().unwrap();
        let sampler = nodes.iter().find(|n| n["id"] == "5:2").unwrap();
        let value_at = |input: usize| {
            let link = sampler["inputs"][input]["link"].as_i64()?;
            let origin = link_with_id(&flat, link)[1].clone();
            let primitive = nodes.iter().find(|n| n["id"] == origin)?;
            Some(primitive["widgets_values"][0].clone())
        };
        assert_eq!(value_at(0), None, "the unlinked model has no value");
        assert_eq!(value_at(1), Some(json!(25)));
        assert_eq!(value_at(2), Some(json!("euler")));
    }
}
