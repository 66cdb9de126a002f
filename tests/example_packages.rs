//! The example packages' models are made by the product, and the committed
//! files are current: the diffusion examples (`tiny-img2img`, ...) are
//! exactly what `wfstudio import-comfyui PATTERN --package-out DIR
//! --stand-in-models` writes (synthesized policies, stand-in models,
//! tokenizer, default recipe), and the hand-made examples' models
//! (`tiny-denoise`, `tiny-tone`, `tiny-words`) are built with the ONNX graph
//! builder. `WFSTUDIO_UPDATE_FIXTURES=1` rewrites them. Their other recipes'
//! expected outputs come from independent numpy references
//! (`tests/reference/diffusion_reference.py`, `scripts/gen_fixtures.py`),
//! which `scripts/test.sh` checks, and `runner_fixtures` runs.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[path = "support/example_models.rs"]
mod example_models;

/// Pattern graph -> example package.
const DIFFUSION: [(&str, &str); 6] = [
    ("img2img", "tiny-img2img"),
    ("inpaint", "tiny-inpaint"),
    ("ksampler-advanced", "tiny-advanced"),
    ("controlnet", "tiny-controlnet"),
    ("sdxl", "tiny-sdxl"),
    ("flow-sd3", "tiny-flow"),
];

fn updating() -> bool {
    std::env::var("WFSTUDIO_UPDATE_FIXTURES").as_deref() == Ok("1")
}

/// Every file under `dir`, by path relative to it.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).expect("inside").to_path_buf();
                out.insert(relative, std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

/// Recipes with reference outputs: kept from the committed package, not
/// written by the importer.
fn is_reference_recipe(relative: &Path) -> bool {
    relative.starts_with("recipes") && relative != Path::new("recipes/default.json")
}

#[test]
fn the_diffusion_examples_are_what_the_importer_writes() {
    let mut stale = Vec::new();
    for (graph, package) in DIFFUSION {
        let out =
            std::env::temp_dir().join(format!("wfstudio-example-{package}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let pattern = support::fixtures().join(format!("comfyui/patterns/{graph}.api.json"));
        let (code, _, stderr) = support::run_wfstudio(&[
            "import-comfyui",
            pattern.to_str().expect("utf-8"),
            "--package-out",
            out.to_str().expect("utf-8"),
            "--stand-in-models",
        ]);
        assert_eq!(code, 0, "{stderr}");
        let committed_dir = support::fixtures().join("examples").join(package);
        let written = files(&out);
        let committed: BTreeMap<PathBuf, Vec<u8>> = files(&committed_dir)
            .into_iter()
            .filter(|(p, _)| !is_reference_recipe(p))
            .collect();
        if written != committed {
            if updating() {
                for relative in committed.keys() {
                    std::fs::remove_file(committed_dir.join(relative)).expect("remove");
                }
                for (relative, bytes) in &written {
                    let target = committed_dir.join(relative);
                    std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
                    std::fs::write(target, bytes).expect("write");
                }
            } else {
                let differing: Vec<String> = written
                    .keys()
                    .chain(committed.keys())
                    .filter(|p| written.get(*p) != committed.get(*p))
                    .map(|p| format!("{package}/{}", p.display()))
                    .collect();
                stale.extend(differing);
            }
        }
        let _ = std::fs::remove_dir_all(&out);
    }
    stale.sort();
    stale.dedup();
    assert!(
        stale.is_empty(),
        "stale example files (rerun with WFSTUDIO_UPDATE_FIXTURES=1): {stale:?}"
    );
}

#[test]
fn the_hand_made_examples_models_are_built_by_the_product() {
    let examples = support::fixtures().join("examples");
    let mut stale = Vec::new();
    for (relative, bytes) in [
        example_models::denoise(),
        example_models::tone(),
        example_models::words(),
    ]
    .concat()
    {
        let path = examples.join(relative);
        if std::fs::read(&path).ok().as_ref() != Some(&bytes) {
            if updating() {
                std::fs::write(&path, &bytes).expect("write");
            } else {
                stale.push(relative);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale example models (rerun with WFSTUDIO_UPDATE_FIXTURES=1): {stale:?}"
    );
}

/// `request.max_iterations` cuts a windowed run short too (img2img's
/// denoise window, KSamplerAdvanced's steps): its loop runs at most that
/// many iterations, as an unwindowed loop does.
#[test]
fn max_iterations_cuts_a_windowed_run_short() {
    if !support::runtime_available() {
        return;
    }
    for example in [
        "fixtures/examples/tiny-img2img",
        "fixtures/examples/tiny-advanced",
    ] {
        let (code, _, stderr) =
            support::run_wfstudio(&["run", example, "--input", "request.max_iterations=1"]);
        assert_eq!(code, 0, "{example}: {stderr}");
        let iterations: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains(": iteration "))
            .collect();
        assert_eq!(
            iterations.len(),
            1,
            "{example}: one iteration: {iterations:?}"
        );
    }
}
