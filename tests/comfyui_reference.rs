//! Reference pictures (`ReferenceLatent`: Flux Kontext's, Flux 2's and
//! OmniGen 2's edits). The stage's loaded picture is encoded once; every
//! prompt's denoiser call takes its references as `reference_latent`,
//! `reference_latent_2`, ..., and a prompt with fewer takes a latent of no
//! cells in their place. An empty latent may take its size from the
//! picture through `GetImageSize`, and so may `Flux2Scheduler`, whose
//! schedule is then computed at run time, equal to the one the import
//! computes for a written size; an `ImageStitch` without a second picture
//! passes its first on.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, denoiser_bindings, lowered, npy, package_and_run, pattern, run_policy_alone,
    scratch, setup_steps, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// Flux Kontext's template on the flow pattern (the `reference` pattern):
/// the loaded picture
/// through a one-picture `ImageStitch` and `FluxKontextImageScale`,
/// encoded; the positive prompt carries it (`ReferenceLatent`, then
/// `FluxGuidance`), the negative is the prompt zeroed without it; cfg 1;
/// sampling starts from the encoded picture.
fn kontext() -> Value {
    pattern("reference")
}

/// OmniGen 2's template: both prompts carry the picture, resized by area
/// to 0.01 megapixels, and the empty latent takes the resized picture's
/// size through `GetImageSize`.
fn sized() -> Value {
    let mut g = kontext();
    g["18"] = json!({"class_type": "ImageScaleToTotalPixels", "inputs": {"upscale_method": "area", "megapixels": 0.01, "image": ["16", 0]}});
    g["23"] = json!({"class_type": "GetImageSize", "inputs": {"image": ["18", 0]}});
    g["4"]["inputs"]["width"] = json!(["23", 0]);
    g["4"]["inputs"]["height"] = json!(["23", 1]);
    g["22"] = json!({"class_type": "ReferenceLatent", "inputs": {"conditioning": ["3", 0], "latent": ["19", 0]}});
    g["5"]["inputs"]["positive"] = json!(["20", 0]);
    g["5"]["inputs"]["latent_image"] = json!(["4", 0]);
    g["5"]["inputs"]["cfg"] = json!(4.0);
    g
}

