//! Reference pictures for the denoiser: each loaded picture the prompts
//! append encoded once (`reference.latent`, `reference_2.latent`, ..., or
//! the stage's own encoded latent where that is the same picture's), and
//! the ports `reference_latent`,
//! `reference_latent_2`, ... that every prompt's call binds: a prompt's
//! references in order, and past its last, `reference.none`, a latent of
//! no cells (`no_reference`), which a model that appends a reference's
//! cells to its sequence reads as no reference, as ComfyUI passes none.

use super::super::parts::{Steps, contract, invoke, policy};
use super::super::recognise::{LatentSource, Plan, Reference, reference};
use super::StageNames;
use super::pictures::{self, Key, key, numbered};
use super::scales::resize_policy;
use serde_json::{Map, Value, json};

/// The value of a prompt's missing reference.
const NONE: &str = "reference.none";

/// The reference port `n` (from 0).
fn port(n: usize) -> String {
    match n {
        0 => "reference_latent".into(),
        n => format!("reference_latent_{}", n + 1),
    }
}

/// A reference latent's contract: its own cells, the sample's channels.
fn latent_contract() -> Value {
    contract(
        "float32",
        json!(["batch", "channels", "reference_height", "reference_width"]),
        true,
    )
}

/// Which reference latent a reference reads: its picture, and whether
/// the appending node resizes it itself (an edit encoder's).
pub(super) type LatentKey = (Key, bool);

/// The reference latents the calls read, one per picture (and way of
/// appending it), in the order the prompts carry them.
pub(super) type Latents = Vec<(LatentKey, String)>;

/// The latent `reference` reads.
fn latent_key(reference: &Reference) -> LatentKey {
    (
        key(&reference.loader, reference.resize.as_ref()),
        reference.then.is_some(),
    )
}

/// The reference latents the calls read, by picture: the stage's encoded
/// latent where a `ReferenceLatent` appends the stage's own picture, else
/// an encode by `encoder` (pushed to `setup`) of the stage's `picture`,
/// of an edit encoder's own resize (`resized`, by picture) or of another
/// loaded picture through its resize (`input_scale_2`, ...); and
/// `reference.none` (with its policy) where a prompt carries fewer
/// references than another. `None` without references.
pub(super) fn latents(
    plan: &Plan,
    (encoder, picture): (&str, &str),
    resized: &[(Key, String)],
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) -> Option<Latents> {
    let most = reference::most(plan);
    let first = plan
        .conditionings()
        .flat_map(|c| &c.references.latents)
        .next()?;
    let own = reference::stage_picture(plan).map(|(loader, resize)| key(loader, resize));
    let mut latents: Latents = Vec::new();
    let mut others = 0;
    for r in plan.conditionings().flat_map(|c| &c.references.latents) {
        let latent = latent_key(r);
        if latents.iter().any(|(k, _)| *k == latent) {
            continue;
        }
        let own_picture = Some(&latent.0) == own.as_ref();
        // The picture's latent where the stage has it already: the encoded
        // start latent (an inpainting edit's is the picture encoded as it
        // is), an edit node's picture latent.
        let reused = match (&r.then, own_picture, &plan.latent) {
            (
                None,
                true,
                LatentSource::Encoded { .. }
                | LatentSource::Edit {
                    inpaint: Some(_), ..
                },
            ) => Some("latent.source"),
            (None, true, LatentSource::Edit { inpaint: None, .. }) if plan.edit().is_some() => {
                Some("edit.latent")
            }
            _ => None,
        };
        let value = match reused {
            Some(value) => value.to_string(),
            None => {
                let pixels = match (&r.then, own_picture) {
                    (Some(_), _) => resized
                        .iter()
                        .find(|(k, _)| *k == latent.0)
                        .map_or(picture.to_string(), |(_, v)| v.clone()),
                    (None, true) => picture.to_string(),
                    (None, false) => {
                        let input = pictures::input(plan, &r.loader);
                        match &r.resize {
                            None => input,
                            Some(resize) => {
                                others += 1;
                                let kind = numbered("input_scale", others);
                                let pixels = format!("{}.pixels", numbered("picture", others));
                                components.insert(kind.clone(), resize_policy(&kind, resize, true));
                                setup.push(
                                    invoke(
                                        &kind,
                                        json!({"image": input}),
                                        json!({"scaled": pixels}),
                                    ),
                                    &resize.nodes_from(&r.loader),
                                );
                                pixels
                            }
                        }
                    }
                };
                let name = format!("{}.latent", numbered("reference", latents.len()));
                setup.push(
                    invoke(encoder, json!({"image": pixels}), json!({"latent": name})),
                    &[&r.encode, &r.loader],
                );
                name
            }
        };
        latents.push((latent, value));
    }
    if plan
        .conditionings()
        .any(|c| c.references.latents.len() < most)
    {
        components.insert(
            "no_reference".into(),
            policy(
                "no_reference",
                json!({"like": latent_contract()}),
                json!({"none": latent_contract()}),
                Some(json!({"id": "wfstudio.no-reference", "version": "1"})),
            ),
        );
        setup.push(
            invoke(
                "no_reference",
                json!({"like": latents[0].1}),
                json!({"none": NONE}),
            ),
            &[&first.node],
        );
    }
    Some(latents)
}

