//! Structural edits on the JSON form of a document, addressed by
//! [`DocPath`], then read back through the strict loader so that an edit can
//! never produce a document the schema would refuse.

use super::EditError;
use serde_json::Value;
use wfstudio_schema::path::Segment;
use wfstudio_schema::types::document::Document;
use wfstudio_schema::{DocPath, Format, Limits, parse_text};

/// The JSON form of `document`.
pub fn to_value(document: &Document) -> Value {
    serde_json::to_value(document).unwrap_or(Value::Null)
}

/// Reads `value` back as a document with the strict loader.
pub fn from_value(value: &Value) -> Result<Document, EditError> {
    let text = serde_json::to_string(value).map_err(|e| EditError::Invalid(e.to_string()))?;
    parse_text(&text, Format::Json, &Limits::default())
        .map(|loaded| loaded.document)
        .map_err(|diagnostics| {
            EditError::Invalid(
                diagnostics
                    .iter()
                    .map(|d| format!("{}: {}", d.path, d.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })
}

/// The node at `path`, if it exists.
pub fn get<'v>(root: &'v Value, path: &DocPath) -> Option<&'v Value> {
    path.segments()
        .iter()
        .try_fold(root, |node, segment| match segment {
            Segment::Key(key) => node.as_object()?.get(key),
            Segment::Index(index) => node.as_array()?.get(*index),
        })
}

fn get_mut<'v>(root: &'v mut Value, segments: &[Segment]) -> Option<&'v mut Value> {
    segments
        .iter()
        .try_fold(root, |node, segment| match segment {
            Segment::Key(key) => node.as_object_mut()?.get_mut(key),
            Segment::Index(index) => node.as_array_mut()?.get_mut(*index),
        })
}

/// Splits `path` into its parent's node and the last segment.
fn parent_mut<'v>(
    root: &'v mut Value,
    path: &DocPath,
) -> Result<(&'v mut Value, Segment), EditError> {
    let mut segments = path.segments();
    let last = segments.pop().ok_or(EditError::NotFound(path.clone()))?;
    let parent = get_mut(root, &segments).ok_or(EditError::NotFound(path.parent()))?;
    Ok((parent, last))
}

/// Sets the node at `path` to `value`: replaces it, or adds the key (after
/// the existing ones) when its parent map lacks it; a missing parent map is
/// created when the parent's own parent is a map.
pub fn set(root: &mut Value, path: &DocPath, value: Value) -> Result<(), EditError> {
    let parent_path = path.parent();
    if get(root, &parent_path).is_none_or(Value::is_null) && !parent_path.is_root() {
        set(root, &parent_path, Value::Object(Default::default()))?;
    }
    match parent_mut(root, path)? {
        (Value::Object(map), Segment::Key(key)) => {
            map.insert(key, value);
            Ok(())
        }
        (Value::Array(list), Segment::Index(index)) if index < list.len() => {
            list[index] = value;
            Ok(())
        }
        _ => Err(EditError::NotFound(path.clone())),
    }
}

/// Removes the node at `path` (a map entry or a list element); returns it.
pub fn remove(root: &mut Value, path: &DocPath) -> Result<Value, EditError> {
    match parent_mut(root, path)? {
        (Value::Object(map), Segment::Key(key)) => map
            .shift_remove(&key)
            .ok_or(EditError::NotFound(path.clone())),
        (Value::Array(list), Segment::Index(index)) if index < list.len() => Ok(list.remove(index)),
        _ => Err(EditError::NotFound(path.clone())),
    }
}

/// Inserts `value` into the list at `list` before `index` (clamped to the
/// end); a missing list is created.
pub fn insert(
    root: &mut Value,
    list: &DocPath,
    index: usize,
    value: Value,
) -> Result<(), EditError> {
    if get(root, list).is_none_or(Value::is_null) {
        set(root, list, Value::Array(Vec::new()))?;
    }
    let segments = list.segments();
    match get_mut(root, &segments) {
        Some(Value::Array(items)) => {
            items.insert(index.min(items.len()), value);
            Ok(())
        }
        _ => Err(EditError::NotAList(list.clone())),
    }
}
