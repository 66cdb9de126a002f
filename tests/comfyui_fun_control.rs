//! Wan 2.2 Fun Control (`Wan22FunControlToVideo`): its control video (a
//! loaded video's frames, cut to the node's length and resized to its
//! size) is encoded and put ahead of the VAE's latent mean on `concat`'s
//! first half of channels, the mean on the second; the mask is zeros;
//! a reference picture is encoded as `reference_latent`. Every denoiser
//! call takes them.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, denoiser_bindings, lowered, npy, package_and_run, run_policy_alone, scratch,
    setup_calls, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// Wan 2.2 5B Fun Control, small: 64x48 pixels (Wan 2.2's VAE: 48
/// channels, 16 pixels a cell), 9 frames (3 latent frames), a reference
/// picture and a loaded control video.
fn fun_control(vae: &str) -> Value {
    json!({
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.2_fun_control_5B_bf16.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "type": "wan", "device": "default"}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": vae}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a dancer in the rain", "clip": ["2", 0]}},
        "5": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["2", 0]}},
        "6": {"class_type": "LoadImage", "inputs": {"image": "dancer.png"}},
        "20": {"class_type": "LoadVideo", "inputs": {"file": "pose.mp4"}},
        "21": {"class_type": "GetVideoComponents", "inputs": {"video": ["20", 0]}},
        "7": {"class_type": "Wan22FunControlToVideo", "inputs": {"width": 64, "height": 48, "length": 9, "batch_size": 1, "positive": ["4", 0], "negative": ["5", 0], "vae": ["3", 0], "ref_image": ["6", 0], "control_video": ["21", 0]}},
        "8": {"class_type": "ModelSamplingSD3", "inputs": {"shift": 8.0, "model": ["1", 0]}},
        "9": {"class_type": "KSampler", "inputs": {"seed": 7, "steps": 3, "cfg": 5.0, "sampler_name": "uni_pc", "scheduler": "simple", "denoise": 1.0, "model": ["8", 0], "positive": ["7", 0], "negative": ["7", 1], "latent_image": ["7", 2]}},
        "11": {"class_type": "VAEDecode", "inputs": {"samples": ["9", 0], "vae": ["3", 0]}},
        "12": {"class_type": "CreateVideo", "inputs": {"fps": 24.0, "images": ["11", 0]}},
        "13": {"class_type": "SaveVideo", "inputs": {"filename_prefix": "video/fun", "format": "auto", "codec": "auto", "video": ["12", 0]}}
    })
}

const WAN22: &str = "wan2.2_vae.safetensors";

#[test]
fn the_control_video_and_reference_reach_every_denoiser_call() {
    let l = lowered(&fun_control(WAN22), &Target::default());
    let w = workflow(&l);
    for (port, value) in [
        ("concat", "fun.concat"),
        ("concat_mask", "fun.mask"),
        ("reference_latent", "fun.reference"),
    ] {
        let bound = denoiser_bindings(w, port);
        assert!(!bound.is_empty(), "{port}");
        assert!(bound.iter().all(|(_, v)| v == value), "{port}: {bound:?}");
    }
    let made: Vec<String> = setup_calls(w).into_iter().map(|(c, _, _)| c).collect();
    let at = |name: &str| made.iter().position(|c| c == name).expect(name);
    assert!(at("take_frames") < at("fun_concat"), "{made:?}");
    assert_eq!(
        w["components"]["fun_concat"]["contract"]["parameters"],
        json!({"latent_frames": 3, "latent_height": 3, "latent_width": 4, "fill": "wan22_mean"})
    );
    assert_eq!(
        w["components"]["take_frames"]["contract"]["parameters"],
        json!({"length": 9})
    );
    assert!(
        l.notes[0].starts_with("node 7 (Wan22FunControlToVideo) encodes the control video request.control_video (node 20's frames: the first 9, resized bilinear to cover 64x48, centre cropped: control.video) as the first 48 of `concat`'s channels, the VAE's latent mean (ComfyUI's `process_out` of zeros) on the latent frames after it and on the other 48 (fun.concat); every denoiser call takes it as `concat` and `concat_mask` (fun.mask: zeros,"),
        "{}",
        l.notes[0]
    );
    // Wan 2.1's VAE: 16 channels, its own mean.
    let l = lowered(&fun_control("wan_2.1_vae.safetensors"), &Target::default());
    assert_eq!(
        workflow(&l)["components"]["fun_concat"]["contract"]["parameters"]["fill"],
        "wan21_mean"
    );
}

