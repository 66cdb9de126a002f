//! The located YAML nodes a parse gives (built by `tree`, walked by the
//! source map and the deserializer).

use crate::span::Span;

/// A parsed node.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// What the node holds.
    pub value: NodeValue,
    /// Where it was written.
    pub span: Span,
}

/// The content of a [`Node`].
#[derive(Clone, Debug, PartialEq)]
pub enum NodeValue {
    /// A scalar with its resolved type.
    Scalar(Scalar),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping; keys are nodes so their spans are kept. Keys are unique.
    Map(Vec<(Node, Node)>),
}

/// A scalar as written and as resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Scalar {
    /// The scalar's text after YAML unescaping.
    pub text: String,
    /// The core-schema type the scalar resolves to.
    pub resolved: Resolved,
}

/// The YAML 1.2 core-schema resolution of a scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Resolved {
    /// `~`, `null`, or empty.
    Null,
    /// `true` / `false` (three spellings each).
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer too large for `i64`.
    UInt(u64),
    /// A float (including integers too large for 64 bits).
    Float(f64),
    /// Anything else, and every quoted or block scalar.
    Str,
}
