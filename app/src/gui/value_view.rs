//! The value inspector: the SSA value last clicked on the canvas, as the
//! run kept it — dtype, shape, range, mean, spread, NaN/Inf counts, a
//! histogram and the first elements; values produced inside loops are
//! stepped through per iteration.

use super::run_job::Finished;
use wfstudio_runner::KeptValue;
use wfstudio_runner::stats::TensorStats;

const BINS: usize = 32;
const FIRST: usize = 24;

/// Which record of the value is shown, and its statistics.
#[derive(Default)]
pub struct ValueView {
    /// Index into the value's kept records (one per producing call).
    pub record: usize,
    /// `(value, record, stats)` of the last summary, so it is computed once.
    cached: Option<(String, usize, TensorStats)>,
}

impl ValueView {
    /// Forgets the summary (a new run finished).
    pub fn reset(&mut self) {
        *self = ValueView::default();
    }
}

/// Shows `name` from the finished run.
pub fn show(ui: &mut egui::Ui, name: &str, finished: &Finished, view: &mut ValueView) {
    let records: Vec<&KeptValue> = finished
        .output
        .kept
        .iter()
        .filter(|k| k.name == name)
        .collect();
    ui.strong(format!("Value {name}"));
    if records.is_empty() {
        ui.weak(if finished.output.kept_truncated {
            "not kept: the run's inspection budget was used up before it was made"
        } else {
            "not kept: only values made by invokes are kept (inputs and literals are not)"
        });
        return;
    }
    if view.record >= records.len() {
        view.record = records.len() - 1;
    }
    if records.len() > 1 {
        ui.add(
            egui::Slider::new(&mut view.record, 0..=records.len() - 1)
                .text("call")
                .integer(),
        );
    }
    let kept = records[view.record];
    if !kept.iterations.is_empty() {
        ui.weak(format!(
            "made by {} in loop iteration {}",
            kept.path,
            kept.iterations
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" / ")
        ));
    } else {
        ui.weak(format!("made by {}", kept.path));
    }
    let fresh = !matches!(&view.cached, Some((n, r, _)) if n == name && *r == view.record);
    if fresh {
        view.cached = Some((
            name.to_string(),
            view.record,
            TensorStats::of(&kept.tensor, BINS, FIRST),
        ));
    }
    let Some((_, _, stats)) = &view.cached else {
        return;
    };
    let number = |x: Option<f64>| x.map_or("—".to_string(), |v| format!("{v:.6}"));
    egui::Grid::new("value_stats")
        .num_columns(2)
        .striped(true)
        .show(ui, |ui| {
            let rows = [
                ("dtype", kept.tensor.dtype().to_string()),
                ("shape", format!("{:?}", kept.tensor.shape)),
                ("elements", stats.count.to_string()),
                ("min", number(stats.min)),
                ("max", number(stats.max)),
                ("mean", number(stats.mean)),
                ("std", number(stats.std)),
                ("NaN", stats.nan.to_string()),
                ("±Inf", stats.infinite.to_string()),
            ];
            for (label, value) in rows {
                ui.label(label);
                ui.monospace(value);
                ui.end_row();
            }
        });
    histogram(ui, &stats.histogram);
    ui.label("first elements");
    ui.monospace(stats.first.join(", "));
}

/// Bars of the histogram, scaled to the fullest bin.
fn histogram(ui: &mut egui::Ui, bins: &[usize]) {
    let (rect, _) = ui.allocate_exact_size(
        egui::vec2(ui.available_width().min(280.0), 60.0),
        egui::Sense::hover(),
    );
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 2.0, ui.visuals().extreme_bg_color);
    let Some(&tallest) = bins.iter().max().filter(|t| **t > 0) else {
        return;
    };
    let width = rect.width() / bins.len() as f32;
    let color = ui.visuals().selection.stroke.color;
    for (i, &count) in bins.iter().enumerate() {
        let height = rect.height() * count as f32 / tallest as f32;
        let bar = egui::Rect::from_min_max(
            egui::pos2(rect.left() + i as f32 * width, rect.bottom() - height),
            egui::pos2(rect.left() + (i + 1) as f32 * width - 1.0, rect.bottom()),
        );
        painter.rect_filled(bar, 0.0, color);
    }
}
