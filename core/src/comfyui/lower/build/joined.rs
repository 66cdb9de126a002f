//! A video sink's joined videos (`BatchImagesNode`, see
//! `recognise::joined`): each decoded, then one video of their frames in
//! turn (`join_frames`, numbered where the workflow joins videos of
//! another count too).

use super::super::parts::{self, Axes, contract, declared_once, invoke, policy};
use super::super::recognise::{Origin, Sink};
use super::pixels::{PixelParts, Top};
use serde_json::json;

/// The video `sink` shows: `first` (its origin's decode), then the frames
/// of each of its joined decodes.
pub(super) fn joined<'c>(
    pixels: &mut PixelParts<'c>,
    sink: &'c Sink,
    first: String,
    top: &mut Top<'_>,
) -> String {
    if sink.joined.is_empty() {
        return first;
    }
    // Each video's own frames: they may differ in length.
    let video = |n: usize| {
        contract(
            "float32",
            json!(["batch", format!("frames_{n}"), 3, "height", "width"]),
            true,
        )
    };
    let mut binds = json!({"video_0": first});
    let mut ports = json!({"video_0": video(0)});
    // `recognise::joined` takes decodes only.
    let decodes = sink.joined.iter().filter_map(|origin| match origin {
        Origin::Decoded {
            decode,
            vae,
            stage,
            trim,
            pixel_space,
        } => Some((decode, (vae.as_str(), *stage, trim.as_ref(), *pixel_space))),
        Origin::Loaded(_) | Origin::Video(_) | Origin::Stitched(_) => None,
    });
    for (n, (decode, (vae, stage, trim, pixel_space))) in decodes.enumerate() {
        let port = format!("video_{}", n + 1);
        let value = pixels.decoded(decode, (vae, stage, trim, pixel_space, 3), Axes::Video, top);
        binds[&port] = json!(value);
        ports[&port] = video(n + 1);
    }
    let declare = |name: &str| {
        policy(
            name,
            ports.clone(),
            json!({"joined": parts::video()}),
            Some(json!({"id": "wfstudio.join-frames", "version": "1"})),
        )
    };
    let name = declared_once(top.components, "join_frames", declare);
    let made = format!("joined.{}", sink.node);
    top.after
        .push(invoke(&name, binds, json!({"joined": made})), &[&sink.node]);
    made
}
