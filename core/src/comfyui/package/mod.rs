//! Writing a lowered ComfyUI graph as a whole package: the document, every
//! policy synthesized under `policies/`, and the model components either
//! taken from a models folder (copied or linked, their ports checked
//! against the declared contracts) or made as stand-ins. Everything is
//! written into a temporary folder beside the destination and renamed into
//! place, so a refusal leaves nothing half-written.

mod extents;
mod files;
pub mod inputs;
pub mod ports;

use super::synth::standin::stand_in;
use super::synth::{self, SynthError};
use crate::text::PackageTokenizer;
use files::{Staging, is_empty_dir, stays_inside};
use ports::PortMismatch;
use serde_json::Value;
use std::path::{Path, PathBuf};
use wfstudio_onnx::signature::Signature;

/// Where the model components (everything that is not a policy) come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Models {
    /// Deterministic stand-ins with the declared contracts, from this seed.
    StandIns {
        /// The generator seed.
        seed: u64,
    },
    /// Files of a folder laid out as a package.
    Folder {
        /// The folder.
        dir: PathBuf,
        /// Hard links instead of copies.
        link: bool,
    },
}

/// How a package is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageOptions {
    /// Where the models come from.
    pub models: Models,
    /// Replace an existing non-empty destination.
    pub force: bool,
    /// The graph's prompts, `(input, text)`: the stand-in tokenizer's
    /// vocabulary and the default recipe's prompt inputs.
    pub prompts: Vec<(String, String)>,
}

/// Where each component of a written package came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Policies synthesized by the importer.
    pub synthesized: Vec<String>,
    /// Components taken from the models folder, with the source file.
    pub taken: Vec<(String, PathBuf)>,
    /// Components made as stand-ins.
    pub stand_ins: Vec<String>,
    /// Other files taken from the models folder (the tokenizer).
    pub extras: Vec<PathBuf>,
    /// External-data files taken with the model files, by package path.
    pub external_data: Vec<String>,
    /// How many files were hard-linked rather than copied.
    pub linked: usize,
    /// Whether a stand-in tokenizer was written.
    pub stand_in_tokenizer: bool,
    /// What the default recipe lacks (prompts with no tokenizer to encode
    /// them, rows past its limit).
    pub notes: Vec<String>,
    /// Whether the default recipe holds the graph's prompts, encoded.
    pub prompts_encoded: bool,
}

/// The default recipe's path inside a package.
pub const DEFAULT_RECIPE: &str = "recipes/default.json";

