//! ComfyUI's samplers and the schedulers that pick a run's sigmas from a
//! model's table (`comfy/samplers.py`; the tables themselves are in
//! `tables`; Karras et al. 2022 for `karras` and `exponential`).

use super::tables::{linspace, nearest_timestep, sigma_at};

/// What a sampler's synthesized `solver_step` reads beyond the sample,
/// the guided estimate, the step and the schedule: the one description the
/// lowering's ports and state cells follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// The seed, for fresh noise at every step.
    pub seed: bool,
    /// The unconditional estimate (CFG++ samplers).
    pub unconditional: bool,
    /// Earlier steps' latents it carries: the last 1 to 3 estimates, or 4
    /// for UniPC (its corrected sample and the last three estimates);
    /// `dpm_adaptive` its last lower-order sample.
    pub memory: usize,
    /// How many times it calls the model per step: 1, or 2 or 3 with
    /// calls at noise levels within the step (a `solver_midpoint` policy
    /// finds the second's input and timestep, `solver_third_call` the
    /// third's; the `solver_step` takes their estimates as `second` and
    /// `third`).
    pub calls: usize,
    /// Whether it reads where the run starts (its first sigma, or how many
    /// steps it makes), so the step is told its iteration, which places the
    /// run's start in the schedule.
    pub run_start: bool,
    /// Whether it picks its own step sizes (`dpm_adaptive`): a controller
    /// state cell places its calls, and its step says when the run is
    /// done.
    pub adaptive: bool,
    /// Whether ComfyUI steps it in the model's half log-SNR `ln(alpha /
    /// sigma)` from a first sigma moved below 1 (`offset_first_sigma_for_snr`),
    /// which on a flow model is `ln((1 - sigma) / sigma)`: there the
    /// solver steps by the sigmas of a `solver_sigmas` policy.
    pub half_log_snr: bool,
    /// Whether it is stochastic only between two sigmas of the model
    /// (SA-Solver's interval): on a flow model the run-time shift places
    /// them, and its step and midpoint policies take the shift inputs.
    pub interval: bool,
    /// Whether it steps over a grid of its own between the run's first
    /// sigma and its last nonzero one (`dpm_fast`), which its
    /// `solver_sigmas` policy lays over the run.
    pub grid: bool,
}

impl Needs {
    /// These needs and `memory` earlier latents.
    const fn and_memory(self, memory: usize) -> Needs {
        Needs { memory, ..self }
    }

    /// These needs and the seed.
    const fn and_seed(self) -> Needs {
        Needs { seed: true, ..self }
    }

    /// No needs but `memory` earlier latents.
    const fn remembering(memory: usize) -> Needs {
        PLAIN.and_memory(memory)
    }
}

const PLAIN: Needs = Needs {
    seed: false,
    unconditional: false,
    memory: 0,
    calls: 1,
    run_start: false,
    adaptive: false,
    half_log_snr: false,
    interval: false,
    grid: false,
};
/// Second-order samplers with a model call at a midpoint.
const TWO_CALLS: Needs = Needs { calls: 2, ..PLAIN };
/// Third-order samplers with two model calls within the step.
const THREE_CALLS: Needs = Needs { calls: 3, ..PLAIN };
/// Two-call samplers in the half log-SNR (DPM-Solver++ SDE, SEEDS-2).
const SNR_TWO_CALLS: Needs = Needs {
    half_log_snr: true,
    ..TWO_CALLS.and_seed()
};
const SEEDED: Needs = PLAIN.and_seed();
const CFG_PP: Needs = Needs {
    unconditional: true,
    ..PLAIN
};
/// DPM-Solver++ SDE samplers.
const SDE_2M: Needs = Needs {
    half_log_snr: true,
    ..SEEDED.and_memory(1)
};
const SDE_3M: Needs = SDE_2M.and_memory(2);
/// ER-SDE: the seed, the last estimate and the last estimates' slope.
const ER_SDE: Needs = Needs {
    half_log_snr: true,
    ..SEEDED.and_memory(2)
};

