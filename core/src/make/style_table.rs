//! The style policy of a Kokoro-style TTS package: a table of style vectors
//! per voice (`[voices, rows, 1, width]` or `[voices, rows, width]`, each
//! voice an array of a `.npz`) and a graph that picks voice `voice`'s row
//! for an utterance of `n` phonemes: row `min(n, rows) - 1`, where `n` is
//! the token count less the two pads. The voice names are recorded on the
//! `voice` input as value labels, which the studio and the CLI offer, and
//! the lengths an utterance may have (one phoneme to `rows`, pads included)
//! on the `tokens` input, which the runner checks before a run.

use super::MakeError;
use super::npz::Array;
use wfstudio_onnx::builder::{Attr, Dim, GraphBuilder};
use wfstudio_onnx::labels::{LABELS_KEY, LENGTH_KEY};
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// The most float32 values a table may hold (256 MiB of them: well within
/// the 2 GiB an ONNX model file can be).
pub const MAX_TABLE_VALUES: usize = 64 << 20;

/// The policy model's bytes for the voices `arrays` (every array the same
/// shape), named by their array names.
pub fn style_table(arrays: &[Array]) -> Result<Vec<u8>, MakeError> {
    let first = arrays
        .first()
        .ok_or_else(|| MakeError::Invalid("no voices in the table".into()))?;
    let (rows, width) = match first.shape.as_slice() {
        [rows, 1, width] | [rows, width] => (*rows, *width),
        other => {
            return Err(MakeError::Invalid(format!(
                "voice {} has shape {other:?}, not [rows, 1, width] or [rows, width]",
                first.name
            )));
        }
    };
    if rows == 0 || width == 0 {
        return Err(MakeError::Invalid(format!("voice {} is empty", first.name)));
    }
    if let Some(other) = arrays.iter().find(|a| a.shape != first.shape) {
        return Err(MakeError::Invalid(format!(
            "voice {} has shape {:?}, voice {} {:?}: every voice must have one shape",
            other.name, other.shape, first.name, first.shape
        )));
    }
    let to_i64 =
        |v: u64| i64::try_from(v).map_err(|_| MakeError::Invalid("table too large".into()));
    let (rows, width) = (to_i64(rows)?, to_i64(width)?);
    let voices = to_i64(arrays.len() as u64)?;
    let total = arrays.iter().map(|a| a.values.len()).sum::<usize>();
    if total > MAX_TABLE_VALUES {
        return Err(MakeError::Invalid(format!(
            "the table holds {total} values, more than the {MAX_TABLE_VALUES} a policy model takes"
        )));
    }
    let values: Vec<f32> = arrays
        .iter()
        .flat_map(|a| a.values.iter().copied())
        .collect();

    let mut g = GraphBuilder::new("style_table", "wfstudio make style-table");
    let tokens = g.input(
        "tokens",
        DataType::INT64,
        &[Dim::Fixed(1), Dim::Named("sequence".into())],
    );
    let voice = g.input("voice", DataType::INT64, &[Dim::Fixed(1)]);
    let names: Vec<&str> = arrays.iter().map(|a| a.name.as_str()).collect();
    let labels = serde_json::to_string(&names).map_err(|e| MakeError::Invalid(e.to_string()))?;
    g.input_metadata("voice", LABELS_KEY, &labels);
    // At least one phoneme, at most `rows`, with the two pads.
    g.input_metadata("tokens", LENGTH_KEY, &format!("[3, {}]", rows + 2));
    let table = g.f32s(&values, &[voices, rows, width]);
    // n = sequence length - 2 pads; row = clip(n, 1, rows) - 1.
    let shape = g.op("Shape", &[&tokens]);
    let (one, two, last) = (g.vec_i64(&[1]), g.vec_i64(&[2]), g.vec_i64(&[rows]));
    let length = g.op("Slice", &[&shape, &one, &two]);
    let phonemes = g.op("Sub", &[&length, &two]);
    let clipped = g.op("Max", &[&phonemes, &one]);
    let clipped = g.op("Min", &[&clipped, &last]);
    let row = g.op("Sub", &[&clipped, &one]);
    let chosen = g.op_with("Gather", &[&table, &voice], &[("axis", Attr::Int(0))]);
    let style = g.op_with("Gather", &[&chosen, &row], &[("axis", Attr::Int(1))]);
    let flat = g.vec_i64(&[1, width]);
    let style = g.op("Reshape", &[&style, &flat]);
    g.output(
        &style,
        "style",
        DataType::FLOAT,
        &[Dim::Fixed(1), Dim::Fixed(width)],
    );
    Ok(g.to_bytes())
}
