//! The graph canvas, drawn on an [`egui::Scene`] (pan, zoom): frames for
//! loops and branch cases (collapsible), nodes with typed ports, wires
//! coloured by dtype with the value name on hover, back-edges for carried
//! state, step numbers and diagnostic badges. Only what is inside the
//! visible rectangle is drawn or made interactive, so large workflows stay
//! fast. The canvas never edits: it returns [`CanvasAction`]s.

use crate::sidecar::Sidecar;
use crate::style::{dtype_color, severity_color};
use egui::emath::TSTransform;
use egui::epaint::CubicBezierShape;
use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, StrokeKind, Ui, Vec2, pos2, vec2};
use wfstudio_core::Report;
use wfstudio_core::edit::Command;
use wfstudio_core::graph::{FrameId, Layout, NodeId, NodeKind, ViewGraph};
use wfstudio_schema::{DocPath, Severity};

const HEADER: f32 = 28.0;
const PORT_ROW: f32 = 20.0;
const PORT_RADIUS: f32 = 5.0;
const COLLAPSED: Vec2 = vec2(200.0, 40.0);

/// What the user did on the canvas this frame.
#[derive(Clone, Debug, PartialEq)]
pub enum CanvasAction {
    /// Click on a node: select it (`add`: shift-click adds to the selection).
    Select {
        /// The node's document path.
        path: DocPath,
        /// Keep the current selection.
        add: bool,
    },
    /// Click on empty canvas.
    ClearSelection,
    /// A box dragged with Ctrl or Shift over empty canvas: select the nodes
    /// it touches (`add`: Shift keeps the current selection).
    SelectMany {
        /// The nodes' document paths, in node order.
        paths: Vec<DocPath>,
        /// Add to the selection instead of replacing it.
        add: bool,
    },
    /// An edit: a wire dropped from an output port onto an invoke's input
    /// port (`Connect`), or "Disconnect" chosen on a bound input port.
    Edit(Command),
    /// A node dragged to a new top-left corner.
    Move {
        /// The node's path text (sidecar key).
        key: String,
        /// New corner.
        to: [f32; 2],
    },
    /// A frame's collapse toggle clicked.
    ToggleCollapse(String),
    /// Double click on empty canvas: open the palette to add a node here.
    OpenPalette,
    /// A wire or a bound port clicked: show that SSA value (after a run).
    InspectValue(String),
}

/// The canvas's own view state.
#[derive(Clone, Debug)]
pub struct CanvasState {
    /// The part of the canvas in view (the scene rectangle).
    pub scene_rect: Rect,
    /// Fit everything into view on the next frame.
    pub fit_pending: bool,
    /// An output port a wire is being dragged from.
    wire_drag: Option<(NodeId, usize)>,
    /// Where a selection box started (screen coordinates).
    box_start: Option<Pos2>,
    /// Scene to screen transform of the last frame.
    to_screen: TSTransform,
}

impl CanvasState {
    /// Where a rectangle of the canvas (scene coordinates, as the nodes'
    /// accessibility bounds are given) was on screen in the last frame.
    pub fn to_screen(&self, scene: Rect) -> Rect {
        self.to_screen * scene
    }
}

impl Default for CanvasState {
    fn default() -> Self {
        CanvasState {
            scene_rect: Rect::ZERO,
            fit_pending: true,
            wire_drag: None,
            box_start: None,
            to_screen: TSTransform::IDENTITY,
        }
    }
}

impl CanvasState {
    /// Centres the view on `rect` at the current zoom (zooming out if it
    /// would not fit).
    pub fn frame(&mut self, rect: Rect) {
        let size = self
            .scene_rect
            .size()
            .max(rect.size() * 1.4)
            .max(vec2(400.0, 300.0));
        self.scene_rect = Rect::from_center_size(rect.center(), size);
        self.fit_pending = false;
    }
}

pub use crate::run_overlay::RunOverlay;
use crate::run_overlay::{RAN_COLOR, badge_color};

/// Largest side of an emit's thumbnail, in canvas units.
const THUMBNAIL: f32 = 64.0;

