//! Walking back from each sink to the nodes the lowering understands,
//! into a [`Plan`]: which sampler, which latent source, how each prompt is
//! conditioned and what the model chain applies. Every node on the path is
//! checked here; anything else is refused with the node, class and input.

mod audio;
mod av;
mod av_nodes;
mod camera;
mod chain;
mod composite;
mod control_patch;
mod custom;
mod edits;
mod flow_only;
mod frames;
mod guide;
mod held;
mod joined;
mod ksampler;
mod latent;
mod latent_sizes;
mod loaded;
mod lotus;
mod ltxv;
pub(super) mod minimax;
mod model;
mod motion;
mod outpaint;
mod own_sampling;
mod paired;
mod picture_ops;
mod pixels;
mod prompt;
pub(super) mod reference;
mod resize;
mod sigmas;
mod style;
mod svd;
mod vae;
mod video_input;
mod vision;
mod walk;

pub(super) use audio::{SAMPLE_RATE, SAMPLES_PER_STEP, Seconds, WAVE_CHANNELS};
pub(super) use av::{HeldFrame, Sound, VideoGuide};
pub(super) use av_nodes::{AvLayout, AvModel, H3_IMAGE_TO_VIDEO};
pub(super) use chain::{
    Chain, FrameRate, Sink, SinkKind, TextSink, is_sink, recognise, shown_text, sink_classes,
};
pub(super) use composite::Composite;
pub(super) use control_patch::ControlPatch;
use edits::loaded_image;
pub(super) use frames::{FunControl, Vace, VideoFrames};
pub(super) use latent::{LatentSource, Mask, UpscaleSize};
use model::model_chain;
pub(super) use model::{FlowShift, Lora, ModelChain, Patch};
pub(super) use outpaint::Pad;
pub(super) use paired::{MAGE, QWEN21};
pub(super) use picture_ops::parameters as picture_op_parameters;
use pixels::{LoadedPicture, loaded_picture};
pub(super) use pixels::{ModelUpscale, Origin, PixelSize, Pixels, Resize, Stitch, Trim};
pub(super) use reference::Reference;
pub(super) use style::Style;
pub(super) use svd::VideoPrompt;

use super::Refusal;
use super::graph::Graph;
use super::parts::Axes;
use crate::comfyui::synth::spacing::Schedule;
use custom::Guide;
pub use ksampler::denoise_start_step;
use ksampler::{checked_denoise, checked_sampler_name, checked_scheduler, checked_steps};
use ksampler::{round_half_even, sampler};
use own_sampling::Family;
use vae::pixel_space;
use vae::vae_source;

/// ComfyUI's own limit on picture sides.
const MAX_RESOLUTION: i64 = 16384;

/// ComfyUI's largest `batch_size`.
const MAX_BATCH: i64 = 4096;

/// The channels of a pixel-space latent (a picture's own).
const PIXEL_CHANNELS: i64 = 3;

/// One sampler stage: everything the document builder needs for it, with
/// the graph's values.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Plan {
    pub sampler: Sampler,
    pub model: ModelChain,
    pub positive: Conditioning,
    pub negative: Conditioning,
    /// `DualCFGGuider`'s middle conditioning (`cond2`).
    pub middle: Option<Conditioning>,
    pub latent: LatentSource,
    pub control: Option<Control>,
    /// Latent channels: an audio latent's (64), an empty video latent's,
    /// else the flow-matching family's, else the empty latent's, else 4.
    pub channels: i64,
    /// Whether the latent is a picture's, a video's or audio's.
    pub axes: Axes,
    /// An audio latent's start and total seconds, which the denoiser takes
    /// with every prompt.
    pub seconds: Option<Seconds>,
    /// The frame rate LTX-Video's denoiser takes with every prompt.
    pub frame_rate: Option<ltxv::FrameRate>,
    /// An audio-video latent (LTX-2's, MiniMax H3's): `latent` is its
    /// video part.
    pub audio: Option<av_nodes::AudioVideo>,
    /// The picture held as the video's first latent frame.
    pub held: Option<HeldFrame>,
}

