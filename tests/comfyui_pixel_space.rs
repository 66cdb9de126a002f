//! Pixel-space models (Chroma Radiance): `EmptyChromaRadianceLatentImage`
//! is the picture itself (3 channels, one pixel a cell), ComfyUI's
//! `pixel_space` VAE decodes it as it is (`pixel_decoder`), and
//! `ChromaRadianceOptions` without a tile size passes the model on.

mod support;

use serde_json::{Value, json};
use support::lowering::{assert_refused, lowered, npy, package_and_run, scratch, workflow};
use wfstudio_core::comfyui::lower::Target;

/// Chroma Radiance's template, small: a 32x24 picture in 3 steps.
fn radiance() -> Value {
    json!({
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "chroma-radiance-x0.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "t5xxl_fp8_e4m3fn_scaled.safetensors", "type": "chroma", "device": "default"}},
        "3": {"class_type": "ChromaRadianceOptions", "inputs": {"preserve_wrapper": true, "start_sigma": 1.0, "end_sigma": 0.0, "nerf_tile_size": -1, "model": ["1", 0]}},
        "4": {"class_type": "ModelSamplingAuraFlow", "inputs": {"shift": 1.0, "model": ["3", 0]}},
        "5": {"class_type": "CLIPTextEncode", "inputs": {"text": "tiny explorers", "clip": ["2", 0]}},
        "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "sketch", "clip": ["2", 0]}},
        "7": {"class_type": "EmptyChromaRadianceLatentImage", "inputs": {"width": 32, "height": 24, "batch_size": 1}},
        "8": {"class_type": "KSampler", "inputs": {"seed": 2, "steps": 3, "cfg": 3.5, "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0, "model": ["4", 0], "positive": ["5", 0], "negative": ["6", 0], "latent_image": ["7", 0]}},
        "9": {"class_type": "VAELoader", "inputs": {"vae_name": "pixel_space"}},
        "10": {"class_type": "VAEDecode", "inputs": {"samples": ["8", 0], "vae": ["9", 0]}},
        "11": {"class_type": "SaveImage", "inputs": {"filename_prefix": "radiance", "images": ["10", 0]}},
    })
}

#[test]
fn a_pixel_space_latent_is_the_picture_it_decodes_to() {
    let l = lowered(&radiance(), &Target::default());
    let w = workflow(&l);
    let components = w["components"].as_object().expect("components");
    assert!(!components.keys().any(|c| c.contains("vae_decoder")));
    assert_eq!(
        components["pixel_decoder"]["contract"]["id"],
        "wfstudio.pixel-decoder"
    );
    let row_shape = &components["latent_row_shape"]["contract"]["parameters"];
    assert_eq!(
        (&row_shape["channels"], &row_shape["scale"]),
        (&json!(3), &json!(1))
    );
    if !support::runtime_available() {
        return;
    }
    let root = scratch("pixel-space");
    let (_, out) = package_and_run(&root, "radiance", &radiance());
    let (latent_shape, latent) = npy(&out.join("latent.npy"));
    let (image_shape, image) = npy(&out.join("image.npy"));
    assert_eq!(latent_shape, [1, 3, 24, 32]);
    assert_eq!(image_shape, latent_shape);
    assert_eq!(image, latent);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn what_pixel_space_cannot_take_is_refused() {
    let mut tiled = radiance();
    tiled["3"]["inputs"]["nerf_tile_size"] = json!(64);
    assert_refused(
        &tiled,
        (
            "3",
            "ChromaRadianceOptions",
            Some("nerf_tile_size"),
            "sets a tile size for Chroma Radiance's pixel decoding, which the lowering leaves to the exported model",
        ),
    );
    // An img2img start encoded by the pixel-space VAE.
    let mut encoded = radiance();
    encoded["12"] =
        json!({"class_type": "LoadImage", "inputs": {"image": "photo.png", "upload": "image"}});
    encoded["13"] =
        json!({"class_type": "VAEEncode", "inputs": {"pixels": ["12", 0], "vae": ["9", 0]}});
    encoded["8"]["inputs"]["latent_image"] = json!(["13", 0]);
    encoded["8"]["inputs"]["denoise"] = json!(0.6);
    assert_refused(
        &encoded,
        (
            "9",
            "VAELoader",
            None,
            "is the pixel-space VAE, which node 13 uses; the lowering takes it to decode pixel-space latents only",
        ),
    );
    // Without a stated sampling the model's own is not known.
    let mut unstated = radiance();
    unstated["8"]["inputs"]["model"] = json!(["3", 0]);
    unstated["2"]["inputs"]["type"] = json!("pixeldit");
    let refusals = wfstudio_core::comfyui::lower::lower(&unstated).expect_err("refused");
    assert_eq!(
        (refusals[0].node.as_str(), refusals[0].input.as_deref()),
        ("8", Some("model"))
    );
}
