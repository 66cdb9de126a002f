//! A run's schedule as the lowering records it and the schedule policies
//! compute it: a scheduler over the model's own sigmas (`KSampler`'s and
//! `BasicScheduler`'s `scheduler`) or a scheduler node's own settings
//! (`KarrasScheduler`, `ExponentialScheduler`, `PolyexponentialScheduler`,
//! `BetaSamplingScheduler`, `SDTurboScheduler`, `AlignYourStepsScheduler`),
//! maybe reversed by `FlipSigmas`. It travels in the `diffusion_schedule`
//! contract parameters: `spacing` names it, the settings sit beside it.

use super::sampling::{
    SCHEDULES, arctan_schedule, beta_indices, discrete_schedule, karras, table_indices,
};
pub use super::shifted::Ltxv;
use super::tables::{ModelSampling, Timesteps, linspace, sigma_at};
use serde_json::{Value, json};

/// How the sigmas are spaced.
#[derive(Clone, Debug, PartialEq)]
pub enum Spacing {
    /// One of [`SCHEDULES`] over the model's own sigmas.
    Named(String),
    /// Karras et al.'s schedule between stated bounds, with its `rho`.
    Karras {
        sigma_min: f64,
        sigma_max: f64,
        rho: f64,
    },
    /// Evenly spaced in log sigma between stated bounds.
    Exponential { sigma_min: f64, sigma_max: f64 },
    /// Log sigma along a ramp raised to `rho`, between stated bounds.
    Polyexponential {
        sigma_min: f64,
        sigma_max: f64,
        rho: f64,
    },
    /// The `beta` scheduler's table picks with shapes of its own.
    Beta { alpha: f64, beta: f64 },
    /// SD Turbo's: the model's sigmas at timesteps 999, 899, ..., 99 from
    /// `10 - int(10 * denoise)` on, one per step.
    SdTurbo { denoise: f64 },
    /// Align Your Steps: a model type's eleven noise levels, log-linearly
    /// interpolated to the step count, the last `round(steps * denoise)`
    /// steps of them.
    AlignYourSteps { model_type: String, denoise: f64 },
    /// `ManualSigmas`: the graph's own list, whatever the step count.
    Manual { sigmas: Vec<f64> },
    /// `Flux2Scheduler`: `linspace(1, 0, steps + 1)` shifted by
    /// `e^mu / (e^mu + 1/t - 1)`, `mu` fitted to the image's token count
    /// (`round(width * height / 256)`) and the step count.
    Flux2 { width: i64, height: i64 },
    /// `Flux2Scheduler` whose width and height a `GetImageSize` measures
    /// at run time: the schedule policies take them as inputs `width` and
    /// `height` (contract parameter `size: measured`).
    Flux2Measured,
    /// `LTXVScheduler`: the same shift of `linspace(1, 0, steps + 1)`, by
    /// the latent's token count, maybe stretched to a terminal sigma.
    Ltxv(Ltxv),
}

/// The schedule of one sampler stage.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// How the sigmas are spaced.
    pub spacing: Spacing,
    /// Reversed (`FlipSigmas`): from the lowest sigma up, a first 0 made
    /// 0.0001.
    pub flip: bool,
    /// Computed for one step more with its penultimate sigma dropped
    /// (`sampling::discards_penultimate`).
    pub discard_penultimate: bool,
    /// The first sigma replaced (`SetFirstSigma`), before any flip.
    pub first: Option<f64>,
}

