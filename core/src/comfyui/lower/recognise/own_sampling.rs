//! A model's own sampling, where no `ModelSampling*` node states it.
//! ComfyUI reads it from the checkpoint's weights, which the graph does not
//! hold; the type the text encoder is loaded as names the model family the
//! prompts are encoded for, and with it the family's default sampling
//! (ComfyUI's `supported_models`). Types that serve families with
//! different defaults name none. A checkpoint that holds its text
//! encoders states no type; ComfyUI's own checkpoint files are known by
//! name.

use super::super::graph::Graph;
use super::Conditioning;
use super::av_nodes::{H3_CELL, H3_CHANNELS};
use super::model::{FlowSampling, FlowShift, LatentFormat, ModelChain};

/// A family's default shift: a plain one (`ModelSamplingDiscreteFlow`),
/// or a Flux time shift exponent `mu` used as `exp(mu)`
/// (`ModelSamplingFlux`).
enum Shift {
    Plain(f64),
    Mu(f64),
}

/// A model family's default sampling, by the text encoder type that
/// names it (ComfyUI's `supported_models`: `sampling_settings`, the model
/// type, the latent format's channels). Types that serve families with
/// different defaults (`lumina2`: Lumina 2 and Z-Image) are not listed.
struct Default {
    clip_type: &'static str,
    /// How sigmas map to timesteps: `sd3` (times 1000), `aura_flow`
    /// (times 1), `flux` (Flux's table).
    family: &'static str,
    shift: Shift,
    channels: i64,
    /// The family's latent format, where it is not SD's.
    format: Option<LatentFormat>,
    /// The family, as the note names it.
    name: &'static str,
    /// What the note adds.
    note: Option<&'static str>,
}

const fn flow(
    clip_type: &'static str,
    family: &'static str,
    shift: Shift,
    channels: i64,
    name: &'static str,
) -> Default {
    Default {
        clip_type,
        family,
        shift,
        channels,
        format: None,
        name,
        note: None,
    }
}

const DEFAULTS: &[Default] = &[
    flow("sd3", "sd3", Shift::Plain(3.0), 16, "SD3"),
    flow(
        "hunyuan_video",
        "sd3",
        Shift::Plain(7.0),
        16,
        "HunyuanVideo",
    ),
    flow(
        "hunyuan_video_15",
        "sd3",
        Shift::Plain(7.0),
        32,
        "HunyuanVideo 1.5",
    ),
    flow("wan", "sd3", Shift::Plain(8.0), 16, "Wan"),
    flow("hidream", "sd3", Shift::Plain(1.0), 16, "HiDream"),
    flow("omnigen2", "aura_flow", Shift::Plain(2.6), 16, "OmniGen2"),
    flow("boogu", "aura_flow", Shift::Plain(3.16), 16, "Boogu"),
    flow("newbie", "aura_flow", Shift::Plain(6.0), 16, "NewBie"),
    flow("mage", "aura_flow", Shift::Plain(6.0), 128, "MageFlow"),
    flow(
        "ideogram4",
        "aura_flow",
        Shift::Plain(1.0),
        128,
        "Ideogram 4",
    ),
    flow("chroma", "flux", Shift::Mu(1.15), 16, "Chroma"),
    flow(
        "longcat_image",
        "flux",
        Shift::Mu(1.15),
        16,
        "LongCat-Image",
    ),
    flow("qwen_image", "flux", Shift::Mu(1.15), 16, "Qwen-Image"),
    flow("krea2", "flux", Shift::Mu(1.15), 16, "Krea 2"),
    flow("flux2", "flux", Shift::Mu(2.02), 128, "Flux 2"),
    flow("lens", "flux", Shift::Mu(1.829), 128, "Lens"),
    flow("ltxv", "flux", Shift::Mu(2.37), 128, "LTX-Video"),
    // LTX-2 samples as LTX-Video does (its latent's video part has the
    // same channels); `LTXAVTextEncoderLoader` states no type.
    flow("ltxav", "flux", Shift::Mu(2.37), 128, "LTX-2"),
    // MiniMax H3's video shift; its audio shift (3) is `minimax`'s.
    Default {
        format: Some(LatentFormat {
            cell: H3_CELL,
            picture_channels: 3,
        }),
        ..flow(
            "minimax",
            "sd3",
            Shift::Plain(12.0),
            H3_CHANNELS,
            "MiniMax H3",
        )
    },
    // Flux dev and schnell share the text encoders; dev is the one shared
    // graphs mostly run, and the shift stays a run parameter.
    Default {
        note: Some(
            ", the lowering's assumption: Flux schnell shares the type and takes time shift 1.0, a flow_shift of 2.7183",
        ),
        ..flow("flux", "flux", Shift::Mu(1.15), 16, "Flux dev")
    },
];

