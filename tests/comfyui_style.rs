//! Style tokens (`StyleModelApply`, Flux Redux): each picture is
//! embedded by the CLIP vision model, the style model makes tokens of the
//! embedding, and the prompt's conditioning takes them after its own,
//! times the strength, in the order the nodes run.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, package_and_run, run_policy_alone, scratch, setup_calls, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// Flux Redux's template, small: two pictures' styles (strengths 1 and
/// 0.5) on the prompt, a basic guider.
fn redux() -> Value {
    json!({
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors", "clip_name2": "clip_l.safetensors", "type": "flux", "device": "default"}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a girl walking in the wilderness", "clip": ["2", 0]}},
        "5": {"class_type": "FluxGuidance", "inputs": {"guidance": 3.5, "conditioning": ["4", 0]}},
        "6": {"class_type": "StyleModelLoader", "inputs": {"style_model_name": "flux1-redux-dev.safetensors"}},
        "7": {"class_type": "CLIPVisionLoader", "inputs": {"clip_name": "sigclip_vision_patch14_384.safetensors"}},
        "8": {"class_type": "LoadImage", "inputs": {"image": "first.png", "upload": "image"}},
        "9": {"class_type": "LoadImage", "inputs": {"image": "second.png", "upload": "image"}},
        "10": {"class_type": "CLIPVisionEncode", "inputs": {"crop": "center", "clip_vision": ["7", 0], "image": ["8", 0]}},
        "11": {"class_type": "CLIPVisionEncode", "inputs": {"crop": "center", "clip_vision": ["7", 0], "image": ["9", 0]}},
        "12": {"class_type": "StyleModelApply", "inputs": {"strength": 1.0, "strength_type": "multiply", "conditioning": ["5", 0], "style_model": ["6", 0], "clip_vision_output": ["10", 0]}},
        "13": {"class_type": "StyleModelApply", "inputs": {"strength": 0.5, "strength_type": "multiply", "conditioning": ["12", 0], "style_model": ["6", 0], "clip_vision_output": ["11", 0]}},
        "14": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 64, "height": 64, "batch_size": 1}},
        "15": {"class_type": "KSamplerSelect", "inputs": {"sampler_name": "euler"}},
        "16": {"class_type": "BasicScheduler", "inputs": {"scheduler": "simple", "steps": 4, "denoise": 1.0, "model": ["1", 0]}},
        "17": {"class_type": "RandomNoise", "inputs": {"noise_seed": 9}},
        "18": {"class_type": "BasicGuider", "inputs": {"model": ["1", 0], "conditioning": ["13", 0]}},
        "19": {"class_type": "SamplerCustomAdvanced", "inputs": {"noise": ["17", 0], "guider": ["18", 0], "sampler": ["15", 0], "sigmas": ["16", 0], "latent_image": ["14", 0]}},
        "20": {"class_type": "VAEDecode", "inputs": {"samples": ["19", 0], "vae": ["3", 0]}},
        "21": {"class_type": "SaveImage", "inputs": {"filename_prefix": "redux", "images": ["20", 0]}},
    })
}

#[test]
fn each_picture_s_style_tokens_follow_the_prompt_in_the_order_the_nodes_run() {
    let l = lowered(&redux(), &Target::default());
    let w = workflow(&l);
    let calls: Vec<(String, Value, Value)> = setup_calls(w)
        .into_iter()
        .filter(|(c, _, _)| c.contains("style") || c.contains("text_encoder"))
        .collect();
    let want = [
        (
            "style_vision",
            json!({"image": "request.image"}),
            json!({"last_hidden_state": "style.12.embeds"}),
        ),
        (
            "style_model",
            json!({"image_embeds": "style.12.embeds"}),
            json!({"tokens": "style.12.tokens"}),
        ),
        (
            "style_vision",
            json!({"image": "request.image_2"}),
            json!({"last_hidden_state": "style.13.embeds"}),
        ),
        (
            "style_model",
            json!({"image_embeds": "style.13.embeds"}),
            json!({"tokens": "style.13.tokens"}),
        ),
        (
            "text_encoder",
            json!({"input_ids": "request.input_ids"}),
            json!({"encoder_hidden_states": "conditioning.conditional_text"}),
        ),
        (
            "append_style",
            json!({"conditioning": "conditioning.conditional_text", "style": "style.12.tokens", "strength": "request.style_strength"}),
            json!({"styled": "conditioning.conditional_style_1"}),
        ),
        (
            "append_style",
            json!({"conditioning": "conditioning.conditional_style_1", "style": "style.13.tokens", "strength": "request.style_strength_2"}),
            json!({"styled": "conditioning.conditional"}),
        ),
    ]
    .map(|(c, i, o)| (c.to_string(), i, o));
    assert_eq!(calls[..want.len()], want);
    // A basic guider's negative side is its prompt again: encoded again
    // with the same style tokens appended (the tokens are made once).
    let rest: Vec<&str> = calls[want.len()..]
        .iter()
        .map(|(c, _, _)| c.as_str())
        .collect();
    assert_eq!(rest, ["text_encoder", "append_style", "append_style"]);
    assert_eq!(
        w["components"]["style_vision"]["contract"]["parameters"],
        json!({"crop": "center", "size": 384})
    );
    let strengths = [
        &w["inputs"]["request.style_strength"]["default"],
        &w["inputs"]["request.style_strength_2"]["default"],
    ];
    assert_eq!(strengths, [&json!(1.0), &json!(0.5)]);
    assert!(
        l.notes.iter().any(|n| n.starts_with(
            "style tokens: node 7's CLIP vision model (`style_vision`: its last hidden state) and node 6's style model (`style_model`) make tokens of a picture"
        )),
        "{:?}",
        l.notes
    );
}

