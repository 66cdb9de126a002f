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
//!   picture's input, `image1` to `image3`).
//!
//! Both tokenize with an edit template (a system prompt about the input
//! picture) that the exported tokenizer must apply. The lowering shows the
//! text encoder one loaded picture (maybe resized), the stage's.

use super::super::graph::Graph;
use super::pixels::loaded_picture;
use super::reference::Reference;
use super::resize::{PixelSize, Resize};
use super::{Conditioning, Vision, vae_source};
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

/// What an edit encoder reads: the text it tokenizes, the picture its
/// language model sees and the reference it appends (with a VAE).
pub(super) struct Read {
    pub text: String,
    pub vision: Option<Vision>,
    pub reference: Option<Reference>,
}

/// Reads edit encoder `node`; `loader` is the stage's checkpoint, whose
/// VAE (or a `VAELoader`) must encode the reference.
pub(super) fn read(g: &Graph<'_>, node: &str, loader: &str) -> Result<Read, Refusal> {
    let plus = g.class(node) == EDIT_PLUS;
    let prompt = g.text(node, "prompt")?;
    let inputs: &[&str] = if plus {
        &["image1", "image2", "image3"]
    } else {
        &["image"]
    };
    let mut linked = inputs
        .iter()
        .enumerate()
        .filter(|(_, input)| g.is_link(node, input));
    let Some((index, input)) = linked.next() else {
        return Ok(Read {
            text: prompt.to_string(),
            vision: None,
            reference: None,
        });
    };
    if let Some((_, second)) = linked.next() {
        return Err(g.refuse(
            node,
            Some(second),
            format!("shows the text encoder a second picture beside `{input}`; the lowering gives it one loaded picture per stage"),
            "disconnect all but one picture, or edit with each picture in its own stage",
        ));
    }
    let (picture, resize) = loaded_picture(g, node, input)?;
    let area = |pixels: f64, step: i64| Resize {
        node: node.to_string(),
        method: "area".into(),
        size: PixelSize::TotalPixels { pixels, step },
    };
    let seen = match plus {
        true => area(SEEN_PLUS, 1),
        false => area(REFERENCE, 1),
    };
    let reference = match g.is_link(node, "vae") {
        true => {
            let (vae, _) = g.source(node, "vae")?;
            vae_source(g, &vae, loader, (node, "vae"))?;
            Some(Reference {
                node: node.to_string(),
                class: g.class(node).to_string(),
                encode: node.to_string(),
                loader: picture.clone(),
                resize: resize.clone(),
                then: Some(area(REFERENCE, if plus { 8 } else { 1 })),
            })
        }
        false => None,
    };
    let text = match plus {
        true => format!(
            "Picture {}: <|vision_start|><|image_pad|><|vision_end|>{prompt}",
            index + 1
        ),
        false => prompt.to_string(),
    };
    Ok(Read {
        text,
        vision: Some(Vision {
            node: node.to_string(),
            class: g.class(node).to_string(),
            loader: picture,
            resize,
            seen,
        }),
        reference,
    })
}

/// Refuses prompts that show the text encoder a picture beside prompts
/// that do not, or show it at different sizes: one text encoder takes a
/// picture on every call or on none (a prompt zeroing another's
/// conditioning reads that encoder's, picture included). (Which picture, the stage's, is
/// `reference::agree`'s check.)
pub(super) fn agree(g: &Graph<'_>, prompts: &[&Conditioning]) -> Result<(), Refusal> {
    let Some(shown) = prompts.iter().find_map(|c| c.vision.as_ref()) else {
        return Ok(());
    };
    if let Some(bare) = prompts.iter().find(|c| c.vision.is_none()) {
        return Err(g.refuse(
            &bare.encoder,
            None,
            format!("encodes its prompt without a picture, where node {} shows the text encoder one; the lowering gives the text encoder a picture on every prompt or on none", shown.node),
            "give every prompt's edit encoder the same picture",
        ));
    }
    if let Some(other) = prompts
        .iter()
        .filter_map(|c| c.vision.as_ref())
        .find(|v| v.seen.size != shown.seen.size)
    {
        return Err(g.refuse(
            &other.node,
            None,
            format!("shows the text encoder the picture at another size than node {} does; the lowering gives it one picture per stage", shown.node),
            "use one edit encoder class on every prompt",
        ));
    }
    Ok(())
}
