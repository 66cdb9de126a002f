//! Small value predicates the document-level rules share.

/// Whether `s` is empty or whitespace.
pub(super) fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// Whether `n` is a finite number above zero.
pub(super) fn positive_finite(n: &serde_json::Number) -> bool {
    n.as_f64().is_some_and(|f| f.is_finite() && f > 0.0)
}