/// Everything the canvas draws from, with the geometry of this frame
/// computed once (positions after user moves, frame boxes, what collapsed
/// frames hide), so drawing stays linear in what is visible.
pub struct CanvasView<'a> {
    /// The graph.
    pub graph: &'a ViewGraph,
    /// Diagnostics of the same revision.
    pub report: &'a Report,
    /// Moved positions and collapsed frames.
    pub sidecar: &'a Sidecar,
    /// Selected document paths.
    pub selected: &'a [DocPath],
    /// Run progress and timing drawn over the nodes.
    pub overlay: Option<&'a RunOverlay>,
    node_rects: Vec<Rect>,
    frame_rects: Vec<Rect>,
    collapsed: Vec<bool>,
    /// Per node: the outermost collapsed frame hiding it.
    node_hidden: Vec<Option<FrameId>>,
    /// Per frame: the outermost collapsed frame above it.
    frame_hidden: Vec<Option<FrameId>>,
    layout: &'a Layout,
}

impl<'a> CanvasView<'a> {
    /// The view of `graph` placed by `layout` and the user's `sidecar`.
    pub fn new(
        graph: &'a ViewGraph,
        layout: &'a Layout,
        report: &'a Report,
        sidecar: &'a Sidecar,
        selected: &'a [DocPath],
    ) -> Self {
        let node_rects: Vec<Rect> = (0..graph.nodes.len())
            .map(|n| {
                let r = layout.nodes[n];
                let moved = (!sidecar.positions.is_empty())
                    .then(|| sidecar.positions.get(&graph.nodes[n].path.to_string()))
                    .flatten();
                let min = moved.map_or(pos2(r.x, r.y), |[x, y]| pos2(*x, *y));
                Rect::from_min_size(min, vec2(r.w, r.h))
            })
            .collect();
        let mut frame_rects: Vec<Rect> = layout
            .frames
            .iter()
            .map(|r| Rect::from_min_size(pos2(r.x, r.y), vec2(r.w, r.h)))
            .collect();
        if !sidecar.positions.is_empty() {
            for (n, node) in graph.nodes.iter().enumerate() {
                let mut frame = node.frame;
                while let Some(f) = frame {
                    frame_rects[f] = frame_rects[f].union(node_rects[n].expand(12.0));
                    frame = graph.frames[f].parent;
                }
            }
        }
        let collapsed: Vec<bool> = graph
            .frames
            .iter()
            .map(|f| {
                !sidecar.collapsed.is_empty() && sidecar.collapsed.contains(&f.path.to_string())
            })
            .collect();
        let hidden_by = |mut frame: Option<FrameId>| {
            let mut hiding = None;
            while let Some(f) = frame {
                if collapsed[f] {
                    hiding = Some(f);
                }
                frame = graph.frames[f].parent;
            }
            hiding
        };
        let node_hidden = graph.nodes.iter().map(|n| hidden_by(n.frame)).collect();
        let frame_hidden = graph.frames.iter().map(|f| hidden_by(f.parent)).collect();
        CanvasView {
            graph,
            report,
            sidecar,
            selected,
            overlay: None,
            node_rects,
            frame_rects,
            collapsed,
            node_hidden,
            frame_hidden,
            layout,
        }
    }

    /// Where node `n` is drawn (its moved position, if any).
    pub fn node_rect(&self, n: NodeId) -> Rect {
        self.node_rects[n]
    }

    /// Where frame `f` is drawn: its laid-out box grown to hold moved members.
    fn frame_rect(&self, f: FrameId) -> Rect {
        self.frame_rects[f]
    }

    /// The box of a collapsed frame.
    fn collapsed_rect(&self, f: FrameId) -> Rect {
        let r = self.layout.frames[f];
        Rect::from_min_size(pos2(r.x, r.y), COLLAPSED)
    }

    /// The bounding box of everything, for fit-to-view and the minimap.
    pub fn bounds(&self) -> Rect {
        (0..self.graph.nodes.len())
            .map(|n| self.node_rect(n))
            .chain((0..self.graph.frames.len()).map(|f| self.frame_rect(f)))
            .reduce(|a, b| a.union(b))
            .unwrap_or(Rect::from_min_size(Pos2::ZERO, vec2(400.0, 300.0)))
    }

