//! Lowering a ComfyUI API graph to a `pipeline.workflow` document,
//! fail-closed: every picture or video sink becomes a workflow output and every node on
//! the paths to them must be understood; anything else is refused with the
//! node id, its class, the input at fault and a remedy. Constant primitive
//! and switch nodes are folded into their readers first (`fold`).
//!
//! Supported: `KSampler` and `KSamplerAdvanced` (start/end steps, noise on
//! or off, leftover noise) with classifier-free guidance, chained through
//! latents (a refiner's step window, a hires fix through `LatentUpscale` or
//! `LatentUpscaleBy`) or composited with others' (`LatentComposite`), each
//! stage its own sampling loop; the latent from
//! `EmptyLatentImage`/`EmptySD3LatentImage`, an empty video latent
//! (frames after the channels, shown by video sinks at their frame rate),
//! `VAEEncode` (img2img; the
//! start step is `steps - round_half_even(steps * denoise)`),
//! `VAEEncodeForInpaint` or `SetLatentNoiseMask` (the mask is applied after
//! every step); `CLIPTextEncode` or `CLIPTextEncodeSDXL` prompts; one
//! ControlNet per sampler (`ControlNetApply`/`ControlNetApplyAdvanced`); LoRA loaders
//! routed through the target package's declared adapters, or, like
//! `ModelMergeSimple`, merged into a new package's models (`loras`);
//! flow-matching
//! sampling (`ModelSamplingSD3`/`AuraFlow`/`Flux`) as a schedule shift;
//! `FluxGuidance` as the denoiser's own guidance input.
//! Run parameters (seed, steps, cfg, denoise, start/end steps, strengths,
//! shifts, SDXL sizes) become typed workflow inputs whose defaults are the
//! graph's values.
//!
//! Default package layout (the component files the document names): the
//! models `text_encoder/`, `text_encoder_2/` (SDXL), `denoiser/`,
//! `controlnet/`, `vae_encoder/`, `vae_decoder/` (`vae2_decoder/`, ... for
//! more VAEs, or a VAE decoding both pictures and video), `upscaler/` (an upscale model), a second checkpoint's
//! `model2_<name>/`, each `model.onnx`, and the policies
//! `policies/<component>.onnx` (a later sampler stage's named
//! `stage<k>_<policy>`; what `package` writes). A [`Target`]
//! overrides any of them: the target package's own components keep their
//! artifact paths, and an explicit layout maps names to paths.

mod build;
mod category;
mod expr;
mod fold;
mod graph;
mod loras;
mod parts;
mod recognise;
mod solver;
mod target;

pub use category::{Cause, cause_of, cloud_provider};
pub use recognise::denoise_start_step;
pub use target::{AdapterUse, Target};

use graph::Graph;
use recognise::{FlowShift, LatentSource, Plan, Window};
use serde_json::Value;
use std::collections::BTreeSet;

pub use crate::comfyui::synth::sampling::{SCHEDULES, sampler_names};
/// Output classes the lowering does not make yet, with what they save:
/// a graph with one is refused at that node rather than lowered without
/// its output.
const OTHER_SINKS: &[(&str, &str)] = &[("SaveLatent", "a latent file")];

/// Why a graph was refused, pointing at one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// API node id.
    pub node: String,
    /// Its class.
    pub class: String,
    /// The input at fault, if one is.
    pub input: Option<String>,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub remedy: String,
}

impl Refusal {
    /// The refusal as one sentence: the node (and input) it names, then
    /// what is wrong; a refusal of the whole graph is its message alone.
    pub fn sentence(&self) -> String {
        match (self.node.is_empty(), &self.input) {
            (true, _) => self.message.clone(),
            (false, Some(input)) => format!(
                "node {} ({}) input `{input}` {}",
                self.node, self.class, self.message
            ),
            (false, None) => format!("node {} ({}) {}", self.node, self.class, self.message),
        }
    }
}

/// A lowered graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Lowered {
    /// The `inference_metadata` document as a JSON value.
    pub document: Value,
    /// Prompt texts by the token-id input they belong to (the workflow
    /// takes token ids; a tokenizer turns each text into its input).
    pub prompts: Vec<(String, String)>,
    /// Nodes that reach no sink (a constant switch's other branch among
    /// them) and were ignored.
    pub ignored: Vec<String>,
    /// Nodes on the paths to the sinks, and the constants folded into them
    /// (see `fold`).
    pub used: Vec<String>,
    /// Lowered step (document path) -> the ComfyUI nodes it came from.
    pub provenance: Vec<(String, Vec<String>)>,
    /// Facts worth telling the user (the img2img start step, the LoRA
    /// selection a run must pass).
    pub notes: Vec<String>,
}

