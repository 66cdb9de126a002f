//! Where a custom sampler's sigmas come from: a scheduler node, maybe
//! reversed by `FlipSigmas`, maybe split by `SplitSigmas` /
//! `SplitSigmasDenoise` into a `KSamplerAdvanced`-like window, its first
//! sigma maybe replaced (`SetFirstSigma`, before any flip). The
//! scheduler is `BasicScheduler` (a core scheduler over the model's
//! sigmas), one with bounds of its own (`KarrasScheduler`,
//! `ExponentialScheduler`, `PolyexponentialScheduler`), one over the
//! model's table (`BetaSamplingScheduler`, `SDTurboScheduler`) or Align
//! Your Steps' levels (`AlignYourStepsScheduler`), Flux 2's fitted shift
//! (`Flux2Scheduler`), LTX-Video's by its latent's size (`LTXVScheduler`)
//! or a written list (`ManualSigmas`).

use super::super::graph::Graph;
use super::{
    MAX_RESOLUTION, Window, checked_denoise, checked_scheduler, checked_steps, round_half_even,
};
use crate::comfyui::lower::Refusal;
use crate::comfyui::synth::spacing::{ALIGN_YOUR_STEPS, Ltxv, Schedule, Spacing};

/// The scheduler node classes the lowering reads.
pub(super) const SCHEDULER_NODES: &[&str] = &[
    "BasicScheduler",
    "KarrasScheduler",
    "ExponentialScheduler",
    "PolyexponentialScheduler",
    "BetaSamplingScheduler",
    "SDTurboScheduler",
    "AlignYourStepsScheduler",
    "Flux2Scheduler",
    "LTXVScheduler",
    "ManualSigmas",
];

/// A custom sampler's sigmas as read from the graph.
#[derive(Clone, Debug)]
pub(super) struct Sigmas {
    /// The scheduler node.
    pub scheduler: String,
    pub schedule: Schedule,
    pub steps: i64,
    /// `BasicScheduler`'s denoise (the others' denoise shortens their
    /// schedule itself): the run is its last `steps * denoise` steps.
    pub denoise: f64,
    /// Whether the scheduler computes its sigmas from its model, which must
    /// then sample as the sampler's.
    pub takes_model: bool,
    /// The split node and the output the sampler takes.
    pub split: Option<(String, i64)>,
    /// The `FlipSigmas` node that reverses the schedule.
    pub flip: Option<String>,
}

/// The sigmas input of `sampler`.
pub(super) fn sigmas(g: &Graph<'_>, sampler: &str) -> Result<Sigmas, Refusal> {
    let mut asker = (sampler.to_string(), "sigmas");
    let (mut node, slot) = g.source(sampler, "sigmas")?;
    let mut split = None;
    if matches!(g.class(&node), "SplitSigmas" | "SplitSigmasDenoise") {
        split = Some((node.clone(), slot));
        asker = (node.clone(), "sigmas");
        node = g.source(&node, "sigmas")?.0;
    }
    let mut flip = None;
    if g.class(&node) == "FlipSigmas" {
        flip = Some(node.clone());
        asker = (node.clone(), "sigmas");
        node = g.source(&node, "sigmas")?.0;
    }
    let mut first = None;
    if g.class(&node) == "SetFirstSigma" {
        first = Some(g.number_in(&node, "sigma", 0.0..=20000.0, "sigma")?);
        asker = (node.clone(), "sigmas");
        node = g.source(&node, "sigmas")?.0;
    }
    g.expect(&node, SCHEDULER_NODES, "sigmas", (&asker.0, asker.1))?;
    let mut read = scheduler(g, &node)?;
    if first.is_some() && read.denoise != 1.0 {
        return Err(g.refuse(
            &node,
            Some("denoise"),
            format!("cuts the schedule whose first sigma node {} (SetFirstSigma) sets to denoise {}; the lowering sets the first sigma of whole schedules", asker.0, read.denoise),
            "set the scheduler's denoise to 1",
        ));
    }
    read.schedule.first = first;
    read.split = split;
    if let Some(flip) = &flip {
        if read.denoise != 1.0 {
            return Err(g.refuse(
                &node,
                Some("denoise"),
                format!("cuts the schedule it gives node {flip} (FlipSigmas) to denoise {}; the lowering flips whole schedules", read.denoise),
                "set the scheduler's denoise to 1",
            ));
        }
        read.schedule.flip = true;
    }
    read.flip = flip;
    if read.schedule.fixed_steps(read.steps as usize) == Some(0) {
        let denoise = match &read.schedule.spacing {
            Spacing::SdTurbo { denoise } | Spacing::AlignYourSteps { denoise, .. } => *denoise,
            _ => read.denoise,
        };
        return Err(g.refuse(
            &node,
            Some("denoise"),
            format!("is {denoise}, which keeps none of its {} steps", read.steps),
            "raise the denoise",
        ));
    }
    Ok(read)
}

