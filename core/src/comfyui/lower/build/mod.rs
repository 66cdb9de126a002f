//! Turning a [`Chain`] into the `inference_metadata` document: one
//! sampling loop per sampler stage in run order (`stage`), each later
//! stage's names kept apart (`rename`); then, for every sink, the decode
//! of its stage's latent and an output named after the sink (a video
//! sink's with its frame rate beside it, an audio sink's with its sample
//! rate in its media); and
//! the last stage's latent as the `latent` output.
//!
//! Model components are named after the checkpoint loader they come from
//! and the LoRAs merged into them (`loras::model_prefixes`): the first
//! plainly (`denoiser`), another with a prefix (`model2_denoiser`, a
//! refiner's). VAE decoders are named per VAE node
//! and kind of latent (`vae_decoder`, then `vae2_decoder`), upscale models per loader
//! (`upscaler`, then `upscaler2`); a sink behind an upscale model shows
//! 0..1 pixels, as ComfyUI's upscalers take and give them.

mod av;
mod calls;
mod composite;
mod control;
mod control_video;
mod edit;
mod frames;
mod fun_control;
mod held;
mod held_pictures;
mod joined;
mod loaded;
mod lotus;
mod mask;
mod names;
mod outpaint;
mod patch;
mod pictures;
mod pixels;
mod prompts;
mod reference;
mod rename;
mod scales;
mod schedule;
mod solving;
mod stage;
mod stitch;
mod style;
mod svd;
mod texts;
mod vace;
mod vision;

pub(super) use av::note as av_note;
pub(super) use edit::words as edit_words;
pub(super) use frames::note as frames_note;
pub(super) use held::note as held_note;
pub(super) use loaded::note as loaded_note;
pub(super) use names::StageNames;
pub(super) use outpaint::words as outpaint_words;
pub(super) use patch::note as patch_note;
pub(super) use prompts::clip_text_note;
pub(super) use reference::note as reference_note;
pub(super) use style::note as style_note;
pub(super) use vision::note as vision_note;

use super::Refusal;
use super::graph::Graph;
use super::parts::{self, Axes, Provenance, Steps, parameter, picture, row};
use super::recognise::{
    Chain, FrameRate, LatentSource, Origin, Patch, SAMPLE_RATE, Sink, SinkKind, WAVE_CHANNELS,
};
use pixels::{PixelParts, Top};
use prompts::Prompted;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The document and its provenance.
pub(super) struct Built {
    pub document: Value,
    pub prompts: Vec<(String, String)>,
    pub provenance: Provenance,
}

/// Two samplers that would declare one model component with different
/// ports (one uses a ControlNet, SDXL conditioning, references or an edit
/// encoder's picture on it, the other not).
pub(super) struct Conflict {
    sampler: String,
    component: String,
    other: String,
}

impl Conflict {
    /// The refusal, naming the later sampler.
    pub(super) fn refusal(&self, g: &Graph<'_>) -> Refusal {
        g.refuse(
            &self.sampler,
            Some("model"),
            format!(
                "uses component `{}` with other inputs than sampler {} (a ControlNet, SDXL conditioning, reference pictures, a picture shown to the text encoder, a held first frame or guide frames on one of them only), and one model component has one set of ports",
                self.component, self.other
            ),
            "condition both samplers of the checkpoint alike, or load the checkpoint twice",
        )
    }
}

/// Titles ComfyUI gives sinks by default: not worth naming an output after.
const DEFAULT_TITLES: &[&str] = &[
    "Save Image",
    "Preview Image",
    "SaveImage",
    "PreviewImage",
    "SaveAnimatedWEBP",
    "SaveAnimatedPNG",
    "SaveVideo",
    "Save Animated WEBP",
    "Save Animated PNG",
    "SaveWEBM",
    "Save WEBM",
    "Save Video",
    "Video Combine 🎥🅥🅗🅢",
    "SaveAudio",
    "Save Audio",
    "Save Audio (FLAC)",
    "PreviewAudio",
    "Preview Audio",
    "SaveAudioMP3",
    "Save Audio (MP3)",
    "SaveAudioOpus",
    "Save Audio (Opus)",
];

