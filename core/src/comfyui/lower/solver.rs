//! The `solver_step` component of a lowered graph: its ports, bindings
//! and contract parameters follow the sampler (see docs/COMFYUI.md).

use super::parts::{Axes, invoke, one, policy, row};
use super::recognise::{Sampler, Window};
use crate::comfyui::synth::sampling::sampler;
use serde_json::{Value, json};

/// A sampler's policies in the loop body.
pub(super) struct Solver {
    /// The `solver_step` component and its invoke (the sample in, `solved`
    /// out).
    pub step: (Value, Value),
    /// A two-call sampler's `solver_midpoint` component and invoke: the
    /// second call's model input (`solver.mid_input`) and timestep
    /// (`solver.mid_timestep`); the step then reads that call's estimate
    /// as `second`.
    pub midpoint: Option<(Value, Value)>,
    /// The state cells the sampler carries from one step to the next
    /// (cell, the value it is carried from).
    pub memory: Vec<(&'static str, String)>,
}

/// The values a step's model calls give the solver.
pub(super) struct Estimates {
    /// The guided estimate.
    pub first: String,
    /// The unconditional pass (CFG++ samplers step along it).
    pub unconditional: String,
    /// A two-call sampler's second guided estimate.
    pub second: String,
    /// A two-call sampler's second unconditional pass (CFG++ forms step
    /// along it).
    pub second_unconditional: String,
}

/// The solver policies of the plan's sampler: ancestral samplers take the
/// seed for fresh noise, `dpmpp_2m` the previous denoised estimate and the
/// iteration, UniPC the previous corrected sample and the last three
/// denoised estimates, CFG++ samplers the unconditional estimate,
/// two-call samplers the second call's estimate, and a KSamplerAdvanced
/// window its end step.
pub(super) fn solver_step(
    s: &Sampler,
    step_value: &str,
    prediction: &str,
    schedule: &Value,
    solved: &str,
    estimates: &Estimates,
    axes: Axes,
) -> Solver {
    let latent = || axes.latent();
    let mut solver_ports = json!({"sample": latent(), "estimate": latent(), "step": row("int64"), "schedule": schedule.clone()});
    let mut solver_bind = json!({"sample": "latent_state", "estimate": estimates.first, "step": step_value, "schedule": "diffusion.schedule"});
    let solver_bindings = json!({"state": "sample", "estimate": "estimate", "step": "step", "schedule": "schedule", "next_state": "next_state"});
    let mut solver_parameters =
        json!({"solver": s.sampler_name, "spacing": s.schedule.name(), "prediction": prediction});
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
    let mut solver_out = json!({"next_state": solved});
    let needs = sampler(&s.sampler_name).map(|known| known.needs);
    let memory = memory_cells(needs.map_or(0, |n| n.memory));
    for cell in memory {
        solver_ports[cell.input] = latent();
        solver_bind[cell.input] = json!(cell.name);
        solver_outputs[cell.output] = latent();
        solver_out[cell.output] = json!(format!("solver.{}", cell.output));
    }
    if !memory.is_empty() {
        solver_ports["iteration"] = row("int64");
        solver_bind["iteration"] = json!("loop.iteration");
    }
    if needs.is_some_and(|n| n.unconditional) {
        // CFG++ steps along the unconditional estimate.
        solver_ports["unconditional"] = latent();
        solver_bind["unconditional"] = json!(estimates.unconditional);
    }
    if needs.is_some_and(|n| n.seed) {
        solver_ports["seed"] = row("int64");
        solver_bind["seed"] = json!("request.seed");
    }
    let midpoint = needs.filter(|n| n.midpoint).map(|_| {
        let component = policy(
            "solver_midpoint",
            solver_ports.clone(),
            json!({"mid_input": latent(), "mid_timestep": row("float32")}),
            Some(json!({"id": "wfstudio.solver-midpoint", "version": "1", "parameters": solver_parameters.clone()})),
        );
        let step = invoke(
            "solver_midpoint",
            solver_bind.clone(),
            json!({"mid_input": "solver.mid_input", "mid_timestep": "solver.mid_timestep"}),
        );
        (component, step)
    });
    if midpoint.is_some() {
        solver_ports["second"] = latent();
        solver_bind["second"] = json!(estimates.second);
        if needs.is_some_and(|n| n.unconditional) {
            solver_ports["second_unconditional"] = latent();
            solver_bind["second_unconditional"] = json!(estimates.second_unconditional);
        }
    }
    let component = policy(
        "solver_step",
        solver_ports,
        solver_outputs,
        Some(
            json!({"id": "onnx-genai.solver-step", "version": "1", "bindings": solver_bindings, "parameters": solver_parameters}),
        ),
    );
    let carried = memory
        .iter()
        .map(|cell| (cell.name, format!("solver.{}", cell.output)))
        .collect();
    Solver {
        step: (component, invoke("solver_step", solver_bind, solver_out)),
        midpoint,
        memory: carried,
    }
}

/// A state cell of a multistep solver: its name, the solver's input port
/// that reads it and the output port its next value comes from.
struct Memory {
    name: &'static str,
    input: &'static str,
    output: &'static str,
}

/// The previous denoised estimate (`dpmpp_2m`, UniPC).
const PREVIOUS: Memory = Memory {
    name: "solver_memory",
    input: "previous",
    output: "denoised",
};

/// UniPC's memory: the previous corrected sample and the last three
/// denoised estimates (each shifted one place per step).
const UNI_PC: [Memory; 4] = [
    Memory {
        name: "solver_base",
        input: "previous_sample",
        output: "corrected",
    },
    PREVIOUS,
    Memory {
        name: "solver_memory_2",
        input: "previous_2",
        output: "denoised_1",
    },
    Memory {
        name: "solver_memory_3",
        input: "previous_3",
        output: "denoised_2",
    },
];

/// The state cells of `memory` earlier latents (see `Needs::memory`): the
/// last one to three estimates, or UniPC's corrected sample and three.
fn memory_cells(memory: usize) -> &'static [Memory] {
    match memory {
        0 => &[],
        4 => &UNI_PC,
        n => &UNI_PC[1..(1 + n).min(4)],
    }
}
