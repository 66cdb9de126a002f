//! The `solver_step` component of a lowered graph: its ports, bindings
//! and contract parameters follow the sampler (see docs/COMFYUI.md).

use super::parts::{invoke, latent, one, policy, row};
use super::recognise::{Sampler, Window};
use serde_json::{Value, json};

/// The `solver_step` component for the plan's sampler and its invoke step
/// (the sample in, `solved` out): ancestral samplers take the seed for
/// fresh noise, `dpmpp_2m` the previous denoised estimate (`solver_memory`)
/// and the iteration, and a KSamplerAdvanced window its end step.
pub(super) fn solver_step(
    s: &Sampler,
    step_value: &str,
    prediction: &str,
    schedule: &Value,
    solved: &str,
) -> (Value, Value) {
    let mut solver_ports = json!({"sample": latent(), "estimate": latent(), "step": row("int64"), "schedule": schedule.clone()});
    let mut solver_bind = json!({"sample": "latent_state", "estimate": "denoiser.estimate", "step": step_value, "schedule": "diffusion.schedule"});
    let solver_bindings = json!({"state": "sample", "estimate": "estimate", "step": "step", "schedule": "schedule", "next_state": "next_state"});
    let mut solver_parameters =
        json!({"solver": s.sampler_name, "spacing": s.scheduler, "prediction": prediction});
    if let Window::Steps { leftover_noise, .. } = s.window {
        solver_ports["end_step"] = one("int64");
        solver_bind["end_step"] = json!("diffusion.end_step");
        solver_parameters["final_step"] = json!(if leftover_noise {
            "keep_leftover_noise"
        } else {
            "full_denoise"
        });
    }
    let mut solver_outputs = json!({"next_state": latent()});
    let memory = s.sampler_name == "dpmpp_2m";
    match s.sampler_name.as_str() {
        "euler_ancestral" => {
            solver_ports["seed"] = row("int64");
            solver_bind["seed"] = json!("request.seed");
        }
        "dpmpp_2m" => {
            solver_ports["previous"] = latent();
            solver_ports["iteration"] = row("int64");
            solver_bind["previous"] = json!("solver_memory");
            solver_bind["iteration"] = json!("loop.iteration");
            solver_outputs["denoised"] = latent();
        }
        _ => {}
    }
    let component = policy(
        "solver_step",
        solver_ports,
        solver_outputs,
        Some(
            json!({"id": "onnx-genai.solver-step", "version": "1", "bindings": solver_bindings, "parameters": solver_parameters}),
        ),
    );
    let mut solver_out = json!({"next_state": solved});
    if memory {
        solver_out["denoised"] = json!("solver.denoised");
    }
    (component, invoke("solver_step", solver_bind, solver_out))
}
