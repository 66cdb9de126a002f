//! The YAML node tree: every node with its span, scalars resolved by the YAML
//! 1.2 core schema (as the reference reader does), anchors expanded within a
//! budget, duplicate keys collapsed (last wins) and comments located.
//!
//! JSON documents go through the same tree: JSON text is valid YAML 1.2, and
//! the loader checks JSON syntax separately first.

use crate::limits::Limits;
pub use crate::node::{Node, NodeValue, Resolved, Scalar};
use crate::path::{DocPath, Segment};
use crate::source::{Position, SourceMap, Span};
use saphyr_parser::{Event, Parser, ScalarStyle, ScanError};
use std::collections::HashMap;

/// A comment found in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    /// Where the `#` is.
    pub position: Position,
    /// The comment text, `#` included.
    pub text: String,
}

/// Why a text could not be turned into a tree.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    /// The text is not well-formed YAML.
    #[error("{message}")]
    Syntax {
        /// What the scanner or parser reported.
        message: String,
        /// Where.
        position: Position,
    },
    /// A resource bound was exceeded (nesting depth, alias expansion).
    #[error("{message}")]
    Limit {
        /// Which bound, with its value.
        message: String,
        /// Where the bound was crossed.
        position: Position,
    },
    /// A mapping key is not a string.
    #[error("{message}")]
    NonStringKey {
        /// Explanation naming the key.
        message: String,
        /// The key's position.
        position: Position,
        /// Path of the mapping holding the key.
        path: DocPath,
    },
    /// The text holds more than one YAML document.
    #[error("the file holds more than one YAML document; a metadata file is exactly one")]
    MultipleDocuments {
        /// Start of the second document.
        position: Position,
    },
}

/// A duplicate mapping key that was collapsed (the last value wins).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateKey {
    /// Path of the entry.
    pub path: DocPath,
    /// Where the later occurrence is.
    pub position: Position,
    /// Line of the earlier occurrence.
    pub first_line: usize,
}

/// The result of parsing a text into a tree.
#[derive(Clone, Debug)]
pub struct ParsedTree {
    /// The located tree (its root is `None` for an empty document).
    pub source_map: SourceMap,
    /// Every comment in the text.
    pub comments: Vec<Comment>,
    /// Keys that appeared more than once in one mapping.
    pub duplicates: Vec<DuplicateKey>,
}

fn position(marker: saphyr_parser::Marker) -> Position {
    Position {
        line: marker.line(),
        column: marker.col() + 1,
        offset: marker.index(),
    }
}

fn span_of(span: saphyr_parser::Span) -> Span {
    Span {
        start: position(span.start),
        end: position(span.end),
    }
}

fn syntax(error: ScanError) -> TreeError {
    TreeError::Syntax {
        message: error.info().to_string(),
        position: position(*error.marker()),
    }
}

/// Parses `text` into a node tree within `limits`.
pub fn parse_tree(text: &str, limits: &Limits) -> Result<ParsedTree, TreeError> {
    let mut builder = Builder {
        parser: Parser::new_from_str(text),
        limits,
        anchors: HashMap::new(),
        nodes: 0,
        scalar_ranges: Vec::new(),
        duplicates: Vec::new(),
        path: DocPath::root(),
    };
    let root = builder.document()?;
    let comments = find_comments(text, &mut builder.scalar_ranges);
    Ok(ParsedTree {
        source_map: SourceMap::new(root),
        comments,
        duplicates: builder.duplicates,
    })
}

struct Builder<'a> {
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    limits: &'a Limits,
    anchors: HashMap<usize, Node>,
    nodes: usize,
    scalar_ranges: Vec<(usize, usize)>,
    duplicates: Vec<DuplicateKey>,
    /// Path of the node being built (pushed and popped while descending).
    path: DocPath,
}

impl<'a> Builder<'a> {
    fn next(&mut self) -> Result<(Event<'a>, saphyr_parser::Span), TreeError> {
        match self.parser.next_event() {
            Some(Ok(event)) => Ok(event),
            Some(Err(error)) => Err(syntax(error)),
            None => Err(TreeError::Syntax {
                message: "unexpected end of input".into(),
                position: Position::default(),
            }),
        }
    }

