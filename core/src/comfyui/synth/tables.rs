//! Model sigma tables: how a model maps noise levels to its timestep
//! input (`ModelSampling`: SD's discrete table, maybe rescaled to zero
//! terminal SNR or distilled to LCM's 50 timesteps, a continuous EDM range,
//! or a flow family), what a ModelSampling node states of it (`Table`),
//! and the table arithmetic every scheduler uses.

/// How a model maps noise levels to its timestep input.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelSampling {
    /// A table of sigmas: the 1000 of SD 1.x, SD 2 and SDXL's discrete
    /// schedule (betas linear in sqrt between 0.00085 and 0.012, maybe
    /// rescaled to zero terminal SNR), LCM's 50 distilled from them, or 1000
    /// over a continuous EDM model's geometric range.
    Discrete {
        /// sigma of each training timestep, ascending.
        sigmas: Vec<f64>,
        /// How a sigma becomes the model's timestep input.
        timesteps: Timesteps,
    },
    /// Flow matching (SD3, AuraFlow, Flux): sigma = shift(t) over a table of
    /// `table` evenly spaced times; the model's timestep is sigma times
    /// `multiplier`. The shift itself is a run-time input.
    Flow {
        /// Entries of the time table (1000, or 10000 for Flux).
        table: usize,
        /// Timestep = sigma * multiplier (1000 for SD3, 1 otherwise).
        multiplier: f64,
    },
}

/// How a table model's timestep input follows from sigma.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timesteps {
    /// The index of the table entry nearest in log sigma
    /// (`ModelSamplingDiscrete`).
    NearestIndex,
    /// LCM's distilled table (`ModelSamplingDiscreteDistilled`): the
    /// nearest of its 50 entries, times 20, plus 19.
    Distilled,
    /// `0.25 ln sigma` (`ModelSamplingContinuousEDM`).
    QuarterLog,
    /// `atan(sigma) * 2 / pi` (`ModelSamplingContinuousV`, Stable Audio's).
    Arctan,
}

impl Timesteps {
    /// The timestep of `sigma` on table `sigmas`.
    pub fn of(&self, sigmas: &[f64], sigma: f64) -> f64 {
        match self {
            Timesteps::NearestIndex => nearest_timestep(sigmas, sigma) as f64,
            Timesteps::Distilled => {
                (nearest_timestep(sigmas, sigma) * DISTILLED_STRIDE + DISTILLED_STRIDE - 1) as f64
            }
            Timesteps::QuarterLog => 0.25 * sigma.ln(),
            Timesteps::Arctan => sigma.atan() * 2.0 / std::f64::consts::PI,
        }
    }

    /// The fractional index, on a table of `len` entries, of training
    /// timestep `t` (0..999), where ComfyUI's `sigma(t)` interpolates.
    pub fn table_index(&self, t: f64, len: usize) -> f64 {
        let index = match self {
            Timesteps::Distilled => (t - (DISTILLED_STRIDE - 1) as f64) / DISTILLED_STRIDE as f64,
            // A continuous table is geometric: its log-linear interpolation
            // at `t` is `percent_to_sigma`'s range.
            Timesteps::NearestIndex | Timesteps::QuarterLog | Timesteps::Arctan => t,
        };
        index.clamp(0.0, (len - 1) as f64)
    }

    /// The fractional table index of ComfyUI's `percent_to_sigma(percent)`,
    /// `sigma((1 - percent) * 999)`, on a table of `len` entries.
    pub fn percent_index(&self, percent: f64, len: usize) -> f64 {
        self.table_index((1.0 - percent) * (DISCRETE_TIMESTEPS - 1) as f64, len)
    }
}

/// Timesteps per entry of LCM's distilled table (1000 / 50).
pub const DISTILLED_STRIDE: usize = 20;

/// Number of training timesteps of the discrete schedule.
pub const DISCRETE_TIMESTEPS: usize = 1000;

