//! The map from document paths to source positions (the positions
//! themselves are `span`'s).

use crate::node::{Node, NodeValue};
use crate::path::{DocPath, Segment};
pub use crate::span::{Position, Span};

/// Where each node of a parsed document came from.
///
/// It keeps the located node tree and answers path lookups by walking it, so
/// building it costs nothing beyond the parse. For a mapping entry,
/// [`SourceMap::key_span`] gives the span of its key, so diagnostics about a
/// field can point at the field name.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    root: Option<Node>,
}

impl SourceMap {
    /// A map over the tree rooted at `root`.
    pub fn new(root: Option<Node>) -> Self {
        Self { root }
    }

    fn entry(&self, path: &DocPath) -> Option<(Option<&Node>, &Node)> {
        let mut key = None;
        let mut node = self.root.as_ref()?;
        for segment in &path.segments() {
            match (segment, &node.value) {
                (Segment::Key(name), NodeValue::Map(entries)) => {
                    let (k, v) = entries.iter().find(|(k, _)| match &k.value {
                        NodeValue::Scalar(s) => &s.text == name,
                        _ => false,
                    })?;
                    key = Some(k);
                    node = v;
                }
                (Segment::Index(i), NodeValue::Seq(items)) => {
                    key = None;
                    node = items.get(*i)?;
                }
                _ => return None,
            }
        }
        Some((key, node))
    }

    /// The node at `path`, if the document has one there.
    pub fn node(&self, path: &DocPath) -> Option<&Node> {
        self.entry(path).map(|(_, node)| node)
    }

    /// The span of the node at `path`, if the document has one there.
    pub fn value_span(&self, path: &DocPath) -> Option<Span> {
        self.entry(path).map(|(_, node)| node.span)
    }

    /// The span of the mapping key of the entry at `path`.
    pub fn key_span(&self, path: &DocPath) -> Option<Span> {
        self.entry(path).and_then(|(key, _)| key.map(|k| k.span))
    }

    /// The best span to report for `path`: its key if it is a mapping entry,
    /// else the node itself, else the nearest ancestor that exists.
    pub fn locate(&self, path: &DocPath) -> Option<Span> {
        let mut probe = path.clone();
        loop {
            if let Some((key, node)) = self.entry(&probe) {
                return Some(key.map_or(node.span, |k| k.span));
            }
            if probe.is_root() {
                return None;
            }
            probe = probe.parent();
        }
    }

    /// The located tree itself.
    pub fn root(&self) -> Option<&Node> {
        self.root.as_ref()
    }
}
