//! The runner against the shared corpus: every reference recipe reproduces
//! its outputs within tolerance; bad inputs and broken packages give the
//! documented errors, never a panic; events, cancel and kept values behave.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use wfstudio_runner::recipe::{self, max_abs_diff};
use wfstudio_runner::{Data, Event, LoadOptions, RunControl, RunError, RunOutput, Runner, Tensor};

fn run(runner: &mut Runner, inputs: HashMap<String, Tensor>) -> Result<RunOutput, RunError> {
    let cancel = AtomicBool::new(false);
    runner.run(
        inputs,
        RunControl {
            observer: None,
            cancel: &cancel,
            keep_bytes: 0,
            reuse: None,
        },
    )
}

fn recipe_of(shared: &Path, package: &str, name: &str) -> recipe::Recipe {
    let path = shared.join("corpus/expected").join(package).join(name);
    recipe::parse(&std::fs::read_to_string(&path).expect("recipe")).expect("valid recipe")
}

#[test]
fn every_reference_recipe_reproduces_its_outputs() {
    let Some(shared) = support::shared() else {
        return;
    };
    if !support::runtime_available() {
        return;
    }
    let mut checked = 0;
    let mut packages: Vec<PathBuf> = std::fs::read_dir(shared.join("corpus/expected"))
        .expect("expected folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    packages.sort();
    for dir in packages {
        let package = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let mut runner = Runner::load(
            &shared.join("corpus/packages").join(&package),
            &LoadOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{package}: {e}"));
        let mut recipes: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .collect();
        recipes.sort();
        for path in recipes {
            let r = recipe::parse(&std::fs::read_to_string(&path).expect("recipe"))
                .expect("valid recipe");
            // Twice: the second run writes outputs into buffers shaped by
            // the first, and a package's next recipe (other shapes) finds
            // those predictions wrong and must still reproduce its outputs.
            for pass in ["first", "second"] {
                let output = run(&mut runner, r.inputs.clone())
                    .unwrap_or_else(|e| panic!("{} ({pass} run): {e}", path.display()));
                let problems = recipe::compare(&output.outputs, &r.outputs, r.abs, r.rel);
                assert!(
                    problems.is_empty(),
                    "{} ({pass} run): {problems:#?}",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 22, "every recipe under expected/ ran");
}

#[test]
fn txt2img_matches_the_package_reference_within_1e_4() {
    let Some(shared) = support::shared() else {
        return;
    };
    if !support::runtime_available() {
        return;
    }
    let package = shared.join("corpus/packages/comfyui_txt2img_sd15");
    let reference: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(package.join("reference.json")).expect("reference"),
    )
    .expect("json");
    let mut runner = Runner::load(&package, &LoadOptions::default()).expect("loads");
    let r = recipe_of(&shared, "comfyui_txt2img_sd15", "reference.json");
    let output = run(&mut runner, r.inputs).expect("runs");
    for (name, shape_key) in [("latent", "latent_shape"), ("image", "image_shape")] {
        let want = Tensor::from_json(&serde_json::json!({
            "dtype": "float32", "shape": reference[shape_key], "data": reference[name],
        }))
        .expect("reference tensor");
        let got = &output.outputs[name];
        let diff = max_abs_diff(got, &want).expect("same shape");
        assert!(diff <= 1e-4, "{name}: max |diff| {diff}");
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
            let mut perms = std::fs::metadata(&target).expect("meta").permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&target, perms).expect("chmod");
        }
    }
}

fn diffusion(shared: &Path) -> Runner {
    Runner::load(
        &shared.join("corpus/packages/diffusion"),
        &LoadOptions::default(),
    )
    .expect("loads")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wfstudio-runner-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn bad_inputs_give_clear_errors() {
    let Some(shared) = support::shared() else {
        return;
    };
    if !support::runtime_available() {
        return;
    }
    let mut runner = diffusion(&shared);
    let base = recipe_of(&shared, "diffusion", "single_prompt12_steps2.json").inputs;

    let mut wrong_dtype = base.clone();
    let noise = &wrong_dtype["request.noise"];
    let as_f64 =
        Tensor::new(noise.shape.clone(), Data::F64(vec![0.0; noise.numel()])).expect("tensor");
    wrong_dtype.insert("request.noise".into(), as_f64);
    let e = run(&mut runner, wrong_dtype).expect_err("wrong dtype");
    assert_eq!(
        e.to_string(),
        "pipeline.workflow.inputs[\"request.noise\"]: input 'request.noise' has dtype float64 but the contract says float32"
    );

    let mut wrong_rank = base.clone();
    wrong_rank.insert(
        "request.noise".into(),
        Tensor::new(vec![64], Data::F32(vec![0.0; 64])).expect("tensor"),
    );
    let e = run(&mut runner, wrong_rank).expect_err("wrong rank");
    assert!(
        e.to_string()
            .contains("has rank 1 (shape [64]) but the contract says rank 4"),
        "{e}"
    );

    let mut missing = base.clone();
    missing.remove("request.noise");
    let e = run(&mut runner, missing).expect_err("missing input");
    assert!(
        e.to_string()
            .contains("required workflow package input 'request.noise' was not supplied"),
        "{e}"
    );

    let mut extra = base.clone();
    extra.insert("request.nonsense".into(), Tensor::scalar_i64(1));
    let e = run(&mut runner, extra).expect_err("undeclared input");
    assert_eq!(
        e.to_string(),
        "supplied undeclared application inputs: request.nonsense"
    );

    let good = run(&mut runner, base).expect("the same runner still runs");
    assert!(good.outputs.contains_key("image"));
}

#[test]
fn broken_packages_are_refused_before_running() {
    let Some(shared) = support::shared() else {
        return;
    };
    if !support::runtime_available() {
        return;
    }
    let dir = scratch("missing");
    copy_dir(&shared.join("corpus/packages/diffusion"), &dir);
    std::fs::remove_file(dir.join("vae_decoder/model.onnx.textproto")).expect("remove");
    match Runner::load(&dir, &LoadOptions::default()) {
        Err(RunError::Invalid { diagnostics, .. }) => {
            assert_eq!(diagnostics.len(), 1);
            assert_eq!(diagnostics[0].code, "V-F1");
            assert!(
                diagnostics[0]
                    .message
                    .contains("vae_decoder/model.onnx.textproto")
            );
        }
        other => panic!("expected a missing-artifact refusal, got {:?}", other.err()),
    }

    let dir = scratch("broken");
    copy_dir(&shared.join("corpus/packages/diffusion"), &dir);
    std::fs::write(
        dir.join("vae_decoder/model.onnx.textproto"),
        "ir_version: 11\ngraph { node { op_type: ",
    )
    .expect("write");
    match Runner::load(&dir, &LoadOptions::default()) {
        Err(RunError::Artifact { path, message }) => {
            assert!(path.ends_with("vae_decoder/model.onnx.textproto"));
            assert!(
                message.starts_with("not a valid ONNX TextFormat model"),
                "{message}"
            );
        }
        other => panic!("expected a broken-artifact refusal, got {:?}", other.err()),
    }

    match Runner::load(
        &shared.join("corpus/packages/speculative"),
        &LoadOptions::default(),
    ) {
        Err(RunError::Unsupported(message)) => {
            assert!(
                message.contains("onnx-genai.grammar-guidance@1"),
                "{message}"
            );
        }
        other => panic!("expected an adapter refusal, got {:?}", other.err()),
    }
}

#[test]
fn events_cancel_and_kept_values() {
    let Some(shared) = support::shared() else {
        return;
    };
    if !support::runtime_available() {
        return;
    }
    let mut runner = diffusion(&shared);
    let inputs = recipe_of(&shared, "diffusion", "single_prompt12_steps2.json").inputs;
    let mut events = Vec::new();
    let cancel = AtomicBool::new(false);
    let output = runner
        .run(
            inputs.clone(),
            RunControl {
                observer: Some(&mut |e| events.push(e)),
                cancel: &cancel,
                keep_bytes: 1 << 20,
                reuse: None,
            },
        )
        .expect("runs");
    assert_eq!(events.first(), Some(&Event::Started));
    assert!(matches!(events.last(), Some(Event::Finished { .. })));
    let iterations: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            Event::LoopIteration {
                index, limit: 2, ..
            } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(iterations, [0, 1]);
    let finished = events
        .iter()
        .filter(|e| matches!(e, Event::InvokeFinished { .. }))
        .count();
    assert_eq!(finished, output.invokes.len());
    assert!(output.ort_time() <= output.wall);
    assert!(!output.kept.is_empty() && !output.kept_truncated);
    assert!(
        output.kept.iter().any(|k| k.iterations == [1]),
        "loop values are kept per iteration"
    );

    let small = runner
        .run(
            inputs.clone(),
            RunControl {
                observer: None,
                cancel: &cancel,
                keep_bytes: 64,
                reuse: None,
            },
        )
        .expect("runs");
    assert!(small.kept_truncated);
    assert!(
        small
            .kept
            .iter()
            .map(|k| k.tensor.numel() * 4)
            .sum::<usize>()
            <= 64
    );

    let cancelled = AtomicBool::new(true);
    let mut seen = Vec::new();
    let e = runner
        .run(
            inputs,
            RunControl {
                observer: Some(&mut |e| seen.push(e)),
                cancel: &cancelled,
                keep_bytes: 0,
                reuse: None,
            },
        )
        .expect_err("cancelled");
    assert!(matches!(e, RunError::Cancelled));
    assert_eq!(seen.last(), Some(&Event::Cancelled));
}

#[test]
fn request_role_inputs_can_come_from_a_generate_request() {
    let Some(shared) = support::shared() else {
        return;
    };
    if !support::runtime_available() {
        return;
    }
    let r = recipe_of(&shared, "decoder", "plain_prompt45_3tokens.json");
    let mut inputs = r.inputs.clone();
    for name in [
        "request.input_ids",
        "request.max_iterations",
        "request.temperature",
        "request.top_k",
        "request.top_p",
        "request.min_p",
        "request.seed",
    ] {
        assert!(
            inputs.remove(name).is_some(),
            "{name} is a request-role input of the recipe"
        );
    }
    let request = wfstudio_runner::Request {
        prompt_tokens: vec![vec![4, 5]],
        max_new_tokens: Some(3),
        seed: Some(7),
        sampling: Some(wfstudio_runner::Sampling::Greedy),
    };
    let mut runner = Runner::load(
        &shared.join("corpus/packages/decoder"),
        &LoadOptions::default(),
    )
    .expect("loads");
    let cancel = AtomicBool::new(false);
    let output = runner
        .run_request(
            inputs.clone(),
            &request,
            RunControl {
                observer: None,
                cancel: &cancel,
                keep_bytes: 0,
                reuse: None,
            },
        )
        .expect("runs from the request");
    assert_eq!(
        recipe::compare(&output.outputs, &r.outputs, r.abs, r.rel),
        Vec::<String>::new()
    );

    let e = run(&mut runner, inputs).expect_err("no request, no prompt");
    assert!(
        e.to_string()
            .contains("required workflow package input 'request.input_ids' was not supplied"),
        "{e}"
    );
}
