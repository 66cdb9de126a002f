//! What a written package needs to run with the graph's own inputs: a
//! stand-in tokenizer (a word-level vocabulary of the graph's prompts) when
//! the models are stand-ins, and generated pictures for picture inputs
//! (ComfyUI's `LoadImage` names a file in its own input folder, which the
//! graph does not carry).

use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// Special tokens of the stand-in tokenizer, at ids 0, 1, 2.
pub const SPECIALS: [&str; 3] = ["<unk>", "<bos>", "<eos>"];

/// The words of `text` as the stand-in tokenizer splits them: lower-cased
/// runs of letters, digits and `_`, and runs of other non-space characters.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut word_run = false;
    for c in text.to_lowercase().chars() {
        let is_word = c.is_alphanumeric() || c == '_';
        if (c.is_whitespace() || is_word != word_run) && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        if !c.is_whitespace() {
            word_run = is_word;
            current.push(c);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The stand-in vocabulary: the specials, then every word of `prompts`
/// sorted, numbered from 0.
fn vocabulary<'a>(prompts: impl Iterator<Item = &'a str>) -> Vec<String> {
    let words: BTreeSet<String> = prompts.flat_map(words).collect();
    SPECIALS
        .iter()
        .map(|s| s.to_string())
        .chain(words)
        .collect()
}

/// Encodes `text` as the stand-in tokenizer of `prompts` does: `<bos>`,
/// each word's id (`<unk>` for others), `<eos>`.
pub fn stand_in_encode(prompts: &[&str], text: &str) -> Vec<i64> {
    let vocab = vocabulary(prompts.iter().copied());
    let id = |w: &str| vocab.iter().position(|v| v == w).unwrap_or(0) as i64;
    std::iter::once(1)
        .chain(words(text).iter().map(|w| id(w)))
        .chain(std::iter::once(2))
        .collect()
}

/// A Hugging Face `tokenizer.json` (word level, lower-cased, between
/// `<bos>` and `<eos>`) whose vocabulary is the specials and every word of
/// `prompts`.
pub fn stand_in_tokenizer(prompts: &[&str]) -> String {
    let mut vocab = Map::new();
    for (id, token) in vocabulary(prompts.iter().copied()).into_iter().enumerate() {
        vocab.insert(token, json!(id));
    }
    let special = |id: usize| {
        json!({"id": id, "content": SPECIALS[id], "single_word": false, "lstrip": false,
               "rstrip": false, "normalized": false, "special": true})
    };
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [special(0), special(1), special(2)],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<bos>": {"id": "<bos>", "ids": [1], "tokens": ["<bos>"]},
                               "<eos>": {"id": "<eos>", "ids": [2], "tokens": ["<eos>"]}},
        },
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    });
    let mut text = serde_json::to_string_pretty(&tokenizer).unwrap_or_default();
    text.push('\n');
    text
}

/// A prompt encoder: text to token ids.
pub type Encode<'a> = &'a dyn Fn(&str) -> Result<Vec<i64>, String>;

/// The default recipe (`recipes/default.json`) of a package: generated
/// pictures for its picture inputs and each `(input, text)` prompt encoded
/// with `encode` (without one, prompts are left out and named in the
/// returned notes). The prompts share one sequence length: shorter ones
/// repeat their last id (the end-of-text token, as CLIP pads). The batch is
/// the graph's own (`EmptyLatentImage`'s `batch_size`, at most
/// [`MAX_RECIPE_ROWS`], noted when cut): every row the same prompt, the
/// noise differing row by row.
pub fn default_recipe(
    document: &Value,
    prompts: &[(String, String)],
    encode: Option<Encode<'_>>,
) -> Result<(String, Vec<String>), String> {
    let mut notes = Vec::new();
    let batch = batch_size(document);
    let rows = batch.min(MAX_RECIPE_ROWS);
    if rows < batch {
        notes.push(format!(
            "the graph's batch_size {batch} is more than the default recipe's {rows} rows; pass {batch} rows when running"
        ));
    }
    let mut inputs = generated_pictures(document, rows);
    let mut encoded = Vec::new();
    for (input, text) in prompts {
        match encode {
            Some(encode) => encoded.push((input, encode(text).map_err(|e| format!("{input}: {e}"))?)),
            None => notes.push(format!(
                "{input}: no tokenizer to encode the graph's prompt with; pass its token ids when running"
            )),
        }
    }
    let length = encoded.iter().map(|(_, ids)| ids.len()).max().unwrap_or(0);
    for (input, mut ids) in encoded {
        if let Some(&last) = ids.last() {
            ids.resize(length, last);
        }
        let data = ids.repeat(rows);
        inputs.insert(
            input.clone(),
            json!({"dtype": "int64", "shape": [rows, length], "data": data}),
        );
    }
    let recipe = json!({
        "description": "the ComfyUI graph's prompts and generated pictures for its picture inputs, written by the importer",
        "inputs": Value::Object(inputs),
        "outputs": {},
    });
    let mut text = serde_json::to_string(&recipe).map_err(|e| e.to_string())?;
    text.push('\n');
    Ok((text, notes))
}

