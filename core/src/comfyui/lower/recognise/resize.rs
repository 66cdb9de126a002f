//! What a resize node does to a picture: `ImageScale`, `ImageScaleBy`,
//! `ImageScaleToTotalPixels`, `ImageScaleToMaxDimension` (the longer
//! side made `largest_size`), `FluxKontextImageScale` and the newer
//! `ResizeImageMaskNode` (its `resize_type` options that size a picture
//! from itself: scale dimensions, width, height, by multiplier, longer
//! or shorter dimension, total pixels; `match size` and `scale to
//! multiple` are refused) and `ResizeAndPadImage` (fitted inside a size,
//! padded to it).

use super::super::graph::Graph;
use super::picture_ops::PictureOp;
use super::{MAX_RESOLUTION, upscale_method};
use crate::comfyui::lower::Refusal;
use crate::comfyui::synth::upscale::PICTURE_METHODS;

/// The newer resize node's class.
const RESIZE_NODE: &str = "ResizeImageMaskNode";

/// The node fitting a picture inside a size and padding it to it.
const FIT_NODE: &str = "ResizeAndPadImage";

/// `ResizeAndPadImage`'s fit (its method is its `interpolation`).
fn fit(g: &Graph<'_>, node: &str) -> Result<Resize, Refusal> {
    let method = super::resize_method(g, (node, "interpolation"), ("pictures", PICTURE_METHODS))?;
    let pad = match g.text(node, "padding_color")? {
        "white" => 1.0,
        "black" => 0.0,
        other => {
            return Err(g.refuse(
                node,
                Some("padding_color"),
                format!("is '{other}', not white or black"),
                "choose white or black",
            ));
        }
    };
    Ok(Resize {
        node: node.to_string(),
        method: method.to_string(),
        size: PixelSize::Fit {
            width: g.whole(node, "target_width", 1..=MAX_RESOLUTION)?,
            height: g.whole(node, "target_height", 1..=MAX_RESOLUTION)?,
            pad,
        },
        then: Vec::new(),
    })
}

/// An `ImageScale`, `ImageScaleBy`, `ImageScaleToTotalPixels`,
/// `ImageScaleToMaxDimension`, `FluxKontextImageScale`,
/// `ResizeImageMaskNode` or `ResizeAndPadImage` node (or none: see
/// `then`).
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Resize {
    pub node: String,
    /// ComfyUI's method (one of `synth::upscale::PICTURE_METHODS`).
    pub method: String,
    pub size: PixelSize,
    /// The picture operations after the resize, in order.
    pub then: Vec<PictureOp>,
}

impl Resize {
    /// The last node of the resize and its operations: the node whose
    /// picture a reader reads.
    pub(in crate::comfyui::lower) fn last(&self) -> &str {
        self.then.last().map_or(&self.node, |op| &op.node)
    }

    /// The resize node (where one resizes) and the operation nodes, in
    /// order: the nodes a step made of it comes from.
    pub(in crate::comfyui::lower) fn nodes(&self) -> Vec<&String> {
        let resizing = (self.size != PixelSize::Same).then_some(&self.node);
        resizing
            .into_iter()
            .chain(self.then.iter().map(|op| &op.node))
            .collect()
    }

    /// `first` (the picture's `LoadImage`), then [`Resize::nodes`].
    pub(in crate::comfyui::lower) fn nodes_from<'a>(
        &'a self,
        first: &'a String,
    ) -> Vec<&'a String> {
        std::iter::once(first).chain(self.nodes()).collect()
    }

    /// What is done to the picture, in words: `resized by node 9`, `through
    /// Canny node 12`, `resized by node 9, then through Canny node 12 and
    /// ImageInvert node 13`.
    pub(in crate::comfyui::lower) fn words(&self) -> String {
        let ops: Vec<String> = self
            .then
            .iter()
            .map(|op| format!("{} node {}", op.class(), op.node))
            .collect();
        let through = (!ops.is_empty()).then(|| format!("through {}", ops.join(" and ")));
        let resized =
            (self.size != PixelSize::Same).then(|| format!("resized by node {}", self.node));
        let parts: Vec<String> = resized.into_iter().chain(through).collect();
        parts.join(", then ")
    }

    /// Operations `then` on a picture no node resizes (size `Same`).
    pub(in crate::comfyui::lower) fn operations(then: Vec<PictureOp>) -> Option<Resize> {
        let first = then.first()?.node.clone();
        Some(Resize {
            node: first,
            method: String::new(),
            size: PixelSize::Same,
            then,
        })
    }
}

