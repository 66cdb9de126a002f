//! Stable Video Diffusion image-to-video (`SVD_img2vid_Conditioning`,
//! `VideoLinearCFGGuidance`, `ImageOnlyCheckpointLoader`): the init picture
//! embedded by the CLIP vision model for the positive prompt and zeroed for
//! the negative, resized with a centre crop and encoded as the latent the
//! denoiser takes beside the sample, the time ids as an input, SVD's
//! v-prediction on continuous EDM sigmas, the guidance scale rising over
//! the frames; the run makes a video; what cannot be expressed is refused.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, package_and_run, pattern, run_policy_alone, scratch, workflow,
    worst_relative,
};
use support::resize::torch_resize;
use wfstudio_core::comfyui::lower::Target;

fn svd() -> Value {
    pattern("svd")
}

/// The invoke steps of `component` in the first stage's setup and body.
fn calls<'w>(w: &'w Value, component: &str) -> Vec<&'w Value> {
    let stage = &w["steps"][0];
    ["setup", "steps"]
        .iter()
        .flat_map(|list| stage[*list].as_array().into_iter().flatten())
        .filter(|step| step["component"] == component)
        .collect()
}

#[test]
fn svd_conditioning_lowers_to_an_embedded_and_encoded_init_picture() {
    let l = lowered(&svd(), &Target::default());
    let w = workflow(&l);
    let inputs = &w["inputs"];
    assert_eq!(inputs["request.image"]["required"], true);
    assert!(inputs.get("request.input_ids").is_none());
    assert!(inputs.get("request.negative_input_ids").is_none());
    // fps - 1, the motion bucket, the augmentation level.
    assert_eq!(
        inputs["request.svd_time_ids"]["default"],
        json!([5.0, 127.0, 0.0])
    );
    let components = &w["components"];
    let clip = &components["clip_vision"]["ports"];
    assert_eq!(
        clip["inputs"]["image"]["shape"],
        json!(["batch", 3, "height", "width"])
    );
    assert_eq!(
        clip["outputs"]["image_embeds"]["shape"],
        json!(["batch", "prompt_sequence", "hidden"])
    );
    assert_eq!(
        components["init_scale"]["contract"]["parameters"],
        json!({"size": "fixed", "width": 16, "height": 24, "crop": "center", "method": "bilinear", "multiple": 8})
    );
    let denoiser = &components["denoiser"]["ports"]["inputs"];
    assert_eq!(denoiser["sample"]["rank"], 5);
    assert_eq!(denoiser["concat"]["rank"], 4);
    assert_eq!(denoiser["added_time_ids"]["shape"], json!([3]));
    assert_eq!(
        components["linear_guidance_combine"]["contract"]["parameters"],
        json!({"min_scale": 1.0})
    );
    let schedule = &components["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(schedule["prediction"], "v_prediction");
    assert_eq!(schedule["model_sampling"], "continuous_edm");
    assert_eq!(schedule["model_sigma_min"], 0.002);
    assert_eq!(schedule["model_sigma_max"], 700.0);
    // The positive prompt is the picture's embedding and its latent; the
    // negative, zeros of both.
    assert_eq!(
        calls(w, "clip_vision")[0]["inputs"],
        json!({"image": "request.image"})
    );
    let denoising: Vec<(&Value, &Value)> = calls(w, "denoiser")
        .into_iter()
        .map(|c| {
            (
                &c["inputs"]["encoder_hidden_states"],
                &c["inputs"]["concat"],
            )
        })
        .collect();
    assert_eq!(
        denoising,
        [
            (
                &json!("conditioning.unconditional"),
                &json!("video.concat_zero")
            ),
            (&json!("conditioning.conditional"), &json!("video.concat"))
        ]
    );
    assert_eq!(calls(w, "linear_guidance_combine").len(), 1);
    assert!(calls(w, "guidance_combine").is_empty());

    if !support::runtime_available() {
        return;
    }
    let root = scratch("svd");
    let (_, out) = package_and_run(&root, "svd", &svd());
    let (latent, values) = npy(&out.join("latent.npy"));
    assert_eq!(latent, [1, 4, 3, 3, 2], "3 frames of 24 x 16 pixels");
    assert!(values.iter().all(|v| v.is_finite()));
    let (video, _) = npy(&out.join("video.npy"));
    assert_eq!(video, [1, 3, 3, 24, 16]);
    assert!(out.join("video.gif").is_file());
    let _ = std::fs::remove_dir_all(&root);
}

/// `VideoLinearCFGGuidance` with `min_cfg` 1 and cfg 2.5 over 3 frames
/// guides them with 1, 1.75 and 2.5 (a batch of two rows each with its
/// own scale).
#[test]
fn the_linear_guidance_rises_over_the_frames() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("linear-guidance");
    let document = lowered(&svd(), &Target::default()).document;
    let shape = [2usize, 1, 3, 1, 2];
    let zeros = json!({"dtype": "float32", "shape": shape, "data": vec![0.0f32; 12]}).to_string();
    let ones = json!({"dtype": "float32", "shape": shape, "data": vec![1.0f32; 12]}).to_string();
    let scale = json!({"dtype": "float32", "shape": [2], "data": [2.5, 4.0]}).to_string();
    let out = run_policy_alone(
        &root,
        "combine",
        &document,
        "linear_guidance_combine",
        &[
            ("unconditional", zeros),
            ("conditional", ones),
            ("scale", scale),
        ],
    );
    let (shape_out, estimate) = npy(&out.join("estimate.npy"));
    assert_eq!(shape_out, shape);
    assert_eq!(
        estimate,
        [1.0, 1.0, 1.75, 1.75, 2.5, 2.5, 1.0, 1.0, 2.5, 2.5, 4.0, 4.0]
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// The init picture's resize: a 10 x 7 picture to 16 x 24 keeps its
/// centred 4 columns (`round((10 - 10 * (16/24) / (10/7)) / 2)` = 3 off
/// each side), a 5 x 10 one its centred 8 rows (`round((10 - 10 * (5/10) /
/// (16/24)) / 2)` = 1 off each end), then resizes bilinearly, as ComfyUI's
/// `common_upscale`.
#[test]
fn the_init_picture_is_cropped_to_the_videos_aspect_then_resized() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("init-scale");
    let document = lowered(&svd(), &Target::default()).document;
    let cases = [((7usize, 10usize), (0..7, 3..7)), ((10, 5), (1..9, 0..5))];
    for (n, ((h, w), (rows, columns))) in cases.into_iter().enumerate() {
        let picture: Vec<f32> = (0..3 * h * w)
            .map(|i| ((i * 37 % 23) as f32) / 22.0)
            .collect();
        let input = json!({"dtype": "float32", "shape": [1, 3, h, w], "data": picture}).to_string();
        let name = format!("crop-{n}");
        let out = run_policy_alone(&root, &name, &document, "init_scale", &[("image", input)]);
        let (shape, ours) = npy(&out.join("scaled.npy"));
        assert_eq!(shape, [1, 3, 24, 16], "{name}");
        let kept = (rows.len(), columns.len());
        let cropped: Vec<f32> = (0..3)
            .flat_map(|c| {
                let (picture, columns) = (&picture, columns.clone());
                rows.clone()
                    .flat_map(move |y| columns.clone().map(move |x| picture[c * h * w + y * w + x]))
            })
            .collect();
        let want = torch_resize(&cropped, 3, kept, (24, 16), "bilinear");
        let worst = worst_relative(&ours, &want);
        assert!(worst <= 1e-6, "{name}: {worst}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn svd_graphs_the_lowering_cannot_express_are_refused_by_node() {
    let edited = |edit: &dyn Fn(&mut Value)| {
        let mut g = svd();
        edit(&mut g);
        g
    };
    assert_refused(
        &edited(&|g| g["12"]["inputs"]["augmentation_level"] = json!(0.05)),
        (
            "12",
            "SVD_img2vid_Conditioning",
            Some("augmentation_level"),
            "is 0.05: ComfyUI adds noise of its own random state (not the graph's seed) to the init picture, which no seeded run repeats",
        ),
    );
    assert_refused(
        &edited(&|g| g["3"]["inputs"]["negative"] = json!(["12", 0])),
        (
            "12",
            "SVD_img2vid_Conditioning",
            None,
            "conditions sampler 3 other than as its positive (output 0) and negative (output 1) prompt, which the lowering takes together",
        ),
    );
    assert_refused(
        &edited(&|g| {
            g["16"] = json!({"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": 16, "height": 24, "length": 3, "batch_size": 1}});
            g["3"]["inputs"]["latent_image"] = json!(["16", 0]);
        }),
        (
            "12",
            "SVD_img2vid_Conditioning",
            None,
            "conditions sampler 3, which does not start from this node's latent (output 2)",
        ),
    );
    assert_refused(
        &edited(&|g| {
            g["17"] = json!({"class_type": "ImageOnlyCheckpointLoader", "inputs": {"ckpt_name": "other.safetensors"}});
            g["12"]["inputs"]["clip_vision"] = json!(["17", 1]);
        }),
        (
            "12",
            "SVD_img2vid_Conditioning",
            Some("clip_vision"),
            "reads output 1 of node 17; the lowering takes the CLIP vision model of the sampler's own checkpoint (node 15, output 1)",
        ),
    );
    assert_refused(
        &edited(&|g| {
            g["3"]["inputs"]["cfg"] = json!(1.0);
            g["14"]["inputs"]["min_cfg"] = json!(0.5);
        }),
        (
            "14",
            "VideoLinearCFGGuidance",
            None,
            "raises the scale to a cfg of 1, where ComfyUI skips the negative prompt's model call; the lowering raises the scale over a video's frames only",
        ),
    );
    let mut picture = pattern("img2img");
    picture["9"] = json!({"class_type": "VideoLinearCFGGuidance", "inputs": {"min_cfg": 1.0, "model": ["1", 0]}});
    picture["5"]["inputs"]["model"] = json!(["9", 0]);
    assert_refused(
        &picture,
        (
            "9",
            "VideoLinearCFGGuidance",
            None,
            "guides a picture or audio latent, where ComfyUI would vary the scale over the batch's rows; the lowering raises the scale over a video's frames only",
        ),
    );
}
