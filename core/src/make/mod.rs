//! What the product makes from a real model's own data, so that a package
//! needs no Python: a character-level `tokenizer.json` from a vocabulary
//! (`char_tokenizer`) and a policy model that picks a style vector from a
//! table by utterance length (`style_table`, from a NumPy `.npz`).

pub mod char_tokenizer;
pub mod npz;
pub mod style_table;

/// Why an input file could not be made into a package part.
#[derive(Debug, thiserror::Error)]
pub enum MakeError {
    /// The input is not what the maker reads.
    #[error("{0}")]
    Invalid(String),
}
