//! ComfyUI lowering refusals (each names node, class, input and a remedy),
//! graph identity, layouts, and robustness: no input value or UI field
//! value makes the import panic.

mod support;

use serde_json::{Value, json};
use support::lowering::{Expected, assert_refused_for, lora_target, lowered, pattern, workflow};
use wfstudio_core::comfyui::lower::{self, Target};

fn edited(name: &str, edit: impl Fn(&mut Value)) -> Value {
    let mut api = pattern(name);
    edit(&mut api);
    api
}

#[test]
fn every_refusal_names_the_node_class_input_and_a_remedy() {
    let none = Target::default();
    let cases: Vec<(Value, Target, Expected)> = vec![
        (
            edited("controlnet", |g| {
                g["20"] = json!({"class_type": "ControlNetApply", "inputs": {"conditioning": ["2", 0], "control_net": ["9", 0], "image": ["10", 0], "strength": 0.5}});
                g["11"]["inputs"]["positive"] = json!(["20", 0]);
            }),
            none.clone(),
            (
                "20",
                "ControlNetApply",
                None,
                "is chained behind ControlNet node 11; only a single ControlNet is supported",
            ),
        ),
        (
            edited("controlnet-positive", |g| {
                g["20"] = json!({"class_type": "ImageBlur", "inputs": {"image": ["10", 0], "blur_radius": 3, "sigma": 1.0}});
                g["11"]["inputs"]["image"] = json!(["20", 0]);
            }),
            none.clone(),
            (
                "20",
                "ImageBlur",
                None,
                "feeds `image` of node 11 as its image, which the importer supports only from VAEDecode, VAEDecodeTiled or LoadImage",
            ),
        ),
        (
            edited("controlnet-positive", |g| {
                g["21"] = json!({"class_type": "ControlNetApply", "inputs": {"conditioning": ["3", 0], "control_net": ["9", 0], "image": ["10", 0], "strength": 0.5}});
                g["5"]["inputs"]["negative"] = json!(["21", 0]);
            }),
            none.clone(),
            (
                "21",
                "ControlNetApply",
                None,
                "is a second ControlNet application; only a single ControlNet is supported",
            ),
        ),
        (
            pattern("lora"),
            // A package with models of its own and no adapters: the LoRA
            // can neither be merged nor routed.
            Target {
                existing: true,
                ..Target::default()
            },
            (
                "12",
                "LoraLoader",
                Some("lora_name"),
                "loads LoRA 'styles/watercolor.safetensors', but the target package declares no adapters",
            ),
        ),
        (
            edited("lora", |g| {
                g["12"]["inputs"]["lora_name"] = json!("ink.safetensors")
            }),
            lora_target(),
            (
                "12",
                "LoraLoader",
                Some("lora_name"),
                "loads LoRA 'ink.safetensors', which the target package does not declare (it declares: watercolor)",
            ),
        ),
        (
            edited(
                "sdxl",
                |g| g["3"] = json!({"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["1", 1]}}),
            ),
            none.clone(),
            (
                "3",
                "CLIPTextEncode",
                None,
                "mixes CLIPTextEncode and CLIPTextEncodeSDXL between the positive and negative prompt; the two need the same encoders",
            ),
        ),
        (
            edited("img2img", |g| g["4"]["class_type"] = json!("MyLatentNoise")),
            none.clone(),
            (
                "4",
                "MyLatentNoise",
                None,
                "feeds `latent_image` of node 5 as its latent_image, which the importer supports only from EmptyLatentImage, EmptySD3LatentImage, EmptyFlux2LatentImage, EmptyChromaRadianceLatentImage, EmptyHunyuanLatentVideo, EmptyHunyuanVideo15Latent, EmptyMochiLatentVideo, EmptyCosmosLatentVideo, EmptyLTXVLatentVideo, Wan22ImageToVideoLatent, VAEEncode, VAEEncodeForInpaint, SetLatentNoiseMask, LatentComposite, InstructPixToPixConditioning or InpaintModelConditioning",
            ),
        ),
        (
            edited("flow-sd3", |g| {
                g["5"]["inputs"]["model"] = json!(["12", 0]);
                g.as_object_mut().map(|m| m.remove("13"));
                // A checkpoint's own text encoder has no type to tell.
                g["12"] = json!({"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd3_medium_incl_clips.safetensors"}});
                g["2"]["inputs"]["clip"] = json!(["12", 1]);
                g["3"]["inputs"]["clip"] = json!(["12", 1]);
                g.as_object_mut().map(|m| m.remove("14"));
            }),
            none.clone(),
            (
                "5",
                "KSampler",
                Some("model"),
                "samples an EmptySD3LatentImage latent with the model's own sampling, which the graph does not state: the models that take it sample by flow matching with a shift of their own",
            ),
        ),
        (
            edited("img2img", |g| {
                g["5"]["inputs"]["scheduler"] = json!("AYS SDXL")
            }),
            none.clone(),
            (
                "5",
                "KSampler",
                Some("scheduler"),
                "uses scheduler 'AYS SDXL', which is not one of ComfyUI's core schedulers (a custom node adds it)",
            ),
        ),
        (
            edited("ksampler-advanced", |g| {
                g["5"]["inputs"]["start_at_step"] = json!(9)
            }),
            none.clone(),
            (
                "5",
                "KSamplerAdvanced",
                Some("start_at_step"),
                "starts at step 9 but the run ends at step 8, so no step runs",
            ),
        ),
        (
            edited("ksampler-advanced", |g| {
                g["5"]["inputs"]["add_noise"] = json!("disable")
            }),
            none.clone(),
            (
                "5",
                "KSamplerAdvanced",
                Some("add_noise"),
                "disables noise on an empty latent, which would sample from a blank image",
            ),
        ),
        (
            edited("ksampler-advanced", |g| {
                g["9"] = g["5"].clone();
                g["9"]["inputs"]["latent_image"] = json!(["5", 0]);
                g["5"]["inputs"]["latent_image"] = json!(["9", 0]);
            }),
            none.clone(),
            (
                "5",
                "KSamplerAdvanced",
                Some("latent_image"),
                "samples a latent that comes back from its own result (a cycle through samplers 5, 9)",
            ),
        ),
        (
            edited("hires-fix", |g| {
                g["8"] = json!({"class_type": "LatentUpscale", "inputs": {"upscale_method": "nearest-exact", "width": 32, "height": 48, "crop": "center", "samples": ["5", 0]}});
            }),
            none.clone(),
            (
                "8",
                "LatentUpscale",
                Some("crop"),
                "is 'center'; the lowering resizes whole latents and does not crop them to the new aspect",
            ),
        ),
        (
            edited("hires-fix", |g| {
                g["8"]["inputs"]["upscale_method"] = json!("bislerp");
            }),
            none.clone(),
            (
                "8",
                "LatentUpscaleBy",
                Some("upscale_method"),
                "is 'bislerp'; the lowering resizes latents by nearest-exact, bilinear, area or bicubic only",
            ),
        ),
        (
            edited("hires-fix", |g| {
                g["8"] = json!({"class_type": "LatentUpscale", "inputs": {"upscale_method": "bilinear", "width": 0, "height": 48, "crop": "disabled", "samples": ["5", 0]}});
            }),
            none.clone(),
            (
                "8",
                "LatentUpscale",
                Some("width"),
                "is 0, which asks for the side from the latent's aspect; the lowering takes both sides",
            ),
        ),
        (
            edited("hires-fix", |g| {
                g["8"]["inputs"]["samples"] = json!(["4", 0]);
            }),
            none.clone(),
            (
                "4",
                "EmptyLatentImage",
                None,
                "feeds `samples` of node 8 as its samples, which the importer supports only from KSampler, KSamplerAdvanced, SamplerCustom or SamplerCustomAdvanced",
            ),
        ),
        (
            edited("hires-fix", |g| {
                g["20"] = json!({"class_type": "ControlNetLoader", "inputs": {"control_net_name": "canny.safetensors"}});
                g["21"] = json!({"class_type": "LoadImage", "inputs": {"image": "edges.png"}});
                g["22"] = json!({"class_type": "ControlNetApply", "inputs": {"conditioning": ["2", 0], "control_net": ["20", 0], "image": ["21", 0], "strength": 0.8}});
                g["9"]["inputs"]["positive"] = json!(["22", 0]);
            }),
            none.clone(),
            (
                "9",
                "KSampler",
                Some("model"),
                "uses component `denoiser` with other inputs than sampler 5 (a ControlNet, SDXL conditioning, reference pictures, a picture shown to the text encoder, a held first frame or guide frames on one of them only), and one model component has one set of ports",
            ),
        ),
        (
            edited("hires-fix", |g| {
                g["20"] = json!({"class_type": "LoraLoaderModelOnly", "inputs": {"lora_name": "detail.safetensors", "strength_model": 0.7, "model": ["1", 0]}});
                g["9"]["inputs"]["model"] = json!(["20", 0]);
            }),
            lora_target(),
            (
                "20",
                "LoraLoaderModelOnly",
                Some("lora_name"),
                "loads LoRA 'detail.safetensors' in a graph that chains 2 samplers; adapters are routed for one sampler",
            ),
        ),
        (
            edited("flow-sd3", |g| {
                g["16"] = json!({"class_type": "ModelSamplingAuraFlow", "inputs": {"model": ["12", 0], "shift": 1.73}});
                g["13"]["inputs"]["model"] = json!(["16", 0]);
            }),
            none.clone(),
            (
                "16",
                "ModelSamplingAuraFlow",
                None,
                "is a second model-sampling override on the model path",
            ),
        ),
        (
            edited("inpaint", |g| {
                g["20"] = json!({"class_type": "ImageToMask", "inputs": {"image": ["8", 0], "channel": "red"}});
                g["4"]["inputs"]["mask"] = json!(["20", 0]);
            }),
            none.clone(),
            (
                "20",
                "ImageToMask",
                None,
                "feeds `mask` of node 4; the importer takes masks only from LoadImage's MASK output, LoadImageMask or ImagePadForOutpaint's MASK output",
            ),
        ),
        (
            edited("img2img", |g| g["5"]["inputs"]["denoise"] = json!(0.05)),
            none.clone(),
            (
                "5",
                "KSampler",
                Some("denoise"),
                "has denoise 0.05, which leaves no step of 5 to run",
            ),
        ),
        (
            edited("img2img", |g| g["5"]["inputs"]["seed"] = json!(["8", 0])),
            none.clone(),
            (
                "5",
                "KSampler",
                Some("seed"),
                "is driven by another node, but it is a run parameter the workflow takes as an input",
            ),
        ),
        (
            edited(
                "img2img",
                |g| g["9"] = json!({"class_type": "SaveAnimatedWEBP", "inputs": {"images": ["8", 0], "filename_prefix": "clip", "fps": 8.0, "lossless": false, "quality": 80, "method": "default"}}),
            ),
            none.clone(),
            (
                "8",
                "LoadImage",
                None,
                "gives the frames video sink 9 shows; the lowering makes videos of sampled latents and loaded videos only",
            ),
        ),
    ];
    for (api, target, want) in cases {
        assert_refused_for(&api, &target, want);
    }
}

/// The graph with every node id shifted by `offset` and the nodes in
/// reverse order.
fn renumbered(api: &Value, offset: u64) -> Value {
    let shift = |id: &str| (id.parse::<u64>().expect("numeric id") + offset).to_string();
    let mut nodes: Vec<(String, Value)> = api
        .as_object()
        .expect("object")
        .iter()
        .map(|(id, node)| {
            let mut node = node.clone();
            for value in node["inputs"].as_object_mut().expect("inputs").values_mut() {
                if let Value::Array(link) = value
                    && link.len() == 2
                    && let Some(origin) = link[0].as_str()
                {
                    link[0] = Value::String(shift(origin));
                }
            }
            (shift(id), node)
        })
        .collect();
    nodes.reverse();
    Value::Object(nodes.into_iter().collect())
}

fn identity_of(api: &Value, target: &Target) -> String {
    let lowered = lower::lower_for(api, target).expect("lowers");
    wfstudio_core::identity::identity(&wfstudio_schema::emit::to_yaml(&lowered.document))
        .expect("identity")
}

#[test]
fn identity_ignores_node_numbering_and_order_but_not_run_parameters() {
    let txt2img = support::fixtures().join("comfyui/txt2img-sd15.api.json");
    let mut graphs = vec![(
        "txt2img".to_string(),
        serde_json::from_str::<Value>(&std::fs::read_to_string(txt2img).expect("fixture"))
            .expect("JSON"),
    )];
    for name in [
        "img2img",
        "ksampler-advanced",
        "inpaint",
        "latent-noise-mask",
        "sdxl",
        "controlnet",
        "controlnet-positive",
        "lora",
        "flow-sd3",
    ] {
        graphs.push((name.to_string(), pattern(name)));
    }
    for (name, api) in graphs {
        let target = lora_target();
        let base = identity_of(&api, &target);
        assert_eq!(identity_of(&renumbered(&api, 100), &target), base, "{name}");
        let (sampler, _) = api
            .as_object()
            .expect("graph")
            .iter()
            .find(|(_, n)| {
                n["class_type"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("KSampler"))
            })
            .expect("a sampler");
        for (input, value) in [("steps", json!(9)), ("cfg", json!(2.5))] {
            let mut changed = api.clone();
            changed[sampler]["inputs"][input] = value;
            assert_ne!(identity_of(&changed, &target), base, "{name}: {input}");
        }
        let seed = if api[sampler]["class_type"] == "KSamplerAdvanced" {
            "noise_seed"
        } else {
            "seed"
        };
        let mut reseeded = api.clone();
        reseeded[sampler]["inputs"][seed] = json!(123456);
        assert_ne!(identity_of(&reseeded, &target), base, "{name}: seed");
    }
}

#[test]
fn the_default_layout_is_overridden_by_the_target_and_an_explicit_layout() {
    let dir = std::env::temp_dir().join(format!("wfstudio-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join("inference_metadata.yaml"),
        "schema_version: v1\npipeline:\n  workflow:\n    components:\n      denoiser:\n        implementation: {kind: onnx, artifact: unet/model.onnx}\n",
    )
    .expect("write");
    let target = Target::from_package(&dir)
        .expect("target")
        .with_layout(&json!({"vae_decoder": "vae/decoder.onnx"}))
        .expect("layout");
    let l = lowered(&pattern("img2img"), &target);
    let artifact = |c: &str| workflow(&l)["components"][c]["implementation"]["artifact"].clone();
    assert_eq!(artifact("denoiser"), "unet/model.onnx");
    assert_eq!(artifact("vae_decoder"), "vae/decoder.onnx");
    assert_eq!(artifact("vae_encoder"), "vae_encoder/model.onnx");
    assert_eq!(
        Target::default().with_layout(&json!({"denoiser": 3})),
        Err("layout entry 'denoiser' is not a path string".to_string())
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Every refusal of an import says why and what to do.
fn assert_refusals_explain(
    imported: Result<wfstudio_core::comfyui::Imported, wfstudio_core::comfyui::ReadError>,
) {
    if let Ok(imported) = imported
        && let Err(refusals) = imported.outcome
    {
        assert!(!refusals.is_empty());
        for r in refusals {
            assert!(!r.message.is_empty() && !r.remedy.is_empty(), "{r:?}");
        }
    }
}

/// Values that stand in for any input in the robustness sweep.
fn junk() -> Vec<Value> {
    vec![
        Value::Null,
        json!(-1),
        json!(1e308),
        json!(0.5),
        json!(u64::MAX),
        json!("x"),
        json!([]),
        json!({}),
        json!(["999", 0]),
        json!(["5", 18446744073709551615u64]),
        json!([5, -3]),
        json!(["5", "0"]),
    ]
}

#[test]
fn no_input_value_makes_the_import_panic() {
    let mut graphs: Vec<Value> = [
        "img2img",
        "ksampler-advanced",
        "inpaint",
        "latent-noise-mask",
        "sdxl",
        "controlnet",
        "controlnet-positive",
        "lora",
        "flow-sd3",
    ]
    .iter()
    .map(|n| pattern(n))
    .collect();
    if let Some(shared) = support::shared() {
        for entry in std::fs::read_dir(shared.join("corpus/comfyui")).expect("corpus") {
            let path = entry.expect("entry").path();
            if path.to_string_lossy().ends_with(".api.json") {
                let text = std::fs::read_to_string(&path).expect("file");
                let value: Value = serde_json::from_str(&text).expect("JSON");
                graphs.push(value.get("prompt").cloned().unwrap_or(value));
            }
        }
    }
    let target = lora_target();
    let mut runs = 0;
    for api in &graphs {
        let Some(nodes) = api.as_object() else {
            continue;
        };
        for (id, node) in nodes {
            let names: Vec<String> = node["inputs"]
                .as_object()
                .map(|i| i.keys().cloned().collect())
                .unwrap_or_default();
            for name in names {
                for value in junk() {
                    let mut graph = api.clone();
                    graph[id]["inputs"][&name] = value;
                    let bytes = graph.to_string().into_bytes();
                    // Reading, drawing and lowering must return, never panic.
                    assert_refusals_explain(wfstudio_core::comfyui::import(&bytes, None, &target));
                    runs += 1;
                }
            }
            let mut graph = api.clone();
            graph[id]["class_type"] = json!(42);
            let _ = wfstudio_core::comfyui::import(graph.to_string().as_bytes(), None, &target);
        }
    }
    assert!(runs > 1000, "{runs} variants imported");
}

#[test]
fn no_ui_field_value_makes_the_conversion_panic() {
    let Some(shared) = support::shared() else {
        return;
    };
    let dir = shared.join("corpus/comfyui");
    let defs = wfstudio_core::comfyui::NodeDefs::parse(
        &std::fs::read_to_string(dir.join("node_defs.json")).expect("defs"),
    )
    .expect("defs parse");
    let target = Target::default();
    for file in [
        "tpl2026-flux-dev-subgraph-wrapped.ui.json",
        "sdxl-edit-legacy-groupnode.ui.json",
        "sd15-controlnet-single.ui.json",
    ] {
        let ui: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(file)).expect("file"))
                .expect("JSON");
        let count = ui["nodes"].as_array().map_or(0, Vec::len);
        for n in 0..count {
            for field in [
                "inputs",
                "outputs",
                "widgets_values",
                "mode",
                "type",
                "pos",
                "id",
            ] {
                for value in junk() {
                    let mut graph = ui.clone();
                    graph["nodes"][n][field] = value;
                    let bytes = graph.to_string().into_bytes();
                    assert_refusals_explain(wfstudio_core::comfyui::import(
                        &bytes,
                        Some(&defs),
                        &target,
                    ));
                }
            }
        }
        for value in junk() {
            let mut graph = ui.clone();
            graph["links"] = json!([value.clone(), [1, value.clone(), 0, 2, 0, "X"]]);
            if let Some(sub) = graph.pointer_mut("/definitions/subgraphs/0/links") {
                *sub = json!([value]);
            }
            assert_refusals_explain(wfstudio_core::comfyui::import(
                graph.to_string().as_bytes(),
                Some(&defs),
                &target,
            ));
        }
    }
}
