//! The run timeline: a Gantt chart of every invoke call, one row per step
//! path (in the order the steps first ran), bars from each call's start to
//! its end, coloured by the execution provider that ran most of its
//! component's nodes (a legend names them; a component whose nodes fell
//! back from the provider asked for gets an outline in the warning
//! colour). Ctrl + wheel zooms the time axis, the scroll bar pans;
//! hovering a bar tells its times and placement, clicking it selects the
//! step on the canvas.

use egui::Color32;
use wfstudio_runner::{InvokeTiming, InvokedStep, Placement, RunOutput};

const ROW: f32 = 16.0;
const LABEL: f32 = 110.0;

/// Zoom of the time axis.
pub struct Timeline {
    /// Points per millisecond; 0 = fit the run into the available width.
    pub points_per_ms: f32,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline { points_per_ms: 0.0 }
    }
}

/// Rows of the chart: step paths in order of their first call, with the
/// indices of their calls.
pub fn rows(output: &RunOutput) -> Vec<(&str, Vec<usize>)> {
    let mut rows: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, call) in output.invokes.iter().enumerate() {
        let Some(step) = output.step_of(call) else {
            continue;
        };
        match rows.iter_mut().find(|(path, _)| *path == &*step.path) {
            Some((_, calls)) => calls.push(i),
            None => rows.push((&step.path, vec![i])),
        }
    }
    rows
}

/// Outline of the bars of a component whose nodes fell back.
const FELL_BACK: Color32 = wfstudio_editor::run_overlay::FELL_BACK_COLOR;

/// Bar colours of the providers after the first, in the order they appear.
const PROVIDER_COLORS: [Color32; 4] = [
    Color32::from_rgb(118, 185, 0),
    Color32::from_rgb(200, 110, 220),
    Color32::from_rgb(230, 120, 90),
    Color32::from_rgb(90, 200, 200),
];

/// The providers the run's components ran on (each component's dominant
/// one), in order of first appearance, each with its bar colour; the first
/// takes `first`.
pub fn legend(placements: &[Placement], first: Color32) -> Vec<(String, Color32)> {
    let mut legend: Vec<(String, Color32)> = Vec::new();
    for placement in placements {
        let ep = placement.dominant();
        if legend.iter().all(|(name, _)| name != ep) {
            let color = match legend.len() {
                0 => first,
                n => PROVIDER_COLORS[(n - 1) % PROVIDER_COLORS.len()],
            };
            legend.push((ep.to_string(), color));
        }
    }
    legend
}

