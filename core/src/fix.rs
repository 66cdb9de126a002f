//! Applying the validator's safe quick fixes to document text.
//!
//! Edits are made in the original text where the target list is written
//! (block `- item` lines or a flow `[a, b]` list), so comments and layout
//! survive; otherwise the document is rewritten in canonical form.

use std::collections::BTreeMap;
use wfstudio_schema::tree::NodeValue;
use wfstudio_schema::types::document::Document;
use wfstudio_schema::{DocPath, Fix, FixEdit, Loaded, SourceMap};

/// The result of applying fixes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fixed {
    /// The new document text.
    pub text: String,
    /// One line per change, for the user.
    pub changes: Vec<String>,
    /// Whether the text had to be rewritten canonically (comments after the
    /// leading block and the original layout are then lost).
    pub rewritten: bool,
}

/// Why fixes could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum FixError {
    /// The canonical rewrite could not place the items.
    #[error("cannot apply the fix at {0}")]
    Unplaceable(DocPath),
}

fn byte_offset(text: &str, char_offset: usize) -> usize {
    text.char_indices()
        .nth(char_offset)
        .map_or(text.len(), |(b, _)| b)
}

/// Applies `fixes` to `text` (whose parse is `loaded`). Items already in a
/// list are not added again; fixes on the same list are merged.
pub fn apply(text: &str, loaded: &Loaded, fixes: &[&Fix]) -> Result<Fixed, FixError> {
    let mut lists: BTreeMap<&DocPath, Vec<&str>> = BTreeMap::new();
    for fix in fixes {
        let FixEdit::AppendToList { path, items } = &fix.edit;
        let entry = lists.entry(path).or_default();
        for item in items {
            if !entry.contains(&item.as_str()) {
                entry.push(item);
            }
        }
    }
    let mut edits: Vec<(usize, String)> = Vec::new();
    let mut changes = Vec::new();
    let mut canonical: Vec<(&DocPath, Vec<&str>)> = Vec::new();
    for (path, items) in lists {
        let existing = list_items(&loaded.source_map, path);
        let new: Vec<&str> = items
            .into_iter()
            .filter(|i| !existing.iter().any(|e| e == i))
            .collect();
        if new.is_empty() {
            continue;
        }
        changes.push(format!("added to {path}: {}", new.join(", ")));
        match text_edit(text, &loaded.source_map, path, &new) {
            Some(edit) => edits.push(edit),
            None => canonical.push((path, new)),
        }
    }
    if !canonical.is_empty() {
        let mut document = loaded.document.clone();
        for (path, items) in canonical {
            append_typed(&mut document, path, &items)?;
        }
        return Ok(Fixed {
            text: wfstudio_schema::save::to_yaml(&document, loaded.leading_comments.as_deref()),
            changes,
            rewritten: true,
        });
    }
    edits.sort_by_key(|edit| std::cmp::Reverse(edit.0));
    let mut out = text.to_string();
    for (at, insert) in edits {
        out.insert_str(at, &insert);
    }
    Ok(Fixed {
        text: out,
        changes,
        rewritten: false,
    })
}

