//! The pictures of Qwen's image-edit encoders (see `recognise::vision`),
//! as setup steps from each loaded picture (its input, see `pictures`),
//! through the graph's resize (`source_scale`, not cut to whole 8s: the
//! encoder resizes the picture the graph gives it):
//! - `vision.pixels` (`vision_scale`), a picture the text encoder's
//!   language model sees, its input `image` (then `image_2`, ...);
//! - `reference.pixels` (`reference_scale`, cut to whole 8s as a VAE
//!   encode cuts), a picture whose latent the encoder appends as a
//!   reference.
//!
//! Each picture's values and policies are numbered apart (`vision_2`, ...).

use super::super::parts::{Steps, contract, invoke};
use super::super::recognise::{
    H3_IMAGE_TO_VIDEO, MAGE, PixelSize, Plan, QWEN21, Resize, reference,
};
use super::StageNames;
use super::pictures::{self, Key, key, numbered};
use super::scales::resize_policy;
use serde_json::{Map, Value, json};

/// The values the text encoder and the reference encodes read.
pub(super) struct Pictures {
    /// The stage's own picture through the graph's resize, uncut, where
    /// the graph resizes it (see `pixels::loaded`).
    pub source: Option<String>,
    /// Each picture shown to the text encoder.
    pub seen: Vec<(Key, String)>,
    /// Each picture whose latent an edit encoder appends, ready to encode.
    pub references: Vec<(Key, String)>,
}

/// The text encoder's picture port `n` (from 0): `image`, `image_2`, ...
pub(super) fn port_name(n: usize) -> String {
    numbered("image", n)
}

/// The contract of the text encoder's picture port `n`, with extents of
/// its own (`vision_height`, `vision_2_height`, ...): the pictures may
/// differ in size.
pub(super) fn port(n: usize) -> Value {
    let side = |s: &str| format!("{}_{s}", numbered("vision", n));
    contract(
        "float32",
        json!(["batch", 3, side("height"), side("width")]),
        true,
    )
}

/// The references whose rows Qwen-Image 2.1's text encoder leaves out of
/// its output (its node given a VAE), where the stage has them: the
/// encoder then also gives `image_slots`, each reference's place in its
/// sequence, which the denoiser takes (`[batch, references]`).
pub(super) fn spliced(plan: &Plan) -> Option<Value> {
    plan.conditionings()
        .flat_map(|c| &c.references.latents)
        .any(|r| r.class == QWEN21)
        .then(|| contract("int64", json!(["batch", reference::most(plan)]), true))
}

/// The value of a side's image slots: the positive's where the negative
/// is its conditioning zeroed (`reuses_positive`: ComfyUI's
/// `ConditioningZeroOut` keeps the slots), which no text encoder call of
/// its own gives.
pub(super) fn slots_of(side: &str, reuses_positive: bool) -> String {
    let side = match side {
        "unconditional" if reuses_positive => "conditional",
        side => side,
    };
    format!("conditioning.{side}_image_slots")
}

/// What makes the pictures: the stage's parts, and each picture through
/// the graph's resize (made once).
struct Maker<'m> {
    plan: &'m Plan,
    components: &'m mut Map<String, Value>,
    setup: &'m mut Steps,
    sources: Vec<(Key, String)>,
}

