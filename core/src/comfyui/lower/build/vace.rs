//! A stage whose prompts carry a `WanVaceToVideo` node (see
//! `recognise::frames::Vace`): `grey_video` makes the video the node
//! encodes as its inactive half (`length` frames of grey 0.5), the VAE
//! encodes it; a control video (see `control_video`: cut or padded with
//! grey to `length` frames) is encoded as the reactive half (without
//! one, the grey video is both); a
//! reference picture is resized to the video's size (`init_scale`), made
//! a one-frame video (`one_frame`) and encoded; `vace_context` joins them
//! into the context VACE models read. Every denoiser call takes it as
//! `vace_context` and the node's strength as `vace_strength`.

use super::super::parts::{Steps, contract, invoke, one, parameter, policy};
use super::super::recognise::{Plan, Vace, VideoFrames};
use super::StageNames;
use super::pixels::{encoded_video, video_encoder};
use super::scales::init_scale;
use serde_json::{Map, Value, json};

/// The context the denoiser takes as `vace_context`.
pub(super) const CONTEXT: &str = "vace.context";
/// The input holding the node's strength.
pub(super) const STRENGTH: &str = "request.vace_strength";
/// The grey video the VAE encodes.
const PIXELS: &str = "vace.pixels";
/// Its latent (ComfyUI's inactive and reactive halves both).
const LATENT: &str = "vace.latent";
/// The reference picture's latent.
const REFERENCE: &str = "vace.reference";
/// The control video's latent (the reactive half).
const CONTROL: &str = "vace.control";

/// Channels of the context: the inactive and reactive latents' 16 each,
/// then 64 of mask (an 8x8 cell's pixels).
const CONTEXT_CHANNELS: i64 = 96;

/// The context's contract: `[batch, 96, latent_frames, latent_height,
/// latent_width]`, the sampled latent's frames and cells.
fn context() -> Value {
    contract(
        "float32",
        json!([
            "batch",
            CONTEXT_CHANNELS,
            "latent_frames",
            "latent_height",
            "latent_width"
        ]),
        true,
    )
}

/// The denoiser ports VACE adds.
pub(super) fn denoiser_ports(ports: &mut Value) {
    ports["vace_context"] = context();
    ports["vace_strength"] = one("float32");
}

/// Binds the context and strength in a denoiser call.
pub(super) fn bind(bind: &mut Value) {
    bind["vace_context"] = json!(CONTEXT);
    bind["vace_strength"] = json!(STRENGTH);
}

/// Declares the strength input, the policies and the video encoder
/// `encoder` (its latent `latent`), and the setup steps making the
/// context (`frames::encode` calls it only where no earlier stage made
/// it: a later stage of the node reads that stage's and its strength
/// input).
pub(super) fn encode(
    plan: &Plan,
    (frames, vace): (&VideoFrames, &Vace),
    (encoder, latent): (&str, Value),
    (inputs, components, setup): (&mut Map<String, Value>, &mut Map<String, Value>, &mut Steps),
) {
    inputs.insert(
        STRENGTH.into(),
        parameter(
            one("float32"),
            json!({"kind": "opaque"}),
            "vace_strength",
            json!(vace.strength),
        ),
    );
    let video = encoded_video();
    components.insert(
        "grey_video".into(),
        policy(
            "grey_video",
            json!({}),
            json!({"frames": video}),
            Some(
                json!({"id": "wfstudio.grey-video", "version": "1", "parameters": {
                    "length": frames.length,
                    "width": frames.width,
                    "height": frames.height,
                }}),
            ),
        ),
    );
    setup.push(
        invoke("grey_video", json!({}), json!({"frames": PIXELS})),
        &[&frames.node],
    );
    components.insert(encoder.to_string(), video_encoder(encoder, latent.clone()));
    setup.push(
        invoke(encoder, json!({"image": PIXELS}), json!({"latent": LATENT})),
        &[&frames.node],
    );
    let mut ports = json!({"inactive": latent.clone(), "reactive": latent.clone()});
    let mut bind = json!({"inactive": LATENT, "reactive": LATENT});
    if let Some(loader) = &vace.control {
        super::control_video::fitted(frames, (loader, Some(0.5)), (inputs, components, setup));
        setup.push(
            invoke(
                encoder,
                json!({"image": super::control_video::FITTED}),
                json!({"latent": CONTROL}),
            ),
            &[&frames.node, loader],
        );
        bind["reactive"] = json!(CONTROL);
    }
    if let Some(loader) = &vace.reference {
        let made = (encoder, REFERENCE);
        reference_latent(plan, (frames, loader), made, (components, setup));
        ports["reference"] = contract(
            "float32",
            json!([
                "batch",
                "channels",
                "reference_frames",
                "latent_height",
                "latent_width"
            ]),
            true,
        );
        bind["reference"] = json!(REFERENCE);
    }
    components.insert(
        "vace_context".into(),
        policy(
            "vace_context",
            ports,
            json!({"context": context()}),
            Some(json!({"id": "wfstudio.vace-context", "version": "1"})),
        ),
    );
    setup.push(
        invoke("vace_context", bind, json!({"context": CONTEXT})),
        &[&frames.node],
    );
}

