//! Picture operations between a picture and the node that reads it
//! (`ImageInvert`, `Canny`): they ride on the picture's resize policy
//! (parameter `then`), and the policy's pixels equal the independent
//! numpy reference of ComfyUI's nodes (`tests/reference/picture_ops_reference.py`,
//! kornia's Canny written from its definition).

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, pattern, run_policy_alone, scratch, setup_calls, stage_calls,
    workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// The img2img pattern with `ops` (class and inputs, in order from the
/// loaded picture) between its `LoadImage` and its `VAEEncode`.
fn img2img_through(ops: &[Value]) -> Value {
    let mut graph = pattern("img2img");
    let mut from = json!(["8", 0]);
    for (n, op) in ops.iter().enumerate() {
        let id = format!("{}", 20 + n);
        let mut node = op.clone();
        node["inputs"]["image"] = from;
        graph[&id] = node;
        from = json!([id, 0]);
    }
    graph["4"]["inputs"]["pixels"] = from;
    graph
}

fn canny(low: f64, high: f64) -> Value {
    json!({"class_type": "Canny", "inputs": {"low_threshold": low, "high_threshold": high}})
}

fn invert() -> Value {
    json!({"class_type": "ImageInvert", "inputs": {}})
}

/// A 40 x 48 picture with hard and soft edges: a bright disc, a dark
/// bar, a faint diagonal band (weak edges) and a gentle gradient.
fn picture(h: usize, w: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; 3 * h * w];
    for c in 0..3 {
        for y in 0..h {
            for x in 0..w {
                let (fy, fx) = (y as f32, x as f32);
                let mut v = 0.2 + 0.3 * fx / w as f32;
                if (fx - 30.0).powi(2) + (fy - 14.0).powi(2) < 64.0 {
                    v = 0.9 - 0.1 * c as f32;
                }
                if (22..26).contains(&y) && (4..40).contains(&x) {
                    v = 0.05;
                }
                if ((fx + fy) as i32 % 13) < 3 {
                    v += 0.06 * (1 + c) as f32;
                }
                out[(c * h + y) * w + x] = v.min(1.0);
            }
        }
    }
    out
}

/// `ops` run by the lowered `input_scale` policy and by the reference:
/// (ours, the reference's, the reference's ties: pixels whose suppression
/// compares equal magnitudes, decided by float rounding).
fn both(
    root: &std::path::Path,
    python: &std::path::Path,
    (name, (h, w)): (&str, (usize, usize)),
    ops: &[Value],
    reference_ops: Value,
) -> (Vec<f32>, Vec<f32>, Vec<usize>) {
    let picture = picture(h, w);
    let document = lowered(&img2img_through(ops), &Target::default()).document;
    let input = json!({"dtype": "float32", "shape": [1, 3, h, w], "data": picture}).to_string();
    let out = run_policy_alone(root, name, &document, "input_scale", &[("image", input)]);
    let (shape, ours) = npy(&out.join("scaled.npy"));
    // The encode cuts each side to whole 8s.
    assert_eq!(shape, vec![1, 3, h / 8 * 8, w / 8 * 8], "{name}");
    let case = json!({"picture": picture, "h": h, "w": w, "ops": reference_ops});
    let file = root.join(format!("{name}.json"));
    std::fs::write(&file, case.to_string()).expect("case");
    let script = support::workspace().join("tests/reference/picture_ops_reference.py");
    let printed = support::python_stdout(python, &[script.as_os_str(), file.as_os_str()]);
    let printed: Value = serde_json::from_str(&printed).expect("reference values");
    let values = |key: &str| printed[key].as_array().expect("a list").clone();
    let want = values("values")
        .iter()
        .filter_map(Value::as_f64)
        .map(|v| v as f32)
        .collect();
    let ties = values("ties")
        .iter()
        .filter_map(Value::as_u64)
        .map(|v| v as usize)
        .collect();
    (ours, want, ties)
}

