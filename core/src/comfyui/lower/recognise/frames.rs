//! Wan's image-to-video conditioning (`WanImageToVideo`,
//! `WanFirstLastFrameToVideo`, `WanFunInpaintToVideo`, `WanVaceToVideo`):
//! the node stands between the sampler and both prompts and gives the
//! empty video latent (output 2). Both prompts carry the video it makes of
//! its pictures: `length` frames of grey 0.5 with the start picture first
//! and the end picture last (each resized to the video's size, bilinear,
//! centre crop), encoded by the VAE, and the mask of the latent frames
//! those pictures fill, which the denoiser takes beside the sample.
//! `WanVaceToVideo` makes VACE's context instead (see [`Vace`]), and
//! `Wan22FunControlToVideo` its control video's latent beside the
//! latent mean (see [`FunControl`]).
//! HunyuanVideo 1.5's `HunyuanVideo15ImageToVideo` and Wan's
//! `WanCameraImageToVideo` encode their start picture alone, as the first
//! of the latent's frames (zeros after, Wan's latent mean for the camera
//! node), and mask that frame; the camera node adds its camera motion
//! (see `camera`).

use super::super::graph::Graph;
use super::camera::{CAMERA_VIDEO, Camera};
use super::{
    Conditioning, LatentSource, MAX_BATCH, MAX_RESOLUTION, Plan, Resize, loaded_image,
    loaded_picture,
};
use crate::comfyui::lower::Refusal;

/// The classes, each with outputs positive, negative and latent.
pub(super) const FRAMES_NODES: &[&str] = &[
    "WanImageToVideo",
    "WanFirstLastFrameToVideo",
    "WanFunInpaintToVideo",
    VACE,
    HUNYUAN15,
    CAMERA_VIDEO,
    FUN_CONTROL,
];

/// Wan 2.2 Fun Control's node: its prompts carry its control video's
/// latent and a reference picture's.
pub(super) const FUN_CONTROL: &str = "Wan22FunControlToVideo";

/// HunyuanVideo 1.5's image-to-video node: its video's latent is its
/// start picture's alone, ahead of zero frames.
pub(super) const HUNYUAN15: &str = "HunyuanVideo15ImageToVideo";

/// HunyuanVideo 1.5's latent: channels and pixels a cell.
const HUNYUAN15_LATENT: (i64, i64) = (32, 16);

/// The VACE node: its prompts carry the context VACE models read, and its
/// output 3 is the latent frames a reference picture adds ahead of the
/// video (`TrimVideoLatent` drops them after sampling).
pub(super) const VACE: &str = "WanVaceToVideo";

/// Video frames a Wan latent frame holds (after the first).
pub(super) const TEMPORAL: i64 = 4;

/// The VAEs whose latents the lowering knows: (name, channels, pixels a
/// cell), as ComfyUI's VAE reports them to the first-last-frame node;
/// names are compared in lower case without dots and underscores
/// (`wan_2.1_vae`, `Wan2_1_VAE`, ...).
const VAES: &[(&str, i64, i64)] = &[
    ("wan21vae", 16, 8),
    ("wan22vae", 48, 16),
    ("hunyuanvideo15vae", HUNYUAN15_LATENT.0, HUNYUAN15_LATENT.1),
];

/// Wan 2.1's latent: channels and pixels a cell (`WanImageToVideo`'s
/// whatever its VAE).
const WAN21: (i64, i64) = (16, 8);

/// What a Wan image-to-video node makes of its pictures.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct VideoFrames {
    /// The node.
    pub node: String,
    /// Its class.
    pub class: String,
    /// The `LoadImage` of the first frame, where connected.
    pub start: Option<String>,
    /// A resize of the first frame's picture in the graph
    /// (HunyuanVideo 1.5's node; Wan's take the loaded picture).
    pub start_resize: Option<Resize>,
    /// The `LoadImage` of the last frame, where connected
    /// (`WanImageToVideo` has none).
    pub end: Option<String>,
    /// The video's size in pixels.
    pub width: i64,
    /// See `width`.
    pub height: i64,
    /// The video frames (`length`).
    pub length: i64,
    /// Videos asked for (1; more are refused).
    pub batch: i64,
    /// The VAE's latent channels.
    pub channels: i64,
    /// The VAE's pixels a latent cell.
    pub scale: i64,
    /// CLIP vision embeddings of the pictures the denoiser takes too.
    pub vision: Option<FrameVision>,
    /// What a `WanVaceToVideo` node makes instead of the start and end
    /// pictures' video.
    pub vace: Option<Vace>,
    /// A `WanCameraImageToVideo`'s camera motion.
    pub camera: Option<Camera>,
    /// What a `Wan22FunControlToVideo` node attaches instead of the start
    /// and end pictures' video.
    pub fun_control: Option<FunControl>,
}

