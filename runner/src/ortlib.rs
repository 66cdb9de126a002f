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

/// The NVIDIA runtime libraries that the `nvidia-*` wheels install
/// (`site-packages/nvidia/*/lib`, beside `onnxruntime-gpu`), loaded so that
/// ONNX Runtime's CUDA provider finds them without `LD_LIBRARY_PATH`, as
/// Python's `onnxruntime.preload_dlls()` does. Once per process; returns the
/// libraries loaded.
pub fn preload_nvidia() -> &'static [PathBuf] {
    static LOADED: OnceLock<Vec<PathBuf>> = OnceLock::new();
    LOADED.get_or_init(|| {
        let dirs: Vec<PathBuf> = site_packages_dirs()
            .iter()
            .filter_map(|packages| std::fs::read_dir(packages.join("nvidia")).ok())
            .flat_map(|entries| entries.flatten().map(|e| e.path().join("lib")))
            .filter(|lib| lib.is_dir())
            .collect();
        preload_from(&dirs)
    })
}

/// The libraries ONNX Runtime's CUDA provider needs, by name (`libcudnn`
/// takes every cuDNN part, `libcublas` cuBLASLt too): the set Python's
/// `onnxruntime.preload_dlls()` loads, with NVRTC (and its builtins) and
/// nvJitLink, which cuDNN's runtime-compiled engines and cuFFT load
/// themselves. Other NVIDIA wheels
/// on the machine (PyTorch's NCCL, CUPTI, cuSPARSE, ...) are left alone.
const CUDA_PROVIDER_NEEDS: [&str; 7] = [
    "libcudart",
    "libcublas",
    "libcufft",
    "libcurand",
    "libcudnn",
    "libnvrtc",
    "libnvJitLink",
];

/// Whether `name` is a shared library of [`CUDA_PROVIDER_NEEDS`].
fn needed_by_cuda_provider(name: &str) -> bool {
    name.contains(".so")
        && CUDA_PROVIDER_NEEDS.iter().any(|stem| {
            name.strip_prefix(stem)
                .is_some_and(|rest| rest.starts_with(['.', '_', '-']) || rest.starts_with("Lt."))
        })
}

/// Loads the libraries of [`CUDA_PROVIDER_NEEDS`] in `dirs`, in passes: a
/// library whose dependencies are not loaded yet fails and is tried again
/// in the next pass, until a pass loads nothing more. Returns those loaded,
/// in order.
pub(crate) fn preload_from(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut waiting: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flat_map(|entries| entries.flatten().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(needed_by_cuda_provider)
        })
        .collect();
    waiting.sort();
    load_in_passes(waiting, |path| ort::util::preload_dylib(path).is_ok())
}

/// `load` on each of `waiting` in passes until a pass loads nothing.
fn load_in_passes(mut waiting: Vec<PathBuf>, load: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut loaded = Vec::new();
    loop {
        let before = loaded.len();
        waiting.retain(|path| {
            let ok = load(path);
            if ok {
                loaded.push(path.clone());
            }
            !ok
        });
        if loaded.len() == before || waiting.is_empty() {
            return loaded;
        }
    }
}

#[cfg(test)]
mod preload_tests {
    use super::{load_in_passes, needed_by_cuda_provider, preload_from};

    /// The CUDA provider's libraries are told by name, whatever their
    /// version suffix; other NVIDIA libraries are not.
    #[test]
    fn the_cuda_providers_libraries_are_told_by_name() {
        for name in [
            "libcudart.so.13",
            "libcublas.so.13",
            "libcublasLt.so.13",
            "libcudnn.so.9",
            "libcudnn_engines_runtime_compiled.so.9",
            "libnvrtc.so.13",
            "libnvrtc-builtins.so.13.0",
            "libcufft.so.12",
            "libcurand.so.10",
            "libnvJitLink.so.13",
        ] {
            assert!(needed_by_cuda_provider(name), "{name}");
        }
        for name in [
            "libcupti.so.13",
            "libnccl.so.2",
            "libcusparse.so.12",
            "libcublas.txt",
        ] {
            assert!(!needed_by_cuda_provider(name), "{name}");
        }
    }
    use std::cell::RefCell;
    use std::path::{Path, PathBuf};

    /// A library loads once what it needs is loaded, whatever the order;
    /// one that never can is left out.
    #[test]
    fn libraries_load_in_dependency_order() {
        let needs = |name: &str| -> &[&str] {
            match name {
                "libcublas.so.13" => &["libcublasLt.so.13", "libcudart.so.13"],
                "libcublasLt.so.13" => &["libcudart.so.13"],
                "libbroken.so" => &["libmissing.so"],
                _ => &[],
            }
        };
        let loaded = RefCell::new(Vec::<String>::new());
        let waiting: Vec<PathBuf> = [
            "libbroken.so",
            "libcublas.so.13",
            "libcublasLt.so.13",
            "libcudart.so.13",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let order = load_in_passes(waiting, |path: &Path| {
            let name = path.to_string_lossy().into_owned();
            let ok = needs(&name)
                .iter()
                .all(|n| loaded.borrow().iter().any(|l| l == n));
            if ok {
                loaded.borrow_mut().push(name);
            }
            ok
        });
        assert_eq!(
            order,
            ["libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13"].map(PathBuf::from)
        );
    }

    /// A real shared library the CUDA provider needs, in a wheel-like
    /// folder, is loaded; one it does not need is left alone; a file that
    /// only looks like a library is not loaded, and nothing fails.
    #[test]
    fn a_real_library_is_preloaded_and_a_fake_one_skipped() {
        let dir = std::env::temp_dir().join(format!("wfstudio-nvidia-{}/lib", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let real = [
            "/lib/x86_64-linux-gnu/libz.so.1",
            "/usr/lib/x86_64-linux-gnu/libz.so.1",
        ]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists());
        let Some(real) = real else {
            eprintln!("skipping: no libz to copy");
            return;
        };
        std::fs::copy(real, dir.join("libcurand.so.10")).expect("copy");
        std::fs::copy(real, dir.join("libcupti.so.13")).expect("copy");
        std::fs::write(dir.join("libcudnn_ops.so.9"), b"not an ELF file").expect("fake");
        let loaded = preload_from(std::slice::from_ref(&dir));
        assert_eq!(loaded, [dir.join("libcurand.so.10")]);
        let _ = std::fs::remove_dir_all(dir.parent().expect("parent"));
    }
}
