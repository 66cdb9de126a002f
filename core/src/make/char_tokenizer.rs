//! A character-level Hugging Face `tokenizer.json` from a vocabulary of
//! single characters (`{"vocab": {char: id}}`, as Kokoro's `vocab.json`):
//! every character is one token, and a pad id wraps each encoded text
//! (`[pad, ids..., pad]`). A character outside the vocabulary makes the
//! tokenizer refuse the text (it has no unknown token), and the package
//! tokenizer then names it.

use super::MakeError;
use serde_json::{Map, Value, json};

/// The name of the pad token in the written tokenizer.
pub const PAD_TOKEN: &str = "<pad>";

/// The `tokenizer.json` text for the vocabulary `vocab_json`, wrapping
/// every encoding in `pad_id`.
pub fn char_tokenizer(vocab_json: &str, pad_id: u32) -> Result<String, MakeError> {
    let invalid = |reason: String| MakeError::Invalid(format!("the vocabulary: {reason}"));
    let parsed: Value = serde_json::from_str(vocab_json).map_err(|e| invalid(e.to_string()))?;
    let entries = parsed
        .get("vocab")
        .unwrap_or(&parsed)
        .as_object()
        .ok_or_else(|| invalid("is not a JSON object of {character: id}".into()))?;
    let mut vocab = Map::new();
    for (token, id) in entries {
        let id = id
            .as_u64()
            .and_then(|id| u32::try_from(id).ok())
            .ok_or_else(|| invalid(format!("`{token}` has id {id}, not a whole number")))?;
        if token.chars().count() != 1 {
            return Err(invalid(format!("`{token}` is not a single character")));
        }
        if id == pad_id {
            return Err(invalid(format!(
                "`{token}` has the pad id {pad_id}; choose another --pad-id"
            )));
        }
        vocab.insert(token.clone(), json!(id));
    }
    if vocab.is_empty() {
        return Err(invalid("is empty".into()));
    }
    vocab.insert(PAD_TOKEN.into(), json!(pad_id));
    let pad = json!({"SpecialToken": {"id": PAD_TOKEN, "type_id": 0}});
    let text = |id: &str| json!({"Sequence": {"id": id, "type_id": 0}});
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [{"id": pad_id, "content": PAD_TOKEN, "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": true}],
        "normalizer": null,
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "."}, "behavior": "Isolated", "invert": false},
        "post_processor": {"type": "TemplateProcessing",
            "single": [pad, text("A"), pad],
            "pair": [pad, text("A"), pad, text("B"), pad],
            "special_tokens": {PAD_TOKEN: {"id": PAD_TOKEN, "ids": [pad_id], "tokens": [PAD_TOKEN]}}},
        "decoder": {"type": "Fuse"},
        "model": {"type": "WordLevel", "vocab": Value::Object(vocab), "unk_token": "<unk>"},
    });
    let mut out = serde_json::to_string_pretty(&tokenizer).map_err(|e| invalid(e.to_string()))?;
    out.push('\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::PackageTokenizer;

    #[test]
    fn each_character_is_a_token_wrapped_in_pads_and_unknown_ones_are_named() {
        let vocab = r#"{"vocab": {"k": 53, "o": 57, "ɲ": 114, "i": 51, ".": 4, " ": 16, "̃": 17,
            "a": 43, "ɾ": 125, "ɡ": 92, "t": 62, "ː": 158}}"#;
        let dir = std::env::temp_dir().join(format!("wfstudio-chartok-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let file = dir.join("tokenizer.json");
        std::fs::write(&file, char_tokenizer(vocab, 0).expect("made")).expect("write");
        let tokenizer = PackageTokenizer::from_file(&file).expect("loads");
        assert_eq!(
            tokenizer.encode("koɲɲi .").expect("encodes"),
            [0, 53, 57, 114, 114, 51, 16, 4, 0]
        );
        assert_eq!(
            tokenizer.encode("aɾiɡatoː.").expect("encodes"),
            [0, 43, 125, 51, 92, 43, 62, 57, 158, 4, 0]
        );
        // A combining mark is a character of its own, as Python counts them.
        assert_eq!(
            tokenizer.encode("o\u{303}").expect("encodes"),
            [0, 57, 17, 0]
        );
        assert_eq!(
            tokenizer.decode(&[0, 53, 57, 16, 4, 0]).expect("decodes"),
            "ko ."
        );
        let refused = tokenizer.encode("kuX").expect_err("refused").to_string();
        assert_eq!(
            refused,
            "tokenizer: characters outside the vocabulary: 'u' (U+0075), 'X' (U+0058)"
        );
        std::fs::remove_dir_all(&dir).expect("rm");
    }

    #[test]
    fn bad_vocabularies_are_refused() {
        for (vocab, reason) in [
            ("[1]", "is not a JSON object"),
            (r#"{"vocab": {"ab": 3}}"#, "`ab` is not a single character"),
            (r#"{"vocab": {"a": 0}}"#, "has the pad id 0"),
            (r#"{"vocab": {"a": -3}}"#, "not a whole number"),
            (r#"{"vocab": {}}"#, "is empty"),
            ("{", "EOF"),
        ] {
            let error = char_tokenizer(vocab, 0).expect_err(vocab).to_string();
            assert!(error.contains(reason), "{vocab}: {error}");
        }
    }
}
