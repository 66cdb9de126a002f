//! The external-data files a model's tensors live in (`model.onnx.data`
//! beside a large model): the locations its tensors record, relative to the
//! model file's folder.

use crate::proto::onnx::tensor_proto::DataLocation;
use crate::proto::onnx::{GraphProto, ModelProto, NodeProto, SparseTensorProto, TensorProto};
use std::collections::BTreeSet;

/// Every external-data location `model` names (initializers, attribute
/// tensors and sparse tensors, subgraphs, functions), sorted and once each;
/// an error names a tensor that keeps its data outside the model but names
/// no location.
pub fn external_data_locations(model: &ModelProto) -> Result<Vec<String>, String> {
    let mut found = BTreeSet::new();
    if let Some(graph) = model.graph.as_ref() {
        in_graph(graph, &mut found)?;
    }
    for function in &model.functions {
        in_nodes(&function.node, &mut found)?;
    }
    Ok(found.into_iter().collect())
}

type Found = BTreeSet<String>;

fn in_graph(graph: &GraphProto, found: &mut Found) -> Result<(), String> {
    for tensor in &graph.initializer {
        in_tensor(tensor, found)?;
    }
    for sparse in &graph.sparse_initializer {
        in_sparse(sparse, found)?;
    }
    in_nodes(&graph.node, found)
}

fn in_nodes(nodes: &[NodeProto], found: &mut Found) -> Result<(), String> {
    for attribute in nodes.iter().flat_map(|n| &n.attribute) {
        for tensor in attribute.t.as_ref().into_iter().chain(&attribute.tensors) {
            in_tensor(tensor, found)?;
        }
        let sparse = attribute.sparse_tensor.as_ref().into_iter();
        for tensor in sparse.chain(&attribute.sparse_tensors) {
            in_sparse(tensor, found)?;
        }
        for subgraph in attribute.g.as_ref().into_iter().chain(&attribute.graphs) {
            in_graph(subgraph, found)?;
        }
    }
    Ok(())
}

fn in_sparse(sparse: &SparseTensorProto, found: &mut Found) -> Result<(), String> {
    for tensor in sparse
        .values
        .as_ref()
        .into_iter()
        .chain(sparse.indices.as_ref())
    {
        in_tensor(tensor, found)?;
    }
    Ok(())
}

fn in_tensor(tensor: &TensorProto, found: &mut Found) -> Result<(), String> {
    if tensor.data_location.map(|l| l.enum_value_or_default()) != Some(DataLocation::EXTERNAL) {
        return Ok(());
    }
    let location = tensor
        .external_data
        .iter()
        .find(|entry| entry.key() == "location")
        .map(|entry| entry.value().to_string())
        .ok_or_else(|| {
            format!(
                "tensor `{}` keeps its data outside the model but names no location",
                tensor.name()
            )
        })?;
    found.insert(location);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::onnx::{AttributeProto, StringStringEntryProto};
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
            external_data_locations(&model).expect("listed"),
            ["branch.bin", "constant.bin", "model.onnx.data"]
        );
        assert!(
            external_data_locations(&ModelProto::new())
                .expect("none")
                .is_empty()
        );
        let mut nameless = external("x");
        nameless.external_data.clear();
        nameless.set_name("w".into());
        let mut graph = GraphProto::new();
        graph.initializer.push(nameless);
        model.graph = Some(graph).into();
        assert_eq!(
            external_data_locations(&model).expect_err("refused"),
            "tensor `w` keeps its data outside the model but names no location"
        );
    }
}
