//! The imported ComfyUI graph, drawn as ComfyUI draws it (groups, nodes at
//! their UI positions, links between slots) on an [`egui::Scene`], with a
//! red badge on every refused node and a highlight on the nodes the
//! selected lowered step came from. Clicking a node reports it, so the
//! studio can select the lowered steps it became.

use egui::{Color32, CornerRadius, FontId, Pos2, Rect, Sense, Stroke, StrokeKind, Ui, pos2, vec2};
use std::collections::BTreeSet;
use std::collections::HashMap;
use wfstudio_core::comfyui::lower::Refusal;
use wfstudio_core::comfyui::view::{ComfyView, HEADER, NodeMode, ROW};

/// Pan and zoom of the ComfyUI pane.
#[derive(Clone, Debug)]
pub struct ComfyViewState {
    /// The part of the graph in view.
    pub scene_rect: Rect,
    /// Fit the whole graph on the next frame.
    pub fit_pending: bool,
}

impl Default for ComfyViewState {
    fn default() -> Self {
        ComfyViewState {
            scene_rect: Rect::ZERO,
            fit_pending: true,
        }
    }
}

/// What to draw besides the graph itself.
pub struct ComfyOverlay<'a> {
    /// Refusals of the lowering (badges on their nodes).
    pub refusals: &'a [Refusal],
    /// Nodes that cannot reach the image sink (drawn faded).
    pub ignored: &'a BTreeSet<usize>,
    /// Nodes to highlight (sources of the selected lowered steps).
    pub highlighted: &'a BTreeSet<usize>,
    /// The node last clicked.
    pub selected: Option<usize>,
}

fn node_rect(view: &ComfyView, n: usize) -> Rect {
    let node = &view.nodes[n];
    Rect::from_min_size(
        pos2(node.pos[0], node.pos[1]),
        vec2(node.size[0], node.size[1]),
    )
}

fn bounds(view: &ComfyView) -> Rect {
    let nodes = (0..view.nodes.len()).map(|n| node_rect(view, n));
    let groups = view
        .groups
        .iter()
        .map(|g| Rect::from_min_size(pos2(g.rect[0], g.rect[1]), vec2(g.rect[2], g.rect[3])));
    nodes
        .chain(groups)
        .reduce(|a, b| a.union(b))
        .unwrap_or(Rect::from_min_size(Pos2::ZERO, vec2(400.0, 300.0)))
}

fn hex_color(text: &str) -> Option<Color32> {
    let hex = text.strip_prefix('#')?;
    let v = u32::from_str_radix(hex.get(..6)?, 16).ok()?;
    Some(Color32::from_rgb((v >> 16) as u8, (v >> 8) as u8, v as u8))
}

/// The colour of a ComfyUI value type, close to ComfyUI's own palette.
fn link_color(kind: &str) -> Color32 {
    match kind {
        "MODEL" => Color32::from_rgb(180, 160, 255),
        "CLIP" => Color32::from_rgb(255, 210, 60),
        "VAE" => Color32::from_rgb(255, 110, 110),
        "LATENT" => Color32::from_rgb(255, 150, 210),
        "CONDITIONING" => Color32::from_rgb(255, 170, 90),
        "IMAGE" => Color32::from_rgb(100, 180, 255),
        "MASK" => Color32::from_rgb(120, 220, 150),
        "CONTROL_NET" => Color32::from_rgb(0, 210, 170),
        _ => Color32::from_gray(160),
    }
}

/// Draws the graph; returns the node clicked this frame.
pub fn show(
    ui: &mut Ui,
    view: &ComfyView,
    overlay: &ComfyOverlay,
    state: &mut ComfyViewState,
) -> Option<usize> {
    if state.fit_pending {
        state.scene_rect = bounds(view).expand(40.0);
        state.fit_pending = false;
    }
    let mut clicked = None;
    let mut scene_rect = state.scene_rect;
    egui::Scene::new()
        .zoom_range(0.02..=4.0)
        .show(ui, &mut scene_rect, |ui| {
            clicked = draw(ui, view, overlay);
        });
    state.scene_rect = scene_rect;
    clicked
}