/// What `Wan22FunControlToVideo` attaches to both prompts: `concat` is
/// its control video's latent (its first `length` frames resized to the
/// video's size, bilinear, centre crop, then encoded) on the first half
/// of the channels, its later latent frames and the second half the
/// VAE's latent mean (ComfyUI's `process_out` of zeros); the mask is
/// ones (no start picture), which its model reads as zeros beside the
/// latent's channels (`concat_mask_index`); a reference picture is
/// resized likewise and encoded as `reference_latents`.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct FunControl {
    /// The `LoadImage` of the reference picture, where connected.
    pub reference: Option<String>,
    /// The `LoadVideo` of the control video, where connected.
    pub control: Option<String>,
}

/// What `WanVaceToVideo` attaches to both prompts: the video it encodes
/// is `length` frames of grey 0.5 (the inactive half) and the control
/// video's first `length` frames resized to the video's size (bilinear,
/// centre crop), padded with grey (the reactive half; grey too without a
/// control video), its mask ones (every frame is generated); a reference
/// picture (resized to the
/// video's size, bilinear, centre crop) is encoded as one latent frame
/// ahead of the video's, masked 0, its second half of channels zero. The
/// denoiser takes the frames' latent twice (ComfyUI's inactive and
/// reactive halves) and the mask as `vace_context`, and the strength as
/// `vace_strength`.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Vace {
    /// The node's `strength`.
    pub strength: f64,
    /// The `LoadImage` of the reference picture, where connected.
    pub reference: Option<String>,
    /// The `LoadVideo` of the control video (its frames through
    /// `GetVideoComponents`), where connected.
    pub control: Option<String>,
}

/// The `CLIPVisionEncode`s of a Wan node's start and end pictures: the
/// denoiser takes their penultimate hidden states (both: the start's
/// tokens, then the end's; HunyuanVideo 1.5 the last hidden state) as
/// `clip_fea`.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct FrameVision {
    /// The `CLIPVisionLoader`.
    pub loader: String,
    /// `CLIPVisionEncode`'s `crop`: `center` or `none`.
    pub crop: String,
    /// The picture side the vision model takes (224, or SigLIP's 384).
    pub size: i64,
    /// Whether it embeds the start picture through the node's resize of
    /// it (`start_resize`) rather than as loaded.
    pub resized: bool,
    /// The hidden states the denoiser takes: `penultimate_hidden_states`
    /// (Wan's) or `last_hidden_state` (HunyuanVideo 1.5's).
    pub state: &'static str,
    /// The encode node of the start picture.
    pub start: Option<String>,
    /// The encode node of the end picture.
    pub end: Option<String>,
}

impl Plan {
    /// The Wan image-to-video node the stage's prompts carry (every
    /// prompt carries the same, see [`same_on_every_prompt`]).
    pub fn video_frames(&self) -> Option<&VideoFrames> {
        self.conditionings().find_map(|c| c.frames.as_ref())
    }
}

impl VideoFrames {
    /// Video frames a latent frame holds (after the first): 4.
    pub fn temporal(&self) -> i64 {
        TEMPORAL
    }

    /// The video's latent frames: `(length - 1) / 4 + 1`.
    pub fn latent_frames(&self) -> i64 {
        (self.length - 1) / TEMPORAL + 1
    }

    /// Whether the video's latent is the start picture's alone, ahead of
    /// other frames (HunyuanVideo 1.5's and Wan's camera node's), rather
    /// than the encoded video.
    pub fn start_latent_only(&self) -> bool {
        matches!(self.class.as_str(), HUNYUAN15 | CAMERA_VIDEO)
    }

    /// Whether the node is Wan's camera image-to-video node.
    pub fn camera_video(&self) -> bool {
        self.class == CAMERA_VIDEO
    }

    /// Latent frames ahead of the video's: a VACE reference picture's 1.
    pub fn leading_frames(&self) -> i64 {
        let reference = self.vace.as_ref().and_then(|v| v.reference.as_ref());
        i64::from(reference.is_some())
    }

