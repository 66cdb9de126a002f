//! Workflow Studio's core: the semantic validator with its rule table,
//! capability derivation, semantic identity, package file checks and the
//! safe quick fixes. No GUI dependency.

pub mod artifacts;
pub mod capabilities;
pub mod comfyui;
pub mod contracts;
pub mod edit;
pub mod fix;
pub mod graph;
pub mod identity;
pub mod make;
pub mod media;
pub mod paths;
pub mod text;
pub mod validate;

pub use validate::{Options, Report, validate};
