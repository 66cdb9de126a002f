//! ONNX models for Workflow Studio: the protobuf types generated from the
//! `onnx` wheel's `onnx.proto`, reading a model file (binary or TextFormat),
//! building graphs in code (`builder`), reading a model's typed ports
//! (`signature`) and the external-data files it needs (`external`).

pub mod builder;
pub mod dtype;
pub mod external;
pub mod labels;
pub mod model;
pub mod random;
pub mod signature;

pub mod proto {
    //! Generated ONNX protobuf types (from the `onnx` wheel's `onnx.proto`).
    #![allow(missing_docs, clippy::all, unused)]
    include!(concat!(env!("OUT_DIR"), "/onnx_proto/mod.rs"));
}

pub use builder::{Dim, GraphBuilder};
pub use external::external_data_locations;
pub use model::{ModelError, is_textproto, model_bytes, parse_textproto, read_model, to_textproto};
pub use signature::{Port, PortDim, Signature};
