//! Wan VACE (`WanVaceToVideo` then `TrimVideoLatent`): the VAE encodes
//! `length` frames of grey as the inactive half and, where a loaded
//! control video is given, its frames fitted to the video's size and
//! length as the reactive one (else the grey again); a
//! reference picture, resized to the video's size, is encoded as one
//! latent frame ahead of them; every denoiser call takes VACE's context
//! (both latents, then the mask) as `vace_context` and the strength as
//! `vace_strength`; the decode reads the sampled latent without the
//! reference's frame.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, denoiser_bindings, invocations, loops, lowered, npy, package_and_run, pattern,
    run_policy_alone, scratch, setup_calls, stage_calls, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// Wan 2.1 VACE's reference-to-video template, small (the `wan-vace`
/// pattern): 64x48 pixels, 9 frames (3 latent frames, 4 with the
/// reference's), strength 0.75.
fn reference_to_video() -> Value {
    pattern("wan-vace")
}

/// The pattern without its reference picture (VACE text-to-video).
fn text_to_video() -> Value {
    let mut g = reference_to_video();
    g["7"]["inputs"]
        .as_object_mut()
        .expect("inputs")
        .remove("reference_image");
    g.as_object_mut().expect("graph").remove("6");
    g
}

#[test]
fn the_context_is_made_once_and_every_denoiser_call_takes_it() {
    let l = lowered(&reference_to_video(), &Target::default());
    let w = workflow(&l);
    let calls: Vec<(String, Value, Value)> = setup_calls(w)
        .into_iter()
        .take_while(|(c, _, _)| c != "diffusion_schedule")
        .collect();
    let want = [
        ("grey_video", json!({}), json!({"frames": "vace.pixels"})),
        (
            "vae_encoder",
            json!({"image": "vace.pixels"}),
            json!({"latent": "vace.latent"}),
        ),
        (
            "init_scale",
            json!({"image": "request.image"}),
            json!({"scaled": "vace.reference_picture"}),
        ),
        (
            "one_frame",
            json!({"image": "vace.reference_picture"}),
            json!({"frames": "vace.reference_video"}),
        ),
        (
            "vae_encoder",
            json!({"image": "vace.reference_video"}),
            json!({"latent": "vace.reference"}),
        ),
        (
            "vace_context",
            json!({"inactive": "vace.latent", "reactive": "vace.latent", "reference": "vace.reference"}),
            json!({"context": "vace.context"}),
        ),
    ]
    .map(|(c, i, o)| (c.to_string(), i, o));
    assert_eq!(calls, want);
    let parameters = |c: &str| w["components"][c]["contract"]["parameters"].clone();
    assert_eq!(
        parameters("grey_video"),
        json!({"length": 9, "width": 64, "height": 48})
    );
    assert_eq!(
        parameters("init_scale"),
        json!({"size": "fixed", "width": 64, "height": 48, "crop": "center", "method": "bilinear"})
    );
    // The sampled latent has the reference's frame ahead of the video's.
    assert_eq!(
        parameters("latent_row_shape"),
        json!({"width": 64, "height": 48, "batch_size": 1, "channels": 16, "scale": 8, "length": 9, "temporal_scale": 4, "leading_frames": 1})
    );
    for port in ["vace_context", "vace_strength"] {
        let bound = denoiser_bindings(w, port);
        assert_eq!(bound.len(), 2, "{port}");
        let want = match port {
            "vace_context" => "vace.context",
            _ => "request.vace_strength",
        };
        assert!(bound.iter().all(|(_, b)| *b == want), "{port}: {bound:?}");
    }
    assert_eq!(w["inputs"]["request.vace_strength"]["default"], json!(0.75));
    assert_eq!(
        w["components"]["denoiser"]["ports"]["inputs"]["vace_context"]["shape"],
        json!([
            "batch",
            96,
            "latent_frames",
            "latent_height",
            "latent_width"
        ])
    );
    // The decode reads the sampled latent less the reference's frame.
    let top: Vec<&Value> = w["steps"].as_array().expect("steps").iter().collect();
    let trim = top
        .iter()
        .find(|s| s["component"] == "trim_latent")
        .expect("a trim");
    assert_eq!(trim["inputs"]["latent"], "latent_state");
    assert_eq!(parameters("trim_latent"), json!({"frames": 1}));
    let decode = top
        .iter()
        .find(|s| s["component"] == "vae_decoder")
        .expect("a decode");
    assert_eq!(decode["inputs"]["latent"], trim["outputs"]["trimmed"]);
}

