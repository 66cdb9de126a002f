//! A stage whose prompts carry a Wan image-to-video node's video (see
//! `recognise::frames`): its pictures resized to the video's size
//! (bilinear, centre crop: `init_scale`), made into the video and its
//! mask (`video_frames`), the video encoded by the VAE; the denoiser takes
//! the latent as `concat` and the mask as `concat_mask` with every prompt.
//! A later stage of the same node (Wan 2.2's second expert) reads the
//! first stage's (see `names`). A VACE node's context is `vace`'s.
//! HunyuanVideo 1.5's node and Wan's camera node encode their start
//! picture alone as a one-frame video (`one_frame`), put ahead of zero
//! frames (Wan's latent mean for the camera node) with its mask
//! (`start_latent`); the camera node's motion is `camera_embedding`'s.

use super::super::parts::{Steps, component, contract, invoke, picture, policy};
use super::super::recognise::{Plan, VideoFrames};
use super::StageNames;
use super::pixels::{encoded_video, video_encoder};
use super::scales::{init_scale, resize_policy};
use serde_json::{Map, Value, json};

/// The encoded video the denoiser takes as `concat`.
pub(super) const LATENT: &str = "frames.latent";
/// The mask it takes as `concat_mask`.
const MASK: &str = "frames.mask";
/// The CLIP vision embedding it takes as `clip_fea`.
const VISION: &str = "frames.vision";
/// The video the VAE encodes.
const PIXELS: &str = "frames.pixels";
/// The start picture through the graph's resize of it.
const START_PICTURE: &str = "frames.start_picture";
/// The camera motion's embedding it takes as `camera_conditions`.
const CAMERA: &str = "frames.camera";
/// What a later stage of the same node reads of the earlier stage's.
pub(super) const VALUES: [&str; 10] = [
    LATENT,
    MASK,
    VISION,
    PIXELS,
    CAMERA,
    super::vace::CONTEXT,
    super::vace::STRENGTH,
    super::fun_control::CONCAT,
    super::fun_control::MASK,
    super::fun_control::REFERENCE,
];

/// The plan's Wan image-to-video node, where its prompts carry one (every
/// prompt carries the same, see `recognise::frames`).
pub(in crate::comfyui::lower) fn frames(plan: &Plan) -> Option<&VideoFrames> {
    plan.video_frames()
}

/// The mask's channels: four (Wan's), one for HunyuanVideo 1.5.
fn mask_channels(frames: &VideoFrames) -> i64 {
    match frames.start_latent_only() && !frames.camera_video() {
        true => 1,
        false => 4,
    }
}

/// The camera embedding's contract: 24 channels over the latent's
/// frames at the video's size.
fn camera() -> Value {
    contract(
        "float32",
        json!(["batch", 24, "latent_frames", "height", "width"]),
        true,
    )
}

/// The mask's contract: its channels over the latent's cells.
fn mask(frames: &VideoFrames) -> Value {
    let channels = mask_channels(frames);
    contract(
        "float32",
        json!([
            "batch",
            channels,
            "latent_frames",
            "latent_height",
            "latent_width"
        ]),
        true,
    )
}

/// CLIP vision's penultimate hidden states: `[batch, tokens, hidden]`.
fn hidden_states() -> Value {
    contract(
        "float32",
        json!(["batch", "vision_tokens", "vision_hidden"]),
        true,
    )
}

/// The denoiser ports the video adds, beside the sample's `latent`.
pub(super) fn denoiser_ports(plan: &Plan, latent: &Value, ports: &mut Value) {
    if let Some(frames) = frames(plan) {
        if frames.vace.is_some() {
            return super::vace::denoiser_ports(ports);
        }
        if let Some(fun) = &frames.fun_control {
            return super::fun_control::denoiser_ports(fun, ports);
        }
        ports["concat"] = latent.clone();
        ports["concat_mask"] = mask(frames);
        if frames.vision.is_some() {
            ports["clip_fea"] = hidden_states();
        }
        if frames.camera.is_some() {
            ports["camera_conditions"] = camera();
        }
    }
}

