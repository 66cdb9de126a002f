//! ComfyUI's custom sampling nodes, read into the same sampler as
//! `KSampler`'s: `SamplerCustom` (model, prompts and CFG on the node itself)
//! and `SamplerCustomAdvanced` (a guider: `CFGGuider` with its model,
//! prompts and CFG, `LTXVDualCFGGuider` of one scale for video and
//! audio, `DualCFGGuider` with three conditionings and two scales, or
//! `BasicGuider` with one conditioning and no
//! negative, which is CFG 1, what ComfyUI computes for it, with the
//! conditioning on both sides; CFG++ samplers, which step along the
//! unconditional estimate, are refused under it), with the sampler from
//! `KSamplerSelect` or `SamplerEulerAncestral` (its sampled output; `denoised_output` where it is the
//! same: see `lands_on_estimate`), the
//! sigmas from a scheduler node (`super::sigmas`; one that takes a model
//! must take the guider's checkpoint with the same sampling), and the
//! noise from `RandomNoise` (its seed) or `DisableNoise` (no noise is
//! added: the start latent is sampled as is).

use super::super::graph::Graph;
use super::model::{ModelChain, model_chain};
use super::own_sampling::Family;
use super::{Dual, Sampler, checked_sampler_name};
use crate::comfyui::lower::Refusal;
use crate::comfyui::synth::spacing::Spacing;
use crate::comfyui::synth::tables::Table;

