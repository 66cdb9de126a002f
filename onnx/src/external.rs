//! The external-data files a model's tensors live in (`model.onnx.data`
//! beside a large model): the locations its tensors record, relative to the
//! model file's folder.

use crate::proto::onnx::tensor_proto::DataLocation;
use crate::proto::onnx::{GraphProto, ModelProto, TensorProto};
use std::collections::BTreeSet;

/// Every external-data location `model` names, sorted and once each.
pub fn external_data_locations(model: &ModelProto) -> Vec<String> {
    let mut found = BTreeSet::new();
    if let Some(graph) = model.graph.as_ref() {
        in_graph(graph, &mut found);
    }
    found.into_iter().collect()
}

fn in_graph(graph: &GraphProto, found: &mut BTreeSet<String>) {
    let sparse = graph
        .sparse_initializer
        .iter()
        .flat_map(|s| s.values.as_ref().into_iter().chain(s.indices.as_ref()));
    for tensor in graph.initializer.iter().chain(sparse) {
        in_tensor(tensor, found);
    }
    for attribute in graph.node.iter().flat_map(|n| &n.attribute) {
        for tensor in attribute.t.as_ref().into_iter().chain(&attribute.tensors) {
            in_tensor(tensor, found);
        }
        for subgraph in attribute.g.as_ref().into_iter().chain(&attribute.graphs) {
            in_graph(subgraph, found);
        }
    }
}

fn in_tensor(tensor: &TensorProto, found: &mut BTreeSet<String>) {
    if tensor.data_location.map(|l| l.enum_value_or_default()) != Some(DataLocation::EXTERNAL) {
        return;
    }
    let location = tensor
        .external_data
        .iter()
        .find(|entry| entry.key() == "location")
        .map(|entry| entry.value().to_string());
    found.extend(location);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::onnx::{AttributeProto, NodeProto, StringStringEntryProto};
    use protobuf::EnumOrUnknown;

    fn external(location: &str) -> TensorProto {
        let mut tensor = TensorProto::new();
        tensor.data_location = Some(EnumOrUnknown::new(DataLocation::EXTERNAL));
        let mut entry = StringStringEntryProto::new();
        entry.set_key("location".into());
        entry.set_value(location.into());
        tensor.external_data.push(entry);
        tensor
    }

    #[test]
    fn locations_come_from_initializers_attributes_and_subgraphs() {
        let mut inner = GraphProto::new();
        inner.initializer.push(external("branch.bin"));
        let mut attribute = AttributeProto::new();
        attribute.g = Some(inner).into();
        attribute.t = Some(external("constant.bin")).into();
        let mut node = NodeProto::new();
        node.attribute.push(attribute);
        let mut graph = GraphProto::new();
        graph.initializer.push(external("model.onnx.data"));
        graph.initializer.push(external("model.onnx.data"));
        graph.initializer.push(TensorProto::new());
        graph.node.push(node);
        let mut model = ModelProto::new();
        model.graph = Some(graph).into();
        assert_eq!(
            external_data_locations(&model),
            ["branch.bin", "constant.bin", "model.onnx.data"]
        );
        assert!(external_data_locations(&ModelProto::new()).is_empty());
    }
}