    fn document(&mut self) -> Result<Option<Node>, TreeError> {
        let mut root = None;
        let mut documents = 0;
        loop {
            let (event, span) = self.next()?;
            match event {
                Event::StreamStart | Event::DocumentEnd => {}
                Event::DocumentStart(_) => {
                    documents += 1;
                    if documents > 1 {
                        return Err(TreeError::MultipleDocuments {
                            position: position(span.start),
                        });
                    }
                    root = Some(self.node(1)?);
                }
                Event::StreamEnd => return Ok(root.filter(|node| !is_null(node))),
                _ => {
                    return Err(TreeError::Syntax {
                        message: "unexpected YAML event".into(),
                        position: position(span.start),
                    });
                }
            }
        }
    }

    fn count(&mut self, at: Position) -> Result<(), TreeError> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(TreeError::Limit {
                message: format!(
                    "the document expands to more than {} nodes (alias expansion or size limit)",
                    self.limits.max_nodes
                ),
                position: at,
            });
        }
        Ok(())
    }

    fn node(&mut self, depth: usize) -> Result<Node, TreeError> {
        let (event, raw_span) = self.next()?;
        let span = span_of(raw_span);
        if depth > self.limits.max_depth {
            return Err(TreeError::Limit {
                message: format!("nesting deeper than {} levels", self.limits.max_depth),
                position: span.start,
            });
        }
        self.count(span.start)?;
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                self.scalar_ranges
                    .push((raw_span.start.index(), raw_span.end.index()));
                let core_str = tag
                    .as_ref()
                    .is_some_and(|t| t.is_yaml_core_schema() && t.suffix == "str");
                let resolved = if style == ScalarStyle::Plain && !core_str {
                    resolve_plain(&text)
                } else {
                    Resolved::Str
                };
                let node = Node {
                    value: NodeValue::Scalar(Scalar {
                        text: text.into_owned(),
                        resolved,
                    }),
                    span,
                };
                self.remember(anchor, &node);
                Ok(node)
            }
            Event::SequenceStart(anchor, _) => {
                let mut items = Vec::new();
                loop {
                    if matches!(self.parser.peek(), Some(Ok((Event::SequenceEnd, _)))) {
                        let (_, end) = self.next()?;
                        let node = Node {
                            value: NodeValue::Seq(items),
                            span: Span {
                                start: span.start,
                                end: position(end.end),
                            },
                        };
                        self.remember(anchor, &node);
                        return Ok(node);
                    }
                    self.path.push(Segment::Index(items.len()));
                    let item = self.node(depth + 1);
                    self.path.pop();
                    items.push(item?);
                }
            }
            Event::MappingStart(anchor, _) => {
                let mut entries: Vec<(Node, Node)> = Vec::new();
                loop {
                    if matches!(self.parser.peek(), Some(Ok((Event::MappingEnd, _)))) {
                        let (_, end) = self.next()?;
                        let node = Node {
                            value: NodeValue::Map(entries),
                            span: Span {
                                start: span.start,
                                end: position(end.end),
                            },
                        };
                        self.remember(anchor, &node);
                        return Ok(node);
                    }
                    let key = self.node(depth + 1)?;
                    let name = match &key.value {
                        NodeValue::Scalar(Scalar {
                            text,
                            resolved: Resolved::Str,
                        }) => text.clone(),
                        _ => {
                            return Err(TreeError::NonStringKey {
                                message: format!(
                                    "mapping key {} is not a string; quote it (for example '{}')",
                                    describe_key(&key),
                                    key_text(&key)
                                ),
                                position: key.span.start,
                                path: self.path.clone(),
                            });
                        }
                    };
                    self.path.push(Segment::Key(name.clone()));
                    let value = self.node(depth + 1);
                    self.path.pop();
                    let value = value?;
                    match entries
                        .iter_mut()
                        .find(|(k, _)| matches!(&k.value, NodeValue::Scalar(s) if s.text == name))
                    {
                        Some(existing) => {
                            self.duplicates.push(DuplicateKey {
                                path: self.path.key(name),
                                position: key.span.start,
                                first_line: existing.0.span.start.line,
                            });
                            *existing = (key, value);
                        }
                        None => entries.push((key, value)),
                    }
                }
            }
            Event::Alias(id) => {
                let target = self.anchors.get(&id).cloned().ok_or(TreeError::Syntax {
                    message: "alias refers to an unknown anchor".into(),
                    position: span.start,
                })?;
                let size = count_nodes(&target);
                self.nodes += size;
                if self.nodes > self.limits.max_nodes {
                    return Err(TreeError::Limit {
                        message: format!(
                            "alias expansion exceeds {} nodes (a \"billion laughs\" document?)",
                            self.limits.max_nodes
                        ),
                        position: span.start,
                    });
                }
                Ok(target)
            }
            _ => Err(TreeError::Syntax {
                message: "unexpected YAML event".into(),
                position: span.start,
            }),
        }
    }

    fn remember(&mut self, anchor: usize, node: &Node) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
    }
}

