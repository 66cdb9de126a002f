//! Lowering of every supported ComfyUI pattern (our fixtures under
//! `fixtures/comfyui/patterns/`), asserting the document validates and
//! carries the graph's values as typed inputs. Refusals, identity and
//! robustness are in comfyui_refusals.rs.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, default_of, lora_target, lowered, npy, package_and_run, pattern, scratch,
    workflow, worst_relative,
};
use wfstudio_core::comfyui::lower::{self, Lowered, Target};

/// The components invoked by a step list, in order.
fn invoked(steps: &Value) -> Vec<String> {
    steps
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["component"].as_str().map(str::to_string))
        .collect()
}

fn setup(l: &Lowered) -> Vec<String> {
    invoked(&workflow(l)["steps"][0]["setup"])
}

fn body(l: &Lowered) -> Vec<String> {
    invoked(&workflow(l)["steps"][0]["steps"])
}

#[test]
fn img2img_starts_at_the_half_even_rounded_step_and_takes_denoise_as_an_input() {
    assert_eq!(lower::denoise_start_step(5, 0.5), 3, "2.5 rounds to 2");
    assert_eq!(lower::denoise_start_step(10, 0.75), 2, "7.5 rounds to 8");
    assert_eq!(lower::denoise_start_step(20, 1.0), 0);
    assert_eq!(lower::denoise_start_step(20, 0.6), 8);
    let l = lowered(&pattern("img2img"), &Target::default());
    assert_eq!(default_of(&l, "request.denoise"), &json!(0.5));
    assert_eq!(
        workflow(&l)["inputs"]["request.denoise"]["role"]["role"],
        "denoising_strength"
    );
    assert_eq!(workflow(&l)["inputs"]["request.image"]["required"], true);
    assert_eq!(
        setup(&l),
        [
            "diffusion_schedule",
            "diffusion_timesteps",
            "latent_row_shape",
            "latent_noise",
            "text_encoder",
            "text_encoder",
            "denoise_window",
            "vae_encoder",
            "add_noise",
            "continue_predicate"
        ]
    );
    assert_eq!(body(&l)[0], "step_offset");
    assert_eq!(
        workflow(&l)["steps"][0]["max_iterations"],
        "diffusion.iterations"
    );
    assert_eq!(
        workflow(&l)["state"]["latent_state"]["initializer"],
        "latent.start"
    );
    assert_eq!(
        l.notes,
        ["denoise 0.5: sampling starts at step 3 of 5 (request.denoise)"]
    );
    // The encoder step came from VAEEncode and LoadImage.
    assert!(l.provenance.contains(&(
        "pipeline.workflow.steps[0].setup[7]".into(),
        vec!["4".into(), "8".into()]
    )));
}

#[test]
fn no_lowered_component_reuses_an_input_name_for_an_output() {
    // An ONNX graph cannot have an input and an output of the same name.
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
        let l = lowered(&pattern(name), &lora_target());
        for (component, c) in workflow(&l)["components"].as_object().expect("components") {
            let inputs = c["ports"]["inputs"].as_object().expect("inputs");
            for output in c["ports"]["outputs"].as_object().expect("outputs").keys() {
                assert!(!inputs.contains_key(output), "{name}: {component}.{output}");
            }
        }
    }
}

#[test]
fn seeds_above_2_63_keep_their_64_bits() {
    let mut graph = pattern("ksampler-advanced");
    for node in graph.as_object_mut().expect("object").values_mut() {
        if node["class_type"] == "KSamplerAdvanced" {
            node["inputs"]["noise_seed"] = json!(u64::MAX);
        }
    }
    let l = lowered(&graph, &Target::default());
    assert_eq!(default_of(&l, "request.seed"), &json!(-1));
}

#[test]
fn ksampler_advanced_takes_its_start_and_end_steps_as_inputs() {
    let l = lowered(&pattern("ksampler-advanced"), &Target::default());
    assert_eq!(default_of(&l, "request.start_step"), &json!(2));
    assert_eq!(default_of(&l, "request.end_step"), &json!(8));
    assert_eq!(default_of(&l, "request.max_iterations"), &json!(10));
    assert_eq!(default_of(&l, "request.seed"), &json!(7));
    let solver = &workflow(&l)["components"]["solver_step"];
    assert_eq!(
        solver["contract"]["parameters"]["final_step"],
        "full_denoise"
    );
    assert_eq!(solver["contract"]["parameters"]["solver"], "euler");
    assert!(setup(&l).contains(&"step_window".to_string()));
    assert!(setup(&l).contains(&"empty_latent".to_string()));
    assert_eq!(
        l.notes,
        ["steps 2..8 of 10 (request.start_step, request.end_step)"]
    );

    let mut keep = pattern("ksampler-advanced");
    keep["5"]["inputs"]["return_with_leftover_noise"] = json!("enable");
    keep["5"]["inputs"]["end_at_step"] = json!(10000);
    let l = lowered(&keep, &Target::default());
    assert_eq!(
        default_of(&l, "request.end_step"),
        &json!(10),
        "clipped to the step count"
    );
    assert_eq!(
        workflow(&l)["components"]["solver_step"]["contract"]["parameters"]["final_step"],
        "keep_leftover_noise"
    );
}

