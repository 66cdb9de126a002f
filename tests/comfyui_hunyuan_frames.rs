//! HunyuanVideo 1.5 image-to-video (`HunyuanVideo15ImageToVideo`): the
//! start picture, resized to the video's size, is encoded alone as a
//! one-frame video and put ahead of zero latent frames; every denoiser
//! call takes that latent as `concat`, the mask of its first frame as
//! `concat_mask` and the SigLIP embedding's last hidden state as
//! `clip_fea`.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, loops, lowered, npy, package_and_run, run_policy_alone, scratch, setup_calls,
    stage_calls, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// The HunyuanVideo 1.5 720p image-to-video template, small: 64x48
/// pixels, 9 frames (3 latent frames of 4x3 cells).
fn image_to_video() -> Value {
    json!({
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "hunyuanvideo1.5_720p_i2v_fp16.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "qwen_2.5_vl_7b_fp8_scaled.safetensors", "clip_name2": "byt5_small_glyphxl_fp16.safetensors", "type": "hunyuan_video_15", "device": "default"}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "hunyuanvideo15_vae_fp16.safetensors"}},
        "4": {"class_type": "CLIPVisionLoader", "inputs": {"clip_name": "sigclip_vision_patch14_384.safetensors"}},
        "5": {"class_type": "LoadImage", "inputs": {"image": "dinosaur.png", "upload": "image"}},
        "6": {"class_type": "CLIPVisionEncode", "inputs": {"crop": "center", "clip_vision": ["4", 0], "image": ["5", 0]}},
        "7": {"class_type": "CLIPTextEncode", "inputs": {"text": "a young dinosaur runs", "clip": ["2", 0]}},
        "8": {"class_type": "CLIPTextEncode", "inputs": {"text": "", "clip": ["2", 0]}},
        "9": {"class_type": "HunyuanVideo15ImageToVideo", "inputs": {"width": 64, "height": 48, "length": 9, "batch_size": 1, "positive": ["7", 0], "negative": ["8", 0], "vae": ["3", 0], "start_image": ["5", 0], "clip_vision_output": ["6", 0]}},
        "10": {"class_type": "ModelSamplingSD3", "inputs": {"shift": 7.0, "model": ["1", 0]}},
        "11": {"class_type": "CFGGuider", "inputs": {"cfg": 6.0, "model": ["10", 0], "positive": ["9", 0], "negative": ["9", 1]}},
        "12": {"class_type": "BasicScheduler", "inputs": {"scheduler": "simple", "steps": 3, "denoise": 1.0, "model": ["1", 0]}},
        "13": {"class_type": "RandomNoise", "inputs": {"noise_seed": 8}},
        "14": {"class_type": "KSamplerSelect", "inputs": {"sampler_name": "euler"}},
        "15": {"class_type": "SamplerCustomAdvanced", "inputs": {"noise": ["13", 0], "guider": ["11", 0], "sampler": ["14", 0], "sigmas": ["12", 0], "latent_image": ["9", 2]}},
        "16": {"class_type": "VAEDecode", "inputs": {"samples": ["15", 0], "vae": ["3", 0]}},
        "17": {"class_type": "CreateVideo", "inputs": {"fps": 24.0, "images": ["16", 0]}},
        "18": {"class_type": "SaveVideo", "inputs": {"filename_prefix": "video/hunyuan", "format": "auto", "codec": "auto", "video": ["17", 0]}},
    })
}

#[test]
fn the_start_pictures_latent_alone_leads_zero_frames() {
    let l = lowered(&image_to_video(), &Target::default());
    let w = workflow(&l);
    let made: Vec<(String, Value)> = setup_calls(w)
        .into_iter()
        .filter(|(c, _, _)| {
            matches!(
                c.as_str(),
                "init_scale" | "one_frame" | "vae_encoder" | "start_latent" | "clip_vision"
            )
        })
        .map(|(c, inputs, _)| (c, inputs))
        .collect();
    assert_eq!(
        made,
        vec![
            ("init_scale".into(), json!({"image": "request.image"})),
            ("one_frame".into(), json!({"image": "frames.start"})),
            ("vae_encoder".into(), json!({"image": "frames.pixels"})),
            (
                "start_latent".into(),
                json!({"first": "frames.start_latent"})
            ),
            ("clip_vision".into(), json!({"image": "request.image"})),
        ]
    );
    let components = &w["components"];
    assert_eq!(
        components["start_latent"]["contract"]["parameters"]["latent_frames"],
        3
    );
    let vision = &components["clip_vision"];
    assert_eq!(vision["contract"]["parameters"]["size"], 384);
    assert!(
        vision["ports"]["outputs"]
            .get("last_hidden_state")
            .is_some()
    );
    let ports = &components["denoiser"]["ports"]["inputs"];
    assert_eq!(
        ports["concat_mask"]["shape"],
        json!(["batch", 1, "latent_frames", "latent_height", "latent_width"])
    );
    assert_eq!(ports["concat"]["shape"][1], "channels");
    let calls = stage_calls(loops(w)[0], "denoiser");
    assert_eq!(calls.len(), 2);
    for call in calls {
        assert_eq!(call["inputs"]["concat"], "frames.latent");
        assert_eq!(call["inputs"]["concat_mask"], "frames.mask");
        assert_eq!(call["inputs"]["clip_fea"], "frames.vision");
    }
    let row_shape = &components["latent_row_shape"]["contract"]["parameters"];
    assert_eq!(row_shape["channels"], 32);
    assert_eq!(row_shape["scale"], 16);
    let notes = l.notes.join("\n");
    assert!(
        notes.contains("node 9 (HunyuanVideo15ImageToVideo) encodes request.image alone (resized bilinear to cover 64x48, centre cropped: frames.pixels) as the first of the latent's 3 frames, zeros after"),
        "{notes}"
    );
}