/// Scheduler node `node`'s schedule and settings.
fn scheduler(g: &Graph<'_>, node: &str) -> Result<Sigmas, Refusal> {
    let class = g.class(node);
    if class == "ManualSigmas" {
        return manual(g, node);
    }
    let steps = match class {
        "SDTurboScheduler" => g.whole(node, "steps", 1..=10)?,
        _ => checked_steps(g, node)?,
    };
    let mut denoise = 1.0;
    let spacing = match class {
        "BasicScheduler" => {
            denoise = checked_denoise(g, node, steps)?;
            Spacing::Named(checked_scheduler(g, node)?.to_string())
        }
        "KarrasScheduler" => {
            let (sigma_min, sigma_max) = bounds(g, node)?;
            Spacing::Karras {
                sigma_min,
                sigma_max,
                rho: positive(g, node, "rho")?,
            }
        }
        "ExponentialScheduler" => {
            let (sigma_min, sigma_max) = bounds(g, node)?;
            Spacing::Exponential {
                sigma_min,
                sigma_max,
            }
        }
        "PolyexponentialScheduler" => {
            let (sigma_min, sigma_max) = bounds(g, node)?;
            Spacing::Polyexponential {
                sigma_min,
                sigma_max,
                rho: positive(g, node, "rho")?,
            }
        }
        "BetaSamplingScheduler" => Spacing::Beta {
            alpha: positive(g, node, "alpha")?,
            beta: positive(g, node, "beta")?,
        },
        "SDTurboScheduler" => Spacing::SdTurbo {
            denoise: g.number_in(node, "denoise", 0.0..=1.0, "denoise")?,
        },
        // Measured by a GetImageSize: checked against the stage's picture
        // with the plan (`reference::measured`).
        "Flux2Scheduler" if g.is_link(node, "width") || g.is_link(node, "height") => {
            Spacing::Flux2Measured
        }
        "Flux2Scheduler" => Spacing::Flux2 {
            width: g.whole(node, "width", 16..=MAX_RESOLUTION)?,
            height: g.whole(node, "height", 16..=MAX_RESOLUTION)?,
        },
        "LTXVScheduler" => Spacing::Ltxv(ltxv(g, node)?),
        _ => {
            let model_type = g.text(node, "model_type")?;
            if !ALIGN_YOUR_STEPS.iter().any(|(name, _)| *name == model_type) {
                return Err(g.refuse(
                    node,
                    Some("model_type"),
                    format!("is '{model_type}', which Align Your Steps has no noise levels for"),
                    "choose SD1, SDXL or SVD",
                ));
            }
            Spacing::AlignYourSteps {
                model_type: model_type.to_string(),
                denoise: g.number_in(node, "denoise", 0.0..=1.0, "denoise")?,
            }
        }
    };
    Ok(Sigmas {
        scheduler: node.to_string(),
        schedule: Schedule::of(spacing),
        steps,
        denoise,
        takes_model: matches!(
            class,
            "BasicScheduler" | "BetaSamplingScheduler" | "SDTurboScheduler"
        ),
        split: None,
        flip: None,
    })
}

/// `LTXVScheduler`'s settings; its token count is its latent's cells (an
/// empty latent the graph sizes), 4096 without one.
fn ltxv(g: &Graph<'_>, node: &str) -> Result<Ltxv, Refusal> {
    let tokens = match g.has(node, "latent") {
        false => 4096,
        true => {
            let (latent, _) = g.source(node, "latent")?;
            super::latent_sizes::latent_cells(g, &latent)?.ok_or_else(|| {
                g.refuse(
                    node,
                    Some("latent"),
                    format!("sizes its schedule by node {latent}'s latent, which is not an empty latent the graph sizes"),
                    "connect the empty latent the sampler starts from",
                )
            })?
        }
    };
    let shift = |name: &str| g.number_in(node, name, 0.0..=100.0, "shift");
    let stretch = match g.input(node, "stretch") {
        None => true,
        Some(serde_json::Value::Bool(stretch)) => *stretch,
        Some(_) => {
            return Err(g.refuse(
                node,
                Some("stretch"),
                "is not written true or false".into(),
                "set stretch on the node",
            ));
        }
    };
    let settings = Ltxv {
        max_shift: shift("max_shift")?,
        base_shift: shift("base_shift")?,
        stretch,
        terminal: g.number_in(node, "terminal", 0.0..=0.99, "sigma")?,
        tokens,
    };
    // ComfyUI's schedule is no number here: its shift overflows, the
    // latent has no cell, or a one-step run is stretched (0 / 0).
    let slope = (settings.max_shift - settings.base_shift) / 3072.0;
    let e = (settings.tokens as f64 * slope + settings.base_shift - slope * 1024.0).exp();
    let steps = checked_steps(g, node)?;
    if !e.is_finite() || e <= 0.0 || tokens == 0 || (stretch && steps == 1) {
        return Err(g.refuse(
            node,
            None,
            format!("gives no numbers for {tokens} latent cells and {steps} steps (ComfyUI's own schedule is not a number there)"),
            "lower the shifts, use a latent of at least one cell, or more than one step to stretch",
        ));
    }
    Ok(settings)
}

