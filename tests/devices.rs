//! Execution providers without a GPU: the `nxrt-ep-cpu` plugin and the
//! WebGPU plugin that the set-up installs (the first offers a CPU device,
//! the second none on a machine without a GPU), a library that is not a
//! plugin, packages run on the plugin against the built-in CPU provider
//! with where each node ran, and the set-up's GPU detection in its dry run.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{run_wfstudio, runtime_available, workspace};

/// The installed plugin packages' folder, if the set-up installed them;
/// under `CI=true` it must have.
fn plugins() -> Option<PathBuf> {
    let found = std::fs::read_dir(workspace().join(".venv/lib"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join("site-packages"))
        .find(|packages| packages.join("nxrt_ep_cpu").is_dir());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the plugin EPs are missing under CI (scripts/setup.sh installs them)"
        );
        eprintln!("skipping: no plugin EPs installed (scripts/setup.sh installs them)");
    }
    found.filter(|_| runtime_available())
}

fn json_of(args: &[&str]) -> Value {
    let (code, stdout, stderr) = run_wfstudio(args);
    assert_eq!(code, 0, "{args:?}: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}"))
}

#[test]
fn devices_lists_the_plugins_and_refuses_a_library_that_is_not_one() {
    let Some(packages) = plugins() else { return };
    let not_a_plugin = packages.join("onnxruntime/capi/libonnxruntime_providers_shared.so");
    let spec = format!("bogus={}", not_a_plugin.display());
    let listed = json_of(&["devices", "--format", "json", "--ep-library", &spec]);
    let devices = listed["devices"].as_array().expect("devices");
    assert!(
        devices.contains(&json!({"device": "cpu", "ep": "CPUExecutionProvider",
        "index": 0, "ep_vendor": "Microsoft", "type": "CPU",
        "vendor": devices[0]["vendor"]}))
    );
    let plugin = devices
        .iter()
        .find(|d| d["ep"] == "cpu_ep")
        .expect("the nxrt-ep-cpu device");
    assert_eq!(
        (&plugin["device"], &plugin["ep_vendor"], &plugin["type"]),
        (&json!("cpu_ep:0"), &json!("nxrt"), &json!("CPU"))
    );
    let library = |name: &str| {
        listed["libraries"]
            .as_array()
            .and_then(|l| l.iter().find(|l| l["name"] == name))
            .unwrap_or_else(|| panic!("library {name}: {listed}"))
            .clone()
    };
    assert_eq!(library("nxrt_ep_cpu")["devices"], json!(["cpu_ep:0"]));
    assert_eq!(
        library("onnxruntime_ep_webgpu")["devices"],
        json!([]),
        "WebGPU registers and offers no device without a GPU"
    );
    assert_eq!(
        library("bogus")["error"],
        json!(format!(
            "plugin EP library bogus ({}) is not an execution provider library (it exports no \
             CreateEpFactories)",
            not_a_plugin.display()
        ))
    );
    let (code, stdout, _) = run_wfstudio(&["devices"]);
    assert_eq!(code, 0);
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("plugin onnxruntime_ep_webgpu (")
                && l.ends_with("): registered, but it offers no device on this machine")),
        "{stdout}"
    );
    let (code, _, stderr) = run_wfstudio(&["devices", "--ep-library", "x=/no/such/lib.so"]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr.trim(),
        "wfstudio: plugin EP library x (/no/such/lib.so) is not a file"
    );
    let (code, _, stderr) =
        run_wfstudio(&["run", "fixtures/examples/tiny-tone", "--device", "cpu_ep:3"]);
    assert_eq!(code, 1);
    assert_eq!(
        stderr.trim(),
        "wfstudio: cpu_ep offers 1 device(s) (0 to 0), not 3"
    );
}

/// Every element of `a` within a relative 1e-4 of `b`'s (absolute 1e-5
/// near zero).
fn assert_close(a: &Value, b: &Value, what: &str) {
    assert_eq!(a["shape"], b["shape"], "{what}");
    let (a, b) = (
        a["data"].as_array().expect("data"),
        b["data"].as_array().expect("data"),
    );
    assert_eq!(a.len(), b.len(), "{what}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
        assert!(
            (x - y).abs() <= 1e-5 + 1e-4 * y.abs(),
            "{what}[{i}]: {x} on the plugin, {y} on the built-in CPU"
        );
    }
}

