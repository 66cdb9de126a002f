//! Audio-video latents in the document (LTX-2's and MiniMax H3's, see
//! `recognise::av` and `recognise::minimax`): a
//! stage samples the packed row `[batch, 1, video + audio]` as ComfyUI
//! does, so its noise, solver and guidance are the ones every latent has;
//! `av_split` gives the row's video and audio parts back (by the stage's
//! layout, which the graph fixes) for each denoiser call, which takes
//! them apart (`sample`, `audio_sample`) and gives both estimates, which
//! `av_join` packs again. A stage that continues an earlier one starts
//! from the earlier row's video part through the latent upsampler, joined
//! with its audio part; a sink decodes a stage's video part and, beside a
//! video, its audio part (`audio_vae_decoder`, a waveform at the audio
//! VAE's rate; MiniMax H3's audio part divided back from the scale its
//! sampler carries it at).

use super::super::parts::{Axes, Steps, component, contract, declared_once, invoke, policy};
use super::super::recognise::{AvLayout, AvModel, FlowShift, Plan, minimax};
use serde_json::{Map, Value, json};

/// `model`'s audio latent (LTX-2's `[batch, 8, audio_length, 16]`).
pub(super) fn audio_latent(model: AvModel) -> Value {
    contract("float32", model.audio_axes(), true)
}

/// The `av_split` policy `name` for rows laid out as `layout`, its audio
/// part divided by `divisor` where one is given.
fn split_policy(name: &str, layout: &AvLayout, divisor: Option<f64>) -> Value {
    let list = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    let mut parameters =
        json!({"video_shape": list(&layout.video), "audio_shape": list(&layout.audio())});
    if let Some(divisor) = divisor {
        parameters["audio_divisor"] = json!(divisor);
    }
    policy(
        name,
        json!({"packed": Axes::AudioVideo.latent()}),
        json!({"video": Axes::Video.latent(), "audio": audio_latent(layout.model)}),
        Some(json!({"id": "wfstudio.av-split", "version": "1", "parameters": parameters})),
    )
}

/// The first free `av_split` name (`av_split`, `av_split_2`, ...) for
/// the parts of `plan`'s sampled row a sink decodes (the audio part at
/// its own scale), declared among `components`.
pub(super) fn sink_split(plan: &Plan, components: &mut Map<String, Value>) -> Option<String> {
    let layout = &plan.audio.as_ref()?.layout;
    let divisor = audio_shifts(plan)
        .map(|(video, audio)| video / audio)
        .filter(|c| *c != 1.0);
    Some(declared_once(components, "av_split", |name| {
        split_policy(name, layout, divisor)
    }))
}

/// MiniMax H3's video and audio shifts, whose ratio is the factor
/// ComfyUI's sampler carries its audio part at (`ModelSamplingAV`);
/// `None` for LTX-2's latent (`recognise::minimax` refuses an H3 stage
/// of other sampling).
fn audio_shifts(plan: &Plan) -> Option<(f64, f64)> {
    let av = plan.audio.as_ref()?;
    if av.layout.model != AvModel::MiniMaxH3 {
        return None;
    }
    let flow = plan.model.flow.as_ref()?;
    let FlowShift::Constant(shift) = flow.shift else {
        return None;
    };
    Some((shift, flow.audio_shift.unwrap_or(minimax::AUDIO_SHIFT)))
}

/// Declares the stage's `av_split` and `av_join`, where it samples an
/// audio-video latent.
pub(super) fn declare(plan: &Plan, components: &mut Map<String, Value>) {
    let Some(av) = &plan.audio else {
        return;
    };
    components.insert(
        "av_split".into(),
        split_policy("av_split", &av.layout, None),
    );
    components.insert(
        "av_join".into(),
        policy(
            "av_join",
            json!({"video": Axes::Video.latent(), "audio": audio_latent(av.layout.model)}),
            json!({"packed": Axes::AudioVideo.latent()}),
            Some(json!({"id": "wfstudio.av-join", "version": "1"})),
        ),
    );
}

/// The packed row's size, as the `latent_row_shape` parameters of an
/// audio-video stage from empty latents; for MiniMax H3's, the video
/// part's latent frames, the frames its VAE decodes them into and the
/// waveform samples of the audio part (which stand-ins follow).
pub(super) fn row_shape(plan: &Plan, parameters: &mut Value) {
    if let Some(av) = plan.audio.as_ref().filter(|av| av.earlier.is_none()) {
        parameters["av_elements"] = json!(av.layout.elements());
        if av.layout.model == AvModel::MiniMaxH3 {
            let latent_frames = av.layout.video[1];
            parameters["latent_frames"] = json!(latent_frames);
            parameters["decoded_frames"] = json!(minimax::decoded_frames(latent_frames));
            parameters["decoded_samples"] =
                json!(av.layout.audio_length * minimax::SAMPLES_PER_LATENT);
        }
    }
}

