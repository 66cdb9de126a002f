//! Graph-view benchmark: building and laying out the node graph of the
//! largest corpus document (`packages/tts`) and of a synthetic workflow with
//! 1000 invokes in nested loops, against a plain parse of the same text in
//! the same run.
//!
//! Run: `cargo bench -p wfstudio-core --bench graph`.

#[path = "../../schema/benches/support/timing.rs"]
#[allow(dead_code)] // this bench uses part of the shared helpers
mod timing;

#[path = "../../schema/benches/support/synthetic.rs"]
mod synthetic;
use synthetic::synthetic;

use wfstudio_core::graph::{build, layout};
use wfstudio_schema::{Format, Limits, parse_text};

fn main() {
    let shared = timing::shared(env!("CARGO_MANIFEST_DIR"));
    let limits = Limits::default();
    let cases = [
        (
            "packages/tts",
            std::fs::read_to_string(shared.join("corpus/packages/tts/inference_metadata.yaml"))
                .ok(),
        ),
        (
            "synthetic 1000 invokes, 10 nested loops",
            Some(synthetic(10, 100)),
        ),
    ];
    for (name, text) in cases {
        let Some(text) = text else {
            eprintln!("{name}: not found under {}", shared.display());
            continue;
        };
        let doc = parse_text(&text, Format::Yaml, &limits)
            .expect("parses")
            .document;
        let wf = &doc.pipeline.as_ref().expect("workflow").workflow;
        let graph = build(wf);
        let parse = timing::time(21, || {
            std::hint::black_box(parse_text(&text, Format::Yaml, &limits).expect("parses"));
        });
        let build_layout = timing::time(21, || {
            std::hint::black_box(layout(&build(wf)));
        });
        let open = timing::time(21, || {
            let doc = parse_text(&text, Format::Yaml, &limits)
                .expect("parses")
                .document;
            std::hint::black_box(layout(&build(&doc.pipeline.expect("workflow").workflow)));
        });
        println!(
            "{name}: {} nodes, {} wires, {} frames; build+layout {:.2} ms, open (parse+build+layout) {:.2} ms, parse alone {:.2} ms, ratio open/parse {:.2}",
            graph.nodes.len(),
            graph.edges.len(),
            graph.frames.len(),
            build_layout.as_secs_f64() * 1e3,
            open.as_secs_f64() * 1e3,
            parse.as_secs_f64() * 1e3,
            open.as_secs_f64() / parse.as_secs_f64()
        );
    }
}
