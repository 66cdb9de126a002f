//! What a model says about the values its inputs take, recorded in each
//! input's metadata (ONNX IR 10's per-value `metadata_props`): value labels
//! under [`LABELS_KEY`] (a JSON array of strings, the name of value `i` at
//! index `i`: `voice` 0 is `jf_alpha`), a value range under [`RANGE_KEY`]
//! (a JSON array `[minimum, maximum]`, both included), and the range of its
//! last axis's length under [`LENGTH_KEY`] (`[shortest, longest]`: an
//! utterance of at least one phoneme and at most 510, pads included). The
//! product writes them on the policies it makes; the studio offers the
//! names and the runner refuses a value outside them.

use crate::proto::onnx::ModelProto;
use std::collections::BTreeMap;

/// The metadata key of an input's value labels.
pub const LABELS_KEY: &str = "labels";

/// The metadata key of an input's value range.
pub const RANGE_KEY: &str = "range";

/// The metadata key of the range of an input's last-axis length.
pub const LENGTH_KEY: &str = "length";

/// Every value-facts key, as a serialized metadata entry begins (field 1
/// of `StringStringEntryProto`, its length, the key), for finding models
/// that have any without parsing them.
pub fn encoded_keys() -> [Vec<u8>; 3] {
    [LABELS_KEY, RANGE_KEY, LENGTH_KEY].map(|key| {
        let mut encoded = vec![0x0a, key.len() as u8];
        encoded.extend_from_slice(key.as_bytes());
        encoded
    })
}

/// What one input's metadata says of its values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValueFacts {
    /// The names of its values, value `i` at index `i`.
    pub labels: Option<Vec<String>>,
    /// Its smallest and largest value.
    pub range: Option<(f64, f64)>,
    /// The shortest and longest its last axis may be.
    pub length: Option<(u64, u64)>,
}

/// The value facts of each graph input of `model` that has any, by input
/// name (an entry that does not parse is left out).
pub fn input_facts(model: &ModelProto) -> BTreeMap<String, ValueFacts> {
    let Some(graph) = model.graph.as_ref() else {
        return BTreeMap::new();
    };
    graph
        .input
        .iter()
        .filter_map(|input| {
            let entry = |key: &str| {
                input
                    .metadata_props
                    .iter()
                    .find(|e| e.key() == key)
                    .map(|e| e.value())
            };
            let facts = ValueFacts {
                labels: entry(LABELS_KEY).and_then(|v| serde_json::from_str(v).ok()),
                range: entry(RANGE_KEY)
                    .and_then(|v| serde_json::from_str::<(f64, f64)>(v).ok())
                    .filter(|(low, high)| low <= high),
                length: entry(LENGTH_KEY)
                    .and_then(|v| serde_json::from_str::<(u64, u64)>(v).ok())
                    .filter(|(low, high)| low <= high),
            };
            (facts != ValueFacts::default()).then(|| (input.name().to_string(), facts))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{Dim, GraphBuilder};
    use crate::proto::onnx::tensor_proto::DataType;
    use protobuf::Message;

    fn g_bytes_with_labels() -> Vec<u8> {
        let mut g = GraphBuilder::new("t", "test");
        let voice = g.input("voice", DataType::INT64, &[Dim::Fixed(1)]);
        g.input_metadata("voice", LABELS_KEY, r#"["a"]"#);
        g.output(&voice, "out", DataType::INT64, &[Dim::Fixed(1)]);
        g.to_bytes()
    }

    #[test]
    fn labels_and_ranges_round_trip_through_the_model_bytes() {
        let mut g = GraphBuilder::new("t", "test");
        let voice = g.input("voice", DataType::INT64, &[Dim::Fixed(1)]);
        g.input("other", DataType::INT64, &[Dim::Fixed(1)]);
        g.input("speed", DataType::FLOAT, &[Dim::Fixed(1)]);
        g.input("upside_down", DataType::FLOAT, &[Dim::Fixed(1)]);
        g.input_metadata("voice", LABELS_KEY, r#"["a","b"]"#);
        g.input_metadata("other", LABELS_KEY, "not json");
        g.input_metadata("speed", RANGE_KEY, "[0.5, 2]");
        g.input_metadata("upside_down", RANGE_KEY, "[2, 1]");
        g.input_metadata("other", LENGTH_KEY, "[3, 512]");
        g.output(&voice, "out", DataType::INT64, &[Dim::Fixed(1)]);
        let model = ModelProto::parse_from_bytes(&g.to_bytes()).expect("parses");
        let facts = input_facts(&model);
        assert_eq!(facts.len(), 3);
        assert_eq!(facts["other"].length, Some((3, 512)));
        assert_eq!(facts["other"].labels, None);
        let bytes = g_bytes_with_labels();
        assert!(
            encoded_keys()
                .iter()
                .any(|k| bytes.windows(k.len()).any(|w| w == &k[..]))
        );
        assert_eq!(
            facts["voice"].labels.as_deref(),
            Some(&["a".to_string(), "b".into()][..])
        );
        assert_eq!(facts["speed"].range, Some((0.5, 2.0)));
    }
}
