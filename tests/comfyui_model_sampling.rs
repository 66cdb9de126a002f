//! ComfyUI's `ModelSamplingDiscrete` (eps, v_prediction, x0, lcm; zero terminal
//! SNR), `ModelSamplingContinuousEDM` (eps, v_prediction, edm) and
//! `ModelSamplingContinuousV` (Stable Audio's v_prediction): the
//! lowering records the model's prediction and sigma table, the policies
//! read its output as that prediction, and runs match the independent
//! numpy reference; the sampling types the lowering does not build are
//! refused by name.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, numpy_disagreement, package_and_run, scratch, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// The txt2img fixture with `sampler` on `scheduler` and the model
/// sampled through `sampling` (node 30, its model input added).
fn txt2img_sampled(sampling: Value, sampler: &str, scheduler: &str) -> Value {
    let text = std::fs::read_to_string(support::fixtures().join("comfyui/txt2img-sd15.api.json"))
        .expect("txt2img");
    let mut g: Value = serde_json::from_str(&text).expect("json");
    g["30"] = sampling;
    g["30"]["inputs"]["model"] = json!(["10", 0]);
    g["14"]["inputs"]["model"] = json!(["30", 0]);
    g["14"]["inputs"]["sampler_name"] = json!(sampler);
    g["14"]["inputs"]["scheduler"] = json!(scheduler);
    g
}

fn discrete(sampling: &str, zsnr: bool) -> Value {
    json!({"class_type": "ModelSamplingDiscrete", "inputs": {"sampling": sampling, "zsnr": zsnr}})
}

fn continuous_v() -> Value {
    continuous_v_to(500.0)
}

/// `ModelSamplingContinuousV` from 0.03 to `sigma_max` (Stable Audio's
/// 500 by default).
fn continuous_v_to(sigma_max: f64) -> Value {
    json!({"class_type": "ModelSamplingContinuousV", "inputs": {"sampling": "v_prediction", "sigma_max": sigma_max, "sigma_min": 0.03}})
}

fn edm(sampling: &str) -> Value {
    json!({"class_type": "ModelSamplingContinuousEDM", "inputs": {"sampling": sampling, "sigma_max": 120.0, "sigma_min": 0.002}})
}

/// (name, node, sampler, scheduler, the schedule parameters stated).
fn cases() -> Vec<(&'static str, Value, &'static str, &'static str, Value)> {
    vec![
        (
            "v",
            discrete("v_prediction", false),
            "dpmpp_2m",
            "karras",
            json!({"prediction": "v_prediction", "model_sampling": "discrete"}),
        ),
        (
            "v-zsnr",
            discrete("v_prediction", true),
            "euler",
            "normal",
            json!({"prediction": "v_prediction", "zero_terminal_snr": true}),
        ),
        (
            "x0-heun",
            discrete("x0", false),
            "heun",
            "karras",
            json!({"prediction": "x0"}),
        ),
        (
            // Lotus' sampling type: the sample unscaled, the output the
            // denoised picture.
            "img_to_img-dpmpp_2m",
            discrete("img_to_img", false),
            "dpmpp_2m",
            "karras",
            json!({"prediction": "img_to_img"}),
        ),
        (
            "eps-zsnr-uni_pc",
            discrete("eps", true),
            "uni_pc",
            "simple",
            json!({"prediction": "epsilon", "zero_terminal_snr": true}),
        ),
        (
            "edm-ancestral",
            edm("edm"),
            "euler_ancestral",
            "karras",
            json!({"prediction": "edm", "sigma_data": 0.5, "model_sampling": "continuous_edm", "model_sigma_min": 0.002, "model_sigma_max": 120.0}),
        ),
        (
            "cosxl-cfg_pp",
            edm("v_prediction"),
            "dpmpp_2m_cfg_pp",
            "exponential",
            json!({"prediction": "v_prediction", "model_sampling": "continuous_edm"}),
        ),
        (
            "edm-dpmpp_sde",
            edm("edm"),
            "dpmpp_sde",
            "normal",
            json!({"prediction": "edm"}),
        ),
        (
            "continuous-v",
            continuous_v(),
            "dpmpp_2m",
            "exponential",
            json!({"prediction": "v_prediction", "model_sampling": "continuous_v", "model_sigma_min": 0.03, "model_sigma_max": 500.0}),
        ),
        (
            // A second model call per step (the timestep in the graph) on
            // ComfyUI's timestep-spaced `normal` schedule. From Stable
            // Audio's 500, Euler-type steps cancel in float32 to about 1e-4
            // of the float64 reference (as zsnr's 4519 does); 20 keeps the
            // comparison tight.
            "continuous-v-heun",
            continuous_v_to(20.0),
            "heun",
            "normal",
            json!({"prediction": "v_prediction", "model_sampling": "continuous_v"}),
        ),
        (
            // The adaptive sampler's first call is made where its
            // controller stands, not at a schedule step: a v-predicting
            // model's output is read there.
            "v-dpm_adaptive",
            discrete("v_prediction", false),
            "dpm_adaptive",
            "karras",
            json!({"prediction": "v_prediction", "model_sampling": "discrete"}),
        ),
        (
            "edm-dpm_fast",
            edm("edm"),
            "dpm_fast",
            "karras",
            json!({"prediction": "edm"}),
        ),
        (
            "lcm",
            discrete("lcm", false),
            "lcm",
            "sgm_uniform",
            json!({"prediction": "lcm", "model_sampling": "discrete_distilled"}),
        ),
        (
            "lcm-dpmpp_2m",
            discrete("lcm", false),
            "dpmpp_2m",
            "karras",
            json!({"prediction": "lcm"}),
        ),
        (
            "lcm-heun",
            discrete("lcm", false),
            "heun",
            "simple",
            json!({"prediction": "lcm"}),
        ),
    ]
}