/// A noise-predicting model's sigma table as a `ModelSamplingDiscrete` or
/// `ModelSamplingContinuousEDM` node states it.
#[derive(Clone, Debug, PartialEq)]
pub enum Table {
    /// SD's scaled-linear table, maybe rescaled to zero terminal SNR.
    Discrete { zero_terminal_snr: bool },
    /// Every 20th entry of it (LCM's 50 timesteps).
    Distilled { zero_terminal_snr: bool },
    /// 1000 sigmas evenly spaced in log between the bounds; timesteps
    /// `0.25 ln sigma`.
    ContinuousEdm { sigma_min: f64, sigma_max: f64 },
    /// The same sigmas; timesteps `atan(sigma) * 2 / pi`.
    ContinuousV { sigma_min: f64, sigma_max: f64 },
    /// A 1000-step table of another beta schedule from 0.00085 to
    /// `linear_end` (an AnimateDiff loader's `beta_schedule`).
    Betas { betas: Betas, linear_end: f64 },
}

/// How a discrete table's betas run from `linear_start` to `linear_end`,
/// by ComfyUI's names for them (`make_beta_schedule`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Betas {
    /// `linear`: evenly spaced in square root (SD's own).
    Linear,
    /// `sqrt_linear`: evenly spaced (AnimateDiff's).
    SqrtLinear,
}

impl Betas {
    /// ComfyUI's name.
    pub fn name(self) -> &'static str {
        match self {
            Betas::Linear => "linear",
            Betas::SqrtLinear => "sqrt_linear",
        }
    }
}

/// SD's first beta.
const LINEAR_START: f64 = 0.00085;
/// SD's last beta.
pub const LINEAR_END: f64 = 0.012;

impl Table {
    /// Writes the table into contract `parameters` (what
    /// [`ModelSampling::read`] reads).
    pub fn write(&self, parameters: &mut serde_json::Value) {
        match self {
            Table::Discrete { zero_terminal_snr } | Table::Distilled { zero_terminal_snr } => {
                parameters["model_sampling"] = match self {
                    Table::Distilled { .. } => "discrete_distilled",
                    _ => "discrete",
                }
                .into();
                if *zero_terminal_snr {
                    parameters["zero_terminal_snr"] = true.into();
                }
            }
            Table::Betas { betas, linear_end } => {
                parameters["model_sampling"] = "discrete".into();
                parameters["beta_schedule"] = betas.name().into();
                parameters["linear_end"] = (*linear_end).into();
            }
            Table::ContinuousEdm {
                sigma_min,
                sigma_max,
            }
            | Table::ContinuousV {
                sigma_min,
                sigma_max,
            } => {
                parameters["model_sampling"] = match self {
                    Table::ContinuousV { .. } => "continuous_v",
                    _ => "continuous_edm",
                }
                .into();
                parameters["model_sigma_min"] = (*sigma_min).into();
                parameters["model_sigma_max"] = (*sigma_max).into();
            }
        }
    }
}

