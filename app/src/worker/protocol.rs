//! The protocol between the studio and its run worker (`wfstudio worker`):
//! frames on the worker's stdin and stdout. A frame is a little-endian
//! `u32` length, a JSON header ([`Envelope`]: the message and where its
//! body is), then the body bytes when they travel inline. The body holds
//! the raw little-endian bytes of every tensor the message carries
//! ([`Body`]); a message's tensors name their byte range in it. Bodies over
//! [`INLINE_BODY`] bytes go through a file in the spill folder (`/dev/shm`
//! where there is one, which is memory), which the reader deletes.

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use wfstudio_runner::raw::{read_le, write_le};
use wfstudio_runner::{DType, Tensor};
use wfstudio_schema::types::steps::EmitMode;

/// The largest header a reader accepts.
const MAX_HEADER: usize = 64 << 20;
/// Bodies up to this size travel inline in the pipe; larger ones by file.
pub const INLINE_BODY: usize = 1 << 20;

/// A tensor of a message: dtype, shape and its bytes in the body.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireTensor {
    dtype: String,
    shape: Vec<usize>,
    offset: usize,
    len: usize,
}

impl WireTensor {
    /// Bytes the tensor takes.
    pub fn bytes(&self) -> usize {
        self.len
    }
}

/// The tensor bytes of one message, written as the message is built.
#[derive(Default)]
pub struct Body {
    bytes: Vec<u8>,
}

impl Body {
    /// Wraps received bytes.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        Body { bytes }
    }

    /// Appends `tensor`'s bytes; the returned reference finds them again.
    pub fn put(&mut self, tensor: &Tensor) -> WireTensor {
        let offset = self.bytes.len();
        write_le(&tensor.data, &mut self.bytes);
        WireTensor {
            dtype: tensor.dtype().name().to_string(),
            shape: tensor.shape.clone(),
            offset,
            len: self.bytes.len() - offset,
        }
    }

    /// The tensor `wire` names, checked against the body and `max_bytes`.
    pub fn get(&self, wire: &WireTensor, max_bytes: usize) -> io::Result<Tensor> {
        let dtype = DType::from_contract(&wire.dtype)
            .ok_or_else(|| invalid(format!("unknown dtype '{}'", wire.dtype)))?;
        let bytes = wire
            .offset
            .checked_add(wire.len)
            .and_then(|end| self.bytes.get(wire.offset..end))
            .ok_or_else(|| invalid("a tensor lies outside the message body".into()))?;
        read_le(dtype, wire.shape.clone(), bytes, max_bytes).map_err(|e| invalid(e.0))
    }
}

/// Studio -> worker.
#[derive(Debug, Serialize, Deserialize)]
pub enum ToWorker {
    /// Run a workflow (the worker answers with events, then `Done`).
    Run(RunRequest),
    /// Stop the run in flight at the next invoke boundary.
    Cancel,
}

/// One run.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunRequest {
    /// The document's file (artifacts resolve beside it).
    pub package: PathBuf,
    /// The document as edited, as JSON; `None`: the one of the previous run.
    pub document: Option<String>,
    /// Requested device (`cpu`, `cuda`, `auto`).
    pub device: String,
    /// ONNX Runtime intra-op threads per session.
    pub threads: usize,
    /// Supplied inputs (tensors in the body).
    pub inputs: Vec<(String, WireTensor)>,
    /// Byte budget for intermediate values kept for the value inspector.
    pub keep_bytes: usize,
    /// Reuse results of earlier calls whose inputs did not change.
    pub reuse: bool,
}

/// Worker -> studio.
#[derive(Debug, Serialize, Deserialize)]
pub enum FromWorker {
    /// The worker is up.
    Ready {
        /// Its memory ceiling in bytes (`None`: not limited).
        memory_limit: Option<u64>,
    },
    /// The package is loaded (or was still loaded from the previous run).
    Loaded {
        /// Why the device differs from the requested one, if it does.
        device_note: Option<String>,
        /// Whether the sessions of an earlier run were kept.
        warm: bool,
        /// Where each component runs.
        placements: Vec<wfstudio_runner::Placement>,
    },
    /// A runner event.
    Event(WireEvent),
    /// The run ended.
    Done(Result<WireOutput, String>),
}