#[test]
fn the_tokens_are_appended_as_comfyui_appends_them() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("append-style");
    let l = lowered(&redux(), &Target::default());
    // Two rows of three tokens, two pictures of two style tokens each, 4
    // wide, at strength 0.5.
    let conditioning: Vec<f32> = (0..2 * 3 * 4).map(|i| i as f32).collect();
    let style: Vec<f32> = (0..2 * 2 * 4).map(|i| 100.0 + i as f32).collect();
    let given = [
        (
            "conditioning",
            json!({"dtype": "float32", "shape": [2, 3, 4], "data": conditioning}).to_string(),
        ),
        (
            "style",
            json!({"dtype": "float32", "shape": [2, 2, 4], "data": style}).to_string(),
        ),
        (
            "strength",
            json!({"dtype": "float32", "shape": [1], "data": [0.5]}).to_string(),
        ),
    ];
    let out = run_policy_alone(&root, "append", &l.document, "append_style", &given);
    let (shape, joined) = npy(&out.join("styled.npy"));
    assert_eq!(shape, [2, 7, 4]);
    // ComfyUI: cat((txt, style.flatten(0, 1).unsqueeze(0) * strength), 1)
    // for each row of the batch.
    let mut want = Vec::new();
    for row in 0..2 {
        want.extend_from_slice(&conditioning[row * 12..row * 12 + 12]);
        want.extend(style.iter().map(|v| v * 0.5));
    }
    assert_eq!(joined, want);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_redux_package_runs() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("redux-run");
    let (_, out) = package_and_run(&root, "redux", &redux());
    let (shape, values) = npy(&out.join("image.npy"));
    assert_eq!(shape, [1, 3, 64, 64]);
    assert!(values.iter().all(|v| v.is_finite()));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn styles_the_lowering_cannot_append_are_refused() {
    let mut bias = redux();
    bias["13"]["inputs"]["strength_type"] = json!("attn_bias");
    assert_refused(
        &bias,
        (
            "13",
            "StyleModelApply",
            Some("strength_type"),
            "weights the style tokens by an attention bias, which the lowering does not make; it scales them (multiply)",
        ),
    );
    // At strength 1 the bias is log(1) = 0: it lowers.
    bias["13"]["inputs"]["strength"] = json!(1.0);
    lowered(&bias, &Target::default());
    let mut two = redux();
    two["22"] = json!({"class_type": "StyleModelLoader", "inputs": {"style_model_name": "other-redux.safetensors"}});
    two["13"]["inputs"]["style_model"] = json!(["22", 0]);
    assert_refused(
        &two,
        (
            "13",
            "StyleModelApply",
            None,
            "takes its tokens from another style model, CLIP vision model or crop than node 12; the lowering gives a stage one of each",
        ),
    );
    let mut siglip = redux();
    siglip["7"]["inputs"]["clip_name"] = json!("siglip_vision.safetensors");
    assert_refused(
        &siglip,
        (
            "7",
            "CLIPVisionLoader",
            Some("clip_name"),
            "loads 'siglip_vision.safetensors', a SigLIP model whose input size the lowering cannot tell from its name; it knows SigLIP at 384",
        ),
    );
    let mut zeroed = redux();
    zeroed["22"] =
        json!({"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["13", 0]}});
    zeroed["18"]["inputs"]["conditioning"] = json!(["22", 0]);
    assert_refused(
        &zeroed,
        (
            "22",
            "ConditioningZeroOut",
            None,
            "zeroes a prompt with style tokens (node 12); the lowering appends style tokens to a text prompt's",
        ),
    );
}