/// Align Your Steps' noise levels per model type (Sabour et al. 2024, as
/// ComfyUI's `AlignYourStepsScheduler` lists them).
pub const ALIGN_YOUR_STEPS: &[(&str, [f64; 11])] = &[
    (
        "SD1",
        [
            14.614_641_229_3,
            6.474_576_095_6,
            3.863_674_598_5,
            2.694_615_152_0,
            1.884_192_117_7,
            1.394_380_509_2,
            0.964_258_390_4,
            0.652_368_601_6,
            0.397_745_627_2,
            0.151_523_266_2,
            0.029_167_158_2,
        ],
    ),
    (
        "SDXL",
        [
            14.614_641_229_3,
            6.318_448_528_7,
            3.768_179_031_5,
            2.181_148_076_9,
            1.340_524_494_5,
            0.862_072_114_1,
            0.555_069_328_9,
            0.379_854_070_8,
            0.233_236_413_4,
            0.111_418_817_7,
            0.029_167_158_2,
        ],
    ),
    (
        "SVD",
        [
            700.00, 54.5, 15.886, 7.977, 4.248, 1.789, 0.981, 0.403, 0.173, 0.034, 0.002,
        ],
    ),
];

/// What a flipped schedule's first sigma becomes where it would be 0.
pub const FLIPPED_ZERO: f64 = 0.0001;

/// SD Turbo's timestep count (999 down to 99 by 100).
const SD_TURBO_TIMESTEPS: usize = 10;

impl Schedule {
    /// A scheduler over the model's own sigmas.
    pub fn named(scheduler: &str, discard_penultimate: bool) -> Schedule {
        Schedule {
            spacing: Spacing::Named(scheduler.to_string()),
            flip: false,
            discard_penultimate,
            first: None,
        }
    }

    /// A scheduler node's own schedule.
    pub fn of(spacing: Spacing) -> Schedule {
        Schedule {
            spacing,
            flip: false,
            discard_penultimate: false,
            first: None,
        }
    }

    /// The name `spacing` records: the scheduler's.
    pub fn name(&self) -> &str {
        match &self.spacing {
            Spacing::Named(name) => name,
            Spacing::Karras { .. } => "karras",
            Spacing::Exponential { .. } => "exponential",
            Spacing::Polyexponential { .. } => "polyexponential",
            Spacing::Beta { .. } => "beta",
            Spacing::SdTurbo { .. } => "sd_turbo",
            Spacing::AlignYourSteps { .. } => "align_your_steps",
            Spacing::Manual { .. } => "manual",
            Spacing::Flux2 { .. } | Spacing::Flux2Measured => "flux2",
            Spacing::Ltxv(_) => "ltxv",
        }
    }

    /// Writes the schedule into contract `parameters` (an object).
    pub fn write(&self, parameters: &mut Value) {
        parameters["spacing"] = json!(self.name());
        let settings: Vec<(&str, Value)> = match &self.spacing {
            Spacing::Named(_) => vec![],
            Spacing::Karras {
                sigma_min,
                sigma_max,
                rho,
            }
            | Spacing::Polyexponential {
                sigma_min,
                sigma_max,
                rho,
            } => vec![
                ("sigma_min", json!(sigma_min)),
                ("sigma_max", json!(sigma_max)),
                ("rho", json!(rho)),
            ],
            Spacing::Exponential {
                sigma_min,
                sigma_max,
            } => vec![
                ("sigma_min", json!(sigma_min)),
                ("sigma_max", json!(sigma_max)),
            ],
            Spacing::Beta { alpha, beta } => vec![("alpha", json!(alpha)), ("beta", json!(beta))],
            Spacing::SdTurbo { denoise } => vec![("denoise", json!(denoise))],
            Spacing::AlignYourSteps {
                model_type,
                denoise,
            } => vec![
                ("model_type", json!(model_type)),
                ("denoise", json!(denoise)),
            ],
            // Contract parameters are scalars: the list as its numbers
            // joined by commas, each as it reads back exactly.
            Spacing::Manual { sigmas } => {
                let text: Vec<String> = sigmas.iter().map(f64::to_string).collect();
                vec![("sigmas", json!(text.join(",")))]
            }
            Spacing::Flux2 { width, height } => {
                vec![("width", json!(width)), ("height", json!(height))]
            }
            Spacing::Flux2Measured => vec![("size", json!("measured"))],
            Spacing::Ltxv(l) => vec![
                ("max_shift", json!(l.max_shift)),
                ("base_shift", json!(l.base_shift)),
                ("stretch", json!(l.stretch)),
                ("terminal", json!(l.terminal)),
                ("tokens", json!(l.tokens)),
            ],
        };
        for (key, value) in settings {
            parameters[key] = value;
        }
        if self.flip {
            parameters["flip"] = json!(true);
        }
        if self.discard_penultimate {
            parameters["discard_penultimate"] = json!(true);
        }
        if let Some(first) = self.first {
            parameters["first_sigma"] = json!(first);
        }
    }