impl Plan {
    /// Whether the run is a window of its schedule or starts from a latent
    /// (so it noises its start latent to the window's first sigma; one
    /// holding frames is), rather than a fresh run from pure noise at the
    /// top of the model's sigmas.
    pub fn windowed(&self) -> bool {
        self.holding().is_some()
            || !self.sampler.schedule.starts_at_top()
            || !matches!(
                (&self.sampler.window, &self.latent),
                (
                    Window::Denoise(d),
                    LatentSource::Empty { .. } | LatentSource::Sized { .. }
                ) if *d == 1.0
            )
    }

    /// The prompts' conditionings by the prompt's name: positive,
    /// negative and any (`DualCFGGuider`) middle.
    pub fn named_conditionings(&self) -> impl Iterator<Item = (&'static str, &Conditioning)> {
        [("positive", &self.positive), ("negative", &self.negative)]
            .into_iter()
            .chain(self.middle.as_ref().map(|m| ("middle", m)))
    }

    /// The prompts' conditionings: positive, negative and any middle.
    pub fn conditionings(&self) -> impl Iterator<Item = &Conditioning> {
        self.named_conditionings().map(|(_, c)| c)
    }

    /// The picture the stage encodes: a `VAEEncode`'s, an
    /// `InstructPixToPixConditioning`'s, or an SVD prompt's init picture.
    pub fn encoded_picture(&self) -> Option<&Pixels> {
        match (&self.latent, &self.positive.text) {
            (LatentSource::Encoded { image, .. }, _) => Some(image),
            (
                LatentSource::Edit {
                    image,
                    inpaint: None,
                    ..
                },
                _,
            ) => Some(image),
            (_, Prompt::Video(video)) => Some(&video.image),
            _ => None,
        }
    }

    /// The edit node (`InstructPixToPixConditioning`,
    /// `InpaintModelConditioning`) whose picture the prompts carry.
    pub fn edit(&self) -> Option<&String> {
        self.conditionings().find_map(|c| c.edit.as_ref())
    }
}

/// The sampler node and its run parameters.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Sampler {
    pub node: String,
    pub seed: i64,
    pub steps: i64,
    pub cfg: f64,
    pub sampler_name: String,
    /// Its schedule: a scheduler over the model's sigmas (dropping the
    /// penultimate one where `KSampler` does for the sampler), or a
    /// scheduler node's own.
    pub schedule: Schedule,
    pub window: Window,
    /// `DualCFGGuider`'s second scale and style, where it guides: `cfg`
    /// is then its `cfg_conds`.
    pub dual: Option<Dual>,
}

/// `DualCFGGuider`: three estimates, the positive (`cond1`), the middle
/// (`cond2`) and the negative. `regular`: `negative + cfg2 (middle -
/// negative) + cfg1 (positive - middle)`; `nested`: `negative + cfg2
/// (middle + cfg1 (positive - middle) - negative)`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Dual {
    /// `cfg_cond2_negative`.
    pub cfg2: f64,
    pub nested: bool,
}

/// Which part of the schedule the sampler runs.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Window {
    /// `KSampler`: the last `steps * denoise` steps (all when denoise is 1).
    Denoise(f64),
    /// `KSamplerAdvanced`: steps `start..end` of `steps`.
    Steps {
        start: i64,
        end: i64,
        add_noise: bool,
        leftover_noise: bool,
    },
}

/// One prompt's encoder.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Conditioning {
    pub encoder: String,
    pub text: Prompt,
    /// The loader of the encoder's text encoder (a checkpoint or CLIP
    /// loader).
    pub loader: String,
    /// The LoRA loaders on the encoder's CLIP path.
    pub clip_loras: Vec<String>,
    /// `ConditioningZeroOut` on the way to the sampler: the conditioning
    /// is the encoder's, zeroed.
    pub zeroed: Option<String>,
    /// `CLIPTextEncodeFlux`'s `clip_l` text, for CLIP-L (`text` is T5's).
    pub clip_text: Option<String>,
    /// `T5TokenizerOptions` on the CLIP path, which tokenizing the prompt
    /// must follow.
    pub tokenizer_options: Vec<TokenizerOptions>,
    /// `FluxGuidance` on the way: the guidance-distilled model's own
    /// guidance input for this prompt.
    pub guidance: Option<Guidance>,
    /// An edit node next to the sampler (`InstructPixToPixConditioning`,
    /// `InpaintModelConditioning`): the node whose picture's latent the
    /// denoiser takes beside the sample for this prompt (a prompt without
    /// one takes zeros, as ComfyUI does).
    pub edit: Option<String>,
    /// `ConditioningStableAudio` on the way: the audio model's seconds.
    pub seconds: Option<Seconds>,
    /// `LTXVConditioning` on the way: the video model's frame rate.
    pub frame_rate: Option<ltxv::FrameRate>,
    /// The `LTXVAddGuide` nodes on the way, the sampler's nearest first.
    pub guides: Vec<String>,
    /// `ReferenceLatent`s on the way: pictures the model reads beside the
    /// sample.
    pub references: reference::References,
    /// The pictures a Qwen image-edit encoder shows its language model.
    pub vision: Vec<Vision>,
    /// A Wan image-to-video node on the way: the video of its pictures the
    /// denoiser takes beside the sample.
    pub frames: Option<VideoFrames>,
    /// `StyleModelApply`s on the way, in the order they append tokens.
    pub styles: Vec<Style>,
}

