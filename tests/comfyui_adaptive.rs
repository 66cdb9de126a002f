//! The samplers that space their own steps: `dpm_fast` runs `floor(steps
//! / 3) + 1` iterations of up to three model calls, `dpm_adaptive` a loop
//! its controller ends (a state cell `(t, h)`, its step's `continue`);
//! the controller's accept and reject decisions, checked on the step
//! alone against the formulas written out here; both over a denoise
//! window. Whole runs (and KSamplerAdvanced windows) are compared with the
//! numpy reference in `comfyui_package` and `comfyui_flow_samplers`.

mod support;

use serde_json::{Value, json};
use support::lowering::{lowered, npy, run_policy_alone, scratch, workflow};
use wfstudio_core::comfyui::lower::Target;

fn txt2img(sampler: &str) -> Value {
    let text = std::fs::read_to_string(support::fixtures().join("comfyui/txt2img-sd15.api.json"))
        .expect("txt2img");
    let mut graph: Value = serde_json::from_str(&text).expect("json");
    graph["14"]["inputs"]["sampler_name"] = json!(sampler);
    graph
}

#[test]
fn dpm_fast_runs_a_third_of_the_steps_and_dpm_adaptive_until_its_controller_stops() {
    let steps = txt2img("euler")["14"]["inputs"]["steps"]
        .as_i64()
        .expect("steps");
    let fast = lowered(&txt2img("dpm_fast"), &Target::default());
    let w = workflow(&fast);
    assert_eq!(
        w["inputs"]["request.max_iterations"]["default"],
        json!(steps / 3 + 1)
    );
    for policy in ["solver_midpoint", "solver_third_call", "solver_step"] {
        assert!(w["components"].get(policy).is_some(), "{policy}");
    }
    let adaptive = lowered(&txt2img("dpm_adaptive"), &Target::default());
    let w = workflow(&adaptive);
    assert_eq!(w["inputs"]["request.max_iterations"]["default"], json!(500));
    assert_eq!(
        adaptive.notes,
        [
            "sampler 'dpm_adaptive' sizes its own steps until it reaches the run's last sigma: the loop stops there or after 500 attempted steps (request.max_iterations), short of it, where ComfyUI's has no bound; raise that for a long run"
        ]
    );
    assert!(w["components"].get("solver_first_call").is_some());
    assert!(w["components"].get("schedule_lookup").is_none());
    let loop_step = w["steps"]
        .as_array()
        .and_then(|steps| steps.iter().find(|s| s["kind"] == "loop"))
        .expect("the loop");
    let carried = loop_step["carried"].as_array().expect("carried");
    for (cell, next) in [
        ("loop_0_active", "solver.continue"),
        ("solver_control", "solver.next_control"),
        ("solver_low", "solver.low"),
    ] {
        assert!(
            carried.contains(&json!({"cell": cell, "next": next})),
            "{cell}: {carried:?}"
        );
    }
    assert_eq!(
        w["state"]["solver_control"]["initializer"],
        "package.solver_control"
    );
}

/// k-diffusion's controller (ComfyUI's defaults) on one step from `t`
/// with size `h` on a latent of ones where the step's calls estimate `e`,
/// `e_1`, `e_2` (constants): the error, the factor and whether it accepts.
fn controller(t: f64, h: f64, t_end: f64, [e, e1, e2]: [f64; 3], prev: f64) -> (f64, f64, f64) {
    let t_next = t_end.min(t + h);
    let r = t_next - t;
    let sn = (-t_next).exp();
    let grown = r.exp() - 1.0;
    let x = 1.0;
    let first = x - sn * grown * e;
    let low = first - sn / (2.0 / 3.0) * grown * (e1 - e);
    let high = first - sn / (2.0 / 3.0) * (grown / r - 1.0) * (e2 - e);
    let delta = (0.05 * low.abs().max(prev.abs())).max(0.0078);
    let error = ((low - high) / delta).abs();
    let factor = 1.0 + ((1.0 / (error + 1e-8)).powf(1.0 / 3.0) - 1.0).atan();
    (low, high, factor)
}