#[test]
fn without_a_reference_nothing_is_trimmed_or_put_ahead() {
    let l = lowered(&text_to_video(), &Target::default());
    let w = workflow(&l);
    let components: Vec<String> = setup_calls(w).into_iter().map(|(c, _, _)| c).collect();
    assert!(!components.contains(&"init_scale".to_string()));
    let context = setup_calls(w)
        .into_iter()
        .find(|(c, _, _)| c == "vace_context")
        .expect("the context");
    assert_eq!(
        context.1,
        json!({"inactive": "vace.latent", "reactive": "vace.latent"})
    );
    assert!(
        w["components"]["latent_row_shape"]["contract"]["parameters"]
            .get("leading_frames")
            .is_none()
    );
    // `trim_latent` (output 3) is 0: the decode reads the sampled latent.
    assert!(w["components"].get("trim_latent").is_none());
    let decode = w["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["component"] == "vae_decoder")
        .expect("a decode");
    assert_eq!(decode["inputs"]["latent"], "latent_state");
}

/// A `[1, c, f, h, w]` tensor of distinct values, and its JSON.
fn video_latent(shape: [usize; 5], salt: usize) -> (Vec<f32>, String) {
    let data: Vec<f32> = (0..shape.iter().product::<usize>())
        .map(|i| ((i * 31 + salt * 13) % 23) as f32 / 5.0 - 2.0)
        .collect();
    let text = json!({"dtype": "float32", "shape": shape, "data": data}).to_string();
    (data, text)
}

/// ComfyUI's VACE context, written as `WanVaceToVideo` and its model
/// compute it: `vace_frames` is the inactive and reactive latents on
/// channels, after the reference's latent with zeros on the frame axis;
/// the mask is ones over `length` video frames at the video's size,
/// viewed as 64 channels (an 8x8 cell's pixels), nearest to the latent
/// frames, after zeros for the reference; the model reads both on
/// channels. `[c][f][cell]` order.
fn comfyui_context(
    (inactive, reactive): (&[f32], &[f32]),
    reference: Option<&[f32]>,
    (frames, cells): (usize, usize),
) -> Vec<f32> {
    let ahead = usize::from(reference.is_some());
    let total = ahead + frames;
    let mut out = vec![0f32; 96 * total * cells];
    let at = |c: usize, f: usize, k: usize| (c * total + f) * cells + k;
    for c in 0..16 {
        for k in 0..cells {
            if let Some(reference) = reference {
                out[at(c, 0, k)] = reference[c * cells + k];
            }
            for f in 0..frames {
                let from = (c * frames + f) * cells + k;
                out[at(c, ahead + f, k)] = inactive[from];
                out[at(16 + c, ahead + f, k)] = reactive[from];
            }
        }
    }
    for c in 32..96 {
        for f in ahead..total {
            for k in 0..cells {
                out[at(c, f, k)] = 1.0;
            }
        }
    }
    out
}

#[test]
fn the_context_grey_video_and_trim_are_comfyui_s() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("vace");
    let (frames, h, w) = (3, 2, 3);
    let (inactive, inactive_text) = video_latent([1, 16, frames, h, w], 1);
    let (reactive, reactive_text) = video_latent([1, 16, frames, h, w], 4);
    let (reference, reference_text) = video_latent([1, 16, 1, h, w], 9);
    for (name, graph, with_reference) in [
        ("reference", reference_to_video(), true),
        ("text", text_to_video(), false),
    ] {
        let l = lowered(&graph, &Target::default());
        let mut given = vec![
            ("inactive", inactive_text.clone()),
            ("reactive", reactive_text.clone()),
        ];
        if with_reference {
            given.push(("reference", reference_text.clone()));
        }
        let out = run_policy_alone(&root, name, &l.document, "vace_context", &given);
        let (shape, context) = npy(&out.join("context.npy"));
        let ahead = usize::from(with_reference);
        assert_eq!(shape, [1, 96, ahead + frames, h, w], "{name}");
        let want = comfyui_context(
            (&inactive, &reactive),
            with_reference.then_some(reference.as_slice()),
            (frames, h * w),
        );
        assert_eq!(context, want, "{name}");
    }
    let l = lowered(&reference_to_video(), &Target::default());
    let out = run_policy_alone(&root, "grey", &l.document, "grey_video", &[]);
    let (shape, grey) = npy(&out.join("frames.npy"));
    assert_eq!(shape, [1, 9, 3, 48, 64]);
    assert!(grey.iter().all(|v| *v == 0.5));
    let (latent, latent_text) = video_latent([1, 16, 4, h, w], 2);
    let out = run_policy_alone(
        &root,
        "trim",
        &l.document,
        "trim_latent",
        &[("latent", latent_text)],
    );
    let (shape, trimmed) = npy(&out.join("trimmed.npy"));
    assert_eq!(shape, [1, 16, 3, h, w]);
    let cells = h * w;
    let want: Vec<f32> = (0..16)
        .flat_map(|c| latent[(c * 4 + 1) * cells..(c * 4 + 4) * cells].to_vec())
        .collect();
    assert_eq!(trimmed, want);
}

