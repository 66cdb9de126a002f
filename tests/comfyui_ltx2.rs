//! LTX-2's audio-video graphs: `LTXVConcatAVLatent` of an empty video and
//! audio latent sampled packed into one row as ComfyUI samples it, the
//! denoiser reading the parts apart; `LTXVSeparateAVLatent`'s video
//! decoded into frames and its audio (`LTXVAudioVAEDecode`) put beside
//! them by `CreateVideo`; a second stage through `LTXVLatentUpsampler`.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, changed, lowered, npy, package_and_run, pattern, run_policy_alone, scratch,
    workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// LTX-2's text-to-video template, small: a 64x64 video of 9 frames at 24
/// a second with its sound, sampled by two written sigmas to 0, its
/// denoised output separated and decoded.
fn text_to_video() -> Value {
    json!({
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "ltx-2-19b-dev-fp8.safetensors"}},
        "2": {"class_type": "LTXAVTextEncoderLoader", "inputs": {"text_encoder": "gemma_3_12B_it.safetensors", "ckpt_name": "ltx-2-19b-dev-fp8.safetensors", "device": "default"}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "a puppet sings in the rain", "clip": ["2", 0]}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["2", 0]}},
        "5": {"class_type": "LTXVConditioning", "inputs": {"frame_rate": 24.0, "positive": ["3", 0], "negative": ["4", 0]}},
        "6": {"class_type": "LTXVAudioVAELoader", "inputs": {"ckpt_name": "ltx-2-19b-dev-fp8.safetensors"}},
        "7": {"class_type": "EmptyLTXVLatentVideo", "inputs": {"width": 64, "height": 64, "length": 9, "batch_size": 1}},
        "8": {"class_type": "LTXVEmptyLatentAudio", "inputs": {"frames_number": 9, "frame_rate": 24, "batch_size": 1, "audio_vae": ["6", 0]}},
        "9": {"class_type": "LTXVConcatAVLatent", "inputs": {"video_latent": ["7", 0], "audio_latent": ["8", 0]}},
        "10": {"class_type": "RandomNoise", "inputs": {"noise_seed": 10}},
        "11": {"class_type": "CFGGuider", "inputs": {"cfg": 3.0, "model": ["1", 0], "positive": ["5", 0], "negative": ["5", 1]}},
        "12": {"class_type": "KSamplerSelect", "inputs": {"sampler_name": "euler_ancestral"}},
        "13": {"class_type": "ManualSigmas", "inputs": {"sigmas": "1.0, 0.6, 0.0"}},
        "14": {"class_type": "SamplerCustomAdvanced", "inputs": {"noise": ["10", 0], "guider": ["11", 0], "sampler": ["12", 0], "sigmas": ["13", 0], "latent_image": ["9", 0]}},
        "15": {"class_type": "LTXVSeparateAVLatent", "inputs": {"av_latent": ["14", 1]}},
        "16": {"class_type": "VAEDecodeTiled", "inputs": {"tile_size": 512, "overlap": 64, "temporal_size": 4096, "temporal_overlap": 8, "samples": ["15", 0], "vae": ["1", 2]}},
        "17": {"class_type": "LTXVAudioVAEDecode", "inputs": {"samples": ["15", 1], "audio_vae": ["6", 0]}},
        "18": {"class_type": "CreateVideo", "inputs": {"fps": 24.0, "images": ["16", 0], "audio": ["17", 0]}},
        "19": {"class_type": "SaveVideo", "inputs": {"filename_prefix": "video/LTX-2", "format": "auto", "codec": "auto", "video": ["18", 0]}}
    })
}

/// The text-to-video graph with a second stage (the `ltx2-av` pattern):
/// the first stage's video part enlarged by the latent upsampler (through
/// `LTXVCropGuides`), joined with its audio part, sampled again and
/// decoded.
fn two_stages() -> Value {
    pattern("ltx2-av")
}

/// A contract parameter of component `name`.
fn parameter<'w>(w: &'w Value, name: &str, key: &str) -> &'w Value {
    &w["components"][name]["contract"]["parameters"][key]
}

