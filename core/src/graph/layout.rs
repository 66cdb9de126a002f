//! Automatic layered layout of a [`ViewGraph`]: within every scope (the top
//! level, a loop, a branch case) items go into columns by dependency depth
//! and stack in document order; frames are laid out recursively as blocks
//! and branch cases stack as lanes. Nothing overlaps by construction.

use super::{FrameId, FrameKind, NodeId, ViewGraph};
use std::collections::HashMap;

/// An axis-aligned rectangle in canvas units.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rect {
    /// Left.
    pub x: f32,
    /// Top.
    pub y: f32,
    /// Width.
    pub w: f32,
    /// Height.
    pub h: f32,
}

impl Rect {
    /// Whether the interiors of two rectangles intersect.
    pub fn overlaps(&self, other: &Rect) -> bool {
        self.x < other.x + other.w
            && other.x < self.x + self.w
            && self.y < other.y + other.h
            && other.y < self.y + self.h
    }

    /// Whether `other` lies inside this rectangle.
    pub fn contains(&self, other: &Rect) -> bool {
        other.x >= self.x
            && other.y >= self.y
            && other.x + other.w <= self.x + self.w
            && other.y + other.h <= self.y + self.h
    }
}

/// Node and frame rectangles.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layout {
    /// One per node.
    pub nodes: Vec<Rect>,
    /// One per frame.
    pub frames: Vec<Rect>,
}

/// Width of a node.
pub const NODE_WIDTH: f32 = 200.0;
const HEADER: f32 = 28.0;
const PORT_ROW: f32 = 20.0;
const PAD: f32 = 16.0;
const FRAME_HEADER: f32 = 26.0;
const COLUMN_GAP: f32 = 64.0;
const ROW_GAP: f32 = 20.0;

/// Height of a node with its ports.
pub fn node_height(inputs: usize, outputs: usize) -> f32 {
    HEADER + PORT_ROW * inputs.max(outputs).max(1) as f32
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Item {
    Node(NodeId),
    Frame(FrameId),
}

struct Placer<'g> {
    graph: &'g ViewGraph,
    /// Items directly in each scope (`None` = top level), in document order.
    scopes: HashMap<Option<FrameId>, Vec<Item>>,
    layout: Layout,
    sizes: HashMap<Item, (f32, f32)>,
    /// Offsets of items relative to their scope's content origin.
    offsets: HashMap<Item, (f32, f32)>,
}

