//! Pictures through pixels: a hires fix that decodes, resizes and encodes
//! again between two samplers (`VAEDecode` -> `ImageScaleBy` ->
//! `VAEEncode`), a resized sink, a resized loaded picture; the picture
//! resizes (`ImageScale`, `ImageScaleBy`, `ImageScaleToTotalPixels`) agree
//! with PyTorch's index rules (`area` too) and Pillow's lanczos, and the resize before an encode cuts to
//! whole multiples of 8 as ComfyUI's `VAEEncode` does; the latent noise
//! mask is grown and resized to the latent as ComfyUI's sampler reads it.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, package_and_run, pattern, run_policy_alone, scratch, workflow,
    worst_relative,
};
use support::resize::torch_resize;
use wfstudio_core::comfyui::lower::Target;

/// The kind and component (or emitted output) of each top-level step.
fn top_steps(w: &Value) -> Vec<String> {
    w["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|step| match step["kind"].as_str() {
            Some("invoke") => step["component"].as_str().unwrap_or_default().to_string(),
            Some("emit") => format!("emit {}", step["output"].as_str().unwrap_or_default()),
            other => other.unwrap_or_default().to_string(),
        })
        .collect()
}

#[test]
fn a_hires_fix_through_pixels_decodes_resizes_and_encodes_between_the_stages() {
    let l = lowered(&pattern("hires-pixels"), &Target::default());
    let w = workflow(&l);
    assert_eq!(
        top_steps(w),
        [
            "loop",
            "vae_decoder",
            "decoded_pixels",
            "image_scale",
            "loop",
            "emit draft",
            "vae_decoder",
            "decoded_pixels",
            "image_scale_2",
            "emit hires",
            "emit latent"
        ]
    );
    let parameters = |c: &str| w["components"][c]["contract"]["parameters"].clone();
    assert_eq!(
        parameters("image_scale"),
        json!({"size": "scale", "scale_by": 1.5, "method": "bicubic", "multiple": 8})
    );
    assert_eq!(
        parameters("image_scale_2"),
        json!({"size": "fixed", "width": 0, "height": 48, "method": "bilinear"})
    );
    // The second stage encodes the resized draft; no picture is asked for.
    let stage2 = &w["steps"][4]["setup"];
    let encode = stage2
        .as_array()
        .expect("setup")
        .iter()
        .find(|s| s["component"] == "vae_encoder")
        .expect("an encode");
    assert_eq!(encode["inputs"], json!({"image": "resized.image_scale"}));
    assert!(w["inputs"].get("request.image").is_none());
    assert!(w["inputs"].get("stage2.request.image").is_none());
    assert_eq!(w["outputs"]["draft"]["value_range"], "negative_one_to_one");
    assert_eq!(w["outputs"]["hires"]["value_range"], "zero_to_one");

    if !support::runtime_available() {
        return;
    }
    let root = scratch("hires-pixels");
    let (_, out) = package_and_run(&root, "hires-pixels", &pattern("hires-pixels"));
    // 16 x 24 pixels, 1.5 times (24 x 36), cut to 24 x 32 for the encoder:
    // a 3 x 4 latent; its decode, 24 x 32, to height 48 keeping the aspect.
    let (draft, _) = npy(&out.join("draft.npy"));
    let (latent, _) = npy(&out.join("latent.npy"));
    let (hires, pixels) = npy(&out.join("hires.npy"));
    assert_eq!(draft, [1, 3, 24, 16]);
    assert_eq!(latent, [1, 4, 4, 3]);
    assert_eq!(hires, [1, 3, 48, 36]);
    assert!(pixels.iter().all(|v| (0.0..=1.0).contains(v)));
    let _ = std::fs::remove_dir_all(&root);
}

