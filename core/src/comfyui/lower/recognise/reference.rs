//! Reference pictures on a prompt: `ReferenceLatent` appends a latent to
//! the conditioning's `reference_latents` (Flux Kontext's, Flux 2's and
//! OmniGen 2's edits), which the model reads beside the sample; chained,
//! they append in order. `FluxKontextMultiReferenceLatentMethod` says how
//! the model places several of them. The lowering takes references that
//! are `VAEEncode`s of a loaded picture (maybe resized), with the stage's
//! VAE, and a Qwen image-edit encoder's own (see `vision`); and bounds
//! the loaded pictures a stage's prompts carry.

use super::super::graph::Graph;
use super::pixels::{Origin, Pixels, Resize, loaded_picture, measuring_node};
use super::{Conditioning, LatentSource, Plan, vae_source};
use crate::comfyui::lower::Refusal;
use crate::comfyui::lower::parts::Axes;

/// The most references one prompt may carry (ComfyUI's edit models take
/// a handful; each is a denoiser port).
pub(super) const MAX_REFERENCES: usize = 4;

/// The most loaded pictures (a `LoadImage` through one resize) a stage
/// may read: each is a workflow input, or a resize of one.
const MAX_PICTURES: usize = 4;

/// One node appending a reference (a `ReferenceLatent`, or a Qwen
/// image-edit encoder given a VAE) and the picture whose latent it
/// appends.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Reference {
    pub node: String,
    /// Its class.
    pub class: String,
    /// The node that encodes the picture (a `VAEEncode`, or the encoder).
    pub encode: String,
    /// The picture's `LoadImage`.
    pub loader: String,
    pub resize: Option<Resize>,
    /// The appending node's own resize after the graph's, before the
    /// encode (a Qwen image-edit encoder's).
    pub then: Option<Resize>,
}

/// A `FluxKontextMultiReferenceLatentMethod` node and its method
/// (`offset`, `index`, `index_timestep_zero`, or `uxo` for ComfyUI's
/// `uxo/uno`).
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Method {
    pub node: String,
    pub name: String,
}

/// The references on one prompt, in ComfyUI's order (the one nearest the
/// encoder first), and the method, if stated.
#[derive(Clone, Debug, Default, PartialEq)]
pub(in crate::comfyui::lower) struct References {
    pub latents: Vec<Reference>,
    pub method: Option<Method>,
}

/// Steps over a `ReferenceLatent` or `FluxKontextMultiReferenceLatentMethod`
/// at `node` (the walk's position, read by input `from`), recording it in
/// `references` (walked from the sampler, so nearer ones come first until
/// [`References::finish`]); whether it stepped. `loader` is the stage's
/// checkpoint, whose VAE (or a `VAELoader`) must encode each reference.
pub(super) fn step(
    g: &Graph<'_>,
    (node, slot, from): (&mut String, &mut i64, &mut (String, String)),
    references: &mut References,
    loader: &str,
) -> Result<bool, Refusal> {
    let class = g.class(node);
    if class != "ReferenceLatent" && class != "FluxKontextMultiReferenceLatentMethod" {
        return Ok(false);
    }
    g.first_output((&from.0, &from.1), node, *slot)?;
    let here = node.clone();
    if class == "FluxKontextMultiReferenceLatentMethod" {
        let name = g.text(&here, "reference_latents_method")?;
        let name = match name {
            "offset" | "index" | "index_timestep_zero" => name.to_string(),
            uxo if uxo.contains("uxo") || uxo.contains("uso") => "uxo".to_string(),
            other => {
                return Err(g.refuse(
                    &here,
                    Some("reference_latents_method"),
                    format!("is '{other}', not offset, index, uxo/uno or index_timestep_zero"),
                    "choose offset, index, uxo/uno or index_timestep_zero",
                ));
            }
        };
        // The one nearest the sampler wins, as ComfyUI sets it last.
        if references.method.is_none() {
            references.method = Some(Method {
                node: here.clone(),
                name,
            });
        }
    } else if g.has(&here, "latent") {
        references.push(g, reference(g, &here, loader)?)?;
    }
    *from = (here.clone(), "conditioning".to_string());
    (*node, *slot) = g.source(&here, "conditioning")?;
    Ok(true)
}

