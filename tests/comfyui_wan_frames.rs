//! Wan's image-to-video conditioning (`WanImageToVideo`,
//! `WanFirstLastFrameToVideo`, `WanFunInpaintToVideo`): the node's
//! pictures, resized bilinear with a centre crop to the video's size,
//! become `length` frames of grey with the start picture first and the
//! end picture last; the VAE encodes them, and every denoiser call takes
//! that latent as `concat` and the mask of the frames the pictures fill
//! as `concat_mask`, as ComfyUI's Wan model reads them.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, denoiser_bindings, loops, lowered, npy, package_and_run, pattern,
    run_policy_alone, scratch, setup_steps, stage_calls, tensor, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// Wan 2.2's first-last-frame template, small (the `wan-frames` pattern):
/// 64x48 pixels, 9 frames (3 latent frames), one sampler.
fn first_last() -> Value {
    pattern("wan-frames")
}

/// The setup steps' components, in order.
fn setup_components(w: &Value) -> Vec<&str> {
    setup_steps(w)
        .iter()
        .filter_map(|s| s["component"].as_str())
        .collect()
}

#[test]
fn a_first_last_frame_node_gives_every_denoiser_call_its_encoded_video_and_mask() {
    let l = lowered(&first_last(), &Target::default());
    let w = workflow(&l);
    let setup = setup_components(w);
    let at = |c: &str| setup.iter().position(|s| *s == c).expect(c);
    assert!(at("init_scale") < at("video_frames") && at("video_frames") < at("vae_encoder"));
    let steps = setup_steps(w);
    let scaled: Vec<(&Value, &Value)> = steps
        .iter()
        .filter(|s| s["component"] == "init_scale")
        .map(|s| (&s["inputs"]["image"], &s["outputs"]["scaled"]))
        .collect();
    assert_eq!(
        scaled,
        [
            (&json!("request.image"), &json!("frames.start")),
            (&json!("request.image_2"), &json!("frames.end"))
        ]
    );
    let parameters = |c: &str| w["components"][c]["contract"]["parameters"].clone();
    assert_eq!(
        parameters("init_scale"),
        json!({"size": "fixed", "width": 64, "height": 48, "crop": "center", "method": "bilinear"})
    );
    assert_eq!(
        parameters("video_frames"),
        json!({"length": 9, "temporal_scale": 4, "latent_frames": 3, "scale": 8})
    );
    let encode = &steps[at("vae_encoder")];
    assert_eq!(encode["inputs"]["image"], "frames.pixels");
    assert_eq!(encode["outputs"]["latent"], "frames.latent");
    assert_eq!(
        w["components"]["vae_encoder"]["ports"]["inputs"]["image"]["shape"],
        json!(["batch", "video_frames", 3, "height", "width"])
    );
    for (port, value) in [("concat", "frames.latent"), ("concat_mask", "frames.mask")] {
        let bound = denoiser_bindings(w, port);
        assert_eq!(bound.len(), 2, "{port}: both prompts' calls");
        assert!(bound.iter().all(|(_, v)| *v == value), "{port}: {bound:?}");
    }
    assert_eq!(
        w["components"]["denoiser"]["ports"]["inputs"]["concat_mask"]["shape"],
        json!(["batch", 4, "latent_frames", "latent_height", "latent_width"])
    );
    // The latent the sampler starts from: zeros of the video's size.
    let shape = &w["components"]["latent_row_shape"]["contract"]["parameters"];
    assert_eq!(
        (
            &shape["width"],
            &shape["height"],
            &shape["length"],
            &shape["channels"]
        ),
        (&json!(64), &json!(48), &json!(9), &json!(16))
    );
}

