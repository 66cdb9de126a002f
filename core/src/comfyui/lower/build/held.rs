//! LTX-Video's and LTX-2's held first frame in the document (see
//! `recognise::held`): in the setup the loaded picture passes the graph's
//! resizes (`held_scale`, `held_scale_2`, ...), `LTXVPreprocess`'s cut to
//! even sides (`even_sides`) and the resize to the latent's size
//! (bilinear, centred: the last `held_scale`), is encoded as a one-frame
//! video and written over the video latent's first frame (in LTX-2's
//! packed audio-video row, its video part's), with the noise mask
//! `1 - strength` there and 1 elsewhere (`held_frames`). Every set of
//! denoiser calls sees the sample blended with the held row by the mask
//! (`held_input`), its video tokens' timesteps scaled by the mask
//! (`denoise_mask`), and its guided estimate is blended back to the held
//! row by the mask (`held_estimate`), as ComfyUI samples a noise mask on
//! LTX-Video and LTX-2.

use super::super::parts::{Axes, Steps, contract, invoke, picture, policy, row};
use super::super::recognise::{HeldFrame, LatentSource, PixelSize, Plan, Resize};
use serde_json::{Map, Value, json};

/// The held row, its mask and the denoiser's per-token timestep mask.
const SOURCE: &str = "held.source";
const MASK: &str = "held.mask";
const DENOISE_MASK: &str = "held.denoise_mask";

/// Pixels per latent cell of LTX-2's video VAE.
const LATENT_SCALE: i64 = 32;

/// The stage's held frame, if it holds one.
pub(in crate::comfyui::lower) fn held(plan: &Plan) -> Option<&HeldFrame> {
    plan.held.as_ref()
}

/// The stage's video latent, `[channels, frames, height, width]`: an
/// audio-video row's video part, or an empty video latent.
fn video_shape(plan: &Plan) -> Option<[i64; 4]> {
    if let Some(av) = &plan.audio {
        return Some(av.layout.video);
    }
    match &plan.latent {
        LatentSource::Empty {
            channels,
            width,
            height,
            scale,
            frames: Some(frames),
            ..
        } => Some([
            *channels,
            (frames.length - 1) / frames.temporal + 1,
            height / scale,
            width / scale,
        ]),
        _ => None,
    }
}

/// The denoiser's `denoise_mask`: the noise mask over the video latent's
/// cells, by which the model scales its video tokens' timesteps.
fn denoise_mask() -> Value {
    contract(
        "float32",
        json!(["batch", 1, "latent_frames", "latent_height", "latent_width"]),
        true,
    )
}

/// Declares the held frame's picture input, policies and video encoder
/// `encoder`, and pushes the setup steps writing it over `source` (the
/// stage's packed start row); returns the held row's value, or `source`
/// where the stage holds no frame.
pub(super) fn hold(
    plan: &Plan,
    source: String,
    encoder: &str,
    (inputs, components, setup): (&mut Map<String, Value>, &mut Map<String, Value>, &mut Steps),
) -> String {
    let (Some(held), Some([channels, frames, height, width])) = (held(plan), video_shape(plan))
    else {
        return source;
    };
    let mut image = super::pictures::input(plan, &held.loader);
    match image.as_str() {
        "request.image" => {
            inputs
                .entry(image.clone())
                .or_insert_with(|| super::pictures::sized_input("image"));
        }
        _ => super::pictures::declare_others(plan, inputs),
    }
    let from = held.nodes();
    let fitted = Resize {
        node: held.node.clone(),
        method: "bilinear".into(),
        size: PixelSize::Fixed {
            width: width * LATENT_SCALE,
            height: height * LATENT_SCALE,
            centre: true,
        },
        then: Vec::new(),
    };
    // At CRF 0 `LTXVPreprocess` gives the picture as it is.
    let preprocess = held.preprocess.as_ref().filter(|pre| pre.compression > 0);
    let preprocess = preprocess.map(|pre| {
        let parameters = json!({"crop": "top left, to even sides", "h264_crf": pre.compression, "compression": "not reproduced"});
        let even = contract("float32", json!(["batch", 3, "even_height", "even_width"]), true);
        (
            "even_sides",
            policy("even_sides", json!({"image": picture(json!(3))}), json!({"even": even}),
                Some(json!({"id": "wfstudio.even-sides", "version": "1", "parameters": parameters}))),
            ("image", "even"),
        )
    });
    let resize = |n: usize, resize: &Resize| {
        let name = super::pictures::numbered("held_scale", n);
        let component = super::pixels::resize_policy(&name, resize, false);
        (name, component, ("image", "scaled"))
    };
    let mut steps: Vec<(String, Value, (&str, &str))> = Vec::new();
    steps.extend(held.resizes.iter().enumerate().map(|(n, r)| resize(n, r)));
    steps.extend(preprocess.map(|(name, c, ports)| (name.to_string(), c, ports)));
    steps.push(resize(held.resizes.len(), &fitted));
    steps.push((
        "one_frame".into(),
        super::vace::one_frame(),
        ("image", "frames"),
    ));
    let latent = Axes::Video.latent();
    steps.push((
        encoder.to_string(),
        super::pixels::video_encoder(encoder, latent),
        ("image", "latent"),
    ));
    for (n, (name, component, (input, output))) in steps.into_iter().enumerate() {
        // The stage's encoder, where it has one already, is this one.
        components.entry(name.clone()).or_insert(component);
        let value = format!("held.picture_{}", n + 1);
        setup.push(
            invoke(&name, json!({ input: image }), json!({ output: value })),
            &from,
        );
        image = value;
    }
    // The picture's batch (one picture), broadcast over the latent's.
    let first = contract(
        "float32",
        json!([
            "picture_batch",
            "channels",
            1,
            "latent_height",
            "latent_width"
        ]),
        true,
    );
    let packed = plan.axes.latent();
    components.insert(
        "held_frames".into(),
        policy(
            "held_frames",
            json!({"source": packed, "frame": first}),
            json!({"held": packed, "mask": packed, "denoise_mask": denoise_mask()}),
            Some(
                json!({"id": "wfstudio.held-frames", "version": "1", "parameters": {
                    "video_shape": format!("{channels},{frames},{height},{width}"),
                    "packed": plan.audio.is_some(),
                    "strength": held.strength,
                }}),
            ),
        ),
    );
    setup.push(
        invoke(
            "held_frames",
            json!({"source": source, "frame": image}),
            json!({"held": SOURCE, "mask": MASK, "denoise_mask": DENOISE_MASK}),
        ),
        &[&held.node],
    );
    let blend = |name: &str, mut ports: Value, output: &str, rule: &str| {
        ports["source"] = packed.clone();
        ports["mask"] = packed.clone();
        policy(
            name,
            ports,
            json!({ output: packed }),
            Some(
                json!({"id": format!("wfstudio.{}", name.replace('_', "-")), "version": "1", "parameters": {"rule": rule}}),
            ),
        )
    };
    components.insert(
        "held_input".into(),
        blend(
            "held_input",
            json!({"sample": packed}),
            "input",
            "mask x + (1 - mask) held",
        ),
    );
    components.insert(
        "held_estimate".into(),
        blend(
            "held_estimate",
            json!({"sample": packed, "input": packed, "timestep": row("float32"), "guided": packed}),
            "estimate",
            "D = input - sigma guided; D' = mask D + (1 - mask) held; (sample - D') / sigma",
        ),
    );
    SOURCE.into()
}

