//! Pictures between nodes, in pixels: where the picture an input reads
//! comes from (a loaded image, or the decode of a sampler stage's latent),
//! through an optional upscale model (`ImageUpscaleWithModel`), then an
//! optional resize (see `resize`) and picture operations (`ImageInvert`,
//! `Canny`: see `picture_ops`). A sink shows such a picture, or two such
//! pictures stitched (`ImageStitch`, see [`Stitch`]); a `VAEEncode` of a
//! decode is a round trip through pixels (a hires fix by pixels, a
//! refiner fed a picture).

use super::super::graph::Graph;
use super::picture_ops;
use super::resize;
pub(in crate::comfyui::lower) use super::resize::{PixelSize, Resize};
use super::vae_source;
use super::video_input;
use super::walk::Walk;
use crate::comfyui::lower::Refusal;
use crate::comfyui::lower::parts::Axes;

/// The decodes a picture may come from (`VAEDecodeTiled` decodes the same
/// pictures in tiles, to save memory).
const DECODERS: &[&str] = &["VAEDecode", "VAEDecodeTiled"];

/// `ImageUpscaleWithModel` and the `UpscaleModelLoader` it runs, maybe on
/// a resized picture (an upscale of a picture scaled to a size first).
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct ModelUpscale {
    pub node: String,
    pub loader: String,
    /// A resize of the picture the model reads.
    pub before: Option<Resize>,
}

/// A picture in pixels and how it was made.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Pixels {
    pub origin: Origin,
    /// An upscale model run on the origin's picture.
    pub upscale: Option<ModelUpscale>,
    /// A resize after that.
    pub resize: Option<Resize>,
}

impl Pixels {
    /// A loaded picture, maybe resized.
    pub fn loaded(loader: String, resize: Option<Resize>) -> Pixels {
        Pixels {
            origin: Origin::Loaded(loader),
            upscale: None,
            resize,
        }
    }

    /// The `LoadImage` the picture comes from, if it is a loaded one.
    pub fn loader(&self) -> Option<&String> {
        match &self.origin {
            Origin::Loaded(loader) => Some(loader),
            Origin::Video(_) | Origin::Decoded { .. } | Origin::Stitched(_) => None,
        }
    }
}

/// ComfyUI's class that stitches two pictures.
const STITCH: &str = "ImageStitch";

/// Where `ImageStitch` puts the second picture.
const DIRECTIONS: [&str; 4] = ["right", "down", "left", "up"];

/// The spacing colours `ImageStitch` offers.
const COLOURS: [&str; 5] = ["white", "black", "red", "green", "blue"];

/// `ImageStitch`'s widest spacing.
const MAX_SPACING: i64 = 1024;

/// The most stitches one picture nests.
const MAX_STITCH_DEPTH: usize = 16;

/// The most stitch nodes one picture reads (one read twice counts twice).
const MAX_STITCHES: usize = 64;

/// How deep a walk is within stitches, and how many it has read.
#[derive(Default)]
struct Nesting {
    depth: usize,
    read: usize,
}

/// An `ImageStitch` of two pictures (built by `synth::stitch`): the
/// second beside the first (`right`, `left`) or under or over it (`down`,
/// `up`); where `match_image_size` the second is first resized by lanczos
/// to the first's height (or width) keeping its aspect (the other side
/// `int(side * aspect)`), else the smaller one is padded in the middle to
/// the other's height (or width) with the spacing colour's grey (0 for
/// red, green or blue); a strip of `spacing_width` (made even) in
/// `spacing_color` between them. Both pictures are of one batch size:
/// ComfyUI repeats the shorter batch's last picture, which the lowering
/// does not (refused where the graph fixes both sizes; a loaded picture's
/// is held to the policy's contract at run time). An `ImageStitch`
/// without a second picture returns its first (`fold::gives`).
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Stitch {
    pub node: String,
    /// One of [`DIRECTIONS`].
    pub direction: &'static str,
    /// Whether the second picture is resized to the first's side.
    pub match_size: bool,
    /// The strip between them in pixels, even.
    pub spacing: i64,
    /// One of [`COLOURS`].
    pub colour: &'static str,
    /// `image1`.
    pub first: Pixels,
    /// `image2`.
    pub second: Pixels,
}