fn is_null(node: &Node) -> bool {
    matches!(
        &node.value,
        NodeValue::Scalar(Scalar {
            resolved: Resolved::Null,
            ..
        })
    )
}

fn count_nodes(node: &Node) -> usize {
    match &node.value {
        NodeValue::Scalar(_) => 1,
        NodeValue::Seq(items) => 1 + items.iter().map(count_nodes).sum::<usize>(),
        NodeValue::Map(entries) => {
            1 + entries
                .iter()
                .map(|(k, v)| count_nodes(k) + count_nodes(v))
                .sum::<usize>()
        }
    }
}

fn describe_key(key: &Node) -> &'static str {
    match &key.value {
        NodeValue::Scalar(s) => match s.resolved {
            Resolved::Bool(_) => "resolves to a boolean and",
            Resolved::Null => "is null and",
            Resolved::Int(_) | Resolved::UInt(_) => "resolves to an integer and",
            Resolved::Float(_) => "resolves to a number and",
            Resolved::Str => "",
        },
        _ => "is a collection and",
    }
}

fn key_text(key: &Node) -> String {
    match &key.value {
        NodeValue::Scalar(s) => s.text.clone(),
        _ => "...".into(),
    }
}

/// Resolves a plain scalar by the YAML 1.2 core schema.
pub fn resolve_plain(text: &str) -> Resolved {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        "true" | "True" | "TRUE" => return Resolved::Bool(true),
        "false" | "False" | "FALSE" => return Resolved::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Resolved::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Resolved::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Resolved::Float(f64::NAN),
        _ => {}
    }
    if let Some(hex) = text.strip_prefix("0x") {
        if !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return integer_from_radix(hex, 16);
        }
        return Resolved::Str;
    }
    if let Some(oct) = text.strip_prefix("0o") {
        if !oct.is_empty() && oct.chars().all(|c| ('0'..='7').contains(&c)) {
            return integer_from_radix(oct, 8);
        }
        return Resolved::Str;
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
        if let Ok(value) = text.parse::<i64>() {
            return Resolved::Int(value);
        }
        if let Ok(value) = text.trim_start_matches('+').parse::<u64>() {
            return Resolved::UInt(value);
        }
        return text
            .parse::<f64>()
            .map(Resolved::Float)
            .unwrap_or(Resolved::Str);
    }
    if is_core_float(digits) {
        return text
            .parse::<f64>()
            .map(Resolved::Float)
            .unwrap_or(Resolved::Str);
    }
    Resolved::Str
}

fn integer_from_radix(digits: &str, radix: u32) -> Resolved {
    match u64::from_str_radix(digits, radix) {
        Ok(value) => i64::try_from(value)
            .map(Resolved::Int)
            .unwrap_or(Resolved::UInt(value)),
        Err(_) => Resolved::Str,
    }
}

/// `( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?` without sign.
fn is_core_float(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => {
            int.chars().all(|c| c.is_ascii_digit())
                && frac.chars().all(|c| c.is_ascii_digit())
                && !(int.is_empty() && frac.is_empty())
        }
        None => !mantissa.is_empty() && mantissa.chars().all(|c| c.is_ascii_digit()),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && e.chars().all(|c| c.is_ascii_digit())
    });
    mantissa_ok && exponent_ok
}