/// The picture a Qwen image-edit encoder's language model sees beside
/// its prompt (see `vision`).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Vision {
    /// The encoder node and its class.
    pub node: String,
    pub class: String,
    /// The picture's `LoadImage`, and the graph's resize on the way.
    pub loader: String,
    pub resize: Option<Resize>,
    /// The encoder's own resize of it.
    pub seen: Resize,
}

/// One `FluxGuidance` node and its value.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Guidance {
    pub node: String,
    pub value: f64,
}

/// One `T5TokenizerOptions` node's settings.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct TokenizerOptions {
    pub node: String,
    pub min_padding: i64,
    pub min_length: i64,
}

/// The texts of one encoder.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Prompt {
    /// `CLIPTextEncode`.
    Single(String),
    /// `CLIPTextEncodeSDXL`: both texts and the size conditioning
    /// `[height, width, crop_h, crop_w, target_height, target_width]`.
    Sdxl {
        text_g: String,
        text_l: String,
        size: [f64; 6],
    },
    /// `SVD_img2vid_Conditioning`: a picture's CLIP vision embedding
    /// (zeroed for the negative prompt), with what the denoiser takes
    /// beside it.
    Video(Box<VideoPrompt>),
    /// `LotusConditioning`: Lotus' fixed embedding, no text.
    Lotus,
    /// `ConditioningLoader`: a saved conditioning, by its file name.
    Loaded(String),
}

/// A single ControlNet on the conditioning.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Control {
    pub apply: String,
    pub loader: String,
    /// Its picture: a `LoadImage` or an earlier stage's decode, maybe
    /// resized and processed (no upscale model).
    pub image: Pixels,
    pub strength: f64,
    /// `(start_percent, end_percent)` of `ControlNetApplyAdvanced`.
    pub window: Option<(f64, f64)>,
    /// Which prompts it conditions.
    pub positive: bool,
    pub negative: bool,
}

const SAMPLER_CLASSES: &[&str] = &[
    "KSampler",
    "KSamplerAdvanced",
    "SamplerCustom",
    "SamplerCustomAdvanced",
];
const CLIP_LOADERS: &[&str] = &[
    "CheckpointLoaderSimple",
    "LTXAVTextEncoderLoader",
    "CLIPLoader",
    "DualCLIPLoader",
    "TripleCLIPLoader",
    "QuadrupleCLIPLoader",
];
const ENCODERS: &[&str] = &[
    "CLIPTextEncode",
    "CLIPTextEncodeSDXL",
    prompt::FLUX,
    vision::EDIT,
    vision::EDIT_PLUS,
    paired::MAGE,
    paired::QWEN21,
    av_nodes::H3_IMAGE_TO_VIDEO,
];
const CONTROL_APPLIERS: &[&str] = &["ControlNetApply", "ControlNetApplyAdvanced"];
/// Stable Video Diffusion's image-to-video conditioning (see `svd`).
const SVD_CONDITIONING: &str = "SVD_img2vid_Conditioning";
/// Nodes that attach a picture to both prompts and give the latent of its
/// size: conditioning outputs 0 and 1, the latent output 2.
const EDIT_NODES: &[&str] = &["InstructPixToPixConditioning", "InpaintModelConditioning"];

