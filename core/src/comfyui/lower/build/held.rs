//! LTX-Video's and LTX-2's held latent frames in the document (see
//! `recognise::held` and `recognise::guide`): a picture held as the
//! video's first frame (`LTXVImgToVideoInplace`, `LTXVImgToVideo`) and
//! LTX-2's guide frames appended after the video's (`LTXVAddGuide`). In
//! the setup each picture is encoded (`held_pictures`) and written over
//! its latent frame (in LTX-2's packed audio-video row, its video
//! part's), with the noise mask `1 - strength` there and 1 elsewhere, and
//! the guides' token positions and strengths for the model
//! (`held_frames`). Every set of denoiser calls sees the sample blended
//! with the held row by the mask (`held_input`), its video tokens'
//! timesteps scaled by the mask (`denoise_mask`), and its guided estimate
//! is blended back to the held row by the mask (`held_estimate`), as
//! ComfyUI samples a noise mask on LTX-Video and LTX-2.

use super::super::parts::{Steps, contract, invoke, policy, row};
use super::super::recognise::{HeldFrame, LatentSource, Plan};
use super::held_pictures::{Made, encode};
use serde_json::{Map, Value, json};

/// The held row, its mask, the denoiser's per-token timestep mask and
/// the guides' token positions and strengths.
const SOURCE: &str = "held.source";
const MASK: &str = "held.mask";
const DENOISE_MASK: &str = "held.denoise_mask";
const KEYFRAMES: &str = "held.keyframe_idxs";
const GUIDE_STRENGTH: &str = "held.guide_strength";

/// A frame the stage holds and the latent frame it is written at.
struct Placed<'p> {
    frame: &'p HeldFrame,
    at: i64,
}

/// The guides the stage appends.
fn guides(plan: &Plan) -> &[super::super::recognise::VideoGuide] {
    plan.audio.as_ref().map_or(&[], |av| &av.guides[..])
}

/// The frames the stage holds: its first frame's picture, then its
/// guides after the video's own frames (`frames` in all).
fn placed(plan: &Plan, frames: i64) -> Vec<Placed<'_>> {
    let guides = guides(plan);
    let first = frames - guides.len() as i64;
    let first_frame = plan.held.iter().map(|frame| Placed { frame, at: 0 });
    let appended = guides.iter().zip(first..).map(|(g, at)| Placed {
        frame: &g.frame,
        at,
    });
    first_frame.chain(appended).collect()
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