#[test]
fn concat_is_the_control_latent_then_the_latent_mean() {
    if !support::runtime_available() {
        return;
    }
    let l = lowered(&fun_control(WAN22), &Target::default());
    let root = scratch("fun-control");
    let (c, frames, cells) = (48usize, 2usize, 12usize);
    let control: Vec<f32> = (0..c * frames * cells).map(|i| i as f32 / 7.0).collect();
    let given = json!({"dtype": "float32", "shape": [1, c, frames, 3, 4], "data": control});
    let out = run_policy_alone(
        &root,
        "concat",
        &l.document,
        "fun_concat",
        &[("control", given.to_string())],
    );
    let (shape, concat) = npy(&out.join("concat.npy"));
    assert_eq!(shape, [1, 96, 3, 3, 4]);
    let at =
        |channel: usize, frame: usize, cell: usize| concat[(channel * 3 + frame) * cells + cell];
    // ComfyUI's `Wan22` latent mean, first and last channel.
    assert!((at(48, 0, 0) - -0.2289).abs() < 1e-6);
    assert!((at(95, 2, 11) - -0.0667).abs() < 1e-6);
    for channel in 0..96 {
        let mean = at(c + channel % c, 0, 0);
        for frame in 0..3 {
            for cell in 0..cells {
                let want = match (channel < c, frame < frames) {
                    (true, true) => control[(channel * frames + frame) * cells + cell],
                    _ => mean,
                };
                // The control latent is copied as it is, bit for bit.
                assert_eq!(at(channel, frame, cell), want, "c{channel} f{frame}");
            }
        }
    }
    let (shape, mask) = npy(&out.join("mask.npy"));
    assert_eq!(shape, [1, 4, 3, 3, 4]);
    assert!(mask.iter().all(|v| *v == 0.0));
    // Without a control video (or a reference), `concat` is the mean
    // alone, and nothing is encoded.
    let mut bare = fun_control(WAN22);
    for input in ["control_video", "ref_image"] {
        bare["7"]["inputs"]
            .as_object_mut()
            .expect("inputs")
            .remove(input);
    }
    let l = lowered(&bare, &Target::default());
    assert!(workflow(&l)["components"].get("vae_encoder").is_none());
    let out = run_policy_alone(&root, "bare", &l.document, "fun_concat", &[]);
    let (shape, mean_only) = npy(&out.join("concat.npy"));
    assert_eq!(shape, [1, 96, 3, 3, 4]);
    assert_eq!(mean_only[(95 * 3 + 2) * cells + 11], -0.0667);
    assert_eq!(mean_only[0], concat[48 * 3 * cells]);
    for (name, vae, frames) in [
        ("fun-22", WAN22, [1, 9, 3, 48, 64]),
        ("fun-21", "wan_2.1_vae.safetensors", [1, 9, 3, 48, 64]),
    ] {
        let (_, out) = package_and_run(&root, name, &fun_control(vae));
        let (video, values) = npy(&out.join("video.npy"));
        assert_eq!(video, frames, "{name}");
        assert!(values.iter().all(|v| v.is_finite()), "{name}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_start_picture_or_another_vae_is_refused() {
    assert_refused(
        &fun_control("hunyuanvideo15_vae_fp16.safetensors"),
        (
            "3",
            "VAELoader",
            Some("vae_name"),
            "loads `hunyuanvideo15_vae_fp16.safetensors`, whose latent is neither Wan 2.1's nor Wan 2.2's, which Wan22FunControlToVideo conditions on",
        ),
    );
    let mut g = fun_control(WAN22);
    g["7"]["inputs"]["start_image"] = json!(["6", 0]);
    assert_refused(
        &g,
        (
            "7",
            "Wan22FunControlToVideo",
            Some("start_image"),
            "starts the controlled video from a picture, which the lowering does not make yet; it makes Fun Control's conditioning from a control video and a reference picture",
        ),
    );
}