/// Declares the denoiser's reference ports, as many as the most any
/// prompt carries, each with extents of its own (`reference_height`,
/// `reference_2_height`, ...): the pictures may differ in size.
pub(super) fn ports(plan: &Plan, denoiser_ports: &mut Value) {
    for n in 0..reference::most(plan) {
        let side = |s: &str| format!("{}_{s}", numbered("reference", n));
        denoiser_ports[port(n)] = contract(
            "float32",
            json!(["batch", "channels", side("height"), side("width")]),
            true,
        );
    }
}

/// Binds the reference ports of one prompt's call: its `carried`
/// references read their pictures' `latents`, the rest `reference.none`.
pub(super) fn bind(plan: &Plan, carried: &[Reference], latents: &Latents, bind: &mut Value) {
    for n in 0..reference::most(plan) {
        let value = carried.get(n).and_then(|r| {
            let latent = latent_key(r);
            latents.iter().find(|(k, _)| *k == latent)
        });
        bind[port(n)] = json!(value.map_or(NONE, |(_, v)| v.as_str()));
    }
}

/// The note that says what the prompts' references are and how the
/// denoiser takes them, where they carry any.
pub(in crate::comfyui::lower) fn note(plan: &Plan, names: &StageNames) -> Option<String> {
    let most = reference::most(plan);
    // In the order the prompts carry them, each once.
    let mut nodes: Vec<(&str, &str)> = Vec::new();
    for node in plan
        .conditionings()
        .flat_map(|c| &c.references.latents)
        .map(|r| (r.node.as_str(), r.class.as_str()))
    {
        if !nodes.contains(&node) {
            nodes.push(node);
        }
    }
    let nodes = match nodes.as_slice() {
        [] => return None,
        [(one, class)] => format!("node {one} ({class}) appends"),
        [(_, class), ..] if nodes.iter().all(|(_, c)| c == class) => {
            let many: Vec<&str> = nodes.iter().map(|(n, _)| *n).collect();
            format!("nodes {} ({class}) append", many.join(", "))
        }
        many => {
            let many: Vec<String> = many.iter().map(|(n, c)| format!("{n} ({c})")).collect();
            format!("nodes {} append", many.join(", "))
        }
    };
    let carried: Vec<String> = plan
        .named_conditionings()
        .map(|(name, c)| format!("{} on the {name} prompt", c.references.latents.len()))
        .collect();
    // Each picture once, in the order the prompts carry them.
    let mut pictures: Vec<(LatentKey, String)> = Vec::new();
    for r in plan.conditionings().flat_map(|c| &c.references.latents) {
        let latent = latent_key(r);
        if pictures.iter().any(|(k, _)| *k == latent) {
            continue;
        }
        let mut done = r
            .resize
            .as_ref()
            .map(|resize| resize.words())
            .unwrap_or_default();
        if let Some(then) = &r.then {
            let own = format!("by node {} {}", then.node, super::vision::own_resize(then));
            done = match done.is_empty() {
                true => format!("resized {own}"),
                false => format!("{done}, then {own}"),
            };
        }
        let input = names.value(&pictures::input(plan, &r.loader));
        let described = match done.is_empty() {
            true => input,
            false => format!("{input} ({done})"),
        };
        pictures.push((latent, described));
    }
    let picture = match pictures.as_slice() {
        [(_, one)] => format!("the latent of {one}"),
        many => {
            let many: Vec<&str> = many.iter().map(|(_, d)| d.as_str()).collect();
            format!("the latents of {}", many.join(" and "))
        }
    };
    let fewer = match plan
        .conditionings()
        .any(|c| c.references.latents.len() < most)
    {
        true => {
            ", and a prompt with fewer takes a latent of no cells in their place, which a model that appends a reference's cells to its sequence reads as none, as ComfyUI passes none"
        }
        false => "",
    };
    let method = plan
        .conditionings()
        .find_map(|c| c.references.method.as_ref())
        .map(|m| {
            format!(
                "; node {} places them by '{}', which the exported denoiser must do too",
                m.node, m.name
            )
        })
        .unwrap_or_default();
    let ports: Vec<String> = (0..most).map(port).collect();
    Some(format!(
        "{nodes} {picture} to the prompts ({}): the denoiser takes {} as `{}`{fewer}{method}",
        carried.join(", "),
        if most == 1 { "it" } else { "them" },
        ports.join("`, `"),
    ))
}