/// The setup steps: (component, inputs, outputs).
fn setup(w: &Value) -> Vec<(String, Value, Value)> {
    setup_steps(w)
        .iter()
        .map(|s| {
            let component = s["component"].as_str().unwrap_or_default();
            (
                component.to_string(),
                s["inputs"].clone(),
                s["outputs"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_reference_is_the_encoded_picture_and_a_prompt_without_takes_no_cells() {
    let l = lowered(&kontext(), &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["components"]["denoiser"]["ports"]["inputs"]["reference_latent"]["shape"],
        json!(["batch", "channels", "reference_height", "reference_width"])
    );
    // The stitch passed its picture on; the Kontext scale cuts to whole
    // multiples of 8 for the encoder.
    assert_eq!(
        w["components"]["input_scale"]["contract"]["parameters"],
        json!({"size": "flux_kontext", "crop": "center", "method": "lanczos", "multiple": 8})
    );
    assert!(
        l.ignored.iter().all(|i| !i.contains("ImageStitch")),
        "{:?}",
        l.ignored
    );
    assert_eq!(
        denoiser_bindings(w, "reference_latent"),
        [
            (
                "denoiser.unconditional".to_string(),
                json!("reference.none")
            ),
            ("denoiser.conditional".to_string(), json!("latent.source")),
        ]
    );
    let steps = setup(w);
    let none: Vec<_> = steps.iter().filter(|s| s.0 == "no_reference").collect();
    assert_eq!(none.len(), 1);
    assert_eq!(none[0].1, json!({"like": "latent.source"}));
    assert_eq!(
        steps.iter().filter(|s| s.0 == "vae_encoder").count(),
        1,
        "the picture is encoded once"
    );
    let note = l
        .notes
        .iter()
        .find(|n| n.contains("ReferenceLatent"))
        .expect("a reference note");
    assert_eq!(
        note,
        "node 20 (ReferenceLatent) appends the latent of request.image (resized by node 18) to the prompts (1 on the positive prompt, 0 on the negative prompt): the denoiser takes it as `reference_latent`, and a prompt with fewer takes a latent of no cells in their place, which a model that appends a reference's cells to its sequence reads as none, as ComfyUI passes none"
    );
    if !support::runtime_available() {
        return;
    }
    // The 64 x 64 default picture takes Kontext's 1024 x 1024.
    let root = scratch("reference-kontext");
    let (_, out) = package_and_run(&root, "kontext", &kontext());
    let (shape, latent) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [1, 16, 128, 128]);
    assert!(latent.iter().all(|v| v.is_finite()));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_empty_latent_takes_the_pictures_size_and_both_prompts_their_reference() {
    let l = lowered(&sized(), &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["components"]["latent_row_shape"]["contract"]["parameters"],
        json!({"from": "image", "batch_size": 1, "channels": 16, "scale": 8})
    );
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
    let steps = setup(w);
    assert!(steps.iter().all(|s| s.0 != "no_reference"));
    let reads = |value: &str| -> Vec<&str> {
        steps
            .iter()
            .filter(|s| s.1["image"] == value)
            .map(|s| s.0.as_str())
            .collect()
    };
    assert_eq!(reads("request.image"), ["input_scale"]);
    assert_eq!(reads("latent.pixels"), ["latent_row_shape", "vae_encoder"]);
    if !support::runtime_available() {
        return;
    }
    // 64 x 64 to 10485 pixels is 102 x 102: a 12 x 12 latent.
    let root = scratch("reference-sized");
    let (_, out) = package_and_run(&root, "sized", &sized());
    let (shape, _) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [1, 16, 12, 12]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_second_picture_is_an_input_of_its_own_encoded_apart() {
    // The negative prompt's reference is another LoadImage's picture.
    let mut two = sized();
    two["24"] =
        json!({"class_type": "LoadImage", "inputs": {"image": "other.png", "upload": "image"}});
    two["25"] =
        json!({"class_type": "VAEEncode", "inputs": {"pixels": ["24", 0], "vae": ["15", 0]}});
    two["22"]["inputs"]["latent"] = json!(["25", 0]);
    let l = lowered(&two, &Target::default());
    let w = workflow(&l);
    // A picture of its own size.
    assert_eq!(
        w["inputs"]["request.image_2"]["contract"]["shape"],
        json!(["batch", 3, "image_2_height", "image_2_width"])
    );
    assert_eq!(
        denoiser_bindings(w, "reference_latent"),
        [
            (
                "denoiser.unconditional".to_string(),
                json!("reference_2.latent")
            ),
            (
                "denoiser.conditional".to_string(),
                json!("reference.latent")
            ),
        ]
    );
    let encodes: Vec<(Value, Value)> = setup_steps(w)
        .iter()
        .filter(|s| s["component"] == "vae_encoder")
        .map(|s| (s["inputs"]["image"].clone(), s["outputs"]["latent"].clone()))
        .collect();
    assert_eq!(
        encodes,
        [
            (json!("latent.pixels"), json!("reference.latent")),
            (json!("request.image_2"), json!("reference_2.latent")),
        ]
    );
    assert!(
        l.notes.iter().any(|n| n.starts_with(
            "nodes 20, 22 (ReferenceLatent) append the latents of request.image (resized by node 18) and request.image_2 to the prompts (1 on the positive prompt, 1 on the negative prompt): the denoiser takes it as `reference_latent`"
        )),
        "{:?}",
        l.notes
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("reference-two");
    let (_, out) = package_and_run(&root, "two", &two);
    let (_, latent) = npy(&out.join("latent.npy"));
    assert!(latent.iter().all(|v| v.is_finite()));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn references_the_lowering_cannot_give_are_refused_by_name() {
    // Different methods on the two prompts.
    let mut methods = sized();
    methods["26"] = json!({"class_type": "FluxKontextMultiReferenceLatentMethod", "inputs": {"conditioning": ["20", 0], "reference_latents_method": "index"}});
    methods["5"]["inputs"]["positive"] = json!(["26", 0]);
    assert_refused(
        &methods,
        (
            "26",
            "FluxKontextMultiReferenceLatentMethod",
            Some("reference_latents_method"),
            "places the references of one prompt otherwise than another prompt's; the denoiser places every prompt's the same way",
        ),
    );
    // A size from two nodes.
    let mut halves = sized();
    halves["4"]["inputs"]["height"] = json!(512);
    assert_refused(
        &halves,
        (
            "4",
            "EmptySD3LatentImage",
            Some("width"),
            "takes its width and height from other nodes; the lowering sizes an empty latent by the width and height of one GetImageSize",
        ),
    );
    // A Flux2Scheduler measuring another picture, or one side only.
    let mut other = flux2_edit();
    other["77"] =
        json!({"class_type": "LoadImage", "inputs": {"image": "logo.png", "upload": "image"}});
    other["98"] = json!({"class_type": "GetImageSize", "inputs": {"image": ["77", 0]}});
    other["62"]["inputs"]["width"] = json!(["98", 0]);
    other["62"]["inputs"]["height"] = json!(["98", 1]);
    assert_refused(
        &other,
        (
            "62",
            "Flux2Scheduler",
            Some("width"),
            "measures node 77's picture, which is not the one the stage reads (its latent's or its references')",
        ),
    );
    let mut half = flux2_edit();
    half["62"]["inputs"]["width"] = json!(1024);
    assert_refused(
        &half,
        (
            "62",
            "Flux2Scheduler",
            Some("width"),
            "takes its width and height from other nodes; the lowering measures them with one GetImageSize (outputs 0 and 1)",
        ),
    );
    // A reference of an upscale model's picture.
    let mut upscaled = kontext();
    upscaled["27"] =
        json!({"class_type": "UpscaleModelLoader", "inputs": {"model_name": "x2.pth"}});
    upscaled["28"] = json!({"class_type": "ImageUpscaleWithModel", "inputs": {"upscale_model": ["27", 0], "image": ["16", 0]}});
    upscaled["18"]["inputs"]["image"] = json!(["28", 0]);
    assert_refused(
        &upscaled,
        (
            "28",
            "ImageUpscaleWithModel",
            None,
            "runs an upscale model on the picture node 19 reads, which the lowering takes only from a LoadImage, maybe resized",
        ),
    );
}

/// A `FluxKVCache` on the model path builds the same workflow: the
/// package's denoiser computes the reference pictures' keys and values on
/// every step, where ComfyUI reuses the first step's, which a note says.
#[test]
fn a_flux_kv_cache_changes_nothing_but_says_comfyui_reuses_the_first_steps_keys() {
    let plain = lowered(&flux2_edit(), &Target::default());
    let mut cached = flux2_edit();
    cached["140"] = json!({"class_type": "FluxKVCache", "inputs": {"model": ["70", 0]}});
    cached["63"]["inputs"]["model"] = json!(["140", 0]);
    let l = lowered(&cached, &Target::default());
    assert_eq!(workflow(&l), workflow(&plain));
    let added: Vec<&String> = l
        .notes
        .iter()
        .filter(|n| !plain.notes.contains(n))
        .collect();
    assert_eq!(
        added,
        [
            "node 140 (FluxKVCache) makes ComfyUI compute the reference pictures' attention keys and values on the first step and reuse them on later steps; the package's denoiser computes them on every step, so later steps differ from ComfyUI's where those keys change with the step"
        ]
    );
}

/// Flux 2 Klein's edit template: the picture resized to 0.01 megapixels,
/// measured by `GetImageSize` for both the empty latent and
/// `Flux2Scheduler`, and carried by both prompts (the negative zeroed).
fn flux2_edit() -> Value {
    json!({
        "70": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux-2-klein-4b.safetensors", "weight_dtype": "default"}},
        "71": {"class_type": "CLIPLoader", "inputs": {"clip_name": "qwen_3_4b.safetensors", "type": "flux2", "device": "default"}},
        "72": {"class_type": "VAELoader", "inputs": {"vae_name": "flux2-vae.safetensors"}},
        "76": {"class_type": "LoadImage", "inputs": {"image": "bag.png", "upload": "image"}},
        "80": {"class_type": "ImageScaleToTotalPixels", "inputs": {"upscale_method": "nearest-exact", "megapixels": 0.01, "image": ["76", 0]}},
        "99": {"class_type": "GetImageSize", "inputs": {"image": ["80", 0]}},
        "66": {"class_type": "EmptyFlux2LatentImage", "inputs": {"width": ["99", 0], "height": ["99", 1], "batch_size": 1}},
        "62": {"class_type": "Flux2Scheduler", "inputs": {"steps": 4, "width": ["99", 0], "height": ["99", 1]}},
        "74": {"class_type": "CLIPTextEncode", "inputs": {"text": "make the bag blue", "clip": ["71", 0]}},
        "82": {"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["74", 0]}},
        "122": {"class_type": "VAEEncode", "inputs": {"pixels": ["80", 0], "vae": ["72", 0]}},
        "123": {"class_type": "ReferenceLatent", "inputs": {"conditioning": ["74", 0], "latent": ["122", 0]}},
        "121": {"class_type": "ReferenceLatent", "inputs": {"conditioning": ["82", 0], "latent": ["122", 0]}},
        "63": {"class_type": "CFGGuider", "inputs": {"cfg": 1.0, "model": ["70", 0], "positive": ["123", 0], "negative": ["121", 0]}},
        "61": {"class_type": "KSamplerSelect", "inputs": {"sampler_name": "euler"}},
        "73": {"class_type": "RandomNoise", "inputs": {"noise_seed": 7}},
        "64": {"class_type": "SamplerCustomAdvanced", "inputs": {"noise": ["73", 0], "guider": ["63", 0], "sampler": ["61", 0], "sigmas": ["62", 0], "latent_image": ["66", 0]}},
        "65": {"class_type": "VAEDecode", "inputs": {"samples": ["64", 0], "vae": ["72", 0]}},
        "9": {"class_type": "SaveImage", "inputs": {"filename_prefix": "edit", "images": ["65", 0]}}
    })
}

/// The `Flux2Scheduler` measured at run time gives the sigmas the import
/// gives for the same written size, above and below the 4300 tokens where
/// Flux 2's fit stops reading the step count; the package runs at the
/// resized picture's size.
#[test]
fn a_measured_flux2_schedule_equals_the_written_one() {
    let l = lowered(&flux2_edit(), &Target::default());
    let w = workflow(&l);
    let schedule = &w["components"]["diffusion_schedule"];
    assert_eq!(schedule["contract"]["parameters"]["spacing"], "flux2");
    assert_eq!(schedule["contract"]["parameters"]["size"], "measured");
    assert_eq!(
        schedule["ports"]["inputs"],
        json!({"width": {"dtype": "float32", "rank": 1, "shape": [1]}, "height": {"dtype": "float32", "rank": 1, "shape": [1]}})
    );
    let steps = setup(w);
    let measure = steps
        .iter()
        .find(|s| s.0 == "picture_size")
        .expect("the picture is measured");
    // The loaded picture, measured as its resize makes it (before the
    // encoder's cut to whole multiples of 8, as GetImageSize reads it).
    assert_eq!(measure.1, json!({"image": "request.image"}));
    assert_eq!(
        w["components"]["picture_size"]["contract"]["parameters"],
        json!({"size": "total_pixels", "pixels": 10485})
    );
    assert_eq!(
        measure.2,
        json!({"width": "picture.width", "height": "picture.height"})
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("reference-flux2");
    let measured = l.document.clone();
    for (width, height) in [(1024, 768), (300, 200), (1448, 724)] {
        let mut written = flux2_edit();
        written["62"]["inputs"]["width"] = json!(width);
        written["62"]["inputs"]["height"] = json!(height);
        let written = lowered(&written, &Target::default()).document;
        let name = format!("{width}x{height}");
        let out = run_policy_alone(
            &root,
            &format!("{name}-written"),
            &written,
            "diffusion_schedule",
            &[],
        );
        let (_, want) = npy(&out.join("schedule.npy"));
        let side = |v: i64| json!({"dtype": "float32", "shape": [1], "data": [v]}).to_string();
        let inputs = [("width", side(width)), ("height", side(height))];
        let out = run_policy_alone(
            &root,
            &format!("{name}-measured"),
            &measured,
            "diffusion_schedule",
            &inputs,
        );
        let (shape, got) = npy(&out.join("schedule.npy"));
        assert_eq!(shape, [5], "{name}");
        assert_eq!(got, want, "{name}");
    }
    // 64 x 64 to 10485 pixels is 102 x 102 (96 x 96 once cut for the
    // encoder): the schedule reads 102, the latent is 6 x 6 cells of 16.
    let picture =
        json!({"dtype": "float32", "shape": [1, 3, 64, 64], "data": vec![0.5; 3 * 64 * 64]});
    let out = run_policy_alone(
        &root,
        "size",
        &measured,
        "picture_size",
        &[("image", picture.to_string())],
    );
    assert_eq!(npy(&out.join("width.npy")), (vec![1], vec![102.0]));
    assert_eq!(npy(&out.join("height.npy")), (vec![1], vec![102.0]));
    let (_, out) = package_and_run(&root, "flux2-edit", &flux2_edit());
    let (shape, latent) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [1, 128, 6, 6]);
    assert!(latent.iter().all(|v| v.is_finite()));
    let _ = std::fs::remove_dir_all(&root);
}

/// References of an edit node's picture read the edit's latent (no second
/// encode); chained references take a port each, in order, and the note
/// names every node.
#[test]
fn references_reuse_an_edits_latent_and_the_note_names_each_node() {
    let mut g = pattern("edit");
    g["9"] = json!({"class_type": "VAEEncode", "inputs": {"pixels": ["8", 0], "vae": ["1", 2]}});
    g["10"] = json!({"class_type": "ReferenceLatent", "inputs": {"conditioning": ["2", 0], "latent": ["9", 0]}});
    g["11"] = json!({"class_type": "ReferenceLatent", "inputs": {"conditioning": ["10", 0], "latent": ["9", 0]}});
    g["4"]["inputs"]["positive"] = json!(["11", 0]);
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    for (port, conditional) in [
        ("reference_latent", "edit.latent"),
        ("reference_latent_2", "edit.latent"),
    ] {
        assert_eq!(
            denoiser_bindings(w, port),
            [
                (
                    "denoiser.unconditional".to_string(),
                    json!("reference.none")
                ),
                ("denoiser.conditional".to_string(), json!(conditional)),
            ]
        );
    }
    let encodes = setup(w).iter().filter(|s| s.0 == "vae_encoder").count();
    assert_eq!(encodes, 1);
    let note = l
        .notes
        .iter()
        .find(|n| n.contains("ReferenceLatent"))
        .expect("a note");
    assert!(
        note.starts_with("nodes 10, 11 (ReferenceLatent) append the latent of request.image to the prompts (2 on the positive prompt, 0 on the negative prompt): the denoiser takes them as `reference_latent`, `reference_latent_2`"),
        "{note}"
    );
    // A picture read from LoadImage's mask output.
    let mut mask = sized();
    mask["23"]["inputs"]["image"] = json!(["16", 1]);
    assert_refused(
        &mask,
        (
            "23",
            "GetImageSize",
            Some("image"),
            "reads output 1 of node 16 (LoadImage's mask) as a picture",
        ),
    );
}