/// Lowers an API graph (node id -> `{class_type, inputs}`) for a target
/// package that declares no adapters.
pub fn lower(api: &Value) -> Result<Lowered, Vec<Refusal>> {
    lower_for(api, &Target::default())
}

/// Lowers an API graph for `target` (whose adapters LoRA loaders use).
pub fn lower_for(api: &Value, target: &Target) -> Result<Lowered, Vec<Refusal>> {
    let nodes = api.as_object().ok_or_else(|| {
        vec![Refusal {
            node: String::new(),
            class: String::new(),
            input: None,
            message: "the API graph is not an object".into(),
            remedy: "export with Save (API Format)".into(),
        }]
    })?;
    let (nodes, folded) = fold::constants(nodes);
    let nodes = &nodes;
    let g = Graph { nodes };
    category::refuse_by_kind(&g).map_err(|r| vec![r])?;
    if let Some((id, what)) = nodes.keys().find_map(|id| {
        let class = g.class(id);
        OTHER_SINKS
            .iter()
            .find(|(sink, _)| *sink == class)
            .map(|(_, what)| (id, *what))
    }) {
        return Err(vec![Refusal {
            node: id.clone(),
            class: g.class(id).to_string(),
            input: None,
            message: format!(
                "saves {what}, and the lowering makes picture, video and audio outputs only ({})",
                recognise::sink_classes()
            ),
            remedy: "remove it (and what only it uses) to lower the rest of the graph".into(),
        }]);
    }
    let mut sinks: Vec<&String> = nodes
        .keys()
        .filter(|id| recognise::is_sink(g.class(id)) || recognise::shown_text(&g, id).is_some())
        .collect();
    // Numeric ids in numeric order (`9` before `12`), others after.
    sinks.sort_by_key(|id| {
        (
            id.parse::<u64>().map_err(|_| id.to_string()),
            id.to_string(),
        )
    });
    if sinks.is_empty() {
        return Err(vec![Refusal {
            node: String::new(),
            class: String::new(),
            input: None,
            message: format!(
                "the graph has no picture, video or audio sink ({}), nor a PreviewAny of a written value",
                recognise::sink_classes()
            ),
            remedy: "add a SaveImage node where the image should come out".into(),
        }]);
    }
    lower_from(&g, (&sinks, &folded), target).map_err(|r| vec![r])
}

/// Lowers the graph from its `sinks`; `folded` are the constant nodes
/// folded into their readers (see `fold`), used where what they gave is.
fn lower_from(
    g: &Graph<'_>,
    (sinks, folded): (&[&String], &[fold::Folded]),
    target: &Target,
) -> Result<Lowered, Refusal> {
    let chain = recognise::recognise(g, sinks)?;
    let merged = target.merges_patches();
    if merged {
        for plan in &chain.stages {
            loras::same_on_both_prompts(g, plan)?;
        }
    } else {
        loras::routable(g, &chain)?;
    }
    let mut built = build::build(&chain).map_err(|conflict| conflict.refusal(g))?;
    let components: Vec<&str> = built.document["pipeline"]["workflow"]["components"]
        .as_object()
        .map(|c| c.keys().map(String::as_str).collect())
        .unwrap_or_default();
    // A graph of loaded pictures alone has no model to route LoRAs to.
    let adapters = match (merged, chain.stages.first()) {
        (false, Some(first)) => target::route_loras(g, first, target, &components)?,
        _ => None,
    };
    if let Some(adapters) = &adapters {
        target::add_adapters(&mut built, adapters);
    }
    target.apply_layout(&mut built.document);
    let mut used = BTreeSet::new();
    for sink in sinks {
        g.ancestors(sink, &mut used);
    }
    // What a used constant read is used too (a blank picture's size), and
    // so are the constants folded into that, until nothing more is.
    let mut constants: BTreeSet<String> = BTreeSet::new();
    loop {
        let reached: BTreeSet<String> = fold::used(folded, &used).into_iter().cloned().collect();
        let read = folded.iter().filter(|f| reached.contains(&f.id));
        let read: Vec<String> = read.flat_map(|f| f.read.iter().cloned()).collect();
        let grew = read.iter().any(|r| !used.contains(r)) || reached.len() > constants.len();
        used.extend(read);
        constants = reached;
        if !grew {
            break;
        }
    }
    let ignored = g
        .nodes
        .keys()
        .chain(folded.iter().map(|f| &f.id))
        .filter(|id| !used.contains(*id) && !constants.contains(*id))
        .cloned()
        .collect();
    used.extend(constants);
    let mut notes = Vec::new();
    for (index, plan) in chain.stages.iter().enumerate() {
        let stage = build::StageNames::new(&chain, index);
        for note in stage_notes(plan, &stage) {
            notes.push(match chain.stages.len() {
                1 => note,
                _ => format!("stage {} (node {}): {note}", index + 1, plan.sampler.node),
            });
        }
    }
    for sink in &chain.sinks {
        if let Some(loader) = &sink.dropped_sound {
            notes.push(format!(
                "node {} (SaveVideo) saves the video with the sound track of node {loader}'s video (LoadVideo), which the package does not carry (it reads a video's frames only): its video comes out silent, so add the sound track to the saved video afterwards",
                sink.node
            ));
        }
    }
    if merged {
        notes.extend(loras::merged_notes(&chain));
    }
    notes.extend(target::adapter_notes(adapters.as_ref()));
    Ok(Lowered {
        document: built.document,
        prompts: built.prompts,
        ignored,
        used: used.into_iter().collect(),
        provenance: built.provenance,
        notes,
    })
}

