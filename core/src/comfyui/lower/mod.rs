//! Lowering a ComfyUI API graph to a `pipeline.workflow` document,
//! fail-closed: the graph must have exactly one image sink and every node on
//! the path to it must be understood; anything else is refused with the node
//! id, its class, the input at fault and a remedy.
//!
//! Supported: `KSampler` and `KSamplerAdvanced` (start/end steps, noise on
//! or off, leftover noise) with classifier-free guidance; the latent from
//! `EmptyLatentImage`/`EmptySD3LatentImage`, `VAEEncode` (img2img; the
//! start step is `steps - round_half_even(steps * denoise)`),
//! `VAEEncodeForInpaint` or `SetLatentNoiseMask` (the mask is applied after
//! every step); `CLIPTextEncode` or `CLIPTextEncodeSDXL` prompts; one
//! ControlNet (`ControlNetApply`/`ControlNetApplyAdvanced`); LoRA loaders
//! routed through the target package's declared adapters; flow-matching
//! sampling (`ModelSamplingSD3`/`AuraFlow`/`Flux`) as a schedule shift.
//! Run parameters (seed, steps, cfg, denoise, start/end steps, strengths,
//! shifts, SDXL sizes) become typed workflow inputs whose defaults are the
//! graph's values.
//!
//! Default package layout (the component files the document names): the
//! models `text_encoder/`, `text_encoder_2/` (SDXL), `denoiser/`,
//! `controlnet/`, `vae_encoder/`, `vae_decoder/`, each `model.onnx`,
//! and the policies `policies/<component>.onnx` (what `package` writes). A [`Target`]
//! overrides any of them: the target package's own components keep their
//! artifact paths, and an explicit layout maps names to paths.

mod build;
mod graph;
mod parts;
mod recognise;
mod solver;
mod target;

pub use recognise::denoise_start_step;
pub use target::{AdapterUse, Target};

use graph::Graph;
use recognise::{Plan, Window};
use serde_json::Value;
use std::collections::BTreeSet;

pub use crate::comfyui::synth::sampling::{SAMPLERS, SCHEDULES};
/// Classes that save or preview an image.
const IMAGE_SINKS: &[&str] = &["SaveImage", "PreviewImage"];

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

/// A lowered graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Lowered {
    /// The `inference_metadata` document as a JSON value.
    pub document: Value,
    /// Prompt texts by the token-id input they belong to (the workflow
    /// takes token ids; a tokenizer turns each text into its input).
    pub prompts: Vec<(String, String)>,
    /// Nodes that cannot reach the image sink and were ignored.
    pub ignored: Vec<String>,
    /// Nodes on the path to the image sink (everything else).
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
    let g = Graph { nodes };
    let sinks: Vec<&String> = nodes
        .keys()
        .filter(|id| IMAGE_SINKS.contains(&g.class(id)))
        .collect();
    let [sink] = sinks[..] else {
        let (node, class) = sinks.get(1).map_or((String::new(), String::new()), |id| {
            (id.to_string(), g.class(id).to_string())
        });
        return Err(vec![Refusal {
            node,
            class,
            input: None,
            message: format!(
                "the graph has {} image sinks (SaveImage / PreviewImage); exactly one is needed",
                sinks.len()
            ),
            remedy: "keep one SaveImage or PreviewImage node".into(),
        }]);
    };
    lower_from(&g, sink, target).map_err(|r| vec![r])
}

fn lower_from(g: &Graph<'_>, sink: &str, target: &Target) -> Result<Lowered, Refusal> {
    let plan = recognise::recognise(g, sink)?;
    let mut built = build::build(&plan);
    let components: Vec<&str> = built.document["pipeline"]["workflow"]["components"]
        .as_object()
        .map(|c| c.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let adapters = target::route_loras(g, &plan, target, &components)?;
    if let Some(adapters) = &adapters {
        target::add_adapters(&mut built, adapters);
    }
    target.apply_layout(&mut built.document);
    let mut used = BTreeSet::new();
    g.ancestors(sink, &mut used);
    let ignored = g
        .nodes
        .keys()
        .filter(|id| !used.contains(*id))
        .cloned()
        .collect();
    Ok(Lowered {
        document: built.document,
        prompts: built.prompts,
        ignored,
        used: used.into_iter().collect(),
        provenance: built.provenance,
        notes: notes(&plan, adapters.as_ref()),
    })
}

/// What the user should know about the lowering beyond the document.
fn notes(plan: &Plan, adapters: Option<&AdapterUse>) -> Vec<String> {
    let s = &plan.sampler;
    let mut notes = Vec::new();
    match s.window {
        Window::Denoise(denoise) if denoise < 1.0 => notes.push(format!(
            "denoise {denoise}: sampling starts at step {} of {} (request.denoise)",
            denoise_start_step(s.steps, denoise),
            s.steps
        )),
        Window::Steps { start, end, .. } => notes.push(format!(
            "steps {start}..{end} of {} (request.start_step, request.end_step)",
            s.steps
        )),
        Window::Denoise(_) => {}
    }
    for (alias, index, scale) in adapters.map(|a| a.selection.as_slice()).unwrap_or_default() {
        notes.push(format!(
            "LoRA '{alias}' is adapter {index} at scale {scale}: pass it in the adapter selection inputs"
        ));
    }
    notes
}
