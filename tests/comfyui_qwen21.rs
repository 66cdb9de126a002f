//! Qwen-Image 2.1 (`TextEncodeQwenImage21`, `QwenImage21Cache`): its
//! family by the model file, latents of 64 channels at 16 pixels a cell
//! (an `EmptyLatentImage`'s cells resized as ComfyUI does), and RGBA
//! pictures from its VAE to the image output.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, empty_latent, lowered, npy, package_and_run, pattern, scratch, workflow,
};
use wfstudio_core::comfyui::lower::{Lowered, Target};

fn qwen21() -> Value {
    pattern("qwen-image-2-1")
}

#[test]
fn qwen_image_2_1_samples_its_own_latents_and_decodes_rgba() {
    let l = lowered(&qwen21(), &Target::default());
    // Both prompts from the one node; an empty one is a space.
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
    let w = workflow(&l);
    // 88 x 24 pixels are 11 x 3 cells of 8, resized by a half and rounded
    // half to even (6 x 2, where flooring gives 5 x 1): 96 x 32 pixels at
    // 16 a cell, 64 channels.
    assert_eq!(empty_latent(&l), [96, 32, 64, 16]);
    // Flux's sampling at mu 0.69, for the family the encoder names.
    let shift = w["inputs"]["request.flow_shift"]["default"]
        .as_f64()
        .expect("a shift");
    assert!((shift - 0.69f64.exp()).abs() < 1e-4, "{shift}");
    assert!(
        l.notes
            .iter()
            .any(|n| n.contains("node 4 (TextEncodeQwenImage21) encodes the prompts for it")),
        "{:#?}",
        l.notes
    );
    // The VAE decodes four channels, and the output shows them.
    let decoded = &w["components"]["vae_decoder"]["ports"]["outputs"]["image"]["shape"];
    assert_eq!(decoded, &json!(["batch", 4, "height", "width"]));
    assert_eq!(
        w["outputs"]["image"]["contract"]["shape"],
        json!(["batch", 4, "height", "width"])
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("qwen21");
    let (_, out) = package_and_run(&root, "qwen21", &qwen21());
    let (shape, _) = npy(&out.join("image.npy"));
    assert_eq!(shape, [1, 4, 32, 96]);
    let (shape, _) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [1, 64, 2, 6]);
    let png = image::open(out.join("image.png")).expect("a picture");
    assert_eq!(png.color(), image::ColorType::Rgba8);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_encoder_gives_its_latent_and_names_the_family() {
    // The node's own latent: `resolution` square, 0 taken as 1024.
    let mut own = qwen21();
    own["7"]["inputs"]["latent_image"] = json!(["4", 2]);
    own["4"]["inputs"]["resolution"] = json!(0);
    assert_eq!(
        empty_latent(&lowered(&own, &Target::default())),
        [1024, 1024, 64, 16]
    );
    own["4"]["inputs"]["resolution"] = json!(100);
    assert_eq!(
        empty_latent(&lowered(&own, &Target::default())),
        [96, 96, 64, 16]
    );
    // An empty positive prompt is a space too.
    own["4"]["inputs"]["prompt"] = json!("");
    let l = lowered(&own, &Target::default());
    assert_eq!(l.prompts[0].1, " ");
    // Prompts of plain encoders: the model file names the family.
    let mut by_file = qwen21();
    by_file["4"] = json!({"class_type": "CLIPTextEncode", "inputs": {"text": "a lighthouse at dusk", "clip": ["2", 0]}});
    by_file["10"] =
        json!({"class_type": "CLIPTextEncode", "inputs": {"text": "", "clip": ["2", 0]}});
    by_file["7"]["inputs"]["negative"] = json!(["10", 0]);
    let l = lowered(&by_file, &Target::default());
    assert_eq!(empty_latent(&l), [96, 32, 64, 16]);
    assert!(
        l.notes.iter().any(|n| n.contains(
            "loads 'qwen_image_2.1_int8_convrot.safetensors', Qwen-Image 2.1's model by its name"
        )),
        "{:#?}",
        l.notes
    );
}

#[test]
fn what_qwen_image_2_1_cannot_take_is_refused() {
    let mut quantised = qwen21();
    quantised["5"]["inputs"]["dtype"] = json!("int8");
    assert_refused(
        &quantised,
        (
            "5",
            "QwenImage21Cache",
            Some("dtype"),
            "quantises Qwen-Image 2.1's prompt cache to int8, which changes every step's result; the lowering keeps the cache exact",
        ),
    );
    // Another empty latent node of 8-pixel cells.
    let mut sd3 = qwen21();
    sd3["6"]["class_type"] = json!("EmptySD3LatentImage");
    assert_refused(
        &sd3,
        (
            "6",
            "EmptySD3LatentImage",
            None,
            "makes an empty latent of 8-pixel cells for a model whose cells are 16 pixels, which ComfyUI resizes; the lowering resizes an EmptyLatentImage of written size only",
        ),
    );
    // An RGBA decode read as a picture by a later stage.
    let mut encoded = qwen21();
    encoded["10"] =
        json!({"class_type": "VAEEncode", "inputs": {"pixels": ["8", 0], "vae": ["3", 0]}});
    encoded["11"] = json!({"class_type": "KSampler", "inputs": {"seed": 4, "steps": 2, "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple", "denoise": 0.5, "model": ["5", 0], "positive": ["4", 0], "negative": ["4", 1], "latent_image": ["10", 0]}});
    encoded["12"] =
        json!({"class_type": "VAEDecode", "inputs": {"samples": ["11", 0], "vae": ["3", 0]}});
    encoded["9"]["inputs"]["images"] = json!(["12", 0]);
    assert_refused(
        &encoded,
        (
            "8",
            "VAEDecode",
            None,
            "decodes pictures of 4 channels (RGBA) that node 10 reads; the lowering gives RGBA pictures to image outputs only",
        ),
    );
    // An RGBA decode shown through a resize.
    let mut resized = qwen21();
    resized["10"] = json!({"class_type": "ImageScaleBy", "inputs": {"upscale_method": "nearest-exact", "scale_by": 2.0, "image": ["8", 0]}});
    resized["9"]["inputs"]["images"] = json!(["10", 0]);
    assert_refused(
        &resized,
        (
            "8",
            "VAEDecode",
            None,
            "decodes RGBA pictures that node 9 shows through an upscale, a resize, a picture operation or as a video; the lowering shows RGBA pictures as they are decoded",
        ),
    );
}

/// Qwen-Image 2.1's edit template, small: one picture given to the
/// encoder with the VAE, at `resolution` 0, the sampler starting from
/// the encoder's latent.
fn edit() -> Value {
    let mut g = qwen21();
    g["10"] =
        json!({"class_type": "LoadImage", "inputs": {"image": "portrait.png", "upload": "image"}});
    g["4"]["inputs"]["images.image_1"] = json!(["10", 0]);
    g["4"]["inputs"]["vae"] = json!(["3", 0]);
    g["4"]["inputs"]["resolution"] = json!(0);
    g["7"]["inputs"]["latent_image"] = json!(["4", 2]);
    g
}

/// The contract parameters of the node's own resizes (`unless_same`),
/// with their component names.
fn own_resizes(l: &Lowered) -> Vec<(String, Value)> {
    workflow(l)["components"]
        .as_object()
        .expect("components")
        .iter()
        .filter_map(|(name, c)| Some((name.clone(), c.pointer("/contract/parameters")?.clone())))
        .filter(|(_, p)| p["unless_same"] == json!(true))
        .collect()
}

#[test]
fn the_edit_encoder_shows_its_picture_appends_it_and_says_where_it_goes() {
    let l = lowered(&edit(), &Target::default());
    let w = workflow(&l);
    let components = &w["components"];
    // The text encoder sees the picture and gives the references' places;
    // the denoiser takes the reference and those places.
    let encoder = &components["text_encoder"]["ports"];
    assert!(encoder["inputs"].get("image").is_some(), "{encoder}");
    let slots = json!(["batch", 1]);
    assert_eq!(encoder["outputs"]["image_slots"]["shape"], slots);
    assert_eq!(encoder["outputs"]["image_slots"]["dtype"], "int64");
    let denoiser = &components["denoiser"]["ports"]["inputs"];
    assert_eq!(denoiser["image_slots"]["shape"], slots);
    assert!(denoiser.get("reference_latent").is_some(), "{denoiser}");
    let stage = support::lowering::loops(w)[0];
    let calls = support::lowering::stage_calls(stage, "denoiser");
    assert_eq!(calls.len(), 2);
    for call in calls {
        let side = call["outputs"]["noise_pred"].as_str().expect("an output");
        let side = side.trim_start_matches("denoiser.");
        assert_eq!(
            call["inputs"]["image_slots"],
            format!("conditioning.{side}_image_slots")
        );
    }
    // The node's own resize, to whole 32s unless the picture is so sized,
    // by lanczos; the latent takes the resized picture's size.
    let resizes = own_resizes(&l);
    assert!(!resizes.is_empty());
    for (_, p) in &resizes {
        assert_eq!(
            (&p["size"], &p["step"], &p["method"]),
            (&json!("steps"), &json!(32), &json!("lanczos"))
        );
    }
    let shape = &components["latent_row_shape"]["contract"]["parameters"];
    assert_eq!(
        (&shape["from"], &shape["channels"], &shape["scale"]),
        (&json!("image"), &json!(64), &json!(16))
    );
    // At a resolution: about that square in whole 32s.
    let mut sized = edit();
    sized["4"]["inputs"]["resolution"] = json!(1024);
    let l = lowered(&sized, &Target::default());
    let sized_resizes = own_resizes(&l);
    assert_eq!(sized_resizes.len(), resizes.len());
    for (_, p) in &sized_resizes {
        assert_eq!(
            (&p["size"], &p["side"], &p["step"]),
            (&json!("aspect_square"), &json!(1024), &json!(32))
        );
    }
    // A first picture resized before the node.
    let mut resized = edit();
    resized["11"] = json!({"class_type": "ImageScaleBy", "inputs": {"upscale_method": "nearest-exact", "scale_by": 2.0, "image": ["10", 0]}});
    resized["4"]["inputs"]["images.image_1"] = json!(["11", 0]);
    assert_refused(
        &resized,
        (
            "11",
            "ImageScaleBy",
            None,
            "resizes or processes the first picture of node 4, whose latent takes that picture's size after the node's own resize; the lowering sizes it through one resize",
        ),
    );
    if !support::runtime_available() {
        return;
    }
    // Runs: the 64x64 picture keeps its size, 4 x 4 cells of 16; at a
    // resolution of 96 it becomes 96x96, 6 x 6 cells.
    let root = scratch("qwen21-edit");
    let (_, out) = package_and_run(&root, "edit", &edit());
    assert_eq!(npy(&out.join("latent.npy")).0, [1, 64, 4, 4]);
    assert_eq!(npy(&out.join("image.npy")).0, [1, 4, 64, 64]);
    let mut larger = edit();
    larger["4"]["inputs"]["resolution"] = json!(96);
    let (_, out) = package_and_run(&root, "larger", &larger);
    assert_eq!(npy(&out.join("latent.npy")).0, [1, 64, 6, 6]);
    assert_eq!(npy(&out.join("image.npy")).0, [1, 4, 96, 96]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn edit_variants_keep_the_prompts_and_pictures_consistent() {
    // A negative zeroed from the positive reads the positive's slots.
    let mut zeroed = edit();
    zeroed["11"] =
        json!({"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["4", 0]}});
    zeroed["7"]["inputs"]["negative"] = json!(["11", 0]);
    let l = lowered(&zeroed, &Target::default());
    let stage = support::lowering::loops(workflow(&l))[0];
    let slots: Vec<&Value> = support::lowering::stage_calls(stage, "denoiser")
        .iter()
        .map(|c| &c["inputs"]["image_slots"])
        .collect();
    assert_eq!(slots, [&json!("conditioning.conditional_image_slots"); 2]);
    // Without a VAE: the text encoder keeps the picture, no references.
    let mut shown = edit();
    shown["4"]["inputs"]
        .as_object_mut()
        .expect("inputs")
        .remove("vae");
    let l = lowered(&shown, &Target::default());
    let components = &workflow(&l)["components"];
    assert!(
        components["text_encoder"]["ports"]["inputs"]
            .get("image")
            .is_some()
    );
    assert!(
        components["text_encoder"]["ports"]["outputs"]
            .get("image_slots")
            .is_none()
    );
    let denoiser = &components["denoiser"]["ports"]["inputs"];
    assert!(denoiser.get("image_slots").is_none() && denoiser.get("reference_latent").is_none());
    // Pictures in the order of their numbers: image_2 before image_10.
    // image_10's is resized before the node, which the first picture may
    // not be: the graph lowers only with image_2's first.
    let mut two = edit();
    two["12"] =
        json!({"class_type": "LoadImage", "inputs": {"image": "second.png", "upload": "image"}});
    two["13"] = json!({"class_type": "ImageScaleBy", "inputs": {"upscale_method": "nearest-exact", "scale_by": 0.5, "image": ["10", 0]}});
    let inputs = two["4"]["inputs"].as_object_mut().expect("inputs");
    inputs.remove("images.image_1");
    inputs.insert("images.image_10".into(), json!(["13", 0]));
    inputs.insert("images.image_2".into(), json!(["12", 0]));
    let l = lowered(&two, &Target::default());
    let denoiser = &workflow(&l)["components"]["denoiser"]["ports"]["inputs"];
    assert_eq!(denoiser["image_slots"]["shape"], json!(["batch", 2]));
    let mut swapped = two.clone();
    let inputs = swapped["4"]["inputs"].as_object_mut().expect("inputs");
    inputs.insert("images.image_1".into(), json!(["13", 0]));
    inputs.remove("images.image_10");
    assert_refused(
        &swapped,
        (
            "13",
            "ImageScaleBy",
            None,
            "resizes or processes the first picture of node 4, whose latent takes that picture's size after the node's own resize; the lowering sizes it through one resize",
        ),
    );
    // One prompt's node with the VAE, the other's without.
    let mut mixed = edit();
    mixed["13"] = mixed["4"].clone();
    mixed["13"]["inputs"]
        .as_object_mut()
        .expect("inputs")
        .remove("vae");
    mixed["7"]["inputs"]["negative"] = json!(["13", 1]);
    assert_refused(
        &mixed,
        (
            "13",
            "TextEncodeQwenImage21",
            Some("vae"),
            "shows the text encoder its pictures without a VAE, where node 4 appends them with one; Qwen-Image 2.1's text encoder then keeps their rows on one prompt and leaves them out on the other, which the lowering gives one encoder for",
        ),
    );
}

#[test]
fn a_picture_already_in_whole_32s_is_kept_as_it_is() {
    if !support::runtime_available() {
        return;
    }
    let l = lowered(&edit(), &Target::default());
    let (name, _) = own_resizes(&l).into_iter().next().expect("a resize");
    let root = scratch("qwen21-unless-same");
    // 64 x 64 is whole 32s: kept, unrounded; 70 x 50 becomes 64 x 64 by
    // lanczos, in 8-bit steps.
    for (shape, kept) in [([1, 3, 64, 64], true), ([1, 3, 50, 70], false)] {
        let (data, _) = support::lowering::tensor(shape, 3);
        let data: Vec<f32> = data.iter().map(|v| (v + 2.0) / 4.2).collect();
        let out = support::lowering::run_policy_alone(
            &root,
            &format!("{}x{}", shape[3], shape[2]),
            &l.document,
            &name,
            &[(
                "image",
                json!({"dtype": "float32", "shape": shape, "data": data}).to_string(),
            )],
        );
        let (out_shape, values) = npy(&out.join("scaled.npy"));
        assert_eq!(out_shape, [1, 3, 64, 64]);
        let bytes = values
            .iter()
            .all(|v| (v * 255.0 - (v * 255.0).round()).abs() < 1e-3);
        match kept {
            true => assert_eq!(values, data),
            false => assert!(bytes, "a lanczos resize gives 8-bit values"),
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_resolution_sizes_pictures_as_the_node_rounds_its_ties() {
    if !support::runtime_available() {
        return;
    }
    // 17 wide, 68 high at resolution 96: the node's sqrt(96² · 17/68) is
    // exactly 48, half of two 32s, which rounds to 64 (1.5 to 2); the
    // same side reached as 17 · sqrt(96² / (17 · 68)) rounds to 32.
    let mut sized = edit();
    sized["4"]["inputs"]["resolution"] = json!(96);
    let l = lowered(&sized, &Target::default());
    let (name, parameters) = own_resizes(&l).into_iter().next().expect("a resize");
    assert_eq!(parameters["size"], "aspect_square");
    let root = scratch("qwen21-ties");
    let shape = [1, 3, 68, 17];
    let (data, _) = support::lowering::tensor(shape, 5);
    let data: Vec<f32> = data.iter().map(|v| (v + 2.0) / 4.2).collect();
    let out = support::lowering::run_policy_alone(
        &root,
        "tie",
        &l.document,
        &name,
        &[(
            "image",
            json!({"dtype": "float32", "shape": shape, "data": data}).to_string(),
        )],
    );
    assert_eq!(npy(&out.join("scaled.npy")).0, [1, 3, 192, 64]);
    let _ = std::fs::remove_dir_all(&root);
}
