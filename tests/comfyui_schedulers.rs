//! ComfyUI's scheduler nodes under `SamplerCustom`: `KarrasScheduler`,
//! `ExponentialScheduler`, `PolyexponentialScheduler`,
//! `BetaSamplingScheduler`, `SDTurboScheduler`, `AlignYourStepsScheduler`
//! and `FlipSigmas` lower into schedules with the node's own settings,
//! whose runs match the independent numpy reference; bad settings are
//! refused by node and input.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    Expected, assert_refused, lowered, numpy_disagreement, package_and_run, pattern, scratch,
    workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// The txt2img fixture graph sampled by `SamplerCustom` with its sampler
/// (`sampler_name`) and sigmas from `scheduler` (node 21), through node
/// 24 (`FlipSigmas`, or `SetFirstSigma` with its sigma) where `around`.
fn txt2img_custom(sampler_name: &str, scheduler: Value, around: Option<Value>) -> Value {
    let text = std::fs::read_to_string(support::fixtures().join("comfyui/txt2img-sd15.api.json"))
        .expect("txt2img");
    let mut g: Value = serde_json::from_str(&text).expect("json");
    let k = g["14"]["inputs"].clone();
    g["20"] = json!({"class_type": "KSamplerSelect", "inputs": {"sampler_name": sampler_name}});
    g["21"] = scheduler;
    let sigmas = match around {
        Some(mut node) => {
            node["inputs"]["sigmas"] = json!(["21", 0]);
            g["24"] = node;
            "24"
        }
        None => "21",
    };
    g["14"] = json!({"class_type": "SamplerCustom", "inputs": {"add_noise": true, "noise_seed": k["seed"], "cfg": k["cfg"], "model": ["10", 0], "positive": ["11", 0], "negative": ["12", 0], "sampler": ["20", 0], "sigmas": [sigmas, 0], "latent_image": k["latent_image"]}});
    g
}

/// A scheduler node of `class` with `inputs` (the model input added for
/// the classes that take one).
fn node(class: &str, mut inputs: Value) -> Value {
    if matches!(
        class,
        "BasicScheduler" | "BetaSamplingScheduler" | "SDTurboScheduler"
    ) {
        inputs["model"] = json!(["10", 0]);
    }
    json!({"class_type": class, "inputs": inputs})
}

/// The scheduler nodes of the numpy comparison: (name, sampler, node, the
/// node after it, the schedule parameters the document must state).
fn cases() -> Vec<(&'static str, &'static str, Value, Option<Value>, Value)> {
    let flip = || Some(json!({"class_type": "FlipSigmas", "inputs": {}}));
    vec![
        (
            "karras",
            "dpmpp_2m",
            node(
                "KarrasScheduler",
                json!({"steps": 5, "sigma_max": 10.0, "sigma_min": 0.05, "rho": 5.0}),
            ),
            None,
            json!({"spacing": "karras", "sigma_min": 0.05, "sigma_max": 10.0, "rho": 5.0}),
        ),
        (
            "exponential",
            "euler",
            node(
                "ExponentialScheduler",
                json!({"steps": 5, "sigma_max": 14.614642, "sigma_min": 0.0291675}),
            ),
            None,
            json!({"spacing": "exponential", "sigma_min": 0.0291675, "sigma_max": 14.614642}),
        ),
        (
            "polyexponential",
            "heun",
            node(
                "PolyexponentialScheduler",
                json!({"steps": 4, "sigma_max": 8.0, "sigma_min": 0.1, "rho": 1.7}),
            ),
            None,
            json!({"spacing": "polyexponential", "sigma_min": 0.1, "sigma_max": 8.0, "rho": 1.7}),
        ),
        (
            "beta",
            "euler_ancestral",
            node(
                "BetaSamplingScheduler",
                json!({"steps": 6, "alpha": 0.4, "beta": 0.9}),
            ),
            None,
            json!({"spacing": "beta", "alpha": 0.4, "beta": 0.9}),
        ),
        (
            "sd_turbo",
            "euler",
            node("SDTurboScheduler", json!({"steps": 4, "denoise": 0.8})),
            None,
            json!({"spacing": "sd_turbo", "denoise": 0.8}),
        ),
        (
            "align_your_steps",
            "dpmpp_2m",
            node(
                "AlignYourStepsScheduler",
                json!({"model_type": "SD1", "steps": 7, "denoise": 1.0}),
            ),
            None,
            json!({"spacing": "align_your_steps", "model_type": "SD1", "denoise": 1.0}),
        ),
        (
            "align_your_steps_denoise",
            "uni_pc",
            node(
                "AlignYourStepsScheduler",
                json!({"model_type": "SDXL", "steps": 10, "denoise": 0.55}),
            ),
            None,
            json!({"spacing": "align_your_steps", "model_type": "SDXL", "denoise": 0.55}),
        ),
        (
            "flipped",
            "euler",
            node(
                "BasicScheduler",
                json!({"scheduler": "karras", "steps": 4, "denoise": 1.0}),
            ),
            flip(),
            json!({"spacing": "karras", "flip": true}),
        ),
        (
            // Above the table's top: the noise is scaled by sqrt(1 + 20^2).
            "first_sigma",
            "euler",
            node(
                "BasicScheduler",
                json!({"scheduler": "normal", "steps": 5, "denoise": 1.0}),
            ),
            Some(json!({"class_type": "SetFirstSigma", "inputs": {"sigma": 20.0}})),
            json!({"spacing": "normal", "first_sigma": 20.0}),
        ),
    ]
}