/// Builds the document for `chain`.
pub(super) fn build(chain: &Chain) -> Result<Built, Conflict> {
    let mut inputs = Map::new();
    let mut components = Map::new();
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    let mut state = Map::new();
    let mut prompts: Vec<Prompted> = Vec::new();
    let mut provenance = Provenance::new();
    let mut after = Steps::default();
    let mut latents: Vec<String> = Vec::new();
    let mut pixels = PixelParts::default();
    let loaded = top_inputs(chain, &mut inputs);
    let prefixes = super::loras::model_prefixes(chain);
    let encoders = super::loras::encoder_prefixes(chain);
    for (((index, plan), prefix), encoder) in
        chain.stages.iter().enumerate().zip(prefixes).zip(encoders)
    {
        let loader = &plan.model.loader;
        let names = StageNames::new(chain, index);
        // Pixels it encodes from an earlier stage's decode or through an
        // upscale model are made first (cut to whole multiples of 8 after
        // a resize for a VAEEncode or an edit node, which crop so; SVD's
        // own resize comes later).
        let mut top = Top {
            components: &mut components,
            after: &mut after,
            latents: &latents,
            stages: &chain.stages,
            loaded: &loaded,
        };
        let for_encode = matches!(
            plan.latent,
            LatentSource::Encoded { .. } | LatentSource::Edit { .. }
        );
        let decoded = plan
            .encoded_picture()
            .and_then(|image| pixels.encoded(image, for_encode, &mut top));
        // A ControlNet's picture decoded by an earlier stage, in 0..1.
        let control_made = plan
            .control
            .as_ref()
            .filter(|c| c.image.loader().is_none())
            .and_then(|control| pixels.encoded(&control.image, false, &mut top));
        let frames_made = names.reused(frames::LATENT);
        let mut parts = stage::stage(
            plan,
            (&prefix, &encoder),
            (decoded.as_deref(), control_made.as_deref(), frames_made),
        );
        outpaint::read_padded(plan, (&mut parts.inputs, &mut parts.step));
        let shared: BTreeSet<String> = parts
            .inputs
            .iter()
            .filter(|(name, input)| {
                inputs.get(*name) == Some(*input)
                    && (input.pointer("/source/kind") == Some(&json!("literal"))
                        || same_prompt(name, &parts.prompts, &prompts))
            })
            .map(|(name, _)| name.clone())
            .collect();
        rename::rename(&mut parts, &names, &shared, &latents);
        for (name, input) in parts.inputs {
            inputs.entry(name).or_insert(input);
        }
        for (name, declared) in parts.components {
            match components.get(&name) {
                Some(existing) if *existing != declared => {
                    return Err(Conflict {
                        sampler: plan.sampler.node.clone(),
                        component: name.clone(),
                        other: owners.get(&name).cloned().unwrap_or_default(),
                    });
                }
                Some(_) => {}
                None => {
                    owners.insert(name.clone(), plan.sampler.node.clone());
                    components.insert(name, declared);
                }
            }
        }
        state.extend(parts.state);
        let path = format!("pipeline.workflow.steps[{}]", after.steps.len());
        for (relative, nodes) in parts.provenance {
            provenance.push((format!("{path}{relative}"), nodes));
        }
        for prompt in parts.prompts {
            if !prompts.iter().any(|p| p.input == prompt.input) {
                prompts.push(prompt);
            }
        }
        let mut nodes = vec![&plan.sampler.node, loader];
        for patch in &plan.model.patches {
            match patch {
                Patch::Lora(lora) => nodes.push(&lora.node),
                Patch::Merge(merge) => nodes.extend([&merge.node, &merge.other]),
                Patch::Motion(motion) => nodes.push(&motion.node),
            }
        }
        if let Some(patch) = &plan.model.control_patch {
            nodes.extend([&patch.node, &patch.loader]);
        }
        after.push(parts.step, &nodes);
        latents.push(names.value("latent_state"));
    }

    let mut outputs = Map::new();
    for sink in &chain.sinks {
        let axes = match &sink.origin {
            Origin::Decoded { stage, .. } => chain.stages[*stage].axes,
            Origin::Loaded(_) | Origin::Video(_) | Origin::Stitched(_) => Axes::Image,
        };
        let mut top = Top {
            components: &mut components,
            after: &mut after,
            latents: &latents,
            stages: &chain.stages,
            loaded: &loaded,
        };
        let (shown, range) = pixels.shown(sink, axes, &mut top);
        let sound = sink.sound.as_ref().and_then(|s| pixels.sound(s, &mut top));
        let mut shown = joined::joined(&mut pixels, sink, shown, &mut top);
        let mut video = parts::video();
        if let (SinkKind::Video { .. }, Axes::Image) = (&sink.kind, axes) {
            // A video sink shows a batch of pictures as one video's frames.
            shown = pixels.batch_frames(sink, (&shown, range), &mut top);
            video = parts::batch_video();
        }
        let output = match chain.sinks.len() {
            1 => base_name(sink).to_string(),
            _ => output_name(sink, &outputs, &inputs),
        };
        match &sink.kind {
            SinkKind::Video { frame_rate } => {
                outputs.insert(
                    output.clone(),
                    json!({"contract": video, "role": "video", "stage": "pre_adapter"}),
                );
                after.push(
                    json!({"kind": "emit", "value": shown, "output": output, "mode": "replace"}),
                    &[&sink.node],
                );
                let rate = crate::media::frame_rate_output(&output);
                let input = match frame_rate {
                    FrameRate::Written(fps) => {
                        let input = format!("request.{rate}");
                        inputs.insert(
                            input.clone(),
                            parameter(row("float32"), json!({"kind": "opaque"}), &rate, json!(fps)),
                        );
                        input
                    }
                    FrameRate::Loaded(loader) => crate::media::frame_rate_output(
                        loaded.get(loader).expect(
                            "a loaded frame rate is that of a video the package reads (`recognise::chain::loaded_rates_read`), whose input `top_inputs` or its stage declares",
                        ),
                    ),
                };
                outputs.insert(
                    rate.clone(),
                    json!({"contract": row("float32"), "role": "tensor", "stage": "pre_adapter"}),
                );
                after.push(
                    json!({"kind": "emit", "value": input, "output": rate, "mode": "replace"}),
                    &[&sink.node],
                );
                if let (Some(wave), Some(sound)) = (sound, &sink.sound) {
                    let beside = format!("{output}_sound");
                    let emitted = (wave.as_str(), beside.as_str(), sound.sample_rate);
                    emit_audio(emitted, &sink.node, &mut outputs, &mut after);
                }
            }
            SinkKind::Audio => {
                emit_audio(
                    (&shown, &output, SAMPLE_RATE),
                    &sink.node,
                    &mut outputs,
                    &mut after,
                );
            }
            SinkKind::Picture { channels } => {
                // A picture sink saves a video's frames as pictures.
                let (shown, range) = match axes {
                    Axes::Video | Axes::AudioVideo => (
                        pixels.video_pictures(&shown, &sink.node, &mut top),
                        "zero_to_one",
                    ),
                    _ => (shown, range),
                };
                outputs.insert(output.clone(), json!({"contract": picture(json!(channels)), "role": "image", "value_range": range, "stage": "pre_adapter"}));
                after.push(
                    json!({"kind": "emit", "value": shown, "output": output, "mode": "replace"}),
                    &[&sink.node],
                );
            }
        }
    }
    texts::emit_texts(&chain.texts, (&mut inputs, &mut outputs), &mut after);
    // The last stage's latent (a graph of loaded pictures alone has none).
    if let (Some(plan), Some(latent)) = (chain.stages.last(), latents.last()) {
        outputs.insert(
            "latent".into(),
            json!({"contract": plan.axes.latent(), "role": "tensor", "stage": "pre_adapter"}),
        );
        after.push(
            json!({"kind": "emit", "value": latent, "output": "latent", "mode": "replace"}),
            &[],
        );
    }

    let capabilities = [
        "workflow_ssa",
        "linear_effects",
        "nested_control_flow",
        "loop_induction_values",
        "typed_emit",
    ];
    let mut document = json!({"schema_version": "v1"});
    document["pipeline"] = json!({"workflow": {
        "manifest": {"capabilities": capabilities},
        "inputs": inputs,
        "outputs": outputs,
        "components": components,
        "state": state,
        "steps": after.steps,
    }});
    after.provenance("pipeline.workflow.steps", &mut provenance);
    Ok(Built {
        document,
        prompts: prompts.into_iter().map(|p| (p.input, p.text)).collect(),
        provenance,
    })
}