/// Pushes the blend of `sample` with the held row before one set of
/// denoiser calls (values ending in `suffix`); the blended value, where
/// the stage holds a frame.
pub(super) fn input(plan: &Plan, sample: &str, suffix: &str, body: &mut Steps) -> Option<String> {
    let held = held(plan)?;
    let value = format!("held.input{suffix}");
    body.push(
        invoke(
            "held_input",
            json!({"sample": sample, "source": SOURCE, "mask": MASK}),
            json!({ "input": value }),
        ),
        &[&held.node],
    );
    Some(value)
}

/// Pushes the blend of guided estimate `guided` (at the blended `input`
/// of sample `sample`, at `timestep`) back to the held row, as `out`.
pub(super) fn estimate(
    plan: &Plan,
    (sample, input, timestep): (&str, &str, &str),
    (guided, out): (&str, &str),
    body: &mut Steps,
) {
    let Some(held) = held(plan) else {
        return;
    };
    body.push(
        invoke(
            "held_estimate",
            json!({"sample": sample, "input": input, "timestep": timestep, "guided": guided, "source": SOURCE, "mask": MASK}),
            json!({ "estimate": out }),
        ),
        &[&held.node],
    );
}

/// Adds the denoiser's `denoise_mask` port, where the stage holds a
/// frame.
pub(super) fn denoiser_ports(plan: &Plan, ports: &mut Value) {
    if held(plan).is_some() {
        ports["denoise_mask"] = denoise_mask();
    }
}

/// Binds the denoiser's `denoise_mask`, where the stage holds a frame.
pub(super) fn bind(plan: &Plan, bind: &mut Value) {
    if held(plan).is_some() {
        bind["denoise_mask"] = json!(DENOISE_MASK);
    }
}

/// What a holding stage asks of its exported denoiser, and what the
/// lowering leaves out.
pub(in crate::comfyui::lower) fn note(plan: &Plan) -> Option<String> {
    let held = held(plan)?;
    let mut note = format!(
        "node {} (LTXVImgToVideoInplace) holds a picture as the video's first latent frame at strength {}: the denoiser takes `denoise_mask` ([batch, 1, latent_frames, latent_height, latent_width], 1 - strength on the held frame, 1 elsewhere) and multiplies its video tokens' timesteps by it, as ComfyUI's LTX-2 model does",
        held.node, held.strength
    );
    if let Some(pre) = held.preprocess.as_ref().filter(|pre| pre.compression > 0) {
        note.push_str(&format!(
            "; node {} (LTXVPreprocess) cuts the picture to even sides, but its H.264 round trip at CRF {} is not reproduced: the held frame is the uncompressed picture",
            pre.node, pre.compression
        ));
    }
    Some(note)
}
