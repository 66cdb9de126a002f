//! The device path on a machine without a GPU: with every model port
//! treated as in device memory (`LoadOptions::simulate_device_memory`),
//! calls go through ONNX Runtime's I/O binding, outputs stay in ONNX
//! Runtime's memory between calls and only the copies a GPU would make are
//! counted. The outputs must equal the host path's, and the counts must be
//! exactly those of the workflow's data flow.

mod support;

use std::sync::atomic::AtomicBool;
use wfstudio_runner::recipe;
use wfstudio_runner::transfers::{Copies, Transfers};
use wfstudio_runner::{LoadOptions, RunControl, RunOutput, Runner};

fn run(package: &str, recipe_file: &str, simulate: bool) -> (RunOutput, recipe::Recipe) {
    run_keeping(package, recipe_file, simulate, 0)
}

/// [`run`], keeping up to `keep_bytes` of intermediate values (as the
/// studio's value inspector does).
fn run_keeping(
    package: &str,
    recipe_file: &str,
    simulate: bool,
    keep_bytes: usize,
) -> (RunOutput, recipe::Recipe) {
    let dir = support::fixtures().join("examples").join(package);
    let r = recipe::parse(
        &std::fs::read_to_string(dir.join("recipes").join(recipe_file)).expect("recipe"),
    )
    .expect("valid");
    let options = LoadOptions {
        simulate_device_memory: simulate,
        ..LoadOptions::default()
    };
    let mut runner = Runner::load(&dir, &options).expect("loads");
    let cancel = AtomicBool::new(false);
    let control = || RunControl {
        observer: None,
        cancel: &cancel,
        keep_bytes,
        reuse: None,
    };
    // Twice: the second run is the warm one a studio makes, and must count
    // the same copies.
    let first = runner.run(r.inputs.clone(), control()).expect("runs");
    let second = runner.run(r.inputs.clone(), control()).expect("runs again");
    assert_eq!(first.transfers, second.transfers, "{package} {recipe_file}");
    assert_eq!(first.outputs, second.outputs, "{package} {recipe_file}");
    (second, r)
}

#[test]
fn kept_device_values_give_the_host_paths_outputs() {
    if !support::runtime_available() {
        return;
    }
    for (package, recipe_file) in support::EXAMPLE_RECIPES {
        let (host, r) = run(package, recipe_file, false);
        let (device, _) = run(package, recipe_file, true);
        assert_eq!(
            host.transfers,
            Transfers::default(),
            "{package}: no copies on the CPU"
        );
        assert!(
            device.transfers.count() > 0,
            "{package}: the device path ran"
        );
        assert_eq!(device.outputs, host.outputs, "{package} {recipe_file}");
        assert_eq!(
            recipe::compare(&device.outputs, &r.outputs, r.abs, r.rel),
            Vec::<String>::new(),
            "{package} {recipe_file}"
        );
    }
}

/// tiny-denoise runs its denoiser 4 times on a carried latent
/// [1, 4, 8, 8] f32 (1024 bytes) and an int64 step, then decodes it to an
/// image [1, 3, 32, 32] f32 (12288 bytes) that the host emits. The latent
/// goes to the device once and stays there; each step index goes over; the
/// image comes back once.
#[test]
fn a_denoising_loop_keeps_its_latent_on_the_device() {
    if !support::runtime_available() {
        return;
    }
    let (device, _) = run("tiny-denoise", "smiley.json", true);
    assert_eq!(
        device.transfers,
        Transfers {
            to_device: Copies {
                count: 1 + 4,
                bytes: 1024 + 4 * 8,
            },
            to_host: Copies {
                count: 1,
                bytes: 12288,
            },
        }
    );
}

/// Keeping values for inspection copies only what fits the budget: with
/// room for one latent (1024 bytes) of the five calls' outputs, the first
/// denoiser output comes back, and nothing else beyond the emitted image.
#[test]
fn kept_values_are_copied_to_the_host_only_within_the_budget() {
    if !support::runtime_available() {
        return;
    }
    let (device, _) = run_keeping("tiny-denoise", "smiley.json", true, 2000);
    assert_eq!(device.kept.len(), 1);
    assert!(device.kept_truncated);
    assert_eq!(
        device.transfers.to_host,
        Copies {
            count: 2,
            bytes: 1024 + 12288,
        }
    );
    let (host, _) = run_keeping("tiny-denoise", "smiley.json", false, 2000);
    assert_eq!(device.kept[0].tensor, host.kept[0].tensor);
}