/// Emits waveform `value` as audio output `output` at `rate` samples a
/// second, for sink `node`.
fn emit_audio(
    (value, output, rate): (&str, &str, i64),
    node: &String,
    outputs: &mut Map<String, Value>,
    after: &mut Steps,
) {
    let media = json!({"container": "wav", "encoding": "pcm_f32_le", "sample_rate_hz": rate, "channels": WAVE_CHANNELS});
    outputs.insert(output.into(), json!({"contract": parts::audio(WAVE_CHANNELS), "role": "audio", "stage": "pre_adapter", "media": media}));
    after.push(
        json!({"kind": "emit", "value": value, "output": output, "mode": "replace"}),
        &[node],
    );
}

/// The input holding each loaded picture the top level reads (a sink
/// shows it, or an upscale model runs on it for a stage): a stage's, or
/// one declared here (`request.loaded_image`, `request.loaded_image_2`,
/// ..., each of its own size) for a picture no stage reads itself; and
/// each loaded video a sink shows (`request.loaded_video`, ...).
fn top_inputs(chain: &Chain, inputs: &mut Map<String, Value>) -> BTreeMap<String, String> {
    let mut loaded = names::loaded_inputs(chain);
    let upscaled = chain
        .stages
        .iter()
        .filter_map(|plan| plan.encoded_picture())
        .filter(|image| image.upscale.is_some())
        .map(|image| &image.origin);
    let shown = chain.sinks.iter().flat_map(|sink| sink.origin.leaves());
    let mut own = 0;
    let mut videos = 0;
    for origin in upscaled.chain(shown) {
        match origin {
            Origin::Loaded(loader) if !loaded.contains_key(loader) => {
                own += 1;
                let input = pictures::numbered("request.loaded_image", own - 1);
                let word = pictures::numbered("loaded_image", own - 1);
                inputs.insert(input.clone(), pictures::sized_input(&word));
                loaded.insert(loader.clone(), input);
            }
            Origin::Video(loader) if !loaded.contains_key(loader) => {
                videos += 1;
                let input = pictures::numbered("request.loaded_video", videos - 1);
                let word = pictures::numbered("loaded_video", videos - 1);
                pictures::declare_video(&input, &word, inputs);
                loaded.insert(loader.clone(), input);
            }
            _ => {}
        }
    }
    loaded
}

