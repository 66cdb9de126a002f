//! The package tokenizer: finds the canonical `tokenizer.json` of a package
//! (spec §4.1) and turns prompt text into token ids and generated ids back
//! into text, with the `tokenizers` crate. The studio's prompt box and text
//! previews, the CLI's `--text` and decoded outputs, and the ComfyUI
//! importer's prompts all use this one type.

use crate::artifacts::resolve_inside;
use std::path::{Path, PathBuf};
use wfstudio_schema::Document;
use wfstudio_schema::types::workflow::{InputRole, RuntimeInputRole, WorkflowInput};

/// The largest tokenizer file read (real vocabularies are a few MiB).
pub const MAX_TOKENIZER_BYTES: u64 = 64 << 20;

/// Why the package tokenizer could not be found, read or used.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    /// `package.tokenizer.artifacts` names several files, none `tokenizer.json`.
    #[error(
        "package.tokenizer.artifacts lists {0} files and none is named tokenizer.json; name the canonical one tokenizer.json"
    )]
    Ambiguous(usize),
    /// The declared location leaves the package or does not exist.
    #[error("tokenizer {location}: missing or outside the package")]
    Missing {
        /// The declared location.
        location: String,
    },
    /// The file could not be read, is too large or is not a tokenizer.
    #[error("tokenizer {}: {message}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Encoding or decoding failed.
    #[error("tokenizer: {0}")]
    Codec(String),
}

/// A package's tokenizer, loaded from its file.
pub struct PackageTokenizer {
    tokenizer: tokenizers::Tokenizer,
    /// The file it was read from.
    pub file: PathBuf,
}

impl std::fmt::Debug for PackageTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackageTokenizer")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

/// The package-relative location of the canonical tokenizer, if the
/// package has one: the declared artifact named `tokenizer.json` (or the
/// only declared artifact), else `tokenizer.json` at the root when present.
pub fn tokenizer_location(document: &Document, root: &Path) -> Result<Option<String>, TextError> {
    let declared: Vec<&str> = document
        .package
        .as_ref()
        .and_then(|p| p.tokenizer.as_ref())
        .and_then(|t| t.artifacts.as_ref())
        .map(|a| a.iter().map(|a| a.location.as_str()).collect())
        .unwrap_or_default();
    match declared.as_slice() {
        [] => Ok(root
            .join("tokenizer.json")
            .is_file()
            .then(|| "tokenizer.json".to_string())),
        [only] => Ok(Some(only.to_string())),
        many => many
            .iter()
            .find(|l| {
                Path::new(l)
                    .file_name()
                    .is_some_and(|n| n == "tokenizer.json")
            })
            .map(|l| Some(l.to_string()))
            .ok_or(TextError::Ambiguous(many.len())),
    }
}

impl PackageTokenizer {
    /// Loads the package's canonical tokenizer; `None` when it has none.
    pub fn for_package(document: &Document, root: &Path) -> Result<Option<Self>, TextError> {
        let Some(location) = tokenizer_location(document, root)? else {
            return Ok(None);
        };
        let path = resolve_inside(root, &location).map_err(|_| TextError::Missing { location })?;
        Self::from_file(&path).map(Some)
    }

