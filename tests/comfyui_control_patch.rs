//! A control model patched into the denoiser (`QwenImageDiffsynthControlnet`
//! with a `ModelPatchLoader`): the control picture, through the graph's
//! Canny, resized by area with a centre crop to the latent's size in
//! pixels and encoded by the VAE, is every denoiser call's
//! `control_latent`, beside the strength; the resize equals the
//! independent reference's area resize.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, pattern, run_policy_alone, scratch, setup_calls, workflow,
};
use wfstudio_core::comfyui::lower::Target;

#[test]
fn the_control_picture_is_encoded_once_and_every_denoiser_call_takes_it() {
    let l = lowered(&pattern("control-patch"), &Target::default());
    let w = workflow(&l);
    let steps = setup_calls(w);
    let at = |component: &str| {
        steps
            .iter()
            .position(|(c, _, _)| c == component)
            .unwrap_or_else(|| panic!("no {component} step"))
    };
    // The Canny of the loaded picture, its resize to the noise's size,
    // then the encode, after the noise is drawn.
    assert!(at("latent_noise") < at("patch_picture"));
    assert!(at("patch_picture") < at("patch_scale"));
    assert!(at("patch_scale") < at("vae_encoder"));
    assert_eq!(
        steps[at("patch_picture")].1,
        json!({"image": "request.image"})
    );
    assert_eq!(
        steps[at("patch_scale")].1,
        json!({"image": "patch.pixels", "like": "diffusion.noise"})
    );
    assert_eq!(
        steps[at("vae_encoder")].2,
        json!({"latent": "patch.latent"})
    );
    assert_eq!(
        w["components"]["patch_scale"]["contract"]["parameters"],
        json!({"size": "latent", "scale": 8, "method": "area", "crop": "center"})
    );
    assert_eq!(
        w["components"]["patch_picture"]["contract"]["parameters"],
        json!({"size": "same", "then": "canny", "canny_low_threshold": 0.1, "canny_high_threshold": 0.2})
    );
    assert_eq!(w["inputs"]["request.patch_strength"]["default"], json!(0.8));
    let denoiser_calls: Vec<&Value> = w["steps"][0]["steps"]
        .as_array()
        .expect("body")
        .iter()
        .filter(|s| s["component"] == "denoiser")
        .collect();
    assert_eq!(denoiser_calls.len(), 2);
    for call in denoiser_calls {
        assert_eq!(call["inputs"]["control_latent"], "patch.latent");
        assert_eq!(call["inputs"]["control_strength"], "request.patch_strength");
    }
    let ports = &w["components"]["denoiser"]["ports"]["inputs"];
    assert_eq!(ports["control_latent"], ports["sample"]);
}

#[test]
fn the_picture_is_resized_by_area_to_the_latents_size_in_pixels() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("control-patch");
    let document = lowered(&pattern("control-patch"), &Target::default()).document;
    let (h, w) = (21usize, 30usize);
    let picture: Vec<f32> = (0..3 * h * w)
        .map(|i| ((i * 7919 % 1013) as f32) / 1012.0)
        .collect();
    // A latent of 2 x 3 cells: 16 x 24 pixels, the picture's centre.
    let like = json!({"dtype": "float32", "shape": [1, 16, 2, 3], "data": vec![0.0f32; 96]});
    let image = json!({"dtype": "float32", "shape": [1, 3, h, w], "data": picture});
    let out = run_policy_alone(
        &root,
        "patch-scale",
        &document,
        "patch_scale",
        &[("image", image.to_string()), ("like", like.to_string())],
    );
    let (shape, ours) = npy(&out.join("scaled.npy"));
    assert_eq!(shape, vec![1, 3, 16, 24]);
    let case = json!({"picture": picture, "channels": 3, "h": h, "w": w, "oh": 16, "ow": 24, "method": "area", "crop": "center"});
    let file = root.join("case.json");
    std::fs::write(&file, case.to_string()).expect("case");
    let script = support::workspace().join("tests/reference/resample_reference.py");
    let printed = support::python_stdout(&python, &[script.as_os_str(), file.as_os_str()]);
    let want: Vec<f32> = serde_json::from_str(&printed).expect("reference values");
    let worst = ours
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    eprintln!("the control picture's area resize against the reference: {worst:.1e}");
    assert!(worst <= 1e-6, "worst difference {worst}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn control_patches_the_lowering_cannot_build_are_refused_by_node() {
    let mut masked = pattern("control-patch");
    masked["17"]["inputs"]["mask"] = json!(["18", 1]);
    assert_refused(
        &masked,
        (
            "17",
            "QwenImageDiffsynthControlnet",
            Some("mask"),
            "gives the control patch an inpainting mask, which the lowering does not build",
        ),
    );
    let mut twice = pattern("control-patch");
    twice["20"] = twice["17"].clone();
    twice["20"]["inputs"]["model"] = json!(["17", 0]);
    twice["5"]["inputs"]["model"] = json!(["20", 0]);
    assert_refused(
        &twice,
        (
            "17",
            "QwenImageDiffsynthControlnet",
            None,
            "is a second control patch on the model path; the lowering builds one",
        ),
    );
}

#[test]
fn a_patch_on_a_video_model_is_refused_and_patched_stages_get_their_own_denoiser() {
    let mut video = pattern("video");
    video["16"] =
        json!({"class_type": "ModelPatchLoader", "inputs": {"name": "control.safetensors"}});
    video["17"] =
        json!({"class_type": "LoadImage", "inputs": {"image": "edges.png", "upload": "image"}});
    video["18"] = json!({"class_type": "QwenImageDiffsynthControlnet", "inputs": {"strength": 1.0, "model": ["13", 0], "model_patch": ["16", 0], "vae": ["15", 0], "image": ["17", 0]}});
    video["5"]["inputs"]["model"] = json!(["18", 0]);
    assert_refused(
        &video,
        (
            "18",
            "QwenImageDiffsynthControlnet",
            None,
            "patches a control model into a video or audio sampler's model; the lowering encodes control pictures for picture samplers only",
        ),
    );
    // A second sampler on the same base model without the patch: its
    // denoiser is another model (the patch's weights are fused).
    let mut two = pattern("control-patch");
    two["30"] = json!({"class_type": "KSampler", "inputs": {"seed": 8, "steps": 3, "cfg": 2.5, "sampler_name": "euler", "scheduler": "simple", "denoise": 0.5, "model": ["13", 0], "positive": ["2", 0], "negative": ["3", 0], "latent_image": ["5", 0]}});
    two["6"]["inputs"]["samples"] = json!(["30", 0]);
    let l = lowered(&two, &Target::default());
    let components = workflow(&l)["components"].as_object().expect("components");
    let denoisers: Vec<&String> = components
        .keys()
        .filter(|k| k.ends_with("denoiser"))
        .collect();
    assert_eq!(denoisers, ["denoiser", "model2_denoiser"]);
    assert!(components["denoiser"]["ports"]["inputs"]["control_latent"].is_object());
    assert!(components["model2_denoiser"]["ports"]["inputs"]["control_latent"].is_null());
}
