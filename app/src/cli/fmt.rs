//! `wfstudio fmt`: canonical re-serialization.

use super::report::text;
use super::{EXIT_ERRORS, InputPath};
use anyhow::Context;
use clap::ValueEnum;
use std::path::PathBuf;
use std::process::ExitCode;
use wfstudio_schema::save::{to_json, to_yaml, write_atomic};
use wfstudio_schema::{Limits, load_file};

/// Target syntax of `fmt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TargetFormat {
    /// Canonical YAML (keeps the leading comment block).
    Yaml,
    /// Pretty JSON.
    Json,
}

/// Arguments of `wfstudio fmt`.
#[derive(Debug, clap::Args)]
pub struct FmtArgs {
    /// Document or package folder.
    path: InputPath,
    /// Write here (atomically) instead of standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Output syntax.
    #[arg(long = "to", value_enum, default_value_t = TargetFormat::Yaml)]
    to: TargetFormat,
}

/// Formats one document.
pub fn run(args: &FmtArgs) -> anyhow::Result<ExitCode> {
    let (file, outcome) = load_file(&args.path, &Limits::default())
        .with_context(|| format!("formatting {}", args.path.display()))?;
    let loaded = match outcome {
        Ok(loaded) => loaded,
        Err(diagnostics) => {
            for diagnostic in &diagnostics {
                eprintln!("{}", text(&file, diagnostic));
            }
            return Ok(ExitCode::from(EXIT_ERRORS));
        }
    };
    let output = match args.to {
        TargetFormat::Yaml => to_yaml(&loaded.document, loaded.leading_comments.as_deref()),
        TargetFormat::Json => to_json(&loaded.document),
    };
    let dropped = match args.to {
        TargetFormat::Yaml => loaded.other_comments.len(),
        TargetFormat::Json => {
            loaded.other_comments.len() + usize::from(loaded.leading_comments.is_some())
        }
    };
    if dropped > 0 {
        let lines: Vec<String> = loaded
            .other_comments
            .iter()
            .map(|c| c.position.line.to_string())
            .collect();
        eprintln!(
            "warning: {dropped} comment(s) cannot be kept in the canonical form{}",
            if lines.is_empty() {
                String::new()
            } else {
                format!(" (lines {})", lines.join(", "))
            }
        );
    }
    match &args.output {
        Some(out) => write_atomic(out, output.as_bytes())
            .with_context(|| format!("writing {}", out.display()))?,
        None => print!("{output}"),
    }
    Ok(ExitCode::SUCCESS)
}
