//! The model path from a sampler back to its loader: the LoRA loaders,
//! model merges and AnimateDiff motion modules that patch the checkpoint's
//! weights, in order, a
//! flow-matching or noise-prediction sampling override, a
//! `DifferentialDiffusion`, a `VideoLinearCFGGuidance`, a `CFGNorm`, a
//! control patch (`QwenImageDiffsynthControlnet`) and an exact
//! `QwenImage21Cache`.

use super::super::graph::Graph;
use super::control_patch::{self, ControlPatch};
use super::motion::{self, Motion};
use crate::comfyui::lower::Refusal;
use crate::comfyui::synth::prediction::{Prediction, PredictionKind};
use crate::comfyui::synth::tables::Table;

const MODEL_LOADERS: &[&str] = &[
    "CheckpointLoaderSimple",
    "UNETLoader",
    "ImageOnlyCheckpointLoader",
];

/// The model path from the checkpoint to the sampler.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct ModelChain {
    /// The loader the denoiser comes from.
    pub loader: String,
    /// LoRA loaders, model merges and motion modules in the order they
    /// apply (nearest the loader first).
    pub patches: Vec<Patch>,
    /// A flow-matching sampling override.
    pub flow: Option<FlowSampling>,
    /// A noise-prediction sampling override (`ModelSamplingDiscrete`,
    /// `ModelSamplingContinuousEDM`).
    pub table: Option<TableSampling>,
    /// A `DifferentialDiffusion` on the path, which reshapes a latent's
    /// noise mask at every step.
    pub differential: Option<String>,
    /// A `VideoLinearCFGGuidance`: the guidance scale rises linearly over
    /// the frames from its `min_cfg` to the sampler's.
    pub linear_cfg: Option<LinearCfg>,
    /// A `CFGNorm`: the guided denoised sample scaled down to the
    /// conditional one's norm over channels, times its strength.
    pub cfg_norm: Option<CfgNorm>,
    /// A control model patched into the denoiser's blocks.
    pub control_patch: Option<ControlPatch>,
    /// The model family's latent format, where it is not SD's.
    pub format: Option<LatentFormat>,
    /// A `ModelAttentionBackend` (node, kernel): the attention kernel
    /// ComfyUI runs the model with, which the package's model does not
    /// change (it computes attention as it is exported).
    pub attention: Option<(String, String)>,
    /// A `FluxKVCache`: ComfyUI computes the reference pictures' attention
    /// keys and values on the first model call and reuses them after; the
    /// package's denoiser computes them on every call (noted).
    pub kv_cache: Option<String>,
    /// A `BlockSparseAttention` nearest the sampler: ComfyUI computes the
    /// model's attention over a selection of key blocks (noted).
    pub sparse_attention: Option<SparseAttention>,
}

/// `BlockSparseAttention`: its selection rule (`vsa`, `sla`, ...) and the
/// share of the schedule it is active over.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct SparseAttention {
    pub node: String,
    pub selection: String,
    pub window: (f64, f64),
}

/// What a model family's latents are where they are not SD's: pixels
/// per latent cell (ComfyUI resizes an empty latent node's cells to
/// them) and the channels its VAE decodes pictures to (4: RGBA).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct LatentFormat {
    pub cell: i64,
    pub picture_channels: i64,
}

/// A `CFGNorm` node and its strength.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct CfgNorm {
    pub node: String,
    pub strength: f64,
}

/// A `VideoLinearCFGGuidance` node and its first frame's scale.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct LinearCfg {
    pub node: String,
    pub min_cfg: f64,
}

impl ModelChain {
    /// The LoRA loaders on the path, nearest the loader first.
    pub fn loras(&self) -> Vec<&Lora> {
        self.patches
            .iter()
            .filter_map(|p| match p {
                Patch::Lora(lora) => Some(lora),
                Patch::Merge(_) | Patch::Motion(_) => None,
            })
            .collect()
    }

