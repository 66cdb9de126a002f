//! Each malformed fixture produces exactly the diagnostic listed for it in
//! `fixtures/malformed/EXPECTED.tsv` (code, document path, line:column and a
//! message fragment).

mod support;

use wfstudio_schema::{Diagnostic, Format, Limits, parse_text};

fn diagnostics(file: &std::path::Path) -> Vec<Diagnostic> {
    let text = std::fs::read_to_string(file).expect("fixture readable");
    let format = Format::from_path(file);
    match parse_text(&text, format, &Limits::default()) {
        Ok(loaded) => loaded.warnings,
        Err(diagnostics) => diagnostics,
    }
}

#[test]
fn every_malformed_fixture_gives_its_exact_diagnostic() {
    let dir = support::fixtures().join("malformed");
    let table = std::fs::read_to_string(dir.join("EXPECTED.tsv")).expect("table");
    let mut listed = Vec::new();
    for row in table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = row.split('\t').collect();
        let [file, code, path, position, fragment] = cols[..] else {
            panic!("bad row {row:?}");
        };
        listed.push(file.to_string());
        let found = diagnostics(&dir.join(file));
        assert_eq!(found.len(), 1, "{file}: {found:#?}");
        let d = &found[0];
        assert_eq!(d.code, code, "{file}: {d:#?}");
        let shown_path = if d.path.is_root() {
            "<root>".to_string()
        } else {
            d.path.to_string()
        };
        assert_eq!(shown_path, path, "{file}");
        let span = d.span.expect("located");
        assert_eq!(
            format!("{}:{}", span.start.line, span.start.column),
            position,
            "{file}"
        );
        assert!(
            d.message.contains(fragment),
            "{file}: {:?} lacks {fragment:?}",
            d.message
        );
        assert!(d.help.is_some(), "{file}: every diagnostic has a fix hint");
    }
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != "EXPECTED.tsv")
        .collect();
    on_disk.sort();
    listed.sort();
    assert_eq!(on_disk, listed, "every fixture is listed exactly once");
    assert!(listed.len() >= 15);
}