#[test]
fn an_audio_video_latent_is_sampled_packed_and_read_apart() {
    let l = lowered(&text_to_video(), &Target::default());
    let w = workflow(&l);
    // 128 x 2 x 2 x 2 video cells (9 frames, 32-pixel cells), then 8 x 9 x
    // 16 audio ones (9 frames at 24 a second: 9.375 latents, rounded).
    assert_eq!(parameter(w, "latent_row_shape", "av_elements"), 2176);
    assert_eq!(parameter(w, "av_split", "video_shape"), "128,2,2,2");
    assert_eq!(parameter(w, "av_split", "audio_shape"), "8,9,16");
    let denoiser = &w["components"]["denoiser"]["ports"];
    assert_eq!(
        denoiser["inputs"]["audio_sample"]["shape"],
        json!(["batch", 8, "audio_length", 16])
    );
    assert_eq!(
        denoiser["inputs"]["sample"]["shape"]
            .as_array()
            .map(Vec::len),
        Some(5)
    );
    assert!(denoiser["outputs"].get("audio_noise_pred").is_some());
    assert_eq!(w["inputs"]["request.frame_rate"]["default"], 24.0);
    assert_eq!(
        w["outputs"]["video_sound"]["media"]["sample_rate_hz"],
        24000
    );
    assert_eq!(
        w["components"]["audio_vae_decoder"]["ports"]["outputs"]["waveform"]["shape"],
        json!(["batch", 2, "samples"])
    );
    assert!(
        l.notes.iter().any(|n| n.contains("`audio_sample`")),
        "{:#?}",
        l.notes
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("ltx2-t2v");
    let (_, out) = package_and_run(&root, "t2v", &text_to_video());
    assert_eq!(npy(&out.join("latent.npy")).0, [1, 1, 2176]);
    assert_eq!(npy(&out.join("video.npy")).0, [1, 9, 3, 64, 64]);
    let (sound, _) = npy(&out.join("video_sound.npy"));
    assert_eq!(sound[..2], [1, 2]);
    assert!(out.join("video_sound.wav").exists());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_second_stage_samples_the_upsampled_video_beside_the_first_stages_sound() {
    let l = lowered(&two_stages(), &Target::default());
    let w = workflow(&l);
    // The second stage's row: its video twice as high and wide.
    assert_eq!(parameter(w, "stage2_av_split", "video_shape"), "128,2,4,4");
    assert_eq!(
        parameter(w, "stage2_av_split_2", "video_shape"),
        "128,2,2,2"
    );
    assert_eq!(
        w["components"]["latent_upsampler"]["ports"]["outputs"]["upsampled"]["shape"][3],
        "upscaled_latent_height"
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("ltx2-two-stages");
    let (_, out) = package_and_run(&root, "two", &two_stages());
    assert_eq!(
        npy(&out.join("latent.npy")).0,
        [1, 1, 128 * 2 * 4 * 4 + 8 * 9 * 16]
    );
    assert_eq!(npy(&out.join("video.npy")).0, [1, 9, 3, 128, 128]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_split_and_join_policies_are_comfyuis_packing_and_its_inverse() {
    let l = lowered(&text_to_video(), &Target::default());
    let root = scratch("ltx2-packing");
    if !support::runtime_available() {
        return;
    }
    // Two rows of 2176: each row's first 1024 values are its video part.
    let packed: Vec<f32> = (0..2 * 2176).map(|i| i as f32 * 0.25 - 100.0).collect();
    let tensor = json!({"dtype": "float32", "shape": [2, 1, 2176], "data": packed}).to_string();
    let out = run_policy_alone(
        &root,
        "split",
        &l.document,
        "av_split",
        &[("packed", tensor)],
    );
    let (video_shape, video) = npy(&out.join("video.npy"));
    let (audio_shape, audio) = npy(&out.join("audio.npy"));
    assert_eq!(
        (video_shape, audio_shape),
        (vec![2, 128, 2, 2, 2], vec![2, 8, 9, 16])
    );
    assert_eq!(video[..1024], packed[..1024]);
    assert_eq!(video[1024..], packed[2176..2176 + 1024]);
    assert_eq!(audio[..1152], packed[1024..2176]);
    assert_eq!(audio[1152..], packed[2176 + 1024..]);
    let as_tensor = |shape: Vec<usize>, data: &[f32]| {
        json!({"dtype": "float32", "shape": shape, "data": data}).to_string()
    };
    let out = run_policy_alone(
        &root,
        "join",
        &l.document,
        "av_join",
        &[
            ("video", as_tensor(vec![2, 128, 2, 2, 2], &video)),
            ("audio", as_tensor(vec![2, 8, 9, 16], &audio)),
        ],
    );
    assert_eq!(npy(&out.join("packed.npy")), (vec![2, 1, 2176], packed));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_audio_latent_rounds_its_length_as_python_does() {
    // 12 frames at 8 a second: 37.5 latents, rounded to even 38.
    let mut g = text_to_video();
    g["8"]["inputs"]["frames_number"] = json!(12);
    g["8"]["inputs"]["frame_rate"] = json!(8);
    let l = lowered(&g, &Target::default());
    assert_eq!(
        parameter(workflow(&l), "av_split", "audio_shape"),
        "8,38,16"
    );
    // 9 frames at 18: 12.5, rounded to 12.
    g["8"]["inputs"]["frames_number"] = json!(9);
    g["8"]["inputs"]["frame_rate"] = json!(18);
    let l = lowered(&g, &Target::default());
    assert_eq!(
        parameter(workflow(&l), "av_split", "audio_shape"),
        "8,12,16"
    );
}

#[test]
fn audio_video_graphs_the_lowering_cannot_build_are_refused() {
    let denoised = "feeds its denoised_output to node 15; the lowering takes it where the schedule ends at sigma 0 (a ManualSigmas list ending in 0, a BasicScheduler or LTXVScheduler) under euler, euler_ancestral, heun, dpmpp_2m, gradient_estimation or gradient_estimation_cfg_pp, as the sampled output";
    let cases: Vec<(Value, support::lowering::Expected)> = vec![
        (
            changed(text_to_video(), |g| {
                g["8"]["inputs"]["frames_number"] = json!(1);
                g["8"]["inputs"]["frame_rate"] = json!(1000);
            }),
            (
                "8",
                "LTXVEmptyLatentAudio",
                Some("frames_number"),
                "asks for 1 frames at 1000 a second, less than one audio latent (1/25 s)",
            ),
        ),
        (
            changed(text_to_video(), |g| {
                g["16"]["inputs"]["samples"] = json!(["14", 0])
            }),
            (
                "16",
                "VAEDecodeTiled",
                Some("samples"),
                "decodes LTX-2's audio-video latent whole, or an audio-video latent trimmed; the lowering decodes the video part as sampled",
            ),
        ),
        (
            changed(text_to_video(), |g| {
                g["30"] = json!({"class_type": "LoadAudio", "inputs": {"audio": "a.wav"}});
                g["18"]["inputs"]["audio"] = json!(["30", 0]);
            }),
            (
                "18",
                "CreateVideo",
                Some("audio"),
                "adds a sound track from node 30; the lowering adds a sampled audio-video latent's decoded audio (LTXVAudioVAEDecode, or VAEDecodeAudio of MiniMax H3's) only",
            ),
        ),
        (
            changed(text_to_video(), |g| {
                g["17"] = json!({"class_type": "VAEDecodeAudio", "inputs": {"samples": ["15", 1], "vae": ["6", 0]}});
            }),
            (
                "17",
                "VAEDecodeAudio",
                Some("samples"),
                "decodes node 15's latent with VAEDecodeAudio beside a video; the lowering decodes LTX-2's audio with LTXVAudioVAEDecode and MiniMax H3's with VAEDecodeAudio",
            ),
        ),
        (
            changed(text_to_video(), |g| {
                g["8"]["inputs"]["batch_size"] = json!(2)
            }),
            (
                "9",
                "LTXVConcatAVLatent",
                None,
                "joins parts that do not come from one place: both must be empty latents of one batch size, or both one earlier sampler's",
            ),
        ),
        // The denoised output under a sampler whose last step mixes in
        // earlier ones, and where the schedule does not end at 0.
        (
            changed(text_to_video(), |g| {
                g["12"]["inputs"]["sampler_name"] = json!("lms")
            }),
            ("14", "SamplerCustomAdvanced", None, denoised),
        ),
        (
            changed(text_to_video(), |g| {
                g["13"]["inputs"]["sigmas"] = json!("1.0, 0.6, 0.1")
            }),
            ("14", "SamplerCustomAdvanced", None, denoised),
        ),
        // The second stage reading the first's packed latent directly.
        (
            changed(two_stages(), |g| {
                g["26"]["inputs"]["latent_image"] = json!(["14", 0])
            }),
            (
                "14",
                "SamplerCustomAdvanced",
                None,
                "gives sampler 26 LTX-2's audio-video latent other than through LTXVConcatAVLatent; the lowering samples one further from LTXVSeparateAVLatent's parts joined again, the video part through LTXVLatentUpsampler",
            ),
        ),
        // An upsampler of another kind than twice the height and width.
        (
            changed(two_stages(), |g| {
                g["21"]["inputs"]["model_name"] =
                    json!("ltx-2-temporal-upscaler-x2-1.0.safetensors");
            }),
            (
                "21",
                "LatentUpscaleModelLoader",
                Some("model_name"),
                "loads 'ltx-2-temporal-upscaler-x2-1.0.safetensors', which the lowering does not know as LTX-2's spatial upsampler of twice the height and width",
            ),
        ),
    ];
    for (graph, expected) in cases {
        assert_refused(&graph, expected);
    }
}

#[test]
fn ltx_2_5s_guider_of_one_scale_for_both_parts_is_cfg_and_its_audio_vae_a_file() {
    // LTX-2.5's: the audio VAE a file of its own, decoding at 48 kHz.
    let mut g = text_to_video();
    g["6"] = json!({"class_type": "VAELoader", "inputs": {"vae_name": "ltx-2.5-audio-vae-bf16.safetensors"}});
    g["11"] = json!({"class_type": "LTXVDualCFGGuider", "inputs": {"video_cfg": 3.0, "audio_cfg": 3.0, "model": ["1", 0], "positive": ["5", 0], "negative": ["5", 1]}});
    let dual = lowered(&g, &Target::default());
    let plain = lowered(&text_to_video(), &Target::default());
    let w = workflow(&dual);
    assert_eq!(
        w["outputs"]["video_sound"]["media"]["sample_rate_hz"],
        48000
    );
    assert_eq!(w["inputs"]["request.guidance_scale"]["default"], 3.0);
    assert_eq!(w["steps"][0], workflow(&plain)["steps"][0]);
    g["11"]["inputs"]["audio_cfg"] = json!(7.0);
    assert_refused(
        &g,
        (
            "11",
            "LTXVDualCFGGuider",
            Some("audio_cfg"),
            "guides the audio part at 7 and the video part at 3; the lowering guides both parts at one scale",
        ),
    );
}