impl Maker<'_> {
    /// Adds policy `kind` (`resize`, cut to whole 8s where `for_encode`)
    /// on `image`, giving `value`.
    fn scale(
        &mut self,
        kind: &str,
        resize: &Resize,
        (image, value): (&str, &str),
        for_encode: bool,
    ) {
        self.components
            .insert(kind.into(), resize_policy(kind, resize, for_encode));
        self.setup.push(
            invoke(kind, json!({"image": image}), json!({"scaled": value})),
            &resize.nodes(),
        );
    }

    /// Adds the encoder's own `resize` (cut to whole 8s where
    /// `for_encode`) of `loader`'s picture through `graph_resize`, as the
    /// next of `made` (values `{base}.pixels`, `{base}_2.pixels`, ...,
    /// policies `{base}_scale`, ...), unless that picture is made already.
    fn add(
        &mut self,
        made: &mut Vec<(Key, String)>,
        base: &str,
        (loader, graph_resize): (&str, Option<&Resize>),
        (resize, for_encode): (&Resize, bool),
    ) {
        let picture = key(loader, graph_resize);
        if made.iter().any(|(k, _)| *k == picture) {
            return;
        }
        let source = self.source(loader, graph_resize);
        let value = format!("{}.pixels", numbered(base, made.len()));
        let kind = numbered(&format!("{base}_scale"), made.len());
        self.scale(&kind, resize, (&source, &value), for_encode);
        made.push((picture, value));
    }

    /// `loader`'s picture through `resize`, uncut.
    fn source(&mut self, loader: &str, resize: Option<&Resize>) -> String {
        let picture = key(loader, resize);
        if let Some((_, value)) = self.sources.iter().find(|(k, _)| *k == picture) {
            return value.clone();
        }
        let input = pictures::input(self.plan, loader);
        let value = match resize {
            None => input,
            Some(resize) => {
                let n = self.sources.iter().filter(|(k, _)| k.1.is_some()).count();
                let value = format!("{}.pixels", numbered("source", n));
                self.scale(
                    &numbered("source_scale", n),
                    resize,
                    (&input, &value),
                    false,
                );
                value
            }
        };
        self.sources.push((picture, value.clone()));
        value
    }
}

/// Adds the steps making the plan's edit-encoder pictures, where its
/// prompts show the text encoder any.
pub(super) fn pictures(
    plan: &Plan,
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) -> Option<Pictures> {
    plan.conditionings().find(|c| !c.vision.is_empty())?;
    let mut maker = Maker {
        plan,
        components,
        setup,
        sources: Vec::new(),
    };
    let mut seen: Vec<(Key, String)> = Vec::new();
    for v in plan.conditionings().flat_map(|c| &c.vision) {
        let picture = (v.loader.as_str(), v.resize.as_ref());
        maker.add(&mut seen, "vision", picture, (&v.seen, false));
    }
    let mut references: Vec<(Key, String)> = Vec::new();
    for r in plan.conditionings().flat_map(|c| &c.references.latents) {
        if let Some(then) = &r.then {
            let picture = (r.loader.as_str(), r.resize.as_ref());
            maker.add(&mut references, "reference", picture, (then, true));
        }
    }
    let own = reference::stage_picture(plan).map(|(loader, resize)| key(loader, resize));
    let source = maker
        .sources
        .iter()
        .find(|(k, _)| Some(k) == own.as_ref() && k.1.is_some())
        .map(|(_, value)| value.clone());
    Some(Pictures {
        source,
        seen,
        references,
    })
}

