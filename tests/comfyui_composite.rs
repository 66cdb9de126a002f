//! `LatentComposite` between sampler stages: the synthesized
//! `latent_composite` policy pastes as ComfyUI's node does (checked here
//! against the node's own steps: crop, region assignment or the feathered
//! blend built with Python's slice rules), a chain of composites lowers as
//! one stage that samples the result and runs, and composites of latents
//! whose sizes the graph does not fix are refused by name.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    Expected, assert_refused, component_only, lowered, npy, package_and_run, pattern, s, scratch,
    tensor, worst_relative,
};
use wfstudio_core::comfyui::lower::Target;

/// The composite pattern: a base 80x64 pixels (10x8 cells); paste 1,
/// 40x32 at (48, 8) feathered 16 pixels, cropped at the right border;
/// paste 2, 24x24 at (0, 40) feathered 40 pixels (more rows than it has:
/// Python's negative slice bounds wrap), at the left and bottom borders;
/// then a KSampler at denoise 0.5 samples the composite.
fn graph() -> Value {
    pattern("composite")
}

/// ComfyUI's `LatentComposite.composite` on `[batch, channels, h, w]`
/// tensors, step by step as the node writes it (pixels in, over 8).
fn comfy_composite(
    to: &[f32],
    (n, c, height, width): (usize, usize, usize, usize),
    from: &[f32],
    (fh, fw): (usize, usize),
    (x, y, feather): (usize, usize, usize),
) -> Vec<f32> {
    let (x, y, feather) = (x / 8, y / 8, feather / 8);
    let mut s = to.to_vec();
    // samples_from[:, :, :H - y, :W - x]
    let (h, w) = (fh.min(height - y), fw.min(width - x));
    let mut mask = vec![1f32; h * w];
    let py = |start: i64, end: i64, len: usize| {
        let len = len as i64;
        let b = |v: i64| if v < 0 { (v + len).max(0) } else { v.min(len) };
        (b(start) as usize)..(b(end).max(b(start)) as usize)
    };
    for t in 0..feather as i64 {
        let f = ((1.0 / feather as f64) * (t + 1) as f64) as f32;
        let (hh, ww) = (h as i64, w as i64);
        if y != 0 {
            for i in py(t, t + 1, h) {
                (0..w).for_each(|j| mask[i * w + j] *= f);
            }
        }
        if y + h < height {
            for i in py(hh - 1 - t, hh - t, h) {
                (0..w).for_each(|j| mask[i * w + j] *= f);
            }
        }
        if x != 0 {
            for j in py(t, t + 1, w) {
                (0..h).for_each(|i| mask[i * w + j] *= f);
            }
        }
        if x + w < width {
            for j in py(ww - 1 - t, ww - t, w) {
                (0..h).for_each(|i| mask[i * w + j] *= f);
            }
        }
    }
    for b in 0..n * c {
        for i in 0..h {
            for j in 0..w {
                let at = b * height * width + (y + i) * width + x + j;
                let pasted = from[b * fh * fw + i * fw + j];
                s[at] = match feather {
                    0 => pasted,
                    _ => pasted * mask[i * w + j] + s[at] * (1.0 - mask[i * w + j]),
                };
            }
        }
    }
    s
}