/// Whether token input `name` carries the same encoder node's text in this
/// stage (`own`) as in an earlier one (`earlier`).
fn same_prompt(name: &str, own: &[Prompted], earlier: &[Prompted]) -> bool {
    own.iter().filter(|p| p.input == name).any(|p| {
        earlier
            .iter()
            .any(|q| q.input == name && q.encoder == p.encoder && q.text == p.text)
    })
}

/// The output of one of several sinks: its title, else its filename
/// prefix (ComfyUI's defaults do not count), as a lower-case word; the
/// node id is added where that name is taken (or there is none), or where
/// its frame-rate input is (a loaded video's rate: `inputs`).
fn output_name(sink: &Sink, taken: &Map<String, Value>, inputs: &Map<String, Value>) -> String {
    let named = sink
        .title
        .as_deref()
        .filter(|t| !DEFAULT_TITLES.contains(t))
        .or(sink.prefix.as_deref().filter(|p| !is_default_prefix(p)))
        .map(word)
        .filter(|w| !w.is_empty());
    let base = named.unwrap_or_else(|| base_name(sink).to_string());
    // A name is free when neither it nor its frame-rate output is taken,
    // and it is not the frame-rate output of a taken one.
    let rate = crate::media::frame_rate_output;
    let free = |name: &String| {
        name != "latent"
            && !taken.contains_key(name)
            && !taken.contains_key(&rate(name))
            && !taken.keys().any(|k| rate(k) == *name)
            && !inputs.contains_key(&format!("request.{}", rate(name)))
    };
    first_free(base, &sink.node, free)
}

