//! LTX-2's image-to-video graphs: `LTXVImgToVideoInplace` writes a loaded
//! picture (through its resizes and `LTXVPreprocess`) over the video
//! latent's first frame with the noise mask `1 - strength`, which every
//! model call of the sampler honours (`held_input`, `denoise_mask`,
//! `held_estimate`); `LTXVAddGuide` appends guide frames after the
//! video's, with their tokens' positions for the model, and
//! `LTXVCropGuides` drops them before decoding; `SamplerEulerAncestral`
//! at eta 0 or 1; `gradient_estimation`'s denoised output to sigma 0 is
//! its sampled one.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, package_and_run, run_policy_alone, s, scratch, setup_calls,
    workflow, worst_relative,
};
use wfstudio_core::comfyui::lower::Target;

/// A small LTX-2 image-to-video graph: a loaded picture resized to 96x80,
/// preprocessed and held as the first frame of a 64x64 video of 9 frames
/// at `strength`, sampled by two written sigmas to 0 under
/// `gradient_estimation`, whose denoised output is decoded.
fn image_to_video(strength: f64) -> Value {
    json!({
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "ltx-2-19b-dev-fp8.safetensors"}},
        "2": {"class_type": "LTXAVTextEncoderLoader", "inputs": {"text_encoder": "gemma_3_12B_it.safetensors", "ckpt_name": "ltx-2-19b-dev-fp8.safetensors", "device": "default"}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "the puppet turns its head", "clip": ["2", 0]}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["2", 0]}},
        "5": {"class_type": "LTXVConditioning", "inputs": {"frame_rate": 24.0, "positive": ["3", 0], "negative": ["4", 0]}},
        "6": {"class_type": "LTXVAudioVAELoader", "inputs": {"ckpt_name": "ltx-2-19b-dev-fp8.safetensors"}},
        "7": {"class_type": "EmptyLTXVLatentVideo", "inputs": {"width": 64, "height": 64, "length": 9, "batch_size": 1}},
        "8": {"class_type": "LTXVEmptyLatentAudio", "inputs": {"frames_number": 9, "frame_rate": 24, "batch_size": 1, "audio_vae": ["6", 0]}},
        "9": {"class_type": "LTXVConcatAVLatent", "inputs": {"video_latent": ["22", 0], "audio_latent": ["8", 0]}},
        "10": {"class_type": "RandomNoise", "inputs": {"noise_seed": 10}},
        "11": {"class_type": "CFGGuider", "inputs": {"cfg": 3.0, "model": ["1", 0], "positive": ["5", 0], "negative": ["5", 1]}},
        "12": {"class_type": "KSamplerSelect", "inputs": {"sampler_name": "gradient_estimation"}},
        "13": {"class_type": "ManualSigmas", "inputs": {"sigmas": "1.0, 0.6, 0.0"}},
        "14": {"class_type": "SamplerCustomAdvanced", "inputs": {"noise": ["10", 0], "guider": ["11", 0], "sampler": ["12", 0], "sigmas": ["13", 0], "latent_image": ["9", 0]}},
        "15": {"class_type": "LTXVSeparateAVLatent", "inputs": {"av_latent": ["14", 1]}},
        "16": {"class_type": "VAEDecode", "inputs": {"samples": ["15", 0], "vae": ["1", 2]}},
        "17": {"class_type": "CreateVideo", "inputs": {"fps": 24.0, "images": ["16", 0]}},
        "18": {"class_type": "SaveVideo", "inputs": {"filename_prefix": "video/LTX-2", "format": "auto", "codec": "auto", "video": ["17", 0]}},
        "19": {"class_type": "LoadImage", "inputs": {"image": "puppet.png"}},
        "20": {"class_type": "ResizeImageMaskNode", "inputs": {"resize_type": "scale dimensions", "resize_type.width": 96, "resize_type.height": 80, "resize_type.crop": "center", "scale_method": "lanczos", "input": ["19", 0]}},
        "21": {"class_type": "LTXVPreprocess", "inputs": {"img_compression": 33, "image": ["20", 0]}},
        "22": {"class_type": "LTXVImgToVideoInplace", "inputs": {"strength": strength, "bypass": false, "vae": ["1", 2], "image": ["21", 0], "latent": ["7", 0]}}
    })
}

