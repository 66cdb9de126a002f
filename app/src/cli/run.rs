//! `wfstudio run`: execute a package on ONNX Runtime.

use super::{EXIT_ERRORS, InputPath, OutputFormat};
use anyhow::{Context, bail};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use wfstudio_runner::recipe::{self, Recipe};
use wfstudio_runner::text::PackageTokenizer;
use wfstudio_runner::{
    DType, Event, LoadOptions, Request, RunControl, RunError, RunOutput, Runner, Sampling, Tensor,
};
use wfstudio_schema::types::workflow::{InputRole, InputSource};

/// Arguments of `wfstudio run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Package folder or metadata file.
    path: InputPath,
    /// A recipe JSON file (the format of shared/corpus/expected/*/*.json).
    #[arg(long)]
    recipe: Option<PathBuf>,
    /// An input (overrides the recipe): NAME={"dtype":..,"shape":..,"data":..},
    /// a bare value typed by the declared input: NAME=8, NAME=[[1,2,3]], or
    /// a file for a picture, sound or encoded-media input: NAME=@photo.png
    /// (pictures in 0..1, resized to a fixed size the input declares).
    #[arg(long = "input", value_name = "NAME=JSON")]
    inputs: Vec<String>,
    /// Write each output as .npy into this folder (and pictures as .png,
    /// videos as .gif, sound as .wav, text as .txt beside it).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write a float output of one channel per row (a heightmap) as
    /// 16-bit greyscale PNGs: NAME, or NAME=LOW,HIGH for the values at
    /// black and white (default: the output's own range). With --out.
    #[arg(long, value_name = "NAME[=LOW,HIGH]", value_parser = super::grey16::parse, requires = "out")]
    png16: Vec<super::grey16::Png16>,
    /// Where to run: device, threads, plugin libraries.
    #[command(flatten)]
    target: super::devices::DeviceArgs,
    /// Output style.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
    /// Write a Chrome trace (chrome://tracing, Perfetto) of every invoke.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Request prompt tokens for `prompt_tokens` inputs, comma-separated;
    /// repeat for several rows.
    #[arg(long = "prompt-tokens", value_name = "IDS")]
    prompt_tokens: Vec<String>,
    /// Request prompt text, encoded with the package tokenizer into the
    /// prompt tokens; repeat for several rows (instead of --prompt-tokens).
    #[arg(long = "prompt", value_name = "TEXT", conflicts_with = "prompt_tokens")]
    prompt: Vec<String>,
    /// Turn each --prompt from plain text into IPA phonemes with espeak-ng
    /// in this voice (e.g. `en-us`) before encoding: for packages whose
    /// tokenizer takes phonemes (Kokoro).
    #[arg(long, value_name = "VOICE", requires = "prompt")]
    espeak: Option<String>,
    /// Request `max_new_tokens` (for `max_iterations` / `max_output_tokens` inputs).
    #[arg(long)]
    max_new_tokens: Option<i64>,
    /// Request seed (for `seed` inputs), 0 to 2^64 - 1 as ComfyUI's; seeds
    /// from 2^63 reach the int64 input with the same 64 bits.
    #[arg(long)]
    seed: Option<u64>,
    /// Greedy sampling controls for `sampling_*` inputs.
    #[arg(long)]
    greedy: bool,
}

/// The generate request the flags describe; `--prompt` text is encoded
/// with `tokenizer`.
fn request_of(args: &RunArgs, tokenizer: Option<&PackageTokenizer>) -> anyhow::Result<Request> {
    if !args.prompt.is_empty() {
        let tokenizer = tokenizer.context(
            "--prompt needs a package tokenizer (tokenizer.json); pass --prompt-tokens instead",
        )?;
        let prompt_tokens = args
            .prompt
            .iter()
            .map(|text| {
                if text.is_empty() {
                    bail!("--prompt is empty: give the text to encode");
                }
                let text = match &args.espeak {
                    Some(voice) => {
                        let ipa = super::phonemes::espeak_ipa(text, voice)?;
                        eprintln!("phonemes: {text:?} -> {ipa:?} (espeak-ng -v {voice})");
                        ipa
                    }
                    None => text.clone(),
                };
                tokenizer
                    .encode(&text)
                    .with_context(|| format!("--prompt {text:?}"))
            })
            .collect::<anyhow::Result<_>>()?;
        return Ok(Request {
            prompt_tokens,
            ..request_of_tokens(args)?
        });
    }
    request_of_tokens(args)
}

