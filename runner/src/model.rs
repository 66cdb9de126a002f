//! Loading component graphs: binary `.onnx` files as they are, and
//! `.onnx.textproto` (protobuf TextFormat of `ModelProto`) parsed with the
//! generated protobuf types and re-encoded to bytes.

use crate::RunError;
use crate::onnx::onnx::ModelProto;
use protobuf::Message;
use std::path::Path;

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

/// The serialized model bytes of the artifact at `path`.
pub fn model_bytes(path: &Path) -> Result<Vec<u8>, RunError> {
    let broken = |why: String| RunError::Artifact {
        path: path.to_path_buf(),
        message: why,
    };
    if is_textproto(path) {
        let text = std::fs::read_to_string(path).map_err(|e| broken(e.to_string()))?;
        let model = parse_textproto(&text)
            .map_err(|e| broken(format!("not a valid ONNX TextFormat model: {e}")))?;
        model
            .write_to_bytes()
            .map_err(|e| broken(format!("cannot encode the model: {e}")))
    } else {
        std::fs::read(path).map_err(|e| broken(e.to_string()))
    }
}
