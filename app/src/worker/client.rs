//! The studio side of a run worker: starts `wfstudio worker` as a child
//! process, sends it runs, turns its answers back into runner events and
//! outputs, and tells a run that failed (the worker lives on) from a worker
//! that died (aborted, crashed, killed, out of memory), naming the signal
//! or exit status and the node that was running. Cancel asks the worker to
//! stop; a worker that has not stopped a second later is killed.

use super::convert::{event_from_wire, output_from_wire};
use super::limits::{byte_limit, default_memory_limit, human};
use super::protocol::{Body, FromWorker, RunRequest, Spill, ToWorker, read_frame, write_frame};
use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wfstudio_runner::{Device, Event, RunOutput, Tensor};
use wfstudio_schema::Document;

/// How long a worker may take to stop after Cancel before it is killed.
const CANCEL_GRACE: Duration = Duration::from_secs(1);
/// How long a new worker may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Lines of the worker's stderr kept for a crash report.
const STDERR_LINES: usize = 20;
/// Characters of one stderr line kept.
const STDERR_LINE_CHARS: usize = 400;

/// How the studio starts its workers.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// The `wfstudio` binary to start in worker mode.
    pub program: PathBuf,
    /// The worker's memory ceiling in bytes (`None`: not limited).
    pub memory_limit: Option<u64>,
    /// Plugin execution provider libraries (`NAME=PATH`) to register.
    pub ep_libraries: Vec<String>,
    /// Test hook passed to the worker (see `serve::FAULT_VARIABLE`).
    pub fault: Option<String>,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            program: worker_program(),
            memory_limit: default_memory_limit(),
            ep_libraries: Vec::new(),
            fault: None,
        }
    }
}

/// This binary; in the crate's own unit tests (whose binary is the test
/// harness), the `wfstudio` binary cargo builds beside it.
fn worker_program() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("wfstudio"));
    if cfg!(test) {
        let dir = exe.parent().and_then(Path::parent);
        return dir.map_or(exe.clone(), |d| d.join("wfstudio"));
    }
    exe
}

/// One run for the worker.
pub struct WorkerRun<'a> {
    /// The document's file (artifacts resolve beside it).
    pub package: &'a Path,
    /// The document as edited.
    pub document: &'a Document,
    /// Requested device.
    pub device: Device,
    /// ONNX Runtime intra-op threads per session.
    pub threads: usize,
    /// Supplied inputs.
    pub inputs: &'a [(String, Tensor)],
    /// Byte budget for values kept for the value inspector.
    pub keep_bytes: usize,
    /// Reuse results of unchanged calls.
    pub reuse: bool,
}

/// A finished run.
pub struct Ran {
    /// Outputs, timing, loop counts, kept values.
    pub output: RunOutput,
    /// Why the device differs from the requested one, if it does.
    pub device_note: Option<String>,
    /// Whether the worker still had the package loaded from an earlier run.
    pub warm: bool,
    /// Where each component ran.
    pub placements: Vec<wfstudio_runner::Placement>,
}

/// Why a run did not finish.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// The run failed or was cancelled; the worker lives on.
    Run(String),
    /// The worker is gone (crashed, killed, or stopped after Cancel).
    Lost(String),
}

impl Failure {
    /// What the user reads.
    pub fn message(&self) -> &str {
        match self {
            Failure::Run(m) | Failure::Lost(m) => m,
        }
    }
}

/// A running worker process.
pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    frames: Receiver<io::Result<(FromWorker, Body)>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// The thread that reads stderr (finished once the worker's stderr
    /// closed, so its last line is in).
    stderr_reader: std::thread::JoinHandle<()>,
    /// Where this process writes bodies for the worker.
    ours: Spill,
    /// Where the worker writes bodies for us.
    theirs: Spill,
    /// The memory ceiling the worker runs under.
    pub memory_limit: Option<u64>,
    /// The package and document the worker holds from the last run.
    sent: Option<(PathBuf, Document)>,
    /// A run was sent and its end not read (the caller gave up on it).
    busy: bool,
}