/// The `VAEEncode` of a loaded picture that `ReferenceLatent` node `node`
/// appends.
fn reference(g: &Graph<'_>, node: &str, loader: &str) -> Result<Reference, Refusal> {
    let (encode, slot) = g.source(node, "latent")?;
    g.expect(&encode, &["VAEEncode"], "latent", (node, "latent"))?;
    g.first_output((node, "latent"), &encode, slot)?;
    let (vae, _) = g.source(&encode, "vae")?;
    vae_source(g, &vae, loader, (&encode, "vae"))?;
    let (picture, resize) = loaded_picture(g, &encode, "pixels")?;
    Ok(Reference {
        node: node.to_string(),
        class: "ReferenceLatent".into(),
        encode,
        loader: picture,
        resize,
        then: None,
    })
}

impl References {
    /// Records `reference` (walking from the sampler), refusing one past
    /// [`MAX_REFERENCES`].
    fn push(&mut self, g: &Graph<'_>, reference: Reference) -> Result<(), Refusal> {
        if self.latents.len() == MAX_REFERENCES {
            return Err(g.refuse(
                &reference.node,
                None,
                format!(
                    "appends a reference past the {MAX_REFERENCES} the lowering gives a prompt"
                ),
                &format!("keep at most {MAX_REFERENCES} references on a prompt"),
            ));
        }
        self.latents.push(reference);
        Ok(())
    }

    /// Records the encoder's own references (the first appended, in
    /// order) and puts the references in ComfyUI's order.
    pub(super) fn finish(&mut self, g: &Graph<'_>, encoder: Vec<Reference>) -> Result<(), Refusal> {
        // Walked from the sampler, so the encoder's come last, reversed.
        for reference in encoder.into_iter().rev() {
            self.push(g, reference)?;
        }
        self.latents.reverse();
        Ok(())
    }
}

/// A loaded picture: its `LoadImage` and the resize on the way, if any.
pub(in crate::comfyui::lower) type Loaded<'p> = (&'p String, Option<&'p Resize>);

/// The one loaded picture a stage reads outside an encode of its own
/// latent: an edit node's, a sized empty latent's or its references'.
pub(in crate::comfyui::lower) fn stage_picture(plan: &Plan) -> Option<Loaded<'_>> {
    read_picture(&plan.latent, plan.conditionings())
}

/// The loaded picture the stage encodes itself: its latent's, else its
/// first `ReferenceLatent`'s (not the pictures an edit encoder resizes
/// itself, see `build::vision`).
pub(in crate::comfyui::lower) fn encoded_stage_picture(plan: &Plan) -> Option<Loaded<'_>> {
    latent_picture(&plan.latent).or_else(|| {
        plan.conditionings()
            .flat_map(|c| &c.references.latents)
            .find(|r| r.then.is_none())
            .map(|r| (&r.loader, r.resize.as_ref()))
    })
}

/// The loaded picture a stage with `latent` and `prompts` reads: its
/// latent's, else its prompts' (the first reference's or picture shown
/// to a text encoder, else the first a Wan image-to-video node makes its
/// video of).
fn read_picture<'p>(
    latent: &'p LatentSource,
    prompts: impl IntoIterator<Item = &'p Conditioning>,
) -> Option<Loaded<'p>> {
    let prompts: Vec<&Conditioning> = prompts.into_iter().collect();
    latent_picture(latent)
        .or_else(|| {
            prompt_pictures(prompts.iter().copied())
                .next()
                .map(|(_, _, p)| p)
        })
        .or_else(|| {
            frame_pictures(prompts.iter().copied())
                .first()
                .map(|loader| (*loader, None))
        })
}

/// The `LoadImage`s of the pictures Wan image-to-video nodes on `prompts`
/// start and end their videos with (or VACE's reference), once each.
pub(in crate::comfyui::lower) fn frame_pictures<'p>(
    prompts: impl IntoIterator<Item = &'p Conditioning>,
) -> Vec<&'p String> {
    let mut loaders: Vec<&String> = Vec::new();
    for frames in prompts.into_iter().filter_map(|c| c.frames.as_ref()) {
        for loader in frames.pictures() {
            if !loaders.contains(&loader) {
                loaders.push(loader);
            }
        }
    }
    loaders
}

/// A loaded picture a prompt carries: the node that reads it, what it
/// does with it (in words), and the picture.
pub(in crate::comfyui::lower) type PromptPicture<'p> = (&'p String, &'static str, Loaded<'p>);

