//! Lowering helpers shared by the ComfyUI lowering tests.

use serde_json::Value;
use std::path::{Path, PathBuf};
use wfstudio_core::comfyui::lower::{self, Lowered, Target};

/// A pattern fixture (`fixtures/comfyui/patterns/NAME.api.json`).
pub fn pattern(name: &str) -> Value {
    let path = super::fixtures().join(format!("comfyui/patterns/{name}.api.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("JSON")
}

/// Graph `g` changed by `change`.
pub fn changed(mut g: Value, change: impl FnOnce(&mut Value)) -> Value {
    change(&mut g);
    g
}

/// The LoRA target package fixture.
pub fn lora_target() -> Target {
    Target::from_package(&super::fixtures().join("comfyui/lora-target")).expect("target")
}

/// Lowers and checks the document validates with no diagnostics.
pub fn lowered(api: &Value, target: &Target) -> Lowered {
    let lowered = lower::lower_for(api, target).unwrap_or_else(|r| panic!("refused: {r:#?}"));
    super::validated(&lowered.document, "lowered graph");
    lowered
}

/// The lowered document's workflow.
pub fn workflow(l: &Lowered) -> &Value {
    &l.document["pipeline"]["workflow"]
}

/// The empty latent's `[width, height, channels, scale]` (its
/// `latent_row_shape` parameters).
pub fn empty_latent(l: &Lowered) -> [i64; 4] {
    let shape = &workflow(l)["components"]["latent_row_shape"]["contract"]["parameters"];
    ["width", "height", "channels", "scale"].map(|k| shape[k].as_i64().unwrap_or(-1))
}

/// An input's default in the lowered workflow.
pub fn default_of<'a>(l: &'a Lowered, input: &str) -> &'a Value {
    &workflow(l)["inputs"][input]["default"]
}

/// An empty scratch folder for test `name`.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wfstudio-lowering-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch");
    dir
}

/// A path as UTF-8 text (for command lines).
pub fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// Writes `graph` into `root` and imports it as a stand-in package
/// (`root/name`); returns the package folder.
pub fn stand_in_package(root: &Path, name: &str, graph: &Value) -> PathBuf {
    let file = root.join(format!("{name}.json"));
    std::fs::write(&file, graph.to_string()).expect("graph");
    let dir = root.join(name);
    let (code, _, stderr) = super::run_wfstudio(&[
        "import-comfyui",
        s(&file),
        "--package-out",
        s(&dir),
        "--stand-in-models",
    ]);
    assert_eq!(code, 0, "import {name}: {stderr}");
    dir
}

/// Writes `graph` into `root`, imports it as a stand-in package and runs its default
/// recipe; returns the package and output folders.
pub fn package_and_run(root: &Path, name: &str, graph: &Value) -> (PathBuf, PathBuf) {
    let dir = stand_in_package(root, name, graph);
    let out = root.join(format!("{name}-out"));
    let (code, stdout, stderr) = super::run_wfstudio(&["run", s(&dir), "--out", s(&out)]);
    assert_eq!(code, 0, "run {name}: {stdout}{stderr}");
    (dir, out)
}

/// A little-endian float32 `.npy` file: (shape, data).
pub fn npy(path: &Path) -> (Vec<usize>, Vec<f32>) {
    let bytes = std::fs::read(path).expect("npy");
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).expect("header");
    assert!(header.contains("'<f4'"), "{header}");
    let shape_text = header
        .split("'shape': (")
        .nth(1)
        .and_then(|t| t.split(')').next())
        .expect("shape");
    let shape = shape_text
        .split(',')
        .filter(|d| !d.trim().is_empty())
        .map(|d| d.trim().parse().expect("extent"))
        .collect();
    let data = bytes[10 + header_len..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (shape, data)
}

/// The worst `|a - b| / (1 + |b|)` of two equally long vectors.
pub fn worst_relative(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / (1.0 + y.abs()))
        .fold(0.0, f32::max)
}

/// Node, class, input and message of the first refusal.
pub type Expected = (
    &'static str,
    &'static str,
    Option<&'static str>,
    &'static str,
);

/// Asserts `api` is refused first with `expected`, and with a remedy.
pub fn assert_refused(api: &Value, expected: Expected) {
    assert_refused_for(api, &Target::default(), expected);
}