#[test]
fn a_vace_package_runs_and_decodes_the_video_s_frames() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("vace-run");
    for (name, graph, latent_frames) in [
        ("reference", reference_to_video(), 4),
        ("text", text_to_video(), 3),
    ] {
        let (_, out) = package_and_run(&root, name, &graph);
        let (latent, _) = npy(&out.join("latent.npy"));
        assert_eq!(latent, [1, 16, latent_frames, 6, 8], "{name}");
        let (video, values) = npy(&out.join("video.npy"));
        assert_eq!(video, [1, 9, 3, 48, 64], "{name}");
        assert!(values.iter().all(|v| v.is_finite()), "{name}");
    }
}

/// The pattern with a loaded control video (VACE video-to-video).
fn control_video() -> Value {
    let mut g = reference_to_video();
    g["20"] = json!({"class_type": "LoadVideo", "inputs": {"file": "pose.mp4"}});
    g["21"] = json!({"class_type": "GetVideoComponents", "inputs": {"video": ["20", 0]}});
    g["7"]["inputs"]["control_video"] = json!(["21", 0]);
    g
}

#[test]
fn a_control_video_is_fitted_to_the_video_and_encoded_as_the_reactive_half() {
    let l = lowered(&control_video(), &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["inputs"]["request.control_video"]["contract"]["shape"],
        json!([
            1,
            "control_video_frames",
            3,
            "control_video_height",
            "control_video_width"
        ])
    );
    let calls = setup_calls(w);
    let made: Vec<&str> = calls
        .iter()
        .filter(|(_, inputs, _)| {
            inputs
                .as_object()
                .into_iter()
                .flat_map(|o| o.values())
                .any(|v| v.as_str().is_some_and(|v| v.contains("control")))
        })
        .map(|(component, _, _)| component.as_str())
        .collect();
    assert_eq!(
        made,
        [
            "take_frames",
            "frame_pictures",
            "init_scale",
            "batch_frames",
            "fit_frames",
            "vae_encoder",
            "vace_context"
        ]
    );
    let context = calls
        .iter()
        .find(|(component, _, _)| component == "vace_context")
        .expect("the context");
    assert_eq!(context.1["inactive"], "vace.latent");
    assert_eq!(context.1["reactive"], "vace.control");
    assert_eq!(
        w["components"]["fit_frames"]["contract"]["parameters"],
        json!({"length": 9, "value": 0.5})
    );
    assert!(
        l.notes[0].starts_with("node 7 (WanVaceToVideo) takes the control video request.control_video (node 20's frames: the first 9, resized bilinear to cover 64x48, centre cropped, padded with grey frames to 9: control.video): the VAE encodes 9 frames of grey at 64x48 (vace.pixels), and every denoiser call takes VACE's context as `vace_context` (vace.context: that latent as the inactive half and the control video's as the reactive one,"),
        "{}",
        l.notes[0]
    );
    // The video may play at the control video's frame rate, an input
    // beside it.
    let mut at_its_rate = control_video();
    at_its_rate["12"]["inputs"]["fps"] = json!(["21", 2]);
    let l2 = lowered(&at_its_rate, &Target::default());
    let steps = workflow(&l2)["steps"].as_array().expect("steps").clone();
    let rate = steps
        .iter()
        .find(|s| s["output"] == "video_frame_rate")
        .expect("the frame rate emitted");
    assert_eq!(rate["value"], "request.control_video_frame_rate");
    if !support::runtime_available() {
        return;
    }
    // ComfyUI's `control_video[:length]`, padded with 0.5 after: 2 frames
    // become 9, 11 become their first 9.
    let root = scratch("vace-control");
    for (name, frames) in [("short", 2usize), ("long", 11)] {
        let data: Vec<f32> = (0..frames * 3 * 4).map(|i| i as f32 / 100.0).collect();
        let given = json!({"dtype": "float32", "shape": [1, frames, 3, 2, 2], "data": data});
        let out = run_policy_alone(
            &root,
            name,
            &l.document,
            "fit_frames",
            &[("video", given.to_string())],
        );
        let (shape, fitted) = npy(&out.join("fitted.npy"));
        assert_eq!(shape, [1, 9, 3, 2, 2], "{name}");
        let kept = frames.min(9) * 12;
        assert_eq!(fitted[..kept], data[..kept], "{name}");
        assert!(fitted[kept..].iter().all(|v| *v == 0.5), "{name}");
    }
    let (_, out) = package_and_run(&root, "control", &control_video());
    let (video, values) = npy(&out.join("video.npy"));
    assert_eq!(video, [1, 9, 3, 48, 64]);
    assert!(values.iter().all(|v| v.is_finite()));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn two_stages_of_one_node_share_its_context() {
    let mut g = reference_to_video();
    g["9"]["class_type"] = json!("KSamplerAdvanced");
    g["9"]["inputs"] = json!({"add_noise": "enable", "noise_seed": 7, "steps": 4, "cfg": 3.5, "sampler_name": "uni_pc", "scheduler": "simple", "start_at_step": 0, "end_at_step": 2, "return_with_leftover_noise": "enable", "model": ["8", 0], "positive": ["7", 0], "negative": ["7", 1], "latent_image": ["7", 2]});
    g["14"] = json!({"class_type": "KSamplerAdvanced", "inputs": {"add_noise": "disable", "noise_seed": 0, "steps": 4, "cfg": 3.5, "sampler_name": "uni_pc", "scheduler": "simple", "start_at_step": 2, "end_at_step": 10000, "return_with_leftover_noise": "disable", "model": ["8", 0], "positive": ["7", 0], "negative": ["7", 1], "latent_image": ["9", 0]}});
    g["10"]["inputs"]["samples"] = json!(["14", 0]);
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    let loops = loops(w);
    assert_eq!(loops.len(), 2);
    let strengths: Vec<&String> = w["inputs"]
        .as_object()
        .expect("inputs")
        .keys()
        .filter(|k| k.contains("vace_strength"))
        .collect();
    assert_eq!(strengths, ["request.vace_strength"]);
    let second: Vec<&str> = loops[1]["setup"]
        .as_array()
        .expect("setup")
        .iter()
        .filter_map(|s| s["component"].as_str())
        .collect();
    assert!(
        second
            .iter()
            .all(|c| !c.contains("vace") && !c.contains("vae_encoder") && !c.contains("grey")),
        "{second:?}"
    );
    for stage in &loops {
        let calls = stage_calls(stage, "denoiser");
        assert!(!calls.is_empty());
        for call in calls {
            assert_eq!(call["inputs"]["vace_context"], "vace.context");
            assert_eq!(call["inputs"]["vace_strength"], "request.vace_strength");
        }
    }
    assert!(
        l.notes.iter().any(|n| n
            == "stage 2 (node 14): every denoiser call takes the VACE context an earlier stage made of node 7 as `vace_context` (vace.context) and its strength as `vace_strength` (request.vace_strength)"),
        "{:?}",
        l.notes
    );
}

#[test]
fn two_decodes_of_one_trim_read_one_trimmed_latent() {
    let mut g = reference_to_video();
    g["15"] = json!({"class_type": "VAEDecodeTiled", "inputs": {"tile_size": 512, "overlap": 64, "temporal_size": 64, "temporal_overlap": 8, "samples": ["10", 0], "vae": ["3", 0]}});
    g["16"] = json!({"class_type": "SaveAnimatedWEBP", "inputs": {"filename_prefix": "tiled", "fps": 16.0, "lossless": false, "quality": 80, "method": "default", "images": ["15", 0]}});
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    assert_eq!(invocations(w, "trim_latent"), 1);
    assert_eq!(invocations(w, "vae_decoder"), 2);
}

#[test]
fn what_the_lowering_cannot_make_is_refused_at_its_node() {
    let mut picture_control = reference_to_video();
    picture_control["7"]["inputs"]["control_video"] = json!(["6", 0]);
    assert_refused(
        &picture_control,
        (
            "7",
            "WanVaceToVideo",
            Some("control_video"),
            "takes its control video from node 6 (LoadImage); the lowering takes a loaded video's frames as they are (LoadVideo through GetVideoComponents)",
        ),
    );
    let mut masked = control_video();
    masked["7"]["inputs"]["control_masks"] = json!(["21", 0]);
    assert_refused(
        &masked,
        (
            "7",
            "WanVaceToVideo",
            Some("control_masks"),
            "masks the control video, which the lowering does not make yet; it makes VACE's context from the prompts, a reference picture and a whole control video",
        ),
    );
    let mut vae = reference_to_video();
    vae["3"]["inputs"]["vae_name"] = json!("wan2.2_vae.safetensors");
    assert_refused(
        &vae,
        (
            "3",
            "VAELoader",
            Some("vae_name"),
            "loads `wan2.2_vae.safetensors`, whose latent is not Wan 2.1's, which WanVaceToVideo makes",
        ),
    );
    let mut all = reference_to_video();
    all["10"]["inputs"]["trim_amount"] = json!(4);
    assert_refused(
        &all,
        (
            "10",
            "TrimVideoLatent",
            Some("trim_amount"),
            "drops 4 latent frames of a latent of 4, leaving nothing to decode",
        ),
    );
    let mut picture = pattern("flow-sd3");
    let decode = picture
        .as_object()
        .expect("graph")
        .iter()
        .find(|(_, n)| n["class_type"] == "VAEDecode")
        .map(|(id, n)| (id.clone(), n["inputs"]["samples"].clone()))
        .expect("a decode");
    picture["99"] =
        json!({"class_type": "TrimVideoLatent", "inputs": {"trim_amount": 1, "samples": decode.1}});
    picture[&decode.0]["inputs"]["samples"] = json!(["99", 0]);
    assert_refused(
        &picture,
        (
            "99",
            "TrimVideoLatent",
            Some("samples"),
            "trims a picture or audio latent; TrimVideoLatent drops latent frames of a video",
        ),
    );
}