#[test]
fn packages_run_on_the_plugin_as_on_the_built_in_cpu_and_say_where_nodes_ran() {
    if plugins().is_none() {
        return;
    }
    let mut packages: Vec<(PathBuf, PathBuf)> = [
        ("tiny-denoise", "smiley"),
        ("tiny-tone", "scale"),
        ("tiny-words", "hello"),
    ]
    .iter()
    .map(|(p, r)| {
        let dir = Path::new("fixtures/examples").join(p);
        (dir.clone(), dir.join("recipes").join(format!("{r}.json")))
    })
    .collect();
    if let Some(shared) = support::shared() {
        packages.push((
            shared.join("corpus/packages/comfyui_txt2img_sd15"),
            shared.join("corpus/expected/comfyui_txt2img_sd15/seed5_guidance7p5_steps2.json"),
        ));
    }
    let mut placements = serde_json::Map::new();
    for (package, recipe) in &packages {
        let run = |device: &str| {
            json_of(&[
                "run",
                &package.to_string_lossy(),
                "--recipe",
                &recipe.to_string_lossy(),
                "--device",
                device,
                "--format",
                "json",
            ])
        };
        let (plugin, builtin) = (run("cpu_ep:0"), run("cpu"));
        for (key, value) in builtin["outputs"].as_object().expect("outputs") {
            assert_close(
                &plugin["outputs"][key],
                value,
                &format!("{package:?} {key}"),
            );
        }
        for (component, placed) in builtin["placement"].as_object().expect("placement") {
            assert_eq!(placed["fallbacks"], 0, "the built-in CPU runs {component}");
        }
        placements.insert(
            package
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            plugin["placement"].clone(),
        );
    }
    // The plugin runs the nodes it has kernels for; a model with an operator
    // it lacks shows its fallback count.
    let placed = |package: &str, component: &str| {
        let p = &placements[package][component];
        (p["ep"].clone(), p["nodes"].clone(), p["fallbacks"].clone())
    };
    assert_eq!(
        placed("tiny-denoise", "denoiser"),
        (json!("cpu_ep"), json!({"cpu_ep": 3}), json!(0))
    );
    assert_eq!(
        placed("tiny-denoise", "decoder"),
        (
            json!("cpu_ep"),
            json!({"CPUExecutionProvider": 3}),
            json!(3)
        )
    );
    assert_eq!(
        placed("tiny-tone", "synth"),
        (json!("cpu_ep"), json!({"cpu_ep": 10}), json!(0))
    );
    assert_eq!(
        placed("tiny-words", "next_word"),
        (
            json!("cpu_ep"),
            json!({"CPUExecutionProvider": 5}),
            json!(5)
        )
    );
    if placements.contains_key("comfyui_txt2img_sd15") {
        assert_eq!(
            placed("comfyui_txt2img_sd15", "latent_noise"),
            (json!("cpu_ep"), json!({"cpu_ep": 17}), json!(0))
        );
    }
}

