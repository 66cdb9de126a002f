//! The latent a sampler starts from: an empty latent, an encoded (and
//! maybe masked) picture, or an earlier sampler's result, maybe upscaled
//! or composited with others'.

use super::super::graph::Graph;
use super::audio;
use super::composite::{Composite, composite};
use super::latent_sizes::{VideoLatent, video_latent};
use super::outpaint::{self, Pad};
use super::pixels::{LoadedPicture, Pixels, Resize, picture};
use super::walk::Walk;
use super::{
    EDIT_NODES, MAX_BATCH, MAX_RESOLUTION, PIXEL_CHANNELS, SAMPLER_CLASSES, SVD_CONDITIONING,
    loaded_image, upscale_method, vae_source,
};
use crate::comfyui::lower::Refusal;
use crate::comfyui::lower::parts::Axes;
use crate::comfyui::synth::upscale::LATENT_METHODS;

/// ComfyUI's own limit on batch size.
const LATENT_SOURCES: &[&str] = &[
    "EmptyLatentImage",
    "EmptySD3LatentImage",
    "EmptyFlux2LatentImage",
    "EmptyChromaRadianceLatentImage",
    "EmptyHunyuanLatentVideo",
    "EmptyHunyuanVideo15Latent",
    "EmptyMochiLatentVideo",
    "EmptyCosmosLatentVideo",
    "EmptyLTXVLatentVideo",
    "Wan22ImageToVideoLatent",
    "VAEEncode",
    "VAEEncodeForInpaint",
    "SetLatentNoiseMask",
    "LatentComposite",
    "InstructPixToPixConditioning",
    "InpaintModelConditioning",
];
/// Latent upscalers between two sampler stages.
const UPSCALERS: &[&str] = &["LatentUpscale", "LatentUpscaleBy"];

/// Where the sampler's starting latent comes from.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) enum LatentSource {
    /// `EmptyLatentImage` / `EmptySD3LatentImage`, or an empty video
    /// latent (`frames` set).
    Empty {
        node: String,
        width: i64,
        height: i64,
        batch: i64,
        channels: i64,
        /// Pixels per latent cell along height and width.
        scale: i64,
        frames: Option<Frames>,
    },
    /// An empty picture latent whose width and height a `GetImageSize`
    /// (`size`) takes from a loaded picture (maybe resized): its latent is
    /// `height // scale` by `width // scale` cells of that picture.
    Sized {
        node: String,
        size: String,
        loader: String,
        resize: Option<Resize>,
        batch: i64,
        channels: i64,
        scale: i64,
    },
    /// `VAEEncode` of a picture (a loaded one, or an earlier stage's
    /// decode), optionally masked by `SetLatentNoiseMask` (`mask`: the
    /// mask's loader and the mask node).
    Encoded {
        encode: String,
        image: Pixels,
        mask: Option<Mask>,
    },
    /// The latent of a node that also attaches a picture to the prompts
    /// (the denoiser takes it beside the sample): `InstructPixToPixConditioning`'s,
    /// zeros the size of its picture's latent, or
    /// `InpaintModelConditioning`'s (`inpaint` set), the picture encoded.
    /// `image` is the picture: a `LoadImage`'s, maybe resized, or (not
    /// under a mask) an earlier stage's decode.
    Edit {
        node: String,
        image: Pixels,
        inpaint: Option<EditInpaint>,
    },
    /// `VAEEncodeForInpaint`: the masked pixels are greyed before encoding.
    Inpaint {
        encode: String,
        image: String,
        mask: Mask,
        grow_mask_by: i64,
    },
    /// The latent an earlier sampler stage returns (a refiner's or a hires
    /// fix's input), maybe upscaled.
    Stage {
        /// The stage's index in the chain.
        stage: usize,
        upscale: Option<Upscale>,
    },
    /// `LatentComposite`: an earlier stage's latent with others pasted on
    /// it in turn.
    Composite(Composite),
    /// `EmptyLatentAudio`: `length` steps of Stable Audio's latent.
    Audio {
        node: String,
        length: i64,
        batch: i64,
    },
}

impl LatentSource {
    /// The pad an inpainting node reads its picture and mask through (an
    /// outpainting), if any.
    pub(in crate::comfyui::lower) fn pad(&self) -> Option<&Pad> {
        match self {
            LatentSource::Edit {
                inpaint:
                    Some(EditInpaint {
                        mask: Mask { pad: Some(pad), .. },
                        ..
                    }),
                ..
            }
            | LatentSource::Inpaint {
                mask: Mask { pad: Some(pad), .. },
                ..
            } => Some(pad),
            _ => None,
        }
    }

