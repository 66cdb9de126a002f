//! Inference-metadata documents: the typed model of the whole document and
//! strict YAML/JSON reading with the source location of every node and every
//! error, plus canonical saving.
//!
//! Reading goes text -> located node tree ([`tree`]) -> typed [`Document`]
//! through a deserializer that keeps paths ([`de`]). The tree's
//! [`SourceMap`] maps every document path to its line and column for later
//! diagnostics.

pub mod de;
pub mod diagnostic;
pub mod emit;
pub mod limits;
pub mod load;
pub mod node;
mod open_struct;
pub mod path;
pub mod save;
pub mod source;
pub mod span;
pub mod tree;
pub mod types;

pub use diagnostic::{Diagnostic, Fix, FixEdit, Severity};
pub use limits::Limits;
pub use load::{Format, LoadError, Loaded, load_file, locate_document, parse_text};
pub use path::DocPath;
pub use source::{Position, SourceMap, Span};
pub use types::document::Document;
