//! A `KSampler`'s or `KSamplerAdvanced`'s run parameters, and the checks
//! every sampler's sampler name, scheduler, steps and denoise pass.

use super::super::graph::Graph;
use super::{Plan, Sampler, Window};
use crate::comfyui::lower::{Refusal, SCHEDULES};
use crate::comfyui::synth::sampling::sampler_names;
use crate::comfyui::synth::spacing::Schedule;

/// ComfyUI's own limit on sampler steps.
const MAX_STEPS: f64 = 10000.0;

/// The run parameters of `KSampler` / `KSamplerAdvanced` node `node`.
pub(super) fn sampler(g: &Graph<'_>, node: &str) -> Result<Sampler, Refusal> {
    let advanced = g.class(node) == "KSamplerAdvanced";
    let seed = g.seed(node, if advanced { "noise_seed" } else { "seed" })?;
    let cfg = g.number(node, "cfg")?;
    let sampler_name = checked_sampler_name(g, node)?;
    let scheduler = checked_scheduler(g, node)?;
    let steps = checked_steps(g, node)?;
    let window = if advanced {
        let start = g.whole(node, "start_at_step", 0..=MAX_STEPS as i64)?;
        let end = g.whole(node, "end_at_step", 0..=MAX_STEPS as i64)?;
        let switch = |name: &str| -> Result<bool, Refusal> {
            match g.text(node, name)? {
                "enable" => Ok(true),
                "disable" => Ok(false),
                other => Err(g.refuse(
                    node,
                    Some(name),
                    format!("is '{other}'"),
                    "choose enable or disable",
                )),
            }
        };
        let end = end.min(steps);
        if start < 0 || start >= end {
            return Err(g.refuse(
                node,
                Some("start_at_step"),
                format!("starts at step {start} but the run ends at step {end}, so no step runs"),
                "choose a start step below the end step and the step count",
            ));
        }
        Window::Steps {
            start,
            end,
            add_noise: switch("add_noise")?,
            leftover_noise: switch("return_with_leftover_noise")?,
        }
    } else {
        Window::Denoise(checked_denoise(g, node, steps)?)
    };
    Ok(Sampler {
        node: node.to_string(),
        seed,
        steps,
        cfg,
        dual: None,
        sampler_name: sampler_name.to_string(),
        schedule: Schedule::named(
            scheduler,
            crate::comfyui::synth::sampling::discards_penultimate(sampler_name),
        ),
        window,
    })
}

/// Node `node`'s `sampler_name`, one the lowering builds.
pub(super) fn checked_sampler_name<'a>(g: &Graph<'a>, node: &str) -> Result<&'a str, Refusal> {
    let sampler_name = g.text(node, "sampler_name")?;
    if crate::comfyui::synth::sampling::sampler(sampler_name).is_none() {
        return Err(g.refuse(
            node,
            Some("sampler_name"),
            format!(
                "uses sampler '{sampler_name}', which is not one of ComfyUI's core samplers (a custom node adds it)"
            ),
            &format!("choose one of: {}", sampler_names().join(", ")),
        ));
    }
    Ok(sampler_name)
}

/// Refuses DPM-Solver-fast and DPM-Solver adaptive under a ControlNet
/// window, and DPM-Solver adaptive on a masked latent: they space steps of
/// their own, and the lowering places the window by the run's steps (one
/// over the whole run is dropped) and blends a mask at the sigma each step
/// ends at, which only the controller knows.
pub(super) fn own_steps_checked(g: &Graph<'_>, plan: &mut Plan) -> Result<(), Refusal> {
    let name = &plan.sampler.sampler_name;
    if !matches!(name.as_str(), "dpm_fast" | "dpm_adaptive") {
        return Ok(());
    }
    // A ControlNet's window counts the run's iterations, which these
    // samplers do not make one per step; one over the whole run is none.
    if let Some(control) = plan.control.as_mut() {
        control.window = control.window.filter(|w| *w != (0.0, 1.0));
    }
    if let Some((control, (start, _))) =
        plan.control.as_ref().and_then(|c| c.window.map(|w| (c, w)))
    {
        let input = match start {
            0.0 => "end_percent",
            _ => "start_percent",
        };
        return Err(g.refuse(
            &control.apply,
            Some(input),
            format!("limits the ControlNet to part of a run of sampler '{name}', which spaces steps of its own, and the lowering places the window by the run's steps"),
            "set start_percent 0 and end_percent 1, or choose another sampler",
        ));
    }
    if plan.noise_mask().is_some() && name == "dpm_adaptive" {
        let sampler = &plan.sampler.node;
        let node = match super::custom::is_custom(g.class(sampler)) {
            true => g.source(sampler, "sampler")?.0,
            false => sampler.clone(),
        };
        return Err(g.refuse(
            &node,
            Some("sampler_name"),
            "uses sampler 'dpm_adaptive' on a masked latent: its controller picks the sigma each step ends at, and the lowering blends the mask at the sigmas a run steps by".into(),
            "choose another sampler for this masked run (dpm_fast, dpmpp_2m or euler)",
        ));
    }
    Ok(())
}

/// Node `node`'s `scheduler`, one of ComfyUI's core schedulers.
pub(super) fn checked_scheduler<'a>(g: &Graph<'a>, node: &str) -> Result<&'a str, Refusal> {
    let scheduler = g.text(node, "scheduler")?;
    if !SCHEDULES.contains(&scheduler) {
        return Err(g.refuse(
            node,
            Some("scheduler"),
            format!(
                "uses scheduler '{scheduler}', which is not one of ComfyUI's core schedulers (a custom node adds it)"
            ),
            &format!("choose one of: {}", SCHEDULES.join(", ")),
        ));
    }
    Ok(scheduler)
}

/// Node `node`'s `steps`, a whole number within ComfyUI's limit.
pub(super) fn checked_steps(g: &Graph<'_>, node: &str) -> Result<i64, Refusal> {
    let steps = g.number(node, "steps")?;
    if !(1.0..=MAX_STEPS).contains(&steps) || steps.fract() != 0.0 {
        return Err(g.refuse(
            node,
            Some("steps"),
            format!("has {steps} steps"),
            "use a whole number of steps from 1 to 10000",
        ));
    }
    Ok(steps as i64)
}

/// Node `node`'s `denoise`, one that leaves a step of `steps` to run.
pub(super) fn checked_denoise(g: &Graph<'_>, node: &str, steps: i64) -> Result<f64, Refusal> {
    let denoise = g.number(node, "denoise")?;
    if !(denoise > 0.0 && denoise <= 1.0) || denoise_start_step(steps, denoise) >= steps {
        return Err(g.refuse(
            node,
            Some("denoise"),
            format!("has denoise {denoise}, which leaves no step of {steps} to run"),
            "use a denoise above 0 and at most 1",
        ));
    }
    Ok(denoise)
}

/// Banker's rounding, as the img2img start step uses.
pub(super) fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r - x.signum()
    } else {
        r
    }
}

/// The first step a `KSampler` with `denoise` runs of `steps`.
pub fn denoise_start_step(steps: i64, denoise: f64) -> i64 {
    steps - round_half_even(steps as f64 * denoise) as i64
}