/// The note saying what the text encoder sees and how the prompts are
/// tokenized, where edit encoders show it pictures.
pub(in crate::comfyui::lower) fn note(plan: &Plan, names: &StageNames) -> Option<String> {
    let vision = plan.conditionings().flat_map(|c| &c.vision).next()?;
    let mut nodes: Vec<&str> = Vec::new();
    // Each picture once: its key, its description and its port.
    let mut shown: Vec<(Key, String, String)> = Vec::new();
    for v in plan.conditionings().flat_map(|c| &c.vision) {
        if !nodes.contains(&v.node.as_str()) {
            nodes.push(&v.node);
        }
        let picture = key(&v.loader, v.resize.as_ref());
        if shown.iter().any(|(k, _, _)| *k == picture) {
            continue;
        }
        let input = names.value(&pictures::input(plan, &v.loader));
        let described = match &v.resize {
            Some(resize) => format!("{input} {}", resize.words()),
            None => input,
        };
        let port = port_name(shown.len());
        shown.push((picture, described, port));
    }
    let nodes = match nodes.as_slice() {
        [one] => format!("node {one} ({}) shows", vision.class),
        many => format!("nodes {} ({}) show", many.join(", "), vision.class),
    };
    let h3 = vision.class == H3_IMAGE_TO_VIDEO;
    let own = match h3 {
        true => "by lanczos to the video's size (a first frame stretched, a last frame cover-cropped from the centre)".to_string(),
        false => own_resize(&vision.seen),
    };
    let tokenized = match (vision.class.as_str(), spliced(plan).is_some()) {
        _ if h3 => {
            "ComfyUI tokenizes the prompt with MiniMax H3's template (a vision block for each keyframe picture, which `<Picture N>` in the prompt names), which the package's tokenizer must apply"
        }
        (MAGE, _) => {
            "ComfyUI tokenizes the prompts with Mage-Flow's edit template (a system prompt about the input picture, then `Image N: ` and a vision block for each picture before the prompt), which the package's tokenizer must apply"
        }
        (class, _) if class != QWEN21 => {
            "ComfyUI tokenizes the prompts with the node's edit template (a system prompt describing the input picture), which the package's tokenizer must apply"
        }
        (_, false) => {
            "ComfyUI tokenizes the prompts with Qwen-Image 2.1's template (a `<imageN>` vision block for each picture before the prompt, the system turn left out), which the package's tokenizer must apply"
        }
        (_, true) => {
            "ComfyUI tokenizes the prompts with Qwen-Image 2.1's template (a `<imageN>` vision block for each picture before the prompt, the system turn left out), which the package's tokenizer must apply; as the node appends the pictures' latents, the text encoder leaves the pictures' rows out of its output and gives `image_slots`, each reference's place in the sequence, where the denoiser puts its cells"
        }
    };
    // Ports named by picture only where every prompt shows its pictures
    // in one order, each once.
    let orders: Vec<Vec<Key>> = plan
        .conditionings()
        .filter(|c| !c.vision.is_empty())
        .map(|c| {
            c.vision
                .iter()
                .map(|v| key(&v.loader, v.resize.as_ref()))
                .collect()
        })
        .collect();
    let named = orders.windows(2).all(|pair| pair[0] == pair[1])
        && orders
            .first()
            .is_some_and(|order| order.len() == shown.len());
    if !named {
        let pictures: Vec<&str> = shown.iter().map(|(_, d, _)| d.as_str()).collect();
        return Some(format!(
            "{nodes} the text encoder {}, each prompt's in its own order as its inputs `image`, `image_2`, ..., each then resized by the node itself {own}; {tokenized}",
            pictures.join(" and ")
        ));
    }
    Some(match shown.as_slice() {
        [(_, described, port)] => format!(
            "{nodes} the text encoder {described}, then resized by the node itself {own}, as its input `{port}`; {tokenized}"
        ),
        many => {
            let many: Vec<String> = many
                .iter()
                .map(|(_, described, port)| format!("{described} (as its input `{port}`)"))
                .collect();
            format!(
                "{nodes} the text encoder {}, each then resized by the node itself {own}; {tokenized}",
                many.join(" and ")
            )
        }
    })
}

/// How an edit encoder resizes a picture itself, in words (`by area to
/// about ...`).
pub(super) fn own_resize(resize: &Resize) -> String {
    match resize.size {
        PixelSize::TotalPixels { pixels, step } => {
            let side = pixels.sqrt().round() as i64;
            let steps = match step {
                1 => String::new(),
                step => format!(" in whole {step}s"),
            };
            format!("by {} to about {side}x{side} pixels{steps}", resize.method)
        }
        PixelSize::Down { side } => format!(
            "by {} to a longer side of {side} pixels where it is longer",
            resize.method
        ),
        PixelSize::Floor { step } => format!(
            "by {} to its sides floored to whole {step}s, unless they are so already",
            resize.method
        ),
        PixelSize::Qwen21 { resolution: 0 } => {
            format!(
                "by {} to whole 32s a side (at least 32), unless it is so already",
                resize.method
            )
        }
        PixelSize::Qwen21 { resolution } => format!(
            "by {} to about {resolution}x{resolution} pixels in whole 32s (at least 32), unless it is that size already",
            resize.method
        ),
        _ => format!("by {}", resize.method),
    }
}