/// Why a package could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// The destination exists, is not empty, and `force` was not given.
    #[error("{0} exists and is not empty (use --force to replace it)")]
    NotEmpty(PathBuf),
    /// The destination exists and is not a folder.
    #[error("{0} exists and is not a folder")]
    NotAFolder(PathBuf),
    /// The models folder lacks components the document needs.
    #[error("the models folder {dir} has no file for: {}", .missing.join(", "))]
    Missing {
        /// The models folder.
        dir: PathBuf,
        /// `component (looked for: paths)` per missing component.
        missing: Vec<String>,
    },
    /// Model files whose ports differ from the declared contracts.
    #[error("model ports differ from the lowered contracts:\n  {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    Ports(Vec<PortMismatch>),
    /// A model file whose external data is missing or lies outside its folder.
    #[error("{model}: its external data `{location}` {reason}")]
    ExternalData {
        /// The model file.
        model: PathBuf,
        /// The location the model records.
        location: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The models folder's tokenizer cannot be read.
    #[error(transparent)]
    Tokenizer(#[from] crate::text::TextError),
    /// A model file that cannot be read as ONNX.
    #[error(transparent)]
    Model(#[from] wfstudio_onnx::ModelError),
    /// A policy that cannot be synthesized.
    #[error(transparent)]
    Synth(#[from] SynthError),
    /// A file-system failure.
    #[error("{path}: {reason}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS reason.
        reason: String,
    },
    /// The document has no components to write.
    #[error("the document has no pipeline.workflow.components")]
    NoComponents,
}

/// What goes into the package for one component.
enum Source {
    Bytes(Vec<u8>),
    File(PathBuf),
}

/// Writes `document` (a lowered graph) with all its components to `out`,
/// and the default recipe (`recipes/default.json`: the graph's prompts and
/// generated pictures). Prompts are encoded with the stand-in tokenizer for
/// stand-in models, else with the models folder's `tokenizer.json` (left
/// out, and named in the notes, where it has none).
pub fn write_package(
    document: &Value,
    out: &Path,
    options: &PackageOptions,
) -> Result<Written, PackageError> {
    if out.exists() && !out.is_dir() {
        return Err(PackageError::NotAFolder(out.to_path_buf()));
    }
    if out.exists() && !options.force && !is_empty_dir(out)? {
        return Err(PackageError::NotEmpty(out.to_path_buf()));
    }
    let mut document = document.clone();
    let components = document
        .pointer("/pipeline/workflow/components")
        .and_then(Value::as_object)
        .ok_or(PackageError::NoComponents)?
        .clone();
    let mut written = Written::default();
    let mut files: Vec<(String, String, Source)> = Vec::new();
    let folder = match &options.models {
        Models::Folder { dir, .. } => Some(ModelsFolder::open(dir)?),
        Models::StandIns { .. } => None,
    };
    let mut synthesized = synth::policies(&document)?
        .into_iter()
        .collect::<std::collections::BTreeMap<_, _>>();
    let mut missing = Vec::new();
    let mut mismatches = Vec::new();
    let mut data_files: Vec<(String, PathBuf)> = Vec::new();
    for (name, component) in &components {
        let own = folder
            .as_ref()
            .filter(|f| !synth::is_policy(name) || f.policy_fits(name, component))
            .and_then(|f| f.file_of(name));
        if let Some(bytes) = synthesized.remove(name).filter(|_| own.is_none()) {
            written.synthesized.push(name.clone());
            files.push((
                name.clone(),
                format!("policies/{name}.onnx"),
                Source::Bytes(bytes),
            ));
            continue;
        }
        match (&options.models, own) {
            (Models::StandIns { seed }, _) => {
                written.stand_ins.push(name.clone());
                let known = extents::known_extents(&document, name);
                let bytes = stand_in(name, component, *seed, &known)?;
                files.push((
                    name.clone(),
                    format!("{name}/model.onnx"),
                    Source::Bytes(bytes),
                ));
            }
            (Models::Folder { .. }, Some((relative, file))) => {
                let model = wfstudio_onnx::read_model(&file)?;
                mismatches.extend(ports::check(name, component, &Signature::of(&model)));
                data_files.extend(external_data(&model, &relative, &file)?);
                written.taken.push((name.clone(), file.clone()));
                files.push((name.clone(), relative, Source::File(file)));
            }
            (Models::Folder { .. }, None) => {
                let tried = folder
                    .as_ref()
                    .map(|f| f.candidates(name))
                    .unwrap_or_default();
                missing.push(format!("{name} (looked for {})", tried.join(", ")));
            }
        }
    }
    if let Some(folder) = &folder
        && !missing.is_empty()
    {
        return Err(PackageError::Missing {
            dir: folder.dir.clone(),
            missing,
        });
    }
    let folder_tokenizer = match &folder {
        Some(folder) if folder.dir.join("tokenizer.json").is_file() => {
            let file = folder.dir.join("tokenizer.json");
            let tokenizer = PackageTokenizer::from_file(&file)?;
            written.extras.push(file);
            Some(tokenizer)
        }
        _ => None,
    };
    if !mismatches.is_empty() {
        return Err(PackageError::Ports(mismatches));
    }
    let mut generated = Vec::new();
    let texts: Vec<&str> = options.prompts.iter().map(|(_, t)| t.as_str()).collect();
    let stand_in_encode = |text: &str| Ok(inputs::stand_in_encode(&texts, text));
    let folder_encode = |text: &str| {
        let tokenizer = folder_tokenizer.as_ref().ok_or("no tokenizer")?;
        tokenizer.encode(text).map_err(|e| e.to_string())
    };
    let encode = if folder.is_none() {
        written.stand_in_tokenizer = true;
        generated.push((
            "tokenizer.json".to_string(),
            inputs::stand_in_tokenizer(&texts).into_bytes(),
        ));
        Some(&stand_in_encode as inputs::Encode<'_>)
    } else {
        folder_tokenizer
            .as_ref()
            .map(|_| &folder_encode as inputs::Encode<'_>)
    };
    written.prompts_encoded = encode.is_some();
    let (recipe, notes) =
        inputs::default_recipe(&document, &options.prompts, encode).map_err(|reason| {
            PackageError::Io {
                path: out.join(DEFAULT_RECIPE),
                reason: format!("encoding the graph's prompts: {reason}"),
            }
        })?;
    written.notes = notes;
    generated.push((DEFAULT_RECIPE.to_string(), recipe.into_bytes()));
    for (name, relative, _) in &files {
        document["pipeline"]["workflow"]["components"][name]["implementation"]["artifact"] =
            Value::String(relative.clone());
    }
    let link = matches!(options.models, Models::Folder { link: true, .. });
    let mut staging = Staging::new(out)?;
    let mut linked = 0;
    let result = (|| {
        for (_, relative, source) in &files {
            match source {
                Source::Bytes(bytes) => staging.write(relative, bytes)?,
                Source::File(file) => linked += usize::from(staging.place(relative, file, link)?),
            }
        }
        for (relative, file) in &data_files {
            linked += usize::from(staging.place(relative, file, link)?);
        }
        for (relative, bytes) in &generated {
            staging.write(relative, bytes)?;
        }
        for extra in &written.extras {
            let name = extra.file_name().unwrap_or_default().to_string_lossy();
            linked += usize::from(staging.place(&name, extra, link)?);
        }
        let text = wfstudio_schema::emit::to_yaml(&document);
        staging.write("inference_metadata.yaml", text.as_bytes())?;
        staging.finish(out)
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging.dir);
    }
    written.linked = linked;
    written.external_data = data_files
        .into_iter()
        .map(|(relative, _)| relative)
        .collect();
    written.external_data.sort();
    written.external_data.dedup();
    result.map(|()| written)
}

/// The external-data files of `model` (the folder's file `file`, at
/// `relative` in the package): `(package path, source file)` each, refused
/// when missing or outside the model's folder.
fn external_data(
    model: &wfstudio_onnx::proto::onnx::ModelProto,
    relative: &str,
    file: &Path,
) -> Result<Vec<(String, PathBuf)>, PackageError> {
    let folder = Path::new(relative).parent().unwrap_or(Path::new(""));
    let source_folder = file.parent().unwrap_or(Path::new("."));
    let locations = wfstudio_onnx::external_data_locations(model).map_err(|reason| {
        PackageError::Model(wfstudio_onnx::ModelError::Invalid {
            path: file.to_path_buf(),
            reason,
        })
    })?;
    locations
        .into_iter()
        .map(|location| {
            let refuse = |reason| PackageError::ExternalData {
                model: file.to_path_buf(),
                location: location.clone(),
                reason,
            };
            if !stays_inside(&location) {
                return Err(refuse("leaves the model's folder"));
            }
            let source = source_folder.join(&location);
            if !source.is_file() {
                return Err(refuse("is missing"));
            }
            let packaged = folder.join(&location).to_string_lossy().replace('\\', "/");
            Ok((packaged, source))
        })
        .collect()
}

/// A folder of model files laid out as a package.
struct ModelsFolder {
    dir: PathBuf,
    /// Artifact paths its own document gives, by component.
    declared: std::collections::BTreeMap<String, String>,
    /// Its document's contract parameters, by component.
    parameters: std::collections::BTreeMap<String, Value>,
}

impl ModelsFolder {
    fn open(dir: &Path) -> Result<ModelsFolder, PackageError> {
        if !dir.is_dir() {
            return Err(PackageError::Io {
                path: dir.to_path_buf(),
                reason: "not a folder".into(),
            });
        }
        let target = crate::comfyui::lower::Target::from_package(dir).map_err(|reason| {
            PackageError::Io {
                path: dir.to_path_buf(),
                reason,
            }
        })?;
        Ok(ModelsFolder {
            dir: dir.to_path_buf(),
            declared: target.artifacts,
            parameters: target.parameters,
        })
    }

    /// Whether the folder's own `policy` was made for `lowered` (the
    /// component as lowered): every contract parameter the folder declares
    /// has the lowered value (a schedule for another sampler, scheduler or
    /// step count is not kept).
    fn policy_fits(&self, policy: &str, lowered: &Value) -> bool {
        let Some(own) = self.parameters.get(policy).and_then(Value::as_object) else {
            return true;
        };
        let wanted = lowered.pointer("/contract/parameters");
        own.iter()
            .all(|(key, value)| wanted.and_then(|w| w.get(key)) == Some(value))
    }

    /// The relative paths tried for `component`, in order.
    fn candidates(&self, component: &str) -> Vec<String> {
        let mut out: Vec<String> = self.declared.get(component).cloned().into_iter().collect();
        if !synth::is_policy(component) {
            for default in [
                format!("{component}/model.onnx"),
                format!("{component}/model.onnx.textproto"),
            ] {
                if !out.contains(&default) {
                    out.push(default);
                }
            }
        }
        out
    }

    /// The folder's file for `component` (relative path, full path): its
    /// document's artifact, else the default layout (model components only;
    /// a policy the folder does not declare is synthesized). Paths that
    /// leave the folder are not followed.
    fn file_of(&self, component: &str) -> Option<(String, PathBuf)> {
        self.candidates(component).into_iter().find_map(|relative| {
            let full = self.dir.join(&relative);
            (stays_inside(&relative) && full.is_file()).then_some((relative, full))
        })
    }
}
