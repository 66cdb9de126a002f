//! The ComfyUI graph as the user drew it, for display beside the lowered
//! workflow: nodes with their UI positions, sizes, modes and slots, links
//! between slots, and groups. An API prompt has no positions, so its nodes
//! are laid out in columns by link depth.

use super::link::{api_link, id_text, ui_link};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// How a node takes part in the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeMode {
    /// Runs.
    Active,
    /// Muted (mode 2): removed from the prompt.
    Muted,
    /// Bypassed (mode 4): its inputs pass through.
    Bypassed,
}

/// One drawn node.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewNode {
    /// Node id as the API prompt names it (a UI id as a string).
    pub id: String,
    /// Node class (`type` in the UI format).
    pub class: String,
    /// Title shown in the header.
    pub title: String,
    /// Top-left corner in canvas units.
    pub pos: [f32; 2],
    /// Width and height.
    pub size: [f32; 2],
    /// Run mode.
    pub mode: NodeMode,
    /// Input slot names, in slot order.
    pub inputs: Vec<String>,
    /// Output slot names, in slot order.
    pub outputs: Vec<String>,
    /// Widget values worth showing (`name: value` or plain values).
    pub widgets: Vec<String>,
}

/// A link from an output slot to an input slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewLink {
    /// Source node id and output slot.
    pub from: (String, usize),
    /// Target node id and input slot.
    pub to: (String, usize),
    /// The value type (`MODEL`, `LATENT`, ...), when known.
    pub kind: String,
}

/// A titled frame around nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewGroup {
    /// Its title.
    pub title: String,
    /// `[x, y, width, height]`.
    pub rect: [f32; 4],
    /// Its colour as written (`#rrggbb`), if any.
    pub color: Option<String>,
}

/// A ComfyUI graph ready to draw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ComfyView {
    /// Nodes in file order.
    pub nodes: Vec<ViewNode>,
    /// Links.
    pub links: Vec<ViewLink>,
    /// Groups.
    pub groups: Vec<ViewGroup>,
    /// Whether positions come from the UI file (else laid out here).
    pub drawn_in_comfyui: bool,
}

/// Height of a node's title bar, in canvas units (the drawing uses it too).
pub const HEADER: f32 = 26.0;
/// Height of one slot or widget row, in canvas units.
pub const ROW: f32 = 20.0;
const WIDTH: f32 = 220.0;
const MAX_WIDGETS: usize = 6;

/// A coordinate: finite and within what a canvas can hold.
fn number(v: &Value) -> Option<f32> {
    v.as_f64()
        .filter(|f| f.is_finite() && f.abs() < 1e7)
        .map(|f| f as f32)
}

/// `[x, y]` or `{"0": x, "1": y}`, as LiteGraph files write points.
fn pair(v: &Value) -> Option<[f32; 2]> {
    match v {
        Value::Array(a) if a.len() >= 2 => Some([number(&a[0])?, number(&a[1])?]),
        Value::Object(m) => Some([number(m.get("0")?)?, number(m.get("1")?)?]),
        _ => None,
    }
}

fn short(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let first = text.lines().next().unwrap_or_default();
    if first.chars().count() > 40 || text.lines().count() > 1 {
        format!("{}…", first.chars().take(39).collect::<String>())
    } else {
        first.to_string()
    }
}

fn node_height(inputs: usize, outputs: usize, widgets: usize) -> f32 {
    HEADER + ROW * (inputs.max(outputs) + widgets) as f32 + 8.0
}