    /// The latent as ComfyUI corrects an empty picture latent for a
    /// model whose latents are `cell` pixels a cell (Qwen-Image 2.1's 16
    /// under an `EmptyLatentImage`'s 8): its cells resized by
    /// `scale / cell`, rounded half to even as Python's `round`. Refused:
    /// another empty latent node of other cells, and one sized at run time.
    pub(in crate::comfyui::lower) fn in_cells_of(
        mut self,
        g: &Graph<'_>,
        cell: Option<i64>,
    ) -> Result<Self, Refusal> {
        let Some(cell) = cell else {
            return Ok(self);
        };
        match &mut self {
            LatentSource::Empty {
                node,
                width,
                height,
                scale,
                frames: None,
                ..
            } if *scale != cell && g.class(node) == "EmptyLatentImage" => {
                let side = |pixels: i64| {
                    let cells = (pixels / *scale) as f64 * *scale as f64 / cell as f64;
                    (super::round_half_even(cells) as i64).max(1) * cell
                };
                (*width, *height, *scale) = (side(*width), side(*height), cell);
            }
            LatentSource::Empty { node, scale, .. } | LatentSource::Sized { node, scale, .. }
                if *scale != cell =>
            {
                return Err(g.refuse(
                    node,
                    None,
                    format!("makes an empty latent of {scale}-pixel cells for a model whose cells are {cell} pixels, which ComfyUI resizes; the lowering resizes an EmptyLatentImage of written size only"),
                    "use an EmptyLatentImage with a written width and height",
                ));
            }
            _ => {}
        }
        Ok(self)
    }
}

/// The time axis of an empty video latent: `(length - 1) / temporal + 1`
/// latent frames, as ComfyUI's video latent nodes make, after `leading`
/// ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Frames {
    /// The node's `length`: the video frames asked for (a video VAE
    /// decodes `(latent frames - 1) * temporal + 1`, at most this).
    pub length: i64,
    /// Video frames per latent frame (after the first).
    pub temporal: i64,
    /// Latent frames ahead of the video's (a VACE reference picture's).
    pub leading: i64,
}

/// `LatentUpscale` / `LatentUpscaleBy` between two sampler stages.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Upscale {
    pub node: String,
    /// ComfyUI's upscale method (one of `synth::upscale::LATENT_METHODS`).
    pub method: String,
    pub size: UpscaleSize,
}

/// How an upscale finds the new latent size.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) enum UpscaleSize {
    /// `LatentUpscale`: fixed latent extents (the pixel sides over 8).
    Fixed { width: i64, height: i64 },
    /// `LatentUpscaleBy`: each side times the factor, rounded.
    Scale(f64),
}

/// `InpaintModelConditioning`'s mask: the prompts carry the picture
/// greyed under it and the mask itself; `noise_mask` also masks the latent
/// at every step.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct EditInpaint {
    pub mask: Mask,
    pub noise_mask: bool,
}

/// A mask applied at every step.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Mask {
    /// The node that loads it (`LoadImage` slot 1 or `LoadImageMask`) or
    /// makes it (`ImagePadForOutpaint`).
    pub loader: String,
    /// `SetLatentNoiseMask`, when that applies it.
    pub setter: Option<String>,
    /// The pad that makes it, and the picture the masking node reads.
    pub pad: Option<Pad>,
}

fn mask(g: &Graph<'_>, node: &str) -> Result<Mask, Refusal> {
    let (loader, slot) = g.source(node, "mask")?;
    let ok = match g.class(&loader) {
        "LoadImage" => slot == 1,
        "LoadImageMask" => true,
        outpaint::PAD => slot == 1,
        _ => false,
    };
    if !ok {
        return Err(Refusal {
            message: format!(
                "feeds `mask` of node {node}; the importer takes masks only from LoadImage's MASK output, LoadImageMask or ImagePadForOutpaint's MASK output"
            ),
            remedy: "save the mask and load it with LoadImageMask".into(),
            ..g.refuse(&loader, None, String::new(), "")
        });
    }
    let pad = match g.class(&loader) {
        outpaint::PAD => Some(outpaint::read(g, &loader)?),
        _ => None,
    };
    Ok(Mask {
        loader,
        setter: None,
        pad,
    })
}