    /// Reads the schedule [`Schedule::write`] wrote.
    pub fn read(parameters: &Value) -> Result<Schedule, String> {
        let number = |key: &str| {
            parameters
                .get(key)
                .and_then(Value::as_f64)
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("its contract parameter `{key}` is not a number"))
        };
        let flag = |key: &str| parameters.get(key).and_then(Value::as_bool) == Some(true);
        let name = parameters
            .get("spacing")
            .and_then(Value::as_str)
            .ok_or("its contract parameters lack `spacing`")?;
        let stated = parameters.get("sigma_min").is_some();
        let spacing = match name {
            "karras" if stated => Spacing::Karras {
                sigma_min: number("sigma_min")?,
                sigma_max: number("sigma_max")?,
                rho: number("rho")?,
            },
            "exponential" if stated => Spacing::Exponential {
                sigma_min: number("sigma_min")?,
                sigma_max: number("sigma_max")?,
            },
            "polyexponential" => Spacing::Polyexponential {
                sigma_min: number("sigma_min")?,
                sigma_max: number("sigma_max")?,
                rho: number("rho")?,
            },
            "beta" if parameters.get("alpha").is_some() => Spacing::Beta {
                alpha: number("alpha")?,
                beta: number("beta")?,
            },
            "sd_turbo" => Spacing::SdTurbo {
                denoise: number("denoise")?,
            },
            "align_your_steps" => {
                let model_type = parameters
                    .get("model_type")
                    .and_then(Value::as_str)
                    .filter(|t| noise_levels(t).is_some())
                    .ok_or("its contract parameter `model_type` is not SD1, SDXL or SVD")?;
                Spacing::AlignYourSteps {
                    model_type: model_type.to_string(),
                    denoise: number("denoise")?,
                }
            }
            "manual" => Spacing::Manual {
                sigmas: parameters
                    .get("sigmas")
                    .and_then(Value::as_str)
                    .and_then(|text| {
                        text.split(',')
                            .map(|n| n.trim().parse::<f64>().ok().filter(|n| n.is_finite()))
                            .collect()
                    })
                    .ok_or("its contract parameter `sigmas` is not numbers joined by commas")?,
            },
            "flux2" if parameters.get("size").and_then(Value::as_str) == Some("measured") => {
                Spacing::Flux2Measured
            }
            "flux2" => Spacing::Flux2 {
                width: number("width")? as i64,
                height: number("height")? as i64,
            },
            "ltxv" => Spacing::Ltxv(Ltxv {
                max_shift: number("max_shift")?,
                base_shift: number("base_shift")?,
                stretch: flag("stretch"),
                terminal: number("terminal")?,
                tokens: number("tokens")? as i64,
            }),
            named if SCHEDULES.contains(&named) => Spacing::Named(named.to_string()),
            other => {
                return Err(format!(
                    "the `{other}` scheduler is not synthesized ({}, polyexponential, sd_turbo and align_your_steps are)",
                    SCHEDULES.join(", ")
                ));
            }
        };
        valid(&spacing)?;
        if matches!(spacing, Spacing::Manual { .. }) && flag("discard_penultimate") {
            return Err("its contract parameters drop a penultimate sigma from a written list, which is run as written".into());
        }
        let first = match parameters.get("first_sigma") {
            None => None,
            Some(_) => match number("first_sigma")? {
                first if first >= 0.0 => Some(first),
                _ => return Err("its contract parameter `first_sigma` is below 0".into()),
            },
        };
        Ok(Schedule {
            spacing,
            flip: flag("flip"),
            discard_penultimate: flag("discard_penultimate"),
            first,
        })
    }

    /// Whether the run starts where a fresh one does: at the top of the
    /// model's own sigmas (a named scheduler, not flipped, its first sigma
    /// its own).
    pub fn starts_at_top(&self) -> bool {
        matches!(self.spacing, Spacing::Named(_)) && !self.flip && self.first.is_none()
    }

    /// Whether the sigmas follow the model's own (a flow model's shift
    /// moves them), rather than a scheduler node's stated values.
    pub fn follows_model(&self) -> bool {
        matches!(
            self.spacing,
            Spacing::Named(_) | Spacing::Beta { .. } | Spacing::SdTurbo { .. }
        )
    }

    /// Whether the schedule needs a discrete model's training timesteps
    /// (SD Turbo's 999, 899, ...), which flow and continuous models lack.
    pub fn needs_training_timesteps(&self) -> bool {
        matches!(self.spacing, Spacing::SdTurbo { .. })
    }

    /// The sigma count less one that the schedule has for `steps` on any
    /// model, where that does not depend on the model's table (`None` for
    /// the schedulers that pick table entries).
    pub fn fixed_steps(&self, steps: usize) -> Option<usize> {
        let steps = steps + usize::from(self.discard_penultimate);
        let computed = match &self.spacing {
            // Their stride and repeats decide how many table entries they pick.
            Spacing::Named(name) if matches!(name.as_str(), "ddim_uniform" | "beta") => {
                return None;
            }
            Spacing::Beta { .. } => return None,
            Spacing::SdTurbo { denoise } => SD_TURBO_TIMESTEPS
                .saturating_sub(sd_turbo_start(*denoise))
                .min(steps),
            Spacing::AlignYourSteps { denoise, .. } => align_your_steps_length(steps, *denoise),
            Spacing::Manual { sigmas } => return Some(sigmas.len().saturating_sub(1)),
            _ => steps,
        };
        Some(computed - usize::from(self.discard_penultimate && computed > 0))
    }

    /// The solver steps the schedule has for `steps` on `sampling`.
    pub fn run_steps(&self, sampling: &ModelSampling, steps: usize) -> usize {
        self.fixed_steps(steps).unwrap_or_else(|| {
            let computed = steps + usize::from(self.discard_penultimate);
            let table = sampling.table_len();
            let picked = match &self.spacing {
                Spacing::Beta { alpha, beta } => beta_indices(table, computed, *alpha, *beta).len(),
                Spacing::Named(name) => {
                    table_indices(name, table, computed).map_or(computed, |i| i.len())
                }
                _ => computed,
            };
            picked.saturating_sub(usize::from(self.discard_penultimate))
        })
    }

    /// The table indices, highest first, of a schedule that picks table
    /// entries (`simple`, `ddim_uniform`, `beta`); `None` for the others.
    pub fn table_indices(&self, table: usize, steps: usize) -> Option<Vec<usize>> {
        match &self.spacing {
            Spacing::Named(name) => table_indices(name, table, steps),
            Spacing::Beta { alpha, beta } => Some(beta_indices(table, steps, *alpha, *beta)),
            _ => None,
        }
    }

    /// The schedule's sigmas where they are known at import, shortened,
    /// their first set and flipped as recorded: all of a discrete model's, and a scheduler
    /// node's own on any model. `None` where they follow a flow model's
    /// run-time shift.
    pub fn constant(&self, sampling: &ModelSampling, steps: usize) -> Option<Vec<f64>> {
        let computed = steps + usize::from(self.discard_penultimate);
        let (table, timesteps) = match sampling {
            ModelSampling::Discrete { sigmas, timesteps } => {
                (Some(sigmas.as_slice()), Some(*timesteps))
            }
            ModelSampling::Flow { .. } => (None, None),
        };
        let mut sigmas = match &self.spacing {
            // ComfyUI spaces these by the model's own `timestep`, which is
            // not the table's log-linear index on a continuous-V model.
            Spacing::Named(name)
                if timesteps == Some(Timesteps::Arctan)
                    && matches!(name.as_str(), "normal" | "sgm_uniform") =>
            {
                let table = table?;
                let (low, high) = (table[0], table[table.len() - 1]);
                arctan_schedule(low, high, name == "sgm_uniform", computed)
            }
            Spacing::Named(name) => discrete_schedule(table?, name, computed).unwrap_or_default(),
            Spacing::Beta { .. } => {
                let table = table?;
                let indices = self.table_indices(table.len(), computed)?;
                indices.iter().map(|i| table[*i]).chain([0.0]).collect()
            }
            Spacing::SdTurbo { denoise } => {
                let (table, timesteps) = (table?, timesteps?);
                let start = sd_turbo_start(*denoise);
                let sigma =
                    |t: usize| sigma_at(table, timesteps.table_index(t as f64, table.len()));
                (start..SD_TURBO_TIMESTEPS)
                    .take(computed)
                    .map(|i| sigma((SD_TURBO_TIMESTEPS - i) * 100 - 1))
                    .chain([0.0])
                    .collect()
            }
            Spacing::Karras {
                sigma_min,
                sigma_max,
                rho,
            } => with_zero(karras(*sigma_min, *sigma_max, *rho, computed)),
            Spacing::Exponential {
                sigma_min,
                sigma_max,
            } => with_zero(
                linspace(sigma_max.ln(), sigma_min.ln(), computed)
                    .into_iter()
                    .map(f64::exp)
                    .collect(),
            ),
            Spacing::Polyexponential {
                sigma_min,
                sigma_max,
                rho,
            } => with_zero(
                linspace(1.0, 0.0, computed)
                    .into_iter()
                    .map(|r| {
                        (r.powf(*rho) * (sigma_max.ln() - sigma_min.ln()) + sigma_min.ln()).exp()
                    })
                    .collect(),
            ),
            Spacing::AlignYourSteps {
                model_type,
                denoise,
            } => align_your_steps(noise_levels(model_type)?, computed, *denoise),
            Spacing::Manual { sigmas } => sigmas.clone(),
            Spacing::Flux2 { width, height } => super::shifted::flux2(*width, *height, computed),
            Spacing::Flux2Measured => return None,
            Spacing::Ltxv(settings) => super::shifted::ltxv(settings, computed),
        };
        if self.discard_penultimate && sigmas.len() >= 2 {
            sigmas.remove(sigmas.len() - 2);
        }
        if let (Some(first), Some(at)) = (self.first, sigmas.first_mut()) {
            *at = first;
        }
        if self.flip {
            sigmas.reverse();
            if sigmas.first() == Some(&0.0) {
                sigmas[0] = FLIPPED_ZERO;
            }
        }
        Some(sigmas)
    }
}