    fn port_pos(&self, n: NodeId, port: usize, output: bool) -> Pos2 {
        if let Some(f) = self.node_hidden[n] {
            let r = self.collapsed_rect(f);
            return if output {
                r.right_center()
            } else {
                r.left_center()
            };
        }
        let r = self.node_rect(n);
        let y = r.top() + HEADER + PORT_ROW * port as f32 + PORT_ROW / 2.0;
        pos2(if output { r.right() } else { r.left() }, y)
    }

    fn badge(&self, path: &DocPath) -> Option<(Severity, usize)> {
        let mut count = 0;
        let mut worst = Severity::Warning;
        for d in self.report.under(path) {
            count += 1;
            if d.severity == Severity::Error {
                worst = Severity::Error;
            }
        }
        (count > 0).then_some((worst, count))
    }
}

/// Draws the canvas filling `ui`, returns what the user did.
pub fn show(ui: &mut Ui, view: &CanvasView, state: &mut CanvasState) -> Vec<CanvasAction> {
    let mut actions = Vec::new();
    if state.fit_pending {
        state.scene_rect = view.bounds().expand(40.0);
        state.fit_pending = false;
    }
    let outer = ui.available_rect_before_wrap();
    // Ctrl/Shift + drag on empty canvas draws a selection box instead of panning.
    let boxing =
        state.box_start.is_some() || ui.input(|i| i.modifiers.command || i.modifiers.shift);
    let pan = if boxing {
        egui::DragPanButtons::MIDDLE | egui::DragPanButtons::SECONDARY
    } else {
        egui::DragPanButtons::all()
    };
    let scene = egui::Scene::new()
        .zoom_range(0.02..=4.0)
        .drag_pan_buttons(pan);
    let mut scene_rect = state.scene_rect;
    let response = scene
        .show(ui, &mut scene_rect, |ui| {
            state.to_screen = ui
                .ctx()
                .layer_transform_to_global(ui.layer_id())
                .unwrap_or(TSTransform::IDENTITY);
            draw(ui, view, state, &mut actions)
        })
        .response;
    state.scene_rect = scene_rect;
    if response.double_clicked() {
        actions.push(CanvasAction::OpenPalette);
    } else if response.clicked() {
        actions.push(CanvasAction::ClearSelection);
    }
    select_box(ui, &response, view, state, boxing, &mut actions);
    minimap(ui, outer, view, state);
    actions
}

/// The selection box: started by a primary drag with Ctrl or Shift on empty
/// canvas, drawn while dragging, and turned into a selection on release.
fn select_box(
    ui: &Ui,
    response: &egui::Response,
    view: &CanvasView,
    state: &mut CanvasState,
    boxing: bool,
    actions: &mut Vec<CanvasAction>,
) {
    // Screen coordinates throughout (the response's own are the scene's).
    if boxing
        && response.drag_started_by(egui::PointerButton::Primary)
        && let Some(start) = ui.input(|i| i.pointer.press_origin())
    {
        state.box_start = Some(start);
    }
    let Some(start) = state.box_start else {
        return;
    };
    let Some(now) = ui.ctx().pointer_latest_pos() else {
        return;
    };
    let screen = Rect::from_two_pos(start, now);
    let stroke = ui.visuals().selection.stroke;
    ui.painter()
        .rect_filled(screen, 0.0, stroke.color.gamma_multiply(0.12));
    ui.painter().rect_stroke(
        screen,
        0.0,
        Stroke::new(1.0, stroke.color),
        StrokeKind::Inside,
    );
    if response.drag_stopped() || !ui.input(|i| i.pointer.primary_down()) {
        state.box_start = None;
        let scene = state.to_screen.inverse() * screen;
        let paths = nodes_in(view, scene);
        actions.push(CanvasAction::SelectMany {
            paths,
            add: ui.input(|i| i.modifiers.shift),
        });
    }
}

/// Paths of the visible nodes whose boxes touch `area` (scene coordinates).
fn nodes_in(view: &CanvasView, area: Rect) -> Vec<DocPath> {
    (0..view.graph.nodes.len())
        .filter(|&n| view.node_hidden[n].is_none() && view.node_rect(n).intersects(area))
        .map(|n| view.graph.nodes[n].path.clone())
        .collect()
}

