//! The resize policies' declarations (`image_scale`, `input_scale`,
//! `init_scale`, ...): a graph resize (with its picture operations) as
//! the contract parameters `synth::upscale` builds it from.

use super::super::parts::{contract, picture, policy};
use super::super::recognise::{PixelSize, Resize, picture_op_parameters};
use serde_json::{Value, json};

/// The resize policy `kind` of `resize` (`image_scale...` or
/// `input_scale`), cutting to whole multiples of 8 where `for_encode`.
pub(super) fn resize_policy(kind: &str, resize: &Resize, for_encode: bool) -> Value {
    let mut parameters = size_parameters(resize);
    if resize.size != PixelSize::Same {
        parameters["method"] = json!(resize.method);
    }
    picture_op_parameters(&resize.then, &mut parameters);
    if for_encode {
        parameters["multiple"] = json!(8);
    }
    scale_policy(kind, parameters)
}

/// The `init_scale` policy of a video node `node`: a picture resized to
/// the video's `width` x `height`, bilinear with a centre crop, as
/// ComfyUI's video conditioning nodes resize their pictures (then cut to
/// whole multiples of 8 where `for_encode`).
pub(super) fn init_scale(node: &str, (width, height): (i64, i64), for_encode: bool) -> Value {
    let resize = Resize {
        node: node.to_string(),
        method: "bilinear".into(),
        size: PixelSize::Fixed {
            width,
            height,
            centre: true,
        },
        then: Vec::new(),
    };
    resize_policy("init_scale", &resize, for_encode)
}

/// The `image_scale` policy `kind` with contract `parameters`.
pub(super) fn scale_policy(kind: &str, parameters: Value) -> Value {
    let scaled = contract(
        "float32",
        json!(["batch", 3, "scaled_height", "scaled_width"]),
        true,
    );
    policy(
        kind,
        json!({"image": picture(json!(3))}),
        json!({"scaled": scaled}),
        Some(json!({"id": "wfstudio.image-scale", "version": "1", "parameters": parameters})),
    )
}

/// How `resize` finds the new sides, as contract parameters (`size` and
/// its settings, `crop`).
pub(super) fn size_parameters(resize: &Resize) -> Value {
    match resize.size {
        PixelSize::Fixed {
            width,
            height,
            centre,
        } => {
            let mut p = json!({"size": "fixed", "width": width, "height": height});
            if centre {
                p["crop"] = json!("center");
            }
            p
        }
        PixelSize::Scale(factor) => json!({"size": "scale", "scale_by": factor}),
        PixelSize::TotalPixels { pixels, step } => {
            // A whole count is written as one.
            let pixels = match pixels.fract() == 0.0 && pixels < 2f64.powi(53) {
                true => json!(pixels as i64),
                false => json!(pixels),
            };
            let mut p = json!({"size": "total_pixels", "pixels": pixels});
            if step != 1 {
                p["step"] = json!(step);
            }
            p
        }
        PixelSize::Side { side, shorter } => {
            json!({"size": if shorter { "shorter" } else { "longer" }, "side": side})
        }
        PixelSize::Fit { width, height, pad } => {
            json!({"size": "fit", "width": width, "height": height, "pad": pad})
        }
        PixelSize::Kontext => json!({"size": "flux_kontext", "crop": "center"}),
        PixelSize::Qwen21 { resolution: 0 } => {
            json!({"size": "steps", "step": QWEN21_STEP, "unless_same": true})
        }
        PixelSize::Qwen21 { resolution } => {
            json!({"size": "aspect_square", "side": resolution, "step": QWEN21_STEP, "unless_same": true})
        }
        PixelSize::Down { side } => {
            json!({"size": "longer_down", "side": side, "unless_same": true})
        }
        PixelSize::Floor { step } => {
            json!({"size": "floor_steps", "step": step, "unless_same": true})
        }
        PixelSize::Same => json!({"size": "same"}),
    }
}

/// The whole steps `TextEncodeQwenImage21` sizes its pictures in.
const QWEN21_STEP: i64 = 32;
