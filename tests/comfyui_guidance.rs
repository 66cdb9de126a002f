//! `FluxGuidance`: the guidance a guidance-distilled model (Flux dev,
//! HunyuanVideo) takes as an input of its own, per prompt, beside the
//! sampler's classifier-free guidance; `CFGNorm`, which scales the guided
//! estimate down to the conditional one's norm after every guidance.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, package_and_run, pattern, run_policy_alone, s, scratch, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// The flow pattern as the Flux dev template draws it: the positive prompt
/// through `FluxGuidance` (3.5), the negative its encoder zeroed, cfg 1.
fn flux_dev() -> Value {
    let mut g = pattern("flow-sd3");
    g["20"] = json!({"class_type": "FluxGuidance", "inputs": {"guidance": 3.5, "conditioning": ["2", 0]}});
    g["21"] = json!({"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["2", 0]}});
    g["5"]["inputs"]["positive"] = json!(["20", 0]);
    g["5"]["inputs"]["negative"] = json!(["21", 0]);
    g["5"]["inputs"]["cfg"] = json!(1.0);
    g
}

/// The `guidance` each denoiser call binds, in step order.
fn guidance_bindings(w: &Value) -> Vec<Value> {
    w["steps"][0]["steps"]
        .as_array()
        .expect("loop body")
        .iter()
        .filter(|s| s["component"] == "denoiser")
        .map(|s| s["inputs"]["guidance"].clone())
        .collect()
}

#[test]
fn flux_guidance_is_a_typed_input_every_denoiser_call_takes() {
    let l = lowered(&flux_dev(), &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["components"]["denoiser"]["ports"]["inputs"]["guidance"]["shape"],
        json!(["batch"])
    );
    assert_eq!(w["inputs"]["request.flux_guidance"]["default"], 3.5);
    assert_eq!(
        w["inputs"]["request.flux_guidance"]["source"],
        json!({"kind": "application", "name": "flux_guidance"})
    );
    // The zeroed negative (cfg 1: its call does not change the result)
    // takes the positive's guidance.
    assert_eq!(
        guidance_bindings(w),
        [
            json!("request.flux_guidance"),
            json!("request.flux_guidance")
        ]
    );
    assert!(w["inputs"].get("request.negative_flux_guidance").is_none());
}

#[test]
fn each_prompt_with_its_own_flux_guidance_has_its_own_input() {
    let mut g = flux_dev();
    g["22"] = json!({"class_type": "FluxGuidance", "inputs": {"guidance": 2.0, "conditioning": ["3", 0]}});
    g["5"]["inputs"]["negative"] = json!(["22", 0]);
    g["5"]["inputs"]["cfg"] = json!(3.0);
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    assert_eq!(w["inputs"]["request.flux_guidance"]["default"], 3.5);
    assert_eq!(
        w["inputs"]["request.negative_flux_guidance"]["default"],
        2.0
    );
    // Calls run negative first, then positive.
    assert_eq!(
        guidance_bindings(w),
        [
            json!("request.negative_flux_guidance"),
            json!("request.flux_guidance")
        ]
    );
}

#[test]
fn the_guidance_input_reaches_the_model() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("guidance");
    let (dir, out) = package_and_run(&root, "flux", &flux_dev());
    let (_, default) = npy(&out.join("latent.npy"));
    let run_with = |guidance: &str, name: &str| {
        let folder = root.join(name);
        let input = format!("request.flux_guidance={guidance}");
        let (code, _, stderr) =
            support::run_wfstudio(&["run", s(&dir), "--input", &input, "--out", s(&folder)]);
        assert_eq!(code, 0, "{stderr}");
        npy(&folder.join("latent.npy")).1
    };
    // Runs are deterministic: the graph's 3.5 passed again changes nothing,
    // 7 changes the latent (a stand-in model's answer to its guidance
    // input is small, so any bit counts).
    assert_eq!(run_with("3.5", "same"), default);
    assert_ne!(run_with("7", "other"), default);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn guidance_the_lowering_cannot_state_is_refused_by_name() {
    let mut one_sided = flux_dev();
    one_sided["5"]["inputs"]["cfg"] = json!(4.0);
    let mut twice = flux_dev();
    twice["23"] = json!({"class_type": "FluxGuidance", "inputs": {"guidance": 5.0, "conditioning": ["20", 0]}});
    twice["5"]["inputs"]["positive"] = json!(["23", 0]);
    let mut out_of_range = flux_dev();
    out_of_range["20"]["inputs"]["guidance"] = json!(-1.0);
    let cases = [
        (
            one_sided,
            "20",
            None,
            "sets the guidance of one prompt only, and the negative prompt would take the model's own default guidance, which the lowering does not know",
        ),
        (
            twice,
            "20",
            None,
            "sets the guidance that FluxGuidance node 23 nearer the sampler sets again",
        ),
        (out_of_range, "20", Some("guidance"), "is -1"),
    ];
    for (graph, node, input, message) in cases {
        assert_refused(&graph, (node, "FluxGuidance", input, message));
    }
    // FluxGuidance means a guidance-distilled Flux model, which samples by
    // flow matching: without a ModelSampling node, and with a text encoder
    // type that does not name the model family, the graph does not say its
    // shift, even on a 4-channel latent.
    let mut unstated = flux_dev();
    unstated["5"]["inputs"]["model"] = json!(["12", 0]);
    unstated.as_object_mut().map(|m| m.remove("13"));
    unstated["4"]["class_type"] = json!("EmptyLatentImage");
    unstated["14"]["inputs"]["type"] = json!("lumina2");
    assert_refused(
        &unstated,
        (
            "5",
            "KSampler",
            Some("model"),
            "samples prompts guided by FluxGuidance (node 20) with the model's own sampling, which the graph does not state: the models that take it sample by flow matching with a shift of their own, and the text encoder's type 'lumina2' (node 14) does not settle which",
        ),
    );
}

/// `graph` with a `CFGNorm` of `strength` (node 30) on the model path of
/// its sampler (node `sampler`).
fn with_cfg_norm(mut graph: Value, sampler: &str, strength: f64) -> Value {
    let model = graph[sampler]["inputs"]["model"].clone();
    graph["30"] =
        json!({"class_type": "CFGNorm", "inputs": {"model": model, "strength": strength}});
    graph[sampler]["inputs"]["model"] = json!(["30", 0]);
    graph
}

#[test]
fn cfg_norm_scales_every_guided_estimate_on_a_flow_model() {
    let mut g = with_cfg_norm(pattern("flow-sd3"), "5", 0.9);
    g["5"]["inputs"]["sampler_name"] = json!("heun");
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["inputs"]["request.cfg_norm_strength"]["default"],
        json!(0.9)
    );
    // After each of heun's two guidance combines.
    let body = w["steps"][0]["steps"].as_array().expect("loop body");
    let norms: Vec<&Value> = body
        .iter()
        .filter(|s| s["component"] == "cfg_norm")
        .collect();
    assert_eq!(norms.len(), 2);
    assert_eq!(norms[0]["inputs"]["guided"], "denoiser.guided");
    assert_eq!(norms[0]["outputs"]["estimate"], "denoiser.estimate");
    assert_eq!(norms[1]["inputs"]["sample"], "solver.mid_input");
    assert_eq!(norms[1]["outputs"]["estimate"], "denoiser.estimate_2");
    if !support::runtime_available() {
        return;
    }
    // The policy alone: rows of 2 channels at 1 position, sigma 0.5 (SD3's
    // timestep 500), strength 0.9.
    let root = scratch("cfg-norm");
    let tensor =
        |data: &[f32]| json!({"dtype": "float32", "shape": [1, 2, 1, 1], "data": data}).to_string();
    let (x, v, v_c) = ([1.0_f32, -2.0], [4.0_f32, 2.0], [1.0_f32, 0.0]);
    let out = run_policy_alone(
        &root,
        "policy",
        &l.document,
        "cfg_norm",
        &[
            ("sample", tensor(&x)),
            (
                "timestep",
                json!({"dtype": "float32", "shape": [1], "data": [500.0]}).to_string(),
            ),
            ("guided", tensor(&v)),
            ("conditional", tensor(&v_c)),
            (
                "strength",
                json!({"dtype": "float32", "shape": [1], "data": [0.9]}).to_string(),
            ),
        ],
    );
    let (_, got) = npy(&out.join("estimate.npy"));
    // D = x - 0.5 v = (-1, -3), D_c = (0.5, -2): scale |D_c| / |D| = sqrt(4.25 / 10).
    let d = [-1.0_f64, -3.0];
    let scale = (4.25_f64 / 10.0).sqrt() * 0.9;
    for k in 0..2 {
        let want = (f64::from(x[k]) - d[k] * scale) / 0.5;
        assert!(
            (f64::from(got[k]) - want).abs() < 1e-5,
            "{k}: {} vs {want}",
            got[k]
        );
    }
    // A whole run with the stand-ins.
    let (_, out) = package_and_run(&root, "run", &g);
    let (_, latent) = npy(&out.join("latent.npy"));
    assert!(latent.iter().all(|v| v.is_finite()));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn cfg_norm_on_a_noise_predicting_model_is_refused() {
    let text = std::fs::read_to_string(support::fixtures().join("comfyui/txt2img-sd15.api.json"))
        .expect("txt2img");
    let g = with_cfg_norm(serde_json::from_str(&text).expect("json"), "14", 1.0);
    assert_refused(
        &g,
        (
            "30",
            "CFGNorm",
            None,
            "normalises the guided estimate, which the lowering does on flow-matching models only (it reads each call's denoised sample back at the call's timestep)",
        ),
    );
}