/// SA-Solver: the seed, its corrected sample and the last three
/// estimates (UniPC's cells); on flow models its stochastic interval
/// follows the run-time shift (`solver_sigmas`).
const SA_SOLVER: Needs = Needs {
    half_log_snr: true,
    interval: true,
    ..SEEDED.and_memory(4)
};

/// A sampler the synthesized `solver_step` implements, and its needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampler {
    /// ComfyUI's `sampler_name`.
    pub name: &'static str,
    /// What its step reads.
    pub needs: Needs,
}

/// The samplers the synthesized `solver_step` implements: every one of
/// ComfyUI's core `KSampler` (the lowering refuses others as a custom
/// node's).
pub const SAMPLERS: &[Sampler] = &[
    Sampler {
        name: "euler",
        needs: PLAIN,
    },
    Sampler {
        name: "euler_ancestral",
        needs: SEEDED,
    },
    Sampler {
        name: "ddim",
        needs: PLAIN,
    },
    Sampler {
        name: "dpmpp_2m",
        needs: Needs::remembering(1),
    },
    Sampler {
        name: "uni_pc",
        needs: Needs::remembering(4),
    },
    Sampler {
        name: "uni_pc_bh2",
        needs: Needs::remembering(4),
    },
    Sampler {
        name: "lcm",
        needs: SEEDED,
    },
    Sampler {
        name: "ddpm",
        needs: SEEDED,
    },
    Sampler {
        name: "dpmpp_2m_sde",
        needs: SDE_2M,
    },
    Sampler {
        name: "dpmpp_2m_sde_gpu",
        needs: SDE_2M,
    },
    Sampler {
        name: "dpmpp_2m_sde_heun",
        needs: SDE_2M,
    },
    Sampler {
        name: "dpmpp_2m_sde_heun_gpu",
        needs: SDE_2M,
    },
    Sampler {
        name: "dpmpp_3m_sde",
        needs: SDE_3M,
    },
    Sampler {
        name: "dpmpp_3m_sde_gpu",
        needs: SDE_3M,
    },
    Sampler {
        name: "res_multistep",
        needs: Needs::remembering(1),
    },
    Sampler {
        name: "res_multistep_ancestral",
        needs: SEEDED.and_memory(1),
    },
    Sampler {
        name: "gradient_estimation",
        needs: Needs::remembering(1),
    },
    Sampler {
        name: "ipndm",
        needs: Needs::remembering(3),
    },
    Sampler {
        name: "ipndm_v",
        needs: Needs::remembering(3),
    },
    Sampler {
        name: "lms",
        needs: Needs::remembering(3),
    },
    Sampler {
        name: "deis",
        needs: Needs::remembering(3),
    },
    Sampler {
        name: "er_sde",
        needs: ER_SDE,
    },
    Sampler {
        name: "sa_solver",
        needs: SA_SOLVER,
    },
    Sampler {
        name: "sa_solver_pece",
        needs: Needs {
            calls: 2,
            ..SA_SOLVER
        },
    },
    Sampler {
        name: "heun",
        needs: TWO_CALLS,
    },
    Sampler {
        name: "dpm_2",
        needs: TWO_CALLS,
    },
    Sampler {
        name: "dpm_2_ancestral",
        needs: TWO_CALLS.and_seed(),
    },
    Sampler {
        name: "dpmpp_2s_ancestral",
        needs: TWO_CALLS.and_seed(),
    },
    Sampler {
        name: "dpmpp_sde",
        needs: SNR_TWO_CALLS,
    },
    Sampler {
        name: "dpmpp_sde_gpu",
        needs: SNR_TWO_CALLS,
    },
    Sampler {
        name: "seeds_2",
        needs: SNR_TWO_CALLS,
    },
    Sampler {
        name: "heunpp2",
        needs: Needs {
            run_start: true,
            ..THREE_CALLS
        },
    },
    Sampler {
        name: "seeds_3",
        needs: Needs {
            half_log_snr: true,
            ..THREE_CALLS.and_seed()
        },
    },
    Sampler {
        name: "dpm_fast",
        needs: Needs {
            grid: true,
            run_start: true,
            ..THREE_CALLS
        },
    },
    Sampler {
        name: "dpm_adaptive",
        needs: Needs {
            adaptive: true,
            memory: 1,
            ..THREE_CALLS
        },
    },
    Sampler {
        name: "dpmpp_2s_ancestral_cfg_pp",
        needs: Needs {
            unconditional: true,
            ..TWO_CALLS.and_seed()
        },
    },
    Sampler {
        name: "euler_cfg_pp",
        needs: CFG_PP,
    },
    Sampler {
        name: "euler_ancestral_cfg_pp",
        needs: CFG_PP.and_seed(),
    },
    Sampler {
        name: "dpmpp_2m_cfg_pp",
        needs: CFG_PP.and_memory(1),
    },
    Sampler {
        name: "res_multistep_cfg_pp",
        needs: CFG_PP.and_memory(1),
    },
    Sampler {
        name: "res_multistep_ancestral_cfg_pp",
        needs: CFG_PP.and_seed().and_memory(1),
    },
    Sampler {
        name: "gradient_estimation_cfg_pp",
        needs: CFG_PP.and_memory(1),
    },
];