/// Where a sampler's model and prompts come from: the node with the
/// `model` input, the (node, input) of each prompt, and the scheduler
/// node whose model gives the sigmas, where it is not the sampler.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Guide {
    pub model: String,
    pub positive: (String, &'static str),
    pub negative: (String, &'static str),
    /// `DualCFGGuider`'s middle prompt (`cond2`).
    pub middle: Option<(String, &'static str)>,
    pub scheduler: Option<String>,
    /// A `Flux2Scheduler` whose sides a `GetImageSize` measures.
    pub measuring: Option<String>,
}

impl Guide {
    /// A `KSampler`'s own inputs.
    pub fn on(node: &str) -> Guide {
        Guide {
            model: node.to_string(),
            positive: (node.to_string(), "positive"),
            negative: (node.to_string(), "negative"),
            middle: None,
            scheduler: None,
            measuring: None,
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
    g.expect(&select, SELECTS, "sampler", (node, "sampler"))?;
    let sampler_name = selected(g, &select)?;
    // The input that chose it, for a refusal of it.
    let chosen = match g.class(&select) {
        EULER_ANCESTRAL => "eta",
        _ => "sampler_name",
    };
    let sigmas = super::sigmas::sigmas(g, node)?;
    let seeded =
        crate::comfyui::synth::sampling::sampler(sampler_name).is_some_and(|k| k.needs.seed);
    if let (Some(flip), true) = (&sigmas.flip, seeded) {
        return Err(g.refuse(
            &select,
            Some(chosen),
            format!(
                "uses sampler '{sampler_name}', which adds fresh noise at every step, on the sigmas node {flip} (FlipSigmas) reverses, where each step raises sigma and ComfyUI's noise amount is the square root of a negative number"
            ),
            "invert with a sampler that adds no noise (euler, heun, dpmpp_2m)",
        ));
    }
    let mut dual = None;
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
            &["CFGGuider", "BasicGuider", "DualCFGGuider", LTXV_DUAL],
            "guider",
            (node, "guider"),
        )?;
        let (cfg, guide) = match g.class(&guider) {
            "CFGGuider" => (g.number(&guider, "cfg")?, Guide::on(&guider)),
            LTXV_DUAL => (ltxv_dual_cfg(g, &guider)?, Guide::on(&guider)),
            "DualCFGGuider" => {
                dual = Some(dual_cfg(g, &guider)?);
                (
                    g.number(&guider, "cfg_conds")?,
                    Guide {
                        positive: (guider.clone(), "cond1"),
                        middle: Some((guider.clone(), "cond2")),
                        ..Guide::on(&guider)
                    },
                )
            }
            _ => (
                1.0,
                Guide {
                    model: guider.clone(),
                    positive: (guider.clone(), "conditioning"),
                    negative: (guider.clone(), "conditioning"),
                    middle: None,
                    scheduler: None,
                    measuring: None,
                },
            ),
        };
        (seed, add_noise, cfg, guide)
    } else {
        let add_noise = g.boolean(node, "add_noise")?;
        let seed = g.seed(node, "noise_seed")?;
        (seed, add_noise, g.number(node, "cfg")?, Guide::on(node))
    };
    let measured = sigmas.schedule.spacing == Spacing::Flux2Measured;
    let guide = Guide {
        scheduler: Some(sigmas.scheduler.clone()).filter(|_| sigmas.takes_model),
        measuring: Some(sigmas.scheduler.clone()).filter(|_| measured),
        ..guide
    };
    if dual.is_some() && sampler_name.ends_with("_cfg_pp") {
        return Err(g.refuse(
            &select,
            Some(chosen),
            format!(
                "uses the CFG++ sampler '{sampler_name}' under a DualCFGGuider, whose three estimates give no single unconditional one to step along"
            ),
            "use a sampler without _cfg_pp",
        ));
    }
    if guide.positive == guide.negative && sampler_name.ends_with("_cfg_pp") {
        // ComfyUI's unconditional pass of a BasicGuider is zeros, which the
        // lowered guidance (the conditioning on both sides) does not give.
        return Err(g.refuse(
            &select,
            Some(chosen),
            format!(
                "uses the CFG++ sampler '{sampler_name}' under a BasicGuider, whose unconditional estimate (zero) the lowering does not produce"
            ),
            "use CFGGuider with a negative prompt, or a sampler without _cfg_pp",
        ));
    }
    let window = super::sigmas::window(g, &sigmas, add_noise)?;
    let sampler = Sampler {
        node: node.to_string(),
        seed,
        steps: sigmas.steps,
        cfg,
        sampler_name: sampler_name.to_string(),
        schedule: sigmas.schedule,
        window,
        dual,
    };
    Ok((sampler, guide))
}

/// LTX-2's guider of a video and an audio scale (LTX-2.5's templates).
const LTXV_DUAL: &str = "LTXVDualCFGGuider";

/// The samplers whose last step, to sigma 0, lands on the model's
/// estimate, so that the denoised output is the sampled one
/// (`gradient_estimation` steps to the estimate when the next sigma is 0).
pub(super) const LAST_STEP_ON_ESTIMATE: &[&str] = &[
    "euler",
    "euler_ancestral",
    "heun",
    "dpmpp_2m",
    "gradient_estimation",
    "gradient_estimation_cfg_pp",
];

/// Whether custom sampler `node`'s sampler ends on the estimate at sigma
/// 0 (see [`LAST_STEP_ON_ESTIMATE`]).
pub(super) fn lands_on_estimate(g: &Graph<'_>, node: &str) -> bool {
    let Ok((select, _)) = g.source(node, "sampler") else {
        return false;
    };
    SELECTS.contains(&g.class(&select))
        && selected(g, &select).is_ok_and(|name| LAST_STEP_ON_ESTIMATE.contains(&name))
}

/// The nodes that give a custom sampler its sampler.
const SELECTS: &[&str] = &["KSamplerSelect", EULER_ANCESTRAL];

/// The node giving `euler_ancestral` with its own `eta` and `s_noise`.
const EULER_ANCESTRAL: &str = "SamplerEulerAncestral";

/// The sampler `select` (a [`SELECTS`] node) gives: a `KSamplerSelect`'s
/// core sampler; `SamplerEulerAncestral` at eta 0 is Euler's step (no
/// noise is added), at eta 1 and noise scale 1 `euler_ancestral`.
fn selected<'a>(g: &Graph<'a>, select: &str) -> Result<&'a str, Refusal> {
    if g.class(select) != EULER_ANCESTRAL {
        return checked_sampler_name(g, select);
    }
    let (eta, s_noise) = (g.number(select, "eta")?, g.number(select, "s_noise")?);
    match (eta, s_noise) {
        (0.0, _) => Ok("euler"),
        (1.0, 1.0) => Ok("euler_ancestral"),
        _ => Err(g.refuse(
            select,
            Some("eta"),
            format!("samples with eta {eta} and noise scale {s_noise}; the lowering takes eta 0 (Euler's step) or eta 1 with noise scale 1 (euler_ancestral)"),
            "set eta to 0, or eta and s_noise to 1",
        )),
    }
}

