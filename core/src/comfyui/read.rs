//! Recognising what a ComfyUI file holds: an API prompt, a request envelope
//! `{"prompt": {...}}`, a UI/LiteGraph workflow, or an image (PNG, WebP)
//! that carries `prompt` and/or `workflow` JSON (see [`super::embedded`]).

use super::embedded::{PNG_SIGNATURE, is_webp, png_text_chunks, webp_exif_texts};
use serde_json::Value;

/// What was found in a file.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ComfyInput {
    /// The API prompt (node id -> `{class_type, inputs}`), if present.
    pub api: Option<Value>,
    /// The UI workflow (`{nodes, links, ...}`), if present.
    pub ui: Option<Value>,
}

/// Why a file is not a ComfyUI graph.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReadError(pub String);

fn is_ui(v: &Value) -> bool {
    v.get("nodes").is_some_and(Value::is_array) && v.get("links").is_some()
}

fn is_api(v: &Value) -> bool {
    v.as_object().is_some_and(|m| {
        !m.is_empty()
            && m.values()
                .all(|n| n.get("class_type").is_some_and(Value::is_string))
    })
}

fn classify(value: Value, found: &mut ComfyInput) -> Result<(), ReadError> {
    if is_ui(&value) {
        found.ui = Some(value);
    } else if let Some(prompt) = value.get("prompt").filter(|p| is_api(p)) {
        found.api = Some(prompt.clone());
        if let Some(ui) = value
            .pointer("/extra_data/extra_pnginfo/workflow")
            .filter(|w| is_ui(w))
        {
            found.ui = Some(ui.clone());
        }
    } else if is_api(&value) {
        found.api = Some(value);
    } else {
        return Err(ReadError(
            "not a ComfyUI graph: expected an API prompt ({id: {class_type, inputs}}), a UI workflow ({nodes, links}) or {\"prompt\": ...}".into(),
        ));
    }
    Ok(())
}

/// Reads a ComfyUI graph from file bytes (JSON, PNG or WebP).
pub fn read(bytes: &[u8]) -> Result<ComfyInput, ReadError> {
    let image = if bytes.starts_with(PNG_SIGNATURE) {
        Some(("PNG", png_text_chunks(bytes)?))
    } else if is_webp(bytes) {
        Some(("WebP", webp_exif_texts(bytes)?))
    } else {
        None
    };
    let mut found = ComfyInput::default();
    if let Some((format, texts)) = image {
        for (key, text) in texts {
            if key == "prompt" || key == "workflow" {
                let value: Value = serde_json::from_str(&text).map_err(|e| {
                    ReadError(format!("the {format} `{key}` text is not JSON: {e}"))
                })?;
                classify(value, &mut found)?;
            }
        }
        if found.api.is_none() && found.ui.is_none() {
            return Err(ReadError(format!(
                "the {format} carries no `prompt` or `workflow` graph"
            )));
        }
        return Ok(found);
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ReadError("the file is neither a PNG, a WebP nor UTF-8 JSON".into()))?;
    let value: Value =
        serde_json::from_str(text).map_err(|e| ReadError(format!("not JSON: {e}")))?;
    classify(value, &mut found)?;
    Ok(found)
}
