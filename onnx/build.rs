//! Generates the ONNX protobuf types from the `onnx.proto` that the `onnx`
//! PyPI wheel ships (installed by `scripts/setup.sh` into `.venv`), so the
//! schema is never hand-copied. `WFSTUDIO_ONNX_PROTO` may point at another
//! copy. The wheel's file asks for `LITE_RUNTIME`, which has no reflection
//! and so no text format; that one option is dropped in the generated copy.

use std::path::{Path, PathBuf};

fn find_proto() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("WFSTUDIO_ONNX_PROTO") {
        return Some(PathBuf::from(path));
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()?
        .to_path_buf();
    let mut roots = vec![workspace.join(".venv")];
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        roots.insert(0, PathBuf::from(venv));
    }
    for root in roots {
        let lib = root.join("lib");
        let Ok(entries) = std::fs::read_dir(&lib) else {
            continue;
        };
        for entry in entries.flatten() {
            let candidate = entry.path().join("site-packages/onnx/onnx.proto");
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

fn main() {
    println!("cargo:rerun-if-env-changed=WFSTUDIO_ONNX_PROTO");
    println!("cargo:rerun-if-env-changed=VIRTUAL_ENV");
    let Some(proto) = find_proto() else {
        panic!(
            "onnx.proto not found: run scripts/setup.sh (it installs the `onnx` wheel into .venv) \
             or set WFSTUDIO_ONNX_PROTO to an onnx.proto file"
        );
    };
    println!("cargo:rerun-if-changed={}", proto.display());
    let text = std::fs::read_to_string(&proto).expect("onnx.proto is readable");
    let text: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("option optimize_for"))
        .map(|line| format!("{line}\n"))
        .collect();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let source = out.join("proto");
    std::fs::create_dir_all(&source).expect("OUT_DIR is writable");
    let copy = source.join("onnx.proto");
    std::fs::write(&copy, text).expect("OUT_DIR is writable");
    protobuf_codegen::Codegen::new()
        .pure()
        .include(&source)
        .input(&copy)
        .cargo_out_dir("onnx_proto")
        .run_from_script();
}