/// Draws the chart of `output`'s calls, coloured by `placements`; returns
/// the step path of a clicked bar.
pub fn show(
    ui: &mut egui::Ui,
    output: &RunOutput,
    placements: &[Placement],
    zoom: &mut Timeline,
) -> Option<String> {
    let invokes = &output.invokes;
    let end_ms = invokes
        .iter()
        .map(|c| (c.start + c.wall).as_secs_f64() * 1e3)
        .fold(0.0f64, f64::max)
        .max(1e-3) as f32;
    let fit = ((ui.available_width() - LABEL - 8.0) / end_ms).max(1e-3);
    if zoom.points_per_ms <= 0.0 {
        zoom.points_per_ms = fit;
    }
    let rows = rows(output);
    let mut clicked = None;
    let plain = ui.visuals().selection.stroke.color;
    let legend = legend(placements, plain);
    let placed = |component: &str| placements.iter().find(|p| p.component == component);
    let color_of = |placement: Option<&Placement>| {
        placement
            .and_then(|p| legend.iter().find(|(ep, _)| ep == p.dominant()))
            .map_or(plain, |(_, color)| *color)
    };
    ui.horizontal(|ui| {
        ui.weak(format!("{end_ms:.2} ms, {} calls", invokes.len()));
        if ui.small_button("fit").clicked() {
            zoom.points_per_ms = fit;
        }
        for (ep, color) in &legend {
            ui.label(egui::RichText::new("■").color(*color));
            ui.weak(ep);
        }
        if placements.iter().any(|p| p.fallbacks > 0) {
            ui.label(egui::RichText::new("□").color(FELL_BACK));
            ui.weak("fell back");
        }
    });
    egui::ScrollArea::horizontal()
        .id_salt("timeline")
        .show(ui, |ui| {
            let size = egui::vec2(
                LABEL + end_ms * zoom.points_per_ms + 8.0,
                ROW * rows.len() as f32,
            );
            let (rect, response) = ui.allocate_exact_size(size, egui::Sense::click());
            if response.hovered() {
                let (scroll, ctrl) = ui.input(|i| (i.smooth_scroll_delta.y, i.modifiers.command));
                if ctrl && scroll != 0.0 {
                    zoom.points_per_ms =
                        (zoom.points_per_ms * (1.0 + scroll * 0.01)).clamp(1e-3, 1e6);
                }
            }
            let painter = ui.painter_at(rect);
            let pointer = response.hover_pos();
            let text = ui.visuals().text_color();
            let mut hovered: Option<(&InvokedStep, &InvokeTiming)> = None;
            for (r, (path, calls)) in rows.iter().enumerate() {
                let y = rect.top() + r as f32 * ROW;
                painter.text(
                    egui::pos2(rect.left(), y + ROW / 2.0),
                    egui::Align2::LEFT_CENTER,
                    short(path),
                    egui::FontId::proportional(10.0),
                    text,
                );
                for &i in calls {
                    let call = &invokes[i];
                    let Some(step) = output.step_of(call) else {
                        continue;
                    };
                    let x0 =
                        rect.left() + LABEL + call.start.as_secs_f32() * 1e3 * zoom.points_per_ms;
                    let w = (call.wall.as_secs_f32() * 1e3 * zoom.points_per_ms).max(1.0);
                    let bar = egui::Rect::from_min_size(
                        egui::pos2(x0, y + 2.0),
                        egui::vec2(w, ROW - 4.0),
                    );
                    let placement = placed(&step.component);
                    painter.rect_filled(bar, 1.0, color_of(placement));
                    if placement.is_some_and(|p| p.fallbacks > 0) {
                        let stroke = egui::Stroke::new(1.5, FELL_BACK);
                        painter.rect_stroke(bar, 1.0, stroke, egui::StrokeKind::Inside);
                    }
                    if pointer.is_some_and(|p| bar.expand2(egui::vec2(1.0, 0.0)).contains(p)) {
                        hovered = Some((step, call));
                    }
                }
            }
            if let Some((step, call)) = hovered {
                let on = placed(&step.component)
                    .map(|p| format!("\non {}", p.label()))
                    .unwrap_or_default();
                response.clone().on_hover_text(format!(
                    "{}\n{}: {:.3} ms ({:.3} ms in ONNX Runtime), at {:.3} ms{on}",
                    step.path,
                    step.component,
                    call.wall.as_secs_f64() * 1e3,
                    call.ort.as_secs_f64() * 1e3,
                    call.start.as_secs_f64() * 1e3
                ));
                if response.clicked() {
                    clicked = Some(step.path.to_string());
                }
            }
        });
    clicked
}

/// The tail of a step path that fits a row label.
fn short(path: &str) -> String {
    let tail: String = path
        .strip_prefix("pipeline.workflow.")
        .unwrap_or(path)
        .to_string();
    if tail.chars().count() > 20 {
        let skip = tail.chars().count() - 19;
        format!("…{}", tail.chars().skip(skip).collect::<String>())
    } else {
        tail
    }
}

#[cfg(test)]
mod tests {
    use super::{PROVIDER_COLORS, legend, rows};
    use egui::Color32;
    use std::sync::Arc;
    use std::time::Duration;
    use wfstudio_runner::{Device, Placement};
    use wfstudio_runner::{InvokeTiming, InvokedStep, RunOutput};

    fn call(step: usize, start_ms: u64) -> InvokeTiming {
        InvokeTiming {
            step,
            wall: Duration::from_millis(1),
            ort: Duration::from_millis(1),
            start: Duration::from_millis(start_ms),
            reused: false,
        }
    }

    #[test]
    fn one_row_per_step_in_first_call_order() {
        let step = |path: &str| InvokedStep {
            path: path.into(),
            component: "c".into(),
        };
        let output = RunOutput {
            steps: Arc::new(vec![step("a"), step("b"), step("c")]),
            invokes: vec![call(1, 0), call(0, 1), call(1, 2), call(0, 3), call(2, 4)],
            ..RunOutput::default()
        };
        assert_eq!(
            rows(&output),
            [("b", vec![0, 2]), ("a", vec![1, 3]), ("c", vec![4])]
        );
    }

    #[test]
    fn the_legend_names_each_provider_once_in_order() {
        let cuda = Device::Cuda;
        let plugin = Device::Ep {
            ep: "cpu_ep".into(),
            index: 0,
        };
        let placements = [
            Placement::new("unet", &cuda, vec![("CUDAExecutionProvider".into(), 9)]),
            Placement::new("vae", &plugin, vec![("cpu_ep".into(), 3)]),
            Placement::new("clip", &cuda, vec![("CPUExecutionProvider".into(), 2)]),
        ];
        let first = Color32::WHITE;
        assert_eq!(
            legend(&placements, first),
            [
                ("CUDA".to_string(), first),
                ("cpu_ep".to_string(), PROVIDER_COLORS[0]),
                ("CPU".to_string(), PROVIDER_COLORS[1])
            ]
        );
    }
}