impl Origin {
    /// The loaded pictures, loaded videos and decodes the picture is made
    /// of: itself, or a stitch's pictures' in order.
    pub fn leaves(&self) -> Vec<&Origin> {
        match self {
            Origin::Stitched(stitch) => {
                let mut leaves = stitch.first.origin.leaves();
                leaves.extend(stitch.second.origin.leaves());
                leaves
            }
            other => vec![other],
        }
    }
}

/// Reads `ImageStitch` node `node`, its pictures recognised through
/// `walk` within `nesting` (too deep or too many, as a loop makes them,
/// is refused), of one batch size where the graph fixes both.
fn stitch(
    g: &Graph<'_>,
    node: &str,
    walk: &mut Walk,
    nesting: &mut Nesting,
) -> Result<Stitch, Refusal> {
    nesting.read += 1;
    if nesting.depth >= MAX_STITCH_DEPTH || nesting.read > MAX_STITCHES {
        return Err(g.refuse(
            node,
            None,
            format!("is part of a loop of picture stitches, or of more than {MAX_STITCH_DEPTH} nested or {MAX_STITCHES} stitches"),
            "break the loop, or stitch fewer pictures",
        ));
    }
    let one_of = |name: &str, options: &[&'static str]| {
        let value = g.text(node, name)?;
        options
            .iter()
            .copied()
            .find(|o| *o == value)
            .ok_or_else(|| {
                g.refuse(
                    node,
                    Some(name),
                    format!("is '{value}', not one of {}", options.join(", ")),
                    &format!("choose one of {}", options.join(", ")),
                )
            })
    };
    let spacing = g.whole(node, "spacing_width", 0..=MAX_SPACING)?;
    let (direction, colour) = (
        one_of("direction", &DIRECTIONS)?,
        one_of("spacing_color", &COLOURS)?,
    );
    let match_size = g.boolean(node, "match_image_size")?;
    nesting.depth += 1;
    let first = stitched_picture(g, node, "image1", walk, nesting)?;
    let second = stitched_picture(g, node, "image2", walk, nesting)?;
    nesting.depth -= 1;
    if let (Some(a), Some(b)) = (rows(&first, walk), rows(&second, walk))
        && a != b
    {
        return Err(g.refuse(
            node,
            None,
            format!("stitches pictures of {a} and {b} rows; ComfyUI repeats the last picture of the shorter batch, which the lowering does not"),
            "give both pictures one batch size",
        ));
    }
    Ok(Stitch {
        node: node.to_string(),
        direction,
        match_size,
        spacing: spacing + spacing % 2,
        colour,
        first,
        second,
    })
}

/// The rows of `image` where the graph fixes them (a decode's batch);
/// `None` for a loaded picture or video, known only at run time.
fn rows(image: &Pixels, walk: &Walk) -> Option<i64> {
    match &image.origin {
        Origin::Decoded { stage, .. } => walk.batch(*stage),
        Origin::Stitched(stitch) => rows(&stitch.first, walk).or(rows(&stitch.second, walk)),
        Origin::Loaded(_) | Origin::Video(_) => None,
    }
}

/// The picture input `input` of stitch `node` reads: three channels of
/// a picture (a loaded one, a picture latent's decode, another stitch).
fn stitched_picture(
    g: &Graph<'_>,
    node: &str,
    input: &str,
    walk: &mut Walk,
    nesting: &mut Nesting,
) -> Result<Pixels, Refusal> {
    let image = pixels_within(g, node, input, walk, nesting)?;
    let made = match &image.origin {
        Origin::Video(loader) => Some((loader, "a loaded video's frames")),
        Origin::Decoded { stage, decode, .. } if walk.axes(*stage) != Axes::Image => {
            Some((decode, "a video or audio decode"))
        }
        Origin::Decoded { stage, decode, .. } if walk.picture_channels(*stage) != 3 => {
            Some((decode, "RGBA pictures"))
        }
        _ => None,
    };
    if let Some((at, what)) = made {
        return Err(g.refuse(
            at,
            None,
            format!("gives {what} that node {node} (ImageStitch) stitches; the lowering stitches pictures of three channels"),
            "stitch loaded pictures or decodes of picture latents",
        ));
    }
    Ok(image)
}

