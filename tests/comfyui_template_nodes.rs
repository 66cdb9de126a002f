//! Nodes the official templates use around their samplers:
//! `CLIPTextEncodeFlux` (CLIP-L and T5 read texts of their own, and the
//! node sets Flux's guidance), `BatchImagesNode` joining decoded videos
//! into one video, `CameraAngle`'s prompt and a blank picture's size,
//! folded as ComfyUI computes them.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, package_and_run, pattern, scratch, setup_calls, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// The flow pattern with its positive prompt a `CLIPTextEncodeFlux` and
/// its negative that encoder zeroed, as Flux schnell's full template.
fn flux_text() -> Value {
    let mut g = pattern("flow-sd3");
    g["2"] = json!({"class_type": "CLIPTextEncodeFlux", "inputs": {"clip_l": "a castle", "t5xxl": "a castle on a hill at dawn, mist in the valley", "guidance": 2.5, "clip": ["14", 0]}});
    g["3"] = json!({"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["2", 0]}});
    g["5"]["inputs"]["cfg"] = json!(1.0);
    g
}

#[test]
fn clip_text_encode_flux_gives_clip_l_its_own_text_and_sets_the_guidance() {
    let l = lowered(&flux_text(), &Target::default());
    let w = workflow(&l);
    let encoder = &w["components"]["text_encoder"]["ports"]["inputs"];
    assert!(encoder.get("input_ids_l").is_some(), "{encoder}");
    let calls: Vec<Value> = setup_calls(w)
        .into_iter()
        .filter(|(component, _, _)| component == "text_encoder")
        .map(|(_, inputs, _)| inputs)
        .collect();
    // One call: the negative is the positive's conditioning zeroed.
    assert_eq!(
        calls,
        [json!({"input_ids": "request.input_ids", "input_ids_l": "request.input_ids_l"})]
    );
    let prompts: Vec<(&str, &str)> = l
        .prompts
        .iter()
        .map(|(i, t)| (i.as_str(), t.as_str()))
        .collect();
    assert_eq!(
        prompts,
        [
            (
                "request.input_ids",
                "a castle on a hill at dawn, mist in the valley"
            ),
            ("request.input_ids_l", "a castle")
        ]
    );
    assert_eq!(w["inputs"]["request.flux_guidance"]["default"], 2.5);
    // A FluxGuidance nearer the sampler sets the guidance again.
    let mut g = flux_text();
    g["20"] = json!({"class_type": "FluxGuidance", "inputs": {"guidance": 4.0, "conditioning": ["2", 0]}});
    g["5"]["inputs"]["positive"] = json!(["20", 0]);
    let l = lowered(&g, &Target::default());
    assert_eq!(
        workflow(&l)["inputs"]["request.flux_guidance"]["default"],
        4.0
    );
    // A plain negative beside it gives CLIP-L the one text it has.
    let mut g = flux_text();
    g["3"] =
        json!({"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["14", 0]}});
    let l = lowered(&g, &Target::default());
    let negative: Vec<Value> = setup_calls(workflow(&l))
        .into_iter()
        .filter(|(component, inputs, _)| {
            component == "text_encoder" && inputs["input_ids"] == "request.negative_input_ids"
        })
        .map(|(_, inputs, _)| inputs)
        .collect();
    assert_eq!(
        negative,
        [
            json!({"input_ids": "request.negative_input_ids", "input_ids_l": "request.negative_input_ids"})
        ]
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("flux-text");
    let (_, out) = package_and_run(&root, "flux-text", &flux_text());
    let (shape, _) = npy(&out.join("image.npy"));
    assert_eq!(shape, [1, 3, 16, 16]);
    let _ = std::fs::remove_dir_all(&root);
}

/// The video pattern sampled twice (seeds 7 and `second_seed`), the two
/// decodes joined by a `BatchImagesNode` into one saved video.
fn joined(second_seed: i64) -> Value {
    let mut g = pattern("video");
    g.as_object_mut().expect("graph").remove("9");
    g["25"] = g["5"].clone();
    g["25"]["inputs"]["seed"] = json!(second_seed);
    g["26"] = g["6"].clone();
    g["26"]["inputs"]["samples"] = json!(["25", 0]);
    g["30"] = json!({"class_type": "BatchImagesNode", "inputs": {"images.image0": ["6", 0], "images.image1": ["26", 0]}});
    g["7"]["inputs"]["images"] = json!(["30", 0]);
    g
}

/// The video pattern with one saved video, sampled with `seed`.
fn single(seed: i64) -> Value {
    let mut g = pattern("video");
    g.as_object_mut().expect("graph").remove("9");
    g["5"]["inputs"]["seed"] = json!(seed);
    g
}

#[test]
fn joined_videos_run_as_one_video_of_their_frames_in_turn() {
    let l = lowered(&joined(8), &Target::default());
    let w = workflow(&l);
    let join = &w["components"]["join_frames"]["ports"]["inputs"];
    assert_eq!(
        join.as_object()
            .map(|p| p.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["video_0".to_string(), "video_1".to_string()])
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("joined-videos");
    let video = |name: &str, graph: &Value| {
        let (_, out) = package_and_run(&root, name, graph);
        npy(&out.join("video.npy"))
    };
    let (first, second, both) = (
        video("first", &single(7)),
        video("second", &single(8)),
        video("both", &joined(8)),
    );
    // 9 frames each (11 asked, in whole latent frames) at 32x24, then the second's after the first's.
    assert_eq!(first.0, [1, 9, 3, 24, 32]);
    assert_eq!(both.0, [1, 18, 3, 24, 32]);
    assert_ne!(first.1, second.1, "the seeds draw different videos");
    let half = first.1.len();
    assert_eq!(both.1[..half], first.1[..]);
    assert_eq!(both.1[half..], second.1[..]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn joined_videos_may_differ_in_length() {
    let mut g = joined(8);
    g["24"] = g["4"].clone();
    g["24"]["inputs"]["length"] = json!(5);
    g["25"]["inputs"]["latent_image"] = json!(["24", 0]);
    let l = lowered(&g, &Target::default());
    let ports = &workflow(&l)["components"]["join_frames"]["ports"]["inputs"];
    assert_ne!(ports["video_0"]["shape"][1], ports["video_1"]["shape"][1]);
    if !support::runtime_available() {
        return;
    }
    let root = scratch("joined-lengths");
    let (_, out) = package_and_run(&root, "lengths", &g);
    // 9 frames, then 5.
    assert_eq!(npy(&out.join("video.npy")).0, [1, 14, 3, 24, 32]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_flux_schnell_model_file_samples_as_schnell_without_guidance() {
    let mut g = flux_text();
    g["12"]["inputs"]["unet_name"] = json!("flux1-schnell.safetensors");
    g["14"] = json!({"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors", "clip_name2": "t5xxl_fp16.safetensors", "type": "flux", "device": "default"}});
    g["5"]["inputs"]["model"] = json!(["12", 0]);
    let l = lowered(&g, &Target::default());
    // Flux schnell's time shift 1.0: e^1.
    let shift = workflow(&l)["inputs"]["request.flow_shift"]["default"]
        .as_f64()
        .expect("a shift");
    assert!((shift - 1f64.exp()).abs() < 1e-4, "{shift}");
    // Schnell has no guidance embedding: ComfyUI's model ignores the
    // node's guidance, and the denoiser takes none.
    let w = workflow(&l);
    assert!(w["inputs"].get("request.flux_guidance").is_none());
    assert!(
        w["components"]["denoiser"]["ports"]["inputs"]
            .get("guidance")
            .is_none()
    );
    // So a guidance on one prompt only, at a cfg above 1, is no question.
    let mut one_sided = g.clone();
    one_sided["3"] =
        json!({"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["14", 0]}});
    one_sided["5"]["inputs"]["cfg"] = json!(3.0);
    let l = lowered(&one_sided, &Target::default());
    assert!(
        workflow(&l)["inputs"]
            .get("request.flux_guidance")
            .is_none()
    );
    g["12"]["inputs"]["unet_name"] = json!("flux1-dev.safetensors");
    let l = lowered(&g, &Target::default());
    assert_eq!(
        workflow(&l)["inputs"]["request.flux_guidance"]["default"],
        2.5
    );
    let shift = workflow(&l)["inputs"]["request.flow_shift"]["default"]
        .as_f64()
        .expect("a shift");
    assert!((shift - 1.15f64.exp()).abs() < 1e-4, "{shift}");
}

#[test]
fn videos_joined_otherwise_than_as_they_are_decoded_are_refused() {
    let mut g = joined(8);
    g["31"] = json!({"class_type": "LoadImage", "inputs": {"image": "a.png"}});
    g["30"]["inputs"]["images.image1"] = json!(["31", 0]);
    assert_refused(
        &g,
        (
            "30",
            "BatchImagesNode",
            Some("images.image1"),
            "joins pictures other than a sampled video's decode as they are; the lowering joins decoded videos' frames",
        ),
    );
    let mut g = joined(8);
    g["24"] = g["4"].clone();
    g["24"]["inputs"]["width"] = json!(48);
    g["25"]["inputs"]["latent_image"] = json!(["24", 0]);
    assert_refused(
        &g,
        (
            "30",
            "BatchImagesNode",
            Some("images.image1"),
            "joins videos whose sizes differ or are set at run time, or that other VAEs decode; ComfyUI resizes the later frames to the first video's size, which the lowering does not",
        ),
    );
    let mut g = joined(8);
    g["4"]["inputs"]["batch_size"] = json!(2);
    assert_refused(
        &g,
        (
            "30",
            "BatchImagesNode",
            Some("images.image0"),
            "joins a video whose batch is not one written latent row, and ComfyUI would run every row's frames into the one video",
        ),
    );
}

#[test]
fn a_camera_angle_writes_the_prompt_and_a_blank_picture_sizes_the_latent() {
    let mut g = pattern("video");
    g.as_object_mut().expect("graph").remove("9");
    g["40"] = json!({"class_type": "CameraAngle", "inputs": {"horizontal_angle": 180, "vertical_angle": 50, "zoom": 0.5}});
    g["2"]["inputs"]["text"] = json!(["40", 1]);
    g["41"] = json!({"class_type": "EmptyImage", "inputs": {"width": 64, "height": 48, "batch_size": 1, "color": 0}});
    g["42"] = json!({"class_type": "ImageScaleBy", "inputs": {"upscale_method": "lanczos", "scale_by": 0.5, "image": ["41", 0]}});
    g["43"] = json!({"class_type": "GetImageSize", "inputs": {"image": ["42", 0]}});
    g["4"]["inputs"]["width"] = json!(["43", 0]);
    g["4"]["inputs"]["height"] = json!(["43", 1]);
    let l = lowered(&g, &Target::default());
    assert_eq!(
        l.prompts[0],
        (
            "request.input_ids".to_string(),
            "back view high-angle shot wide shot".to_string()
        )
    );
    let shape = &workflow(&l)["components"]["latent_row_shape"]["contract"]["parameters"];
    assert_eq!(
        (&shape["width"], &shape["height"]),
        (&json!(32), &json!(24))
    );
    // The blank picture and its scaling gave the size: they are used.
    for node in ["40", "41", "42", "43"] {
        assert!(l.used.iter().any(|u| u == node), "{node}: {:?}", l.used);
    }
}