/// A loaded picture scaled to about `megapixels`, upscaled by a model,
/// halved and refined by img2img (an upscaler template's graph), and the
/// upscaled picture previewed too.
fn upscale_then_refine(megapixels: f64) -> Value {
    json!({
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd15.safetensors"}},
        "2": {"class_type": "CLIPTextEncode", "inputs": {"text": "sharp details", "clip": ["1", 1]}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["1", 1]}},
        "4": {"class_type": "LoadImage", "inputs": {"image": "photo.png", "upload": "image"}},
        "5": {"class_type": "ImageScaleToTotalPixels", "inputs": {"upscale_method": "lanczos", "megapixels": megapixels, "resolution_steps": 1, "image": ["4", 0]}},
        "6": {"class_type": "UpscaleModelLoader", "inputs": {"model_name": "RealESRGAN_x2.pth"}},
        "7": {"class_type": "ImageUpscaleWithModel", "inputs": {"upscale_model": ["6", 0], "image": ["5", 0]}},
        "8": {"class_type": "ImageScaleBy", "inputs": {"upscale_method": "lanczos", "scale_by": 0.5, "image": ["7", 0]}},
        "9": {"class_type": "VAEEncode", "inputs": {"pixels": ["8", 0], "vae": ["1", 2]}},
        "10": {"class_type": "KSampler", "inputs": {"seed": 5, "steps": 4, "cfg": 5.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 0.5, "model": ["1", 0], "positive": ["2", 0], "negative": ["3", 0], "latent_image": ["9", 0]}},
        "11": {"class_type": "VAEDecode", "inputs": {"samples": ["10", 0], "vae": ["1", 2]}},
        "12": {"class_type": "SaveImage", "inputs": {"filename_prefix": "refined", "images": ["11", 0]}},
        "13": {"class_type": "PreviewImage", "inputs": {"images": ["7", 0]}},
    })
}