/// The most rows the default recipe repeats its prompts and pictures in.
pub const MAX_RECIPE_ROWS: usize = 16;

/// The graph's batch size: the `batch_size` its empty latent records, else 1.
fn batch_size(document: &Value) -> usize {
    document
        .pointer("/pipeline/workflow/components/latent_row_shape/contract/parameters/batch_size")
        .and_then(Value::as_u64)
        .and_then(|rows| usize::try_from(rows).ok())
        .filter(|&rows| rows > 0)
        .unwrap_or(1)
}

/// Side of the generated pictures, in pixels (a multiple of the latent scale).
pub const PICTURE_SIZE: usize = 64;

/// Recipe tensors (`{dtype, shape, data}`) for the document's picture
/// inputs (role `media`, float rank 4): a colour gradient in [0, 1) (steps
/// of 1/64, short in JSON) for
/// three channels, a centred square for a one-channel mask; `rows` equal
/// rows. A video input (float rank 5) takes [`generated_video`]. A
/// stage's second and later pictures (`request.image_2`, ...) are 64 wide
/// and 48 high, so packages meet pictures of different sizes.
fn generated_pictures(document: &Value, rows: usize) -> Map<String, Value> {
    let inputs = document
        .pointer("/pipeline/workflow/inputs")
        .and_then(Value::as_object);
    let mut out = Map::new();
    for (name, input) in inputs.into_iter().flatten() {
        let media = input.pointer("/role/role").and_then(Value::as_str) == Some("media");
        let contract = &input["contract"];
        let float = contract["dtype"].as_str() == Some("float32");
        if let (true, true, Some(3)) = (media, float, video_channels(contract)) {
            out.insert(name.clone(), generated_video());
            continue;
        }
        let channels = contract.pointer("/shape/1").and_then(Value::as_u64);
        let (true, true, Some(channels @ (1 | 3))) = (media, float, channels) else {
            continue;
        };
        let n = PICTURE_SIZE;
        // A stage's second and later pictures are wider than tall, as
        // pictures of another size than the first may be.
        let h = match name.contains("request.image_") {
            true => n * 3 / 4,
            false => n,
        };
        let mut data = Vec::with_capacity(channels as usize * h * n);
        for c in 0..channels as usize {
            for y in 0..h {
                for x in 0..n {
                    let (fx, fy) = (x as f64 / n as f64, y as f64 / n as f64);
                    let v = if channels == 1 {
                        let inside =
                            (n / 4..3 * n / 4).contains(&x) && (n / 4..3 * n / 4).contains(&y);
                        f64::from(u8::from(inside))
                    } else {
                        [fx, fy, 1.0 - (fx + fy) / 2.0][c]
                    };
                    data.push(json!(v));
                }
            }
        }
        let data: Vec<Value> = std::iter::repeat_n(data, rows).flatten().collect();
        out.insert(
            name.clone(),
            json!({"dtype": "float32", "shape": [rows, channels, h, n], "data": data}),
        );
    }
    out
}

/// Frames of the generated videos.
pub const VIDEO_FRAMES: usize = 5;

/// The channels of a video contract (`[1, frames, channels, height,
/// width]`), if it is one.
fn video_channels(contract: &Value) -> Option<u64> {
    let shape = contract["shape"].as_array().filter(|s| s.len() == 5)?;
    shape[2].as_u64()
}

/// A recipe video `[1, frames, 3, side, side]` for a video input: the
/// pictures' colour gradient, sliding right a step each frame.
fn generated_video() -> Value {
    let n = PICTURE_SIZE;
    let mut data = Vec::with_capacity(VIDEO_FRAMES * 3 * n * n);
    for f in 0..VIDEO_FRAMES {
        for c in 0..3 {
            for y in 0..n {
                for x in 0..n {
                    let fx = ((x + f * n / 8) % n) as f64 / n as f64;
                    let fy = y as f64 / n as f64;
                    data.push(json!([fx, fy, 1.0 - (fx + fy) / 2.0][c]));
                }
            }
        }
    }
    json!({"dtype": "float32", "shape": [1, VIDEO_FRAMES, 3, n, n], "data": data})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_the_whitespace_pre_tokenizer() {
        assert_eq!(
            words("A Lighthouse, on a_cliff... at dusk!"),
            [
                "a",
                "lighthouse",
                ",",
                "on",
                "a_cliff",
                "...",
                "at",
                "dusk",
                "!"
            ]
        );
    }

    #[test]
    fn the_vocabulary_holds_the_specials_then_the_sorted_words() {
        let text = stand_in_tokenizer(&["red fox", "fox, snow"]);
        let value: Value = serde_json::from_str(&text).expect("json");
        let vocab = &value["model"]["vocab"];
        assert_eq!(vocab["<unk>"], 0);
        assert_eq!(vocab["<eos>"], 2);
        assert_eq!(vocab[","], 3);
        assert_eq!(vocab["fox"], 4);
        assert_eq!(vocab["snow"], 6);
        assert_eq!(
            stand_in_encode(&["red fox", "fox, snow"], "Snow fox wolf"),
            [1, 6, 4, 0, 2]
        );
    }
}
