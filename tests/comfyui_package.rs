//! `wfstudio import-comfyui --package-out`: every pattern fixture and every
//! corpus ComfyUI file that lowers becomes a package that checks and runs
//! (stand-in models); the synthesized policies pass the `onnx` checker and
//! the solvers agree with an independent numpy implementation; the corpus
//! txt2img graph lowered with its package's models reproduces the
//! reference; bad models folders and destinations are refused before
//! anything is written.

mod support;

use std::path::{Path, PathBuf};
use wfstudio_core::comfyui::lower::{SCHEDULES, sampler_names};
use wfstudio_core::comfyui::synth::sampling::SAMPLERS;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wfstudio-package-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn wf(args: &[&str]) -> (i32, String, String) {
    support::run_wfstudio(args)
}

fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// Imports `graph` as a stand-in package in `dir`, checks it and runs it
/// into `out`; panics with the failing step's output.
fn import_check_run(graph: &Path, dir: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "import-comfyui",
        s(graph),
        "--package-out",
        s(dir),
        "--stand-in-models",
    ];
    args.extend_from_slice(extra);
    let (code, _, stderr) = wf(&args);
    assert_eq!(code, 0, "import {}: {stderr}", graph.display());
    let (code, stdout, stderr) = wf(&["check", s(dir)]);
    assert_eq!(code, 0, "check {}: {stdout}{stderr}", graph.display());
    let (code, stdout, stderr) = wf(&["run", s(dir), "--out", s(out)]);
    assert_eq!(code, 0, "run {}: {stdout}{stderr}", graph.display());
    // A picture, a video or a sound, whatever its output is called.
    let shown = std::fs::read_dir(out)
        .expect("the run's output folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .any(|p| {
            p.extension()
                .is_some_and(|x| x == "png" || x == "gif" || x == "wav")
        });
    assert!(shown, "{}: no .png, .gif or .wav written", graph.display());
}

fn patterns() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(support::fixtures().join("comfyui/patterns"))
        .expect("patterns")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files
}

