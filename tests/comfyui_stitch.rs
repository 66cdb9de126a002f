//! `ImageStitch` before a picture sink: the `image_stitch` policy equals
//! the independent numpy and Pillow reference of ComfyUI's node
//! (`tests/reference/stitch_reference.py`) in every direction, matched or
//! padded, with a spacing strip; a sink shows nested stitches of loaded
//! pictures, each picture a workflow input; and the stitches the lowering
//! does not take are refused by name.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, pattern, run_policy_alone, s, scratch, stand_in_package, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// Two loaded pictures stitched by node 3 into `SaveImage` node 4.
fn stitched(direction: &str, match_size: bool, spacing: i64, colour: &str) -> Value {
    json!({
        "1": {"class_type": "LoadImage", "inputs": {"image": "a.png"}},
        "2": {"class_type": "LoadImage", "inputs": {"image": "b.png"}},
        "3": {"class_type": "ImageStitch", "inputs": {"image1": ["1", 0], "image2": ["2", 0], "direction": direction, "match_image_size": match_size, "spacing_width": spacing, "spacing_color": colour}},
        "4": {"class_type": "SaveImage", "inputs": {"filename_prefix": "stitched", "images": ["3", 0]}}
    })
}

/// A `[1, 3, h, w]` picture in 0..1 with smooth and sharp changes, its
/// values different for each `salt`.
fn picture((h, w): (usize, usize), salt: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(3 * h * w);
    for c in 0..3 {
        for y in 0..h {
            for x in 0..w {
                let wave = ((x * (salt + 2) + y * 3 + c * 7) % 17) as f32 / 16.0;
                let edge = if (x + salt).is_multiple_of(5) {
                    0.9
                } else {
                    0.1
                };
                out.push(0.5 * wave + 0.5 * edge);
            }
        }
    }
    out
}