/// Refuses settings whose schedule is not a falling list of positive
/// sigmas (a hand-edited contract's: the lowering refuses them first).
fn valid(spacing: &Spacing) -> Result<(), String> {
    let ordered = |low: f64, high: f64| low > 0.0 && low < high;
    let ok = match spacing {
        Spacing::Named(_) => true,
        Spacing::Exponential {
            sigma_min,
            sigma_max,
        } => ordered(*sigma_min, *sigma_max),
        Spacing::Karras {
            sigma_min,
            sigma_max,
            rho,
        }
        | Spacing::Polyexponential {
            sigma_min,
            sigma_max,
            rho,
        } => ordered(*sigma_min, *sigma_max) && *rho > 0.0,
        Spacing::Beta { alpha, beta } => *alpha > 0.0 && *beta > 0.0,
        Spacing::SdTurbo { denoise } | Spacing::AlignYourSteps { denoise, .. } => {
            (0.0..=1.0).contains(denoise)
        }
        Spacing::Manual { sigmas } => {
            sigmas.len() >= 2 && sigmas.iter().all(|s| s.is_finite() && *s >= 0.0)
        }
        Spacing::Ltxv(l) => {
            (0.0..1.0).contains(&l.terminal)
                && (1..=1 << 30).contains(&l.tokens)
                && [l.max_shift, l.base_shift]
                    .iter()
                    .all(|s| (0.0..=100.0).contains(s))
        }
        Spacing::Flux2 { width, height } => {
            (1..=16_384).contains(width) && (1..=16_384).contains(height)
        }
        Spacing::Flux2Measured => true,
    };
    match ok {
        true => Ok(()),
        false => Err("its contract parameters state a schedule that is not a falling list of positive sigmas (sigma_min above 0 and below sigma_max, rho, alpha and beta above 0, denoise from 0 to 1)".into()),
    }
}

