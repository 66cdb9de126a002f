//! A stage whose model carries a control patch (see
//! `recognise::control_patch`): the control picture through the graph's
//! resize and operations (`patch_picture`), resized by area with a centre
//! crop to the sampled latent's size in pixels (`patch_scale`, as ComfyUI
//! resizes it where the sizes differ: a picture of that size passes
//! unchanged), encoded by the stage's VAE encoder; every denoiser call
//! takes that latent as `control_latent` and the patch's strength as
//! `control_strength`. The patch's own weights and its processing of the
//! latent are the denoiser's (its export fuses them).

use super::super::parts::{Steps, contract, invoke, media, one, parameter, picture, policy};
use super::super::recognise::{ControlPatch, LatentSource, Plan};
use super::StageNames;
use super::pixels::vae_encoder;
use super::scales::resize_policy;
use serde_json::{Map, Value, json};

/// The control picture's latent the denoiser takes as `control_latent`.
const LATENT: &str = "patch.latent";
/// The input holding the patch's strength.
const STRENGTH: &str = "request.patch_strength";

fn patch(plan: &Plan) -> Option<&ControlPatch> {
    plan.model.control_patch.as_ref()
}

/// The denoiser ports the patch adds, beside the sample's `latent`.
pub(super) fn denoiser_ports(plan: &Plan, latent: &Value, ports: &mut Value) {
    if patch(plan).is_some() {
        ports["control_latent"] = latent.clone();
        ports["control_strength"] = one("float32");
    }
}

/// Binds the control latent and strength in a denoiser call.
pub(super) fn bind(plan: &Plan, bind: &mut Value) {
    if patch(plan).is_some() {
        bind["control_latent"] = json!(LATENT);
        bind["control_strength"] = json!(STRENGTH);
    }
}

/// Pixels a latent cell of the stage holds: the empty or sized latent's,
/// else 8. ComfyUI scales by the patch VAE's own compression; the control
/// patches' models (Qwen-Image's, Z-Image's) compress by 8, as their
/// latents' scale states.
fn cell(plan: &Plan) -> i64 {
    match &plan.latent {
        LatentSource::Empty { scale, .. } | LatentSource::Sized { scale, .. } => *scale,
        _ => 8,
    }
}

/// Declares the strength input, the policies and the VAE encoder
/// `encoder` (its latent `latent`), and the setup steps making the
/// control latent from the stage's picture input, resized to the size of
/// the stage's noise (`diffusion.noise`, the policy's `like`).
pub(super) fn encode(
    plan: &Plan,
    (encoder, latent): (&str, Value),
    inputs: &mut Map<String, Value>,
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) {
    let Some(patch) = patch(plan) else {
        return;
    };
    let (loader, processing) = &patch.picture;
    let mut value = super::pictures::input(plan, loader);
    // Its input, where nothing else of the stage reads the picture: the
    // stage's first, or another of its own size.
    match value.as_str() {
        "request.image" => {
            inputs
                .entry(value.clone())
                .or_insert_with(|| media(picture(json!(3))));
        }
        _ => super::pictures::declare_others(plan, inputs),
    }
    if let Some(resize) = processing {
        components.insert(
            "patch_picture".into(),
            resize_policy("patch_picture", resize, false),
        );
        setup.push(
            invoke(
                "patch_picture",
                json!({"image": value}),
                json!({"scaled": "patch.pixels"}),
            ),
            &resize.nodes_from(loader),
        );
        value = "patch.pixels".into();
    }
    let scaled = contract(
        "float32",
        json!(["batch", 3, "scaled_height", "scaled_width"]),
        true,
    );
    components.insert(
        "patch_scale".into(),
        policy(
            "patch_scale",
            json!({"image": picture(json!(3)), "like": latent.clone()}),
            json!({"scaled": scaled}),
            Some(json!({"id": "wfstudio.image-scale", "version": "1", "parameters": {"size": "latent", "scale": cell(plan), "method": "area", "crop": "center"}})),
        ),
    );
    setup.push(
        invoke(
            "patch_scale",
            json!({"image": value, "like": "diffusion.noise"}),
            json!({"scaled": "patch.scaled"}),
        ),
        &[&patch.node],
    );
    components
        .entry(encoder)
        .or_insert_with(|| vae_encoder(encoder, latent));
    setup.push(
        invoke(
            encoder,
            json!({"image": "patch.scaled"}),
            json!({"latent": LATENT}),
        ),
        &[&patch.node, &patch.vae],
    );
    inputs.insert(
        STRENGTH.into(),
        parameter(
            one("float32"),
            json!({"kind": "opaque"}),
            "patch_strength",
            json!(patch.strength),
        ),
    );
}

/// What the stage's denoiser takes of its control patch, in words.
pub(in crate::comfyui::lower) fn note(plan: &Plan, names: &StageNames) -> Option<String> {
    let patch = patch(plan)?;
    Some(format!(
        "node {} patches node {}'s control model into the denoiser: every denoiser call takes the VAE's latent of {} (resized by area, centre crop, to the sampled latent's size in pixels where it differs) as `control_latent` ({}) and the strength {} as `control_strength` ({}); the export fuses the patch's weights into the denoiser",
        patch.node,
        patch.loader,
        names.value(&super::pictures::input(plan, &patch.picture.0)),
        names.value(LATENT),
        patch.strength,
        names.value(STRENGTH),
    ))
}
