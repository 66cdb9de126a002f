//! `wfstudio devices`: what this machine can run on. The built-in CPU
//! provider, CUDA (when a GPU and a runtime with the CUDA provider are
//! there, else why not), and every plugin execution provider found in the
//! installed plugin packages or named with `--ep-library`, each with its
//! devices as `--device` takes them, and each library ONNX Runtime refused
//! with the reason.

use super::OutputFormat;
use std::process::ExitCode;
use wfstudio_runner::providers::{self, Library};

/// Plugin libraries named on the command line (`run`, `bench`, `devices`,
/// `open`).
#[derive(Debug, Default, clap::Args)]
pub struct EpArgs {
    /// Register this plugin execution provider library too (repeatable).
    #[arg(long = "ep-library", value_name = "NAME=PATH")]
    pub ep_library: Vec<String>,
}

impl EpArgs {
    /// Adds the named libraries to those the runner registers.
    pub fn add(&self) -> anyhow::Result<()> {
        for spec in &self.ep_library {
            let library = Library::parse(spec).map_err(anyhow::Error::msg)?;
            providers::add_library(library).map_err(anyhow::Error::msg)?;
        }
        Ok(())
    }
}

/// Where `run` and `bench` run: the device, ONNX Runtime's threads and
/// the plugin libraries to register.
#[derive(Debug, clap::Args)]
pub struct DeviceArgs {
    /// Plugin execution provider libraries.
    #[command(flatten)]
    pub ep: EpArgs,
    /// Execution device (`wfstudio devices` lists them: cpu, cuda, auto, EP[:N]).
    #[arg(long, default_value = "cpu")]
    pub device: wfstudio_runner::Device,
    /// ONNX Runtime intra-op threads per session.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,
    /// Treat every model port as in device memory, as on a GPU: calls go
    /// through ONNX Runtime's I/O binding, values stay in its memory between
    /// calls and the copies a GPU would make are counted (checks the device
    /// path, and its cost, on a CPU).
    #[arg(long)]
    pub simulate_device_memory: bool,
}

/// Arguments of `wfstudio devices`.
#[derive(Debug, clap::Args)]
pub struct DevicesArgs {
    #[command(flatten)]
    ep: EpArgs,
    /// Output style.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

/// Lists the devices.
pub fn run(args: &DevicesArgs) -> anyhow::Result<ExitCode> {
    args.ep.add()?;
    let registrations = providers::register_all()?;
    let devices = providers::devices()?;
    let cuda = wfstudio_runner::device::cuda();
    match args.format {
        OutputFormat::Json => {
            let json = serde_json::json!({
                "devices": devices.iter().map(|d| serde_json::json!({
                    "device": d.name(), "ep": d.ep, "index": d.index,
                    "ep_vendor": d.ep_vendor, "type": d.kind, "vendor": d.hardware_vendor,
                })).collect::<Vec<_>>(),
                "cuda": match &cuda { Ok(gpu) => serde_json::json!({"gpu": gpu.to_string()}),
                                      Err(why) => serde_json::json!({"unavailable": why}) },
                "libraries": registrations.iter().map(|r| serde_json::json!({
                    "name": r.library.name, "path": r.library.path,
                    "devices": r.result.as_ref().ok(), "error": r.result.as_ref().err(),
                })).collect::<Vec<_>>(),
            });
            println!("{json}");
        }
        OutputFormat::Text => {
            for device in &devices {
                println!("{device}");
            }
            match &cuda {
                Ok(gpu) => println!("cuda: {gpu}"),
                Err(why) => println!("cuda: not available ({why})"),
            }
            for registration in &registrations {
                let library = &registration.library;
                match &registration.result {
                    Ok(added) if added.is_empty() => println!(
                        "plugin {} ({}): registered, but it offers no device on this machine",
                        library.name,
                        library.path.display()
                    ),
                    Ok(added) => println!(
                        "plugin {} ({}): registered, offers {}",
                        library.name,
                        library.path.display(),
                        added.join(", ")
                    ),
                    Err(why) => println!("{why}"),
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