fn draw(ui: &mut Ui, view: &CanvasView, state: &mut CanvasState, actions: &mut Vec<CanvasAction>) {
    let visible = ui.clip_rect().expand(40.0);
    let scale = ui
        .ctx()
        .layer_transform_to_global(ui.layer_id())
        .map_or(1.0, |t| t.scaling);
    let detailed = scale > 0.35;
    let painter = ui.painter().clone();
    let text = ui.visuals().text_color();
    let weak = ui.visuals().weak_text_color();
    let node_fill = ui.visuals().widgets.noninteractive.bg_fill;
    let frame_fill = ui.visuals().faint_bg_color;
    let outline = ui.visuals().widgets.noninteractive.bg_stroke;
    let selected_stroke = Stroke::new(2.5, ui.visuals().selection.stroke.color);

    // Frames, outermost first.
    let mut order: Vec<FrameId> = (0..view.graph.frames.len()).collect();
    order.sort_by_key(|&f| depth(view, f));
    for f in order {
        let frame = &view.graph.frames[f];
        let key = frame.path.to_string();
        if view.frame_hidden[f].is_some() {
            continue;
        }
        let collapsed = view.collapsed[f];
        let rect = if collapsed {
            view.collapsed_rect(f)
        } else {
            view.frame_rect(f)
        };
        if !rect.intersects(visible) {
            continue;
        }
        painter.rect_filled(rect, 6.0, frame_fill);
        painter.rect_stroke(rect, 6.0, outline, StrokeKind::Inside);
        let header = Rect::from_min_size(rect.min, vec2(rect.width(), 24.0));
        let arrow = if collapsed { "[+]" } else { "[−]" };
        if detailed {
            painter.text(
                header.left_center() + vec2(8.0, 0.0),
                Align2::LEFT_CENTER,
                format!("{arrow} {}", frame.label),
                FontId::proportional(13.0),
                weak,
            );
        }
        if let Some((severity, count)) = collapsed.then(|| view.badge(&frame.path)).flatten() {
            badge(&painter, rect.right_top(), severity, count);
        }
        let toggle = ui.interact(header, ui.id().with(("frame", &key)), Sense::click());
        if toggle.clicked() {
            actions.push(CanvasAction::ToggleCollapse(key));
        }
    }

    // Wires.
    let hover = ui.ctx().pointer_hover_pos().and_then(|p| {
        ui.ctx()
            .layer_transform_from_global(ui.layer_id())
            .map(|t| t * p)
    });
    let mut hovered_wire: Option<(Pos2, String)> = None;
    for edge in &view.graph.edges {
        let (from_node, to_node) = (edge.from.0, edge.to.0);
        let same_hidden = view.node_hidden[from_node].is_some()
            && view.node_hidden[from_node] == view.node_hidden[to_node];
        if same_hidden {
            continue;
        }
        let a = view.port_pos(from_node, edge.from.1, true);
        let b = view.port_pos(to_node, edge.to.1, false);
        if !Rect::from_two_pos(a, b).expand(80.0).intersects(visible) {
            continue;
        }
        let port_path = binding_path(view, to_node, edge.to.1);
        let broken = port_path.is_some_and(|p| view.report.under(&p).next().is_some());
        let color = if broken {
            severity_color(Severity::Error)
        } else {
            dtype_color(edge.dtype.as_deref())
        };
        if !detailed {
            // Far out: straight segments are indistinguishable and cheap.
            painter.line_segment([a, b], Stroke::new(1.0 / scale.max(0.05), color));
            continue;
        }
        let bend = ((b.x - a.x).abs() * 0.5).max(40.0);
        let points = if edge.back_edge {
            // Carried state: loop back below both ends.
            let drop = 60.0;
            [a, a + vec2(bend, drop), b + vec2(-bend, drop), b]
        } else {
            [a, a + vec2(bend, 0.0), b - vec2(bend, 0.0), b]
        };
        let curve = CubicBezierShape::from_points_stroke(
            points,
            false,
            Color32::TRANSPARENT,
            Stroke::new(if edge.back_edge { 1.5 } else { 2.0 }, color),
        );
        if let Some(p) = hover
            && detailed
            && hovered_wire.is_none()
            && (0..=16).any(|i| curve.sample(i as f32 / 16.0).distance(p) < 6.0)
        {
            hovered_wire = Some((p, edge.value.clone()));
        }
        painter.add(curve);
    }

    // Nodes.
    let global_pointer_delta = ui.input(|i| i.pointer.delta());
    for (n, node) in view.graph.nodes.iter().enumerate() {
        if view.node_hidden[n].is_some() {
            continue;
        }
        let rect = view.node_rect(n);
        if !rect.intersects(visible) {
            continue;
        }
        let key = node.path.to_string();
        let accent = match node.kind {
            NodeKind::Input => Color32::from_rgb(70, 130, 90),
            NodeKind::State => Color32::from_rgb(140, 100, 60),
            NodeKind::Invoke { .. } => Color32::from_rgb(60, 90, 150),
            NodeKind::Emit => Color32::from_rgb(120, 70, 130),
            NodeKind::Output => Color32::from_rgb(150, 70, 70),
            NodeKind::LoopControl => Color32::from_rgb(150, 120, 40),
            NodeKind::BranchSelect => Color32::from_rgb(40, 125, 125),
        };
        painter.rect_filled(rect, 5.0, node_fill);
        let header = Rect::from_min_size(rect.min, vec2(rect.width(), HEADER - 4.0));
        painter.rect_filled(header, 5.0, accent);
        let selected = view.selected.contains(&node.path);
        let run_state = view.overlay.map(|o| {
            let key = key.as_str();
            (
                o.running.as_deref() == Some(key),
                o.failed.as_deref() == Some(key),
                o.badges.get(key),
                o.reused.contains(key),
                o.fell_back.contains(key),
            )
        });
        let stroke = match run_state {
            Some((_, true, _, _, _)) => Stroke::new(3.0, severity_color(Severity::Error)),
            Some((true, _, _, _, _)) => Stroke::new(3.0, RAN_COLOR),
            _ if selected => selected_stroke,
            _ => outline,
        };
        painter.rect_stroke(rect, 5.0, stroke, StrokeKind::Outside);
        if let Some((_, _, Some(badge), reused, fell_back)) = run_state {
            let color = badge_color(reused, fell_back);
            painter.text(
                rect.left_bottom() + vec2(4.0, 3.0),
                Align2::LEFT_TOP,
                badge,
                FontId::monospace(11.0),
                color,
            );
        }
        if detailed
            && node.kind == NodeKind::Emit
            && let Some((texture, size)) = node
                .outputs
                .first()
                .and_then(|o| view.overlay?.thumbnails.get(&o.name))
        {
            let scale = THUMBNAIL / size.x.max(size.y).max(1.0);
            let thumb =
                Rect::from_min_size(rect.right_bottom() + vec2(-THUMBNAIL, 4.0), *size * scale);
            painter.image(
                *texture,
                thumb,
                Rect::from_min_max(pos2(0.0, 0.0), pos2(1.0, 1.0)),
                Color32::WHITE,
            );
        }
        let body = ui.interact(rect, ui.id().with(("node", &key)), Sense::click_and_drag());
        body.widget_info(|| {
            egui::WidgetInfo::labeled(
                egui::WidgetType::Button,
                true,
                format!("{} node", node.label),
            )
        });
        if body.clicked() {
            actions.push(CanvasAction::Select {
                path: node.path.clone(),
                add: ui.input(|i| i.modifiers.shift),
            });
        }
        if body.dragged() && state.wire_drag.is_none() {
            let moved = rect.min + global_pointer_delta / scale;
            actions.push(CanvasAction::Move {
                key: key.clone(),
                to: [moved.x, moved.y],
            });
        }
        if !detailed {
            continue;
        }
        let title = match node.step {
            Some(step) => format!("{step}  {}", node.label),
            None => node.label.clone(),
        };
        painter.text(
            header.left_center() + vec2(8.0, 0.0),
            Align2::LEFT_CENTER,
            title,
            FontId::proportional(13.0),
            Color32::WHITE,
        );
        if let Some((severity, count)) = view.badge(&node.path) {
            badge(&painter, rect.right_top(), severity, count);
        }
        for (i, port) in node.inputs.iter().enumerate() {
            let at = view.port_pos(n, i, false);
            let color = dtype_color(port.contract.as_deref().and_then(|c| c.split(' ').next()));
            if port.value.is_some() || !matches!(node.kind, NodeKind::Invoke { .. }) {
                painter.circle_filled(at, PORT_RADIUS, color);
            } else {
                painter.circle_stroke(at, PORT_RADIUS, Stroke::new(1.5, color));
            }
            painter.text(
                at + vec2(10.0, 0.0),
                Align2::LEFT_CENTER,
                &port.name,
                FontId::proportional(12.0),
                text,
            );
            let hit = ui.interact(
                Rect::from_center_size(at, Vec2::splat(14.0)),
                ui.id().with(("in", &key, i)),
                Sense::click(),
            );
            if hit.clicked()
                && let Some(value) = &port.value
            {
                actions.push(CanvasAction::InspectValue(value.clone()));
            }
            let hit = match &port.contract {
                Some(contract) => hit.on_hover_text(format!("{}: {contract}", port.name)),
                None => hit,
            };
            if port.value.is_some() && matches!(node.kind, NodeKind::Invoke { .. }) {
                hit.context_menu(|ui| {
                    if ui.button("Disconnect").clicked() {
                        actions.push(CanvasAction::Edit(Command::Disconnect {
                            step: node.path.clone(),
                            port: port.name.clone(),
                        }));
                        ui.close();
                    }
                });
            }
        }
        for (i, port) in node.outputs.iter().enumerate() {
            let at = view.port_pos(n, i, true);
            let color = dtype_color(port.contract.as_deref().and_then(|c| c.split(' ').next()));
            painter.circle_filled(at, PORT_RADIUS, color);
            let label = port.value.clone().unwrap_or_else(|| port.name.clone());
            painter.text(
                at - vec2(10.0, 0.0),
                Align2::RIGHT_CENTER,
                label,
                FontId::proportional(12.0),
                text,
            );
            let hit = ui.interact(
                Rect::from_center_size(at, Vec2::splat(14.0)),
                ui.id().with(("out", &key, i)),
                Sense::click_and_drag(),
            );
            if hit.drag_started() && port.value.is_some() {
                state.wire_drag = Some((n, i));
            }
            if hit.clicked()
                && let Some(value) = &port.value
            {
                actions.push(CanvasAction::InspectValue(value.clone()));
            }
            if let Some(contract) = &port.contract {
                hit.on_hover_text(format!("{}: {contract}", port.name));
            }
        }
    }

    // A wire being dragged out of an output port.
    if let Some((n, i)) = state.wire_drag {
        let start = view.port_pos(n, i, true);
        if let Some(end) = hover {
            painter.add(CubicBezierShape::from_points_stroke(
                [start, start + vec2(60.0, 0.0), end - vec2(60.0, 0.0), end],
                false,
                Color32::TRANSPARENT,
                Stroke::new(2.0, ui.visuals().selection.stroke.color),
            ));
        }
        if ui.input(|i| i.pointer.any_released()) {
            state.wire_drag = None;
            if let Some(end) = hover
                && let Some(action) = drop_target(view, end, (n, i))
            {
                actions.push(action);
            }
        }
    }
    if let Some((_, value)) = &hovered_wire
        && ui.input(|i| i.pointer.primary_clicked())
    {
        actions.push(CanvasAction::InspectValue(value.clone()));
    }
    if let Some((at, value)) = hovered_wire {
        let galley = painter.layout_no_wrap(value, FontId::monospace(12.0), text);
        let rect = Rect::from_min_size(at + vec2(12.0, -20.0), galley.size()).expand(4.0);
        painter.rect_filled(rect, 3.0, ui.visuals().extreme_bg_color);
        painter.galley(rect.min + vec2(4.0, 4.0), galley, text);
    }
}

