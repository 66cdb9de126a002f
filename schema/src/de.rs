//! A serde `Deserializer` over the located node tree.
//!
//! Every error it returns carries the document path and span of the innermost
//! node involved, so typed-parsing failures (unknown field, wrong type, missing
//! field, unknown variant) point at the exact line and column. Tagged unions
//! (`{kind: ..., ...}`) are read without buffering, which keeps that precision
//! inside nested steps; see [`crate::tagged_enum!`].

use crate::path::DocPath;
use crate::source::Span;
use crate::tree::{Node, NodeValue, Resolved, Scalar};
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};
use std::fmt::{self, Display};

/// Prefix of the serde enum name that marks a `kind`-tagged union. Such an
/// enum must be written as a map; a bare string is a type error.
pub const TAGGED_ENUM_MARKER: &str = "kind-tagged ";

/// What went wrong while reading typed data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeErrorKind {
    /// A key the structure does not declare.
    UnknownField {
        /// The key as written.
        field: String,
        /// The keys the structure accepts.
        expected: &'static [&'static str],
    },
    /// A required key is absent.
    MissingField {
        /// The required key.
        field: String,
    },
    /// A `kind` (or enum string) outside the vocabulary.
    UnknownVariant {
        /// The value as written.
        variant: String,
        /// The accepted spellings.
        expected: &'static [&'static str],
    },
    /// The node has the wrong YAML type.
    InvalidType,
    /// The node has the right type but an unacceptable value.
    InvalidValue,
    /// Anything else reported by a type's own checks.
    Other,
}

/// A typed-parsing error located in the document (boxed: errors are rare and
/// the happy path should stay small).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeError(Box<DeErrorData>);

/// The contents of a [`DeError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeErrorData {
    /// The class of error.
    pub kind: DeErrorKind,
    /// Human-readable explanation (serde style).
    pub message: String,
    /// Path of the node at fault.
    pub path: Option<DocPath>,
    /// Span of the node (or key) at fault.
    pub span: Option<Span>,
}

impl DeError {
    fn new(kind: DeErrorKind, message: String) -> Self {
        Self(Box::new(DeErrorData {
            kind,
            message,
            path: None,
            span: None,
        }))
    }

    fn at(mut self, link: &Link<'_>, span: Span) -> Self {
        if self.0.path.is_none() {
            self.0.path = Some(link.path());
            self.0.span = Some(span);
        }
        self
    }
}

impl std::ops::Deref for DeError {
    type Target = DeErrorData;

    fn deref(&self) -> &DeErrorData {
        &self.0
    }
}

impl Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for DeError {}

