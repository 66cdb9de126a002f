//! Text in tensors: the package tokenizer (`wfstudio_core::text`)
//! decoding a tensor of generated ids row by row, and text outputs' UTF-8
//! bytes.

use crate::tensor::{Data, Tensor};
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

/// The text of each row of a tensor of UTF-8 bytes (`uint8`; the last
/// axis holds a row's bytes, as a text output carries them; every leading
/// index is one row), a sequence that is not UTF-8 shown as U+FFFD;
/// `None` for another dtype.
pub fn utf8_rows(tensor: &Tensor) -> Option<Vec<String>> {
    let Data::U8(bytes) = &tensor.data else {
        return None;
    };
    let (width, rows) = match tensor.shape.split_last() {
        Some((width, leading)) => (*width, leading.iter().product()),
        None => (bytes.len(), 1),
    };
    if width == 0 {
        return Some(vec![String::new(); rows]);
    }
    let text = |row: &[u8]| String::from_utf8_lossy(row).into_owned();
    Some(bytes.chunks(width).map(text).collect())
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

    #[test]
    fn utf8_rows_read_each_row_and_show_bad_bytes_as_replacement() {
        let text = |shape: Vec<usize>, bytes: &[u8]| {
            utf8_rows(&Tensor::new(shape, Data::U8(bytes.to_vec())).unwrap())
        };
        let cafe = "café".as_bytes();
        assert_eq!(text(vec![5], cafe).unwrap(), ["café"]);
        assert_eq!(text(vec![2, 2], b"abcd").unwrap(), ["ab", "cd"]);
        assert_eq!(text(vec![3, 0], b"").unwrap(), ["", "", ""]);
        assert_eq!(text(vec![0], b"").unwrap(), [""]);
        assert_eq!(text(vec![2], &[b'a', 0xff]).unwrap(), ["a\u{fffd}"]);
        let floats = Tensor::new(vec![1], Data::F32(vec![1.0])).unwrap();
        assert_eq!(utf8_rows(&floats), None);
    }
}
