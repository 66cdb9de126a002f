//! Encoders that encode both prompts in one node and give the empty
//! latent: Mage-Flow's `TextEncodeMageFlowEdit` and Qwen-Image 2.1's
//! `TextEncodeQwenImage21`. Output 0 is the positive prompt (`prompt`),
//! output 1 the negative (`negative_prompt`, or a space where it is
//! empty, as ComfyUI encodes it), output 2 the empty latent.
//!
//! Their pictures (`images.image_1` to `images.image_16`, in that order)
//! are resized by the node; both prompts' text encoder sees them, and
//! given a VAE the node appends their latents as references, and its
//! latent takes the first picture's size:
//! - Qwen-Image 2.1's, through its resize (`PixelSize::Qwen21`) for both;
//! - Mage-Flow's, one picture, shown with its longer side cut to 384 by
//!   bicubic where longer (`PixelSize::Down`), encoded at its sides
//!   floored to whole 16s (`PixelSize::Floor`: the node stretches each
//!   picture to its output size, the first picture's where its `width`
//!   and `height` are 0 or that picture's `GetImageSize`).

use super::super::graph::Graph;
use super::pixels::loaded_picture;
use super::reference::Reference;
use super::resize::{PixelSize, Resize};
use super::vision::Read;
use super::{LatentSource, MAX_BATCH, MAX_RESOLUTION, Vision, vae_source};
use crate::comfyui::lower::Refusal;

/// Mage-Flow's encoder.
pub(in crate::comfyui::lower) const MAGE: &str = "TextEncodeMageFlowEdit";
/// Qwen-Image 2.1's encoder.
pub(in crate::comfyui::lower) const QWEN21: &str = "TextEncodeQwenImage21";

/// The side ComfyUI takes for a side of 0 without a reference picture.
const DEFAULT_SIDE: i64 = 1024;

/// What one encoder class makes.
struct Paired {
    class: &'static str,
    /// The latent's channels and pixels a cell.
    channels: i64,
    scale: i64,
    /// The latent's sides come from `width` and `height` floored to whole
    /// cells (Mage), or are both `resolution` (Qwen-Image 2.1), batch 1.
    sides_from_resolution: bool,
    /// An empty positive prompt is encoded as a space too.
    space_for_empty_positive: bool,
}

const PAIRED: &[Paired] = &[
    Paired {
        class: MAGE,
        channels: 128,
        scale: 16,
        sides_from_resolution: false,
        space_for_empty_positive: false,
    },
    Paired {
        class: QWEN21,
        channels: 64,
        scale: 16,
        sides_from_resolution: true,
        space_for_empty_positive: true,
    },
];

/// Whether `class` is one of these encoders.
pub(super) fn is_paired(class: &str) -> bool {
    PAIRED.iter().any(|p| p.class == class)
}