/// ComfyUI's `WanFirstLastFrameToVideo` video and `1 - concat_mask` as its
/// Wan model reads it, written as ComfyUI computes them: a mask of ones
/// over `4 * latent_frames` video frames, zeros over the start picture's
/// frame and the three after it and over the end picture's frame, viewed
/// as four channels per latent frame.
fn comfyui_frames(
    (start, end): (Option<&[f32]>, Option<&[f32]>),
    length: usize,
    (h, w, scale): (usize, usize, usize),
) -> (Vec<f32>, Vec<f32>) {
    let picture = 3 * h * w;
    let mut image = vec![0.5f32; length * picture];
    let latent_frames = (length - 1) / 4 + 1;
    let mut mask = vec![1.0f32; 4 * latent_frames];
    if let Some(start) = start {
        image[..picture].copy_from_slice(start);
        for m in mask.iter_mut().take(1 + 3) {
            *m = 0.0;
        }
    }
    if let Some(end) = end {
        image[(length - 1) * picture..].copy_from_slice(end);
        mask[4 * latent_frames - 1] = 0.0;
    }
    // mask[frame * 4 + channel] -> out[channel][frame], then 1 - mask,
    // spread over the latent grid.
    let cells = (h / scale) * (w / scale);
    let mut out = Vec::with_capacity(4 * latent_frames * cells);
    for channel in 0..4 {
        for frame in 0..latent_frames {
            out.extend(std::iter::repeat_n(1.0 - mask[frame * 4 + channel], cells));
        }
    }
    (image, out)
}

#[test]
fn the_video_and_its_mask_are_comfyui_s() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("wan-frames");
    let (h, w) = (16, 24);
    let (start, start_text) = tensor([1, 3, h, w], 1);
    let (end, end_text) = tensor([1, 3, h, w], 5);
    // Both pictures, the start alone (as WanImageToVideo's), the end alone; 9
    // frames (3 latent frames), 6 (one frame past a latent frame), 1.
    let cases: [(&str, bool, bool, usize); 5] = [
        ("both", true, true, 9),
        ("start", true, false, 9),
        ("end", false, true, 6),
        ("one", true, true, 1),
        ("two", true, false, 2),
    ];
    for (name, with_start, with_end, length) in cases {
        let mut g = first_last();
        g["8"]["inputs"]["length"] = json!(length);
        let inputs = g["8"]["inputs"].as_object_mut().expect("inputs");
        if !with_start {
            inputs.remove("start_image");
        }
        if !with_end {
            inputs.remove("end_image");
        }
        let l = lowered(&g, &Target::default());
        let mut given = Vec::new();
        if with_start {
            given.push(("start", start_text.clone()));
        }
        if with_end {
            given.push(("end", end_text.clone()));
        }
        let out = run_policy_alone(&root, name, &l.document, "video_frames", &given);
        let (frames_shape, frames) = npy(&out.join("frames.npy"));
        let (mask_shape, mask) = npy(&out.join("mask.npy"));
        let (want_frames, want_mask) = comfyui_frames(
            (
                with_start.then_some(start.as_slice()),
                with_end.then_some(end.as_slice()),
            ),
            length,
            (h, w, 8),
        );
        let latent_frames = (length - 1) / 4 + 1;
        assert_eq!(frames_shape, [1, length, 3, h, w], "{name}");
        assert_eq!(mask_shape, [1, 4, latent_frames, h / 8, w / 8], "{name}");
        assert_eq!(frames, want_frames, "{name}: frames");
        assert_eq!(mask, want_mask, "{name}: mask");
    }
}

