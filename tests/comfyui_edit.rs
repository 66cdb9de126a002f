//! Edit graphs. `InstructPixToPixConditioning`: an edit model's picture
//! rides on the prompts. The lowering encodes the picture once, binds its
//! latent to the denoiser's `concat` input on the prompts that carry it
//! (zeros of its size on a prompt that does not, as ComfyUI fills them),
//! starts sampling from zeros the picture's latent size (a resized
//! picture's), and refuses what it cannot pair. `InpaintModelConditioning` (Flux fill, inpainting
//! checkpoints): the picture greyed under the mask and the mask ride on
//! the prompts, sampling starts from the encoded picture, maybe masked.
//! `DualCFGGuider` (CosXL edit's guider): a third prompt and a combine of
//! the three estimates, checked against its formulas.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, component_only, denoiser_bindings, empty_latent, lowered, npy, package_and_run,
    pattern, run_policy_alone, s, scratch, setup_calls, tensor, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// The edit pattern: CosXL-edit style, both prompts through node 4, the
/// sampler starting from node 4's latent.
fn graph() -> Value {
    pattern("edit")
}

#[test]
fn the_edit_picture_is_encoded_once_and_taken_beside_the_sample() {
    let l = lowered(&graph(), &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["components"]["denoiser"]["ports"]["inputs"]["concat"]["shape"],
        json!(["batch", "channels", "latent_height", "latent_width"])
    );
    // The picture's latent once, for the prompts; the start latent is
    // zeros of its size (the latent shape comes from the picture).
    let setup = &w["steps"][0]["setup"];
    let encodes: Vec<&Value> = setup
        .as_array()
        .expect("setup")
        .iter()
        .filter(|s| s["component"] == "vae_encoder")
        .collect();
    assert_eq!(encodes.len(), 1);
    assert_eq!(encodes[0]["inputs"], json!({"image": "request.image"}));
    assert_eq!(encodes[0]["outputs"], json!({"latent": "edit.latent"}));
    let empty = setup.as_array().expect("setup").iter();
    assert_eq!(
        empty.filter(|s| s["component"] == "empty_latent").count(),
        1
    );
    assert_eq!(
        w["components"]["latent_row_shape"]["contract"]["parameters"]["from"],
        "image"
    );
    assert_eq!(
        denoiser_bindings(w, "concat"),
        [
            ("denoiser.unconditional".to_string(), json!("edit.latent")),
            ("denoiser.conditional".to_string(), json!("edit.latent")),
        ]
    );
    assert_eq!(
        l.notes,
        [
            "node 4 (InstructPixToPixConditioning) attaches its picture (request.image) to both prompts: the denoiser takes the picture's latent as input `concat` beside the sample, so an edit model takes those channels appended to its input (ComfyUI gives them only to a model with the extra input channels)"
        ]
    );

    // A negative prompt that bypasses the node takes zeros in its place:
    // the start latent, which is zeros of the picture latent's size.
    let mut plain_negative = graph();
    plain_negative["5"]["inputs"]["negative"] = json!(["3", 0]);
    let l = lowered(&plain_negative, &Target::default());
    assert_eq!(
        denoiser_bindings(workflow(&l), "concat"),
        [
            ("denoiser.unconditional".to_string(), json!("latent.source")),
            ("denoiser.conditional".to_string(), json!("edit.latent")),
        ]
    );
    assert!(l.notes[0].ends_with("to the positive prompt (the negative takes zeros in its place): the denoiser takes the picture's latent as input `concat` beside the sample, so an edit model takes those channels appended to its input (ComfyUI gives them only to a model with the extra input channels)"));
}