#[test]
fn a_stated_model_sampling_is_recorded_in_the_schedule_contract() {
    for (name, node, sampler, scheduler, stated) in cases() {
        let l = lowered(
            &txt2img_sampled(node, sampler, scheduler),
            &Target::default(),
        );
        let components = &workflow(&l)["components"];
        let parameters = &components["diffusion_schedule"]["contract"]["parameters"];
        for (key, value) in stated.as_object().expect("object") {
            assert_eq!(&parameters[key], value, "{name}: {key}");
        }
        let solver = &components["solver_step"]["contract"]["parameters"];
        assert_eq!(solver["prediction"], stated["prediction"], "{name}");
    }
}

#[test]
fn stated_model_sampling_runs_match_an_independent_numpy_reference() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("model-sampling");
    let mut figures = Vec::new();
    for (name, node, sampler, scheduler, _) in cases() {
        let mut graph = txt2img_sampled(node, sampler, scheduler);
        if sampler == "dpm_fast" {
            // Over 6 steps DPM-Solver-fast takes 3, each `h` about 3.6 from
            // sigma 120, whose e^h scales the float32 estimates' last bits
            // to 3e-5 of the float64 reference; 12 steps take 5 (1.4e-6).
            graph["14"]["inputs"]["steps"] = json!(12);
        }
        let (dir, out) = package_and_run(&root, name, &graph);
        let worst = numpy_disagreement(&python, &dir, &out, (sampler, scheduler));
        // A zero-terminal-SNR run starts at sigma 4519: its first float32
        // step (the latent near 4519 times the noise, the step nearly all of
        // it) keeps about 1e-4 of the float64 reference's bits, as ComfyUI's
        // float32 sampling would.
        let tolerance = if name.contains("zsnr") { 2e-4 } else { 1e-5 };
        figures.push((format!("{name}: {worst:.2e}"), worst <= tolerance));
    }
    let all: Vec<&str> = figures.iter().map(|(f, _)| f.as_str()).collect();
    eprintln!("model sampling against numpy: {}", all.join(", "));
    assert!(
        figures.iter().all(|(_, ok)| *ok),
        "worst |a - b| / (1 + |b|): {all:?}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn sampling_types_the_lowering_does_not_build_are_refused_by_name() {
    let refused = |node: Value, input: Option<&'static str>, message: &'static str| {
        let class: &'static str = match node["class_type"].as_str() {
            Some("ModelSamplingDiscrete") => "ModelSamplingDiscrete",
            Some("ModelSamplingContinuousV") => "ModelSamplingContinuousV",
            _ => "ModelSamplingContinuousEDM",
        };
        assert_refused(
            &txt2img_sampled(node, "euler", "normal"),
            ("30", class, input, message),
        );
    };
    refused(
        edm("edm_playground_v2.5"),
        Some("sampling"),
        "is 'edm_playground_v2.5': Playground v2.5's latent format, which the lowering does not convert",
    );
    refused(
        edm("x0"),
        Some("sampling"),
        "is 'x0': not a sampling type ComfyUI offers here",
    );
    let mut eps = continuous_v();
    eps["inputs"]["sampling"] = json!("eps");
    refused(
        eps,
        Some("sampling"),
        "is 'eps': not a sampling type ComfyUI offers here",
    );
    let mut backwards = edm("edm");
    backwards["inputs"]["sigma_min"] = json!(200.0);
    refused(
        backwards,
        Some("sigma_min"),
        "is 200 with sigma_max 120, not a range of positive sigmas",
    );
    // Two overrides on one model path.
    let mut twice = txt2img_sampled(discrete("v_prediction", false), "euler", "normal");
    twice["31"] =
        json!({"class_type": "ModelSamplingSD3", "inputs": {"shift": 3.0, "model": ["30", 0]}});
    twice["14"]["inputs"]["model"] = json!(["31", 0]);
    assert_refused(
        &twice,
        (
            "30",
            "ModelSamplingDiscrete",
            None,
            "is a second model-sampling override on the model path",
        ),
    );
}