fn request_of_tokens(args: &RunArgs) -> anyhow::Result<Request> {
    let prompt_tokens = args
        .prompt_tokens
        .iter()
        .map(|row| {
            row.split(',')
                .map(|t| {
                    t.trim()
                        .parse::<i64>()
                        .with_context(|| format!("--prompt-tokens: {t:?} is not an integer"))
                })
                .collect::<anyhow::Result<Vec<i64>>>()
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(Request {
        prompt_tokens,
        max_new_tokens: args.max_new_tokens,
        seed: args.seed.map(|s| s as i64),
        sampling: args.greedy.then_some(Sampling::Greedy),
    })
}

/// The recipe at `path`, when one is given.
pub fn read_recipe(path: Option<&Path>) -> anyhow::Result<Option<Recipe>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let recipe =
        recipe::parse(&text).with_context(|| format!("reading recipe {}", path.display()))?;
    Ok(Some(recipe))
}

/// The inputs of `recipe`, less those the request's flags bind (`--prompt`
/// over the recipe's prompt tokens, `--seed` over its seed, ...), plus
/// `--input` overrides for `runner`'s package.
fn gather_inputs(
    recipe: Option<&Recipe>,
    request: &Request,
    overrides: &[String],
    runner: &Runner,
) -> anyhow::Result<HashMap<String, Tensor>> {
    let mut inputs = recipe.map(|r| r.inputs.clone()).unwrap_or_default();
    let declared = runner
        .document()
        .pipeline
        .as_ref()
        .and_then(|p| p.workflow.inputs.as_ref());
    for (name, input) in declared.into_iter().flatten() {
        if let (InputSource::Request, InputRole::Runtime(role)) = (&input.source, &input.role)
            && matches!(request.bind(role.role, &input.contract), Ok(Some(_)))
        {
            inputs.remove(name);
        }
    }
    let mut given = Vec::new();
    let mut rates = Vec::new();
    for item in overrides {
        let Some((name, json)) = item.split_once('=') else {
            bail!("--input needs NAME=JSON, got {item:?}");
        };
        let (tensor, rate) =
            input_value(name, json, runner).with_context(|| format!("--input {name}"))?;
        inputs.insert(name.to_string(), tensor);
        given.push(name);
        rates.extend(rate.map(|fps| (wfstudio_core::media::frame_rate_output(name), fps)));
    }
    // A video file also sets the frame-rate input beside it, unless that
    // is given too.
    for (name, fps) in rates {
        if let (Some(contract), false) =
            (runner.input_contract(&name), given.contains(&name.as_str()))
        {
            let tensor = crate::input_media::frame_rate_tensor(fps, contract)
                .with_context(|| format!("{name} (the frame rate of the video read)"))?;
            eprintln!("note: {name} <- {fps:.3} (the video's frame rate)");
            inputs.insert(name, tensor);
        }
    }
    Ok(inputs)
}

/// One `--input` value: a tensor `{"dtype", "shape", "data"}`, or a bare
/// number, bool or nested list, which takes the dtype (and, for a single
/// scalar, the rank) of the declared input `name`; for an input with value
/// labels (a voice, say), also one of its labels; `@FILE` for a media
/// input (with a video's frames a second, where the file gives them).
fn input_value(name: &str, json: &str, runner: &Runner) -> anyhow::Result<(Tensor, Option<f64>)> {
    if let Some(path) = json.strip_prefix('@') {
        return file_value(name, Path::new(path), runner);
    }
    let labels = runner.input_labels(name);
    let label = json.trim().trim_matches('"');
    let index = labels.and_then(|l| l.iter().position(|l| l == label));
    let value: serde_json::Value = match (index, serde_json::from_str(json)) {
        (Some(index), _) => index.into(),
        (None, Ok(value)) => value,
        (None, Err(_)) => match labels {
            Some(labels) => bail!("{label:?} is not one of its values: {}", labels.join(", ")),
            None => bail!("{json:?} is not JSON"),
        },
    };
    if value.is_object() {
        return Ok((Tensor::from_json(&value)?, None));
    }
    let Some(contract) = runner.input_contract(name) else {
        bail!(
            "the package declares no input of this name, so a bare value has no dtype; \
             give {{\"dtype\", \"shape\", \"data\"}}"
        );
    };
    let dtype = DType::from_contract(&contract.dtype)
        .with_context(|| format!("dtype {} cannot be held on the host", contract.dtype))?;
    Ok((
        Tensor::from_nested(dtype, &value, contract.rank as usize)?,
        None,
    ))
}

/// The file `path` as the declared media input `name` (a picture, a WAV
/// file or encoded bytes), read as the studio's inputs form reads it:
/// pictures in 0..1, as ComfyUI loads them. What was read goes to stderr.
fn file_value(name: &str, path: &Path, runner: &Runner) -> anyhow::Result<(Tensor, Option<f64>)> {
    let declared = runner
        .document()
        .pipeline
        .as_ref()
        .and_then(|p| p.workflow.inputs.as_ref())
        .and_then(|inputs| inputs.get(name));
    let Some(input) = declared else {
        bail!("the package declares no input of this name, so a file has no contract");
    };
    let Some(media) = wfstudio_runner::media_input::input_media(input) else {
        bail!("this input takes no file: it is not a picture, a waveform or encoded media");
    };
    let range = wfstudio_schema::types::workflow::ValueRange::ZeroToOne;
    let read = crate::input_media::read_input(path, media, &input.contract, range)?;
    eprintln!(
        "note: --input {name}: {} ({})",
        path.display(),
        read.summary
    );
    Ok((read.tensor, read.frame_rate))
}

fn write_npy(path: &Path, tensor: &Tensor) -> std::io::Result<()> {
    use wfstudio_runner::{DType, Data};
    // NumPy has no bfloat16: those are written as float32.
    let widened;
    let data = match &tensor.data {
        Data::Bf16(v) => {
            widened = Data::F32(v.iter().map(|x| x.to_f32()).collect());
            &widened
        }
        data => data,
    };
    let descr = match data.dtype() {
        DType::F32 | DType::Bf16 => "<f4",
        DType::F64 => "<f8",
        DType::F16 => "<f2",
        DType::I64 => "<i8",
        DType::I32 => "<i4",
        DType::I16 => "<i2",
        DType::I8 => "|i1",
        DType::U64 => "<u8",
        DType::U32 => "<u4",
        DType::U16 => "<u2",
        DType::U8 => "|u1",
        DType::Bool => "|b1",
    };
    let mut bytes = Vec::new();
    wfstudio_runner::raw::write_le(data, &mut bytes);
    let shape = match tensor.shape.len() {
        1 => format!("({},)", tensor.shape[0]),
        _ => format!(
            "({})",
            tensor
                .shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut file = Vec::with_capacity(10 + header.len() + bytes.len());
    file.extend_from_slice(b"\x93NUMPY\x01\x00");
    file.extend_from_slice(&(header.len() as u16).to_le_bytes());
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&bytes);
    wfstudio_schema::save::write_atomic(path, &file)
}

/// Also writes `.png` (image outputs, one file per batch row), `.gif`
/// (video outputs at their frame rate, one file per batch row) or `.wav`
/// (audio outputs, at the declared sample rate) next to the `.npy`.
fn write_media(
    runner: &Runner,
    dir: &Path,
    key: &str,
    tensor: &Tensor,
    outputs: &std::collections::BTreeMap<String, Tensor>,
) -> anyhow::Result<()> {
    use crate::output_media::{Media, decode, frame_rate, gif_bytes, png_bytes, wav_bytes};
    let write = |file: std::path::PathBuf, bytes: Vec<u8>| {
        wfstudio_schema::save::write_atomic(&file, &bytes)
            .with_context(|| format!("writing {}", file.display()))
    };
    match decode(runner.document(), key, tensor)? {
        Media::Image(rows) => {
            for (b, rgb) in rows.iter().enumerate() {
                write(
                    dir.join(row_file(key, b, rows.len(), "png")),
                    png_bytes(rgb)?,
                )?;
            }
        }
        Media::Audio {
            channels,
            rate,
            samples,
        } => write(
            dir.join(format!("{key}.wav")),
            wav_bytes(channels, rate, &samples)?,
        )?,
        Media::Video(rows) => {
            for (b, frames) in rows.iter().enumerate() {
                write(
                    dir.join(row_file(key, b, rows.len(), "gif")),
                    gif_bytes(frames, frame_rate(outputs, key, b))?,
                )?;
            }
        }
        Media::Tensor => {}
    }
    Ok(())
}

/// The file of batch row `b` of `rows`: `key.ext` for a single row,
/// `key.b.ext` otherwise.
fn row_file(key: &str, b: usize, rows: usize, ext: &str) -> String {
    if rows == 1 {
        format!("{key}.{ext}")
    } else {
        format!("{key}.{b}.{ext}")
    }
}

fn chrome_trace(output: &RunOutput) -> serde_json::Value {
    let events: Vec<serde_json::Value> = output
        .calls()
        .map(|(step, i)| {
            serde_json::json!({
                "name": &*step.component, "cat": "invoke", "ph": "X", "pid": 1, "tid": 1,
                "ts": i.start.as_secs_f64() * 1e6, "dur": i.wall.as_secs_f64() * 1e6,
                "args": {"path": &*step.path, "ort_ms": i.ort.as_secs_f64() * 1e3},
            })
        })
        .collect();
    serde_json::json!({"traceEvents": events, "displayTimeUnit": "ms"})
}

/// Where each component ran, in the `--format json` output: its provider,
/// nodes per provider and the fallbacks.
fn placement_json(placements: &[wfstudio_runner::Placement]) -> serde_json::Value {
    placements
        .iter()
        .map(|p| {
            let nodes: serde_json::Map<_, _> = p
                .nodes
                .iter()
                .map(|(ep, n)| (ep.clone(), serde_json::json!(n)))
                .collect();
            (
                p.component.clone(),
                serde_json::json!({"ep": p.ep, "nodes": nodes, "fallbacks": p.fallbacks}),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Timing summary in the `--format json` output.
pub fn timing_json(output: &RunOutput, load_ms: f64) -> serde_json::Value {
    let mut per_component: std::collections::BTreeMap<&str, (usize, f64, f64)> = Default::default();
    for (step, i) in output.calls() {
        let entry = per_component.entry(&step.component).or_default();
        entry.0 += 1;
        entry.1 += i.wall.as_secs_f64() * 1e3;
        entry.2 += i.ort.as_secs_f64() * 1e3;
    }
    serde_json::json!({
        "load_ms": load_ms,
        "wall_ms": output.wall.as_secs_f64() * 1e3,
        "ort_ms": output.ort_time().as_secs_f64() * 1e3,
        "invokes": output.invokes.len(),
        "loop_iterations": output.loop_iterations,
        "components": per_component.iter().map(|(name, (calls, wall, ort))| {
            (name.to_string(), serde_json::json!({"calls": calls, "wall_ms": wall, "ort_ms": ort}))
        }).collect::<serde_json::Map<_, _>>(),
    })
}

/// The run's copies between host and device memory as a line to read;
/// `None` when there were none (every run on the CPU).
pub fn transfers_line(t: &wfstudio_runner::Transfers) -> Option<String> {
    (t.count() > 0).then(|| {
        format!(
            "host-device copies: {} to the device ({} bytes), {} to the host ({} bytes)",
            t.to_device.count, t.to_device.bytes, t.to_host.count, t.to_host.bytes
        )
    })
}

/// Loads a package for running on `target` (its plugin libraries
/// registered first). An unreadable package or a library that is not a
/// file is an I/O error (exit 2); an invalid or unsupported package, or a
/// device that is not there, is reported and gives exit 1.
pub fn load_runner(
    path: &Path,
    target: &super::devices::DeviceArgs,
) -> anyhow::Result<Result<Runner, ExitCode>> {
    target.ep.add()?;
    let options = LoadOptions {
        device: target.device.clone(),
        threads: target.threads.into(),
        simulate_device_memory: target.simulate_device_memory,
    };
    match Runner::load(path, &options) {
        Ok(runner) => Ok(Ok(runner)),
        Err(RunError::Load(e)) => Err(e).context("loading the package"),
        Err(e) => {
            eprintln!("wfstudio: {e}");
            Ok(Err(ExitCode::from(EXIT_ERRORS)))
        }
    }
}

/// The package tokenizer, if it has one; a declared but unreadable one is
/// an error.
fn package_tokenizer(runner: &Runner) -> anyhow::Result<Option<PackageTokenizer>> {
    PackageTokenizer::for_package(runner.document(), runner.root())
        .context("loading the package tokenizer")
}

/// The rows of a text output, or the decoded rows of a tokens output when
/// the package has a tokenizer.
fn texts(
    runner: &Runner,
    tokenizer: Option<&PackageTokenizer>,
    key: &str,
    tensor: &Tensor,
) -> anyhow::Result<Option<Vec<String>>> {
    crate::output_media::text_of(runner.document(), tokenizer, key, tensor)
        .transpose()
        .with_context(|| format!("decoding output {key}"))
}

/// Runs one package.
pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let recipe_path = args.recipe.clone().or_else(|| {
        let default = super::package_recipe::default_recipe_of(&args.path)?;
        eprintln!(
            "note: inputs from {} (pass --recipe to choose another)",
            default.display()
        );
        Some(default)
    });
    let recipe = read_recipe(recipe_path.as_deref())?;
    let mut runner = match load_runner(&args.path, &args.target)? {
        Ok(runner) => runner,
        Err(code) => return Ok(code),
    };
    let tokenizer = package_tokenizer(&runner)?;
    let request = request_of(args, tokenizer.as_ref())?;
    let inputs = gather_inputs(recipe.as_ref(), &request, &args.inputs, &runner)?;
    if let Some(note) = &runner.device_note {
        eprintln!("note: {note}");
    }
    let cancel = AtomicBool::new(false);
    let text = args.format == OutputFormat::Text;
    let mut observer = |event: Event| {
        if text && let Event::LoopIteration { path, index, limit } = &event {
            eprintln!("{path}: iteration {} of {limit}", index + 1);
        }
    };
    let result = runner.run_request(
        inputs,
        &request,
        RunControl {
            observer: Some(&mut observer),
            cancel: &cancel,
            keep_bytes: 0,
            reuse: None,
        },
    );
    let output = match result {
        Ok(output) => output,
        Err(e) => {
            eprintln!("wfstudio: run failed: {e}");
            return Ok(ExitCode::from(EXIT_ERRORS));
        }
    };
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (name, tensor) in &output.outputs {
            let file = dir.join(format!("{name}.npy"));
            write_npy(&file, tensor).with_context(|| format!("writing {}", file.display()))?;
            write_media(&runner, dir, name, tensor, &output.outputs)?;
            if let Some(rows) = texts(&runner, tokenizer.as_ref(), name, tensor)? {
                let file = dir.join(format!("{name}.txt"));
                wfstudio_schema::save::write_atomic(&file, rows.join("\n").as_bytes())
                    .with_context(|| format!("writing {}", file.display()))?;
            }
        }
        for request in &args.png16 {
            let tensor = output
                .outputs
                .get(&request.output)
                .with_context(|| format!("--png16: the run has no output {:?}", request.output))?;
            let (low, high) = super::grey16::write(dir, request, tensor)?;
            eprintln!(
                "{}: 16-bit PNG, {low} at black, {high} at white",
                request.output
            );
        }
    }
    if let Some(trace) = &args.trace {
        let text = serde_json::to_string_pretty(&chrome_trace(&output))?;
        wfstudio_schema::save::write_atomic(trace, text.as_bytes())
            .with_context(|| format!("writing {}", trace.display()))?;
    }
    let load_ms = runner.load_time.as_secs_f64() * 1e3;
    match args.format {
        OutputFormat::Json => {
            let outputs: serde_json::Map<String, serde_json::Value> = output
                .outputs
                .iter()
                .map(|(k, t)| {
                    let mut json = t.to_json();
                    if let Some(rows) = texts(&runner, tokenizer.as_ref(), k, t)? {
                        json["text"] = serde_json::json!(rows);
                    }
                    Ok((k.clone(), json))
                })
                .collect::<anyhow::Result<_>>()?;
            println!(
                "{}",
                serde_json::to_string(
                    &serde_json::json!({"outputs": outputs, "timing": timing_json(&output, load_ms),
                        "placement": placement_json(&runner.placements()),
                        "transfers": output.transfers})
                )?
            );
        }
        OutputFormat::Text => {
            for (name, tensor) in &output.outputs {
                println!("{name}: {} {:?}", tensor.dtype(), tensor.shape);
                for row in texts(&runner, tokenizer.as_ref(), name, tensor)?.unwrap_or_default() {
                    println!("  {row:?}");
                }
            }
            println!(
                "ran in {:.2} ms ({} invokes, {:.2} ms in ONNX Runtime; load {load_ms:.1} ms)",
                output.wall.as_secs_f64() * 1e3,
                output.invokes.len(),
                output.ort_time().as_secs_f64() * 1e3
            );
            for placement in runner.placements().iter().filter(|p| p.fallbacks > 0) {
                println!("{}: {}", placement.component, placement.label());
            }
            if let Some(line) = transfers_line(&output.transfers) {
                println!("{line}");
            }
        }
    }
    if let Some(recipe) = recipe.filter(|r| !r.outputs.is_empty()) {
        let problems = recipe::compare(&output.outputs, &recipe.outputs, recipe.abs, recipe.rel);
        if problems.is_empty() {
            eprintln!(
                "matches the recipe's outputs (abs {}, rel {})",
                recipe.abs, recipe.rel
            );
        } else {
            for p in &problems {
                eprintln!("mismatch: {p}");
            }
            return Ok(ExitCode::from(EXIT_ERRORS));
        }
    }
    Ok(ExitCode::SUCCESS)
}