    /// The AnimateDiff motion module injected into the denoiser, if any.
    pub fn motion(&self) -> Option<&Motion> {
        self.patches.iter().find_map(|p| match p {
            Patch::Motion(motion) => Some(motion),
            Patch::Lora(_) | Patch::Merge(_) => None,
        })
    }
}

/// One change the model path makes to the checkpoint's weights.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) enum Patch {
    Lora(Lora),
    Merge(Merge),
    /// An AnimateDiff motion module: the denoiser then sees the latent
    /// batch's pictures as one video's frames.
    Motion(Motion),
}

/// One LoRA loader on the model (and maybe CLIP) path.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Lora {
    pub node: String,
    pub name: String,
    pub strength_model: f64,
    pub strength_clip: Option<f64>,
}

/// One `ModelMergeSimple`: the path's model (`model1`) weighted by
/// `ratio`, another loader's (`model2`) by `1 - ratio`.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Merge {
    pub node: String,
    /// The loader `model2` comes from.
    pub other: String,
    pub ratio: f64,
}

/// `ModelSamplingSD3` / `ModelSamplingAuraFlow` (shift) or
/// `ModelSamplingFlux` (resolution-dependent shift), or the model family's
/// own flow sampling where no such node states it.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct FlowSampling {
    /// The `ModelSampling*` node, or the text encoder loader whose type
    /// implies the sampling.
    pub node: String,
    pub shift: FlowShift,
    /// Latent channels the model family works in (16 for SD3 and Flux,
    /// 4 for AuraFlow), as ComfyUI corrects empty latents to.
    pub channels: i64,
    /// The model sampling family: `sd3`, `aura_flow` or `flux`.
    pub family: &'static str,
    /// The family's latent format, where its text encoder's type states
    /// one that is not SD's (Qwen-Image 2.1's).
    pub format: Option<LatentFormat>,
    /// The model's output is the whole velocity from the sample to the
    /// picture, its start the latent without noise
    /// (`ModelSamplingAuraFlow`'s `sampling` `img_to_img_velocity`:
    /// Marigold's).
    pub velocity: bool,
    /// Why the sampling is the model family's own default, where no node
    /// states it (for the lowering's notes).
    pub assumed: Option<String>,
    /// The audio stream's own shift, where a node states one
    /// (`MiniMaxH3SigmaShift`).
    pub audio_shift: Option<f64>,
}

impl FlowSampling {
    /// Whether both give the same sigmas (the same family and shift).
    pub fn same_sigmas(&self, other: &FlowSampling) -> bool {
        self.family == other.family && self.shift == other.shift
    }
}

/// What a `ModelSamplingDiscrete` or `ModelSamplingContinuousEDM` node
/// states: the model's prediction and sigma table.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct TableSampling {
    pub node: String,
    pub prediction: Prediction,
    pub table: Table,
}

impl TableSampling {
    /// A v-predicting model (`sigma_data` 1) on `table`, as `node` implies
    /// (a model family's own sampling).
    pub(super) fn v_prediction(node: &str, table: Table) -> TableSampling {
        TableSampling {
            node: node.to_string(),
            prediction: Prediction {
                kind: PredictionKind::V,
                sigma_data: 1.0,
            },
            table,
        }
    }
}

/// The flow-matching time shift.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) enum FlowShift {
    Constant(f64),
    Resolution {
        max_shift: f64,
        base_shift: f64,
        width: f64,
        height: f64,
    },
}

/// Refuses a `CFGNorm` on a model that does not sample by flow matching:
/// the lowering reads each model call's denoised sample back from its
/// velocity at the call's timestep, which only a flow model's gives.
pub(super) fn cfg_norm_on_flow(g: &Graph<'_>, model: &ModelChain) -> Result<(), Refusal> {
    match (&model.cfg_norm, &model.flow) {
        (Some(norm), None) => Err(g.refuse(
            &norm.node,
            None,
            "normalises the guided estimate, which the lowering does on flow-matching models only (it reads each call's denoised sample back at the call's timestep)".into(),
            "remove it for this model",
        )),
        _ => Ok(()),
    }
}

