//! ComfyUI graphs: reading the three forms (API prompt, UI/LiteGraph
//! workflow, PNG or WebP with the graph embedded) and converting a UI workflow to the
//! API prompt ComfyUI would submit for it; lowering it to a workflow
//! document; and the graph as drawn, for display.

pub mod defs;
pub mod embedded;
pub mod import;
pub mod link;
pub mod lower;
pub mod package;
pub mod read;
pub mod subgraph;
pub mod synth;
pub mod templates;
pub mod to_api;
pub mod view;
mod widgets;

pub use defs::NodeDefs;
pub use import::{Imported, import};
pub use read::{ComfyInput, ReadError, read};
pub use to_api::{ApiGraph, ApiNode, ConvertIssue, ui_to_api};
pub use view::ComfyView;
