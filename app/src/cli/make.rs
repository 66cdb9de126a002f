//! `wfstudio make`: package parts the product makes from a real model's own
//! data (see `wfstudio_core::make`), written atomically.

use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wfstudio_core::make::{char_tokenizer, npz, style_table, terrain};

/// `wfstudio make` arguments.
#[derive(Args, Debug)]
pub struct MakeArgs {
    #[command(subcommand)]
    what: Part,
}

#[derive(Subcommand, Debug)]
enum Part {
    /// A character-level tokenizer.json from a vocabulary of single
    /// characters (`{"vocab": {char: id}}`), each encoding wrapped in a pad id.
    CharTokenizer {
        /// The vocabulary JSON.
        vocab: PathBuf,
        /// The id of the pad token that wraps every encoding.
        #[arg(long, default_value_t = 0)]
        pad_id: u32,
        /// The tokenizer.json to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// A policy model that picks a voice's style vector by utterance length
    /// from a table of voices (a NumPy .npz, one float32 array
    /// [rows, 1, width] or [rows, width] per voice); its `voice` input is
    /// labelled with the voice names.
    StyleTable {
        /// The voices .npz.
        voices: PathBuf,
        /// The .onnx to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// The policies of the terrain diffusion package (noise, model space,
    /// starts, schedule, conditioning, re-noising, colour map), one
    /// `<name>.onnx` each.
    TerrainPolicies {
        /// The folder to write them into.
        #[arg(long)]
        out: PathBuf,
    },
}

/// Runs `wfstudio make`.
pub fn run(args: &MakeArgs) -> anyhow::Result<ExitCode> {
    match &args.what {
        Part::CharTokenizer { vocab, pad_id, out } => {
            let text = std::fs::read_to_string(vocab)
                .with_context(|| format!("reading {}", vocab.display()))?;
            let tokenizer = char_tokenizer::char_tokenizer(&text, *pad_id)
                .with_context(|| format!("reading {}", vocab.display()))?;
            write_atomically(out, tokenizer.as_bytes())?;
            eprintln!("wrote {}", out.display());
        }
        Part::StyleTable { voices, out } => {
            let arrays = npz::read_f32_arrays(voices)?;
            let bytes = style_table::style_table(&arrays)
                .with_context(|| format!("reading {}", voices.display()))?;
            write_atomically(out, &bytes)?;
            let names: Vec<&str> = arrays.iter().map(|a| a.name.as_str()).collect();
            eprintln!("wrote {} (voices: {})", out.display(), names.join(", "));
        }
        Part::TerrainPolicies { out } => {
            let policies = terrain::terrain_policies();
            for (name, bytes) in &policies {
                write_atomically(&out.join(format!("{name}.onnx")), bytes)?;
            }
            eprintln!("wrote {} policies into {}", policies.len(), out.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `bytes` to `path` atomically, creating its folder.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    wfstudio_schema::save::write_atomic(path, bytes)
        .with_context(|| format!("writing {}", path.display()))
}