/// A contract parameter of component `name`.
fn parameter<'w>(w: &'w Value, name: &str, key: &str) -> &'w Value {
    &w["components"][name]["contract"]["parameters"][key]
}

/// A float32 tensor's JSON.
fn tensor(shape: &[usize], data: &[f32]) -> String {
    json!({"dtype": "float32", "shape": shape, "data": data}).to_string()
}

#[test]
fn a_held_picture_is_resized_encoded_and_written_over_the_first_frame() {
    let l = lowered(&image_to_video(0.7), &Target::default());
    let w = workflow(&l);
    assert_eq!(parameter(w, "held_frames", "video_shape"), "128,2,2,2");
    assert_eq!(parameter(w, "held_frames", "strengths"), "0.7");
    assert_eq!(parameter(w, "held_frames", "positions"), "0");
    assert_eq!(parameter(w, "held_frames", "packed"), true);
    assert_eq!(
        w["inputs"]["request.image"]["contract"]["shape"],
        json!(["batch", 3, "image_height", "image_width"])
    );
    // The graph's resize, the cut to even sides, the resize to the
    // latent's size (32 pixels a cell), one frame, the encoder, the hold.
    let setup: Vec<String> = setup_calls(w).into_iter().map(|(c, _, _)| c).collect();
    let held: Vec<&str> = setup
        .iter()
        .map(String::as_str)
        .skip_while(|c| *c != "held_scale")
        .take(6)
        .collect();
    assert_eq!(
        held,
        [
            "held_scale",
            "even_sides",
            "held_scale_2",
            "one_frame",
            "vae_encoder",
            "held_frames"
        ]
    );
    assert_eq!(parameter(w, "held_scale", "width"), 96);
    assert_eq!(parameter(w, "held_scale_2", "width"), 64);
    assert_eq!(parameter(w, "held_scale_2", "method"), "bilinear");
    assert_eq!(parameter(w, "even_sides", "h264_crf"), 33);
    let denoiser = &w["components"]["denoiser"]["ports"]["inputs"];
    assert_eq!(
        denoiser["denoise_mask"]["shape"],
        json!(["batch", 1, "latent_frames", "latent_height", "latent_width"])
    );
    assert!(
        l.notes
            .iter()
            .any(|n| n.contains("`denoise_mask`") && n.contains("H.264 round trip at CRF 33")),
        "{:#?}",
        l.notes
    );
    // Bypassed, the node passes the empty latent: the text-to-video graph.
    let mut bypassed = image_to_video(0.7);
    bypassed["22"]["inputs"]["bypass"] = json!(true);
    let plain = lowered(&bypassed, &Target::default());
    assert!(workflow(&plain)["components"].get("held_frames").is_none());
}