/// Where the latent input `input` of node `reader` (a sampler's
/// `latent_image`) reads comes from; an earlier sampler's (maybe
/// upscaled) is recognised as its own stage through `walk`.
pub(super) fn latent_source(
    g: &Graph<'_>,
    (reader, input): (&str, &str),
    loader: &str,
    walk: &mut Walk,
) -> Result<LatentSource, Refusal> {
    let (node, slot) = g.source(reader, input)?;
    if SAMPLER_CLASSES.contains(&g.class(&node)) {
        let stage = walk.sampled(g, &node, slot, (reader, input))?;
        return Ok(LatentSource::Stage {
            stage,
            upscale: None,
        });
    }
    if UPSCALERS.contains(&g.class(&node)) {
        let (from, slot) = g.source(&node, "samples")?;
        let upscale = upscale(g, &node)?;
        let stage = walk.sampled(g, &from, slot, (&node, "samples"))?;
        if upscale.is_some() && walk.axes(stage) != Axes::Image {
            return Err(g.refuse(
                &node,
                Some("samples"),
                "resizes a video or audio latent; the lowering resizes picture latents only".into(),
                "make the video or sound at its final size",
            ));
        }
        return Ok(LatentSource::Stage { stage, upscale });
    }
    if g.class(&node) == "LatentComposite" {
        return composite(g, &node, walk).map(LatentSource::Composite);
    }
    if g.class(&node) == SVD_CONDITIONING && slot == 2 {
        return svd_latent(g, &node);
    }
    if super::paired::is_paired(g.class(&node)) && slot == 2 {
        return super::paired::latent(g, &node);
    }
    if super::frames::FRAMES_NODES.contains(&g.class(&node)) && slot == 2 {
        return wan_latent(g, &node);
    }
    if g.class(&node) == "EmptyLatentAudio" {
        let seconds = g.number_in(&node, "seconds", 1.0..=1000.0, "duration")?;
        return Ok(LatentSource::Audio {
            length: audio::latent_length(seconds),
            batch: g.whole(&node, "batch_size", 1..=MAX_BATCH)?,
            node,
        });
    }
    if let Some(video) = video_latent(g.class(&node)) {
        let class = g.class(&node);
        let conditioning = [super::held::CONDITIONING, super::latent_sizes::KANDINSKY5];
        if conditioning.contains(&class) && slot != 2 {
            return Err(g.refuse(
                reader,
                Some(input),
                format!("reads output {slot} of node {node} ({class}) as its latent; its empty latent is output 2"),
                "connect the latent output",
            ));
        }
        return empty_video(g, &node, video);
    }
    g.expect(&node, LATENT_SOURCES, input, (reader, input))?;
    let vae = |encode: &str| -> Result<(), Refusal> {
        let (vae, _) = g.source(encode, "vae")?;
        vae_source(g, &vae, loader, (encode, "vae"))
    };
    let encoded = |encode: &str| -> Result<String, Refusal> {
        vae(encode)?;
        loaded_image(g, encode, "pixels")
    };
    let mut round_trip = |encode: &str| -> Result<Pixels, Refusal> {
        vae(encode)?;
        picture(g, encode, "pixels", walk)
    };
    Ok(match g.class(&node) {
        class @ ("EmptyLatentImage"
        | "EmptySD3LatentImage"
        | "EmptyFlux2LatentImage"
        | "EmptyChromaRadianceLatentImage") => {
            // Channels and pixels per cell: SD's, SD3's (and Flux's),
            // Flux 2's, a pixel-space model's picture (Chroma Radiance's).
            let (channels, scale) = match class {
                "EmptyLatentImage" => (4, 8),
                "EmptySD3LatentImage" => (16, 8),
                "EmptyChromaRadianceLatentImage" => (PIXEL_CHANNELS, 1),
                _ => (128, 16),
            };
            if let Some((size, (loader, resize))) = sized_by(g, &node)? {
                return Ok(LatentSource::Sized {
                    batch: g.whole(&node, "batch_size", 1..=MAX_BATCH)?,
                    node,
                    size,
                    loader,
                    resize,
                    channels,
                    scale,
                });
            }
            LatentSource::Empty {
                width: g.whole(&node, "width", scale..=MAX_RESOLUTION)?,
                height: g.whole(&node, "height", scale..=MAX_RESOLUTION)?,
                batch: g.whole(&node, "batch_size", 1..=MAX_BATCH)?,
                channels,
                scale,
                frames: None,
                node,
            }
        }
        "VAEEncode" => LatentSource::Encoded {
            image: round_trip(&node)?,
            encode: node,
            mask: None,
        },
        class if EDIT_NODES.contains(&class) => {
            if slot != 2 {
                return Err(g.refuse(
                    reader,
                    Some(input),
                    format!("reads output {slot} of node {node}, a conditioning, as its latent"),
                    "connect latent_image to the node's latent output",
                ));
            }
            let inpaint = match class {
                "InpaintModelConditioning" => Some(EditInpaint {
                    mask: mask(g, &node)?,
                    // Graphs saved before the input existed always masked.
                    noise_mask: match g.has(&node, "noise_mask") {
                        false => true,
                        true => g.boolean(&node, "noise_mask")?,
                    },
                }),
                _ => None,
            };
            let image = match &inpaint {
                Some(EditInpaint {
                    mask: Mask { pad: Some(pad), .. },
                    ..
                }) => {
                    vae(&node)?;
                    Pixels::loaded(outpaint::padded_picture(g, &node, pad)?, None)
                }
                Some(_) => Pixels::loaded(encoded(&node)?, None),
                None => round_trip(&node)?,
            };
            LatentSource::Edit {
                image,
                node,
                inpaint,
            }
        }
        "VAEEncodeForInpaint" => {
            let mask = mask(g, &node)?;
            let image = match &mask.pad {
                Some(pad) => {
                    vae(&node)?;
                    outpaint::padded_picture(g, &node, pad)?
                }
                None => encoded(&node)?,
            };
            LatentSource::Inpaint {
                image,
                mask,
                grow_mask_by: if g.has(&node, "grow_mask_by") {
                    g.whole(&node, "grow_mask_by", 0..=64)?
                } else {
                    6
                },
                encode: node,
            }
        }
        _ => {
            let (encode, _) = g.source(&node, "samples")?;
            g.expect(&encode, &["VAEEncode"], "samples", (&node, "samples"))?;
            let mut m = mask(g, &node)?;
            if m.pad.is_some() {
                return Err(g.refuse(
                    &m.loader,
                    None,
                    format!("masks the latent of node {node} (SetLatentNoiseMask) with a pad's mask; the lowering pads the picture an inpainting node reads"),
                    "feed the pad's picture and mask to InpaintModelConditioning or VAEEncodeForInpaint",
                ));
            }
            m.setter = Some(node);
            LatentSource::Encoded {
                image: round_trip(&encode)?,
                encode,
                mask: Some(m),
            }
        }
    })
}

