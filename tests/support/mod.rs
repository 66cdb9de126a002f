//! Shared helpers of the end-to-end tests: where the workspace, the fixtures
//! and the read-only shared corpus are.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub mod lowering;
pub mod mutation;
pub mod resize;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("app crate sits inside the workspace")
        .to_path_buf()
}

/// Every recipe of our example packages (`fixtures/examples`): package
/// and recipe file.
pub const EXAMPLE_RECIPES: [(&str, &str); 12] = [
    ("tiny-denoise", "smiley.json"),
    ("tiny-tone", "scale.json"),
    ("tiny-words", "hello.json"),
    ("tiny-img2img", "photo.json"),
    ("tiny-img2img", "denoise_0p9.json"),
    ("tiny-inpaint", "hole.json"),
    ("tiny-controlnet", "edges.json"),
    ("tiny-sdxl", "castle.json"),
    ("tiny-flow", "shift_3.json"),
    ("tiny-flow", "shift_1.json"),
    ("tiny-advanced", "steps_2_to_8.json"),
    ("tiny-advanced", "steps_4_to_end.json"),
];

/// Our own fixtures.
pub fn fixtures() -> PathBuf {
    workspace().join("fixtures")
}

/// The shared reference folder (`WFSTUDIO_SHARED`, default `../shared`).
/// Under `CI=true` a missing corpus fails the test; elsewhere it is skipped
/// with a note.
pub fn shared() -> Option<PathBuf> {
    let dir = std::env::var_os("WFSTUDIO_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared"));
    if dir.join("corpus").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "the shared corpus is missing at {} (set WFSTUDIO_SHARED); CI requires it",
            dir.display()
        );
    }
    eprintln!(
        "skipping: shared corpus not found at {} (set WFSTUDIO_SHARED)",
        dir.display()
    );
    None
}

/// Every corpus document: the catalogue and each package's metadata file.
pub fn corpus_documents(shared: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(shared.join("corpus/catalogue"))
        .expect("catalogue folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    for entry in std::fs::read_dir(shared.join("corpus/packages")).expect("packages folder") {
        let doc = entry.expect("entry").path().join("inference_metadata.yaml");
        if doc.is_file() {
            docs.push(doc);
        }
    }
    docs.sort();
    docs
}

/// The Kokoro text-to-speech package (`fixtures/real/kokoro-tts`) when set
/// up (its model and the parts the product makes from it). Under `CI=true`
/// a missing one fails the test (the README's set-up installs it); elsewhere
/// it is skipped with a note.
pub fn kokoro() -> Option<PathBuf> {
    real_package(
        "kokoro-tts",
        &[
            "model/kokoro-v1.0.int8.onnx",
            "source/vocab.json",
            "source/voices_ja.npz",
            "tokenizer.json",
            "policies/style_table.onnx",
        ],
    )
}

/// The terrain diffusion package (`fixtures/real/terrain-diffusion`) when
/// set up, under the same rule as [`kokoro`].
pub fn terrain() -> Option<PathBuf> {
    real_package(
        "terrain-diffusion",
        &[
            "model/terrain_consistency_unet_difficulty100.onnx",
            "policies/terrain_noise.onnx",
            "policies/colour_map.onnx",
        ],
    )
}

/// `fixtures/real/NAME` when its `needed` files are there.
fn real_package(name: &str, needed: &[&str]) -> Option<PathBuf> {
    let dir = fixtures().join("real").join(name);
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if missing.is_empty() {
        return Some(dir);
    }
    let why = format!(
        "{} lacks {} (scripts/real_models.sh fetch, then package target/debug/wfstudio)",
        dir.display(),
        missing.join(", ")
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{why}; CI sets it up");
    }
    eprintln!("skipping: {why}");
    None
}

/// `xvfb-run` when it is installed (set-up installs it; under CI it must be).
pub fn xvfb_run() -> Option<&'static str> {
    let found = std::process::Command::new("xvfb-run")
        .arg("--help")
        .output()
        .is_ok();
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "xvfb-run is missing under CI"
        );
        eprintln!("skipped: xvfb-run not installed");
    }
    found.then_some("xvfb-run")
}

