//! `wfstudio import-comfyui`: read a ComfyUI graph (API JSON, UI JSON, the
//! `{"prompt": ...}` request body, or a PNG with embedded chunks).
//! `--emit-api` prints the API prompt ComfyUI would submit for it.

use super::InputPath;
use anyhow::{Context, bail};
use std::path::PathBuf;
use std::process::ExitCode;
use wfstudio_core::comfyui::{NodeDefs, read, to_api, ui_to_api};

/// Arguments of `wfstudio import-comfyui`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The ComfyUI file (.json or .png).
    input: InputPath,
    /// Print the API prompt (node ids as strings, inputs in ComfyUI's order).
    #[arg(long)]
    emit_api: bool,
    /// Node class definitions (`node_defs.json`); default `$WFSTUDIO_NODE_DEFS`.
    #[arg(long)]
    node_defs: Option<PathBuf>,
}

/// Imports one graph.
pub fn run(args: &ImportArgs) -> anyhow::Result<ExitCode> {
    if !args.emit_api {
        bail!(
            "lowering ComfyUI graphs to pipeline.workflow is not implemented yet; use --emit-api"
        );
    }
    let bytes =
        std::fs::read(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let found = read(&bytes).with_context(|| format!("reading {}", args.input.display()))?;
    let api = match (found.ui, found.api) {
        (Some(ui), _) => {
            let path = args
                .node_defs
                .clone()
                .or_else(|| std::env::var_os("WFSTUDIO_NODE_DEFS").map(PathBuf::from))
                .context("a UI workflow needs node definitions: pass --node-defs node_defs.json or set WFSTUDIO_NODE_DEFS")?;
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let defs = NodeDefs::parse(&text)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("reading {}", path.display()))?;
            let (graph, issues) = ui_to_api(&ui, &defs);
            for issue in &issues {
                eprintln!(
                    "warning: node {} ({}): {}",
                    issue.node, issue.class, issue.message
                );
            }
            to_api::api_json(&graph)
        }
        (None, Some(api)) => api,
        (None, None) => bail!("{} holds no ComfyUI graph", args.input.display()),
    };
    println!("{}", serde_json::to_string_pretty(&api)?);
    Ok(ExitCode::SUCCESS)
}