/// Where a picture starts.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) enum Origin {
    /// A `LoadImage` node (its picture is a workflow input).
    Loaded(String),
    /// The frames of a `LoadVideo` node (through `GetVideoComponents`):
    /// the video is a workflow input, its frames a batch of pictures.
    Video(String),
    /// The decode node `decode` of stage `stage`'s latent with VAE `vae`,
    /// maybe trimmed first; `pixel_space` where the VAE is ComfyUI's
    /// `pixel_space` (the latent is the picture itself, in -1..1).
    Decoded {
        decode: String,
        vae: String,
        stage: usize,
        trim: Option<Trim>,
        pixel_space: bool,
    },
    /// Two pictures stitched (`ImageStitch`), which a sink shows.
    Stitched(Box<Stitch>),
}

/// A decode of a stage's latent, as `Origin::Decoded` holds it.
pub(super) struct Decoded {
    pub decode: String,
    pub vae: String,
    pub stage: usize,
    pub trim: Option<Trim>,
    pub pixel_space: bool,
}

impl From<Decoded> for Origin {
    fn from(d: Decoded) -> Origin {
        Origin::Decoded {
            decode: d.decode,
            vae: d.vae,
            stage: d.stage,
            trim: d.trim,
            pixel_space: d.pixel_space,
        }
    }
}

/// A `TrimVideoLatent` between a decode and its sampler: the latent frames
/// it drops from the start (a VACE reference picture's).
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Trim {
    pub node: String,
    pub frames: i64,
    /// Whether it drops the last frames (`LTXVCropGuides`: the guide
    /// frames appended after the video's) rather than the first.
    pub end: bool,
}

/// The picture input `input` of `node` reads: a loaded one, a loaded
/// video's frames, a decode or a stitch of pictures, maybe upscaled and
/// resized.
pub(super) fn pixels(
    g: &Graph<'_>,
    node: &str,
    input: &str,
    walk: &mut Walk,
) -> Result<Pixels, Refusal> {
    pixels_within(g, node, input, walk, &mut Nesting::default())
}

/// [`pixels`] within the stitches of `nesting`.
fn pixels_within(
    g: &Graph<'_>,
    node: &str,
    input: &str,
    walk: &mut Walk,
    nesting: &mut Nesting,
) -> Result<Pixels, Refusal> {
    let Processing {
        at,
        from,
        upscale,
        resize,
    } = processing(g, node, input)?;
    if g.class(&at) == "LoadImage" {
        if g.source(&from.0, from.1)?.1 != 0 {
            return Err(g.refuse(
                &from.0,
                Some(from.1),
                format!("reads output 1 of node {at} (LoadImage's mask) as a picture"),
                "connect the LoadImage's IMAGE output",
            ));
        }
        return Ok(Pixels {
            origin: Origin::Loaded(at),
            upscale,
            resize,
        });
    }
    if g.class(&at) == STITCH {
        return Ok(Pixels {
            origin: Origin::Stitched(Box::new(stitch(g, &at, walk, nesting)?)),
            upscale,
            resize,
        });
    }
    if g.class(&at) == video_input::COMPONENTS {
        let (_, slot) = g.source(&from.0, from.1)?;
        let loader = video_input::loader(g, &at, ((&from.0, from.1), slot, 0))?;
        return Ok(Pixels {
            origin: Origin::Video(loader),
            upscale,
            resize,
        });
    }
    let classes = [DECODERS[0], DECODERS[1], "LoadImage"];
    let decoded = decoded(g, at, (&from.0, from.1), &classes, walk)?;
    Ok(Pixels {
        origin: decoded.into(),
        upscale,
        resize,
    })
}

