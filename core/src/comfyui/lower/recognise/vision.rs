//! Qwen's image-edit encoders (`TextEncodeQwenImageEdit`,
//! `TextEncodeQwenImageEditPlus`): the text encoder's language model sees
//! a picture beside the prompt and, given a VAE, the node appends that
//! picture's latent to the conditioning as a reference, as
//! `ReferenceLatent` does. As ComfyUI sizes them, by area:
//! - the plain node shows and encodes the picture resized to about
//!   1024x1024 pixels (each side `round(side * sqrt(1024² / (w * h)))`);
//! - the Plus node shows it at about 384x384 pixels and encodes it at
//!   about 1024x1024 in whole 8s, and writes `Picture N:
//!   <|vision_start|><|image_pad|><|vision_end|>` before the prompt (N the
//!   picture's input, `image1` to `image3`), for each of its pictures.
//!
//! Both tokenize with an edit template (a system prompt about the input
//! picture) that the exported tokenizer must apply. Each picture is a
//! loaded one (maybe resized).

use super::super::graph::Graph;
use super::pixels::loaded_picture;
use super::reference::Reference;
use super::resize::{PixelSize, Resize};
use super::{Conditioning, QWEN21, Vision, vae_source};
use crate::comfyui::lower::Refusal;

/// The plain edit encoder's class.
pub(super) const EDIT: &str = "TextEncodeQwenImageEdit";

/// The Plus edit encoder's class.
pub(super) const EDIT_PLUS: &str = "TextEncodeQwenImageEditPlus";

/// Pixels ComfyUI's Plus node shows the language model (384²).
const SEEN_PLUS: f64 = 384.0 * 384.0;

/// Pixels of a reference picture, and of the plain node's shown one
/// (1024²).
const REFERENCE: f64 = 1024.0 * 1024.0;

/// What an edit encoder reads: the text it tokenizes, the pictures its
/// language model sees and the references it appends (with a VAE), in
/// the order of its picture inputs.
pub(super) struct Read {
    pub text: String,
    pub vision: Vec<Vision>,
    pub references: Vec<Reference>,
}

/// Reads edit encoder `node`; `loader` is the stage's checkpoint, whose
/// VAE (or a `VAELoader`) must encode the references.
pub(super) fn read(g: &Graph<'_>, node: &str, loader: &str) -> Result<Read, Refusal> {
    let plus = g.class(node) == EDIT_PLUS;
    let prompt = g.text(node, "prompt")?;
    let inputs: &[&str] = if plus {
        &["image1", "image2", "image3"]
    } else {
        &["image"]
    };
    let linked: Vec<(usize, &&str)> = inputs
        .iter()
        .enumerate()
        .filter(|(_, input)| g.is_link(node, input))
        .collect();
    let vae = g.is_link(node, "vae") && !linked.is_empty();
    if vae {
        let (vae, _) = g.source(node, "vae")?;
        vae_source(g, &vae, loader, (node, "vae"))?;
    }
    let area = |pixels: f64, step: i64| Resize {
        node: node.to_string(),
        method: "area".into(),
        size: PixelSize::TotalPixels { pixels, step },
        then: Vec::new(),
    };
    let mut read = Read {
        text: String::new(),
        vision: Vec::new(),
        references: Vec::new(),
    };
    for (index, input) in linked {
        let (picture, resize) = loaded_picture(g, node, input)?;
        if vae {
            read.references.push(Reference {
                node: node.to_string(),
                class: g.class(node).to_string(),
                encode: node.to_string(),
                loader: picture.clone(),
                resize: resize.clone(),
                then: Some(area(REFERENCE, if plus { 8 } else { 1 })),
            });
        }
        if plus {
            // Numbered by input, as ComfyUI counts the empty ones too.
            read.text += &format!(
                "Picture {}: <|vision_start|><|image_pad|><|vision_end|>",
                index + 1
            );
        }
        read.vision.push(Vision {
            node: node.to_string(),
            class: g.class(node).to_string(),
            loader: picture,
            resize,
            seen: match plus {
                true => area(SEEN_PLUS, 1),
                false => area(REFERENCE, 1),
            },
        });
    }
    read.text += prompt;
    Ok(read)
}

