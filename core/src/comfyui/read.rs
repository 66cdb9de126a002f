//! Recognising what a ComfyUI file holds: an API prompt, a request envelope
//! `{"prompt": {...}}`, a UI/LiteGraph workflow, or a PNG whose `tEXt` /
//! `iTXt` chunks carry `prompt` and/or `workflow` JSON. Bounded: a text
//! chunk larger than [`MAX_CHUNK_BYTES`] is refused.

use serde_json::Value;

/// Largest PNG text chunk accepted.
pub const MAX_CHUNK_BYTES: usize = 32 * 1024 * 1024;

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

/// Reads a ComfyUI graph from file bytes (JSON or PNG).
pub fn read(bytes: &[u8]) -> Result<ComfyInput, ReadError> {
    let mut found = ComfyInput::default();
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        for (key, text) in png_text_chunks(bytes)? {
            if key == "prompt" || key == "workflow" {
                let value: Value = serde_json::from_str(&text)
                    .map_err(|e| ReadError(format!("the PNG `{key}` chunk is not JSON: {e}")))?;
                classify(value, &mut found)?;
            }
        }
        if found.api.is_none() && found.ui.is_none() {
            return Err(ReadError(
                "the PNG carries no `prompt` or `workflow` text chunk".into(),
            ));
        }
        return Ok(found);
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ReadError("the file is neither a PNG nor UTF-8 JSON".into()))?;
    let value: Value =
        serde_json::from_str(text).map_err(|e| ReadError(format!("not JSON: {e}")))?;
    classify(value, &mut found)?;
    Ok(found)
}

/// The `(keyword, text)` pairs of a PNG's `tEXt` and uncompressed `iTXt`
/// chunks, walking the chunk list with every length checked.
pub fn png_text_chunks(bytes: &[u8]) -> Result<Vec<(String, String)>, ReadError> {
    let mut out = Vec::new();
    let mut at = 8;
    while at + 8 <= bytes.len() {
        let len =
            u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
        let kind = &bytes[at + 4..at + 8];
        let start = at + 8;
        let end = start
            .checked_add(len)
            .filter(|e| *e + 4 <= bytes.len())
            .ok_or_else(|| ReadError("truncated PNG chunk".into()))?;
        if (kind == b"tEXt" || kind == b"iTXt") && len > MAX_CHUNK_BYTES {
            return Err(ReadError(format!(
                "a PNG text chunk of {len} bytes exceeds the {MAX_CHUNK_BYTES}-byte limit"
            )));
        }
        let data = &bytes[start..end];
        let split = |d: &[u8]| d.iter().position(|b| *b == 0);
        if kind == b"tEXt"
            && let Some(nul) = split(data)
        {
            let key = String::from_utf8_lossy(&data[..nul]).into_owned();
            let text: String = data[nul + 1..].iter().map(|&b| b as char).collect();
            out.push((key, text));
        } else if kind == b"iTXt"
            && let Some(nul) = split(data)
            && data.len() > nul + 2
            && data[nul + 1] == 0
        {
            // keyword\0 compression_flag compression_method language\0 translated\0 text
            let rest = &data[nul + 3..];
            let mut parts = rest.splitn(3, |b| *b == 0);
            let (_, _, text) = (parts.next(), parts.next(), parts.next());
            if let Some(text) = text {
                let key = String::from_utf8_lossy(&data[..nul]).into_owned();
                out.push((key, String::from_utf8_lossy(text).into_owned()));
            }
        }
        if kind == b"IEND" {
            break;
        }
        at = end + 4;
    }
    Ok(out)
}