/// Runs the project's Python (see [`python`]) with `args`; its standard
/// output. Panics with its standard error when it fails.
pub fn python_stdout<S: AsRef<std::ffi::OsStr>>(python: &Path, args: &[S]) -> String {
    let out = std::process::Command::new(python)
        .args(args)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "python {:?}: {}",
        args.iter()
            .map(|a| a.as_ref().to_string_lossy())
            .collect::<Vec<_>>(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The studio window on `target` under a virtual X server, opened with
/// `wfstudio open TARGET --run EXTRA.. --screenshot PNG --quit --size
/// SIZE`, its run done before the picture is taken; panics when the window
/// fails, with its standard error. (Call after [`xvfb_run`] said it is there.)
pub fn screenshot_after_run(target: &Path, extra: &[&str], png: &Path, size: &str) {
    let output = under_xvfb("-screen 0 1600x1000x24")
        .arg(wfstudio())
        .arg("open")
        .arg(target)
        .arg("--run")
        .args(extra)
        .arg("--screenshot")
        .arg(png)
        .args(["--quit", "--size", size])
        .output()
        .expect("xvfb-run starts");
    assert_eq!(
        exit_under_xvfb(&output),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `xvfb-run -a -s SCREEN` running the arguments that follow (stopped
/// after 120 s, so a window that does not close fails instead of hanging),
/// which echoes their exit status to standard error ([`exit_under_xvfb`]):
/// xvfb-run itself exits 5 when its clean-up races the X server's exit.
pub fn under_xvfb(screen: &str) -> std::process::Command {
    let mut command = std::process::Command::new("xvfb-run");
    command.args(["-a", "-s", screen, "sh", "-c"]);
    command.arg(
        "timeout 120 \"$@\"; status=$?; echo \"exited with status $status\" >&2; exit $status",
    );
    command.arg("sh");
    command
}

/// The exit status the command run by [`under_xvfb`] reported.
pub fn exit_under_xvfb(output: &std::process::Output) -> Option<i32> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("exited with status ")?.trim().parse().ok())
}

/// The text tesseract reads in the picture `png` (set-up installs it; under
/// CI it must be there), or `None` with a note.
pub fn ocr(png: &Path) -> Option<String> {
    match std::process::Command::new("tesseract")
        .arg(png)
        .arg("stdout")
        .output()
    {
        Ok(out) if out.status.success() => Some(String::from_utf8_lossy(&out.stdout).into_owned()),
        other => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "tesseract is missing under CI: {other:?}"
            );
            eprintln!("skipped: tesseract not installed");
            None
        }
    }
}

/// Path of the built `wfstudio` binary.
pub fn wfstudio() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_wfstudio"))
}

/// Runs the built `wfstudio` in the workspace; returns (exit code, stdout, stderr).
pub fn run_wfstudio(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(wfstudio())
        .args(args)
        .current_dir(workspace())
        .output()
        .expect("wfstudio runs");
    (
        out.status.code().expect("exit code"),
        String::from_utf8(out.stdout).expect("utf8 stdout"),
        String::from_utf8(out.stderr).expect("utf8 stderr"),
    )
}

/// Whether ONNX Runtime can be loaded; under `CI=true` it must be.
pub fn runtime_available() -> bool {
    match wfstudio_runner::ortlib::environment() {
        Ok(_) => true,
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("ONNX Runtime is required under CI: {e}")
        }
        Err(e) => {
            eprintln!("skipping: {e}");
            false
        }
    }
}

/// A lowered document written as YAML and read back: it must parse and
/// validate with no diagnostics (`context` names it in a failure).
pub fn validated(document: &serde_json::Value, context: &str) -> wfstudio_schema::Loaded {
    let yaml = wfstudio_schema::emit::to_yaml(document);
    let loaded = wfstudio_schema::parse_text(
        &yaml,
        wfstudio_schema::Format::Yaml,
        &wfstudio_schema::Limits::default(),
    )
    .unwrap_or_else(|d| panic!("{context}: the lowered document does not parse: {d:#?}"));
    let report = wfstudio_core::validate(&loaded.document, &wfstudio_core::Options::default());
    assert!(
        report.diagnostics.is_empty(),
        "{context}: {:#?}",
        report.diagnostics
    );
    loaded
}

/// The project's Python (`.venv`, made by `scripts/setup.sh`), which runs
/// the independent references (`onnx` checker, numpy). Under `CI=true` it
/// must be there; elsewhere a missing one skips the test with a note.
pub fn python() -> Option<PathBuf> {
    let python = workspace().join(".venv/bin/python");
    if python.is_file() {
        return Some(python);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "{} is missing; CI runs scripts/setup.sh first",
            python.display()
        );
    }
    eprintln!(
        "skipping: {} not found (run scripts/setup.sh)",
        python.display()
    );
    None
}