fn one_of(names: &[&str]) -> String {
    match names {
        [] => "there are no fields".to_string(),
        [only] => format!("expected `{only}`"),
        _ => format!(
            "expected one of {}",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl de::Error for DeError {
    fn custom<T: Display>(msg: T) -> Self {
        Self::new(DeErrorKind::Other, msg.to_string())
    }

    fn invalid_type(unexp: Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        Self::new(
            DeErrorKind::InvalidType,
            format!("invalid type: {unexp}, expected {exp}"),
        )
    }

    fn invalid_value(unexp: Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        Self::new(
            DeErrorKind::InvalidValue,
            format!("invalid value: {unexp}, expected {exp}"),
        )
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Self::new(
            DeErrorKind::UnknownVariant {
                variant: variant.to_string(),
                expected,
            },
            format!("unknown variant `{variant}`, {}", one_of(expected)),
        )
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Self::new(
            DeErrorKind::UnknownField {
                field: field.to_string(),
                expected,
            },
            format!("unknown field `{field}`, {}", one_of(expected)),
        )
    }

    fn missing_field(field: &'static str) -> Self {
        Self::new(
            DeErrorKind::MissingField {
                field: field.to_string(),
            },
            format!("missing field `{field}`"),
        )
    }
}

/// The path to the node being read, as a chain on the stack; it is turned
/// into a [`DocPath`] only when an error needs it.
#[derive(Clone, Copy)]
enum Link<'p> {
    Root,
    Key(&'p Link<'p>, &'p str),
    Index(&'p Link<'p>, usize),
}

impl Link<'_> {
    fn path(self) -> DocPath {
        match self {
            Link::Root => DocPath::root(),
            Link::Key(parent, key) => parent.path().key(key),
            Link::Index(parent, index) => parent.path().index(index),
        }
    }
}

/// Deserializes `T` from `node`, the document root.
pub fn from_node<'a, T: serde::Deserialize<'a>>(node: &'a Node) -> Result<T, DeError> {
    T::deserialize(NodeDe {
        node,
        link: Link::Root,
        skip_kind: false,
    })
}

struct NodeDe<'a, 'p> {
    node: &'a Node,
    link: Link<'p>,
    /// Hide the `kind` key: the node is the payload of a tagged union.
    skip_kind: bool,
}

fn unexpected(node: &Node) -> Unexpected<'_> {
    match &node.value {
        NodeValue::Scalar(Scalar { text, resolved }) => match resolved {
            Resolved::Null => Unexpected::Unit,
            Resolved::Bool(b) => Unexpected::Bool(*b),
            Resolved::Int(i) => Unexpected::Signed(*i),
            Resolved::UInt(u) => Unexpected::Unsigned(*u),
            Resolved::Float(f) => Unexpected::Float(*f),
            Resolved::Str => Unexpected::Str(text),
        },
        NodeValue::Seq(_) => Unexpected::Seq,
        NodeValue::Map(_) => Unexpected::Map,
    }
}

fn key_text(key: &Node) -> &str {
    match &key.value {
        NodeValue::Scalar(s) => &s.text,
        _ => "",
    }
}

impl<'a> NodeDe<'a, '_> {
    fn visit<V: Visitor<'a>>(&self, visitor: V) -> Result<V::Value, DeError> {
        match &self.node.value {
            NodeValue::Scalar(Scalar { text, resolved }) => match *resolved {
                Resolved::Null => visitor.visit_unit(),
                Resolved::Bool(b) => visitor.visit_bool(b),
                Resolved::Int(i) => visitor.visit_i64(i),
                Resolved::UInt(u) => visitor.visit_u64(u),
                Resolved::Float(f) => visitor.visit_f64(f),
                Resolved::Str => visitor.visit_borrowed_str(text),
            },
            NodeValue::Seq(items) => visitor.visit_seq(SeqDe {
                items,
                index: 0,
                parent: &self.link,
            }),
            NodeValue::Map(entries) => visitor.visit_map(MapDe {
                entries,
                position: 0,
                parent: &self.link,
                skip_kind: self.skip_kind,
                current: None,
            }),
        }
    }

    fn enumeration<V: Visitor<'a>>(
        &self,
        name: &str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let tagged = name.starts_with(TAGGED_ENUM_MARKER);
        match &self.node.value {
            NodeValue::Scalar(Scalar {
                text,
                resolved: Resolved::Str,
            }) if !tagged => {
                if !variants.contains(&text.as_str()) {
                    return Err(de::Error::unknown_variant(text, variants));
                }
                visitor.visit_enum(UnitEnum { variant: text })
            }
            NodeValue::Map(entries) if tagged => {
                let Some((kind_key, kind_node)) =
                    entries.iter().find(|(key, _)| key_text(key) == "kind")
                else {
                    return Err(de::Error::missing_field("kind"));
                };
                let kind_link = Link::Key(&self.link, "kind");
                let variant = match &kind_node.value {
                    NodeValue::Scalar(Scalar {
                        text,
                        resolved: Resolved::Str,
                    }) => text.as_str(),
                    _ => {
                        let error: DeError =
                            de::Error::invalid_type(unexpected(kind_node), &"a string");
                        return Err(error.at(&kind_link, kind_node.span));
                    }
                };
                if !variants.contains(&variant) {
                    let error: DeError = de::Error::unknown_variant(variant, variants);
                    return Err(error.at(&kind_link, kind_node.span.merge_key(kind_key.span)));
                }
                visitor.visit_enum(TaggedEnum {
                    variant,
                    node: self.node,
                    entries,
                    link: &self.link,
                })
            }
            _ if tagged => Err(de::Error::invalid_type(
                unexpected(self.node),
                &"a map with a `kind` key",
            )),
            _ => Err(de::Error::invalid_type(unexpected(self.node), &visitor)),
        }
    }
}

impl Span {
    /// A span for a key/value entry that starts at the key.
    fn merge_key(self, key: Span) -> Span {
        Span {
            start: key.start,
            end: self.end,
        }
    }
}

impl<'de> Deserializer<'de> for NodeDe<'de, '_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let result = self.visit(visitor);
        result.map_err(|e| e.at(&self.link, self.node.span))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let is_null = matches!(
            &self.node.value,
            NodeValue::Scalar(Scalar {
                resolved: Resolved::Null,
                ..
            })
        );
        let (link, span) = (self.link, self.node.span);
        let result = if is_null {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        };
        result.map_err(|e| e.at(&link, span))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let (link, span) = (self.link, self.node.span);
        visitor
            .visit_newtype_struct(self)
            .map_err(|e| e.at(&link, span))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let result = self.enumeration(name, variants, visitor);
        result.map_err(|e| e.at(&self.link, self.node.span))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

struct SeqDe<'a, 'p> {
    items: &'a [Node],
    index: usize,
    parent: &'p Link<'p>,
}

impl<'a> SeqAccess<'a> for SeqDe<'a, '_> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'a>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        let Some(node) = self.items.get(self.index) else {
            return Ok(None);
        };
        let link = Link::Index(self.parent, self.index);
        self.index += 1;
        seed.deserialize(NodeDe {
            node,
            link,
            skip_kind: false,
        })
        .map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len() - self.index)
    }
}

struct MapDe<'a, 'p> {
    entries: &'a [(Node, Node)],
    position: usize,
    parent: &'p Link<'p>,
    skip_kind: bool,
    current: Option<&'a (Node, Node)>,
}

