//! The worker side (`wfstudio worker`, started by the studio): takes run
//! requests on stdin, runs them on ONNX Runtime and answers on stdout with
//! events and the outputs. The loaded package stays warm between runs
//! (sessions, prepared steps, reuse cache) while its document, device and
//! thread count stay the same. A thread reads stdin so that Cancel arrives
//! while a run goes; the end of stdin (the studio closed) ends the worker.

use super::convert::{event_to_wire, output_to_wire};
use super::limits::{apply_memory_limit, byte_limit, human};
use super::protocol::{Body, FromWorker, RunRequest, Spill, ToWorker, read_frame_if, write_frame};
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use wfstudio_runner::reuse::ReuseCache;
use wfstudio_runner::{Device, Event, LoadOptions, Request, RunControl, Runner, Tensor};
use wfstudio_schema::{Format, Limits, parse_text};

/// Test hook: `WFSTUDIO_WORKER_FAULT=KIND:COMPONENT` makes the worker
/// `abort`, `segv`, `exit` or `hang` when an invoke of COMPONENT starts, so
/// tests can prove the studio survives a worker that dies or hangs.
const FAULT_VARIABLE: &str = "WFSTUDIO_WORKER_FAULT";

/// `wfstudio worker`.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// Memory ceiling in bytes (the data segment: heap and private maps).
    #[arg(long, value_name = "BYTES")]
    pub memory_limit: Option<u64>,
    /// The name prefix of the studio's files for this worker.
    #[arg(long, value_name = "PREFIX")]
    pub peer_spill: String,
    /// Plugin execution provider libraries.
    #[command(flatten)]
    pub ep: crate::cli::devices::EpArgs,
}

/// The package kept loaded between runs.
struct Warm {
    package: PathBuf,
    document: String,
    device: String,
    threads: usize,
    runner: Runner,
}

