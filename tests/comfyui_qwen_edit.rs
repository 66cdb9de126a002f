//! Qwen's image-edit encoders (`TextEncodeQwenImageEdit`,
//! `TextEncodeQwenImageEditPlus`): the text encoder takes the picture as
//! its input `image`, resized by area to about 384x384 pixels (Plus) or
//! 1024x1024 (plain); given a VAE, the node's reference is the picture
//! resized by area to about 1024x1024 (Plus: in whole 8s) and encoded,
//! which every prompt's denoiser call takes as `reference_latent`.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, denoiser_bindings, lowered, npy, package_and_run, pattern, run_policy_alone,
    scratch, setup_steps, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// Qwen Image Edit 2509's template, small (the `qwen-edit` pattern): the
/// loaded picture through `FluxKontextImageScale`, encoded as the start
/// latent; both prompts are Plus edit encoders of that picture with the
/// VAE.
fn plus() -> Value {
    pattern("qwen-edit")
}

/// Qwen Image Edit's first template: the plain encoder, on the loaded
/// picture as it is.
fn plain() -> Value {
    let mut g = plus();
    for node in ["2", "3"] {
        let inputs = &mut g[node]["inputs"];
        inputs["image"] = json!(["16", 0]);
        inputs.as_object_mut().expect("inputs").remove("image1");
        g[node]["class_type"] = json!("TextEncodeQwenImageEdit");
    }
    g["19"]["inputs"]["pixels"] = json!(["16", 0]);
    g.as_object_mut().expect("graph").remove("18");
    g
}