/// What the user should know about one sampler stage beyond the
/// document (its window, with the inputs that set it, a model sampling the
/// graph does not state, and an edit picture the denoiser takes).
fn stage_notes(plan: &Plan, names: &build::StageNames) -> Vec<String> {
    let s = &plan.sampler;
    let follows = s.schedule.follows_model();
    let sampling = plan.model.flow.iter().filter(|_| follows).filter_map(|flow| {
        let why = flow.assumed.as_ref()?;
        let FlowShift::Constant(shift) = flow.shift else {
            return None;
        };
        Some(format!(
            "the graph states no model sampling, which ComfyUI reads from the weights, so {} is {}, as {why}; a ModelSampling node states another",
            names.value("request.flow_shift"),
            (shift * 1e4).round() / 1e4
        ))
    });
    // ComfyUI's own attention is exact; its int8 kernel rounds.
    let attention = plan
        .model
        .attention
        .iter()
        .filter(|(_, kernel)| kernel != "pytorch attention")
        .map(|(node, kernel)| {
            format!(
                "node {node} (ModelAttentionBackend) runs ComfyUI's model with the '{kernel}' attention kernel; the package's denoiser computes attention as it is exported, so its results differ from that kernel's by the kernel's rounding"
            )
        });
    // A sparse selection approximates the model's own attention.
    let sparse = plan.model.sparse_attention.iter().map(|s| {
        format!(
            "node {} (BlockSparseAttention) has ComfyUI compute the model's attention over a '{}' selection of key blocks from {} to {} of the schedule; the package's denoiser computes attention as it is exported, so export it with that selection, or its results differ from ComfyUI's there",
            s.node,
            s.selection,
            share(s.window.0),
            share(s.window.1)
        )
    });
    // The cache is ComfyUI's speed-up: the reference tokens' keys and
    // values of the first call stand in for later calls' own.
    let kv_cache = plan.model.kv_cache.iter().map(|node| {
        format!(
            "node {node} (FluxKVCache) makes ComfyUI compute the reference pictures' attention keys and values on the first step and reuse them on later steps; the package's denoiser computes them on every step, so later steps differ from ComfyUI's where those keys change with the step"
        )
    });
    let options: BTreeSet<_> = plan
        .conditionings()
        .flat_map(|c| &c.tokenizer_options)
        .collect();
    let tokenizing = options.into_iter().map(|o| {
        format!(
            "node {} (T5TokenizerOptions) asks for min_padding {} and min_length {}: the workflow takes token ids, so tokenize the prompts with those options",
            o.node, o.min_padding, o.min_length
        )
    });
    let window = match s.window {
        Window::Denoise(denoise) if denoise < 1.0 => vec![format!(
            "denoise {denoise}: sampling starts at step {} of {} ({})",
            denoise_start_step(s.steps, denoise),
            s.steps,
            names.value("request.denoise")
        )],
        Window::Steps { start, end, .. } => vec![format!(
            "steps {start}..{end} of {} ({}, {})",
            s.steps,
            names.value("request.start_step"),
            names.value("request.end_step")
        )],
        Window::Denoise(_) => vec![],
    };
    let edit = plan.edit().map(|node| {
        let named = |carries: bool| {
            let names: Vec<&str> = plan
                .named_conditionings()
                .filter(|(_, c)| c.edit.is_some() == carries)
                .map(|(name, _)| name)
                .collect();
            (names.join(" and "), names.len())
        };
        let ((with, carrying), (without, lacking)) = (named(true), named(false));
        let carried = match (carrying, lacking) {
            (2, 0) => "both prompts".to_string(),
            (_, 0) => "all three prompts".to_string(),
            (1, 1) => format!("the {with} prompt (the {without} takes zeros in its place)"),
            (_, 1) => format!("the {with} prompts (the {without} takes zeros in its place)"),
            _ => format!("the {with} prompt (the {without} take zeros in their place)"),
        };
        let image = match &plan.latent {
            LatentSource::Edit { image, .. } => build::edit_words(image, names),
            _ => names.value("request.image"),
        };
        let (image, mask) = build::outpaint_words(plan, names)
            .unwrap_or_else(|| (image, names.value("request.mask")));
        match &plan.latent {
            LatentSource::Edit {
                inpaint: Some(_), ..
            } => format!(
                "node {node} (InpaintModelConditioning) attaches its picture ({image}), greyed under the mask ({mask}), and the mask to {carried}: the denoiser takes the greyed picture's latent as input `concat` and the mask as `concat_mask` beside the sample, so an inpainting model takes those channels appended to its input (ComfyUI gives them only to a model with the extra input channels: for a plain checkpoint, use VAEEncodeForInpaint or SetLatentNoiseMask instead)"
            ),
            _ => format!(
                "node {node} (InstructPixToPixConditioning) attaches its picture ({image}) to {carried}: the denoiser takes the picture's latent as input `concat` beside the sample, so an edit model takes those channels appended to its input (ComfyUI gives them only to a model with the extra input channels)"
            ),
        }
    });
    let dual = s.dual.as_ref().map(|dual| {
        format!(
            "DualCFGGuider ({} style): its middle prompt (cond2) is {}, cfg_conds {} and cfg_cond2_negative {}",
            if dual.nested { "nested" } else { "regular" },
            names.value("request.middle_input_ids"),
            names.value("request.guidance_scale"),
            names.value("request.guidance_scale_2")
        )
    });
    let differential = plan.model.differential.as_ref().map(|node| match plan.noise_mask() {
        None => format!("node {node} (DifferentialDiffusion) changes nothing here: it reshapes a latent's noise mask at every step, and this sampler's latent has none"),
        Some(_) => format!("node {node} (DifferentialDiffusion): each step keeps only the mask's cells at or above the step's threshold (sigma - sigma_to) / (sigma_from - sigma_to), growing the region it samples as the sigmas fall (masked_blend)"),
    });
    let motion = plan.model.motion().filter(|m| m.autoselected).map(|m| {
        format!("node {} samples with beta_schedule 'autoselect', taken as sqrt_linear (AnimateDiff), the schedule AnimateDiff-Evolved picks for SD1.5 motion models (it reads the kind from the motion model's weights); state the schedule on the node for an SDXL motion model", m.node)
    });
    let adaptive = (s.sampler_name == "dpm_adaptive").then(|| {
        format!(
            "sampler 'dpm_adaptive' sizes its own steps until it reaches the run's last sigma: the loop stops there or after {} attempted steps ({}), short of it, where ComfyUI's has no bound; raise that for a long run",
            crate::comfyui::synth::sampling::ADAPTIVE_ITERATIONS,
            names.value("request.max_iterations")
        )
    });
    sampling
        .chain(attention)
        .chain(sparse)
        .chain(kv_cache)
        .chain(differential)
        .chain(motion)
        .chain(adaptive)
        .chain(dual)
        .chain(edit)
        .chain(build::reference_note(plan, names))
        .chain(build::vision_note(plan, names))
        .chain(build::frames_note(plan, names))
        .chain(build::style_note(plan, names))
        .chain(build::loaded_note(plan, names))
        .chain(build::av_note(plan))
        .chain(build::held_note(plan))
        .chain(build::clip_text_note(plan))
        .chain(build::patch_note(plan, names))
        .chain(window)
        .chain(tokenizing)
        .collect()
}

/// A share of a schedule as a whole percent ("20 %").
fn share(fraction: f64) -> String {
    format!("{} %", (fraction * 100.0).round())
}