impl Worker {
    /// Starts a worker and waits until it is ready.
    pub fn start(config: &WorkerConfig) -> io::Result<Worker> {
        // Our bodies for this worker: a prefix of their own, so they can be
        // cleared when it dies.
        static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let ours = Spill::named(format!(
            "wfstudio-studio-{}-{}-",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        let mut command = Command::new(&config.program);
        command
            .arg("worker")
            .arg("--peer-spill")
            .arg(ours.prefix())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_remove("WFSTUDIO_WORKER_FAULT");
        if let Some(bytes) = config.memory_limit {
            command.arg("--memory-limit").arg(bytes.to_string());
        }
        for library in &config.ep_libraries {
            command.arg("--ep-library").arg(library);
        }
        if let Some(fault) = &config.fault {
            command.env("WFSTUDIO_WORKER_FAULT", fault);
        }
        let mut child = command.spawn().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "could not start the run worker {}: {e}",
                    config.program.display()
                ),
            )
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err(io::Error::other("the run worker's pipes were not made"));
        };
        let theirs = Spill::of(child.id());
        let (sender, frames) = channel();
        let spill = theirs.clone();
        let max_body = byte_limit(config.memory_limit);
        std::thread::Builder::new()
            .name("wfstudio-worker-out".into())
            .spawn(move || {
                let mut stdout = BufReader::new(stdout);
                loop {
                    match read_frame(&mut stdout, &spill, max_body) {
                        Ok(Some(frame)) => {
                            if sender.send(Ok(frame)).is_err() {
                                return;
                            }
                        }
                        Ok(None) => return,
                        Err(error) => {
                            let _ = sender.send(Err(error));
                            return;
                        }
                    }
                }
            })?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let lines = tail.clone();
        let stderr_reader = std::thread::Builder::new()
            .name("wfstudio-worker-err".into())
            .spawn(move || {
                use std::io::Write as _;
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let _ = writeln!(io::stderr(), "[run worker] {line}");
                    let mut tail = lines
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if tail.len() == STDERR_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line.chars().take(STDERR_LINE_CHARS).collect());
                }
            })?;
        let mut worker = Worker {
            child,
            stdin,
            frames,
            stderr: tail,
            stderr_reader,
            ours,
            theirs,
            memory_limit: None,
            sent: None,
            busy: false,
        };
        match worker.frames.recv_timeout(START_TIMEOUT) {
            Ok(Ok((FromWorker::Ready { memory_limit }, _))) => {
                worker.memory_limit = memory_limit;
                Ok(worker)
            }
            Err(RecvTimeoutError::Timeout) => {
                worker.kill();
                Err(io::Error::other(format!(
                    "the run worker did not become ready within {} s",
                    START_TIMEOUT.as_secs()
                )))
            }
            _ => Err(io::Error::other(worker.died(None, "starting"))),
        }
    }

    /// Whether a run was sent and its end never read (its caller gave up):
    /// its answers would be taken for the next run's, so the worker must
    /// not be used again.
    pub fn busy(&self) -> bool {
        self.busy
    }

    /// Runs `run`, passing each event to `on_event` as it arrives; `cancel`
    /// is watched throughout.
    pub fn run(
        &mut self,
        run: &WorkerRun<'_>,
        cancel: &AtomicBool,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Ran, Failure> {
        let same = self
            .sent
            .as_ref()
            .is_some_and(|(package, document)| package == run.package && document == run.document);
        let mut body = Body::default();
        let inputs = run
            .inputs
            .iter()
            .map(|(name, tensor)| (name.clone(), body.put(tensor)))
            .collect();
        let request = RunRequest {
            package: run.package.to_path_buf(),
            document: (!same).then(|| wfstudio_schema::save::to_json(run.document)),
            device: run.device.to_string(),
            threads: run.threads,
            inputs,
            keep_bytes: run.keep_bytes,
            reuse: run.reuse,
        };
        if let Err(error) = write_frame(&mut self.stdin, ToWorker::Run(request), &body, &self.ours)
        {
            // A closed pipe is a dead worker; anything else (no room for
            // the inputs' file, a header too large) fails only this run.
            return Err(if error.kind() == io::ErrorKind::BrokenPipe {
                Failure::Lost(self.died(None, "running"))
            } else {
                Failure::Run(format!("the run could not be sent to the worker: {error}"))
            });
        }
        self.busy = true;
        if !same {
            self.sent = Some((run.package.to_path_buf(), run.document.clone()));
        }
        let max_bytes = byte_limit(self.memory_limit);
        let mut running: Option<String> = None;
        let mut cancelled_at: Option<Instant> = None;
        let mut device_note = None;
        let mut warm = false;
        let mut placements = Vec::new();
        loop {
            if cancelled_at.is_none() && cancel.load(Ordering::SeqCst) {
                cancelled_at = Some(Instant::now());
                let _ = write_frame(
                    &mut self.stdin,
                    ToWorker::Cancel,
                    &Body::default(),
                    &self.ours,
                );
            }
            if cancelled_at.is_some_and(|t| t.elapsed() > CANCEL_GRACE) {
                self.kill();
                return Err(Failure::Lost(
                    "cancelled: the run worker did not stop within a second, so it was \
                     stopped; the next Run starts a fresh one"
                        .into(),
                ));
            }
            let (message, body) = match self.frames.recv_timeout(Duration::from_millis(20)) {
                Ok(Ok(frame)) => frame,
                Ok(Err(error)) => {
                    self.kill();
                    return Err(Failure::Lost(format!(
                        "the run worker sent a message the studio cannot read ({error}); it was \
                         stopped and the next Run starts a fresh one"
                    )));
                }
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Failure::Lost(self.died(running.as_deref(), "running")));
                }
            };
            match message {
                FromWorker::Ready { .. } => {}
                FromWorker::Loaded {
                    device_note: note,
                    warm: kept,
                    placements: placed,
                } => {
                    device_note = note;
                    warm = kept;
                    placements = placed;
                }
                FromWorker::Event(wire) => {
                    let event = event_from_wire(wire, &body, max_bytes)
                        .map_err(|e| Failure::Lost(self.unreadable(e)))?;
                    if let Event::InvokeStarted { path, component } = &event {
                        running = Some(format!("{component} ({path})"));
                    }
                    on_event(event);
                }
                FromWorker::Done(Ok(wire)) => {
                    self.busy = false;
                    let output = output_from_wire(wire, &body, max_bytes)
                        .map_err(|e| Failure::Lost(self.unreadable(e)))?;
                    return Ok(Ran {
                        output,
                        device_note,
                        warm,
                        placements,
                    });
                }
                FromWorker::Done(Err(message)) => {
                    self.busy = false;
                    // A load that failed leaves the worker without a package.
                    self.sent = None;
                    return Err(Failure::Run(message));
                }
            }
        }
    }

    fn unreadable(&mut self, error: io::Error) -> String {
        self.kill();
        format!("the run worker sent a tensor the studio cannot read ({error}); it was stopped")
    }

    /// Kills the worker and removes what both sides left for the other
    /// (before the process is reaped, so its pid cannot have been reused).
    fn kill(&mut self) {
        let _ = self.child.kill();
        self.theirs.clear();
        self.ours.clear();
        let _ = self.child.wait();
    }

    /// The report of a worker that ended while `doing`, with the node that
    /// was `running`, its exit status or signal, and its last stderr line.
    fn died(&mut self, running: Option<&str>, doing: &str) -> String {
        self.theirs.clear();
        self.ours.clear();
        let status = wait_briefly(&mut self.child);
        // The worker's stderr closes as it ends; its last line follows.
        let until = Instant::now() + Duration::from_millis(500);
        while !self.stderr_reader.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let tail = self
            .stderr
            .lock()
            .map(|t| t.iter().rev().find(|l| !l.trim().is_empty()).cloned())
            .ok()
            .flatten();
        describe_death(status, running, doing, tail.as_deref(), self.memory_limit)
    }
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("pid", &self.child.id())
            .finish()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The child's exit status, killing it if it has not ended within a second
