//! Lotus depth (`LotusConditioning` straight at a `BasicGuider`,
//! `SetFirstSigma`, `DisableNoise`): one unscaled step of Lotus' model on
//! the encoded picture, with its fixed prompt and task; and the depth
//! picture it decodes read by a later stage's ControlNet and
//! `InstructPixToPixConditioning`, as the depth templates chain them.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, default_of, loops, lowered, npy, package_and_run, s, scratch, stage_calls,
    workflow, worst_relative,
};
use wfstudio_core::comfyui::lower::Target;

/// Lotus depth on a loaded picture, inverted into a sink (nodes 1 to 14),
/// as the Lotus template runs it.
fn lotus() -> Value {
    json!({
        "1": {"class_type": "LoadImage", "inputs": {"image": "room.png", "upload": "image"}},
        "2": {"class_type": "VAELoader", "inputs": {"vae_name": "vae-ft-mse-840000-ema-pruned.safetensors"}},
        "3": {"class_type": "UNETLoader", "inputs": {"unet_name": "lotus-depth-d-v1-1.safetensors", "weight_dtype": "default"}},
        "4": {"class_type": "VAEEncode", "inputs": {"pixels": ["1", 0], "vae": ["2", 0]}},
        "5": {"class_type": "LotusConditioning", "inputs": {}},
        "6": {"class_type": "BasicGuider", "inputs": {"model": ["3", 0], "conditioning": ["5", 0]}},
        "7": {"class_type": "BasicScheduler", "inputs": {"scheduler": "normal", "steps": 1, "denoise": 1.0, "model": ["3", 0]}},
        "8": {"class_type": "SetFirstSigma", "inputs": {"sigma": 999.0, "sigmas": ["7", 0]}},
        "9": {"class_type": "KSamplerSelect", "inputs": {"sampler_name": "euler"}},
        "10": {"class_type": "DisableNoise", "inputs": {}},
        "11": {"class_type": "SamplerCustomAdvanced", "inputs": {"noise": ["10", 0], "guider": ["6", 0], "sampler": ["9", 0], "sigmas": ["8", 0], "latent_image": ["4", 0]}},
        "12": {"class_type": "VAEDecode", "inputs": {"samples": ["11", 0], "vae": ["2", 0]}},
        "13": {"class_type": "ImageInvert", "inputs": {"image": ["12", 0]}},
        "14": {"class_type": "PreviewImage", "inputs": {"images": ["13", 0]}},
    })
}

