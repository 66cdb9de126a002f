//! AnimateDiff on the model path (AnimateDiff-Evolved's Gen1 loaders,
//! `ADE_AnimateDiffLoaderWithContext` and `ADE_AnimateDiffLoaderGen1`): a
//! motion module injected into the denoiser, which then sees the latent
//! batch's pictures as the frames of one video, and the beta schedule the
//! loader samples with.

use super::super::graph::Graph;
use super::super::parts::Axes;
use crate::comfyui::lower::Refusal;
use crate::comfyui::synth::tables::{Betas, LINEAR_END, Table};

/// The AnimateDiff loaders the lowering reads.
pub(super) const LOADERS: &[&str] = &[
    "ADE_AnimateDiffLoaderWithContext",
    "ADE_AnimateDiffLoaderGen1",
];

/// A motion module injected into the denoiser.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Motion {
    pub node: String,
    /// The motion model file.
    pub name: String,
    /// `motion_scale`: how strongly its temporal layers act.
    pub scale: f64,
    /// Whether the loader's `beta_schedule` is `autoselect`, taken as
    /// SD1.5 motion models' `sqrt_linear`.
    pub autoselected: bool,
    /// Whether AnimateDiff-Evolved spares a v2 motion model its GroupNorm
    /// change (`apply_v2_models_properly`; v1 models always get it: the
    /// checkpoint's GroupNorm layers then normalise over all frames).
    pub v2_properly: bool,
}

/// The loader's optional inputs the lowering does not build, and why.
const UNBUILT: &[(&str, &str)] = &[
    (
        "context_options",
        "slides context windows over the frames, sampling each window apart and blending them",
    ),
    (
        "motion_lora",
        "patches the motion module with a motion LoRA",
    ),
    ("ad_settings", "adjusts the motion module's settings"),
    (
        "ad_keyframes",
        "changes the motion module's strength over the steps",
    ),
    (
        "sample_settings",
        "changes how the frames' noise is drawn and sampled",
    ),
    (
        "scale_multival",
        "scales the motion module per frame or area",
    ),
    (
        "effect_multival",
        "sets the motion module's effect per frame or area",
    ),
    ("per_block", "scales the motion module per block"),
];

/// Loader `node`: its motion module, and the table (of a noise-predicting
/// model) it samples with, none where it keeps the model's own.
pub(super) fn motion_module(g: &Graph<'_>, node: &str) -> Result<(Motion, Option<Table>), Refusal> {
    for (input, why) in UNBUILT {
        if g.source(node, input).is_ok() {
            return Err(g.refuse(
                node,
                Some(input),
                format!("{why}, which the lowering does not build"),
                &format!("disconnect {input}"),
            ));
        }
    }
    let name = g.text(node, "model_name")?.to_string();
    // The legacy loader's own inputs, at its Python defaults where the
    // graph leaves them out; Gen1 scales by multivals (refused above) and
    // treats v2 models properly.
    let legacy = g.class(node) == "ADE_AnimateDiffLoaderWithContext";
    let scale = match legacy && g.has(node, "motion_scale") {
        true => g.number(node, "motion_scale")?,
        false => 1.0,
    };
    if !(scale >= 0.0 && scale.is_finite()) {
        return Err(g.refuse(
            node,
            Some("motion_scale"),
            format!("is {scale}"),
            "use a motion scale of 0 or more",
        ));
    }
    let v2_properly = match legacy {
        true => g.flag(node, "apply_v2_models_properly").unwrap_or(false),
        false => true,
    };
    let table = beta_table(g, node, &name)?;
    let autoselected = g.text(node, "beta_schedule")? == "autoselect";
    Ok((
        Motion {
            node: node.to_string(),
            name,
            scale,
            autoselected,
            v2_properly,
        },
        table,
    ))
}

/// Refuses a motion module on a sampler whose latent is not a batch of
/// pictures (`axes`), the frames it animates, and `autoselect` under SDXL
/// prompts (`sdxl`), where AnimateDiff-Evolved picks an SDXL schedule by
/// the motion model's weights.
pub(super) fn on_pictures(
    g: &Graph<'_>,
    motion: Option<&Motion>,
    axes: Axes,
    sdxl: bool,
) -> Result<(), Refusal> {
    let Some(motion) = motion else {
        return Ok(());
    };
    if axes != Axes::Image {
        return Err(g.refuse(
            &motion.node,
            None,
            "animates a video or audio latent; an AnimateDiff motion module animates a batch of pictures as frames".into(),
            "sample an EmptyLatentImage whose batch_size is the frame count",
        ));
    }
    if motion.autoselected && sdxl {
        return Err(g.refuse(
            &motion.node,
            Some("beta_schedule"),
            AUTOSELECT_SDXL.into(),
            BETA_CHOICES,
        ));
    }
    Ok(())
}

/// Why `autoselect` is refused for an SDXL motion model.
const AUTOSELECT_SDXL: &str = "picks HotshotXL's or AnimateDiff-SDXL's schedule by the motion model's weights, which the lowering cannot read";

/// The schedules the lowering takes from an AnimateDiff loader.
const BETA_CHOICES: &str = "choose sqrt_linear (AnimateDiff), linear (HotshotXL/default), linear (AnimateDiff-SDXL) or use existing";

/// The table of the loader's `beta_schedule` (none for `use existing`).
fn beta_table(g: &Graph<'_>, node: &str, name: &str) -> Result<Option<Table>, Refusal> {
    let schedule = g.text(node, "beta_schedule")?;
    let sqrt_linear = Table::Betas {
        betas: Betas::SqrtLinear,
        linear_end: LINEAR_END,
    };
    let sd = Table::Discrete {
        zero_terminal_snr: false,
    };
    let lower = name.to_ascii_lowercase();
    let lcm = lower.contains("lcm");
    let sdxl = ["xl", "hotshot"].iter().any(|k| lower.contains(k));
    Ok(Some(match schedule {
        "use existing" => return Ok(None),
        // AnimateDiff-Evolved picks by the motion model's kind, read
        // from its weights: SD1.5's AnimateDiff models sample
        // sqrt_linear, AnimateLCM lcm, the SDXL ones linear.
        "autoselect" if !lcm && !sdxl => sqrt_linear,
        "sqrt_linear (AnimateDiff)" | "sqrt_linear" => sqrt_linear,
        "linear (HotshotXL/default)" | "linear" => sd,
        "linear (AnimateDiff-SDXL)" => Table::Betas {
            betas: Betas::Linear,
            linear_end: 0.020,
        },
        other => {
            let why = match other {
                "autoselect" if lcm => "picks AnimateLCM's distilled schedule for this motion model, which the lowering does not take from an AnimateDiff loader".to_string(),
                "autoselect" => AUTOSELECT_SDXL.to_string(),
                _ => format!("is '{other}', a schedule the lowering does not build"),
            };
            return Err(g.refuse(node, Some("beta_schedule"), why, BETA_CHOICES));
        }
    }))
}
