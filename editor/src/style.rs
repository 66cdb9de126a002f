//! Colours shared by the canvas and panels: one per dtype family, and the
//! severity colours of diagnostics.

use egui::Color32;
use wfstudio_schema::Severity;

/// The wire and port colour of a dtype (by family, so `fp16` and `float16`
/// look alike).
pub fn dtype_color(dtype: Option<&str>) -> Color32 {
    let Some(dtype) = dtype else {
        return Color32::from_gray(140);
    };
    match wfstudio_core::contracts::normalize_dtype(dtype) {
        "float32" => Color32::from_rgb(90, 160, 255),
        "float16" | "bfloat16" => Color32::from_rgb(150, 120, 255),
        "float64" => Color32::from_rgb(60, 110, 200),
        "int64" => Color32::from_rgb(90, 200, 120),
        "int32" | "int16" | "int8" => Color32::from_rgb(150, 210, 90),
        "uint8" | "uint16" | "uint32" | "uint64" => Color32::from_rgb(220, 200, 80),
        "bool" => Color32::from_rgb(240, 140, 70),
        "string" => Color32::from_rgb(230, 110, 170),
        _ => Color32::from_gray(170),
    }
}

/// The badge colour of a severity.
pub fn severity_color(severity: Severity) -> Color32 {
    match severity {
        Severity::Error => Color32::from_rgb(230, 70, 60),
        _ => Color32::from_rgb(230, 180, 40),
    }
}