/// Where a walk back through picture operations, a resize and an upscale
/// model ends: the node reached, the input (node and name) it feeds, the
/// upscale and the resize (carrying the operations).
struct Processing<'i> {
    at: String,
    from: (String, &'i str),
    upscale: Option<ModelUpscale>,
    resize: Option<Resize>,
}

/// Walks back from input `input` of `node` through picture operations
/// (`ImageInvert`, `Canny`), a resize, then an upscale model and a resize
/// before it; the operations ride on the resize (one of size `Same` where
/// none resizes).
fn processing<'i>(g: &Graph<'_>, node: &str, input: &'i str) -> Result<Processing<'i>, Refusal> {
    let (mut at, _) = g.source(node, input)?;
    let mut from = (node.to_string(), input);
    let mut then = Vec::new();
    while let Some(input) = picture_ops::picture_input(g.class(&at)) {
        if then.len() > g.nodes.len() {
            return Err(g.refuse(
                &at,
                None,
                "is part of a loop of picture operations".into(),
                "break the loop",
            ));
        }
        let op = picture_ops::read(g, &at, &then)?;
        then.push(op);
        let next = g.source(&at, input)?.0;
        from = (std::mem::replace(&mut at, next), input);
    }
    then.reverse();
    let mut resize = None;
    if let Some(input) = resize::picture_input(g.class(&at)) {
        resize = resize::read(g, &at)?;
        let next = g.source(&at, input)?.0;
        from = (std::mem::replace(&mut at, next), input);
    }
    let resize = match resize {
        Some(resize) => Some(Resize { then, ..resize }),
        None => Resize::operations(then),
    };
    let mut upscale = None;
    if g.class(&at) == "ImageUpscaleWithModel" {
        let (loader, _) = g.source(&at, "upscale_model")?;
        g.expect(
            &loader,
            &["UpscaleModelLoader"],
            "upscale_model",
            (&at, "upscale_model"),
        )?;
        let next = g.source(&at, "image")?.0;
        let node = std::mem::replace(&mut at, next);
        from = (node.clone(), "image");
        let mut before = None;
        if let Some(input) = resize::picture_input(g.class(&at)) {
            before = resize::read(g, &at)?;
            let next = g.source(&at, input)?.0;
            from = (std::mem::replace(&mut at, next), input);
        }
        upscale = Some(ModelUpscale {
            node,
            loader,
            before,
        });
    }
    Ok(Processing {
        at,
        from,
        upscale,
        resize,
    })
}