impl ComfyView {
    /// The graph of a UI (LiteGraph) workflow, at its drawn positions.
    pub fn from_ui(ui: &Value) -> ComfyView {
        let mut view = ComfyView {
            drawn_in_comfyui: true,
            ..ComfyView::default()
        };
        // A subgraph instance's type is its definition's id; show its name.
        let subgraph_names: HashMap<&str, &str> = ui
            .pointer("/definitions/subgraphs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|d| Some((d["id"].as_str()?, d["name"].as_str()?)))
            .collect();
        for node in ui["nodes"].as_array().into_iter().flatten() {
            let Some(id) = id_text(&node["id"]) else {
                continue;
            };
            let class = node["type"].as_str().unwrap_or_default().to_string();
            let names = |key: &str| -> Vec<String> {
                node[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|s| {
                        s["label"]
                            .as_str()
                            .or(s["name"].as_str())
                            .unwrap_or_default()
                            .to_string()
                    })
                    .collect()
            };
            let (inputs, outputs) = (names("inputs"), names("outputs"));
            let widgets: Vec<String> = match &node["widgets_values"] {
                Value::Array(values) => values.iter().take(MAX_WIDGETS).map(short).collect(),
                Value::Object(map) => map
                    .iter()
                    .take(MAX_WIDGETS)
                    .map(|(k, v)| format!("{k}: {}", short(v)))
                    .collect(),
                _ => Vec::new(),
            };
            let mode = match node["mode"].as_i64() {
                Some(2) => NodeMode::Muted,
                Some(4) => NodeMode::Bypassed,
                _ => NodeMode::Active,
            };
            let drawn = pair(&node["size"]).unwrap_or([WIDTH, 0.0]);
            let needed = node_height(inputs.len(), outputs.len(), widgets.len());
            view.nodes.push(ViewNode {
                title: node["title"]
                    .as_str()
                    .or_else(|| subgraph_names.get(class.as_str()).copied())
                    .unwrap_or(&class)
                    .to_string(),
                pos: pair(&node["pos"]).unwrap_or_default(),
                size: [drawn[0].max(120.0), (drawn[1] + HEADER).max(needed)],
                id,
                class,
                mode,
                inputs,
                outputs,
                widgets,
            });
        }
        for link in ui["links"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(ui_link)
        {
            if let (Some(from), Some(to)) = (id_text(&link.origin), id_text(&link.target)) {
                view.links.push(ViewLink {
                    from: (from, link.origin_slot as usize),
                    to: (to, link.target_slot as usize),
                    kind: if link.kind == "*" {
                        String::new()
                    } else {
                        link.kind
                    },
                });
            }
        }
        for group in ui["groups"].as_array().into_iter().flatten() {
            let b = &group["bounding"];
            let Some(rect) = (0..4).map(|i| number(&b[i])).collect::<Option<Vec<f32>>>() else {
                continue;
            };
            view.groups.push(ViewGroup {
                title: group["title"].as_str().unwrap_or_default().to_string(),
                rect: [rect[0], rect[1], rect[2], rect[3]],
                color: group["color"].as_str().map(str::to_string),
            });
        }
        view
    }

    /// The graph of an API prompt, laid out left to right by link depth.
    pub fn from_api(api: &Value) -> ComfyView {
        let Some(nodes) = api.as_object() else {
            return ComfyView::default();
        };
        let link_of = |v: &Value| api_link(v).map(|(id, slot)| (id, slot as usize));
        let mut view = ComfyView::default();
        let mut outputs: HashMap<String, usize> = HashMap::new();
        for (id, node) in nodes {
            let inputs = node["inputs"].as_object();
            for (slot, (_, v)) in inputs
                .into_iter()
                .flatten()
                .filter(|(_, v)| link_of(v).is_some())
                .enumerate()
            {
                if let Some((origin, oslot)) = link_of(v)
                    && nodes.contains_key(&origin)
                {
                    let n = outputs.entry(origin.clone()).or_default();
                    *n = (*n).max(oslot + 1);
                    view.links.push(ViewLink {
                        from: (origin, oslot),
                        to: (id.clone(), slot),
                        kind: String::new(),
                    });
                }
            }
        }
        // Column = longest chain of links from a node without inputs.
        let mut depth: BTreeMap<&str, usize> = BTreeMap::new();
        for _ in 0..nodes.len().min(256) {
            let mut changed = false;
            for link in &view.links {
                let d = depth.get(link.from.0.as_str()).copied().unwrap_or(0) + 1;
                let entry = depth.entry(link.to.0.as_str()).or_insert(0);
                if d > *entry && d < 256 {
                    *entry = d;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut next_y: BTreeMap<usize, f32> = BTreeMap::new();
        for (id, node) in nodes {
            let class = node["class_type"].as_str().unwrap_or_default().to_string();
            let fields = node["inputs"].as_object();
            let inputs: Vec<String> = fields
                .into_iter()
                .flatten()
                .filter(|(_, v)| link_of(v).is_some())
                .map(|(k, _)| k.clone())
                .collect();
            let widgets: Vec<String> = fields
                .into_iter()
                .flatten()
                .filter(|(_, v)| link_of(v).is_none())
                .take(MAX_WIDGETS)
                .map(|(k, v)| format!("{k}: {}", short(v)))
                .collect();
            let outs = (0..outputs.get(id).copied().unwrap_or(0))
                .map(|i| format!("out {i}"))
                .collect::<Vec<_>>();
            let column = depth.get(id.as_str()).copied().unwrap_or(0);
            let height = node_height(inputs.len(), outs.len(), widgets.len());
            let y = next_y.entry(column).or_insert(0.0);
            view.nodes.push(ViewNode {
                id: id.clone(),
                title: node
                    .pointer("/_meta/title")
                    .and_then(Value::as_str)
                    .unwrap_or(&class)
                    .to_string(),
                class,
                pos: [column as f32 * (WIDTH + 80.0), *y],
                size: [WIDTH, height],
                mode: NodeMode::Active,
                inputs,
                outputs: outs,
                widgets,
            });
            *y += height + 40.0;
        }
        view
    }

    /// The drawn node an API node id belongs to: itself, or for a member of
    /// a flattened subgraph or group node (`"12:5"`) the instance `12`.
    pub fn node_for(&self, api_id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == api_id).or_else(|| {
            let outer = api_id.split(':').next()?;
            self.nodes.iter().position(|n| n.id == outer)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_ui_graph_keeps_its_positions_links_groups_and_modes() {
        let ui = json!({
            "nodes": [
                {"id": 3, "type": "KSampler", "pos": [400, 50], "size": {"0": 300, "1": 260}, "mode": 0,
                 "inputs": [{"name": "model", "link": 1}], "outputs": [{"name": "LATENT"}],
                 "widgets_values": [7, "fixed", 20]},
                {"id": 4, "type": "CheckpointLoaderSimple", "title": "Load", "pos": {"0": 10, "1": 20}, "mode": 4,
                 "outputs": [{"name": "MODEL"}, {"name": "CLIP"}], "widgets_values": ["a\nb"]}
            ],
            "links": [[1, 4, 0, 3, 0, "MODEL"], {"id": 2, "origin_id": 4, "origin_slot": 1, "target_id": 3, "target_slot": 1}],
            "groups": [{"title": "Sampling", "bounding": [0, 0, 800, 400], "color": "#3f789e"}],
            "definitions": {"subgraphs": [{"id": "KSampler", "name": "Sampler subgraph"}]}
        });
        let view = ComfyView::from_ui(&ui);
        assert!(view.drawn_in_comfyui);
        assert_eq!(view.nodes[0].pos, [400.0, 50.0]);
        assert_eq!(view.nodes[0].size, [300.0, 286.0]);
        assert_eq!(view.nodes[0].widgets, ["7", "fixed", "20"]);
        assert_eq!(view.nodes[1].title, "Load");
        assert_eq!(view.nodes[1].pos, [10.0, 20.0]);
        assert_eq!(view.nodes[1].mode, NodeMode::Bypassed);
        assert_eq!(view.nodes[1].widgets, ["a…"]);
        assert_eq!(
            view.links,
            [
                ViewLink {
                    from: ("4".into(), 0),
                    to: ("3".into(), 0),
                    kind: "MODEL".into()
                },
                ViewLink {
                    from: ("4".into(), 1),
                    to: ("3".into(), 1),
                    kind: String::new()
                },
            ]
        );
        assert_eq!(view.groups[0].rect, [0.0, 0.0, 800.0, 400.0]);
        assert_eq!(
            view.nodes[0].title, "Sampler subgraph",
            "an instance shows its definition's name"
        );
        assert_eq!(view.node_for("3:7"), Some(0));
        assert_eq!(view.node_for("9"), None);
    }

    #[test]
    fn an_api_graph_is_laid_out_in_columns_by_depth() {
        let api = json!({
            "1": {"class_type": "Loader", "inputs": {"name": "x"}},
            "2": {"class_type": "Use", "inputs": {"a": ["1", 0], "b": ["1", 1], "n": 3}},
            "3": {"class_type": "Sink", "inputs": {"images": ["2", 0], "also": ["1", 0]}}
        });
        let view = ComfyView::from_api(&api);
        assert!(!view.drawn_in_comfyui);
        let x: Vec<f32> = view.nodes.iter().map(|n| n.pos[0]).collect();
        assert_eq!(x, [0.0, 300.0, 600.0]);
        assert_eq!(view.nodes[0].outputs, ["out 0", "out 1"]);
        assert_eq!(view.nodes[1].inputs, ["a", "b"]);
        assert_eq!(view.nodes[1].widgets, ["n: 3"]);
        assert_eq!(view.links.len(), 4);
        let into_sink = &view
            .links
            .iter()
            .find(|l| l.from.0 == "2")
            .expect("link")
            .to;
        assert_eq!(view.nodes[2].inputs[into_sink.1], "images");
    }
}