impl ModelSampling {
    /// The sampling the lowering recorded in contract `parameters`:
    /// `model_sampling` (`discrete`, with `zero_terminal_snr`, or with
    /// `beta_schedule` and `linear_end`;
    /// `continuous_edm` or `continuous_v`, with `model_sigma_min` and
    /// `model_sigma_max`; or
    /// a flow family), `discrete` where absent.
    pub fn read(parameters: &serde_json::Value) -> Result<ModelSampling, String> {
        let family = parameters
            .get("model_sampling")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("discrete");
        let number = |key: &str| {
            parameters
                .get(key)
                .and_then(serde_json::Value::as_f64)
                .filter(|v| *v > 0.0 && v.is_finite())
                .ok_or_else(|| format!("its contract parameter `{key}` is not a positive number"))
        };
        match family {
            "discrete" if parameters.get("beta_schedule").is_some() => {
                let betas = match parameters.get("beta_schedule").and_then(|v| v.as_str()) {
                    Some("linear") => Betas::Linear,
                    Some("sqrt_linear") => Betas::SqrtLinear,
                    _ => return Err(
                        "its contract parameter `beta_schedule` is not `linear` or `sqrt_linear`"
                            .into(),
                    ),
                };
                let end = number("linear_end")?;
                if end <= LINEAR_START || end >= 1.0 {
                    return Err(format!(
                        "its linear_end {end} is not between {LINEAR_START} and 1"
                    ));
                }
                Ok(ModelSampling::Discrete {
                    sigmas: beta_sigmas(betas, end),
                    timesteps: Timesteps::NearestIndex,
                })
            }
            "discrete" | "discrete_distilled" => {
                let zsnr = parameters.get("zero_terminal_snr") == Some(&serde_json::json!(true));
                let sigmas = scaled_linear_sigmas(zsnr);
                Ok(match family {
                    "discrete" => ModelSampling::Discrete {
                        sigmas,
                        timesteps: Timesteps::NearestIndex,
                    },
                    _ => ModelSampling::Discrete {
                        // Entries 19, 39, ..., 999.
                        sigmas: sigmas
                            .iter()
                            .skip(DISTILLED_STRIDE - 1)
                            .step_by(DISTILLED_STRIDE)
                            .copied()
                            .collect(),
                        timesteps: Timesteps::Distilled,
                    },
                })
            }
            "continuous_edm" | "continuous_v" => {
                let (low, high) = (number("model_sigma_min")?, number("model_sigma_max")?);
                if low >= high {
                    return Err(format!("its model sigma range {low}..{high} is empty"));
                }
                Ok(ModelSampling::Discrete {
                    sigmas: linspace(low.ln(), high.ln(), DISCRETE_TIMESTEPS)
                        .into_iter()
                        .map(|l| f64::from(l.exp() as f32))
                        .collect(),
                    timesteps: match family {
                        "continuous_v" => Timesteps::Arctan,
                        _ => Timesteps::QuarterLog,
                    },
                })
            }
            other => {
                ModelSampling::of_family(other).ok_or(format!("unknown model_sampling `{other}`"))
            }
        }
    }

    /// The sampling of a `model_sampling` family name from the lowering:
    /// SD's discrete table, or a flow family.
    pub fn of_family(family: &str) -> Option<ModelSampling> {
        Some(match family {
            "discrete" => ModelSampling::Discrete {
                sigmas: discrete_sigmas(LINEAR_START, LINEAR_END),
                timesteps: Timesteps::NearestIndex,
            },
            "sd3" => ModelSampling::Flow {
                table: 1000,
                multiplier: 1000.0,
            },
            "aura_flow" => ModelSampling::Flow {
                table: 1000,
                multiplier: 1.0,
            },
            "flux" => ModelSampling::Flow {
                table: 10000,
                multiplier: 1.0,
            },
            _ => return None,
        })
    }

    /// Entries of the model's sigma table.
    pub fn table_len(&self) -> usize {
        match self {
            ModelSampling::Discrete { sigmas, .. } => sigmas.len(),
            ModelSampling::Flow { table, .. } => *table,
        }
    }
}

/// The sigma of every training timestep for a scaled-linear beta schedule,
/// rounded to float32 as ComfyUI keeps them.
pub fn discrete_sigmas(linear_start: f64, linear_end: f64) -> Vec<f64> {
    to_f32(alpha_cumprods(linear_start, linear_end).map(sigma_of_alpha_cumprod))
}

/// The sigmas of the 1000-step table of `betas` from SD's first beta to
/// `linear_end`, rounded to float32.
pub fn beta_sigmas(betas: Betas, linear_end: f64) -> Vec<f64> {
    match betas {
        Betas::Linear => discrete_sigmas(LINEAR_START, linear_end),
        Betas::SqrtLinear => {
            let n = DISCRETE_TIMESTEPS;
            let mut alpha_cumprod = 1.0;
            to_f32((0..n).map(|i| {
                let beta = LINEAR_START + (linear_end - LINEAR_START) * i as f64 / (n - 1) as f64;
                alpha_cumprod *= 1.0 - beta;
                sigma_of_alpha_cumprod(alpha_cumprod)
            }))
        }
    }
}