/// The sampler named `name`, if the synthesis implements it.
pub fn sampler(name: &str) -> Option<&'static Sampler> {
    SAMPLERS.iter().find(|s| s.name == name)
}

/// The names of [`SAMPLERS`], in order.
pub fn sampler_names() -> Vec<&'static str> {
    SAMPLERS.iter().map(|s| s.name).collect()
}

/// The loop iterations sampler `sampler` makes over a run of `steps`
/// steps: DPM-Solver-fast takes `floor(steps / 3) + 1` (of up to three
/// model calls each, `steps` calls in all), DPM-Solver adaptive at most
/// [`ADAPTIVE_ITERATIONS`] (its controller ends the loop), every other
/// sampler one per step.
pub fn iterations(sampler: &str, steps: i64) -> i64 {
    match sampler {
        "dpm_fast" => steps / 3 + 1,
        "dpm_adaptive" => ADAPTIVE_ITERATIONS,
        _ => steps,
    }
}

/// The most iterations (attempted steps, each three model calls) a
/// `dpm_adaptive` run makes by default; ComfyUI's has no bound, and a run
/// that reaches it stops short of its last sigma.
pub const ADAPTIVE_ITERATIONS: i64 = 500;

/// The schedulers the synthesized `diffusion_schedule` implements (the
/// lowering refuses others).
pub const SCHEDULES: &[&str] = &[
    "normal",
    "simple",
    "karras",
    "exponential",
    "ddim_uniform",
    "sgm_uniform",
    "beta",
    "linear_quadratic",
    "kl_optimal",
];

/// Whether ComfyUI's `KSampler` and `KSamplerAdvanced` run `sampler` on a
/// schedule computed for one step more with its penultimate sigma dropped
/// (`KSampler.DISCARD_PENULTIMATE_SIGMA_SAMPLERS`; custom sampling's
/// schedulers do not).
pub fn discards_penultimate(sampler: &str) -> bool {
    matches!(
        sampler,
        "dpm_2" | "dpm_2_ancestral" | "uni_pc" | "uni_pc_bh2"
    )
}

/// `normal` (`sgm`: `sgm_uniform`) on a `ModelSamplingContinuousV` model
/// with sigmas from `sigma_min` to `sigma_max`: timesteps `atan(sigma) * 2
/// / pi` evenly spaced between theirs, mapped back by `tan(t * pi / 2)`,
/// then 0, as ComfyUI's `normal_scheduler` does with that model's
/// `timestep` and `sigma`.
pub fn arctan_schedule(sigma_min: f64, sigma_max: f64, sgm: bool, steps: usize) -> Vec<f64> {
    let timestep = |s: f64| s.atan() * 2.0 / std::f64::consts::PI;
    let sigma = |t: f64| (t * std::f64::consts::PI / 2.0).tan();
    let (start, end) = (timestep(sigma_max), timestep(sigma_min));
    let ramp = match sgm {
        true => sgm_ramp(steps),
        false => linspace(0.0, 1.0, steps),
    };
    ramp.into_iter()
        .map(|r| sigma(start + r * (end - start)))
        .chain([0.0])
        .collect()
}

