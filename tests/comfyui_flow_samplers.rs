//! ComfyUI's samplers on a flow-matching model (SD3's `ModelSamplingSD3`):
//! every one of `KSampler`'s samplers runs and matches the independent
//! numpy reference (`tests/reference/sampler_reference.py`, which follows
//! ComfyUI's flow forms: the rectified-flow ancestral steps, CFG++'s
//! `alpha = 1 - sigma`, LCM's flow renoising, and the half log-SNR
//! `ln((1 - sigma) / sigma)` of the SDE, SEEDS, ER-SDE and SA-Solver
//! samplers from a first sigma moved to `percent_to_sigma(1e-4)`).

mod support;

use serde_json::{Value, json};
use support::lowering::{numpy_disagreement, package_and_run, pattern, scratch};
use wfstudio_core::comfyui::synth::sampling::SAMPLERS;

/// The SD3 flow pattern sampling with `sampler` on `scheduler`.
fn sd3(sampler: &str, scheduler: &str) -> Value {
    let mut graph = pattern("flow-sd3");
    graph["5"]["inputs"]["sampler_name"] = json!(sampler);
    graph["5"]["inputs"]["scheduler"] = json!(scheduler);
    graph
}

/// The SD3 pattern with a `KSamplerAdvanced` running steps `start..end`
/// of its 5 with `sampler` on `scheduler` (`leftover`: ending with
/// leftover noise).
fn sd3_window((sampler, scheduler): (&str, &str), start: i64, end: i64, leftover: bool) -> Value {
    let mut graph = sd3(sampler, scheduler);
    let k = graph["5"]["inputs"].clone();
    let switch = |on: bool| if on { "enable" } else { "disable" };
    graph["5"] = json!({"class_type": "KSamplerAdvanced", "inputs": {
        "add_noise": "enable", "noise_seed": k["seed"], "steps": k["steps"], "cfg": k["cfg"],
        "sampler_name": sampler, "scheduler": scheduler, "start_at_step": start, "end_at_step": end,
        "return_with_leftover_noise": switch(leftover), "model": k["model"],
        "positive": k["positive"], "negative": k["negative"], "latent_image": k["latent_image"]}});
    graph
}

#[test]
fn every_flow_sampler_matches_the_numpy_reference_on_an_sd3_model() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("flow-samplers");
    std::fs::create_dir_all(&root).expect("mkdir");
    // SA-Solver on `normal`: `simple` puts a sigma exactly on its
    // interval's bound, where float32 rounding decides the comparison (the
    // package computes the table in float32 as ComfyUI does, the reference
    // in float64).
    let mut pairs: Vec<(&str, &str)> = SAMPLERS
        .iter()
        .map(|s| match s.needs.interval {
            true => (s.name, "normal"),
            false => (s.name, "simple"),
        })
        .collect();
    pairs.extend([
        ("euler", "normal"),
        ("dpmpp_2m", "karras"),
        ("heun", "beta"),
        ("dpm_2_ancestral", "sgm_uniform"),
    ]);
    let mut graphs: Vec<(String, Value, &str, &str)> = pairs
        .into_iter()
        .map(|(sampler, scheduler)| {
            let name = format!("{sampler}-{scheduler}");
            (name, sd3(sampler, scheduler), sampler, scheduler)
        })
        .collect();
    // Windows: from step 0, whose sigma 1 the half log-SNR samplers move,
    // from step 2, where they start below 1, and one ending before the
    // schedule's end that fully denoises (its end step taken as 0);
    // DPM-Solver-fast and adaptive space their own steps between the
    // window's ends.
    for sampler in [
        "dpmpp_2m_sde",
        "dpmpp_3m_sde",
        "er_sde",
        "seeds_3",
        "sa_solver",
        "dpm_fast",
        "dpm_adaptive",
    ] {
        let scheduler = match sampler.starts_with("sa_solver") {
            true => "normal",
            false => "simple",
        };
        // A one-step window that fully denoises: DPM-Solver's grid stands
        // still there, as ComfyUI's does.
        let one_step = sampler.starts_with("dpm_").then_some((3, 4, false));
        for (start, end, leftover) in [(0, 3, true), (2, 5, false), (1, 4, false)]
            .into_iter()
            .chain(one_step)
        {
            let name = format!("{sampler}-window-{start}-{end}");
            let graph = sd3_window((sampler, scheduler), start, end, leftover);
            graphs.push((name, graph, sampler, scheduler));
        }
    }
    let mut figures = Vec::new();
    for (name, graph, sampler, scheduler) in graphs {
        let (dir, out) = package_and_run(&root, &name, &graph);
        let worst = numpy_disagreement(&python, &dir, &out, (sampler, scheduler));
        figures.push(format!("{name}: {worst:.2e}"));
        assert!(worst <= 1e-5, "{name}: worst |a - b| / (1 + |b|) = {worst}");
    }
    eprintln!("flow latents against numpy: {}", figures.join(", "));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_samplers_and_schedulers_are_ksamplers_own() {
    // ComfyUI's lists as its KSampler node definition gives them, in the
    // corpus's node_defs.json.
    let Some(shared) = support::shared() else {
        return;
    };
    let text = std::fs::read_to_string(shared.join("corpus/comfyui/node_defs.json"))
        .expect("node_defs.json");
    let defs: Value = serde_json::from_str(&text).expect("JSON");
    let options = |input: &str| -> Vec<String> {
        let inputs = defs["nodes"]["KSampler"]["inputs"]
            .as_array()
            .expect("inputs");
        let found = inputs.iter().find(|i| i["name"] == input).expect(input);
        let mut names: Vec<String> = found["options"]
            .as_array()
            .expect("options")
            .iter()
            .map(|o| o.as_str().expect("name").to_string())
            .collect();
        names.sort();
        names
    };
    let sorted = |names: Vec<&str>| {
        let mut names: Vec<String> = names.into_iter().map(String::from).collect();
        names.sort();
        names
    };
    let samplers = sorted(SAMPLERS.iter().map(|s| s.name).collect());
    assert_eq!(samplers.len(), 42);
    assert_eq!(samplers, options("sampler_name"));
    let schedules = sorted(wfstudio_core::comfyui::lower::SCHEDULES.to_vec());
    assert_eq!(schedules, options("scheduler"));
}