/// How a resize finds the new picture's sides.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) enum PixelSize {
    /// `ImageScale`: these sides; a 0 takes that side from the picture's
    /// aspect (a missing width is `max(1, round(picture width * height /
    /// picture height))`, and the reverse);
    /// `centre`: the centred part of the new aspect is resized.
    Fixed {
        width: i64,
        height: i64,
        centre: bool,
    },
    /// `ImageScaleBy`: each side `round(side * factor)`.
    Scale(f64),
    /// `ImageScaleToTotalPixels`: each side times `sqrt(pixels / (width *
    /// height))`, rounded, with `pixels` `megapixels * 1024 * 1024` (its
    /// whole part in a graph from before `resolution_steps`); in whole
    /// `step`s (`round(side * factor / step) * step`: its
    /// `resolution_steps`, and how Qwen's edit encoders size a reference).
    TotalPixels { pixels: f64, step: i64 },
    /// The longer side (`shorter: false`; `ImageScaleToMaxDimension`) or
    /// the shorter one made `side`, the other `round(other / that *
    /// side)`; a square's both.
    Side { side: i64, shorter: bool },
    /// `ResizeAndPadImage`: resized by `min(width / w, height / h)`, each
    /// side its whole part, then centred on a `width` x `height` picture
    /// of `pad` (1 white, 0 black).
    Fit { width: i64, height: i64, pad: f64 },
    /// `FluxKontextImageScale`: the Flux Kontext size whose aspect is
    /// nearest the picture's (`synth::upscale::KONTEXT_SIDES`), its
    /// centred part resized by lanczos.
    Kontext,
    /// `TextEncodeQwenImage21`'s resize of a picture: to about
    /// `resolution` x `resolution` pixels (`TotalPixels` of its square) in
    /// whole 32s, or at a resolution of 0 each side rounded to whole 32s;
    /// at least 32; a picture of that size already is kept as it is.
    Qwen21 { resolution: i64 },
    /// Mage-Flow's picture for its text encoder: where its longer side is
    /// above `side`, both sides `max(1, round(side_i * (side / longer)))`;
    /// else kept as it is.
    Down { side: i64 },
    /// Mage-Flow's picture to encode: each side floored to whole `step`s
    /// (at least one); a picture so sized already kept as it is.
    Floor { step: i64 },
    /// No resize: only the operations after it.
    Same,
}

/// The picture input of resize class `class`; `None` for other classes.
pub(super) fn picture_input(class: &str) -> Option<&'static str> {
    match class {
        "ImageScale"
        | "ImageScaleBy"
        | "ImageScaleToTotalPixels"
        | "ImageScaleToMaxDimension"
        | "FluxKontextImageScale"
        | FIT_NODE => Some("image"),
        RESIZE_NODE => Some("input"),
        _ => None,
    }
}

/// The resize of `node`, `None` where it keeps the picture as it is
/// (`ImageScale` with width and height 0).
pub(super) fn read(g: &Graph<'_>, node: &str) -> Result<Option<Resize>, Refusal> {
    if g.class(node) == "FluxKontextImageScale" {
        return Ok(Some(Resize {
            node: node.to_string(),
            method: "lanczos".into(),
            size: PixelSize::Kontext,
            then: Vec::new(),
        }));
    }
    if g.class(node) == RESIZE_NODE {
        return resize_node(g, node);
    }
    if g.class(node) == FIT_NODE {
        return fit(g, node).map(Some);
    }
    let method = upscale_method(g, node, ("pictures", PICTURE_METHODS))?;
    let size = match g.class(node) {
        "ImageScaleBy" => PixelSize::Scale(g.number_in(node, "scale_by", 0.01..=8.0, "factor")?),
        // The longer side `largest_size`, the other `round(other / longer
        // * largest_size)`, a square's both: `ResizeImageMaskNode`'s
        // longer dimension (0 would make an empty picture).
        "ImageScaleToMaxDimension" => PixelSize::Side {
            side: g.whole(node, "largest_size", 1..=MAX_RESOLUTION)?,
            shorter: false,
        },
        "ImageScaleToTotalPixels" => {
            let megapixels = g.number_in(node, "megapixels", 0.01..=16.0, "size")?;
            let pixels = megapixels * 1024.0 * 1024.0;
            // A graph without `resolution_steps` comes from a ComfyUI
            // before it, which took the whole part of the pixels.
            match g.has(node, "resolution_steps") {
                true => PixelSize::TotalPixels {
                    pixels,
                    step: g.whole(node, "resolution_steps", 1..=256)?,
                },
                false => PixelSize::TotalPixels {
                    pixels: pixels.trunc(),
                    step: 1,
                },
            }
        }
        _ => match fixed(g, node, (Some("width"), Some("height")), Some("crop"))? {
            Some(size) => size,
            None => return Ok(None),
        },
    };
    Ok(Some(Resize {
        node: node.to_string(),
        method: method.to_string(),
        size,
        then: Vec::new(),
    }))
}

