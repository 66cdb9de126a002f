//! A run of the open package: a background thread reads the recipe's
//! inputs, hands the run to the studio's run worker (a child process, see
//! [`crate::worker`]; started on the first run and kept warm, restarted
//! after it dies), forwards its events over a channel, and decodes the
//! outputs into media and token outputs into text (streaming the text as
//! emits arrive), so the UI thread only draws. The worker reuses the
//! results of calls whose inputs did not change since the previous run.
//! Cancel is an atomic flag watched while the worker runs; a worker that
//! does not stop within a second is killed. A panic here is caught and
//! reported as the run's failure.

use crate::output_media::{self, Media};
use crate::worker::client::{Failure, Worker, WorkerConfig, WorkerRun};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use wfstudio_editor::worker::caught;
use wfstudio_runner::text::PackageTokenizer;
use wfstudio_runner::{Device, Event, RunOutput, Tensor};
use wfstudio_schema::types::steps::EmitMode;

/// The studio's run worker, shared by its runs (empty until the first run
/// and after the worker died).
pub type WorkerSlot = Arc<Mutex<Option<Worker>>>;

/// Memory for the values a run keeps for the value inspector.
const KEEP_BYTES: usize = 256 << 20;

/// What to run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The document's file (artifacts resolve beside it).
    pub package: PathBuf,
    /// The document as edited (unsaved edits included); `None` reads the file.
    pub document: Option<Box<wfstudio_schema::types::document::Document>>,
    /// A recipe JSON with the inputs, if any.
    pub recipe: Option<PathBuf>,
    /// Requested device.
    pub device: Device,
    /// Inputs set in the form, over the recipe's.
    pub overrides: std::collections::HashMap<String, Tensor>,
    /// Reuse results of earlier calls whose inputs did not change.
    pub reuse: bool,
    /// The worker that runs it.
    pub worker: WorkerSlot,
    /// How to start a worker when there is none.
    pub config: WorkerConfig,
}

/// A finished run.
pub struct Finished {
    /// Outputs, timing, loop counts.
    pub output: RunOutput,
    /// Each output decoded by its role.
    pub media: BTreeMap<String, Media>,
    /// Token outputs decoded by the package tokenizer, per row.
    pub texts: BTreeMap<String, Vec<String>>,
    /// Why the device differs from the requested one, if it does.
    pub device_note: Option<String>,
    /// Whether the worker still had the package loaded.
    pub warm: bool,
    /// Where each component ran.
    pub placements: Vec<wfstudio_runner::Placement>,
}

/// Messages from the run thread.
pub enum RunMessage {
    /// A runner event.
    Event(Event),
    /// The text of a token output so far, per row (as its emits arrive).
    Text {
        /// Output key.
        key: String,
        /// Decoded rows.
        rows: Vec<String>,
    },
    /// The run ended: its results, or the error.
    Done(Result<Box<Finished>, String>),
}

/// A run in flight.
pub struct RunJob {
    /// Messages in arrival order.
    pub messages: Receiver<RunMessage>,
    cancel: Arc<AtomicBool>,
}

impl RunJob {
    /// Starts `spec` on a new thread; `notify` wakes the UI per message.
    pub fn start(spec: RunSpec, notify: impl Fn() + Send + 'static) -> Self {
        let (sender, messages) = channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        std::thread::Builder::new()
            .name("wfstudio-run".into())
            .spawn(move || {
                let events = sender.clone();
                let notify = Arc::new(notify);
                let wake = notify.clone();
                let mut sink = move |message: RunMessage| {
                    let _ = events.send(message);
                    wake();
                };
                let result = caught("running the workflow", || execute(&spec, &flag, &mut sink))
                    .unwrap_or_else(Err);
                let _ = sender.send(RunMessage::Done(result));
                notify();
            })
            .expect("the run thread starts");
        RunJob { messages, cancel }
    }

    /// Asks the run to stop at the next invoke boundary.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }
}

impl Drop for RunJob {
    /// A run nobody waits for any more (another package opened) stops.
    fn drop(&mut self) {
        self.cancel();
    }
}

/// The token ids a streamed output holds so far.
#[derive(Default)]
struct TextStream {
    ids: BTreeMap<String, Tensor>,
}

impl TextStream {
    /// Folds one publish in; returns the output's ids so far.
    fn push(&mut self, key: &str, chunk: &Tensor, mode: EmitMode) -> Option<&Tensor> {
        let merged = match (mode, self.ids.get(key)) {
            (EmitMode::Append | EmitMode::Event, Some(previous)) => {
                let axis = chunk.shape.len().saturating_sub(1);
                Tensor::concat(axis, &[previous, chunk]).ok()?
            }
            _ => chunk.clone(),
        };
        self.ids.insert(key.to_string(), merged);
        self.ids.get(key)
    }
}