#[test]
fn canny_and_invert_equal_the_reference_of_comfyuis_nodes() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("picture-ops");
    std::fs::create_dir_all(&root).expect("mkdir");
    let whole = (40, 48);
    let cases = [
        (
            ("canny", whole),
            vec![canny(0.15, 0.3)],
            json!([["canny", 0.15, 0.3]]),
        ),
        // Low thresholds: many weak edges, joined by hysteresis.
        (
            ("canny-low", whole),
            vec![canny(0.02, 0.2)],
            json!([["canny", 0.02, 0.2]]),
        ),
        (("invert", whole), vec![invert()], json!([["invert"]])),
        (
            ("canny-invert", whole),
            vec![canny(0.1, 0.4), invert()],
            json!([["canny", 0.1, 0.4], ["invert"]]),
        ),
        // Sides that are not whole 8s: the edges of the whole picture,
        // then the encode's cut to its middle.
        (
            ("canny-cut", (43, 53)),
            vec![canny(0.15, 0.3)],
            json!([["canny", 0.15, 0.3], ["cut", 8]]),
        ),
    ];
    let mut figures = Vec::new();
    for ((name, size), ops, reference_ops) in cases {
        let (ours, want, ties) = both(&root, &python, (name, size), &ops, reference_ops);
        assert_eq!(ours.len(), want.len(), "{name}");
        let pixels = want.len() / 3;
        let differing: Vec<usize> = (0..want.len())
            .filter(|&i| (ours[i] - want[i]).abs() > 1e-6)
            .map(|i| i % pixels)
            .collect();
        let edges = want.iter().filter(|v| **v == 1.0).count();
        figures.push(format!(
            "{name}: {} of {} values differ, all at ties ({} tie pixels, {edges} ones)",
            differing.len(),
            want.len(),
            ties.len()
        ));
        // Only a tie may go either way, and ties are few: a reference
        // that called every pixel a tie would excuse any difference.
        assert!(ties.len() <= pixels / 16, "{name}: {} ties", ties.len());
        let untied: Vec<&usize> = differing.iter().filter(|p| !ties.contains(p)).collect();
        assert!(
            untied.is_empty(),
            "{name}: pixels {untied:?} differ from the reference"
        );
        if name.starts_with("canny") && !name.ends_with("invert") {
            assert!(
                edges > 60 && edges < want.len() / 2,
                "{name}: {edges} edge values"
            );
        }
    }
    eprintln!(
        "picture operations against the reference: {}",
        figures.join(", ")
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn operations_ride_on_the_pictures_resize_policy() {
    // Resized, then Canny: one policy, the resize's, with the edges after.
    let graph = img2img_through(&[
        json!({"class_type": "ImageScale", "inputs": {"upscale_method": "bilinear", "width": 64, "height": 48, "crop": "center"}}),
        canny(0.2, 0.5),
        invert(),
    ]);
    let l = lowered(&graph, &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["components"]["input_scale"]["contract"]["parameters"],
        json!({"size": "fixed", "width": 64, "height": 48, "crop": "center", "method": "bilinear", "then": "canny,invert", "canny_low_threshold": 0.2, "canny_high_threshold": 0.5, "multiple": 8})
    );
    // No resize: the policy keeps the size and runs the operations.
    let l = lowered(&img2img_through(&[invert()]), &Target::default());
    assert_eq!(
        workflow(&l)["components"]["input_scale"]["contract"]["parameters"],
        json!({"size": "same", "then": "invert", "multiple": 8})
    );
}

#[test]
fn canny_the_lowering_cannot_run_is_refused_by_node() {
    assert_refused(
        &img2img_through(&[canny(0.5, 0.2)]),
        (
            "20",
            "Canny",
            Some("low_threshold"),
            "is 0.5, above high_threshold 0.2",
        ),
    );
    assert_refused(
        &img2img_through(&[canny(0.2, 0.5), canny(0.1, 0.3)]),
        (
            "20",
            "Canny",
            None,
            "finds edges in a picture whose edges node 21 finds again; the lowering runs one Canny on a picture",
        ),
    );
    assert_refused(
        &img2img_through(&[canny(0.0, 0.5)]),
        ("20", "Canny", Some("low_threshold"), "is 0"),
    );
}

#[test]
fn a_sink_shows_a_loaded_picture_through_its_operations() {
    // ComfyUI's preview of the edges a control model reads: the stage
    // reads the picture as `request.image`, the preview shows it through
    // the same Canny at the top level, in 0..1.
    let mut graph = img2img_through(&[canny(0.2, 0.5)]);
    graph["9"] = json!({"class_type": "PreviewImage", "inputs": {"images": ["20", 0]}});
    let l = lowered(&graph, &Target::default());
    let w = workflow(&l);
    let outputs: Vec<&String> = w["outputs"].as_object().expect("outputs").keys().collect();
    assert_eq!(outputs, ["out", "image", "latent"]);
    assert_eq!(w["outputs"]["image"]["value_range"], "zero_to_one");
    let steps = w["steps"].as_array().expect("steps");
    let scale = steps
        .iter()
        .find(|s| s["component"] == "image_scale")
        .expect("the preview's policy");
    assert_eq!(scale["inputs"], json!({"image": "request.image"}));
    assert_eq!(
        w["components"]["image_scale"]["contract"]["parameters"],
        json!({"size": "same", "then": "canny", "canny_low_threshold": 0.2, "canny_high_threshold": 0.5})
    );
    let shown = steps
        .iter()
        .find(|s| s["output"] == "image")
        .expect("the preview's emit");
    assert_eq!(shown["value"], scale["outputs"]["scaled"]);
}

#[test]
fn a_graph_of_loaded_pictures_alone_becomes_a_package_that_runs() {
    if !support::runtime_available() {
        return;
    }
    // No sampler: a picture resized and inverted, as a utility template
    // does. The picture is an input of its own, the result the output.
    let graph = json!({
        "1": {"class_type": "LoadImage", "inputs": {"image": "photo.png", "upload": "image"}},
        "2": {"class_type": "ImageScaleBy", "inputs": {"upscale_method": "nearest-exact", "scale_by": 2.0, "image": ["1", 0]}},
        "3": {"class_type": "ImageInvert", "inputs": {"image": ["2", 0]}},
        "4": {"class_type": "SaveImage", "inputs": {"images": ["3", 0], "filename_prefix": "big"}},
    });
    let l = lowered(&graph, &Target::default());
    let w = workflow(&l);
    let inputs: Vec<&String> = w["inputs"].as_object().expect("inputs").keys().collect();
    assert_eq!(inputs, ["request.loaded_image"]);
    let outputs: Vec<&String> = w["outputs"].as_object().expect("outputs").keys().collect();
    assert_eq!(outputs, ["image"]);
    let root = scratch("loaded-alone");
    let (dir, out) = support::lowering::package_and_run(&root, "invert", &graph);
    let recipe: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("recipes/default.json")).expect("the default recipe"),
    )
    .expect("JSON");
    let given = &recipe["inputs"]["request.loaded_image"];
    let (h, w) = (
        given["shape"][2].as_u64().expect("height") as usize,
        given["shape"][3].as_u64().expect("width") as usize,
    );
    let data: Vec<f32> = given["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(Value::as_f64)
        .map(|v| v as f32)
        .collect();
    let (shape, shown) = npy(&out.join("image.npy"));
    assert_eq!(shape, vec![1, 3, 2 * h, 2 * w]);
    // Nearest-exact doubling: every output pixel is its source's inverse.
    for c in 0..3 {
        for y in 0..2 * h {
            for x in 0..2 * w {
                let want = 1.0 - data[(c * h + y / 2) * w + x / 2];
                let got = shown[(c * 2 * h + y) * 2 * w + x];
                assert!(
                    (got - want).abs() < 1e-6,
                    "({c}, {y}, {x}): {got} != {want}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_loop_of_picture_operations_is_refused_and_a_graph_without_a_sampler_takes_a_target() {
    let mut looped = img2img_through(&[invert(), invert()]);
    looped["20"]["inputs"]["image"] = json!(["21", 0]);
    let refusals =
        wfstudio_core::comfyui::lower::lower_for(&looped, &Target::default()).expect_err("refused");
    assert_eq!(
        refusals[0].message,
        "is part of a loop of picture operations"
    );
    // No sampler: no model for a target's adapters, and no panic.
    let graph = json!({
        "1": {"class_type": "LoadImage", "inputs": {"image": "photo.png", "upload": "image"}},
        "2": {"class_type": "ImageInvert", "inputs": {"image": ["1", 0]}},
        "3": {"class_type": "SaveImage", "inputs": {"images": ["2", 0], "filename_prefix": "inverted"}},
    });
    let l = lowered(&graph, &support::lowering::lora_target());
    let outputs: Vec<&String> = workflow(&l)["outputs"]
        .as_object()
        .expect("outputs")
        .keys()
        .collect();
    assert_eq!(outputs, ["image"]);
}

#[test]
fn a_picture_file_is_a_run_input_from_the_command_line() {
    if !support::runtime_available() {
        return;
    }
    let graph = json!({
        "1": {"class_type": "LoadImage", "inputs": {"image": "photo.png", "upload": "image"}},
        "2": {"class_type": "ImageInvert", "inputs": {"image": ["1", 0]}},
        "3": {"class_type": "SaveImage", "inputs": {"images": ["2", 0], "filename_prefix": "inverted"}},
    });
    let root = scratch("picture-file");
    let (dir, _) = support::lowering::package_and_run(&root, "invert", &graph);
    // A 5 x 4 picture of known bytes, as a PNG file.
    let (w, h) = (5u32, 4u32);
    let bytes: Vec<u8> = (0..w * h * 3).map(|i| (i * 37 % 256) as u8).collect();
    let png = root.join("photo.png");
    image::RgbImage::from_raw(w, h, bytes.clone())
        .expect("a picture")
        .save(&png)
        .expect("write the PNG");
    let out = root.join("from-file");
    let input = format!("request.loaded_image=@{}", png.display());
    let (code, stdout, stderr) = support::run_wfstudio(&[
        "run",
        support::lowering::s(&dir),
        "--input",
        &input,
        "--out",
        support::lowering::s(&out),
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.contains("5×4 RGB"), "{stderr}");
    let (shape, shown) = npy(&out.join("image.npy"));
    assert_eq!(shape, vec![1, 3, h as usize, w as usize]);
    for c in 0..3usize {
        for p in 0..(w * h) as usize {
            let want = 1.0 - f32::from(bytes[p * 3 + c]) / 255.0;
            let got = shown[c * (w * h) as usize + p];
            assert!((got - want).abs() < 1e-6, "({c}, {p}): {got} != {want}");
        }
    }
    // A file for an input that takes none is refused by name.
    let (code, _, stderr) = support::run_wfstudio(&[
        "run",
        support::lowering::s(&dir),
        "--input",
        &format!("request.nothing=@{}", png.display()),
    ]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("--input request.nothing: the package declares no input of this name"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_controlnet_reads_its_picture_resized_and_processed() {
    // The pattern's ControlNet reads its picture through ImageScale
    // (bilinear to 16x16, centre crop) and Canny, which a preview shows too.
    let l = lowered(&pattern("canny-control"), &Target::default());
    let w = workflow(&l);
    let made: Vec<(String, Value, Value)> = setup_calls(w)
        .into_iter()
        .filter(|(c, _, _)| c == "control_picture")
        .collect();
    assert_eq!(
        made,
        [(
            "control_picture".to_string(),
            json!({"image": "request.control_image"}),
            json!({"scaled": "control.pixels"})
        )]
    );
    assert_eq!(
        w["components"]["control_picture"]["contract"]["parameters"],
        json!({"size": "fixed", "width": 16, "height": 16, "crop": "center", "method": "bilinear", "then": "canny", "canny_low_threshold": 0.1, "canny_high_threshold": 0.3})
    );
    let controlnet = stage_calls(&w["steps"][0], "controlnet");
    assert!(!controlnet.is_empty());
    for call in controlnet {
        assert_eq!(call["inputs"]["image"], "control.pixels");
    }
    // The loaded picture has extents of its own.
    assert_eq!(
        w["inputs"]["request.control_image"]["contract"]["shape"],
        json!(["batch", 3, "control_image_height", "control_image_width"])
    );
}

#[test]
fn the_preview_of_a_processed_control_picture_shows_what_the_controlnet_reads() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("canny-control-run");
    let graph = pattern("canny-control");
    let (dir, _) = support::lowering::package_and_run(&root, "canny-control", &graph);
    // A picture with edges, given on the command line over the recipe's.
    let given =
        json!({"dtype": "float32", "shape": [1, 3, 40, 48], "data": picture(40, 48)}).to_string();
    let out = root.join("edges-out");
    let recipe = dir.join("recipes/default.json");
    let input = format!("request.control_image={given}");
    let args = [
        "run",
        support::lowering::s(&dir),
        "--recipe",
        support::lowering::s(&recipe),
        "--input",
        &input,
        "--out",
        support::lowering::s(&out),
    ];
    let (code, stdout, stderr) = support::run_wfstudio(&args);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let l = lowered(&graph, &Target::default());
    let alone = run_policy_alone(
        &root,
        "control-picture",
        &l.document,
        "control_picture",
        &[("image", given)],
    );
    let (shape, read) = npy(&alone.join("scaled.npy"));
    assert_eq!(shape, vec![1, 3, 16, 16]);
    let (shown_shape, shown) = npy(&out.join("image.npy"));
    assert_eq!(shown_shape, shape);
    assert_eq!(shown, read, "the preview shows the ControlNet's picture");
    // Edges: zeros and ones, some of each.
    let ones = read.iter().filter(|v| **v == 1.0).count();
    assert!(read.iter().all(|v| *v == 0.0 || *v == 1.0));
    assert!(ones > 0 && ones < read.len(), "{ones} edge values");
    let _ = std::fs::remove_dir_all(&root);
}