impl<'a> MapAccess<'a> for MapDe<'a, '_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'a>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        while let Some(entry) = self.entries.get(self.position) {
            self.position += 1;
            let name = key_text(&entry.0);
            if self.skip_kind && name == "kind" {
                continue;
            }
            self.current = Some(entry);
            let link = Link::Key(self.parent, name);
            return seed
                .deserialize(BorrowedStrDeserializer::<DeError>::new(name))
                .map(Some)
                .map_err(|e| e.at(&link, entry.0.span));
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let entry = self
            .current
            .take()
            .ok_or_else(|| <DeError as de::Error>::custom("value requested before its key"))?;
        seed.deserialize(NodeDe {
            node: &entry.1,
            link: Link::Key(self.parent, key_text(&entry.0)),
            skip_kind: false,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len() - self.position)
    }
}

struct UnitEnum<'a> {
    variant: &'a str,
}

impl<'a> EnumAccess<'a> for UnitEnum<'a> {
    type Error = DeError;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'a>>(self, seed: V) -> Result<(V::Value, Self), DeError> {
        let value = seed.deserialize(BorrowedStrDeserializer::<DeError>::new(self.variant))?;
        Ok((value, self))
    }
}

impl<'a> VariantAccess<'a> for UnitEnum<'a> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'a>>(self, _seed: T) -> Result<T::Value, DeError> {
        Err(de::Error::invalid_type(
            Unexpected::UnitVariant,
            &"a map with fields",
        ))
    }

    fn tuple_variant<V: Visitor<'a>>(self, _len: usize, _visitor: V) -> Result<V::Value, DeError> {
        Err(de::Error::invalid_type(
            Unexpected::UnitVariant,
            &"a tuple variant",
        ))
    }

    fn struct_variant<V: Visitor<'a>>(
        self,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, DeError> {
        Err(de::Error::invalid_type(
            Unexpected::UnitVariant,
            &"a map with fields",
        ))
    }
}

struct TaggedEnum<'a, 'p> {
    variant: &'a str,
    node: &'a Node,
    entries: &'a [(Node, Node)],
    link: &'p Link<'p>,
}

impl<'a, 'p> EnumAccess<'a> for TaggedEnum<'a, 'p> {
    type Error = DeError;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'a>>(self, seed: V) -> Result<(V::Value, Self), DeError> {
        let value = seed.deserialize(BorrowedStrDeserializer::<DeError>::new(self.variant))?;
        Ok((value, self))
    }
}

impl<'a> VariantAccess<'a> for TaggedEnum<'a, '_> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        match self.entries.iter().find(|(key, _)| key_text(key) != "kind") {
            None => Ok(()),
            Some((key, _)) => {
                let error: DeError = de::Error::unknown_field(key_text(key), &["kind"]);
                let link = Link::Key(self.link, key_text(key));
                Err(error.at(&link, key.span))
            }
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'a>>(self, seed: T) -> Result<T::Value, DeError> {
        seed.deserialize(NodeDe {
            node: self.node,
            link: *self.link,
            skip_kind: true,
        })
    }

    fn tuple_variant<V: Visitor<'a>>(self, _len: usize, _visitor: V) -> Result<V::Value, DeError> {
        Err(de::Error::invalid_type(Unexpected::Map, &"a tuple variant"))
    }

    fn struct_variant<V: Visitor<'a>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        NodeDe {
            node: self.node,
            link: *self.link,
            skip_kind: true,
        }
        .deserialize_any(visitor)
    }
}

/// Declares a `kind`-tagged union: each variant is a unit (`{kind: x}`) or
/// wraps a struct holding the other keys. Serializes with serde's internal
/// tagging; deserializes through [`TAGGED_ENUM_MARKER`] so errors inside a
/// variant keep their exact location.
#[macro_export]
macro_rules! tagged_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $tag:literal => $variant:ident $(($payload:ty))? ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, serde::Serialize)]
        #[serde(tag = "kind")]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $tag)] $variant $(($payload))? ),*
        }

        impl $name {
            /// The `kind` spelling of this variant.
            pub fn kind(&self) -> &'static str {
                match self {
                    $( $name::$variant { .. } => $tag ),*
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                const VARIANTS: &[&str] = &[$($tag),*];
                struct TagVisitor;
                impl<'de> serde::de::Visitor<'de> for TagVisitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        write!(f, "a map with a `kind` key ({})", stringify!($name))
                    }
                    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<$name, A::Error> {
                        use serde::de::VariantAccess as _;
                        let (tag, access): (String, A::Variant) = data.variant()?;
                        match tag.as_str() {
                            $( $tag => $crate::tagged_enum!(@arm access, $name, $variant $(, $payload)?), )*
                            other => Err(<A::Error as serde::de::Error>::unknown_variant(other, VARIANTS)),
                        }
                    }
                }
                deserializer.deserialize_enum(
                    concat!("kind-tagged ", stringify!($name)),
                    VARIANTS,
                    TagVisitor,
                )
            }
        }
    };
    (@arm $access:ident, $name:ident, $variant:ident, $payload:ty) => {
        $access.newtype_variant::<$payload>().map($name::$variant)
    };
    (@arm $access:ident, $name:ident, $variant:ident) => {
        $access.unit_variant().map(|()| $name::$variant)
    };
}
