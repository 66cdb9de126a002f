//! Wan's Fun camera control (`WanCameraEmbedding` into
//! `WanCameraImageToVideo`): the start picture's latent alone ahead of
//! Wan 2.1's latent mean, its four-channel mask, and the camera motion's
//! Plücker embedding (`camera_embedding`), which every denoiser call
//! takes as `camera_conditions`; the embedding matches an independent
//! numpy reference.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, loops, lowered, npy, package_and_run, run_policy_alone, s, scratch,
    setup_calls, stage_calls, workflow, worst_relative,
};
use wfstudio_core::comfyui::lower::Target;

/// Wan 2.1 Fun camera's template, small: a 32x16 video of 9 frames (3
/// latent frames) zooming in, its sizes the embedding's outputs.
fn camera_video() -> Value {
    json!({
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.1_fun_camera_v1.1_1.3B_bf16.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "type": "wan", "device": "default"}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
        "4": {"class_type": "LoadImage", "inputs": {"image": "landscape.png", "upload": "image"}},
        "5": {"class_type": "CLIPTextEncode", "inputs": {"text": "origami landscape", "clip": ["2", 0]}},
        "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["2", 0]}},
        "7": {"class_type": "WanCameraEmbedding", "inputs": {"camera_pose": "Zoom In", "width": 32, "height": 16, "length": 9, "speed": 1.0, "fx": 0.5, "fy": 0.5, "cx": 0.5, "cy": 0.5}},
        "8": {"class_type": "WanCameraImageToVideo", "inputs": {"width": ["7", 1], "height": ["7", 2], "length": ["7", 3], "batch_size": 1, "positive": ["5", 0], "negative": ["6", 0], "vae": ["3", 0], "start_image": ["4", 0], "camera_conditions": ["7", 0]}},
        "9": {"class_type": "ModelSamplingSD3", "inputs": {"shift": 8.0, "model": ["1", 0]}},
        "10": {"class_type": "KSampler", "inputs": {"seed": 4, "steps": 3, "cfg": 6.0, "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0, "model": ["9", 0], "positive": ["8", 0], "negative": ["8", 1], "latent_image": ["8", 2]}},
        "11": {"class_type": "VAEDecode", "inputs": {"samples": ["10", 0], "vae": ["3", 0]}},
        "12": {"class_type": "CreateVideo", "inputs": {"fps": 16.0, "images": ["11", 0]}},
        "13": {"class_type": "SaveVideo", "inputs": {"filename_prefix": "video/camera", "format": "auto", "codec": "auto", "video": ["12", 0]}},
    })
}

#[test]
fn the_camera_motion_and_the_start_latent_reach_every_denoiser_call() {
    let l = lowered(&camera_video(), &Target::default());
    let w = workflow(&l);
    let components = &w["components"];
    assert_eq!(
        components["camera_embedding"]["contract"]["parameters"],
        json!({"pose": "Zoom In", "speed": 1.0, "fx": 0.5, "fy": 0.5, "cx": 0.5, "cy": 0.5, "width": 32, "height": 16, "length": 9})
    );
    assert_eq!(
        components["start_latent"]["contract"]["parameters"],
        json!({"latent_frames": 3, "mask_channels": 4, "fill": "wan21_mean"})
    );
    let ports = &components["denoiser"]["ports"]["inputs"];
    assert_eq!(
        ports["camera_conditions"]["shape"],
        json!(["batch", 24, "latent_frames", "height", "width"])
    );
    assert_eq!(ports["concat_mask"]["shape"][1], 4);
    let made: Vec<String> = setup_calls(w).into_iter().map(|(c, _, _)| c).collect();
    for component in [
        "init_scale",
        "one_frame",
        "vae_encoder",
        "start_latent",
        "camera_embedding",
    ] {
        assert!(made.iter().any(|c| c == component), "{component}: {made:?}");
    }
    let calls = stage_calls(loops(w)[0], "denoiser");
    assert_eq!(calls.len(), 2);
    for call in calls {
        assert_eq!(call["inputs"]["camera_conditions"], "frames.camera");
        assert_eq!(call["inputs"]["concat"], "frames.latent");
    }
    let row_shape = &components["latent_row_shape"]["contract"]["parameters"];
    assert_eq!(row_shape["length"], 9);
}

#[test]
fn the_embedding_is_comfyuis_for_each_kind_of_motion() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("wan-camera");
    let reference = support::workspace().join("tests/reference/camera_reference.py");
    let mut figures = Vec::new();
    // (pose, speed, fx, cx, width, height): a tall video fits the other
    // focal length to the pose pictures' aspect.
    for (pose, speed, fx, cx, (width, height)) in [
        ("Zoom In", 1.0, 0.5, 0.5, (32, 16)),
        ("Pan Left", 2.0, 0.7, 0.5, (32, 16)),
        ("ClockWise (CW)", 1.0, 0.5, 0.5, (32, 16)),
        ("Anti Clockwise (ACW)", 0.5, 0.25, 0.5, (32, 16)),
        ("Pan Up", 1.5, 0.5, 0.3, (16, 32)),
    ] {
        let mut g = camera_video();
        let camera = &mut g["7"]["inputs"];
        camera["camera_pose"] = json!(pose);
        camera["speed"] = json!(speed);
        camera["fx"] = json!(fx);
        camera["cx"] = json!(cx);
        camera["width"] = json!(width);
        camera["height"] = json!(height);
        let l = lowered(&g, &Target::default());
        let name = pose.replace(' ', "_").replace(['(', ')'], "");
        let out = run_policy_alone(&root, &name, &l.document, "camera_embedding", &[]);
        let (shape, ours) = npy(&out.join("embedding.npy"));
        assert_eq!(shape, [1, 24, 3, height, width], "{pose}");
        let settings = root.join(format!("{name}.json"));
        let parameters = &l.document["pipeline"]["workflow"]["components"]["camera_embedding"]["contract"]
            ["parameters"];
        std::fs::write(&settings, parameters.to_string()).expect("settings");
        let expected = root.join(format!("{name}.npy"));
        support::python_stdout(&python, &[s(&reference), s(&settings), s(&expected)]);
        let (reference_shape, theirs) = npy(&expected);
        assert_eq!(shape, reference_shape, "{pose}");
        let worst = worst_relative(&ours, &theirs);
        figures.push(format!("{pose}: {worst:.2e}"));
        assert!(worst <= 1e-5, "{pose}: worst |a - b| / (1 + |b|) = {worst}");
    }
    eprintln!("camera embeddings against numpy: {}", figures.join(", "));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_start_latent_leads_wan_s_latent_mean_and_the_video_runs() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("wan-camera-start");
    let l = lowered(&camera_video(), &Target::default());
    let first: Vec<f32> = (0..16 * 2 * 4).map(|i| i as f32 / 10.0 - 3.0).collect();
    let given = json!({"dtype": "float32", "shape": [1, 16, 1, 2, 4], "data": first}).to_string();
    let out = run_policy_alone(
        &root,
        "start",
        &l.document,
        "start_latent",
        &[("first", given)],
    );
    let (shape, latent) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [1, 16, 3, 2, 4]);
    // ComfyUI's `Wan21` latent format's mean, which its `process_out`
    // makes of the zeros after the first frame.
    let mean = [
        -0.7571f32, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508, 0.4134, -0.0715,
        0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921,
    ];
    for channel in 0..16 {
        for frame in 0..3 {
            for cell in 0..8 {
                let at = (channel * 3 + frame) * 8 + cell;
                let want = match frame {
                    0 => first[channel * 8 + cell],
                    _ => mean[channel],
                };
                assert_eq!(latent[at], want, "channel {channel} frame {frame}");
            }
        }
    }
    let (mask_shape, mask) = npy(&out.join("mask.npy"));
    assert_eq!(mask_shape, [1, 4, 3, 2, 4]);
    let want: Vec<f32> = (0..96)
        .map(|i| f32::from(u8::from((i / 8) % 3 == 0)))
        .collect();
    assert_eq!(mask, want);
    let (_, out) = package_and_run(&root, "camera", &camera_video());
    assert_eq!(npy(&out.join("video.npy")).0, vec![1, 9, 3, 16, 32]);
    assert_eq!(npy(&out.join("latent.npy")).0, vec![1, 16, 3, 2, 4]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_camera_of_another_size_or_length_is_refused() {
    let mut other = camera_video();
    other["8"]["inputs"]["width"] = json!(48);
    assert_refused(
        &other,
        (
            "7",
            "WanCameraEmbedding",
            None,
            "embeds a 32x16 video of 9 frames, but node 8 makes 48x16 of 9; its model reads the embedding at the video's size",
        ),
    );
    let mut long = camera_video();
    long["7"]["inputs"]["length"] = json!(10);
    assert_refused(
        &long,
        (
            "7",
            "WanCameraEmbedding",
            Some("length"),
            "is 10, which the embedding does not group by four into latent frames (1, 5, 9, ...)",
        ),
    );
    let mut blind = camera_video();
    blind["7"]["inputs"]["fx"] = json!(0.0);
    assert_refused(
        &blind,
        (
            "7",
            "WanCameraEmbedding",
            Some("fx"),
            "is 0, a focal length that makes every ray's direction infinite",
        ),
    );
}
