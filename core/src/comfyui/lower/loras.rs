//! What becomes of the patches a graph applies to its models: LoRA
//! loaders, `ModelMergeSimple` and AnimateDiff motion modules. Lowered into
//! a package that already has models, a LoRA is routed through the
//! package's declared adapters (`target::route_loras`) and a merge or
//! motion module is refused (`routable`). Lowered
//! into a new package, whose models are still to be exported (or made as
//! stand-ins), both are merged into them: the denoiser (and, where a LoRA
//! is on the prompts' CLIP path, the text encoders) a loader chain gives
//! is a model of its own, named apart (`model_prefixes`), and a note per
//! such model lists its patches in the order they apply.

use super::Refusal;
use super::graph::Graph;
use super::parts::numbered;
use super::recognise::{Chain, Lora, Patch, Plan, Prompt};
use std::collections::{BTreeMap, BTreeSet};

/// Whether LoRA `lora` changes the denoiser.
fn patches_denoiser(lora: &Lora) -> bool {
    lora.strength_model != 0.0
}

/// The strength at which LoRA `lora` changes the text encoders of `plan`,
/// if it does (it is on both prompts' CLIP path at a strength).
fn text_strength(plan: &Plan, lora: &Lora) -> Option<f64> {
    lora.strength_clip
        .filter(|s| *s != 0.0 && plan.positive.clip_loras.contains(&lora.node))
}

/// Whether any patch of `plan`'s model path changes a model (a control
/// patch's weights are fused into the denoiser).
fn patched(plan: &Plan) -> bool {
    plan.model.control_patch.is_some()
        || plan.model.patches.iter().any(|patch| match patch {
            Patch::Lora(lora) => patches_any(plan, lora),
            Patch::Merge(_) | Patch::Motion(_) => true,
        })
}

/// Whether LoRA `lora` changes any model of `plan`.
fn patches_any(plan: &Plan, lora: &Lora) -> bool {
    patches_denoiser(lora) || text_strength(plan, lora).is_some()
}

/// A merged LoRA changes the text encoder's weights, and one stage has one
/// text encoder: both prompts must come through the same LoRA loaders
/// where the LoRA patches CLIP.
pub(super) fn same_on_both_prompts(g: &Graph<'_>, plan: &Plan) -> Result<(), Refusal> {
    let (positive, negative) = (&plan.positive.clip_loras, &plan.negative.clip_loras);
    let one_sided = plan.model.loras().into_iter().find(|l| {
        l.strength_clip.is_some_and(|s| s != 0.0)
            && (positive.contains(&l.node) != negative.contains(&l.node))
    });
    let Some(lora) = one_sided else {
        return Ok(());
    };
    Err(g.refuse(
        &lora.node,
        Some("clip"),
        "is on one prompt's CLIP path only; its LoRA is merged into the text encoder, which both prompts of a sampler share".into(),
        "feed both prompts' text encoders from this LoraLoader's CLIP output, or neither",
    ))
}

