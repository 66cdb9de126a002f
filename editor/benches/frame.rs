//! Canvas frame-time benchmark (headless, CPU): one egui frame of the graph
//! view, including tessellation, for the largest corpus document and a
//! synthetic workflow with 1000 invokes in 10 nested loops, fitted to view
//! and zoomed in; against an empty frame measured in the same run.
//!
//! Run: `cargo bench -p wfstudio-editor --bench frame`.

#[path = "../../schema/benches/support/timing.rs"]
#[allow(dead_code)] // this bench uses part of the shared helpers
mod timing;

#[path = "../../schema/benches/support/synthetic.rs"]
mod synthetic;

use egui::{Rect, pos2, vec2};
use wfstudio_editor::canvas::{self, CanvasState, CanvasView};
use wfstudio_editor::sidecar::Sidecar;
use wfstudio_schema::{Format, Limits, parse_text};

fn input() -> egui::RawInput {
    egui::RawInput {
        screen_rect: Some(Rect::from_min_size(pos2(0.0, 0.0), vec2(1400.0, 900.0))),
        ..Default::default()
    }
}

/// Median time of one full frame (run + tessellate) drawing `ui`.
fn frame_time(ctx: &egui::Context, mut ui: impl FnMut(&mut egui::Ui)) -> std::time::Duration {
    timing::time(41, || {
        let mut output = ctx.run_ui(input(), &mut ui);
        output.textures_delta.clear();
        std::hint::black_box(ctx.tessellate(output.shapes, output.pixels_per_point));
    })
}

fn main() {
    let shared = timing::shared(env!("CARGO_MANIFEST_DIR"));
    let cases = [
        (
            "packages/tts",
            std::fs::read_to_string(shared.join("corpus/packages/tts/inference_metadata.yaml"))
                .ok(),
        ),
        (
            "synthetic 1000 invokes, 10 nested loops",
            Some(synthetic::synthetic(10, 100)),
        ),
    ];
    let ctx = egui::Context::default();
    let empty = frame_time(&ctx, |ui| {
        egui::CentralPanel::default().show(ui, |ui| ui.label("empty"));
    });
    println!(
        "empty frame (baseline): {:.3} ms",
        empty.as_secs_f64() * 1e3
    );
    for (name, text) in cases {
        let Some(text) = text else {
            eprintln!("{name}: not found under {}", shared.display());
            continue;
        };
        let doc = parse_text(&text, Format::Yaml, &Limits::default())
            .expect("parses")
            .document;
        let wf = &doc.pipeline.as_ref().expect("workflow").workflow;
        let graph = wfstudio_core::graph::build(wf);
        let layout = wfstudio_core::graph::layout(&graph);
        let report = wfstudio_core::validate(&doc, &Default::default());
        let sidecar = Sidecar::default();
        let view = CanvasView::new(&graph, &layout, &report, &sidecar, &[]);
        let bounds = view.bounds();
        for (zoom, scene_rect) in [
            ("fitted", bounds.expand(40.0)),
            (
                "zoomed to 1400x900 units",
                Rect::from_min_size(bounds.min, vec2(1400.0, 900.0)),
            ),
        ] {
            let ctx = egui::Context::default();
            let mut state = CanvasState::default();
            let time = frame_time(&ctx, |ui| {
                state.scene_rect = scene_rect;
                state.fit_pending = false;
                egui::CentralPanel::default().show(ui, |ui| {
                    canvas::show(ui, &view, &mut state);
                });
            });
            println!(
                "{name} ({} nodes, {} wires), {zoom}: median frame {:.3} ms, ratio to empty frame {:.1}",
                graph.nodes.len(),
                graph.edges.len(),
                time.as_secs_f64() * 1e3,
                time.as_secs_f64() / empty.as_secs_f64()
            );
        }
    }
}
