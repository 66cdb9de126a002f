//! ComfyUI's custom sampling nodes, read into the same sampler as
//! `KSampler`'s: `SamplerCustom` (model, prompts and CFG on the node itself)
//! and `SamplerCustomAdvanced` (a guider: `CFGGuider` with its model,
//! prompts and CFG, or `BasicGuider` with one conditioning and no
//! negative, which is CFG 1, what ComfyUI computes for it, with the
//! conditioning on both sides; CFG++ samplers, which step along the
//! unconditional estimate, are refused under it), with the sampler from
//! `KSamplerSelect` (its sampled output only, not `denoised_output`), the
//! sigmas from `BasicScheduler` (its steps, scheduler and denoise, on the
//! same model as the guider) and the noise from `RandomNoise` (its seed) or
//! `DisableNoise` (no noise is added: the start latent is sampled as is).

use super::super::graph::Graph;
use super::{
    Sampler, Window, checked_denoise, checked_sampler_name, checked_scheduler, checked_steps,
    denoise_start_step,
};
use crate::comfyui::lower::Refusal;

/// Where a sampler's model and prompts come from: the node with the
/// `model` input, and the (node, input) of each prompt.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Guide {
    pub model: String,
    pub positive: (String, &'static str),
    pub negative: (String, &'static str),
}

impl Guide {
    /// A `KSampler`'s own inputs.
    pub fn on(node: &str) -> Guide {
        Guide {
            model: node.to_string(),
            positive: (node.to_string(), "positive"),
            negative: (node.to_string(), "negative"),
        }
    }
}

/// Whether `class` is a custom sampling node this module reads.
pub(super) fn is_custom(class: &str) -> bool {
    matches!(class, "SamplerCustom" | "SamplerCustomAdvanced")
}

/// The sampler and guide of a `SamplerCustom` or `SamplerCustomAdvanced`.
pub(super) fn sampler(g: &Graph<'_>, node: &str) -> Result<(Sampler, Guide), Refusal> {
    let advanced = g.class(node) == "SamplerCustomAdvanced";
    let (select, _) = g.source(node, "sampler")?;
    g.expect(&select, &["KSamplerSelect"], "sampler", (node, "sampler"))?;
    let sampler_name = checked_sampler_name(g, &select)?;
    let (sigmas, _) = g.source(node, "sigmas")?;
    g.expect(&sigmas, &["BasicScheduler"], "sigmas", (node, "sigmas"))?;
    let scheduler = checked_scheduler(g, &sigmas)?;
    let steps = checked_steps(g, &sigmas)?;
    let denoise = checked_denoise(g, &sigmas, steps)?;
    let (seed, add_noise, cfg, guide) = if advanced {
        let (noise, _) = g.source(node, "noise")?;
        g.expect(
            &noise,
            &["RandomNoise", "DisableNoise"],
            "noise",
            (node, "noise"),
        )?;
        let (seed, add_noise) = match g.class(&noise) {
            "RandomNoise" => (g.seed(&noise, "noise_seed")?, true),
            _ => (0, false),
        };
        let (guider, _) = g.source(node, "guider")?;
        g.expect(
            &guider,
            &["CFGGuider", "BasicGuider"],
            "guider",
            (node, "guider"),
        )?;
        let (cfg, guide) = match g.class(&guider) {
            "CFGGuider" => (g.number(&guider, "cfg")?, Guide::on(&guider)),
            _ => (
                1.0,
                Guide {
                    model: guider.clone(),
                    positive: (guider.clone(), "conditioning"),
                    negative: (guider.clone(), "conditioning"),
                },
            ),
        };
        (seed, add_noise, cfg, guide)
    } else {
        let add_noise = match g.flag(node, "add_noise") {
            Some(on) => on,
            None => {
                return Err(g.refuse(
                    node,
                    Some("add_noise"),
                    "is not true or false".into(),
                    "set add_noise to true or false",
                ));
            }
        };
        let seed = g.seed(node, "noise_seed")?;
        (seed, add_noise, g.number(node, "cfg")?, Guide::on(node))
    };
    if guide.positive == guide.negative && sampler_name.ends_with("_cfg_pp") {
        // ComfyUI's unconditional pass of a BasicGuider is zeros, which the
        // lowered guidance (the conditioning on both sides) does not give.
        return Err(g.refuse(
            &select,
            Some("sampler_name"),
            format!(
                "uses the CFG++ sampler '{sampler_name}' under a BasicGuider, whose unconditional estimate (zero) the lowering does not produce"
            ),
            "use CFGGuider with a negative prompt, or a sampler without _cfg_pp",
        ));
    }
    same_model(g, &sigmas, &guide.model)?;
    let window = if add_noise {
        Window::Denoise(denoise)
    } else {
        Window::Steps {
            start: denoise_start_step(steps, denoise),
            end: steps,
            add_noise: false,
            leftover_noise: false,
        }
    };
    let sampler = Sampler {
        node: node.to_string(),
        seed,
        steps,
        cfg,
        sampler_name: sampler_name.to_string(),
        scheduler: scheduler.to_string(),
        window,
        discard_penultimate: false,
    };
    Ok((sampler, guide))
}

/// Refuses a scheduler whose model is not the guider's: the sigmas come
/// from the model's sampling, which the lowering takes from one chain.
fn same_model(g: &Graph<'_>, scheduler: &str, guided: &str) -> Result<(), Refusal> {
    let ours = g.source(scheduler, "model")?;
    let theirs = g.source(guided, "model")?;
    if ours != theirs {
        return Err(g.refuse(
            scheduler,
            Some("model"),
            format!(
                "takes its model from node {} but the sampler's guidance from node {}; the lowering needs one model for both",
                ours.0, theirs.0
            ),
            "connect the scheduler's model to the same node as the guider's",
        ));
    }
    Ok(())
}
