//! `wfstudio check`: strict parsing, every semantic rule and the package
//! file checks; `--fix` applies the safe quick fixes.

use super::report::{JsonDiagnostic, text};
use super::{EXIT_ERRORS, InputPath, OutputFormat};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wfstudio_core::artifacts::check_files;
use wfstudio_core::{Options, fix, validate};
use wfstudio_schema::save::write_atomic;
use wfstudio_schema::{
    Diagnostic, Format, Limits, Loaded, load::read_text, locate_document, parse_text,
};

/// Arguments of `wfstudio check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Output style.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
    /// Skip the checks that artifact files exist (design-level documents).
    #[arg(long)]
    no_artifacts: bool,
    /// Apply the safe quick fixes (such as adding derived capabilities) to
    /// the files, then report what remains.
    #[arg(long)]
    fix: bool,
    /// Documents or package folders.
    #[arg(required = true)]
    paths: Vec<InputPath>,
}

/// Every diagnostic of a loaded document: semantic rules and, unless
/// disabled, the package file checks; spans filled in.
pub fn diagnose(loaded: &Loaded, file: &Path, artifacts: bool) -> Vec<Diagnostic> {
    let options = Options::default();
    let mut report = validate(&loaded.document, &options);
    if artifacts {
        let root = file.parent().unwrap_or(Path::new("."));
        let root = if root.as_os_str().is_empty() {
            Path::new(".")
        } else {
            root
        };
        report
            .diagnostics
            .extend(check_files(&loaded.document, root, &options).diagnostics);
    }
    report.locate(&loaded.source_map);
    let mut all = loaded.warnings.clone();
    all.extend(report.diagnostics);
    all
}

/// Checks every path; I/O failures abort with context.
pub fn run(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let limits = Limits::default();
    let mut found: Vec<(PathBuf, Diagnostic)> = Vec::new();
    for path in &args.paths {
        let file = locate_document(path).with_context(|| format!("checking {}", path.display()))?;
        let mut source =
            read_text(&file, &limits).with_context(|| format!("checking {}", path.display()))?;
        let format = Format::from_path(&file);
        let mut diagnostics = match parse_text(&source, format, &limits) {
            Err(diagnostics) => diagnostics,
            Ok(loaded) => diagnose(&loaded, &file, !args.no_artifacts),
        };
        if args.fix {
            let fixes: Vec<_> = diagnostics.iter().filter_map(|d| d.fix.as_ref()).collect();
            if !fixes.is_empty()
                && let Ok(loaded) = parse_text(&source, format, &limits)
            {
                let fixed = fix::apply(&source, &loaded, &fixes)
                    .with_context(|| format!("fixing {}", file.display()))?;
                write_atomic(&file, fixed.text.as_bytes())
                    .with_context(|| format!("writing {}", file.display()))?;
                for change in &fixed.changes {
                    eprintln!("{}: fixed: {change}", file.display());
                }
                if fixed.rewritten {
                    eprintln!(
                        "{}: note: rewritten in canonical form to place the fix",
                        file.display()
                    );
                }
                source = fixed.text;
                diagnostics = match parse_text(&source, format, &limits) {
                    Err(diagnostics) => diagnostics,
                    Ok(loaded) => diagnose(&loaded, &file, !args.no_artifacts),
                };
            }
        }
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