#[test]
fn an_edit_package_runs_and_its_result_follows_the_picture() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("edit");
    let (dir, out) = package_and_run(&root, "edit", &graph());
    let (shape, first) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [1, 4, 8, 8]);
    assert!(first.iter().all(|v| v.is_finite()));
    // The same picture again gives the same latent; another picture,
    // another latent (the denoiser reads it at every call).
    let rerun = |picture: Option<f32>, name: &str| {
        let out = root.join(name);
        let mut recipe: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("recipes/default.json")).expect("recipe"),
        )
        .expect("JSON");
        if let Some(grey) = picture {
            recipe["inputs"]["request.image"]["data"] = json!(vec![grey; 3 * 64 * 64]);
        }
        let file = root.join(format!("{name}.json"));
        std::fs::write(&file, recipe.to_string()).expect("recipe");
        let args = ["run", s(&dir), "--recipe", s(&file), "--out", s(&out)];
        let (code, stdout, stderr) = support::run_wfstudio(&args);
        assert_eq!(code, 0, "{stdout}{stderr}");
        npy(&out.join("latent.npy")).1
    };
    assert_eq!(rerun(None, "again"), first);
    let grey = rerun(Some(0.5), "grey");
    let dark = rerun(Some(0.1), "dark");
    assert_ne!(grey, first);
    assert_ne!(grey, dark);
    let _ = std::fs::remove_dir_all(&root);
}