/// Builds the plan of sampler node `sampler_node` (a `KSampler`,
/// `KSamplerAdvanced` or custom sampling node); samplers whose latent it
/// samples further are recognised first, through `walk`.
fn stage(g: &Graph<'_>, sampler_node: &str, walk: &mut walk::Walk) -> Result<Plan, Refusal> {
    let custom = custom::is_custom(g.class(sampler_node));
    let sampler_node = sampler_node.to_string();
    let (sampler, guide) = match custom {
        true => custom::sampler(g, &sampler_node)?,
        false => (sampler(g, &sampler_node)?, Guide::on(&sampler_node)),
    };
    let mut model = model_chain(g, &guide.model)?;
    let video = svd::prompts(
        g,
        &sampler_node,
        (&guide.positive, &guide.negative),
        (guide.middle.is_some(), &model.loader),
        walk,
    )?;
    let ((mut positive, positive_control), (mut negative, negative_control)) = match video {
        Some((positive, negative)) => {
            if model.table.is_none() && model.flow.is_none() {
                model.table = Some(svd::sampling(&positive.encoder));
            }
            ((positive, None), (negative, None))
        }
        None => {
            let (node, input) = &guide.positive;
            let positive = prompt::conditioning(g, node, input, &model, walk)?;
            let (node, input) = &guide.negative;
            (
                positive,
                prompt::conditioning(g, node, input, &model, walk)?,
            )
        }
    };
    own_sampling::drop_ignored_guidance(g, &model.loader, [&mut positive, &mut negative]);
    let (middle, middle_control) = match &guide.middle {
        Some((node, input)) => {
            let (middle, control) = prompt::conditioning(g, node, input, &model, walk)?;
            dual_prompts(g, node, &middle, [&positive, &negative])?;
            (Some(middle), control)
        }
        None => (None, None),
    };
    lotus::sampling(g, [&positive, &negative], &mut model)?;
    let prompts: Vec<&Conditioning> = [&positive, &negative]
        .into_iter()
        .chain(middle.as_ref())
        .collect();
    one_text_encoder(g, &prompts)?;
    let styles: Vec<&Style> = prompts.iter().flat_map(|c| &c.styles).collect();
    style::one_model(g, &styles)?;
    guidance_sides(
        g,
        &positive,
        &negative,
        guide.positive == guide.negative,
        &sampler,
    )?;
    let family = own_sampling::family(g, &positive, &model.loader);
    if let (None, None, Family::Flow(flow)) = (&model.flow, &model.table, &family) {
        model.flow = Some(flow.clone());
    }
    family.apply(&mut model);
    model::cfg_norm_on_flow(g, &model)?;
    if let Some(scheduler) = &guide.scheduler {
        custom::same_sampling(g, scheduler, &model, &family)?;
    }
    if matches!(positive.text, Prompt::Sdxl { .. }) != matches!(negative.text, Prompt::Sdxl { .. })
    {
        return Err(g.refuse(
            &negative.encoder,
            None,
            "mixes CLIPTextEncode and CLIPTextEncodeSDXL between the positive and negative prompt; the two need the same encoders".into(),
            "use the same encoder node class for both prompts",
        ));
    }
    let control = match (positive_control, negative_control) {
        (None, None) => None,
        (Some(c), None) | (None, Some(c)) => Some(c),
        (Some(p), Some(n)) if p.apply == n.apply => Some(Control {
            positive: true,
            negative: true,
            ..p
        }),
        (Some(_), Some(n)) => {
            return Err(g.refuse(
                &n.apply,
                None,
                "is a second ControlNet application; only a single ControlNet is supported".into(),
                "apply one ControlNet with ControlNetApplyAdvanced to both prompts",
            ));
        }
    };
    if let (Some(_), Some(control)) = (&middle, control.as_ref().or(middle_control.as_ref())) {
        return Err(g.refuse(
            &control.apply,
            None,
            "applies a ControlNet under a DualCFGGuider, which the lowering applies to a positive and negative pair only".into(),
            "remove the ControlNet, or use CFGGuider",
        ));
    }
    let cell = model.format.map(|f| f.cell);
    let (latent, audio, held) = av::latent_source(g, &sampler_node, &model.loader, walk)?;
    minimax::check_stage(g, &model, audio.as_ref(), &prompts)?;
    let latent = latent.in_cells_of(g, cell)?;
    loaded::check(g, &sampler, &model, (&positive, family.settled()), &latent)?;
    if let (
        Window::Steps {
            add_noise: false, ..
        },
        LatentSource::Empty { .. } | LatentSource::Sized { .. } | LatentSource::Audio { .. },
    ) = (&sampler.window, &latent)
    {
        return Err(g.refuse(
            &sampler_node,
            Some("add_noise"),
            "disables noise on an empty latent, which would sample from a blank image".into(),
            "set add_noise to enable",
        ));
    }
    edits::edits(g, &prompts, &latent)?;
    frames::same_on_every_prompt(g, &prompts, (&latent, &walk.stages))?;
    edits::differential(g, &model, &latent, &sampler)?;
    let axes = match &latent {
        _ if audio.is_some() => Axes::AudioVideo,
        LatentSource::Empty {
            frames: Some(_), ..
        } => Axes::Video,
        LatentSource::Audio { .. } => Axes::Audio,
        LatentSource::Stage { stage, .. } => walk.axes(*stage),
        LatentSource::Composite(c) => walk.axes(c.base),
        _ => Axes::Image,
    };
    if let Prompt::Video(_) = &positive.text
        && !matches!(&latent, LatentSource::Empty { node, .. } if *node == positive.encoder)
    {
        return Err(g.refuse(
            &positive.encoder,
            None,
            format!("conditions sampler {sampler_node}, which does not start from this node's latent (output 2)"),
            "connect the sampler's latent_image to the node's latent output",
        ));
    }
    if axes == Axes::Audio && model.table.is_none() && model.flow.is_none() {
        let node = match &latent {
            LatentSource::Audio { node, .. } => node,
            _ => &sampler_node,
        };
        model.table = Some(audio::sampling(node));
    }
    let continuous = matches!(
        model.table.as_ref().map(|t| &t.table),
        Some(
            crate::comfyui::synth::tables::Table::ContinuousEdm { .. }
                | crate::comfyui::synth::tables::Table::ContinuousV { .. }
        )
    );
    if let Some(scheduler) = &guide.scheduler
        && (model.flow.is_some() || continuous)
        && sampler.schedule.needs_training_timesteps()
    {
        return Err(g.refuse(
            scheduler,
            Some("model"),
            "takes a model without discrete training timesteps (a flow-matching or continuous one), but its timesteps 999, 899, ..., 99 are a discrete model's (SD Turbo's)".into(),
            "use BasicScheduler for this model",
        ));
    }
    let seconds = audio::seconds_taken(g, walk, &latent, axes, &prompts)?;
    let frame_rate = ltxv::frame_rate_taken(g, &prompts)?;
    reference::agree(g, &prompts, &latent, axes)?;
    vision::agree(g, &prompts)?;
    if let Some(scheduler) = &guide.measuring {
        reference::measured(g, scheduler, (&latent, &prompts), model.flow.is_some())?;
    }
    if let Some(linear) = &model.linear_cfg {
        let why = match (axes, &sampler.dual) {
            (Axes::Image | Axes::Audio, _) => Some(
                "guides a picture or audio latent, where ComfyUI would vary the scale over the batch's rows",
            ),
            (_, Some(_)) => {
                Some("is under a DualCFGGuider, whose three-way guidance it does not shape")
            }
            // At cfg 1 ComfyUI skips the negative prompt's pass, and the
            // node's blend reads zeros for it.
            _ if sampler.cfg == 1.0 && linear.min_cfg != 1.0 => Some(
                "raises the scale to a cfg of 1, where ComfyUI skips the negative prompt's model call",
            ),
            _ => None,
        };
        if let Some(why) = why {
            return Err(g.refuse(
                &linear.node,
                None,
                format!("{why}; the lowering raises the scale over a video's frames only"),
                "remove VideoLinearCFGGuidance, or use it on a video sampler with CFGGuider",
            ));
        }
    }
    if let (Axes::Video | Axes::Audio | Axes::AudioVideo, Some(control)) = (axes, &control) {
        return Err(g.refuse(
            &control.apply,
            None,
            "conditions a video or audio sampler with a ControlNet; the lowering applies ControlNets to pictures only".into(),
            "remove the ControlNet from the video or audio graph",
        ));
    }
    if let (Axes::Video | Axes::Audio | Axes::AudioVideo, Some(patch)) =
        (axes, &model.control_patch)
    {
        return Err(g.refuse(
            &patch.node,
            None,
            "patches a control model into a video or audio sampler's model; the lowering encodes control pictures for picture samplers only".into(),
            "remove the control patch from the video or audio graph",
        ));
    }
    if model.flow.is_none()
        && model.table.is_none()
        && let Some(what) = flow_only::flow_only(g, walk, &latent, axes, [&positive, &negative])
    {
        // Without an override the lowering samples as SD1.5's discrete
        // epsilon schedule, which none of these model families uses.
        let unsettled = match &family {
            Family::Unsettled(clip_type) => format!(
                ", and the text encoder's type '{clip_type}' (node {}) does not settle which",
                positive.loader
            ),
            _ => String::new(),
        };
        return Err(g.refuse(
            &sampler_node,
            Some("model"),
            format!("samples {what} with the model's own sampling, which the graph does not state: the models that take it sample by flow matching with a shift of their own{unsettled}"),
            "add the model's ModelSampling node (ModelSamplingFlux for Flux, ModelSamplingSD3 or ModelSamplingAuraFlow with its shift) between the model and the sampler",
        ));
    }
    let sdxl = matches!(positive.text, Prompt::Sdxl { .. });
    motion::on_pictures(g, model.motion(), axes, sdxl)?;
    let channels = match (&model.flow, &latent) {
        _ if axes == Axes::Audio => audio::CHANNELS,
        // A pixel-space model samples the picture itself.
        (
            _,
            LatentSource::Empty {
                channels, scale: 1, ..
            },
        ) => *channels,
        (_, LatentSource::Empty { channels, .. }) if axes == Axes::Video => *channels,
        (Some(flow), _) => flow.channels,
        (None, LatentSource::Empty { channels, .. } | LatentSource::Sized { channels, .. }) => {
            *channels
        }
        (None, LatentSource::Stage { stage, .. }) => walk.channels(*stage),
        (None, LatentSource::Composite(c)) => walk.channels(c.base),
        (None, _) => 4,
    };
    let mut plan = Plan {
        channels,
        axes,
        sampler,
        model,
        positive,
        negative,
        middle,
        latent,
        control,
        seconds,
        frame_rate,
        audio,
        held,
    };
    if let Some(node) = plan.holding() {
        held::solvable(g, node, &plan.sampler.sampler_name)?;
    }
    guide::prompts_pass(g, &plan)?;
    ksampler::own_steps_checked(g, &mut plan)?;
    Ok(plan)
}

