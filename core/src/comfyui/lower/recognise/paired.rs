//! Encoders that encode both prompts in one node and give the empty
//! latent: Mage-Flow's `TextEncodeMageFlowEdit` and Qwen-Image 2.1's
//! `TextEncodeQwenImage21`. Output 0 is the positive prompt (`prompt`),
//! output 1 the negative (`negative_prompt`, or a space where it is
//! empty, as ComfyUI encodes it), output 2 the empty latent.
//!
//! Qwen-Image 2.1's pictures (`images.image_1` to `images.image_16`, in
//! that order) are resized by the node (see `PixelSize::Qwen21`); both
//! prompts' text encoder sees them, and given a VAE the node appends
//! their latents as references and its latent takes the first picture's
//! size. Mage-Flow's pictures are refused for now.

use super::super::graph::Graph;
use super::pixels::loaded_picture;
use super::reference::Reference;
use super::resize::{PixelSize, Resize};
use super::vision::Read;
use super::{LatentSource, MAX_BATCH, MAX_RESOLUTION, Vision, vae_source};
use crate::comfyui::lower::Refusal;

/// Mage-Flow's encoder.
pub(super) const MAGE: &str = "TextEncodeMageFlowEdit";
/// Qwen-Image 2.1's encoder.
pub(in crate::comfyui::lower) const QWEN21: &str = "TextEncodeQwenImage21";

/// The side ComfyUI takes for a side of 0 without a reference picture.
const DEFAULT_SIDE: i64 = 1024;

/// What one encoder class makes.
struct Paired {
    class: &'static str,
    /// The family, as refusals name it.
    family: &'static str,
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
        family: "Mage-Flow",
        channels: 128,
        scale: 16,
        sides_from_resolution: false,
        space_for_empty_positive: false,
    },
    Paired {
        class: QWEN21,
        family: "Qwen-Image 2.1",
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
    let own = own_resize(g, node)?;
    for input in inputs {
        let (picture, resize) = loaded_picture(g, node, &input)?;
        if vae {
            read.references.push(Reference {
                node: node.to_string(),
                class: QWEN21.to_string(),
                encode: node.to_string(),
                loader: picture.clone(),
                resize: resize.clone(),
                then: Some(own.clone()),
            });
        }
        read.vision.push(Vision {
            node: node.to_string(),
            class: QWEN21.to_string(),
            loader: picture,
            resize,
            seen: own.clone(),
        });
    }
    Ok(read)
}

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

/// The node's picture inputs, in order: Qwen-Image 2.1's linked
/// `images.image_N`; Mage-Flow's, and an `images` group or the older
/// `image1`, ..., refused.
fn pictures(g: &Graph<'_>, node: &str, paired: &Paired) -> Result<Vec<String>, Refusal> {
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
            Some(n) if paired.class == QWEN21 && g.is_link(node, name) => {
                numbered.push((n, name.clone()))
            }
            _ if paired.class == QWEN21 => {
                return Err(g.refuse(
                    node,
                    Some(name),
                    format!("gives a picture other than by a link to images.image_1 to images.image_{MAX_PICTURES}, which the lowering takes"),
                    "connect the picture to one of images.image_1 to images.image_16",
                ));
            }
            _ => {
                return Err(g.refuse(
                    node,
                    Some(name),
                    format!(
                        "gives the text encoder and the model a reference picture, which the lowering does not make for {} yet",
                        paired.family
                    ),
                    "disconnect the reference pictures for text-to-image",
                ));
            }
        }
    }
    numbered.sort();
    Ok(numbered.into_iter().map(|(_, name)| name).collect())
}

/// The most pictures `TextEncodeQwenImage21` takes.
const MAX_PICTURES: u32 = 16;
