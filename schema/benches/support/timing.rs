//! Timing helpers shared by the benchmarks (included with `#[path]` by the
//! benches of other crates): medians of repeated runs and the corpus list.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The median of `samples`.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// The median time of `runs` calls of `f`, after one untimed warm-up call.
pub fn time<F: FnMut()>(runs: usize, mut f: F) -> Duration {
    f();
    median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

/// The shared folder (`WFSTUDIO_SHARED`, default `../shared` beside the
/// workspace); `crate_dir` is the bench's `CARGO_MANIFEST_DIR`.
pub fn shared(crate_dir: &str) -> PathBuf {
    std::env::var_os("WFSTUDIO_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(crate_dir).join("../../shared"))
}

/// Every corpus document: the catalogue and each package's metadata file.
pub fn documents(shared: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(shared.join("corpus/catalogue"))
        .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    if let Ok(dir) = std::fs::read_dir(shared.join("corpus/packages")) {
        docs.extend(
            dir.filter_map(|e| e.ok())
                .map(|e| e.path().join("inference_metadata.yaml"))
                .filter(|p| p.is_file()),
        );
    }
    docs.sort();
    docs
}