    /// The `LoadVideo` of the node's control video (VACE's, Fun
    /// Control's), where it takes one.
    pub fn control_video(&self) -> Option<&String> {
        let vace = self.vace.as_ref().and_then(|v| v.control.as_ref());
        vace.or(self.fun_control.as_ref().and_then(|f| f.control.as_ref()))
    }

    /// The `LoadImage`s of the node's pictures: start, end, reference.
    pub fn pictures(&self) -> impl Iterator<Item = &String> {
        let reference = match (&self.vace, &self.fun_control) {
            (Some(vace), _) => vace.reference.as_ref(),
            (_, Some(fun)) => fun.reference.as_ref(),
            _ => None,
        };
        [&self.start, &self.end]
            .into_iter()
            .flatten()
            .chain(reference)
    }
}

/// Steps back through a Wan image-to-video node at the walk's position,
/// if it is one: its output `slot` (0 positive, 1 negative) is the prompt
/// on that input with the node's video attached.
pub(super) fn step(
    g: &Graph<'_>,
    node: &mut String,
    slot: &mut i64,
    from: &mut (String, String),
) -> Result<Option<VideoFrames>, Refusal> {
    if !FRAMES_NODES.contains(&g.class(node)) {
        return Ok(None);
    }
    let frames = read(g, node)?;
    g.through_prompt_pair(node, slot, from, "its latent, as a conditioning")?;
    Ok(Some(frames))
}

/// Refuses prompts of one sampler that do not all carry the same node's
/// video (the denoiser takes it with every prompt), a sampler starting
/// from such a node's latent whose prompts do not carry its video, and
/// prompts carrying it to a sampler starting from another empty latent.
pub(super) fn same_on_every_prompt(
    g: &Graph<'_>,
    prompts: &[&Conditioning],
    (latent, earlier): (&LatentSource, &[Plan]),
) -> Result<(), Refusal> {
    let latent_node = match latent {
        LatentSource::Empty { node, .. } if FRAMES_NODES.contains(&g.class(node)) => Some(node),
        _ => None,
    };
    let Some(first) = prompts.iter().find_map(|c| c.frames.as_ref()) else {
        return match latent_node {
            None => Ok(()),
            Some(node) => Err(g.refuse(
                node,
                None,
                "gives the sampler its latent but not its video: the sampler's prompts do not come through it".into(),
                "feed the sampler's positive and negative through this node",
            )),
        };
    };
    let own = match latent {
        LatentSource::Empty { node, .. } => *node == first.node,
        LatentSource::Stage { stage, .. } => started_by(earlier, *stage) == Some(&first.node),
        _ => false,
    };
    if !own {
        return Err(g.refuse(
            &first.node,
            None,
            "attaches its video to the prompts of a sampler that starts from another latent".into(),
            "connect the sampler's latent_image to this node's latent output (or an earlier sampler's)",
        ));
    }
    match prompts
        .iter()
        .find(|c| c.frames.as_ref().is_none_or(|f| f.node != first.node))
    {
        None => Ok(()),
        Some(other) => Err(g.refuse(
            &first.node,
            None,
            format!(
                "attaches its video to some of the sampler's prompts only (not to the one encoded by node {}); the lowering gives it to every prompt",
                other.encoder
            ),
            "feed both prompts of the sampler through this node",
        )),
    }
}

/// The empty latent the chain of earlier stages ending in `stage`
/// starts from.
fn started_by(earlier: &[Plan], mut stage: usize) -> Option<&String> {
    for _ in 0..=earlier.len() {
        match &earlier.get(stage)?.latent {
            LatentSource::Empty { node, .. } => return Some(node),
            LatentSource::Stage { stage: before, .. } => stage = *before,
            _ => return None,
        }
    }
    None
}

/// The node's `batch_size`, refused unless 1: the video it encodes is
/// one, and the lowering gives it to one sample.
fn one_video(g: &Graph<'_>, node: &str) -> Result<i64, Refusal> {
    match g.whole(node, "batch_size", 1..=MAX_BATCH)? {
        1 => Ok(1),
        n => Err(g.refuse(
            node,
            Some("batch_size"),
            format!("asks for {n} videos; the lowering conditions one video on its pictures"),
            "set batch_size to 1 and run the package once per video",
        )),
    }
}