/// Asserts `api`, lowered for `target`, is refused first with `expected`,
/// and with a remedy.
pub fn assert_refused_for(api: &Value, target: &Target, expected: Expected) {
    let refusals = lower::lower_for(api, target).expect_err("refused");
    let r = &refusals[0];
    assert_eq!(
        (
            r.node.as_str(),
            r.class.as_str(),
            r.input.as_deref(),
            r.message.as_str()
        ),
        expected
    );
    assert!(!r.remedy.is_empty());
}

/// The setup steps of workflow `w`'s first loop.
pub fn setup_steps(w: &Value) -> &[Value] {
    w["steps"][0]["setup"].as_array().expect("setup")
}

/// The (component, inputs, outputs) of the first loop's setup steps.
pub fn setup_calls(w: &Value) -> Vec<(String, Value, Value)> {
    w["steps"][0]["setup"]
        .as_array()
        .expect("setup")
        .iter()
        .map(|s| {
            (
                s["component"].as_str().unwrap_or_default().to_string(),
                s["inputs"].clone(),
                s["outputs"].clone(),
            )
        })
        .collect()
}

/// How many top-level steps of workflow `w` invoke `component`.
pub fn invocations(w: &Value, component: &str) -> usize {
    w["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["component"] == component)
        .count()
}

/// A document that runs only `component` (named `name`): each of its
/// input ports a request input of the same name, each output port an
/// output of the same name.
pub fn component_only(name: &str, component: &Value) -> Value {
    let ports = |side: &str| {
        component["ports"][side]
            .as_object()
            .cloned()
            .unwrap_or_default()
    };
    let (ins, outs) = (ports("inputs"), ports("outputs"));
    let inputs: serde_json::Map<String, Value> = ins
        .iter()
        .map(|(port, c)| {
            (port.clone(), serde_json::json!({"contract": c, "role": {"kind": "runtime", "version": "1.0", "role": "media"}, "source": {"kind": "request"}, "required": true}))
        })
        .collect();
    let outputs: serde_json::Map<String, Value> = outs
        .iter()
        .map(|(port, c)| {
            (
                port.clone(),
                serde_json::json!({"contract": c, "role": "tensor", "stage": "pre_adapter"}),
            )
        })
        .collect();
    let binds: serde_json::Map<String, Value> = ins
        .keys()
        .map(|p| (p.clone(), Value::from(p.as_str())))
        .collect();
    let results: serde_json::Map<String, Value> = outs
        .keys()
        .map(|p| (p.clone(), Value::from(format!("out.{p}"))))
        .collect();
    let mut steps = vec![
        serde_json::json!({"kind": "invoke", "component": name, "inputs": binds, "outputs": results}),
    ];
    steps.extend(outs.keys().map(|p| {
        serde_json::json!({"kind": "emit", "value": format!("out.{p}"), "output": p, "mode": "replace"})
    }));
    serde_json::json!({"schema_version": "v1", "pipeline": {"workflow": {
        "manifest": {"capabilities": ["workflow_ssa", "typed_emit"]},
        "inputs": inputs,
        "outputs": outputs,
        "components": {name: component},
        "steps": steps
    }}})
}

/// A float32 tensor of `shape` with values in [-2, 2) that vary with the
/// element and `salt`: (data, its `--input` JSON).
pub fn tensor(shape: [usize; 4], salt: usize) -> (Vec<f32>, String) {
    let data: Vec<f32> = (0..shape.iter().product::<usize>())
        .map(|i| ((i * 37 + salt * 11) % 29) as f32 / 7.0 - 2.0)
        .collect();
    let text = serde_json::json!({"dtype": "float32", "shape": shape, "data": data}).to_string();
    (data, text)
}

/// How far package `dir`'s run (`out/latent.npy`) is from the independent
/// numpy reference (`tests/reference/sampler_reference.py`) run on the same
/// package, which first checks that the package samples with `sampler` on
/// `scheduler`: the worst `|ours - numpy| / (1 + |numpy|)` (the reference's
/// latent must be finite and of the same shape).
pub fn numpy_disagreement(
    python: &Path,
    dir: &Path,
    out: &Path,
    (sampler, scheduler): (&str, &str),
) -> f64 {
    let reference = super::workspace().join("tests/reference/sampler_reference.py");
    let numpy_out = out.with_extension("numpy");
    super::python_stdout(
        python,
        &[s(&reference), s(dir), s(&numpy_out), sampler, scheduler],
    );
    let compare = "import numpy as np, sys\na, b = np.load(sys.argv[1]), np.load(sys.argv[2])\nassert a.shape == b.shape, (a.shape, b.shape)\nassert np.isfinite(b).all()\nprint(float(np.max(np.abs(a - b) / (1 + np.abs(b)))))";
    let (ours, numpy) = (out.join("latent.npy"), numpy_out.join("latent.npy"));
    super::python_stdout(python, &["-c", compare, s(&ours), s(&numpy)])
        .trim()
        .parse()
        .expect("a number")
}

/// Runs policy `component` of the lowered `document` on its own (package
/// folder `root/name`) with `inputs` (port and tensor JSON
/// `{dtype, shape, data}`, passed in a recipe file); returns the output
/// folder, one `.npy` per output port.
pub fn run_policy_alone(
    root: &Path,
    name: &str,
    document: &Value,
    component: &str,
    inputs: &[(&str, String)],
) -> PathBuf {
    let declared = &document["pipeline"]["workflow"]["components"][component];
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("policies")).expect("mkdir");
    let policies = wfstudio_core::comfyui::synth::policies(document).expect("synthesized");
    let (_, bytes) = policies
        .iter()
        .find(|(n, _)| n == component)
        .expect("the policy");
    std::fs::write(dir.join(format!("policies/{component}.onnx")), bytes).expect("write");
    std::fs::write(
        dir.join("inference_metadata.json"),
        component_only(component, declared).to_string(),
    )
    .expect("write");
    let out = dir.join("out");
    // A recipe file: a picture's values outgrow a command line.
    let recipe: serde_json::Map<String, Value> = inputs
        .iter()
        .map(|(port, value)| {
            let value = serde_json::from_str(value).expect("an input's JSON");
            (port.to_string(), value)
        })
        .collect();
    let recipe_file = dir.join("recipe.json");
    let recipe = serde_json::json!({"inputs": recipe}).to_string();
    std::fs::write(&recipe_file, recipe).expect("write");
    let args = [
        "run",
        s(&dir),
        "--recipe",
        s(&recipe_file),
        "--out",
        s(&out),
    ];
    let (code, stdout, stderr) = super::run_wfstudio(&args);
    assert_eq!(code, 0, "{stdout}{stderr}");
    out
}

