//! Stable Audio graphs: `EmptyLatentAudio`'s latent `[batch, 64, steps]`,
//! `ConditioningStableAudio`'s seconds as denoiser inputs, the model's own
//! sampling (v-prediction on continuous sigmas 0.03..500, timesteps
//! `atan(sigma) * 2 / pi`), `VAEDecodeAudio`'s loudness guard and an audio
//! output at 44.1 kHz that the run writes as a WAV file; what cannot be
//! expressed is refused.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, package_and_run, pattern, run_policy_alone, scratch, workflow,
};
use wfstudio_core::comfyui::lower::Target;

fn audio() -> Value {
    pattern("stable-audio")
}

#[test]
fn a_stable_audio_graph_lowers_to_an_audio_latent_and_output() {
    let l = lowered(&audio(), &Target::default());
    let w = workflow(&l);
    let components = &w["components"];
    // 2 seconds: round(2 * 44100 / 2048 / 2) * 2 = round(21.53) * 2 = 44
    // steps.
    assert_eq!(
        components["latent_row_shape"]["contract"]["parameters"],
        json!({"audio_length": 44, "batch_size": 1, "channels": 64, "scale": 2048})
    );
    let schedule = &components["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(schedule["prediction"], "v_prediction");
    assert_eq!(schedule["model_sampling"], "continuous_v");
    assert_eq!(schedule["model_sigma_min"], 0.03);
    assert_eq!(schedule["model_sigma_max"], 500.0);
    assert_eq!(w["inputs"]["request.seconds_start"]["default"], 0.0);
    assert_eq!(w["inputs"]["request.seconds_total"]["default"], 2.0);
    let denoiser = &components["denoiser"]["ports"]["inputs"];
    assert_eq!(
        denoiser["sample"]["shape"],
        json!(["batch", "channels", "latent_samples"])
    );
    assert_eq!(denoiser["seconds_total"]["shape"], json!(["batch"]));
    let output = &w["outputs"]["audio"];
    assert_eq!(output["role"], "audio");
    assert_eq!(
        output["media"],
        json!({"container": "wav", "encoding": "pcm_f32_le", "sample_rate_hz": 44100, "channels": 2})
    );
    assert_eq!(output["contract"]["shape"], json!(["batch", 2, "samples"]));
    let after: Vec<&Value> = w["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .skip(1)
        .map(|s| s.get("component").unwrap_or(&s["kind"]))
        .collect();
    assert_eq!(
        after,
        [
            &json!("vae_decoder"),
            &json!("audio_loudness"),
            &json!("emit"),
            &json!("emit")
        ]
    );

    if !support::runtime_available() {
        return;
    }
    let root = scratch("stable-audio");
    let (_, out) = package_and_run(&root, "stable-audio", &audio());
    let (latent, _) = npy(&out.join("latent.npy"));
    assert_eq!(latent, [1, 64, 44]);
    let (shape, samples) = npy(&out.join("audio.npy"));
    assert_eq!(shape, [1, 2, 44 * 2048]);
    assert!(samples.iter().all(|v| v.is_finite()));
    let wav = std::fs::read(out.join("audio.wav")).expect("the run writes a WAV file");
    assert_eq!(&wav[..4], b"RIFF");
    // 44100 samples a second, little-endian, at byte 24 of the header.
    assert_eq!(
        u32::from_le_bytes([wav[24], wav[25], wav[26], wav[27]]),
        44100
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// A second sampler on the first's audio latent samples it as Stable Audio
/// too, with the latent's default seconds where its prompts state none.
#[test]
fn a_chained_audio_stage_keeps_stable_audios_sampling() {
    let mut g = audio();
    g["20"] = json!({"class_type": "KSampler", "inputs": {"seed": 8, "steps": 3, "cfg": 6.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 0.5, "model": ["4", 0], "positive": ["6", 0], "negative": ["7", 0], "latent_image": ["3", 0]}});
    g["12"]["inputs"]["samples"] = json!(["20", 0]);
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    let schedule = &w["components"]["stage2_diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(schedule["model_sampling"], "continuous_v");
    assert_eq!(schedule["prediction"], "v_prediction");
    // 44 steps / 21.53, truncated.
    assert_eq!(w["inputs"]["stage2.request.seconds_total"]["default"], 2.0);
    assert_eq!(w["inputs"]["stage2.request.seconds_start"]["default"], 0.0);
}

/// Each row of the decode is divided by `max(1, 5 * std)` (unbiased):
/// a loud row is scaled down to a standard deviation of 1/5, a quiet row
/// kept.
#[test]
fn the_decode_is_scaled_down_where_loud_as_vae_decode_audio_does() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("audio-loudness");
    let document = lowered(&audio(), &Target::default()).document;
    let n = 2 * 50;
    let loud: Vec<f32> = (0..n)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) / 4.0)
        .collect();
    let quiet: Vec<f32> = loud.iter().map(|v| v / 100.0).collect();
    let data: Vec<f32> = loud.iter().chain(&quiet).copied().collect();
    let input = json!({"dtype": "float32", "shape": [2, 2, 50], "data": data}).to_string();
    let out = run_policy_alone(
        &root,
        "loudness",
        &document,
        "audio_loudness",
        &[("audio", input)],
    );
    let (shape, normalized) = npy(&out.join("normalized.npy"));
    assert_eq!(shape, [2, 2, 50]);
    let unbiased_std = |row: &[f32]| {
        let mean = row.iter().map(|v| f64::from(*v)).sum::<f64>() / row.len() as f64;
        let sum: f64 = row.iter().map(|v| (f64::from(*v) - mean).powi(2)).sum();
        (sum / (row.len() - 1) as f64).sqrt()
    };
    let divisor = (5.0 * unbiased_std(&loud)).max(1.0);
    assert!(divisor > 1.0, "the loud row is loud");
    for (i, (got, raw)) in normalized.iter().zip(&data).enumerate() {
        let want = match i < n {
            true => f64::from(*raw) / divisor,
            false => f64::from(*raw),
        };
        assert!(
            (f64::from(*got) - want).abs() <= 1e-6,
            "{i}: {got} vs {want}"
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// The schedule's timesteps are `atan(sigma) * 2 / pi` of its sigmas.
#[test]
fn the_timesteps_are_the_arctangent_of_the_sigmas() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("audio-timesteps");
    let document = lowered(&audio(), &Target::default()).document;
    let sigmas = run_policy_alone(&root, "sigmas", &document, "diffusion_schedule", &[]);
    let timesteps = run_policy_alone(&root, "timesteps", &document, "diffusion_timesteps", &[]);
    let (_, sigmas) = npy(&sigmas.join("schedule.npy"));
    let (_, timesteps) = npy(&timesteps.join("schedule.npy"));
    // Exponential from 500 to 0.03, then 0.
    assert!((sigmas[0] - 500.0).abs() < 1e-3, "{sigmas:?}");
    assert_eq!(sigmas.len(), 5);
    for (sigma, t) in sigmas.iter().zip(&timesteps).take(4) {
        let want = f64::from(*sigma).atan() * 2.0 / std::f64::consts::PI;
        assert!(
            (f64::from(*t) - want).abs() <= 1e-6,
            "{sigma}: {t} vs {want}"
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn audio_graphs_the_lowering_cannot_express_are_refused_by_node() {
    let edited = |edit: &dyn Fn(&mut Value)| {
        let mut g = audio();
        edit(&mut g);
        g
    };
    assert_refused(
        &edited(&|g| {
            g["14"] = json!({"class_type": "ConditioningStableAudio", "inputs": {"seconds_start": 1.0, "seconds_total": 2.0, "positive": ["7", 0], "negative": ["7", 0]}});
            g["3"]["inputs"]["negative"] = json!(["14", 1]);
        }),
        (
            "13",
            "ConditioningStableAudio",
            None,
            "gives the sampler's prompts different seconds, and the lowering passes one start and total to all of them",
        ),
    );
    assert_refused(
        &edited(&|g| {
            g["20"] = json!({"class_type": "SaveImage", "inputs": {"filename_prefix": "x", "images": ["21", 0]}});
            g["21"] = json!({"class_type": "VAEDecode", "inputs": {"samples": ["3", 0], "vae": ["4", 2]}});
        }),
        (
            "21",
            "VAEDecode",
            None,
            "decodes an audio latent as pictures",
        ),
    );
    assert_refused(
        &edited(&|g| {
            g["15"] = json!({"class_type": "VideoLinearCFGGuidance", "inputs": {"min_cfg": 1.0, "model": ["4", 0]}});
            g["3"]["inputs"]["model"] = json!(["15", 0]);
        }),
        (
            "15",
            "VideoLinearCFGGuidance",
            None,
            "guides a picture or audio latent, where ComfyUI would vary the scale over the batch's rows; the lowering raises the scale over a video's frames only",
        ),
    );
    let mut picture = pattern("img2img");
    picture["9"] = json!({"class_type": "ConditioningStableAudio", "inputs": {"seconds_start": 0.0, "seconds_total": 2.0, "positive": ["2", 0], "negative": ["3", 0]}});
    picture["5"]["inputs"]["positive"] = json!(["9", 0]);
    picture["5"]["inputs"]["negative"] = json!(["9", 1]);
    assert_refused(
        &picture,
        (
            "9",
            "ConditioningStableAudio",
            None,
            "sets an audio model's seconds on the prompts of a sampler whose latent is not audio",
        ),
    );
    picture = pattern("img2img");
    picture["10"] =
        json!({"class_type": "VAEDecodeAudio", "inputs": {"samples": ["5", 0], "vae": ["1", 2]}});
    picture["11"] = json!({"class_type": "PreviewAudio", "inputs": {"audio": ["10", 0]}});
    assert_refused(
        &picture,
        (
            "10",
            "VAEDecodeAudio",
            None,
            "decodes a picture or video latent as audio",
        ),
    );
}