/// [`wfstudio_runner::Event`] on the wire (durations in nanoseconds); the
/// fields are the event's, see there.
#[derive(Debug, Serialize, Deserialize)]
pub enum WireEvent {
    /// The run began.
    Started,
    /// An invoke is about to run: its step path and component.
    InvokeStarted {
        /// Step path.
        path: String,
        /// Component.
        component: String,
    },
    /// An invoke finished.
    InvokeFinished {
        /// Step path.
        path: String,
        /// Component.
        component: String,
        /// Wall time of the step.
        wall_ns: u64,
        /// Time inside ONNX Runtime.
        ort_ns: u64,
        /// Produced values and their shapes.
        outputs: Vec<(String, Vec<usize>)>,
        /// Whether the outputs were reused.
        reused: bool,
    },
    /// A loop starts an iteration.
    LoopIteration {
        /// Loop path.
        path: String,
        /// Zero-based iteration.
        index: usize,
        /// `max_iterations`.
        limit: usize,
    },
    /// A value was published to an output.
    Emitted {
        /// Output key.
        key: String,
        /// The piece published (bytes in the body).
        chunk: WireTensor,
        /// How it combines with earlier ones.
        mode: EmitMode,
        /// The output's shape after it.
        shape: Vec<usize>,
    },
    /// The run finished.
    Finished {
        /// Wall time of the run.
        wall_ns: u64,
    },
    /// The run failed.
    Failed {
        /// Why.
        message: String,
    },
    /// The run was cancelled.
    Cancelled,
}

/// [`wfstudio_runner::RunOutput`] on the wire (tensors in the body).
#[derive(Debug, Serialize, Deserialize)]
pub struct WireOutput {
    /// Output values by key.
    pub outputs: Vec<(String, WireTensor)>,
    /// Every invoke call: step index, wall, ort, start (ns), reused.
    pub invokes: Vec<(usize, u64, u64, u64, bool)>,
    /// The invoke steps the calls name: path and component.
    pub steps: Vec<(String, String)>,
    /// Loop path -> iterations run.
    pub loop_iterations: Vec<(String, usize)>,
    /// Wall time of the run (ns).
    pub wall_ns: u64,
    /// Kept values: name, step path, iterations, tensor.
    pub kept: Vec<(String, String, Vec<usize>, WireTensor)>,
    /// Whether the budget cut the kept values short.
    pub kept_truncated: bool,
    /// Copies between host and device memory.
    pub transfers: wfstudio_runner::Transfers,
}

/// A message and where its body is.
#[derive(Serialize, Deserialize)]
struct Envelope<M> {
    message: M,
    body: BodyAt,
}

#[derive(Serialize, Deserialize)]
enum BodyAt {
    /// `len` bytes follow the header.
    Inline(usize),
    /// In this spill file.
    File(String),
}

/// Where a process writes the bodies too large for the pipe: `/dev/shm`
/// (memory) when there is one and it has room, else the temporary folder;
/// one name prefix per process, so a reader accepts only files of the
/// process it talks to.
#[derive(Clone, Debug)]
pub struct Spill {
    dirs: Vec<PathBuf>,
    prefix: String,
}

impl Spill {
    /// The spill place of worker process `pid`.
    pub fn of(pid: u32) -> Self {
        Spill::named(format!("wfstudio-worker-{pid}-"))
    }

    /// The spill place whose files start with `prefix`.
    pub fn named(prefix: String) -> Self {
        let shm = Path::new("/dev/shm");
        let mut dirs = Vec::new();
        if shm.is_dir() {
            dirs.push(shm.to_path_buf());
        }
        dirs.push(std::env::temp_dir());
        Spill { dirs, prefix }
    }