#[test]
fn inpainting_applies_the_mask_after_every_step() {
    for (name, grow) in [("inpaint", 6), ("latent-noise-mask", 0)] {
        let l = lowered(&pattern(name), &Target::default());
        assert_eq!(
            workflow(&l)["inputs"]["request.mask"]["contract"]["shape"],
            json!(["batch", 1, "height", "width"])
        );
        let body = body(&l);
        let solver = body
            .iter()
            .position(|c| c == "solver_step")
            .expect("solver");
        assert_eq!(body[solver + 1], "masked_blend", "{name}");
        assert_eq!(
            workflow(&l)["components"]["latent_mask"]["contract"]["parameters"]["grow_mask_by"],
            json!(grow)
        );
        let greyed = setup(&l).contains(&"inpaint_pixels".to_string());
        assert_eq!(greyed, name == "inpaint", "{name}");
    }
}

#[test]
fn sdxl_prompts_use_both_encoders_and_size_conditioning() {
    let l = lowered(&pattern("sdxl"), &Target::default());
    assert_eq!(
        l.prompts,
        [
            (
                "request.input_ids".to_string(),
                "a castle on a hill, detailed".to_string()
            ),
            ("request.input_ids_l".to_string(), "a castle".to_string()),
            (
                "request.negative_input_ids".to_string(),
                "blurry".to_string()
            ),
            (
                "request.negative_input_ids_l".to_string(),
                "blurry".to_string()
            ),
        ]
    );
    assert_eq!(
        default_of(&l, "request.positive_size"),
        &json!([1024.0, 1024.0, 0.0, 0.0, 1024.0, 1024.0])
    );
    let denoiser = &workflow(&l)["components"]["denoiser"]["ports"]["inputs"];
    assert!(denoiser.get("text_embeds").is_some() && denoiser.get("time_ids").is_some());
    assert_eq!(
        setup(&l)
            .iter()
            .filter(|c| *c == "sdxl_conditioning")
            .count(),
        2
    );
}

#[test]
fn a_single_controlnet_conditions_the_prompts_it_is_applied_to() {
    let l = lowered(&pattern("controlnet"), &Target::default());
    assert_eq!(default_of(&l, "request.control_strength"), &json!(0.9));
    assert_eq!(default_of(&l, "request.control_end"), &json!(0.6));
    let steps = &workflow(&l)["steps"][0]["steps"];
    let scales: Vec<&str> = steps
        .as_array()
        .expect("body")
        .iter()
        .filter(|s| s["component"] == "controlnet")
        .map(|s| s["inputs"]["scale"].as_str().expect("bound"))
        .collect();
    assert_eq!(scales, ["control.scale", "control.scale"]);

    let l = lowered(&pattern("controlnet-positive"), &Target::default());
    let steps = &workflow(&l)["steps"][0]["steps"];
    let scales: Vec<(&str, &str)> = steps
        .as_array()
        .expect("body")
        .iter()
        .filter(|s| s["component"] == "controlnet")
        .map(|s| {
            (
                s["inputs"]["encoder_hidden_states"]
                    .as_str()
                    .expect("bound"),
                s["inputs"]["scale"].as_str().expect("bound"),
            )
        })
        .collect();
    assert_eq!(
        scales,
        [
            ("conditioning.unconditional", "package.no_control"),
            ("conditioning.conditional", "request.control_strength")
        ]
    );
    assert_eq!(default_of(&l, "package.no_control"), &json!(0.0));
}