/// The model path from `sampler` back to its loader.
pub(super) fn model_chain(g: &Graph<'_>, sampler: &str) -> Result<ModelChain, Refusal> {
    let mut patches = Vec::new();
    let mut flow = None;
    let mut table = None;
    let mut differential = None;
    let mut linear_cfg = None;
    let mut cfg_norm = None;
    let mut control_patch = None;
    let mut attention = None;
    let mut kv_cache = None;
    let mut sparse_attention = None;
    let (mut node, _) = g.source(sampler, "model")?;
    let mut from = (sampler.to_string(), "model");
    for _ in 0..=g.nodes.len() {
        match g.class(&node) {
            "LoraLoader" | "LoraLoaderModelOnly" => {
                let clip = g.class(&node) == "LoraLoader";
                patches.push(Patch::Lora(Lora {
                    node: node.clone(),
                    name: g.text(&node, "lora_name")?.to_string(),
                    strength_model: g.number(&node, "strength_model")?,
                    strength_clip: clip.then(|| g.number(&node, "strength_clip")).transpose()?,
                }));
            }
            "ModelMergeSimple" => {
                let (other, _) = g.source(&node, "model2")?;
                g.expect(&other, MODEL_LOADERS, "model", (&node, "model2"))?;
                patches.push(Patch::Merge(Merge {
                    node: node.clone(),
                    other,
                    ratio: g.number_in(&node, "ratio", 0.0..=1.0, "share")?,
                }));
            }
            "DifferentialDiffusion" => {
                differential.get_or_insert_with(|| node.clone());
            }
            // Nearest the sampler is the kernel ComfyUI runs with.
            "ModelAttentionBackend" if attention.is_none() => {
                attention = Some((node.clone(), g.text(&node, "attention")?.to_string()));
            }
            "ModelAttentionBackend" => {}
            "BlockSparseAttention" if sparse_attention.is_none() => {
                sparse_attention = Some(SparseAttention {
                    selection: g.text(&node, "selection")?.to_string(),
                    window: (
                        g.number_in(&node, "start_percent", 0.0..=1.0, "share")?,
                        g.number_in(&node, "end_percent", 0.0..=1.0, "share")?,
                    ),
                    node: node.clone(),
                });
            }
            "BlockSparseAttention" => {}
            // Where Qwen-Image 2.1 keeps the prompt's attention keys and
            // values between steps; unquantised, it changes no result.
            "QwenImage21Cache" if g.text(&node, "dtype")? != "default" => {
                return Err(g.refuse(
                    &node,
                    Some("dtype"),
                    format!("quantises Qwen-Image 2.1's prompt cache to {}, which changes every step's result; the lowering keeps the cache exact", g.text(&node, "dtype")?),
                    "set dtype to default",
                ));
            }
            "QwenImage21Cache" => {}
            "FluxKVCache" => {
                kv_cache.get_or_insert_with(|| node.clone());
            }
            // Without a tile size it returns the model as it is.
            "ChromaRadianceOptions" if g.whole(&node, "nerf_tile_size", -1..=16384)? < 0 => {}
            "ChromaRadianceOptions" => {
                return Err(g.refuse(
                    &node,
                    Some("nerf_tile_size"),
                    "sets a tile size for Chroma Radiance's pixel decoding, which the lowering leaves to the exported model".into(),
                    "set nerf_tile_size to -1",
                ));
            }
            control_patch::CLASS if control_patch.is_some() => {
                return Err(g.refuse(
                    &node,
                    None,
                    "is a second control patch on the model path; the lowering builds one".into(),
                    "keep one",
                ));
            }
            control_patch::CLASS => control_patch = Some(control_patch::read(g, &node)?),
            // ComfyUI runs post-guidance functions in the order they were
            // set; the one nearest the sampler is the last.
            "CFGNorm" if cfg_norm.is_some() => {
                return Err(g.refuse(
                    &node,
                    None,
                    "is a second CFGNorm on the model path".into(),
                    "keep one",
                ));
            }
            "CFGNorm" => {
                cfg_norm = Some(CfgNorm {
                    node: node.clone(),
                    strength: g.number_in(&node, "strength", 0.0..=100.0, "strength")?,
                });
            }
            "VideoLinearCFGGuidance" if linear_cfg.is_some() => {
                return Err(g.refuse(
                    &node,
                    None,
                    "is a second VideoLinearCFGGuidance on the model path".into(),
                    "keep one",
                ));
            }
            "VideoLinearCFGGuidance" => {
                linear_cfg = Some(LinearCfg {
                    node: node.clone(),
                    min_cfg: g.number_in(&node, "min_cfg", 0.0..=100.0, "scale")?,
                });
            }
            class if motion::LOADERS.contains(&class) => {
                if patches.iter().any(|p| matches!(p, Patch::Motion(_))) {
                    return Err(g.refuse(
                        &node,
                        None,
                        "is a second AnimateDiff loader on the model path".into(),
                        "keep one",
                    ));
                }
                let (motion, sampling) = motion::motion_module(g, &node)?;
                patches.push(Patch::Motion(motion));
                if let Some(sampling) = sampling {
                    let sampling = TableSampling {
                        node: node.clone(),
                        prediction: Prediction::EPSILON,
                        table: sampling,
                    };
                    if flow.is_some() || table.is_some() {
                        return Err(g.refuse(
                            &node,
                            Some("beta_schedule"),
                            "sets the model's sampling under another model-sampling override on the model path".into(),
                            "set beta_schedule to use existing, or remove the ModelSampling node",
                        ));
                    }
                    table = Some(sampling);
                }
            }
            class
                if (class.starts_with("ModelSampling")
                    || class == super::av_nodes::H3_SIGMA_SHIFT)
                    && (flow.is_some() || table.is_some()) =>
            {
                return Err(g.refuse(
                    &node,
                    None,
                    "is a second model-sampling override on the model path".into(),
                    "keep one ModelSampling node",
                ));
            }
            "ModelSamplingDiscrete" | "ModelSamplingContinuousEDM" | "ModelSamplingContinuousV" => {
                table = Some(table_sampling(g, &node)?);
            }
            class @ ("ModelSamplingSD3" | "ModelSamplingAuraFlow" | "ModelSamplingFlux") => {
                let shift = if class == "ModelSamplingFlux" {
                    FlowShift::Resolution {
                        max_shift: g.number(&node, "max_shift")?,
                        base_shift: g.number(&node, "base_shift")?,
                        width: g.number(&node, "width")?,
                        height: g.number(&node, "height")?,
                    }
                } else {
                    FlowShift::Constant(g.number(&node, "shift")?)
                };
                flow = Some(FlowSampling {
                    node: node.clone(),
                    shift,
                    channels: if class == "ModelSamplingAuraFlow" {
                        4
                    } else {
                        16
                    },
                    family: match class {
                        "ModelSamplingAuraFlow" => "aura_flow",
                        "ModelSamplingFlux" => "flux",
                        _ => "sd3",
                    },
                    format: None,
                    velocity: velocity(g, &node)?,
                    assumed: None,
                    audio_shift: None,
                });
            }
            super::av_nodes::H3_SIGMA_SHIFT => {
                flow = Some(FlowSampling {
                    node: node.clone(),
                    shift: FlowShift::Constant(g.number_in(
                        &node,
                        "shift_video",
                        0.01..=100.0,
                        "shift",
                    )?),
                    channels: super::av_nodes::H3_CHANNELS,
                    family: "sd3",
                    format: None,
                    velocity: false,
                    assumed: None,
                    audio_shift: Some(g.number_in(&node, "shift_audio", 0.01..=100.0, "shift")?),
                });
            }
            _ => {
                g.expect(&node, MODEL_LOADERS, "model", (&from.0, from.1))?;
                if let Some(patch) = &control_patch {
                    super::vae_source(g, &patch.vae, &node, (&patch.node, "vae"))?;
                }
                patches.reverse();
                return Ok(ModelChain {
                    loader: node,
                    patches,
                    flow,
                    table,
                    differential,
                    linear_cfg,
                    cfg_norm,
                    control_patch,
                    format: None,
                    attention,
                    kv_cache,
                    sparse_attention,
                });
            }
        }
        let input = match g.class(&node) {
            "ModelMergeSimple" => "model1",
            _ => "model",
        };
        let next = g.source(&node, input)?.0;
        from = (node, input);
        node = next;
    }
    Err(g.refuse(
        &node,
        Some("model"),
        "is part of a loop of model links".into(),
        "connect the model path to a loader",
    ))
}