/// The sigmas of a discrete model's schedule of `steps` steps by
/// `scheduler`, ending in 0 (`steps + 1` values, fewer for `ddim_uniform`
/// with step counts that do not divide the table).
pub fn discrete_schedule(sigmas: &[f64], scheduler: &str, steps: usize) -> Option<Vec<f64>> {
    let (sigma_min, sigma_max) = (sigmas[0], sigmas[sigmas.len() - 1]);
    let mut out = match scheduler {
        "normal" => {
            let start = nearest_timestep(sigmas, sigma_max) as f64;
            let end = nearest_timestep(sigmas, sigma_min) as f64;
            linspace(start, end, steps)
                .into_iter()
                .map(|t| sigma_at(sigmas, t))
                .collect()
        }
        "simple" | "ddim_uniform" | "beta" => table_indices(scheduler, sigmas.len(), steps)?
            .into_iter()
            .map(|i| sigmas[i])
            .collect(),
        "sgm_uniform" => {
            let start = nearest_timestep(sigmas, sigma_max) as f64;
            let end = nearest_timestep(sigmas, sigma_min) as f64;
            sgm_ramp(steps)
                .into_iter()
                .map(|r| sigma_at(sigmas, start + r * (end - start)))
                .collect()
        }
        "karras" => karras(sigma_min, sigma_max, 7.0, steps),
        "exponential" => linspace(sigma_max.ln(), sigma_min.ln(), steps)
            .into_iter()
            .map(f64::exp)
            .collect(),
        "kl_optimal" => kl_optimal(sigma_min, sigma_max, steps),
        "linear_quadratic" => {
            return Some(
                linear_quadratic(steps)
                    .into_iter()
                    .map(|s| s * sigma_max)
                    .collect(),
            );
        }
        _ => return None,
    };
    out.push(0.0);
    Some(out)
}

/// Karras et al. (2022), eq. 5 (ComfyUI's scheduler takes rho = 7):
/// `steps` sigmas from `sigma_max` down to `sigma_min`.
pub fn karras(sigma_min: f64, sigma_max: f64, rho: f64, steps: usize) -> Vec<f64> {
    let (min_inv, max_inv) = (sigma_min.powf(1.0 / rho), sigma_max.powf(1.0 / rho));
    linspace(0.0, 1.0, steps)
        .into_iter()
        .map(|r| (max_inv + r * (min_inv - max_inv)).powf(rho))
        .collect()
}

/// The table indices a scheduler that picks table entries (`simple`,
/// `ddim_uniform`, `beta`) takes, highest first; `None` for the others.
pub fn table_indices(scheduler: &str, table: usize, steps: usize) -> Option<Vec<usize>> {
    Some(match scheduler {
        "simple" => simple_indices(table, steps),
        "ddim_uniform" => ddim_uniform_indices(table, steps),
        "beta" => beta_indices(table, steps, 0.6, 0.6),
        _ => return None,
    })
}

/// `sgm_uniform`'s fractions of the way from the first timestep to the
/// last: `steps + 1` evenly spaced points without the last.
pub fn sgm_ramp(steps: usize) -> Vec<f64> {
    let mut ramp = linspace(0.0, 1.0, steps + 1);
    ramp.pop();
    ramp
}

/// The table indices the `beta` scheduler takes, highest first: the
/// beta(alpha, beta) quantiles of `1 - i / steps` (the scheduler's shapes
/// are 0.6 and 0.6) scaled to the table and rounded half to even, repeats
/// dropped.
pub fn beta_indices(table: usize, steps: usize, alpha: f64, beta: f64) -> Vec<usize> {
    let total = table.saturating_sub(1) as f64;
    let mut picked: Vec<usize> = Vec::with_capacity(steps);
    for i in 0..steps {
        let t = 1.0 - i as f64 / steps as f64;
        let index = (super::beta::quantile(t, alpha, beta) * total).round_ties_even() as usize;
        if picked.last() != Some(&index) {
            picked.push(index);
        }
    }
    picked
}

