//! Tests of `spacing`: contract round trips and ComfyUI's schedules.

use super::*;

fn sd() -> ModelSampling {
    ModelSampling::of_family("discrete").expect("sd")
}

#[test]
fn every_schedule_survives_its_contract_parameters() {
    let schedules = [
        Schedule::named("ddim_uniform", true),
        Schedule {
            first: Some(10000.0),
            ..Schedule::named("normal", false)
        },
        Schedule::of(Spacing::Karras {
            sigma_min: 0.1,
            sigma_max: 10.0,
            rho: 5.5,
        }),
        Schedule::of(Spacing::Exponential {
            sigma_min: 0.1,
            sigma_max: 10.0,
        }),
        Schedule::of(Spacing::Polyexponential {
            sigma_min: 0.1,
            sigma_max: 10.0,
            rho: 1.5,
        }),
        Schedule::of(Spacing::Beta {
            alpha: 0.5,
            beta: 0.7,
        }),
        Schedule::of(Spacing::SdTurbo { denoise: 0.75 }),
        Schedule::of(Spacing::Manual {
            sigmas: vec![1.0, 0.978453, 0.1 + 0.2, 0.0],
        }),
        Schedule::of(Spacing::Flux2 {
            width: 1024,
            height: 768,
        }),
        Schedule {
            flip: true,
            ..Schedule::of(Spacing::AlignYourSteps {
                model_type: "SDXL".into(),
                denoise: 1.0,
            })
        },
    ];
    for schedule in schedules {
        let mut parameters = json!({});
        schedule.write(&mut parameters);
        // Contract parameters are scalars or strings.
        let values = parameters.as_object().expect("an object").values();
        assert!(
            values.clone().all(|v| !v.is_array() && !v.is_object()),
            "{parameters}"
        );
        assert_eq!(Schedule::read(&parameters), Ok(schedule));
    }
    let unknown = Schedule::read(&json!({"spacing": "sigmoid_offset"}));
    assert!(unknown.is_err_and(|e| e.starts_with("the `sigmoid_offset` scheduler")));
    // A hand-edited contract whose schedule would not fall through
    // positive sigmas is refused.
    for bad in [
        json!({"spacing": "karras", "sigma_min": 0.0, "sigma_max": 10.0, "rho": 7.0}),
        json!({"spacing": "exponential", "sigma_min": 5.0, "sigma_max": 1.0}),
        json!({"spacing": "polyexponential", "sigma_min": 0.1, "sigma_max": 1.0, "rho": -1.0}),
        json!({"spacing": "beta", "alpha": 0.0, "beta": 0.6}),
        json!({"spacing": "sd_turbo", "denoise": 1.5}),
    ] {
        assert!(Schedule::read(&bad).is_err(), "{bad}");
    }
}

#[test]
fn ddim_uniform_runs_as_many_steps_as_its_stride_picks() {
    let steps = |name: &str, n| Schedule::named(name, false).run_steps(&sd(), n);
    // 1000 // 6 = 166: timesteps 1, 167, ..., 997 are seven.
    assert_eq!(steps("ddim_uniform", 6), 7);
    assert_eq!(steps("ddim_uniform", 20), 20);
    assert_eq!(steps("karras", 6), 6);
    // uni_pc's schedule for 7 steps, its penultimate sigma dropped.
    assert_eq!(Schedule::named("ddim_uniform", true).run_steps(&sd(), 6), 7);
}

#[test]
fn align_your_steps_interpolates_only_between_its_levels() {
    let ten = Schedule::of(Spacing::AlignYourSteps {
        model_type: "SD1".into(),
        denoise: 1.0,
    });
    let levels = noise_levels("SD1").expect("SD1");
    let sigmas = ten.constant(&sd(), 10).expect("constant");
    assert_eq!(&sigmas[..10], &levels[..10]);
    assert_eq!(sigmas[10], 0.0);
    // 5 steps: every other level (the interpolation hits them), then
    // the last 3 steps at denoise 0.6.
    let short = Schedule::of(Spacing::AlignYourSteps {
        model_type: "SD1".into(),
        denoise: 0.6,
    });
    let sigmas = short.constant(&sd(), 5).expect("constant");
    assert_eq!(sigmas.len(), 4);
    for (ours, level) in sigmas.iter().zip([levels[4], levels[6], levels[8]]) {
        assert!((ours - level).abs() < 1e-9 * level, "{ours} {level}");
    }
    assert_eq!(short.run_steps(&sd(), 5), 3);
}

