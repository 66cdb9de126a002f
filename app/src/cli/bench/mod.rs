//! `wfstudio bench`: sessions loaded once, then N warm runs of a recipe;
//! prints the median wall time per run against the time spent inside ONNX
//! Runtime in the same runs (the overhead ratio). With `--reuse`, the same
//! runs again with the reuse cache (filled by the warm-up run, so every
//! call is reused) give the speed-up of an unchanged re-run. The recipe's
//! inputs are shared with every run, as an application re-running a
//! request shares its tensors.

mod worker;

use super::run::{load_runner, read_recipe};
use super::{EXIT_ERRORS, InputPath, OutputFormat};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wfstudio_runner::reuse::ReuseCache;
use wfstudio_runner::{RunControl, RunError, Runner, Tensor};

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
    /// Where to run: device, threads, plugin libraries.
    #[command(flatten)]
    target: super::devices::DeviceArgs,
    /// Output style.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
    /// Also time the runs with the reuse cache (an unchanged re-run).
    #[arg(long)]
    reuse: bool,
    /// Also time the runs through the studio's run worker (a child
    /// process): the cost of the process boundary per run. (The worker
    /// runs as the studio does, so not with `--simulate-device-memory`.)
    #[arg(long, conflicts_with = "simulate_device_memory")]
    worker: bool,
}

/// Medians of a series of warm runs.
struct Timed {
    wall: Duration,
    ort: Duration,
    iterations: usize,
    reused: usize,
}

/// The median of `values` (zero when empty).
pub fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

/// Benchmarks one package.
pub fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let recipe = read_recipe(args.recipe.as_deref())?;
    let inputs: Vec<(String, Arc<Tensor>)> = recipe
        .map(|r| r.inputs)
        .unwrap_or_default()
        .into_iter()
        .map(|(n, t)| (n, Arc::new(t)))
        .collect();
    // ONNX Runtime's own start (its library loaded, its environment made)
    // is timed apart from the package's load, as a Python process has it
    // done by `import onnxruntime` before any session.
    let starting = std::time::Instant::now();
    if let Err(e) = wfstudio_runner::ortlib::environment() {
        eprintln!("wfstudio: {e}");
        return Ok(ExitCode::from(EXIT_ERRORS));
    }
    let runtime_start = starting.elapsed();
    let mut runner = match load_runner(&args.path, &args.target)? {
        Ok(runner) => runner,
        Err(code) => return Ok(code),
    };
    let plain = match timed_runs(&mut runner, &inputs, args.runs, None) {
        Ok(timed) => timed,
        Err(e) => {
            eprintln!("wfstudio: run failed: {e}");
            return Ok(ExitCode::from(EXIT_ERRORS));
        }
    };
    let reused = if args.reuse {
        let mut cache = ReuseCache::default();
        match timed_runs(&mut runner, &inputs, args.runs, Some(&mut cache)) {
            Ok(timed) => Some(timed),
            Err(e) => {
                eprintln!("wfstudio: run failed: {e}");
                return Ok(ExitCode::from(EXIT_ERRORS));
            }
        }
    } else {
        None
    };
    let Timed {
        wall,
        ort,
        iterations,
        ..
    } = plain;
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
    let runtime_start_ms = ms(runtime_start);
    let session_load_ms: serde_json::Map<String, serde_json::Value> = runner
        .session_load_times()
        .into_iter()
        .map(|(component, took)| (component.to_string(), serde_json::json!(ms(took))))
        .collect();
    let worker = if args.worker {
        let file = wfstudio_schema::locate_document(&args.path)?;
        let owned: Vec<(String, Tensor)> = inputs
            .iter()
            .map(|(n, t)| (n.clone(), (**t).clone()))
            .collect();
        let timed = worker::time_worker(
            &file,
            runner.document(),
            &owned,
            &args.target.device,
            &args.target.ep.ep_library,
            args.target.threads.into(),
            args.runs,
        )?;
        Some(timed)
    } else {
        None
    };
    // The worker's cost: its wall as the caller sees it less its runner's.
    let boundary = |w: &worker::WorkerTimed| w.wall.as_secs_f64() - w.inside.as_secs_f64();
    let against = |w: &worker::WorkerTimed| w.wall.as_secs_f64() / wall.as_secs_f64().max(1e-9);
    let speedup = |r: &Timed| wall.as_secs_f64() / r.wall.as_secs_f64().max(1e-9);
    match args.format {
        OutputFormat::Json => {
            let mut json = serde_json::json!({
                "median_wall_ms": ms(wall), "median_ort_ms": ms(ort), "overhead_ratio": ratio,
                "steps_per_s": steps_per_s, "load_ms": load_ms, "runtime_start_ms": runtime_start_ms,
                "session_load_ms": session_load_ms, "runs": args.runs.max(1),
                "loop_iterations": iterations,
            });
            if let Some(r) = &reused {
                json["reuse"] = serde_json::json!({
                    "median_wall_ms": ms(r.wall), "reused_calls": r.reused,
                    "speedup": speedup(r),
                });
            }
            if let Some(w) = &worker {
                json["worker"] = serde_json::json!({
                    "median_wall_ms": ms(w.wall), "median_inside_ms": ms(w.inside),
                    "boundary_ms": boundary(w) * 1e3, "output_bytes": w.output_bytes,
                    "ratio_to_in_process": against(w),
                });
            }
            println!("{json}");
        }
        OutputFormat::Text => println!(
            "{}: ONNX Runtime start {runtime_start_ms:.1} ms, load {load_ms:.1} ms; median of {} runs: wall {:.3} ms, ONNX Runtime {:.3} ms, overhead ratio {ratio:.3}, {steps_per_s:.0} loop steps/s",
            args.path.display(),
            args.runs.max(1),
            ms(wall),
            ms(ort)
        ),
    }
    if let (OutputFormat::Text, Some(r)) = (args.format, &reused) {
        println!(
            "with reuse: wall {:.3} ms ({} calls reused per run), {:.1}x faster than running every call",
            ms(r.wall),
            r.reused,
            speedup(r)
        );
    }
    if let (OutputFormat::Text, Some(w)) = (args.format, &worker) {
        println!(
            "through the run worker: wall {:.3} ms, its runner {:.3} ms: the process boundary costs {:.3} ms per run with {} bytes of outputs; {:.3}x the in-process wall",
            ms(w.wall),
            ms(w.inside),
            boundary(w) * 1e3,
            w.output_bytes,
            against(w)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One untimed warm-up run, then `runs` timed ones; medians.
fn timed_runs(
    runner: &mut Runner,
    inputs: &[(String, Arc<Tensor>)],
    runs: usize,
    mut cache: Option<&mut ReuseCache>,
) -> Result<Timed, RunError> {
    let cancel = AtomicBool::new(false);
    let (mut walls, mut orts, mut iterations, mut reused) = (Vec::new(), Vec::new(), 0, 0);
    for i in 0..=runs.max(1) {
        let output = runner.run(
            inputs
                .iter()
                .map(|(name, t)| (name.as_str(), Arc::clone(t))),
            RunControl {
                observer: None,
                cancel: &cancel,
                keep_bytes: 0,
                reuse: cache.as_deref_mut(),
            },
        )?;
        if i == 0 {
            continue;
        }
        walls.push(output.wall);
        orts.push(output.ort_time());
        iterations = output.loop_iterations.values().sum();
        reused = output.invokes.iter().filter(|c| c.reused).count();
    }
    Ok(Timed {
        wall: median(walls),
        ort: median(orts),
        iterations,
        reused,
    })
}