/// Reads node `node`'s sizes, pictures, VAE and CLIP vision embeddings.
pub(super) fn read(g: &Graph<'_>, node: &str) -> Result<VideoFrames, Refusal> {
    let class = g.class(node);
    let picture = |input: &str| -> Result<Option<String>, Refusal> {
        if !g.has(node, input) || class == "WanImageToVideo" && input == "end_image" {
            return Ok(None);
        }
        loaded_image(g, node, input).map(Some)
    };
    let (start, start_resize) = match class {
        HUNYUAN15 if g.has(node, "start_image") => {
            let (loader, resize) = loaded_picture(g, node, "start_image")?;
            (Some(loader), resize)
        }
        _ => (picture("start_image")?, None),
    };
    let end = picture("end_image")?;
    let vace = vace(g, node)?;
    let fun_control = fun_control(g, node)?;
    if start.is_none() && end.is_none() && vace.is_none() && fun_control.is_none() {
        return Err(g.refuse(
            node,
            Some("start_image"),
            "has no picture to start or end the video with; the lowering makes image-to-video conditioning from a picture".into(),
            "connect a LoadImage to start_image",
        ));
    }
    let (vae, _) = g.source(node, "vae")?;
    g.expect(&vae, &["VAELoader"], "vae", (node, "vae"))?;
    let name = g.text(&vae, "vae_name")?;
    let lower: String = name
        .to_lowercase()
        .chars()
        .filter(|c| !matches!(c, '.' | '_'))
        .collect();
    let known = VAES
        .iter()
        .find(|(stem, _, _)| lower.contains(stem))
        .map(|&(_, channels, scale)| (channels, scale));
    // WanImageToVideo and WanVaceToVideo make Wan 2.1's latent whatever
    // the VAE (another VAE's encode would not fit it), HunyuanVideo 1.5's
    // node its own; the others ask the VAE.
    let made = match class {
        "WanImageToVideo" | VACE | CAMERA_VIDEO => Some(WAN21),
        HUNYUAN15 => Some(HUNYUAN15_LATENT),
        _ => None,
    };
    let (channels, scale) = match (made, known) {
        (Some(made), None) if class != HUNYUAN15 => made,
        (Some(made), other) if other != Some(made) => {
            let family = match class {
                HUNYUAN15 => "HunyuanVideo 1.5",
                _ => "Wan 2.1",
            };
            return Err(g.refuse(
                &vae,
                Some("vae_name"),
                format!("loads `{name}`, whose latent is not {family}'s, which {class} makes"),
                match class {
                    VACE => "load Wan 2.1's VAE",
                    HUNYUAN15 => "load hunyuanvideo15_vae",
                    _ => "load Wan 2.1's VAE, or use WanFirstLastFrameToVideo with this one",
                },
            ));
        }
        (_, Some(known)) => known,
        (_, None) => {
            return Err(g.refuse(
                &vae,
                Some("vae_name"),
                format!("loads `{name}`, whose latent channels and scale the lowering does not know; it knows Wan 2.1's and Wan 2.2's VAEs"),
                "load wan_2.1_vae or wan2.2_vae",
            ));
        }
    };
    // Fun Control's conditioning is the latent mean of Wan 2.1's or Wan
    // 2.2's latent format on the frames the control video leaves.
    if class == FUN_CONTROL && !matches!((channels, scale), (16, 8) | (48, 16)) {
        return Err(g.refuse(
            &vae,
            Some("vae_name"),
            format!("loads `{name}`, whose latent is neither Wan 2.1's nor Wan 2.2's, which {class} conditions on"),
            "load wan_2.1_vae or wan2.2_vae",
        ));
    }
    let start_picture = start.as_ref().map(|s| (s, start_resize.as_ref()));
    let side = |input: &str| -> Result<i64, Refusal> {
        let value = size(g, (node, input), 16..=MAX_RESOLUTION, start_picture)?;
        if value % 16 != 0 {
            return Err(g.refuse(
                node,
                Some(input),
                format!("is {value}, not a multiple of 16 as the node's widget steps"),
                "set a multiple of 16",
            ));
        }
        Ok(value)
    };
    let vision = vision(g, node, (&start, &end), start_resize.as_ref())?;
    let (width, height) = (side("width")?, side("height")?);
    let length = size(g, (node, "length"), 1..=MAX_RESOLUTION, start_picture)?;
    let camera = super::camera::read(g, node)?;
    if let Some(camera) = &camera {
        fits_camera(g, node, camera, (width, height, length))?;
    }
    Ok(VideoFrames {
        node: node.to_string(),
        class: class.to_string(),
        vision,
        vace,
        start,
        start_resize,
        end,
        width,
        height,
        length,
        camera,
        fun_control,
        batch: one_video(g, node)?,
        channels,
        scale,
    })
}