/// The denoiser's guide ports: the guide tokens' positions in pixels
/// (`[1, 3, tokens, 2]`: time, height and width, each its start and end)
/// and strengths.
fn guide_ports() -> [(&'static str, Value); 2] {
    [
        (
            "keyframe_idxs",
            contract("float32", json!([1, 3, "guide_tokens", 2]), false),
        ),
        (
            "guide_strength",
            contract("float32", json!(["guide_tokens"]), false),
        ),
    ]
}

/// A list of numbers as a contract parameter (`0,96`).
fn listed<T: ToString>(values: impl IntoIterator<Item = T>) -> String {
    let values: Vec<String> = values.into_iter().map(|v| v.to_string()).collect();
    values.join(",")
}

/// Declares the held frames' picture inputs, policies and video encoder
/// `encoder`, and pushes the setup steps writing them over `source` (the
/// stage's start latent); returns the held latent's value, or `source`
/// where the stage holds no frame.
pub(super) fn hold(
    plan: &Plan,
    source: String,
    encoder: &str,
    (inputs, components, setup): (&mut Map<String, Value>, &mut Map<String, Value>, &mut Steps),
) -> String {
    let Some(shape @ [_, frames, height, width]) = video_shape(plan) else {
        return source;
    };
    let placed = placed(plan, frames);
    if placed.is_empty() {
        return source;
    }
    let mut made = Made::default();
    let packed = plan.axes.latent();
    // Each picture's batch (one picture), broadcast over the latent's.
    let one = contract(
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
    let (mut ports, mut binds) = (json!({"source": packed}), json!({"source": source}));
    for (n, held) in placed.iter().enumerate() {
        let parts = (&mut *inputs, &mut *components, &mut *setup);
        let value = encode(
            plan,
            (held.frame, (height, width)),
            (encoder, &mut made),
            parts,
        );
        let port = super::pictures::numbered("frame", n);
        ports[&port] = one.clone();
        binds[&port] = json!(value);
    }
    let guides = guides(plan);
    let mut outputs = json!({"held": packed, "mask": packed, "denoise_mask": denoise_mask()});
    let mut values = json!({"held": SOURCE, "mask": MASK, "denoise_mask": DENOISE_MASK});
    let mut parameters = json!({
        "video_shape": listed(shape),
        "packed": plan.audio.is_some(),
        "positions": listed(placed.iter().map(|p| p.at)),
        "strengths": listed(placed.iter().map(|p| p.frame.strength)),
    });
    if !guides.is_empty() {
        for ((port, contract), value) in guide_ports().into_iter().zip([KEYFRAMES, GUIDE_STRENGTH])
        {
            outputs[port] = contract;
            values[port] = json!(value);
        }
        parameters["guide_frames"] = json!(listed(guides.iter().map(|g| g.video_frame)));
        parameters["guide_strengths"] = json!(listed(guides.iter().map(|g| g.frame.strength)));
    }
    components.insert(
        "held_frames".into(),
        policy(
            "held_frames",
            ports,
            outputs,
            Some(json!({"id": "wfstudio.held-frames", "version": "1", "parameters": parameters})),
        ),
    );
    let nodes: Vec<&String> = placed.iter().map(|p| &p.frame.node).collect();
    setup.push(invoke("held_frames", binds, values), &nodes);
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
    let node = plan.holding()?;
    let value = format!("held.input{suffix}");
    body.push(
        invoke(
            "held_input",
            json!({"sample": sample, "source": SOURCE, "mask": MASK}),
            json!({ "input": value }),
        ),
        &[node],
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
    let Some(node) = plan.holding() else {
        return;
    };
    body.push(
        invoke(
            "held_estimate",
            json!({"sample": sample, "input": input, "timestep": timestep, "guided": guided, "source": SOURCE, "mask": MASK}),
            json!({ "estimate": out }),
        ),
        &[node],
    );
}

/// Adds the denoiser's `denoise_mask` port, where the stage holds a
/// frame.
pub(super) fn denoiser_ports(plan: &Plan, ports: &mut Value) {
    if plan.holding().is_some() {
        ports["denoise_mask"] = denoise_mask();
    }
    if !guides(plan).is_empty() {
        for (port, contract) in guide_ports() {
            ports[port] = contract;
        }
    }
}

/// Binds the denoiser's `denoise_mask`, where the stage holds a frame.
pub(super) fn bind(plan: &Plan, bind: &mut Value) {
    if plan.holding().is_some() {
        bind["denoise_mask"] = json!(DENOISE_MASK);
    }
    if !guides(plan).is_empty() {
        bind["keyframe_idxs"] = json!(KEYFRAMES);
        bind["guide_strength"] = json!(GUIDE_STRENGTH);
    }
}

/// What a holding stage asks of its exported denoiser, and what the
/// lowering leaves out.
pub(in crate::comfyui::lower) fn note(plan: &Plan) -> Option<String> {
    let node = plan.holding()?;
    let mut note = match &plan.held {
        Some(held) => format!(
            "node {node} holds a picture as the video's first latent frame at strength {}",
            held.strength
        ),
        None => format!("node {node} adds a guide"),
    };
    let guides = guides(plan);
    if !guides.is_empty() {
        let each: Vec<String> = guides
            .iter()
            .map(|g| {
                format!(
                    "node {} at video frame {}, strength {}",
                    g.frame.node, g.video_frame, g.frame.strength
                )
            })
            .collect();
        note.push_str(&format!(
            "; guide frames are appended after the video's ({}): the denoiser takes their tokens' positions in pixels as `keyframe_idxs` ([1, 3, tokens, 2]: time, height and width, each from and to) and their strengths as `guide_strength`, which ComfyUI's model turns into an attention bias where below 1",
            each.join("; ")
        ));
    }
    note.push_str("; the denoiser takes `denoise_mask` ([batch, 1, latent_frames, latent_height, latent_width]: 1 - strength on a held frame, 1 elsewhere) and multiplies its video tokens' timesteps by it, as ComfyUI's LTX models do");
    for pre in plan
        .held_frames()
        .filter_map(|f| f.preprocess.as_ref())
        .filter(|pre| pre.compression > 0)
    {
        note.push_str(&format!(
            "; node {} (LTXVPreprocess) cuts its picture to even sides, but its H.264 round trip at CRF {} is not reproduced: the frame is the uncompressed picture",
            pre.node, pre.compression
        ));
    }
    Some(note)
}