#[test]
fn wan_2_2_s_two_experts_each_take_the_video() {
    // The second expert samples on from the first's latent; both samplers'
    // prompts come through the node, so the second reads the first's video.
    let mut g = first_last();
    g["10"]["class_type"] = json!("KSamplerAdvanced");
    g["10"]["inputs"] = json!({"add_noise": "enable", "noise_seed": 7, "steps": 4, "cfg": 3.5, "sampler_name": "euler", "scheduler": "simple", "start_at_step": 0, "end_at_step": 2, "return_with_leftover_noise": "enable", "model": ["9", 0], "positive": ["8", 0], "negative": ["8", 1], "latent_image": ["8", 2]});
    g["14"] = json!({"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.2_i2v_low_noise_14B_fp8_scaled.safetensors", "weight_dtype": "default"}});
    g["15"] =
        json!({"class_type": "ModelSamplingSD3", "inputs": {"shift": 8.0, "model": ["14", 0]}});
    g["16"] = json!({"class_type": "KSamplerAdvanced", "inputs": {"add_noise": "disable", "noise_seed": 0, "steps": 4, "cfg": 3.5, "sampler_name": "euler", "scheduler": "simple", "start_at_step": 2, "end_at_step": 10000, "return_with_leftover_noise": "disable", "model": ["15", 0], "positive": ["8", 0], "negative": ["8", 1], "latent_image": ["10", 0]}});
    g["11"]["inputs"]["samples"] = json!(["16", 0]);
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    let loops = loops(w);
    assert_eq!(loops.len(), 2);
    // One LoadImage is one input: the second stage reads the first's.
    let pictures: Vec<&String> = w["inputs"]
        .as_object()
        .expect("inputs")
        .keys()
        .filter(|k| k.contains("image"))
        .collect();
    assert_eq!(pictures, ["request.image", "request.image_2"]);
    // The second expert reads the video, mask and latent the first made:
    // no second encode, no second encoder.
    let setup = |stage: &Value| -> Vec<String> {
        stage["setup"]
            .as_array()
            .expect("setup")
            .iter()
            .filter_map(|s| s["component"].as_str().map(str::to_string))
            .collect()
    };
    assert!(setup(loops[0]).contains(&"video_frames".to_string()));
    assert!(
        setup(loops[1]).iter().all(|c| !c.contains("init_scale")
            && !c.contains("video_frames")
            && !c.contains("vae_encoder")),
        "{:?}",
        setup(loops[1])
    );
    let encoders: Vec<&String> = w["components"]
        .as_object()
        .expect("components")
        .keys()
        .filter(|c| c.contains("vae_encoder"))
        .collect();
    assert_eq!(encoders, ["vae_encoder"]);
    for stage in &loops {
        let calls = stage_calls(stage, "denoiser");
        assert_eq!(calls.len(), 2);
        for call in calls {
            assert_eq!(call["inputs"]["concat"], "frames.latent");
            assert_eq!(call["inputs"]["concat_mask"], "frames.mask");
        }
    }
}

/// The pattern with its start picture (`21`) and maybe its end picture
/// (`22`) embedded by CLIP vision (`crop: none`, as Wan 2.1's templates
/// have it), on the node's `inputs`.
fn with_vision(inputs: &[&str]) -> Value {
    let mut g = first_last();
    g["20"] = json!({"class_type": "CLIPVisionLoader", "inputs": {"clip_name": "clip_vision_h.safetensors"}});
    for (input, (node, image)) in inputs.iter().zip([("21", "6"), ("22", "7")]) {
        g[node] = json!({"class_type": "CLIPVisionEncode", "inputs": {"crop": "none", "clip_vision": ["20", 0], "image": [image, 0]}});
        g["8"]["inputs"][*input] = json!([node, 0]);
    }
    g
}

