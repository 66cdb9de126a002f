//! A stage's control video (a loaded video a Wan node conditions on):
//! the input `request.control_video`, taken apart into pictures
//! (`frame_pictures`) after it is cut to the node's `length` frames (`take_frames`, as
//! ComfyUI's nodes take `control_video[:length]`), resized to the node's
//! video size (`init_scale`: bilinear, centre crop), put together again
//! (`batch_frames`) and, for VACE, padded with grey to the length
//! (`fit_frames`). Its frame rate is an input beside it, as a loaded
//! video's.

use super::super::parts::{Steps, batch_video, invoke, policy};
use super::super::recognise::VideoFrames;
use super::pixels::{batch_frames_policy, encoded_video, frame_pictures_policy};
use super::scales::init_scale;
use serde_json::{Map, Value, json};

/// The input holding the control video.
pub(super) const INPUT: &str = "request.control_video";
/// The word its sides and frame rate are named after.
const WORD: &str = "control_video";
/// The control video cut (and padded) to the node's length.
pub(super) const FITTED: &str = "control.video";

/// Declares the control video input (and its frame rate beside it) and
/// the policies, and adds the setup steps making [`FITTED`] of
/// `loader`'s video for node `frames`: cut to the length first (so only
/// those frames are resized), then padded with frames of `pad` (VACE's
/// 0.5) up to it where given.
pub(super) fn fitted(
    frames: &VideoFrames,
    (loader, pad): (&String, Option<f64>),
    (inputs, components, setup): (&mut Map<String, Value>, &mut Map<String, Value>, &mut Steps),
) {
    super::pictures::declare_video(INPUT, WORD, inputs);
    components.insert(
        "take_frames".into(),
        length_policy("take_frames", json!({"length": frames.length})),
    );
    components.insert("frame_pictures".into(), frame_pictures_policy());
    components.insert(
        "init_scale".into(),
        init_scale(&frames.node, (frames.width, frames.height), false),
    );
    components.insert("batch_frames".into(), batch_frames_policy());
    let resized = match pad {
        Some(_) => "control.frames",
        None => FITTED,
    };
    let mut steps = vec![
        (
            "take_frames",
            json!({"video": INPUT}),
            json!({"fitted": "control.cut"}),
        ),
        (
            "frame_pictures",
            json!({"video": "control.cut"}),
            json!({"pictures": "control.pictures"}),
        ),
        (
            "init_scale",
            json!({"image": "control.pictures"}),
            json!({"scaled": "control.scaled"}),
        ),
        (
            "batch_frames",
            json!({"image": "control.scaled"}),
            json!({"frames": resized}),
        ),
    ];
    if let Some(value) = pad {
        components.insert(
            "fit_frames".into(),
            length_policy(
                "fit_frames",
                json!({"length": frames.length, "value": value}),
            ),
        );
        steps.push((
            "fit_frames",
            json!({"video": "control.frames"}),
            json!({"fitted": FITTED}),
        ));
    }
    for (component, inputs, outputs) in steps {
        setup.push(invoke(component, inputs, outputs), &[&frames.node, loader]);
    }
}

/// A policy `kind` on a video's frames (`take_frames`, `fit_frames`)
/// with contract `parameters`.
fn length_policy(kind: &str, parameters: Value) -> Value {
    let id = format!("wfstudio.{}", kind.replace('_', "-"));
    policy(
        kind,
        json!({"video": batch_video()}),
        json!({"fitted": encoded_video()}),
        Some(json!({"id": id, "version": "1", "parameters": parameters})),
    )
}

/// The control video in words: the input, node `loader`'s frames, what
/// is done to them and the value made, `pad` as in [`fitted`].
pub(super) fn words(
    frames: &VideoFrames,
    loader: &str,
    pad: bool,
    value: &dyn Fn(&str) -> String,
) -> String {
    let padded = match pad {
        true => format!(", padded with grey frames to {}", frames.length),
        false => String::new(),
    };
    format!(
        "the control video {} (node {loader}'s frames: the first {}, resized bilinear to cover {}x{}, centre cropped{padded}: {})",
        value(INPUT),
        frames.length,
        frames.width,
        frames.height,
        value(FITTED),
    )
}
