//! Loading component graphs: the serialized model bytes of an artifact
//! (`wfstudio_onnx::model`), with failures as run errors.

use crate::RunError;
use std::path::Path;

pub use wfstudio_onnx::{is_textproto, parse_textproto};

/// The serialized model bytes of the artifact at `path`.
pub fn model_bytes(path: &Path) -> Result<Vec<u8>, RunError> {
    wfstudio_onnx::model_bytes(path).map_err(|e| RunError::Artifact {
        path: path.to_path_buf(),
        message: match e {
            wfstudio_onnx::ModelError::Io { reason, .. } => reason,
            wfstudio_onnx::ModelError::Invalid { reason, .. } if is_textproto(path) => {
                format!("not a valid ONNX TextFormat model: {reason}")
            }
            wfstudio_onnx::ModelError::Invalid { reason, .. } => {
                format!("not a valid ONNX model: {reason}")
            }
        },
    })
}
