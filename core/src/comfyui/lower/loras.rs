//! What becomes of the patches a graph applies to its models: LoRA
//! loaders and `ModelMergeSimple`. Lowered into a package that already has
//! models, a LoRA is routed through the package's declared adapters
//! (`target::route_loras`) and a merge is refused. Lowered into a new
//! package, whose models are still to be exported (or made as stand-ins),
//! both are merged into them: the denoiser (and, where a LoRA is on the
//! prompts' CLIP path, the text encoders) a loader chain gives is its own
//! model, named apart from the plain checkpoint's, and the notes say which
//! patch at which strength each one carries.

use super::Refusal;
use super::graph::Graph;
use super::recognise::{Chain, Plan, Prompt};
use super::target::{AdapterUse, Target};
use std::collections::{BTreeMap, BTreeSet};

/// Whether LoRAs are merged into the models rather than routed through
/// the target's adapters.
pub(super) fn merged(target: &Target) -> bool {
    target.adapters.is_none() && !target.existing
}

/// A merged LoRA changes the text encoder's weights, and one stage has one
/// text encoder: both prompts must come through the same LoRA loaders.
pub(super) fn same_on_both_prompts(g: &Graph<'_>, plan: &Plan) -> Result<(), Refusal> {
    let (positive, negative) = (&plan.positive.clip_loras, &plan.negative.clip_loras);
    let Some(lora) = positive
        .iter()
        .chain(negative)
        .find(|l| !(positive.contains(l) && negative.contains(l)))
    else {
        return Ok(());
    };
    Err(g.refuse(
        lora,
        Some("clip"),
        "is on one prompt's CLIP path only; its LoRA is merged into the text encoder, which both prompts of a sampler share".into(),
        "feed both prompts' text encoders from this LoraLoader's CLIP output, or neither",
    ))
}

/// Each stage's model component prefix: the first model's plain, another
/// checkpoint's (or another set of merged LoRAs') `model<n>_`.
pub(super) fn model_prefixes(chain: &Chain) -> Vec<String> {
    let mut models: BTreeMap<String, String> = BTreeMap::new();
    chain
        .stages
        .iter()
        .map(|plan| {
            let n = models.len() + 1;
            let prefix = models.entry(model_key(plan)).or_insert_with(|| match n {
                1 => String::new(),
                n => format!("model{n}_"),
            });
            prefix.clone()
        })
        .collect()
}

/// Refuses the patches a package with models cannot take: a model merge
/// (its models are not the merged weights) and LoRAs in a chain of
/// samplers (adapters are routed for one).
pub(super) fn routable(g: &Graph<'_>, chain: &Chain) -> Result<(), Refusal> {
    if let Some(merge) = chain.stages.iter().find_map(|p| p.model.merges.first()) {
        return Err(g.refuse(
            &merge.node,
            None,
            "merges two checkpoints' denoisers, but the target package's models exist and are not the merged weights".into(),
            "lower into a new package (without --package or --models), whose denoiser is exported from the merged weights",
        ));
    }
    match chain.stages.iter().find_map(|p| p.model.loras.first()) {
        Some(lora) if chain.stages.len() > 1 => Err(g.refuse(
            &lora.node,
            Some("lora_name"),
            format!(
                "loads LoRA '{}' in a graph that chains {} samplers; adapters are routed for one sampler",
                lora.name,
                chain.stages.len()
            ),
            "remove the LoRA loader, or lower each sampler stage as its own graph",
        )),
        _ => Ok(()),
    }
}

/// The key a stage's model components are named by: the checkpoint loader,
/// the checkpoints merged into it and the LoRA loaders merged into its
/// denoiser and text encoders (a LoRA at strength 0 changes nothing).
fn model_key(plan: &Plan) -> String {
    let patching: Vec<&str> = plan
        .model
        .loras
        .iter()
        .filter(|l| l.strength_model != 0.0 || l.strength_clip.is_some_and(|s| s != 0.0))
        .map(|l| l.node.as_str())
        .collect();
    let clip: Vec<&str> = patching
        .iter()
        .copied()
        .filter(|l| plan.positive.clip_loras.iter().any(|c| c == l))
        .collect();
    format!(
        "{}|{}|{}",
        plan.model.loader,
        patching.join(","),
        clip.join(",")
    )
}

/// Which checkpoint and LoRA is merged into which models, at which share
/// or strength: once per node, in stage order.
pub(super) fn merged_notes(chain: &Chain) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut notes = Vec::new();
    for (plan, prefix) in chain.stages.iter().zip(model_prefixes(chain)) {
        let denoiser = format!("`{prefix}denoiser`");
        for merge in &plan.model.merges {
            if seen.insert(&merge.node) {
                notes.push(format!(
                    "node {} (ModelMergeSimple) merges the denoisers of nodes {} and {} at ratio {} (node {}'s share): export {denoiser} from the merged weights",
                    merge.node,
                    plan.model.loader,
                    merge.other,
                    shown(merge.ratio),
                    plan.model.loader
                                ));
            }
        }
        let encoders = match plan.positive.text {
            Prompt::Sdxl { .. } => format!("`{prefix}text_encoder` and `{prefix}text_encoder_2`"),
            Prompt::Single(_) => format!("`{prefix}text_encoder`"),
        };
        for lora in &plan.model.loras {
            if !seen.insert(&lora.node) {
                continue;
            }
            let clip = match lora.strength_clip {
                Some(s) if plan.positive.clip_loras.contains(&lora.node) => s,
                _ => 0.0,
            };
            let merged = match (lora.strength_model, clip) {
                (0.0, 0.0) => {
                    notes.push(format!(
                        "LoRA '{}' (node {}) has strength 0, so the models are the checkpoint's own",
                        lora.name, lora.node
                    ));
                    continue;
                }
                (model, 0.0) => format!("{denoiser} at strength {}", shown(model)),
                (0.0, clip) => format!("{encoders} at strength {}", shown(clip)),
                (model, clip) => format!(
                    "{denoiser} at strength {} and into {encoders} at strength {}",
                    shown(model),
                    shown(clip)
                ),
            };
            notes.push(format!(
                "LoRA '{}' (node {}) is merged into {merged}: export those models with the LoRA fused",
                lora.name, lora.node
            ));
        }
    }
    notes
}

/// A strength as a person reads it: six decimals at most (UI files carry
/// values such as 1.0000000000000002).
fn shown(strength: f64) -> f64 {
    (strength * 1e6).round() / 1e6
}

/// The adapter selection a run must pass, when LoRAs are routed.
pub(super) fn adapter_notes(adapters: Option<&AdapterUse>) -> Vec<String> {
    adapters
        .map(|a| a.selection.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|(alias, index, scale)| {
            format!(
                "LoRA '{alias}' is adapter {index} at scale {scale}: pass it in the adapter selection inputs"
            )
        })
        .collect()
}