/// What `Wan22FunControlToVideo` node `node` attaches (`None` for another
/// class): its reference picture and control video; a start picture is
/// refused.
fn fun_control(g: &Graph<'_>, node: &str) -> Result<Option<FunControl>, Refusal> {
    if g.class(node) != FUN_CONTROL {
        return Ok(None);
    }
    if g.has(node, "start_image") {
        return Err(g.refuse(
            node,
            Some("start_image"),
            "starts the controlled video from a picture, which the lowering does not make yet; it makes Fun Control's conditioning from a control video and a reference picture".into(),
            "disconnect start_image",
        ));
    }
    let reference = match g.has(node, "ref_image") {
        true => Some(loaded_image(g, node, "ref_image")?),
        false => None,
    };
    let control = match g.has(node, "control_video") {
        true => Some(control_video(g, node)?),
        false => None,
    };
    Ok(Some(FunControl { reference, control }))
}

/// Input `input` (`width`, `height` or `length`) of node `node`, within
/// `range`: written, a camera embedding's own (see `camera::size`), or a
/// `GetImageSize` (outputs 0 to 2) of the node's `start` picture (a
/// `LoadImage`: one picture) through its resize, where that resize fixes
/// both sides.
fn size(
    g: &Graph<'_>,
    (node, input): (&str, &str),
    range: std::ops::RangeInclusive<i64>,
    start: Option<(&String, Option<&Resize>)>,
) -> Result<i64, Refusal> {
    if g.is_link(node, input) {
        let (measure, slot) = g.source(node, input)?;
        if g.class(&measure) == "GetImageSize"
            && let Some((loader, Some(resize))) = start
            && let super::PixelSize::Fixed { width, height, .. } = resize.size
            && width > 0
            && height > 0
        {
            let (image, measured) = loaded_picture(g, &measure, "image")?;
            let same =
                image == *loader && measured.as_ref().map(Resize::last) == Some(resize.last());
            let value = match slot {
                0 => Some(width),
                1 => Some(height),
                2 => Some(1),
                _ => None,
            };
            if let (true, Some(value)) = (same, value)
                && range.contains(&value)
            {
                return Ok(value);
            }
        }
    }
    super::camera::size(g, node, input, range)
}

/// Refuses a camera embedding of another video size than node `node`'s
/// (`size`: width, height, length), or of a length its model cannot group
/// by four latent frames (`1 + 4 k`, the node's widget steps).
fn fits_camera(
    g: &Graph<'_>,
    node: &str,
    camera: &Camera,
    size: (i64, i64, i64),
) -> Result<(), Refusal> {
    let (width, height, length) = camera.size;
    if camera.size != size {
        return Err(g.refuse(
            &camera.node,
            None,
            format!(
                "embeds a {width}x{height} video of {length} frames, but node {node} makes {}x{} of {}; its model reads the embedding at the video's size",
                size.0, size.1, size.2
            ),
            "give both nodes the same width, height and length (the embedding's outputs can drive the video node's)",
        ));
    }
    if (length - 1) % TEMPORAL != 0 {
        return Err(g.refuse(
            &camera.node,
            Some("length"),
            format!("is {length}, which the embedding does not group by four into latent frames (1, 5, 9, ...)"),
            "set a length of 1 more than a multiple of 4",
        ));
    }
    Ok(())
}

/// What `WanVaceToVideo` node `node` attaches (`None` for another class):
/// its strength, reference picture and control video (a loaded video's
/// frames as they are); control masks are refused.
fn vace(g: &Graph<'_>, node: &str) -> Result<Option<Vace>, Refusal> {
    if g.class(node) != VACE {
        return Ok(None);
    }
    if g.has(node, "control_masks") {
        return Err(g.refuse(
            node,
            Some("control_masks"),
            "masks the control video, which the lowering does not make yet; it makes VACE's context from the prompts, a reference picture and a whole control video".into(),
            "disconnect control_masks",
        ));
    }
    let reference = match g.has(node, "reference_image") {
        true => Some(loaded_image(g, node, "reference_image")?),
        false => None,
    };
    let control = match g.has(node, "control_video") {
        true => Some(control_video(g, node)?),
        false => None,
    };
    Ok(Some(Vace {
        strength: g.number_in(node, "strength", 0.0..=1000.0, "strength")?,
        reference,
        control,
    }))
}