#[test]
fn every_pattern_becomes_a_package_that_checks_and_runs_with_stand_ins() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("patterns");
    let mut ran = 0;
    for graph in patterns() {
        let name = graph
            .file_stem()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let (dir, out) = (root.join(&name), root.join(format!("{name}-out")));
        if name == "lora.api" {
            // Routed through a target's adapters it is written only: the
            // runner does not apply adapters yet. Merged into a
            // new package's models (below) it runs.
            let target = support::fixtures().join("comfyui/lora-target");
            let (code, _, stderr) = wf(&[
                "import-comfyui",
                s(&graph),
                "--package-out",
                s(&root.join("lora-routed")),
                "--stand-in-models",
                "--package",
                s(&target),
            ]);
            assert_eq!(code, 0, "{stderr}");
        }
        import_check_run(&graph, &dir, &out, &[]);
        ran += 1;
    }
    assert_eq!(ran, 35, "every pattern runs");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn every_corpus_graph_that_lowers_becomes_a_package_that_runs() {
    let Some(shared) = support::shared() else {
        return;
    };
    if !support::runtime_available() {
        return;
    }
    let comfy = shared.join("corpus/comfyui");
    let defs = comfy.join("node_defs.json");
    let outcomes = std::fs::read_to_string(support::fixtures().join("comfyui/corpus_outcomes.tsv"))
        .expect("outcomes");
    let root = scratch("corpus");
    let mut runnable = Vec::new();
    for line in outcomes.lines().filter(|l| !l.starts_with('#')) {
        let Some((file, outcome)) = line.split_once('\t') else {
            continue;
        };
        if outcome != "lowered" {
            continue;
        }
        let (dir, out) = (root.join(file), root.join(format!("{file}-out")));
        import_check_run(&comfy.join(file), &dir, &out, &["--node-defs", s(&defs)]);
        runnable.push(file.to_string());
    }
    assert_eq!(
        runnable,
        [
            "chroma-bypassed.api.json",
            "chroma-bypassed.ui.json",
            "controlnet_example.workflow.json",
            "esrgan_example.workflow.json",
            "flux-depth-lora-modelonly.api.json",
            "flux-depth-lora-modelonly.ui.json",
            "flux-fill-inpaint.api.json",
            "flux-fill-inpaint.ui.json",
            "fofr-sd15-inpainting.api.json",
            "fofr-sdxl-simple.api.json",
            "fofr-svd-txt2img2vid.api.json",
            "hidream-dev-modelsamplingsd3.api.json",
            "hidream-dev-modelsamplingsd3.ui.json",
            "img2img_workflow.workflow.json",
            "inpaint_example.workflow.json",
            "jaylyu-sd15.api.json",
            "lora.workflow.json",
            "ltxv-i2v.ui.json",
            "model-merge-muted-save.api.json",
            "model-merge-muted-save.ui.json",
            "sd15-controlnet-single.api.json",
            "sd15-controlnet-single.ui.json",
            "sd15-esrgan-upscale.api.json",
            "sd15-esrgan-upscale.ui.json",
            "sd15-hiresfix-latent.api.json",
            "sd15-hiresfix-latent.ui.json",
            "sd15-inpaint.api.json",
            "sd15-inpaint.ui.json",
            "sd15-lora.api.json",
            "sd15-lora.ui.json",
            "sd15-noisy-latents-ksampleradvanced.api.json",
            "sd15-noisy-latents-ksampleradvanced.ui.json",
            "sd35-canny-controlnet.api.json",
            "sd35-canny-controlnet.ui.json",
            "sdxl-edit-legacy-groupnode.api.json",
            "sdxl-edit-legacy-groupnode.ui.json",
            "sdxl-simple.api.json",
            "sdxl-simple.ui.json",
            "svd-txt2img2vid.ui.json",
            "tpl-default.ui.json",
            "tpl-hunyuan-video-muted.ui.json",
            "tpl-svd-img2vid.ui.json",
            "tpl-wan22-14b-t2v-bypass.ui.json",
            "tpl2026-basic-switch-node.ui.json",
            "tpl2026-flux-dev-subgraph-wrapped.ui.json",
            "wan21-i2v.ui.json",
            "wan22-5b-ti2v.ui.json",
            "wyrde-vae-lora-latentupscale-reroutes.ui.json",
            "controlnet_example.png",
            "inpaint_example.png"
        ]
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_corpus_txt2img_graph_with_its_packages_models_reproduces_the_reference() {
    let Some(shared) = support::shared() else {
        return;
    };
    if !support::runtime_available() {
        return;
    }
    let models = shared.join("corpus/packages/comfyui_txt2img_sd15");
    let graph = models.join("workflow.json");
    for link in [false, true] {
        let dir = scratch(if link {
            "txt2img-linked"
        } else {
            "txt2img-copied"
        });
        let mut args = vec![
            "import-comfyui",
            s(&graph),
            "--package-out",
            s(&dir),
            "--models",
            s(&models),
        ];
        if link {
            args.push("--link");
        }
        let (code, _, stderr) = wf(&args);
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stderr.starts_with(&format!(
                "wrote {}: 0 policies synthesized, 12 model components from the models folder, 0 stand-ins\n",
                dir.display()
            )),
            "{stderr}"
        );
        use std::os::unix::fs::MetadataExt;
        let inode = |p: &Path| std::fs::metadata(p).expect("metadata").ino();
        let same = inode(&dir.join("denoiser/model.onnx.textproto"))
            == inode(&models.join("denoiser/model.onnx.textproto"));
        let same_fs = std::fs::metadata(&models).expect("models").dev()
            == std::fs::metadata(dir.parent().expect("parent"))
                .expect("tmp")
                .dev();
        assert_eq!(
            same,
            link && same_fs,
            "hard-linked exactly when asked and possible"
        );
        let expected = shared.join("corpus/expected/comfyui_txt2img_sd15");
        let mut recipes: Vec<PathBuf> = std::fs::read_dir(&expected)
            .expect("recipes")
            .map(|e| e.expect("entry").path())
            .collect();
        recipes.sort();
        assert_eq!(recipes.len(), 3);
        for recipe in recipes {
            let (code, stdout, stderr) = wf(&["run", s(&dir), "--recipe", s(&recipe)]);
            assert_eq!(code, 0, "{}: {stdout}{stderr}", recipe.display());
            assert!(
                stderr.contains("matches the recipe's outputs"),
                "{stdout}{stderr}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The txt2img fixture graph with another sampler and scheduler.
fn txt2img_with(sampler: &str, scheduler: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(support::fixtures().join("comfyui/txt2img-sd15.api.json"))
        .expect("txt2img");
    let mut graph: serde_json::Value = serde_json::from_str(&text).expect("json");
    graph["14"]["inputs"]["sampler_name"] = sampler.into();
    graph["14"]["inputs"]["scheduler"] = scheduler.into();
    graph
}

/// The txt2img graph with a KSamplerAdvanced running steps `start..end`
/// of its 6 (`leftover`: ending with leftover noise) with `sampler`.
fn txt2img_window(sampler: &str, start: i64, end: i64, leftover: bool) -> serde_json::Value {
    let mut graph = txt2img_with(sampler, "karras");
    let k = graph["14"]["inputs"].clone();
    let switch = |on: bool| if on { "enable" } else { "disable" };
    graph["14"] = serde_json::json!({"class_type": "KSamplerAdvanced", "inputs": {
        "add_noise": "enable", "noise_seed": k["seed"], "steps": k["steps"], "cfg": k["cfg"],
        "sampler_name": sampler, "scheduler": "karras", "start_at_step": start, "end_at_step": end,
        "return_with_leftover_noise": switch(leftover), "model": k["model"],
        "positive": k["positive"], "negative": k["negative"], "latent_image": k["latent_image"]}});
    graph
}

/// The flow pattern with Flux's resolution-dependent shift instead of
/// SD3's, sampling with `sampler` on `scheduler`.
fn flux_flow(sampler: &str, scheduler: &str) -> serde_json::Value {
    let text =
        std::fs::read_to_string(support::fixtures().join("comfyui/patterns/flow-sd3.api.json"))
            .expect("flow");
    let mut graph: serde_json::Value = serde_json::from_str(&text).expect("json");
    let graph_map = graph.as_object_mut().expect("object");
    for node in graph_map.values_mut() {
        match node["class_type"].as_str() {
            Some("ModelSamplingSD3") => {
                node["class_type"] = "ModelSamplingFlux".into();
                let model = node["inputs"]["model"].clone();
                node["inputs"] = serde_json::json!({"model": model, "max_shift": 1.15, "base_shift": 0.5, "width": 1024, "height": 1024});
            }
            Some("KSampler") => {
                node["inputs"]["sampler_name"] = sampler.into();
                node["inputs"]["scheduler"] = scheduler.into();
            }
            _ => {}
        }
    }
    graph
}

#[test]
fn synthesized_models_pass_the_onnx_checker_and_every_sampler_and_schedule_runs() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("checker");
    std::fs::create_dir_all(&root).expect("mkdir");
    let mut graphs: Vec<(String, serde_json::Value)> = Vec::new();
    for sampler in sampler_names() {
        for scheduler in SCHEDULES {
            graphs.push((
                format!("{sampler}-{scheduler}"),
                txt2img_with(sampler, scheduler),
            ));
        }
    }
    for scheduler in SCHEDULES {
        graphs.push((format!("flux-{scheduler}"), flux_flow("euler", scheduler)));
    }
    // Every sampler on a Flux model (`comfyui_flow_samplers` compares SD3's
    // runs with numpy).
    for sampler in SAMPLERS {
        let name = format!("flux-{}", sampler.name);
        graphs.push((name, flux_flow(sampler.name, "simple")));
    }
    let mut models = Vec::new();
    let mut flow_latents = Vec::new();
    for (name, graph) in &graphs {
        let file = root.join(format!("{name}.json"));
        std::fs::write(&file, graph.to_string()).expect("write graph");
        let (dir, out) = (root.join(name), root.join(format!("{name}-out")));
        import_check_run(&file, &dir, &out, &[]);
        if name.starts_with("flux-") {
            flow_latents.push(out.join("latent.npy"));
        }
        for sub in ["policies", "text_encoder", "denoiser", "vae_decoder"] {
            for entry in std::fs::read_dir(dir.join(sub)).expect("folder") {
                models.push(entry.expect("entry").path());
            }
        }
    }
    let check = "import onnx, sys\nfor p in sys.argv[1:]:\n    onnx.checker.check_model(onnx.load(p), full_check=True)\nprint(len(sys.argv) - 1)";
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg(check)
        .args(&models)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        models.len().to_string()
    );
    // Flux's resolution shift has no numpy reference: its latents must at
    // least be finite and bounded.
    let sane = "import numpy as np, sys
for p in sys.argv[1:]:
    l = np.load(p)
    assert np.isfinite(l).all() and np.abs(l).max() < 100, (p, np.abs(l).max())
print(len(sys.argv) - 1)";
    let mut args = vec!["-c", sane];
    args.extend(flow_latents.iter().map(|p| s(p)));
    let checked = support::python_stdout(&python, &args);
    assert_eq!(checked.trim(), flow_latents.len().to_string());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn synthesized_solvers_match_an_independent_numpy_reference() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("numpy");
    std::fs::create_dir_all(&root).expect("mkdir");
    let mut figures = Vec::new();
    // Every sampler on two schedules, every schedule with two samplers.
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for sampler in sampler_names() {
        pairs.extend([(sampler, "normal"), (sampler, "karras")]);
    }
    for scheduler in SCHEDULES
        .iter()
        .filter(|s| !["normal", "karras"].contains(s))
    {
        pairs.extend([("euler", *scheduler), ("uni_pc", *scheduler)]);
    }
    // Each graph with the sampler and scheduler it asks for, which the
    // reference checks the package names before it computes.
    let mut graphs: Vec<(String, serde_json::Value, &str, &str)> = pairs
        .into_iter()
        .map(|(sampler, scheduler)| {
            let name = format!("{sampler}-{scheduler}");
            (name, txt2img_with(sampler, scheduler), sampler, scheduler)
        })
        .collect();
    // KSamplerAdvanced windows (steps 1..4 fully denoised, 1..5 with
    // leftover noise) for the samplers that look at earlier steps.
    for sampler in [
        "euler",
        "uni_pc",
        "uni_pc_bh2",
        "dpmpp_3m_sde",
        "res_multistep",
        "ipndm_v",
        "lms",
        "deis",
        "dpmpp_2m_cfg_pp",
        "er_sde",
        "heun",
        "dpmpp_sde",
        "seeds_2",
        "heunpp2",
        "seeds_3",
        "sa_solver",
        "sa_solver_pece",
        "dpmpp_2s_ancestral_cfg_pp",
        "dpm_fast",
        "dpm_adaptive",
    ] {
        for (start, end, leftover) in [(1, 4, false), (1, 5, true)] {
            let name = format!("{sampler}-window-{start}-{end}");
            let graph = txt2img_window(sampler, start, end, leftover);
            graphs.push((name, graph, sampler, "karras"));
        }
    }
    for (name, graph, sampler, scheduler) in graphs {
        {
            let file = root.join(format!("{name}.json"));
            std::fs::write(&file, graph.to_string()).expect("graph");
            let (dir, out) = (root.join(&name), root.join(format!("{name}-out")));
            import_check_run(&file, &dir, &out, &[]);
            let worst =
                support::lowering::numpy_disagreement(&python, &dir, &out, (sampler, scheduler));
            figures.push(format!("{name}: {worst:.2e}"));
            assert!(worst <= 1e-5, "{name}: worst |a - b| / (1 + |b|) = {worst}");
        }
    }
    eprintln!("latent agreement with numpy: {}", figures.join(", "));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn seeded_noise_is_standard_normal_and_a_batch_draws_each_row_anew() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("noise");
    std::fs::create_dir_all(&root).expect("mkdir");
    // The noise policy alone: statistics and agreement with numpy.
    let img2img = support::fixtures().join("comfyui/patterns/img2img.api.json");
    let dir = root.join("img2img");
    let (code, _, stderr) = wf(&[
        "import-comfyui",
        s(&img2img),
        "--package-out",
        s(&dir),
        "--stand-in-models",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let script = support::workspace().join("tests/reference/noise_statistics.py");
    let policy = dir.join("policies/latent_noise.onnx");
    eprintln!(
        "{}",
        support::python_stdout(&python, &[s(&script), s(&policy)])
    );
    // EmptyLatentImage's batch_size: three pictures from one seed, each other.
    let mut graph = txt2img_with("euler", "normal");
    graph["13"]["inputs"]["batch_size"] = 3.into();
    let file = root.join("batch.json");
    std::fs::write(&file, graph.to_string()).expect("graph");
    let (dir, out) = (root.join("batch"), root.join("batch-out"));
    import_check_run(&file, &dir, &out, &[]);
    for row in 0..3 {
        assert!(out.join(format!("image.{row}.png")).is_file(), "row {row}");
    }
    let rows_differ = "import numpy as np, sys\nl = np.load(sys.argv[1])\nassert l.shape[0] == 3, l.shape\nprint(min(float(np.abs(l[i] - l[j]).max()) for i in range(3) for j in range(i)))";
    let latent = out.join("latent.npy");
    let least: f64 = support::python_stdout(&python, &["-c", rows_differ, s(&latent)])
        .trim()
        .parse()
        .expect("a number");
    assert!(least > 0.1, "batch rows too alike: {least}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_models_folders_policy_for_another_schedule_is_synthesized_anew() {
    let root = scratch("stale-policies");
    std::fs::create_dir_all(&root).expect("mkdir");
    let write = |name: &str, scheduler: &str, extra: &[&str]| {
        let graph = root.join(format!("{name}.json"));
        std::fs::write(&graph, txt2img_with("euler", scheduler).to_string()).expect("graph");
        let dir = root.join(name);
        let mut args = vec!["import-comfyui", s(&graph), "--package-out", s(&dir)];
        args.extend_from_slice(extra);
        let (code, _, stderr) = wf(&args);
        assert_eq!(code, 0, "{stderr}");
        (dir, stderr)
    };
    let (normal, _) = write("normal", "normal", &["--stand-in-models"]);
    let (karras, _) = write("karras", "karras", &["--stand-in-models"]);
    let models = normal.to_str().expect("utf-8").to_string();
    let (mixed, stderr) = write("mixed", "karras", &["--models", &models]);
    // The schedule policies and the solver record the scheduler: made anew;
    // the others are the folder's.
    assert!(stderr.contains("3 policies synthesized"), "{stderr}");
    let read =
        |dir: &Path| std::fs::read(dir.join("policies/diffusion_schedule.onnx")).expect("policy");
    assert_eq!(read(&mixed), read(&karras));
    assert_ne!(read(&mixed), read(&normal));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_models_external_data_comes_with_it_and_bad_locations_are_refused() {
    if !support::runtime_available() {
        return;
    }
    let Some(python) = support::python() else {
        return;
    };
    let root = scratch("external-data");
    std::fs::create_dir_all(&root).expect("mkdir");
    let graph = root.join("txt2img.json");
    std::fs::write(&graph, txt2img_with("euler", "normal").to_string()).expect("graph");
    let (stand_ins, stand_ins_out) = (root.join("stand-ins"), root.join("stand-ins-out"));
    import_check_run(&graph, &stand_ins, &stand_ins_out, &[]);
    // The same denoiser, its weights moved to denoiser/weights.bin.
    let models = root.join("models");
    copy_dir(&stand_ins, &models);
    let save_external = |location: &str| {
        // onnx writes only locations inside the folder: others are recorded
        // afterwards, as a hostile file would.
        let script = "import onnx, sys\nm = onnx.load(sys.argv[1])\nonnx.save_model(m, sys.argv[1], save_as_external_data=True, all_tensors_to_one_file=True, location='weights.bin', size_threshold=0)\nm = onnx.load(sys.argv[1], load_external_data=False)\nfor t in m.graph.initializer:\n    for e in t.external_data:\n        if e.key == 'location': e.value = sys.argv[2]\nopen(sys.argv[1], 'wb').write(m.SerializeToString())";
        let model = models.join("denoiser/model.onnx");
        support::python_stdout(&python, &["-c", script, s(&model), location]);
    };
    save_external("weights.bin");
    let import = |out: &Path| {
        wf(&[
            "import-comfyui",
            s(&graph),
            "--package-out",
            s(out),
            "--models",
            s(&models),
            "--force",
        ])
    };
    let (package, out) = (root.join("package"), root.join("package-out"));
    let (code, _, stderr) = import(&package);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("external data taken with the models: denoiser/weights.bin"),
        "{stderr}"
    );
    assert!(package.join("denoiser/weights.bin").is_file());
    let (code, stdout, stderr) = wf(&["run", s(&package), "--out", s(&out)]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        std::fs::read(out.join("latent.npy")).expect("latent"),
        std::fs::read(stand_ins_out.join("latent.npy")).expect("latent"),
        "the denoiser with external data gives another latent"
    );
    // A missing data file, and one outside the model's folder.
    std::fs::remove_file(models.join("denoiser/weights.bin")).expect("rm");
    let refused = root.join("refused");
    let (code, _, stderr) = import(&refused);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("its external data `weights.bin` is missing"),
        "{stderr}"
    );
    std::fs::copy(
        stand_ins.join("denoiser/model.onnx"),
        models.join("denoiser/model.onnx"),
    )
    .expect("copy");
    save_external("../outside.bin");
    let (code, _, stderr) = import(&refused);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("its external data `../outside.bin` leaves the model's folder"),
        "{stderr}"
    );
    assert!(!refused.exists(), "a refused package was written");
    let _ = std::fs::remove_dir_all(&root);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy");
        }
    }
}

#[test]
fn bad_models_folders_and_destinations_are_refused_before_anything_is_written() {
    let Some(shared) = support::shared() else {
        return;
    };
    let corpus = shared.join("corpus/packages/comfyui_txt2img_sd15");
    let graph = corpus.join("workflow.json");
    let models = scratch("bad-models");
    copy_dir(&corpus, &models);
    let out = scratch("bad-out");

    // A missing component.
    std::fs::remove_file(models.join("vae_decoder/model.onnx.textproto")).expect("rm");
    let (code, _, stderr) = wf(&[
        "import-comfyui",
        s(&graph),
        "--package-out",
        s(&out),
        "--models",
        s(&models),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the models folder {} has no file for: vae_decoder (looked for vae_decoder/model.onnx.textproto, vae_decoder/model.onnx)",
            models.display()
        )),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing is written");

    // A component whose file has other ports.
    std::fs::copy(
        corpus.join("vae_decoder/model.onnx.textproto"),
        models.join("vae_decoder/model.onnx.textproto"),
    )
    .expect("restore");
    std::fs::copy(
        corpus.join("text_encoder/model.onnx.textproto"),
        models.join("denoiser/model.onnx.textproto"),
    )
    .expect("swap");
    let (code, _, stderr) = wf(&[
        "import-comfyui",
        s(&graph),
        "--package-out",
        s(&out),
        "--models",
        s(&models),
    ]);
    assert_eq!(code, 2, "{stderr}");
    for line in [
        "component denoiser, input sample: expected float32 [batch, channels, latent_height, latent_width], found missing",
        "component denoiser, input timestep: expected float32 [batch], found missing",
        "component denoiser, input encoder_hidden_states: expected float32 [batch, prompt_sequence, hidden], found missing",
        "component denoiser, input input_ids: expected not declared (the workflow does not feed it), found int64 [batch, sequence]",
        "component denoiser, output noise_pred: expected float32 [batch, channels, latent_height, latent_width], found missing",
    ] {
        assert!(stderr.contains(line), "{line}\n{stderr}");
    }
    assert!(!out.exists(), "nothing is written");

    // A models folder whose file is a symbolic link (to weights elsewhere):
    // the package gets the file itself, hard-linked or copied.
    std::fs::copy(
        corpus.join("denoiser/model.onnx.textproto"),
        out.with_extension("weights"),
    )
    .expect("weights");
    std::fs::remove_file(models.join("denoiser/model.onnx.textproto")).expect("rm");
    std::os::unix::fs::symlink(
        out.with_extension("weights"),
        models.join("denoiser/model.onnx.textproto"),
    )
    .expect("symlink");
    let (code, _, stderr) = wf(&[
        "import-comfyui",
        s(&graph),
        "--package-out",
        s(&out),
        "--models",
        s(&models),
        "--link",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!out.join("denoiser/model.onnx.textproto").is_symlink());
    let (code, stdout, stderr) = wf(&["check", s(&out)]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    std::fs::remove_dir_all(&out).expect("rm");
    let _ = std::fs::remove_file(out.with_extension("weights"));

    // A scheduler the synthesis does not make (a custom node's) is refused
    // by the lowering.
    let custom = out.with_extension("custom.json");
    std::fs::write(&custom, txt2img_with("euler", "sigmoid_offset").to_string()).expect("graph");
    let (code, stdout, _) = wf(&[
        "import-comfyui",
        s(&custom),
        "--package-out",
        s(&out),
        "--stand-in-models",
    ]);
    assert_eq!(code, 1);
    assert!(stdout.contains("input `scheduler`"), "{stdout}");
    assert!(!out.exists());
    let _ = std::fs::remove_file(&custom);

    // A file is never replaced by a package, not even with --force.
    let file = out.with_extension("file");
    std::fs::write(&file, "mine").expect("write");
    let (code, _, stderr) = wf(&[
        "import-comfyui",
        s(&support::fixtures().join("comfyui/txt2img-sd15.api.json")),
        "--package-out",
        s(&file),
        "--stand-in-models",
        "--force",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains(&format!("{} exists and is not a folder", file.display())),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("kept"), "mine");
    let _ = std::fs::remove_file(&file);

    // A non-empty destination needs --force.
    std::fs::create_dir_all(&out).expect("mkdir");
    std::fs::write(out.join("keep.txt"), "mine").expect("write");
    let pattern = support::fixtures().join("comfyui/txt2img-sd15.api.json");
    let args = [
        "import-comfyui",
        s(&pattern),
        "--package-out",
        s(&out),
        "--stand-in-models",
    ];
    let (code, _, stderr) = wf(&args);
    assert_eq!(code, 2);
    assert!(
        stderr.contains(&format!(
            "{} exists and is not empty (use --force to replace it)",
            out.display()
        )),
        "{stderr}"
    );
    assert!(out.join("keep.txt").is_file());
    let (code, _, stderr) = wf(&[&args[..], &["--force"]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert!(!out.join("keep.txt").exists());
    assert!(out.join("policies/solver_step.onnx").is_file());
    let leftovers: Vec<_> = std::fs::read_dir(out.parent().expect("parent"))
        .expect("read_dir")
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.contains("bad-out") && name.contains(".wfstudio-")
        })
        .collect();
    assert!(leftovers.is_empty(), "staging folders left: {leftovers:?}");
    let _ = std::fs::remove_dir_all(&models);
    let _ = std::fs::remove_dir_all(&out);
}
