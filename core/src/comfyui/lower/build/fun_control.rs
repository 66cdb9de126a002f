//! A stage whose prompts carry a `Wan22FunControlToVideo` node (see
//! `recognise::frames::FunControl`): its control video (see
//! `control_video`, cut to the node's length) is encoded, and
//! `fun_concat` puts that latent ahead of the VAE's latent mean on the
//! frames it leaves and on a second half of the channels (ComfyUI's
//! `process_out` of zeros), with the mask the model reads (zeros: no
//! start picture). A reference picture is resized to the video's size
//! (`init_scale`), made a one-frame video (`one_frame`) and encoded. Every
//! denoiser call takes them as `concat`, `concat_mask` and
//! `reference_latent`.

use super::super::parts::{Steps, contract, invoke, policy};
use super::super::recognise::{FunControl, Plan, VideoFrames};
use super::StageNames;
use super::pixels::video_encoder;
use serde_json::{Map, Value, json};

/// The latent the denoiser takes as `concat`.
pub(super) const CONCAT: &str = "fun.concat";
/// The mask it takes as `concat_mask`.
pub(super) const MASK: &str = "fun.mask";
/// The reference picture's latent it takes as `reference_latent`.
pub(super) const REFERENCE: &str = "fun.reference";
/// The control video's latent.
const CONTROL: &str = "fun.control";

/// `concat`'s contract: twice the latent's channels.
fn concat() -> Value {
    contract(
        "float32",
        json!([
            "batch",
            "concat_channels",
            "latent_frames",
            "latent_height",
            "latent_width"
        ]),
        true,
    )
}

/// The mask's contract: Wan's four channels over the latent's cells.
fn mask() -> Value {
    contract(
        "float32",
        json!(["batch", 4, "latent_frames", "latent_height", "latent_width"]),
        true,
    )
}

/// A one-frame latent's contract (the reference picture's, or the
/// control video's of any frames).
fn latent(frames: &str) -> Value {
    contract(
        "float32",
        json!(["batch", "channels", frames, "latent_height", "latent_width"]),
        true,
    )
}

/// The denoiser ports Fun Control adds.
pub(super) fn denoiser_ports(fun: &FunControl, ports: &mut Value) {
    ports["concat"] = concat();
    ports["concat_mask"] = mask();
    if fun.reference.is_some() {
        ports["reference_latent"] = latent("reference_frames");
    }
}

/// Binds them in a denoiser call.
pub(super) fn bind(fun: &FunControl, bind: &mut Value) {
    bind["concat"] = json!(CONCAT);
    bind["concat_mask"] = json!(MASK);
    if fun.reference.is_some() {
        bind["reference_latent"] = json!(REFERENCE);
    }
}

/// The fill of the latent ComfyUI's `process_out` makes of zeros for a
/// VAE of `channels` channels (Wan 2.1's 16, Wan 2.2's 48; `recognise`
/// refuses others, and `fun_concat` any other fill).
fn mean_fill(channels: i64) -> &'static str {
    match channels {
        16 => "wan21_mean",
        48 => "wan22_mean",
        _ => "unknown",
    }
}

/// Declares the policies and the video encoder `encoder` (its latent
/// `encoded`), and the setup steps making the concat, mask and reference
/// latent (`frames::encode` calls it only where no earlier stage made
/// them).
pub(super) fn encode(
    plan: &Plan,
    (frames, fun): (&VideoFrames, &FunControl),
    (encoder, encoded): (&str, Value),
    (inputs, components, setup): (&mut Map<String, Value>, &mut Map<String, Value>, &mut Steps),
) {
    if fun.control.is_some() || fun.reference.is_some() {
        components.insert(encoder.to_string(), video_encoder(encoder, encoded));
    }
    let (mut ports, mut bind) = (json!({}), json!({}));
    if let Some(loader) = &fun.control {
        super::control_video::fitted(frames, (loader, None), (inputs, components, setup));
        setup.push(
            invoke(
                encoder,
                json!({"image": super::control_video::FITTED}),
                json!({"latent": CONTROL}),
            ),
            &[&frames.node, loader],
        );
        ports["control"] = latent("control_latent_frames");
        bind["control"] = json!(CONTROL);
    }
    components.insert(
        "fun_concat".into(),
        policy(
            "fun_concat",
            ports,
            json!({"concat": concat(), "mask": mask()}),
            Some(
                json!({"id": "wfstudio.fun-concat", "version": "1", "parameters": {
                    "latent_frames": frames.latent_frames(),
                    "latent_height": frames.height / frames.scale,
                    "latent_width": frames.width / frames.scale,
                    "fill": mean_fill(frames.channels),
                }}),
            ),
        ),
    );
    setup.push(
        invoke("fun_concat", bind, json!({"concat": CONCAT, "mask": MASK})),
        &[&frames.node],
    );
    if let Some(loader) = &fun.reference {
        let made = (encoder, REFERENCE);
        super::vace::reference_latent(plan, (frames, loader), made, (components, setup));
    }
}

/// What the stage's denoiser takes of a Fun Control node, in words.
pub(super) fn note(
    plan: &Plan,
    (frames, fun): (&VideoFrames, &FunControl),
    names: &StageNames,
) -> String {
    if names.reused(CONCAT) {
        let reference = match fun.reference {
            Some(_) => format!(" and `reference_latent` ({})", names.value(REFERENCE)),
            None => String::new(),
        };
        return format!(
            "every denoiser call takes what an earlier stage made of node {}: `concat` ({}) and `concat_mask` ({}){reference}",
            frames.node,
            names.value(CONCAT),
            names.value(MASK),
        );
    }
    let control = match &fun.control {
        Some(loader) => format!(
            "encodes {} as the first {} of `concat`'s channels, the VAE's latent mean (ComfyUI's `process_out` of zeros) on the latent frames after it and on the other {}",
            super::control_video::words(frames, loader, false, &|v| names.value(v)),
            frames.channels,
            frames.channels
        ),
        None => format!(
            "has no control video: `concat` is the VAE's latent mean (ComfyUI's `process_out` of zeros) on all {} channels",
            2 * frames.channels
        ),
    };
    let reference = match &fun.reference {
        Some(loader) => format!(
            "; the reference picture {} (resized bilinear to cover {}x{}, centre cropped) is encoded as one latent frame, `reference_latent` ({}: the model reads it normalised, its one frame)",
            names.value(&super::pictures::input(plan, loader)),
            frames.width,
            frames.height,
            names.value(REFERENCE)
        ),
        None => String::new(),
    };
    format!(
        "node {} (Wan22FunControlToVideo) {control} ({}); every denoiser call takes it as `concat` and `concat_mask` ({}: zeros, ComfyUI's 1 - its mask of ones, which the model puts after the first {} channels, its `concat_mask_index`){reference}, as ComfyUI's Wan 2.2 Fun Control models read them",
        frames.node,
        names.value(CONCAT),
        names.value(MASK),
        frames.channels,
    )
}
