//! Parse benchmark: strict, located, typed parsing of every corpus document,
//! against a baseline measured in the same run (an untyped parse of the same
//! text by the independent `serde_yaml_ng` parser).
//!
//! Run: `cargo bench -p wfstudio-schema --bench parse` (set `WFSTUDIO_SHARED`
//! if the corpus is not at `../shared`). Prints per-document medians, the
//! median per document and per KB, and the ratio to the baseline.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wfstudio_schema::{Format, Limits, parse_text};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time<F: FnMut()>(runs: usize, mut f: F) -> Duration {
    f();
    median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

fn documents(shared: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(shared.join("corpus/catalogue"))
        .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    if let Ok(dir) = std::fs::read_dir(shared.join("corpus/packages")) {
        docs.extend(
            dir.filter_map(|e| e.ok())
                .map(|e| e.path().join("inference_metadata.yaml"))
                .filter(|p| p.is_file()),
        );
    }
    docs.sort();
    docs
}

fn main() {
    let shared = std::env::var_os("WFSTUDIO_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let docs = documents(&shared);
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
        let strict = time(runs, || {
            std::hint::black_box(parse_text(&text, Format::Yaml, &limits).expect("parses"));
        });
        let baseline = time(runs, || {
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
        median(ours).as_secs_f64() * 1e6,
        median(base).as_secs_f64() * 1e6
    );
    println!(
        "median per KB: {:.1} us; corpus total {:.1} KB in {:.2} ms",
        median(per_kb).as_secs_f64() * 1e6,
        total_kb,
        total_ours.as_secs_f64() * 1e3
    );
    println!(
        "ratio strict/baseline over the corpus: {:.2}",
        total_ours.as_secs_f64() / total_base.as_secs_f64()
    );
}