#[test]
fn the_start_latent_and_mask_are_comfyuis() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("hunyuan-start");
    let l = lowered(&image_to_video(), &Target::default());
    let shape = [1usize, 2, 1, 3, 2];
    let first: Vec<f32> = (0..12).map(|i| i as f32 - 5.5).collect();
    let given = json!({"dtype": "float32", "shape": shape, "data": first}).to_string();
    let out = run_policy_alone(
        &root,
        "start",
        &l.document,
        "start_latent",
        &[("first", given)],
    );
    // ComfyUI's `concat_latent_image`: the encoded frame first, zeros on
    // the other latent frames; its model reads `1 - concat_mask`: ones on
    // the first frame.
    let (latent_shape, latent) = npy(&out.join("latent.npy"));
    assert_eq!(latent_shape, [1, 2, 3, 3, 2]);
    let mut want = vec![0f32; 36];
    for channel in 0..2 {
        for cell in 0..6 {
            want[channel * 18 + cell] = first[channel * 6 + cell];
        }
    }
    assert_eq!(latent, want);
    let (mask_shape, mask) = npy(&out.join("mask.npy"));
    assert_eq!(mask_shape, [1, 1, 3, 3, 2]);
    let ones = |frame: usize| f32::from(u8::from(frame == 0));
    let want: Vec<f32> = (0..18).map(|i| ones(i / 6)).collect();
    assert_eq!(mask, want);
    let (_, out) = package_and_run(&root, "hunyuan", &image_to_video());
    assert_eq!(npy(&out.join("latent.npy")).0, vec![1, 32, 3, 3, 4]);
    assert_eq!(npy(&out.join("video.npy")).0, vec![1, 9, 3, 48, 64]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn another_vae_than_hunyuans_is_refused() {
    let mut unknown = image_to_video();
    unknown["3"]["inputs"]["vae_name"] = json!("my_video_vae.safetensors");
    assert_refused(
        &unknown,
        (
            "3",
            "VAELoader",
            Some("vae_name"),
            "loads `my_video_vae.safetensors`, whose latent is not HunyuanVideo 1.5's, which HunyuanVideo15ImageToVideo makes",
        ),
    );
    let mut wan = image_to_video();
    wan["3"]["inputs"]["vae_name"] = json!("wan_2.1_vae.safetensors");
    assert_refused(
        &wan,
        (
            "3",
            "VAELoader",
            Some("vae_name"),
            "loads `wan_2.1_vae.safetensors`, whose latent is not HunyuanVideo 1.5's, which HunyuanVideo15ImageToVideo makes",
        ),
    );
}

#[test]
fn a_start_picture_fitted_and_padded_is_comfyuis() {
    // The Capybara template's `ResizeAndPadImage` on the start picture.
    let mut g = image_to_video();
    g["19"] = json!({"class_type": "ResizeAndPadImage", "inputs": {"target_width": 4, "target_height": 4, "padding_color": "white", "interpolation": "nearest-exact", "image": ["5", 0]}});
    g["9"]["inputs"]["start_image"] = json!(["19", 0]);
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["components"]["start_scale"]["contract"]["parameters"],
        json!({"size": "fit", "width": 4, "height": 4, "pad": 1.0, "method": "nearest-exact"})
    );
    let calls = setup_calls(w);
    let scale = calls
        .iter()
        .position(|(c, _, _)| c == "start_scale")
        .expect("the fit");
    assert_eq!(calls[scale].1, json!({"image": "request.image"}));
    assert_eq!(calls[scale + 1].1, json!({"image": "frames.start_picture"}));
    if !support::runtime_available() {
        return;
    }
    // A 5x3 picture fits 4x4 at min(4 / 5, 4 / 3) = 0.8: 4 x int(2.4) =
    // 4x2, one white row above and below; nearest-exact takes source rows
    // 0 and 2 and columns 0, 1, 3 and 4.
    let root = scratch("hunyuan-fit");
    let picture: Vec<f32> = (0..45).map(|i| i as f32 / 50.0).collect();
    let given = json!({"dtype": "float32", "shape": [1, 3, 3, 5], "data": picture}).to_string();
    let out = run_policy_alone(
        &root,
        "fit",
        &l.document,
        "start_scale",
        &[("image", given)],
    );
    let (shape, fitted) = npy(&out.join("scaled.npy"));
    assert_eq!(shape, [1, 3, 4, 4]);
    let mut want = Vec::new();
    for channel in 0..3 {
        for row in 0..4 {
            for column in [0, 1, 3, 4] {
                want.push(match row {
                    1 | 2 => picture[channel * 15 + (row - 1) * 2 * 5 + column],
                    _ => 1.0,
                });
            }
        }
    }
    assert_eq!(fitted, want);
    // Black, a side truncated and an odd spare: 7x5 into 10x9 at min(10 /
    // 7, 9 / 5): 10 x int(7.142...) = 10x7, one black row above and one
    // below.
    let mut black = g.clone();
    black["19"]["inputs"] = json!({"target_width": 10, "target_height": 9, "padding_color": "black", "interpolation": "nearest-exact", "image": ["5", 0]});
    let l = lowered(&black, &Target::default());
    let (h, w, th, tw) = (5usize, 7usize, 9usize, 10usize);
    let picture: Vec<f32> = (0..3 * h * w).map(|i| 0.01 + i as f32 / 200.0).collect();
    let given = json!({"dtype": "float32", "shape": [1, 3, h, w], "data": picture}).to_string();
    let out = run_policy_alone(
        &root,
        "black",
        &l.document,
        "start_scale",
        &[("image", given)],
    );
    let (shape, fitted) = npy(&out.join("scaled.npy"));
    assert_eq!(shape, [1, 3, th, tw]);
    let scale = (tw as f64 / w as f64).min(th as f64 / h as f64);
    let (nw, nh) = ((w as f64 * scale) as usize, (h as f64 * scale) as usize);
    assert_eq!((nw, nh), (10, 7));
    let (top, left) = ((th - nh) / 2, (tw - nw) / 2);
    let mut want = Vec::new();
    for channel in 0..3 {
        for y in 0..th {
            for x in 0..tw {
                let inside = (top..top + nh).contains(&y) && (left..left + nw).contains(&x);
                want.push(match inside {
                    false => 0.0,
                    true => {
                        let sy = ((y - top) as f64 + 0.5) * h as f64 / nh as f64;
                        let sx = ((x - left) as f64 + 0.5) * w as f64 / nw as f64;
                        picture[channel * h * w + sy as usize * w + sx as usize]
                    }
                });
            }
        }
    }
    assert_eq!(fitted, want);
    let _ = std::fs::remove_dir_all(&root);
}