/// The `LoadVideo` whose frames (through `GetVideoComponents`, nothing
/// between) `WanVaceToVideo` node `node` takes as its control video.
fn control_video(g: &Graph<'_>, node: &str) -> Result<String, Refusal> {
    let (source, slot) = g.source(node, "control_video")?;
    if g.class(&source) != super::video_input::COMPONENTS {
        return Err(g.refuse(
            node,
            Some("control_video"),
            format!("takes its control video from node {source} ({}); the lowering takes a loaded video's frames as they are (LoadVideo through GetVideoComponents)", g.class(&source)),
            "connect the images output of a GetVideoComponents of a LoadVideo",
        ));
    }
    super::video_input::loader(g, &source, ((node, "control_video"), slot, 0))
}

/// The node's CLIP vision embeddings: `clip_vision_output` (the start
/// picture's; `WanImageToVideo`, `WanFunInpaintToVideo`,
/// `HunyuanVideo15ImageToVideo`) or
/// `clip_vision_start_image` and `clip_vision_end_image`
/// (`WanFirstLastFrameToVideo`), each a `CLIPVisionEncode` of that
/// picture's `LoadImage` by one `CLIPVisionLoader` with one `crop`.
fn vision(
    g: &Graph<'_>,
    node: &str,
    (start, end): (&Option<String>, &Option<String>),
    start_resize: Option<&Resize>,
) -> Result<Option<FrameVision>, Refusal> {
    let inputs: &[(&str, &Option<String>)] = match g.class(node) {
        "WanFirstLastFrameToVideo" => &[
            ("clip_vision_start_image", start),
            ("clip_vision_end_image", end),
        ],
        _ => &[("clip_vision_output", start)],
    };
    let mut found: Option<FrameVision> = None;
    let mut encodes = [None, None];
    for (k, (input, picture)) in inputs.iter().enumerate() {
        if !g.has(node, input) {
            continue;
        }
        let (encode, _) = g.source(node, input)?;
        g.expect(&encode, &["CLIPVisionEncode"], input, (node, input))?;
        // The start picture as loaded, or through the node's own resize
        // of it (HunyuanVideo 1.5's).
        let (image, resize) = loaded_picture(g, &encode, "image")?;
        let resized = resize.is_some();
        let same_resize = match (&resize, start_resize) {
            (None, _) => true,
            (Some(r), Some(s)) => *input == "clip_vision_output" && r.last() == s.last(),
            (Some(_), None) => false,
        };
        if picture.as_ref() != Some(&image) || !same_resize {
            let which = if *input == "clip_vision_end_image" {
                "end"
            } else {
                "start"
            };
            return Err(g.refuse(
                &encode,
                Some("image"),
                format!("embeds another picture than node {node}'s {which} picture, which its `{input}` stands for; the lowering gives the denoiser embeddings of the node's own pictures"),
                &format!("embed the node's {which} picture (the same LoadImage)"),
            ));
        }
        let (loader, _) = g.source(&encode, "clip_vision")?;
        g.expect(
            &loader,
            &["CLIPVisionLoader"],
            "clip_vision",
            (&encode, "clip_vision"),
        )?;
        let crop = super::style::crop(g, &encode)?;
        let size = super::style::vision_size(g, &loader)?;
        if let Some(first) = &found
            && (first.loader != loader || first.crop != crop)
        {
            return Err(g.refuse(
                &encode,
                None,
                format!("embeds with another CLIP vision model or crop than the node's other embedding, node {}", encodes[0].clone().unwrap_or_default()),
                "embed both pictures with one CLIPVisionLoader and one crop",
            ));
        }
        found.get_or_insert(FrameVision {
            loader,
            crop,
            size,
            resized,
            state: match g.class(node) {
                HUNYUAN15 => "last_hidden_state",
                _ => "penultimate_hidden_states",
            },
            start: None,
            end: None,
        });
        encodes[k] = Some(encode);
    }
    let [start, end] = encodes;
    Ok(found.map(|v| FrameVision { start, end, ..v }))
}
