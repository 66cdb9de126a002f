//! A graph's sinks and the chain of sampler stages behind them: each
//! sink decodes the result of one sampler; a sampler whose latent comes
//! from another (a refiner's `KSamplerAdvanced` window, a hires fix through
//! `LatentUpscale`, or through pixels: `VAEEncode` of its decode) makes
//! that one an earlier stage. Stages are listed in
//! the order they run (every stage after the ones it samples further), and
//! each is recognised once however many sinks or stages read it. A sink
//! may show the decode through an upscale model and a resize (`pixels`);
//! a picture sink may show a loaded picture (maybe resized and processed).
//! A video sink (animated WEBP/PNG, WEBM, `CreateVideo` into `SaveVideo`,
//! VideoHelperSuite's `VHS_VideoCombine`, AnimateDiff-Evolved's
//! `ADE_AnimateDiffCombine`) shows the decode of a video latent, or a
//! batch of pictures as one video's frames, at its frame rate; an audio
//! sink (`SaveAudio`, `PreviewAudio`, ...) plays the `VAEDecodeAudio` of
//! an audio latent.

use super::super::graph::Graph;
use super::Plan;
use super::pixels::{ModelUpscale, Origin, Resize};
use super::video_input;
use super::walk::Walk;
use crate::comfyui::lower::Refusal;
use crate::comfyui::lower::parts::Axes;

/// The sampler stages in run order, the sinks that show their results
/// and the texts `PreviewAny` nodes show.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Chain {
    pub stages: Vec<Plan>,
    pub sinks: Vec<Sink>,
    pub texts: Vec<TextSink>,
}

/// A `PreviewAny` of a written value (or of one folded into it): the
/// text it shows, as Python's `str` writes the value (`True`, `2.0`, text
/// as it is).
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct TextSink {
    pub node: String,
    /// The node's own title (`_meta.title`), if any.
    pub title: Option<String>,
    pub text: String,
}

/// The class that shows a value as text.
const PREVIEW_ANY: &str = "PreviewAny";

/// The text `PreviewAny` node `node` shows, where its `source` is a value
/// the graph writes (or the lowering folded); `None` for any other node
/// (a `PreviewAny` of what a model computes is not an output yet).
pub(in crate::comfyui::lower) fn shown_text(g: &Graph<'_>, node: &str) -> Option<String> {
    if g.class(node) != PREVIEW_ANY {
        return None;
    }
    let source = g.input(node, "source")?;
    if crate::comfyui::link::api_link(source).is_some() {
        return None;
    }
    super::super::fold::python_str(source)
}

/// One picture sink (`SaveImage` / `PreviewImage`), video sink
/// (`SaveAnimatedWEBP`, `SaveVideo`, ...) or audio sink (`SaveAudio`,
/// `PreviewAudio`, ...) and the decode it shows (a picture sink may show a
/// loaded picture instead).
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Sink {
    pub node: String,
    /// The decode (of a stage's latent) or the `LoadImage` it shows.
    pub origin: Origin,
    /// The node's own title (`_meta.title` of the API graph), if any.
    pub title: Option<String>,
    /// `SaveImage`'s `filename_prefix`, if any.
    pub prefix: Option<String>,
    /// An `ImageUpscaleWithModel` between the decode or loaded picture
    /// and the sink.
    pub upscale: Option<ModelUpscale>,
    /// A resize after that.
    pub resize: Option<Resize>,
    /// What it shows.
    pub kind: SinkKind,
    /// Further decodes whose frames the video shows after the origin's
    /// (`BatchImagesNode`: see `joined`).
    pub joined: Vec<Origin>,
    /// LTX-2's sound beside the video (`CreateVideo`'s `audio`).
    pub sound: Option<super::av::Sound>,
    /// The `LoadVideo` whose sound track `CreateVideo` adds, which the
    /// package does not carry (its video comes out silent).
    pub dropped_sound: Option<String>,
}

/// What a sink shows.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) enum SinkKind {
    /// Pictures of 3 channels, or of the model family's own (4: RGBA).
    Picture { channels: i64 },
    /// Video frames at a frame rate.
    Video { frame_rate: FrameRate },
    /// A waveform (`VAEDecodeAudio`'s).
    Audio,
}

/// A video's frames a second.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) enum FrameRate {
    /// Written in the graph (or folded from constants).
    Written(f64),
    /// The rate of `LoadVideo` node's video (`GetVideoComponents` output
    /// 2), whose frames the sink shows.
    Loaded(String),
}