/// (its output ended, so it is on its way out or wedged).
fn wait_briefly(child: &mut Child) -> Option<ExitStatus> {
    wait_or_kill(child, Duration::from_secs(1)).0
}

/// The child's exit status, killing it if it has not ended within `limit`;
/// and whether it was killed for that.
pub(crate) fn wait_or_kill(child: &mut Child, limit: Duration) -> (Option<ExitStatus>, bool) {
    let until = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return (Some(status), false),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                return (child.wait().ok(), true);
            }
            Err(_) => return (None, false),
        }
    }
}

/// What the user reads when the worker died.
fn describe_death(
    status: Option<ExitStatus>,
    running: Option<&str>,
    doing: &str,
    stderr_tail: Option<&str>,
    memory_limit: Option<u64>,
) -> String {
    let how = match status {
        Some(s) if s.signal().is_some() => {
            let signal = s.signal().unwrap_or_default();
            format!("was killed by signal {signal} ({})", signal_name(signal))
        }
        Some(s) => format!("exited with status {}", s.code().unwrap_or_default()),
        None => "ended".to_string(),
    };
    let at = match (running, doing) {
        (Some(node), _) => format!("while running {node}"),
        (None, "starting") => "while starting".to_string(),
        (None, _) => "before any node ran".to_string(),
    };
    let mut message = format!("the run crashed: the worker process {how} {at}");
    if let Some(line) = stderr_tail {
        message.push_str(&format!(" (its last words: {})", line.trim()));
        if line.contains("memory allocation of")
            && let Some(limit) = memory_limit
        {
            message.push_str(&format!(
                "; it ran out of memory under its ceiling of {}",
                human(limit)
            ));
        }
    }
    message.push_str(". The document and its edits are kept; the next Run starts a fresh worker.");
    message
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGABRT => "SIGABRT, aborted",
        libc::SIGSEGV => "SIGSEGV, invalid memory access",
        libc::SIGKILL => "SIGKILL, killed",
        libc::SIGBUS => "SIGBUS, bus error",
        libc::SIGFPE => "SIGFPE, arithmetic fault",
        libc::SIGILL => "SIGILL, illegal instruction",
        libc::SIGTERM => "SIGTERM, terminated",
        _ => "a fatal signal",
    }
}