/// Refuses prompts encoded with another loader's text encoder than the
/// first (positive) prompt's: a sampler's prompts share one.
fn one_text_encoder(g: &Graph<'_>, prompts: &[&Conditioning]) -> Result<(), Refusal> {
    let [positive, others @ ..] = prompts else {
        return Ok(());
    };
    for other in others {
        // Lotus' prompts are one fixed embedding whichever node gives it.
        let both_lotus = positive.text == Prompt::Lotus && other.text == Prompt::Lotus;
        if other.loader != positive.loader && !both_lotus {
            return Err(g.refuse(
                &other.encoder,
                Some("clip"),
                format!(
                    "encodes its prompt with node {}'s text encoder, but the positive prompt uses node {}'s, and the lowering gives a sampler's prompts one",
                    other.loader, positive.loader
                ),
                "encode every prompt of the sampler from the same CLIP loader",
            ));
        }
    }
    Ok(())
}

/// Refuses what a `DualCFGGuider`'s middle prompt (`guider`'s `cond2`)
/// has that the lowering gives the positive and negative only: a
/// `FluxGuidance`, SDXL's own encoder (the others' must be plain too),
/// other LoRAs on its CLIP path than the positive's (a ControlNet under
/// the guider is refused with the sampler's).
fn dual_prompts(
    g: &Graph<'_>,
    guider: &str,
    middle: &Conditioning,
    others: [&Conditioning; 2],
) -> Result<(), Refusal> {
    let all = || [middle].into_iter().chain(others);
    let why = if middle.clip_loras != others[0].clip_loras {
        "other LoRAs on its CLIP path than the positive's"
    } else if all().any(|c| c.guidance.is_some()) {
        "a FluxGuidance"
    } else if all().any(|c| matches!(c.text, Prompt::Sdxl { .. })) {
        "a CLIPTextEncodeSDXL"
    } else {
        return Ok(());
    };
    Err(g.refuse(
        guider,
        None,
        format!("guides three prompts, one with {why}, which the lowering gives a positive and negative pair only"),
        "use CFGGuider with one positive and one negative prompt",
    ))
}

