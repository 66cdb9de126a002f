//! A stage's single ControlNet: its component (named with the
//! checkpoint's prefix), its picture, strength and window inputs, and the
//! residual ports it adds to the denoiser.

use super::super::parts::{
    Steps, component, contract, hidden, invoke, one, opaque_literal, parameter, picture, policy,
    pooled, row, sdxl_time_ids,
};
use super::super::recognise::{Control, Plan, Prompt};
use super::scales::resize_policy;
use serde_json::{Map, Value, json};

/// The value of a ControlNet's loaded picture: as loaded, or resized and
/// processed (`control_picture`).
fn loaded_value(control: &Control) -> &'static str {
    match control.image.resize {
        Some(_) => "control.pixels",
        None => "request.control_image",
    }
}

/// Declares `plan`'s ControlNet (if any) with the model name prefix `m`
/// gives, at (`schedule`, `step`): its inputs and components, the
/// residual ports of `denoiser_ports`, its loaded picture's input and
/// resize in `setup` (a decoded one is `made` before the stage) and the
/// window's scale step in `body`; returns the value a controlled prompt's
/// ControlNet scale is and the value of its picture.
pub(super) fn control(
    plan: &Plan,
    m: &dyn Fn(&str) -> String,
    (schedule, step_value, made): (&Value, &str, Option<&str>),
    denoiser_ports: &mut Value,
    inputs: &mut Map<String, Value>,
    components: &mut Map<String, Value>,
    (setup, body): (&mut Steps, &mut Steps),
) -> (String, String) {
    let mut control_scale = "request.control_strength".to_string();
    let mut value = String::new();
    if let Some(control) = &plan.control {
        match (made, control.image.loader()) {
            (None, Some(loader)) => {
                value = loaded_value(control).to_string();
                inputs.insert(
                    "request.control_image".into(),
                    super::pictures::sized_input("control_image"),
                );
                if let Some(resize) = &control.image.resize {
                    components.insert(
                        "control_picture".into(),
                        resize_policy("control_picture", resize, false),
                    );
                    setup.push(
                        invoke(
                            "control_picture",
                            json!({"image": "request.control_image"}),
                            json!({"scaled": value}),
                        ),
                        &resize.nodes_from(loader),
                    );
                }
            }
            // A decode's, made before the stage (`build`).
            (made, _) => value = made.unwrap_or_default().to_string(),
        }
        let down = contract("float32", json!(["batch", "down_residual_elements"]), true);
        let mid = contract(
            "float32",
            json!(["batch", "mid_channels", "mid_height", "mid_width"]),
            true,
        );
        denoiser_ports["down_residuals"] = down.clone();
        denoiser_ports["mid_residual"] = mid.clone();
        inputs.insert(
            "request.control_strength".into(),
            parameter(
                one("float32"),
                json!({"kind": "opaque"}),
                "control_strength",
                json!(control.strength),
            ),
        );
        let mut control_ports = json!({"sample": plan.axes.latent(), "timestep": row("float32"), "encoder_hidden_states": hidden(), "image": picture(json!(3)), "scale": one("float32")});
        if matches!(plan.positive.text, Prompt::Sdxl { .. }) {
            control_ports["text_embeds"] = pooled();
            control_ports["time_ids"] = sdxl_time_ids();
        }
        components.insert(
            m("controlnet"),
            component(
                &format!("{}/model.onnx", m("controlnet")),
                control_ports,
                json!({"down_residuals": down, "mid_residual": mid}),
                None,
            ),
        );
        if let Some((start, end)) = control.window {
            inputs.insert(
                "request.control_start".into(),
                parameter(
                    one("float32"),
                    json!({"kind": "opaque"}),
                    "control_start",
                    json!(start),
                ),
            );
            inputs.insert(
                "request.control_end".into(),
                parameter(
                    one("float32"),
                    json!({"kind": "opaque"}),
                    "control_end",
                    json!(end),
                ),
            );
            components.insert("control_scale".into(), policy("control_scale",
                json!({"strength": one("float32"), "start": one("float32"), "end": one("float32"), "step": row("int64"), "schedule": schedule}),
                json!({"scale": one("float32")}),
                Some(json!({"id": "wfstudio.control-window", "version": "1", "parameters": {"window": "percent_of_schedule"}}))));
            body.push(invoke("control_scale", json!({"strength": "request.control_strength", "start": "request.control_start", "end": "request.control_end", "step": step_value, "schedule": "diffusion.schedule"}),
                json!({"scale": "control.scale"})), &[&control.apply]);
            control_scale = "control.scale".into();
        }
        if !(control.positive && control.negative) {
            inputs.insert(
                "package.no_control".into(),
                opaque_literal(one("float32"), json!(0.0)),
            );
        }
    }
    (control_scale, value)
}
