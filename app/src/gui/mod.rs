//! The studio window (eframe, glow renderer) around [`wfstudio_editor::Studio`],
//! and the scripted mode `wfstudio open PATH --screenshot FILE --quit`.

mod audio_player;
mod device_list;
mod inputs_form;
mod package_facts;
mod pixels;
mod previews;
mod run_job;
mod run_panel;
mod screenshot;
mod timeline;
mod value_view;
mod video_player;

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use wfstudio_editor::Studio;

/// `wfstudio open`.
#[derive(Debug, Args)]
pub struct OpenArgs {
    /// A document file or package folder.
    pub path: Option<PathBuf>,
    /// Write a PNG of the window once the document is laid out and validated.
    #[arg(long, value_name = "FILE.png")]
    pub screenshot: Option<PathBuf>,
    /// Exit after the screenshot.
    #[arg(long)]
    pub quit: bool,
    /// Window size in logical pixels.
    #[arg(long, value_name = "WxH", value_parser = parse_size, default_value = "1400x900")]
    pub size: (f32, f32),
    /// Start in the light theme.
    #[arg(long)]
    pub light: bool,
    /// Run the package once it is open (with `--screenshot`: wait for the run).
    #[arg(long)]
    pub run: bool,
    /// Recipe JSON whose inputs the run uses (default: `recipes/default.json`, else the first in `recipes/`).
    #[arg(long, value_name = "FILE.json")]
    pub recipe: Option<PathBuf>,
    /// Output whose preview is shown first.
    #[arg(long, value_name = "NAME")]
    pub select_output: Option<String>,
    /// SSA value shown in the value inspector after the run (as if its wire
    /// had been clicked).
    #[arg(long, value_name = "VALUE")]
    pub inspect: Option<String>,
    /// Memory ceiling of the run worker in GiB (default: three quarters of
    /// physical memory; 0: no ceiling).
    #[arg(long, value_name = "GIB")]
    pub worker_memory: Option<f64>,
    /// Device of the Run panel (`cpu`, `cuda`, `auto` or `EP[:N]` as
    /// `wfstudio devices` lists them).
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<wfstudio_runner::Device>,
    /// Step selected in the canvas and the inspector (a document path such
    /// as `pipeline.workflow.steps[1]`).
    #[arg(long, value_name = "PATH", value_parser = parse_doc_path)]
    pub select: Option<wfstudio_schema::DocPath>,
    /// Plugin execution provider libraries for the run worker.
    #[command(flatten)]
    pub ep: crate::cli::devices::EpArgs,
    /// Open the ComfyUI template browser (Import ▸ ComfyUI template…); with
    /// `--screenshot`, the picture waits until every template is checked.
    #[arg(long)]
    pub templates: bool,
}

fn parse_doc_path(text: &str) -> Result<wfstudio_schema::DocPath, String> {
    wfstudio_schema::DocPath::parse(text).ok_or_else(|| format!("'{text}' is not a document path"))
}

impl Default for OpenArgs {
    fn default() -> Self {
        OpenArgs {
            path: None,
            screenshot: None,
            quit: false,
            size: (1400.0, 900.0),
            light: false,
            run: false,
            recipe: None,
            select_output: None,
            inspect: None,
            worker_memory: None,
            device: None,
            select: None,
            ep: Default::default(),
            templates: false,
        }
    }
}

fn parse_size(text: &str) -> Result<(f32, f32), String> {
    let (w, h) = text
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected WxH, got '{text}'"))?;
    let parse = |v: &str| {
        v.trim()
            .parse::<f32>()
            .ok()
            .filter(|n| (200.0..=8192.0).contains(n))
            .ok_or_else(|| format!("window size '{v}' must be a number from 200 to 8192"))
    };
    Ok((parse(w)?, parse(h)?))
}

/// The eframe application.
struct StudioApp {
    studio: Studio,
    run: run_panel::RunPanel,
    /// The step to select once the document has been read and validated.
    select: Option<wfstudio_schema::DocPath>,
    script: Option<screenshot::Script>,
}

impl eframe::App for StudioApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.run.show(ui, &mut self.studio);
        self.studio.show(ui);
        // --select applies once the document has been analysed.
        let analysed = |studio: &Studio| studio.doc.as_ref().is_some_and(|d| d.analysis.is_some());
        if self.select.is_some()
            && analysed(&self.studio)
            && let Some(path) = self.select.take()
        {
            self.studio.reveal(&path);
            if self.studio.selection.last() != Some(&path) {
                eprintln!("warning: --select {path}: the document has no step there");
            }
        }
        if let Some(script) = &mut self.script {
            script.step(ui.ctx(), &self.studio, &mut self.run);
            self.studio.close_confirmed |= script.quitting();
        }
    }
}

/// Opens the window; returns when it closes.
pub fn run(args: &OpenArgs) -> anyhow::Result<ExitCode> {
    if args.quit && args.screenshot.is_none() {
        anyhow::bail!("--quit needs --screenshot FILE.png");
    }
    let exit = Arc::new(AtomicU8::new(0));
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("Workflow Studio")
            .with_inner_size(egui::vec2(args.size.0, args.size.1))
            .with_drag_and_drop(true),
        renderer: eframe::Renderer::Glow,
        ..Default::default()
    };
    let path = args.path.clone();
    let script = args
        .screenshot
        .clone()
        .map(|file| screenshot::Script::new(file, args.quit, args.run, exit.clone()));
    let mut run = run_panel::RunPanel::default();
    run.selected_output = args.select_output.clone();
    run.worker_config.ep_libraries = args.ep.ep_library.clone();
    if let Some(device) = &args.device {
        run.device = device.clone();
    }
    let select = args.select.clone();
    if let Some(gib) = args.worker_memory {
        run.worker_config.memory_limit = (gib > 0.0).then(|| (gib * f64::from(1u32 << 30)) as u64);
    }
    let recipe = args.recipe.clone();
    let run_now = args.run && args.screenshot.is_none();
    let light = args.light;
    let inspect = args.inspect.clone();
    let templates = args.templates;
    eframe::run_native(
        "wfstudio",
        options,
        Box::new(move |cc| {
            let ctx = cc.egui_ctx.clone();
            let mut studio = Studio::new(move || ctx.request_repaint());
            studio.dark = !light;
            studio.inspected_value = inspect;
            studio.templates.open = templates;
            if let Some(path) = &path {
                studio.open(path);
            }
            run.pin_recipe(recipe);
            if run_now {
                run.start_when_open();
            }
            Ok(Box::new(StudioApp {
                studio,
                run,
                select,
                script,
            }))
        }),
    )
    .map_err(|e| anyhow::anyhow!("could not open the window: {e}"))?;
    Ok(ExitCode::from(exit.load(Ordering::SeqCst)))
}