/// Refuses a `FluxGuidance` on one prompt only where the other prompt's
/// model call matters: the model's own default guidance (which ComfyUI
/// uses there) depends on the model family, which the graph does not say.
/// With cfg 1 the negative call does not change the result, and it takes
/// the positive's guidance; one conditioning on both sides is one prompt.
fn guidance_sides(
    g: &Graph<'_>,
    positive: &Conditioning,
    negative: &Conditioning,
    one_conditioning: bool,
    sampler: &Sampler,
) -> Result<(), Refusal> {
    let (lacking, having) = match (&positive.guidance, &negative.guidance) {
        (Some(p), None) if sampler.cfg != 1.0 && !one_conditioning => ("negative", p),
        (None, Some(n)) if !one_conditioning => ("positive", n),
        _ => return Ok(()),
    };
    Err(g.refuse(
        &having.node,
        None,
        format!(
            "sets the guidance of one prompt only, and the {lacking} prompt would take the model's own default guidance, which the lowering does not know"
        ),
        &format!("add a FluxGuidance to the {lacking} prompt too, or set cfg to 1"),
    ))
}

/// The `upscale_method` of resize node `node`, refused unless the
/// lowering's resizes make it; `what` the resize makes (`pictures`,
/// `latents`), for the message.
fn upscale_method<'a>(
    g: &Graph<'a>,
    node: &str,
    (what, methods): (&str, &[&str]),
) -> Result<&'a str, Refusal> {
    resize_method(g, (node, "upscale_method"), (what, methods))
}

