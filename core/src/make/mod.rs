//! What the product makes for real models' packages, so that a package
//! needs no Python: a character-level `tokenizer.json` from a vocabulary
//! (`char_tokenizer`), a policy model that picks a style vector from a
//! table by utterance length (`style_table`, from a NumPy `.npz`), and the
//! terrain diffusion package's policies (`terrain`).

pub mod char_tokenizer;
pub mod npz;
pub mod style_table;
pub mod terrain;

/// Why an input file could not be made into a package part.
#[derive(Debug, thiserror::Error)]
pub enum MakeError {
    /// The input is not what the maker reads.
    #[error("{0}")]
    Invalid(String),
}