#[test]
fn sd_turbo_takes_the_models_sigma_every_hundred_timesteps() {
    let table = match sd() {
        ModelSampling::Discrete { sigmas, .. } => sigmas,
        ModelSampling::Flow { .. } => unreachable!(),
    };
    let turbo = Schedule::of(Spacing::SdTurbo { denoise: 0.5 });
    let sigmas = turbo.constant(&sd(), 8).expect("constant");
    // int(10 * 0.5) = 5 timesteps left: 499, 399, 299, 199, 99.
    assert_eq!(
        sigmas,
        vec![
            table[499], table[399], table[299], table[199], table[99], 0.0
        ]
    );
    assert_eq!(turbo.run_steps(&sd(), 8), 5);
    // On LCM's distilled table timestep 499 is entry (499 - 19) / 20.
    let lcm = ModelSampling::read(&json!({"model_sampling": "discrete_distilled"}));
    let lcm = lcm.expect("the distilled table");
    let ModelSampling::Discrete {
        sigmas: entries, ..
    } = &lcm
    else {
        unreachable!("a table")
    };
    assert_eq!(turbo.constant(&lcm, 8).expect("constant")[0], entries[24]);
    assert_eq!(turbo.fixed_steps(2), Some(2));
}

#[test]
fn a_flipped_schedule_rises_from_a_small_first_sigma() {
    let flipped = Schedule {
        flip: true,
        ..Schedule::of(Spacing::Exponential {
            sigma_min: 0.5,
            sigma_max: 8.0,
        })
    };
    let sigmas = flipped.constant(&sd(), 5).expect("constant");
    let expected = [FLIPPED_ZERO, 0.5, 1.0, 2.0, 4.0, 8.0];
    assert_eq!(sigmas.len(), expected.len());
    for (ours, exact) in sigmas.iter().zip(expected) {
        assert!((ours - exact).abs() < 1e-12, "{sigmas:?}");
    }
    let flow = ModelSampling::of_family("flux").expect("flux");
    assert_eq!(Schedule::named("simple", false).constant(&flow, 4), None);
    assert!(flipped.constant(&flow, 4).is_some());
}

#[test]
fn a_set_first_sigma_replaces_the_first_before_a_flip() {
    // Lotus' one step: ComfyUI's normal schedule on SD's table, then
    // `SetFirstSigma` 10000.
    let lotus = Schedule {
        first: Some(10000.0),
        ..Schedule::named("normal", false)
    };
    assert_eq!(lotus.constant(&sd(), 1), Some(vec![10000.0, 0.0]));
    assert!(!lotus.starts_at_top());
    // Set, then reversed (`SetFirstSigma` then `FlipSigmas`).
    let flipped = Schedule {
        first: Some(3.0),
        flip: true,
        ..Schedule::of(Spacing::Manual {
            sigmas: vec![2.0, 1.0, 0.0],
        })
    };
    assert_eq!(
        flipped.constant(&sd(), 2),
        Some(vec![FLIPPED_ZERO, 1.0, 3.0])
    );
    let mut parameters = json!({});
    lotus.write(&mut parameters);
    parameters["first_sigma"] = json!(-1.0);
    assert_eq!(
        Schedule::read(&parameters),
        Err("its contract parameter `first_sigma` is below 0".into())
    );
}

#[test]
fn flux2_and_manual_schedules_are_comfyuis_on_any_model() {
    let flow = ModelSampling::of_family("flux").expect("flux");
    // ComfyUI's Flux2Scheduler (torch float32 timesteps), computed
    // with numpy.
    let cases: [(i64, i64, usize, &[f64]); 2] = [
        (
            1024,
            1024,
            4,
            &[1.0, 0.967_384_04, 0.908_143_94, 0.767_199_93, 0.0],
        ),
        (64, 64, 2, &[1.0, 0.876_573_92, 0.0]),
    ];
    for (width, height, steps, want) in cases {
        let schedule = Schedule::of(Spacing::Flux2 { width, height });
        let got = schedule.constant(&flow, steps).expect("stated");
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() < 1e-6,
                "{width}x{height}, {steps} steps: {got:?}"
            );
        }
        assert!(!schedule.follows_model());
    }
    // LTXVScheduler, stretched and not (numpy, float32 as torch).
    let ltxv = |stretch: bool, tokens: i64| {
        Schedule::of(Spacing::Ltxv(Ltxv {
            max_shift: 2.05,
            base_shift: 0.95,
            stretch,
            terminal: 0.1,
            tokens,
        }))
    };
    let cases: [(Schedule, usize, &[f64]); 2] = [
        (
            ltxv(true, 4992),
            4,
            &[1.0, 0.875_844_84, 0.648_745_66, 0.1, 0.0],
        ),
        (
            ltxv(false, 4096),
            3,
            &[1.0, 0.939_525_19, 0.795_247_73, 0.0],
        ),
    ];
    for (schedule, steps, want) in cases {
        let got = schedule.constant(&flow, steps).expect("stated");
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{got:?}");
        }
        let mut parameters = json!({});
        schedule.write(&mut parameters);
        assert_eq!(Schedule::read(&parameters), Ok(schedule));
    }
    let manual = Schedule::of(Spacing::Manual {
        sigmas: vec![1.0, 0.725, 0.421_875, 0.0],
    });
    // The list, whatever the step count asked.
    assert_eq!(manual.fixed_steps(20), Some(3));
    assert_eq!(
        manual.constant(&sd(), 20),
        Some(vec![1.0, 0.725, 0.421_875, 0.0])
    );
}