    /// Reads a `tokenizer.json` file.
    pub fn from_file(path: &Path) -> Result<Self, TextError> {
        let unreadable = |message: String| TextError::Unreadable {
            path: path.to_path_buf(),
            message,
        };
        let size = std::fs::metadata(path)
            .map_err(|e| unreadable(e.to_string()))?
            .len();
        if size > MAX_TOKENIZER_BYTES {
            return Err(unreadable(format!(
                "{size} bytes is over the {MAX_TOKENIZER_BYTES}-byte limit"
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| unreadable(e.to_string()))?;
        let tokenizer =
            tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| unreadable(e.to_string()))?;
        Ok(Self {
            tokenizer,
            file: path.to_path_buf(),
        })
    }

    /// Token ids of `text`, with the tokenizer's special tokens added (its
    /// post-processor, e.g. a begin-of-sequence id).
    pub fn encode(&self, text: &str) -> Result<Vec<i64>, TextError> {
        let encoding = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| self.refusal(text, &e.to_string()))?;
        Ok(encoding.get_ids().iter().map(|&id| i64::from(id)).collect())
    }

    /// Why `text` was refused: a tokenizer without an unknown token (a
    /// character-level one) refuses characters outside its vocabulary,
    /// which are named; any other failure as the tokenizer says it.
    fn refusal(&self, text: &str, message: &str) -> TextError {
        if !message.contains("[UNK]") {
            return TextError::Codec(message.to_string());
        }
        let mut unknown: Vec<char> = Vec::new();
        for c in text.chars() {
            if self.tokenizer.token_to_id(&c.to_string()).is_none() && !unknown.contains(&c) {
                unknown.push(c);
            }
        }
        let named: Vec<String> = unknown
            .iter()
            .map(|c| format!("'{c}' (U+{:04X})", u32::from(*c)))
            .collect();
        TextError::Codec(format!(
            "characters outside the vocabulary: {}",
            named.join(", ")
        ))
    }

    /// The text of `ids`, special tokens left out. Ids outside the
    /// vocabulary are refused by name rather than skipped.
    pub fn decode(&self, ids: &[i64]) -> Result<String, TextError> {
        let size = self.tokenizer.get_vocab_size(true);
        let ids = ids
            .iter()
            .map(|&id| {
                u32::try_from(id)
                    .ok()
                    .filter(|&id| self.tokenizer.id_to_token(id).is_some())
                    .ok_or_else(|| {
                        TextError::Codec(format!(
                            "token id {id} is outside the vocabulary (size {size})"
                        ))
                    })
            })
            .collect::<Result<Vec<u32>, _>>()?;
        self.tokenizer
            .decode(&ids, true)
            .map_err(|e| TextError::Codec(e.to_string()))
    }
}

/// Whether a workflow input takes prompt token ids, so that a tokenizer can
/// fill it from text.
pub fn takes_prompt_tokens(input: &WorkflowInput) -> bool {
    matches!(
        &input.role,
        InputRole::Runtime(r)
            if matches!(r.role, RuntimeInputRole::PromptTokens | RuntimeInputRole::NegativePromptTokens)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word_level(dir: &Path) -> PathBuf {
        let file = dir.join("tokenizer.json");
        std::fs::write(
            &file,
            r#"{"version":"1.0","truncation":null,"padding":null,
            "added_tokens":[{"id":0,"content":"<bos>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
            "normalizer":{"type":"Lowercase"},"pre_tokenizer":{"type":"Whitespace"},
            "post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<bos>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],
              "pair":[{"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<bos>":{"id":"<bos>","ids":[0],"tokens":["<bos>"]}}},
            "decoder":null,
            "model":{"type":"WordLevel","vocab":{"<bos>":0,"<unk>":1,"red":2,"fox":3},"unk_token":"<unk>"}}"#,
        )
        .unwrap();
        file
    }

    #[test]
    fn encodes_with_the_post_processor_and_decodes_without_specials() {
        let dir = std::env::temp_dir().join(format!("wfstudio-text-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tokenizer = PackageTokenizer::from_file(&word_level(&dir)).unwrap();
        assert_eq!(tokenizer.encode("Red fox wolf").unwrap(), vec![0, 2, 3, 1]);
        assert_eq!(tokenizer.decode(&[0, 2, 3]).unwrap(), "red fox");
        let refused = tokenizer.decode(&[2, 9]).unwrap_err().to_string();
        assert_eq!(
            refused,
            "tokenizer: token id 9 is outside the vocabulary (size 4)"
        );
        assert!(tokenizer.decode(&[-1]).is_err());
        std::fs::write(dir.join("tokenizer.json"), "{not json").unwrap();
        let broken = PackageTokenizer::from_file(&dir.join("tokenizer.json")).unwrap_err();
        assert!(matches!(broken, TextError::Unreadable { .. }), "{broken}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