fn depth(view: &CanvasView, mut f: FrameId) -> usize {
    let mut d = 0;
    while let Some(parent) = view.graph.frames[f].parent {
        d += 1;
        f = parent;
    }
    d
}

/// The document path of an invoke input binding (where its diagnostics sit).
fn binding_path(view: &CanvasView, n: NodeId, port: usize) -> Option<DocPath> {
    let node = &view.graph.nodes[n];
    match node.kind {
        NodeKind::Invoke { .. } => Some(
            node.path
                .key("inputs")
                .key(node.inputs.get(port)?.name.as_str()),
        ),
        NodeKind::Emit => Some(node.path.key("value")),
        // Control ports are named after the step field they read.
        NodeKind::LoopControl | NodeKind::BranchSelect => {
            Some(node.path.key(node.inputs.get(port)?.name.as_str()))
        }
        _ => None,
    }
}

/// The connection made by dropping a wire from `from` at `at`, if it lands
/// on an invoke's input port.
fn drop_target(view: &CanvasView, at: Pos2, from: (NodeId, usize)) -> Option<CanvasAction> {
    let value = view.graph.nodes[from.0].outputs[from.1].value.clone()?;
    view.graph.nodes.iter().enumerate().find_map(|(n, node)| {
        if view.node_hidden[n].is_some() {
            return None;
        }
        let port =
            (0..node.inputs.len()).find(|&i| view.port_pos(n, i, false).distance(at) < 12.0)?;
        let command = match node.kind {
            NodeKind::Invoke { .. } => Command::Connect {
                step: node.path.clone(),
                port: node.inputs[port].name.clone(),
                value: value.clone(),
            },
            // A loop's continue_when / max_iterations, a branch's predicate.
            NodeKind::LoopControl | NodeKind::BranchSelect => Command::Set {
                path: binding_path(view, n, port)?,
                value: serde_json::Value::String(value.clone()),
            },
            _ => return None,
        };
        Some(CanvasAction::Edit(command))
    })
}

