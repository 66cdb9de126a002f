//! A prompt's way from the sampler back to its text encoder: a
//! `ConditioningStableAudio` or `LTXVConditioning` and an `InstructPixToPixConditioning` or
//! `InpaintModelConditioning` next to the sampler, ControlNet
//! applications, a `FluxGuidance` and reference pictures
//! (`ReferenceLatent`, `FluxKontextMultiReferenceLatentMethod`) before or
//! after them or the zeroing, a `ConditioningZeroOut`, the encoder
//! (`CLIPTextEncode` or `CLIPTextEncodeSDXL`) and its CLIP path (LoRA
//! loaders, T5 tokenizer options, the loader); or Lotus' fixed prompt
//! straight at the guider.

use super::super::graph::Graph;
use super::reference::{self, References};
use super::style::Style;
use super::vision::{EDIT, EDIT_PLUS};
use super::{
    CLIP_LOADERS, CONTROL_APPLIERS, Conditioning, Control, EDIT_NODES, ENCODERS, Guidance,
    ModelChain, Prompt, TokenizerOptions,
};
use crate::comfyui::lower::Refusal;

/// Flux's encoder of two texts (`clip_l` for CLIP-L, `t5xxl` for T5) with
/// the guidance value it sets.
pub(super) const FLUX: &str = "CLIPTextEncodeFlux";

impl Conditioning {
    /// A prompt no text encoder makes (Lotus' fixed embedding, a saved
    /// conditioning, SVD's picture embedding): node `encoder` gives it,
    /// from `loader` (the node itself where it has no loader).
    pub(super) fn unencoded(encoder: &str, text: Prompt, loader: &str) -> Conditioning {
        Conditioning {
            encoder: encoder.to_string(),
            text,
            loader: loader.to_string(),
            clip_loras: Vec::new(),
            clip_text: None,
            zeroed: None,
            tokenizer_options: Vec::new(),
            guidance: None,
            edit: None,
            seconds: None,
            frame_rate: None,
            guides: Vec::new(),
            references: References::default(),
            vision: Vec::new(),
            frames: None,
            styles: Vec::new(),
        }
    }
}

