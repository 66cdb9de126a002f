//! A graph's sinks and the chain of sampler stages behind them: each
//! sink decodes the result of one sampler; a sampler whose latent comes
//! from another (a refiner's `KSamplerAdvanced` window, a hires fix through
//! `LatentUpscale`) makes that one an earlier stage. Stages are listed in
//! the order they run (every stage after the ones it samples further), and
//! each is recognised once however many sinks or stages read it. A sink
//! may show the decode through an upscale model (`ImageUpscaleWithModel`).
//! A video sink (animated WEBP/PNG, WEBM, `CreateVideo` into `SaveVideo`,
//! VideoHelperSuite's `VHS_VideoCombine`) shows the decode of a video
//! latent at its frame rate.

use super::super::graph::Graph;
use super::{Plan, SAMPLER_CLASSES, custom, stage, vae_source};
use crate::comfyui::lower::Refusal;
use crate::comfyui::lower::parts::Axes;
use std::collections::BTreeMap;

/// The decodes a sink may show (`VAEDecodeTiled` decodes the same
/// pictures in tiles, to save memory).
const DECODERS: &[&str] = &["VAEDecode", "VAEDecodeTiled"];

/// The most sampler stages one graph chains (ComfyUI has no limit; a
/// longer chain is refused rather than walked without end).
const MAX_STAGES: usize = 64;

/// The sampler stages in run order and the sinks that show their results.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Chain {
    pub stages: Vec<Plan>,
    pub sinks: Vec<Sink>,
}

/// One picture sink (`SaveImage` / `PreviewImage`) or video sink
/// (`SaveAnimatedWEBP`, `SaveVideo`, ...) and the decode it shows.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Sink {
    pub node: String,
    pub decode: String,
    pub vae: String,
    /// The stage whose latent is decoded.
    pub stage: usize,
    /// The node's own title (`_meta.title` of the API graph), if any.
    pub title: Option<String>,
    /// `SaveImage`'s `filename_prefix`, if any.
    pub prefix: Option<String>,
    /// An `ImageUpscaleWithModel` between the decode and the sink.
    pub upscale: Option<ModelUpscale>,
    /// A video sink's frames per second (`None`: a picture sink).
    pub frame_rate: Option<f64>,
}

/// `ImageUpscaleWithModel` and the `UpscaleModelLoader` it runs.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct ModelUpscale {
    pub node: String,
    pub loader: String,
}

/// The stages recognised so far, and the samplers being recognised (to
/// catch a cycle through latents).
#[derive(Default)]
pub(in crate::comfyui::lower) struct Walk {
    stages: Vec<Plan>,
    index: BTreeMap<String, usize>,
    visiting: Vec<String>,
}

/// A sink class and, for a video sink, its frame-rate input (on the
/// `CreateVideo` node for `SaveVideo`).
struct SinkClass {
    class: &'static str,
    frame_rate: Option<&'static str>,
}

const SINKS: &[SinkClass] = &[
    SinkClass {
        class: "SaveImage",
        frame_rate: None,
    },
    SinkClass {
        class: "PreviewImage",
        frame_rate: None,
    },
    SinkClass {
        class: "SaveAnimatedWEBP",
        frame_rate: Some("fps"),
    },
    SinkClass {
        class: "SaveAnimatedPNG",
        frame_rate: Some("fps"),
    },
    SinkClass {
        class: "SaveWEBM",
        frame_rate: Some("fps"),
    },
    SinkClass {
        class: "SaveVideo",
        frame_rate: Some("fps"),
    },
    SinkClass {
        class: "VHS_VideoCombine",
        frame_rate: Some("frame_rate"),
    },
];

/// Whether `class` is a picture or video sink the lowering makes an
/// output of.
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
    for sink in sinks {
        if let Some(class) = SINKS.iter().find(|s| s.class == g.class(sink)) {
            out.push(one_sink(g, sink, class, &mut walk)?);
        }
    }
    Ok(Chain {
        stages: walk.stages,
        sinks: out,
    })
}