/// Serves run requests until stdin ends.
pub fn serve(args: &WorkerArgs) -> anyhow::Result<ExitCode> {
    args.ep.add()?;
    let memory_limit = match args.memory_limit {
        Some(bytes) => Some(apply_memory_limit(bytes)?),
        None => None,
    };
    let max_body = byte_limit(memory_limit);
    let studio = Spill::named(args.peer_spill.clone());
    let mine = Spill::of(std::process::id());
    let cancel = Arc::new(AtomicBool::new(false));
    let (requests, incoming) = channel::<io::Result<(RunRequest, Result<Body, String>)>>();
    let flag = cancel.clone();
    std::thread::Builder::new()
        .name("wfstudio-worker-stdin".into())
        .spawn(move || {
            let mut stdin = io::stdin().lock();
            let admit = |message: &ToWorker| fits(message, max_body);
            loop {
                match read_frame_if(&mut stdin, &studio, max_body, admit) {
                    Ok(Some((ToWorker::Run(request), body))) => {
                        flag.store(false, Ordering::SeqCst);
                        let _ = requests.send(Ok((request, body)));
                    }
                    Ok(Some((ToWorker::Cancel, _))) => flag.store(true, Ordering::SeqCst),
                    Ok(None) => std::process::exit(0),
                    Err(error) => {
                        let _ = requests.send(Err(error));
                        return;
                    }
                }
            }
        })?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    write_frame(
        &mut out,
        FromWorker::Ready { memory_limit },
        &Body::default(),
        &mine,
    )?;
    let fault = std::env::var(FAULT_VARIABLE).ok();
    let mut warm: Option<Warm> = None;
    let mut reuse = ReuseCache::default();
    for received in incoming {
        let (request, body) = received?;
        let result = body.and_then(|body| {
            run_one(
                request,
                body,
                max_body,
                &mut warm,
                &mut reuse,
                &cancel,
                fault.as_deref(),
                &mut out,
                &mine,
            )
        });
        let sent = match result {
            Ok((wire, body)) => write_frame(&mut out, FromWorker::Done(Ok(wire)), &body, &mine),
            Err(message) => write_frame(
                &mut out,
                FromWorker::Done(Err(message)),
                &Body::default(),
                &mine,
            ),
        };
        if let Err(error) = sent {
            // The outputs could not be sent (no room for their file): the
            // run fails, the worker lives on; a closed pipe ends it.
            let failed = FromWorker::Done(Err(format!("the outputs could not be sent: {error}")));
            write_frame(&mut out, failed, &Body::default(), &mine)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether a run's inputs fit the memory ceiling (`max_body` bytes): the
/// body holds their bytes once and the tensors again, so they may take at
/// most half of it. Checked before the body is read.
fn fits(message: &ToWorker, max_body: usize) -> Result<(), String> {
    let ToWorker::Run(request) = message else {
        return Ok(());
    };
    let needed = request.inputs.iter().map(|(_, w)| w.bytes()).sum::<usize>();
    if needed.saturating_mul(2) > max_body {
        return Err(format!(
            "the run's inputs take {} and need twice that while they are read, more than \
             the run worker's memory ceiling of {} (start the studio with a larger \
             --worker-memory)",
            human(needed as u64),
            human(max_body as u64)
        ));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_one(
    request: RunRequest,
    body: Body,
    max_body: usize,
    warm: &mut Option<Warm>,
    reuse: &mut ReuseCache,
    cancel: &AtomicBool,
    fault: Option<&str>,
    out: &mut impl Write,
    spill: &Spill,
) -> Result<(super::protocol::WireOutput, Body), String> {
    let inputs = request
        .inputs
        .iter()
        .map(|(name, wire)| Ok((name.clone(), Arc::new(body.get(wire, max_body)?))))
        .collect::<io::Result<Vec<(String, Arc<Tensor>)>>>()
        .map_err(|e| format!("the run's inputs: {e}"))?;
    // The tensors hold the inputs now; the message's copy goes.
    drop(body);
    let (runner, kept) = warm_runner(&request, warm, reuse)?;
    let loaded = FromWorker::Loaded {
        device_note: runner.device_note.clone(),
        warm: kept,
        placements: runner.placements(),
    };
    write_frame(&mut *out, loaded, &Body::default(), spill)
        .map_err(|e| format!("the studio stopped listening: {e}"))?;
    let mut send_error = None;
    let mut observer = |event: Event| {
        let starts = match (&event, fault) {
            (Event::InvokeStarted { component, .. }, Some(_)) => Some(component.clone()),
            _ => None,
        };
        let mut chunk = Body::default();
        let wire = event_to_wire(event, &mut chunk);
        if let Err(error) = write_frame(&mut *out, FromWorker::Event(wire), &chunk, spill) {
            send_error.get_or_insert(error);
            cancel.store(true, Ordering::SeqCst);
        }
        if let (Some(fault), Some(component)) = (fault, starts) {
            trip(fault, &component);
        }
    };
    let output = runner.run_request(
        inputs,
        &Request::default(),
        RunControl {
            observer: Some(&mut observer),
            cancel,
            keep_bytes: request.keep_bytes,
            reuse: request.reuse.then_some(reuse),
        },
    );
    if let Some(error) = send_error {
        return Err(format!("an event of the run could not be sent: {error}"));
    }
    let output = output.map_err(|e| e.to_string())?;
    let mut body = Body::default();
    let wire = output_to_wire(&output, &mut body);
    Ok((wire, body))
}

/// The runner for `request`: the warm one when package, document, device
/// and threads are unchanged (then `true`), else a fresh load.
fn warm_runner<'w>(
    request: &RunRequest,
    warm: &'w mut Option<Warm>,
    reuse: &mut ReuseCache,
) -> Result<(&'w mut Runner, bool), String> {
    let same = warm.as_ref().is_some_and(|w| {
        w.package == request.package
            && request
                .document
                .as_ref()
                .is_none_or(|text| *text == w.document)
            && w.device == request.device
            && w.threads == request.threads
    });
    if !same {
        let document = match (&request.document, warm.as_ref()) {
            (Some(text), _) => text.clone(),
            (None, Some(w)) => w.document.clone(),
            (None, None) => return Err("no document was sent to the worker".into()),
        };
        if warm.as_ref().is_some_and(|w| w.package != request.package) {
            *reuse = ReuseCache::default();
        }
        *warm = None;
        let device: Device = request.device.parse()?;
        let parsed = parse_text(&document, Format::Json, &Limits::default()).map_err(|d| {
            let first = d.first().map(|d| d.message.clone()).unwrap_or_default();
            format!("the document sent to the worker does not load: {first}")
        })?;
        let options = LoadOptions {
            device,
            threads: request.threads,
            simulate_device_memory: false,
        };
        let runner = Runner::from_document(parsed.document, &request.package, &options)
            .map_err(|e| e.to_string())?;
        *warm = Some(Warm {
            package: request.package.clone(),
            document,
            device: request.device.clone(),
            threads: request.threads,
            runner,
        });
    }
    let w = warm.as_mut().ok_or("the worker lost its package")?;
    Ok((&mut w.runner, same))
}

/// Applies the test fault `KIND:COMPONENT` when `component` starts.
fn trip(fault: &str, component: &str) {
    let Some((kind, target)) = fault.split_once(':') else {
        return;
    };
    if target != component {
        return;
    }
    match kind {
        "abort" => std::process::abort(),
        // SAFETY: setting a signal's default action and raising it in our
        // own process have no preconditions. (Rust's own SIGSEGV handler
        // would return from a raised signal, so the default comes first.)
        "segv" => unsafe {
            libc::signal(libc::SIGSEGV, libc::SIG_DFL);
            libc::raise(libc::SIGSEGV);
        },
        "exit" => std::process::exit(3),
        "hang" => loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        },
        _ => {}
    }
}