impl Family {
    /// Whether the family is known (its sampling and latents).
    pub(super) fn settled(&self) -> bool {
        matches!(self, Family::Flow(_))
    }

    /// Gives `model` what the family knows of its latents: their format,
    /// and the channels, which a ModelSampling class only guesses
    /// (Qwen-Image and Z-Image sample by AuraFlow's rule in 16 channels).
    pub(super) fn apply(&self, model: &mut ModelChain) {
        if let Family::Flow(flow) = self {
            model.format = flow.format;
        }
        if let (Some(flow), Some(channels)) = (&mut model.flow, self.channels()) {
            flow.channels = channels;
        }
    }

    /// The model's latent channels, where the loader settles them.
    pub(super) fn channels(&self) -> Option<i64> {
        match self {
            Family::Flow(flow) => Some(flow.channels),
            Family::Unsettled(clip_type) => CHANNELS
                .iter()
                .find(|(t, _)| t == clip_type)
                .map(|(_, channels)| *channels),
            Family::Unstated => None,
        }
    }
}

/// ComfyUI's own checkpoint files (as the official templates name them)
/// that hold a flow model and its text encoders, whose loader states no
/// type: the file names the family.
const CHECKPOINTS: &[(&str, Default)] = &[
    (
        "flux1-schnell-fp8.safetensors",
        flow("flux", "flux", Shift::Mu(1.0), 16, "Flux schnell"),
    ),
    (
        "flux1-dev-fp8.safetensors",
        flow("flux", "flux", Shift::Mu(1.15), 16, "Flux dev"),
    ),
    (
        "sd3.5_large_fp8_scaled.safetensors",
        flow("sd3", "sd3", Shift::Plain(3.0), 16, "SD3.5 Large"),
    ),
];

/// Latent channels of types whose families share them but not their
/// sampling (Lumina 2 and Z-Image: Flux's VAE, 16).
const CHANNELS: &[(&str, i64)] = &[("lumina2", 16), ("ovis", 16)];

/// Families a type with no single default serves, known by the model
/// file a `UNETLoader` loads (its name in lower case, without `_`, `-`
/// and `.`, holding the stem): ComfyUI tells them apart by the weights
/// (Z-Image's width is 3840), which the graph does not hold. An entry
/// here comes before the type's own default (Qwen-Image 2.1 before
/// Qwen-Image, Flux schnell before Flux dev).
const UNETS: &[(&str, &str, Default)] = &[
    ("qwen_image", "qwenimage21", QWEN_IMAGE_21),
    (
        "flux",
        "flux1schnell",
        flow("flux", "flux", Shift::Mu(1.0), 16, "Flux schnell"),
    ),
    // The type serves PixelDiT (shift 4) and its distilled PiD (shift
    // 1.5); ComfyUI tells them apart by the weights.
    (
        "pixeldit",
        "pixeldit",
        Default {
            note: Some(
                ", the lowering's assumption: PixelDiT's distilled PiD shares the type and takes shift 1.5 (state it with ModelSamplingSD3 for a PiD model)",
            ),
            ..flow("pixeldit", "sd3", Shift::Plain(4.0), 3, "PixelDiT")
        },
    ),
    (
        "lumina2",
        "zimage",
        flow("lumina2", "aura_flow", Shift::Plain(3.0), 16, "Z-Image"),
    ),
    (
        "lumina2",
        "lumina",
        flow("lumina2", "aura_flow", Shift::Plain(6.0), 16, "Lumina 2"),
    ),
];

