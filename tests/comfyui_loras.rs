//! Model patches (LoRA loaders, `ModelMergeSimple`) lowered into a new
//! package: each is merged into the models the package gets (the
//! denoiser, and the text encoder when a LoRA is on the prompts' CLIP
//! path), so a loader chain's models are components of their own and the
//! notes say which patch at which strength each carries. Into a package
//! with models but no adapters a LoRA is refused (`comfyui_convert`); into
//! one with adapters it is routed (`comfyui_lower`); a merge into one with
//! models is refused.

mod support;

use serde_json::{Value, json};
use std::collections::BTreeSet;
use support::lowering::{
    Expected, assert_refused, assert_refused_for, lora_target, lowered, package_and_run, pattern,
    workflow,
};
use wfstudio_core::comfyui::lower::{self, Target};

/// The components the steps under `step` invoke, at any depth.
fn invoked(step: &Value, found: &mut BTreeSet<String>) {
    match step {
        Value::Object(map) => {
            if let Some(Value::String(c)) = map.get("component") {
                found.insert(c.clone());
            }
            map.values().for_each(|v| invoked(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| invoked(v, found)),
        _ => {}
    }
}

/// Where ONNX Runtime is present: `graph` becomes a package with
/// stand-in models that runs into a picture.
fn makes_a_picture(name: &str, graph: &Value) {
    if !support::runtime_available() {
        return;
    }
    let root = support::lowering::scratch(name);
    let (_, out) = package_and_run(&root, name, graph);
    assert!(out.join("image.png").is_file(), "{name}");
    let _ = std::fs::remove_dir_all(&root);
}

/// The model components (denoisers and text encoders) each top-level
/// sampling loop of `w` invokes, in step order.
fn loop_models(w: &Value) -> Vec<Vec<String>> {
    support::lowering::loops(w)
        .into_iter()
        .map(|s| {
            let mut found = BTreeSet::new();
            invoked(s, &mut found);
            found
                .into_iter()
                .filter(|c| c.ends_with("denoiser") || c.contains("text_encoder"))
                .collect()
        })
        .collect()
}

#[test]
fn a_lora_is_merged_into_the_new_packages_denoiser_and_the_package_runs() {
    let l = lowered(&pattern("lora"), &Target::default());
    assert!(l.document.get("adapters").is_none());
    let w = workflow(&l);
    assert!(
        !w["inputs"]
            .as_object()
            .expect("inputs")
            .keys()
            .any(|k| k.contains("adapter")),
        "no adapter selection inputs"
    );
    assert_eq!(loop_models(w), [["denoiser", "text_encoder"]]);
    assert_eq!(
        l.notes,
        [
            "`denoiser` is node 1's weights with LoRA 'styles/watercolor.safetensors' (node 12) at strength 0.8: export it with these merged"
        ]
    );
    assert!(
        l.provenance
            .iter()
            .any(|(path, nodes)| path == "pipeline.workflow.steps[0]"
                && nodes == &["5", "1", "12"]),
        "{:?}",
        l.provenance
    );

    // On the CLIP path at a strength of its own, the text encoder carries it.
    let mut clip = pattern("lora");
    clip["12"]["inputs"]["strength_clip"] = json!(0.5);
    assert_eq!(
        lowered(&clip, &Target::default()).notes,
        [
            "`denoiser` and `text_encoder` are node 1's weights with LoRA 'styles/watercolor.safetensors' (node 12) at strength 0.8 (0.5 on the text encoder): export them with these merged"
        ]
    );
    makes_a_picture("lora-merged", &clip);
}

/// Two stages' models, each its own.
const TWO_MODELS: [[&str; 2]; 2] = [
    ["denoiser", "text_encoder"],
    ["model2_denoiser", "model2_text_encoder"],
];

/// Two stages' denoisers, each its own, and one text encoder, which no
/// LoRA patches: the second stage encodes with the first's.
const TWO_DENOISERS: [[&str; 2]; 2] = [
    ["denoiser", "text_encoder"],
    ["model2_denoiser", "text_encoder"],
];

/// Stage 1 samples through a LoRA on checkpoint 1, stage 2 samples the
/// same checkpoint without it.
fn lora_then_plain(strength: f64) -> Value {
    let mut g = pattern("refiner");
    g["20"] = json!({"class_type": "LoraLoaderModelOnly", "inputs": {"lora_name": "detail.safetensors", "strength_model": strength, "model": ["1", 0]}});
    g["5"]["inputs"]["model"] = json!(["20", 0]);
    g["13"]["inputs"]["model"] = json!(["1", 0]);
    g["13"]["inputs"]["positive"] = json!(["2", 0]);
    g["13"]["inputs"]["negative"] = json!(["3", 0]);
    g["14"]["inputs"]["vae"] = json!(["1", 2]);
    for id in ["10", "11", "12"] {
        g.as_object_mut().map(|m| m.remove(id));
    }
    g
}

#[test]
fn each_set_of_merged_loras_in_a_chain_is_its_own_model() {
    let l = lowered(&lora_then_plain(0.7), &Target::default());
    assert_eq!(loop_models(workflow(&l)), TWO_DENOISERS);
    assert_eq!(
        l.notes[2..],
        [
            "`denoiser` is node 1's weights with LoRA 'detail.safetensors' (node 20) at strength 0.7: export it with these merged",
            "`model2_denoiser` is node 1's own weights"
        ]
    );
    // A LoRA on stage 1's CLIP too: stage 2, encoding through the plain
    // CLIP, has a text encoder of its own.
    let mut clip = lora_then_plain(0.7);
    clip["20"] = json!({"class_type": "LoraLoader", "inputs": {"lora_name": "detail.safetensors", "strength_model": 0.7, "strength_clip": 0.5, "model": ["1", 0], "clip": ["1", 1]}});
    for id in ["2", "3"] {
        clip[id]["inputs"]["clip"] = json!(["20", 1]);
    }
    clip["11"] = json!({"class_type": "CLIPTextEncode", "inputs": {"text": "a lighthouse at dusk", "clip": ["1", 1]}});
    clip["12"] =
        json!({"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["1", 1]}});
    clip["13"]["inputs"]["positive"] = json!(["11", 0]);
    clip["13"]["inputs"]["negative"] = json!(["12", 0]);
    let l = lowered(&clip, &Target::default());
    assert_eq!(loop_models(workflow(&l)), TWO_MODELS);
    assert_eq!(
        l.notes[2..],
        [
            "`denoiser` and `text_encoder` are node 1's weights with LoRA 'detail.safetensors' (node 20) at strength 0.7 (0.5 on the text encoder): export them with these merged",
            "`model2_denoiser` and `model2_text_encoder` are node 1's own weights"
        ]
    );
    makes_a_picture("lora-chain", &lora_then_plain(0.7));

    // At strength 0 the LoRA changes nothing: both stages share the
    // checkpoint's own models.
    let l = lowered(&lora_then_plain(0.0), &Target::default());
    assert_eq!(
        loop_models(workflow(&l)),
        [
            vec!["denoiser", "text_encoder"],
            vec!["denoiser", "text_encoder"]
        ]
    );
    assert_eq!(
        l.notes[2..],
        [
            "LoRA 'detail.safetensors' (node 20) changes none of the models (its strengths are 0 where it applies)"
        ]
    );

    // A LoRA shared by two models is in both notes: stage 2 samples
    // through a second LoRA on top of stage 1's.
    let mut stacked = lora_then_plain(0.7);
    stacked["21"] = json!({"class_type": "LoraLoaderModelOnly", "inputs": {"lora_name": "ink.safetensors", "strength_model": 0.5, "model": ["20", 0]}});
    stacked["13"]["inputs"]["model"] = json!(["21", 0]);
    assert_eq!(
        lowered(&stacked, &Target::default()).notes[2..],
        [
            "`denoiser` is node 1's weights with LoRA 'detail.safetensors' (node 20) at strength 0.7: export it with these merged",
            "`model2_denoiser` is node 1's weights with LoRA 'detail.safetensors' (node 20) at strength 0.7, then LoRA 'ink.safetensors' (node 21) at strength 0.5: export it with these merged"
        ]
    );
}

#[test]
fn a_merged_lora_on_one_prompts_clip_path_only_is_refused() {
    let mut g = pattern("lora");
    g["12"]["inputs"]["strength_clip"] = json!(1.0);
    g["3"]["inputs"]["clip"] = json!(["1", 1]);
    let expected: Expected = (
        "12",
        "LoraLoader",
        Some("clip"),
        "is on one prompt's CLIP path only; its LoRA is merged into the text encoder, which both prompts of a sampler share",
    );
    assert_refused(&g, expected);
}

/// The LoRA pattern with its LoRA replaced by a merge of checkpoint 1's
/// denoiser (share `ratio`) with checkpoint 30's.
fn merged_checkpoints(ratio: f64) -> Value {
    let mut g = pattern("lora");
    g["30"] = json!({"class_type": "UNETLoader", "inputs": {"unet_name": "anime.safetensors", "weight_dtype": "default"}});
    g["12"] = json!({"class_type": "ModelMergeSimple", "inputs": {"model1": ["1", 0], "model2": ["30", 0], "ratio": ratio}});
    g["2"]["inputs"]["clip"] = json!(["1", 1]);
    g["3"]["inputs"]["clip"] = json!(["1", 1]);
    g
}

#[test]
fn a_model_merge_is_merged_into_the_new_packages_denoiser_and_refused_into_existing_models() {
    let l = lowered(&merged_checkpoints(0.25), &Target::default());
    assert_eq!(loop_models(workflow(&l)), [["denoiser", "text_encoder"]]);
    assert_eq!(
        l.notes,
        [
            "`denoiser` is node 1's weights with node 30's denoiser merged in by ModelMergeSimple node 12 at ratio 0.25 (the share of the model so far): export it with these merged"
        ]
    );
    assert!(
        l.provenance
            .iter()
            .any(|(path, nodes)| path == "pipeline.workflow.steps[0]"
                && nodes == &["5", "1", "12", "30"]),
        "{:?}",
        l.provenance
    );
    makes_a_picture("model-merge", &merged_checkpoints(0.25));

    for target in [
        lora_target(),
        Target {
            existing: true,
            ..Target::default()
        },
    ] {
        let expected: Expected = (
            "12",
            "ModelMergeSimple",
            None,
            "merges two checkpoints' denoisers, but the target package's models exist and are not the patched weights",
        );
        assert_refused_for(&merged_checkpoints(0.25), &target, expected);
    }
    let refusal = &lower::lower(&merged_checkpoints(1.5)).expect_err("refused")[0];
    assert_eq!(
        (
            refusal.input.as_deref(),
            refusal.message.as_str(),
            refusal.remedy.as_str()
        ),
        (Some("ratio"), "is 1.5", "use a share from 0 to 1")
    );
    let mut upstream = merged_checkpoints(0.5);
    upstream["12"]["inputs"]["model2"] = json!(["31", 0]);
    upstream["31"] = json!({"class_type": "FreeU", "inputs": {"model": ["30", 0]}});
    let expected: Expected = (
        "31",
        "FreeU",
        None,
        "feeds `model2` of node 12 as its model, which the importer supports only from CheckpointLoaderSimple, UNETLoader or ImageOnlyCheckpointLoader",
    );
    assert_refused(&upstream, expected);
}

/// One denoiser sampled twice with prompts from two CLIP loaders: two
/// text encoders, the second under a prefix no model has.
#[test]
fn two_text_encoders_beside_one_denoiser_get_names_of_their_own() {
    let mut g = lora_then_plain(1.0);
    g.as_object_mut().map(|m| m.remove("20"));
    g["30"] = json!({"class_type": "UNETLoader", "inputs": {"unet_name": "sd_xl_base_1.0.safetensors", "weight_dtype": "default"}});
    g["31"] = json!({"class_type": "CLIPLoader", "inputs": {"clip_name": "clip_a.safetensors", "type": "stable_diffusion", "device": "default"}});
    g["32"] = json!({"class_type": "CLIPLoader", "inputs": {"clip_name": "clip_b.safetensors", "type": "stable_diffusion", "device": "default"}});
    for sampler in ["5", "13"] {
        g[sampler]["inputs"]["model"] = json!(["30", 0]);
    }
    for (encoder, loader) in [("2", "31"), ("3", "31"), ("11", "32"), ("12", "32")] {
        g[encoder] = json!({"class_type": "CLIPTextEncode", "inputs": {"text": format!("prompt {encoder}"), "clip": [loader, 0]}});
    }
    g["13"]["inputs"]["positive"] = json!(["11", 0]);
    g["13"]["inputs"]["negative"] = json!(["12", 0]);
    g["33"] = json!({"class_type": "VAELoader", "inputs": {"vae_name": "sdxl_vae.safetensors"}});
    g["14"]["inputs"]["vae"] = json!(["33", 0]);
    let l = lowered(&g, &Target::default());
    assert_eq!(
        loop_models(workflow(&l)),
        [
            ["denoiser", "text_encoder"],
            ["denoiser", "model2_text_encoder"]
        ]
    );
    // One sampler's prompts share one text encoder.
    let mut mixed = g.clone();
    mixed["5"]["inputs"]["negative"] = json!(["12", 0]);
    assert_refused(
        &mixed,
        (
            "12",
            "CLIPTextEncode",
            Some("clip"),
            "encodes its prompt with node 32's text encoder, but the positive prompt uses node 31's, and the lowering gives a sampler's prompts one",
        ),
    );
}

/// A merged model in one stage and the plain checkpoint in the next are
/// two models.
#[test]
fn a_merged_stage_and_a_plain_one_get_their_own_models() {
    let mut g = lora_then_plain(0.7);
    g["30"] = json!({"class_type": "UNETLoader", "inputs": {"unet_name": "anime.safetensors", "weight_dtype": "default"}});
    g["20"] = json!({"class_type": "ModelMergeSimple", "inputs": {"model1": ["1", 0], "model2": ["30", 0], "ratio": 0.5}});
    let l = lowered(&g, &Target::default());
    assert_eq!(loop_models(workflow(&l)), TWO_DENOISERS);
    assert_eq!(
        l.notes[2..],
        [
            "`denoiser` is node 1's weights with node 30's denoiser merged in by ModelMergeSimple node 20 at ratio 0.5 (the share of the model so far): export it with these merged",
            "`model2_denoiser` is node 1's own weights"
        ]
    );
}
