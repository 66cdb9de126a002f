//! Chained samplers and several sinks: a refiner's split of the steps
//! computes what one sampler over the whole window computes; a hires fix's
//! latent upscale is PyTorch's `nearest-exact` / `bilinear` / `bicubic` resize (checked
//! against an implementation of PyTorch's index rules); every sink is
//! its own output (behind an upscale model, in ComfyUI's 0..1); later
//! stages keep their own run parameters.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    lowered, npy, package_and_run, pattern, run_policy_alone, s, scratch, workflow, worst_relative,
};
use support::resize::torch_resize;
use wfstudio_core::comfyui::lower::Target;

/// ComfyUI's refiner habit, on one checkpoint: steps 2..5 with leftover
/// noise, then 5..8 with no noise added, is the same sampling as one
/// KSamplerAdvanced over 2..8 (Euler keeps no history between steps).
#[test]
fn a_split_of_the_steps_samples_what_one_sampler_over_the_window_does() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("split");
    let whole = pattern("ksampler-advanced");
    let mut split = whole.clone();
    split["5"]["inputs"]["end_at_step"] = json!(5);
    split["5"]["inputs"]["return_with_leftover_noise"] = json!("enable");
    split["9"] = whole["5"].clone();
    split["9"]["inputs"]["add_noise"] = json!("disable");
    split["9"]["inputs"]["noise_seed"] = json!(0);
    split["9"]["inputs"]["start_at_step"] = json!(5);
    split["9"]["inputs"]["end_at_step"] = json!(8);
    split["9"]["inputs"]["latent_image"] = json!(["5", 0]);
    split["6"]["inputs"]["samples"] = json!(["9", 0]);
    let (_, whole_out) = package_and_run(&root, "whole", &whole);
    let (split_dir, split_out) = package_and_run(&root, "split", &split);
    let (shape, one) = npy(&whole_out.join("latent.npy"));
    let (split_shape, two) = npy(&split_out.join("latent.npy"));
    assert_eq!(shape, split_shape);
    let worst = worst_relative(&two, &one);
    eprintln!("split vs whole window: worst |a - b| / (1 + |b|) = {worst:.2e}");
    assert!(worst <= 1e-5, "{worst}");
    // The second stage does work: stopping it early changes the result.
    let (code, _, stderr) = support::run_wfstudio(&[
        "run",
        s(&split_dir),
        "--input",
        "stage2.request.end_step=7",
        "--out",
        s(&root.join("early")),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let (_, early) = npy(&root.join("early/latent.npy"));
    assert!(worst_relative(&early, &one) > 1e-3);
    let _ = std::fs::remove_dir_all(&root);
}

/// The hires fix's synthesized upscale, run on its own on a known latent,
/// against PyTorch's index rules: `LatentUpscaleBy` 1.5, 2.25 and 0.5 (sides
/// rounded half to even, as Python's `round`) and `LatentUpscale` to a
/// fixed size, each with every method.
#[test]
fn the_latent_upscale_resizes_as_pytorch_does() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("upscale");
    let (h, w, c) = (5usize, 6usize, 4usize);
    let latent: Vec<f32> = (0..c * h * w)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0)
        .collect();
    let input = json!({"dtype": "float32", "shape": [1, c, h, w], "data": latent}).to_string();
    let resizes = [
        (
            json!({"class_type": "LatentUpscaleBy", "inputs": {"scale_by": 1.5}}),
            (8, 9),
        ),
        (
            json!({"class_type": "LatentUpscaleBy", "inputs": {"scale_by": 2.25}}),
            (11, 14),
        ),
        // 2.5 rounds half to even, to 2 (half up would give 3).
        (
            json!({"class_type": "LatentUpscaleBy", "inputs": {"scale_by": 0.5}}),
            (2, 3),
        ),
        (
            json!({"class_type": "LatentUpscale", "inputs": {"width": 100, "height": 72, "crop": "disabled"}}),
            (9, 12),
        ),
    ];
    let mut figures = Vec::new();
    for (n, (node, (oh, ow))) in resizes.into_iter().enumerate() {
        for method in ["nearest-exact", "bilinear", "bicubic"] {
            let mut graph = pattern("hires-fix");
            let mut upscale = node.clone();
            upscale["inputs"]["upscale_method"] = json!(method);
            upscale["inputs"]["samples"] = json!(["5", 0]);
            graph["8"] = upscale;
            let document = lowered(&graph, &Target::default()).document;
            let name = format!("{n}-{method}");
            let out = run_policy_alone(
                &root,
                &name,
                &document,
                "stage2_latent_upscale",
                &[("latent", input.clone())],
            );
            let (shape, ours) = npy(&out.join("upscaled.npy"));
            assert_eq!(shape, vec![1, c, oh, ow], "{n} {method}");
            let want = torch_resize(&latent, c, (h, w), (oh, ow), method);
            let worst = worst_relative(&ours, &want);
            figures.push(format!("{n}/{method}: {worst:.1e}"));
            // The cubic weights are float32 sums of four products.
            let tolerance = if method == "bicubic" { 1e-5 } else { 1e-6 };
            assert!(worst <= tolerance, "{n} {method}: {worst}");
        }
    }
    eprintln!(
        "upscale agreement with PyTorch's rules: {}",
        figures.join(", ")
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// What the user sees of a chain: each sink an output (named after its
/// prefix where it has one), each later stage's run parameters its own
/// inputs with the graph's values, the same encoder nodes' prompts passed
/// once, a second checkpoint's models their own components, and a note per
/// stage naming the inputs that set its window.
#[test]
fn chains_lower_with_an_output_per_sink_and_inputs_per_stage() {
    let hires = lowered(&pattern("hires-fix"), &Target::default());
    let wf = workflow(&hires);
    let outputs: Vec<&String> = wf["outputs"].as_object().expect("outputs").keys().collect();
    assert_eq!(outputs, ["image", "hires", "latent"]);
    let defaults: Vec<(&str, Value)> = [
        "request.seed",
        "stage2.request.seed",
        "request.max_iterations",
        "stage2.request.max_iterations",
        "stage2.request.denoise",
    ]
    .iter()
    .map(|name| (*name, wf["inputs"][*name]["default"].clone()))
    .collect();
    assert_eq!(
        defaults,
        [
            ("request.seed", json!(5)),
            ("stage2.request.seed", json!(6)),
            ("request.max_iterations", json!(5)),
            ("stage2.request.max_iterations", json!(6)),
            ("stage2.request.denoise", json!(0.5)),
        ]
    );
    assert_eq!(
        wf["inputs"]["stage2.request.seed"]["source"],
        json!({"kind": "application", "name": "stage2_seed"})
    );
    let prompts: Vec<&str> = hires.prompts.iter().map(|(i, _)| i.as_str()).collect();
    assert_eq!(prompts, ["request.input_ids", "request.negative_input_ids"]);
    assert_eq!(
        hires.notes,
        ["stage 2 (node 9): denoise 0.5: sampling starts at step 3 of 6 (stage2.request.denoise)"]
    );
    let steps = wf["steps"].as_array().expect("steps");
    let kinds: Vec<String> = steps
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s["kind"].as_str().unwrap_or(""),
                s["output"]
                    .as_str()
                    .or(s["component"].as_str())
                    .unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "loop ",
            "loop ",
            "invoke vae_decoder",
            "emit image",
            "invoke vae_decoder",
            "emit hires",
            "emit latent"
        ]
    );
    assert_eq!(steps[1]["setup"][0]["component"], "stage2_latent_upscale");
    assert_eq!(steps[1]["setup"][0]["inputs"]["latent"], "latent_state");
    assert_eq!(steps[6]["value"], "stage2.latent_state");

    let refiner = lowered(&pattern("refiner"), &Target::default());
    let wf = workflow(&refiner);
    let models: Vec<&String> = wf["components"]
        .as_object()
        .expect("components")
        .keys()
        .filter(|c| c.contains("denoiser") || c.contains("encoder") || c.contains("vae"))
        .collect();
    assert_eq!(
        models,
        [
            "text_encoder",
            "denoiser",
            "model2_text_encoder",
            "model2_denoiser",
            "vae_decoder"
        ]
    );
    assert_eq!(wf["outputs"].as_object().expect("outputs").len(), 2);
    let prompts: Vec<&str> = refiner.prompts.iter().map(|(i, _)| i.as_str()).collect();
    assert_eq!(
        prompts,
        [
            "request.input_ids",
            "request.negative_input_ids",
            "stage2.request.input_ids",
            "stage2.request.negative_input_ids"
        ]
    );
    assert_eq!(
        refiner.notes,
        [
            "stage 1 (node 5): steps 0..6 of 8 (request.start_step, request.end_step)",
            "stage 2 (node 13): steps 6..8 of 8 (stage2.request.start_step, stage2.request.end_step)"
        ]
    );
}