/// Binds the video's latent and mask (and any CLIP vision embedding and
/// camera embedding) in a denoiser call.
pub(super) fn bind(plan: &Plan, bind: &mut Value) {
    if let Some(frames) = frames(plan) {
        if frames.vace.is_some() {
            return super::vace::bind(bind);
        }
        if let Some(fun) = &frames.fun_control {
            return super::fun_control::bind(fun, bind);
        }
        bind["concat"] = json!(LATENT);
        bind["concat_mask"] = json!(MASK);
        if frames.vision.is_some() {
            bind["clip_fea"] = json!(VISION);
        }
        if frames.camera.is_some() {
            bind["camera_conditions"] = json!(CAMERA);
        }
    }
}

/// Declares the CLIP vision model (0..1 pixels in, its own resize and
/// normalisation as ComfyUI's `clip_preprocess` with the node's `crop`)
/// and the steps embedding the pictures into `frames.vision`: one
/// picture's hidden states, or the start's tokens then the end's
/// (`join_tokens`).
fn vision(
    plan: &Plan,
    frames: &VideoFrames,
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) {
    let Some(vision) = &frames.vision else {
        return;
    };
    components.insert(
        "clip_vision".into(),
        component(
            "clip_vision/model.onnx",
            json!({"image": picture(json!(3))}),
            json!({vision.state: hidden_states()}),
            Some(json!({"id": "comfyui.clip-vision", "version": "1", "parameters": {"crop": vision.crop, "size": vision.size}})),
        ),
    );
    let pictures: Vec<(&String, &String, &str)> = [
        (&vision.start, &frames.start, "frames.vision_start"),
        (&vision.end, &frames.end, "frames.vision_end"),
    ]
    .into_iter()
    .filter_map(|(encode, loader, value)| Some((encode.as_ref()?, loader.as_ref()?, value)))
    .collect();
    let joined = pictures.len() == 2;
    for (encode, loader, value) in &pictures {
        let image = match vision.resized {
            true => START_PICTURE.to_string(),
            false => super::pictures::input(plan, loader),
        };
        setup.push(
            invoke(
                "clip_vision",
                json!({"image": image}),
                json!({vision.state: if joined { value } else { VISION }}),
            ),
            &[encode, &vision.loader, loader],
        );
    }
    if let [(first, _, start), (second, _, end)] = pictures.as_slice() {
        components.insert(
            "join_tokens".into(),
            policy(
                "join_tokens",
                json!({"first": hidden_states(), "second": contract("float32", json!(["batch", "second_tokens", "vision_hidden"]), true)}),
                json!({"joined": contract("float32", json!(["batch", "joined_tokens", "vision_hidden"]), true)}),
                None,
            ),
        );
        setup.push(
            invoke(
                "join_tokens",
                json!({"first": start, "second": end}),
                json!({"joined": VISION}),
            ),
            &[&frames.node, first, second],
        );
    }
}

/// Declares the policies and the video encoder `encoder` (its latent
/// `latent`), and the setup steps making the video's latent and mask from
/// the stage's picture inputs, unless an earlier stage `made` them.
pub(super) fn encode(
    plan: &Plan,
    (encoder, latent): (&str, Value),
    made: bool,
    (inputs, components, setup): (&mut Map<String, Value>, &mut Map<String, Value>, &mut Steps),
) {
    let Some(frames) = frames(plan) else {
        return;
    };
    if made {
        return;
    }
    if let Some(vace) = &frames.vace {
        let parts = (inputs, components, setup);
        return super::vace::encode(plan, (frames, vace), (encoder, latent), parts);
    }
    if let Some(fun) = &frames.fun_control {
        let parts = (inputs, components, setup);
        return super::fun_control::encode(plan, (frames, fun), (encoder, latent), parts);
    }
    components.insert(
        "init_scale".into(),
        init_scale(&frames.node, (frames.width, frames.height), false),
    );
    if frames.start_latent_only() {
        start_latent(plan, frames, (encoder, latent), (components, setup));
        camera_embedding(frames, (components, setup));
        return vision(plan, frames, components, setup);
    }
    let picture = picture(json!(3));
    let (mut ports, mut bind) = (json!({}), json!({}));
    for (port, loader) in [("start", &frames.start), ("end", &frames.end)] {
        let Some(loader) = loader else {
            continue;
        };
        let scaled = format!("frames.{port}");
        setup.push(
            invoke(
                "init_scale",
                json!({"image": super::pictures::input(plan, loader)}),
                json!({"scaled": scaled}),
            ),
            &[&frames.node, loader],
        );
        ports[port] = picture.clone();
        bind[port] = json!(scaled);
    }
    components.insert(
        "video_frames".into(),
        policy(
            "video_frames",
            ports,
            json!({"frames": encoded_video(), "mask": mask(frames)}),
            Some(
                json!({"id": "wfstudio.video-frames", "version": "1", "parameters": {
                    "length": frames.length,
                    "temporal_scale": frames.temporal(),
                    "latent_frames": frames.latent_frames(),
                    "scale": frames.scale,
                }}),
            ),
        ),
    );
    setup.push(
        invoke(
            "video_frames",
            bind,
            json!({"frames": PIXELS, "mask": MASK}),
        ),
        &[&frames.node],
    );
    components.insert(encoder.to_string(), video_encoder(encoder, latent));
    setup.push(
        invoke(encoder, json!({"image": PIXELS}), json!({"latent": LATENT})),
        &[&frames.node],
    );
    vision(plan, frames, components, setup);
}