/// Sink `sink`, with the stages behind it recognised through `walk`.
fn one_sink(
    g: &Graph<'_>,
    sink: &str,
    class: &SinkClass,
    walk: &mut Walk,
) -> Result<Sink, Refusal> {
    if class.class == "VHS_VideoCombine" {
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
    let shown = match class.class {
        "SaveVideo" => {
            let (create, _) = g.source(sink, "video")?;
            g.expect(&create, &["CreateVideo"], "video", (sink, "video"))?;
            silent(g, &create)?;
            create
        }
        _ => sink.to_string(),
    };
    let frame_rate = match class.frame_rate {
        Some(input) => {
            let fps = g.number(&shown, input)?;
            if !(fps > 0.0 && fps <= 1000.0) {
                return Err(g.refuse(
                    &shown,
                    Some(input),
                    format!("is {fps} frames a second"),
                    "use a frame rate above 0 and at most 1000",
                ));
            }
            Some(fps)
        }
        None => None,
    };
    let (mut decode, _) = g.source(&shown, "images")?;
    let mut from = (shown.clone(), "images");
    let mut upscale = None;
    if g.class(&decode) == "ImageUpscaleWithModel" {
        let (loader, _) = g.source(&decode, "upscale_model")?;
        g.expect(
            &loader,
            &["UpscaleModelLoader"],
            "upscale_model",
            (&decode, "upscale_model"),
        )?;
        let node = std::mem::take(&mut decode);
        decode = g.source(&node, "image")?.0;
        from = (node.clone(), "image");
        upscale = Some(ModelUpscale { node, loader });
    }
    g.expect(&decode, DECODERS, from.1, (&from.0, from.1))?;
    let (sampler, slot) = g.source(&decode, "samples")?;
    let stage = walk.sampled(g, &sampler, slot, (&decode, "samples"))?;
    let (vae, _) = g.source(&decode, "vae")?;
    vae_source(g, &vae, &walk.stages[stage].model.loader, (&decode, "vae"))?;
    match (walk.axes(stage), frame_rate, &upscale) {
        (Axes::Video, None, _) => {
            return Err(g.refuse(
                sink,
                Some("images"),
                "saves the frames of a video as pictures; the lowering makes a video output of a video latent".into(),
                "save the video with SaveAnimatedWEBP, SaveWEBM or CreateVideo and SaveVideo",
            ));
        }
        (Axes::Image, Some(_), _) => {
            return Err(g.refuse(
                sink,
                None,
                "shows a batch of pictures as a video; the lowering makes video outputs of video latents (EmptyHunyuanLatentVideo and the like)".into(),
                "save the pictures with SaveImage",
            ));
        }
        (Axes::Video, Some(_), Some(up)) => {
            return Err(g.refuse(
                &up.node,
                None,
                "upscales video frames; the lowering runs upscale models on pictures only".into(),
                "upscale the video outside the graph",
            ));
        }
        _ => {}
    }
    let text = |value: Option<&serde_json::Value>| {
        value
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    let node = g.nodes.get(sink);
    Ok(Sink {
        node: sink.to_string(),
        decode,
        vae,
        stage,
        title: text(node.and_then(|n| n.pointer("/_meta/title"))),
        prefix: text(node.and_then(|n| n.pointer("/inputs/filename_prefix"))),
        upscale,
        frame_rate,
    })
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

impl Walk {
    /// The stage of sampler `node`, whose output `slot` feeds input
    /// `from.1` of node `from.0`, recognised (with the stages it samples
    /// further) on first sight.
    pub(super) fn sampled(
        &mut self,
        g: &Graph<'_>,
        node: &str,
        slot: i64,
        from: (&str, &str),
    ) -> Result<usize, Refusal> {
        g.expect(node, SAMPLER_CLASSES, from.1, from)?;
        if slot != 0 && custom::is_custom(g.class(node)) {
            return Err(g.refuse(
                node,
                None,
                format!(
                    "feeds its denoised_output to node {}; the lowering makes the sampled output (slot 0) only",
                    from.0
                ),
                "use the sampler's first output",
            ));
        }
        if let Some(&stage) = self.index.get(node) {
            return Ok(stage);
        }
        if self.visiting.iter().any(|v| v == node) {
            return Err(g.refuse(
                node,
                Some("latent_image"),
                format!(
                    "samples a latent that comes back from its own result (a cycle through samplers {})",
                    self.visiting.join(", ")
                ),
                "break the cycle: start one sampler from an empty or encoded latent",
            ));
        }
        if self.visiting.len() >= MAX_STAGES {
            return Err(g.refuse(
                node,
                None,
                format!("is the sampler at depth {MAX_STAGES} of a chain; the lowering chains at most {MAX_STAGES} samplers"),
                "split the chain into several graphs",
            ));
        }
        self.visiting.push(node.to_string());
        let plan = stage(g, node, self)?;
        self.visiting.pop();
        self.stages.push(plan);
        self.index.insert(node.to_string(), self.stages.len() - 1);
        Ok(self.stages.len() - 1)
    }

    /// The latent channels of stage `stage`.
    pub(super) fn channels(&self, stage: usize) -> i64 {
        self.stages.get(stage).map_or(4, |p| p.channels)
    }

    /// The latent extents `(height, width)` of stage `stage`, where the
    /// graph fixes them.
    pub(super) fn extents(&self, stage: usize) -> Option<(i64, i64)> {
        let plan = self.stages.get(stage)?;
        super::source_extents(&plan.latent, |earlier| self.extents(earlier))
    }

    /// The sampler node of stage `stage`, when it samples by flow matching.
    pub(super) fn flow_sampler(&self, stage: usize) -> Option<&str> {
        let plan = self.stages.get(stage)?;
        plan.model.flow.as_ref().map(|_| plan.sampler.node.as_str())
    }

    /// The batch size of stage `stage`'s latent, where the graph fixes it.
    pub(super) fn batch(&self, stage: usize) -> Option<i64> {
        let plan = self.stages.get(stage)?;
        super::source_batch(&plan.latent, |earlier| self.batch(earlier))
    }

    /// The latent axes of stage `stage`.
    pub(super) fn axes(&self, stage: usize) -> Axes {
        self.stages.get(stage).map_or(Axes::Image, |p| p.axes)
    }
}
