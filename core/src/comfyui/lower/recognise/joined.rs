//! `BatchImagesNode` before a video sink: the frames of several decoded
//! videos, one after another, as one video (ComfyUI batches the pictures,
//! and a decoded video's pictures are its frames). Its pictures are
//! `images.image0`, `images.image1`, ... in that order; each must be a
//! sampled video's decode, of batch 1, of one latent size by one VAE (so
//! of one picture size: ComfyUI would resize a picture of another size to
//! the first's, which the lowering does not); their lengths may differ.

use super::super::graph::Graph;
use super::pixels::{Origin, pixels};
use super::walk::Walk;
use crate::comfyui::lower::Refusal;
use crate::comfyui::lower::parts::Axes;

/// The class that joins pictures into one batch.
pub(super) const BATCH: &str = "BatchImagesNode";

/// The decodes whose frames `node` (a `BatchImagesNode`) joins: the
/// first, and the others in order.
pub(super) fn joined(
    g: &Graph<'_>,
    node: &str,
    walk: &mut Walk,
) -> Result<(Origin, Vec<Origin>), Refusal> {
    let mut origins = Vec::new();
    let mut first = None;
    for input in numbered(g, node)? {
        let picture = pixels(g, node, &input, walk)?;
        let (stage, vae) = match (&picture.origin, &picture.upscale, &picture.resize) {
            (Origin::Decoded { stage, vae, .. }, None, None)
                if walk.axes(*stage) == Axes::Video =>
            {
                (*stage, vae_file(g, vae))
            }
            _ => {
                return Err(g.refuse(
                    node,
                    Some(&input),
                    "joins pictures other than a sampled video's decode as they are; the lowering joins decoded videos' frames".into(),
                    "connect the VAEDecode of a video latent to each picture input",
                ));
            }
        };
        if walk.batch(stage) != Some(1) {
            return Err(g.refuse(
                node,
                Some(&input),
                "joins a video whose batch is not one written latent row, and ComfyUI would run every row's frames into the one video".into(),
                "sample each video with batch_size 1",
            ));
        }
        let (first, first_vae) = first.get_or_insert((stage, vae));
        let extents = walk.extents(*first);
        if extents.is_none() || extents != walk.extents(stage) || *first_vae != vae {
            return Err(g.refuse(
                node,
                Some(&input),
                "joins videos whose sizes differ or are set at run time, or that other VAEs decode; ComfyUI resizes the later frames to the first video's size, which the lowering does not".into(),
                "sample every joined video at one written width and height, decoded by one VAE",
            ));
        }
        origins.push(picture.origin);
    }
    let mut origins = origins.into_iter();
    match (origins.next(), origins.len()) {
        (Some(first), 1..) => Ok((first, origins.collect())),
        _ => Err(g.refuse(
            node,
            None,
            "joins fewer than two pictures".into(),
            "connect two or more decoded videos to images.image0, images.image1, ...",
        )),
    }
}

/// The VAE node `vae`'s class and file (two loaders of one file are one
/// VAE).
fn vae_file<'g>(g: &Graph<'g>, vae: &str) -> (&'g str, Option<&'g str>) {
    let file = ["vae_name", "ckpt_name"]
        .iter()
        .find_map(|input| g.text(vae, input).ok());
    (g.class(vae), file)
}

/// The linked `images.imageN` inputs of `node`, by their numbers.
fn numbered(g: &Graph<'_>, node: &str) -> Result<Vec<String>, Refusal> {
    let Some(inputs) = g.nodes.get(node).and_then(|n| n["inputs"].as_object()) else {
        return Ok(Vec::new());
    };
    let mut numbered = Vec::new();
    for name in inputs.keys() {
        let number = name
            .strip_prefix("images.image")
            .and_then(|n| n.parse::<u32>().ok());
        match number {
            Some(n) if g.is_link(node, name) => numbered.push((n, name.clone())),
            _ => {
                return Err(g.refuse(
                    node,
                    Some(name),
                    "takes an input other than a linked images.imageN picture".into(),
                    "connect decoded videos to images.image0, images.image1, ...",
                ));
            }
        }
    }
    numbered.sort();
    Ok(numbered.into_iter().map(|(_, name)| name).collect())
}