/// `ManualSigmas`: the numbers its text holds, found as ComfyUI finds
/// them (`[-+]?(?:\d*\.*\d+)`, so `1e-3` is 1 and -3), two or more, of 0
/// or more.
fn manual(g: &Graph<'_>, node: &str) -> Result<Sigmas, Refusal> {
    let text = g.text(node, "sigmas")?;
    let sigmas = comfy_numbers(text)
        .filter(|s: &Vec<f64>| s.len() >= 2 && s.iter().all(|v| *v >= 0.0))
        .ok_or_else(|| {
            g.refuse(
                node,
                Some("sigmas"),
                format!("is '{text}', which is not a list of two or more sigmas of 0 or more"),
                "write the sigmas as numbers separated by commas, such as `1.0, 0.5, 0.0`",
            )
        })?;
    Ok(Sigmas {
        scheduler: node.to_string(),
        steps: sigmas.len() as i64 - 1,
        schedule: Schedule::of(Spacing::Manual { sigmas }),
        denoise: 1.0,
        takes_model: false,
        split: None,
        flip: None,
    })
}

/// Whether custom sampler `sampler`'s schedule surely ends at sigma 0:
/// a `ManualSigmas` list ending so, or a scheduler node's own (ComfyUI's
/// schedules end at 0); not through a split, flip or first sigma.
pub(super) fn ends_at_zero(g: &Graph<'_>, sampler: &str) -> bool {
    let Ok((node, _)) = g.source(sampler, "sigmas") else {
        return false;
    };
    match g.class(&node) {
        "ManualSigmas" => {
            g.text(&node, "sigmas")
                .ok()
                .and_then(comfy_numbers)
                .and_then(|s| s.last().copied())
                == Some(0.0)
        }
        "BasicScheduler" | "LTXVScheduler" => true,
        _ => false,
    }
}

/// The numbers ComfyUI's `ManualSigmas` finds in `text`: each leftmost
/// match of `[-+]?\d*\.*\d+`, as Python's `float` reads it; `None` where a
/// match is not a number (`1..5`) or is not finite.
fn comfy_numbers(text: &str) -> Option<Vec<f64>> {
    // Python's `\d` takes every script's digits, which `float` reads too;
    // the lowering reads ASCII ones only, and says so rather than differ.
    if text.chars().any(|c| c.is_numeric() && !c.is_ascii_digit()) {
        return None;
    }
    let bytes = text.as_bytes();
    let run =
        |from: usize, want: fn(&u8) -> bool| bytes[from..].iter().take_while(|b| want(b)).count();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let signed = usize::from(matches!(bytes[at], b'+' | b'-'));
        let start = at + signed;
        let digits = run(start, u8::is_ascii_digit);
        let dots = run(start + digits, |b| *b == b'.');
        let tail = run(start + digits + dots, u8::is_ascii_digit);
        // The regex's backtracking: without digits after the dots, the
        // last leading digit is the one `\d+` needs.
        let end = match (tail, digits) {
            (1.., _) => start + digits + dots + tail,
            (0, 1..) => start + digits,
            (0, 0) => {
                at += 1;
                continue;
            }
        };
        let number: f64 = text[at..end].parse().ok().filter(|v: &f64| v.is_finite())?;
        out.push(number);
        at = end;
    }
    Some(out)
}

/// A scheduler's `sigma_min` and `sigma_max`: positive, the first below
/// the second.
fn bounds(g: &Graph<'_>, node: &str) -> Result<(f64, f64), Refusal> {
    let (low, high) = (
        positive(g, node, "sigma_min")?,
        positive(g, node, "sigma_max")?,
    );
    if low >= high {
        return Err(g.refuse(
            node,
            Some("sigma_min"),
            format!("is {low}, not below sigma_max {high}"),
            "choose a sigma_min below sigma_max",
        ));
    }
    Ok((low, high))
}

