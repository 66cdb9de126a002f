//! A stage's sampling step in its loop body: where the first set of model
//! calls is made (the schedule's step, or where an adaptive sampler's
//! controller stands), the solver's policies with the further calls
//! between them, and the state the loop carries (the sample, whether it
//! goes on, the solver's own cells).

use super::super::parts::{Axes, Steps, contract, invoke, one, policy, row};
use super::super::recognise::{Sampler, Window};
use super::super::solver::{SOLVER_SIGMAS, SOLVER_TIMESTEPS, Solver};
use super::calls::Calls;
use serde_json::{Map, Value, json};

/// Declares and pushes what gives the step's first set of model calls its
/// sample and timestep: `schedule_lookup` and `model_input` at schedule
/// step `step_value`, or the sampler's own `solver_first_call`; returns
/// the two values.
pub(super) fn first_point(
    solver: &mut Solver,
    (step_value, schedule): (&str, &Value),
    axes: Axes,
    components: &mut Map<String, Value>,
    body: &mut Steps,
    sampler: &String,
) -> (&'static str, &'static str) {
    if let Some((component, step)) = solver.first_call.take() {
        components.insert("solver_first_call".into(), component);
        body.push(step, &[sampler]);
        return ("solver.first_input", "solver.first_timestep");
    }
    components.insert(
        "schedule_lookup".into(),
        policy(
            "schedule_lookup",
            json!({"schedule": schedule, "step": row("int64")}),
            json!({"timestep": row("float32")}),
            None,
        ),
    );
    components.insert(
        "model_input".into(),
        policy(
            "model_input",
            json!({"sample": axes.latent(), "step": row("int64"), "schedule": schedule}),
            json!({"model_input": axes.latent()}),
            None,
        ),
    );
    body.push(
        invoke(
            "schedule_lookup",
            json!({"schedule": solver.timesteps, "step": step_value}),
            json!({"timestep": "diffusion.timestep"}),
        ),
        &[sampler],
    );
    body.push(
        invoke(
            "model_input",
            json!({"sample": "latent_state", "step": step_value, "schedule": solver.sigmas}),
            json!({"model_input": "diffusion.model_input"}),
        ),
        &[sampler],
    );
    ("diffusion.model_input", "diffusion.timestep")
}

/// Declares and pushes the `solver_sigmas` policy of a sampler that steps
/// by sigmas of its own (`dpm_fast`'s grid, or a half log-SNR sampler's
/// moved first sigma on a flow model: `shift` gives the flow's shift ports,
/// binds and the node stating it) in the setup: from the schedule (`length`
/// long), its timesteps and the run's window (its start, a
/// `KSamplerAdvanced` window's end step and whether it fully denoises).
pub(super) fn solver_sigmas(
    shift: Option<(Value, Value, String)>,
    (s, windowed): (&Sampler, bool),
    length: i64,
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) {
    let (mut ports, mut binds, node) =
        shift.unwrap_or_else(|| (json!({}), json!({}), s.node.clone()));
    ports["schedule"] = contract("float32", json!([length]), false);
    ports["model_timesteps"] = contract("float32", json!([length - 1]), false);
    binds["schedule"] = json!("diffusion.schedule");
    binds["model_timesteps"] = json!("diffusion.timesteps");
    if windowed {
        ports["start"] = one("int64");
        binds["start"] = json!("diffusion.start_step");
    }
    let mut parameters = json!({"solver": s.sampler_name});
    if let Window::Steps { leftover_noise, .. } = s.window {
        ports["end"] = one("int64");
        binds["end"] = json!("diffusion.end_step");
        parameters["final_step"] = json!(match leftover_noise {
            true => "keep_leftover_noise",
            false => "full_denoise",
        });
    }
    let outputs = json!({"sigmas": contract("float32", json!([length]), false), "timesteps": contract("float32", json!([length - 1]), false)});
    let values = json!({"sigmas": SOLVER_SIGMAS, "timesteps": SOLVER_TIMESTEPS});
    components.insert(
        "solver_sigmas".into(),
        policy(
            "solver_sigmas",
            ports,
            outputs,
            Some(json!({"id": "wfstudio.solver-sigmas", "version": "1", "parameters": parameters})),
        ),
    );
    setup.push(invoke("solver_sigmas", binds, values), &[&s.node, &node]);
}

/// Pushes the solver's policies after the first set of calls: a
/// midpoint and a third-call policy each before its own set of calls
/// (`calls`, their values suffixed `_2` and `_3`), then the step.
pub(super) fn solve(
    solver: &mut Solver,
    calls: &Calls<'_>,
    components: &mut Map<String, Value>,
    body: &mut Steps,
    sampler: &String,
) {
    let further = [
        (solver.midpoint.take(), "solver_midpoint", "mid", "_2"),
        (solver.third_call.take(), "solver_third_call", "third", "_3"),
    ];
    for (policy, name, call, suffix) in further {
        let Some((component, step)) = policy else {
            continue;
        };
        components.insert(name.into(), component);
        body.push(step, &[sampler]);
        let (input, timestep) = (
            format!("solver.{call}_input"),
            format!("solver.{call}_timestep"),
        );
        calls.push(body, &input, &timestep, suffix);
    }
    let (component, step) = std::mem::take(&mut solver.step);
    components.insert("solver_step".into(), component);
    body.push(step, &[sampler]);
}

/// What the loop carries: the sample (from `initializer`, on to
/// `latent.body`), whether it goes on (the sampler's own say, or a
/// `continue_predicate` pushed last that keeps it going for its
/// iterations) and the solver's cells; their literal starts join
/// `inputs`. Returns the carried list and the state cells.
pub(super) fn carry(
    solver: Solver,
    (initializer, axes): (&str, Axes),
    inputs: &mut Map<String, Value>,
    body: &mut Steps,
) -> (Vec<Value>, Map<String, Value>) {
    let continues = match solver.continues {
        Some(value) => value,
        None => {
            body.push(
                invoke(
                    "continue_predicate",
                    json!({"done": "package.false"}),
                    json!({"continue": "loop.continue"}),
                ),
                &[],
            );
            "loop.continue"
        }
    };
    let mut carried = vec![
        json!({"cell": "latent_state", "next": "latent.body"}),
        json!({"cell": "loop_0_active", "next": continues}),
    ];
    let mut state = Map::new();
    state.insert("latent_state".into(), json!({"contract": axes.latent(), "scope": "invocation", "initializer": initializer, "recurrence": {"kind": "invariant"}}));
    state.insert("loop_0_active".into(), json!({"contract": one("bool"), "scope": "invocation", "initializer": "package.loop_0_active", "recurrence": {"kind": "invariant"}}));
    for (name, literal) in solver.literals {
        inputs.insert(name.into(), literal);
    }
    for cell in solver.cells {
        carried.push(json!({"cell": cell.name, "next": cell.next}));
        let start = cell.initializer.unwrap_or(initializer);
        state.insert(cell.name.into(), json!({"contract": cell.contract, "scope": "invocation", "initializer": start, "recurrence": {"kind": "invariant"}}));
    }
    (carried, state)
}