#[test]
fn the_held_frame_policies_are_comfyuis_noise_mask_on_ltx_2() {
    if !support::runtime_available() {
        return;
    }
    let l = lowered(&image_to_video(0.7), &Target::default());
    let root = scratch("ltx2-held");
    // A row of 1024 video values (128 x 2 x 2 x 2) and 1152 audio ones.
    let source: Vec<f32> = (0..2176).map(|i| (i as f32 * 0.37).sin()).collect();
    let frame: Vec<f32> = (0..512).map(|i| 10.0 + i as f32).collect();
    let out = run_policy_alone(
        &root,
        "frames",
        &l.document,
        "held_frames",
        &[
            ("source", tensor(&[1, 1, 2176], &source)),
            ("frame", tensor(&[1, 128, 1, 2, 2], &frame)),
        ],
    );
    let (shape, held) = npy(&out.join("held.npy"));
    let (_, mask) = npy(&out.join("mask.npy"));
    let (mask_shape, cells) = npy(&out.join("denoise_mask.npy"));
    assert_eq!((shape, mask_shape), (vec![1, 1, 2176], vec![1, 1, 2, 2, 2]));
    for i in 0..2176 {
        // Channel c's frame 0 is values 8c..8c+4 of the video part.
        let first = i < 1024 && i % 8 < 4;
        let expected = match first {
            true => frame[(i / 8) * 4 + i % 8],
            false => source[i],
        };
        assert_eq!(held[i], expected, "value {i}");
        assert_eq!(mask[i], if first { 0.3 } else { 1.0 }, "mask {i}");
    }
    assert_eq!(cells, [0.3, 0.3, 0.3, 0.3, 1.0, 1.0, 1.0, 1.0]);
    // The estimate: D = input - s v blended back by the mask, as a
    // velocity at the sampler's own sample (s = 0.6).
    let at = |salt: f32| -> Vec<f32> { (0..2176).map(|i| (i as f32 * salt).cos()).collect() };
    let (x, input, v) = (at(0.11), at(0.23), at(0.05));
    let out = run_policy_alone(
        &root,
        "estimate",
        &l.document,
        "held_estimate",
        &[
            ("sample", tensor(&[1, 1, 2176], &x)),
            ("input", tensor(&[1, 1, 2176], &input)),
            ("timestep", tensor(&[1], &[0.6])),
            ("guided", tensor(&[1, 1, 2176], &v)),
            ("source", tensor(&[1, 1, 2176], &held)),
            ("mask", tensor(&[1, 1, 2176], &mask)),
        ],
    );
    let (_, estimate) = npy(&out.join("estimate.npy"));
    let expected: Vec<f32> = (0..2176)
        .map(|i| {
            let (m, s) = (mask[i] as f64, 0.6f64);
            let denoised = input[i] as f64 - s * v[i] as f64;
            let blended = m * denoised + (1.0 - m) * held[i] as f64;
            ((x[i] as f64 - blended) / s) as f32
        })
        .collect();
    let worst = worst_relative(&estimate, &expected);
    assert!(worst < 1e-5, "{worst}");
    let out = run_policy_alone(
        &root,
        "input",
        &l.document,
        "held_input",
        &[
            ("sample", tensor(&[1, 1, 2176], &x)),
            ("source", tensor(&[1, 1, 2176], &held)),
            ("mask", tensor(&[1, 1, 2176], &mask)),
        ],
    );
    let (_, blended) = npy(&out.join("input.npy"));
    let expected: Vec<f32> = (0..2176)
        .map(|i| mask[i] * x[i] + (1.0 - mask[i]) * held[i])
        .collect();
    assert!(worst_relative(&blended, &expected) < 1e-6);
    // LTXVPreprocess's cut: the top left 4 x 6 of a 5 x 7 picture.
    let picture: Vec<f32> = (0..105).map(|i| i as f32 / 105.0).collect();
    let out = run_policy_alone(
        &root,
        "even",
        &l.document,
        "even_sides",
        &[("image", tensor(&[1, 3, 5, 7], &picture))],
    );
    let (shape, even) = npy(&out.join("even.npy"));
    assert_eq!(shape, [1, 3, 4, 6]);
    let expected: Vec<f32> = (0..3)
        .flat_map(|c| (0..4).flat_map(move |y| (0..6).map(move |x| c * 35 + y * 7 + x)))
        .map(|i| picture[i])
        .collect();
    assert_eq!(even, expected);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_frame_held_at_full_strength_ends_the_run_as_it_was_encoded() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("ltx2-i2v");
    let (dir, out) = package_and_run(&root, "i2v", &image_to_video(1.0));
    assert_eq!(npy(&out.join("video.npy")).0, [1, 9, 3, 64, 64]);
    let (_, first) = npy(&out.join("latent.npy"));
    let (code, _, stderr) = support::run_wfstudio(&[
        "run",
        s(&dir),
        "--input",
        "request.seed=11",
        "--out",
        s(&root.join("other")),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let (_, other) = npy(&root.join("other/latent.npy"));
    // The held frame (values 8c..8c+4 of the video part) is the encoded
    // picture whatever the noise (to float32 rounding: the sampler steps
    // with the velocity it is given back as); the rest follows the seed.
    let held = |v: &[f32]| -> Vec<f32> { (0..1024).filter(|i| i % 8 < 4).map(|i| v[i]).collect() };
    let free = |v: &[f32]| -> Vec<f32> { (0..1024).filter(|i| i % 8 >= 4).map(|i| v[i]).collect() };
    assert!(worst_relative(&held(&first), &held(&other)) < 1e-5);
    assert!(worst_relative(&free(&first), &free(&other)) > 1e-3);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn gradient_estimations_denoised_output_to_sigma_0_is_its_sampled_one() {
    let mut sampled = image_to_video(1.0);
    sampled["15"]["inputs"]["av_latent"] = json!(["14", 0]);
    assert_eq!(
        lowered(&image_to_video(1.0), &Target::default()).document,
        lowered(&sampled, &Target::default()).document
    );
}

/// LTX-Video's image-to-video graph, small: `LTXVImgToVideo` makes a
/// 64x64 latent of 9 frames holding the loaded picture at strength 0.15
/// and passes the prompts on.
fn ltx_video_image_to_video() -> Value {
    json!({
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "ltx-video-2b-v0.9.5.safetensors"}},
        "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "t5xxl_fp16.safetensors", "type": "ltxv", "device": "default"}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "a lighthouse in a storm", "clip": ["2", 0]}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["2", 0]}},
        "5": {"class_type": "LoadImage", "inputs": {"image": "lighthouse.png"}},
        "6": {"class_type": "LTXVImgToVideo", "inputs": {"width": 64, "height": 64, "length": 9, "batch_size": 1, "strength": 0.15, "positive": ["3", 0], "negative": ["4", 0], "vae": ["1", 2], "image": ["5", 0]}},
        "7": {"class_type": "LTXVConditioning", "inputs": {"frame_rate": 25.0, "positive": ["6", 0], "negative": ["6", 1]}},
        "8": {"class_type": "KSamplerSelect", "inputs": {"sampler_name": "euler"}},
        "9": {"class_type": "LTXVScheduler", "inputs": {"steps": 3, "max_shift": 2.05, "base_shift": 0.95, "stretch": true, "terminal": 0.1, "latent": ["6", 2]}},
        "10": {"class_type": "SamplerCustom", "inputs": {"add_noise": true, "noise_seed": 7, "cfg": 3.0, "model": ["1", 0], "positive": ["7", 0], "negative": ["7", 1], "sampler": ["8", 0], "sigmas": ["9", 0], "latent_image": ["6", 2]}},
        "11": {"class_type": "VAEDecode", "inputs": {"samples": ["10", 0], "vae": ["1", 2]}},
        "12": {"class_type": "CreateVideo", "inputs": {"fps": 24.0, "images": ["11", 0]}},
        "13": {"class_type": "SaveVideo", "inputs": {"filename_prefix": "video/ComfyUI", "format": "auto", "codec": "auto", "video": ["12", 0]}}
    })
}

#[test]
fn ltx_videos_image_to_video_holds_its_picture_in_the_video_latent() {
    let l = lowered(&ltx_video_image_to_video(), &Target::default());
    let w = workflow(&l);
    assert_eq!(parameter(w, "held_frames", "video_shape"), "128,2,2,2");
    assert_eq!(parameter(w, "held_frames", "packed"), false);
    assert_eq!(parameter(w, "held_frames", "strengths"), "0.15");
    // No graph resize: the picture is resized to the latent's size only.
    assert_eq!(parameter(w, "held_scale", "width"), 64);
    assert!(w["components"].get("even_sides").is_none());
    assert_eq!(w["inputs"]["request.frame_rate"]["default"], 25.0);
    if !support::runtime_available() {
        return;
    }
    let root = scratch("ltxv-i2v");
    let (_, out) = package_and_run(&root, "i2v", &ltx_video_image_to_video());
    assert_eq!(npy(&out.join("video.npy")).0, [1, 9, 3, 64, 64]);
    let _ = std::fs::remove_dir_all(&root);
}

/// `BasicScheduler` on the model's own schedule, which starts at the
/// model's top.
fn own_schedule() -> Value {
    json!({"class_type": "BasicScheduler", "inputs": {"model": ["1", 0], "scheduler": "simple", "steps": 2, "denoise": 1.0}})
}

/// Asserts `graph`'s stage writes its held frames before noising its
/// start latent.
fn assert_noised_after_holding(graph: &Value) {
    let l = lowered(graph, &Target::default());
    let setup: Vec<String> = setup_calls(workflow(&l))
        .into_iter()
        .map(|(c, _, _)| c)
        .collect();
    let held = setup.iter().position(|c| c == "held_frames");
    let noised = setup.iter().position(|c| c == "add_noise");
    assert!(held.is_some() && held < noised, "{setup:?}");
}

#[test]
fn a_held_frame_under_a_models_own_schedule_noises_its_start_latent() {
    // BasicScheduler's schedule starts at the model's top, which a run of
    // an empty latent would start from pure noise: the held frame's run
    // noises its latent instead.
    let mut g = image_to_video(1.0);
    g["13"] = own_schedule();
    assert_noised_after_holding(&g);
}

#[test]
fn a_held_picture_the_lowering_cannot_make_is_refused() {
    let mut g = image_to_video(1.0);
    g["12"]["inputs"]["sampler_name"] = json!("gradient_estimation_cfg_pp");
    assert_refused(
        &g,
        (
            "22",
            "LTXVImgToVideoInplace",
            None,
            "holds a picture as a frame of a video that gradient_estimation_cfg_pp samples; the lowering blends the held frame into the guided estimate only, and CFG++ samplers step with the unconditional one",
        ),
    );
    // Two resizes that keep the picture, reading each other.
    let mut g = image_to_video(1.0);
    g["23"] = json!({"class_type": "ImageScale", "inputs": {"upscale_method": "bilinear", "width": 0, "height": 0, "crop": "disabled", "image": ["24", 0]}});
    g["24"] = json!({"class_type": "ImageScale", "inputs": {"upscale_method": "bilinear", "width": 0, "height": 0, "crop": "disabled", "image": ["23", 0]}});
    g["20"]["inputs"]["input"] = json!(["23", 0]);
    let refusals =
        wfstudio_core::comfyui::lower::lower_for(&g, &Target::default()).expect_err("refused");
    assert_eq!(refusals[0].message, "is part of a loop of resizes");
    let mut g = image_to_video(1.0);
    g["23"] = json!({"class_type": "EmptyImage", "inputs": {"width": 64, "height": 64, "batch_size": 1, "color": 0}});
    g["20"]["inputs"]["input"] = json!(["23", 0]);
    assert_refused(
        &g,
        (
            "20",
            "ResizeImageMaskNode",
            Some("input"),
            "reads output 0 of node 23 (EmptyImage); the lowering holds a LoadImage's picture as the first frame, maybe resized and through LTXVPreprocess",
        ),
    );
    let mut g = image_to_video(1.0);
    g["22"]["inputs"]["strength"] = json!(1.5);
    assert_refused(
        &g,
        ("22", "LTXVImgToVideoInplace", Some("strength"), "is 1.5"),
    );
}

/// A small LTX-2 first-and-last-frame graph: two loaded pictures guide a
/// 64x64 video of 17 frames (3 latent frames) at its first and last
/// frame at strength 0.7, appended after its frames; sampled by
/// `SamplerEulerAncestral` at eta 0 (Euler's step), the guides cropped
/// before decoding.
fn first_and_last_frame() -> Value {
    let mut g = image_to_video(1.0);
    let nodes = g.as_object_mut().expect("an object");
    for id in ["20", "21", "22"] {
        nodes.remove(id);
    }
    g["7"]["inputs"]["length"] = json!(17);
    g["8"]["inputs"]["frames_number"] = json!(17);
    g["23"] = json!({"class_type": "LoadImage", "inputs": {"image": "last.png"}});
    g["24"] = json!({"class_type": "LTXVAddGuide", "inputs": {"frame_idx": 0, "strength": 0.7, "positive": ["5", 0], "negative": ["5", 1], "vae": ["1", 2], "latent": ["7", 0], "image": ["19", 0]}});
    g["25"] = json!({"class_type": "LTXVAddGuide", "inputs": {"frame_idx": -1, "strength": 0.7, "positive": ["24", 0], "negative": ["24", 1], "vae": ["1", 2], "latent": ["24", 2], "image": ["23", 0]}});
    g["26"] = json!({"class_type": "LTXVCropGuides", "inputs": {"positive": ["25", 0], "negative": ["25", 1], "latent": ["15", 0]}});
    g["9"]["inputs"]["video_latent"] = json!(["25", 2]);
    g["11"]["inputs"]["positive"] = json!(["25", 0]);
    g["11"]["inputs"]["negative"] = json!(["25", 1]);
    g["12"] =
        json!({"class_type": "SamplerEulerAncestral", "inputs": {"eta": 0.0, "s_noise": 1.0}});
    g["16"]["inputs"]["samples"] = json!(["26", 2]);
    g
}

#[test]
fn guides_are_appended_after_the_video_and_cropped_before_decoding() {
    let l = lowered(&first_and_last_frame(), &Target::default());
    let w = workflow(&l);
    // 3 latent frames and the 2 guides'.
    assert_eq!(parameter(w, "av_split", "video_shape"), "128,5,2,2");
    assert_eq!(parameter(w, "held_frames", "positions"), "3,4");
    assert_eq!(parameter(w, "held_frames", "strengths"), "0.7,0.7");
    // Frame -1 of 17 is frame 16.
    assert_eq!(parameter(w, "held_frames", "guide_frames"), "0,16");
    let denoiser = &w["components"]["denoiser"]["ports"]["inputs"];
    assert_eq!(
        denoiser["keyframe_idxs"]["shape"],
        json!([1, 3, "guide_tokens", 2])
    );
    assert_eq!(parameter(w, "trim_latent", "from"), "end");
    assert_eq!(parameter(w, "trim_latent", "frames"), 2);
    assert!(
        l.notes
            .iter()
            .any(|n| n.contains("node 25 at video frame 16, strength 0.7")),
        "{:#?}",
        l.notes
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("ltx2-guides");
    // The guides' tokens: each guide's 2 x 2 cells, time from its frame
    // to the next, sides in 32-pixel cells.
    // 17 frames at 24 a second: 17.7 audio latents, rounded to 18.
    let source = vec![0.5f32; 128 * 5 * 4 + 8 * 18 * 16];
    let frame = |v: f32| tensor(&[1, 128, 1, 2, 2], &[v; 512]);
    let out = run_policy_alone(
        &root,
        "frames",
        &l.document,
        "held_frames",
        &[
            ("source", tensor(&[1, 1, source.len()], &source)),
            ("frame", frame(3.0)),
            ("frame_2", frame(4.0)),
        ],
    );
    let (shape, positions) = npy(&out.join("keyframe_idxs.npy"));
    assert_eq!(shape, [1, 3, 8, 2]);
    let time: Vec<f32> = positions[..16].to_vec();
    assert_eq!(
        time,
        [
            0., 1., 0., 1., 0., 1., 0., 1., 16., 17., 16., 17., 16., 17., 16., 17.
        ]
    );
    let height: Vec<f32> = positions[16..32].to_vec();
    assert_eq!(
        height,
        [
            0., 32., 0., 32., 32., 64., 32., 64., 0., 32., 0., 32., 32., 64., 32., 64.
        ]
    );
    assert_eq!(npy(&out.join("guide_strength.npy")).1, [0.7; 8]);
    let (_, held) = npy(&out.join("held.npy"));
    let (_, mask) = npy(&out.join("mask.npy"));
    // Channel 0's 5 frames of 4 cells: the video's 3, then the guides.
    assert_eq!(
        held[..20],
        [[0.5; 12].as_slice(), &[3.0; 4], &[4.0; 4]].concat()[..]
    );
    let kept = 1.0 - 0.7f32;
    assert_eq!(mask[..20], [[1.0; 12].as_slice(), &[kept; 8]].concat()[..]);
    let (_, out) = package_and_run(&root, "flf", &first_and_last_frame());
    assert_eq!(npy(&out.join("video.npy")).0, [1, 17, 3, 64, 64]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn guides_and_samplers_the_lowering_cannot_build_are_refused() {
    let mut g = first_and_last_frame();
    g["25"]["inputs"]["frame_idx"] = json!(40);
    assert_refused(
        &g,
        (
            "25",
            "LTXVAddGuide",
            Some("frame_idx"),
            "guides frame 40, past the last of the video's 17 frames",
        ),
    );
    let mut g = first_and_last_frame();
    g["12"]["inputs"]["eta"] = json!(0.5);
    g["15"]["inputs"]["av_latent"] = json!(["14", 0]);
    assert_refused(
        &g,
        (
            "12",
            "SamplerEulerAncestral",
            Some("eta"),
            "samples with eta 0.5 and noise scale 1; the lowering takes eta 0 (Euler's step) or eta 1 with noise scale 1 (euler_ancestral)",
        ),
    );
    // At eta 1 and noise scale 1 it is euler_ancestral.
    let mut ancestral = first_and_last_frame();
    ancestral["12"]["inputs"]["eta"] = json!(1.0);
    let mut selected = first_and_last_frame();
    selected["12"] =
        json!({"class_type": "KSamplerSelect", "inputs": {"sampler_name": "euler_ancestral"}});
    let doc = |g: &Value| {
        let mut d = lowered(g, &Target::default()).document;
        d["pipeline"]["workflow"]["steps"] = Value::Null;
        d
    };
    assert_eq!(
        parameter(
            &doc(&ancestral)["pipeline"]["workflow"],
            "solver_step",
            "solver"
        ),
        "euler_ancestral"
    );
    assert_eq!(
        doc(&ancestral)["pipeline"]["workflow"]["components"]["solver_step"],
        doc(&selected)["pipeline"]["workflow"]["components"]["solver_step"]
    );
}

#[test]
fn a_held_first_frame_and_guides_are_held_together() {
    // The first frame held in place, then the two guides appended.
    let mut g = first_and_last_frame();
    g["22"] = json!({"class_type": "LTXVImgToVideoInplace", "inputs": {"strength": 1.0, "bypass": false, "vae": ["1", 2], "image": ["19", 0], "latent": ["7", 0]}});
    g["24"]["inputs"]["latent"] = json!(["22", 0]);
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    assert_eq!(parameter(w, "held_frames", "positions"), "0,3,4");
    assert_eq!(parameter(w, "held_frames", "strengths"), "1,0.7,0.7");
    let ports = &w["components"]["held_frames"]["ports"]["inputs"];
    assert!(ports.get("frame_3").is_some(), "{ports}");
    // Under the model's own schedule a run holding only guides still
    // noises its latent after writing them.
    let mut guided = first_and_last_frame();
    guided["13"] = own_schedule();
    assert_noised_after_holding(&guided);
}

#[test]
fn a_crop_on_the_way_drops_the_guides_farther_back_from_the_prompts() {
    // A guide whose latent is not sampled, cropped from the prompts
    // before the frame rate is set: the sampler's prompts carry none.
    let mut g = image_to_video(1.0);
    g["30"] = json!({"class_type": "EmptyLTXVLatentVideo", "inputs": {"width": 64, "height": 64, "length": 9, "batch_size": 1}});
    g["31"] = json!({"class_type": "LTXVAddGuide", "inputs": {"frame_idx": 0, "strength": 1.0, "positive": ["3", 0], "negative": ["4", 0], "vae": ["1", 2], "latent": ["30", 0], "image": ["19", 0]}});
    g["32"] = json!({"class_type": "LTXVCropGuides", "inputs": {"positive": ["5", 0], "negative": ["5", 1], "latent": ["31", 2]}});
    g["5"]["inputs"]["positive"] = json!(["31", 0]);
    g["5"]["inputs"]["negative"] = json!(["31", 1]);
    g["11"]["inputs"]["positive"] = json!(["32", 0]);
    g["11"]["inputs"]["negative"] = json!(["32", 1]);
    let l = lowered(&g, &Target::default());
    assert_eq!(parameter(workflow(&l), "held_frames", "positions"), "0");
}

#[test]
fn prompts_and_crops_must_carry_the_latents_guides() {
    // CFG++ steps with the unconditional estimate, which guides do not
    // blend.
    let mut g = first_and_last_frame();
    g["12"] = json!({"class_type": "KSamplerSelect", "inputs": {"sampler_name": "gradient_estimation_cfg_pp"}});
    assert_refused(
        &g,
        (
            "24",
            "LTXVAddGuide",
            None,
            "holds a picture as a frame of a video that gradient_estimation_cfg_pp samples; the lowering blends the held frame into the guided estimate only, and CFG++ samplers step with the unconditional one",
        ),
    );
    // The sampler reads the first guide's prompts only.
    let mut g = first_and_last_frame();
    g["11"]["inputs"]["negative"] = json!(["24", 1]);
    assert_refused(
        &g,
        (
            "14",
            "SamplerCustomAdvanced",
            Some("negative"),
            "reads a negative prompt carrying the guides of nodes 24 where its latent holds those of nodes 24, 25; the model takes the guides' places from the prompts",
        ),
    );
    // The crop's prompts carry one guide of the two.
    let mut g = first_and_last_frame();
    g["26"]["inputs"]["positive"] = json!(["24", 0]);
    assert_refused(
        &g,
        (
            "26",
            "LTXVCropGuides",
            Some("positive"),
            "drops the 1 guide frames its prompts carry from a latent whose sampler appended 2",
        ),
    );
    // Two guides of one frame, which ComfyUI counts as one.
    let mut g = first_and_last_frame();
    g["25"]["inputs"]["frame_idx"] = json!(0);
    assert_refused(
        &g,
        (
            "25",
            "LTXVAddGuide",
            Some("frame_idx"),
            "guides frame 0, which another guide of the video guides already",
        ),
    );
}

#[test]
fn guides_carried_through_the_frame_rate_node_after_them_are_the_prompts_guides() {
    // The frame rate set after the guides: the sampler's and the crop's
    // prompts carry both guides through it.
    let mut g = first_and_last_frame();
    g["24"]["inputs"]["positive"] = json!(["3", 0]);
    g["24"]["inputs"]["negative"] = json!(["4", 0]);
    g["5"]["inputs"]["positive"] = json!(["25", 0]);
    g["5"]["inputs"]["negative"] = json!(["25", 1]);
    g["11"]["inputs"]["positive"] = json!(["5", 0]);
    g["11"]["inputs"]["negative"] = json!(["5", 1]);
    g["26"]["inputs"]["positive"] = json!(["5", 0]);
    g["26"]["inputs"]["negative"] = json!(["5", 1]);
    let l = lowered(&g, &Target::default());
    assert_eq!(parameter(workflow(&l), "held_frames", "positions"), "3,4");
}
