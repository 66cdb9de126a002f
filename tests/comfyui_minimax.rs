//! MiniMax H3's text-to-video graphs: `MiniMaxH3ImageToVideo`'s prompt
//! and empty joint latent on the 17k + 5 frame grid, sampled packed as
//! LTX-2's, its video part decoded straight from the sampler by
//! `VAEDecode` and its audio part, divided back from the scale the
//! sampler carries it at, by `VAEDecodeAudio` into `CreateVideo`;
//! `MiniMaxH3SigmaShift`'s shifts and `BlockSparseAttention` on the model.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, changed, lowered, npy, package_and_run, pattern, run_policy_alone, scratch,
    workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// The `minimax-h3` pattern: a 64x32 video asked for 6 frames (22 on the
/// grid), sampled in two steps, with its sound.
fn text_to_video() -> Value {
    pattern("minimax-h3")
}

/// A contract parameter of component `name`.
fn parameter<'w>(w: &'w Value, name: &str, key: &str) -> &'w Value {
    &w["components"][name]["contract"]["parameters"][key]
}

/// 24 x 7 x 2 x 4 video cells (22 frames: 7 latent frames; 16 pixels a
/// cell), then 32 x 2 x 37 audio ones (22 / 24 * 40 = 36.7 latents).
const VIDEO: usize = 24 * 7 * 2 * 4;
const ROW: usize = VIDEO + 32 * 2 * 37;

