//! Resource bounds applied while reading a document, so that hostile input
//! gets a clear error instead of exhausting memory or the stack.

/// Bounds for reading one document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted document, in bytes.
    pub max_bytes: usize,
    /// Deepest accepted nesting of collections.
    pub max_depth: usize,
    /// Most nodes the document may expand to (aliases included).
    pub max_nodes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: 16 * 1024 * 1024,
            max_depth: 128,
            max_nodes: 1_000_000,
        }
    }
}
