//! The model calls of one sampling step: the ControlNet (if any) and the
//! denoiser once per prompt side at a sample and timestep (with the side's
//! `FluxGuidance` value and edit picture, if any), then the
//! classifier-free guidance of the two (of the three under a
//! `DualCFGGuider`), and a `CFGNorm`'s scaling of the guided estimate. A
//! step of a two-call sampler makes them twice, the second set's values
//! named with a suffix.

use super::super::parts::{Steps, invoke, one, parameter, policy, row};
use super::super::recognise::{Plan, Prompt};
use super::prompts::PromptSide;
use serde_json::{Map, Value, json};

/// What a step's model calls read besides the sample and timestep.
pub(super) struct Calls<'a> {
    pub plan: &'a Plan,
    pub sides: &'a [PromptSide<'a>],
    /// The checkpoint's component name prefix.
    pub models: &'a str,
    /// The ControlNet scale of a controlled prompt (an input, or the
    /// windowed scale's value).
    pub control_scale: &'a str,
    /// The ControlNet's picture (see `control::control`).
    pub control_picture: &'a str,
    /// The reference latents the prompts' references read, if any.
    pub reference: Option<&'a super::reference::Latents>,
}

impl Calls<'_> {
    /// The guided estimate of the calls whose values end in `suffix`.
    pub(super) fn estimate(suffix: &str) -> String {
        format!("denoiser.estimate{suffix}")
    }

    /// The unconditional denoiser pass of the calls ending in `suffix`.
    pub(super) fn unconditional(suffix: &str) -> String {
        format!("denoiser.unconditional{suffix}")
    }

    /// Pushes the calls at (`sample`, `timestep`), their values named
    /// with `suffix` ([`Calls::estimate`], [`Calls::unconditional`]).
    pub(super) fn push(&self, body: &mut Steps, sample: &str, timestep: &str, suffix: &str) {
        let m = |name: &str| format!("{}{name}", self.models);
        let plan = self.plan;
        // A held frame's stage shows the model the sample blended with it.
        let (unheld, held) = (sample, super::held::input(plan, sample, suffix, body));
        let sample = held.as_deref().unwrap_or(sample);
        let sdxl = matches!(plan.positive.text, Prompt::Sdxl { .. });
        let conditioning = |side: &PromptSide<'_>| {
            let mut bind = json!({"sample": sample, "timestep": timestep, "encoder_hidden_states": format!("conditioning.{}", side.name)});
            if sdxl {
                bind["text_embeds"] = json!(format!("conditioning.{}_text_embeds", side.name));
                bind["time_ids"] = json!(format!("conditioning.{}_time_ids", side.name));
            }
            bind
        };
        if let Some(control) = &plan.control {
            for side in self.sides.iter().rev() {
                let scale = match side.controlled {
                    true => self.control_scale,
                    false => "package.no_control",
                };
                let mut bind = conditioning(side);
                bind["image"] = json!(self.control_picture);
                bind["scale"] = json!(scale);
                let mut nodes = vec![&control.apply, &control.loader];
                nodes.extend(control.image.loader());
                body.push(
                    invoke(
                        &m("controlnet"),
                        bind,
                        json!({"down_residuals": format!("control.{}.down{suffix}", side.name), "mid_residual": format!("control.{}.mid{suffix}", side.name)}),
                    ),
                    &nodes,
                );
            }
        }
        let concat_mask = super::edit::takes_mask(plan);
        let av = super::av::split_sample(plan, sample, suffix, body);
        for side in self.sides.iter().rev() {
            let mut bind = conditioning(side);
            if let Some((video, audio)) = &av {
                bind["sample"] = json!(video);
                bind["audio_sample"] = json!(audio);
            }
            if plan.control.is_some() {
                bind["down_residuals"] = json!(format!("control.{}.down{suffix}", side.name));
                bind["mid_residual"] = json!(format!("control.{}.mid{suffix}", side.name));
            }
            if let Some(guidance) = side.guidance {
                bind["guidance"] = json!(guidance);
            }
            if plan.seconds.is_some() {
                bind["seconds_start"] = json!("request.seconds_start");
                bind["seconds_total"] = json!("request.seconds_total");
            }
            if plan.frame_rate.is_some() {
                bind["frame_rate"] = json!("request.frame_rate");
            }
            if let Some(latents) = self.reference {
                super::reference::bind(plan, side.references, latents, &mut bind);
            }
            if super::svd::prompt(plan).is_some() {
                bind["concat"] = json!(match side.name {
                    "conditional" => super::svd::CONCAT,
                    _ => super::svd::CONCAT_ZERO,
                });
                bind["added_time_ids"] = json!(super::svd::TIME_IDS);
            }
            super::frames::bind(plan, &mut bind);
            super::held::bind(plan, &mut bind);
            super::patch::bind(plan, &mut bind);
            super::lotus::bind(plan, &mut bind);
            if super::vision::spliced(plan).is_some() {
                let reuses = super::prompts::reuses_positive(plan);
                bind["image_slots"] = json!(super::vision::slots_of(side.name, reuses));
            }
            if plan.edit().is_some() {
                // The edit picture's latent, or zeros of its size (the
                // edit latent the sampler starts from).
                bind["concat"] = json!(if side.edit {
                    "edit.latent"
                } else {
                    "latent.source"
                });
                if concat_mask {
                    bind["concat_mask"] = json!("request.mask");
                }
            }
            let estimate = format!("denoiser.{}{suffix}", side.name);
            let outputs = match av {
                Some(_) => {
                    json!({"noise_pred": format!("{estimate}.video"), "audio_noise_pred": format!("{estimate}.audio")})
                }
                None => json!({"noise_pred": estimate}),
            };
            body.push(
                invoke(&m("denoiser"), bind, outputs),
                &[&plan.sampler.node, &plan.model.loader],
            );
            if av.is_some() {
                super::av::join_estimate(plan, &estimate, body);
            }
        }
        let mut bind = json!({"unconditional": Self::unconditional(suffix), "conditional": format!("denoiser.conditional{suffix}"), "scale": "request.guidance_scale"});
        let combine = if plan.sampler.dual.is_some() {
            bind["middle"] = json!(format!("denoiser.middle{suffix}"));
            bind["scale_2"] = json!("request.guidance_scale_2");
            "dual_guidance_combine"
        } else if plan.model.linear_cfg.is_some() {
            "linear_guidance_combine"
        } else {
            "guidance_combine"
        };
        let mut from = vec![&plan.sampler.node];
        from.extend(plan.model.linear_cfg.as_ref().map(|l| &l.node));
        // The estimate before its blend back to a held frame, if any.
        let estimate = match held {
            Some(_) => format!("denoiser.unheld{suffix}"),
            None => Self::estimate(suffix),
        };
        match &plan.model.cfg_norm {
            None => body.push(
                invoke(combine, bind, json!({ "estimate": estimate })),
                &from,
            ),
            Some(norm) => {
                let guided = format!("denoiser.guided{suffix}");
                body.push(invoke(combine, bind, json!({"estimate": guided})), &from);
                let bind = json!({"sample": sample, "timestep": timestep, "guided": guided, "conditional": format!("denoiser.conditional{suffix}"), "strength": CFG_NORM_STRENGTH});
                body.push(
                    invoke("cfg_norm", bind, json!({ "estimate": estimate })),
                    &[&norm.node],
                );
            }
        }
        let at = (unheld, sample, timestep);
        super::held::estimate(plan, at, (&estimate, &Self::estimate(suffix)), body);
    }
}