/// The denoiser's ports for an audio-video stage: the video part as
/// `sample`, the audio part as `audio_sample`, an estimate of each.
pub(super) fn denoiser_ports(plan: &Plan, inputs: &mut Value) -> Option<Value> {
    let audio = audio_latent(plan.audio.as_ref()?.layout.model);
    inputs["sample"] = Axes::Video.latent();
    inputs["audio_sample"] = audio.clone();
    Some(json!({"noise_pred": Axes::Video.latent(), "audio_noise_pred": audio}))
}

/// Splits `sample` for one set of denoiser calls (values ending in
/// `suffix`); the parts' values, where the stage is audio-video.
pub(super) fn split_sample(
    plan: &Plan,
    sample: &str,
    suffix: &str,
    body: &mut Steps,
) -> Option<(String, String)> {
    plan.audio.as_ref()?;
    let parts = (format!("av.video{suffix}"), format!("av.audio{suffix}"));
    body.push(
        invoke(
            "av_split",
            json!({"packed": sample}),
            json!({"video": parts.0, "audio": parts.1}),
        ),
        &[&plan.sampler.node],
    );
    Some(parts)
}

/// Packs a denoiser call's two estimates (`value.video`, `value.audio`)
/// into `value`.
pub(super) fn join_estimate(plan: &Plan, value: &str, body: &mut Steps) {
    body.push(
        invoke(
            "av_join",
            json!({"video": format!("{value}.video"), "audio": format!("{value}.audio")}),
            json!({"packed": value}),
        ),
        &[&plan.sampler.node],
    );
}

/// The start of a stage continuing an earlier one through the latent
/// upsampler: the earlier row's (`earlier`) video part enlarged, joined
/// with its audio part, as `latent.source`; `None` for another stage.
pub(super) fn upsampled_source(
    plan: &Plan,
    earlier: &str,
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) -> Option<String> {
    let av = plan.audio.as_ref()?;
    let (upsampler, from) = (av.upsampler.as_ref()?, av.earlier?);
    components.insert("av_split_2".into(), split_policy("av_split_2", &from, None));
    let upscaled = contract(
        "float32",
        json!([
            "batch",
            "channels",
            "latent_frames",
            "upscaled_latent_height",
            "upscaled_latent_width"
        ]),
        true,
    );
    components.insert(
        "latent_upsampler".into(),
        component(
            "latent_upsampler/model.onnx",
            json!({"latent": Axes::Video.latent()}),
            json!({"upsampled": upscaled}),
            None,
        ),
    );
    let from_nodes = [&upsampler.node, &av.concat];
    setup.push(
        invoke(
            "av_split_2",
            json!({"packed": earlier}),
            json!({"video": "latent.earlier_video", "audio": "latent.earlier_audio"}),
        ),
        &from_nodes,
    );
    setup.push(
        invoke(
            "latent_upsampler",
            json!({"latent": "latent.earlier_video"}),
            json!({"upsampled": "latent.upsampled_video"}),
        ),
        &[&upsampler.node, &upsampler.loader],
    );
    setup.push(
        invoke(
            "av_join",
            json!({"video": "latent.upsampled_video", "audio": "latent.earlier_audio"}),
            json!({"packed": "latent.source"}),
        ),
        &[&av.concat],
    );
    Some("latent.source".into())
}

/// What an audio-video stage asks of its exported models.
pub(in crate::comfyui::lower) fn note(plan: &Plan) -> Option<String> {
    let av = plan.audio.as_ref()?;
    if let Some(shifts) = audio_shifts(plan) {
        let carry = shifts.0 / shifts.1;
        let keyframes = match av.keyframes.as_slice() {
            [] => String::new(),
            frames => format!(
                "; the keyframe pictures' latents (one frame each, the frame axis dropped) are its reference latents in order, anchored at frame {} of the video, which the model re-injects at every step as ComfyUI's does",
                frames
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        };
        return Some(format!(
            "node {} (MiniMaxH3ImageToVideo) makes MiniMax H3's empty video and audio latents, sampled packed into one row as ComfyUI does: the denoiser takes the video part as `sample` and the audio part ([batch, 32, 2, length]) as `audio_sample`, carried at {carry} times its scale (video shift {} over audio shift {}) as ComfyUI's sampler carries it, and gives `noise_pred` and `audio_noise_pred` at that scale: export it with those shifts{keyframes}; the audio VAE decodes the audio part divided back by that factor, which the graph's shifts fix (a run that sets request.flow_shift changes the video schedule only: state other shifts with MiniMaxH3SigmaShift), and the package's `latent` output is the row as carried",
            av.concat,
            shifts.0,
            shifts.1,
            carry = (carry * 1e4).round() / 1e4
        ));
    }
    let mut note = format!(
        "node {} (LTXVConcatAVLatent) joins LTX-2's video and audio latents, sampled packed into one row as ComfyUI does: the denoiser takes the video part as `sample` and the audio part ([batch, 8, length, 16]) as `audio_sample`, and gives `noise_pred` and `audio_noise_pred`",
        av.concat
    );
    if let Some(up) = &av.upsampler {
        note.push_str(&format!(
            "; node {} (LTXVLatentUpsampler) runs `latent_upsampler`, node {}'s model, between the VAE's per-channel statistics: export it with them (un-normalise, upsample, normalise)",
            up.node, up.loader
        ));
    }
    Some(note)
}
