//! Scripted screenshots: wait until the document is open, validated and
//! laid out and the view has been fitted for a few frames, ask the
//! viewport for a screenshot, write it as PNG and (with `--quit`) close.

use super::run_panel::RunPanel;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};
use wfstudio_editor::Studio;

/// Frames to draw after settling, so fit-to-view and fonts have taken effect.
const SETTLE_FRAMES: u32 = 5;
/// Give up when the document has not settled by then.
const DEADLINE: Duration = Duration::from_secs(60);

/// The screenshot script's progress.
pub struct Script {
    file: PathBuf,
    quit: bool,
    /// Run the package first and wait for the run to end.
    run: bool,
    run_started: bool,
    exit: Arc<AtomicU8>,
    started: Instant,
    settled_frames: u32,
    requested: bool,
    done: bool,
}

impl Script {
    /// A script writing to `file`; `exit` receives the process status.
    pub fn new(file: PathBuf, quit: bool, run: bool, exit: Arc<AtomicU8>) -> Self {
        Script {
            file,
            quit,
            run,
            run_started: false,
            exit,
            started: Instant::now(),
            settled_frames: 0,
            requested: false,
            done: false,
        }
    }

    fn finish(&mut self, ctx: &egui::Context, code: u8, message: Option<String>) {
        if let Some(message) = message {
            eprintln!("wfstudio: {message}");
        }
        self.exit.store(code, Ordering::SeqCst);
        self.done = true;
        if self.quit {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
    }

    /// Whether the script has ended and closes the window (unsaved edits
    /// of a scripted session, an imported graph's say, are not asked about).
    pub fn quitting(&self) -> bool {
        self.done && self.quit
    }

    /// Advances the script by one frame.
    pub fn step(&mut self, ctx: &egui::Context, studio: &Studio, panel: &mut RunPanel) {
        if self.done {
            return;
        }
        ctx.request_repaint();
        let image = ctx.input(|i| {
            i.raw.events.iter().find_map(|e| match e {
                egui::Event::Screenshot { image, .. } => Some(image.clone()),
                _ => None,
            })
        });
        if let Some(image) = image {
            let result = write_png(&self.file, &image);
            match result {
                Ok(()) => {
                    println!("{}", self.file.display());
                    match panel.failure() {
                        Some(why) if self.run => {
                            self.finish(ctx, 1, Some(format!("the run failed: {why}")))
                        }
                        _ => self.finish(ctx, 0, None),
                    }
                }
                Err(e) => self.finish(
                    ctx,
                    2,
                    Some(format!("cannot write {}: {e}", self.file.display())),
                ),
            }
            return;
        }
        let browsing = studio.templates.open;
        if studio.settled() && studio.doc.is_none() && studio.comfy.is_none() && !browsing {
            let why = studio
                .status
                .as_ref()
                .map_or("no document was opened".to_string(), |s| s.text.clone());
            self.finish(ctx, 1, Some(why));
            return;
        }
        if self.started.elapsed() > DEADLINE {
            self.finish(
                ctx,
                1,
                Some("the document did not finish opening in time".into()),
            );
            return;
        }
        if studio.settled() && self.run && !self.run_started {
            self.run_started = true;
            panel.start(studio, ctx);
        }
        // The picture waits for the run and for the inputs form's reading of
        // the package (a voice shown by its name, not its number).
        let run_over = (!self.run || panel.outcome().is_some()) && !panel.reading_package();
        let browsed = !browsing || studio.templates.settled();
        if studio.settled() && run_over && browsed {
            self.settled_frames += 1;
        }
        if self.settled_frames >= SETTLE_FRAMES && !self.requested {
            self.requested = true;
            ctx.send_viewport_cmd(egui::ViewportCommand::Screenshot(egui::UserData::default()));
        }
    }
}

fn write_png(file: &std::path::Path, image: &egui::ColorImage) -> Result<(), image::ImageError> {
    let [w, h] = image.size;
    let pixels: Vec<u8> = image.pixels.iter().flat_map(|p| p.to_array()).collect();
    let buffer = image::RgbaImage::from_raw(w as u32, h as u32, pixels).ok_or_else(|| {
        image::ImageError::Parameter(image::error::ParameterError::from_kind(
            image::error::ParameterErrorKind::DimensionMismatch,
        ))
    })?;
    buffer.save(file)
}
