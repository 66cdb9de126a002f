//! The document's work in pixels (and sound), at its top level: decodes
//! of the stages' latents (a VAE is one decoder component per kind of latent it
//! decodes, `vae_decoder`, then `vae2_decoder`, ...; a decode node is one
//! run however many sinks or encodes read it), upscale models (each
//! `UpscaleModelLoader` a component, `upscaler`, then `upscaler2`, ...) and
//! resizes (`image_scale`, then `image_scale_2`, ...). Pixels that are
//! processed further are ComfyUI's 0..1; a decode shown as it is stays
//! the decoder's -1..1. Within a stage: a loaded picture's resize
//! (`input_scale`) and the VAE encoder component.

use super::super::parts::{
    self, Axes, Steps, component, contract, invoke, numbered, picture, policy,
};
use super::super::recognise::{
    ModelUpscale, Origin, Pixels, Plan, Resize, Sink, SinkKind, Sound, Trim, WAVE_CHANNELS,
};
use super::scales::{resize_policy, scale_policy};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Where the steps go and what they read: the document's components, its
/// top-level steps and the final latent of each stage built so far.
pub(super) struct Top<'a> {
    pub components: &'a mut Map<String, Value>,
    pub after: &'a mut Steps,
    pub latents: &'a [String],
    /// The stages, in run order.
    pub stages: &'a [Plan],
    /// The input holding a loaded picture or video, by `LoadImage` or
    /// `LoadVideo` node.
    pub loaded: &'a BTreeMap<String, String>,
}

