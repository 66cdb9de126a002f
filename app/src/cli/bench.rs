//! `wfstudio bench`: sessions loaded once, then N warm runs of a recipe;
//! prints the median wall time per run against the time spent inside ONNX
//! Runtime in the same runs (the overhead ratio).

use super::run::{gather_inputs, load_runner};
use super::{EXIT_ERRORS, InputPath, OutputFormat};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wfstudio_runner::{Device, RunControl};

/// Arguments of `wfstudio bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Package folder or metadata file.
    path: InputPath,
    /// The recipe whose inputs are run.
    #[arg(long)]
    recipe: Option<PathBuf>,
    /// Warm runs to time (after one untimed warm-up run).
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Execution device.
    #[arg(long, default_value = "cpu")]
    device: Device,
    /// Output style.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

/// Benchmarks one package.
pub fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let (inputs, _) = gather_inputs(args.recipe.as_deref(), &[])?;
    let mut runner = match load_runner(&args.path, args.device)? {
        Ok(runner) => runner,
        Err(code) => return Ok(code),
    };
    let cancel = AtomicBool::new(false);
    let (mut walls, mut orts, mut iterations) = (Vec::new(), Vec::new(), 0usize);
    for i in 0..=args.runs.max(1) {
        let output = match runner.run(
            inputs.clone(),
            RunControl {
                observer: &mut |_| {},
                cancel: &cancel,
                keep_bytes: 0,
                reuse: None,
            },
        ) {
            Ok(output) => output,
            Err(e) => {
                eprintln!("wfstudio: run failed: {e}");
                return Ok(ExitCode::from(EXIT_ERRORS));
            }
        };
        if i == 0 {
            continue;
        }
        walls.push(output.wall);
        orts.push(output.ort_time());
        iterations = output.loop_iterations.values().sum();
    }
    let (wall, ort) = (median(walls), median(orts));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let ratio = if ort.is_zero() {
        f64::NAN
    } else {
        wall.as_secs_f64() / ort.as_secs_f64()
    };
    let steps_per_s = if iterations == 0 {
        0.0
    } else {
        iterations as f64 / wall.as_secs_f64()
    };
    let load_ms = ms(runner.load_time);
    match args.format {
        OutputFormat::Json => println!(
            "{}",
            serde_json::json!({
                "median_wall_ms": ms(wall), "median_ort_ms": ms(ort), "overhead_ratio": ratio,
                "steps_per_s": steps_per_s, "load_ms": load_ms, "runs": args.runs.max(1),
                "loop_iterations": iterations,
            })
        ),
        OutputFormat::Text => println!(
            "{}: load {load_ms:.1} ms; median of {} runs: wall {:.3} ms, ONNX Runtime {:.3} ms, overhead ratio {ratio:.3}, {steps_per_s:.0} loop steps/s",
            args.path.display(),
            args.runs.max(1),
            ms(wall),
            ms(ort)
        ),
    }
    Ok(ExitCode::SUCCESS)
}