    /// The prefix of its files.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Removes every file left by this process (after it died).
    pub fn clear(&self) {
        for dir in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(&self.prefix)
                {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }

    /// Writes `bytes` to a fresh file (created new, readable by this user
    /// only), in the first place with room.
    fn write(&self, bytes: &[u8]) -> io::Result<PathBuf> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt;
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{}{}.bin",
            self.prefix,
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut last = io::Error::other("no spill folder");
        for dir in &self.dirs {
            let file = dir.join(&name);
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&file)
                .and_then(|mut f| f.write_all(bytes));
            match written {
                Ok(()) => return Ok(file),
                Err(error) => {
                    if error.kind() != io::ErrorKind::AlreadyExists {
                        let _ = std::fs::remove_file(&file);
                    }
                    last = error;
                }
            }
        }
        Err(last)
    }

    /// The bytes of spill file `path` (a regular file, not followed through
    /// a link), at most `max` of them.
    fn read(path: &Path, max: usize) -> Result<Vec<u8>, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| format!("opening {}: {e}", path.display()))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        if !meta.is_file() {
            return Err(format!("{} is not a regular file", path.display()));
        }
        if meta.len() > max as u64 {
            return Err(format!(
                "a body of {} bytes is over the {max}-byte ceiling",
                meta.len()
            ));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(max as u64)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        Ok(bytes)
    }

    /// `path` if it is a spill file of this process.
    fn accept(&self, path: &str) -> io::Result<PathBuf> {
        let path = Path::new(path);
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let ok = name.as_deref().is_some_and(|name| {
            name.starts_with(&self.prefix)
                && name.ends_with(".bin")
                && name[self.prefix.len()..name.len() - 4]
                    .bytes()
                    .all(|b| b.is_ascii_digit())
        }) && path
            .parent()
            .is_some_and(|p| self.dirs.iter().any(|d| d == p));
        if !ok {
            return Err(invalid(format!(
                "'{}' is not a spill file of the other side",
                path.display()
            )));
        }
        Ok(path.to_path_buf())
    }
}

/// Writes one frame: `message` with `body`, large bodies through `spill`.
pub fn write_frame<M: Serialize>(
    out: &mut impl Write,
    message: M,
    body: &Body,
    spill: &Spill,
) -> io::Result<()> {
    let bytes = &body.bytes;
    let file = if bytes.len() > INLINE_BODY {
        Some(spill.write(bytes)?)
    } else {
        None
    };
    let at = match &file {
        Some(path) => BodyAt::File(path.to_string_lossy().into_owned()),
        None => BodyAt::Inline(bytes.len()),
    };
    let sent = (|| {
        let header =
            serde_json::to_vec(&Envelope { message, body: at }).map_err(io::Error::other)?;
        let len = u32::try_from(header.len())
            .ok()
            .filter(|n| (*n as usize) <= MAX_HEADER)
            .ok_or_else(|| invalid(format!("a {}-byte header is too large", header.len())))?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(&header)?;
        if file.is_none() {
            out.write_all(bytes)?;
        }
        out.flush()
    })();
    // A body nobody will read is removed.
    if let (Err(_), Some(path)) = (&sent, &file) {
        let _ = std::fs::remove_file(path);
    }
    sent
}

/// Reads one frame; `None` at the end of the stream. The body may take at
/// most `max_body` bytes; files are read from `spill` only, then removed.
pub fn read_frame<M: DeserializeOwned>(
    input: &mut impl Read,
    spill: &Spill,
    max_body: usize,
) -> io::Result<Option<(M, Body)>> {
    match read_frame_if(input, spill, max_body, |_| Ok(()))? {
        Some((message, Ok(body))) => Ok(Some((message, body))),
        Some((_, Err(reason))) => Err(invalid(reason)),
        None => Ok(None),
    }
}