impl Placer<'_> {
    /// The item of scope `scope` that contains `node` (the node itself, or
    /// the outermost frame below `scope` holding it).
    fn item_in(&self, node: NodeId, scope: Option<FrameId>) -> Option<Item> {
        let mut frame = self.graph.nodes[node].frame;
        if frame == scope {
            return Some(Item::Node(node));
        }
        while let Some(f) = frame {
            let parent = self.graph.frames[f].parent;
            if parent == scope {
                return Some(Item::Frame(f));
            }
            frame = parent;
        }
        None
    }

    /// Lays out `scope` and returns its content size.
    fn scope(&mut self, scope: Option<FrameId>) -> (f32, f32) {
        let items = self.scopes.get(&scope).cloned().unwrap_or_default();
        let lanes = scope.is_some_and(|f| self.graph.frames[f].kind == FrameKind::Branch);
        for item in &items {
            if let Item::Frame(f) = item {
                let (w, h) = self.scope(Some(*f));
                self.sizes
                    .insert(*item, (w + 2.0 * PAD, h + 2.0 * PAD + FRAME_HEADER));
            } else if let Item::Node(n) = item {
                let node = &self.graph.nodes[*n];
                self.sizes.insert(
                    *item,
                    (
                        NODE_WIDTH,
                        node_height(node.inputs.len(), node.outputs.len()),
                    ),
                );
            }
        }
        if lanes {
            let mut y = 0.0f32;
            let mut width = 0.0f32;
            for item in &items {
                let (w, h) = self.sizes[item];
                self.offsets.insert(*item, (0.0, y));
                y += h + ROW_GAP;
                width = width.max(w);
            }
            return (width, (y - ROW_GAP).max(0.0));
        }
        let index: HashMap<Item, usize> =
            items.iter().enumerate().map(|(i, it)| (*it, i)).collect();
        let mut layer = vec![0usize; items.len()];
        let deps: Vec<(usize, usize)> = self
            .graph
            .edges
            .iter()
            .filter(|e| !e.back_edge)
            .filter_map(|e| {
                let a = *index.get(&self.item_in(e.from.0, scope)?)?;
                let b = *index.get(&self.item_in(e.to.0, scope)?)?;
                (a != b).then_some((a, b))
            })
            .collect();
        for _ in 0..items.len() {
            let mut changed = false;
            for &(a, b) in &deps {
                if layer[b] < layer[a] + 1 && layer[a] < items.len() {
                    layer[b] = layer[a] + 1;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let columns = layer.iter().copied().max().map_or(0, |m| m + 1);
        let mut widths = vec![0.0f32; columns];
        let mut heights = vec![0.0f32; columns];
        for (i, item) in items.iter().enumerate() {
            let (w, h) = self.sizes[item];
            widths[layer[i]] = widths[layer[i]].max(w);
            let y = heights[layer[i]];
            self.offsets.insert(*item, (0.0, y));
            heights[layer[i]] = y + h + ROW_GAP;
        }
        let mut x = 0.0;
        let mut column_x = vec![0.0f32; columns];
        for c in 0..columns {
            column_x[c] = x;
            x += widths[c] + COLUMN_GAP;
        }
        for (i, item) in items.iter().enumerate() {
            if let Some(offset) = self.offsets.get_mut(item) {
                offset.0 = column_x[layer[i]];
            }
        }
        let width = (x - COLUMN_GAP).max(0.0);
        let height = heights.iter().map(|h| h - ROW_GAP).fold(0.0f32, f32::max);
        (width, height)
    }

    /// Turns relative offsets into absolute rectangles.
    fn place(&mut self, scope: Option<FrameId>, origin: (f32, f32)) {
        for item in self.scopes.get(&scope).cloned().unwrap_or_default() {
            let (dx, dy) = self.offsets.get(&item).copied().unwrap_or_default();
            let (w, h) = self.sizes.get(&item).copied().unwrap_or_default();
            let rect = Rect {
                x: origin.0 + dx,
                y: origin.1 + dy,
                w,
                h,
            };
            match item {
                Item::Node(n) => self.layout.nodes[n] = rect,
                Item::Frame(f) => {
                    self.layout.frames[f] = rect;
                    self.place(Some(f), (rect.x + PAD, rect.y + PAD + FRAME_HEADER));
                }
            }
        }
    }
}

/// Places every node and frame of `graph`.
pub fn layout(graph: &ViewGraph) -> Layout {
    let mut scopes: HashMap<Option<FrameId>, Vec<(usize, Item)>> = HashMap::new();
    // Document order: a frame sits where its first node (or, if empty, its
    // creation) is; nodes are created in document order.
    let mut first: Vec<usize> = vec![usize::MAX; graph.frames.len()];
    for (n, node) in graph.nodes.iter().enumerate() {
        let mut frame = node.frame;
        while let Some(f) = frame {
            first[f] = first[f].min(n);
            frame = graph.frames[f].parent;
        }
    }
    for (n, node) in graph.nodes.iter().enumerate() {
        scopes
            .entry(node.frame)
            .or_default()
            .push((n, Item::Node(n)));
    }
    for (f, frame) in graph.frames.iter().enumerate() {
        let order = if first[f] == usize::MAX {
            graph.nodes.len() + f
        } else {
            first[f]
        };
        scopes
            .entry(frame.parent)
            .or_default()
            .push((order, Item::Frame(f)));
    }
    let scopes = scopes
        .into_iter()
        .map(|(scope, mut items)| {
            items.sort_by_key(|(order, item)| (*order, matches!(item, Item::Node(_))));
            (scope, items.into_iter().map(|(_, item)| item).collect())
        })
        .collect();
    let mut placer = Placer {
        graph,
        scopes,
        layout: Layout {
            nodes: vec![Rect::default(); graph.nodes.len()],
            frames: vec![Rect::default(); graph.frames.len()],
        },
        sizes: HashMap::new(),
        offsets: HashMap::new(),
    };
    placer.scope(None);
    placer.place(None, (0.0, 0.0));
    placer.layout
}