/// Locates comments: a `#` at line start or after whitespace that lies outside
/// every scalar. `scalar_ranges` are character ranges and get sorted.
fn find_comments(text: &str, scalar_ranges: &mut [(usize, usize)]) -> Vec<Comment> {
    scalar_ranges.sort_unstable();
    let mut comments = Vec::new();
    let mut range = 0;
    let mut line = 1;
    let mut column = 0;
    let mut previous = '\n';
    let mut chars = text.chars().enumerate().peekable();
    while let Some((index, c)) = chars.next() {
        column += 1;
        while range < scalar_ranges.len() && scalar_ranges[range].1 <= index {
            range += 1;
        }
        let inside = range < scalar_ranges.len() && scalar_ranges[range].0 <= index;
        if c == '#' && !inside && previous.is_whitespace() {
            let mut body = String::from("#");
            while let Some((_, next)) = chars.peek() {
                if *next == '\n' {
                    break;
                }
                body.push(*next);
                chars.next();
            }
            comments.push(Comment {
                position: Position {
                    line,
                    column,
                    offset: index,
                },
                text: body.trim_end().to_string(),
            });
            previous = '#';
            continue;
        }
        if c == '\n' {
            line += 1;
            column = 0;
        }
        previous = c;
    }
    comments
}

/// The JSON value of a node (scalars by their core-schema resolution).
pub fn to_json(node: &Node) -> serde_json::Value {
    use serde_json::Value;
    match &node.value {
        NodeValue::Scalar(s) => match s.resolved {
            Resolved::Null => Value::Null,
            Resolved::Bool(b) => Value::Bool(b),
            Resolved::Int(i) => Value::from(i),
            Resolved::UInt(u) => Value::from(u),
            Resolved::Float(f) => serde_json::Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or_else(|| Value::String(s.text.clone())),
            Resolved::Str => Value::String(s.text.clone()),
        },
        NodeValue::Seq(items) => Value::Array(items.iter().map(to_json).collect()),
        NodeValue::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let key = match &k.value {
                        NodeValue::Scalar(s) => s.text.clone(),
                        _ => String::new(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
    }
}

/// Parses a YAML (or JSON) fragment, such as the inspector's text of one
/// field, into a JSON value within `limits` (an empty text is `null`).
pub fn parse_value(text: &str, limits: &Limits) -> Result<serde_json::Value, TreeError> {
    let parsed = parse_tree(text, limits)?;
    Ok(parsed
        .source_map
        .root()
        .map(to_json)
        .unwrap_or(serde_json::Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> ParsedTree {
        parse_tree(text, &Limits::default()).expect("parses")
    }

    #[test]
    fn resolves_core_schema_scalars() {
        assert_eq!(resolve_plain("yes"), Resolved::Str);
        assert_eq!(resolve_plain("True"), Resolved::Bool(true));
        assert_eq!(resolve_plain("0x10"), Resolved::Int(16));
        assert_eq!(resolve_plain("0o10"), Resolved::Int(8));
        assert_eq!(resolve_plain("1.0e-7"), Resolved::Float(1.0e-7));
        assert_eq!(resolve_plain("5."), Resolved::Float(5.0));
        assert_eq!(resolve_plain("."), Resolved::Str);
        assert_eq!(resolve_plain("1.0"), Resolved::Float(1.0));
        assert_eq!(
            resolve_plain("12345678901234567890"),
            Resolved::UInt(12345678901234567890)
        );
        assert_eq!(resolve_plain("request.latent"), Resolved::Str);
        assert_eq!(resolve_plain("~"), Resolved::Null);
    }

    #[test]
    fn spans_comments_and_duplicates() {
        let parsed = tree("# lead\na: 1 # trailing\nb: 'x # not a comment'\na: 2\n");
        let texts: Vec<_> = parsed.comments.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["# lead", "# trailing"]);
        assert_eq!(parsed.comments[1].position.line, 2);
        assert_eq!(parsed.comments[1].position.column, 6);
        assert_eq!(parsed.duplicates.len(), 1);
        assert_eq!(parsed.duplicates[0].first_line, 2);
        let span = parsed
            .source_map
            .value_span(&DocPath::root().key("b"))
            .unwrap();
        assert_eq!((span.start.line, span.start.column), (3, 4));
    }

    #[test]
    fn non_string_keys_and_alias_bombs_are_refused() {
        let err = parse_tree("cases:\n  true: a\n", &Limits::default()).unwrap_err();
        assert!(matches!(err, TreeError::NonStringKey { position, .. } if position.line == 2));
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let err = parse_tree(&bomb, &Limits::default()).unwrap_err();
        assert!(matches!(err, TreeError::Limit { .. }), "{err:?}");
    }
}