#[test]
fn a_loaded_picture_upscaled_by_a_model_is_made_before_the_stage_that_encodes_it() {
    let l = lowered(&upscale_then_refine(0.01), &Target::default());
    let w = workflow(&l);
    // Scaled to the total first, then the model (no move from -1..1: a
    // loaded picture is in 0..1), clamped, halved and cut for the encode;
    // the sampler reads that.
    let top = top_steps(w);
    assert_eq!(
        top[..5],
        [
            "image_scale",
            "upscaler",
            "upscaled_pixels",
            "image_scale_2",
            "loop"
        ]
    );
    let steps = w["steps"].as_array().expect("steps");
    assert_eq!(steps[0]["inputs"]["image"], "request.loaded_image");
    assert_eq!(steps[1]["inputs"]["image"], steps[0]["outputs"]["scaled"]);
    assert_eq!(
        w["components"]["image_scale"]["contract"]["parameters"],
        json!({"size": "total_pixels", "pixels": 0.01 * 1024.0 * 1024.0, "method": "lanczos"})
    );
    assert_eq!(
        w["components"]["image_scale_2"]["contract"]["parameters"]["multiple"],
        json!(8)
    );
    let inputs: Vec<&String> = w["inputs"]
        .as_object()
        .expect("inputs")
        .keys()
        .filter(|k| k.contains("image"))
        .collect();
    assert_eq!(inputs, ["request.loaded_image"]);
    let encoded = steps[4]["setup"]
        .as_array()
        .expect("setup")
        .iter()
        .find(|s| s["component"] == "vae_encoder")
        .expect("the encode");
    assert_eq!(encoded["inputs"]["image"], steps[3]["outputs"]["scaled"]);
    // The preview shows the model's clamped result, made once.
    assert_eq!(
        top.iter().filter(|s| *s == "upscaler").count(),
        1,
        "{top:?}"
    );
    assert_eq!(w["outputs"]["image"]["value_range"], "zero_to_one");
    if !support::runtime_available() {
        return;
    }
    let root = scratch("upscale-refine");
    let (_, out) = package_and_run(&root, "upscale-refine", &upscale_then_refine(0.01));
    // 0.01 megapixels (of 1024 x 1024) of the recipe's square picture is
    // 102 x 102, doubled by the stand-in model, halved and cut to 96 x 96
    // for the encode.
    let (shown, values) = npy(&out.join("image.npy"));
    assert_eq!(shown, [1, 3, 204, 204]);
    assert!(values.iter().all(|v| (0.0..=1.0).contains(v)));
    let (refined, _) = npy(&out.join("refined.npy"));
    assert_eq!(refined, [1, 3, 96, 96]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn prompt_pictures_beside_an_upscaled_loaded_picture_are_refused() {
    // The stage encodes a picture made before it; a picture its prompt
    // carries would be a stage input it does not declare.
    let mut g = upscale_then_refine(0.01);
    g["14"] = json!({"class_type": "StyleModelLoader", "inputs": {"style_model_name": "style.safetensors"}});
    g["15"] = json!({"class_type": "CLIPVisionLoader", "inputs": {"clip_name": "clip_vision_h.safetensors"}});
    g["16"] = json!({"class_type": "CLIPVisionEncode", "inputs": {"crop": "center", "clip_vision": ["15", 0], "image": ["4", 0]}});
    g["17"] = json!({"class_type": "StyleModelApply", "inputs": {"strength": 1.0, "strength_type": "multiply", "conditioning": ["2", 0], "style_model": ["14", 0], "clip_vision_output": ["16", 0]}});
    g["10"]["inputs"]["positive"] = json!(["17", 0]);
    assert_refused(
        &g,
        (
            "17",
            "StyleModelApply",
            None,
            "embeds for style tokens a loaded picture in a stage that encodes a picture made before it (an earlier stage's, or one through an upscale model); the lowering takes prompt pictures of the stage's loaded picture only",
        ),
    );
}

#[test]
fn a_loaded_picture_is_resized_within_its_stage() {
    let mut graph = pattern("img2img");
    graph["9"] = json!({"class_type": "ImageScaleToTotalPixels", "inputs": {"upscale_method": "nearest-exact", "megapixels": 0.01, "image": ["8", 0]}});
    graph["4"]["inputs"]["pixels"] = json!(["9", 0]);
    let l = lowered(&graph, &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["components"]["input_scale"]["contract"]["parameters"],
        json!({"size": "total_pixels", "pixels": 10485, "method": "nearest-exact", "multiple": 8})
    );
    let setup = w["steps"][0]["setup"].as_array().expect("setup");
    let consumers: Vec<&Value> = setup
        .iter()
        .filter(|s| s["inputs"]["image"] == "latent.pixels")
        .map(|s| &s["component"])
        .collect();
    assert_eq!(
        consumers,
        [&json!("latent_row_shape"), &json!("vae_encoder")]
    );
    assert_eq!(setup[0]["inputs"], json!({"image": "request.image"}));
}

/// A resize policy of the lowered `graph`, run on its own on `picture`
/// (`[1, 3, h, w]`): the output's shape and values.
fn resized(
    root: &std::path::Path,
    name: &str,
    graph: &Value,
    component: &str,
    picture: &[f32],
    (h, w): (usize, usize),
) -> (Vec<usize>, Vec<f32>) {
    let document = lowered(graph, &Target::default()).document;
    let input = json!({"dtype": "float32", "shape": [1, 3, h, w], "data": picture}).to_string();
    let out = run_policy_alone(root, name, &document, component, &[("image", input)]);
    npy(&out.join("scaled.npy"))
}

/// Each resize class and method on a 7 x 10 picture, shown by a sink:
/// the sizes ComfyUI computes (Python's half-even `round`) and PyTorch's
/// values.
#[test]
fn picture_resizes_agree_with_pytorchs_rules() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("picture-resize");
    let (h, w) = (7usize, 10usize);
    let picture: Vec<f32> = (0..3 * h * w)
        .map(|i| ((i * 37 % 23) as f32) / 22.0)
        .collect();
    let resizes = [
        (
            json!({"class_type": "ImageScaleBy", "inputs": {"scale_by": 1.5}}),
            (10, 15),
        ),
        // 3.5 and 5 halves: 3.5 rounds to 4 (even), 5 stays.
        (
            json!({"class_type": "ImageScaleBy", "inputs": {"scale_by": 0.5}}),
            (4, 5),
        ),
        (
            json!({"class_type": "ImageScale", "inputs": {"width": 0, "height": 9, "crop": "disabled"}}),
            (9, 13),
        ),
        (
            json!({"class_type": "ImageScale", "inputs": {"width": 12, "height": 0, "crop": "disabled"}}),
            (8, 12),
        ),
        (
            json!({"class_type": "ImageScale", "inputs": {"width": 5, "height": 11, "crop": "disabled"}}),
            (11, 5),
        ),
        // 0.01 megapixels, in a graph from before `resolution_steps`:
        // 10485 pixels, sides times sqrt(10485 / 70) = 12.239: 85.67 and
        // 122.39.
        (
            json!({"class_type": "ImageScaleToTotalPixels", "inputs": {"megapixels": 0.01}}),
            (86, 122),
        ),
        // With it, 10485.76 pixels, in whole 16s: 85.67 / 16 = 5.35 and
        // 122.39 / 16 = 7.65.
        (
            json!({"class_type": "ImageScaleToTotalPixels", "inputs": {"megapixels": 0.01, "resolution_steps": 16}}),
            (80, 128),
        ),
        // The newer node: the longer side 12, the other round(7 / 10 *
        // 12) = round(8.4); the shorter 9, the other round(10 / 7 * 9) =
        // round(12.86); its total pixels the whole part of 10485.76.
        (
            json!({"class_type": "ResizeImageMaskNode", "inputs": {"resize_type": "scale longer dimension", "resize_type.longer_size": 12}}),
            (8, 12),
        ),
        (
            json!({"class_type": "ResizeImageMaskNode", "inputs": {"resize_type": "scale shorter dimension", "resize_type.shorter_size": 9}}),
            (9, 13),
        ),
        // The longer side made 12, as the newer node's longer dimension.
        (
            json!({"class_type": "ImageScaleToMaxDimension", "inputs": {"largest_size": 12}}),
            (8, 12),
        ),
        (
            json!({"class_type": "ResizeImageMaskNode", "inputs": {"resize_type": "scale total pixels", "resize_type.megapixels": 0.01}}),
            (86, 122),
        ),
        (
            json!({"class_type": "ResizeImageMaskNode", "inputs": {"resize_type": "scale dimensions", "resize_type.width": 5, "resize_type.height": 11, "resize_type.crop": "disabled"}}),
            (11, 5),
        ),
    ];
    let mut figures = Vec::new();
    for (n, (node, (oh, ow))) in resizes.into_iter().enumerate() {
        for method in ["nearest-exact", "bilinear", "bicubic"] {
            let mut graph = pattern("hires-pixels");
            let mut resize = node.clone();
            let (method_input, picture_input) = match resize["class_type"] == "ResizeImageMaskNode"
            {
                true => ("scale_method", "input"),
                false => ("upscale_method", "image"),
            };
            resize["inputs"][method_input] = json!(method);
            resize["inputs"][picture_input] = json!(["10", 0]);
            graph["13"] = resize;
            let name = format!("{n}-{method}");
            let (shape, ours) = resized(&root, &name, &graph, "image_scale_2", &picture, (h, w));
            assert_eq!(shape, vec![1, 3, oh, ow], "{name}");
            let want = torch_resize(&picture, 3, (h, w), (oh, ow), method);
            let worst = worst_relative(&ours, &want);
            figures.push(format!("{name}: {worst:.1e}"));
            assert!(worst <= 1e-5, "{name}: {worst}");
        }
    }
    eprintln!(
        "picture resizes against PyTorch's rules: {}",
        figures.join(", ")
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// The largest difference of `ours` from `tests/reference/resample_reference.py`
/// run on `case` (written to `at.json`).
fn worst_against_reference(
    python: &std::path::Path,
    at: &std::path::Path,
    case: &Value,
    ours: &[f32],
) -> f32 {
    let file = at.with_extension("json");
    std::fs::write(&file, case.to_string()).expect("case");
    let script = support::workspace().join("tests/reference/resample_reference.py");
    let out = support::python_stdout(python, &[script.as_os_str(), file.as_os_str()]);
    let want: Vec<f32> = serde_json::from_str(&out).expect("reference values");
    assert_eq!(want.len(), ours.len());
    ours.iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max)
}

/// `area` (PyTorch's adaptive average pooling) and `lanczos` (Pillow's, on
/// the 8-bit picture, as ComfyUI resizes) against the independent Python
/// reference, down, up and mixed, on a picture that is not a multiple of
/// either new size.
#[test]
fn area_and_lanczos_resizes_match_pytorch_and_pillow() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("resample");
    std::fs::create_dir_all(&root).expect("mkdir");
    let (h, w) = (23usize, 37usize);
    // Values between bytes, and whole bytes (k / 255, where the cast to 8
    // bits must land on k).
    let between: Vec<f32> = (0..3 * h * w)
        .map(|i| ((i * 7919 % 1013) as f32) / 1012.0)
        .collect();
    let bytes: Vec<f32> = (0..3 * h * w)
        .map(|i| ((i * 7919 % 256) as f32) / 255.0)
        .collect();
    let mut figures = Vec::new();
    // Both shrink (width first), the height shrinks while the width grows
    // (height first), both grow, one side kept, both shrink with the
    // height by more than twice the width (height first).
    let sizes = [(10, 15), (9, 80), (41, 60), (23, 20), (5, 30)];
    for ((oh, ow), (kind, picture)) in sizes
        .into_iter()
        .flat_map(|size| [("between", &between), ("bytes", &bytes)].map(|p| (size, p)))
    {
        for method in ["area", "lanczos"] {
            let mut graph = pattern("hires-pixels");
            graph["13"] = json!({"class_type": "ImageScale", "inputs": {"upscale_method": method, "width": ow, "height": oh, "crop": "disabled", "image": ["10", 0]}});
            let name = format!("{oh}x{ow}-{method}-{kind}");
            let (shape, ours) = resized(&root, &name, &graph, "image_scale_2", picture, (h, w));
            assert_eq!(shape, vec![1, 3, oh, ow], "{name}");
            let case = json!({"picture": picture, "channels": 3, "h": h, "w": w, "oh": oh, "ow": ow, "method": method});
            let worst = worst_against_reference(&python, &root.join(&name), &case, &ours);
            figures.push(format!("{name}: {worst:.1e}"));
            // Lanczos is exact in 8 bits (1/255 apart); area to float32.
            assert!(worst <= 1e-6, "{name}: worst difference {worst}");
        }
    }
    eprintln!(
        "area and lanczos against the reference: {}",
        figures.join(", ")
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// `FluxKontextImageScale` takes the Kontext size nearest the picture's
/// aspect (a wide, a tall and a square picture) and resizes its centred
/// part by lanczos, as ComfyUI does (checked against Pillow on the wide
/// one, whose rows are cut).
#[test]
fn the_kontext_scale_takes_the_nearest_kontext_size_and_resizes_by_lanczos() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("kontext-scale");
    std::fs::create_dir_all(&root).expect("mkdir");
    let mut graph = pattern("hires-pixels");
    graph["13"] = json!({"class_type": "FluxKontextImageScale", "inputs": {"image": ["10", 0]}});
    let l = lowered(&graph, &Target::default());
    assert_eq!(
        workflow(&l)["components"]["image_scale_2"]["contract"]["parameters"],
        json!({"size": "flux_kontext", "crop": "center", "method": "lanczos"})
    );
    for ((h, w), (oh, ow)) in [
        ((90, 160), (752, 1392)),
        ((16, 7), (1568, 672)),
        ((10, 10), (1024, 1024)),
    ] {
        let picture: Vec<f32> = (0..3 * h * w)
            .map(|i| ((i * 7919 % 1013) as f32) / 1012.0)
            .collect();
        let name = format!("{h}x{w}");
        let (shape, ours) = resized(&root, &name, &graph, "image_scale_2", &picture, (h, w));
        assert_eq!(shape, vec![1, 3, oh, ow], "{name}");
        if (h, w) != (90, 160) {
            continue;
        }
        // 90 x 160 (16:9) takes 1392 x 752, cutting 2 rows off each end.
        let case = json!({"picture": picture, "channels": 3, "h": h, "w": w, "oh": oh, "ow": ow, "method": "lanczos", "crop": "center"});
        let worst = worst_against_reference(&python, &root.join("wide"), &case, &ours);
        assert!(worst <= 1e-6, "worst difference {worst}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// The resize before an encode keeps the centred whole multiples of 8, as
/// `VAEEncode` crops: 13 x 21 keeps rows 2..10 and columns 2..18.
#[test]
fn the_resize_before_an_encode_cuts_to_whole_multiples_of_8() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("encode-crop");
    let (h, w) = (13usize, 21usize);
    let picture: Vec<f32> = (0..3 * h * w).map(|i| i as f32).collect();
    let mut graph = pattern("hires-pixels");
    graph["8"]["inputs"]["scale_by"] = json!(1.0);
    graph["8"]["inputs"]["upscale_method"] = json!("nearest-exact");
    let (shape, ours) = resized(&root, "crop", &graph, "image_scale", &picture, (h, w));
    assert_eq!(shape, vec![1, 3, 8, 16]);
    let want: Vec<f32> = (0..3)
        .flat_map(|c| {
            (2..10).flat_map(move |y| (2..18).map(move |x| (c * h * w + y * w + x) as f32))
        })
        .collect();
    assert_eq!(ours, want);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn total_pixels_are_whole_only_in_a_graph_from_before_resolution_steps() {
    if !support::runtime_available() {
        return;
    }
    // 5 x 26 at 0.01 megapixels: the width is 26 * sqrt(10485 / 130) =
    // 233.4995 from the whole pixels, 233.5079 from 10485.76.
    let root = scratch("total-pixels");
    let picture = vec![0.5f32; 3 * 5 * 26];
    for (steps, wide) in [(None, 233), (Some(1), 234)] {
        let mut graph = pattern("hires-pixels");
        graph["13"] = json!({"class_type": "ImageScaleToTotalPixels", "inputs": {"upscale_method": "area", "megapixels": 0.01, "image": ["10", 0]}});
        if let Some(steps) = steps {
            graph["13"]["inputs"]["resolution_steps"] = json!(steps);
        }
        let name = format!("steps-{steps:?}");
        let (shape, _) = resized(&root, &name, &graph, "image_scale_2", &picture, (5, 26));
        assert_eq!(shape, vec![1, 3, 45, wide], "{name}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn pixels_the_lowering_cannot_make_are_refused_by_node() {
    let hires = |edit: &dyn Fn(&mut Value)| {
        let mut g = pattern("hires-pixels");
        edit(&mut g);
        g
    };
    assert_refused(
        &hires(&|g| g["8"]["inputs"]["upscale_method"] = json!("bislerp")),
        (
            "8",
            "ImageScaleBy",
            Some("upscale_method"),
            "is 'bislerp'; the lowering resizes pictures by nearest-exact, bilinear, area, bicubic or lanczos only",
        ),
    );
    assert_refused(
        &hires(&|g| {
            g["8"]["inputs"]["image"] = json!(["15", 0]);
            g["15"] = json!({"class_type": "ImageInvert", "inputs": {"image": ["6", 0]}});
        }),
        (
            "15",
            "ImageInvert",
            None,
            "feeds `image` of node 8 as its image, which the importer supports only from VAEDecode, VAEDecodeTiled or LoadImage",
        ),
    );
    let newer = |resize_type: &str, method: &str| {
        hires(&|g| {
            g["8"] = json!({"class_type": "ResizeImageMaskNode", "inputs": {"resize_type": resize_type, "resize_type.multiple": 8, "scale_method": method, "input": ["6", 0]}});
        })
    };
    assert_refused(
        &newer("scale to multiple", "area"),
        (
            "8",
            "ResizeImageMaskNode",
            Some("resize_type"),
            "is 'scale to multiple', which scales the picture to cover whole multiples and cuts it; the lowering resizes by the node's own sizes only",
        ),
    );
    let mut none = newer("scale longer dimension", "area");
    none["8"]["inputs"]["resize_type.longer_size"] = json!(0);
    assert_refused(
        &none,
        (
            "8",
            "ResizeImageMaskNode",
            Some("resize_type.longer_size"),
            "is 0",
        ),
    );
    assert_refused(
        &newer("scale by multiplier", "bislerp"),
        (
            "8",
            "ResizeImageMaskNode",
            Some("scale_method"),
            "is 'bislerp'; the lowering resizes pictures by nearest-exact, bilinear, area, bicubic or lanczos only",
        ),
    );
}

/// ComfyUI's noise mask as its sampler reads it, written from its code:
/// `VAEEncodeForInpaint` rounds the mask and sums it over a `grow` x `grow`
/// window padded by `ceil((grow - 1) / 2)` (clamped to 1, cut back to the
/// mask's size); `reshape_mask` then interpolates it bilinearly to the
/// latent's cells.
fn comfyui_noise_mask(
    mask: &[f32],
    (h, w): (usize, usize),
    (grow, round): (usize, bool),
    cells: (usize, usize),
) -> Vec<f32> {
    let mut m: Vec<f32> = mask
        .iter()
        .map(|v| if round { v.round_ties_even() } else { *v })
        .collect();
    if grow > 0 {
        // ceil((grow - 1) / 2)
        let pad = (grow as i64) / 2;
        let mut grown = vec![0f32; h * w];
        for y in 0..h as i64 {
            for x in 0..w as i64 {
                let mut sum = 0f32;
                for dy in 0..grow as i64 {
                    for dx in 0..grow as i64 {
                        let (yy, xx) = (y - pad + dy, x - pad + dx);
                        if (0..h as i64).contains(&yy) && (0..w as i64).contains(&xx) {
                            sum += m[yy as usize * w + xx as usize];
                        }
                    }
                }
                grown[y as usize * w + x as usize] = sum.clamp(0.0, 1.0);
            }
        }
        m = grown;
    }
    torch_resize(&m, 1, (h, w), cells, "bilinear")
}

#[test]
fn the_noise_mask_is_grown_and_resized_to_the_latent_as_comfyui_does() {
    let (h, w) = (24, 32);
    let mask: Vec<f32> = (0..h * w).map(|i| ((i * 37) % 29) as f32 / 28.0).collect();
    let mask_text = json!({"dtype": "float32", "shape": [1, 1, h, w], "data": mask}).to_string();
    let like =
        json!({"dtype": "float32", "shape": [1, 4, 3, 4], "data": vec![0.0; 48]}).to_string();
    let root = scratch("noise-mask");
    // VAEEncodeForInpaint (rounded, grown by an even, an odd and a 1-wide
    // window) and SetLatentNoiseMask (as is).
    for (name, grow, round) in [
        ("inpaint", 6, true),
        ("inpaint", 5, true),
        ("inpaint", 1, true),
        ("latent-noise-mask", 0, false),
    ] {
        let mut graph = pattern(name);
        if name == "inpaint" {
            let encode = graph
                .as_object()
                .expect("graph")
                .iter()
                .find(|(_, n)| n["class_type"] == "VAEEncodeForInpaint")
                .map(|(id, _)| id.clone())
                .expect("the encode");
            graph[&encode]["inputs"]["grow_mask_by"] = json!(grow);
        }
        let l = lowered(&graph, &Target::default());
        assert_eq!(
            workflow(&l)["components"]["latent_mask"]["contract"]["parameters"],
            json!({"grow_mask_by": grow, "round": round, "resize": "bilinear"})
        );
        if !support::runtime_available() {
            continue;
        }
        let out = run_policy_alone(
            &root,
            &format!("{name}-{grow}"),
            &l.document,
            "latent_mask",
            &[("mask", mask_text.clone()), ("like", like.clone())],
        );
        let (shape, ours) = npy(&out.join("latent_mask.npy"));
        assert_eq!(shape, [1, 1, 3, 4], "{name}");
        let want = comfyui_noise_mask(&mask, (h, w), (grow, round), (3, 4));
        let worst = ours
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst < 1e-6, "{name} {grow}: {ours:?} against {want:?}");
    }
}
