//! `wfstudio import-comfyui`: read a ComfyUI graph (API JSON, UI JSON, the
//! `{"prompt": ...}` request body, or a PNG or WebP with the graph embedded).
//! `--emit-api` prints the API prompt ComfyUI would submit for it; otherwise
//! the graph is lowered to a `pipeline.workflow` document (exit 0), or
//! refused with diagnostics in the `check` format (exit 1). With
//! `--package-out DIR` the whole package is written: the document, every
//! policy synthesized, and the model components from `--models` (checked
//! against the lowered contracts) or made as `--stand-in-models`.

use super::report::{JsonDiagnostic, text};
use super::{EXIT_ERRORS, InputPath, OutputFormat};
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wfstudio_core::comfyui::import::{ApiOf, api_of};
use wfstudio_core::comfyui::package::{DEFAULT_RECIPE, Models, PackageOptions, write_package};
use wfstudio_core::comfyui::{NodeDefs, lower, read};
use wfstudio_schema::{Diagnostic, DocPath};

/// Arguments of `wfstudio import-comfyui`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The ComfyUI file (.json or .png).
    input: InputPath,
    /// Print the API prompt (node ids as strings, inputs in ComfyUI's order).
    #[arg(long)]
    emit_api: bool,
    /// Node class definitions (`node_defs.json`) that add to or override
    /// the bundled core classes (custom nodes); default `$WFSTUDIO_NODE_DEFS`.
    #[arg(long)]
    node_defs: Option<PathBuf>,
    /// Write the lowered document here (atomically) instead of standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// The target package: LoRA loaders use the adapters its current
    /// document declares, and without `-o` the lowered document is written
    /// as DIR/inference_metadata.yaml.
    #[arg(long)]
    package: Option<PathBuf>,
    /// Artifact paths replacing the default package layout: a JSON object
    /// `{component: path}` (applied after the target package's own paths).
    #[arg(long, value_name = "LAYOUT.json")]
    layout: Option<PathBuf>,
    /// Write a whole runnable package into this folder (document, policies
    /// and model components); refused if it exists and is not empty,
    /// unless `--force`.
    #[arg(long, value_name = "DIR")]
    package_out: Option<PathBuf>,
    /// With `--package-out`: take the model components from this folder
    /// laid out as a package (its document's artifact paths, else
    /// `<component>/model.onnx[.textproto]`); their ports are checked
    /// against the lowered contracts. Defaults to `--package`.
    #[arg(long, value_name = "DIR", conflicts_with = "stand_in_models")]
    models: Option<PathBuf>,
    /// Hard-link the models folder's files (`--models`, or `--package`)
    /// instead of copying them (copied where the file systems differ).
    #[arg(long, conflicts_with = "stand_in_models")]
    link: bool,
    /// With `--package-out`: make deterministic stand-in models with exactly
    /// the declared contracts instead of taking real ones.
    #[arg(long)]
    stand_in_models: bool,
    /// The stand-in models' seed.
    #[arg(long, default_value_t = 0, requires = "stand_in_models")]
    stand_in_seed: u64,
    /// With `--package-out`: replace a non-empty destination.
    #[arg(long, requires = "package_out")]
    force: bool,
    /// Output style of refusals.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

