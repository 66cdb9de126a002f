//! `wfstudio identity`: the semantic identity of a document.

use super::{EXIT_ERRORS, InputPath};
use anyhow::Context;
use std::process::ExitCode;
use wfstudio_schema::{Limits, load::read_text, locate_document};

/// Arguments of `wfstudio identity`.
#[derive(Debug, clap::Args)]
pub struct IdentityArgs {
    /// Documents or package folders.
    #[arg(required = true)]
    paths: Vec<InputPath>,
}

/// Prints `onnx-genai-metadata-identity-v1:sha256:<hex>` per path (with the
/// file name when several are given).
pub fn run(args: &IdentityArgs) -> anyhow::Result<ExitCode> {
    let mut failed = false;
    for path in &args.paths {
        let file = locate_document(path).with_context(|| format!("reading {}", path.display()))?;
        let text = read_text(&file, &Limits::default())
            .with_context(|| format!("reading {}", path.display()))?;
        match wfstudio_core::identity::identity(&text) {
            Ok(id) if args.paths.len() == 1 => println!("{id}"),
            Ok(id) => println!("{id}  {}", file.display()),
            Err(error) => {
                eprintln!("{}: error: {error}", file.display());
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(EXIT_ERRORS)
    } else {
        ExitCode::SUCCESS
    })
}
