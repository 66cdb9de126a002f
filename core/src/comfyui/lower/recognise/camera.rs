//! Wan's Fun camera control: a `WanCameraEmbedding` (a preset camera
//! motion's Plücker embedding, `synth::camera`) at a
//! `WanCameraImageToVideo`'s `camera_conditions`, whose width, height and
//! length may be the embedding's own (its outputs 1, 2 and 3).

use super::super::graph::Graph;
use super::MAX_RESOLUTION;
use crate::comfyui::lower::Refusal;
use crate::comfyui::synth::camera::POSES;

/// ComfyUI's camera image-to-video node.
pub(super) const CAMERA_VIDEO: &str = "WanCameraImageToVideo";

/// ComfyUI's camera motion node.
const EMBEDDING: &str = "WanCameraEmbedding";

/// A `WanCameraEmbedding`'s settings.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Camera {
    pub node: String,
    /// One of `synth::camera::POSES`.
    pub pose: String,
    pub speed: f64,
    /// The intrinsics, fractions of the picture.
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
    /// The video's `(width, height, length)` it embeds.
    pub size: (i64, i64, i64),
}

/// The camera motion at input `camera_conditions` of `node`, if any.
pub(super) fn read(g: &Graph<'_>, node: &str) -> Result<Option<Camera>, Refusal> {
    if !g.has(node, "camera_conditions") {
        return Ok(None);
    }
    let (camera, slot) = g.source(node, "camera_conditions")?;
    g.expect(
        &camera,
        &[EMBEDDING],
        "camera_conditions",
        (node, "camera_conditions"),
    )?;
    g.first_output((node, "camera_conditions"), &camera, slot)?;
    let pose = g.text(&camera, "camera_pose")?;
    if !POSES.iter().any(|(name, _, _)| *name == pose) {
        return Err(g.refuse(
            &camera,
            Some("camera_pose"),
            format!("is '{pose}', not one of ComfyUI's camera motions"),
            "choose Static, a pan, a zoom or a turn",
        ));
    }
    // Inputs a graph saved before they existed lacks take their defaults.
    let number = |name: &str, (default, top): (f64, f64)| match g.has(&camera, name) {
        false => Ok(default),
        true => g.number_in(&camera, name, 0.0..=top, name),
    };
    let fraction = |name: &str| number(name, (0.5, 1.0));
    let (fx, fy) = (fraction("fx")?, fraction("fy")?);
    if fx == 0.0 || fy == 0.0 {
        let input = if fx == 0.0 { "fx" } else { "fy" };
        return Err(g.refuse(
            &camera,
            Some(input),
            "is 0, a focal length that makes every ray's direction infinite".into(),
            "set a focal length above 0",
        ));
    }
    Ok(Some(Camera {
        node: camera.clone(),
        pose: pose.to_string(),
        speed: number("speed", (1.0, 10.0))?,
        fx,
        fy,
        cx: fraction("cx")?,
        cy: fraction("cy")?,
        size: (
            g.whole(&camera, "width", 16..=MAX_RESOLUTION)?,
            g.whole(&camera, "height", 16..=MAX_RESOLUTION)?,
            g.whole(&camera, "length", 1..=MAX_RESOLUTION)?,
        ),
    }))
}

/// Input `input` (`width`, `height` or `length`) of image-to-video node
/// `node`: written, or a `WanCameraEmbedding`'s own (its output 1, 2 or
/// 3), within `range`.
pub(super) fn size(
    g: &Graph<'_>,
    node: &str,
    input: &str,
    range: std::ops::RangeInclusive<i64>,
) -> Result<i64, Refusal> {
    if !g.is_link(node, input) {
        return g.whole(node, input, range);
    }
    let (from, slot) = g.source(node, input)?;
    let own = ["width", "height", "length"]
        .iter()
        .position(|name| *name == input)
        .map(|k| k as i64 + 1);
    if g.class(&from) == EMBEDDING && Some(slot) == own {
        return g.whole(&from, input, 1..=MAX_RESOLUTION);
    }
    g.whole(node, input, range)
}