/// SD3.5 Large sampling from the depth picture, controlled by it (the
/// `sd3.5_large_depth` template's shape).
fn controlled_by_depth() -> Value {
    let mut g = lotus();
    for (id, node) in [
        (
            "20",
            json!({"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd3.5_large_fp8_scaled.safetensors"}}),
        ),
        (
            "21",
            json!({"class_type": "CLIPTextEncode", "inputs": {"text": "a plush dragon", "clip": ["20", 1]}}),
        ),
        (
            "22",
            json!({"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["21", 0]}}),
        ),
        (
            "23",
            json!({"class_type": "ControlNetLoader", "inputs": {"control_net_name": "sd3.5_large_controlnet_depth.safetensors"}}),
        ),
        (
            "24",
            json!({"class_type": "ControlNetApplyAdvanced", "inputs": {"strength": 0.7, "start_percent": 0.0, "end_percent": 1.0, "positive": ["21", 0], "negative": ["22", 0], "control_net": ["23", 0], "image": ["13", 0], "vae": ["20", 2]}}),
        ),
        (
            "25",
            json!({"class_type": "VAEEncode", "inputs": {"pixels": ["13", 0], "vae": ["20", 2]}}),
        ),
        (
            "26",
            json!({"class_type": "KSampler", "inputs": {"seed": 5, "steps": 3, "cfg": 4.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0, "model": ["20", 0], "positive": ["24", 0], "negative": ["24", 1], "latent_image": ["25", 0]}}),
        ),
        (
            "27",
            json!({"class_type": "VAEDecode", "inputs": {"samples": ["26", 0], "vae": ["20", 2]}}),
        ),
        (
            "28",
            json!({"class_type": "SaveImage", "inputs": {"filename_prefix": "dragon", "images": ["27", 0]}}),
        ),
    ] {
        g[id] = node;
    }
    g
}

/// Flux with a depth LoRA, its edit picture the depth picture (the
/// `flux_depth_lora_example` template's shape).
fn edited_by_depth() -> Value {
    let mut g = lotus();
    for (id, node) in [
        (
            "30",
            json!({"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev-fp8.safetensors", "weight_dtype": "default"}}),
        ),
        (
            "31",
            json!({"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors", "clip_name2": "t5xxl_fp16.safetensors", "type": "flux", "device": "default"}}),
        ),
        (
            "32",
            json!({"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}}),
        ),
        (
            "33",
            json!({"class_type": "CLIPTextEncode", "inputs": {"text": "a ghost ornament", "clip": ["31", 0]}}),
        ),
        (
            "34",
            json!({"class_type": "FluxGuidance", "inputs": {"guidance": 10.0, "conditioning": ["33", 0]}}),
        ),
        (
            "35",
            json!({"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["33", 0]}}),
        ),
        (
            "36",
            json!({"class_type": "InstructPixToPixConditioning", "inputs": {"positive": ["34", 0], "negative": ["35", 0], "vae": ["32", 0], "pixels": ["13", 0]}}),
        ),
        (
            "37",
            json!({"class_type": "KSampler", "inputs": {"seed": 7, "steps": 2, "cfg": 1.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0, "model": ["30", 0], "positive": ["36", 0], "negative": ["36", 1], "latent_image": ["36", 2]}}),
        ),
        (
            "38",
            json!({"class_type": "VAEDecode", "inputs": {"samples": ["37", 0], "vae": ["32", 0]}}),
        ),
        (
            "39",
            json!({"class_type": "SaveImage", "inputs": {"filename_prefix": "ghost", "images": ["38", 0]}}),
        ),
    ] {
        g[id] = node;
    }
    g
}

/// The top-level step of `w` that writes `value`.
fn producer<'w>(w: &'w Value, value: &str) -> &'w Value {
    w["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| {
            s["outputs"]
                .as_object()
                .is_some_and(|o| o.values().any(|v| v == value))
        })
        .unwrap_or_else(|| panic!("no top-level step writes {value}"))
}

/// The value `step` binds to input `port`.
fn bound<'s>(step: &'s Value, port: &str) -> &'s str {
    step["inputs"][port].as_str().expect("a bound value")
}