/// What the stage's denoiser takes of a VACE node, in words.
pub(super) fn note(
    plan: &Plan,
    (frames, vace): (&VideoFrames, &Vace),
    names: &StageNames,
) -> String {
    if names.reused(CONTEXT) {
        return format!(
            "every denoiser call takes the VACE context an earlier stage made of node {} as `vace_context` ({}) and its strength as `vace_strength` ({})",
            frames.node,
            names.value(CONTEXT),
            names.value(STRENGTH)
        );
    }
    let reference = match &vace.reference {
        Some(loader) => format!(
            "; the reference picture {} (resized bilinear to cover that size, centre cropped) is encoded as one latent frame ahead of the video's, masked 0 with its second 16 channels zero (the node's `trim_latent`, 1, is what a `TrimVideoLatent` drops after sampling)",
            names.value(&super::pictures::input(plan, loader))
        ),
        None => String::new(),
    };
    let (made, halves) = match &vace.control {
        Some(loader) => (
            format!(
                "takes {}",
                super::control_video::words(frames, loader, true, &|v| names.value(v))
            ),
            "that latent as the inactive half and the control video's as the reactive one",
        ),
        None => (
            "makes no control video".to_string(),
            "that latent as the inactive and the reactive half",
        ),
    };
    format!(
        "node {} (WanVaceToVideo) {made}: the VAE encodes {} frames of grey at {}x{} ({}), and every denoiser call takes VACE's context as `vace_context` ({}: {halves}, then a mask of ones over 64 channels){reference}, and the strength {} as `vace_strength` ({}), as ComfyUI's VACE models read them",
        frames.node,
        frames.length,
        frames.width,
        frames.height,
        names.value(PIXELS),
        names.value(CONTEXT),
        vace.strength,
        names.value(STRENGTH),
    )
}

/// Declares the policies and adds the setup steps encoding `loader`'s
/// picture (a stage's input) as one latent frame `latent` with
/// `encoder`: resized to node `frames`' video size (`init_scale`:
/// bilinear, centre crop) and made a one-frame video (`one_frame`), as
/// Wan's VACE and Fun Control nodes encode their reference picture.
pub(super) fn reference_latent(
    plan: &Plan,
    (frames, loader): (&VideoFrames, &String),
    (encoder, latent): (&str, &str),
    (components, setup): (&mut Map<String, Value>, &mut Steps),
) {
    components.insert(
        "init_scale".into(),
        init_scale(&frames.node, (frames.width, frames.height), false),
    );
    components.insert("one_frame".into(), one_frame());
    let (picture, video) = (format!("{latent}_picture"), format!("{latent}_video"));
    let steps = [
        (
            "init_scale",
            json!({"image": super::pictures::input(plan, loader)}),
            json!({"scaled": picture}),
        ),
        (
            "one_frame",
            json!({"image": picture}),
            json!({"frames": video}),
        ),
        (encoder, json!({"image": video}), json!({"latent": latent})),
    ];
    for (component, inputs, outputs) in steps {
        setup.push(invoke(component, inputs, outputs), &[&frames.node, loader]);
    }
}

/// The `one_frame` policy: a picture as a one-frame video.
pub(super) fn one_frame() -> Value {
    policy(
        "one_frame",
        json!({"image": super::super::parts::picture(json!(3))}),
        json!({"frames": encoded_video()}),
        Some(json!({"id": "wfstudio.one-frame", "version": "1"})),
    )
}
