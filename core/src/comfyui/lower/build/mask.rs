//! A stage's noise mask: `latent_mask` makes it of the mask input in the
//! setup (see `synth::policies`), and after every solver step
//! `masked_blend` keeps the solved latent inside it and the source
//! noised to the next sigma outside it. Under `DifferentialDiffusion` the
//! mask of each step is the cells at or above that step's threshold
//! (`differential`, see `synth::noise`).

use super::super::parts::{Steps, contract, invoke, media, one, picture, policy, row};
use super::super::recognise::{LatentSource, Mask, Plan};
use serde_json::{Map, Value, json};

/// The mask's contract: one channel over the latent's cells.
fn cells() -> Value {
    contract(
        "float32",
        json!(["batch", 1, "latent_height", "latent_width"]),
        true,
    )
}

/// The nodes a noise mask comes from: its loader and any setter.
fn mask_nodes(mask: &Mask) -> Vec<&String> {
    [Some(&mask.loader), mask.setter.as_ref()]
        .into_iter()
        .flatten()
        .collect()
}

/// Declares `request.mask` and the `latent_mask` policy and its setup step
/// where the plan's latent has a noise mask (`latent`: the latent's
/// contract); returns whether it has.
pub(super) fn latent_mask(
    plan: &Plan,
    latent: Value,
    inputs: &mut Map<String, Value>,
    components: &mut Map<String, Value>,
    setup: &mut Steps,
) -> bool {
    let Some((mask, grow)) = plan.noise_mask() else {
        return false;
    };
    inputs.insert("request.mask".into(), media(picture(json!(1))));
    let round = matches!(plan.latent, LatentSource::Inpaint { .. });
    components.insert(
        "latent_mask".into(),
        policy(
            "latent_mask",
            json!({"mask": picture(json!(1)), "like": latent}),
            json!({"latent_mask": cells()}),
            Some(json!({"id": "wfstudio.latent-mask", "version": "2", "parameters": {"grow_mask_by": grow, "round": round, "resize": "bilinear"}})),
        ),
    );
    setup.push(
        invoke(
            "latent_mask",
            json!({"mask": "request.mask", "like": "latent.source"}),
            json!({"latent_mask": "latent.mask"}),
        ),
        &mask_nodes(mask),
    );
    true
}

/// Where a blend reads its step's sigma.
pub(super) struct BlendAt<'a> {
    /// The step value (an index into `sigmas`).
    pub step: &'a str,
    /// The sigmas the sampler steps by, and their contract.
    pub sigmas: &'a str,
    pub sigmas_contract: &'a Value,
    /// The run's first step (an index into `sigmas`) where the run is a
    /// window of its schedule.
    pub first: Option<&'a str>,
    /// A flow model's shift ports and binds, where the schedule follows
    /// the model's shift.
    pub shift: Option<&'a (Value, Value)>,
}

/// Declares `masked_blend` and adds its step after the solver's, where the
/// plan's latent has a noise mask. Under `DifferentialDiffusion` the
/// policy also takes the schedule's shift ports (for the model's least
/// sigma) and the run's first step.
pub(super) fn masked_blend(
    plan: &Plan,
    at: BlendAt<'_>,
    latent: Value,
    components: &mut Map<String, Value>,
    body: &mut Steps,
) {
    let Some((mask, _)) = plan.noise_mask() else {
        return;
    };
    let mut ports = json!({"solved": latent.clone(), "source": latent.clone(), "noise": latent.clone(), "mask": cells(), "step": row("int64"), "schedule": at.sigmas_contract});
    let mut binds = json!({"solved": "latent.solved", "source": "latent.source", "noise": "diffusion.noise", "mask": "latent.mask", "step": at.step, "schedule": at.sigmas});
    let mut parameters = json!({"outside_mask": "source noised to the next step"});
    let mut from = mask_nodes(mask);
    // recognise::edits accepts DifferentialDiffusion over a mask only on a
    // flow model whose schedule follows its shift.
    if let (Some(node), Some((shift_ports, shift_binds))) = (&plan.model.differential, at.shift) {
        parameters["differential"] = json!("mask >= (sigma - sigma_to) / (sigma_from - sigma_to)");
        for (port, port_contract) in shift_ports.as_object().into_iter().flatten() {
            ports[port] = port_contract.clone();
            binds[port] = shift_binds[port].clone();
        }
        if let Some(first) = at.first {
            ports["first"] = one("int64");
            binds["first"] = json!(first);
        }
        from.push(node);
    }
    components.insert(
        "masked_blend".into(),
        policy(
            "masked_blend",
            ports,
            json!({"next_state": latent}),
            Some(json!({"id": "wfstudio.masked-blend", "version": "2", "parameters": parameters})),
        ),
    );
    body.push(
        invoke("masked_blend", binds, json!({"next_state": "latent.body"})),
        &from,
    );
}
