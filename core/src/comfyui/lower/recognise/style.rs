//! Style tokens (`StyleModelApply`, Flux Redux's): a style model
//! (`StyleModelLoader`) reads a picture's CLIP vision embedding (a
//! `CLIPVisionEncode` of a `LoadImage`: its last hidden state) and gives
//! tokens, which the prompt's conditioning takes after its own, times the
//! strength. Nodes chained on one prompt append in the order they run.

use super::super::graph::Graph;
use super::loaded_image;
use crate::comfyui::lower::Refusal;

/// ComfyUI's class.
pub(super) const STYLE: &str = "StyleModelApply";

/// One `StyleModelApply` on a prompt.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Style {
    pub node: String,
    /// The `StyleModelLoader`.
    pub loader: String,
    /// The `CLIPVisionEncode`, its `CLIPVisionLoader` and `crop`.
    pub encode: String,
    pub vision: String,
    pub crop: String,
    /// Pixels a side of the vision model's input (see [`vision_size`]).
    pub vision_size: i64,
    /// The `LoadImage` it embeds.
    pub picture: String,
    pub strength: f64,
}

/// `CLIPVisionEncode` node `encode`'s `crop`: `center` or `none`.
pub(super) fn crop(g: &Graph<'_>, encode: &str) -> Result<String, Refusal> {
    let crop = g.text(encode, "crop")?.to_string();
    if !["center", "none"].contains(&crop.as_str()) {
        return Err(g.refuse(
            encode,
            Some("crop"),
            format!("is '{crop}', which ComfyUI does not offer"),
            "set crop to center or none",
        ));
    }
    Ok(crop)
}

/// Pixels a side of the input of the CLIP vision model `loader` loads,
/// by its file's name: SigLIP's 384 where the name says 384 (Flux Redux's
/// `sigclip_vision_patch14_384`), CLIP ViT's 224 for any other; a SigLIP
/// file that states no 384 is refused (ComfyUI reads the size from the
/// weights, which the graph does not hold).
pub(super) fn vision_size(g: &Graph<'_>, loader: &str) -> Result<i64, Refusal> {
    let name = g.text(loader, "clip_name")?.to_lowercase();
    let siglip = name.contains("siglip") || name.contains("sigclip");
    match (siglip, name.contains("384")) {
        (_, true) => Ok(384),
        (false, false) => Ok(224),
        (true, false) => Err(g.refuse(
            loader,
            Some("clip_name"),
            format!("loads '{name}', a SigLIP model whose input size the lowering cannot tell from its name; it knows SigLIP at 384"),
            "load sigclip_vision_patch14_384",
        )),
    }
}

/// Steps over the `StyleModelApply` at the walk's position, if it is one,
/// recording it (nearest the sampler first) in `styles`.
pub(super) fn step(
    g: &Graph<'_>,
    (node, slot, from): (&mut String, &mut i64, &mut (String, String)),
    styles: &mut Vec<Style>,
) -> Result<bool, Refusal> {
    if g.class(node) != STYLE {
        return Ok(false);
    }
    g.first_output((&from.0, &from.1), node, *slot)?;
    let here = node.clone();
    // Graphs saved before the input existed applied the style fully.
    let strength = match g.has(&here, "strength") {
        true => g.number_in(&here, "strength", 0.0..=10.0, "strength")?,
        false => 1.0,
    };
    let kind = match g.has(&here, "strength_type") {
        true => g.text(&here, "strength_type")?,
        false => "multiply",
    };
    match kind {
        "multiply" => {}
        // A bias of log(1) = 0 changes nothing.
        "attn_bias" if strength == 1.0 => {}
        "attn_bias" => {
            return Err(g.refuse(
                &here,
                Some("strength_type"),
                "weights the style tokens by an attention bias, which the lowering does not make; it scales them (multiply)".into(),
                "set strength_type to multiply, or strength to 1",
            ));
        }
        other => {
            return Err(g.refuse(
                &here,
                Some("strength_type"),
                format!("is '{other}', which ComfyUI does not offer"),
                "set strength_type to multiply",
            ));
        }
    }
    let (loader, _) = g.source(&here, "style_model")?;
    g.expect(
        &loader,
        &["StyleModelLoader"],
        "style_model",
        (&here, "style_model"),
    )?;
    let (encode, _) = g.source(&here, "clip_vision_output")?;
    g.expect(
        &encode,
        &["CLIPVisionEncode"],
        "clip_vision_output",
        (&here, "clip_vision_output"),
    )?;
    let (vision, _) = g.source(&encode, "clip_vision")?;
    g.expect(
        &vision,
        &["CLIPVisionLoader"],
        "clip_vision",
        (&encode, "clip_vision"),
    )?;
    styles.push(Style {
        vision_size: vision_size(g, &vision)?,
        picture: loaded_image(g, &encode, "image")?,
        crop: crop(g, &encode)?,
        node: here.clone(),
        loader,
        encode,
        vision,
        strength,
    });
    *from = (here.clone(), "conditioning".to_string());
    (*node, *slot) = g.source(&here, "conditioning")?;
    Ok(true)
}

/// Refuses styles of one stage from two style models or CLIP vision
/// models or crops (the stage declares one of each).
pub(super) fn one_model(g: &Graph<'_>, styles: &[&Style]) -> Result<(), Refusal> {
    let Some(first) = styles.first() else {
        return Ok(());
    };
    match styles.iter().find(|s| {
        (s.loader.as_str(), s.vision.as_str(), s.crop.as_str())
            != (first.loader.as_str(), first.vision.as_str(), first.crop.as_str())
    }) {
        Some(other) => Err(g.refuse(
            &other.node,
            None,
            format!("takes its tokens from another style model, CLIP vision model or crop than node {}; the lowering gives a stage one of each", first.node),
            "load one style model and one CLIP vision model, and embed with one crop",
        )),
        None => Ok(()),
    }
}
