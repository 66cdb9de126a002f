//! Reading model files: binary `.onnx` as it is, and `.onnx.textproto`
//! (protobuf TextFormat of `ModelProto`) parsed with the generated types.

use crate::proto::onnx::ModelProto;
use protobuf::Message;
use std::path::{Path, PathBuf};

/// Why a model file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file could not be read.
    #[error("cannot read {path}: {reason}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS reason.
        reason: String,
    },
    /// The bytes or text are not an ONNX model.
    #[error("{path} is not a valid ONNX model: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What the decoder said.
        reason: String,
    },
}

/// Whether `path` names a protobuf TextFormat model.
pub fn is_textproto(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("textproto"))
}

/// Parses TextFormat model text into a `ModelProto`.
pub fn parse_textproto(text: &str) -> Result<ModelProto, String> {
    protobuf::text_format::parse_from_str::<ModelProto>(text).map_err(|e| e.to_string())
}

/// `model` as protobuf TextFormat (what `.onnx.textproto` files hold).
pub fn to_textproto(model: &ModelProto) -> String {
    protobuf::text_format::print_to_string_pretty(model)
}

/// The serialized model bytes of the file at `path` (TextFormat re-encoded).
pub fn model_bytes(path: &Path) -> Result<Vec<u8>, ModelError> {
    if is_textproto(path) {
        let model = read_model(path)?;
        model
            .write_to_bytes()
            .map_err(|e| invalid(path, e.to_string()))
    } else {
        std::fs::read(path).map_err(|e| ModelError::Io {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    }
}

/// The model in the file at `path`, binary or TextFormat.
pub fn read_model(path: &Path) -> Result<ModelProto, ModelError> {
    let io = |e: std::io::Error| ModelError::Io {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    if is_textproto(path) {
        let text = std::fs::read_to_string(path).map_err(io)?;
        parse_textproto(&text).map_err(|e| invalid(path, e))
    } else {
        let bytes = std::fs::read(path).map_err(io)?;
        ModelProto::parse_from_bytes(&bytes).map_err(|e| invalid(path, e.to_string()))
    }
}

fn invalid(path: &Path, reason: String) -> ModelError {
    ModelError::Invalid {
        path: path.to_path_buf(),
        reason,
    }
}
