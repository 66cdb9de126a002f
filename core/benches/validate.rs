//! Validation benchmark: the whole corpus, and revalidation of the largest
//! corpus document (`packages/tts`) after a one-field edit — what the editor
//! does on every keystroke — against a plain re-parse of the same document
//! measured in the same run.
//!
//! Run: `cargo bench -p wfstudio-core --bench validate` (set
//! `WFSTUDIO_SHARED` if the corpus is not at `../shared`).

#[path = "../../schema/benches/support/timing.rs"]
mod timing;
use std::time::Duration;
use wfstudio_core::{Options, validate};
use wfstudio_schema::types::workflow::WorkflowSpec;
use wfstudio_schema::{Document, Format, Limits, parse_text};

fn workflow(doc: &mut Document) -> &mut WorkflowSpec {
    &mut doc.pipeline.as_mut().expect("pipeline").workflow
}

fn main() {
    let shared = timing::shared(env!("CARGO_MANIFEST_DIR"));
    let limits = Limits::default();
    let options = Options::default();
    let loaded: Vec<Document> = timing::documents(&shared)
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("readable");
            parse_text(&text, Format::Yaml, &limits)
                .expect("parses")
                .document
        })
        .collect();
    if loaded.is_empty() {
        eprintln!("no corpus documents under {}", shared.display());
        std::process::exit(2);
    }
    let corpus = timing::time(21, || {
        for doc in &loaded {
            std::hint::black_box(validate(doc, &options));
        }
    });
    println!(
        "whole corpus: {} documents validated in {:.2} ms (median of 21)",
        loaded.len(),
        corpus.as_secs_f64() * 1e3
    );

    let tts_path = shared.join("corpus/packages/tts/inference_metadata.yaml");
    let text = std::fs::read_to_string(&tts_path).expect("tts readable");
    let mut doc = parse_text(&text, Format::Yaml, &limits)
        .expect("parses")
        .document;
    let first_input = workflow(&mut doc)
        .inputs
        .as_ref()
        .and_then(|i| i.keys().next().cloned())
        .expect("an input");
    let mut flip = false;
    let revalidate = timing::time(201, || {
        flip = !flip;
        let input = workflow(&mut doc)
            .inputs
            .as_mut()
            .and_then(|i| i.get_mut(&first_input))
            .expect("input");
        input.externally_suppliable = Some(flip);
        std::hint::black_box(validate(&doc, &options));
    });
    let reparse = timing::time(201, || {
        std::hint::black_box(parse_text(&text, Format::Yaml, &limits).expect("parses"));
    });
    println!(
        "packages/tts ({:.1} KB): revalidation after a one-field edit {:.1} us, plain re-parse {:.1} us, ratio {:.3}",
        text.len() as f64 / 1024.0,
        revalidate.as_secs_f64() * 1e6,
        reparse.as_secs_f64() * 1e6,
        revalidate.as_secs_f64() / reparse.as_secs_f64()
    );
    println!(
        "target: under 1 ms per revalidation -> {}",
        if revalidate < Duration::from_millis(1) {
            "met"
        } else {
            "MISSED"
        }
    );
}