/// `LTXVDualCFGGuider`'s scale: with equal video and audio scales it is
/// `CFGGuider` at that scale, as ComfyUI falls back to; different scales
/// are refused.
fn ltxv_dual_cfg(g: &Graph<'_>, node: &str) -> Result<f64, Refusal> {
    let video = g.number(node, "video_cfg")?;
    let audio = g.number(node, "audio_cfg")?;
    if video != audio {
        return Err(g.refuse(
            node,
            Some("audio_cfg"),
            format!("guides the audio part at {audio} and the video part at {video}; the lowering guides both parts at one scale"),
            "set audio_cfg to video_cfg",
        ));
    }
    Ok(video)
}

/// `DualCFGGuider`'s second scale and style (`regular` where a graph
/// saved before the style existed has none).
fn dual_cfg(g: &Graph<'_>, guider: &str) -> Result<Dual, Refusal> {
    let nested = match g.has(guider, "style") {
        false => false,
        true => match g.text(guider, "style")? {
            "regular" => false,
            "nested" => true,
            other => {
                return Err(g.refuse(
                    guider,
                    Some("style"),
                    format!("is '{other}', not regular or nested"),
                    "choose regular or nested",
                ));
            }
        },
    };
    Ok(Dual {
        cfg2: g.number(guider, "cfg_cond2_negative")?,
        nested,
    })
}

/// Refuses a scheduler whose model is not the guider's loader with the
/// same sampling: the sigmas come from the scheduler's model, the lowering
/// takes them from the sampler's (`sampling`, resolved with the prompts'
/// text encoder `family` where no node states it).
pub(super) fn same_sampling(
    g: &Graph<'_>,
    scheduler: &str,
    guided: &ModelChain,
    family: &Family,
) -> Result<(), Refusal> {
    let ours = model_chain(g, scheduler)?;
    let flow = ours.flow.clone().or_else(|| match (family, &ours.table) {
        (Family::Flow(flow), None) => Some(flow.clone()),
        _ => None,
    });
    // No node states SD's own table.
    let tables = |chain: &ModelChain| {
        chain.table.as_ref().map_or(
            Table::Discrete {
                zero_terminal_snr: false,
            },
            |t| t.table.clone(),
        )
    };
    let same = tables(&ours) == tables(guided)
        && match (&flow, &guided.flow) {
            (None, None) => true,
            (Some(a), Some(b)) => a.same_sigmas(b),
            _ => false,
        };
    let why = if ours.loader != guided.loader {
        format!(
            "computes sigmas for node {}'s model, but the sampler samples node {}'s",
            ours.loader, guided.loader
        )
    } else if !same {
        let theirs = g.source(scheduler, "model")?.0;
        let whose = match flow.is_some() || ours.table.is_some() {
            false => "whose own sampling the graph does not state, unlike the sampler's model's",
            true => "whose sampling differs from the sampler's model's",
        };
        format!("takes its model from node {theirs}, {whose}")
    } else {
        return Ok(());
    };
    Err(g.refuse(
        scheduler,
        Some("model"),
        format!("{why}; the sigmas must come from the sampled model"),
        "connect the scheduler's model to the same node as the guider's",
    ))
}
