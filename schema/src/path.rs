//! Document paths: the address of a node inside an inference-metadata document.
//!
//! Paths are structured (a list of map keys and list indices) so that keys which
//! contain dots, such as the SSA value name `request.max_iterations`, stay
//! unambiguous. They print as `pipeline.workflow.inputs["request.max_iterations"]`.

use std::fmt;
use std::sync::Arc;

/// One step of a [`DocPath`]: a mapping key or a sequence index.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Segment {
    /// A key of a mapping.
    Key(String),
    /// A zero-based index into a sequence.
    Index(usize),
}

/// The location of a node in a document, from the root down.
///
/// A persistent list: extending a path allocates one small link and
/// cloning is a reference-count increment, so the validator can carry the
/// path of every node it visits without copying.
#[derive(Clone, Default)]
pub struct DocPath(Option<Arc<Link>>);

struct Link {
    parent: DocPath,
    segment: Segment,
    len: usize,
}

impl DocPath {
    /// The document root.
    pub fn root() -> Self {
        Self(None)
    }

    /// Parses the dotted notation produced by `Display` (`a.b[0]["c.d"]`).
    /// Returns `None` for malformed text.
    pub fn parse(text: &str) -> Option<Self> {
        let mut path = Self::root();
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("[\"") {
                let (key, tail) = split_quoted(after)?;
                path.push(Segment::Key(key));
                rest = tail.strip_prefix(']')?;
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after.find(']')?;
                path.push(Segment::Index(after[..end].parse().ok()?));
                rest = &after[end + 1..];
            } else {
                let body = rest.strip_prefix('.').unwrap_or(rest);
                let end = body.find(['.', '[']).unwrap_or(body.len());
                if end == 0 {
                    return None;
                }
                path.push(Segment::Key(body[..end].to_string()));
                rest = &body[end..];
            }
        }
        Some(path)
    }

    fn with(&self, segment: Segment) -> Self {
        Self(Some(Arc::new(Link {
            parent: self.clone(),
            segment,
            len: self.depth() + 1,
        })))
    }

    /// A new path with `key` appended.
    pub fn key(&self, key: impl Into<String>) -> Self {
        self.with(Segment::Key(key.into()))
    }

    /// A new path with `index` appended.
    pub fn index(&self, index: usize) -> Self {
        self.with(Segment::Index(index))
    }

    /// Appends a segment in place (used while walking a tree).
    pub fn push(&mut self, segment: Segment) {
        *self = self.with(segment);
    }

    /// Removes the last segment in place.
    pub fn pop(&mut self) {
        *self = self.parent();
    }

    /// Number of segments (0 at the root).
    pub fn depth(&self) -> usize {
        self.0.as_ref().map_or(0, |link| link.len)
    }

    /// The segments from the root down.
    pub fn segments(&self) -> Vec<Segment> {
        let mut out: Vec<Segment> = self.links().map(|l| l.segment.clone()).collect();
        out.reverse();
        out
    }

    fn links(&self) -> impl Iterator<Item = &Link> {
        std::iter::successors(self.0.as_deref(), |link| link.parent.0.as_deref())
    }

    /// The path one level up (the root stays the root).
    pub fn parent(&self) -> Self {
        self.0
            .as_ref()
            .map_or_else(Self::root, |link| link.parent.clone())
    }

    /// The last mapping key of the path, if the path ends in one.
    pub fn last_key(&self) -> Option<&str> {
        match self.0.as_deref().map(|l| &l.segment) {
            Some(Segment::Key(key)) => Some(key),
            _ => None,
        }
    }

    /// Whether the path has no segments.
    pub fn is_root(&self) -> bool {
        self.0.is_none()
    }

    /// Whether `prefix` is this path or one of its ancestors.
    pub fn starts_with(&self, prefix: &DocPath) -> bool {
        let mut probe = self.clone();
        while probe.depth() > prefix.depth() {
            probe = probe.parent();
        }
        probe == *prefix
    }
}

impl PartialEq for DocPath {
    fn eq(&self, other: &Self) -> bool {
        if self.depth() != other.depth() {
            return false;
        }
        let mut a = self.links();
        let mut b = other.links();
        loop {
            match (a.next(), b.next()) {
                (None, None) => return true,
                (Some(x), Some(y)) if std::ptr::eq(x, y) => return true,
                (Some(x), Some(y)) if x.segment == y.segment => {}
                _ => return false,
            }
        }
    }
}

impl Eq for DocPath {}

impl std::hash::Hash for DocPath {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        for link in self.links() {
            link.segment.hash(state);
        }
    }
}

impl PartialOrd for DocPath {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DocPath {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.segments().cmp(&other.segments())
    }
}

impl fmt::Debug for DocPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DocPath({self})")
    }
}

fn split_quoted(text: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &text[i + 1..])),
            '\\' => out.push(chars.next()?.1),
            other => out.push(other),
        }
    }
    None
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '@')
}

impl fmt::Display for DocPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.segments().iter().enumerate() {
            match segment {
                Segment::Key(key) if is_plain_key(key) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(key)?;
                }
                Segment::Key(key) => {
                    f.write_str("[\"")?;
                    for c in key.chars() {
                        if c == '"' || c == '\\' {
                            f.write_str("\\")?;
                        }
                        write!(f, "{c}")?;
                    }
                    f.write_str("\"]")?;
                }
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_quotes_dotted_keys_and_parse_inverts_it() {
        let path = DocPath::root()
            .key("pipeline")
            .key("workflow")
            .key("inputs")
            .key("request.max_iterations")
            .key("contract");
        let text = path.to_string();
        assert_eq!(
            text,
            "pipeline.workflow.inputs[\"request.max_iterations\"].contract"
        );
        assert_eq!(DocPath::parse(&text), Some(path));
        let steps = DocPath::root().key("steps").index(3).key("value");
        assert_eq!(steps.to_string(), "steps[3].value");
        assert_eq!(DocPath::parse("steps[3].value"), Some(steps));
    }
}
