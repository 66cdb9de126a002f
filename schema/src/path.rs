//! Document paths: the address of a node inside an inference-metadata document.
//!
//! Paths are structured (a list of map keys and list indices) so that keys which
//! contain dots, such as the SSA value name `request.max_iterations`, stay
//! unambiguous. They print as `pipeline.workflow.inputs["request.max_iterations"]`.

use std::fmt;

/// One step of a [`DocPath`]: a mapping key or a sequence index.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Segment {
    /// A key of a mapping.
    Key(String),
    /// A zero-based index into a sequence.
    Index(usize),
}

/// The location of a node in a document, from the root down.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DocPath(Vec<Segment>);

impl DocPath {
    /// The document root.
    pub fn root() -> Self {
        Self(Vec::new())
    }

    /// Parses the dotted notation produced by `Display` (`a.b[0]["c.d"]`).
    /// Returns `None` for malformed text.
    pub fn parse(text: &str) -> Option<Self> {
        let mut segments = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("[\"") {
                let (key, tail) = split_quoted(after)?;
                segments.push(Segment::Key(key));
                rest = tail.strip_prefix(']')?;
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after.find(']')?;
                segments.push(Segment::Index(after[..end].parse().ok()?));
                rest = &after[end + 1..];
            } else {
                let body = rest.strip_prefix('.').unwrap_or(rest);
                let end = body.find(['.', '[']).unwrap_or(body.len());
                if end == 0 {
                    return None;
                }
                segments.push(Segment::Key(body[..end].to_string()));
                rest = &body[end..];
            }
        }
        Some(Self(segments))
    }

    /// A new path with `key` appended.
    pub fn key(&self, key: impl Into<String>) -> Self {
        let mut next = self.clone();
        next.0.push(Segment::Key(key.into()));
        next
    }

    /// A new path with `index` appended.
    pub fn index(&self, index: usize) -> Self {
        let mut next = self.clone();
        next.0.push(Segment::Index(index));
        next
    }

    /// Appends a segment in place (used while walking a tree).
    pub(crate) fn push(&mut self, segment: Segment) {
        self.0.push(segment);
    }

    /// Removes the last segment in place.
    pub(crate) fn pop(&mut self) {
        self.0.pop();
    }

    /// The segments from the root down.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// The path one level up (the root stays the root).
    pub fn parent(&self) -> Self {
        let mut up = self.clone();
        up.0.pop();
        up
    }

    /// The last mapping key of the path, if the path ends in one.
    pub fn last_key(&self) -> Option<&str> {
        match self.0.last() {
            Some(Segment::Key(key)) => Some(key),
            _ => None,
        }
    }

    /// Whether the path has no segments.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
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
        for (i, segment) in self.0.iter().enumerate() {
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
