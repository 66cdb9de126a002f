//! What the run inputs form needs from a package's files beyond its
//! document, read on a background thread (a real vocabulary takes a
//! noticeable moment to parse): the package tokenizer, and what the models
//! its single-element inputs feed say of their values (a voice's name for
//! its number, the range of a number of steps).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use wfstudio_runner::ValueFacts;
use wfstudio_runner::text::PackageTokenizer;
use wfstudio_schema::types::document::Document;

/// The facts of one package.
#[derive(Debug)]
pub struct PackageFacts {
    /// Its tokenizer, none, or why it could not be read.
    tokenizer: Result<Option<PackageTokenizer>, String>,
    /// What the models say of its inputs' values (labels, ranges), by
    /// input name.
    values: HashMap<String, ValueFacts>,
}

/// The facts as the form sees them: none yet, loading, or read.
#[derive(Debug, Default)]
pub enum FactsSlot {
    /// No package.
    #[default]
    None,
    /// Being read.
    Loading(Receiver<PackageFacts>),
    /// Read.
    Ready(Arc<PackageFacts>),
}

impl FactsSlot {
    /// Starts reading the facts of `document` at `path`.
    pub fn load(document: &Document, path: &Path) -> FactsSlot {
        let document = document.clone();
        let root = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let (sender, receiver) = std::sync::mpsc::channel();
        let started = std::thread::Builder::new()
            .name("wfstudio-package-facts".into())
            .spawn(move || {
                let facts =
                    wfstudio_editor::worker::caught("reading the package", || PackageFacts {
                        tokenizer: PackageTokenizer::for_package(&document, &root)
                            .map_err(|e| e.to_string()),
                        values: wfstudio_runner::package_value_facts(&document, &root),
                    })
                    .unwrap_or_else(|why| PackageFacts {
                        tokenizer: Err(why),
                        values: HashMap::new(),
                    });
                let _ = sender.send(facts);
            });
        match started {
            Ok(_) => FactsSlot::Loading(receiver),
            Err(e) => FactsSlot::Ready(Arc::new(PackageFacts {
                tokenizer: Err(format!("could not start the package thread: {e}")),
                values: HashMap::new(),
            })),
        }
    }

    /// Takes the facts when they have arrived; true when they just did.
    pub fn poll(&mut self) -> bool {
        if let FactsSlot::Loading(receiver) = self
            && let Ok(facts) = receiver.try_recv()
        {
            *self = FactsSlot::Ready(Arc::new(facts));
            return true;
        }
        false
    }

    /// Whether the facts are still being read.
    pub fn loading(&self) -> bool {
        matches!(self, FactsSlot::Loading(_))
    }

    /// The package tokenizer, once read.
    pub fn tokenizer(&self) -> Option<&PackageTokenizer> {
        match self {
            FactsSlot::Ready(facts) => facts.tokenizer.as_ref().ok()?.as_ref(),
            _ => None,
        }
    }

    /// The tokenizer a prompt is encoded with, or why there is none.
    pub fn prompt_tokenizer(&self) -> Result<&PackageTokenizer, String> {
        match self {
            FactsSlot::Loading(_) => Err("the tokenizer is still loading".into()),
            FactsSlot::None => Err("the package has no tokenizer".into()),
            FactsSlot::Ready(facts) => match &facts.tokenizer {
                Ok(Some(tokenizer)) => Ok(tokenizer),
                Ok(None) => Err("the package has no tokenizer".into()),
                Err(why) => Err(why.clone()),
            },
        }
    }

    /// Why the tokenizer could not be read, if so.
    pub fn tokenizer_error(&self) -> Option<&str> {
        match self {
            FactsSlot::Ready(facts) => facts.tokenizer.as_ref().err().map(String::as_str),
            _ => None,
        }
    }

    /// What the models say of input `name`'s values, if anything.
    pub fn values(&self, name: &str) -> Option<&ValueFacts> {
        match self {
            FactsSlot::Ready(facts) => facts.values.get(name),
            _ => None,
        }
    }
}
