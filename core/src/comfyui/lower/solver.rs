//! The `solver_step` component of a lowered graph: its ports, bindings
//! and contract parameters follow the sampler (see docs/COMFYUI.md).

use super::parts::{Axes, contract, invoke, one, opaque_literal, policy, row};
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
    /// A three-call sampler's `solver_third_call` component and invoke:
    /// the third call's model input (`solver.third_input`) and timestep
    /// (`solver.third_timestep`), from the second call's estimate; the
    /// step then reads that call's estimate as `third`.
    pub third_call: Option<(Value, Value)>,
    /// An adaptive sampler's `solver_first_call` component and invoke:
    /// the first call's model input (`solver.first_input`) and timestep
    /// (`solver.first_timestep`) where its controller stands.
    pub first_call: Option<(Value, Value)>,
    /// The state cells the sampler carries from one step to the next.
    pub cells: Vec<Cell>,
    /// The literal inputs its cells start from (name, declaration).
    pub literals: Vec<(&'static str, Value)>,
    /// An adaptive sampler's own "go on" value for the loop (else the
    /// loop runs its iterations).
    pub continues: Option<&'static str>,
    /// The sigmas and the denoiser's timesteps it steps by (its first set
    /// of calls included): the schedule's, or its own (`own_sigmas`).
    pub sigmas: &'static str,
    pub timesteps: &'static str,
    /// Whether it steps by sigmas of its own, which a `solver_sigmas`
    /// policy gives (`dpm_fast`'s grid, a half log-SNR sampler's on a flow
    /// model).
    pub own_sigmas: bool,
}

/// The sigmas of a sampler that steps by its own (see
/// `Solver::own_sigmas`): its `solver_sigmas` policy's outputs.
pub(super) const SOLVER_SIGMAS: &str = "diffusion.solver_sigmas";
/// Its denoiser timesteps.
pub(super) const SOLVER_TIMESTEPS: &str = "diffusion.solver_timesteps";

/// A state cell a sampler carries.
pub(super) struct Cell {
    pub name: &'static str,
    pub contract: Value,
    /// The value it starts from (none: the loop's first sample) and the
    /// one it is carried from.
    pub initializer: Option<&'static str>,
    pub next: String,
}

/// The state cell of an adaptive sampler's controller: `(t, h)`.
const CONTROL: &str = "solver_control";

/// The values a step's model calls give the solver.
pub(super) struct Estimates {
    /// The guided estimate.
    pub first: String,
    /// The unconditional pass (CFG++ samplers step along it).
    pub unconditional: String,
    /// A two- or three-call sampler's second guided estimate.
    pub second: String,
    /// A three-call sampler's third guided estimate.
    pub third: String,
    /// A two-call sampler's second unconditional pass (CFG++ forms step
    /// along it).
    pub second_unconditional: String,
}

