//! ComfyUI video graphs: an empty video latent (frames after the channels)
//! sampled like a picture's, decoded into `[batch, frames, 3, height,
//! width]` frames in 0..1, each video sink its own output with its frame
//! rate beside it; a batch of two videos runs row by row (per-row values
//! broadcast over the five-axis latent); Kandinsky 5's image-to-video node
//! without a start picture as an empty video latent; and the video graphs
//! the lowering refuses, by name.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    Expected, assert_refused, invocations, lowered, npy, package_and_run, pattern, s, scratch,
    workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// The video pattern: `EmptyHunyuanLatentVideo` (32x24, 11 frames) through
/// `VAEDecodeTiled` into `CreateVideo` at 16 fps and `SaveVideo`, and into
/// `SaveAnimatedWEBP` at 8 fps.
fn video() -> Value {
    pattern("video")
}

#[test]
fn a_video_graph_declares_a_video_latent_and_one_output_per_video_sink() {
    let l = lowered(&video(), &Target::default());
    let w = workflow(&l);
    let outputs: Vec<&String> = w["outputs"].as_object().expect("outputs").keys().collect();
    assert_eq!(
        outputs,
        [
            "video",
            "video_frame_rate",
            "preview",
            "preview_frame_rate",
            "latent"
        ]
    );
    for name in ["video", "preview"] {
        assert_eq!(w["outputs"][name]["role"], "video");
        assert_eq!(
            w["outputs"][name]["contract"]["shape"],
            json!(["batch", "frames", 3, "height", "width"])
        );
        assert!(w["outputs"][name].get("value_range").is_none());
    }
    assert_eq!(
        w["outputs"]["latent"]["contract"]["shape"],
        json!([
            "batch",
            "channels",
            "latent_frames",
            "latent_height",
            "latent_width"
        ])
    );
    // The frame rates are the sinks' own, as inputs a run may change.
    assert_eq!(w["inputs"]["request.video_frame_rate"]["default"], 16.0);
    assert_eq!(w["inputs"]["request.preview_frame_rate"]["default"], 8.0);
    assert_eq!(
        w["components"]["latent_row_shape"]["contract"]["parameters"],
        json!({"width": 32, "height": 24, "batch_size": 1, "channels": 16, "scale": 8, "length": 11, "temporal_scale": 4})
    );
    // Both sinks show one decode.
    assert_eq!(invocations(w, "vae_decoder"), 1);
}

