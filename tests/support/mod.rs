//! Shared helpers of the end-to-end tests: where the workspace, the fixtures
//! and the read-only shared corpus are.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub mod mutation;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("app crate sits inside the workspace")
        .to_path_buf()
}

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

/// Path of the built `wfstudio` binary.
pub fn wfstudio() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_wfstudio"))
}