/// The entry of `node`'s class, which [`is_paired`] accepts.
fn paired(g: &Graph<'_>, node: &str) -> Result<&'static Paired, Refusal> {
    let class = g.class(node);
    PAIRED.iter().find(|p| p.class == class).ok_or_else(|| {
        g.refuse(
            node,
            None,
            "is not an encoder of both prompts".into(),
            "connect a TextEncodeMageFlowEdit or TextEncodeQwenImage21",
        )
    })
}

/// What the node gives the prompt at its output `slot` (0 positive, 1
/// negative): the text, the pictures its text encoder sees and, given a
/// VAE (which `loader`'s model must take), the references it appends.
pub(super) fn read(g: &Graph<'_>, node: &str, slot: i64, loader: &str) -> Result<Read, Refusal> {
    let paired = paired(g, node)?;
    let (name, space) = match slot {
        0 => ("prompt", paired.space_for_empty_positive),
        _ => ("negative_prompt", true),
    };
    let text = match g.text(node, name)? {
        "" if space => " ".to_string(),
        text => text.to_string(),
    };
    let mut read = Read {
        text,
        vision: Vec::new(),
        references: Vec::new(),
    };
    let inputs = pictures(g, node, paired)?;
    if inputs.is_empty() {
        return Ok(read);
    }
    let vae = g.is_link(node, "vae");
    if vae {
        let (vae, _) = g.source(node, "vae")?;
        vae_source(g, &vae, loader, (node, "vae"))?;
    }
    let (seen, encoded) = own_resizes(g, node, paired)?;
    for input in inputs {
        let (picture, resize) = loaded_picture(g, node, &input)?;
        if vae {
            read.references.push(Reference {
                node: node.to_string(),
                class: paired.class.to_string(),
                encode: node.to_string(),
                loader: picture.clone(),
                resize: resize.clone(),
                then: Some(encoded.clone()),
            });
        }
        read.vision.push(Vision {
            node: node.to_string(),
            class: paired.class.to_string(),
            loader: picture,
            resize,
            seen: seen.clone(),
        });
    }
    Ok(read)
}

/// The node's own resizes of a picture: the one its text encoder sees,
/// the one it encodes.
fn own_resizes(g: &Graph<'_>, node: &str, paired: &Paired) -> Result<(Resize, Resize), Refusal> {
    let resize = |method: &str, size: PixelSize| Resize {
        node: node.to_string(),
        method: method.into(),
        size,
        then: Vec::new(),
    };
    if paired.class == QWEN21 {
        let own = own_resize(g, node)?;
        return Ok((own.clone(), own));
    }
    Ok((
        resize("bicubic", PixelSize::Down { side: MAGE_SEEN }),
        resize("bicubic", PixelSize::Floor { step: paired.scale }),
    ))
}

/// The longer side of the picture Mage-Flow's text encoder sees, at most.
const MAGE_SEEN: i64 = 384;

/// Qwen-Image 2.1's resize of its pictures at the node's `resolution`.
fn own_resize(g: &Graph<'_>, node: &str) -> Result<Resize, Refusal> {
    Ok(Resize {
        node: node.to_string(),
        method: "lanczos".into(),
        size: PixelSize::Qwen21 {
            resolution: g.whole(node, "resolution", 0..=MAX_RESOLUTION)?,
        },
        then: Vec::new(),
    })
}

/// The empty latent the node gives (output 2): Qwen-Image 2.1's of its
/// first picture's size after its resize, where it has pictures.
pub(super) fn latent(g: &Graph<'_>, node: &str) -> Result<LatentSource, Refusal> {
    let paired = paired(g, node)?;
    let scale = paired.scale;
    if let Some(first) = pictures(g, node, paired)?.first() {
        let (picture, resize) = loaded_picture(g, node, first)?;
        // Mage-Flow's latent is the first picture's sides floored to whole
        // 16s, as a run-time size gives them.
        if paired.class == MAGE {
            return Ok(LatentSource::Sized {
                node: node.to_string(),
                size: node.to_string(),
                loader: picture,
                resize,
                batch: g.whole(node, "batch_size", 1..=MAX_BATCH)?,
                channels: paired.channels,
                scale,
            });
        }
        if let Some(resize) = resize {
            return Err(g.refuse(
                &resize.node,
                None,
                format!("resizes or processes the first picture of node {node}, whose latent takes that picture's size after the node's own resize; the lowering sizes it through one resize"),
                "give the node the loaded picture and let it resize it",
            ));
        }
        return Ok(LatentSource::Sized {
            node: node.to_string(),
            size: node.to_string(),
            loader: picture,
            resize: Some(own_resize(g, node)?),
            batch: 1,
            channels: paired.channels,
            scale,
        });
    }
    let side = |name: &str| -> Result<i64, Refusal> {
        let side = match g.whole(node, name, 0..=MAX_RESOLUTION)? {
            0 => DEFAULT_SIDE,
            side => side,
        };
        Ok((side / scale * scale).max(scale))
    };
    let (width, height, batch) = if paired.sides_from_resolution {
        let side = side("resolution")?;
        (side, side, 1)
    } else {
        (
            side("width")?,
            side("height")?,
            g.whole(node, "batch_size", 1..=MAX_BATCH)?,
        )
    };
    Ok(LatentSource::Empty {
        node: node.to_string(),
        width,
        height,
        batch,
        channels: paired.channels,
        scale,
        frames: None,
    })
}

/// The node's picture inputs, in order: its linked `images.image_N`
/// (an `images` group or the older `image1`, ..., refused); Mage-Flow's
/// one, at the output size it gives (see [`mage_sized_by_picture`]).
fn pictures(g: &Graph<'_>, node: &str, paired: &Paired) -> Result<Vec<String>, Refusal> {
    let numbered = numbered_pictures(g, node)?;
    if paired.class == MAGE
        && let Some(first) = numbered.first()
    {
        if let Some(second) = numbered.get(1) {
            return Err(g.refuse(
                node,
                Some(second),
                "gives Mage-Flow a second picture, which the node stretches to the first one's size; the lowering takes one".into(),
                "give the node one picture",
            ));
        }
        mage_sized_by_picture(g, node, first)?;
    }
    Ok(numbered)
}

/// Refuses a Mage-Flow node with a picture whose output size is not the
/// picture's own: `width` and `height` 0, or both read from one
/// `GetImageSize` of the picture input `first` reads.
fn mage_sized_by_picture(g: &Graph<'_>, node: &str, first: &str) -> Result<(), Refusal> {
    if let Some(size) = super::pixels::measuring_node(g, node)?
        && g.source(&size, "image")? == g.source(node, first)?
    {
        return Ok(());
    }
    let zero = |name: &str| !g.is_link(node, name) && g.whole(node, name, 0..=0).is_ok();
    if zero("width") && zero("height") {
        return Ok(());
    }
    Err(g.refuse(
        node,
        Some("width"),
        "sizes its output other than as its picture's own size (width and height both 0, or both read from one GetImageSize of the picture it is given), and the node stretches the picture to that size; the lowering takes the picture's own size".into(),
        "set width and height to 0, or read both from a GetImageSize of the picture",
    ))
}

/// The linked `images.image_N` inputs of `node`, by their numbers.
fn numbered_pictures(g: &Graph<'_>, node: &str) -> Result<Vec<String>, Refusal> {
    let Some(inputs) = g.nodes.get(node).and_then(|n| n["inputs"].as_object()) else {
        return Ok(Vec::new());
    };
    let mut numbered = Vec::new();
    for (name, value) in inputs {
        if !name.starts_with("image") {
            continue;
        }
        let given = g.is_link(node, name) || value.as_object().is_some_and(|o| !o.is_empty());
        if !given {
            continue;
        }
        let number = name
            .strip_prefix("images.image_")
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| (1..=MAX_PICTURES).contains(n));
        match number {
            Some(n) if g.is_link(node, name) => numbered.push((n, name.clone())),
            _ => {
                return Err(g.refuse(
                    node,
                    Some(name),
                    format!("gives a picture other than by a link to images.image_1 to images.image_{MAX_PICTURES}, which the lowering takes"),
                    "connect the picture to one of images.image_1 to images.image_16",
                ));
            }
        }
    }
    numbered.sort();
    Ok(numbered.into_iter().map(|(_, name)| name).collect())
}

/// The most pictures `TextEncodeQwenImage21` takes.
const MAX_PICTURES: u32 = 16;