/// Capybara's image edit: the start picture resized to 64x48 first, the
/// video node sized by a `GetImageSize` of it (one frame), the CLIP
/// vision embedding of the resized picture, the frame saved as a picture.
fn image_edit() -> Value {
    let mut g = image_to_video();
    g["19"] = json!({"class_type": "ResizeImageMaskNode", "inputs": {"resize_type": "scale dimensions", "resize_type.width": 64, "resize_type.height": 48, "resize_type.crop": "center", "scale_method": "bilinear", "input": ["5", 0]}});
    g["20"] = json!({"class_type": "GetImageSize", "inputs": {"image": ["19", 0]}});
    let video = &mut g["9"]["inputs"];
    video["start_image"] = json!(["19", 0]);
    video["width"] = json!(["20", 0]);
    video["height"] = json!(["20", 1]);
    video["length"] = json!(["20", 2]);
    g["6"]["inputs"]["image"] = json!(["19", 0]);
    g["6"]["inputs"]["crop"] = json!("none");
    let graph = g.as_object_mut().expect("graph");
    graph.remove("17");
    graph.remove("18");
    g["21"] = json!({"class_type": "SaveImage", "inputs": {"filename_prefix": "edit", "images": ["16", 0]}});
    g
}

#[test]
fn an_edit_of_one_frame_is_sized_by_its_resized_start_picture() {
    let l = lowered(&image_edit(), &Target::default());
    let w = workflow(&l);
    let components = &w["components"];
    assert_eq!(
        components["start_latent"]["contract"]["parameters"]["latent_frames"],
        1
    );
    let row_shape = &components["latent_row_shape"]["contract"]["parameters"];
    assert_eq!(
        (&row_shape["length"], &row_shape["scale"]),
        (&json!(1), &json!(16))
    );
    let calls = setup_calls(w);
    let vision = calls
        .iter()
        .find(|(c, _, _)| c == "clip_vision")
        .expect("the embedding");
    assert_eq!(vision.1, json!({"image": "frames.start_picture"}));
    // A GetImageSize of another picture than the start still refuses.
    let mut other = image_edit();
    other["22"] =
        json!({"class_type": "LoadImage", "inputs": {"image": "other.png", "upload": "image"}});
    other["20"]["inputs"]["image"] = json!(["22", 0]);
    let refusals = wfstudio_core::comfyui::lower::lower(&other).expect_err("refused");
    assert_eq!(refusals[0].input.as_deref(), Some("width"));
    if !support::runtime_available() {
        return;
    }
    let root = scratch("hunyuan-edit");
    let (_, out) = package_and_run(&root, "edit", &image_edit());
    assert_eq!(npy(&out.join("image.npy")).0, vec![1, 3, 48, 64]);
    let _ = std::fs::remove_dir_all(&root);
}