/// Runs `scripts/runtime.sh --dry-run` with only `tools` on `PATH` and the
/// driver's GPU folder at `proc`.
fn dry_run(tools: &Path, proc: &Path) -> String {
    let out = std::process::Command::new("bash")
        .arg(workspace().join("scripts/runtime.sh"))
        .arg("--dry-run")
        .env("PATH", tools)
        .env("WFSTUDIO_NVIDIA_PROC", proc)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

#[test]
fn the_set_up_installs_the_gpu_runtime_only_where_there_is_a_gpu() {
    let root = std::env::temp_dir().join(format!("wfstudio-runtime-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (tools, proc) = (root.join("bin"), root.join("proc"));
    std::fs::create_dir_all(&tools).expect("tools");
    std::fs::create_dir_all(&proc).expect("proc");
    for tool in ["bash", "grep", "head", "ls", "sed", "dirname"] {
        let found = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("{tool} is installed"));
        std::os::unix::fs::symlink(found, tools.join(tool)).expect("link");
    }
    let cpu = dry_run(&tools, &proc);
    assert_eq!(
        cpu.lines().collect::<Vec<_>>(),
        [
            format!(
                "runtime: no NVIDIA GPU found (no nvidia-smi listing one, nothing in {}): the \
                 studio runs on CPU (onnxruntime 1.31.1)",
                proc.display()
            )
            .as_str(),
            "would install: onnxruntime==1.31.1",
            "would install from scripts/ep_plugins.txt: nxrt-ep-cpu==0.1.0.dev6 onnxruntime-ep-webgpu==0.4.0",
            "would keep in .cache/gpu-check: nxrt-ep-cuda==0.1.0.dev6",
        ]
    );
    // A fake nvidia-smi that lists a GPU.
    let smi = tools.join("nvidia-smi");
    std::fs::write(&smi, "#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-0)'\n").expect("smi");
    std::fs::set_permissions(&smi, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let gpu = dry_run(&tools, &proc);
    let lines: Vec<&str> = gpu.lines().collect();
    assert_eq!(
        lines[0],
        "runtime: found GPU 0: NVIDIA H200 (UUID: GPU-0): the studio runs on the GPU \
         (onnxruntime-gpu 1.31.1, CUDA 13, cuDNN; CUDA plugin EP)"
    );
    assert_eq!(lines[1], "would remove: onnxruntime (the CPU runtime)");
    assert!(
        lines[2].starts_with("would install from scripts/gpu_runtime.txt: ")
            && lines[2].contains(" onnxruntime-gpu==1.31.1 ")
            && lines[2].contains(" nvidia-cuda-runtime==13."),
        "{}",
        lines[2]
    );
    assert_eq!(
        lines[3],
        "would install from scripts/ep_plugins_gpu.txt: nxrt-ep-cuda==0.1.0.dev6"
    );
    // The driver's folder alone is enough.
    std::fs::remove_file(&smi).expect("rm");
    std::fs::create_dir_all(proc.join("0000:01:00.0")).expect("gpu folder");
    let by_proc = dry_run(&tools, &proc);
    assert!(
        by_proc.starts_with(&format!(
            "runtime: found an NVIDIA GPU ({}/0000:01:00.0): the studio runs on the GPU",
            proc.display()
        )),
        "{by_proc}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// The prepared GPU check (`scripts/test.sh` prepares it in
/// `target/gpu-check`) fits its 64 MiB budget with the tracked files, and
/// its `run` works end to end with the CPU plugin standing in for CUDA:
/// every package on the plugin and on CPU, outputs compared, one table.
#[test]
fn the_prepared_gpu_check_fits_its_budget_and_runs_on_a_plugin() {
    let Some(packages) = plugins() else { return };
    let dir = workspace().join("target/gpu-check");
    let Ok(manifest) = std::fs::read_to_string(dir.join("MANIFEST.txt")) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "scripts/test.sh prepares target/gpu-check under CI"
        );
        eprintln!("skipping: run scripts/gpu-check.sh prepare target/gpu-check first");
        return;
    };
    let size = manifest
        .lines()
        .find_map(|l| l.strip_prefix("size: "))
        .expect("the size line");
    let total: u64 = size
        .split(" = ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .expect("a total");
    assert!(total <= 64 << 20, "{size}");
    for needed in [
        "wfstudio.xz",
        "lib/libasound.so.2",
        "wheels/nxrt_ep_cuda-",
        "wheels/adaptive_terrain_diffusion-",
    ] {
        assert!(manifest.contains(needed), "{needed} in {manifest}");
    }
    let runtime = std::fs::read_dir(packages.join("onnxruntime/capi"))
        .expect("onnxruntime")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libonnxruntime.so."))
        })
        .expect("libonnxruntime");
    let plugin = std::fs::read_dir(packages.join("nxrt_ep_cpu"))
        .expect("plugin")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "so"))
        .expect("the plugin library");
    let out = std::process::Command::new("bash")
        .arg(workspace().join("scripts/gpu-check.sh"))
        .args(["run", &dir.to_string_lossy(), "--ep-library"])
        .arg(format!("nxrt_ep_cpu={}", plugin.display()))
        .env("ORT_DYLIB_PATH", runtime)
        .output()
        .expect("bash runs");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    for package in [
        "tiny-denoise",
        "tiny-tone",
        "tiny-words",
        "terrain-diffusion",
    ] {
        let on_plugin = rows
            .iter()
            .find(|r| r[0] == package && r[1] == "cpu_ep:0")
            .unwrap_or_else(|| panic!("{package} in {table}"));
        assert_eq!(on_plugin[6..9], ["same", "within", "1e-3"], "{table}");
        // The CPU plugin's memory is the host's: nothing to copy.
        assert_eq!(on_plugin[5], "0/0", "{table}");
    }
    let fallbacks = |package: &str| {
        rows.iter()
            .find(|r| r[0] == package && r[1] == "cpu_ep:0")
            .map(|r| r[2].to_string())
    };
    assert_eq!(fallbacks("tiny-denoise").as_deref(), Some("3"));
    assert_eq!(fallbacks("tiny-tone").as_deref(), Some("0"));
}