/// The decodes, upscale model runs and resizes made so far.
#[derive(Default)]
pub(super) struct PixelParts<'c> {
    decoders: BTreeMap<(&'c str, Axes), String>,
    /// A decode node's value, by node.
    decodes: BTreeMap<&'c str, String>,
    /// A decode's value in 0..1, by decode node.
    units: BTreeMap<&'c str, String>,
    models: BTreeMap<&'c str, String>,
    /// An upscale model run's value, by `ImageUpscaleWithModel` node.
    upscales: BTreeMap<&'c str, String>,
    /// A sink's resize's value, by the resize's last node.
    resized: BTreeMap<&'c str, String>,
    /// A stitch's value, by `ImageStitch` node.
    stitches: BTreeMap<&'c str, String>,
    /// The resize policies declared so far.
    resizes: usize,
    /// A reshape's value (a picture batch as one video's frames, a video's
    /// frames as pictures), by policy and the value reshaped.
    reshapes: BTreeMap<(&'static str, String), String>,
    /// The trim policies declared so far, by the latent frames they drop
    /// and whether from the end.
    trims: BTreeMap<(i64, bool), String>,
    /// A trim's value, by `TrimVideoLatent` node (one run however many
    /// decodes read it).
    trimmed: BTreeMap<&'c str, String>,
    /// An audio-video stage's video and audio parts, by stage.
    av_parts: BTreeMap<usize, (String, String)>,
    /// The audio VAE decoders, by `LTXVAudioVAELoader` node.
    sound_decoders: BTreeMap<&'c str, String>,
    /// A sound's waveform, by `LTXVAudioVAEDecode` node.
    sounds: BTreeMap<&'c str, String>,
}

impl<'c> PixelParts<'c> {
    /// The value `sink` shows and its value range: its decode (-1..1, or
    /// video frames in 0..1), or that decode through its upscale model and
    /// resize, in ComfyUI's 0..1; or a loaded picture (0..1), a loaded
    /// video's frames as pictures or a stitch of pictures, through its
    /// upscale model and resize.
    pub(super) fn shown(
        &mut self,
        sink: &'c Sink,
        axes: Axes,
        top: &mut Top<'_>,
    ) -> (String, &'static str) {
        let channels = match sink.kind {
            SinkKind::Picture { channels } => channels,
            _ => 3,
        };
        let as_decoded = sink.upscale.is_none() && sink.resize.is_none();
        if let (
            Origin::Decoded {
                decode,
                vae,
                stage,
                trim,
                pixel_space,
            },
            true,
        ) = (&sink.origin, as_decoded)
        {
            let parts = (vae.as_str(), *stage, trim.as_ref(), *pixel_space, channels);
            return (
                self.decoded(decode, parts, axes, top),
                "negative_one_to_one",
            );
        }
        let made = (&sink.origin, sink.upscale.as_ref(), sink.resize.as_ref());
        (self.unit(made, (channels, axes), top), "zero_to_one")
    }

    /// The picture `origin` (decoded to `channels` over `axes`) through
    /// `upscale` and `resize`, in 0..1.
    fn unit(
        &mut self,
        (origin, upscale, resize): (&'c Origin, Option<&'c ModelUpscale>, Option<&'c Resize>),
        (channels, axes): (i64, Axes),
        top: &mut Top<'_>,
    ) -> String {
        let unit = match origin {
            Origin::Loaded(loader) => {
                let input = top.loaded.get(loader).cloned().expect(
                    "every loaded picture the top level reads has an input (`build::top_inputs`)",
                );
                match upscale {
                    Some(up) => self.upscaled(up, (&input, false), top),
                    None => input,
                }
            }
            Origin::Video(loader) => {
                let input =
                    top.loaded.get(loader).cloned().expect(
                        "every loaded video a sink shows has an input (`build::top_inputs`)",
                    );
                let frames = self.video_pictures(&input, loader, top);
                match upscale {
                    Some(up) => self.upscaled(up, (&frames, false), top),
                    None => frames,
                }
            }
            Origin::Decoded {
                decode,
                vae,
                stage,
                trim,
                pixel_space,
            } => {
                let parts = (vae.as_str(), *stage, trim.as_ref(), *pixel_space, channels);
                let decoded = self.decoded(decode, parts, axes, top);
                self.processed(decode, &decoded, upscale, top)
            }
            Origin::Stitched(stitch) => {
                let stitched = match self.stitches.get(stitch.node.as_str()) {
                    Some(value) => value.clone(),
                    None => {
                        let [first, second] = [&stitch.first, &stitch.second].map(|part| {
                            let made = (&part.origin, part.upscale.as_ref(), part.resize.as_ref());
                            self.unit(made, (3, Axes::Image), top)
                        });
                        let made = (&mut *top.components, &mut *top.after);
                        let value = super::stitch::stitched(stitch, (&first, &second), made);
                        self.stitches.insert(&stitch.node, value.clone());
                        value
                    }
                };
                match upscale {
                    Some(up) => self.upscaled(up, (&stitched, false), top),
                    None => stitched,
                }
            }
        };
        match resize {
            None => unit,
            Some(resize) => match self.resized.get(resize.last()) {
                Some(value) => value.clone(),
                None => {
                    let value = self.resize(resize, &unit, false, top);
                    self.resized.insert(resize.last(), value.clone());
                    value
                }
            },
        }
    }

    /// The pictures `shown` (in `range`) of `sink` as the frames of one
    /// video in 0..1 (`batch_frames` of the pixels moved there), as a video
    /// sink shows a batch of pictures.
    pub(super) fn batch_frames(
        &mut self,
        sink: &'c Sink,
        (shown, range): (&str, &str),
        top: &mut Top<'_>,
    ) -> String {
        let unit = match (range, &sink.origin) {
            ("negative_one_to_one", Origin::Decoded { decode, .. }) => {
                self.processed(decode, shown, None, top)
            }
            _ => shown.to_string(),
        };
        let policy = ("batch_frames", batch_frames_policy as fn() -> Value);
        self.reshaped(policy, ("image", "frames"), (&unit, &sink.node), top)
    }

    /// The video frames `video` (0..1, `[batch, frames, 3, height,
    /// width]`: a decode's, or a loaded video's, for node `node`) as a
    /// batch of pictures `[batch * frames, 3, height, width]`
    /// (`frame_pictures`), as ComfyUI's `VAEDecode` gives a video latent's
    /// frames to a picture sink and `GetVideoComponents` a video's.
    pub(super) fn video_pictures(&mut self, video: &str, node: &str, top: &mut Top<'_>) -> String {
        let policy = ("frame_pictures", frame_pictures_policy as fn() -> Value);
        self.reshaped(policy, ("video", "pictures"), (video, node), top)
    }

    /// Stage `stage`'s audio-video row split into its video and audio
    /// parts (one split however many sinks read them); `None` for a
    /// stage of another latent.
    fn av_parts(&mut self, stage: usize, top: &mut Top<'_>) -> Option<(String, String)> {
        if let Some(parts) = self.av_parts.get(&stage) {
            return Some(parts.clone());
        }
        let plan = top.stages.get(stage)?;
        let split = super::av::sink_split(plan, top.components)?;
        let latent = &top.latents[stage];
        let parts = (format!("{latent}.video"), format!("{latent}.audio"));
        top.after.push(
            invoke(
                &split,
                json!({"packed": latent}),
                json!({"video": parts.0, "audio": parts.1}),
            ),
            &[&plan.sampler.node],
        );
        self.av_parts.insert(stage, parts.clone());
        Some(parts)
    }

    /// The waveform `[batch, 2, samples]` of `sound`: its stage's audio
    /// part through the audio VAE's decoder (and LTX-2's vocoder), loud
    /// waveforms scaled down where `VAEDecodeAudio` decodes it.
    pub(super) fn sound(&mut self, sound: &'c Sound, top: &mut Top<'_>) -> Option<String> {
        if let Some(value) = self.sounds.get(sound.decode.as_str()) {
            return Some(value.clone());
        }
        let model = top.stages.get(sound.stage)?.audio.as_ref()?.layout.model;
        let (_, audio) = self.av_parts(sound.stage, top)?;
        let decoder = numbered(
            &mut self.sound_decoders,
            sound.loader.as_str(),
            |n| match n {
                1 => "audio_vae_decoder".to_string(),
                n => format!("audio_vae{n}_decoder"),
            },
        );
        top.components.entry(decoder.clone()).or_insert_with(|| {
            component(
                &format!("{decoder}/model.onnx"),
                json!({"latent": super::av::audio_latent(model)}),
                json!({"waveform": parts::audio(WAVE_CHANNELS)}),
                None,
            )
        });
        let value = format!("sound.{}", sound.decode);
        top.after.push(
            invoke(
                &decoder,
                json!({"latent": audio}),
                json!({"waveform": value}),
            ),
            &[&sound.decode, &sound.loader],
        );
        let value = match sound.loudness {
            true => self.loudness_guarded(&value, &sound.decode, top),
            false => value,
        };
        self.sounds.insert(&sound.decode, value.clone());
        Some(value)
    }

    /// Waveform `value` of decode node `decode` scaled down where loud, as
    /// `VAEDecodeAudio` does (`audio_loudness`).
    fn loudness_guarded(&mut self, value: &str, decode: &str, top: &mut Top<'_>) -> String {
        let policy = ("audio_loudness", audio_loudness_policy as fn() -> Value);
        self.reshaped(policy, ("audio", "normalized"), (value, decode), top)
    }

    /// The value of reshape policy `kind` (declared by `declare`) run on
    /// `value` (its port `input`, giving `value.output`) for node `node`;
    /// one run however many sinks read it.
    fn reshaped(
        &mut self,
        (kind, declare): (&'static str, fn() -> Value),
        (input, output): (&str, &str),
        (value, node): (&str, &str),
        top: &mut Top<'_>,
    ) -> String {
        let key = (kind, value.to_string());
        if let Some(made) = self.reshapes.get(&key) {
            return made.clone();
        }
        top.components.entry(kind).or_insert_with(declare);
        let made = format!("{value}.{output}");
        top.after.push(
            invoke(kind, json!({input: value}), json!({output: made})),
            &[&node.to_string()],
        );
        self.reshapes.insert(key, made.clone());
        made
    }

    /// The value of the 0..1 pixels a stage encodes from an earlier
    /// stage's decode or a loaded picture through an upscale model (`None`
    /// for a loaded picture the stage reads itself); after a resize, cut to
    /// whole multiples of 8 where `for_encode` (a `VAEEncode` or an edit
    /// node reads it, which crop so).
    pub(super) fn encoded(
        &mut self,
        image: &'c Pixels,
        for_encode: bool,
        top: &mut Top<'_>,
    ) -> Option<String> {
        let unit = match &image.origin {
            // `recognise` gives no stage a loaded video's frames or a
            // stitch.
            Origin::Video(_) | Origin::Stitched(_) => return None,
            Origin::Loaded(_) if image.upscale.is_none() => return None,
            origin => {
                let made = (origin, image.upscale.as_ref(), None);
                self.unit(made, (3, Axes::Image), top)
            }
        };
        Some(match &image.resize {
            Some(resize) => self.resize(resize, &unit, for_encode, top),
            None => unit,
        })
    }

    /// The decode `decoded` (of node `decode`) in 0..1: through upscale
    /// model `upscale`, or moved there as it is.
    fn processed(
        &mut self,
        decode: &'c str,
        decoded: &str,
        upscale: Option<&'c ModelUpscale>,
        top: &mut Top<'_>,
    ) -> String {
        if let Some(up) = upscale {
            return self.upscaled(up, (decoded, true), top);
        }
        if let Some(value) = self.units.get(decode) {
            return value.clone();
        }
        top.components
            .entry("decoded_pixels")
            .or_insert_with(|| unit_policy("decoded_pixels", "image", picture(json!(3))));
        let value = format!("{decoded}.pixels");
        top.after.push(
            invoke(
                "decoded_pixels",
                json!({"image": decoded}),
                json!({"pixels": value}),
            ),
            &[&decode.to_string()],
        );
        self.units.insert(decode, value.clone());
        value
    }

    /// The value of `resize` run on the 0..1 pixels `image`, cut to whole
    /// multiples of 8 where `for_encode`.
    fn resize(
        &mut self,
        resize: &Resize,
        image: &str,
        for_encode: bool,
        top: &mut Top<'_>,
    ) -> String {
        self.resizes += 1;
        let name = match self.resizes {
            1 => "image_scale".to_string(),
            n => format!("image_scale_{n}"),
        };
        top.components
            .insert(name.clone(), resize_policy(&name, resize, for_encode));
        let value = format!("resized.{name}");
        top.after.push(
            invoke(&name, json!({"image": image}), json!({"scaled": value})),
            &resize.nodes(),
        );
        value
    }

    /// The value of decode node `decode` (VAE `vae`) of stage `stage`'s
    /// latent (less the latent frames `trim` drops): pictures (-1..1) of
    /// `channels` channels, the video frames `[batch, frames, 3,
    /// height, width]` of a video latent moved to the 0..1 a video output
    /// shows (video outputs carry no value range), or an audio latent's
    /// waveform `[batch, 2, samples]` scaled down where loud, as
    /// `VAEDecodeAudio` does.
    pub(super) fn decoded(
        &mut self,
        decode: &'c str,
        (vae, stage, trim, pixel_space, channels): (&'c str, usize, Option<&'c Trim>, bool, i64),
        axes: Axes,
        top: &mut Top<'_>,
    ) -> String {
        if let Some(value) = self.decodes.get(decode) {
            return value.clone();
        }
        if pixel_space {
            return self.pixel_space(decode, &top.latents[stage], top);
        }
        // An audio-video stage's frames are its video part's.
        let (axes, latent) = match self.av_parts(stage, top) {
            Some((video, _)) => (Axes::Video, video),
            None => (axes, top.latents[stage].clone()),
        };
        let decoder = numbered(&mut self.decoders, (vae, axes), |n| match n {
            1 => "vae_decoder".to_string(),
            n => format!("vae{n}_decoder"),
        });
        let (port, shown) = match axes {
            Axes::Image => ("image", picture(json!(channels))),
            // An audio-video stage decodes its video part (`av_parts`).
            Axes::Video | Axes::AudioVideo => ("video", parts::video()),
            Axes::Audio => ("audio", parts::audio(WAVE_CHANNELS)),
        };
        top.components.entry(decoder.clone()).or_insert_with(|| {
            component(
                &format!("{decoder}/model.onnx"),
                json!({"latent": axes.latent()}),
                json!({port: shown}),
                None,
            )
        });
        let value = match self.decodes.len() {
            0 => format!("vae.{port}"),
            _ => format!("vae.{port}_{decode}"),
        };
        let latent = match trim {
            Some(trim) => self.trimmed(&latent, trim, top),
            None => latent,
        };
        top.after.push(
            invoke(&decoder, json!({"latent": latent}), json!({port: value})),
            &[&decode.to_string(), &vae.to_string()],
        );
        let value = match axes {
            Axes::Image => value,
            Axes::Video | Axes::AudioVideo => {
                let policy = ("video_pixels", video_pixels_policy as fn() -> Value);
                self.reshaped(policy, ("video", "pixels"), (&value, decode), top)
            }
            Axes::Audio => self.loudness_guarded(&value, decode, top),
        };
        self.decodes.insert(decode, value.clone());
        value
    }

    /// The picture (-1..1) of a pixel-space latent `latent` (decode node
    /// `decode`): the latent itself, through `pixel_decoder`.
    fn pixel_space(&mut self, decode: &'c str, latent: &str, top: &mut Top<'_>) -> String {
        top.components.entry("pixel_decoder").or_insert_with(|| {
            policy(
                "pixel_decoder",
                json!({"latent": parts::Axes::Image.latent()}),
                json!({"image": picture(json!(3))}),
                Some(json!({"id": "wfstudio.pixel-decoder", "version": "1"})),
            )
        });
        let value = format!("{latent}.pixels");
        top.after.push(
            invoke(
                "pixel_decoder",
                json!({"latent": latent}),
                json!({"image": value}),
            ),
            &[&decode.to_string()],
        );
        self.decodes.insert(decode, value.clone());
        value
    }

    /// The value of the video latent `latent` less the latent frames
    /// `trim` drops (`trim_latent`, one policy per count: `trim_latent_2`
    /// for a second, ...).
    fn trimmed(&mut self, latent: &str, trim: &'c Trim, top: &mut Top<'_>) -> String {
        if let Some(value) = self.trimmed.get(trim.node.as_str()) {
            return value.clone();
        }
        let name = numbered(&mut self.trims, (trim.frames, trim.end), |n| match n {
            1 => "trim_latent".to_string(),
            n => format!("trim_latent_{n}"),
        });
        top.components.entry(name.clone()).or_insert_with(|| {
            let latent = Axes::Video.latent();
            policy(
                "trim_latent",
                json!({"latent": latent.clone()}),
                json!({"trimmed": latent}),
                Some(json!({"id": "wfstudio.trim-latent", "version": "1", "parameters": trim_parameters(trim)})),
            )
        });
        let value = format!("{latent}.trimmed_{}", trim.node);
        top.after.push(
            invoke(&name, json!({"latent": latent}), json!({"trimmed": value})),
            &[&trim.node],
        );
        self.trimmed.insert(&trim.node, value.clone());
        value
    }

    /// The value of `up` run on `image`, decoded (-1..1, `signed`) or in
    /// 0..1: the pixels moved to ComfyUI's 0..1, resized where the graph
    /// resizes them first, the model, its result clamped to 0..1; one run
    /// however many sinks or encodes read it.
    fn upscaled(
        &mut self,
        up: &'c ModelUpscale,
        (image, signed): (&str, bool),
        top: &mut Top<'_>,
    ) -> String {
        if let Some(value) = self.upscales.get(up.node.as_str()) {
            return value.clone();
        }
        let model = numbered(&mut self.models, up.loader.as_str(), |n| match n {
            1 => "upscaler".to_string(),
            n => format!("upscaler{n}"),
        });
        let big = contract(
            "float32",
            json!(["batch", 3, "upscaled_height", "upscaled_width"]),
            true,
        );
        top.components.entry(model.clone()).or_insert_with(|| {
            component(
                &format!("{model}/model.onnx"),
                json!({"image": picture(json!(3))}),
                json!({"upscaled": big.clone()}),
                None,
            )
        });
        top.components
            .entry("upscaled_pixels")
            .or_insert_with(|| unit_policy("upscaled_pixels", "image", big));
        let value = |what: &str| format!("upscale.{}.{what}", up.node);
        let mut input = image.to_string();
        if signed {
            top.components
                .entry("upscale_pixels")
                .or_insert_with(|| unit_policy("upscale_pixels", "image", picture(json!(3))));
            top.after.push(
                invoke(
                    "upscale_pixels",
                    json!({"image": image}),
                    json!({"pixels": value("input")}),
                ),
                &[&up.node],
            );
            input = value("input");
        }
        if let Some(before) = &up.before {
            input = self.resize(before, &input, false, top);
        }
        top.after.push(
            invoke(
                &model,
                json!({"image": input}),
                json!({"upscaled": value("raw")}),
            ),
            &[&up.node, &up.loader],
        );
        top.after.push(
            invoke(
                "upscaled_pixels",
                json!({"image": value("raw")}),
                json!({"pixels": value("image")}),
            ),
            &[&up.node],
        );
        self.upscales.insert(&up.node, value("image"));
        value("image")
    }
}

/// A policy moving pixels to 0..1 (`synth`'s `unit_pixels`), with input
/// `port` of contract `contract`.
fn unit_policy(kind: &str, port: &str, contract: Value) -> Value {
    policy(
        kind,
        json!({port: contract.clone()}),
        json!({"pixels": contract}),
        Some(json!({"id": "wfstudio.unit-pixels", "version": "1"})),
    )
}

/// The encoder's video: `length` pictures of the video's size
/// (`video_frames`: the decoded `frames` may be fewer).
pub(super) fn encoded_video() -> Value {
    contract(
        "float32",
        json!(["batch", "video_frames", 3, "height", "width"]),
        true,
    )
}

/// The video VAE encoder component `encoder` (its latent `latent`).
pub(super) fn video_encoder(encoder: &str, latent: Value) -> Value {
    component(
        &format!("{encoder}/model.onnx"),
        json!({"image": encoded_video()}),
        json!({"latent": latent}),
        None,
    )
}

/// The `frame_pictures` policy: a video's frames as a batch of pictures.
pub(super) fn frame_pictures_policy() -> Value {
    policy(
        "frame_pictures",
        json!({"video": parts::video()}),
        json!({"pictures": picture(json!(3))}),
        Some(json!({"id": "wfstudio.frame-pictures", "version": "1"})),
    )
}

/// The `batch_frames` policy: a batch of pictures as one video's frames.
pub(super) fn batch_frames_policy() -> Value {
    policy(
        "batch_frames",
        json!({"image": picture(json!(3))}),
        json!({"frames": parts::batch_video()}),
        Some(json!({"id": "wfstudio.batch-frames", "version": "1"})),
    )
}

/// The value of the picture of `loader` a stage encodes, resized within
/// the stage by `resize` where the graph resizes it (then cut to whole
/// multiples of 8 where `for_encode`, as `VAEEncode` crops); and the
/// loader, where the encode reads the picture as it is. `made` is the
/// picture through `resize` where the stage has it already, uncut (an
/// edit encoder's source): then it is only cut.
pub(super) fn loaded<'p>(
    (loader, resize): (&'p String, Option<&Resize>),
    (for_encode, made): (bool, Option<&str>),
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) -> (String, Option<&'p String>) {
    let Some(resize) = resize else {
        return ("request.image".into(), Some(loader));
    };
    let (policy, image) = match made {
        Some(made) if !for_encode => return (made.to_string(), None),
        Some(made) => (cut_policy("input_scale"), made),
        None => (
            resize_policy("input_scale", resize, for_encode),
            "request.image",
        ),
    };
    components.insert("input_scale".into(), policy);
    setup.push(
        invoke(
            "input_scale",
            json!({"image": image}),
            json!({"scaled": "latent.pixels"}),
        ),
        &resize.nodes_from(loader),
    );
    ("latent.pixels".into(), None)
}

/// The policy `kind` cutting a resized picture to whole multiples of 8,
/// as `VAEEncode` crops (size `same`: no resize).
fn cut_policy(kind: &str) -> Value {
    scale_policy(kind, json!({"size": "same", "multiple": 8}))
}

/// A trim's contract parameters: the frames it drops, and `from: end`
/// where it drops the last ones.
fn trim_parameters(trim: &Trim) -> Value {
    match trim.end {
        true => json!({"frames": trim.frames, "from": "end"}),
        false => json!({"frames": trim.frames}),
    }
}

/// The VAE encoder component `name`: pictures in, `latent` out.
pub(super) fn vae_encoder(name: &str, latent: Value) -> Value {
    component(
        &format!("{name}/model.onnx"),
        json!({"image": picture(json!(3))}),
        json!({"latent": latent}),
        None,
    )
}

/// The `video_pixels` policy: decoded video frames (-1..1) moved to the
/// 0..1 a video output shows.
fn video_pixels_policy() -> Value {
    unit_policy("video_pixels", "video", parts::video())
}

/// The `audio_loudness` policy: `VAEDecodeAudio`'s guard scaling loud
/// waveforms down.
fn audio_loudness_policy() -> Value {
    let wave = parts::audio(WAVE_CHANNELS);
    policy(
        "audio_loudness",
        json!({"audio": wave.clone()}),
        json!({"normalized": wave}),
        Some(
            json!({"id": "wfstudio.audio-loudness", "version": "1", "parameters": {"std_multiple": 5.0}}),
        ),
    )
}