/// Model files (a `UNETLoader`'s, as `UNETS` reads them) whose prompt
/// may be a saved one (`ConditioningLoader`, which states no type), and
/// the type of the text encoder that made it: Marigold's Qwen-Image Edit.
const SAVED_PROMPTS: &[(&str, &str)] = &[("qwenimage", "qwen_image")];

/// ComfyUI's own checkpoint files that hold a model of a type with no
/// single default sampling (as a `CLIPLoader` would load their text
/// encoders).
const CHECKPOINT_TYPES: &[(&str, &str)] =
    &[("NetaYumev35_pretrained_all_in_one.safetensors", "lumina2")];

/// What a text encoder loader says about the model family.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Family {
    /// The type names a family whose default sampling is this flow.
    Flow(FlowSampling),
    /// The loader states a type that names no single default (or one the
    /// lowering does not know); the type, for the refusal.
    Unsettled(String),
    /// The loader states no type (a checkpoint's own text encoder).
    Unstated,
}

/// ComfyUI's `QwenImage21`: Flux's sampling at a fixed mu of 0.69,
/// `QwenImage21` latents of 64 channels at 16 pixels a cell, which its
/// VAE decodes to RGBA.
const QWEN_IMAGE_21: Default = Default {
    format: Some(LatentFormat {
        cell: 16,
        picture_channels: 4,
    }),
    ..flow("qwen_image", "flux", Shift::Mu(0.69), 64, "Qwen-Image 2.1")
};

/// The model family `prompt` is encoded for: its encoder's where that
/// node serves one family (`TextEncodeQwenImage21`), else what its text
/// encoder `loader` (a CLIP loader node, or a checkpoint loader of one of
/// ComfyUI's own [`CHECKPOINTS`] that the model comes from too,
/// `model_loader`) is loaded for.
pub(super) fn family(g: &Graph<'_>, prompt: &Conditioning, model_loader: &str) -> Family {
    let (encoder, loader) = (prompt.encoder.as_str(), prompt.loader.as_str());
    if g.class(encoder) == super::QWEN21 {
        let why = format!("node {encoder} (TextEncodeQwenImage21) encodes the prompts for it");
        return Family::Flow(QWEN_IMAGE_21.sampling(loader, why));
    }
    if g.class(loader) == "CheckpointLoaderSimple" {
        if loader != model_loader {
            return Family::Unstated;
        }
        let file = g.text(loader, "ckpt_name").unwrap_or_default();
        // The file's own name, wherever the user keeps it.
        let name = file.rsplit(['/', '\\']).next().unwrap_or_default();
        if let Some((_, clip_type)) = CHECKPOINT_TYPES.iter().find(|(known, _)| *known == name) {
            return Family::Unsettled(clip_type.to_string());
        }
        return match CHECKPOINTS.iter().find(|(known, _)| *known == name) {
            Some((_, default)) => Family::Flow(default.sampling(
                loader,
                format!("node {loader} (CheckpointLoaderSimple) loads '{name}', ComfyUI's {} checkpoint", default.name),
            )),
            None => Family::Unstated,
        };
    }
    let clip_type = match g.class(loader) {
        // Its three encoders (CLIP-L, CLIP-G, T5) are SD3's.
        "TripleCLIPLoader" => "sd3",
        // Its four (CLIP-L, CLIP-G, T5, Llama) are HiDream's.
        "QuadrupleCLIPLoader" => "hidream",
        "LTXAVTextEncoderLoader" => "ltxav",
        "CLIPLoader" | "DualCLIPLoader" => match g.text(loader, "type") {
            Ok(t) => t,
            Err(_) => return Family::Unstated,
        },
        // A saved prompt states no type: the model file names the family
        // whose text encoder made it.
        super::loaded::LOADER => {
            let plain = unet_name(g, model_loader).1;
            match SAVED_PROMPTS.iter().find(|(stem, _)| plain.contains(stem)) {
                Some((_, clip_type)) => clip_type,
                None => return Family::Unstated,
            }
        }
        _ => return Family::Unstated,
    };
    let by_unet = unet_family(g, (loader, clip_type), model_loader);
    let Some(default) = DEFAULTS.iter().find(|d| d.clip_type == clip_type) else {
        return by_unet;
    };
    if let Family::Flow(_) = by_unet {
        return by_unet;
    }
    let why = match g.class(loader) {
        "TripleCLIPLoader" => {
            format!("node {loader} (TripleCLIPLoader) loads SD3's three text encoders")
        }
        "QuadrupleCLIPLoader" => {
            format!("node {loader} (QuadrupleCLIPLoader) loads HiDream's four text encoders")
        }
        super::loaded::LOADER => format!(
            "node {loader} (ConditioningLoader) loads a saved prompt and node {model_loader} (UNETLoader) loads '{}', a model of the text encoder type '{clip_type}' by its name",
            unet_name(g, model_loader).0
        ),
        "LTXAVTextEncoderLoader" => {
            format!("node {loader} (LTXAVTextEncoderLoader) loads LTX-2's text encoder")
        }
        class => format!("node {loader} ({class}) loads the text encoder as type '{clip_type}'"),
    };
    Family::Flow(default.sampling(loader, why))
}

