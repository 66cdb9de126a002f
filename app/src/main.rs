//! `wfstudio`: Workflow Studio's window (no arguments, or `open`) and its
//! command-line interface.

mod cli;
mod gui;
mod input_media;
mod input_video;
mod output_media;
mod worker;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("wfstudio: {error:#}");
            ExitCode::from(cli::EXIT_USAGE_OR_IO)
        }
    }
}