/// Refuses Qwen-Image 2.1 prompts that the text encoder would take
/// differently: one whose node appends its pictures (given a VAE, the
/// encoder leaves their rows out and gives their slots) beside one whose
/// node does not (the encoder keeps them), and other references (a
/// `ReferenceLatent`) beside the node's own, whose slots it gives alone.
fn spliced_alike(g: &Graph<'_>, prompts: &[&Conditioning]) -> Result<(), Refusal> {
    let qwen21 = |c: &&&Conditioning| c.vision.iter().any(|v| v.class == QWEN21);
    let spliced = |c: &Conditioning| c.references.latents.iter().any(|r| r.class == QWEN21);
    let mut shown = prompts.iter().filter(qwen21);
    if let Some(first) = shown.next()
        && let Some(other) = shown.find(|c| spliced(c) != spliced(first))
    {
        let (with, without) = if spliced(first) {
            (first, other)
        } else {
            (other, first)
        };
        return Err(g.refuse(
            &without.encoder,
            Some("vae"),
            format!("shows the text encoder its pictures without a VAE, where node {} appends them with one; Qwen-Image 2.1's text encoder then keeps their rows on one prompt and leaves them out on the other, which the lowering gives one encoder for", with.encoder),
            "give both prompts' encoders the VAE, or neither",
        ));
    }
    for c in prompts.iter().filter(|c| spliced(c)) {
        if let Some(other) = c.references.latents.iter().find(|r| r.class != QWEN21) {
            return Err(g.refuse(
                &other.node,
                None,
                format!("appends a reference beside node {}'s own, whose places in the sequence Qwen-Image 2.1's text encoder gives alone", c.encoder),
                "give the picture to the TextEncodeQwenImage21 node instead",
            ));
        }
    }
    Ok(())
}

/// Refuses prompts that show the text encoder another number of
/// pictures than other prompts, or one picture at different sizes: one text encoder
/// takes as many pictures on every call (a prompt zeroing another's
/// conditioning reads that encoder's, pictures included). (Which pictures
/// a stage may read is `reference::agree`'s check.)
pub(super) fn agree(g: &Graph<'_>, prompts: &[&Conditioning]) -> Result<(), Refusal> {
    spliced_alike(g, prompts)?;
    let Some(most) = prompts.iter().max_by_key(|c| c.vision.len()) else {
        return Ok(());
    };
    let Some(shown) = most.vision.first() else {
        return Ok(());
    };
    if let Some(fewer) = prompts.iter().find(|c| c.vision.len() < most.vision.len()) {
        let message = match fewer.vision.len() {
            0 => format!(
                "encodes its prompt without a picture, where node {} shows the text encoder one; the lowering gives the text encoder a picture on every prompt or on none",
                shown.node
            ),
            n => format!(
                "shows the text encoder {n} picture{}, where node {} shows it {}; the lowering gives the text encoder as many pictures on every prompt",
                if n == 1 { "" } else { "s" },
                shown.node,
                most.vision.len()
            ),
        };
        return Err(g.refuse(
            &fewer.encoder,
            None,
            message,
            "give every prompt's edit encoder the same pictures",
        ));
    }
    // One encoder class (its template and own resizes) for the stage.
    if let Some(other) = prompts
        .iter()
        .flat_map(|c| &c.vision)
        .find(|v| v.class != shown.class)
    {
        return Err(g.refuse(
            &other.node,
            None,
            format!("shows the text encoder pictures as {} does, where node {} shows them as {} does; the lowering gives a stage's prompts one edit encoder class", other.class, shown.node, shown.class),
            "use one edit encoder class on every prompt",
        ));
    }
    // Each picture is shown at one size (MiniMax H3's first and last
    // keyframes at their own).
    let seen: Vec<&Vision> = prompts.iter().flat_map(|c| &c.vision).collect();
    if let Some((shown, other)) = seen.iter().find_map(|shown| {
        seen.iter()
            .find(|v| {
                (v.loader == shown.loader && v.resize == shown.resize)
                    && v.seen.size != shown.seen.size
            })
            .map(|other| (shown, other))
    }) {
        return Err(g.refuse(
            &other.node,
            None,
            match other.node == shown.node {
                true => format!("shows the text encoder node {}'s picture at two sizes; the lowering shows each picture at one size in a stage", shown.loader),
                false => format!("shows the text encoder node {}'s picture at another size than node {} does; the lowering shows each picture at one size in a stage", shown.loader, shown.node),
            },
            "use one edit encoder class on every prompt",
        ));
    }
    Ok(())
}