/// A resized edit picture (HiDream E1's `ImageScaleToTotalPixels`, by
/// area) is resized once, cut to whole multiples of 8 as the node crops,
/// and that picture is both the edit latent's and the start latent's size.
#[test]
fn a_resized_edit_picture_is_resized_once_for_the_prompts_and_the_start() {
    let mut g = graph();
    g["9"] = json!({"class_type": "ImageScaleToTotalPixels", "inputs": {"upscale_method": "area", "megapixels": 0.01, "image": ["8", 0]}});
    g["4"]["inputs"]["pixels"] = json!(["9", 0]);
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["components"]["input_scale"]["contract"]["parameters"],
        json!({"size": "total_pixels", "pixels": 10485, "method": "area", "multiple": 8})
    );
    let setup = w["steps"][0]["setup"].as_array().expect("setup");
    let reads = |value: &str| -> Vec<String> {
        setup
            .iter()
            .filter(|s| s["inputs"]["image"] == value)
            .map(|s| s["component"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(reads("request.image"), ["input_scale"]);
    assert_eq!(reads("latent.pixels"), ["latent_row_shape", "vae_encoder"]);
    if !support::runtime_available() {
        return;
    }
    // The 64 x 64 picture to 10485 pixels is 102 x 102, cut to 96 x 96: a
    // 12 x 12 latent.
    let root = scratch("edit-resized");
    let (_, out) = package_and_run(&root, "edit-resized", &g);
    let (shape, latent) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [1, 4, 12, 12]);
    assert!(latent.iter().all(|v| v.is_finite()));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn edits_the_lowering_cannot_pair_are_refused_by_name() {
    // The prompts carry node 4's picture, but sampling starts elsewhere:
    // the picture's latent would not match the sample.
    let mut empty_start = graph();
    empty_start["9"] = json!({"class_type": "EmptyLatentImage", "inputs": {"width": 64, "height": 64, "batch_size": 1}});
    empty_start["5"]["inputs"]["latent_image"] = json!(["9", 0]);
    assert_refused(
        &empty_start,
        (
            "4",
            "InstructPixToPixConditioning",
            None,
            "attaches its picture to the prompts of a sampler that does not start from its latent",
        ),
    );
    // Two pictures on one sampler's prompts.
    let mut second = graph();
    second["10"] = second["4"].clone();
    second["5"]["inputs"]["negative"] = json!(["10", 1]);
    assert_refused(
        &second,
        (
            "10",
            "InstructPixToPixConditioning",
            None,
            "attaches a second picture to the sampler's prompts, beside node 4's",
        ),
    );
    // Outputs read as the wrong kind.
    let mut latent_as_prompt = graph();
    latent_as_prompt["5"]["inputs"]["positive"] = json!(["4", 2]);
    assert_refused(
        &latent_as_prompt,
        (
            "5",
            "KSampler",
            Some("positive"),
            "reads output 2 of node 4, its latent, as a conditioning",
        ),
    );
    let mut prompt_as_latent = graph();
    prompt_as_latent["5"]["inputs"]["latent_image"] = json!(["4", 0]);
    assert_refused(
        &prompt_as_latent,
        (
            "5",
            "KSampler",
            Some("latent_image"),
            "reads output 0 of node 4, a conditioning, as its latent",
        ),
    );
}

/// The edit pattern sampled as the CosXL edit template does: a
/// `DualCFGGuider` with the picture on `cond1` and `cond2` (node 4's
/// outputs) and the plain empty prompt as the negative, `style` if given.
fn dual(style: Option<&str>) -> Value {
    let mut g = graph();
    let k = g["5"]["inputs"].clone();
    g["20"] =
        json!({"class_type": "KSamplerSelect", "inputs": {"sampler_name": k["sampler_name"]}});
    g["21"] = json!({"class_type": "BasicScheduler", "inputs": {"scheduler": k["scheduler"], "steps": k["steps"], "denoise": 1.0, "model": ["1", 0]}});
    g["22"] = json!({"class_type": "DualCFGGuider", "inputs": {"cfg_conds": 5.0, "cfg_cond2_negative": 1.5, "model": ["1", 0], "cond1": ["4", 0], "cond2": ["4", 1], "negative": ["3", 0]}});
    if let Some(style) = style {
        g["22"]["inputs"]["style"] = json!(style);
    }
    g["23"] = json!({"class_type": "RandomNoise", "inputs": {"noise_seed": k["seed"]}});
    g["5"] = json!({"class_type": "SamplerCustomAdvanced", "inputs": {"noise": ["23", 0], "guider": ["22", 0], "sampler": ["20", 0], "sigmas": ["21", 0], "latent_image": ["4", 2]}});
    g
}

#[test]
fn a_dual_cfg_guider_calls_the_denoiser_on_three_prompts_and_combines_them() {
    let l = lowered(&dual(None), &Target::default());
    let w = workflow(&l);
    assert_eq!(
        denoiser_bindings(w, "concat"),
        [
            ("denoiser.middle".to_string(), json!("edit.latent")),
            ("denoiser.unconditional".to_string(), json!("latent.source")),
            ("denoiser.conditional".to_string(), json!("edit.latent")),
        ]
    );
    let combine = w["steps"][0]["steps"]
        .as_array()
        .expect("loop body")
        .iter()
        .find(|s| s["component"] == "dual_guidance_combine")
        .expect("the dual combine");
    assert_eq!(
        combine["inputs"],
        json!({"unconditional": "denoiser.unconditional", "middle": "denoiser.middle", "conditional": "denoiser.conditional", "scale": "request.guidance_scale", "scale_2": "request.guidance_scale_2"})
    );
    assert_eq!(w["inputs"]["request.guidance_scale"]["default"], json!(5.0));
    assert_eq!(
        w["inputs"]["request.guidance_scale_2"]["default"],
        json!(1.5)
    );
    assert_eq!(
        w["components"]["dual_guidance_combine"]["contract"]["parameters"],
        json!({"style": "regular"})
    );
    assert_eq!(
        l.prompts
            .iter()
            .map(|(input, _)| input.as_str())
            .collect::<Vec<_>>(),
        [
            "request.input_ids",
            "request.negative_input_ids",
            "request.middle_input_ids"
        ]
    );
    assert_eq!(
        l.notes,
        [
            "DualCFGGuider (regular style): its middle prompt (cond2) is request.middle_input_ids, cfg_conds request.guidance_scale and cfg_cond2_negative request.guidance_scale_2",
            "node 4 (InstructPixToPixConditioning) attaches its picture (request.image) to the positive and middle prompts (the negative takes zeros in its place): the denoiser takes the picture's latent as input `concat` beside the sample, so an edit model takes those channels appended to its input (ComfyUI gives them only to a model with the extra input channels)",
        ]
    );
    let nested = lowered(&dual(Some("nested")), &Target::default());
    assert_eq!(
        workflow(&nested)["components"]["dual_guidance_combine"]["contract"]["parameters"],
        json!({"style": "nested"})
    );
    if support::runtime_available() {
        let root = scratch("dual-cfg");
        let (_, out) = package_and_run(&root, "dual", &dual(None));
        let (shape, latent) = npy(&out.join("latent.npy"));
        assert_eq!(shape, [1, 4, 8, 8]);
        assert!(latent.iter().all(|v| v.is_finite()));
        let _ = std::fs::remove_dir_all(&root);
    }
}

#[test]
fn the_dual_combine_policy_follows_both_styles_formulas() {
    if !support::runtime_available() {
        return;
    }
    let shape = [2, 4, 3, 5];
    let (negative, negative_text) = tensor(shape, 1);
    let (middle, middle_text) = tensor(shape, 2);
    let (positive, positive_text) = tensor(shape, 3);
    let (s1, s2) = ([5.0f32, 2.5], [1.5f32, 0.75]);
    let root = scratch("dual-combine");
    for (style, nested) in [("regular", false), ("nested", true)] {
        let document = lowered(&dual(Some(style)), &Target::default()).document;
        let component = &document["pipeline"]["workflow"]["components"]["dual_guidance_combine"];
        let policies = wfstudio_core::comfyui::synth::policies(&document).expect("synthesized");
        let (_, bytes) = policies
            .iter()
            .find(|(n, _)| n == "dual_guidance_combine")
            .expect("the dual combine");
        let dir = root.join(style);
        std::fs::create_dir_all(dir.join("policies")).expect("mkdir");
        std::fs::write(dir.join("policies/dual_guidance_combine.onnx"), bytes).expect("write");
        std::fs::write(
            dir.join("inference_metadata.json"),
            component_only("dual_guidance_combine", component).to_string(),
        )
        .expect("write");
        let out = dir.join("out");
        let scale = |v: [f32; 2]| json!({"dtype": "float32", "shape": [2], "data": v}).to_string();
        let (code, stdout, stderr) = support::run_wfstudio(&[
            "run",
            s(&dir),
            "--input",
            &format!("unconditional={negative_text}"),
            "--input",
            &format!("middle={middle_text}"),
            "--input",
            &format!("conditional={positive_text}"),
            "--input",
            &format!("scale={}", scale(s1)),
            "--input",
            &format!("scale_2={}", scale(s2)),
            "--out",
            s(&out),
        ]);
        assert_eq!(code, 0, "{stdout}{stderr}");
        let (got_shape, ours) = npy(&out.join("estimate.npy"));
        assert_eq!(got_shape, shape);
        let row = negative.len() / 2;
        for (i, got) in ours.iter().enumerate() {
            let (n, m, p) = (negative[i], middle[i], positive[i]);
            let (a, b) = (s1[i / row], s2[i / row]);
            // ComfyUI's Guider_DualCFG.predict_noise, per style.
            let want = if nested {
                n + b * ((m + a * (p - m)) - n)
            } else {
                (n + (m - n) * b) + (p - m) * a
            };
            assert!(
                (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
                "{style} {i}: {got} vs {want}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn dual_cfg_guiders_the_lowering_cannot_make_are_refused_by_name() {
    assert_refused(
        &dual(Some("crossed")),
        (
            "22",
            "DualCFGGuider",
            Some("style"),
            "is 'crossed', not regular or nested",
        ),
    );
    let mut cfg_pp = dual(None);
    cfg_pp["20"]["inputs"]["sampler_name"] = json!("euler_cfg_pp");
    assert_refused(
        &cfg_pp,
        (
            "20",
            "KSamplerSelect",
            Some("sampler_name"),
            "uses the CFG++ sampler 'euler_cfg_pp' under a DualCFGGuider, whose three estimates give no single unconditional one to step along",
        ),
    );
    let mut guided = dual(None);
    guided["24"] = json!({"class_type": "FluxGuidance", "inputs": {"guidance": 3.5, "conditioning": ["2", 0]}});
    guided["4"]["inputs"]["positive"] = json!(["24", 0]);
    assert_refused(
        &guided,
        (
            "22",
            "DualCFGGuider",
            None,
            "guides three prompts, one with a FluxGuidance, which the lowering gives a positive and negative pair only",
        ),
    );
}

/// The edit pattern with node 4 an `InpaintModelConditioning` on the
/// loaded picture and its mask, `noise_mask` as given.
fn inpaint(noise_mask: bool) -> Value {
    let mut g = graph();
    g["4"]["class_type"] = json!("InpaintModelConditioning");
    g["4"]["inputs"]["mask"] = json!(["8", 1]);
    g["4"]["inputs"]["noise_mask"] = json!(noise_mask);
    g
}

#[test]
fn an_inpainting_conditioning_gives_the_denoiser_the_greyed_picture_and_the_mask() {
    for noise_mask in [true, false] {
        let l = lowered(&inpaint(noise_mask), &Target::default());
        let w = workflow(&l);
        let setup = setup_calls(w);
        let has = |component: &str, inputs: Value, outputs: Value| {
            setup.contains(&(component.to_string(), inputs, outputs))
        };
        // Sampling starts from the picture; the prompts carry it greyed
        // under the mask.
        assert!(has(
            "vae_encoder",
            json!({"image": "request.image"}),
            json!({"latent": "latent.source"})
        ));
        assert!(has(
            "inpaint_pixels",
            json!({"image": "request.image", "mask": "request.mask"}),
            json!({"pixels": "edit.pixels"})
        ));
        assert!(has(
            "vae_encoder",
            json!({"image": "edit.pixels"}),
            json!({"latent": "edit.latent"})
        ));
        assert_eq!(
            setup.iter().any(|(c, _, _)| c == "latent_mask"),
            noise_mask,
            "noise_mask {noise_mask}"
        );
        let calls: Vec<Value> = w["steps"][0]["steps"]
            .as_array()
            .expect("loop body")
            .iter()
            .filter(|s| s["component"] == "denoiser")
            .map(|s| json!([s["inputs"]["concat"], s["inputs"]["concat_mask"]]))
            .collect();
        let both = json!(["edit.latent", "request.mask"]);
        assert_eq!(calls, [both.clone(), both]);
        assert_eq!(
            w["components"]["denoiser"]["ports"]["inputs"]["concat_mask"]["shape"],
            json!(["batch", 1, "height", "width"])
        );
        assert_eq!(
            l.notes,
            [
                "node 4 (InpaintModelConditioning) attaches its picture (request.image), greyed under the mask (request.mask), and the mask to both prompts: the denoiser takes the greyed picture's latent as input `concat` and the mask as `concat_mask` beside the sample, so an inpainting model takes those channels appended to its input (ComfyUI gives them only to a model with the extra input channels: for a plain checkpoint, use VAEEncodeForInpaint or SetLatentNoiseMask instead)"
            ]
        );
    }
}

#[test]
fn an_inpainting_package_runs_and_its_result_follows_the_mask() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("inpaint-model");
    // Without a noise mask the mask reaches the result only through the
    // denoiser's concat inputs.
    let (dir, out) = package_and_run(&root, "inpaint", &inpaint(false));
    let (shape, first) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [1, 4, 8, 8]);
    let mut recipe: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("recipes/default.json")).expect("recipe"),
    )
    .expect("JSON");
    let mask = &mut recipe["inputs"]["request.mask"]["data"];
    let masked: Vec<f32> = mask
        .as_array()
        .expect("mask data")
        .iter()
        .map(|v| 1.0 - v.as_f64().unwrap_or_default() as f32)
        .collect();
    *mask = json!(masked);
    let file = root.join("inverted.json");
    std::fs::write(&file, recipe.to_string()).expect("recipe");
    let inverted = root.join("inverted");
    let (code, stdout, stderr) =
        support::run_wfstudio(&["run", s(&dir), "--recipe", s(&file), "--out", s(&inverted)]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_ne!(npy(&inverted.join("latent.npy")).1, first);
    let _ = package_and_run(&root, "inpaint-noise-mask", &inpaint(true));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn inpainting_conditionings_the_lowering_cannot_make_are_refused_or_noted() {
    // The inpainting model's picture and mask on one prompt only.
    let mut one_prompt = inpaint(true);
    one_prompt["5"]["inputs"]["negative"] = json!(["3", 0]);
    assert_refused(
        &one_prompt,
        (
            "4",
            "InpaintModelConditioning",
            None,
            "attaches its picture and mask to some of the sampler's prompts only; the lowering gives an inpainting model's to every prompt",
        ),
    );
    // DifferentialDiffusion reshapes a noise mask each step: refused over
    // one on this SD model (not a flow model), a no-op (noted) without.
    let masked = |noise_mask: bool| {
        let mut g = inpaint(noise_mask);
        g["9"] = json!({"class_type": "DifferentialDiffusion", "inputs": {"model": ["1", 0]}});
        g["5"]["inputs"]["model"] = json!(["9", 0]);
        g
    };
    assert_refused(
        &masked(true),
        (
            "9",
            "DifferentialDiffusion",
            None,
            "reshapes the latent's noise mask at every step, which the lowering builds on flow-matching models only (their timesteps are sigmas times a constant)",
        ),
    );
    let l = lowered(&masked(false), &Target::default());
    assert_eq!(
        l.notes[0],
        "node 9 (DifferentialDiffusion) changes nothing here: it reshapes a latent's noise mask at every step, and this sampler's latent has none"
    );
}

/// Mage-Flow's text-to-image template, small (the `mage` pattern): one
/// `TextEncodeMageFlowEdit` gives the positive, the negative (empty: a
/// space) and the latent, 72 x 48 asked for.
fn mage() -> Value {
    let mut g = pattern("mage");
    // A height of 0: ComfyUI's 1024 without a picture.
    g["4"]["inputs"]["height"] = json!(0);
    g
}

#[test]
fn mage_flow_s_encoder_gives_both_prompts_and_its_latent() {
    let l = lowered(&mage(), &Target::default());
    assert_eq!(
        l.prompts,
        [
            (
                "request.input_ids".to_string(),
                "a lighthouse at dusk".to_string()
            ),
            ("request.negative_input_ids".to_string(), " ".to_string())
        ]
    );
    // 72 floors to 64; a height of 0 is ComfyUI's 1024 without a picture;
    // Mage's latent: 128 channels, 16 pixels a cell.
    assert_eq!(empty_latent(&l), [64, 1024, 128, 16]);
    let mut negative = mage();
    negative["4"]["inputs"]["negative_prompt"] = json!("blurry");
    let l = lowered(&negative, &Target::default());
    assert_eq!(l.prompts[1].1, "blurry");
    let mut pictured = mage();
    pictured["8"] =
        json!({"class_type": "LoadImage", "inputs": {"image": "a.png", "upload": "image"}});
    pictured["4"]["inputs"]["images.image_1"] = json!(["8", 0]);
    // A written size with a picture (see tests/comfyui_mage_edit.rs).
    assert_refused(
        &pictured,
        (
            "4",
            "TextEncodeMageFlowEdit",
            Some("width"),
            "sizes its output other than as its picture's own size (width and height both 0, or both read from one GetImageSize of the picture it is given), and the node stretches the picture to that size; the lowering takes the picture's own size",
        ),
    );
}

/// Flux fill's inpainting template, small: `InpaintModelConditioning` with
/// its noise mask, under `DifferentialDiffusion`, sampled by euler.
fn differential() -> Value {
    json!({
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-fill-dev.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors", "clip_name2": "t5xxl_fp16.safetensors", "type": "flux", "device": "default"}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a red scarf", "clip": ["2", 0]}},
        "5": {"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["4", 0]}},
        "6": {"class_type": "LoadImage", "inputs": {"image": "photo.png", "upload": "image"}},
        "7": {"class_type": "InpaintModelConditioning", "inputs": {"noise_mask": true, "positive": ["4", 0], "negative": ["5", 0], "vae": ["3", 0], "pixels": ["6", 0], "mask": ["6", 1]}},
        "8": {"class_type": "DifferentialDiffusion", "inputs": {"strength": 1.0, "model": ["1", 0]}},
        "9": {"class_type": "KSampler", "inputs": {"seed": 5, "steps": 6, "cfg": 1.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0, "model": ["8", 0], "positive": ["7", 0], "negative": ["7", 1], "latent_image": ["7", 2]}},
        "10": {"class_type": "VAEDecode", "inputs": {"samples": ["9", 0], "vae": ["3", 0]}},
        "11": {"class_type": "SaveImage", "inputs": {"filename_prefix": "fill", "images": ["10", 0]}}
    })
}

#[test]
fn differential_diffusion_keeps_each_steps_cells_at_or_above_its_threshold() {
    let l = lowered(&differential(), &Target::default());
    let w = workflow(&l);
    let blend = &w["components"]["masked_blend"];
    assert_eq!(
        blend["contract"]["parameters"]["differential"],
        "mask >= (sigma - sigma_to) / (sigma_from - sigma_to)"
    );
    let call = w["steps"][0]["steps"]
        .as_array()
        .expect("body")
        .iter()
        .find(|s| s["component"] == "masked_blend")
        .expect("the blend");
    for (port, value) in [
        ("shift", "request.flow_shift"),
        ("first", "diffusion.start_step"),
        ("schedule", "diffusion.schedule"),
        ("step", "diffusion.step"),
    ] {
        assert_eq!(call["inputs"][port], value, "{port}");
    }
    if !support::runtime_available() {
        return;
    }
    // Solved ones over a zero source and zero noise: the blend is the
    // step's binary mask itself.
    // 0.79996 sits between step 1's threshold with Flux's least sigma
    // (about 0.799937) and without it (0.8), or with the shift misread as
    // 1.15 (about 0.799977).
    let (h, w_) = (2usize, 3usize);
    let mask: Vec<f32> = vec![0.0, 0.15, 0.3, 0.55, 0.79996, 1.0];
    let schedule: Vec<f32> = vec![1.0, 0.8, 0.6, 0.35, 0.2, 0.05, 0.0];
    let shift = 3.158_192_f32; // e^1.15, Flux dev's
    let tensor = |shape: &[usize], data: &[f32]| {
        json!({"dtype": "float32", "shape": shape, "data": data}).to_string()
    };
    let latent = |v: f32| tensor(&[1, 2, h, w_], &vec![v; 2 * h * w_]);
    let root = scratch("differential");
    // From the schedule's top, and a window from its second sigma.
    for (first, step) in (0..6usize).map(|s| (0usize, s)).chain([(1, 1), (1, 3)]) {
        let out = run_policy_alone(
            &root,
            &format!("from{first}-step{step}"),
            &l.document,
            "masked_blend",
            &[
                ("solved", latent(1.0)),
                ("source", latent(0.0)),
                ("noise", latent(0.0)),
                ("mask", tensor(&[1, 1, h, w_], &mask)),
                (
                    "step",
                    json!({"dtype": "int64", "shape": [1], "data": [step]}).to_string(),
                ),
                ("schedule", tensor(&[7], &schedule)),
                ("shift", tensor(&[1], &[shift])),
                (
                    "first",
                    json!({"dtype": "int64", "shape": [1], "data": [first]}).to_string(),
                ),
            ],
        );
        let (_, ours) = npy(&out.join("next_state.npy"));
        // ComfyUI: sigma_to is the larger of the run's last sigma and the
        // model's least, Flux's first table entry a t / (1 + (a - 1) t) at
        // t = 1 / 10000.
        let t = 1.0 / 10000.0f64;
        let least = shift as f64 * t / (1.0 + (shift as f64 - 1.0) * t);
        let to = least.max(schedule[6] as f64) as f32;
        let threshold = (schedule[step] - to) / (schedule[first] - to);
        let want: Vec<f32> = mask
            .iter()
            .map(|m| if *m >= threshold { 1.0 } else { 0.0 })
            .collect();
        assert_eq!(
            &ours[..h * w_],
            &want[..],
            "from {first}, step {step}, threshold {threshold}"
        );
        assert_eq!(&ours[h * w_..], &want[..], "step {step}: every channel");
        if (first, step) == (0, 1) {
            assert_eq!(ours[4], 1.0, "0.79996 is kept at step 1");
        }
    }
}

#[test]
fn differential_diffusion_the_lowering_cannot_make_exactly_is_refused() {
    let mut sampler = differential();
    sampler["9"]["inputs"]["sampler_name"] = json!("dpmpp_2m");
    assert_refused(
        &sampler,
        (
            "8",
            "DifferentialDiffusion",
            None,
            "reshapes the latent's noise mask at every step, which the lowering builds with sampler euler only (one model call a step, no history: the step's mask applied after the step is ComfyUI's blend), not dpmpp_2m",
        ),
    );
    let mut weak = differential();
    weak["8"]["inputs"]["strength"] = json!(0.5);
    assert_refused(
        &weak,
        (
            "8",
            "DifferentialDiffusion",
            Some("strength"),
            "is 0.5: below 1 the mask of each step blends the thresholded mask with the mask itself, which the lowering does not build yet",
        ),
    );
    let mut sd15 = pattern("inpaint");
    let sampler_id = sd15
        .as_object()
        .expect("graph")
        .iter()
        .find(|(_, n)| n["class_type"] == "KSampler")
        .map(|(id, n)| (id.clone(), n["inputs"]["model"].clone()))
        .expect("a sampler");
    sd15["90"] = json!({"class_type": "DifferentialDiffusion", "inputs": {"model": sampler_id.1}});
    sd15[&sampler_id.0]["inputs"]["model"] = json!(["90", 0]);
    assert_refused(
        &sd15,
        (
            "90",
            "DifferentialDiffusion",
            None,
            "reshapes the latent's noise mask at every step, which the lowering builds on flow-matching models only (their timesteps are sigmas times a constant)",
        ),
    );
}