fn badge(painter: &egui::Painter, corner: Pos2, severity: Severity, count: usize) {
    let center = corner + vec2(-2.0, 2.0);
    painter.circle_filled(center, 9.0, severity_color(severity));
    painter.text(
        center,
        Align2::CENTER_CENTER,
        count.to_string(),
        FontId::proportional(11.0),
        Color32::WHITE,
    );
}

/// A small overview in the bottom-right corner; clicking it moves the view.
fn minimap(ui: &mut Ui, outer: Rect, view: &CanvasView, state: &mut CanvasState) {
    let size = vec2(180.0, 120.0);
    let area = Rect::from_min_size(outer.right_bottom() - size - vec2(10.0, 10.0), size);
    if !outer.contains_rect(area) {
        return;
    }
    let bounds = view.bounds().union(state.scene_rect);
    let scale = (size.x / bounds.width()).min(size.y / bounds.height());
    // Its own layer, above the scene's.
    egui::Area::new(ui.id().with("minimap"))
        .order(egui::Order::Middle)
        .fixed_pos(area.min)
        .show(ui.ctx(), |ui| {
            let (area, response) = ui.allocate_exact_size(size, Sense::click_and_drag());
            let to_map = |p: Pos2| area.min + (p - bounds.min) * scale;
            let painter = ui.painter_at(area);
            painter.rect_filled(area, 4.0, ui.visuals().extreme_bg_color.gamma_multiply(0.9));
            for n in 0..view.graph.nodes.len() {
                let r = view.node_rect(n);
                painter.rect_filled(
                    Rect::from_min_max(to_map(r.min), to_map(r.max)),
                    0.0,
                    Color32::from_gray(120),
                );
            }
            let seen =
                Rect::from_min_max(to_map(state.scene_rect.min), to_map(state.scene_rect.max));
            painter.rect_stroke(
                seen,
                0.0,
                Stroke::new(1.0, ui.visuals().selection.stroke.color),
                StrokeKind::Inside,
            );
            if let Some(p) = response.interact_pointer_pos()
                && (response.clicked() || response.dragged())
            {
                let target = bounds.min + (p - area.min) / scale;
                state.scene_rect = Rect::from_center_size(target, state.scene_rect.size());
            }
        });
}