#[test]
fn clip_vision_embeddings_of_the_pictures_are_the_denoiser_s_clip_fea() {
    // Wan 2.1's first-last-frame model: both pictures embedded, the start's
    // tokens first.
    let l = lowered(
        &with_vision(&["clip_vision_start_image", "clip_vision_end_image"]),
        &Target::default(),
    );
    let w = workflow(&l);
    let steps = setup_steps(w);
    let embeds: Vec<(&Value, &Value)> = steps
        .iter()
        .filter(|s| s["component"] == "clip_vision")
        .map(|s| {
            (
                &s["inputs"]["image"],
                &s["outputs"]["penultimate_hidden_states"],
            )
        })
        .collect();
    assert_eq!(
        embeds,
        [
            (&json!("request.image"), &json!("frames.vision_start")),
            (&json!("request.image_2"), &json!("frames.vision_end"))
        ]
    );
    let join = steps
        .iter()
        .find(|s| s["component"] == "join_tokens")
        .expect("the tokens joined");
    assert_eq!(
        (&join["inputs"], &join["outputs"]),
        (
            &json!({"first": "frames.vision_start", "second": "frames.vision_end"}),
            &json!({"joined": "frames.vision"})
        )
    );
    assert_eq!(
        w["components"]["clip_vision"]["contract"]["parameters"],
        json!({"crop": "none", "size": 224})
    );
    let bound = denoiser_bindings(w, "clip_fea");
    assert_eq!(bound.len(), 2);
    assert!(
        bound.iter().all(|(_, v)| *v == "frames.vision"),
        "{bound:?}"
    );
    // WanImageToVideo (Wan 2.1's image-to-video): the start picture's
    // embedding is the denoiser's as it is.
    let mut start_only = with_vision(&["clip_vision_output"]);
    start_only["8"]["class_type"] = json!("WanImageToVideo");
    start_only["8"]["inputs"]
        .as_object_mut()
        .expect("inputs")
        .remove("end_image");
    let l = lowered(&start_only, &Target::default());
    let w = workflow(&l);
    let steps = setup_steps(w);
    assert!(steps.iter().all(|s| s["component"] != "join_tokens"));
    let embed = steps
        .iter()
        .find(|s| s["component"] == "clip_vision")
        .expect("an embedding");
    assert_eq!(
        embed["outputs"]["penultimate_hidden_states"],
        "frames.vision"
    );
    let bound = denoiser_bindings(w, "clip_fea");
    assert_eq!(bound.len(), 2);
    assert!(
        bound.iter().all(|(_, v)| *v == "frames.vision"),
        "{bound:?}"
    );
    // The two embeddings joined: the start's tokens, then the end's.
    if !support::runtime_available() {
        return;
    }
    let l = lowered(
        &with_vision(&["clip_vision_start_image", "clip_vision_end_image"]),
        &Target::default(),
    );
    let root = scratch("wan-join");
    let first = json!({"dtype": "float32", "shape": [1, 2, 3], "data": [1, 2, 3, 4, 5, 6]});
    let second = json!({"dtype": "float32", "shape": [1, 1, 3], "data": [7, 8, 9]});
    let out = run_policy_alone(
        &root,
        "join",
        &l.document,
        "join_tokens",
        &[("first", first.to_string()), ("second", second.to_string())],
    );
    let (shape, joined) = npy(&out.join("joined.npy"));
    assert_eq!(shape, [1, 3, 3]);
    assert_eq!(joined, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
}

#[test]
fn what_the_lowering_cannot_give_the_model_is_refused_at_its_node() {
    let mut other = with_vision(&["clip_vision_start_image"]);
    other["21"]["inputs"]["image"] = json!(["7", 0]);
    assert_refused(
        &other,
        (
            "21",
            "CLIPVisionEncode",
            Some("image"),
            "embeds another picture than node 8's start picture, which its `clip_vision_start_image` stands for; the lowering gives the denoiser embeddings of the node's own pictures",
        ),
    );
    let mut cropped = with_vision(&["clip_vision_start_image", "clip_vision_end_image"]);
    cropped["22"]["inputs"]["crop"] = json!("center");
    assert_refused(
        &cropped,
        (
            "22",
            "CLIPVisionEncode",
            None,
            "embeds with another CLIP vision model or crop than the node's other embedding, node 21",
        ),
    );
    let mut two = first_last();
    two["8"]["inputs"]["batch_size"] = json!(2);
    assert_refused(
        &two,
        (
            "8",
            "WanFirstLastFrameToVideo",
            Some("batch_size"),
            "asks for 2 videos; the lowering conditions one video on its pictures",
        ),
    );
    let mut vae = first_last();
    vae["3"]["inputs"]["vae_name"] = json!("my_vae.safetensors");
    assert_refused(
        &vae,
        (
            "3",
            "VAELoader",
            Some("vae_name"),
            "loads `my_vae.safetensors`, whose latent channels and scale the lowering does not know; it knows Wan 2.1's and Wan 2.2's VAEs",
        ),
    );
    // WanImageToVideo makes Wan 2.1's latent: any VAE but Wan 2.2's.
    let mut i2v = first_last();
    i2v["8"]["class_type"] = json!("WanImageToVideo");
    i2v["3"]["inputs"]["vae_name"] = json!("Wan2_1_VAE_bf16.safetensors");
    lowered(&i2v, &Target::default());
    i2v["3"]["inputs"]["vae_name"] = json!("wan2.2_vae.safetensors");
    assert_refused(
        &i2v,
        (
            "3",
            "VAELoader",
            Some("vae_name"),
            "loads `wan2.2_vae.safetensors`, whose latent is not Wan 2.1's, which WanImageToVideo makes",
        ),
    );
    let mut side = first_last();
    side["8"]["inputs"]["width"] = json!(72);
    assert_refused(
        &side,
        (
            "8",
            "WanFirstLastFrameToVideo",
            Some("width"),
            "is 72, not a multiple of 16 as the node's widget steps",
        ),
    );
    // The node's prompts on a sampler starting from another empty latent,
    // and its latent under prompts that do not come through it.
    let mut other_latent = first_last();
    other_latent["23"] = json!({"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": 64, "height": 48, "length": 9, "batch_size": 1}});
    other_latent["10"]["inputs"]["latent_image"] = json!(["23", 0]);
    assert_refused(
        &other_latent,
        (
            "8",
            "WanFirstLastFrameToVideo",
            None,
            "attaches its video to the prompts of a sampler that starts from another latent",
        ),
    );
    let mut bare_prompts = first_last();
    bare_prompts["10"]["inputs"]["positive"] = json!(["4", 0]);
    bare_prompts["10"]["inputs"]["negative"] = json!(["5", 0]);
    assert_refused(
        &bare_prompts,
        (
            "8",
            "WanFirstLastFrameToVideo",
            None,
            "gives the sampler its latent but not its video: the sampler's prompts do not come through it",
        ),
    );
    let mut bare = first_last();
    let inputs = bare["8"]["inputs"].as_object_mut().expect("inputs");
    inputs.remove("start_image");
    inputs.remove("end_image");
    assert_refused(
        &bare,
        (
            "8",
            "WanFirstLastFrameToVideo",
            Some("start_image"),
            "has no picture to start or end the video with; the lowering makes image-to-video conditioning from a picture",
        ),
    );
    let mut one_sided = first_last();
    one_sided["10"]["inputs"]["negative"] = json!(["5", 0]);
    assert_refused(
        &one_sided,
        (
            "8",
            "WanFirstLastFrameToVideo",
            None,
            "attaches its video to some of the sampler's prompts only (not to the one encoded by node 5); the lowering gives it to every prompt",
        ),
    );
    let mut resized = first_last();
    resized["22"] = json!({"class_type": "ImageScale", "inputs": {"upscale_method": "bilinear", "width": 32, "height": 32, "crop": "disabled", "image": ["6", 0]}});
    resized["8"]["inputs"]["start_image"] = json!(["22", 0]);
    assert_refused(
        &resized,
        (
            "22",
            "ImageScale",
            None,
            "feeds `start_image` of node 8; the importer takes pictures only straight from LoadImage (its image becomes a workflow input)",
        ),
    );
}

#[test]
fn a_video_whose_length_is_not_a_whole_latent_frame_runs() {
    // 6 frames: 2 latent frames, which decode to 5 (the encoder takes 6).
    if !support::runtime_available() {
        return;
    }
    let mut g = first_last();
    g["8"]["inputs"]["length"] = json!(6);
    let root = scratch("wan-six");
    let (_, out) = package_and_run(&root, "wan-six", &g);
    let (shape, _) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [1, 16, 2, 6, 8]);
    let (shape, _) = npy(&out.join("video.npy"));
    assert_eq!(shape, [1, 5, 3, 48, 64]);
}
