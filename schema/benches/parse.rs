//! Parse benchmark: strict, located, typed parsing of every corpus document,
//! against a baseline measured in the same run (an untyped parse of the same
//! text by the independent `serde_yaml_ng` parser).
//!
//! Run: `cargo bench -p wfstudio-schema --bench parse` (set `WFSTUDIO_SHARED`
//! if the corpus is not at `../shared`). Prints per-document medians, the
//! median per document and per KB, and the ratio to the baseline.

#[path = "support/timing.rs"]
mod timing;
use std::time::Duration;
use wfstudio_schema::{Format, Limits, parse_text};

fn main() {
    let shared = timing::shared(env!("CARGO_MANIFEST_DIR"));
    let docs = timing::documents(&shared);
    if docs.is_empty() {
        eprintln!("no corpus documents under {}", shared.display());
        std::process::exit(2);
    }
    let runs = 51;
    let limits = Limits::default();
    println!(
        "{:<48} {:>7} {:>10} {:>8} {:>10} {:>6}",
        "document", "KB", "strict_us", "us/KB", "base_us", "ratio"
    );
    let (mut ours, mut base, mut per_kb, mut total_kb) = (Vec::new(), Vec::new(), Vec::new(), 0.0);
    let (mut total_ours, mut total_base) = (Duration::ZERO, Duration::ZERO);
    for doc in &docs {
        let text = std::fs::read_to_string(doc).expect("readable corpus document");
        let kb = text.len() as f64 / 1024.0;
        let strict = timing::time(runs, || {
            std::hint::black_box(parse_text(&text, Format::Yaml, &limits).expect("parses"));
        });
        let baseline = timing::time(runs, || {
            std::hint::black_box(
                serde_yaml_ng::from_str::<serde_json::Value>(&text).expect("parses"),
            );
        });
        let us = strict.as_secs_f64() * 1e6;
        let name = doc
            .strip_prefix(&shared)
            .unwrap_or(doc)
            .display()
            .to_string();
        println!(
            "{:<48} {:>7.1} {:>10.1} {:>8.1} {:>10.1} {:>6.2}",
            name.trim_start_matches("corpus/"),
            kb,
            us,
            us / kb,
            baseline.as_secs_f64() * 1e6,
            strict.as_secs_f64() / baseline.as_secs_f64()
        );
        ours.push(strict);
        base.push(baseline);
        per_kb.push(Duration::from_secs_f64(strict.as_secs_f64() / kb));
        total_kb += kb;
        total_ours += strict;
        total_base += baseline;
    }
    println!();
    println!("documents: {}", docs.len());
    println!(
        "median per document: {:.1} us (baseline {:.1} us)",
        timing::median(ours).as_secs_f64() * 1e6,
        timing::median(base).as_secs_f64() * 1e6
    );
    println!(
        "median per KB: {:.1} us; corpus total {:.1} KB in {:.2} ms",
        timing::median(per_kb).as_secs_f64() * 1e6,
        total_kb,
        total_ours.as_secs_f64() * 1e3
    );
    println!(
        "ratio strict/baseline over the corpus: {:.2}",
        total_ours.as_secs_f64() / total_base.as_secs_f64()
    );
}