#[cfg(test)]
mod tests {
    use super::{Failure, Worker, WorkerConfig, WorkerRun, describe_death};
    use std::os::unix::process::ExitStatusExt;
    use std::path::Path;
    use std::process::ExitStatus;
    use std::sync::atomic::AtomicBool;
    use wfstudio_runner::{Data, Device, Tensor};

    /// Under a 256 MiB ceiling, inputs that would need more are refused
    /// before the worker allocates them, and the same worker then runs the
    /// package, keeps it loaded for the next run, and gives back the image.
    #[test]
    fn the_memory_ceiling_refuses_large_inputs_and_the_worker_runs_on() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/examples/tiny-denoise/inference_metadata.yaml");
        let (_, loaded) =
            wfstudio_schema::load_file(&file, &wfstudio_schema::Limits::default()).expect("reads");
        let document = loaded.expect("loads").document;
        let config = WorkerConfig {
            memory_limit: Some(256 << 20),
            ..WorkerConfig::default()
        };
        let mut worker = Worker::start(&config).expect("the worker starts");
        assert_eq!(worker.memory_limit, Some(256 << 20));
        let latent = |side: usize| {
            let n = 4 * side * side;
            Tensor::new(vec![1, 4, side, side], Data::F32(vec![0.5; n])).expect("tensor")
        };
        let run = |inputs: &[(String, Tensor)], worker: &mut Worker| {
            worker.run(
                &WorkerRun {
                    package: &file,
                    document: &document,
                    device: Device::Cpu,
                    threads: 1,
                    inputs,
                    keep_bytes: 0,
                    reuse: false,
                },
                &AtomicBool::new(false),
                &mut |_| {},
            )
        };
        let huge = [("request.latent".to_string(), latent(4096))];
        let refused = run(&huge, &mut worker).err().expect("refused");
        assert_eq!(
            refused,
            Failure::Run(
                "the run's inputs take 256 MiB and need twice that while they are read, more \
                 than the run worker's memory ceiling of 256 MiB (start the studio with a \
                 larger --worker-memory)"
                    .into()
            )
        );
        let small = [("request.latent".to_string(), latent(8))];
        let first = run(&small, &mut worker).unwrap_or_else(|f| panic!("{f:?}"));
        assert!(!first.warm);
        let again = run(&small, &mut worker).unwrap_or_else(|f| panic!("{f:?}"));
        assert!(again.warm, "the package stays loaded");
        assert_eq!(again.output.outputs["image"].shape, vec![1, 3, 32, 32]);
        assert_eq!(first.output.outputs["image"], again.output.outputs["image"]);
    }

    /// The report names the signal, the node and the worker's last line,
    /// and calls an allocation failure running out of memory.
    #[test]
    fn a_death_is_described_with_signal_node_and_cause() {
        let aborted = ExitStatus::from_raw(libc::SIGABRT);
        assert_eq!(
            describe_death(
                Some(aborted),
                Some("denoiser (pipeline.workflow.steps[0])"),
                "running",
                Some("memory allocation of 4096 bytes failed"),
                Some(3 << 30),
            ),
            "the run crashed: the worker process was killed by signal 6 (SIGABRT, aborted) \
             while running denoiser (pipeline.workflow.steps[0]) (its last words: \
             memory allocation of 4096 bytes failed); it ran out of memory under its ceiling of \
             3.0 GiB. The document and its edits are kept; the next Run starts a fresh worker."
        );
        let exited = ExitStatus::from_raw(3 << 8);
        assert_eq!(
            describe_death(Some(exited), None, "starting", None, None),
            "the run crashed: the worker process exited with status 3 while starting. The document \
             and its edits are kept; the next Run starts a fresh worker."
        );
    }
}