/// The resize method input `input` of `node` names, refused unless the
/// lowering's resizes make it (see [`upscale_method`]).
fn resize_method<'a>(
    g: &Graph<'a>,
    (node, input): (&str, &str),
    (what, methods): (&str, &[&str]),
) -> Result<&'a str, Refusal> {
    let method = g.text(node, input)?;
    if methods.contains(&method) {
        return Ok(method);
    }
    Err(g.refuse(
        node,
        Some(input),
        format!(
            "is '{method}'; the lowering resizes {what} by {} only",
            super::graph::either(methods)
        ),
        &format!("choose {}", super::graph::either(methods)),
    ))
}

/// The extents `(height, width)` of the latent `latent` starts a stage
/// from, where the graph fixes them; `earlier` gives an earlier stage's.
/// A resize by a factor rounds as the `latent_upscale` policy does (half
/// to even, at least 1).
fn source_extents(
    latent: &LatentSource,
    earlier: impl Fn(usize) -> Option<(i64, i64)>,
) -> Option<(i64, i64)> {
    match latent {
        LatentSource::Empty {
            width,
            height,
            scale,
            ..
        } => Some((height / scale, width / scale)),
        LatentSource::Stage { stage, upscale } => {
            let (height, width) = earlier(*stage)?;
            match upscale.as_ref().map(|u| &u.size) {
                None => Some((height, width)),
                Some(UpscaleSize::Fixed { width, height }) => Some((*height, *width)),
                Some(UpscaleSize::Scale(s)) => {
                    let side =
                        |x: i64| (round_half_even(x as f64 * s) as i64).clamp(1, i64::MAX / 2);
                    Some((side(height), side(width)))
                }
            }
        }
        LatentSource::Composite(c) => Some(c.extents),
        LatentSource::Encoded { .. }
        | LatentSource::Sized { .. }
        | LatentSource::Inpaint { .. }
        | LatentSource::Edit { .. }
        | LatentSource::Audio { .. } => None,
    }
}

/// The batch size of the empty latent `latent` starts from, through
/// earlier stages (`earlier`), where the graph fixes it.
fn source_batch(latent: &LatentSource, earlier: impl Fn(usize) -> Option<i64>) -> Option<i64> {
    match latent {
        LatentSource::Empty { batch, .. }
        | LatentSource::Sized { batch, .. }
        | LatentSource::Audio { batch, .. } => Some(*batch),
        LatentSource::Stage { stage, .. } => earlier(*stage),
        LatentSource::Composite(c) => earlier(c.base),
        LatentSource::Encoded { .. } | LatentSource::Inpaint { .. } | LatentSource::Edit { .. } => {
            None
        }
    }
}