/// Mochi's `linear_quadratic` schedule for a maximum sigma of 1
/// (threshold noise 0.025, the first half linear): `steps + 1` values from
/// 1 down to 0.
pub fn linear_quadratic(steps: usize) -> Vec<f64> {
    if steps == 1 {
        return vec![1.0, 0.0];
    }
    let threshold = 0.025;
    let linear = steps / 2;
    let quadratic = (steps - linear) as f64;
    let lin = linear as f64;
    let diff = lin - threshold * steps as f64;
    let quadratic_coef = diff / (lin * quadratic * quadratic);
    let linear_coef = threshold / lin - 2.0 * diff / (quadratic * quadratic);
    let constant = quadratic_coef * lin * lin;
    let rising = (0..linear)
        .map(|i| i as f64 * threshold / lin)
        .chain((linear..steps).map(|i| {
            let i = i as f64;
            quadratic_coef * i * i + linear_coef * i + constant
        }))
        .chain([1.0]);
    rising.map(|x| 1.0 - x).collect()
}

/// The KL-optimal schedule as ComfyUI computes it: `steps` sigmas with
/// `atan(sigma)` evenly spaced from `sigma_max` to `sigma_min`.
pub fn kl_optimal(sigma_min: f64, sigma_max: f64, steps: usize) -> Vec<f64> {
    let (low, high) = (sigma_min.atan(), sigma_max.atan());
    linspace(0.0, 1.0, steps)
        .into_iter()
        .map(|r| (r * low + (1.0 - r) * high).tan())
        .collect()
}

/// The table indices the `simple` scheduler takes, highest first.
pub fn simple_indices(table: usize, steps: usize) -> Vec<usize> {
    let ss = table as f64 / steps as f64;
    (0..steps)
        .map(|x| table - 1 - (x as f64 * ss) as usize)
        .collect()
}

/// The table indices the `ddim_uniform` scheduler takes, highest first.
pub fn ddim_uniform_indices(table: usize, steps: usize) -> Vec<usize> {
    if steps == 0 {
        return Vec::new();
    }
    let ss = (table / steps).max(1);
    let mut picked: Vec<usize> = (1..table).step_by(ss).collect();
    picked.reverse();
    picked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comfyui::synth::tables::{ModelSampling, discrete_sigmas};

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    #[test]
    fn karras_matches_the_papers_formula_at_its_ends() {
        let k = karras(0.03, 4.0, 7.0, 4);
        assert!(close(k[0], 4.0, 1e-12) && close(k[3], 0.03, 1e-12));
        // The corpus txt2img package's schedule (sigma range 0.03..4).
        assert!(close(k[1], 1.107_270_6, 1e-6), "{}", k[1]);
        assert!(close(k[2], 0.229_387_48, 1e-6), "{}", k[2]);
    }

    #[test]
    fn schedules_have_steps_plus_one_sigmas_ending_in_zero() {
        let s = discrete_sigmas(0.00085, 0.012);
        for scheduler in SCHEDULES {
            let sched = discrete_schedule(&s, scheduler, 20).expect("known");
            assert_eq!(sched.len(), 21, "{scheduler}");
            assert_eq!(sched[20], 0.0);
            assert!(
                sched.windows(2).all(|w| w[0] > w[1]),
                "{scheduler}: {sched:?}"
            );
        }
        let normal = discrete_schedule(&s, "normal", 20).expect("normal");
        assert!(close(normal[0], 14.614642, 1e-5) && close(normal[19], 0.029168, 1e-4));
        assert_eq!(discrete_schedule(&s, "sigmoid", 20), None);
    }

    #[test]
    fn ddim_uniform_gives_a_sigma_per_picked_timestep() {
        let sd = ModelSampling::of_family("discrete").expect("sd");
        let sched = match &sd {
            ModelSampling::Discrete { sigmas, .. } => discrete_schedule(sigmas, "ddim_uniform", 6),
            ModelSampling::Flow { .. } => None,
        };
        assert_eq!(sched.map(|s| s.len()), Some(8));
        assert!(ddim_uniform_indices(1000, 0).is_empty() && simple_indices(1000, 0).is_empty());
    }
}