/// A sink behind `ImageUpscaleWithModel` shows the upscaler's result in
/// 0..1 (the decoder's -1..1 moved there first, as ComfyUI's images are);
/// a second sink of the same decode shows it unscaled in -1..1.
#[test]
fn an_upscale_model_sink_shows_its_result_in_zero_to_one() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("upscale-model");
    let mut graph = pattern("upscale-model");
    graph["10"] = json!({"class_type": "PreviewImage", "inputs": {"images": ["6", 0]}});
    let lowered = lowered(&graph, &Target::default());
    let wf = workflow(&lowered);
    let ranges: Vec<(&String, &Value)> = wf["outputs"]
        .as_object()
        .expect("outputs")
        .iter()
        .filter_map(|(name, o)| Some((name, o.get("value_range")?)))
        .collect();
    assert_eq!(
        ranges,
        [
            (&"image".to_string(), &json!("zero_to_one")),
            (&"image_10".to_string(), &json!("negative_one_to_one"))
        ]
    );
    let (_, out) = package_and_run(&root, "upscale-model", &graph);
    let (shape, upscaled) = npy(&out.join("image.npy"));
    let (decoded_shape, decoded) = npy(&out.join("image_10.npy"));
    assert_eq!(decoded_shape, vec![1, 3, 24, 16]);
    assert_eq!(
        shape,
        vec![1, 3, 48, 32],
        "the stand-in upscaler doubles each side"
    );
    assert!(upscaled.iter().all(|v| (0.0..=1.0).contains(v)));
    assert!(decoded.iter().any(|v| *v < 0.0), "the decode is in -1..1");
    let spread = upscaled.iter().fold(f32::MIN, |a, b| a.max(*b))
        - upscaled.iter().fold(f32::MAX, |a, b| a.min(*b));
    assert!(spread > 0.05, "{spread}");
    let _ = std::fs::remove_dir_all(&root);
}