#[test]
fn scheduler_nodes_state_their_settings_in_the_schedule_contract() {
    for (name, sampler, scheduler, around, stated) in cases() {
        let l = lowered(
            &txt2img_custom(sampler, scheduler, around),
            &Target::default(),
        );
        let parameters =
            &workflow(&l)["components"]["diffusion_schedule"]["contract"]["parameters"];
        for (key, value) in stated.as_object().expect("object") {
            assert_eq!(&parameters[key], value, "{name}: {key}");
        }
    }
    // SD Turbo at denoise 0.8 keeps timesteps 799..99 (8 of 10), of which
    // the 4 steps asked for run; Align Your Steps at 0.55 runs
    // round(10 * 0.55) = 6 (half to even) of its 10.
    let steps_of = |graph: Value| {
        let l = lowered(&graph, &Target::default());
        workflow(&l)["components"]["diffusion_schedule"]["ports"]["outputs"]["schedule"]["shape"]
            .clone()
    };
    let all = cases();
    assert_eq!(
        steps_of(txt2img_custom("euler", all[4].2.clone(), None)),
        json!([5])
    );
    assert_eq!(
        steps_of(txt2img_custom("euler", all[6].2.clone(), None)),
        json!([7])
    );
    let few = node("SDTurboScheduler", json!({"steps": 4, "denoise": 0.2}));
    assert_eq!(steps_of(txt2img_custom("euler", few, None)), json!([3]));
}