/// Imports one graph.
pub fn run(args: &ImportArgs) -> anyhow::Result<ExitCode> {
    let bytes =
        std::fs::read(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let found = read(&bytes).with_context(|| format!("reading {}", args.input.display()))?;
    let defs = match &found.ui {
        Some(_) => Some(
            NodeDefs::builtin_with(node_defs_path(args).as_deref()).map_err(anyhow::Error::msg)?,
        ),
        None => None,
    };
    let ApiOf { api, issues } = api_of(&found, defs.as_ref())?;
    for issue in &issues {
        eprintln!(
            "warning: node {} ({}): {}",
            issue.node, issue.class, issue.message
        );
    }
    if args.emit_api {
        println!("{}", serde_json::to_string_pretty(&api)?);
        return Ok(ExitCode::SUCCESS);
    }
    let models = args.models.as_ref().or(args.package.as_ref());
    if args.package_out.is_some() && models.is_none() && !args.stand_in_models {
        anyhow::bail!("--package-out needs --models DIR (or --package DIR) or --stand-in-models");
    }
    if args.link && (models.is_none() || args.package_out.is_none()) {
        anyhow::bail!("--link hard-links a models folder's files into --package-out: give both");
    }
    let target = match models {
        Some(dir) => lower::Target::from_package(dir)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("reading the target package {}", dir.display()))?,
        None => lower::Target::default(),
    };
    let target = match &args.layout {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let layout: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("reading {}", path.display()))?;
            target
                .with_layout(&layout)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("reading {}", path.display()))?
        }
        None => target,
    };
    match lower::lower_for(&api, &target) {
        Ok(lowered) if args.package_out.is_some() => {
            let out = args.package_out.as_deref().unwrap_or(Path::new("."));
            let models = match (models, args.stand_in_models) {
                (Some(dir), false) => Models::Folder {
                    dir: dir.clone(),
                    link: args.link,
                },
                _ => Models::StandIns {
                    seed: args.stand_in_seed,
                },
            };
            let options = PackageOptions {
                models,
                force: args.force,
                prompts: lowered.prompts.clone(),
            };
            let written = write_package(&lowered.document, out, &options)
                .with_context(|| format!("writing the package {}", out.display()))?;
            eprintln!(
                "wrote {}: {} policies synthesized, {} model components from the models folder, {} stand-ins",
                out.display(),
                written.synthesized.len(),
                written.taken.len(),
                written.stand_ins.len()
            );
            if !written.external_data.is_empty() {
                eprintln!(
                    "external data taken with the models: {}",
                    written.external_data.join(", ")
                );
            }
            if args.link {
                let files =
                    written.taken.len() + written.extras.len() + written.external_data.len();
                match files - written.linked {
                    0 => eprintln!("hard-linked all {files} files"),
                    copied => eprintln!(
                        "hard-linked {} of {files} files; {copied} copied (another file system)",
                        written.linked
                    ),
                }
            }
            for note in &written.notes {
                eprintln!("note: {note}");
            }
            let encoded = written.prompts_encoded.then(|| out.join(DEFAULT_RECIPE));
            report_lowering(&lowered, encoded.as_deref());
            Ok(ExitCode::SUCCESS)
        }
        Ok(lowered) => {
            let yaml = wfstudio_schema::emit::to_yaml(&lowered.document);
            let target = args.output.clone().or_else(|| {
                args.package
                    .as_ref()
                    .map(|d| d.join("inference_metadata.yaml"))
            });
            match target {
                Some(path) => wfstudio_schema::save::write_atomic(&path, yaml.as_bytes())
                    .with_context(|| format!("writing {}", path.display()))?,
                None => print!("{yaml}"),
            }
            report_lowering(&lowered, None);
            Ok(ExitCode::SUCCESS)
        }
        Err(refusals) => {
            let diagnostics: Vec<Diagnostic> = refusals
                .iter()
                .map(|r| {
                    let mut path = DocPath::root();
                    if !r.node.is_empty() {
                        path = path.key(r.node.as_str());
                    }
                    if let Some(input) = &r.input {
                        path = path.key("inputs").key(input.as_str());
                    }
                    Diagnostic::error("C001", path, r.sentence()).with_help(r.remedy.clone())
                })
                .collect();
            match args.format {
                OutputFormat::Json => {
                    let json: Vec<_> = diagnostics
                        .iter()
                        .map(|d| JsonDiagnostic::new(&args.input, d))
                        .collect();
                    println!("{}", serde_json::to_string_pretty(&json)?);
                }
                OutputFormat::Text => {
                    for d in &diagnostics {
                        println!("{}", text(&args.input, d));
                    }
                }
            }
            Ok(ExitCode::from(EXIT_ERRORS))
        }
    }
}

/// The lowering's prompts, notes and ignored nodes, on standard error;
/// `recipe` names where the prompts were written encoded, if anywhere.
fn report_lowering(lowered: &lower::Lowered, recipe: Option<&Path>) {
    for (input, text) in &lowered.prompts {
        match recipe {
            Some(recipe) => eprintln!(
                "prompt: {input} <- {text:?} (encoded in {})",
                recipe.display()
            ),
            None => eprintln!("prompt: {input} <- {text:?} (tokenize it into that input)"),
        }
    }
    for note in &lowered.notes {
        eprintln!("note: {note}");
    }
    for id in &lowered.ignored {
        eprintln!("ignored: node {id} does not reach a sink");
    }
}

/// `--node-defs`, else `$WFSTUDIO_NODE_DEFS` (set and not empty).
fn node_defs_path(args: &ImportArgs) -> Option<PathBuf> {
    args.node_defs.clone().or_else(|| {
        std::env::var_os("WFSTUDIO_NODE_DEFS")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}