/// HunyuanVideo 1.5's and Wan's camera node's video latent: the start
/// picture (through the
/// graph's resize, `start_scale`) resized to the video's size
/// (`init_scale`, declared by `encode`), encoded as a one-frame video (`one_frame`,
/// `encoder`), then put ahead of zero latent frames with the mask of that
/// frame (`start_latent`).
fn start_latent(
    plan: &Plan,
    frames: &VideoFrames,
    (encoder, latent): (&str, Value),
    (components, setup): (&mut Map<String, Value>, &mut Steps),
) {
    let Some(loader) = &frames.start else {
        return;
    };
    let mut start = super::pictures::input(plan, loader);
    if let Some(resize) = &frames.start_resize {
        components.insert(
            "start_scale".into(),
            resize_policy("start_scale", resize, false),
        );
        setup.push(
            invoke(
                "start_scale",
                json!({"image": start}),
                json!({"scaled": START_PICTURE}),
            ),
            &resize.nodes_from(loader),
        );
        start = START_PICTURE.into();
    }
    components.insert("one_frame".into(), super::vace::one_frame());
    components.insert(encoder.to_string(), video_encoder(encoder, latent.clone()));
    let first = contract(
        "float32",
        json!(["batch", "channels", 1, "latent_height", "latent_width"]),
        true,
    );
    components.insert(
        "start_latent".into(),
        policy(
            "start_latent",
            json!({"first": first}),
            json!({"latent": latent, "mask": mask(frames)}),
            Some(
                json!({"id": "wfstudio.start-latent", "version": "1", "parameters": {
                    "latent_frames": frames.latent_frames(),
                    "mask_channels": mask_channels(frames),
                    "fill": if frames.camera_video() { "wan21_mean" } else { "zeros" },
                }}),
            ),
        ),
    );
    let steps = [
        (
            "init_scale",
            json!({"image": start}),
            json!({"scaled": "frames.start"}),
        ),
        (
            "one_frame",
            json!({"image": "frames.start"}),
            json!({"frames": PIXELS}),
        ),
        (
            encoder,
            json!({"image": PIXELS}),
            json!({"latent": "frames.start_latent"}),
        ),
        (
            "start_latent",
            json!({"first": "frames.start_latent"}),
            json!({"latent": LATENT, "mask": MASK}),
        ),
    ];
    for (component, inputs, outputs) in steps {
        setup.push(invoke(component, inputs, outputs), &[&frames.node, loader]);
    }
}

/// Declares the camera motion's embedding (`camera_embedding`) and the
/// setup step making it, where the node has one.
fn camera_embedding(
    frames: &VideoFrames,
    (components, setup): (&mut Map<String, Value>, &mut Steps),
) {
    let Some(camera_motion) = &frames.camera else {
        return;
    };
    components.insert(
        "camera_embedding".into(),
        policy(
            "camera_embedding",
            json!({}),
            json!({"embedding": camera()}),
            Some(
                json!({"id": "wfstudio.camera-embedding", "version": "1", "parameters": {
                    "pose": camera_motion.pose,
                    "speed": camera_motion.speed,
                    "fx": camera_motion.fx,
                    "fy": camera_motion.fy,
                    "cx": camera_motion.cx,
                    "cy": camera_motion.cy,
                    "width": frames.width,
                    "height": frames.height,
                    "length": frames.length,
                }}),
            ),
        ),
    );
    setup.push(
        invoke("camera_embedding", json!({}), json!({"embedding": CAMERA})),
        &[&camera_motion.node, &frames.node],
    );
}