/// Align Your Steps' noise levels for `model_type`.
pub fn noise_levels(model_type: &str) -> Option<&'static [f64; 11]> {
    ALIGN_YOUR_STEPS
        .iter()
        .find(|(name, _)| *name == model_type)
        .map(|(_, levels)| levels)
}

fn with_zero(mut sigmas: Vec<f64>) -> Vec<f64> {
    sigmas.push(0.0);
    sigmas
}

/// SD Turbo's first timestep index for `denoise` (`10 - int(10 * denoise)`).
fn sd_turbo_start(denoise: f64) -> usize {
    let kept = (SD_TURBO_TIMESTEPS as f64 * denoise)
        .trunc()
        .clamp(0.0, 10.0) as usize;
    SD_TURBO_TIMESTEPS - kept
}

/// The steps Align Your Steps runs of `steps` at `denoise`: all, or
/// `round(steps * denoise)` (half to even, as Python rounds).
fn align_your_steps_length(steps: usize, denoise: f64) -> usize {
    if denoise < 1.0 {
        ((steps as f64 * denoise.max(0.0)).round_ties_even() as usize).min(steps)
    } else {
        steps
    }
}

/// Align Your Steps' schedule: `levels` log-linearly interpolated to
/// `steps + 1` values where there are not that many, the last
/// `align_your_steps_length + 1` of them, the final one 0.
fn align_your_steps(levels: &[f64; 11], steps: usize, denoise: f64) -> Vec<f64> {
    let mut sigmas: Vec<f64> = if steps + 1 == levels.len() {
        levels.to_vec()
    } else {
        // Interpolated ascending (numpy's interp needs rising x), then
        // turned back to descending.
        let rising: Vec<f64> = levels.iter().rev().map(|s| s.ln()).collect();
        let known = linspace(0.0, 1.0, rising.len());
        linspace(0.0, 1.0, steps + 1)
            .into_iter()
            .map(|x| interpolate(&known, &rising, x).exp())
            .rev()
            .collect()
    };
    let kept = align_your_steps_length(steps, denoise);
    sigmas.drain(..sigmas.len() - (kept + 1));
    if let Some(last) = sigmas.last_mut() {
        *last = 0.0;
    }
    sigmas
}

/// Piecewise-linear interpolation of `(xs, ys)` at `x` (numpy's `interp`:
/// `xs` rising, ends held).
fn interpolate(xs: &[f64], ys: &[f64], x: f64) -> f64 {
    let upper = xs.partition_point(|known| *known <= x);
    match upper {
        0 => ys[0],
        n if n >= xs.len() => ys[xs.len() - 1],
        n => {
            let (x0, x1, y0, y1) = (xs[n - 1], xs[n], ys[n - 1], ys[n]);
            y0 + (x - x0) * (y1 - y0) / (x1 - x0)
        }
    }
}

#[cfg(test)]
mod tests;