/// The family of type `clip_type` (loaded by `loader`), which names no
/// single default, that the `UNETLoader` `model_loader`'s file names.
fn unet_family(g: &Graph<'_>, (loader, clip_type): (&str, &str), model_loader: &str) -> Family {
    let (name, plain) = unet_name(g, model_loader);
    match UNETS
        .iter()
        .find(|(t, stem, _)| *t == clip_type && plain.contains(stem))
    {
        Some((_, _, default)) => Family::Flow(default.sampling(
            loader,
            format!(
                "node {loader} ({}) loads the text encoder as type '{clip_type}', which serves several families, and node {model_loader} (UNETLoader) loads '{name}', {}'s model by its name",
                g.class(loader),
                default.name
            ),
        )),
        None => Family::Unsettled(clip_type.to_string()),
    }
}

/// Drops the guidance `prompts` set where the model `model_loader` loads
/// takes none: Flux schnell's (no guidance embedding, so ComfyUI's model
/// ignores a `FluxGuidance` or `CLIPTextEncodeFlux` value), named by its
/// file (a `UNETLoader`'s, or ComfyUI's own schnell checkpoint).
pub(super) fn drop_ignored_guidance(
    g: &Graph<'_>,
    model_loader: &str,
    prompts: [&mut Conditioning; 2],
) {
    let checkpoint = g.class(model_loader) == "CheckpointLoaderSimple"
        && g.text(model_loader, "ckpt_name")
            .is_ok_and(|f| f.rsplit(['/', '\\']).next() == Some("flux1-schnell-fp8.safetensors"));
    if checkpoint || unet_name(g, model_loader).1.contains("flux1schnell") {
        for prompt in prompts {
            prompt.guidance = None;
        }
    }
}

/// The file a `UNETLoader` `model_loader` loads, as its own name and
/// that name in lower case without `_`, `-` and `.` (empty for another
/// loader).
fn unet_name<'g>(g: &Graph<'g>, model_loader: &str) -> (&'g str, String) {
    let file = match g.class(model_loader) {
        "UNETLoader" => g.text(model_loader, "unet_name").unwrap_or_default(),
        _ => "",
    };
    let name = file.rsplit(['/', '\\']).next().unwrap_or_default();
    let plain = name
        .to_lowercase()
        .chars()
        .filter(|c| !matches!(c, '_' | '-' | '.'))
        .collect();
    (name, plain)
}

impl Default {
    /// The family's default sampling, assumed because of `why` (what
    /// node `loader` loads), as the note says.
    fn sampling(&self, loader: &str, why: String) -> FlowSampling {
        let (shift, how) = match self.shift {
            Shift::Plain(shift) => (shift, format!("shift {shift}")),
            Shift::Mu(mu) => (mu.exp(), format!("Flux time shift {mu}, a shift of e^{mu}")),
        };
        let note = self.note.unwrap_or_default();
        FlowSampling {
            node: loader.to_string(),
            shift: FlowShift::Constant(shift),
            channels: self.channels,
            family: self.family,
            format: self.format,
            velocity: false,
            audio_shift: None,
            assumed: Some(format!(
                "{why}, and the model samples by flow matching as {}'s model does ({how}){note}",
                self.name
            )),
        }
    }
}