/// SD's table (betas from 0.00085 to 0.012), maybe rescaled to zero
/// terminal SNR (Lin et al. 2024, as `ModelSamplingDiscrete`'s `zsnr`
/// rescales it: `sqrt(alpha_cumprod)` shifted to end at 0 and scaled to
/// keep its start, the last alpha_cumprod then 4.8973451890853435e-08).
pub fn scaled_linear_sigmas(zero_terminal_snr: bool) -> Vec<f64> {
    if !zero_terminal_snr {
        return discrete_sigmas(LINEAR_START, LINEAR_END);
    }
    let roots: Vec<f64> = alpha_cumprods(LINEAR_START, LINEAR_END)
        .map(f64::sqrt)
        .collect();
    let (first, last) = (roots[0], roots[roots.len() - 1]);
    let n = roots.len();
    to_f32(roots.into_iter().enumerate().map(|(i, root)| {
        let scaled = (root - last) * first / (first - last);
        let alpha_cumprod = if i + 1 == n {
            4.897_345_189_085_343_5e-8
        } else {
            scaled * scaled
        };
        sigma_of_alpha_cumprod(alpha_cumprod)
    }))
}

fn alpha_cumprods(linear_start: f64, linear_end: f64) -> impl Iterator<Item = f64> {
    let n = DISCRETE_TIMESTEPS;
    let (a, b) = (linear_start.sqrt(), linear_end.sqrt());
    let mut alpha_cumprod = 1.0;
    (0..n).map(move |i| {
        let root = a + (b - a) * i as f64 / (n - 1) as f64;
        alpha_cumprod *= 1.0 - root * root;
        alpha_cumprod
    })
}

fn sigma_of_alpha_cumprod(alpha_cumprod: f64) -> f64 {
    ((1.0 - alpha_cumprod) / alpha_cumprod).sqrt()
}

fn to_f32(values: impl Iterator<Item = f64>) -> Vec<f64> {
    values.map(|v| f64::from(v as f32)).collect()
}

/// sigma at a fractional timestep `t`: log-linear interpolation of the table.
pub fn sigma_at(sigmas: &[f64], t: f64) -> f64 {
    let t = t.clamp(0.0, (sigmas.len() - 1) as f64);
    let low = t.floor() as usize;
    let high = t.ceil() as usize;
    let w = t - low as f64;
    ((1.0 - w) * sigmas[low].ln() + w * sigmas[high].ln()).exp()
}

/// The model's timestep for `sigma`, as ComfyUI feeds a discrete model:
/// the index of the table entry nearest in log sigma (ties to the lower).
pub fn nearest_timestep(sigmas: &[f64], sigma: f64) -> usize {
    let log_sigma = sigma.ln();
    let distance = |s: &f64| (s.ln() - log_sigma).abs();
    (0..sigmas.len())
        .min_by(|&a, &b| distance(&sigmas[a]).total_cmp(&distance(&sigmas[b])))
        .unwrap_or(0)
}