/// `CFGNorm`'s strength, a run input.
const CFG_NORM_STRENGTH: &str = "request.cfg_norm_strength";

/// Declares the `cfg_norm` policy (after every guidance combine: the
/// guided denoised sample scaled down to the conditional one's norm over
/// channels, times the strength) and its strength input, where the
/// model path has a `CFGNorm`.
pub(super) fn declare_cfg_norm(
    plan: &Plan,
    inputs: &mut Map<String, Value>,
    components: &mut Map<String, Value>,
) {
    let Some(norm) = &plan.model.cfg_norm else {
        return;
    };
    let latent = || plan.axes.latent();
    inputs.insert(
        CFG_NORM_STRENGTH.into(),
        parameter(
            one("float32"),
            json!({"kind": "opaque"}),
            "cfg_norm_strength",
            json!(norm.strength),
        ),
    );
    components.insert(
        "cfg_norm".into(),
        policy(
            "cfg_norm",
            json!({"sample": latent(), "timestep": row("float32"), "guided": latent(), "conditional": latent(), "strength": one("float32")}),
            json!({"estimate": latent()}),
            Some(json!({"id": "wfstudio.cfg-norm", "version": "1", "parameters": {"denoised": "D min(1, |D_conditional| / (|D| + 1e-8)) strength, norms over channels"}})),
        ),
    );
}
