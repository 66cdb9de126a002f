//! One failing fixture per semantic rule: each mutation of a valid corpus
//! document fails with exactly the intended codes; every rule has one; and
//! disabling any single rule makes its fixture fail (so no rule is dead).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use support::mutation::{self, Mutation};
use wfstudio_core::artifacts::check_files;
use wfstudio_core::validate::rules::RULES;
use wfstudio_core::{Options, validate};
use wfstudio_schema::{Diagnostic, Format, Limits, parse_text};

fn diagnostics(shared: &std::path::Path, m: &Mutation, options: &Options) -> Vec<Diagnostic> {
    let (text, root) = mutation::build(shared, m);
    let loaded = match parse_text(&text, Format::Yaml, &Limits::default()) {
        Ok(loaded) => loaded,
        Err(diagnostics) => return diagnostics,
    };
    let mut all = validate(&loaded.document, options).diagnostics;
    if m.files {
        all.extend(check_files(&loaded.document, &root, options).diagnostics);
    }
    all
}

fn codes(found: &[Diagnostic]) -> BTreeSet<String> {
    found
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.code.to_string())
        .collect()
}

fn holds(m: &Mutation, found: &[Diagnostic]) -> Result<(), String> {
    let want: BTreeSet<String> = m.expect.iter().cloned().collect();
    let got = codes(found);
    if got != want {
        let detail: Vec<String> = found
            .iter()
            .map(|d| format!("{} {}: {}", d.code, d.path, d.message))
            .collect();
        return Err(format!(
            "expected {want:?}, got {got:?}:\n  {}",
            detail.join("\n  ")
        ));
    }
    if let Some(at) = &m.at {
        let first = &m.expect[0];
        if !found
            .iter()
            .any(|d| d.code == first && d.path.to_string() == *at)
        {
            let paths: Vec<String> = found.iter().map(|d| d.path.to_string()).collect();
            return Err(format!("no {first} at {at}; paths: {paths:?}"));
        }
    }
    Ok(())
}

#[test]
fn every_mutation_fails_with_exactly_its_codes() {
    let Some(shared) = support::shared() else {
        return;
    };
    let fixtures = mutation::all(&support::fixtures().join("mutations"));
    let mut failures = Vec::new();
    for (file, m) in &fixtures {
        if let Err(e) = holds(m, &diagnostics(&shared, m, &Options::default())) {
            failures.push(format!("{} / {}: {e}", file.display(), m.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures failed:\n{}",
        failures.len(),
        fixtures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_rule_has_a_fixture_and_disabling_it_fails_that_fixture() {
    let Some(shared) = support::shared() else {
        return;
    };
    let fixtures = mutation::all(&support::fixtures().join("mutations"));
    let mut map: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for rule in RULES {
        let mut options = Options::default();
        options.disabled.insert(rule.code);
        let caught: Vec<&str> = fixtures
            .iter()
            .filter(|(_, m)| m.expect.iter().any(|c| c == rule.code))
            .filter(|(_, m)| holds(m, &diagnostics(&shared, m, &options)).is_err())
            .map(|(_, m)| m.name.as_str())
            .collect();
        assert!(
            !caught.is_empty(),
            "disabling {} fails no fixture: the rule is untested",
            rule.code
        );
        map.insert(rule.code, caught);
    }
    for (code, tests) in &map {
        eprintln!("{code}: {}", tests.join(", "));
    }
}

#[test]
fn validation_docs_list_every_rule() {
    let docs = std::fs::read_to_string(support::workspace().join("docs/VALIDATION.md"))
        .expect("docs/VALIDATION.md");
    for rule in RULES {
        assert!(
            docs.contains(&format!("| {} | {} |", rule.code, rule.summary)),
            "docs/VALIDATION.md lacks {}",
            rule.code
        );
    }
}