#[test]
fn the_adaptive_step_accepts_a_small_error_and_rejects_a_large_one() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("adaptive-step");
    let document = lowered(&txt2img("dpm_adaptive"), &Target::default()).document;
    let schedule = {
        let out = run_policy_alone(&root, "schedule", &document, "diffusion_schedule", &[]);
        npy(&out.join("schedule.npy")).1
    };
    let sigma_min = f64::from(schedule[schedule.len() - 2]);
    let t_end = -sigma_min.ln();
    let shape = [1, 4, 2, 2];
    let latent =
        |v: f32| json!({"dtype": "float32", "shape": shape, "data": vec![v; 16]}).to_string();
    let schedule_input =
        json!({"dtype": "float32", "shape": [schedule.len()], "data": schedule}).to_string();
    let row = |v: i64| json!({"dtype": "int64", "shape": [1], "data": [v]}).to_string();
    // (t, h) = (0, 1), iteration 3: the stored place counts.
    let (t, h) = (0.0, 1.0);
    let cases = [
        ("small", [0.1, 0.1, 0.1], true),
        ("large", [0.0, 40.0, 0.0], false),
    ];
    for (name, [e, e1, e2], accepts) in cases {
        let (low, high, factor) = controller(t, h, t_end, [e, e1, e2], 1.0);
        assert_eq!(factor >= 0.81, accepts, "{name}: factor {factor}");
        let out = run_policy_alone(
            &root,
            name,
            &document,
            "solver_step",
            &[
                ("sample", latent(1.0)),
                ("estimate", latent(e as f32)),
                ("second", latent(e1 as f32)),
                ("third", latent(e2 as f32)),
                ("previous_low", latent(1.0)),
                ("step", row(0)),
                ("iteration", row(3)),
                ("schedule", schedule_input.clone()),
                (
                    "control",
                    json!({"dtype": "float32", "shape": [2], "data": [t, h]}).to_string(),
                ),
            ],
        );
        let (_, next) = npy(&out.join("next_state.npy"));
        let (_, kept_low) = npy(&out.join("low.npy"));
        let (_, control) = npy(&out.join("next_control.npy"));
        let (want_state, want_low, want_t) = match accepts {
            true => (high, low, t + h),
            false => (1.0, 1.0, t),
        };
        let close = |got: f32, want: f64, what: &str| {
            let gap = (f64::from(got) - want).abs() / (1.0 + want.abs());
            assert!(gap <= 1e-5, "{name} {what}: {got} vs {want}");
        };
        close(next[0], want_state, "sample");
        close(kept_low[0], want_low, "x_prev");
        close(control[0], want_t, "t");
        close(control[1], h * factor, "h");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_controlnet_window_under_a_sampler_with_its_own_steps_is_refused() {
    let mut g = support::lowering::pattern("controlnet");
    g["5"]["inputs"]["sampler_name"] = json!("dpm_fast");
    let refusals =
        wfstudio_core::comfyui::lower::lower_for(&g, &Target::default()).expect_err("refused");
    assert_eq!(
        (
            refusals[0].node.as_str(),
            refusals[0].input.as_deref(),
            refusals[0].message.as_str()
        ),
        (
            "11",
            Some("end_percent"),
            "limits the ControlNet to part of a run of sampler 'dpm_fast', which spaces steps of its own, and the lowering places the window by the run's steps"
        )
    );
    // Over the whole run the ControlNet applies to every call, however
    // many iterations the sampler makes.
    g["11"]["inputs"]["end_percent"] = json!(1.0);
    let l = lowered(&g, &Target::default());
    assert!(workflow(&l)["components"].get("control_scale").is_none());
}

#[test]
fn dpm_fast_and_dpm_adaptive_space_their_steps_over_a_denoise_window() {
    let root = scratch("adaptive-img2img");
    for sampler in ["dpm_fast", "dpm_adaptive"] {
        let mut g = support::lowering::pattern("img2img");
        g["5"]["inputs"]["sampler_name"] = json!(sampler);
        let l = lowered(&g, &Target::default());
        let w = workflow(&l);
        let loop_step = w["steps"]
            .as_array()
            .and_then(|steps| steps.iter().find(|s| s["kind"] == "loop"))
            .expect("the loop");
        let rule = &w["components"]["denoise_window"]["contract"]["parameters"]["iterations"];
        match sampler {
            "dpm_fast" => {
                // Its grid over the window's own first and last sigma.
                assert_eq!(loop_step["max_iterations"], "diffusion.iterations");
                assert_eq!(
                    rule,
                    "min(floor((steps - start) / 3) + 1, steps - start, max_iterations)"
                );
                let grid = &w["components"]["solver_sigmas"]["ports"]["inputs"];
                assert!(grid.get("start").is_some(), "{grid}");
            }
            _ => {
                // Its controller ends the loop.
                assert_eq!(loop_step["max_iterations"], "request.max_iterations");
                assert_eq!(
                    w["state"]["solver_low"]["initializer"],
                    w["state"]["latent_state"]["initializer"]
                );
            }
        }
        if support::runtime_available() {
            let (_, out) = support::lowering::package_and_run(&root, sampler, &g);
            let (_, latent) = npy(&out.join("latent.npy"));
            assert!(
                latent.iter().all(|v| v.is_finite() && v.abs() < 100.0),
                "{sampler}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_mask_blends_at_dpm_fasts_grid_and_refuses_dpm_adaptive() {
    let mut g = support::lowering::pattern("inpaint");
    g["5"]["inputs"]["sampler_name"] = json!("dpm_fast");
    let l = lowered(&g, &Target::default());
    let blend = workflow(&l)["steps"]
        .as_array()
        .and_then(|steps| steps.iter().find(|s| s["kind"] == "loop"))
        .and_then(|l| l["steps"].as_array())
        .and_then(|body| body.iter().find(|s| s["component"] == "masked_blend"))
        .expect("the masked blend")
        .clone();
    assert_eq!(blend["inputs"]["schedule"], "diffusion.solver_sigmas");
    if support::runtime_available() {
        let root = scratch("adaptive-mask");
        let (_, out) = support::lowering::package_and_run(&root, "inpaint", &g);
        let (_, latent) = npy(&out.join("latent.npy"));
        assert!(latent.iter().all(|v| v.is_finite() && v.abs() < 100.0));
        let _ = std::fs::remove_dir_all(&root);
    }
    g["5"]["inputs"]["sampler_name"] = json!("dpm_adaptive");
    support::lowering::assert_refused(
        &g,
        (
            "5",
            "KSampler",
            Some("sampler_name"),
            "uses sampler 'dpm_adaptive' on a masked latent: its controller picks the sigma each step ends at, and the lowering blends the mask at the sigmas a run steps by",
        ),
    );
}