#[test]
fn flow_matching_sampling_becomes_a_typed_shift_input() {
    let l = lowered(&pattern("flow-sd3"), &Target::default());
    assert_eq!(default_of(&l, "request.flow_shift"), &json!(3.0));
    let schedule = &workflow(&l)["components"]["diffusion_schedule"];
    assert_eq!(schedule["contract"]["parameters"]["prediction"], "flow");
    assert_eq!(schedule["contract"]["parameters"]["spacing"], "simple");
    assert_eq!(schedule["ports"]["inputs"]["shift"]["dtype"], "float32");
    assert_eq!(
        workflow(&l)["components"]["latent_row_shape"]["contract"]["parameters"]["channels"],
        16
    );

    let mut flux = pattern("flow-sd3");
    flux["13"] = json!({"class_type": "ModelSamplingFlux", "inputs": {"model": ["12", 0], "max_shift": 1.15, "base_shift": 0.5, "width": 1024, "height": 1024}});
    let l = lowered(&flux, &Target::default());
    assert_eq!(default_of(&l, "request.flow_max_shift"), &json!(1.15));
    assert_eq!(default_of(&l, "request.flow_base_shift"), &json!(0.5));
}

#[test]
fn an_attention_backend_changes_nothing_but_says_when_its_kernel_rounds() {
    let plain = lowered(&pattern("flow-sd3"), &Target::default());
    let mut backend = pattern("flow-sd3");
    backend["30"] = json!({"class_type": "ModelAttentionBackend", "inputs": {"attention": "pytorch attention", "model": ["13", 0]}});
    backend["5"]["inputs"]["model"] = json!(["30", 0]);
    let exact = lowered(&backend, &Target::default());
    assert_eq!(workflow(&exact), workflow(&plain));
    assert_eq!(exact.notes, plain.notes);
    backend["30"]["inputs"]["attention"] = json!("comfy kitchen attention");
    let int8 = lowered(&backend, &Target::default());
    assert_eq!(workflow(&int8), workflow(&plain));
    assert!(
        int8.notes.contains(&"node 30 (ModelAttentionBackend) runs ComfyUI's model with the 'comfy kitchen attention' attention kernel; the package's denoiser computes attention as it is exported, so its results differ from that kernel's by the kernel's rounding".to_string()),
        "{:?}",
        int8.notes
    );
}