/// The setup steps' components, in order.
fn setup_components(w: &Value) -> Vec<String> {
    setup_steps(w)
        .iter()
        .map(|s| s["component"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The text encoder calls' inputs, in order.
fn encoder_calls(w: &Value) -> Vec<Value> {
    setup_steps(w)
        .iter()
        .filter(|s| s["component"] == "text_encoder")
        .map(|s| s["inputs"].clone())
        .collect()
}

/// The setup step invoking `component`.
fn setup_step<'w>(w: &'w Value, component: &str) -> &'w Value {
    setup_steps(w)
        .iter()
        .find(|s| s["component"] == component)
        .unwrap_or_else(|| panic!("no {component} step"))
}

#[test]
fn the_plus_encoder_shows_the_text_encoder_a_small_picture_and_appends_a_large_ones_latent() {
    let l = lowered(&plus(), &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["components"]["text_encoder"]["ports"]["inputs"]["image"]["shape"],
        json!(["batch", 3, "vision_height", "vision_width"])
    );
    let parameters = |c: &str| w["components"][c]["contract"]["parameters"].clone();
    // Qwen-Image's 16 channels, though ModelSamplingAuraFlow samples by
    // AuraFlow's rule, whose own latents have 4.
    assert_eq!(parameters("latent_row_shape")["channels"], 16);
    assert_eq!(
        parameters("source_scale"),
        json!({"size": "flux_kontext", "crop": "center", "method": "lanczos"})
    );
    assert_eq!(
        parameters("vision_scale"),
        json!({"size": "total_pixels", "pixels": 147456, "method": "area"})
    );
    assert_eq!(
        parameters("reference_scale"),
        json!({"size": "total_pixels", "pixels": 1048576, "step": 8, "method": "area", "multiple": 8})
    );
    // The Kontext scale, uncut, feeds both of the encoder's own resizes,
    // and, only cut to whole 8s, the start latent's encode: the picture is
    // resized once.
    assert_eq!(
        setup_step(w, "source_scale")["inputs"],
        json!({"image": "request.image"})
    );
    assert_eq!(
        parameters("input_scale"),
        json!({"size": "same", "multiple": 8})
    );
    for c in ["vision_scale", "reference_scale", "input_scale"] {
        assert_eq!(
            setup_step(w, c)["inputs"],
            json!({"image": "source.pixels"})
        );
    }
    let calls: Vec<Value> = encoder_calls(w);
    assert_eq!(
        calls,
        [
            json!({"input_ids": "request.input_ids", "image": "vision.pixels"}),
            json!({"input_ids": "request.negative_input_ids", "image": "vision.pixels"}),
        ]
    );
    // The reference is its own encode (the start latent is the picture
    // cut to whole 8s, not resized again), read by both prompts.
    let encodes: Vec<Value> = setup_steps(w)
        .iter()
        .filter(|s| s["component"] == "vae_encoder")
        .map(|s| s["inputs"]["image"].clone())
        .collect();
    assert_eq!(encodes, [json!("latent.pixels"), json!("reference.pixels")]);
    assert_eq!(
        denoiser_bindings(w, "reference_latent"),
        [
            (
                "denoiser.unconditional".to_string(),
                json!("reference.latent")
            ),
            (
                "denoiser.conditional".to_string(),
                json!("reference.latent")
            ),
        ]
    );
    assert!(!setup_components(w).contains(&"no_reference".to_string()));
    // ComfyUI's picture marker before each prompt.
    assert_eq!(
        l.prompts,
        [
            (
                "request.input_ids".to_string(),
                "Picture 1: <|vision_start|><|image_pad|><|vision_end|>make it night".to_string()
            ),
            (
                "request.negative_input_ids".to_string(),
                "Picture 1: <|vision_start|><|image_pad|><|vision_end|>".to_string()
            ),
        ]
    );
    let notes: Vec<&String> = l.notes.iter().filter(|n| n.contains("Qwen")).collect();
    assert_eq!(
        notes,
        [
            "nodes 2, 3 (TextEncodeQwenImageEditPlus) append the latent of request.image (resized by node 18, then by node 2 by area to about 1024x1024 pixels in whole 8s) to the prompts (1 on the positive prompt, 1 on the negative prompt): the denoiser takes it as `reference_latent`",
            "nodes 2, 3 (TextEncodeQwenImageEditPlus) show the text encoder request.image resized by node 18, then resized by the node itself by area to about 384x384 pixels, as its input `image`; ComfyUI tokenizes the prompts with the node's edit template (a system prompt describing the input picture), which the package's tokenizer must apply",
        ]
    );
    if !support::runtime_available() {
        return;
    }
    // The 64 x 64 default picture takes Kontext's 1024 x 1024: its
    // reference stays 1024 x 1024, 128 x 128 latent cells, in
    // Qwen-Image's 16 channels (ModelSamplingAuraFlow samples by
    // AuraFlow's rule, whose own latents have 4).
    let root = scratch("qwen-edit-plus");
    let (_, out) = package_and_run(&root, "plus", &plus());
    let (shape, latent) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [1, 16, 128, 128]);
    assert!(latent.iter().all(|v| v.is_finite()));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn without_a_vae_the_encoder_only_shows_the_text_encoder_the_picture() {
    let mut g = plus();
    for node in ["2", "3"] {
        g[node]["inputs"]
            .as_object_mut()
            .expect("inputs")
            .remove("vae");
    }
    g["4"] = json!({"class_type": "EmptySD3LatentImage", "inputs": {"width": 16, "height": 16, "batch_size": 1}});
    g["5"]["inputs"]["latent_image"] = json!(["4", 0]);
    g.as_object_mut().expect("graph").remove("19");
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    let components: Vec<&String> = w["components"]
        .as_object()
        .expect("components")
        .keys()
        .collect();
    for absent in [
        "reference_scale",
        "input_scale",
        "vae_encoder",
        "no_reference",
    ] {
        assert!(
            !components.iter().any(|c| *c == absent),
            "{absent}: {components:?}"
        );
    }
    assert!(
        w["components"]["denoiser"]["ports"]["inputs"]
            .get("reference_latent")
            .is_none()
    );
    assert_eq!(
        setup_components(w)
            .iter()
            .filter(|c| c.ends_with("_scale"))
            .collect::<Vec<_>>(),
        ["source_scale", "vision_scale"]
    );
    assert_eq!(
        setup_step(w, "text_encoder")["inputs"],
        json!({"input_ids": "request.input_ids", "image": "vision.pixels"})
    );
    assert!(
        l.notes.iter().all(|n| !n.contains("append")),
        "{:?}",
        l.notes
    );
}

#[test]
fn the_plain_encoder_shows_and_encodes_the_picture_at_about_a_megapixel() {
    let l = lowered(&plain(), &Target::default());
    let w = workflow(&l);
    let parameters = |c: &str| w["components"][c]["contract"]["parameters"].clone();
    assert_eq!(
        parameters("vision_scale"),
        json!({"size": "total_pixels", "pixels": 1048576, "method": "area"})
    );
    assert_eq!(
        parameters("reference_scale"),
        json!({"size": "total_pixels", "pixels": 1048576, "method": "area", "multiple": 8})
    );
    assert!(w["components"].get("source_scale").is_none());
    assert_eq!(
        setup_step(w, "vision_scale")["inputs"],
        json!({"image": "request.image"})
    );
    assert_eq!(
        l.prompts,
        [
            ("request.input_ids".to_string(), "make it night".to_string()),
            ("request.negative_input_ids".to_string(), String::new()),
        ]
    );
}

/// ComfyUI's sides for a `w` x `h` picture resized to about `total`
/// pixels in whole `step`s: `round(side * sqrt(total / (w * h)) / step)
/// * step`, Python's half-even `round`.
fn comfy_sides((h, w): (usize, usize), total: f64, step: f64) -> (usize, usize) {
    let scale = (total / (w as f64 * h as f64)).sqrt();
    let side = |s: usize| ((s as f64 * scale / step).round_ties_even() * step) as usize;
    (side(h), side(w))
}

#[test]
fn the_encoders_own_resizes_take_comfyuis_sides() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("qwen-edit-sides");
    let document = lowered(&plus(), &Target::default()).document;
    for (h, w) in [(200, 300), (77, 129), (31, 500)] {
        let picture: Vec<f32> = (0..3 * h * w).map(|i| (i % 251) as f32 / 251.0).collect();
        let input = json!({"dtype": "float32", "shape": [1, 3, h, w], "data": picture}).to_string();
        for (component, total, step) in [
            ("vision_scale", 147456.0, 1.0),
            ("reference_scale", 1048576.0, 8.0),
        ] {
            let name = format!("{component}-{h}x{w}");
            let out = run_policy_alone(
                &root,
                &name,
                &document,
                component,
                &[("image", input.clone())],
            );
            let (shape, values) = npy(&out.join("scaled.npy"));
            let (eh, ew) = comfy_sides((h, w), total, step);
            assert_eq!(shape, [1, 3, eh, ew], "{component} of {h}x{w}");
            // Area resampling averages: within the input's range.
            assert!(values.iter().all(|v| (0.0..=1.0).contains(v)));
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn each_picture_is_an_input_of_its_own_shown_and_appended_in_order() {
    // Qwen Image Edit 2511's second picture: another LoadImage, as is.
    let mut two = plus();
    two["17"] =
        json!({"class_type": "LoadImage", "inputs": {"image": "style.png", "upload": "image"}});
    for node in ["2", "3"] {
        two[node]["inputs"]["image2"] = json!(["17", 0]);
    }
    let l = lowered(&two, &Target::default());
    let w = workflow(&l);
    // Each picture of its own size: its input, the text encoder's and the
    // denoiser's ports (the run below gives a 64x48 second picture).
    assert_eq!(
        w["inputs"]["request.image_2"]["contract"]["shape"],
        json!(["batch", 3, "image_2_height", "image_2_width"])
    );
    let ports = &w["components"]["text_encoder"]["ports"]["inputs"];
    assert_eq!(
        ports["image_2"]["shape"],
        json!(["batch", 3, "vision_2_height", "vision_2_width"])
    );
    assert_eq!(
        w["components"]["denoiser"]["ports"]["inputs"]["reference_latent_2"]["shape"],
        json!([
            "batch",
            "channels",
            "reference_2_height",
            "reference_2_width"
        ])
    );
    let calls: Vec<Value> = encoder_calls(w);
    assert_eq!(
        calls[0],
        json!({"input_ids": "request.input_ids", "image": "vision.pixels", "image_2": "vision_2.pixels"})
    );
    // The second picture is not resized by the graph: its own resizes
    // read the input.
    assert_eq!(
        setup_step(w, "vision_scale_2")["inputs"],
        json!({"image": "request.image_2"})
    );
    assert_eq!(
        setup_step(w, "reference_scale_2")["inputs"],
        json!({"image": "request.image_2"})
    );
    for (port, latent) in [
        ("reference_latent", "reference.latent"),
        ("reference_latent_2", "reference_2.latent"),
    ] {
        let bound: Vec<Value> = denoiser_bindings(w, port)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(bound, [json!(latent), json!(latent)], "{port}");
    }
    assert_eq!(
        l.prompts[0].1,
        "Picture 1: <|vision_start|><|image_pad|><|vision_end|>Picture 2: <|vision_start|><|image_pad|><|vision_end|>make it night"
    );
    assert!(
        l.notes.iter().any(|n| n.starts_with(
            "nodes 2, 3 (TextEncodeQwenImageEditPlus) show the text encoder request.image resized by node 18 (as its input `image`) and request.image_2 (as its input `image_2`), each then resized by the node itself by area to about 384x384 pixels;"
        )),
        "{:?}",
        l.notes
    );
    // The negative prompt's pictures in the other order: each call binds
    // its own.
    let mut swapped = two.clone();
    swapped["3"]["inputs"]["image1"] = json!(["17", 0]);
    swapped["3"]["inputs"]["image2"] = json!(["18", 0]);
    let l = lowered(&swapped, &Target::default());
    let w = workflow(&l);
    let calls: Vec<Value> = encoder_calls(w);
    assert_eq!(
        calls[1],
        json!({"input_ids": "request.negative_input_ids", "image": "vision_2.pixels", "image_2": "vision.pixels"})
    );
    assert_eq!(
        denoiser_bindings(w, "reference_latent")
            .into_iter()
            .map(|(_, v)| v)
            .collect::<Vec<_>>(),
        [json!("reference_2.latent"), json!("reference.latent")]
    );
    assert!(
        l.notes
            .iter()
            .any(|n| n.contains("each prompt's in its own order")),
        "{:?}",
        l.notes
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("qwen-edit-two");
    let (_, out) = package_and_run(&root, "two", &two);
    let (shape, _) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [1, 16, 128, 128]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_reference_latent_after_an_encoder_appends_the_picture_as_the_graph_encodes_it() {
    // The encoder's reference (its own resize) comes first; the
    // ReferenceLatent's is the start latent, the picture as the graph
    // encodes it; the negative prompt carries one, the other none.
    let mut chained = plus();
    chained["20"] = json!({"class_type": "ReferenceLatent", "inputs": {"conditioning": ["2", 0], "latent": ["19", 0]}});
    chained["5"]["inputs"]["positive"] = json!(["20", 0]);
    let l = lowered(&chained, &Target::default());
    let w = workflow(&l);
    let bound = |port: &str| -> Vec<Value> {
        denoiser_bindings(w, port)
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    };
    assert_eq!(
        bound("reference_latent"),
        [json!("reference.latent"), json!("reference.latent")]
    );
    assert_eq!(
        bound("reference_latent_2"),
        [json!("reference.none"), json!("latent.source")]
    );
}

#[test]
fn edit_encoders_the_lowering_cannot_take_are_refused_by_node() {
    let mut bare = plus();
    bare["3"] = json!({"class_type": "CLIPTextEncode", "inputs": {"text": "", "clip": ["14", 0]}});
    assert_refused(
        &bare,
        (
            "3",
            "CLIPTextEncode",
            None,
            "encodes its prompt without a picture, where node 2 shows the text encoder one; the lowering gives the text encoder a picture on every prompt or on none",
        ),
    );
    let mut fewer = plus();
    fewer["2"]["inputs"]["image2"] = json!(["16", 0]);
    assert_refused(
        &fewer,
        (
            "3",
            "TextEncodeQwenImageEditPlus",
            None,
            "shows the text encoder 1 picture, where node 2 shows it 2; the lowering gives the text encoder as many pictures on every prompt",
        ),
    );
    // Five loaded pictures in one stage.
    let mut many = plus();
    for (node, input) in [("31", "image2"), ("32", "image3")] {
        many[node] = json!({"class_type": "LoadImage", "inputs": {"image": format!("{node}.png"), "upload": "image"}});
        many["2"]["inputs"][input] = json!([node, 0]);
    }
    for (node, input) in [("33", "image2"), ("34", "image3")] {
        many[node] = json!({"class_type": "LoadImage", "inputs": {"image": format!("{node}.png"), "upload": "image"}});
        many["3"]["inputs"][input] = json!([node, 0]);
    }
    assert_refused(
        &many,
        (
            "3",
            "TextEncodeQwenImageEditPlus",
            None,
            "appends a reference of a loaded picture past the 4 the lowering gives a stage",
        ),
    );
    let mut mixed = plus();
    mixed["3"]["class_type"] = json!("TextEncodeQwenImageEdit");
    let inputs = mixed["3"]["inputs"].as_object_mut().expect("inputs");
    let picture = inputs.remove("image1").expect("image1");
    inputs.insert("image".into(), picture);
    assert_refused(
        &mixed,
        (
            "3",
            "TextEncodeQwenImageEdit",
            None,
            "appends the latent of node 16's picture at another size than node 2 does; the lowering encodes each picture at one size in a stage",
        ),
    );
    // Another picture on the other class's prompt: one template a stage.
    mixed["40"] = json!({"class_type": "LoadImage", "inputs": {"image": "other.png"}});
    mixed["3"]["inputs"]["image"] = json!(["40", 0]);
    assert_refused(
        &mixed,
        (
            "2",
            "TextEncodeQwenImageEditPlus",
            None,
            "shows the text encoder pictures as TextEncodeQwenImageEditPlus does, where node 3 shows them as TextEncodeQwenImageEdit does; the lowering gives a stage's prompts one edit encoder class",
        ),
    );
}