#[test]
fn a_video_package_runs_into_frames_at_the_sinks_frame_rates() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("video");
    let (dir, out) = package_and_run(&root, "video", &video());
    // 11 frames make (11 - 1) / 4 + 1 = 3 latent frames, which a video VAE
    // decodes into (3 - 1) * 4 + 1 = 9.
    let (latent, _) = npy(&out.join("latent.npy"));
    assert_eq!(latent, [1, 16, 3, 3, 4]);
    for name in ["video", "preview"] {
        let (shape, frames) = npy(&out.join(format!("{name}.npy")));
        assert_eq!(shape, [1, 9, 3, 24, 32], "{name}");
        assert!(frames.iter().all(|v| (0.0..=1.0).contains(v)), "{name}");
        assert!(frames.iter().any(|v| *v > 0.0 && *v < 1.0), "{name}");
    }
    let (_, rate) = npy(&out.join("video_frame_rate.npy"));
    assert_eq!(rate, [16.0]);
    // The frames are the decoder's -1..1 moved to 0..1: (x + 1) / 2,
    // clamped (the decoder run here on the run's latent, with numpy).
    if let Some(python) = support::python() {
        let check = "import numpy as np, onnxruntime as ort, sys
pkg, out = sys.argv[1], sys.argv[2]
latent = np.load(out + '/latent.npy')
s = ort.InferenceSession(pkg + '/vae_decoder/model.onnx', providers=['CPUExecutionProvider'])
x = s.run(None, {'latent': latent})[0]
want = np.clip((x + 1) / 2, 0, 1)
got = np.load(out + '/video.npy')
assert got.shape == want.shape, (got.shape, want.shape)
print(float(np.max(np.abs(got - want))))";
        let worst: f64 = support::python_stdout(&python, &["-c", check, s(&dir), s(&out)])
            .trim()
            .parse()
            .expect("a number");
        assert!(worst <= 1e-6, "video pixels vs (decoder + 1) / 2: {worst}");
    }
    // The animation plays at the sink's rate: 1/16 s is 6 hundredths in
    // a GIF (its unit), 1/8 s 12 or 13.
    for (name, delays) in [("video", [60, 60]), ("preview", [120, 130])] {
        let gif = std::fs::read(out.join(format!("{name}.gif"))).expect("gif");
        let frames = image::AnimationDecoder::into_frames(
            image::codecs::gif::GifDecoder::new(std::io::Cursor::new(gif)).expect("a GIF"),
        )
        .collect_frames()
        .expect("frames");
        assert_eq!(frames.len(), 9, "{name}");
        let (numer, denom) = frames[0].delay().numer_denom_ms();
        let ms = numer / denom;
        assert!(delays.contains(&ms), "{name}: {ms} ms");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_picture_sink_saves_a_video_s_frames_as_pictures() {
    // ComfyUI's VAEDecode gives a video latent's frames to SaveImage as a
    // batch of pictures (a one-frame "video" is a picture model's image).
    let mut g = video();
    g["20"] = json!({"class_type": "SaveImage", "inputs": {"filename_prefix": "frames", "images": ["6", 0]}});
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    assert_eq!(w["outputs"]["frames"]["role"], "image");
    assert_eq!(w["outputs"]["frames"]["value_range"], "zero_to_one");
    assert_eq!(invocations(w, "vae_decoder"), 1);
    assert_eq!(invocations(w, "frame_pictures"), 1);
    // A second picture sink of the decode reads the same pictures.
    let mut two = g.clone();
    two["21"] = json!({"class_type": "PreviewImage", "inputs": {"images": ["6", 0]}});
    let l2 = lowered(&two, &Target::default());
    assert_eq!(invocations(workflow(&l2), "frame_pictures"), 1);
    if !support::runtime_available() {
        return;
    }
    let root = scratch("video-frames");
    let (_, out) = package_and_run(&root, "frames", &g);
    let (video, frames) = npy(&out.join("video.npy"));
    let (shape, pictures) = npy(&out.join("frames.npy"));
    assert_eq!(video, [1, 9, 3, 24, 32]);
    assert_eq!(shape, [9, 3, 24, 32]);
    assert_eq!(pictures, frames, "the pictures are the video's frames");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_batch_of_two_videos_samples_each_row_with_its_own_noise() {
    if !support::runtime_available() {
        return;
    }
    let mut graph = video();
    graph["4"]["inputs"]["batch_size"] = json!(2);
    let root = scratch("video-batch");
    let (_, out) = package_and_run(&root, "batch", &graph);
    let (shape, latent) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [2, 16, 3, 3, 4]);
    let row = latent.len() / 2;
    assert!(
        latent[..row]
            .iter()
            .zip(&latent[row..])
            .any(|(a, b)| (a - b).abs() > 1e-3),
        "the rows differ"
    );
    assert!(latent.iter().all(|v| v.is_finite()));
    assert_eq!(npy(&out.join("video.npy")).0, [2, 9, 3, 24, 32]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_wan22_latent_has_its_channels_and_sixteen_pixels_a_cell() {
    let mut graph = video();
    graph["4"] = json!({"class_type": "Wan22ImageToVideoLatent", "inputs": {"width": 64, "height": 48, "length": 6, "batch_size": 1, "vae": ["15", 0]}});
    let l = lowered(&graph, &Target::default());
    let shape = &workflow(&l)["components"]["latent_row_shape"]["contract"]["parameters"];
    assert_eq!(shape["channels"], 48, "Wan 2.2's channels, not SD3's 16");
    assert_eq!(shape["scale"], 16);
    if !support::runtime_available() {
        return;
    }
    let root = scratch("wan22");
    let (_, out) = package_and_run(&root, "wan22", &graph);
    // 6 frames: (6 - 1) / 4 + 1 = 2 latent frames, decoded into 5.
    assert_eq!(npy(&out.join("latent.npy")).0, [1, 48, 2, 3, 4]);
    assert_eq!(npy(&out.join("video.npy")).0, [1, 5, 3, 48, 64]);
    let _ = std::fs::remove_dir_all(&root);
}

/// Kandinsky 5's image-to-video node without a start picture passes both
/// prompts on and gives the empty video latent `EmptyHunyuanLatentVideo`
/// gives (16 channels, 8 pixels a cell, 4 frames a latent frame): the same
/// workflow. A start picture, and its output 3 read as the latent, are
/// refused.
#[test]
fn kandinsky5_without_a_start_picture_is_an_empty_video_latent() {
    let plain = lowered(&video(), &Target::default());
    let mut g = video();
    g["4"] = json!({"class_type": "Kandinsky5ImageToVideo", "inputs": {"positive": ["2", 0], "negative": ["3", 0], "vae": ["15", 0], "width": 32, "height": 24, "length": 11, "batch_size": 1}});
    g["5"]["inputs"]["positive"] = json!(["4", 0]);
    g["5"]["inputs"]["negative"] = json!(["4", 1]);
    g["5"]["inputs"]["latent_image"] = json!(["4", 2]);
    let l = lowered(&g, &Target::default());
    assert_eq!(workflow(&l), workflow(&plain));

    let mut cond_latent = g.clone();
    cond_latent["5"]["inputs"]["latent_image"] = json!(["4", 3]);
    assert_refused(
        &cond_latent,
        (
            "5",
            "KSampler",
            Some("latent_image"),
            "reads output 3 of node 4 (Kandinsky5ImageToVideo) as its latent; its empty latent is output 2",
        ),
    );
    g["4"]["inputs"]["start_image"] = json!(["30", 0]);
    g["30"] = json!({"class_type": "LoadImage", "inputs": {"image": "start.png"}});
    assert_refused(
        &g,
        (
            "4",
            "Kandinsky5ImageToVideo",
            Some("start_image"),
            "starts the video from a picture, which the lowering does not encode into video latents yet",
        ),
    );
}

#[test]
fn video_graphs_the_lowering_cannot_make_are_refused_by_name() {
    let cases: Vec<(Value, Expected)> = vec![
        (
            {
                let mut g = video();
                g["4"] = json!({"class_type": "Wan22ImageToVideoLatent", "inputs": {"width": 64, "height": 48, "length": 6, "batch_size": 1, "vae": ["15", 0], "start_image": ["30", 0]}});
                g["30"] = json!({"class_type": "LoadImage", "inputs": {"image": "start.png"}});
                g
            },
            (
                "4",
                "Wan22ImageToVideoLatent",
                Some("start_image"),
                "starts the video from a picture, which the lowering does not encode into video latents yet",
            ),
        ),
        (
            {
                let mut g = video();
                g["7"]["inputs"]["audio"] = json!(["31", 0]);
                g["31"] = json!({"class_type": "LoadAudio", "inputs": {"audio": "a.wav"}});
                g
            },
            (
                "7",
                "CreateVideo",
                Some("audio"),
                "adds a sound track from node 31; the lowering adds a sampled audio-video latent's decoded audio (LTXVAudioVAEDecode, or VAEDecodeAudio of MiniMax H3's) only",
            ),
        ),
        (
            {
                let mut g = video();
                g["5"]["inputs"]["model"] = json!(["12", 0]);
                g["14"]["inputs"]["type"] = json!("lumina2");
                g
            },
            (
                "5",
                "KSampler",
                Some("model"),
                "samples a video latent with the model's own sampling, which the graph does not state: the models that take it sample by flow matching with a shift of their own, and the text encoder's type 'lumina2' (node 14) does not settle which",
            ),
        ),
        (
            {
                let mut g = video();
                g["9"]["inputs"]["fps"] = json!(0.0);
                g
            },
            ("9", "SaveAnimatedWEBP", Some("fps"), "is 0 frames a second"),
        ),
        (
            {
                let mut g = video();
                g["9"] = json!({"class_type": "VHS_VideoCombine", "inputs": {"frame_rate": 8.0, "loop_count": 0, "filename_prefix": "AnimateDiff", "format": "image/gif", "pingpong": true, "save_output": true, "images": ["6", 0]}});
                g
            },
            (
                "9",
                "VHS_VideoCombine",
                Some("pingpong"),
                "plays the frames forth and back, which the lowering's video output does not",
            ),
        ),
        (
            {
                let mut g = video();
                g["4"] = json!({"class_type": "Wan22ImageToVideoLatent", "inputs": {"width": 64, "height": 48, "length": 6, "batch_size": 2, "vae": ["15", 0]}});
                g
            },
            (
                "4",
                "Wan22ImageToVideoLatent",
                Some("batch_size"),
                "asks for 2 videos; the lowering makes this class's latent for one",
            ),
        ),
        (
            {
                let mut g = video();
                g["4"] = json!({"class_type": "EmptyLTXVLatentVideo", "inputs": {"width": 32, "height": 64, "length": 9, "batch_size": 1}});
                g
            },
            ("4", "EmptyLTXVLatentVideo", Some("width"), "is 32"),
        ),
        (
            {
                let mut g = video();
                g["21"] = json!({"class_type": "LatentUpscaleBy", "inputs": {"upscale_method": "bilinear", "scale_by": 1.5, "samples": ["5", 0]}});
                g["22"] = g["5"].clone();
                g["22"]["inputs"]["latent_image"] = json!(["21", 0]);
                g["22"]["inputs"]["denoise"] = json!(0.5);
                g["6"]["inputs"]["samples"] = json!(["22", 0]);
                g
            },
            (
                "21",
                "LatentUpscaleBy",
                Some("samples"),
                "resizes a video or audio latent; the lowering resizes picture latents only",
            ),
        ),
    ];
    for (graph, expected) in cases {
        assert_refused(&graph, expected);
    }
}

/// LTX-Video as ComfyUI's text-to-video template builds it: an
/// `EmptyLTXVLatentVideo`, `LTXVConditioning` on both prompts and the
/// `LTXVScheduler` sized by that latent, under `SamplerCustom`.
fn ltxv() -> Value {
    json!({
        "38": {"class_type": "CLIPLoader", "inputs": {"clip_name": "t5xxl_fp16.safetensors", "type": "ltxv", "device": "default"}},
        "44": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "ltx-video-2b-v0.9.safetensors"}},
        "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "a river at dawn", "clip": ["38", 0]}},
        "7": {"class_type": "CLIPTextEncode", "inputs": {"text": "low quality", "clip": ["38", 0]}},
        "70": {"class_type": "EmptyLTXVLatentVideo", "inputs": {"width": 768, "height": 512, "length": 97, "batch_size": 1}},
        "69": {"class_type": "LTXVConditioning", "inputs": {"frame_rate": 25.0, "positive": ["6", 0], "negative": ["7", 0]}},
        "71": {"class_type": "LTXVScheduler", "inputs": {"steps": 4, "max_shift": 2.05, "base_shift": 0.95, "stretch": true, "terminal": 0.1, "latent": ["70", 0]}},
        "73": {"class_type": "KSamplerSelect", "inputs": {"sampler_name": "euler"}},
        "72": {"class_type": "SamplerCustom", "inputs": {"add_noise": true, "noise_seed": 7, "cfg": 3.0, "model": ["44", 0], "positive": ["69", 0], "negative": ["69", 1], "sampler": ["73", 0], "sigmas": ["71", 0], "latent_image": ["70", 0]}},
        "8": {"class_type": "VAEDecode", "inputs": {"samples": ["72", 0], "vae": ["44", 2]}},
        "78": {"class_type": "CreateVideo", "inputs": {"fps": 24.0, "images": ["8", 0]}},
        "79": {"class_type": "SaveVideo", "inputs": {"filename_prefix": "video/ComfyUI", "format": "auto", "codec": "auto", "video": ["78", 0]}}
    })
}

#[test]
fn ltx_video_takes_its_frame_rate_and_its_latent_sized_schedule() {
    let l = lowered(&ltxv(), &Target::default());
    let w = workflow(&l);
    assert_eq!(w["inputs"]["request.frame_rate"]["default"], json!(25.0));
    let denoiser = &w["components"]["denoiser"]["ports"]["inputs"];
    assert!(denoiser.get("frame_rate").is_some(), "{denoiser}");
    // 97 frames at 8 a latent frame and 32 pixels a cell: 13 x 16 x 24.
    let schedule = &w["components"]["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(schedule["spacing"], "ltxv");
    assert_eq!(schedule["tokens"], json!(13 * 16 * 24));
    let read = wfstudio_core::comfyui::synth::spacing::Schedule::read(schedule).expect("read");
    let flow =
        wfstudio_core::comfyui::synth::tables::ModelSampling::of_family("flux").expect("flux");
    let sigmas = read.constant(&flow, 4).expect("stated");
    // numpy, float32 as torch: ComfyUI's LTXVScheduler for 4992 tokens.
    for (got, want) in sigmas
        .iter()
        .zip([1.0, 0.875_844_84, 0.648_745_66, 0.1, 0.0])
    {
        assert!((got - want).abs() < 1e-6, "{sigmas:?}");
    }
    // Different frame rates on the two prompts are refused by name.
    let mut g = ltxv();
    g["68"] = json!({"class_type": "LTXVConditioning", "inputs": {"frame_rate": 30.0, "positive": ["6", 0], "negative": ["7", 0]}});
    g["72"]["inputs"]["negative"] = json!(["68", 1]);
    assert_refused(
        &g,
        (
            "69",
            "LTXVConditioning",
            None,
            "gives the sampler's prompts different frame rates (a prompt without LTXVConditioning has 25), and the denoiser takes one frame rate with every prompt",
        ),
    );
    if support::runtime_available() {
        let root = scratch("ltxv");
        let mut small = ltxv();
        small["70"]["inputs"] = json!({"width": 64, "height": 64, "length": 9, "batch_size": 1});
        let (_, out) = package_and_run(&root, "ltxv", &small);
        let (shape, _) = npy(&out.join("latent.npy"));
        assert_eq!(shape, [1, 128, 2, 2, 2]);
        let _ = std::fs::remove_dir_all(&root);
    }
}