/// Evenly spaced values from `start` to `end` inclusive (numpy's linspace).
pub fn linspace(start: f64, end: f64, n: usize) -> Vec<f64> {
    match n {
        0 => vec![],
        1 => vec![start],
        _ => (0..n)
            .map(|i| start + (end - start) * i as f64 / (n - 1) as f64)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    #[test]
    fn the_sd_table_spans_comfyuis_sigma_range() {
        let s = discrete_sigmas(0.00085, 0.012);
        assert_eq!(s.len(), 1000);
        // ComfyUI's SD 1.5 sigma_min and sigma_max.
        assert!(close(s[0], 0.029168, 1e-4), "{}", s[0]);
        assert!(close(s[999], 14.614642, 1e-5), "{}", s[999]);
    }

    #[test]
    fn stated_tables_follow_their_model_sampling_node() {
        let read = |parameters| match ModelSampling::read(&parameters) {
            Ok(ModelSampling::Discrete { sigmas, timesteps }) => (sigmas, timesteps),
            other => panic!("{other:?}"),
        };
        let (zsnr, timesteps) = read(serde_json::json!({"zero_terminal_snr": true}));
        assert_eq!(timesteps, Timesteps::NearestIndex);
        // The first sigma kept, the last at alpha_cumprod 4.897e-8.
        assert!(close(zsnr[0], 0.029168, 1e-4), "{}", zsnr[0]);
        assert!(close(zsnr[999], 4518.7, 1e-4), "{}", zsnr[999]);
        assert!(zsnr[500] > discrete_sigmas(0.00085, 0.012)[500]);
        let edm = serde_json::json!({"model_sampling": "continuous_edm", "model_sigma_min": 0.002, "model_sigma_max": 120.0});
        let (sigmas, timesteps) = read(edm);
        assert!(close(sigmas[0], 0.002, 1e-6) && close(sigmas[999], 120.0, 1e-6));
        assert_eq!(timesteps.of(&sigmas, 1.0f64.exp()), 0.25);
        let (lcm, timesteps) = read(serde_json::json!({"model_sampling": "discrete_distilled"}));
        let sd = discrete_sigmas(0.00085, 0.012);
        assert_eq!((lcm.len(), lcm[0], lcm[49]), (50, sd[19], sd[999]));
        assert_eq!(timesteps.of(&lcm, sd[519]), 519.0);
        // percent_to_sigma(0.2) = sigma(799.2): index (799.2 - 19) / 20.
        assert!(close(timesteps.percent_index(0.2, 50), 39.01, 1e-12));
        let backwards = serde_json::json!({"model_sampling": "continuous_edm", "model_sigma_min": 2.0, "model_sigma_max": 1.0});
        assert!(ModelSampling::read(&backwards).is_err());
    }

    #[test]
    fn an_animatediff_loaders_betas_make_their_own_table() {
        // numpy: sqrt((1 - cumprod(1 - b)) / cumprod(1 - b)) as float32,
        // b = linspace(0.00085, 0.012) (sqrt_linear) and
        // linspace(sqrt(0.00085), sqrt(0.02))^2 (linear to 0.020).
        let read = |parameters| match ModelSampling::read(&parameters) {
            Ok(ModelSampling::Discrete { sigmas, .. }) => sigmas,
            other => panic!("{other:?}"),
        };
        let mut parameters = serde_json::json!({});
        let sqrt_linear = Table::Betas {
            betas: Betas::SqrtLinear,
            linear_end: LINEAR_END,
        };
        sqrt_linear.write(&mut parameters);
        let sigmas = read(parameters);
        assert_eq!(sigmas[999], 25.146114349365234);
        assert_eq!(sigmas[0], 0.029167158529162407);
        let mut parameters = serde_json::json!({});
        Table::Betas {
            betas: Betas::Linear,
            linear_end: 0.020,
        }
        .write(&mut parameters);
        assert_eq!(read(parameters)[999], 65.92865753173828);
        let wrong = serde_json::json!({"beta_schedule": "cosine", "linear_end": 0.012});
        assert!(ModelSampling::read(&wrong).is_err());
    }

    #[test]
    fn timesteps_are_the_nearest_table_index() {
        let s = discrete_sigmas(0.00085, 0.012);
        for (t, nearest) in [(0.0, 0), (1.4, 1), (1.6, 2), (250.25, 250), (998.7, 999)] {
            assert_eq!(nearest_timestep(&s, sigma_at(&s, t)), nearest, "{t}");
        }
        assert_eq!(nearest_timestep(&s, 1e3), 999);
        assert_eq!(nearest_timestep(&s, 1e-6), 0);
    }
}