/// Decode node `at` (one of `classes`, else refused as the source of
/// input `from`): the node, its VAE, the stage whose latent it decodes and
/// a `TrimVideoLatent` between them.
pub(super) fn decoded(
    g: &Graph<'_>,
    at: String,
    from: (&str, &str),
    classes: &[&str],
    walk: &mut Walk,
) -> Result<Decoded, Refusal> {
    g.expect(&at, classes, from.1, from)?;
    let (mut sampler, mut slot) = g.source(&at, "samples")?;
    let mut reads = (at.clone(), "samples");
    let trim = match g.class(&sampler) {
        TRIM => {
            let trim = Trim {
                frames: trimmed_frames(g, &sampler)?,
                node: sampler.clone(),
                end: false,
            };
            (sampler, slot) = g.source(&trim.node, "samples")?;
            reads = (trim.node.clone(), "samples");
            Some(trim)
        }
        _ => None,
    };
    // LTX-2's guide frames dropped from the video part before decoding.
    let mut crop = None;
    if (g.class(&sampler), slot, &trim) == (super::av_nodes::CROP_GUIDES, 2, &None) {
        crop = Some(sampler.clone());
        reads = (sampler.clone(), "latent");
        (sampler, slot) = g.source(&reads.0, "latent")?;
    }
    let stage = match (g.class(&sampler), slot) {
        (super::av_nodes::SEPARATE, 0) => walk.separated(g, &sampler)?,
        _ => walk.sampled(g, &sampler, slot, (&reads.0, reads.1))?,
    };
    let trim = match crop {
        Some(node) => {
            let guides = walk.av_layout(stage).map_or(0, |layout| layout.guides);
            // It drops as many frames as its prompts carry guides.
            let prompt = g.source(&node, "positive")?;
            let from = (node.clone(), "positive".to_string());
            let carried = super::ltxv::carried_guides(g, prompt, from)?;
            if carried.len() as i64 != guides {
                return Err(g.refuse(
                    &node,
                    Some("positive"),
                    format!("drops the {} guide frames its prompts carry from a latent whose sampler appended {guides}", carried.len()),
                    "crop with the prompts of the LTXVAddGuide nodes that made the latent",
                ));
            }
            Some(Trim {
                node,
                frames: guides,
                end: true,
            })
        }
        None => trim,
    };
    // ComfyUI's VAEDecode reads a MiniMax H3 latent's video part itself.
    let whole_h3 =
        walk.av_layout(stage).map(|l| l.model) == Some(super::AvModel::MiniMaxH3) && trim.is_none();
    if walk.axes(stage) == Axes::AudioVideo
        && !whole_h3
        && (g.class(&sampler) != super::av_nodes::SEPARATE || trim.as_ref().is_some_and(|t| !t.end))
    {
        return Err(g.refuse(
            &at,
            Some("samples"),
            "decodes LTX-2's audio-video latent whole, or an audio-video latent trimmed; the lowering decodes the video part as sampled".into(),
            "decode the video output (0) of an LTXVSeparateAVLatent",
        ));
    }
    if let Some(trim) = trim.as_ref().filter(|t| !t.end) {
        trim_fits(g, trim, walk, stage)?;
    }
    let (vae, _) = g.source(&at, "vae")?;
    vae_source(g, &vae, walk.loader(stage), (&at, "vae"))?;
    let pixel_space = super::pixel_space(g, &vae);
    if pixel_space && walk.axes(stage) != Axes::Image {
        return Err(g.refuse(
            &vae,
            None,
            format!("decodes a video or audio latent with the pixel-space VAE (node {at}); the lowering takes pixel-space latents of pictures only"),
            "load the model's own VAE",
        ));
    }
    Ok(Decoded {
        decode: at,
        vae,
        stage,
        trim: trim.filter(|t| t.frames > 0),
        pixel_space,
    })
}

/// ComfyUI's `TrimVideoLatent`.
const TRIM: &str = "TrimVideoLatent";

/// The latent frames `TrimVideoLatent` node `node` drops: its
/// `trim_amount`, written or a `WanVaceToVideo`'s `trim_latent` (output 3:
/// 1 where it has a reference picture, else 0).
fn trimmed_frames(g: &Graph<'_>, node: &str) -> Result<i64, Refusal> {
    if g.is_link(node, "trim_amount") {
        let (source, slot) = g.source(node, "trim_amount")?;
        if g.class(&source) == super::frames::VACE && slot == 3 {
            return Ok(super::frames::read(g, &source)?.leading_frames());
        }
    }
    g.whole(node, "trim_amount", 0..=99_999)
}

/// Refuses trim `trim` of stage `stage`'s latent unless it is a video's
/// and keeps at least one latent frame (where the graph fixes them).
fn trim_fits(g: &Graph<'_>, trim: &Trim, walk: &Walk, stage: usize) -> Result<(), Refusal> {
    if walk.axes(stage) != Axes::Video {
        return Err(g.refuse(
            &trim.node,
            Some("samples"),
            "trims a picture or audio latent; TrimVideoLatent drops latent frames of a video"
                .into(),
            "remove the node",
        ));
    }
    match walk.latent_frames(stage) {
        Some(frames) if trim.frames >= frames => Err(g.refuse(
            &trim.node,
            Some("trim_amount"),
            format!(
                "drops {} latent frames of a latent of {frames}, leaving nothing to decode",
                trim.frames
            ),
            &format!("trim fewer than {frames} frames"),
        )),
        _ => Ok(()),
    }
}

