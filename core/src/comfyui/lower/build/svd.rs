//! A stage conditioned by `SVD_img2vid_Conditioning`: the init picture
//! embedded by the CLIP vision model (`clip_vision`, which takes ComfyUI's
//! 0..1 pixels and makes its own resize and normalisation) as the positive
//! prompt, zeroed as the negative; the picture resized to the video's size
//! (bilinear, centre crop, as the node does) and encoded as the latent the
//! denoiser takes beside the sample (`concat`; zeros for the negative);
//! `fps - 1`, the motion bucket and the augmentation level as its
//! `added_time_ids`.

use super::super::parts::{Axes, Steps, component, hidden, invoke, one_of, parameter, picture};
use super::super::recognise::{Plan, Prompt, VideoPrompt};
use super::prompts::zero_policy;
use serde_json::{Map, Value, json};

/// The positive prompt's concat latent.
pub(super) const CONCAT: &str = "video.concat";
/// The negative prompt's (zeros).
pub(super) const CONCAT_ZERO: &str = "video.concat_zero";
/// The input holding the denoiser's `added_time_ids`.
pub(super) const TIME_IDS: &str = "request.svd_time_ids";

/// The plan's video prompt, where `SVD_img2vid_Conditioning` makes them.
pub(super) fn prompt(plan: &Plan) -> Option<&VideoPrompt> {
    match &plan.positive.text {
        Prompt::Video(video) => Some(video),
        _ => None,
    }
}

/// The denoiser ports a video prompt adds.
pub(super) fn denoiser_ports(ports: &mut Value) {
    ports["concat"] = Axes::Image.latent();
    ports["added_time_ids"] = one_of(3);
}

/// Declares the CLIP vision model, the resize and the encode of the init
/// picture `picture_value` (models named with the checkpoint's prefix
/// `models`), the time-id input, and the setup steps making both prompts'
/// conditioning and concat latents of conditioning node `node`.
pub(super) fn encode(
    (node, video): (&String, &VideoPrompt),
    picture_value: &str,
    models: &str,
    inputs: &mut Map<String, Value>,
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) {
    let m = |name: &str| format!("{models}{name}");
    components.insert(
        m("clip_vision"),
        component(
            &format!("{}/model.onnx", m("clip_vision")),
            json!({"image": picture(json!(3))}),
            json!({"image_embeds": hidden()}),
            None,
        ),
    );
    for (kind, port, contract) in [
        ("zero_conditioning", "conditioning", hidden()),
        ("zero_latent", "latent", Axes::Image.latent()),
    ] {
        components.insert(kind.into(), zero_policy(kind, port, contract));
    }
    // The encode crops to whole multiples of 8, as ComfyUI's VAE does.
    components.insert(
        "init_scale".into(),
        super::scales::init_scale(node, (video.width, video.height), true),
    );
    components.insert(
        m("vae_encoder"),
        component(
            &format!("{}/model.onnx", m("vae_encoder")),
            json!({"image": picture(json!(3))}),
            json!({"latent": Axes::Image.latent()}),
            None,
        ),
    );
    inputs.insert(
        TIME_IDS.into(),
        parameter(
            one_of(3),
            json!({"kind": "opaque"}),
            "svd_time_ids",
            json!(video.time_ids()),
        ),
    );
    setup.push(
        invoke(
            &m("clip_vision"),
            json!({"image": picture_value}),
            json!({"image_embeds": "conditioning.conditional"}),
        ),
        &[node, &video.clip_vision],
    );
    setup.push(
        invoke(
            "zero_conditioning",
            json!({"conditioning": "conditioning.conditional"}),
            json!({"zeroed": "conditioning.unconditional"}),
        ),
        &[node],
    );
    setup.push(
        invoke(
            "init_scale",
            json!({"image": picture_value}),
            json!({"scaled": "video.pixels"}),
        ),
        &[node],
    );
    setup.push(
        invoke(
            &m("vae_encoder"),
            json!({"image": "video.pixels"}),
            json!({"latent": CONCAT}),
        ),
        &[node, &video.vae],
    );
    setup.push(
        invoke(
            "zero_latent",
            json!({"latent": CONCAT}),
            json!({"zeroed": CONCAT_ZERO}),
        ),
        &[node],
    );
}