/// A sink class and what it shows.
struct SinkClass {
    class: &'static str,
    shows: Shows,
}

/// What a sink class shows: pictures, video frames (with its frame-rate
/// input, on the `CreateVideo` node for `SaveVideo`) or sound (input
/// `audio`).
enum Shows {
    Picture,
    Video(&'static str),
    Audio,
}

const SINKS: &[SinkClass] = &[
    SinkClass {
        class: "SaveImage",
        shows: Shows::Picture,
    },
    SinkClass {
        class: "PreviewImage",
        shows: Shows::Picture,
    },
    SinkClass {
        class: "SaveImageAdvanced",
        shows: Shows::Picture,
    },
    SinkClass {
        class: "SaveAnimatedWEBP",
        shows: Shows::Video("fps"),
    },
    SinkClass {
        class: "SaveAnimatedPNG",
        shows: Shows::Video("fps"),
    },
    SinkClass {
        class: "SaveWEBM",
        shows: Shows::Video("fps"),
    },
    SinkClass {
        class: "SaveVideo",
        shows: Shows::Video("fps"),
    },
    SinkClass {
        class: "VHS_VideoCombine",
        shows: Shows::Video("frame_rate"),
    },
    SinkClass {
        class: "ADE_AnimateDiffCombine",
        shows: Shows::Video("frame_rate"),
    },
    SinkClass {
        class: "SaveAudio",
        shows: Shows::Audio,
    },
    SinkClass {
        class: "SaveAudioMP3",
        shows: Shows::Audio,
    },
    SinkClass {
        class: "SaveAudioOpus",
        shows: Shows::Audio,
    },
    SinkClass {
        class: "PreviewAudio",
        shows: Shows::Audio,
    },
    SinkClass {
        class: "SaveAudioAdvanced",
        shows: Shows::Audio,
    },
];

/// Whether `class` is a picture, video or audio sink the lowering makes
/// an output of.
pub(in crate::comfyui::lower) fn is_sink(class: &str) -> bool {
    SINKS.iter().any(|s| s.class == class)
}

/// The sink classes, for messages.
pub(in crate::comfyui::lower) fn sink_classes() -> String {
    let names: Vec<&str> = SINKS.iter().map(|s| s.class).collect();
    names.join(", ")
}

/// Recognises every sink of `sinks` (in their order) and the stages behind
/// them.
pub(in crate::comfyui::lower) fn recognise(
    g: &Graph<'_>,
    sinks: &[&String],
) -> Result<Chain, Refusal> {
    let mut walk = Walk::default();
    let mut out = Vec::new();
    let mut texts = Vec::new();
    for sink in sinks {
        if let Some(class) = SINKS.iter().find(|s| s.class == g.class(sink)) {
            out.push(one_sink(g, sink, class, &mut walk)?);
        } else if let Some(shown) = shown_text(g, sink) {
            texts.push(TextSink {
                node: sink.to_string(),
                title: text(g, sink, "/_meta/title"),
                text: shown,
            });
        }
    }
    let chain = Chain {
        stages: walk.stages,
        sinks: out,
        texts,
    };
    loaded_rates_read(g, &chain)?;
    Ok(chain)
}

/// Refuses a video sink at the frame rate of a loaded video the package
/// does not read: neither shown by a sink nor a stage's control video
/// (the rate is an input beside the video's).
fn loaded_rates_read(g: &Graph<'_>, chain: &Chain) -> Result<(), Refusal> {
    let shown = chain.sinks.iter().filter_map(|s| match &s.origin {
        Origin::Video(loader) => Some(loader),
        _ => None,
    });
    let controls = chain
        .stages
        .iter()
        .filter_map(|plan| plan.video_frames()?.control_video());
    let read: Vec<&String> = shown.chain(controls).collect();
    for sink in &chain.sinks {
        if let SinkKind::Video {
            frame_rate: FrameRate::Loaded(loader),
        } = &sink.kind
            && !read.contains(&loader)
        {
            return Err(g.refuse(
                loader,
                None,
                format!("gives the frame rate video sink {} shows, but the package does not read its video; the lowering takes a loaded video's frame rate where its frames are shown or are a control video", sink.node),
                "write the frame rate",
            ));
        }
    }
    Ok(())
}

/// Sink `sink`, with the stages behind it recognised through `walk`.
fn one_sink(
    g: &Graph<'_>,
    sink: &str,
    class: &SinkClass,
    walk: &mut Walk,
) -> Result<Sink, Refusal> {
    if let Shows::Audio = class.shows {
        return audio_sink(g, sink, walk);
    }
    if matches!(class.class, "VHS_VideoCombine" | "ADE_AnimateDiffCombine") {
        silent(g, sink)?;
        if g.flag(sink, "pingpong") == Some(true) {
            return Err(g.refuse(
                sink,
                Some("pingpong"),
                "plays the frames forth and back, which the lowering's video output does not"
                    .into(),
                "set pingpong to false",
            ));
        }
    }
    // SaveVideo shows the video CreateVideo makes of the pictures (at
    // CreateVideo's frame rate); other sinks show the pictures themselves.
    let (shown, sound, dropped_sound) = match class.class {
        "SaveVideo" => {
            let (create, _) = g.source(sink, "video")?;
            g.expect(&create, &["CreateVideo"], "video", (sink, "video"))?;
            match video_input::sound_track(g, &create)? {
                Some(loader) => (create, None, Some(loader)),
                None => {
                    let sound = super::av::sound(g, &create, walk)?;
                    (create, sound, None)
                }
            }
        }
        _ => (sink.to_string(), None, None),
    };
    let frame_rate = match class.shows {
        Shows::Video(input) => Some(frame_rate(g, &shown, input)?),
        Shows::Picture | Shows::Audio => None,
    };
    if let Some(frame_rate) = frame_rate.clone()
        && let (batch, 0) = g.source(&shown, "images")?
        && g.class(&batch) == super::joined::BATCH
    {
        if let Some(sound) = &sound {
            return Err(g.refuse(
                &sound.decode,
                None,
                format!("adds a sound track to the videos node {batch} joins; the lowering adds LTX-2's sound to its own video"),
                "save the joined videos without sound",
            ));
        }
        let (origin, joined) = super::joined::joined(g, &batch, walk)?;
        return Ok(Sink {
            node: sink.to_string(),
            origin,
            title: text(g, sink, "/_meta/title"),
            prefix: text(g, sink, "/inputs/filename_prefix"),
            upscale: None,
            resize: None,
            kind: SinkKind::Video { frame_rate },
            joined,
            sound: None,
            dropped_sound,
        });
    }
    let image = super::pixels::pixels(g, &shown, "images", walk)?;
    let (upscale, resize) = (image.upscale, image.resize);
    let axes = match &image.origin {
        Origin::Decoded { stage, .. } => walk.axes(*stage),
        Origin::Loaded(_) | Origin::Video(_) | Origin::Stitched(_) => Axes::Image,
    };
    match (&image.origin, &frame_rate) {
        (Origin::Loaded(loader), Some(_)) => {
            return Err(g.refuse(
                loader,
                None,
                format!("gives the frames video sink {sink} shows; the lowering makes videos of sampled latents and loaded videos only"),
                "show the picture with SaveImage or PreviewImage",
            ));
        }
        (Origin::Stitched(stitch), Some(_)) => {
            return Err(g.refuse(
                &stitch.node,
                None,
                format!("stitches the frames video sink {sink} shows; the lowering shows stitched pictures as pictures only"),
                "show the picture with SaveImage or PreviewImage",
            ));
        }
        (Origin::Video(loader), None) => {
            return Err(g.refuse(
                loader,
                None,
                format!("gives the video frames that picture sink {sink} shows; the lowering shows a loaded video's frames as a video"),
                "show them with CreateVideo into SaveVideo",
            ));
        }
        (Origin::Video(loader), Some(FrameRate::Loaded(other))) if other != loader => {
            return Err(g.refuse(
                &shown,
                None,
                format!("shows the frames of node {loader}'s video at the frame rate of node {other}'s; the lowering keeps a loaded video's frame rate with its frames"),
                "take the frame rate from the video whose frames are shown, or write it",
            ));
        }
        _ => {}
    }
    if let Origin::Decoded { decode, .. } = &image.origin
        && axes == Axes::Audio
    {
        return Err(g.refuse(
            decode,
            None,
            "decodes an audio latent as pictures".into(),
            "decode it with VAEDecodeAudio into SaveAudio or PreviewAudio",
        ));
    }
    match (axes, &frame_rate, &upscale) {
        (Axes::Video | Axes::AudioVideo, _, Some(up)) => {
            return Err(g.refuse(
                &up.node,
                None,
                "upscales video frames; the lowering runs upscale models on pictures only".into(),
                "upscale the video outside the graph",
            ));
        }
        (Axes::Video | Axes::AudioVideo, _, None) if resize.is_some() => {
            let node = resize.as_ref().map_or("", |r| r.node.as_str());
            return Err(g.refuse(
                node,
                None,
                "resizes or processes video frames; the lowering resizes and processes pictures only".into(),
                "make the video at the final size, as it is shown",
            ));
        }
        _ => {}
    }
    let channels = match &image.origin {
        Origin::Decoded { stage, .. } => walk.picture_channels(*stage),
        Origin::Loaded(_) | Origin::Video(_) | Origin::Stitched(_) => 3,
    };
    if let Some(sound) = &sound
        && !matches!(&image.origin, Origin::Decoded { stage, .. } if *stage == sound.stage)
    {
        return Err(g.refuse(
            &sound.decode,
            None,
            format!("decodes the sound of another sampler than the frames video sink {sink} shows"),
            "decode the frames and the sound of one LTXVSeparateAVLatent",
        ));
    }
    if let (Origin::Decoded { decode, .. }, 4) = (&image.origin, channels)
        && (upscale.is_some() || resize.is_some() || frame_rate.is_some())
    {
        return Err(g.refuse(
            decode,
            None,
            format!("decodes RGBA pictures that node {sink} shows through an upscale, a resize, a picture operation or as a video; the lowering shows RGBA pictures as they are decoded"),
            "show the decode with SaveImage or PreviewImage",
        ));
    }
    Ok(Sink {
        node: sink.to_string(),
        origin: image.origin,
        title: text(g, sink, "/_meta/title"),
        prefix: text(g, sink, "/inputs/filename_prefix"),
        upscale,
        resize,
        kind: match frame_rate {
            Some(frame_rate) => SinkKind::Video { frame_rate },
            None => SinkKind::Picture { channels },
        },
        joined: Vec::new(),
        sound,
        dropped_sound,
    })
}

/// Audio sink `sink`: the `VAEDecodeAudio` of an audio latent it plays.
fn audio_sink(g: &Graph<'_>, sink: &str, walk: &mut Walk) -> Result<Sink, Refusal> {
    let (decode, _) = g.source(sink, "audio")?;
    let decoded = super::pixels::decoded(g, decode, (sink, "audio"), &["VAEDecodeAudio"], walk)?;
    if walk.axes(decoded.stage) != Axes::Audio {
        return Err(g.refuse(
            &decoded.decode,
            None,
            "decodes a picture or video latent as audio".into(),
            "decode it with VAEDecode into a picture or video sink",
        ));
    }
    Ok(Sink {
        node: sink.to_string(),
        origin: decoded.into(),
        title: text(g, sink, "/_meta/title"),
        prefix: text(g, sink, "/inputs/filename_prefix"),
        upscale: None,
        resize: None,
        kind: SinkKind::Audio,
        joined: Vec::new(),
        sound: None,
        dropped_sound: None,
    })
}

/// The text at `pointer` of node `node`, if any.
fn text(g: &Graph<'_>, node: &str, pointer: &str) -> Option<String> {
    g.nodes
        .get(node)
        .and_then(|n| n.pointer(pointer))
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
}

/// The frame rate input `input` of `node` gives: a written one (above 0,
/// at most 1000), or a loaded video's.
fn frame_rate(g: &Graph<'_>, node: &str, input: &str) -> Result<FrameRate, Refusal> {
    if g.is_link(node, input) {
        let (source, slot) = g.source(node, input)?;
        if g.class(&source) == video_input::COMPONENTS {
            let loader = video_input::loader(g, &source, ((node, input), slot, 2))?;
            return Ok(FrameRate::Loaded(loader));
        }
    }
    let fps = g.number(node, input)?;
    if !(fps > 0.0 && fps <= 1000.0) {
        return Err(g.refuse(
            node,
            Some(input),
            format!("is {fps} frames a second"),
            "use a frame rate above 0 and at most 1000",
        ));
    }
    Ok(FrameRate::Written(fps))
}

/// Refuses a sound track on video node `node`.
fn silent(g: &Graph<'_>, node: &str) -> Result<(), Refusal> {
    if !g.has(node, "audio") {
        return Ok(());
    }
    Err(g.refuse(
        node,
        Some("audio"),
        "adds a sound track to the video; the lowering makes silent video outputs".into(),
        "disconnect the audio input",
    ))
}