/// `ImageScale`'s sides from inputs `width` and `height` (a side without
/// one is 0), cropped by input `crop` where named; `None` for 0 by 0.
fn fixed(
    g: &Graph<'_>,
    node: &str,
    (width, height): (Option<&str>, Option<&str>),
    crop: Option<&str>,
) -> Result<Option<PixelSize>, Refusal> {
    let centre = match crop {
        Some(input) => match g.text(node, input)? {
            "disabled" => false,
            "center" => true,
            other => {
                return Err(g.refuse(
                    node,
                    Some(input),
                    format!("is '{other}', not disabled or center"),
                    "set crop to disabled or center",
                ));
            }
        },
        None => false,
    };
    let side = |input: Option<&str>| match input {
        Some(input) => g.whole(node, input, 0..=MAX_RESOLUTION),
        None => Ok(0),
    };
    let (width, height) = (side(width)?, side(height)?);
    if (width, height) == (0, 0) {
        return Ok(None);
    }
    Ok(Some(PixelSize::Fixed {
        width,
        height,
        centre,
    }))
}

/// `ResizeImageMaskNode`'s resize: its `resize_type` option's sizes
/// (inputs `resize_type.<widget>`) and `scale_method`.
fn resize_node(g: &Graph<'_>, node: &str) -> Result<Option<Resize>, Refusal> {
    let method = g.text(node, "scale_method")?;
    if !PICTURE_METHODS.contains(&method) {
        return Err(g.refuse(
            node,
            Some("scale_method"),
            format!(
                "is '{method}'; the lowering resizes pictures by {} only",
                super::super::graph::either(PICTURE_METHODS)
            ),
            &format!("choose {}", super::super::graph::either(PICTURE_METHODS)),
        ));
    }
    let option = g.text(node, "resize_type")?;
    let side = |name: &str| g.whole(node, &format!("resize_type.{name}"), 1..=MAX_RESOLUTION);
    let size = match option {
        "scale dimensions" => fixed(
            g,
            node,
            (Some("resize_type.width"), Some("resize_type.height")),
            Some("resize_type.crop"),
        )?,
        "scale width" => fixed(g, node, (Some("resize_type.width"), None), None)?,
        "scale height" => fixed(g, node, (None, Some("resize_type.height")), None)?,
        "scale by multiplier" => Some(PixelSize::Scale(g.number_in(
            node,
            "resize_type.multiplier",
            0.01..=8.0,
            "factor",
        )?)),
        "scale total pixels" => {
            let megapixels = g.number_in(node, "resize_type.megapixels", 0.01..=16.0, "size")?;
            // This node takes the whole part, as ImageScaleToTotalPixels
            // did before its steps.
            Some(PixelSize::TotalPixels {
                pixels: (megapixels * 1024.0 * 1024.0).trunc(),
                step: 1,
            })
        }
        "scale longer dimension" => Some(PixelSize::Side {
            side: side("longer_size")?,
            shorter: false,
        }),
        "scale shorter dimension" => Some(PixelSize::Side {
            side: side("shorter_size")?,
            shorter: true,
        }),
        other => {
            let why = match other {
                "match size" => "which takes another picture's size",
                "scale to multiple" => {
                    "which scales the picture to cover whole multiples and cuts it"
                }
                _ => "an option the lowering does not know",
            };
            return Err(g.refuse(
                node,
                Some("resize_type"),
                format!("is '{other}', {why}; the lowering resizes by the node's own sizes only"),
                "choose scale dimensions, width, height, by multiplier, longer or shorter dimension, or total pixels",
            ));
        }
    };
    Ok(size.map(|size| Resize {
        node: node.to_string(),
        method: method.to_string(),
        size,
        then: Vec::new(),
    }))
}