fn draw(ui: &mut Ui, view: &ComfyView, overlay: &ComfyOverlay) -> Option<usize> {
    let painter = ui.painter().clone();
    let text = ui.visuals().text_color();
    let weak = ui.visuals().weak_text_color();
    let fill = ui.visuals().widgets.noninteractive.bg_fill;
    let error = crate::style::severity_color(wfstudio_schema::Severity::Error);
    let highlight = ui.visuals().selection.stroke.color;
    for group in &view.groups {
        let rect = Rect::from_min_size(
            pos2(group.rect[0], group.rect[1]),
            vec2(group.rect[2], group.rect[3]),
        );
        let color = group
            .color
            .as_deref()
            .and_then(hex_color)
            .unwrap_or(Color32::from_gray(110));
        painter.rect_filled(rect, 4.0, color.gamma_multiply(0.18));
        painter.rect_stroke(
            rect,
            4.0,
            Stroke::new(1.0, color.gamma_multiply(0.6)),
            StrokeKind::Inside,
        );
        painter.text(
            rect.min + vec2(8.0, 6.0),
            egui::Align2::LEFT_TOP,
            &group.title,
            FontId::proportional(18.0),
            text,
        );
    }
    let positions: HashMap<&str, usize> = view
        .nodes
        .iter()
        .enumerate()
        .map(|(n, node)| (node.id.as_str(), n))
        .collect();
    let index = |id: &str| positions.get(id).copied();
    // Refusals per drawn node, found once.
    let mut refused: HashMap<usize, Vec<&Refusal>> = HashMap::new();
    for r in overlay.refusals.iter().filter(|r| !r.node.is_empty()) {
        if let Some(n) = view.node_for(&r.node) {
            refused.entry(n).or_default().push(r);
        }
    }
    for link in &view.links {
        let (Some(a), Some(b)) = (index(&link.from.0), index(&link.to.0)) else {
            continue;
        };
        let from = node_rect(view, a);
        let to = node_rect(view, b);
        let start = pos2(
            from.max.x,
            from.min.y + HEADER + ROW * (link.from.1 as f32 + 0.5),
        );
        let end = pos2(to.min.x, to.min.y + HEADER + ROW * (link.to.1 as f32 + 0.5));
        let bend = ((end.x - start.x).abs() * 0.5).max(40.0);
        let curve = egui::epaint::CubicBezierShape::from_points_stroke(
            [start, start + vec2(bend, 0.0), end - vec2(bend, 0.0), end],
            false,
            Color32::TRANSPARENT,
            Stroke::new(2.0, link_color(&link.kind)),
        );
        painter.add(curve);
    }
    let mut clicked = None;
    for (n, node) in view.nodes.iter().enumerate() {
        let rect = node_rect(view, n);
        let refusals = refused.get(&n).cloned().unwrap_or_default();
        let faded = overlay.ignored.contains(&n) || node.mode != NodeMode::Active;
        let alpha = if faded { 0.45 } else { 1.0 };
        painter.rect_filled(rect, CornerRadius::same(6), fill.gamma_multiply(alpha));
        let header = Rect::from_min_size(rect.min, vec2(rect.width(), HEADER));
        let header_color = match node.mode {
            NodeMode::Bypassed => Color32::from_rgb(150, 60, 170),
            NodeMode::Muted => Color32::from_gray(70),
            NodeMode::Active => Color32::from_rgb(55, 75, 95),
        };
        painter.rect_filled(
            header,
            CornerRadius {
                nw: 6,
                ne: 6,
                sw: 0,
                se: 0,
            },
            header_color.gamma_multiply(alpha),
        );
        painter.text(
            header.left_center() + vec2(8.0, 0.0),
            egui::Align2::LEFT_CENTER,
            format!("#{} {}", node.id, node.title),
            FontId::proportional(14.0),
            Color32::WHITE,
        );
        for (i, name) in node.inputs.iter().enumerate() {
            let y = rect.min.y + HEADER + ROW * (i as f32 + 0.5);
            painter.circle_filled(pos2(rect.min.x, y), 4.0, weak);
            painter.text(
                pos2(rect.min.x + 10.0, y),
                egui::Align2::LEFT_CENTER,
                name,
                FontId::proportional(12.0),
                text,
            );
        }
        for (i, name) in node.outputs.iter().enumerate() {
            let y = rect.min.y + HEADER + ROW * (i as f32 + 0.5);
            painter.circle_filled(pos2(rect.max.x, y), 4.0, weak);
            painter.text(
                pos2(rect.max.x - 10.0, y),
                egui::Align2::RIGHT_CENTER,
                name,
                FontId::proportional(12.0),
                text,
            );
        }
        let slots = node.inputs.len().max(node.outputs.len());
        for (i, widget) in node.widgets.iter().enumerate() {
            let y = rect.min.y + HEADER + ROW * ((slots + i) as f32 + 0.5);
            let row = Rect::from_center_size(
                pos2(rect.center().x, y),
                vec2(rect.width() - 16.0, ROW - 4.0),
            );
            painter.rect_filled(row, 3.0, Color32::from_black_alpha(60));
            painter.text(
                row.left_center() + vec2(6.0, 0.0),
                egui::Align2::LEFT_CENTER,
                widget,
                FontId::proportional(12.0),
                weak,
            );
        }
        let mut outline = None;
        if overlay.highlighted.contains(&n) {
            outline = Some(Stroke::new(3.0, highlight));
        }
        if overlay.selected == Some(n) {
            outline = Some(Stroke::new(3.0, Color32::WHITE));
        }
        if !refusals.is_empty() {
            outline = Some(Stroke::new(3.0, error));
        }
        if let Some(stroke) = outline {
            painter.rect_stroke(rect, CornerRadius::same(6), stroke, StrokeKind::Outside);
        }
        let mut body = ui.interact(rect, ui.id().with(("comfy-node", n)), Sense::click());
        let label = if refusals.is_empty() {
            format!("ComfyUI node {} {}", node.id, node.class)
        } else {
            format!("ComfyUI node {} {} refused", node.id, node.class)
        };
        body.widget_info(|| egui::WidgetInfo::labeled(egui::WidgetType::Button, true, &label));
        if !refusals.is_empty() {
            let badge =
                Rect::from_center_size(pos2(rect.max.x - 12.0, rect.min.y), vec2(22.0, 22.0));
            painter.circle_filled(badge.center(), 11.0, error);
            painter.text(
                badge.center(),
                egui::Align2::CENTER_CENTER,
                "!",
                FontId::proportional(15.0),
                Color32::WHITE,
            );
            let lines: Vec<String> = refusals.iter().map(|r| badge_text(r)).collect();
            painter.text(
                pos2(rect.min.x, rect.max.y + 6.0),
                egui::Align2::LEFT_TOP,
                lines.join("\n"),
                FontId::proportional(12.0),
                error,
            );
            body = body.on_hover_text(lines.join("\n"));
        }
        if body.clicked() {
            clicked = Some(n);
        }
    }
    clicked
}

/// One refusal as the list and the status line show it.
pub fn refusal_text(r: &Refusal) -> String {
    format!("{} — {}", r.sentence(), r.remedy)
}

/// One refusal as the text under its node shows it (the node is known).
fn badge_text(r: &Refusal) -> String {
    let input = r
        .input
        .as_deref()
        .map(|i| format!(" `{i}`"))
        .unwrap_or_default();
    format!("{}{input}: {} — {}", r.class, r.message, r.remedy)
}