#[test]
fn lotus_is_one_unscaled_step_of_its_fixed_prompt_and_task() {
    let l = lowered(&lotus(), &Target::default());
    let w = workflow(&l);
    let schedule = &w["components"]["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(schedule["spacing"], "normal");
    assert_eq!(schedule["first_sigma"], 999.0);
    assert_eq!(schedule["prediction"], "img_to_img");
    assert_eq!(schedule["model_sampling"], "discrete");
    assert_eq!(schedule["steps"], 1);
    // No text: no encoder, no token input.
    let components = w["components"].as_object().expect("components");
    assert!(!components.keys().any(|c| c.contains("text_encoder")));
    assert!(w["inputs"].get("request.input_ids").is_none());
    let prompt = default_of(&l, "package.lotus_prompt")
        .as_array()
        .expect("the prompt's values");
    assert_eq!(prompt.len(), 2 * 1024);
    // ComfyUI's LotusConditioning: its first and last numbers.
    assert_eq!(prompt[0], json!(-0.3134765625));
    assert_eq!(prompt[2047], json!(1.5009765625));
    assert_eq!(
        w["inputs"]["package.lotus_prompt"]["contract"]["shape"],
        json!([1, 2, 1024])
    );
    let task = default_of(&l, "package.lotus_task");
    let expected = [1f32.sin(), 0.0, 1f32.cos(), 1.0];
    assert_eq!(task, &json!(expected));
    assert_eq!(
        components["denoiser"]["ports"]["inputs"]["y"]["shape"],
        json!(["batch", 4])
    );
    let stage = loops(w)[0];
    let calls = stage_calls(stage, "denoiser");
    assert_eq!(calls.len(), 2, "both sides of the BasicGuider");
    for call in calls {
        assert_eq!(bound(call, "encoder_hidden_states"), "package.lotus_prompt");
        assert_eq!(bound(call, "y"), "package.lotus_task");
    }
}

#[test]
fn a_lotus_run_is_its_models_output_on_the_encoded_picture() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("lotus");
    let l = lowered(&lotus(), &Target::default());
    let (dir, out) = package_and_run(&root, "lotus", &lotus());
    let literals = root.join("literals.json");
    let written = json!({
        "prompt": default_of(&l, "package.lotus_prompt"),
        "task": default_of(&l, "package.lotus_task"),
        "first_sigma": 999.0,
    });
    std::fs::write(&literals, written.to_string()).expect("literals");
    let reference = support::workspace().join("tests/reference/lotus_reference.py");
    let expected = root.join("reference.npy");
    let recipe = dir.join("recipes/default.json");
    let timestep = support::python_stdout(
        &python,
        &[
            s(&reference),
            s(&dir),
            s(&recipe),
            s(&literals),
            s(&expected),
        ],
    );
    assert_eq!(timestep.trim(), "999.0");
    let (shape, ours) = npy(&out.join("latent.npy"));
    let (reference_shape, theirs) = npy(&expected);
    assert_eq!(shape, reference_shape);
    let worst = worst_relative(&ours, &theirs);
    eprintln!("Lotus against its numpy reference: {worst:.2e}");
    assert!(worst <= 1e-5, "worst |a - b| / (1 + |b|) = {worst}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_controlnet_reads_the_depth_picture_an_earlier_stage_decodes() {
    let l = lowered(&controlled_by_depth(), &Target::default());
    let w = workflow(&l);
    // No loaded control picture: it is the Lotus decode, inverted, in 0..1.
    assert!(w["inputs"].get("request.control_image").is_none());
    let stages = loops(w);
    assert_eq!(stages.len(), 2);
    let controlnet = stage_calls(stages[1], "model2_controlnet");
    assert_eq!(controlnet.len(), 2);
    let picture = bound(controlnet[0], "image");
    assert_eq!(bound(controlnet[1], "image"), picture);
    let inverted = producer(w, picture);
    assert!(
        inverted["component"]
            .as_str()
            .is_some_and(|c| c.starts_with("image_scale")),
        "{inverted}"
    );
    let unit = producer(w, bound(inverted, "image"));
    assert_eq!(unit["component"], "decoded_pixels");
    let decode = producer(w, bound(unit, "image"));
    assert_eq!(decode["component"], "vae_decoder");
    // The second stage's state names its own channels (SD3's 16 after
    // Lotus' 4).
    let state = w["state"].as_object().expect("state");
    let stage2 = state
        .iter()
        .find(|(name, _)| name.starts_with("stage2"))
        .expect("the second stage's cell")
        .1;
    assert_eq!(stage2["contract"]["shape"][1], "stage2_channels");
    if !support::runtime_available() {
        return;
    }
    let root = scratch("lotus-control");
    let (_, out) = package_and_run(&root, "controlled", &controlled_by_depth());
    assert_eq!(npy(&out.join("latent.npy")).0, vec![1, 16, 8, 8]);
    assert_eq!(npy(&out.join("dragon.npy")).0, vec![1, 3, 64, 64]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_edit_node_takes_the_depth_picture_an_earlier_stage_decodes() {
    let l = lowered(&edited_by_depth(), &Target::default());
    let w = workflow(&l);
    let stages = loops(w);
    let encode = stages[1]["setup"]
        .as_array()
        .expect("setup")
        .iter()
        .find(|s| s["outputs"]["latent"] == "stage2.edit.latent")
        .expect("the edit picture's encode");
    assert_eq!(encode["component"], "model2_vae_encoder");
    let unit = producer(w, bound(producer(w, bound(encode, "image")), "image"));
    assert_eq!(unit["component"], "decoded_pixels");
    let notes = l.notes.join("\n");
    assert!(
        notes.contains("node 36 (InstructPixToPixConditioning) attaches its picture (the decode of node 12, through ImageInvert node 13) to both prompts"),
        "{notes}"
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("lotus-edit");
    let (_, out) = package_and_run(&root, "edited", &edited_by_depth());
    assert_eq!(npy(&out.join("latent.npy")).0, vec![1, 16, 8, 8]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn two_lotus_conditionings_are_one_prompt() {
    let mut two = lotus();
    two["15"] = json!({"class_type": "LotusConditioning", "inputs": {}});
    two["6"] = json!({"class_type": "CFGGuider", "inputs": {"cfg": 1.0, "model": ["3", 0], "positive": ["5", 0], "negative": ["15", 0]}});
    let l = lowered(&two, &Target::default());
    let calls = stage_calls(loops(workflow(&l))[0], "denoiser");
    assert_eq!(calls.len(), 2, "both sides of the CFGGuider");
    assert!(
        calls
            .iter()
            .all(|c| bound(c, "encoder_hidden_states") == "package.lotus_prompt")
    );
}

#[test]
fn lotus_prompts_on_other_models_or_beside_text_are_refused() {
    let mut other = lotus();
    other["3"]["inputs"]["unet_name"] = json!("sd21.safetensors");
    assert_refused(
        &other,
        (
            "5",
            "LotusConditioning",
            None,
            "conditions node 3's model, which is not Lotus' by its file name (a UNETLoader's holding 'lotus'), and the lowering knows Lotus' sampling only so",
        ),
    );
    // Lotus' model with text prompts: ComfyUI would sample it as Lotus
    // without its task.
    let mut texts = lotus();
    texts["15"] = json!({"class_type": "CLIPLoader", "inputs": {"clip_name": "clip_h.safetensors", "type": "stable_diffusion", "device": "default"}});
    texts["16"] =
        json!({"class_type": "CLIPTextEncode", "inputs": {"text": "a room", "clip": ["15", 0]}});
    texts["6"]["inputs"]["conditioning"] = json!(["16", 0]);
    assert_refused(
        &texts,
        (
            "3",
            "UNETLoader",
            None,
            "loads Lotus' model ('lotus-depth-d-v1-1.safetensors'), which node 16's text conditions; ComfyUI samples it with its own task, and the lowering gives it only its own prompt (LotusConditioning)",
        ),
    );
    // SetFirstSigma of a schedule its scheduler cuts.
    let mut cut = lotus();
    cut["7"]["inputs"]["denoise"] = json!(0.5);
    cut["7"]["inputs"]["steps"] = json!(2);
    assert_refused(
        &cut,
        (
            "7",
            "BasicScheduler",
            Some("denoise"),
            "cuts the schedule whose first sigma node 8 (SetFirstSigma) sets to denoise 0.5; the lowering sets the first sigma of whole schedules",
        ),
    );
    // After FlipSigmas: SetFirstSigma reads only a scheduler node.
    let mut flipped = lotus();
    flipped["15"] = json!({"class_type": "FlipSigmas", "inputs": {"sigmas": ["7", 0]}});
    flipped["8"]["inputs"]["sigmas"] = json!(["15", 0]);
    let refusals = wfstudio_core::comfyui::lower::lower(&flipped).expect_err("refused");
    assert_eq!(
        (refusals[0].node.as_str(), refusals[0].class.as_str()),
        ("15", "FlipSigmas")
    );
    // An upscale model on a ControlNet's picture.
    let mut upscaled = controlled_by_depth();
    upscaled["40"] =
        json!({"class_type": "UpscaleModelLoader", "inputs": {"model_name": "4x.pth"}});
    upscaled["41"] = json!({"class_type": "ImageUpscaleWithModel", "inputs": {"upscale_model": ["40", 0], "image": ["12", 0]}});
    upscaled["24"]["inputs"]["image"] = json!(["41", 0]);
    assert_refused(
        &upscaled,
        (
            "41",
            "ImageUpscaleWithModel",
            None,
            "runs an upscale model on the picture ControlNet node 24 reads, which the lowering takes from a LoadImage or a decode, maybe resized",
        ),
    );
    let mut beside = lotus();
    beside["15"] = json!({"class_type": "CLIPLoader", "inputs": {"clip_name": "clip_h.safetensors", "type": "stable_diffusion", "device": "default"}});
    beside["16"] =
        json!({"class_type": "CLIPTextEncode", "inputs": {"text": "", "clip": ["15", 0]}});
    beside["6"] = json!({"class_type": "CFGGuider", "inputs": {"cfg": 1.0, "model": ["3", 0], "positive": ["5", 0], "negative": ["16", 0]}});
    assert_refused(
        &beside,
        (
            "5",
            "LotusConditioning",
            None,
            "gives one prompt Lotus' fixed embedding while node 16 encodes the other; Lotus takes its own prompt on both sides",
        ),
    );
}
