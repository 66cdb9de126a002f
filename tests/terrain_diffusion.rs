//! The real terrain diffusion package (`fixtures/real/terrain-diffusion`,
//! installed by `scripts/real_models.sh`): with the request's own noise the
//! one-step terrain equals the model fed directly with onnxruntime, and the
//! multistep, seeded and variation runs equal a numpy implementation of the
//! rules
//! (tests/reference/terrain_reference.py); bad inputs are refused by name
//! before the model runs; the studio shows the terrain and each step.

mod support;

use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wfstudio-terrain-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

#[test]
fn the_package_matches_onnxruntime_and_the_multistep_rule() {
    let (Some(package), Some(python)) = (support::terrain(), support::python()) else {
        return;
    };
    let reference = support::workspace().join("tests/reference/terrain_reference.py");
    let root = scratch("match");
    for (steps, kind) in [
        ("1", "fresh"),
        ("3", "fresh"),
        ("2", "seeded"),
        ("2", "variation"),
    ] {
        let case = root.join(format!("{kind}-{steps}"));
        support::python_stdout(&python, &[s(&reference), "--case", steps, kind, s(&case)]);
        let out = case.join("out");
        let (code, stdout, stderr) = support::run_wfstudio(&[
            "run",
            s(&package),
            "--recipe",
            s(&case.join("recipe.json")),
            "--out",
            s(&out),
            "--png16",
            "heights=0,22.16864013671875",
        ]);
        assert_eq!(code, 0, "{kind} {steps}: {stdout}{stderr}");
        assert!(out.join("terrain.0.png").is_file() && out.join("terrain.1.png").is_file());
        // The heights as 16-bit pictures: 0 m black, the top of the range white.
        let grey = image::open(out.join("heights.1.16bit.png"))
            .expect("a 16-bit PNG")
            .to_luma16();
        assert_eq!(grey.dimensions(), (128, 128));
        assert!(grey.pixels().any(|p| p.0[0] > 1000), "a black heightmap");
        let direct = case.join("reference.npy");
        support::python_stdout(
            &python,
            &[
                s(&reference),
                s(&package),
                s(&case.join("inputs.npz")),
                s(&direct),
            ],
        );
        let compare = "import numpy as np, sys\na, b = np.load(sys.argv[1]), np.load(sys.argv[2])\nassert a.shape == b.shape == (2, 128, 128), (a.shape, b.shape)\nprint(float(np.abs(a - b).max() / 22.16864013671875), float(b.std()))";
        let report = support::python_stdout(
            &python,
            &["-c", compare, s(&out.join("heights.npy")), s(&direct)],
        );
        let (worst, spread) = report.trim().split_once(' ').expect("two numbers");
        let (worst, spread): (f64, f64) = (
            worst.parse().expect("a number"),
            spread.parse().expect("a number"),
        );
        eprintln!(
            "{kind}, {steps} steps: largest difference {worst:.2e} of the height range (terrain std {spread:.2} m)"
        );
        // One step feeds the model exactly what the reference does (only
        // float32 sinh differs); later steps' sigmas are float32 powers here
        // and float64 in numpy.
        let limit = if steps == "1" { 1e-6 } else { 1e-5 };
        assert!(worst <= limit, "{kind} {steps}: {worst} of the range");
        assert!(spread > 0.05, "{kind} {steps}: a flat terrain ({spread})");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn bad_inputs_are_refused_by_name_before_the_model_runs() {
    let Some(package) = support::terrain() else {
        return;
    };
    let out = scratch("refused");
    let small =
        serde_json::json!({"dtype": "float32", "shape": [1, 64, 64], "data": vec![0.0; 64 * 64]})
            .to_string();
    let small_flag = format!("request.source={small}");
    let cases: [(&str, &str); 5] = [
        (
            "request.difficulty=[120]",
            "input 'request.difficulty' is 120 (element 0), outside 0..=99",
        ),
        (
            "request.difficulty=[-1]",
            "input 'request.difficulty' is -1 (element 0), outside 0..=99",
        ),
        (
            "request.steps=0",
            "input 'request.steps' is 0 (element 0), outside 1..=64",
        ),
        (
            "request.strength=1.5",
            "input 'request.strength' is 1.5 (element 0), outside 0..=1",
        ),
        (&small_flag, "input 'request.source'"),
    ];
    for (flag, message) in cases {
        let (code, stdout, stderr) =
            support::run_wfstudio(&["run", s(&package), "--input", flag, "--out", s(&out)]);
        assert_ne!(code, 0, "{flag} ran");
        let log = format!("{stdout}{stderr}");
        assert!(log.contains(message), "{flag}: {log}");
        assert!(
            !out.join("heights.npy").exists(),
            "a refused run wrote its output"
        );
    }
}

#[test]
fn the_studio_shows_the_terrain_and_each_steps_timing() {
    let Some(package) = support::terrain() else {
        return;
    };
    if support::xvfb_run().is_none() {
        return;
    }
    let png = scratch("studio").with_extension("png");
    support::screenshot_after_run(&package, &[], &png, "1400x900");
    let image = image::open(&png).expect("a PNG").to_rgba8();
    // The preview's terrain colours: water blue and lowland green.
    let (mut water, mut green) = (0, 0);
    for p in image.pixels() {
        let [r, g, b, _] = p.0.map(u16::from);
        water += usize::from(b > 100 && b > r + 40 && b > g + 10);
        green += usize::from(g > 80 && g > r + 25 && g > b + 25);
    }
    assert!(
        water + green > 5000,
        "terrain pixels: water {water}, green {green}"
    );
    if let Some(text) = support::ocr(&png) {
        // The default recipe's four steps, each timed.
        for expected in ["iteration 4 of 4", "ms x 4"] {
            assert!(text.contains(expected), "{expected:?} not read in:\n{text}");
        }
    }
    // The value inspector on the denoised latent: one value per step, a
    // slider through them.
    support::screenshot_after_run(&package, &["--inspect", "denoised"], &png, "1400x900");
    if let Some(text) = support::ocr(&png) {
        for expected in ["Value denoised", "loop iteration", "[1, 1, 128, 128]"] {
            assert!(text.contains(expected), "{expected:?} not read in:\n{text}");
        }
    }
    let _ = std::fs::remove_file(&png);
}
