//! Constants ComfyUI settles before any model runs, folded into the nodes
//! that read them (what each class gives is in `gives`): a primitive node
//! whose `value` is written in the graph gives that value, a
//! `ComfySwitchNode` whose `switch` is written (or folded) gives what its
//! chosen input (`on_true` or `on_false`) carries, a link or a value, and
//! the string, resolution, number and math nodes give what they compute
//! from written inputs, and `GetImageSize` the size of a blank picture
//! the graph writes (maybe scaled). The official templates drive samplers, prompts,
//! sizes and model paths through them (a "turbo" switch choosing LoRA,
//! steps and cfg). What a folded node gave is then written in its readers'
//! inputs, so the run parameters it set become the workflow's typed inputs
//! as if the graph had written them; a switch's other branch is left to no
//! reader (and so listed as ignored). A node whose inputs come from a node
//! that does not fold, or that is read at an output it does not give,
//! stays for the lowering to judge. Folding visits each node again only
//! when one of its inputs changed, so it takes time in proportion to the
//! graph's size.

mod gives;
mod sizes;

pub(super) use gives::python_str;

use crate::comfyui::link::api_link;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

/// A node folded into its readers.
pub(super) struct Folded {
    pub id: String,
    /// The nodes and inputs that now hold what it gave.
    pub readers: Vec<(String, String)>,
    /// Its own inputs whose values it gave on (a primitive's `value`, a
    /// switch's `switch` and chosen branch, every operand of a
    /// computation).
    pub passes: Vec<String>,
    /// Nodes it read that stay unfolded (see `gives::Gift::read`).
    pub read: Vec<String>,
}

/// The graph with every foldable node folded (the others in their order),
/// and the folded nodes in the order they were folded: a node after the
/// folded nodes it takes a value from (a switch passing a link on may fold
/// before the node it chose).
pub(super) fn constants(nodes: &Map<String, Value>) -> (Map<String, Value>, Vec<Folded>) {
    let mut nodes = nodes.clone();
    let mut readers_of: HashMap<String, Vec<(String, String)>> = HashMap::new();
    for (reader, node) in &nodes {
        for (input, value) in inputs(node) {
            if let Some((origin, _)) = api_link(value) {
                readers_of
                    .entry(origin)
                    .or_default()
                    .push((reader.clone(), input.clone()));
            }
        }
    }
    let mut pending: VecDeque<String> = nodes.keys().cloned().collect();
    let mut queued: HashSet<String> = pending.iter().cloned().collect();
    let mut folded = Vec::new();
    while let Some(id) = pending.pop_front() {
        queued.remove(&id);
        let Some(node) = nodes.get(&id) else {
            continue;
        };
        // Its readers now: (reader, input, output slot read).
        let mut readers: Vec<(String, String, usize)> = Vec::new();
        for (reader, input) in readers_of.get(&id).into_iter().flatten() {
            let link = nodes
                .get(reader)
                .and_then(|n| n.get("inputs")?.get(input))
                .and_then(api_link);
            if let Some((origin, slot)) = link
                && origin == id
                && !readers.iter().any(|(r, i, _)| r == reader && i == input)
            {
                readers.push((reader.clone(), input.clone(), slot_index(slot)));
            }
        }
        let Some(gift) = gives::gives(node, &nodes).filter(|gift| {
            // A `Null` output is none: a reader of it keeps the node.
            readers
                .iter()
                .all(|(_, _, slot)| gift.outputs.get(*slot).is_some_and(|v| !v.is_null()))
                && (!gift.needs_reader || !readers.is_empty())
                && gift
                    .outputs
                    .iter()
                    .all(|value| api_link(value).is_none_or(|(origin, _)| origin != id))
        }) else {
            continue;
        };
        let Some(node) = nodes.remove(&id) else {
            continue;
        };
        // What it read may fold now that this reader is gone (a switch's
        // unchosen branch read at an output it lacks).
        for (_, value) in inputs(&node) {
            if let Some((origin, _)) = api_link(value)
                && nodes.contains_key(&origin)
                && queued.insert(origin.clone())
            {
                pending.push_back(origin);
            }
        }
        for (reader, input, slot) in &readers {
            let Some(value) = nodes
                .get_mut(reader)
                .and_then(|n| n.get_mut("inputs")?.get_mut(input))
            else {
                continue;
            };
            *value = gift.outputs[*slot].clone();
            if let Some((origin, _)) = api_link(value) {
                readers_of
                    .entry(origin)
                    .or_default()
                    .push((reader.clone(), input.clone()));
            }
            if queued.insert(reader.clone()) {
                pending.push_back(reader.clone());
            }
            // A size read through it (a `GetImageSize` of a blank picture
            // whose width a primitive wrote) may be written now.
            let mut carried = vec![reader.clone()];
            let mut seen = HashSet::new();
            while let Some(at) = carried.pop() {
                let class = nodes.get(&at).and_then(|n| n["class_type"].as_str());
                if !class.is_some_and(|c| sizes::CARRIERS.contains(&c)) || !seen.insert(at.clone())
                {
                    continue;
                }
                for (next, _) in readers_of.get(&at).into_iter().flatten() {
                    if queued.insert(next.clone()) {
                        pending.push_back(next.clone());
                    }
                    carried.push(next.clone());
                }
            }
        }
        folded.push(Folded {
            id,
            readers: readers.into_iter().map(|(r, i, _)| (r, i)).collect(),
            passes: gift.passes,
            read: gift.read,
        });
    }
    (nodes, folded)
}