#[test]
fn a_text_to_video_latent_snaps_to_the_frame_grid_and_is_sampled_packed() {
    let l = lowered(&text_to_video(), &Target::default());
    let w = workflow(&l);
    assert_eq!(parameter(w, "latent_row_shape", "av_elements"), ROW);
    assert_eq!(parameter(w, "latent_row_shape", "latent_frames"), 7);
    assert_eq!(parameter(w, "latent_row_shape", "decoded_frames"), 22);
    assert_eq!(
        parameter(w, "latent_row_shape", "decoded_samples"),
        37 * 800
    );
    assert_eq!(parameter(w, "av_split", "video_shape"), "24,7,2,4");
    assert_eq!(parameter(w, "av_split", "audio_shape"), "32,2,37");
    // The denoiser's split keeps the carried scale; the sink's divides it.
    assert_eq!(parameter(w, "av_split", "audio_divisor"), &Value::Null);
    assert_eq!(parameter(w, "av_split_2", "audio_divisor"), 4.0);
    let denoiser = &w["components"]["denoiser"]["ports"];
    assert_eq!(
        denoiser["inputs"]["audio_sample"]["shape"],
        json!(["batch", 32, 2, "audio_length"])
    );
    assert_eq!(
        denoiser["outputs"]["audio_noise_pred"]["shape"],
        json!(["batch", 32, 2, "audio_length"])
    );
    assert_eq!(w["inputs"]["request.flow_shift"]["default"], 12.0);
    assert_eq!(
        w["outputs"]["video_sound"]["media"]["sample_rate_hz"],
        32000
    );
    assert_eq!(
        l.prompts[0],
        (
            "request.input_ids".to_string(),
            "a lighthouse keeper whistles as waves break below".to_string()
        )
    );
    assert!(
        l.notes.iter().any(|n| n.contains(
            "carried at 4 times its scale (video shift 12 over audio shift 3)"
        )),
        "{:#?}",
        l.notes
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("minimax-t2v");
    let (_, out) = package_and_run(&root, "t2v", &text_to_video());
    assert_eq!(npy(&out.join("latent.npy")).0, [1, 1, ROW]);
    assert_eq!(npy(&out.join("video.npy")).0, [1, 22, 3, 32, 64]);
    assert_eq!(npy(&out.join("video_sound.npy")).0, [1, 2, 37 * 800]);
    assert!(out.join("video_sound.wav").exists());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_sinks_split_gives_the_audio_part_back_at_its_own_scale() {
    let l = lowered(&text_to_video(), &Target::default());
    if !support::runtime_available() {
        return;
    }
    let root = scratch("minimax-split");
    let packed: Vec<f32> = (0..ROW).map(|i| i as f32 * 0.5 - 900.0).collect();
    let tensor = json!({"dtype": "float32", "shape": [1, 1, ROW], "data": packed}).to_string();
    let out = run_policy_alone(
        &root,
        "split",
        &l.document,
        "av_split_2",
        &[("packed", tensor)],
    );
    let (video_shape, video) = npy(&out.join("video.npy"));
    let (audio_shape, audio) = npy(&out.join("audio.npy"));
    assert_eq!(
        (video_shape, audio_shape),
        (vec![1, 24, 7, 2, 4], vec![1, 32, 2, 37])
    );
    assert_eq!(video, packed[..VIDEO]);
    let divided: Vec<f32> = packed[VIDEO..].iter().map(|v| v * 0.25).collect();
    assert_eq!(audio, divided);
    let _ = std::fs::remove_dir_all(&root);
}

/// The pattern with `MiniMaxH3SigmaShift` and `BlockSparseAttention` on
/// the model path, as FastVideo's FastH3 template has them.
fn fast_h3() -> Value {
    let mut g = text_to_video();
    g["20"] = json!({"class_type": "MiniMaxH3SigmaShift", "inputs": {"model": ["1", 0], "shift_video": 10.0, "shift_audio": 3.0}});
    g["21"] = json!({"class_type": "BlockSparseAttention", "inputs": {"model": ["20", 0], "selection": "vsa", "selection.keep_percent": 10, "start_percent": 0.2, "end_percent": 1.0, "dense_blocks": "", "min_tokens": 12288, "extra_tokens": 256, "sink_conditioning": "exact_kv_and_rows", "verbose": false}});
    g["7"]["inputs"]["model"] = json!(["21", 0]);
    g["9"]["inputs"]["model"] = json!(["21", 0]);
    g
}

#[test]
fn the_sigma_shift_node_sets_both_shifts_and_sparse_attention_is_noted() {
    let l = lowered(&fast_h3(), &Target::default());
    let w = workflow(&l);
    assert_eq!(w["inputs"]["request.flow_shift"]["default"], 10.0);
    assert_eq!(parameter(w, "av_split_2", "audio_divisor"), 10.0 / 3.0);
    let noted = |text: &str| l.notes.iter().any(|n| n.contains(text));
    assert!(
        noted("carried at 3.3333 times its scale (video shift 10 over audio shift 3)"),
        "{:#?}",
        l.notes
    );
    assert!(
        noted(
            "node 21 (BlockSparseAttention) has ComfyUI compute the model's attention over a 'vsa' selection of key blocks from 20 % to 100 % of the schedule"
        ),
        "{:#?}",
        l.notes
    );
}

/// The pattern with keyframe pictures: a loaded first frame, and a last
/// frame where `last` is set.
fn image_to_video(last: bool) -> Value {
    changed(text_to_video(), |g| {
        g["30"] = json!({"class_type": "LoadImage", "inputs": {"image": "first.png"}});
        g["5"]["inputs"]["first_frame"] = json!(["30", 0]);
        if last {
            g["31"] = json!({"class_type": "LoadImage", "inputs": {"image": "last.png"}});
            g["5"]["inputs"]["last_frame"] = json!(["31", 0]);
        }
    })
}

#[test]
fn keyframe_pictures_are_seen_by_the_text_encoder_and_given_to_the_model_as_references() {
    let l = lowered(&image_to_video(true), &Target::default());
    let w = workflow(&l);
    let components = &w["components"];
    // The first frame stretched, the last cover-cropped, to 64x32 (whole
    // 8s, as a VAE encode cuts: so already).
    let fitted = |name: &str| &components[name]["contract"]["parameters"];
    let scales: Vec<&Value> = ["reference_scale", "reference_scale_2"]
        .iter()
        .map(|name| fitted(name))
        .collect();
    assert_eq!(
        scales,
        [
            &json!({"size": "fixed", "method": "lanczos", "width": 64, "height": 32, "multiple": 8}),
            &json!({"size": "fixed", "method": "lanczos", "width": 64, "height": 32, "crop": "center", "multiple": 8}),
        ]
    );
    let denoiser = &components["denoiser"]["ports"]["inputs"];
    assert!(denoiser.get("reference_latent").is_some(), "{denoiser:#}");
    assert!(denoiser.get("reference_latent_2").is_some(), "{denoiser:#}");
    let encoder = &components["text_encoder"]["ports"]["inputs"];
    assert!(encoder.get("image").is_some() && encoder.get("image_2").is_some());
    // The two loaded pictures are the run's inputs.
    assert!(w["inputs"]["request.image"].is_object() && w["inputs"]["request.image_2"].is_object());
    assert!(
        l.notes
            .iter()
            .any(|n| n
                .contains("reference latents in order, anchored at frame 0 and 21 of the video")),
        "{:#?}",
        l.notes
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("minimax-i2v");
    let (_, out) = package_and_run(&root, "i2v", &image_to_video(false));
    assert_eq!(npy(&out.join("video.npy")).0, [1, 22, 3, 32, 64]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn what_the_lowering_does_not_make_of_minimax_h3_is_refused() {
    let cases = vec![
        (
            changed(image_to_video(false), |g| {
                g["5"]["inputs"]["last_frame"] = json!(["30", 0]);
            }),
            (
                "5",
                "MiniMaxH3ImageToVideo",
                None,
                "appends the latent of node 30's picture at two sizes; the lowering encodes each picture at one size in a stage",
            ),
        ),
        (
            changed(text_to_video(), |g| g["5"]["inputs"]["width"] = json!(72)),
            (
                "5",
                "MiniMaxH3ImageToVideo",
                Some("width"),
                "asks for a width of 72 pixels, which MiniMax H3's 16-pixel latent cells do not divide",
            ),
        ),
        (
            changed(text_to_video(), |g| {
                g["20"] = json!({"class_type": "ModelSamplingSD3", "inputs": {"model": ["1", 0], "shift": 5.0}});
                g["7"]["inputs"]["model"] = json!(["20", 0]);
                g["9"]["inputs"]["model"] = json!(["20", 0]);
            }),
            (
                "20",
                "ModelSamplingSD3",
                None,
                "sets the sampling of node 5's MiniMax H3 model, which ComfyUI then samples without its audio part's own shift; the lowering takes H3's own sampling or MiniMaxH3SigmaShift's",
            ),
        ),
        (
            changed(text_to_video(), |g| {
                g["20"] = json!({"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": 64, "height": 64, "length": 5, "batch_size": 1}});
                g["10"]["inputs"]["latent_image"] = json!(["20", 0]);
                g["11"]["inputs"]["samples"] = json!(["10", 0]);
                g.as_object_mut().expect("graph").remove("12");
                g["13"]["inputs"]
                    .as_object_mut()
                    .expect("inputs")
                    .remove("audio");
            }),
            (
                "5",
                "MiniMaxH3ImageToVideo",
                None,
                "encodes the prompt of a sampler that does not sample its own latent (output 1); the lowering anchors its keyframes in that latent",
            ),
        ),
        (
            changed(text_to_video(), |g| {
                g["20"] = json!({"class_type": "LTXVSeparateAVLatent", "inputs": {"av_latent": ["10", 0]}});
                g["12"] = json!({"class_type": "LTXVAudioVAEDecode", "inputs": {"samples": ["20", 1], "audio_vae": ["4", 0]}});
            }),
            (
                "12",
                "LTXVAudioVAEDecode",
                Some("samples"),
                "decodes node 20's latent with LTXVAudioVAEDecode beside a video; the lowering decodes LTX-2's audio with LTXVAudioVAEDecode and MiniMax H3's with VAEDecodeAudio",
            ),
        ),
        (
            changed(text_to_video(), |g| {
                g["10"]["inputs"]["latent_image"] = json!(["5", 0])
            }),
            (
                "10",
                "SamplerCustomAdvanced",
                Some("latent_image"),
                "reads output 0 of node 5, its conditioning, as a latent",
            ),
        ),
        (
            changed(text_to_video(), |g| {
                g["30"] = json!({"class_type": "LoadAudio", "inputs": {"audio": "a.wav"}});
                g["13"]["inputs"]["audio"] = json!(["30", 0]);
            }),
            (
                "13",
                "CreateVideo",
                Some("audio"),
                "adds a sound track from node 30; the lowering adds a sampled audio-video latent's decoded audio (LTXVAudioVAEDecode, or VAEDecodeAudio of MiniMax H3's) only",
            ),
        ),
    ];
    for (graph, expected) in cases {
        assert_refused(&graph, expected);
    }
}