fn list_items(map: &SourceMap, path: &DocPath) -> Vec<String> {
    match map.node(path).map(|n| &n.value) {
        Some(NodeValue::Seq(items)) => items
            .iter()
            .filter_map(|i| match &i.value {
                NodeValue::Scalar(s) => Some(s.text.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// An insertion into the source text appending `items` to the list at
/// `path`, when the list is written there.
fn text_edit(
    text: &str,
    map: &SourceMap,
    path: &DocPath,
    items: &[&str],
) -> Option<(usize, String)> {
    let span = map.value_span(path)?;
    let start = byte_offset(text, span.start.offset);
    let end = byte_offset(text, span.end.offset);
    let rendered: Vec<String> = items
        .iter()
        .map(|i| wfstudio_schema::emit::scalar_string(i))
        .collect();
    if text[start..].starts_with('[') {
        let close = text[start..end.max(start + 1)].rfind(']')? + start;
        let empty = text[start + 1..close].trim().is_empty();
        let joined = rendered.join(", ");
        let insert = if empty { joined } else { format!(", {joined}") };
        return Some((close, insert));
    }
    let last = match &last_item(map, path)?.value {
        NodeValue::Scalar(_) => last_item(map, path)?,
        _ => return None,
    };
    let last_end = byte_offset(text, last.span.end.offset);
    let line_end = text[last_end..]
        .find('\n')
        .map_or(text.len(), |i| last_end + i);
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let prefix = &text[line_start..start];
    let indent = prefix.strip_suffix("- ")?;
    if !indent.chars().all(|c| c == ' ') {
        return None;
    }
    let lines: String = rendered
        .iter()
        .map(|item| format!("\n{indent}- {item}"))
        .collect();
    Some((line_end, lines))
}

fn last_item<'m>(map: &'m SourceMap, path: &DocPath) -> Option<&'m wfstudio_schema::tree::Node> {
    match &map.node(path)?.value {
        NodeValue::Seq(items) => items.last(),
        _ => None,
    }
}

fn append_typed(document: &mut Document, path: &DocPath, items: &[&str]) -> Result<(), FixError> {
    let manifest_caps = crate::validate::workflow_path()
        .key("manifest")
        .key("capabilities");
    if *path != manifest_caps {
        return Err(FixError::Unplaceable(path.clone()));
    }
    let wf = document
        .pipeline
        .as_mut()
        .map(|p| &mut p.workflow)
        .ok_or_else(|| FixError::Unplaceable(path.clone()))?;
    let caps = wf.manifest.capabilities.get_or_insert_with(Vec::new);
    caps.extend(items.iter().map(|s| s.to_string()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Options, validate};
    use wfstudio_schema::{Format, Limits, parse_text};

    const DOC: &str = "# keep me\npipeline:\n  workflow:\n    manifest:\n      capabilities: [workflow_ssa]  # and me\n    components: {}\n    outputs:\n      y: {contract: {dtype: int64, rank: 0}, role: tensor, stage: pre_adapter}\n    inputs:\n      x: {contract: {dtype: int64, rank: 0}, role: {kind: opaque}, source: {kind: application, name: x}}\n    steps:\n    - {kind: emit, value: x, output: y, mode: replace}\n";

    fn fixes_of(text: &str) -> (wfstudio_schema::Loaded, Vec<Fix>) {
        let loaded = parse_text(text, Format::Yaml, &Limits::default()).unwrap();
        let report = validate(&loaded.document, &Options::default());
        let fixes = report
            .diagnostics
            .iter()
            .filter_map(|d| d.fix.clone())
            .collect();
        (loaded, fixes)
    }

    #[test]
    fn flow_lists_get_the_items_before_the_bracket() {
        let (loaded, fixes) = fixes_of(DOC);
        assert_eq!(fixes.len(), 1);
        let fixed = apply(DOC, &loaded, &fixes.iter().collect::<Vec<_>>()).unwrap();
        assert!(!fixed.rewritten);
        assert_eq!(
            fixed.text,
            DOC.replace("[workflow_ssa]", "[workflow_ssa, typed_emit]")
        );
        let (_, remaining) = fixes_of(&fixed.text);
        assert!(remaining.is_empty());
    }

    #[test]
    fn a_missing_list_is_written_canonically() {
        let doc = DOC.replace(
            "      capabilities: [workflow_ssa]  # and me\n",
            "      adapter_abis: {}\n",
        );
        let (loaded, fixes) = fixes_of(&doc);
        let fixed = apply(&doc, &loaded, &fixes.iter().collect::<Vec<_>>()).unwrap();
        assert!(fixed.rewritten);
        assert!(fixed.text.starts_with("# keep me\n"));
        assert!(
            fixed
                .text
                .contains("      capabilities:\n      - workflow_ssa\n      - typed_emit\n")
        );
        let (_, remaining) = fixes_of(&fixed.text);
        assert!(remaining.is_empty());
    }
}
