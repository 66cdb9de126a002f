//! Tensor contracts: dtype, rank, shape and batch layout of a value, port or
//! state cell.

use crate::tagged_enum;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The declared type of a tensor (`pipeline.workflow` inputs, outputs, ports,
/// state cells, loop iteration values).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorContract {
    /// Element type spelling, e.g. `float16` or `fp16` (kept as written).
    pub dtype: String,
    /// Number of axes.
    pub rank: u64,
    /// Extent of each axis: fixed or symbolic. Must have `rank` entries.
    pub shape: Option<Vec<Dim>>,
    /// Whether a component port may be left unbound (default false).
    pub optional: Option<bool>,
    /// How rows of the batch map to requests (default `shared`).
    pub batch_layout: Option<BatchLayout>,
}

impl TensorContract {
    /// The batch layout, with the format's default applied.
    pub fn layout(&self) -> BatchLayout {
        self.batch_layout.clone().unwrap_or(BatchLayout::Shared)
    }

    /// Whether the contract is marked optional (default false).
    pub fn is_optional(&self) -> bool {
        self.optional.unwrap_or(false)
    }
}

/// One axis extent: a fixed non-negative integer or a named symbol.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum Dim {
    /// A fixed extent.
    Fixed(u64),
    /// A symbolic extent such as `batch`, unified at run time.
    Symbol(String),
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Symbol(s) => f.write_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for Dim {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DimVisitor;
        impl serde::de::Visitor<'_> for DimVisitor {
            type Value = Dim;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-negative integer or a symbol name")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Dim, E> {
                Ok(Dim::Fixed(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Dim, E> {
                u64::try_from(v).map(Dim::Fixed).map_err(|_| {
                    E::invalid_value(
                        serde::de::Unexpected::Signed(v),
                        &"a non-negative dimension (dimensions must be non-negative)",
                    )
                })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Dim, E> {
                if v.is_empty() {
                    return Err(E::invalid_value(
                        serde::de::Unexpected::Str(v),
                        &"a non-empty symbol (symbols must not be empty)",
                    ));
                }
                Ok(Dim::Symbol(v.to_string()))
            }
        }
        deserializer.deserialize_any(DimVisitor)
    }
}

/// `axis` of a request-aligned layout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestAligned {
    /// The request axis.
    pub axis: u64,
}

/// `axis` and `factor` of a request-expanded layout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestExpanded {
    /// The request axis.
    pub axis: u64,
    /// Physical rows owned by each request (at least 1).
    pub factor: u64,
}

/// Fields of a token-packed layout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenPacked {
    /// Value holding per-request exclusive prefix offsets.
    pub offsets: String,
    /// Value holding the owning row of each item.
    pub owner: String,
    /// The packed axis.
    pub axis: u64,
}

tagged_enum! {
    /// How the leading rows of a tensor relate to requests.
    pub enum BatchLayout {
        /// Invariant across requests (the default).
        "shared" => Shared,
        /// One entry per request along `axis`.
        "request_aligned" => RequestAligned(RequestAligned),
        /// `factor` contiguous rows per request along `axis`.
        "request_expanded" => RequestExpanded(RequestExpanded),
        /// Ragged items packed along `axis`.
        "token_packed" => TokenPacked(TokenPacked),
        /// An opaque runtime-owned per-sequence handle.
        "runtime_sequence_state" => RuntimeSequenceState,
    }
}

impl BatchLayout {
    /// The request axis, for layouts that have one.
    pub fn request_axis(&self) -> Option<u64> {
        match self {
            BatchLayout::RequestAligned(l) => Some(l.axis),
            BatchLayout::RequestExpanded(l) => Some(l.axis),
            _ => None,
        }
    }
}

/// A literal scalar (parameters, defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ScalarValue {
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
}

/// An input's literal default: one scalar (broadcast) or a flat row-major list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LiteralValue {
    /// Broadcast to every element.
    Scalar(ScalarValue),
    /// Exactly `numel(shape)` elements, row-major.
    List(Vec<ScalarValue>),
}