#[test]
fn scheduler_node_runs_match_an_independent_numpy_reference() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("schedulers");
    let mut figures = Vec::new();
    for (name, sampler, scheduler, around, stated) in cases() {
        let spacing = stated["spacing"].as_str().expect("spacing");
        let graph = txt2img_custom(sampler, scheduler, around);
        let (dir, out) = package_and_run(&root, name, &graph);
        let worst = numpy_disagreement(&python, &dir, &out, (sampler, spacing));
        figures.push(format!("{name}: {worst:.2e}"));
        assert!(worst <= 1e-5, "{name}: worst |a - b| / (1 + |b|) = {worst}");
    }
    eprintln!("scheduler nodes against numpy: {}", figures.join(", "));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_flow_model_takes_a_stated_schedule_and_refuses_sd_turbos() {
    let mut flow = pattern("flow-sd3");
    let k = flow["5"]["inputs"].clone();
    flow["20"] = json!({"class_type": "KSamplerSelect", "inputs": {"sampler_name": "euler"}});
    flow["21"] = json!({"class_type": "KarrasScheduler", "inputs": {"steps": 4, "sigma_max": 1.0, "sigma_min": 0.02, "rho": 7.0}});
    flow["5"] = json!({"class_type": "SamplerCustom", "inputs": {"add_noise": true, "noise_seed": k["seed"], "cfg": k["cfg"], "model": k["model"], "positive": k["positive"], "negative": k["negative"], "sampler": ["20", 0], "sigmas": ["21", 0], "latent_image": k["latent_image"]}});
    let l = lowered(&flow, &Target::default());
    let parameters = &workflow(&l)["components"]["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(parameters["model_sampling"], "sd3");
    assert_eq!(parameters["sigma_max"], 1.0);
    // The stated sigmas do not follow the model's shift, so none is asked.
    assert!(workflow(&l)["inputs"].get("request.flow_shift").is_none());
    if support::runtime_available() {
        let root = scratch("flow-karras");
        let (_, out) = package_and_run(&root, "flow-karras", &flow);
        let (_, latent) = support::lowering::npy(&out.join("latent.npy"));
        assert!(latent.iter().all(|v| v.is_finite() && v.abs() < 100.0));
        let _ = std::fs::remove_dir_all(&root);
    }
    flow["21"] = json!({"class_type": "SDTurboScheduler", "inputs": {"steps": 2, "denoise": 1.0, "model": k["model"]}});
    assert_refused(
        &flow,
        (
            "21",
            "SDTurboScheduler",
            Some("model"),
            "takes a model without discrete training timesteps (a flow-matching or continuous one), but its timesteps 999, 899, ..., 99 are a discrete model's (SD Turbo's)",
        ),
    );
}

/// `SetFirstSigma` on a flow model's own schedule, which follows the shift
/// at run time: the schedule policy sets the first sigma there, the rest
/// as without it.
#[test]
fn a_set_first_sigma_replaces_a_flow_schedules_first_at_run_time() {
    let mut flow = pattern("flow-sd3");
    let k = flow["5"]["inputs"].clone();
    flow["20"] = json!({"class_type": "KSamplerSelect", "inputs": {"sampler_name": "euler"}});
    flow["21"] = json!({"class_type": "BasicScheduler", "inputs": {"scheduler": "simple", "steps": 4, "denoise": 1.0, "model": k["model"]}});
    flow["5"] = json!({"class_type": "SamplerCustom", "inputs": {"add_noise": true, "noise_seed": k["seed"], "cfg": k["cfg"], "model": k["model"], "positive": k["positive"], "negative": k["negative"], "sampler": ["20", 0], "sigmas": ["21", 0], "latent_image": k["latent_image"]}});
    let plain = lowered(&flow, &Target::default());
    flow["22"] =
        json!({"class_type": "SetFirstSigma", "inputs": {"sigma": 2.5, "sigmas": ["21", 0]}});
    flow["5"]["inputs"]["sigmas"] = json!(["22", 0]);
    let set = lowered(&flow, &Target::default());
    let parameters = &workflow(&set)["components"]["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(parameters["first_sigma"], 2.5);
    assert!(workflow(&set)["inputs"].get("request.flow_shift").is_some());
    if !support::runtime_available() {
        return;
    }
    let root = scratch("flow-first-sigma");
    let shift = r#"{"dtype": "float32", "shape": [1], "data": [3.0]}"#.to_string();
    let schedule = |name: &str, l: &wfstudio_core::comfyui::lower::Lowered| {
        let out = support::lowering::run_policy_alone(
            &root,
            name,
            &l.document,
            "diffusion_schedule",
            &[("shift", shift.clone())],
        );
        support::lowering::npy(&out.join("schedule.npy")).1
    };
    let (plain, set) = (schedule("plain", &plain), schedule("set", &set));
    assert_eq!(set.len(), 5);
    assert_eq!(set[0], 2.5);
    assert_eq!(set[1..], plain[1..]);
    assert_eq!(plain[0], 1.0);
    let _ = std::fs::remove_dir_all(&root);
}

/// Inverting a picture (`DisableNoise`-style `add_noise: false` over
/// flipped sigmas) steps up to the schedule's last sigma, sigma_max, with
/// no forced 0 at its end; samplers that add noise are refused on it.
#[test]
fn a_flipped_schedule_runs_up_to_its_last_sigma_without_fresh_noise() {
    let mut invert = pattern("custom");
    invert["21"] = json!({"class_type": "BasicScheduler", "inputs": {"scheduler": "karras", "steps": 5, "denoise": 1.0, "model": ["1", 0]}});
    invert["5"]["inputs"]["add_noise"] = json!(false);
    invert["20"]["inputs"]["sampler_name"] = json!("euler");
    let final_step = |graph: &Value| {
        let l = lowered(graph, &Target::default());
        workflow(&l)["components"]["solver_step"]["contract"]["parameters"]["final_step"].clone()
    };
    assert_eq!(final_step(&invert), "full_denoise");
    invert["24"] = json!({"class_type": "FlipSigmas", "inputs": {"sigmas": ["21", 0]}});
    invert["5"]["inputs"]["sigmas"] = json!(["24", 0]);
    assert_eq!(final_step(&invert), "keep_leftover_noise");
    let l = lowered(&invert, &Target::default());
    let parameters = &workflow(&l)["components"]["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(parameters["flip"], true);
    invert["20"]["inputs"]["sampler_name"] = json!("euler_ancestral");
    assert_refused(
        &invert,
        (
            "20",
            "KSamplerSelect",
            Some("sampler_name"),
            "uses sampler 'euler_ancestral', which adds fresh noise at every step, on the sigmas node 24 (FlipSigmas) reverses, where each step raises sigma and ComfyUI's noise amount is the square root of a negative number",
        ),
    );
}

#[test]
fn bad_scheduler_settings_are_refused_by_node_and_input() {
    let refused = |scheduler: Value, flip: bool, expected: Expected| {
        let around = flip.then(|| json!({"class_type": "FlipSigmas", "inputs": {}}));
        assert_refused(&txt2img_custom("euler", scheduler, around), expected);
    };
    refused(
        node(
            "KarrasScheduler",
            json!({"steps": 5, "sigma_max": 0.5, "sigma_min": 0.5, "rho": 7.0}),
        ),
        false,
        (
            "21",
            "KarrasScheduler",
            Some("sigma_min"),
            "is 0.5, not below sigma_max 0.5",
        ),
    );
    refused(
        node(
            "PolyexponentialScheduler",
            json!({"steps": 5, "sigma_max": 8.0, "sigma_min": 0.1, "rho": 0.0}),
        ),
        false,
        (
            "21",
            "PolyexponentialScheduler",
            Some("rho"),
            "is 0, not above 0",
        ),
    );
    refused(
        node(
            "ExponentialScheduler",
            json!({"steps": 5, "sigma_max": 8.0, "sigma_min": 0.0}),
        ),
        false,
        (
            "21",
            "ExponentialScheduler",
            Some("sigma_min"),
            "is 0, not above 0",
        ),
    );
    refused(
        node("SDTurboScheduler", json!({"steps": 2, "denoise": 0.05})),
        false,
        (
            "21",
            "SDTurboScheduler",
            Some("denoise"),
            "is 0.05, which keeps none of its 2 steps",
        ),
    );
    refused(
        node("SDTurboScheduler", json!({"steps": 11, "denoise": 1.0})),
        false,
        ("21", "SDTurboScheduler", Some("steps"), "is 11"),
    );
    refused(
        node(
            "AlignYourStepsScheduler",
            json!({"model_type": "SD3", "steps": 5, "denoise": 1.0}),
        ),
        false,
        (
            "21",
            "AlignYourStepsScheduler",
            Some("model_type"),
            "is 'SD3', which Align Your Steps has no noise levels for",
        ),
    );
    refused(
        node(
            "BasicScheduler",
            json!({"scheduler": "normal", "steps": 6, "denoise": 0.5}),
        ),
        true,
        (
            "21",
            "BasicScheduler",
            Some("denoise"),
            "cuts the schedule it gives node 24 (FlipSigmas) to denoise 0.5; the lowering flips whole schedules",
        ),
    );
    // A flipped split: FlipSigmas reads only a scheduler node.
    let mut split = txt2img_custom(
        "euler",
        node(
            "BasicScheduler",
            json!({"scheduler": "normal", "steps": 6, "denoise": 1.0}),
        ),
        Some(json!({"class_type": "FlipSigmas", "inputs": {}})),
    );
    split["25"] = json!({"class_type": "SplitSigmas", "inputs": {"step": 3, "sigmas": ["21", 0]}});
    split["24"]["inputs"]["sigmas"] = json!(["25", 1]);
    assert_refused(
        &split,
        (
            "25",
            "SplitSigmas",
            None,
            "feeds `sigmas` of node 24 as its sigmas, which the importer supports only from BasicScheduler, KarrasScheduler, ExponentialScheduler, PolyexponentialScheduler, BetaSamplingScheduler, SDTurboScheduler, AlignYourStepsScheduler, Flux2Scheduler, LTXVScheduler or ManualSigmas",
        ),
    );
}
