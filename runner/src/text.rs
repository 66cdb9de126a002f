//! Token ids in tensors: the package tokenizer (`wfstudio_core::text`)
//! decoding a tensor of generated ids row by row.

use crate::tensor::Tensor;
pub use wfstudio_core::text::{PackageTokenizer, TextError, takes_prompt_tokens};

/// The text of each row of a token-id tensor (the last axis holds the ids;
/// every leading index is one row).
pub fn decode_rows(
    tokenizer: &PackageTokenizer,
    tensor: &Tensor,
) -> Result<Vec<String>, TextError> {
    let ids: Vec<i64> = (0..tensor.numel())
        .map(|i| tensor.data.get_i64(i))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            TextError::Codec(format!(
                "token ids must be integers, not {}",
                tensor.dtype()
            ))
        })?;
    let width = tensor.shape.last().copied().unwrap_or(1).max(1);
    ids.chunks(width).map(|row| tokenizer.decode(row)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_decode_one_by_one_and_floats_are_refused() {
        let dir = std::env::temp_dir().join(format!("wfstudio-rows-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tokenizer.json");
        std::fs::write(
            &file,
            r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
            "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,
            "model":{"type":"WordLevel","vocab":{"<unk>":0,"red":1,"fox":2},"unk_token":"<unk>"}}"#,
        )
        .unwrap();
        let tokenizer = PackageTokenizer::from_file(&file).unwrap();
        let rows = Tensor::new(vec![2, 2], crate::Data::I64(vec![1, 2, 2, 1])).unwrap();
        assert_eq!(
            decode_rows(&tokenizer, &rows).unwrap(),
            ["red fox", "fox red"]
        );
        let floats = Tensor::new(vec![1], crate::Data::F32(vec![1.0])).unwrap();
        assert!(decode_rows(&tokenizer, &floats).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
