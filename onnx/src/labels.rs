//! Value labels of a model's inputs: names for the integer values an input
//! takes (`voice` 0 is `jf_alpha`, ...), recorded in the input's metadata
//! (ONNX IR 10's per-value `metadata_props`) under [`LABELS_KEY`] as a JSON
//! array of strings, the name of value `i` at index `i`. The product writes
//! them on the policies it makes; the studio offers the names and the
//! runner refuses a value outside them.

use crate::proto::onnx::ModelProto;
use std::collections::BTreeMap;

/// The metadata key of an input's value labels.
pub const LABELS_KEY: &str = "labels";

/// The labels of each labelled graph input of `model`, by input name (an
/// entry that is not a JSON array of strings is left out).
pub fn input_labels(model: &ModelProto) -> BTreeMap<String, Vec<String>> {
    let Some(graph) = model.graph.as_ref() else {
        return BTreeMap::new();
    };
    graph
        .input
        .iter()
        .filter_map(|input| {
            let entry = input
                .metadata_props
                .iter()
                .find(|e| e.key() == LABELS_KEY)?;
            let labels: Vec<String> = serde_json::from_str(entry.value()).ok()?;
            Some((input.name().to_string(), labels))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{Dim, GraphBuilder};
    use crate::proto::onnx::tensor_proto::DataType;
    use protobuf::Message;

    #[test]
    fn labels_round_trip_through_the_model_bytes() {
        let mut g = GraphBuilder::new("t", "test");
        let voice = g.input("voice", DataType::INT64, &[Dim::Fixed(1)]);
        g.input("other", DataType::INT64, &[Dim::Fixed(1)]);
        g.input_metadata("voice", LABELS_KEY, r#"["a","b"]"#);
        g.input_metadata("other", LABELS_KEY, "not json");
        g.output(&voice, "out", DataType::INT64, &[Dim::Fixed(1)]);
        let bytes = g.to_bytes();
        let model = ModelProto::parse_from_bytes(&bytes).expect("parses");
        let labels = input_labels(&model);
        assert_eq!(labels.len(), 1);
        assert_eq!(labels["voice"], ["a", "b"]);
    }
}
