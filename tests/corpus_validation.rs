//! The validator against the shared corpus: every catalogue document (with
//! `--no-artifacts`) and every package validates with zero errors, except the
//! `tts` package's three missing component files; capability derivation and
//! semantic identity reproduce the reference values.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use wfstudio_core::artifacts::check_files;
use wfstudio_core::capabilities::required_ids;
use wfstudio_core::identity::identity;
use wfstudio_core::{Options, validate};
use wfstudio_schema::{Diagnostic, Format, Limits, Loaded, parse_text};

fn load(path: &Path) -> (String, Loaded) {
    let text = std::fs::read_to_string(path).expect("readable");
    let loaded = parse_text(&text, Format::Yaml, &Limits::default()).expect("parses");
    (text, loaded)
}

fn errors(loaded: &Loaded, root: Option<&Path>) -> Vec<Diagnostic> {
    let options = Options::default();
    let mut all = validate(&loaded.document, &options).diagnostics;
    if let Some(root) = root {
        all.extend(check_files(&loaded.document, root, &options).diagnostics);
    }
    all
}

#[test]
fn catalogue_documents_validate_without_artifacts() {
    let Some(shared) = support::shared() else {
        return;
    };
    let mut checked = 0;
    for path in support::corpus_documents(&shared) {
        if !path.starts_with(shared.join("corpus/catalogue")) {
            continue;
        }
        let (_, loaded) = load(&path);
        let found = errors(&loaded, None);
        assert!(found.is_empty(), "{}: {found:#?}", path.display());
        checked += 1;
    }
    assert_eq!(checked, 25);
}

#[test]
fn packages_validate_with_their_files_except_the_missing_tts_components() {
    let Some(shared) = support::shared() else {
        return;
    };
    let mut checked = 0;
    for path in support::corpus_documents(&shared) {
        if !path.starts_with(shared.join("corpus/packages")) {
            continue;
        }
        let (_, loaded) = load(&path);
        let root = path.parent().expect("package folder");
        let found: Vec<(String, String)> = errors(&loaded, Some(root))
            .into_iter()
            .map(|d| (d.code.to_string(), d.path.to_string()))
            .collect();
        let expected: Vec<(String, String)> = if root.ends_with("tts") {
            ["code_predictor", "embedding", "talker_prefill_embedder"]
                .iter()
                .map(|c| {
                    (
                        "V-F1".to_string(),
                        format!("pipeline.workflow.components.{c}.implementation.artifact"),
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        assert_eq!(found, expected, "{}", path.display());
        assert!(
            errors(&loaded, None).is_empty(),
            "{} without files",
            path.display()
        );
        checked += 1;
    }
    assert_eq!(checked, 14);
}

fn reference_table() -> Vec<(String, BTreeSet<String>, String)> {
    let table =
        std::fs::read_to_string(support::fixtures().join("identity/catalogue.tsv")).expect("table");
    table
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|row| {
            let cols: Vec<&str> = row.split('\t').collect();
            let mut caps: BTreeSet<String> = cols[1].split_whitespace().map(String::from).collect();
            caps.extend(["workflow_ssa".to_string(), "typed_emit".to_string()]);
            (cols[0].to_string(), caps, cols[2].to_string())
        })
        .collect()
}

#[test]
fn derived_capabilities_equal_the_reference_and_each_manifest() {
    let Some(shared) = support::shared() else {
        return;
    };
    for (file, caps, _) in reference_table() {
        let (_, loaded) = load(&shared.join("corpus/catalogue").join(&file));
        let derived: BTreeSet<String> = required_ids(&loaded.document)
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(derived, caps, "{file}");
        let manifest: BTreeSet<String> = loaded
            .document
            .pipeline
            .as_ref()
            .and_then(|p| p.workflow.manifest.capabilities.clone())
            .unwrap_or_default()
            .into_iter()
            .collect();
        assert_eq!(manifest, caps, "{file}: manifest equals the derived set");
    }
}

#[test]
fn semantic_identity_matches_the_reference_for_every_catalogue_document() {
    let Some(shared) = support::shared() else {
        return;
    };
    let table = reference_table();
    assert_eq!(table.len(), 25);
    for (file, _, hex) in table {
        let (text, loaded) = load(&shared.join("corpus/catalogue").join(&file));
        let expected = format!("onnx-genai-metadata-identity-v1:sha256:{hex}");
        assert_eq!(identity(&text).expect("identity"), expected, "{file}");
        let canonical = wfstudio_schema::save::to_yaml(&loaded.document, None);
        assert_eq!(
            identity(&canonical).expect("identity"),
            expected,
            "{file}: canonical save keeps the identity"
        );
    }
}