/// `base` where `free`, else the first free of `base_<node>`,
/// `base_<node>_2`, ...
fn first_free(base: String, node: &str, free: impl Fn(&String) -> bool) -> String {
    if free(&base) {
        return base;
    }
    let with_node = format!("{base}_{}", word(node));
    (1..)
        .map(|n| match n {
            1 => with_node.clone(),
            n => format!("{with_node}_{n}"),
        })
        .find(|name| free(name))
        .unwrap_or(with_node)
}

/// The output name of a sink with nothing better: `image`, `video` or
/// `audio`.
fn base_name(sink: &Sink) -> &'static str {
    match sink.kind {
        SinkKind::Picture { .. } => "image",
        SinkKind::Video { .. } => "video",
        SinkKind::Audio => "audio",
    }
}

/// Whether `prefix` is ComfyUI's default file name (`ComfyUI`, in a folder
/// such as `video/ComfyUI`), not worth naming an output after.
fn is_default_prefix(prefix: &str) -> bool {
    prefix.rsplit('/').next() == Some("ComfyUI")
}

/// `text` as a lower-case word: letters and digits, runs of anything else
/// as one `_`, none at the ends.
fn word(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink(node: &str, title: Option<&str>, prefix: Option<&str>) -> Sink {
        Sink {
            node: node.into(),
            origin: Origin::Decoded {
                decode: "8".into(),
                vae: "4".into(),
                stage: 0,
                trim: None,
                pixel_space: false,
            },
            title: title.map(str::to_string),
            prefix: prefix.map(str::to_string),
            upscale: None,
            resize: None,
            kind: SinkKind::Picture { channels: 3 },
            joined: Vec::new(),
            sound: None,
            dropped_sound: None,
        }
    }

    #[test]
    fn outputs_are_named_after_titles_then_prefixes_then_node_ids() {
        let mut taken = Map::new();
        let first = output_name(
            &sink("9", Some("Save Image"), Some("ComfyUI")),
            &taken,
            &Map::new(),
        );
        assert_eq!(first, "image");
        taken.insert(first, Value::Null);
        assert_eq!(
            output_name(&sink("12", None, Some("ComfyUI")), &taken, &Map::new()),
            "image_12"
        );
        assert_eq!(
            output_name(
                &sink("13", Some("Hires — final!"), None),
                &taken,
                &Map::new()
            ),
            "hires_final"
        );
        assert_eq!(
            output_name(&sink("14", None, Some("out/upscaled")), &taken, &Map::new()),
            "out_upscaled"
        );
        assert_eq!(
            output_name(&sink("15", Some("Latent"), None), &taken, &Map::new()),
            "latent_15"
        );
        taken.insert("image_16".into(), Value::Null);
        assert_eq!(
            output_name(&sink("16", None, None), &taken, &Map::new()),
            "image_16_2"
        );
    }

    #[test]
    fn an_output_never_takes_a_frame_rate_outputs_name_or_the_reverse() {
        let mut taken = Map::new();
        taken.insert("clip_frame_rate".into(), Value::Null);
        // `clip` would put its frame rate on a taken name.
        assert_eq!(
            output_name(&sink("9", Some("clip"), None), &taken, &Map::new()),
            "clip_9"
        );
        let mut taken = Map::new();
        taken.insert("clip".into(), Value::Null);
        taken.insert("clip_frame_rate".into(), Value::Null);
        taken.insert("shot".into(), Value::Null);
        // `shot_frame_rate` is where `shot`'s frame rate would go.
        assert_eq!(
            output_name(
                &sink("10", Some("shot frame rate"), None),
                &taken,
                &Map::new()
            ),
            "shot_frame_rate_10"
        );
        // A loaded video's frame-rate input is taken too.
        let mut inputs = Map::new();
        inputs.insert("request.loaded_video_frame_rate".into(), Value::Null);
        assert_eq!(
            output_name(
                &sink("11", Some("Loaded video"), None),
                &Map::new(),
                &inputs
            ),
            "loaded_video_11"
        );
    }
}