/// The encoder (and any ControlNet) behind input `name` of the sampler.
pub(super) fn conditioning(
    g: &Graph<'_>,
    sampler: &str,
    name: &str,
    model: &ModelChain,
    walk: &mut super::walk::Walk,
) -> Result<(Conditioning, Option<Control>), Refusal> {
    let (mut node, mut slot) = g.source(sampler, name)?;
    if g.class(&node) == super::lotus::CONDITIONING {
        let lotus = super::lotus::conditioning(g, &node, slot, (sampler, name))?;
        return Ok((lotus, None));
    }
    if g.class(&node) == super::loaded::LOADER {
        let loaded = super::loaded::conditioning(g, &node, slot, (sampler, name))?;
        return Ok((loaded, None));
    }
    let mut from = (sampler.to_string(), name.to_string());
    let mut control: Option<Control> = None;
    let mut guidance: Option<Guidance> = None;
    let mut references = References::default();
    let mut styles = Vec::new();
    super::latent_sizes::through_kandinsky5(g, &mut node, &mut slot, &mut from)?;
    let seconds = super::audio::seconds(g, &mut node, &mut slot, &mut from)?;
    let (guides, frame_rate) = super::ltxv::prompt_chain(g, &mut node, &mut slot, &mut from)?;
    let edit = edit_conditioning(g, &mut node, &mut slot, &mut from)?;
    let frames = super::frames::step(g, &mut node, &mut slot, &mut from)?;
    let mut marks = Marks {
        guidance: &mut guidance,
        references: &mut references,
        styles: &mut styles,
        loader: &model.loader,
    };
    marks.step_over(g, (&mut node, &mut slot, &mut from))?;
    while CONTROL_APPLIERS.contains(&g.class(&node)) {
        let outputs = if g.class(&node) == "ControlNetApplyAdvanced" {
            2
        } else {
            1
        };
        if slot >= outputs {
            return Err(g.refuse(
                &from.0,
                Some(&from.1),
                format!("reads output {slot} of node {node}, which has {outputs}"),
                "reconnect the input in ComfyUI",
            ));
        }
        if let Some(first) = &control {
            return Err(g.refuse(
                &node,
                None,
                format!(
                    "is chained behind ControlNet node {}; only a single ControlNet is supported",
                    first.apply
                ),
                "remove all but one ControlNet application",
            ));
        }
        let advanced = g.class(&node) == "ControlNetApplyAdvanced";
        let (loader, _) = g.source(&node, "control_net")?;
        g.expect(
            &loader,
            &["ControlNetLoader"],
            "control_net",
            (&node, "control_net"),
        )?;
        let image = super::pixels::picture(g, &node, "image", walk)?;
        if let Some(up) = &image.upscale {
            return Err(g.refuse(
                &up.node,
                None,
                format!("runs an upscale model on the picture ControlNet node {node} reads, which the lowering takes from a LoadImage or a decode, maybe resized"),
                "save the upscaled picture and load it with LoadImage",
            ));
        }
        control = Some(Control {
            apply: node.clone(),
            loader,
            image,
            strength: g.number(&node, "strength")?,
            window: advanced
                .then(|| {
                    Ok::<_, Refusal>((
                        g.number(&node, "start_percent")?,
                        g.number(&node, "end_percent")?,
                    ))
                })
                .transpose()?,
            positive: name == "positive",
            negative: name == "negative",
        });
        let input = if advanced {
            if slot == 0 { "positive" } else { "negative" }
        } else {
            "conditioning"
        };
        from = (node.clone(), input.to_string());
        (node, slot) = g.source(&node, input)?;
    }
    marks.step_over(g, (&mut node, &mut slot, &mut from))?;
    let mut zeroed = None;
    if g.class(&node) == "ConditioningZeroOut" {
        g.first_output((&from.0, &from.1), &node, slot)?;
        let zero = node.clone();
        from = (zero.clone(), "conditioning".to_string());
        (node, slot) = g.source(&zero, "conditioning")?;
        zeroed = Some(zero.clone());
        if g.class(&node) == "CLIPTextEncodeSDXL" {
            return Err(g.refuse(
                &zero,
                None,
                "zeroes an SDXL conditioning, whose pooled and size parts the lowering does not zero yet".into(),
                "feed it a CLIPTextEncode, or encode an empty negative prompt instead",
            ));
        }
        marks.step_over(g, (&mut node, &mut slot, &mut from))?;
    }
    g.expect(&node, ENCODERS, &from.1, (&from.0, &from.1))?;
    // A paired encoder gives the positive (0) and the negative (1).
    if !super::paired::is_paired(g.class(&node)) {
        g.first_output((&from.0, &from.1), &node, slot)?;
    } else if slot > 1 {
        return Err(g.refuse(
            &from.0,
            Some(&from.1),
            format!("reads output {slot} of node {node}, its latent, as a conditioning"),
            "connect the input to the node's positive (0) or negative (1) output",
        ));
    }
    let (clip, _) = g.source(&node, "clip")?;
    let (loader, clip_loras, tokenizer_options) = clip_source(g, &clip, &node, model)?;
    let (mut vision, mut own_references) = (Vec::new(), Vec::new());
    let mut clip_text = None;
    let text = if super::paired::is_paired(g.class(&node)) {
        let read = super::paired::read(g, &node, slot, &model.loader)?;
        (vision, own_references) = (read.vision, read.references);
        Prompt::Single(read.text)
    } else if [EDIT, EDIT_PLUS].contains(&g.class(&node)) {
        let read = super::vision::read(g, &node, &model.loader)?;
        (vision, own_references) = (read.vision, read.references);
        Prompt::Single(read.text)
    } else if g.class(&node) == super::av_nodes::H3_IMAGE_TO_VIDEO {
        let read = super::minimax::read(g, &node, &model.loader)?;
        (vision, own_references) = (read.vision, read.references);
        Prompt::Single(read.text)
    } else if g.class(&node) == FLUX {
        clip_text = Some(g.text(&node, "clip_l")?.to_string());
        // A FluxGuidance nearer the sampler sets it again, as in ComfyUI.
        if guidance.is_none() {
            guidance = Some(Guidance {
                value: g.number_in(&node, "guidance", 0.0..=100.0, "guidance")?,
                node: node.clone(),
            });
        }
        Prompt::Single(g.text(&node, "t5xxl")?.to_string())
    } else if g.class(&node) == "CLIPTextEncodeSDXL" {
        let n = |k: &str| g.number(&node, k);
        Prompt::Sdxl {
            text_g: g.text(&node, "text_g")?.to_string(),
            text_l: g.text(&node, "text_l")?.to_string(),
            size: [
                n("height")?,
                n("width")?,
                n("crop_h")?,
                n("crop_w")?,
                n("target_height")?,
                n("target_width")?,
            ],
        }
    } else {
        Prompt::Single(g.text(&node, "text")?.to_string())
    };
    references.finish(g, own_references)?;
    // Walked from the sampler: the style applied last comes first.
    styles.reverse();
    if let Some(style) = styles.first() {
        let (refused, why) = match (&zeroed, &text) {
            (Some(zero), _) => (zero, "zeroes a prompt with style tokens"),
            (None, Prompt::Sdxl { .. }) => (
                &node,
                "encodes an SDXL prompt, which style tokens are not appended to",
            ),
            _ => (&node, ""),
        };
        if !why.is_empty() {
            return Err(g.refuse(
                refused,
                None,
                format!(
                    "{why} (node {}); the lowering appends style tokens to a text prompt's",
                    style.node
                ),
                "apply the style model to a CLIPTextEncode prompt that is not zeroed",
            ));
        }
    }
    Ok((
        Conditioning {
            encoder: node,
            text,
            loader,
            clip_loras,
            clip_text,
            zeroed,
            tokenizer_options,
            guidance,
            edit,
            seconds,
            frame_rate,
            guides,
            references,
            vision,
            frames,
            styles,
        },
        control,
    ))
}

