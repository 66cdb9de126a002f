//! Graph-view benchmark: building and laying out the node graph of the
//! largest corpus document (`packages/tts`) and of a synthetic workflow with
//! 1000 invokes in nested loops, against a plain parse of the same text in
//! the same run.
//!
//! Run: `cargo bench -p wfstudio-core --bench graph`.

#[path = "../../schema/benches/support/timing.rs"]
#[allow(dead_code)] // this bench uses part of the shared helpers
mod timing;

use wfstudio_core::graph::{build, layout};
use wfstudio_schema::{Format, Limits, parse_text};

/// A workflow of `loops` nested loops (each inside the previous) with
/// `per_loop` chained invokes in every body.
fn synthetic(loops: usize, per_loop: usize) -> String {
    let port = "{dtype: float32, rank: 2, shape: [batch, 8]}";
    let mut text = format!(
        "pipeline:\n  workflow:\n    manifest: {{capabilities: [workflow_ssa, nested_control_flow]}}\n    inputs:\n      x: {{contract: {port}, role: {{kind: opaque}}, source: {{kind: application, name: x}}}}\n      n: {{contract: {{dtype: int64, rank: 0}}, role: {{kind: opaque}}, source: {{kind: literal}}, required: false, default: 1}}\n      go: {{contract: {{dtype: bool, rank: 0}}, role: {{kind: opaque}}, source: {{kind: literal}}, required: false, default: true}}\n    components:\n      f:\n        implementation: {{kind: onnx, artifact: f.onnx}}\n        ports: {{inputs: {{a: {port}}}, outputs: {{b: {port}}}}}\n    steps:\n"
    );
    let mut indent = String::from("    ");
    let mut previous = "x".to_string();
    for l in 0..loops {
        text += &format!(
            "{indent}- kind: loop\n{indent}  continue_when: go\n{indent}  max_iterations: n\n{indent}  steps:\n"
        );
        indent += "  ";
        for i in 0..per_loop {
            let value = format!("v{l}_{i}");
            text += &format!(
                "{indent}- {{kind: invoke, component: f, inputs: {{a: {previous}}}, outputs: {{b: {value}}}}}\n"
            );
            previous = value;
        }
    }
    text
}

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