/// The loaded pictures `prompts` carry: their references', then those
/// shown to their text encoders, then those their style tokens embed.
pub(in crate::comfyui::lower) fn prompt_pictures<'p>(
    prompts: impl IntoIterator<Item = &'p Conditioning>,
) -> impl Iterator<Item = PromptPicture<'p>> {
    let prompts: Vec<&Conditioning> = prompts.into_iter().collect();
    let references = prompts
        .clone()
        .into_iter()
        .flat_map(|c| &c.references.latents)
        .map(|r| {
            (
                &r.node,
                "appends a reference of",
                (&r.loader, r.resize.as_ref()),
            )
        });
    let seen = prompts
        .clone()
        .into_iter()
        .flat_map(|c| &c.vision)
        .map(|v| {
            (
                &v.node,
                "shows the text encoder",
                (&v.loader, v.resize.as_ref()),
            )
        });
    let styled = prompts
        .into_iter()
        .flat_map(|c| &c.styles)
        .map(|s| (&s.node, "embeds for style tokens", (&s.picture, None)));
    references.chain(seen).chain(styled)
}

/// Whether two loaded pictures are one: the same `LoadImage` through the
/// same resize node (or none).
fn same(a: Loaded<'_>, b: Loaded<'_>) -> bool {
    a.0 == b.0 && a.1.map(Resize::last) == b.1.map(Resize::last)
}

/// The loaded picture the stage's latent is made from, if it is one.
fn latent_picture(latent: &LatentSource) -> Option<Loaded<'_>> {
    match latent {
        LatentSource::Encoded { image, .. } | LatentSource::Edit { image, .. } => match image {
            Pixels {
                origin: Origin::Loaded(loader),
                upscale: None,
                resize,
            } => Some((loader, resize.as_ref())),
            _ => None,
        },
        LatentSource::Sized { loader, resize, .. } => Some((loader, resize.as_ref())),
        LatentSource::Inpaint { image, .. } => Some((image, None)),
        _ => None,
    }
}

/// The most references any of the plan's prompts carries: the denoiser's
/// reference ports.
pub(in crate::comfyui::lower) fn most(plan: &Plan) -> usize {
    plan.conditionings()
        .map(|c| c.references.latents.len())
        .max()
        .unwrap_or(0)
}

