//! The command-line interface: a stable, scriptable contract.
//!
//! Exit codes: 0 = success / no errors, 1 = the document has errors,
//! 2 = usage or I/O failure.

mod bench;
mod check;
pub mod devices;
mod fmt;
mod grey16;
mod identity;
mod import;
mod make;
mod package_recipe;
mod phonemes;
mod report;
pub mod run;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status: the document has errors.
pub const EXIT_ERRORS: u8 = 1;
/// Exit status: usage or I/O failure.
pub const EXIT_USAGE_OR_IO: u8 = 2;

/// Workflow Studio: build and debug ONNX GenAI model packages.
#[derive(Debug, Parser)]
#[command(name = "wfstudio", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Open the studio window on a document or package folder.
    Open(crate::gui::OpenArgs),
    /// Check documents or package folders and report diagnostics.
    Check(check::CheckArgs),
    /// Re-serialize a document canonically.
    Fmt(fmt::FmtArgs),
    /// Print the semantic identity of documents.
    Identity(identity::IdentityArgs),
    /// Run a package on ONNX Runtime.
    Run(run::RunArgs),
    /// Time warm runs of a package against its ONNX Runtime time.
    Bench(bench::BenchArgs),
    /// List the execution providers and devices this machine offers.
    Devices(devices::DevicesArgs),
    /// Read a ComfyUI graph (API/UI JSON, or a PNG or WebP that embeds one); `--emit-api` prints its API prompt.
    ImportComfyui(import::ImportArgs),
    /// Make package parts for real models (tokenizer, style table, terrain policies).
    Make(make::MakeArgs),
    /// Serve runs for the studio over stdin and stdout (started by the studio).
    #[command(hide = true)]
    Worker(crate::worker::serve::WorkerArgs),
}

/// Output style of diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// `FILE:LINE:COL: error[CODE]: message` lines with `help:` lines.
    Text,
    /// One JSON array of diagnostics.
    Json,
}

/// A file to read: a document or a package folder.
pub type InputPath = PathBuf;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let Some(command) = cli.command else {
        return crate::gui::run(&crate::gui::OpenArgs::default());
    };
    match command {
        Command::Open(args) => crate::gui::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Fmt(args) => fmt::run(&args),
        Command::Identity(args) => identity::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Devices(args) => devices::run(&args),
        Command::Make(args) => make::run(&args),
        Command::ImportComfyui(args) => import::run(&args),
        Command::Worker(args) => crate::worker::serve::serve(&args),
    }
}
