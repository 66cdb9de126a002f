//! UI -> API conversion against the shared corpus: for every
//! `X.ui.json` / `X.api.json` pair (both taken from one image), converting
//! the UI file gives the API file, node for node and input for input.

mod support;

use serde_json::{Value, json};
use std::path::Path;
use wfstudio_core::comfyui::{NodeDefs, read, ui_to_api};

#[test]
fn the_bundled_node_definitions_are_the_compacted_corpus_file() {
    let Some(shared) = support::shared() else {
        return;
    };
    let full: Value = serde_json::from_str(
        &std::fs::read_to_string(shared.join("corpus/comfyui/node_defs.json")).expect("node_defs"),
    )
    .expect("json");
    let mut want = serde_json::to_string_pretty(&wfstudio_core::comfyui::defs::compact(&full))
        .expect("serializes");
    want.push('\n');
    let asset = support::workspace().join("assets/comfyui/node_defs.json");
    if std::env::var("WFSTUDIO_UPDATE_ASSETS").as_deref() == Ok("1") {
        std::fs::write(&asset, &want).expect("write the asset");
    }
    let have = std::fs::read_to_string(&asset).expect("the asset");
    assert!(
        have == want,
        "assets/comfyui/node_defs.json is stale: rerun this test with WFSTUDIO_UPDATE_ASSETS=1"
    );
    // Every class of the corpus file is bundled, with the same facts; the
    // product's own definitions add classes, and replace only those whose
    // inputs grew since: ImageScaleToTotalPixels's `resolution_steps`,
    // ModelSamplingAuraFlow's `sampling`.
    let bundled = NodeDefs::builtin();
    let corpus = defs(&shared);
    let own = NodeDefs::parse(wfstudio_core::comfyui::defs::OWN_JSON).expect("own definitions");
    assert_eq!(corpus.len(), 382);
    assert_eq!(bundled.len(), 382 + own.len() - 2);
    for (class, added) in [
        ("ImageScaleToTotalPixels", "resolution_steps"),
        ("ModelSamplingAuraFlow", "sampling"),
    ] {
        let grown = corpus.class(class).expect("bundled");
        let newer = bundled.class(class).expect("own");
        assert_eq!(
            newer.inputs[..grown.inputs.len()],
            grown.inputs[..],
            "{class}"
        );
        assert_eq!(newer.inputs[grown.inputs.len()].name, added, "{class}");
    }
    for class in [
        "KSampler",
        "CLIPTextEncode",
        "LoadImage",
        "PrimitiveNode",
        "SaveImage",
    ] {
        assert_eq!(bundled.class(class), corpus.class(class), "{class}");
    }
}

fn defs(shared: &Path) -> NodeDefs {
    let text = std::fs::read_to_string(shared.join("corpus/comfyui/node_defs.json"))
        .expect("node_defs.json");
    NodeDefs::parse(&text).expect("valid definitions")
}

/// Node id -> (class_type, inputs): what the backend executes. Titles are
/// not part of it, nor inputs the backend ignores or fills by itself: the
/// backend's `is_changed`, the upload button some frontend versions leak
/// (`upload` / `choose file to upload`), and inputs at their class default
/// (old frontends omit widgets added later). Numbers compare by value.
fn executable(api: &Value, defs: &NodeDefs) -> Vec<(String, Value, Value)> {
    let mut nodes: Vec<(String, Value, Value)> = api
        .as_object()
        .into_iter()
        .flatten()
        .map(|(id, n)| {
            let class = n["class_type"].as_str().unwrap_or_default();
            let def = defs.class(class);
            let inputs: serde_json::Map<String, Value> = n["inputs"]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "is_changed" | "upload" | "choose file to upload"
                    )
                })
                .filter(|(k, v)| {
                    let default = def
                        .and_then(|d| d.inputs.iter().find(|i| &i.name == *k))
                        .and_then(|i| i.default.as_ref());
                    !default.is_some_and(|d| same_number(d, v) || d == *v)
                })
                .map(|(k, v)| (k.clone(), as_number(v)))
                .collect();
            (id.clone(), n["class_type"].clone(), Value::Object(inputs))
        })
        .collect();
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    nodes
}

