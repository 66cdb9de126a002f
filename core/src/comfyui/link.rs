//! Node ids and links as ComfyUI files write them, read in one place: ids
//! are strings or numbers; API links are `["<id>", slot]`; UI links are
//! `[id, origin, origin_slot, target, target_slot, type]` arrays or the
//! subgraph schema's objects.

use serde_json::Value;

/// The largest slot index taken from a file (real nodes have a handful).
pub const MAX_SLOT: u64 = 255;

/// A node id as text.
pub fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A slot index: a non-negative integer up to [`MAX_SLOT`].
pub fn slot(v: &Value) -> Option<u64> {
    v.as_u64().filter(|s| *s <= MAX_SLOT)
}

/// An API input that is a link: the origin id and its output slot.
pub fn api_link(v: &Value) -> Option<(String, u64)> {
    match v {
        Value::Array(l) if l.len() == 2 => Some((id_text(&l[0])?, slot(&l[1])?)),
        _ => None,
    }
}

/// One UI link.
#[derive(Clone, Debug, PartialEq)]
pub struct UiLink {
    /// Link id.
    pub id: i64,
    /// Origin node id and output slot.
    pub origin: Value,
    /// Origin output slot.
    pub origin_slot: u64,
    /// Target node id.
    pub target: Value,
    /// Target input slot.
    pub target_slot: u64,
    /// The value type (`*` when not written).
    pub kind: String,
}

/// A UI link in either form.
pub fn ui_link(link: &Value) -> Option<UiLink> {
    let (id, origin, oslot, target, tslot, kind) = match link {
        Value::Array(a) if a.len() >= 5 => (&a[0], &a[1], &a[2], &a[3], &a[4], a.get(5)),
        Value::Object(o) => (
            o.get("id")?,
            o.get("origin_id")?,
            o.get("origin_slot").unwrap_or(&Value::Null),
            o.get("target_id")?,
            o.get("target_slot").unwrap_or(&Value::Null),
            o.get("type"),
        ),
        _ => return None,
    };
    Some(UiLink {
        id: id.as_i64()?,
        origin: origin.clone(),
        origin_slot: slot(oslot).unwrap_or(0),
        target: target.clone(),
        target_slot: slot(tslot).unwrap_or(0),
        kind: kind.and_then(Value::as_str).unwrap_or("*").to_string(),
    })
}