#[test]
fn a_stitch_equals_the_reference_of_comfyuis_node() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("stitch");
    let cases = [
        ("right", true, 0, "white", (12, 16), (9, 7)),
        ("down", true, 2, "red", (10, 14), (15, 8)),
        ("left", false, 0, "white", (8, 10), (13, 6)),
        ("up", false, 4, "black", (9, 12), (7, 15)),
        ("right", false, 2, "blue", (11, 9), (6, 5)),
    ];
    for (n, (direction, match_size, spacing, colour, first_hw, second_hw)) in
        cases.into_iter().enumerate()
    {
        let name = format!("stitch-{n}");
        let graph = stitched(direction, match_size, spacing, colour);
        let document = lowered(&graph, &Target::default()).document;
        let (first, second) = (picture(first_hw, 1), picture(second_hw, 2));
        let tensor = |data: &[f32], (h, w): (usize, usize)| {
            json!({"dtype": "float32", "shape": [1, 3, h, w], "data": data}).to_string()
        };
        let inputs = [
            ("image1", tensor(&first, first_hw)),
            ("image2", tensor(&second, second_hw)),
        ];
        let out = run_policy_alone(&root, &name, &document, "image_stitch", &inputs);
        let (shape, ours) = npy(&out.join("stitched.npy"));
        let case = json!({
            "first": first, "first_hw": [first_hw.0, first_hw.1],
            "second": second, "second_hw": [second_hw.0, second_hw.1],
            "direction": direction, "match_size": match_size,
            "spacing": spacing, "colour": colour,
        });
        let file = root.join(format!("{name}.json"));
        std::fs::write(&file, case.to_string()).expect("case");
        let script = support::workspace().join("tests/reference/stitch_reference.py");
        let printed = support::python_stdout(&python, &[script.as_os_str(), file.as_os_str()]);
        let printed: Value = serde_json::from_str(&printed).expect("reference values");
        let want_shape: Vec<usize> =
            serde_json::from_value(printed["shape"].clone()).expect("shape");
        assert_eq!(shape, want_shape, "{name}");
        let want: Vec<f32> = serde_json::from_value(printed["values"].clone()).expect("values");
        let worst = ours
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst <= 1e-6, "{name}: worst {worst}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Nested stitches: node 3 puts loaded pictures 1 and 2 side by side
/// (matched), node 6 puts picture 5 under that (padded with white, a
/// white strip of 3 pixels made 4), and the sink shows node 6's stitch
/// resized.
fn nested() -> Value {
    let mut g = stitched("right", true, 0, "white");
    g["5"] = json!({"class_type": "LoadImage", "inputs": {"image": "c.png"}});
    g["6"] = json!({"class_type": "ImageStitch", "inputs": {"image1": ["3", 0], "image2": ["5", 0], "direction": "down", "match_image_size": false, "spacing_width": 3, "spacing_color": "white"}});
    g["7"] = json!({"class_type": "ImageScaleBy", "inputs": {"image": ["6", 0], "upscale_method": "nearest-exact", "scale_by": 1.0}});
    g["4"]["inputs"]["images"] = json!(["7", 0]);
    g
}

#[test]
fn a_sink_shows_nested_stitches_of_loaded_pictures() {
    let l = lowered(&nested(), &Target::default());
    let w = workflow(&l);
    let inputs: Vec<&String> = w["inputs"].as_object().expect("inputs").keys().collect();
    assert_eq!(
        inputs,
        [
            "request.loaded_image",
            "request.loaded_image_2",
            "request.loaded_image_3"
        ]
    );
    let policy = |name: &str| &w["components"][name]["contract"]["parameters"];
    assert_eq!(
        *policy("image_stitch"),
        json!({"direction": "right", "match_size": true, "spacing": 0, "colour": "white"})
    );
    assert_eq!(
        *policy("image_stitch_2"),
        json!({"direction": "down", "match_size": false, "spacing": 4, "colour": "white"})
    );
    let calls: Vec<(&str, &Value)> = w["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["kind"] == "invoke")
        .map(|s| (s["component"].as_str().unwrap_or(""), &s["inputs"]))
        .collect();
    assert_eq!(
        calls[..2],
        [
            (
                "image_stitch",
                &json!({"image1": "request.loaded_image", "image2": "request.loaded_image_2"})
            ),
            (
                "image_stitch_2",
                &json!({"image1": "stitched.3", "image2": "request.loaded_image_3"})
            ),
        ]
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("stitch-nested");
    let dir = stand_in_package(&root, "nested", &nested());
    // Pictures of 8-bit values: each pixel (x + 3 y + 50 salt) % 256.
    let sizes = [(12u32, 10u32), (6, 10), (20, 7)];
    let mut args = vec!["run".to_string(), s(&dir).to_string()];
    for (n, (w, h)) in sizes.iter().enumerate() {
        let png = root.join(format!("{n}.png"));
        let img = image::RgbImage::from_fn(*w, *h, |x, y| {
            let v = ((x + 3 * y + 50 * n as u32) % 256) as u8;
            image::Rgb([v, v / 2, 255 - v])
        });
        img.save(&png).expect("png");
        let input = match n {
            0 => "request.loaded_image".to_string(),
            n => format!("request.loaded_image_{}", n + 1),
        };
        args.extend(["--input".into(), format!("{input}=@{}", s(&png))]);
    }
    let out = root.join("out");
    args.extend(["--out".into(), s(&out).to_string()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = support::run_wfstudio(&refs);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (shape, pixels) = npy(&out.join("image.npy"));
    // 12x10 beside 6x10 (already its height): 18 wide; a 4-pixel strip;
    // then 20x7 under it: 20 wide, the upper part padded by one column on
    // each side.
    assert_eq!(shape, [1, 3, 10 + 4 + 7, 20]);
    let at = |c: usize, y: usize, x: usize| pixels[(c * 21 + y) * 20 + x];
    for y in 0..10 {
        for x in 0..12 {
            let v = ((x + 3 * y) % 256) as f32;
            let want = [v, (v as u32 / 2) as f32, 255.0 - v].map(|v| v / 255.0);
            for (c, want) in want.iter().enumerate() {
                assert!((at(c, y, x + 1) - want).abs() < 1e-6, "({c}, {y}, {x})");
            }
        }
        // The padding on both sides: the spacing colour's grey, white.
        for x in [0, 19] {
            assert_eq!(
                [at(0, y, x), at(1, y, x), at(2, y, x)],
                [1.0; 3],
                "({y}, {x})"
            );
        }
    }
    // The strip, white, then the third picture as it is.
    for y in 10..14 {
        assert_eq!([at(0, y, 5), at(1, y, 5), at(2, y, 5)], [1.0; 3]);
    }
    for y in 0..7 {
        for x in 0..20 {
            let v = ((x + 3 * y + 100) % 256) as f32 / 255.0;
            assert!((at(0, 14 + y, x) - v).abs() < 1e-6, "({y}, {x})");
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// A before-and-after picture: img2img's loaded picture (the stage's
/// `request.image`) beside its result, the decode moved to 0..1 first.
#[test]
fn a_decode_is_stitched_beside_the_picture_it_was_made_from() {
    let mut g = pattern("img2img");
    g["20"] = json!({"class_type": "ImageStitch", "inputs": {"image1": ["8", 0], "image2": ["6", 0], "direction": "right", "match_image_size": true, "spacing_width": 0, "spacing_color": "white"}});
    g["7"]["inputs"]["images"] = json!(["20", 0]);
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    let steps = w["steps"].as_array().expect("steps");
    let stitch = steps
        .iter()
        .find(|s| s["component"] == "image_stitch")
        .expect("a stitch");
    let decoded = &stitch["inputs"]["image2"];
    assert_eq!(stitch["inputs"]["image1"], "request.image");
    let unit = steps
        .iter()
        .find(|s| s["component"] == "decoded_pixels")
        .expect("the decode moved to 0..1");
    assert_eq!(unit["outputs"]["pixels"], *decoded);
    assert_eq!(w["outputs"]["image"]["value_range"], "zero_to_one");
}

/// Two sinks showing one stitch: it runs once, and both emit its value.
#[test]
fn a_stitch_two_sinks_show_runs_once() {
    let mut g = stitched("down", false, 2, "green");
    g["5"] = json!({"class_type": "PreviewImage", "inputs": {"images": ["3", 0]}});
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    let steps = w["steps"].as_array().expect("steps");
    let stitches = steps
        .iter()
        .filter(|s| s["component"] == "image_stitch")
        .count();
    assert_eq!(stitches, 1);
    let emitted: Vec<&Value> = steps
        .iter()
        .filter(|s| s["kind"] == "emit")
        .map(|s| &s["value"])
        .collect();
    assert_eq!(emitted, [&json!("stitched.3"), &json!("stitched.3")]);
}

#[test]
fn stitches_the_lowering_does_not_take_are_refused_by_name() {
    let mut bad = stitched("diagonal", true, 0, "white");
    assert_refused(
        &bad,
        (
            "3",
            "ImageStitch",
            Some("direction"),
            "is 'diagonal', not one of right, down, left, up",
        ),
    );
    bad = stitched("right", true, 0, "white");
    bad["1"] = json!({"class_type": "ImageStitch", "inputs": {"image1": ["3", 0], "image2": ["2", 0], "direction": "right", "match_image_size": true, "spacing_width": 0, "spacing_color": "white"}});
    assert_refused(
        &bad,
        (
            "3",
            "ImageStitch",
            None,
            "is part of a loop of picture stitches, or of more than 16 nested or 64 stitches",
        ),
    );
    // A chain of stitches each reading the last one twice: 2^n pictures
    // for ComfyUI, refused past 64 stitches read.
    let mut doubling = stitched("right", true, 0, "white");
    for n in 10..20 {
        let last = if n == 10 {
            "3".to_string()
        } else {
            (n - 1).to_string()
        };
        doubling[n.to_string()] = json!({"class_type": "ImageStitch", "inputs": {"image1": [last, 0], "image2": [last, 0], "direction": "right", "match_image_size": true, "spacing_width": 0, "spacing_color": "white"}});
    }
    doubling["4"]["inputs"]["images"] = json!(["19", 0]);
    let refusals = wfstudio_core::comfyui::lower::lower(&doubling).expect_err("too many");
    assert!(
        refusals[0]
            .message
            .ends_with("or of more than 16 nested or 64 stitches"),
        "{}",
        refusals[0].message
    );
    // Decodes of two and one rows: ComfyUI repeats the last picture.
    let mut rows = pattern("img2img");
    rows["4"] = json!({"class_type": "EmptyLatentImage", "inputs": {"width": 64, "height": 64, "batch_size": 1}});
    rows["5"]["inputs"]["denoise"] = json!(1.0);
    rows["9"] = json!({"class_type": "EmptyLatentImage", "inputs": {"width": 64, "height": 64, "batch_size": 2}});
    rows["10"] = json!({"class_type": "KSampler", "inputs": {"seed": 1, "steps": 2, "cfg": 5.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0, "model": ["1", 0], "positive": ["2", 0], "negative": ["3", 0], "latent_image": ["9", 0]}});
    rows["11"] =
        json!({"class_type": "VAEDecode", "inputs": {"samples": ["10", 0], "vae": ["1", 2]}});
    rows["20"] = json!({"class_type": "ImageStitch", "inputs": {"image1": ["6", 0], "image2": ["11", 0], "direction": "right", "match_image_size": true, "spacing_width": 0, "spacing_color": "white"}});
    rows["7"]["inputs"]["images"] = json!(["20", 0]);
    assert_refused(
        &rows,
        (
            "20",
            "ImageStitch",
            None,
            "stitches pictures of 1 and 2 rows; ComfyUI repeats the last picture of the shorter batch, which the lowering does not",
        ),
    );
    let mut video = stitched("right", true, 0, "white");
    video["4"] = json!({"class_type": "SaveAnimatedWEBP", "inputs": {"filename_prefix": "x", "fps": 8.0, "lossless": false, "quality": 80, "method": "default", "images": ["3", 0]}});
    assert_refused(
        &video,
        (
            "3",
            "ImageStitch",
            None,
            "stitches the frames video sink 4 shows; the lowering shows stitched pictures as pictures only",
        ),
    );
    // The img2img pattern encoding a stitch of its picture with itself.
    let mut encoded = pattern("img2img");
    encoded["20"] = json!({"class_type": "ImageStitch", "inputs": {"image1": ["8", 0], "image2": ["8", 0], "direction": "right", "match_image_size": true, "spacing_width": 0, "spacing_color": "white"}});
    encoded["4"]["inputs"]["pixels"] = json!(["20", 0]);
    assert_refused(
        &encoded,
        (
            "20",
            "ImageStitch",
            None,
            "stitches the pictures node 4 reads; the lowering stitches pictures a sink shows only",
        ),
    );
}