#[test]
fn the_latent_composite_pastes_as_comfyuis_node_does() {
    let document = lowered(&graph(), &Target::default()).document;
    let components = document["pipeline"]["workflow"]["components"]
        .as_object()
        .expect("components");
    let (name, component) = components
        .iter()
        .find(|(n, _)| n.ends_with("latent_composite"))
        .expect("a composite policy");
    assert_eq!(name, "stage4_latent_composite");
    assert_eq!(
        component["contract"]["parameters"],
        json!({"height": 8, "width": 10, "pastes": 2,
            "x_1": 6, "y_1": 1, "feather_1": 2, "height_1": 4, "width_1": 5,
            "x_2": 0, "y_2": 5, "feather_2": 5, "height_2": 3, "width_2": 3})
    );
    if !support::runtime_available() {
        return;
    }
    let dir = scratch("composite");
    std::fs::create_dir_all(dir.join("policies")).expect("mkdir");
    let policies = wfstudio_core::comfyui::synth::policies(&document).expect("synthesized");
    let (_, bytes) = policies
        .iter()
        .find(|(n, _)| n == name)
        .expect("the composite policy");
    std::fs::write(dir.join(format!("policies/{name}.onnx")), bytes).expect("write");
    std::fs::write(
        dir.join("inference_metadata.json"),
        component_only(name, component).to_string(),
    )
    .expect("write");
    let (n, c) = (2, 4);
    let (to, to_text) = tensor([n, c, 8, 10], 1);
    let (from_1, from_1_text) = tensor([n, c, 4, 5], 2);
    let (from_2, from_2_text) = tensor([n, c, 3, 3], 3);
    let out = dir.join("out");
    let (code, stdout, stderr) = support::run_wfstudio(&[
        "run",
        s(&dir),
        "--input",
        &format!("to={to_text}"),
        "--input",
        &format!("from_1={from_1_text}"),
        "--input",
        &format!("from_2={from_2_text}"),
        "--out",
        s(&out),
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (shape, ours) = npy(&out.join("latent.npy"));
    assert_eq!(shape, vec![n, c, 8, 10]);
    let once = comfy_composite(&to, (n, c, 8, 10), &from_1, (4, 5), (48, 8, 16));
    let want = comfy_composite(&once, (n, c, 8, 10), &from_2, (3, 3), (0, 40, 40));
    assert_ne!(want, to, "the pastes change the base");
    // Hand-worked cells of row 0, channel 0 (cells are [y][x] of 8x10).
    // Paste 1 covers y 1..5, x 6..10; its 2-cell feather fades the top,
    // bottom and left edges by 1/2 (the corner by 1/4), inside them it is
    // the pasted value. Paste 2 covers y 5..8, x 0..3; its 5-cell feather
    // takes its rows 0, 1, 2 by 1/5, 2/5, 3/5 from the top, and from the
    // right its columns 2, 1, 0 by 1/5, 2/5, 3/5, then (t = 4, Python's
    // a[-2:-1]) column 1 by 1: its corner cell is 1/5 * 3/5.
    let at = |y: usize, x: usize| y * 10 + x;
    let blend = |from: f32, base: f32, m: f32| from * m + base * (1.0 - m);
    assert_eq!(ours[at(1, 6)], blend(from_1[0], to[at(1, 6)], 0.25));
    assert_eq!(ours[at(2, 7)], from_1[5 + 1]);
    assert_eq!(ours[at(2, 6)], blend(from_1[5], to[at(2, 6)], 0.5));
    assert_eq!(ours[at(0, 6)], to[at(0, 6)]);
    assert_eq!(ours[at(5, 0)], blend(from_2[0], to[at(5, 0)], 0.2f32 * 0.6));
    assert_eq!(ours[at(6, 1)], blend(from_2[4], to[at(6, 1)], 0.4f32 * 0.4));
    let worst = worst_relative(&ours, &want);
    eprintln!("latent composite agreement with the node's steps: {worst:.1e}");
    assert!(worst <= 1e-6, "{worst}");
    let _ = std::fs::remove_dir_all(&dir);

    let root = scratch("composite-run");
    let (_, out) = package_and_run(&root, "composite", &graph());
    let (shape, _) = npy(&out.join("latent.npy"));
    assert_eq!(shape, vec![1, 4, 8, 10]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_document_asking_for_a_huge_composite_is_refused_before_anything_is_built() {
    let mut document = lowered(&graph(), &Target::default()).document;
    let components = &mut document["pipeline"]["workflow"]["components"];
    let name = components
        .as_object()
        .expect("components")
        .keys()
        .find(|n| n.ends_with("latent_composite"))
        .expect("a composite policy")
        .clone();
    let parameters = &mut components[&name]["contract"]["parameters"];
    parameters["height"] = json!(1_000_000);
    let error = wfstudio_core::comfyui::synth::policies(&document).expect_err("refused");
    assert!(
        error.to_string().contains(
            "its base latent of 1000000x10 cells is past the 2048 cells a side a composite takes"
        ),
        "{error}"
    );
    let parameters =
        &mut document["pipeline"]["workflow"]["components"][&name]["contract"]["parameters"];
    parameters["height"] = json!(8);
    parameters["width_1"] = json!(1 << 20);
    let error = wfstudio_core::comfyui::synth::policies(&document).expect_err("refused");
    assert!(
        error
            .to_string()
            .contains("`width_1` is not a whole number of cells from 0 to 2048"),
        "{error}"
    );
}

#[test]
fn composites_of_latents_whose_size_the_graph_does_not_fix_are_refused() {
    let mut encoded = graph();
    encoded["4"] = pattern("img2img")["4"].clone();
    encoded["8"] = pattern("img2img")["8"].clone();
    encoded["21"]["inputs"]["latent_image"] = json!(["4", 0]);
    let expected: Expected = (
        "30",
        "LatentComposite",
        Some("samples_from"),
        "reads a latent whose size comes from a loaded picture; the lowering composites latents whose sizes the graph fixes (empty latents, maybe resized)",
    );
    assert_refused(&encoded, expected);

    let mut outside = graph();
    outside["30"]["inputs"]["x"] = json!(80);
    let expected: Expected = (
        "30",
        "LatentComposite",
        Some("x"),
        "is 80 pixels, at or past the base latent's 80 pixels, so nothing is pasted",
    );
    assert_refused(&outside, expected);
    let mut below = graph();
    below["31"]["inputs"]["y"] = json!(70);
    let expected: Expected = (
        "31",
        "LatentComposite",
        Some("y"),
        "is 70 pixels, at or past the base latent's 64 pixels, so nothing is pasted",
    );
    assert_refused(&below, expected);
    let mut batches = graph();
    batches["11"]["inputs"]["batch_size"] = json!(2);
    let expected: Expected = (
        "30",
        "LatentComposite",
        Some("samples_from"),
        "pastes a latent of another batch size than the base's",
    );
    assert_refused(&batches, expected);
}
