//! The fast half of the document target: the YAML and JSON loaders
//! (located tree, strict deserialisation, limits) and the semantic identity
//! on arbitrary text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wfstudio_schema::{Format, Limits, parse_text};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for format in [Format::Yaml, Format::Json] {
        let _ = parse_text(text, format, &Limits::default());
    }
    let _ = wfstudio_core::identity::identity(text);
});
