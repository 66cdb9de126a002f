//! Workflow Studio's egui widgets: the graph canvas, inspector, diagnostics
//! panel, YAML tab and node palette, composed by [`studio::Studio`]. All
//! parsing and validation runs on the background [`worker`]; edits are
//! `wfstudio_core::edit` commands. No dependency on a windowing backend, so
//! the same code runs in the real window and in headless tests.

pub mod autosave;
pub mod canvas;
pub mod comfy_panel;
pub mod comfy_view;
pub mod diagnostics;
pub mod document;
pub mod fields;
pub mod import;
pub mod inspector;
pub mod opened;
pub mod package_dialog;
mod package_flow;
pub mod palette;
pub mod recent;
pub mod run_overlay;
pub mod sidecar;
pub mod studio;
mod studio_edits;
mod studio_menus;
mod studio_prompts;
pub mod style;
pub mod template_browser;
pub mod worker;
pub mod yaml_view;

pub use studio::Studio;