/// [`read_frame`], but the body is read only when `admit` accepts the
/// message; otherwise it is skipped (the stream stays in step) and the
/// reason stands in its place.
pub fn read_frame_if<M: DeserializeOwned>(
    input: &mut impl Read,
    spill: &Spill,
    max_body: usize,
    admit: impl Fn(&M) -> Result<(), String>,
) -> io::Result<Option<(M, Result<Body, String>)>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_HEADER {
        return Err(invalid(format!(
            "a {len}-byte header is over the {MAX_HEADER}-byte limit"
        )));
    }
    let mut header = vec![0; len];
    input.read_exact(&mut header)?;
    let envelope: Envelope<M> =
        serde_json::from_slice(&header).map_err(|e| invalid(format!("bad header: {e}")))?;
    let admitted = admit(&envelope.message);
    let body = match envelope.body {
        BodyAt::Inline(n) => {
            if n > max_body.min(INLINE_BODY) {
                return Err(invalid(format!("an inline body of {n} bytes is too large")));
            }
            let mut bytes = vec![0; n];
            input.read_exact(&mut bytes)?;
            admitted.map(|()| bytes)
        }
        BodyAt::File(name) => {
            let file = spill.accept(&name)?;
            let bytes = admitted.and_then(|()| Spill::read(&file, max_body));
            let _ = std::fs::remove_file(&file);
            bytes
        }
    };
    Ok(Some((envelope.message, body.map(Body::from_bytes))))
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

#[cfg(test)]
mod tests {
    use super::{Body, INLINE_BODY, Spill, ToWorker, read_frame, write_frame};
    use wfstudio_runner::{Data, Tensor};

    fn frame(tensor: &Tensor, spill: &Spill) -> Vec<u8> {
        let mut body = Body::default();
        let wire = body.put(tensor);
        let mut out = Vec::new();
        let message = ToWorker::Run(super::RunRequest {
            package: "p".into(),
            document: None,
            device: "cpu".into(),
            threads: 1,
            inputs: vec![("x".into(), wire)],
            keep_bytes: 0,
            reuse: true,
        });
        write_frame(&mut out, message, &body, spill).expect("writes");
        out
    }

    /// Small bodies travel inline, large ones through a spill file that the
    /// reader removes; both give the tensor back bit for bit.
    #[test]
    fn tensors_cross_inline_and_by_file() {
        let spill = Spill::of(u32::MAX);
        for n in [3, INLINE_BODY / 4 + 1] {
            let tensor =
                Tensor::new(vec![n], Data::F32((0..n).map(|i| i as f32).collect())).expect("t");
            let bytes = frame(&tensor, &spill);
            assert!(
                bytes.len() < 4096,
                "a large body goes by file, not the pipe"
            );
            let (message, body): (ToWorker, Body) =
                read_frame(&mut bytes.as_slice(), &spill, 1 << 30)
                    .expect("reads")
                    .expect("a frame");
            let ToWorker::Run(request) = message else {
                panic!("a run")
            };
            let back = body.get(&request.inputs[0].1, 1 << 30).expect("tensor");
            assert_eq!(back, tensor);
        }
        let left = spill
            .dirs
            .iter()
            .flat_map(|dir| std::fs::read_dir(dir).expect("spill dir").flatten())
            .filter(|e| e.file_name().to_string_lossy().starts_with(&spill.prefix))
            .count();
        assert_eq!(left, 0, "the reader removed the spill file");
    }

    /// A header that names a file outside the spill place, or a body over
    /// the reader's ceiling, is refused.
    #[test]
    fn foreign_files_and_large_bodies_are_refused() {
        let spill = Spill::of(u32::MAX - 1);
        let header = br#"{"message":"Cancel","body":{"File":"../../etc/passwd"}}"#;
        let mut bytes = (header.len() as u32).to_le_bytes().to_vec();
        bytes.extend_from_slice(header);
        let error = read_frame::<ToWorker>(&mut bytes.as_slice(), &spill, 1 << 20)
            .err()
            .expect("refused");
        assert_eq!(
            error.to_string(),
            "'../../etc/passwd' is not a spill file of the other side"
        );
        let tensor = Tensor::new(vec![1000], Data::F32(vec![0.0; 1000])).expect("t");
        let bytes = frame(&tensor, &spill);
        let error = read_frame::<ToWorker>(&mut bytes.as_slice(), &spill, 100)
            .err()
            .expect("refused");
        assert_eq!(
            error.to_string(),
            "an inline body of 4000 bytes is too large"
        );
    }
}