/// Node `node`'s number `name`, above 0 (a log or a power of it is taken).
fn positive(g: &Graph<'_>, node: &str, name: &str) -> Result<f64, Refusal> {
    let value = g.number(node, name)?;
    if !(value > 0.0 && value.is_finite()) {
        return Err(g.refuse(
            node,
            Some(name),
            format!("is {value}, not above 0"),
            &format!("use a {name} above 0"),
        ));
    }
    Ok(value)
}

/// The window a sampler runs of `sigmas`: a split part as
/// `KSamplerAdvanced`'s steps, else the last `steps * denoise` steps (all
/// but those before the window where no noise is added).
pub(super) fn window(g: &Graph<'_>, sigmas: &Sigmas, add_noise: bool) -> Result<Window, Refusal> {
    if let Some((split, slot)) = &sigmas.split {
        return split_window(g, (split, *slot), sigmas, add_noise);
    }
    Ok(if add_noise {
        Window::Denoise(sigmas.denoise)
    } else {
        Window::Steps {
            start: super::denoise_start_step(sigmas.steps, sigmas.denoise),
            end: sigmas.steps,
            add_noise: false,
            // A custom sampler steps to its schedule's last sigma, which a
            // flipped schedule ends on (sigma_max) rather than 0.
            leftover_noise: sigmas.schedule.flip,
        }
    })
}

/// The steps a `SplitSigmas` (at `step`) or `SplitSigmasDenoise` (the
/// last `round(steps * denoise)` steps are the low part) part of the
/// schedule runs, as `KSamplerAdvanced`'s window: output 0, the high
/// sigmas, ends with leftover noise where it stops early; output 1, the
/// low sigmas, starts there.
fn split_window(
    g: &Graph<'_>,
    (split, slot): (&str, i64),
    sigmas: &Sigmas,
    add_noise: bool,
) -> Result<Window, Refusal> {
    let scheduler = sigmas.scheduler.as_str();
    if sigmas.denoise != 1.0 {
        return Err(g.refuse(
            scheduler,
            Some("denoise"),
            format!("cuts the schedule it gives node {split} to denoise {}; the lowering splits whole schedules", sigmas.denoise),
            "set the scheduler's denoise to 1",
        ));
    }
    let Some(steps) = sigmas.schedule.fixed_steps(sigmas.steps as usize) else {
        return Err(g.refuse(
            split,
            None,
            format!(
                "splits a '{}' schedule, whose sigma count the graph's steps do not fix",
                sigmas.schedule.name()
            ),
            "split a schedule of another scheduler",
        ));
    };
    let steps = steps as i64;
    // The high part is output 0, the low part output 1: (start, end) steps.
    let high = slot == 0;
    let (start, end) = match g.class(split) {
        "SplitSigmas" => {
            let at = g.whole(split, "step", 0..=10000)?.min(steps);
            if high { (0, at) } else { (at, steps) }
        }
        // ComfyUI's sigmas[:-n] and sigmas[-(n + 1):], n rounded half to
        // even; at n = 0 the first is empty and the second the final 0.
        _ => {
            let share = g.number_in(split, "denoise", 0.0..=1.0, "denoise")?;
            match round_half_even(steps as f64 * share) as i64 {
                0 => (0, 0),
                low if high => (0, steps - low),
                low => (steps - low, steps),
            }
        }
    };
    if start >= end {
        return Err(g.refuse(
            split,
            None,
            format!("leaves no step of {steps} in the part it gives (output {slot})"),
            "split the schedule inside its steps",
        ));
    }
    Ok(Window::Steps {
        start,
        end,
        add_noise,
        leftover_noise: end < steps || sigmas.schedule.flip,
    })
}

#[cfg(test)]
mod tests {
    use super::comfy_numbers;

    #[test]
    fn manual_sigmas_are_found_as_comfyuis_pattern_finds_them() {
        assert_eq!(
            comfy_numbers("1.0, 0.99375, .5,0"),
            Some(vec![1.0, 0.99375, 0.5, 0.0])
        );
        // `1e-3` is two matches, 1 and -3; `12` one.
        assert_eq!(comfy_numbers("1e-3 12"), Some(vec![1.0, -3.0, 12.0]));
        // A match Python's float refuses.
        assert_eq!(comfy_numbers("1..5"), None);
        assert_eq!(comfy_numbers("no numbers"), Some(vec![]));
        assert_eq!(comfy_numbers("1.0, \u{ff15}"), None, "a fullwidth 5");
    }
}