/// A node's inputs (none where it has no `inputs` object).
fn inputs(node: &Value) -> impl Iterator<Item = (&String, &Value)> {
    node.get("inputs")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// An output slot as an index (past any output where it does not fit).
fn slot_index(slot: u64) -> usize {
    usize::try_from(slot).unwrap_or(usize::MAX)
}

/// The folded nodes that gave something to a node in `used` (directly or
/// through other folded nodes, through the inputs they pass on: not a
/// switch's other branch).
pub(super) fn used<'a>(folded: &'a [Folded], used: &BTreeSet<String>) -> BTreeSet<&'a String> {
    let mut reached: BTreeSet<&String> = BTreeSet::new();
    // Readers fold after what they read, so the last folded come first.
    for (at, node) in folded.iter().enumerate().rev() {
        let reaches = |(reader, input): &(String, String)| {
            used.contains(reader)
                || folded[at..].iter().any(|f| {
                    f.id == *reader
                        && reached.contains(&f.id)
                        && f.passes.iter().any(|p| p == input)
                })
        };
        if node.readers.iter().any(reaches) {
            reached.insert(&node.id);
        }
    }
    reached
}

#[cfg(test)]
mod tests {
    use super::constants;
    use serde_json::{Value, json};
    use std::collections::BTreeSet;

    fn folded(graph: Value) -> (Value, Vec<String>) {
        let (nodes, folded) = constants(graph.as_object().expect("object"));
        (
            Value::Object(nodes),
            folded.into_iter().map(|f| f.id).collect(),
        )
    }

    #[test]
    fn a_switch_on_a_primitive_chooses_its_branch_and_primitives_become_values() {
        let (g, ids) = folded(json!({
            "1": {"class_type": "PrimitiveBoolean", "inputs": {"value": true}},
            "2": {"class_type": "PrimitiveFloat", "inputs": {"value": 1.0}},
            "3": {"class_type": "PrimitiveFloat", "inputs": {"value": 4.0}},
            "4": {"class_type": "ComfySwitchNode", "inputs": {"switch": ["1", 0], "on_true": ["2", 0], "on_false": ["3", 0]}},
            "5": {"class_type": "ComfySwitchNode", "inputs": {"switch": ["1", 0], "on_true": ["7", 0], "on_false": ["8", 0]}},
            "6": {"class_type": "KSampler", "inputs": {"cfg": ["4", 0], "model": ["5", 0], "steps": 8}},
            "7": {"class_type": "LoraLoaderModelOnly", "inputs": {"model": ["8", 0]}},
            "8": {"class_type": "UNETLoader", "inputs": {}}
        }));
        assert_eq!(
            g["6"]["inputs"],
            json!({"cfg": 1.0, "model": ["7", 0], "steps": 8})
        );
        for id in ["1", "2", "3", "4", "5"] {
            assert!(g.get(id).is_none(), "{id} folded");
            assert!(ids.contains(&id.to_string()), "{id} listed");
        }
        // The other branch stays, for no reader.
        assert!(g.get("8").is_some() && g.get("7").is_some());
    }

    #[test]
    fn constants_count_as_used_only_where_what_they_gave_is_read() {
        let (_, folded) = constants(
            json!({
                "1": {"class_type": "PrimitiveBoolean", "inputs": {"value": true}},
                "2": {"class_type": "PrimitiveFloat", "inputs": {"value": 1.0}},
                "3": {"class_type": "PrimitiveFloat", "inputs": {"value": 4.0}},
                "4": {"class_type": "ComfySwitchNode", "inputs": {"switch": ["1", 0], "on_true": ["2", 0], "on_false": ["3", 0]}},
                "5": {"class_type": "KSampler", "inputs": {"cfg": ["4", 0]}},
                "6": {"class_type": "PrimitiveInt", "inputs": {"value": 3}},
                "7": {"class_type": "Unread", "inputs": {"n": ["6", 0]}}
            })
            .as_object()
            .expect("object"),
        );
        let sampler = BTreeSet::from(["5".to_string()]);
        let used: Vec<&String> = super::used(&folded, &sampler).into_iter().collect();
        // The switch, what it chose and what it chose by; not the other
        // branch, nor a constant of an unused node.
        assert_eq!(used, ["1", "2", "4"]);
    }

