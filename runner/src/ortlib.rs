//! Finding and loading the ONNX Runtime shared library (`load-dynamic`):
//! `ORT_DYLIB_PATH`, then next to the executable, then a Python
//! `onnxruntime` / `onnxruntime-gpu` installation.

use crate::RunError;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const HOW_TO_GET_IT: &str = "set ORT_DYLIB_PATH to libonnxruntime.so, or install the PyPI wheel \
     (`python3 -m venv .venv && .venv/bin/pip install onnxruntime==1.31.1`; scripts/setup.sh does this)";

fn library_in(dir: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("libonnxruntime.so")
                    || n == "onnxruntime.dll"
                    || n.starts_with("libonnxruntime.") && n.ends_with(".dylib")
            })
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

fn site_packages(prefix: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for lib in ["lib", "lib64"] {
        if let Ok(entries) = std::fs::read_dir(prefix.join(lib)) {
            for entry in entries.flatten() {
                for sub in ["site-packages", "dist-packages"] {
                    let candidate = entry.path().join(sub);
                    if candidate.is_dir() {
                        out.push(candidate);
                    }
                }
            }
        }
    }
    out
}

/// The Python package folders searched for ONNX Runtime and for plugin
/// execution providers: `$VIRTUAL_ENV`, every `.venv` above the executable
/// and the working folder, the user's and the system's.
pub(crate) fn site_packages_dirs() -> Vec<PathBuf> {
    let mut prefixes = Vec::new();
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        prefixes.push(PathBuf::from(venv));
    }
    let starts = [std::env::current_exe().ok(), std::env::current_dir().ok()];
    for start in starts.into_iter().flatten() {
        for ancestor in start.ancestors() {
            let venv = ancestor.join(".venv");
            if venv.is_dir() && !prefixes.contains(&venv) {
                prefixes.push(venv);
            }
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        prefixes.push(PathBuf::from(home).join(".local"));
    }
    prefixes.extend(["/usr/local", "/usr"].map(PathBuf::from));
    prefixes.iter().flat_map(|p| site_packages(p)).collect()
}

/// Where the library was looked for, in order, for error messages.
pub fn candidates() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        dirs.push(dir.to_path_buf());
    }
    dirs.extend(
        site_packages_dirs()
            .into_iter()
            .map(|packages| packages.join("onnxruntime/capi")),
    );
    dirs
}

/// The ONNX Runtime library to load.
pub fn locate() -> Result<PathBuf, RunError> {
    if let Some(path) = std::env::var_os("ORT_DYLIB_PATH") {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
        return Err(RunError::Runtime(format!(
            "ORT_DYLIB_PATH names {}, which is not a file; {HOW_TO_GET_IT}",
            path.display()
        )));
    }
    candidates()
        .iter()
        .find_map(|dir| library_in(dir))
        .ok_or_else(|| RunError::Runtime(format!("ONNX Runtime was not found; {HOW_TO_GET_IT}")))
}

static ENVIRONMENT: OnceLock<Result<(ort::environment::Environment, PathBuf), String>> =
    OnceLock::new();

/// The process-wide ONNX Runtime environment (loaded once) and the library
/// it came from.
pub fn environment() -> Result<(&'static ort::environment::Environment, &'static Path), RunError> {
    let loaded = ENVIRONMENT.get_or_init(|| {
        let path = locate().map_err(|e| e.to_string())?;
        let builder = ort::init_from(&path)
            .map_err(|e| format!("cannot load {}: {e}; {HOW_TO_GET_IT}", path.display()))?;
        let env = builder
            .with_name("wfstudio")
            .build()
            .map_err(|e| format!("cannot start ONNX Runtime from {}: {e}", path.display()))?;
        Ok((env, path))
    });
    match loaded {
        Ok((env, path)) => Ok((env, path.as_path())),
        Err(message) => Err(RunError::Runtime(message.clone())),
    }
}