/// Refuses the patches a package with models cannot take: a model merge,
/// motion module or control patch (its models are not the patched
/// weights) and LoRAs in a chain of samplers (adapters are routed for
/// one).
pub(super) fn routable(g: &Graph<'_>, chain: &Chain) -> Result<(), Refusal> {
    let merged = chain.stages.iter().find_map(|p| {
        let control = p
            .model
            .control_patch
            .as_ref()
            .map(|c| (&c.node, "patches a control model into the denoiser"));
        control.or_else(|| {
            p.model.patches.iter().find_map(|patch| match patch {
                Patch::Merge(merge) => Some((&merge.node, "merges two checkpoints' denoisers")),
                Patch::Motion(motion) => {
                    Some((&motion.node, "injects a motion module into the denoiser"))
                }
                Patch::Lora(_) => None,
            })
        })
    });
    if let Some((node, what)) = merged {
        return Err(g.refuse(
            node,
            None,
            format!("{what}, but the target package's models exist and are not the patched weights"),
            "lower into a package folder without a document, whose denoiser is exported from the patched weights",
        ));
    }
    let first = chain
        .stages
        .iter()
        .find_map(|p| p.model.loras().first().copied());
    match first {
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

/// Each stage's model component prefix: the first model's plain, another
/// checkpoint's (or the same one's with other patches) `model<n>_`.
pub(super) fn model_prefixes(chain: &Chain) -> Vec<String> {
    let mut models = BTreeMap::new();
    chain
        .stages
        .iter()
        .map(|plan| {
            numbered(&mut models, model_key(plan), |n| match n {
                1 => String::new(),
                n => format!("model{n}_"),
            })
        })
        .collect()
}

/// The prefix of each stage's text encoders: that of the first stage
/// whose prompts are encoded by the same loader with the same patches (a
/// stage whose own denoiser is patched apart from the first's, as Wan
/// 2.2's two experts, shares the first's text encoder instead of naming a
/// copy); a new one takes its stage's model prefix, or, where another text
/// encoder has that, a prefix of its own.
pub(super) fn encoder_prefixes(chain: &Chain) -> Vec<String> {
    let models = model_prefixes(chain);
    let mut named: BTreeMap<String, String> = BTreeMap::new();
    chain
        .stages
        .iter()
        .zip(&models)
        .map(|(plan, model)| {
            let key = encoder_key(plan);
            if let Some(prefix) = named.get(&key) {
                return prefix.clone();
            }
            // Another text encoder beside the same denoiser takes a prefix
            // no model has.
            let taken = |p: &String| named.values().any(|t| t == p);
            let prefix = match taken(model) {
                false => model.clone(),
                true => (2..)
                    .map(|n| format!("model{n}_"))
                    .find(|p| !taken(p) && !models.contains(p))
                    .unwrap_or_default(),
            };
            named.insert(key, prefix.clone());
            prefix
        })
        .collect()
}

/// The key a stage's text encoders are named by: their loader and the
/// LoRAs that patch them, in order.
fn encoder_key(plan: &Plan) -> String {
    let patches: Vec<&str> = plan
        .model
        .loras()
        .into_iter()
        .filter(|lora| text_strength(plan, lora).is_some())
        .map(|lora| lora.node.as_str())
        .collect();
    format!("{}|{}", plan.positive.loader, patches.join(","))
}

/// The key a stage's model components are named by: the checkpoint loader
/// and, in order, the patches that change its models (with their values,
/// which the node ids fix), then its control patch's weights.
fn model_key(plan: &Plan) -> String {
    let mut patches: Vec<String> = plan
        .model
        .patches
        .iter()
        .filter_map(|patch| match patch {
            Patch::Lora(lora) if patches_any(plan, lora) => Some(match text_strength(plan, lora) {
                Some(_) => format!("{}+clip", lora.node),
                None => lora.node.clone(),
            }),
            Patch::Lora(_) => None,
            Patch::Merge(merge) => Some(merge.node.clone()),
            Patch::Motion(motion) => Some(motion.node.clone()),
        })
        .collect();
    if let Some(control) = &plan.model.control_patch {
        patches.push(format!("{}@{}", control.node, control.loader));
    }
    format!("{}|{}", plan.model.loader, patches.join(","))
}

/// What the new package's models carry: for each model a chain of stages
/// names, its patches in the order they apply; and each LoRA that changes
/// nothing.
pub(super) fn merged_notes(chain: &Chain) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut notes = Vec::new();
    let encoders = encoder_prefixes(chain);
    for ((plan, prefix), encoder) in chain.stages.iter().zip(model_prefixes(chain)).zip(encoders) {
        if !seen.insert(prefix.clone()) {
            continue;
        }
        // The stage's text encoders, where it names them.
        let own = (encoder == prefix).then_some(&plan.positive.text);
        let mut encoders = false;
        let patches: Vec<String> = plan
            .model
            .patches
            .iter()
            .filter_map(|patch| match patch {
                Patch::Lora(lora) if patches_any(plan, lora) => {
                    let text = text_strength(plan, lora);
                    encoders |= text.is_some();
                    Some(format!(
                        "LoRA '{}' (node {}) at strength {}{}",
                        lora.name,
                        lora.node,
                        shown(lora.strength_model),
                        text.map_or(String::new(), |s| format!(
                            " ({} on the text encoder)",
                            shown(s)
                        ))
                    ))
                }
                Patch::Lora(_) => None,
                Patch::Merge(merge) => Some(format!(
                    "node {}'s denoiser merged in by ModelMergeSimple node {} at ratio {} (the share of the model so far)",
                    merge.other,
                    merge.node,
                    shown(merge.ratio)
                )),
                Patch::Motion(motion) => Some(format!(
                    "AnimateDiff motion module '{}' (node {}) at motion scale {}, injected as AnimateDiff-Evolved does (the checkpoint's GroupNorm layers normalising over all frames for {} motion models), so that it sees a run's rows as one video's frames (run them together, neither split nor merged with another run's)",
                    motion.name,
                    motion.node,
                    shown(motion.scale),
                    match motion.v2_properly {
                        true => "v1",
                        false => "v1 and v2",
                    }
                )),
            })
            .collect();
        let loader = &plan.model.loader;
        let beside_patched = chain
            .stages
            .iter()
            .any(|p| p.model.loader == *loader && patched(p));
        match patches.is_empty() {
            // A second name for a checkpoint's own models (beside a
            // patched one of the same checkpoint): say so.
            true if !prefix.is_empty() && beside_patched => notes.push(format!(
                "{} node {loader}'s own weights",
                models(&prefix, own).0
            )),
            true => {}
            false => {
                let (models, them) = models(&prefix, own.filter(|_| encoders));
                notes.push(format!(
                    "{models} node {loader}'s weights with {}: export {them} with these merged",
                    patches.join(", then ")
                ));
            }
        }
    }
    for lora in idle_loras(chain) {
        notes.push(format!(
            "LoRA '{}' (node {}) changes none of the models (its strengths are 0 where it applies)",
            lora.name, lora.node
        ));
    }
    notes
}

/// The models named with `prefix` ("... is" / "... are") and the pronoun
/// for them: the denoiser, with the text encoders where `encoders` gives
/// the prompt kind they encode.
fn models(prefix: &str, encoders: Option<&Prompt>) -> (String, &'static str) {
    match encoders {
        None | Some(Prompt::Video(_) | Prompt::Lotus | Prompt::Loaded(_)) => {
            (format!("`{prefix}denoiser` is"), "it")
        }
        Some(Prompt::Sdxl { .. }) => (
            format!("`{prefix}denoiser`, `{prefix}text_encoder` and `{prefix}text_encoder_2` are"),
            "them",
        ),
        Some(Prompt::Single(_)) => (
            format!("`{prefix}denoiser` and `{prefix}text_encoder` are"),
            "them",
        ),
    }
}

/// The LoRA loaders that change no model of any stage they are on, once
/// each, in stage order.
fn idle_loras(chain: &Chain) -> Vec<&Lora> {
    let mut seen = BTreeSet::new();
    let mut idle = Vec::new();
    for plan in &chain.stages {
        for lora in plan.model.loras() {
            let patching = chain.stages.iter().any(|p| {
                p.model.loras().iter().any(|l| l.node == lora.node) && patches_any(p, lora)
            });
            if !patching && seen.insert(&lora.node) {
                idle.push(lora);
            }
        }
    }
    idle
}

/// A strength as a person reads it: six decimals at most (UI files carry
/// values such as 1.0000000000000002).
fn shown(strength: f64) -> f64 {
    (strength * 1e6).round() / 1e6
}
