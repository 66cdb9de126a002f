//! Rust types for the whole inference-metadata document.

pub mod adapters;
pub mod contract;
pub mod document;
pub mod facts;
pub mod state;
pub mod steps;
pub mod workflow;