/// Steps back through an `InstructPixToPixConditioning` or
/// `InpaintModelConditioning` next to the sampler: its output `slot` (0
/// positive, 1 negative) is the prompt on that input with the node's
/// picture attached; returns the node.
fn edit_conditioning(
    g: &Graph<'_>,
    node: &mut String,
    slot: &mut i64,
    from: &mut (String, String),
) -> Result<Option<String>, Refusal> {
    if !EDIT_NODES.contains(&g.class(node)) {
        return Ok(None);
    }
    let here = node.clone();
    g.through_prompt_pair(node, slot, from, "its latent, as a conditioning")?;
    Ok(Some(here))
}

/// What a prompt's conditioning is marked with on its way: a
/// `FluxGuidance` and reference pictures, and the stage's checkpoint,
/// whose VAE must encode the references.
struct Marks<'m> {
    guidance: &'m mut Option<Guidance>,
    references: &'m mut References,
    styles: &'m mut Vec<Style>,
    loader: &'m str,
}

impl Marks<'_> {
    /// Steps over `FluxGuidance`, `StyleModelApply`, `ReferenceLatent` and
    /// `FluxKontextMultiReferenceLatentMethod` nodes at the walk's
    /// position, in any order, recording them.
    fn step_over(
        &mut self,
        g: &Graph<'_>,
        (node, slot, from): (&mut String, &mut i64, &mut (String, String)),
    ) -> Result<(), Refusal> {
        for _ in 0..=g.nodes.len() {
            if g.class(node) == "FluxGuidance" {
                flux_guidance(g, node, slot, from, self.guidance)?;
                continue;
            }
            if super::style::step(g, (node, slot, from), self.styles)? {
                continue;
            }
            if !reference::step(g, (node, slot, from), self.references, self.loader)? {
                break;
            }
        }
        Ok(())
    }
}

/// Steps over the `FluxGuidance` at `node` (the walk's position, read by
/// input `from`), recording it in `guidance`; a second one on the same
/// prompt is refused.
fn flux_guidance(
    g: &Graph<'_>,
    node: &mut String,
    slot: &mut i64,
    from: &mut (String, String),
    guidance: &mut Option<Guidance>,
) -> Result<(), Refusal> {
    g.first_output((&from.0, &from.1), node, *slot)?;
    if let Some(nearer) = guidance {
        return Err(g.refuse(
            node,
            None,
            format!(
                "sets the guidance that FluxGuidance node {} nearer the sampler sets again",
                nearer.node
            ),
            "keep one FluxGuidance on each prompt",
        ));
    }
    let value = g.number_in(node, "guidance", 0.0..=100.0, "guidance")?;
    *guidance = Some(Guidance {
        node: node.clone(),
        value,
    });
    let here = node.clone();
    *from = (here.clone(), "conditioning".to_string());
    (*node, *slot) = g.source(&here, "conditioning")?;
    Ok(())
}

/// The CLIP path of an encoder: the model's loader or a CLIP loader,
/// through LoRA loaders already on the model path and T5 tokenizer options
/// (the loader and both returned).
fn clip_source(
    g: &Graph<'_>,
    clip: &str,
    encoder: &str,
    model: &ModelChain,
) -> Result<(String, Vec<String>, Vec<TokenizerOptions>), Refusal> {
    let mut loras = Vec::new();
    let mut options = Vec::new();
    let mut node = clip.to_string();
    let mut from = (encoder.to_string(), "clip");
    for _ in 0..=g.nodes.len() {
        if g.class(&node) == "T5TokenizerOptions" {
            options.push(TokenizerOptions {
                node: node.clone(),
                min_padding: g.whole(&node, "min_padding", 0..=10000)?,
                min_length: g.whole(&node, "min_length", 0..=10000)?,
            });
            let next = g.source(&node, "clip")?.0;
            from = (node, "clip");
            node = next;
            continue;
        }
        if g.class(&node) != "LoraLoader" {
            break;
        }
        if !model.loras().iter().any(|l| l.node == node) {
            return Err(g.refuse(
                &node,
                None,
                "applies a LoRA to the text encoder only; LoRAs must be on the denoiser's model path too".into(),
                "feed the same LoraLoader's MODEL output to the sampler",
            ));
        }
        let next = g.source(&node, "clip")?.0;
        loras.push(node.clone());
        from = (node, "clip");
        node = next;
    }
    g.expect(&node, CLIP_LOADERS, "clip", (&from.0, from.1))?;
    if g.class(&node) == "CheckpointLoaderSimple" && node != model.loader {
        return Err(g.refuse(&node, None, "is a second checkpoint; the text encoder must come from the denoiser's checkpoint or a CLIP loader".into(), "load one checkpoint"));
    }
    options.reverse();
    Ok((node, loras, options))
}
