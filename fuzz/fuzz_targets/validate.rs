//! The slow half of the document target: every document that loads is
//! validated, saved canonically and reloaded (the reload must parse and
//! equal it), and its workflow built into a graph and laid out.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wfstudio_schema::{Format, Limits, parse_text};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let format = if text.trim_start().starts_with('{') { Format::Json } else { Format::Yaml };
    let Ok(loaded) = parse_text(text, format, &Limits::default()) else { return };
    let report = wfstudio_core::validate(&loaded.document, &wfstudio_core::Options::default());
    let _ = report.by_path();
    let saved = wfstudio_schema::save::to_yaml(&loaded.document, loaded.leading_comments.as_deref());
    let again = parse_text(&saved, Format::Yaml, &Limits::default()).expect("a saved document parses");
    assert_eq!(again.document, loaded.document, "save/load round-trip");
    if let Some(wf) = loaded.document.pipeline.as_ref().map(|p| &p.workflow) {
        let graph = wfstudio_core::graph::build(wf);
        let _ = wfstudio_core::graph::layout(&graph);
    }
});