/// The `GetImageSize` node whose width (output 0) and height (output 1)
/// empty latent `node` takes, and the loaded picture it measures; `None`
/// where the sides are written.
fn sized_by(g: &Graph<'_>, node: &str) -> Result<Option<(String, LoadedPicture)>, Refusal> {
    if !g.is_link(node, "width") && !g.is_link(node, "height") {
        return Ok(None);
    }
    let Some(size) = super::pixels::measuring_node(g, node)? else {
        return Err(g.refuse(
            node,
            Some("width"),
            "takes its width and height from other nodes; the lowering sizes an empty latent by the width and height of one GetImageSize".into(),
            "write the sides, or take them from one GetImageSize",
        ));
    };
    let picture = super::pixels::loaded_picture(g, &size, "image")?;
    Ok(Some((size, picture)))
}

/// The empty video latent (output 2) of `SVD_img2vid_Conditioning` node
/// `node`: `video_frames` frames, 4 channels, 8 pixels a cell.
fn svd_latent(g: &Graph<'_>, node: &str) -> Result<LatentSource, Refusal> {
    Ok(LatentSource::Empty {
        node: node.to_string(),
        width: g.whole(node, "width", 16..=MAX_RESOLUTION)?,
        height: g.whole(node, "height", 16..=MAX_RESOLUTION)?,
        batch: 1,
        channels: 4,
        scale: 8,
        frames: Some(Frames {
            length: g.whole(node, "video_frames", 1..=4096)?,
            temporal: 1,
            leading: 0,
        }),
    })
}

/// The empty video latent (output 2) of Wan image-to-video node `node`.
fn wan_latent(g: &Graph<'_>, node: &str) -> Result<LatentSource, Refusal> {
    let frames = super::frames::read(g, node)?;
    let leading = frames.leading_frames();
    Ok(LatentSource::Empty {
        node: frames.node,
        width: frames.width,
        height: frames.height,
        batch: frames.batch,
        channels: frames.channels,
        scale: frames.scale,
        frames: Some(Frames {
            length: frames.length,
            temporal: super::frames::TEMPORAL,
            leading,
        }),
    })
}

