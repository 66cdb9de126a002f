//! Runs in a worker process: the studio runs each workflow in a child
//! process of its own binary (`wfstudio worker`), so a model that makes
//! ONNX Runtime abort, crash or run out of memory takes down the worker,
//! not the window and its unsaved edits. `protocol` is the framing and the
//! messages, `convert` their mapping to runner types, `serve` the worker's
//! side, `client` the studio's, `limits` the worker's memory ceiling.

pub mod client;
mod convert;
pub mod limits;
mod protocol;
pub mod serve;