/// The solver policies of the plan's sampler: ancestral samplers take the
/// seed for fresh noise, `dpmpp_2m` the previous denoised estimate and the
/// iteration, UniPC the previous corrected sample and the last three
/// denoised estimates, CFG++ samplers the unconditional estimate,
/// two- and three-call samplers the other calls' estimates (Heun++ the
/// iteration, for the run's first sigma), and a KSamplerAdvanced window
/// its end step. The step runs at `step_value` of the schedule (`schedule`
/// its contract); `shift` is a flow model's shift ports and binds where a
/// half log-SNR sampler steps it (SA-Solver places its interval by them).
pub(super) fn solver_step(
    s: &Sampler,
    (step_value, schedule, shift): (&str, &Value, Option<(&Value, &Value)>),
    prediction: &str,
    solved: &str,
    estimates: &Estimates,
    axes: Axes,
) -> Solver {
    let latent = || axes.latent();
    let needs = sampler(&s.sampler_name).map(|known| known.needs);
    let own_sigmas = shift.is_some() || needs.is_some_and(|n| n.grid);
    let (sigmas, timesteps) = match own_sigmas {
        true => (SOLVER_SIGMAS, SOLVER_TIMESTEPS),
        false => ("diffusion.schedule", "diffusion.timesteps"),
    };
    let mut solver_ports = json!({"sample": latent(), "estimate": latent(), "step": row("int64"), "schedule": schedule.clone()});
    let mut solver_bind = json!({"sample": "latent_state", "estimate": estimates.first, "step": step_value, "schedule": sigmas});
    // SA-Solver's stochastic interval follows a flow model's shift.
    if let Some((ports, binds)) = shift.filter(|_| needs.is_some_and(|n| n.interval)) {
        for (port, value) in ports.as_object().into_iter().flatten() {
            solver_ports[port] = value.clone();
            solver_bind[port] = binds[port].clone();
        }
    }
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
    let adaptive = needs.is_some_and(|n| n.adaptive);
    let memory = match adaptive {
        true => std::slice::from_ref(&LOW),
        false => memory_cells(needs.map_or(0, |n| n.memory)),
    };
    for cell in memory {
        solver_ports[cell.input] = latent();
        solver_bind[cell.input] = json!(cell.name);
        solver_outputs[cell.output] = latent();
        solver_out[cell.output] = json!(format!("solver.{}", cell.output));
    }
    if !memory.is_empty() || needs.is_some_and(|n| n.run_start) {
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
    let calls = needs.map_or(1, |n| n.calls);
    let call_point = |name: &str, call: &str, id: &str, ports: &Value, bind: &Value| {
        let (input, timestep) = (format!("{call}_input"), format!("{call}_timestep"));
        let component = policy(
            name,
            ports.clone(),
            json!({input.clone(): latent(), timestep.clone(): row("float32")}),
            Some(json!({"id": id, "version": "1", "parameters": solver_parameters.clone()})),
        );
        let step = invoke(
            name,
            bind.clone(),
            json!({input.clone(): format!("solver.{input}"), timestep.clone(): format!("solver.{timestep}")}),
        );
        (component, step)
    };
    let control = || contract("float32", json!([2]), false);
    let first_call = adaptive.then(|| {
        let mut ports = json!({"sample": latent(), "schedule": schedule.clone(), "iteration": row("int64"), "step": row("int64"), "control": control()});
        let mut bind = json!({"sample": "latent_state", "schedule": "diffusion.schedule", "iteration": "loop.iteration", "step": step_value, "control": CONTROL});
        // A window's end, where the controller's run ends.
        if let Some(end) = solver_ports.get("end_step") {
            ports["end_step"] = end.clone();
            bind["end_step"] = solver_bind["end_step"].clone();
        }
        call_point(
            "solver_first_call",
            "first",
            "wfstudio.solver-first-call",
            &ports,
            &bind,
        )
    });
    if adaptive {
        solver_ports["control"] = control();
        solver_bind["control"] = json!(CONTROL);
        solver_outputs["next_control"] = control();
        solver_out["next_control"] = json!("solver.next_control");
        solver_outputs["continue"] = one("bool");
        solver_out["continue"] = json!("solver.continue");
    }
    let midpoint = (calls >= 2).then(|| {
        call_point(
            "solver_midpoint",
            "mid",
            "wfstudio.solver-midpoint",
            &solver_ports,
            &solver_bind,
        )
    });
    if midpoint.is_some() {
        solver_ports["second"] = latent();
        solver_bind["second"] = json!(estimates.second);
        if needs.is_some_and(|n| n.unconditional) {
            solver_ports["second_unconditional"] = latent();
            solver_bind["second_unconditional"] = json!(estimates.second_unconditional);
        }
    }
    let third_call = (calls >= 3).then(|| {
        call_point(
            "solver_third_call",
            "third",
            "wfstudio.solver-third-call",
            &solver_ports,
            &solver_bind,
        )
    });
    if third_call.is_some() {
        solver_ports["third"] = latent();
        solver_bind["third"] = json!(estimates.third);
    }
    let component = policy(
        "solver_step",
        solver_ports,
        solver_outputs,
        Some(
            json!({"id": "onnx-genai.solver-step", "version": "1", "bindings": solver_bindings, "parameters": solver_parameters}),
        ),
    );
    let mut cells: Vec<Cell> = memory
        .iter()
        .map(|cell| Cell {
            name: cell.name,
            contract: latent(),
            // Its first step (iteration 0) does not read it, but for an
            // adaptive sampler's, whose first sample it is.
            initializer: match adaptive {
                true => None,
                false => Some("diffusion.noise"),
            },
            next: format!("solver.{}", cell.output),
        })
        .collect();
    let mut literals = Vec::new();
    if adaptive {
        // Iteration 0 places the controller itself.
        let start = "package.solver_control";
        literals.push((start, opaque_literal(control(), json!([0.0, 0.0]))));
        cells.push(Cell {
            name: CONTROL,
            contract: control(),
            initializer: Some(start),
            next: "solver.next_control".into(),
        });
    }
    Solver {
        step: (component, invoke("solver_step", solver_bind, solver_out)),
        midpoint,
        third_call,
        first_call,
        cells,
        literals,
        continues: adaptive.then_some("solver.continue"),
        sigmas,
        timesteps,
        own_sigmas,
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

/// An adaptive sampler's previous lower-order sample.
const LOW: Memory = Memory {
    name: "solver_low",
    input: "previous_low",
    output: "low",
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
