//! Reference pictures for the denoiser: the stage's loaded picture
//! encoded once (`reference.latent`, or the stage's own encoded latent
//! where that is the same picture's), and the ports `reference_latent`,
//! `reference_latent_2`, ... that every prompt's call binds: a prompt's
//! references in order, and past its last, `reference.none`, a latent of
//! no cells (`no_reference`), which a model that appends a reference's
//! cells to its sequence reads as no reference, as ComfyUI passes none.

use super::super::parts::{Steps, contract, invoke, policy};
use super::super::recognise::{LatentSource, Plan, reference};
use super::StageNames;
use serde_json::{Map, Value, json};

/// The value of the stage's reference latent.
const LATENT: &str = "reference.latent";

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

/// The reference value the calls read: the stage's encoded latent where
/// it is of the same picture, else an encode of `picture` (the stage's,
/// or the one an edit encoder resizes itself) by `encoder`
/// (pushed to `setup`); and `reference.none` (with its policy) where a
/// prompt carries fewer references than another. `None` without
/// references.
pub(super) fn latents(
    plan: &Plan,
    (encoder, picture): (&str, &str),
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) -> Option<String> {
    let most = reference::most(plan);
    let first = plan
        .conditionings()
        .flat_map(|c| &c.references.latents)
        .next()?;
    let mut encode = || {
        setup.push(
            invoke(
                encoder,
                json!({"image": picture}),
                json!({"latent": LATENT}),
            ),
            &[&first.encode, &first.loader],
        );
        LATENT.to_string()
    };
    // The picture's latent where the stage has it already: the encoded
    // start latent (an inpainting edit's is the picture encoded as it is),
    // an edit node's picture latent; never where the appending node
    // resizes the picture itself.
    let value = match &plan.latent {
        _ if first.then.is_some() => encode(),
        LatentSource::Encoded { .. }
        | LatentSource::Edit {
            inpaint: Some(_), ..
        } => "latent.source".to_string(),
        LatentSource::Edit { inpaint: None, .. } if plan.edit().is_some() => {
            "edit.latent".to_string()
        }
        _ => encode(),
    };
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
                json!({"like": value}),
                json!({"none": NONE}),
            ),
            &[&first.node],
        );
    }
    Some(value)
}

/// Declares the denoiser's reference ports, as many as the most any
/// prompt carries.
pub(super) fn ports(plan: &Plan, denoiser_ports: &mut Value) {
    for n in 0..reference::most(plan) {
        denoiser_ports[port(n)] = latent_contract();
    }
}

/// Binds the reference ports of one prompt's call: its `carried`
/// references read `value`, the rest `reference.none`.
pub(super) fn bind(plan: &Plan, carried: usize, value: &str, bind: &mut Value) {
    for n in 0..reference::most(plan) {
        bind[port(n)] = json!(if n < carried { value } else { NONE });
    }
}

/// The note that says what the prompts' references are and how the
/// denoiser takes them, where they carry any.
pub(in crate::comfyui::lower) fn note(plan: &Plan, names: &StageNames) -> Option<String> {
    let most = reference::most(plan);
    let first = plan
        .conditionings()
        .flat_map(|c| &c.references.latents)
        .next()?;
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
    let resizes: Vec<String> = [
        first.resize.as_ref().map(|r| format!("by node {}", r.node)),
        first
            .then
            .as_ref()
            .map(|then| format!("by node {} {}", then.node, super::vision::own_resize(then))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let picture = match resizes.is_empty() {
        true => names.value("request.image"),
        false => format!(
            "{} (resized {})",
            names.value("request.image"),
            resizes.join(", then ")
        ),
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
        "{nodes} the latent of {picture} to the prompts ({}): the denoiser takes {} as `{}`{fewer}{method}",
        carried.join(", "),
        if most == 1 { "it" } else { "them" },
        ports.join("`, `"),
    ))
}
