//! A stage's schedule policies (`diffusion_schedule`,
//! `diffusion_timesteps`): their contract parameters (solver, schedule,
//! the model's sampling and prediction), their length (the run's steps),
//! a flow model's shift as typed inputs where the schedule follows it,
//! and the picture size a measured `Flux2Scheduler` reads (`picture_size`).

use super::super::parts::{Steps, contract, invoke, one, parameter, picture, policy};
use super::super::recognise::{FlowShift, Plan, reference};
use crate::comfyui::synth::prediction::Prediction;
use crate::comfyui::synth::sampling::sampler;
use crate::comfyui::synth::spacing::Spacing;
use crate::comfyui::synth::tables::{ModelSampling, Table};
use serde_json::{Map, Value, json};

/// The schedule part of a stage's document.
pub(super) struct ScheduleParts {
    /// The workflow inputs it adds (a flow model's shift).
    pub inputs: Map<String, Value>,
    /// `diffusion_schedule` and `diffusion_timesteps`.
    pub components: Map<String, Value>,
    /// What both policies are invoked with.
    pub binds: Value,
    /// The graph nodes the schedule comes from.
    pub from: Vec<String>,
    /// The run's steps: the graph's, or what ddim_uniform's stride picks,
    /// or what a scheduler node keeps (ComfyUI runs that many).
    pub steps: i64,
    /// What the solvers read the model's output as (`flow`, `epsilon`,
    /// `v_prediction`, ...).
    pub prediction: &'static str,
    /// A half log-SNR sampler's run on a flow model (`Needs::half_log_snr`):
    /// the shift ports and binds of its `solver_sigmas` policy (and
    /// SA-Solver's step) and the node that states the shift.
    pub half_log_snr: Option<(Value, Value, String)>,
    /// A flow model's shift ports and binds where the schedule follows the
    /// model's shift (`DifferentialDiffusion`'s blend reads the model's
    /// least sigma of them).
    pub shift: Option<(Value, Value)>,
}