/// Refuses references the lowering cannot give the denoiser: on a video
/// or audio latent (but MiniMax H3's keyframes on its own), on a stage encoding an earlier stage's picture, of
/// more loaded pictures than [`MAX_PICTURES`], appended by edit encoders
/// at different sizes, or placed by different methods on different
/// prompts. A prompt
/// with fewer references than another is allowed (it passes empty ones).
pub(super) fn agree(
    g: &Graph<'_>,
    prompts: &[&Conditioning],
    latent: &LatentSource,
    axes: Axes,
) -> Result<(), Refusal> {
    let Some((first, first_does, first_picture)) = prompt_pictures(prompts.iter().copied()).next()
    else {
        return Ok(());
    };
    // MiniMax H3's keyframe pictures ride on its audio-video latent's prompt.
    let keyframes = axes == Axes::AudioVideo
        && prompt_pictures(prompts.iter().copied())
            .all(|(node, _, _)| g.class(node) == super::av_nodes::H3_IMAGE_TO_VIDEO);
    if axes != Axes::Image && !keyframes {
        return Err(g.refuse(
            first,
            None,
            "gives a picture to a video or audio sampler's prompt; the lowering gives prompt pictures to picture models and MiniMax H3's keyframes only".into(),
            "use reference pictures with a picture sampler",
        ));
    }
    if let Some(pad) = latent.pad()
        && let Some((node, does, _)) =
            prompt_pictures(prompts.iter().copied()).find(|(_, _, p)| *p.0 == pad.loader)
    {
        return Err(g.refuse(
            node,
            None,
            format!("{does} node {}'s picture, which node {} pads for outpainting; the lowering gives the stage that LoadImage padded", pad.loader, pad.node),
            "load the picture for this node with a LoadImage of its own",
        ));
    }
    let stage = match latent {
        LatentSource::Encoded { image, .. } | LatentSource::Edit { image, .. }
            if !matches!(image.origin, Origin::Loaded(_)) || image.upscale.is_some() =>
        {
            return Err(g.refuse(
                first,
                None,
                format!("{first_does} a loaded picture in a stage that encodes a picture made before it (an earlier stage's, or one through an upscale model); the lowering takes prompt pictures of the stage's loaded picture only"),
                "start the stage from an empty latent or the loaded picture",
            ));
        }
        // A latent sized by the encoder's own resize of its first
        // picture reads that loaded picture, as its references do.
        LatentSource::Sized {
            size,
            loader,
            resize: Some(resize),
            ..
        } if resize.node == *size => Some((loader, None)),
        other => latent_picture(other),
    };
    let mut pictures = vec![stage.unwrap_or(first_picture)];
    for (node, does, picture) in prompt_pictures(prompts.iter().copied()) {
        if pictures.iter().any(|p| same(*p, picture)) {
            continue;
        }
        pictures.push(picture);
        if pictures.len() > MAX_PICTURES {
            return Err(g.refuse(
                node,
                None,
                format!("{does} a loaded picture past the {MAX_PICTURES} the lowering gives a stage"),
                &format!("read at most {MAX_PICTURES} loaded pictures (each LoadImage through one resize) in a stage"),
            ));
        }
    }
    // An edit encoder's references are keyed by picture alone (see
    // `build::reference`): one size for each picture of a stage's.
    let resized: Vec<(&Reference, &Resize)> = prompts
        .iter()
        .flat_map(|c| &c.references.latents)
        .filter_map(|r| r.then.as_ref().map(|then| (r, then)))
        .collect();
    let same_picture = |a: &Reference, b: &Reference| a.loader == b.loader && a.resize == b.resize;
    if let Some((first, other)) = resized.iter().find_map(|(first, size)| {
        resized
            .iter()
            .find(|(r, then)| same_picture(r, first) && then.size != size.size)
            .map(|(other, _)| (first, other))
    }) {
        return Err(g.refuse(
            &other.node,
            None,
            match other.node == first.node {
                true => format!("appends the latent of node {}'s picture at two sizes; the lowering encodes each picture at one size in a stage", first.loader),
                false => format!("appends the latent of node {}'s picture at another size than node {} does; the lowering encodes each picture at one size in a stage", first.loader, first.node),
            },
            "use one edit encoder class on every prompt",
        ));
    }
    let mut methods = prompts
        .iter()
        .filter(|c| !c.references.latents.is_empty())
        .map(|c| &c.references.method);
    let method = methods.next().cloned().flatten();
    if let Some(other) =
        methods.find(|m| m.as_ref().map(|m| &m.name) != method.as_ref().map(|m| &m.name))
    {
        let node = other
            .as_ref()
            .or(method.as_ref())
            .map(|m| m.node.clone())
            .unwrap_or_default();
        return Err(g.refuse(
            &node,
            Some("reference_latents_method"),
            "places the references of one prompt otherwise than another prompt's; the denoiser places every prompt's the same way".into(),
            "set the same method on every prompt (or on none)",
        ));
    }
    Ok(())
}

/// Refuses a `Flux2Scheduler` (node `scheduler`) whose width and height
/// are not one `GetImageSize`'s of the stage's loaded picture (its
/// latent's or its references'), which the schedule policies measure at
/// run time, or that schedules a model that does not sample by flow.
pub(super) fn measured(
    g: &Graph<'_>,
    scheduler: &str,
    (latent, prompts): (&LatentSource, &[&Conditioning]),
    flow: bool,
) -> Result<(), Refusal> {
    let refuse = |message: String| {
        Err(g.refuse(
            scheduler,
            Some("width"),
            message,
            "write the width and height, or take them from one GetImageSize of the stage's picture",
        ))
    };
    let Some(size) = measuring_node(g, scheduler)? else {
        return refuse("takes its width and height from other nodes; the lowering measures them with one GetImageSize (outputs 0 and 1)".into());
    };
    if !flow {
        return refuse("measures the picture for a model that does not sample by flow, whose schedule the lowering computes at import only".into());
    }
    let (loader, resize) = loaded_picture(g, &size, "image")?;
    let stage = read_picture(latent, prompts.iter().copied());
    let measured = (&loader, resize.as_ref());
    match stage.is_some_and(|stage| same(stage, measured)) {
        true => Ok(()),
        false => refuse(format!(
            "measures node {loader}'s picture, which is not the one the stage reads (its latent's or its references')"
        )),
    }
}