/// The empty video latent of `node`, a `video` class; a start image (an
/// image-to-video latent) is refused.
fn empty_video(g: &Graph<'_>, node: &str, video: &VideoLatent) -> Result<LatentSource, Refusal> {
    if g.has(node, "start_image") {
        return Err(super::latent_sizes::start_picture(g, node));
    }
    let batch = g.whole(node, "batch_size", 1..=MAX_BATCH)?;
    if video.class == "Wan22ImageToVideoLatent" && batch != 1 {
        // Whether ComfyUI repeats this node's latent by batch_size without
        // a start image is not settled across its versions.
        return Err(g.refuse(
            node,
            Some("batch_size"),
            format!("asks for {batch} videos; the lowering makes this class's latent for one"),
            "set batch_size to 1 and run the package once per video",
        ));
    }
    let side = video.min_side..=MAX_RESOLUTION;
    Ok(LatentSource::Empty {
        width: g.whole(node, "width", side.clone())?,
        height: g.whole(node, "height", side)?,
        batch,
        channels: video.channels,
        scale: video.scale,
        frames: Some(Frames {
            length: g.whole(node, "length", 1..=MAX_RESOLUTION)?,
            temporal: video.temporal,
            leading: 0,
        }),
        node: node.to_string(),
    })
}

/// The resize of upscaler `node`, `None` where it keeps the size
/// (`LatentUpscale` with width and height 0).
fn upscale(g: &Graph<'_>, node: &str) -> Result<Option<Upscale>, Refusal> {
    let method = upscale_method(g, node, ("latents", LATENT_METHODS))?;
    let size = if g.class(node) == "LatentUpscaleBy" {
        UpscaleSize::Scale(g.number_in(node, "scale_by", 0.01..=8.0, "factor")?)
    } else {
        let crop = g.text(node, "crop")?;
        if crop != "disabled" {
            return Err(g.refuse(
                node,
                Some("crop"),
                format!("is '{crop}'; the lowering resizes whole latents and does not crop them to the new aspect"),
                "set crop to disabled",
            ));
        }
        let width = g.whole(node, "width", 0..=MAX_RESOLUTION)?;
        let height = g.whole(node, "height", 0..=MAX_RESOLUTION)?;
        match (width, height) {
            (0, 0) => return Ok(None),
            (0, _) | (_, 0) => {
                return Err(g.refuse(
                    node,
                    Some(if width == 0 { "width" } else { "height" }),
                    "is 0, which asks for the side from the latent's aspect; the lowering takes both sides".into(),
                    "set both width and height",
                ));
            }
            // ComfyUI's: at least 64 pixels a side, then the latent's
            // extents are the pixel sides over 8.
            _ => UpscaleSize::Fixed {
                width: width.max(64) / 8,
                height: height.max(64) / 8,
            },
        }
    };
    Ok(Some(Upscale {
        node: node.to_string(),
        method: method.to_string(),
        size,
    }))
}

impl super::Plan {
    /// The node of the first frame the stage holds, if it holds any: its
    /// first frame's picture (`LTXVImgToVideoInplace`, `LTXVImgToVideo`),
    /// else its first guide (`LTXVAddGuide`).
    pub fn holding(&self) -> Option<&String> {
        self.held_frames().next().map(|frame| &frame.node)
    }

    /// The frames the stage holds: its first frame's picture, then its
    /// guides in the order they are appended.
    pub fn held_frames(&self) -> impl Iterator<Item = &super::HeldFrame> {
        let guides = self.audio.iter().flat_map(|av| &av.guides);
        self.held.iter().chain(guides.map(|g| &g.frame))
    }

    /// The noise mask the stage blends its latent by after every step, and
    /// how far it grows (`VAEEncodeForInpaint`'s `grow_mask_by`).
    pub fn noise_mask(&self) -> Option<(&Mask, i64)> {
        match &self.latent {
            LatentSource::Encoded { mask: Some(m), .. } => Some((m, 0)),
            LatentSource::Inpaint {
                mask, grow_mask_by, ..
            } => Some((mask, *grow_mask_by)),
            LatentSource::Edit {
                inpaint: Some(inpaint),
                ..
            } if inpaint.noise_mask => Some((&inpaint.mask, 0)),
            _ => None,
        }
    }
}