#[test]
fn a_model_without_a_sampling_node_samples_as_its_text_encoder_type_says() {
    // SD3's own shift is 3, what the pattern's ModelSamplingSD3 states.
    let stated = lowered(&pattern("flow-sd3"), &Target::default());
    let mut own = pattern("flow-sd3");
    own["5"]["inputs"]["model"] = json!(["12", 0]);
    own.as_object_mut().map(|m| m.remove("13"));
    let l = lowered(&own, &Target::default());
    assert_eq!(workflow(&l), workflow(&stated));
    assert_eq!(
        l.notes,
        [
            "the graph states no model sampling, which ComfyUI reads from the weights, so request.flow_shift is 3, as node 14 (CLIPLoader) loads the text encoder as type 'sd3', and the model samples by flow matching as SD3's model does (shift 3); a ModelSampling node states another"
        ]
    );

    // Chroma's is Flux's time shift 1.15 on Flux's 10000-entry table.
    own["14"]["inputs"]["type"] = json!("chroma");
    let l = lowered(&own, &Target::default());
    assert_eq!(
        default_of(&l, "request.flow_shift").as_f64(),
        Some(1.15f64.exp())
    );
    let schedule = &workflow(&l)["components"]["diffusion_schedule"];
    assert_eq!(schedule["contract"]["parameters"]["model_sampling"], "flux");

    // Type 'lumina2' serves Lumina 2 and Z-Image, which ComfyUI tells
    // apart by the weights: the UNETLoader's file names the family
    // (Z-Image: shift 3, AuraFlow's timesteps), else it is refused.
    own["14"]["inputs"]["type"] = json!("lumina2");
    own["12"]["inputs"]["unet_name"] = json!("z_image_turbo_bf16.safetensors");
    let l = lowered(&own, &Target::default());
    assert_eq!(default_of(&l, "request.flow_shift"), &json!(3.0));
    let schedule = &workflow(&l)["components"]["diffusion_schedule"];
    assert_eq!(
        schedule["contract"]["parameters"]["model_sampling"],
        "aura_flow"
    );
    assert!(
        l.notes[0].contains("node 14 (CLIPLoader) loads the text encoder as type 'lumina2', which serves several families, and node 12 (UNETLoader) loads 'z_image_turbo_bf16.safetensors', Z-Image's model by its name, and the model samples by flow matching as Z-Image's model does (shift 3)"),
        "{}",
        l.notes[0]
    );
    own["12"]["inputs"]["unet_name"] = json!("lumina_2.safetensors");
    let l = lowered(&own, &Target::default());
    assert_eq!(default_of(&l, "request.flow_shift"), &json!(6.0));
    own["12"]["inputs"]["unet_name"] = json!("my_model.safetensors");
    assert!(lower::lower(&own).is_err());
    // Type 'pixeldit' serves PixelDiT (shift 4, SD3's timesteps) and its
    // distilled PiD (shift 1.5): the file names PixelDiT; another is
    // refused.
    own["14"]["inputs"]["type"] = json!("pixeldit");
    let refusals = lower::lower(&own).expect_err("an unnamed PixelDiT-type model");
    assert!(
        refusals[0].message.contains("type 'pixeldit'"),
        "{}",
        refusals[0].message
    );
    own["12"]["inputs"]["unet_name"] = json!("pixeldit_1300m_1024px_bf16.safetensors");
    let l = lowered(&own, &Target::default());
    assert_eq!(default_of(&l, "request.flow_shift"), &json!(4.0));
    assert_eq!(
        workflow(&l)["components"]["diffusion_schedule"]["contract"]["parameters"]["model_sampling"],
        "sd3"
    );
    own["14"]["inputs"]["type"] = json!("sd3");
    own["12"]["inputs"]["unet_name"] = json!("sd3_medium.safetensors");

    // A checkpoint holding its text encoders states no type: ComfyUI's
    // own files are known by name (Flux schnell: time shift 1), wherever
    // the user keeps them; another file is refused as before.
    let mut checkpoint = own.clone();
    checkpoint["12"] = json!({"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "flux/flux1-schnell-fp8.safetensors"}});
    for node in ["2", "3"] {
        checkpoint[node]["inputs"]["clip"] = json!(["12", 1]);
    }
    checkpoint["6"]["inputs"]["vae"] = json!(["12", 2]);
    let l = lowered(&checkpoint, &Target::default());
    assert_eq!(
        default_of(&l, "request.flow_shift").as_f64(),
        Some(1f64.exp())
    );
    assert_eq!(
        workflow(&l)["components"]["diffusion_schedule"]["contract"]["parameters"]["model_sampling"],
        "flux"
    );
    assert_eq!(
        l.notes,
        [
            "the graph states no model sampling, which ComfyUI reads from the weights, so request.flow_shift is 2.7183, as node 12 (CheckpointLoaderSimple) loads 'flux1-schnell-fp8.safetensors', ComfyUI's Flux schnell checkpoint, and the model samples by flow matching as Flux schnell's model does (Flux time shift 1, a shift of e^1); a ModelSampling node states another"
        ]
    );
    checkpoint["12"]["inputs"]["ckpt_name"] = json!("my_flux_merge.safetensors");
    let refusals = lower::lower(&checkpoint).expect_err("refused");
    assert_eq!(
        (refusals[0].node.as_str(), refusals[0].input.as_deref()),
        ("5", Some("model"))
    );
    assert!(
        refusals[0]
            .message
            .contains("with the model's own sampling, which the graph does not state"),
        "{}",
        refusals[0].message
    );

    // Under ModelSamplingAuraFlow (whose own latents have 4 channels) the
    // text encoder's type settles the model's: Lumina 2 and Z-Image take
    // Flux's 16; a type that says nothing leaves AuraFlow's 4.
    let channels = |clip_type: &str| {
        let mut aura = pattern("flow-sd3");
        aura["13"] = json!({"class_type": "ModelSamplingAuraFlow", "inputs": {"model": ["12", 0], "shift": 3.0}});
        aura["14"]["inputs"]["type"] = json!(clip_type);
        let l = lowered(&aura, &Target::default());
        workflow(&l)["components"]["latent_row_shape"]["contract"]["parameters"]["channels"].clone()
    };
    assert_eq!(channels("lumina2"), 16);
    assert_eq!(channels("qwen_image"), 16);
    assert_eq!(channels("kandinsky5"), 4);

    // A scheduler on the bare model computes the guider's sigmas where the
    // model's own sampling is the one the guider's node states.
    let mut custom = pattern("flow-sd3");
    let k = custom["5"]["inputs"].clone();
    custom["20"] =
        json!({"class_type": "KSamplerSelect", "inputs": {"sampler_name": k["sampler_name"]}});
    custom["21"] = json!({"class_type": "BasicScheduler", "inputs": {"scheduler": k["scheduler"], "steps": k["steps"], "denoise": 1.0, "model": ["12", 0]}});
    custom["22"] = json!({"class_type": "CFGGuider", "inputs": {"cfg": k["cfg"], "model": ["13", 0], "positive": ["2", 0], "negative": ["3", 0]}});
    custom["23"] = json!({"class_type": "RandomNoise", "inputs": {"noise_seed": k["seed"]}});
    custom["5"] = json!({"class_type": "SamplerCustomAdvanced", "inputs": {"noise": ["23", 0], "guider": ["22", 0], "sampler": ["20", 0], "sigmas": ["21", 0], "latent_image": ["4", 0]}});
    assert_eq!(
        workflow(&lowered(&custom, &Target::default())),
        workflow(&stated)
    );
    custom["13"]["inputs"]["shift"] = json!(5.0);
    assert_refused(
        &custom,
        (
            "21",
            "BasicScheduler",
            Some("model"),
            "takes its model from node 12, whose sampling differs from the sampler's model's; the sigmas must come from the sampled model",
        ),
    );
}

#[test]
fn lora_is_routed_through_the_target_packages_adapters() {
    let l = lowered(&pattern("lora"), &lora_target());
    assert_eq!(
        l.document["adapters"]["artifacts"]["watercolor"]["index"],
        0
    );
    let inputs = &workflow(&l)["inputs"];
    assert_eq!(
        inputs["request.adapter_segments"]["role"]["role"],
        "adapter_segments"
    );
    assert_eq!(
        inputs["request.adapter_scales"]["contract"]["shape"],
        json!(["batch", 2])
    );
    let caps = workflow(&l)["manifest"]["capabilities"].to_string();
    assert!(caps.contains("parameter_adapters") && caps.contains("heterogeneous_adapter_batching"));
    assert_eq!(
        l.notes,
        ["LoRA 'watercolor' is adapter 0 at scale 0.8: pass it in the adapter selection inputs"]
    );
}

/// `pattern`'s KSampler (node 5) rebuilt from ComfyUI's custom sampling
/// nodes: `KSamplerSelect`, `BasicScheduler`, and for `SamplerCustomAdvanced`
/// `noise` and `guider` nodes (their inputs given), else `SamplerCustom`.
fn custom_sampling(pattern_name: &str, noise: Option<Value>, guider: Option<Value>) -> Value {
    let mut g = pattern(pattern_name);
    let k = g["5"]["inputs"].clone();
    g["20"] =
        json!({"class_type": "KSamplerSelect", "inputs": {"sampler_name": k["sampler_name"]}});
    g["21"] = json!({"class_type": "BasicScheduler", "inputs": {"scheduler": k["scheduler"], "steps": k["steps"], "denoise": k["denoise"], "model": ["1", 0]}});
    g["5"] = match (noise, guider) {
        (Some(noise), Some(guider)) => {
            g["22"] = noise;
            g["23"] = guider;
            json!({"class_type": "SamplerCustomAdvanced", "inputs": {"noise": ["22", 0], "guider": ["23", 0], "sampler": ["20", 0], "sigmas": ["21", 0], "latent_image": k["latent_image"]}})
        }
        _ => {
            json!({"class_type": "SamplerCustom", "inputs": {"add_noise": true, "noise_seed": k["seed"], "cfg": k["cfg"], "model": ["1", 0], "positive": ["2", 0], "negative": ["3", 0], "sampler": ["20", 0], "sigmas": ["21", 0], "latent_image": k["latent_image"]}})
        }
    };
    g
}

/// The refiner pattern's two `KSamplerAdvanced` spelled as custom
/// sampling: each a `BasicScheduler` of 8 steps split at step 6 by
/// `split` (a `SplitSigmas` or `SplitSigmasDenoise` node), the base
/// sampling the high part with noise, the refiner the low part without.
fn split_refiner(split: Value) -> Value {
    let mut g = pattern("refiner");
    for (sampler, model, positive, negative, first, part, noise) in [
        (
            "5",
            "1",
            "2",
            "3",
            20,
            0,
            json!({"class_type": "RandomNoise", "inputs": {"noise_seed": 11}}),
        ),
        (
            "13",
            "10",
            "11",
            "12",
            30,
            1,
            json!({"class_type": "DisableNoise", "inputs": {}}),
        ),
    ] {
        let k = g[sampler]["inputs"].clone();
        let id = |offset: u64| (first + offset).to_string();
        g[id(0)] =
            json!({"class_type": "KSamplerSelect", "inputs": {"sampler_name": k["sampler_name"]}});
        g[id(1)] = json!({"class_type": "BasicScheduler", "inputs": {"scheduler": k["scheduler"], "steps": k["steps"], "denoise": 1.0, "model": [model, 0]}});
        g[id(2)] = split.clone();
        g[id(2)]["inputs"]["sigmas"] = json!([id(1), 0]);
        g[id(3)] = noise;
        g[id(4)] = json!({"class_type": "CFGGuider", "inputs": {"cfg": k["cfg"], "model": [model, 0], "positive": [positive, 0], "negative": [negative, 0]}});
        g[sampler] = json!({"class_type": "SamplerCustomAdvanced", "inputs": {"noise": [id(3), 0], "guider": [id(4), 0], "sampler": [id(0), 0], "sigmas": [id(2), part], "latent_image": k["latent_image"]}});
    }
    g
}

#[test]
fn split_sigmas_sample_the_windows_ksampler_advanced_samples() {
    let document = |g: &Value| lowered(g, &Target::default()).document;
    let advanced = document(&pattern("refiner"));
    let split = json!({"class_type": "SplitSigmas", "inputs": {"step": 6}});
    assert_eq!(document(&split_refiner(split.clone())), advanced);
    // The last round(8 * 0.25) = 2 steps are the low part.
    let denoise = json!({"class_type": "SplitSigmasDenoise", "inputs": {"denoise": 0.25}});
    assert_eq!(document(&split_refiner(denoise.clone())), advanced);

    let mut empty_high = split_refiner(split.clone());
    empty_high["22"]["inputs"]["step"] = json!(0);
    assert_refused(
        &empty_high,
        (
            "22",
            "SplitSigmas",
            None,
            "leaves no step of 8 in the part it gives (output 0)",
        ),
    );
    let mut nothing_low = split_refiner(denoise);
    nothing_low["32"]["inputs"]["denoise"] = json!(0.05);
    assert_refused(
        &nothing_low,
        (
            "32",
            "SplitSigmasDenoise",
            None,
            "leaves no step of 8 in the part it gives (output 1)",
        ),
    );
    // round(5 * 0.5) = 2 (half to even): the low part is the last 2 of 5.
    let mut half =
        split_refiner(json!({"class_type": "SplitSigmasDenoise", "inputs": {"denoise": 0.5}}));
    for id in ["21", "31"] {
        half[id]["inputs"]["steps"] = json!(5);
    }
    let l = lowered(&half, &Target::default());
    assert_eq!(default_of(&l, "request.start_step"), &json!(0));
    assert_eq!(default_of(&l, "request.end_step"), &json!(3));
    assert_eq!(default_of(&l, "stage2.request.start_step"), &json!(3));
    // Denoise 1 leaves the high part nothing.
    let all_low =
        split_refiner(json!({"class_type": "SplitSigmasDenoise", "inputs": {"denoise": 1.0}}));
    assert_refused(
        &all_low,
        (
            "22",
            "SplitSigmasDenoise",
            None,
            "leaves no step of 8 in the part it gives (output 0)",
        ),
    );
    // Schedulers whose sigma count the steps do not fix are not split.
    let mut uniform = split_refiner(json!({"class_type": "SplitSigmas", "inputs": {"step": 6}}));
    uniform["21"]["inputs"]["scheduler"] = json!("ddim_uniform");
    assert_refused(
        &uniform,
        (
            "22",
            "SplitSigmas",
            None,
            "splits a 'ddim_uniform' schedule, whose sigma count the graph's steps do not fix",
        ),
    );
    let mut cut = split_refiner(split);
    cut["21"]["inputs"]["denoise"] = json!(0.5);
    assert_refused(
        &cut,
        (
            "21",
            "BasicScheduler",
            Some("denoise"),
            "cuts the schedule it gives node 22 to denoise 0.5; the lowering splits whole schedules",
        ),
    );
}

#[test]
fn custom_sampling_nodes_lower_as_the_ksampler_they_spell_out() {
    let target = Target::default();
    let document = |g: &Value| lowered(g, &target).document;
    // The two pattern graphs, each value on the node ComfyUI keeps it on
    // (and none equal to the KSampler defaults): the same documents as the
    // KSampler that holds them all.
    let ksampler = |g: &Value, inputs: Value| {
        let mut g = g.clone();
        for id in ["20", "21", "22", "23"] {
            g.as_object_mut().map(|m| m.remove(id));
        }
        g["5"] = json!({"class_type": "KSampler", "inputs": inputs});
        g
    };
    let advanced = pattern("custom-advanced");
    assert_eq!(
        document(&advanced),
        document(&ksampler(
            &advanced,
            json!({"seed": 123, "steps": 6, "cfg": 4.5, "sampler_name": "dpmpp_2m", "scheduler": "simple", "denoise": 1.0, "model": ["1", 0], "positive": ["2", 0], "negative": ["3", 0], "latent_image": ["4", 0]})
        ))
    );
    // KSampler runs uni_pc on a schedule for one step more without its
    // penultimate sigma; BasicScheduler does not: the one difference.
    let custom = pattern("custom");
    let mut spelled_out = document(&ksampler(
        &custom,
        json!({"seed": 99, "steps": 7, "cfg": 5.5, "sampler_name": "uni_pc", "scheduler": "beta", "denoise": 0.6, "model": ["1", 0], "positive": ["2", 0], "negative": ["3", 0], "latent_image": ["4", 0]}),
    ));
    for schedule in ["diffusion_schedule", "diffusion_timesteps"] {
        let parameters = spelled_out
            .pointer_mut(&format!(
                "/pipeline/workflow/components/{schedule}/contract/parameters"
            ))
            .and_then(Value::as_object_mut)
            .expect("parameters");
        assert_eq!(parameters.remove("discard_penultimate"), Some(json!(true)));
    }
    assert_eq!(document(&custom), spelled_out);
    let plain = pattern("img2img");
    let k = plain["5"]["inputs"].clone();
    let noise = json!({"class_type": "RandomNoise", "inputs": {"noise_seed": k["seed"]}});
    let cfg = json!({"class_type": "CFGGuider", "inputs": {"cfg": k["cfg"], "model": ["1", 0], "positive": ["2", 0], "negative": ["3", 0]}});
    assert_eq!(
        document(&custom_sampling("img2img", None, None)),
        document(&plain)
    );
    assert_eq!(
        document(&custom_sampling("img2img", Some(noise.clone()), Some(cfg))),
        document(&plain)
    );
    // BasicGuider is CFG 1 on its one conditioning (ComfyUI skips the
    // negative pass at CFG 1; here both sides get the conditioning).
    let basic = json!({"class_type": "BasicGuider", "inputs": {"model": ["1", 0], "conditioning": ["2", 0]}});
    let mut cfg_one = plain.clone();
    cfg_one["5"]["inputs"]["cfg"] = json!(1.0);
    cfg_one["5"]["inputs"]["negative"] = json!(["2", 0]);
    assert_eq!(
        document(&custom_sampling(
            "img2img",
            Some(noise.clone()),
            Some(basic)
        )),
        document(&cfg_one)
    );
    // DisableNoise samples the start latent as it is: KSamplerAdvanced's
    // add_noise disabled over the steps the denoise leaves.
    let quiet = json!({"class_type": "DisableNoise", "inputs": {}});
    let cfg = json!({"class_type": "CFGGuider", "inputs": {"cfg": k["cfg"], "model": ["1", 0], "positive": ["2", 0], "negative": ["3", 0]}});
    let mut advanced = plain.clone();
    let start = lower::denoise_start_step(5, 0.5);
    advanced["5"] = json!({"class_type": "KSamplerAdvanced", "inputs": {"add_noise": "disable", "noise_seed": 0, "steps": 5, "cfg": k["cfg"], "sampler_name": "euler", "scheduler": "karras", "start_at_step": start, "end_at_step": 5, "return_with_leftover_noise": "disable", "model": ["1", 0], "positive": ["2", 0], "negative": ["3", 0], "latent_image": ["4", 0]}});
    assert_eq!(
        document(&custom_sampling("img2img", Some(quiet), Some(cfg))),
        document(&advanced)
    );

    // What is not understood is refused at its node.
    let refused = |g: &Value| {
        let r = lower::lower(g).expect_err("refused").remove(0);
        (r.node, r.class, r.input, r.message)
    };
    let mut other_model = custom_sampling("img2img", None, None);
    other_model["30"] = json!({"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "other.safetensors"}});
    other_model["21"]["inputs"]["model"] = json!(["30", 0]);
    assert_eq!(
        refused(&other_model),
        (
            "21".into(),
            "BasicScheduler".into(),
            Some("model".into()),
            "computes sigmas for node 30's model, but the sampler samples node 1's; the sigmas must come from the sampled model".into()
        )
    );
    // Where the schedule ends at sigma 0 the denoised output is the
    // sampled one; elsewhere it is refused.
    let sampled = custom_sampling("img2img", None, None);
    let mut denoised_output = sampled.clone();
    denoised_output["6"]["inputs"]["samples"] = json!(["5", 1]);
    assert_eq!(
        lowered(&denoised_output, &Target::default()).document,
        lowered(&sampled, &Target::default()).document
    );
    denoised_output["21"] =
        json!({"class_type": "ManualSigmas", "inputs": {"sigmas": "1.0, 0.5, 0.2"}});
    let (node, _, _, message) = refused(&denoised_output);
    assert_eq!(node, "5");
    assert_eq!(
        message,
        "feeds its denoised_output to node 6; the lowering takes it where the schedule ends at sigma 0 (a ManualSigmas list ending in 0, a BasicScheduler or LTXVScheduler) under euler, euler_ancestral, heun, dpmpp_2m, gradient_estimation or gradient_estimation_cfg_pp, as the sampled output"
    );
    let basic = json!({"class_type": "BasicGuider", "inputs": {"model": ["1", 0], "conditioning": ["2", 0]}});
    let mut cfg_pp = custom_sampling("img2img", Some(noise.clone()), Some(basic));
    cfg_pp["20"]["inputs"]["sampler_name"] = json!("euler_cfg_pp");
    let (node, class, input, _) = refused(&cfg_pp);
    assert_eq!(
        (node.as_str(), class.as_str(), input.as_deref()),
        ("20", "KSamplerSelect", Some("sampler_name"))
    );
    let mut vp = custom_sampling("img2img", None, None);
    vp["21"] = json!({"class_type": "VPScheduler", "inputs": {"steps": 5, "beta_d": 19.9, "beta_min": 0.1, "eps_s": 0.001}});
    let (node, class, _, message) = refused(&vp);
    assert_eq!((node.as_str(), class.as_str()), ("21", "VPScheduler"));
    assert!(message.contains("feeds `sigmas` of node 5"), "{message}");
}

/// The txt2img fixture (`fixtures/comfyui/txt2img-sd15.api.json`).
fn txt2img() -> Value {
    let text = std::fs::read_to_string(support::fixtures().join("comfyui/txt2img-sd15.api.json"))
        .expect("txt2img");
    serde_json::from_str(&text).expect("json")
}

/// `ConditioningZeroOut` of the positive prompt's encoder as the negative
/// (Flux and SD3 graphs): no negative token input, the positive's
/// conditioning zeroed; it changes the run against the graph's own
/// negative prompt. `T5TokenizerOptions` on the CLIP path is passed
/// through and named in a note.
#[test]
fn a_zeroed_negative_is_the_positive_conditioning_zeroed() {
    let mut graph = txt2img();
    graph["20"] =
        json!({"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["11", 0]}});
    graph["21"] = json!({"class_type": "T5TokenizerOptions", "inputs": {"clip": ["10", 1], "min_padding": 1, "min_length": 8}});
    graph["11"]["inputs"]["clip"] = json!(["21", 0]);
    graph["14"]["inputs"]["negative"] = json!(["20", 0]);
    let l = lowered(&graph, &Target::default());
    assert!(
        workflow(&l)["inputs"]
            .get("request.negative_input_ids")
            .is_none()
    );
    assert_eq!(
        setup(&l)[4..],
        ["text_encoder", "zero_conditioning", "continue_predicate"]
    );
    let zero = &workflow(&l)["steps"][0]["setup"][5];
    assert_eq!(zero["inputs"]["conditioning"], "conditioning.conditional");
    assert_eq!(zero["outputs"]["zeroed"], "conditioning.unconditional");
    let prompts: Vec<&str> = l.prompts.iter().map(|(i, _)| i.as_str()).collect();
    assert_eq!(prompts, ["request.input_ids"]);
    assert_eq!(
        l.notes,
        [
            "node 21 (T5TokenizerOptions) asks for min_padding 1 and min_length 8: the workflow takes token ids, so tokenize the prompts with those options"
        ]
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("zero-out");
    let (_, zeroed) = package_and_run(&root, "zeroed", &graph);
    let (_, plain) = package_and_run(&root, "plain", &txt2img());
    let (_, a) = npy(&zeroed.join("latent.npy"));
    let (_, b) = npy(&plain.join("latent.npy"));
    // Stand-ins feel the conditioning through its mean only: a small change,
    // far above float noise.
    assert!(
        worst_relative(&a, &b) > 1e-5,
        "zeroing the negative changes the run"
    );
    let _ = std::fs::remove_dir_all(&root);
}
