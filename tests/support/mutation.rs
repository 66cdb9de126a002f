//! Mutation fixtures: a valid corpus document plus a list of edits, and the
//! exact set of rule codes the edited document must fail with.
//!
//! ```yaml
//! - name: max_iterations_float
//!   base: catalogue/07-stable-diffusion-text-to-image.yaml
//!   edits:
//!   - {set: 'pipeline.workflow.inputs["request.max_iterations"].contract.dtype', to: float32}
//!   expect: [V-N30]
//!   at: pipeline.workflow.steps[0].max_iterations
//! ```
//!
//! Edits: `set` (create or replace), `remove`, `push` (append to a list),
//! `rename` (a map key, keeping its position). `files: true` also runs the
//! package file checks with the base document's folder as the package root.

#![allow(dead_code)]

use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use wfstudio_schema::path::Segment;
use wfstudio_schema::{DocPath, Format, Limits, parse_text};

/// One fixture.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mutation {
    pub name: String,
    pub base: String,
    pub edits: Vec<Edit>,
    pub expect: Vec<String>,
    pub at: Option<String>,
    #[serde(default)]
    pub files: bool,
}

/// One edit.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    set: Option<String>,
    remove: Option<String>,
    push: Option<String>,
    rename: Option<String>,
    to: Option<Value>,
}

/// Every fixture under `fixtures/mutations/`, with the file it came from.
pub fn all(dir: &Path) -> Vec<(PathBuf, Mutation)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("mutations folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        let list: Vec<Mutation> =
            serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        out.extend(list.into_iter().map(|m| (file.clone(), m)));
    }
    out
}

fn path(text: &str) -> Vec<Segment> {
    DocPath::parse(text)
        .unwrap_or_else(|| panic!("bad path {text:?}"))
        .segments()
        .to_vec()
}

fn child<'v>(value: &'v mut Value, segment: &Segment, create: bool) -> &'v mut Value {
    match (segment, value) {
        (Segment::Key(k), Value::Object(map)) => {
            if create && !map.contains_key(k) {
                map.insert(k.clone(), Value::Object(Default::default()));
            }
            map.get_mut(k).unwrap_or_else(|| panic!("no key {k}"))
        }
        (Segment::Index(i), Value::Array(items)) => {
            items.get_mut(*i).unwrap_or_else(|| panic!("no index {i}"))
        }
        (segment, other) => panic!("cannot step {segment:?} into {other}"),
    }
}

fn parent<'v>(root: &'v mut Value, segments: &[Segment], create: bool) -> &'v mut Value {
    let mut node = root;
    for segment in &segments[..segments.len() - 1] {
        node = child(node, segment, create);
    }
    node
}

/// Applies the edits to a document value.
pub fn apply(root: &mut Value, edits: &[Edit]) {
    for edit in edits {
        if let Some(p) = &edit.set {
            let segments = path(p);
            let to = edit.to.clone().expect("set needs `to`");
            match (
                segments.last().expect("non-root"),
                parent(root, &segments, true),
            ) {
                (Segment::Key(k), Value::Object(map)) => {
                    map.insert(k.clone(), to);
                }
                (Segment::Index(i), Value::Array(items)) => items[*i] = to,
                _ => panic!("cannot set {p}"),
            }
        } else if let Some(p) = &edit.remove {
            let segments = path(p);
            match (
                segments.last().expect("non-root"),
                parent(root, &segments, false),
            ) {
                (Segment::Key(k), Value::Object(map)) => {
                    map.shift_remove(k).unwrap_or_else(|| panic!("no key {p}"));
                }
                (Segment::Index(i), Value::Array(items)) => {
                    items.remove(*i);
                }
                _ => panic!("cannot remove {p}"),
            }
        } else if let Some(p) = &edit.push {
            let segments = path(p);
            let to = edit.to.clone().expect("push needs `to`");
            let list = child(
                parent(root, &segments, true),
                segments.last().expect("non-root"),
                false,
            );
            list.as_array_mut()
                .unwrap_or_else(|| panic!("{p} is not a list"))
                .push(to);
        } else if let Some(p) = &edit.rename {
            let segments = path(p);
            let Some(Value::String(new)) = edit.to.clone() else {
                panic!("rename needs a string `to`")
            };
            let Segment::Key(old) = segments.last().expect("non-root") else {
                panic!("rename needs a key")
            };
            let Value::Object(map) = parent(root, &segments, false) else {
                panic!("cannot rename {p}")
            };
            let renamed = std::mem::take(map)
                .into_iter()
                .map(|(k, v)| if &k == old { (new.clone(), v) } else { (k, v) })
                .collect();
            *map = renamed;
        } else {
            panic!("empty edit");
        }
    }
}

/// The edited document's text (canonical YAML) and the folder of its base.
pub fn build(shared: &Path, mutation: &Mutation) -> (String, PathBuf) {
    let base = shared.join("corpus").join(&mutation.base);
    let text = std::fs::read_to_string(&base).unwrap_or_else(|e| panic!("{}: {e}", base.display()));
    let loaded = parse_text(&text, Format::Yaml, &Limits::default()).expect("base parses");
    let mut value = serde_json::to_value(&loaded.document).expect("value");
    apply(&mut value, &mutation.edits);
    let root = base.parent().expect("folder").to_path_buf();
    (wfstudio_schema::emit::to_yaml(&value), root)
}