fn execute(
    spec: &RunSpec,
    cancel: &AtomicBool,
    sink: &mut dyn FnMut(RunMessage),
) -> Result<Box<Finished>, String> {
    let mut inputs: std::collections::HashMap<String, Tensor> =
        crate::cli::run::read_recipe(spec.recipe.as_deref())
            .map_err(|e| format!("{e:#}"))?
            .map(|r| r.inputs)
            .unwrap_or_default();
    inputs.extend(spec.overrides.clone());
    let inputs: Vec<(String, Tensor)> = inputs.into_iter().collect();
    let document = match &spec.document {
        Some(document) => (**document).clone(),
        None => read_document(&spec.package)?,
    };
    let root = spec
        .package
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // A broken tokenizer only loses the text view, never the run.
    let tokenizer = PackageTokenizer::for_package(&document, root)
        .ok()
        .flatten();
    let mut stream = TextStream::default();
    let mut observer = |event: Event| {
        if let Event::Emitted {
            key, chunk, mode, ..
        } = &event
            && tokenizer.is_some()
            && output_media::is_tokens(&document, key)
            && let Some(ids) = stream.push(key, chunk, *mode)
            && let Some(Ok(rows)) = output_media::text_of(&document, tokenizer.as_ref(), key, ids)
        {
            sink(RunMessage::Text {
                key: key.clone(),
                rows,
            });
        }
        sink(RunMessage::Event(event));
    };
    let run = WorkerRun {
        package: &spec.package,
        document: &document,
        device: spec.device.clone(),
        threads: 1,
        inputs: &inputs,
        keep_bytes: KEEP_BYTES,
        reuse: spec.reuse,
    };
    let mut slot = spec
        .worker
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // A worker whose last run was given up on (its thread panicked) would
    // answer with that run's results: it is replaced.
    if slot.as_ref().is_none_or(Worker::busy) {
        *slot = Some(Worker::start(&spec.config).map_err(|e| e.to_string())?);
    }
    let worker = slot.as_mut().ok_or("the run worker did not start")?;
    let ran = match worker.run(&run, cancel, &mut observer) {
        Ok(ran) => ran,
        Err(failure) => {
            if let Failure::Lost(_) = failure {
                *slot = None;
            }
            return Err(failure.message().to_string());
        }
    };
    drop(slot);
    let output: RunOutput = ran.output;
    let texts = output
        .outputs
        .iter()
        .filter_map(|(key, ids)| {
            let rows = output_media::text_of(&document, tokenizer.as_ref(), key, ids)?.ok()?;
            Some((key.clone(), rows))
        })
        .collect();
    let media = output
        .outputs
        .iter()
        .map(|(key, tensor)| {
            let media = output_media::decode(&document, key, tensor).unwrap_or(Media::Tensor);
            (key.clone(), media)
        })
        .collect();
    Ok(Box::new(Finished {
        output,
        media,
        texts,
        device_note: ran.device_note,
        warm: ran.warm,
        placements: ran.placements,
    }))
}

/// The document of the package at `path`, as saved.
fn read_document(path: &Path) -> Result<wfstudio_schema::Document, String> {
    let (file, parsed) = wfstudio_schema::load_file(path, &wfstudio_schema::Limits::default())
        .map_err(|e| e.to_string())?;
    parsed.map(|loaded| loaded.document).map_err(|diagnostics| {
        let first = diagnostics
            .first()
            .map(|d| d.message.clone())
            .unwrap_or_default();
        format!("{} does not load: {first}", file.display())
    })
}

#[cfg(test)]
mod tests {
    use super::{RunSpec, TextStream, execute};
    use wfstudio_runner::{Data, Tensor};
    use wfstudio_schema::types::steps::EmitMode;

    /// Streamed ids grow with appends and events and restart on replace.
    #[test]
    fn the_text_stream_folds_publishes_by_mode() {
        let ids = |v: Vec<i64>| Tensor::new(vec![1, v.len()], Data::I64(v)).expect("tensor");
        let mut stream = TextStream::default();
        stream.push("tokens", &ids(vec![4]), EmitMode::Append);
        stream.push("tokens", &ids(vec![5, 6]), EmitMode::Append);
        assert_eq!(stream.ids["tokens"], ids(vec![4, 5, 6]));
        stream.push("tokens", &ids(vec![7]), EmitMode::Event);
        assert_eq!(stream.ids["tokens"], ids(vec![4, 5, 6, 7]));
        let now = stream.push("tokens", &ids(vec![9]), EmitMode::Replace);
        assert_eq!(now, Some(&ids(vec![9])));
        stream.push("other", &ids(vec![1]), EmitMode::Append);
        assert_eq!(stream.ids["tokens"], ids(vec![9]), "outputs stream apart");
    }
    use std::path::Path;
    use std::sync::atomic::AtomicBool;
    use wfstudio_runner::Device;
    use wfstudio_schema::{Format, Limits, parse_text};

    /// A run of the edited document sees the edit before it is saved.
    #[test]
    fn the_run_uses_the_document_as_edited() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/examples/tiny-denoise/inference_metadata.yaml");
        let text = std::fs::read_to_string(&file).expect("fixture");
        let edited_text = text.replace("        default: 4\n", "        default: 2\n");
        assert_ne!(text, edited_text, "the fixture declares `default: 4`");
        let edited = parse_text(&edited_text, Format::Yaml, &Limits::default())
            .expect("parses")
            .document;
        // The recipe's latent, and `request.steps` left to its default.
        let recipe =
            std::fs::read_to_string(file.with_file_name("recipes/smiley.json")).expect("recipe");
        let latent = wfstudio_runner::recipe::parse(&recipe)
            .expect("recipe")
            .inputs["request.latent"]
            .clone();
        let run = |document| {
            let spec = RunSpec {
                package: file.clone(),
                document,
                recipe: None,
                device: Device::Cpu,
                overrides: [("request.latent".to_string(), latent.clone())].into(),
                reuse: false,
                worker: Default::default(),
                config: Default::default(),
            };
            let finished = execute(&spec, &AtomicBool::new(false), &mut |_| {})
                .unwrap_or_else(|e| panic!("{e}"));
            finished.output.loop_iterations["pipeline.workflow.steps[0]"]
        };
        assert_eq!(run(None), 4, "the saved file");
        assert_eq!(run(Some(Box::new(edited))), 2, "the unsaved edit");
    }
}