    #[test]
    fn a_camera_angle_folds_into_a_prompt_unless_its_camera_is_read() {
        let (g, ids) = folded(json!({
            "1": {"class_type": "CameraAngle", "inputs": {"horizontal_angle": 90, "vertical_angle": 0, "zoom": 8.0}},
            "2": {"class_type": "CLIPTextEncode", "inputs": {"text": ["1", 1]}}
        }));
        assert_eq!(
            g["2"]["inputs"]["text"],
            json!("right side view eye-level shot close-up")
        );
        assert_eq!(ids, ["1"]);
        let graph = json!({
            "1": {"class_type": "CameraAngle", "inputs": {"horizontal_angle": 90, "vertical_angle": 0, "zoom": 8.0}},
            "2": {"class_type": "CLIPTextEncode", "inputs": {"text": ["1", 1]}},
            "3": {"class_type": "Load3D", "inputs": {"camera_info": ["1", 0]}}
        });
        let (g, ids) = folded(graph.clone());
        assert_eq!(g, graph);
        assert!(ids.is_empty());
    }

    #[test]
    fn a_blank_picture_size_folds_into_the_latent() {
        let (g, ids) = folded(json!({
            "1": {"class_type": "EmptyImage", "inputs": {"width": 1280, "height": 720, "batch_size": 1, "color": 0}},
            "2": {"class_type": "ImageScaleBy", "inputs": {"upscale_method": "lanczos", "scale_by": 0.5, "image": ["1", 0]}},
            "3": {"class_type": "GetImageSize", "inputs": {"image": ["2", 0]}},
            "4": {"class_type": "EmptyLTXVLatentVideo", "inputs": {"width": ["3", 0], "height": ["3", 1], "length": 97, "batch_size": ["3", 2]}}
        }));
        assert_eq!(
            g["4"]["inputs"],
            json!({"width": 640, "height": 360, "length": 97, "batch_size": 1})
        );
        assert_eq!(ids, ["3"]);
    }

    #[test]
    fn a_blank_picture_sized_by_primitives_folds_whatever_the_order() {
        // The size is read before the primitives that write it fold.
        let (g, _) = folded(json!({
            "1": {"class_type": "GetImageSize", "inputs": {"image": ["3", 0]}},
            "2": {"class_type": "EmptyLTXVLatentVideo", "inputs": {"width": ["1", 0], "height": ["1", 1], "length": 97, "batch_size": 1}},
            "3": {"class_type": "ImageScaleBy", "inputs": {"scale_by": ["6", 0], "image": ["4", 0]}},
            "4": {"class_type": "EmptyImage", "inputs": {"width": ["5", 0], "height": 720, "batch_size": 1}},
            "5": {"class_type": "PrimitiveInt", "inputs": {"value": 1280}},
            "6": {"class_type": "PrimitiveFloat", "inputs": {"value": 0.5}}
        }));
        assert_eq!(
            g["2"]["inputs"],
            json!({"width": 640, "height": 360, "length": 97, "batch_size": 1})
        );
    }

    #[test]
    fn a_switch_choosing_itself_stays() {
        let graph = json!({
            "1": {"class_type": "ComfySwitchNode", "inputs": {"switch": true, "on_true": ["1", 0], "on_false": 2}},
            "2": {"class_type": "KSampler", "inputs": {"cfg": ["1", 0]}}
        });
        let (g, ids) = folded(graph.clone());
        assert_eq!(g, graph);
        assert!(ids.is_empty());
    }

    #[test]
    fn a_switch_read_from_another_node_and_a_linked_primitive_stay() {
        let graph = json!({
            "1": {"class_type": "SomeBoolean", "inputs": {}},
            "2": {"class_type": "ComfySwitchNode", "inputs": {"switch": ["1", 0], "on_true": 1, "on_false": 2}},
            "3": {"class_type": "PrimitiveInt", "inputs": {"value": ["1", 0]}},
            "4": {"class_type": "KSampler", "inputs": {"cfg": ["2", 0], "steps": ["3", 0]}}
        });
        let (g, ids) = folded(graph.clone());
        assert_eq!(g, graph);
        assert!(ids.is_empty());
    }
}
