//! Outpainting (`ImagePadForOutpaint` into `InpaintModelConditioning` or
//! `VAEEncodeForInpaint`): the stage pads its picture input with grey and
//! makes the pad's mask first, then reads both where it reads a picture
//! and a mask; the mask is ComfyUI's, feathered edge included.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, package_and_run, run_policy_alone, scratch, setup_calls, tensor,
    workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// Flux Fill's outpainting template, small: a picture padded 16 left, 8
/// right and 24 below, feathered over 4 pixels, inpainted.
fn outpaint() -> Value {
    json!({
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-fill-dev.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors", "clip_name2": "t5xxl_fp16.safetensors", "type": "flux", "device": "default"}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "beautiful scenery", "clip": ["2", 0]}},
        "5": {"class_type": "FluxGuidance", "inputs": {"guidance": 30.0, "conditioning": ["4", 0]}},
        "6": {"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["4", 0]}},
        "7": {"class_type": "LoadImage", "inputs": {"image": "photo.png", "upload": "image"}},
        "8": {"class_type": "ImagePadForOutpaint", "inputs": {"left": 16, "top": 0, "right": 8, "bottom": 24, "feathering": 4, "image": ["7", 0]}},
        "9": {"class_type": "InpaintModelConditioning", "inputs": {"noise_mask": false, "positive": ["5", 0], "negative": ["6", 0], "vae": ["3", 0], "pixels": ["8", 0], "mask": ["8", 1]}},
        "10": {"class_type": "KSampler", "inputs": {"seed": 3, "steps": 4, "cfg": 1.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0, "model": ["1", 0], "positive": ["9", 0], "negative": ["9", 1], "latent_image": ["9", 2]}},
        "11": {"class_type": "VAEDecode", "inputs": {"samples": ["10", 0], "vae": ["3", 0]}},
        "12": {"class_type": "SaveImage", "inputs": {"filename_prefix": "outpainted", "images": ["11", 0]}},
    })
}

/// Every value the steps under `step` read.
fn reads(step: &Value, out: &mut Vec<String>) {
    if let Some(inputs) = step["inputs"].as_object() {
        out.extend(
            inputs
                .values()
                .filter_map(Value::as_str)
                .map(str::to_string),
        );
    }
    for list in ["setup", "steps"] {
        for inner in step[list].as_array().into_iter().flatten() {
            reads(inner, out);
        }
    }
}

#[test]
fn the_stage_pads_its_picture_first_and_reads_the_pad_s_picture_and_mask() {
    let l = lowered(&outpaint(), &Target::default());
    let w = workflow(&l);
    let setup = setup_calls(w);
    assert_eq!(
        setup[0],
        (
            "outpaint_pad".to_string(),
            json!({"image": "request.image"}),
            json!({"pixels": "outpaint.pixels", "mask": "outpaint.mask"})
        )
    );
    assert_eq!(
        w["components"]["outpaint_pad"]["contract"]["parameters"],
        json!({"left": 16, "top": 0, "right": 8, "bottom": 24, "feathering": 4})
    );
    assert!(setup.iter().any(|(c, i, _)| c == "inpaint_pixels"
        && *i == json!({"image": "outpaint.pixels", "mask": "outpaint.mask"})));
    // Nothing else reads the picture input, and there is no mask input.
    let mut read = Vec::new();
    for step in w["steps"].as_array().expect("steps") {
        reads(step, &mut read);
    }
    assert_eq!(read.iter().filter(|r| *r == "request.image").count(), 1);
    assert!(!read.iter().any(|r| r == "request.mask"));
    assert!(read.iter().any(|r| r == "outpaint.mask"));
    let inputs: Vec<&String> = w["inputs"].as_object().expect("inputs").keys().collect();
    assert!(inputs.contains(&&"request.image".to_string()));
    assert!(!inputs.contains(&&"request.mask".to_string()));
    assert!(
        l.notes.iter().any(|n| n.contains(
            "attaches its picture (request.image padded with grey by node 8 (16 left, 0 top, 8 right, 24 bottom: outpaint.pixels)), greyed under the mask (the pad's, feathered over 4 pixels: outpaint.mask)"
        )),
        "{:?}",
        l.notes
    );
}

/// ComfyUI's `ImagePadForOutpaint`, as its loops compute it: the picture
/// `[3, h, w]` on grey, and the mask.
fn comfyui_pad(
    picture: &[f32],
    (h, w): (usize, usize),
    [left, top, right, bottom, feathering]: [usize; 5],
) -> (Vec<f32>, Vec<f32>) {
    let (ph, pw) = (h + top + bottom, w + left + right);
    let mut image = vec![0.5f32; 3 * ph * pw];
    for c in 0..3 {
        for y in 0..h {
            for x in 0..w {
                image[(c * ph + y + top) * pw + x + left] = picture[(c * h + y) * w + x];
            }
        }
    }
    let mut mask = vec![1.0f32; ph * pw];
    let mut t = vec![0.0f32; h * w];
    if feathering > 0 && feathering * 2 < h && feathering * 2 < w {
        for i in 0..h {
            for j in 0..w {
                let dt = if top != 0 { i } else { h };
                let db = if bottom != 0 { h - i } else { h };
                let dl = if left != 0 { j } else { w };
                let dr = if right != 0 { w - j } else { w };
                let d = dt.min(db).min(dl).min(dr);
                if d >= feathering {
                    continue;
                }
                let v = (feathering - d) as f32 / feathering as f32;
                t[i * w + j] = v * v;
            }
        }
    }
    for i in 0..h {
        for j in 0..w {
            mask[(i + top) * pw + j + left] = t[i * w + j];
        }
    }
    (image, mask)
}

#[test]
fn the_padded_picture_and_mask_are_comfyui_s() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("outpaint-pad");
    let (h, w) = (12, 20);
    let (picture, text) = tensor([1, 3, h, w], 3);
    // Padded on three sides; on all four; feathering too wide for the
    // picture (none); no feathering.
    let cases = [
        ("three", [16, 0, 8, 24, 4]),
        ("four", [2, 3, 4, 5, 3]),
        ("wide", [8, 8, 8, 8, 6]),
        ("none", [8, 0, 0, 0, 0]),
    ];
    for (name, sides) in cases {
        let mut graph = outpaint();
        for (key, value) in ["left", "top", "right", "bottom", "feathering"]
            .iter()
            .zip(sides)
        {
            graph["8"]["inputs"][*key] = json!(value);
        }
        let l = lowered(&graph, &Target::default());
        let out = run_policy_alone(
            &root,
            name,
            &l.document,
            "outpaint_pad",
            &[("image", text.clone())],
        );
        let (want_image, want_mask) = comfyui_pad(&picture, (h, w), sides);
        let [left, top, right, bottom, _] = sides;
        let (ph, pw) = (h + top + bottom, w + left + right);
        let (shape, image) = npy(&out.join("pixels.npy"));
        assert_eq!(shape, [1, 3, ph, pw], "{name}");
        assert_eq!(image, want_image, "{name}: pixels");
        let (shape, mask) = npy(&out.join("mask.npy"));
        assert_eq!(shape, [1, 1, ph, pw], "{name}");
        let worst = mask
            .iter()
            .zip(&want_mask)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-6, "{name}: mask differs by {worst}");
        let feathered = want_mask.iter().filter(|v| **v > 0.0 && **v < 1.0).count();
        if name == "three" || name == "four" {
            assert!(feathered > 0, "{name}: a feathered edge");
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_outpainting_package_runs_on_the_padded_size() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("outpaint-run");
    let (dir, out) = package_and_run(&root, "outpaint", &outpaint());
    let recipe: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("recipes/default.json")).expect("the default recipe"),
    )
    .expect("JSON");
    let given = &recipe["inputs"]["request.image"]["shape"];
    let (h, w) = (
        given[2].as_u64().expect("height") as usize,
        given[3].as_u64().expect("width") as usize,
    );
    let (shape, _) = npy(&out.join("image.npy"));
    assert_eq!(shape, [1, 3, h + 24, w + 24]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn vae_encode_for_inpaint_reads_the_pad_too() {
    let mut g = outpaint();
    g["9"] = json!({"class_type": "VAEEncodeForInpaint", "inputs": {"pixels": ["8", 0], "vae": ["3", 0], "mask": ["8", 1], "grow_mask_by": 6}});
    g["10"]["inputs"]["positive"] = json!(["5", 0]);
    g["10"]["inputs"]["negative"] = json!(["6", 0]);
    g["10"]["inputs"]["latent_image"] = json!(["9", 0]);
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    let setup = setup_calls(w);
    assert_eq!(setup[0].0, "outpaint_pad");
    let mask = setup
        .iter()
        .find(|(c, _, _)| c == "latent_mask")
        .expect("the noise mask");
    assert_eq!(mask.1["mask"], "outpaint.mask");
    assert!(w["inputs"].get("request.mask").is_none());
    if !support::runtime_available() {
        return;
    }
    let root = scratch("outpaint-encode");
    package_and_run(&root, "encode", &g);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_pad_the_lowering_cannot_follow_is_refused() {
    let mut other = outpaint();
    other["9"]["inputs"]["pixels"] = json!(["7", 0]);
    assert_refused(
        &other,
        (
            "9",
            "InpaintModelConditioning",
            Some("pixels"),
            "reads its mask from node 8 (ImagePadForOutpaint) but not that node's padded picture",
        ),
    );
    // A style embedding of the padded LoadImage: ComfyUI embeds the
    // picture as it is, the stage reads it padded.
    let mut styled = outpaint();
    styled["13"] = json!({"class_type": "StyleModelLoader", "inputs": {"style_model_name": "flux1-redux-dev.safetensors"}});
    styled["14"] = json!({"class_type": "CLIPVisionLoader", "inputs": {"clip_name": "sigclip_vision_patch14_384.safetensors"}});
    styled["15"] = json!({"class_type": "CLIPVisionEncode", "inputs": {"crop": "center", "clip_vision": ["14", 0], "image": ["7", 0]}});
    styled["16"] = json!({"class_type": "StyleModelApply", "inputs": {"strength": 1.0, "strength_type": "multiply", "conditioning": ["5", 0], "style_model": ["13", 0], "clip_vision_output": ["15", 0]}});
    styled["9"]["inputs"]["positive"] = json!(["16", 0]);
    assert_refused(
        &styled,
        (
            "16",
            "StyleModelApply",
            None,
            "embeds for style tokens node 7's picture, which node 8 pads for outpainting; the lowering gives the stage that LoadImage padded",
        ),
    );
    let mut noise = outpaint();
    noise["13"] =
        json!({"class_type": "VAEEncode", "inputs": {"pixels": ["8", 0], "vae": ["3", 0]}});
    noise["14"] = json!({"class_type": "SetLatentNoiseMask", "inputs": {"samples": ["13", 0], "mask": ["8", 1]}});
    noise["10"]["inputs"]["latent_image"] = json!(["14", 0]);
    assert_refused(
        &noise,
        (
            "8",
            "ImagePadForOutpaint",
            None,
            "masks the latent of node 14 (SetLatentNoiseMask) with a pad's mask; the lowering pads the picture an inpainting node reads",
        ),
    );
}
