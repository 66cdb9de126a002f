//! Positions and extents in the source text.

/// A position in the source text: 1-based line and column (columns count
/// characters), plus the 0-based character offset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// 0-based character offset from the start of the text.
    pub offset: usize,
}

/// The extent of one node in the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First character of the node.
    pub start: Position,
    /// One past the last character of the node.
    pub end: Position,
}