/// The first refusal of an import's `outcome`, checked to say why and what
/// to do; none where it lowered, after its document validated (`what`
/// names the file in failures).
pub fn first_refusal<'a>(
    outcome: &'a Result<Lowered, Vec<lower::Refusal>>,
    what: &str,
) -> Option<&'a lower::Refusal> {
    match outcome {
        Ok(lowered) => {
            super::validated(&lowered.document, what);
            None
        }
        Err(refusals) => {
            let r = &refusals[0];
            assert!(
                !r.message.is_empty() && !r.remedy.is_empty(),
                "{what}: every refusal says why and what to do"
            );
            Some(r)
        }
    }
}

/// Each denoiser call of the first stage's loop: the value it writes and
/// what it binds to input `port` (`Null` where it binds none).
pub fn denoiser_bindings(w: &Value, port: &str) -> Vec<(String, Value)> {
    w["steps"][0]["steps"]
        .as_array()
        .expect("loop body")
        .iter()
        .filter(|s| s["component"] == "denoiser")
        .map(|s| {
            let out = s["outputs"]["noise_pred"].as_str().unwrap_or_default();
            (out.to_string(), s["inputs"][port].clone())
        })
        .collect()
}

/// The steps of sampling loop `stage`'s body that invoke a component whose
/// name ends in `suffix` (`denoiser` also finds `model2_denoiser`).
pub fn stage_calls<'w>(stage: &'w Value, suffix: &str) -> Vec<&'w Value> {
    stage["steps"]
        .as_array()
        .expect("loop body")
        .iter()
        .filter(|s| s["component"].as_str().is_some_and(|c| c.ends_with(suffix)))
        .collect()
}

/// The top-level sampling loops of workflow `w`, in step order.
pub fn loops(w: &Value) -> Vec<&Value> {
    w["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter(|s| s["kind"] == "loop")
        .collect()
}