/// Whether flow sampling node `node` samples as `img_to_img_velocity`
/// (its `sampling`, `flow` where absent).
fn velocity(g: &Graph<'_>, node: &str) -> Result<bool, Refusal> {
    if !g.has(node, "sampling") {
        return Ok(false);
    }
    match g.text(node, "sampling")? {
        "flow" => Ok(false),
        "img_to_img_velocity" => Ok(true),
        other => Err(g.refuse(
            node,
            Some("sampling"),
            format!("samples as '{other}', which the lowering does not know"),
            "set sampling to flow or img_to_img_velocity",
        )),
    }
}

/// The prediction and table a `ModelSamplingDiscrete` (`sampling`, `zsnr`),
/// `ModelSamplingContinuousEDM` or `ModelSamplingContinuousV` (`sampling`,
/// `sigma_min`, `sigma_max`) node states.
fn table_sampling(g: &Graph<'_>, node: &str) -> Result<TableSampling, Refusal> {
    let continuous_v = g.class(node) == "ModelSamplingContinuousV";
    let edm = g.class(node) == "ModelSamplingContinuousEDM" || continuous_v;
    let sampling = g.text(node, "sampling")?;
    let kind = |kind, sigma_data| Prediction { kind, sigma_data };
    let prediction = match (sampling, edm) {
        ("eps", _) if !continuous_v => kind(PredictionKind::Epsilon, 1.0),
        ("v_prediction", _) => kind(PredictionKind::V, 1.0),
        ("x0", false) => kind(PredictionKind::X0, 1.0),
        ("img_to_img", false) => kind(PredictionKind::ImgToImg, 1.0),
        // The model input keeps sigma_data 1; LCM's 0.5 is its boundary's.
        ("lcm", false) => kind(PredictionKind::Lcm, 1.0),
        ("edm", true) if !continuous_v => kind(PredictionKind::Edm, 0.5),
        (other, _) => {
            let why = match other {
                "edm_playground_v2.5" => {
                    "Playground v2.5's latent format, which the lowering does not convert"
                        .to_string()
                }
                "cosmos_rflow" => {
                    "Cosmos' rectified-flow sampling, which the lowering does not build".to_string()
                }
                _ => "not a sampling type ComfyUI offers here".to_string(),
            };
            let choices = match (continuous_v, edm) {
                (true, _) => "choose v_prediction",
                (_, true) => "choose eps, v_prediction or edm",
                _ => "choose eps, v_prediction, lcm, x0 or img_to_img",
            };
            return Err(g.refuse(
                node,
                Some("sampling"),
                format!("is '{other}': {why}"),
                choices,
            ));
        }
    };
    let table = if edm {
        let (sigma_min, sigma_max) = (g.number(node, "sigma_min")?, g.number(node, "sigma_max")?);
        if !(sigma_min > 0.0 && sigma_min < sigma_max && sigma_max.is_finite()) {
            return Err(g.refuse(
                node,
                Some("sigma_min"),
                format!(
                    "is {sigma_min} with sigma_max {sigma_max}, not a range of positive sigmas"
                ),
                "choose 0 < sigma_min < sigma_max",
            ));
        }
        match continuous_v {
            true => Table::ContinuousV {
                sigma_min,
                sigma_max,
            },
            false => Table::ContinuousEdm {
                sigma_min,
                sigma_max,
            },
        }
    } else {
        let zero_terminal_snr = g.boolean(node, "zsnr")?;
        match prediction.kind {
            PredictionKind::Lcm => Table::Distilled { zero_terminal_snr },
            _ => Table::Discrete { zero_terminal_snr },
        }
    };
    Ok(TableSampling {
        node: node.to_string(),
        prediction,
        table,
    })
}
