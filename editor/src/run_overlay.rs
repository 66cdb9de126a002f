//! What a run adds to the canvas (badges, the running and failed steps,
//! thumbnails, reuse and fallback marks, the inspector's run lines) and the
//! colours its badges are drawn in.

use egui::{Color32, Vec2};

/// What a run adds to the canvas: a badge per step (`12.3 ms × 4`), the
/// step running now, the step that failed, and a thumbnail of each image
/// output under the emits that write it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOverlay {
    /// Step path text -> badge text.
    pub badges: std::collections::HashMap<String, String>,
    /// The step running now.
    pub running: Option<String>,
    /// The step that failed.
    pub failed: Option<String>,
    /// Output name -> its preview texture and size in pixels.
    pub thumbnails: std::collections::HashMap<String, (egui::TextureId, Vec2)>,
    /// Steps whose every call reused an earlier run's results (drawn in
    /// the reuse colour, so what actually ran stands out).
    pub reused: std::collections::HashSet<String>,
    /// Steps whose component had nodes fall back from the execution
    /// provider asked for (their badge is drawn in the warning colour).
    pub fell_back: std::collections::HashSet<String>,
    /// Step path text -> what the inspector tells of the step's last run
    /// (time, calls, where its nodes ran), one line each.
    pub details: std::collections::HashMap<String, Vec<String>>,
}

/// Badge colour of steps that ran.
pub const RAN_COLOR: Color32 = Color32::from_rgb(90, 220, 120);
/// Badge colour of steps whose every call was reused.
pub const REUSED_COLOR: Color32 = Color32::from_rgb(110, 170, 240);
/// Badge colour of steps whose nodes fell back to another execution
/// provider (also the timeline's fallback outline).
pub const FELL_BACK_COLOR: Color32 = Color32::from_rgb(240, 170, 60);

/// The badge colour of a step: reused, else fell back, else ran.
pub fn badge_color(reused: bool, fell_back: bool) -> Color32 {
    match (reused, fell_back) {
        (true, _) => REUSED_COLOR,
        (false, true) => FELL_BACK_COLOR,
        (false, false) => RAN_COLOR,
    }
}