/// The schedule policies of `plan`'s sampler.
pub(super) fn parts(plan: &Plan) -> ScheduleParts {
    let s = &plan.sampler;
    // The keys in the order documents have always listed them; the
    // writers below fill them in place and append their own.
    let mut parameters = json!({"solver": s.sampler_name, "spacing": s.schedule.name(), "prediction": null, "model_sampling": null, "steps": s.steps});
    let prediction = match (&plan.model.flow, &plan.model.table) {
        (Some(flow), _) => {
            parameters["model_sampling"] = json!(flow.family);
            let prediction = match flow.velocity {
                true => "img_to_img_velocity",
                false => "flow",
            };
            parameters["prediction"] = json!(prediction);
            prediction
        }
        (None, table) => {
            let (table, prediction) = table.as_ref().map_or(
                (
                    Table::Discrete {
                        zero_terminal_snr: false,
                    },
                    Prediction::EPSILON,
                ),
                |t| (t.table.clone(), t.prediction),
            );
            table.write(&mut parameters);
            prediction.write(&mut parameters);
            prediction.name()
        }
    };
    s.schedule.write(&mut parameters);
    let steps = ModelSampling::read(&parameters).map_or(s.steps, |m| {
        s.schedule.run_steps(&m, s.steps.max(0) as usize) as i64
    });
    let mut inputs = Map::new();
    let mut ports = json!({});
    let mut binds = json!({});
    let mut from = vec![s.node.clone()];
    if let Some(table) = &plan.model.table {
        from.push(table.node.clone());
    }
    let half_log_snr = sampler(&s.sampler_name).is_some_and(|k| k.needs.half_log_snr);
    let follows = s.schedule.follows_model();
    let mut snr = None;
    let mut shift = None;
    if let Some(flow) = plan.model.flow.as_ref().filter(|_| follows || half_log_snr) {
        let shift_inputs: &[(&str, &str, f64)] = match flow.shift {
            FlowShift::Constant(shift) => &[("shift", "request.flow_shift", shift)],
            FlowShift::Resolution {
                max_shift,
                base_shift,
                width,
                height,
            } => &[
                ("max_shift", "request.flow_max_shift", max_shift),
                ("base_shift", "request.flow_base_shift", base_shift),
                ("width", "request.flow_width", width),
                ("height", "request.flow_height", height),
            ],
        };
        let (mut shift_ports, mut shift_binds) = (json!({}), json!({}));
        for (port, input, value) in shift_inputs {
            inputs.insert(
                input.to_string(),
                parameter(
                    one("float32"),
                    json!({"kind": "opaque"}),
                    &input["request.".len()..],
                    json!(value),
                ),
            );
            shift_ports[*port] = one("float32");
            shift_binds[*port] = json!(input);
        }
        if follows {
            from.push(flow.node.clone());
            parameters["shift"] = json!(match flow.shift {
                FlowShift::Constant(_) => "constant",
                FlowShift::Resolution { .. } => "resolution",
            });
            (ports, binds) = (shift_ports.clone(), shift_binds.clone());
            shift = Some((shift_ports.clone(), shift_binds.clone()));
        }
        if half_log_snr {
            snr = Some((shift_ports, shift_binds, flow.node.clone()));
        }
    }
    if measures(plan) {
        for (port, value) in [("width", MEASURED.0), ("height", MEASURED.1)] {
            ports[port] = one("float32");
            binds[port] = json!(value);
        }
    }
    let schedule_contract = json!({"id": "onnx-genai.diffusion-schedule", "version": "1", "bindings": {"schedule": "schedule"}, "parameters": parameters});
    let mut components = Map::new();
    for (name, length) in [
        ("diffusion_schedule", steps + 1),
        ("diffusion_timesteps", steps),
    ] {
        components.insert(
            name.into(),
            policy(
                name,
                ports.clone(),
                json!({"schedule": contract("float32", json!([length]), false)}),
                Some(schedule_contract.clone()),
            ),
        );
    }
    ScheduleParts {
        inputs,
        components,
        binds,
        from,
        steps,
        prediction,
        half_log_snr: snr,
        shift,
    }
}

/// The values of the picture's width and height a measured schedule
/// reads.
const MEASURED: (&str, &str) = ("picture.width", "picture.height");

/// Whether the plan's schedule measures the stage's picture
/// (`Flux2Scheduler` with a `GetImageSize`'s sides).
fn measures(plan: &Plan) -> bool {
    plan.sampler.schedule.spacing == Spacing::Flux2Measured
}

/// Adds the `picture_size` policy and its step where the schedule
/// measures the stage's picture: the loaded picture (`request.image`)
/// measured as its resize makes it, before the cut to whole multiples of
/// 8 that an encode of it makes (`GetImageSize` reads the resize's
/// output).
pub(super) fn measure(plan: &Plan, components: &mut Map<String, Value>, setup: &mut Steps) {
    if !measures(plan) {
        return;
    }
    let loaded = reference::stage_picture(plan);
    let resize = loaded.and_then(|(_, resize)| resize);
    let mut contract = json!({"id": "wfstudio.picture-size", "version": "1"});
    if let Some(resize) = resize {
        contract["parameters"] = super::scales::size_parameters(resize);
    }
    let side = || one("float32");
    components.insert(
        "picture_size".into(),
        policy(
            "picture_size",
            json!({"image": picture(json!(3))}),
            json!({"width": side(), "height": side()}),
            Some(contract),
        ),
    );
    let mut from = vec![&plan.sampler.node];
    from.extend(loaded.map(|(loader, _)| loader));
    from.extend(resize.map(|r| &r.node));
    setup.push(
        invoke(
            "picture_size",
            json!({"image": "request.image"}),
            json!({"width": MEASURED.0, "height": MEASURED.1}),
        ),
        &from,
    );
}
