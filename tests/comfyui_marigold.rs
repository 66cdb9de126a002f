//! Marigold v2 (depth, surface normals, albedo): a saved prompt
//! (`ConditioningLoader`) with no text encoder, the image-to-image
//! velocity sampling of `ModelSamplingAuraFlow` (`img_to_img_velocity`)
//! and `MarigoldV2PostProcess` after the decode; runs checked against
//! `tests/reference/marigold_reference.py`.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, empty_latent, lowered, npy, package_and_run, pattern, s, scratch, setup_calls,
    stage_calls, workflow, worst_relative,
};
use wfstudio_core::comfyui::lower::Target;

fn marigold(prediction: &str) -> Value {
    let mut g = pattern("marigold-depth");
    g["13"]["inputs"]["prediction"] = json!(prediction);
    g
}

#[test]
fn marigold_is_one_velocity_step_from_the_encoded_picture_on_a_saved_prompt() {
    let l = lowered(&marigold("depth"), &Target::default());
    let w = workflow(&l);
    let components = &w["components"];
    // The schedule and the policies read the model's output as the whole
    // velocity from the sample.
    let schedule = &components["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(schedule["prediction"], "img_to_img_velocity");
    assert_eq!(schedule["model_sampling"], "aura_flow");
    assert_eq!(schedule["sigmas"], "0.5,0");
    // Qwen-Image Edit's 16 channels, named by the model file.
    assert_eq!(empty_latent(&l)[2], 16);
    // The saved prompt is a model with no input, called for each side of
    // the BasicGuider.
    let loaded = &components["loaded_conditioning"]["ports"];
    assert_eq!(loaded["inputs"], json!({}));
    assert_eq!(
        loaded["outputs"]["encoder_hidden_states"]["shape"],
        json!([1, "prompt_sequence", "hidden"])
    );
    let made: Vec<_> = setup_calls(w)
        .into_iter()
        .filter(|(component, ..)| component == "loaded_conditioning")
        .collect();
    let sides = ["conditioning.conditional", "conditioning.unconditional"];
    let made: Vec<&Value> = made
        .iter()
        .map(|(_, _, outputs)| &outputs["encoder_hidden_states"])
        .collect();
    assert_eq!(made, sides);
    let stage = support::lowering::loops(w)[0];
    let calls = stage_calls(stage, "denoiser");
    assert_eq!(calls.len(), 2);
    for call in calls {
        let bound = call["inputs"]["encoder_hidden_states"].as_str();
        assert!(sides.contains(&bound.expect("bound")), "{call}");
    }
    assert!(
        l.notes.iter().any(|n| n.starts_with(
            "node 4 (ConditioningLoader) loads the conditioning 'marigold_v2_depth_conditioning.safetensors', which the package's `loaded_conditioning` model gives"
        )),
        "{:#?}",
        l.notes
    );
    // The post-processing rides on the shown picture's resize.
    let then: Vec<&Value> = components
        .as_object()
        .expect("components")
        .values()
        .filter_map(|c| c.pointer("/contract/parameters/then"))
        .collect();
    assert_eq!(then, [&json!("marigold_depth")]);
}

#[test]
fn marigold_runs_match_the_reference_in_every_mode() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("marigold");
    let reference = support::workspace().join("tests/reference/marigold_reference.py");
    // A KSampler's one step of the simple schedule from sigma 1, whose
    // seeded noise the velocity sampling ignores (its start latent is
    // noised through `add_noise`, which keeps it).
    let mut ksampler = marigold("depth");
    ksampler["11"] = json!({"class_type": "KSampler", "inputs": {"seed": 5, "steps": 1, "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0, "model": ["3", 0], "positive": ["4", 0], "negative": ["4", 0], "latent_image": ["10", 0]}});
    let runs = [
        ("depth", marigold("depth"), "0.5"),
        ("normals", marigold("normals"), "0.5"),
        ("albedo", marigold("albedo"), "0.5"),
        ("ksampler", ksampler, "1.0"),
    ];
    for (name, graph, sigma) in runs {
        let mode = graph["13"]["inputs"]["prediction"]
            .as_str()
            .expect("a mode");
        let (dir, out) = package_and_run(&root, name, &graph);
        let latent = root.join(format!("{name}-latent.npy"));
        let image = root.join(format!("{name}-image.npy"));
        let recipe = dir.join("recipes/default.json");
        let arguments = [s(&reference), s(&dir), s(&recipe), mode];
        let outputs = [s(&latent), s(&image), sigma];
        support::python_stdout(&python, &[&arguments[..], &outputs[..]].concat());
        for (ours, theirs) in [
            (out.join("latent.npy"), &latent),
            (out.join("image.npy"), &image),
        ] {
            let ((shape, a), (reference_shape, b)) = (npy(&ours), npy(theirs));
            assert_eq!(shape, reference_shape, "{name}");
            let worst = worst_relative(&a, &b);
            eprintln!("Marigold {name} against its reference: {worst:.2e}");
            assert!(worst <= 1e-5, "{name}: worst |a - b| / (1 + |b|) = {worst}");
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn what_marigold_cannot_take_is_refused() {
    let mut stochastic = marigold("depth");
    stochastic["7"]["inputs"]["sampler_name"] = json!("euler_ancestral");
    assert_refused(
        &stochastic,
        (
            "11",
            "SamplerCustomAdvanced",
            None,
            "samples with 'euler_ancestral' a model that node 3 samples as img_to_img_velocity; the lowering runs that sampling with euler only",
        ),
    );
    let disparity = marigold("disparity");
    assert_refused(
        &disparity,
        (
            "13",
            "MarigoldV2PostProcess",
            Some("prediction"),
            "makes a picture of the prediction 'disparity', which the lowering does not know",
        ),
    );
    let mut unknown = marigold("depth");
    unknown["3"]["inputs"]["sampling"] = json!("x0");
    assert_refused(
        &unknown,
        (
            "3",
            "ModelSamplingAuraFlow",
            Some("sampling"),
            "samples as 'x0', which the lowering does not know",
        ),
    );
    // A saved prompt on a model the file does not name.
    let mut unnamed = marigold("depth");
    unnamed["2"]["inputs"]["unet_name"] = json!("marigold_v2.safetensors");
    assert_refused(
        &unnamed,
        (
            "4",
            "ConditioningLoader",
            None,
            "gives node 2's model a saved prompt; the lowering knows such a model's family only by a UNETLoader file holding 'qwen_image'",
        ),
    );
    // A velocity model starts from the latent itself, not an empty one.
    let mut empty = marigold("depth");
    empty["15"] = json!({"class_type": "EmptyLatentImage", "inputs": {"width": 64, "height": 64, "batch_size": 1}});
    empty["11"]["inputs"]["latent_image"] = json!(["15", 0]);
    assert_refused(
        &empty,
        (
            "15",
            "EmptyLatentImage",
            None,
            "gives an empty latent to a model that node 3 samples as img_to_img_velocity, which starts from the latent itself",
        ),
    );
}
