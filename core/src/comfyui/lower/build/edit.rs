//! The picture an edit node attaches to the prompts, as setup steps: the
//! latent the denoiser takes as `concat` (`edit.latent`), from the picture
//! itself (`InstructPixToPixConditioning`) or from the picture greyed
//! under the mask (`InpaintModelConditioning`, whose mask the denoiser
//! also takes, as `concat_mask`); and the greying policy that inpainting
//! shares with `VAEEncodeForInpaint`.

use super::super::parts::{Steps, invoke, media, picture, policy};
use super::super::recognise::{LatentSource, Origin, Pixels, Plan};
use super::names::StageNames;
use serde_json::{Map, Value, json};

/// An edit node's picture in words: the stage's picture input or the
/// decode it is made from, and what is done to it.
pub(in crate::comfyui::lower) fn words(image: &Pixels, names: &StageNames) -> String {
    match (&image.origin, &image.resize) {
        (Origin::Loaded(_), None) => names.value("request.image"),
        (Origin::Loaded(_), Some(resize)) => {
            format!("{} ({})", names.value("request.image"), resize.words())
        }
        (Origin::Decoded { decode, .. }, None) => format!("the decode of node {decode}"),
        // `recognise::pixels::picture` refuses a loaded video's frames
        // and stitches.
        (Origin::Video(loader), _) => format!("the frames of node {loader}"),
        (Origin::Stitched(stitch), _) => format!("the stitch of node {}", stitch.node),
        (Origin::Decoded { decode, .. }, Some(resize)) => {
            format!("the decode of node {decode}, {}", resize.words())
        }
    }
}

/// The `inpaint_pixels` policy: masked pixels (mask over 0.5, as ComfyUI
/// rounds it) set to grey 0.5.
pub(super) fn inpaint_pixels() -> Value {
    policy(
        "inpaint_pixels",
        json!({"image": picture(json!(3)), "mask": picture(json!(1))}),
        json!({"pixels": picture(json!(3))}),
        Some(
            json!({"id": "wfstudio.inpaint-pixels", "version": "1", "parameters": {"masked_value": 0.5, "threshold": 0.5}}),
        ),
    )
}

/// Whether the plan's edit node gives the denoiser a mask too.
pub(super) fn takes_mask(plan: &Plan) -> bool {
    matches!(
        &plan.latent,
        LatentSource::Edit {
            inpaint: Some(_),
            ..
        }
    )
}

/// Adds the steps that make `edit.latent` with vae encoder `encoder` from
/// the edit picture's value `shown` (the input, or its resize), and the
/// inputs and policies they need, where the plan has an edit node.
pub(super) fn edit_latent(
    plan: &Plan,
    (encoder, shown): (&str, &str),
    inputs: &mut Map<String, Value>,
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) {
    let LatentSource::Edit {
        node,
        image,
        inpaint,
        ..
    } = &plan.latent
    else {
        return;
    };
    if plan.edit().is_none() {
        return;
    }
    let from: Vec<&String> = [Some(node), image.loader()].into_iter().flatten().collect();
    let pixels = match inpaint {
        None => shown,
        Some(inpaint) => {
            inputs.insert("request.mask".into(), media(picture(json!(1))));
            components.insert("inpaint_pixels".into(), inpaint_pixels());
            setup.push(
                invoke(
                    "inpaint_pixels",
                    json!({"image": "request.image", "mask": "request.mask"}),
                    json!({"pixels": "edit.pixels"}),
                ),
                &[from.as_slice(), &[&inpaint.mask.loader]].concat(),
            );
            "edit.pixels"
        }
    };
    setup.push(
        invoke(
            encoder,
            json!({"image": pixels}),
            json!({"latent": "edit.latent"}),
        ),
        &from,
    );
}