/// The picture input `input` of `node` reads to encode or embed it: a
/// loaded one, or a decode of a picture latent (video frames are refused).
pub(super) fn picture(
    g: &Graph<'_>,
    node: &str,
    input: &str,
    walk: &mut Walk,
) -> Result<Pixels, Refusal> {
    let image = pixels(g, node, input, walk)?;
    if let Origin::Stitched(stitch) = &image.origin {
        return Err(g.refuse(
            &stitch.node,
            None,
            format!("stitches the pictures node {node} reads; the lowering stitches pictures a sink shows only"),
            "save the stitched picture and load it with LoadImage",
        ));
    }
    if let Origin::Video(loader) = &image.origin {
        return Err(g.refuse(
            loader,
            None,
            format!("gives the video frames that node {node} reads as a picture; the lowering shows a loaded video's frames in a video sink only"),
            "load one picture with LoadImage",
        ));
    }
    if let Origin::Decoded { stage, decode, .. } = &image.origin
        && walk.axes(*stage) != Axes::Image
    {
        return Err(g.refuse(
            decode,
            None,
            format!("decodes video frames or audio that node {node} reads as a picture; the lowering takes pictures through pixels only"),
            "keep video and audio latents within their own stages",
        ));
    }
    if let Origin::Decoded { stage, decode, .. } = &image.origin
        && walk.picture_channels(*stage) != 3
    {
        return Err(g.refuse(
            decode,
            None,
            format!("decodes pictures of {} channels (RGBA) that node {node} reads; the lowering gives RGBA pictures to image outputs only", walk.picture_channels(*stage)),
            "save the picture and load it with LoadImage",
        ));
    }
    Ok(image)
}

/// The `GetImageSize` whose width (output 0) and height (output 1) the
/// inputs `width` and `height` of `node` both read; `None` where they read
/// anything else (a written side included).
pub(super) fn measuring_node(g: &Graph<'_>, node: &str) -> Result<Option<String>, Refusal> {
    if !g.is_link(node, "width") || !g.is_link(node, "height") {
        return Ok(None);
    }
    let ((size, width_slot), (other, height_slot)) =
        (g.source(node, "width")?, g.source(node, "height")?);
    let one = g.class(&size) == "GetImageSize" && other == size;
    Ok((one && (width_slot, height_slot) == (0, 1)).then_some(size))
}

/// A `LoadImage` node and the resize (with its picture operations) on the
/// way from it, if any.
pub(super) type LoadedPicture = (String, Option<Resize>);

/// The `LoadImage` input `input` of `node` reads, maybe through a resize
/// and picture operations (no upscale model, no decode).
pub(super) fn loaded_picture(
    g: &Graph<'_>,
    node: &str,
    input: &str,
) -> Result<LoadedPicture, Refusal> {
    let Processing {
        at,
        from,
        upscale,
        resize,
    } = processing(g, node, input)?;
    if let Some(up) = upscale {
        return Err(g.refuse(
            &up.node,
            None,
            format!("runs an upscale model on the picture node {node} reads, which the lowering takes only from a LoadImage, maybe resized"),
            "save the upscaled picture and load it with LoadImage",
        ));
    }
    if g.class(&at) == "LoadImage" {
        let (_, slot) = g.source(&from.0, from.1)?;
        if slot == 0 {
            return Ok((at, resize));
        }
        return Err(g.refuse(
            &from.0,
            Some(from.1),
            format!("reads output {slot} of node {at} (LoadImage's mask) as a picture"),
            "connect the LoadImage's IMAGE output",
        ));
    }
    Err(Refusal {
        message: format!(
            "feeds `{}` of node {}; the importer takes this picture only from a LoadImage, maybe resized",
            from.1, from.0
        ),
        remedy: "save the processed picture and load it with LoadImage".into(),
        ..g.refuse(&at, None, String::new(), "")
    })
}
