//! The per-picture operations between a picture (and its resize) and the
//! node that reads it: `ImageInvert`, `Canny` and `MarigoldV2PostProcess`,
//! run in the resize's policy after the resize (see `synth::picture_ops`).

use super::super::graph::Graph;
use crate::comfyui::lower::Refusal;
use serde_json::{Value, json};

/// One operation node and what it does.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct PictureOp {
    pub node: String,
    pub kind: OpKind,
}

/// What a picture operation does.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) enum OpKind {
    /// `ImageInvert`: `1 - x`.
    Invert,
    /// `Canny`: kornia's edges between these thresholds.
    Canny { low: f64, high: f64 },
    /// `MarigoldV2PostProcess`: Marigold's decoded prediction as a
    /// picture (`depth`, `normals` or `albedo`).
    Marigold(&'static str),
}

/// What `MarigoldV2PostProcess` makes pictures of.
const MARIGOLD: [&str; 3] = ["depth", "normals", "albedo"];

impl PictureOp {
    /// The operation's ComfyUI class.
    pub(in crate::comfyui::lower) fn class(&self) -> &'static str {
        match self.kind {
            OpKind::Invert => "ImageInvert",
            OpKind::Canny { .. } => "Canny",
            OpKind::Marigold(_) => "MarigoldV2PostProcess",
        }
    }
}

/// The operations `then` as the resize policy's contract parameters:
/// `then`, their names in order (`canny,invert`), and Canny's thresholds
/// (`canny_low_threshold`, `canny_high_threshold`; one Canny a chain).
pub(in crate::comfyui::lower) fn parameters(then: &[PictureOp], into: &mut Value) {
    if then.is_empty() {
        return;
    }
    let names: Vec<String> = then
        .iter()
        .map(|op| match op.kind {
            OpKind::Invert => "invert".to_string(),
            OpKind::Marigold(prediction) => format!("marigold_{prediction}"),
            OpKind::Canny { low, high } => {
                into["canny_low_threshold"] = json!(low);
                into["canny_high_threshold"] = json!(high);
                "canny".to_string()
            }
        })
        .collect();
    into["then"] = json!(names.join(","));
}

/// The picture input of operation class `class`; `None` for other
/// classes.
pub(super) fn picture_input(class: &str) -> Option<&'static str> {
    matches!(class, "ImageInvert" | "Canny" | "MarigoldV2PostProcess").then_some("image")
}

/// The operation of `node` (of a class `picture_input` knows), read
/// after the `later` ones of the same chain.
pub(super) fn read(g: &Graph<'_>, node: &str, later: &[PictureOp]) -> Result<PictureOp, Refusal> {
    let canny = |op: &PictureOp| matches!(op.kind, OpKind::Canny { .. });
    if g.class(node) == "Canny"
        && let Some(other) = later.iter().find(|op| canny(op))
    {
        return Err(g.refuse(
            node,
            None,
            format!("finds edges in a picture whose edges node {} finds again; the lowering runs one Canny on a picture", other.node),
            "remove one of the two Canny nodes",
        ));
    }
    let kind = match g.class(node) {
        "Canny" => {
            // Kornia takes thresholds strictly between 0 and 1, the low
            // one not above the high one; the node offers 0.01..0.99.
            let low = g.number_in(node, "low_threshold", 0.01..=0.99, "threshold")?;
            let high = g.number_in(node, "high_threshold", 0.01..=0.99, "threshold")?;
            if low > high {
                return Err(g.refuse(
                    node,
                    Some("low_threshold"),
                    format!("is {low}, above high_threshold {high}"),
                    "set low_threshold at most high_threshold",
                ));
            }
            OpKind::Canny { low, high }
        }
        "MarigoldV2PostProcess" => {
            let prediction = g.text(node, "prediction")?;
            match MARIGOLD.iter().find(|p| **p == prediction) {
                Some(p) => OpKind::Marigold(p),
                None => {
                    return Err(g.refuse(
                        node,
                        Some("prediction"),
                        format!("makes a picture of the prediction '{prediction}', which the lowering does not know"),
                        "choose depth, normals or albedo",
                    ));
                }
            }
        }
        _ => OpKind::Invert,
    };
    Ok(PictureOp {
        node: node.to_string(),
        kind,
    })
}