/// What the stage's denoiser takes of a Wan image-to-video node, in words.
pub(in crate::comfyui::lower) fn note(plan: &Plan, names: &StageNames) -> Option<String> {
    let frames = frames(plan)?;
    if let Some(vace) = &frames.vace {
        return Some(super::vace::note(plan, (frames, vace), names));
    }
    if let Some(fun) = &frames.fun_control {
        return Some(super::fun_control::note(plan, (frames, fun), names));
    }
    if names.reused(LATENT) {
        let vision = frames
            .vision
            .as_ref()
            .map(|_| {
                format!(
                    ", and its CLIP vision embedding as `clip_fea` ({})",
                    names.value(VISION)
                )
            })
            .unwrap_or_default();
        return Some(format!(
            "every denoiser call takes the video an earlier stage made of node {}'s pictures: its latent as `concat` ({}) and its mask as `concat_mask` ({}){vision}{}",
            frames.node,
            names.value(LATENT),
            names.value(MASK),
            camera_words(frames, names),
        ));
    }
    let picture = |loader: &Option<String>, at: &str| {
        loader.as_ref().map(|loader| {
            format!(
                "{} {at}",
                names.value(&super::pictures::input(plan, loader))
            )
        })
    };
    let pictures: Vec<String> = [
        picture(&frames.start, "first"),
        picture(&frames.end, "last"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let vision = frames.vision.as_ref().map(|v| {
        format!(
            ", and the CLIP vision embedding of the {} (node {}'s model, crop {}) as `clip_fea` ({})",
            match (&v.start, &v.end) {
                (Some(_), Some(_)) => "start and end pictures, the start's tokens first",
                (None, Some(_)) => "end picture",
                _ => "start picture",
            },
            v.loader,
            v.crop,
            names.value(VISION)
        )
    });
    if frames.start_latent_only() {
        return Some(start_note(plan, frames, names, vision.unwrap_or_default()));
    }
    Some(format!(
        "node {} ({}) makes a video of {} frames of grey at {}x{} with {} (each resized bilinear to cover that size, centre cropped); the VAE encoder takes the video ({}) and every denoiser call takes its latent as `concat` and the mask of the latent frames the pictures fill as `concat_mask` ({}){}, as ComfyUI's Wan image-to-video models read them",
        frames.node,
        frames.class,
        frames.length,
        frames.width,
        frames.height,
        pictures.join(" and "),
        names.value(PIXELS),
        names.value(MASK),
        vision.unwrap_or_default(),
    ))
}

/// What the denoiser takes of a node that encodes its start picture
/// alone (HunyuanVideo 1.5's, Wan's camera node), in words; `vision` the
/// CLIP vision part.
fn start_note(plan: &Plan, frames: &VideoFrames, names: &StageNames, vision: String) -> String {
    let start = frames
        .start
        .as_ref()
        .map(|loader| {
            let input = names.value(&super::pictures::input(plan, loader));
            match &frames.start_resize {
                Some(resize) => format!("{input} ({})", resize.words()),
                None => input,
            }
        })
        .unwrap_or_default();
    let (after, model) = match frames.camera_video() {
        true => (
            "Wan 2.1's latent mean after (ComfyUI's `process_out` of zeros)",
            "Wan's Fun camera models read",
        ),
        false => ("zeros after", "ComfyUI's HunyuanVideo 1.5 model reads"),
    };
    format!(
        "node {} ({}) encodes {start} alone (resized bilinear to cover {}x{}, centre cropped: {}) as the first of the latent's {} frames, {after}; every denoiser call takes that latent as `concat` ({}) and the mask of its first frame as `concat_mask` ({}){vision}{}, as {model} them",
        frames.node,
        frames.class,
        frames.width,
        frames.height,
        names.value(PIXELS),
        frames.latent_frames(),
        names.value(LATENT),
        names.value(MASK),
        camera_words(frames, names),
    )
}

/// The camera motion's embedding the denoiser takes, in words (empty
/// without one).
fn camera_words(frames: &VideoFrames, names: &StageNames) -> String {
    let Some(camera) = &frames.camera else {
        return String::new();
    };
    format!(
        ", and the Plücker embedding of node {}'s camera motion ('{}' at speed {}, focal {} x {}, centre {} x {}) as `camera_conditions` ({})",
        camera.node,
        camera.pose,
        camera.speed,
        camera.fx,
        camera.fy,
        camera.cx,
        camera.cy,
        names.value(CAMERA)
    )
}