#[test]
fn a_scheduler_on_the_model_without_the_stated_sampling_is_refused() {
    let mut g = txt2img_sampled(discrete("v_prediction", true), "euler", "normal");
    let k = g["14"]["inputs"].clone();
    g["20"] = json!({"class_type": "KSamplerSelect", "inputs": {"sampler_name": "euler"}});
    g["21"] = json!({"class_type": "BasicScheduler", "inputs": {"scheduler": "normal", "steps": 4, "denoise": 1.0, "model": ["10", 0]}});
    g["14"] = json!({"class_type": "SamplerCustom", "inputs": {"add_noise": true, "noise_seed": k["seed"], "cfg": k["cfg"], "model": ["30", 0], "positive": k["positive"], "negative": k["negative"], "sampler": ["20", 0], "sigmas": ["21", 0], "latent_image": k["latent_image"]}});
    assert_refused(
        &g,
        (
            "21",
            "BasicScheduler",
            Some("model"),
            "takes its model from node 10, whose own sampling the graph does not state, unlike the sampler's model's; the sigmas must come from the sampled model",
        ),
    );
    // Through the same node, it lowers.
    g["21"]["inputs"]["model"] = json!(["30", 0]);
    let l = lowered(&g, &Target::default());
    let parameters = &workflow(&l)["components"]["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(parameters["zero_terminal_snr"], true);
    // Without zero terminal SNR the node keeps SD's own table, which the
    // bare model's scheduler computes too.
    g["30"]["inputs"]["zsnr"] = json!(false);
    g["21"]["inputs"]["model"] = json!(["10", 0]);
    let l = lowered(&g, &Target::default());
    let parameters = &workflow(&l)["components"]["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(parameters["prediction"], "v_prediction");
    // SD Turbo's timesteps are a discrete table's, which an EDM model lacks.
    g["30"] = edm("v_prediction");
    g["30"]["inputs"]["model"] = json!(["10", 0]);
    g["21"] = json!({"class_type": "SDTurboScheduler", "inputs": {"steps": 2, "denoise": 1.0, "model": ["30", 0]}});
    assert_refused(
        &g,
        (
            "21",
            "SDTurboScheduler",
            Some("model"),
            "takes a model without discrete training timesteps (a flow-matching or continuous one), but its timesteps 999, 899, ..., 99 are a discrete model's (SD Turbo's)",
        ),
    );
}