fn same_number(a: &Value, b: &Value) -> bool {
    matches!((a.as_f64(), b.as_f64()), (Some(x), Some(y)) if x == y)
}

fn as_number(v: &Value) -> Value {
    match v.as_f64() {
        Some(f) if v.is_number() => serde_json::json!(f),
        _ => v.clone(),
    }
}

/// Pairs the corpus documents as disagreeing, with the reason.
const KNOWN_MISMATCHES: &[(&str, &str)] = &[(
    "stable-cascade-inpaint-mismatch",
    "the prompt chunk was captured before the nodes were grouped (COMFYUI.md §2.10)",
)];

#[test]
fn ui_files_convert_to_their_api_pairs() {
    let Some(shared) = support::shared() else {
        return;
    };
    let defs = defs(&shared);
    let dir = shared.join("corpus/comfyui");
    let mut pairs: Vec<String> = std::fs::read_dir(&dir)
        .expect("comfyui folder")
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_suffix(".ui.json")
                .map(str::to_string)
        })
        .filter(|stem| dir.join(format!("{stem}.api.json")).is_file())
        .collect();
    pairs.sort();
    let mut matched = Vec::new();
    let mut failures = Vec::new();
    for stem in &pairs {
        let ui = read(&std::fs::read(dir.join(format!("{stem}.ui.json"))).expect("ui"))
            .expect("readable")
            .ui
            .expect("a UI workflow");
        let api = read(&std::fs::read(dir.join(format!("{stem}.api.json"))).expect("api"))
            .expect("readable")
            .api
            .expect("an API prompt");
        let (graph, _) = ui_to_api(&ui, &defs);
        let got = executable(&wfstudio_core::comfyui::to_api::api_json(&graph), &defs);
        let want = executable(&api, &defs);
        let known = KNOWN_MISMATCHES.iter().any(|(k, _)| k == stem);
        match (got == want, known) {
            (true, false) => matched.push(stem.clone()),
            (true, true) => failures.push(format!(
                "{stem}: listed as a known mismatch but converts exactly"
            )),
            (false, true) => {}
            (false, false) => {
                let diff: Vec<String> = want
                    .iter()
                    .filter(|w| !got.contains(w))
                    .map(|(id, class, inputs)| {
                        let mine = got
                            .iter()
                            .find(|g| &g.0 == id)
                            .map(|g| g.2.to_string())
                            .unwrap_or_else(|| "missing".into());
                        format!("  node {id} {class}: want {inputs}, got {mine}")
                    })
                    .chain(
                        got.iter()
                            .filter(|g| !want.iter().any(|w| w.0 == g.0))
                            .map(|g| format!("  extra node {} {}", g.0, g.1)),
                    )
                    .collect();
                failures.push(format!("{stem}:\n{}", diff.join("\n")));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(matched.len() + KNOWN_MISMATCHES.len(), pairs.len());
    eprintln!(
        "{} of {} pairs convert exactly: {matched:?}",
        matched.len(),
        pairs.len()
    );
}

#[test]
fn png_chunks_are_read_and_bounded() {
    let Some(shared) = support::shared() else {
        return;
    };
    let png = std::fs::read(shared.join("corpus/comfyui/controlnet_example.png")).expect("png");
    let found = read(&png).expect("a graph in the PNG");
    let ui = found.ui.expect("workflow chunk");
    let from_json = read(
        &std::fs::read(shared.join("corpus/comfyui/controlnet_example.workflow.json"))
            .expect("json"),
    )
    .expect("json")
    .ui
    .expect("ui");
    assert_eq!(
        ui, from_json,
        "the PNG's workflow chunk equals the extracted JSON"
    );
    assert!(found.api.is_some(), "the PNG also carries the prompt chunk");

    let mut broken = png[..64].to_vec();
    broken.extend_from_slice(&[0x7f, 0xff, 0xff, 0xff]);
    broken.extend_from_slice(b"tEXt");
    assert!(read(&broken).is_err());
    assert!(
        read(b"{\"hello\": 1}")
            .unwrap_err()
            .0
            .starts_with("not a ComfyUI graph")
    );
}

/// Our txt2img graph embedded by Pillow the way ComfyUI's savers embed it
/// (scripts/gen_fixtures.py): a PNG `tEXt` chunk and a WebP EXIF tag.
#[test]
fn png_and_webp_fixtures_carry_the_api_graph() {
    let dir = support::fixtures().join("comfyui");
    let want: Value =
        serde_json::from_slice(&std::fs::read(dir.join("txt2img-sd15.api.json")).expect("fixture"))
            .expect("json");
    for image in ["txt2img-sd15.png", "txt2img-sd15.webp"] {
        let found = read(&std::fs::read(dir.join(image)).expect("fixture")).expect(image);
        assert_eq!(found.api.as_ref(), Some(&want), "{image}");
        assert_eq!(found.ui, None, "{image} embeds no UI workflow");
    }
}

/// Sets the little-endian size of the RIFF chunk whose FourCC is `kind`.
fn set_webp_chunk_len(webp: &mut [u8], kind: &[u8; 4], len: u32) {
    let at = webp
        .windows(4)
        .position(|w| w == kind)
        .expect("chunk present");
    webp[at + 4..at + 8].copy_from_slice(&len.to_le_bytes());
}

#[test]
fn broken_webp_files_are_refused_with_the_reason() {
    let webp = std::fs::read(support::fixtures().join("comfyui/txt2img-sd15.webp")).expect("webp");
    let refusal = |bytes: &[u8]| read(bytes).expect_err("refused").0;

    let mut oversized = webp.clone();
    set_webp_chunk_len(&mut oversized, b"EXIF", 0x7fff_fff0);
    assert_eq!(refusal(&oversized), "truncated WebP chunk");

    let mut huge = webp.clone();
    let exif_at = huge.windows(4).position(|w| w == b"EXIF").expect("EXIF");
    huge.truncate(exif_at + 8);
    huge.resize(exif_at + 8 + (32 << 20) + 2, 0);
    set_webp_chunk_len(&mut huge, b"EXIF", (32 << 20) + 2);
    assert_eq!(
        refusal(&huge),
        "a WebP EXIF chunk of 33554434 bytes exceeds the 33554432-byte limit"
    );

    let mut garbage = webp.clone();
    garbage[exif_at + 8..exif_at + 12].copy_from_slice(b"JUNK");
    assert!(
        refusal(&garbage).starts_with("the WebP EXIF chunk is not valid TIFF"),
        "{}",
        refusal(&garbage)
    );

    let mut no_exif = webp[..exif_at].to_vec();
    let riff_len = (no_exif.len() - 8) as u32;
    no_exif[4..8].copy_from_slice(&riff_len.to_le_bytes());
    assert_eq!(
        refusal(&no_exif),
        "the WebP carries no `prompt` or `workflow` graph"
    );
}

#[test]
fn import_comfyui_emit_api_prints_the_api_prompt() {
    let Some(shared) = support::shared() else {
        return;
    };
    let dir = shared.join("corpus/comfyui");
    let out = std::process::Command::new(support::wfstudio())
        .args(["import-comfyui", "--emit-api", "--node-defs"])
        .arg(dir.join("node_defs.json"))
        .arg(dir.join("sd15-lora.ui.json"))
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let emitted: Value = serde_json::from_slice(&out.stdout).expect("json");
    let api: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("sd15-lora.api.json")).expect("api"),
    )
    .expect("json");
    let defs = defs(&shared);
    assert_eq!(executable(&emitted, &defs), executable(&api, &defs));
    assert_eq!(
        emitted["3"]["inputs"]["cfg"],
        serde_json::json!(8.0),
        "FLOAT widgets print as floats"
    );
    let keys: Vec<&String> = emitted["3"]["inputs"]
        .as_object()
        .expect("inputs")
        .keys()
        .collect();
    assert_eq!(
        keys,
        [
            "seed",
            "steps",
            "cfg",
            "sampler_name",
            "scheduler",
            "denoise",
            "model",
            "positive",
            "negative",
            "latent_image"
        ]
    );

    // The bundled definitions convert it with no flag or variable. Into a
    // new package the LoRA is merged into the models it will get; into a
    // package that has models but no adapters it cannot be, and is refused.
    let out = std::process::Command::new(support::wfstudio())
        .args(["import-comfyui", "--emit-api"])
        .env_remove("WFSTUDIO_NODE_DEFS")
        .arg(dir.join("sd15-lora.ui.json"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let offline: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(offline, emitted);
    let import = |target: Option<&Path>| {
        let mut command = std::process::Command::new(support::wfstudio());
        command
            .arg("import-comfyui")
            .env_remove("WFSTUDIO_NODE_DEFS");
        if let Some(target) = target {
            command.arg("--models").arg(target);
        }
        command
            .arg(dir.join("sd15-lora.ui.json"))
            .output()
            .expect("runs")
    };
    let out = import(None);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "note: `denoiser` and `text_encoder` are node 4's weights with LoRA 'epiNoiseoffset_v2.safetensors' (node 10) at strength 1 (1 on the text encoder): export them with these merged"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = import(Some(&shared.join("corpus/packages/comfyui_txt2img_sd15")));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(
            "error[C001]: 10.inputs.lora_name: node 10 (LoraLoader) input `lora_name` loads LoRA 'epiNoiseoffset_v2.safetensors', but the target package declares no adapters"
        ),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn copy_components(from: &Path, to: &Path) {
    for folder in ["denoiser", "policies", "text_encoder", "vae_decoder"] {
        let target = to.join(folder);
        std::fs::create_dir_all(&target).expect("mkdir");
        for entry in std::fs::read_dir(from.join(folder)).expect("folder") {
            let entry = entry.expect("entry");
            std::fs::write(
                target.join(entry.file_name()),
                std::fs::read(entry.path()).expect("read"),
            )
            .expect("write");
        }
    }
}

#[test]
fn txt2img_lowers_validates_and_reproduces_the_reference() {
    let Some(shared) = support::shared() else {
        return;
    };
    let package = shared.join("corpus/packages/comfyui_txt2img_sd15");
    // Lowered for its package, so the components keep the package's paths.
    let api = read(&std::fs::read(package.join("workflow.json")).expect("file"))
        .expect("graph")
        .api
        .expect("an API graph");
    let target = wfstudio_core::comfyui::lower::Target::from_package(&package).expect("target");
    let lowered = wfstudio_core::comfyui::lower::lower_for(&api, &target).expect("lowers");
    assert_eq!(
        lowered.prompts,
        [
            (
                "request.input_ids".to_string(),
                "a photograph of a red fox in snow".to_string()
            ),
            (
                "request.negative_input_ids".to_string(),
                "blurry, low quality".to_string()
            )
        ]
    );
    assert!(lowered.ignored.is_empty());
    let loaded = support::validated(&lowered.document, "txt2img");
    let inputs = &loaded
        .document
        .pipeline
        .as_ref()
        .expect("pipeline")
        .workflow
        .inputs
        .as_ref()
        .expect("inputs");
    let default = |name: &str| serde_json::to_value(&inputs[name].default).expect("json");
    assert_eq!(
        default("request.seed"),
        serde_json::json!(20260821),
        "run parameters are inputs with the graph's values"
    );
    assert_eq!(default("request.max_iterations"), serde_json::json!(4));
    assert_eq!(default("request.guidance_scale"), serde_json::json!(7.5));

    if !support::runtime_available() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("wfstudio-lowered-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_components(&package, &dir);
    let yaml = wfstudio_schema::emit::to_yaml(&lowered.document);
    std::fs::write(dir.join("inference_metadata.yaml"), yaml).expect("write");
    let mut runner = wfstudio_runner::Runner::load(&dir, &wfstudio_runner::LoadOptions::default())
        .expect("loads");
    let reference: Value = serde_json::from_str(
        &std::fs::read_to_string(package.join("reference.json")).expect("reference"),
    )
    .expect("json");
    let tokens = |key: &str| {
        let ids: Vec<Value> = reference[key].as_array().expect("tokens").clone();
        wfstudio_runner::Tensor::from_json(
            &serde_json::json!({"dtype": "int64", "shape": [1, ids.len()], "data": ids}),
        )
        .expect("tensor")
    };
    let inputs = std::collections::HashMap::from([
        ("request.input_ids".to_string(), tokens("prompt_tokens")),
        (
            "request.negative_input_ids".to_string(),
            tokens("negative_tokens"),
        ),
    ]);
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let output = runner
        .run(
            inputs,
            wfstudio_runner::RunControl {
                observer: None,
                cancel: &cancel,
                keep_bytes: 0,
                reuse: None,
            },
        )
        .expect("runs");
    for (name, shape_key) in [("latent", "latent_shape"), ("image", "image_shape")] {
        let want = wfstudio_runner::Tensor::from_json(&serde_json::json!({"dtype": "float32", "shape": reference[shape_key], "data": reference[name]})).expect("tensor");
        let diff = wfstudio_runner::recipe::max_abs_diff(&output.outputs[name], &want)
            .expect("same shape");
        assert!(diff <= 1e-4, "{name}: max |diff| {diff}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unsupported_graphs_are_refused_with_node_class_input_and_remedy() {
    let Some(shared) = support::shared() else {
        return;
    };
    let path = shared.join("corpus/packages/comfyui_txt2img_sd15/workflow.json");
    let api = read(&std::fs::read(&path).expect("file"))
        .expect("graph")
        .api
        .expect("api");
    let refused = |edit: &dyn Fn(&mut Value)| {
        let mut graph = api.clone();
        edit(&mut graph);
        let refusals = wfstudio_core::comfyui::lower::lower(&graph).expect_err("refused");
        let r = &refusals[0];
        (
            r.node.clone(),
            r.class.clone(),
            r.input.clone(),
            r.message.clone(),
            r.remedy.clone(),
        )
    };
    let (node, class, input, message, remedy) =
        refused(&|g| g["3"]["inputs"]["sampler_name"] = serde_json::json!("euler_dy"));
    assert_eq!(
        (node.as_str(), class.as_str(), input.as_deref()),
        ("3", "KSampler", Some("sampler_name"))
    );
    assert_eq!(
        message,
        "uses sampler 'euler_dy', which is not one of ComfyUI's core samplers (a custom node adds it)"
    );
    assert_eq!(
        remedy,
        format!(
            "choose one of: {}",
            wfstudio_core::comfyui::lower::sampler_names().join(", ")
        )
    );
    let (_, _, input, message, _) =
        refused(&|g| g["3"]["inputs"]["denoise"] = serde_json::json!(0.0));
    assert_eq!(input.as_deref(), Some("denoise"));
    assert_eq!(message, "has denoise 0, which leaves no step of 4 to run");
    let (node, class, _, message, _) =
        refused(&|g| g["6"]["class_type"] = serde_json::json!("MyCustomTextEncoder"));
    assert_eq!(
        (node.as_str(), class.as_str()),
        ("6", "MyCustomTextEncoder")
    );
    assert!(message.contains("feeds `positive` of node 3"), "{message}");
    // A second sink of the same decode is a second output, decoded once.
    let mut previewed = api.clone();
    previewed["10"] =
        serde_json::json!({"class_type": "PreviewImage", "inputs": {"images": ["8", 0]}});
    let lowered = wfstudio_core::comfyui::lower::lower(&previewed).expect("lowers");
    let wf = &lowered.document["pipeline"]["workflow"];
    let outputs: Vec<&String> = wf["outputs"].as_object().expect("outputs").keys().collect();
    assert_eq!(outputs, ["onnx_genai", "image", "latent"]);
    assert_eq!(support::lowering::invocations(wf, "vae_decoder"), 1);

    let out = std::process::Command::new(support::wfstudio())
        .arg("import-comfyui")
        .arg("--models")
        .arg(shared.join("corpus/packages/comfyui_txt2img_sd15"))
        .arg(shared.join("corpus/comfyui/sd15-lora.api.json"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(": error[C001]: ") && stdout.contains("\n    help: "),
        "{stdout}"
    );
}

/// The outcome of importing one corpus file: `lowered` (and the document
/// validates) or `refused: <node> <class>` of the first refusal.
fn outcome(path: &Path, defs: &NodeDefs) -> String {
    let found = read(&std::fs::read(path).expect("file")).expect("a ComfyUI graph");
    let api = match (found.ui, found.api) {
        (Some(ui), _) => wfstudio_core::comfyui::to_api::api_json(&ui_to_api(&ui, defs).0),
        (None, Some(api)) => api,
        (None, None) => unreachable!("read returns a graph"),
    };
    let lowered = wfstudio_core::comfyui::lower::lower(&api);
    match support::lowering::first_refusal(&lowered, &path.display().to_string()) {
        None => "lowered".into(),
        Some(r) if r.node.is_empty() => format!(
            "refused: <graph> {}",
            r.message.split(';').next().unwrap_or_default()
        ),
        Some(r) => format!("refused: {} {}", r.node, r.class),
    }
}

#[test]
fn every_corpus_graph_lowers_and_validates_or_is_refused_by_name() {
    let Some(shared) = support::shared() else {
        return;
    };
    let defs = defs(&shared);
    let table = std::fs::read_to_string(support::fixtures().join("comfyui/corpus_outcomes.tsv"))
        .expect("table");
    let expected: Vec<(String, String)> = table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (file, outcome) = l.split_once('\t').expect("two columns");
            (file.to_string(), outcome.to_string())
        })
        .collect();
    let dir = shared.join("corpus/comfyui");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("folder")
        .filter_map(|e| e.ok()?.file_name().to_str().map(str::to_string))
        .filter(|n| (n.ends_with(".json") || n.ends_with(".png")) && n != "node_defs.json")
        .collect();
    files.sort();
    let listed: Vec<String> = {
        let mut l: Vec<String> = expected.iter().map(|(f, _)| f.clone()).collect();
        l.sort();
        l
    };
    assert_eq!(files, listed, "every corpus graph is listed once");
    let mut mismatches = Vec::new();
    for (file, want) in &expected {
        let got = outcome(&dir.join(file), &defs);
        if &got != want {
            mismatches.push(format!("{file}\t{got}\t(expected {want})"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Inputs the fuzzer found crashing the readers or the conversion
/// (`fixtures/comfyui/fuzz/`, see docs/RELIABILITY.md) now convert or are
/// refused, as the fuzz target drives them.
#[test]
fn fuzz_findings_convert_without_a_panic() {
    let dir = support::workspace().join("fixtures/comfyui/fuzz");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("fuzz fixtures") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("fixture");
        let found = read(&bytes).expect("a ComfyUI file");
        let ui = found.ui.expect("a UI workflow");
        let (graph, _) = ui_to_api(&ui, &NodeDefs::default());
        let api = wfstudio_core::comfyui::to_api::api_json(&graph);
        let _ = wfstudio_core::comfyui::lower::lower(&api);
        seen += 1;
        if path.ends_with("legacy-group-malformed-inner.json") {
            // The malformed inner node is left out; the other one is kept,
            // bypassed with its group, its malformed input left alone.
            let flat = wfstudio_core::comfyui::subgraph::flatten(&ui);
            let nodes = flat["nodes"].as_array().expect("nodes");
            let inner = nodes
                .iter()
                .find(|n| n["id"] == "7:1")
                .expect("inner node 1");
            assert_eq!(inner["mode"], 4);
            assert_eq!(inner["inputs"][0], json!(["model"]));
            assert!(!nodes.iter().any(|n| n["id"] == "7:0"));
        }
    }
    assert_eq!(seen, 1);
}

/// KJNodes' `SetNode`/`GetNode` pairs only route links: the default
/// workflow with its model wired through a named pair (and a second,
/// unrelated pair) converts to the same API graph.
#[test]
fn set_and_get_nodes_route_links_by_name() {
    let Some(shared) = support::shared() else {
        return;
    };
    let defs = defs(&shared);
    let text = std::fs::read(shared.join("corpus/comfyui/tpl-default.ui.json")).expect("ui");
    let ui = read(&text).expect("readable").ui.expect("a UI workflow");
    let convert = |ui: &Value| {
        let (graph, issues) = ui_to_api(ui, &defs);
        assert!(issues.is_empty(), "{issues:?}");
        wfstudio_core::comfyui::to_api::api_json(&graph)
    };
    let mut routed = ui.clone();
    // Link 1 runs from the checkpoint loader (4) to the KSampler's model (3).
    routed["links"][0] = json!([1, 4, 0, 100, 0, "MODEL"]);
    routed["links"].as_array_mut().expect("links").extend([
        json!([50, 101, 0, 3, 0, "MODEL"]),
        json!([51, 4, 0, 102, 0, "MODEL"]),
    ]);
    let ksampler = routed["nodes"]
        .as_array_mut()
        .expect("nodes")
        .iter_mut()
        .find(|n| n["id"] == 3)
        .expect("KSampler");
    ksampler["inputs"][0]["link"] = json!(50);
    let setter = |id: i64, name: &str, link: i64| json!({"id": id, "type": "SetNode", "mode": 0, "inputs": [{"name": "MODEL", "type": "MODEL", "link": link}], "outputs": [], "widgets_values": [name]});
    routed["nodes"].as_array_mut().expect("nodes").extend([
        setter(100, "model", 1),
        json!({"id": 101, "type": "GetNode", "mode": 0, "inputs": [], "outputs": [{"name": "MODEL", "type": "MODEL", "links": [50]}], "widgets_values": ["model"]}),
        setter(102, "unused", 51),
    ]);
    assert_eq!(convert(&routed), convert(&ui));
    // A GetNode whose name no SetNode carries leaves the input unwired.
    let mut dangling = routed.clone();
    let setter_at = dangling["nodes"].as_array().expect("nodes").len() - 3;
    dangling["nodes"][setter_at]["widgets_values"] = json!(["renamed"]);
    let api = {
        let (graph, _) = ui_to_api(&dangling, &defs);
        wfstudio_core::comfyui::to_api::api_json(&graph)
    };
    assert!(api["3"]["inputs"].get("model").is_none(), "{}", api["3"]);
    // Our own small graph routed the same way (a seed of the `comfyui`
    // fuzz target): the KSampler takes the loader's model, and it lowers.
    let text = std::fs::read(support::fixtures().join("comfyui/set-get-nodes.ui.json"))
        .expect("the fixture");
    let api = convert(&read(&text).expect("readable").ui.expect("a UI workflow"));
    assert_eq!(api["3"]["inputs"]["model"], json!(["4", 0]), "{api:#}");
    assert!(
        api.get("100").is_none() && api.get("101").is_none(),
        "{api:#}"
    );
    wfstudio_core::comfyui::lower::lower(&api).expect("lowers");
}
