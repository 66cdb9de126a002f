//! Building ONNX models in code: typed inputs and outputs, initializers,
//! and nodes whose outputs get fresh names, serialized as binary `.onnx`.
//! Models use IR version 10 and the default domain at opset 21, which the
//! pinned ONNX Runtime and the `onnx` checker both accept.

use crate::proto::onnx::attribute_proto::AttributeType;
use crate::proto::onnx::tensor_proto::DataType;
use crate::proto::onnx::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, StringStringEntryProto,
    TensorProto, TensorShapeProto, TypeProto, ValueInfoProto, tensor_shape_proto, type_proto,
};
use protobuf::{Message, MessageField};

/// The IR version of built models.
pub const IR_VERSION: i64 = 10;
/// The default-domain opset of built models.
pub const OPSET: i64 = 21;

/// One extent of a port's declared shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    /// A fixed extent.
    Fixed(i64),
    /// A named symbolic extent.
    Named(String),
}

/// A node attribute value.
#[derive(Clone, Debug)]
pub enum Attr {
    /// One integer.
    Int(i64),
    /// A list of integers.
    Ints(Vec<i64>),
    /// A string.
    Str(String),
    /// One float.
    Float(f32),
    /// A subgraph (the body of a `Loop`, a branch of an `If`).
    Graph(Box<GraphProto>),
}

/// A model under construction: one graph in the default domain.
#[derive(Debug)]
pub struct GraphBuilder {
    graph: GraphProto,
    fresh: usize,
    producer: String,
}

impl GraphBuilder {
    /// An empty graph named `name`, made by `producer`.
    pub fn new(name: &str, producer: &str) -> GraphBuilder {
        let mut graph = GraphProto::new();
        graph.set_name(name.to_string());
        GraphBuilder {
            graph,
            fresh: 0,
            producer: producer.to_string(),
        }
    }

    /// Declares a graph input and returns its name.
    pub fn input(&mut self, name: &str, dtype: DataType, dims: &[Dim]) -> String {
        self.graph.input.push(value_info(name, dtype, dims));
        name.to_string()
    }

    /// Records `key: value` in the metadata of the graph input `input`
    /// (ONNX IR 10's per-value `metadata_props`); an unknown input is
    /// left alone.
    pub fn input_metadata(&mut self, input: &str, key: &str, value: &str) {
        if let Some(info) = self.graph.input.iter_mut().find(|i| i.name() == input) {
            let mut entry = StringStringEntryProto::new();
            entry.set_key(key.to_string());
            entry.set_value(value.to_string());
            info.metadata_props.push(entry);
        }
    }

    /// Declares the graph output `name` carrying `value` (through an
    /// `Identity` node when the names differ).
    pub fn output(&mut self, value: &str, name: &str, dtype: DataType, dims: &[Dim]) {
        if value != name {
            self.node("Identity", &[value], &[name], &[]);
        }
        self.graph.output.push(value_info(name, dtype, dims));
    }

    /// A subgraph named `name`, made by `build` on a builder whose fresh
    /// names continue this one's (values of the subgraph and of its outer
    /// graph never share a name; the subgraph may read outer values by
    /// name; its node names are scoped by `name`).
    pub fn subgraph(&mut self, name: &str, build: impl FnOnce(&mut GraphBuilder)) -> GraphProto {
        let mut inner = GraphBuilder::new(name, &self.producer);
        inner.fresh = self.fresh;
        build(&mut inner);
        self.fresh = inner.fresh;
        for node in &mut inner.graph.node {
            let scoped = format!("{name}/{}", node.name());
            node.set_name(scoped);
        }
        inner.graph
    }

    /// Adds a node with one output and returns the output's fresh name.
    pub fn op(&mut self, op: &str, inputs: &[&str]) -> String {
        self.op_with(op, inputs, &[])
    }

    /// Adds a node with one output and attributes; returns the output.
    pub fn op_with(&mut self, op: &str, inputs: &[&str], attrs: &[(&str, Attr)]) -> String {
        let out = self.fresh_name(op);
        self.node(op, inputs, &[&out], attrs);
        out
    }

    /// Adds a node with `count` outputs and attributes; returns the
    /// outputs' fresh names.
    pub fn op_outputs(
        &mut self,
        op: &str,
        inputs: &[&str],
        count: usize,
        attrs: &[(&str, Attr)],
    ) -> Vec<String> {
        let outs: Vec<String> = (0..count).map(|_| self.fresh_name(op)).collect();
        let names: Vec<&str> = outs.iter().map(String::as_str).collect();
        self.node(op, inputs, &names, attrs);
        outs
    }

    /// Adds a node with the given output names.
    pub fn node(&mut self, op: &str, inputs: &[&str], outputs: &[&str], attrs: &[(&str, Attr)]) {
        let mut node = NodeProto::new();
        node.set_op_type(op.to_string());
        node.set_name(format!("{op}_{}", self.graph.node.len()));
        node.input = inputs.iter().map(|s| s.to_string()).collect();
        node.output = outputs.iter().map(|s| s.to_string()).collect();
        node.attribute = attrs.iter().map(|(n, a)| attribute(n, a)).collect();
        self.graph.node.push(node);
    }

    /// `Cast` of `x` to `to`.
    pub fn cast(&mut self, x: &str, to: DataType) -> String {
        self.op_with("Cast", &[x], &[("to", Attr::Int(to as i64))])
    }

    /// A float32 initializer of the given shape; returns its name.
    pub fn f32s(&mut self, values: &[f32], dims: &[i64]) -> String {
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.initializer(DataType::FLOAT, dims, raw)
    }

    /// A float64 initializer of the given shape; returns its name.
    pub fn f64s(&mut self, values: &[f64], dims: &[i64]) -> String {
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.initializer(DataType::DOUBLE, dims, raw)
    }

    /// An int64 initializer of the given shape; returns its name.
    pub fn i64s(&mut self, values: &[i64], dims: &[i64]) -> String {
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.initializer(DataType::INT64, dims, raw)
    }

    /// A float32 scalar (rank 0) initializer.
    pub fn scalar_f32(&mut self, value: f32) -> String {
        self.f32s(&[value], &[])
    }

    /// A float64 scalar (rank 0) initializer.
    pub fn scalar_f64(&mut self, value: f64) -> String {
        self.f64s(&[value], &[])
    }

    /// An int64 scalar (rank 0) initializer.
    pub fn scalar_i64(&mut self, value: i64) -> String {
        self.i64s(&[value], &[])
    }

    /// An int32 scalar (rank 0) initializer.
    pub fn scalar_i32(&mut self, value: i32) -> String {
        self.initializer(DataType::INT32, &[], value.to_le_bytes().to_vec())
    }

    /// A boolean scalar (rank 0) initializer.
    pub fn scalar_bool(&mut self, value: bool) -> String {
        self.initializer(DataType::BOOL, &[], vec![u8::from(value)])
    }

    /// A uint64 scalar (rank 0) initializer.
    pub fn scalar_u64(&mut self, value: u64) -> String {
        self.initializer(DataType::UINT64, &[], value.to_le_bytes().to_vec())
    }

    /// A float32 vector initializer.
    pub fn vec_f32(&mut self, values: &[f32]) -> String {
        self.f32s(values, &[values.len() as i64])
    }

    /// An int64 vector initializer.
    pub fn vec_i64(&mut self, values: &[i64]) -> String {
        self.i64s(values, &[values.len() as i64])
    }

    /// The finished model.
    pub fn finish(self) -> ModelProto {
        let mut model = ModelProto::new();
        model.set_ir_version(IR_VERSION);
        model.set_producer_name(self.producer);
        let mut opset = OperatorSetIdProto::new();
        opset.set_domain(String::new());
        opset.set_version(OPSET);
        model.opset_import.push(opset);
        model.graph = MessageField::some(self.graph);
        model
    }

    /// The finished model as binary `.onnx` bytes.
    pub fn to_bytes(self) -> Vec<u8> {
        self.finish()
            .write_to_bytes()
            .expect("a built model always encodes")
    }

    fn initializer(&mut self, dtype: DataType, dims: &[i64], raw: Vec<u8>) -> String {
        let name = self.fresh_name("const");
        let mut tensor = TensorProto::new();
        tensor.set_name(name.clone());
        tensor.set_data_type(dtype as i32);
        tensor.dims = dims.to_vec();
        tensor.set_raw_data(raw);
        self.graph.initializer.push(tensor);
        name
    }

    fn fresh_name(&mut self, stem: &str) -> String {
        self.fresh += 1;
        format!("{}_{}", stem.to_ascii_lowercase(), self.fresh)
    }
}

fn value_info(name: &str, dtype: DataType, dims: &[Dim]) -> ValueInfoProto {
    let mut shape = TensorShapeProto::new();
    for d in dims {
        let mut dim = tensor_shape_proto::Dimension::new();
        match d {
            Dim::Fixed(n) => dim.set_dim_value(*n),
            Dim::Named(s) => dim.set_dim_param(s.clone()),
        }
        shape.dim.push(dim);
    }
    let mut tensor = type_proto::Tensor::new();
    tensor.set_elem_type(dtype as i32);
    tensor.shape = MessageField::some(shape);
    let mut ty = TypeProto::new();
    ty.set_tensor_type(tensor);
    let mut info = ValueInfoProto::new();
    info.set_name(name.to_string());
    info.type_ = MessageField::some(ty);
    info
}

fn attribute(name: &str, value: &Attr) -> AttributeProto {
    let mut a = AttributeProto::new();
    a.set_name(name.to_string());
    match value {
        Attr::Int(i) => {
            a.set_i(*i);
            a.set_type(AttributeType::INT);
        }
        Attr::Ints(v) => {
            a.ints = v.clone();
            a.set_type(AttributeType::INTS);
        }
        Attr::Str(s) => {
            a.set_s(s.as_bytes().to_vec());
            a.set_type(AttributeType::STRING);
        }
        Attr::Float(f) => {
            a.set_f(*f);
            a.set_type(AttributeType::FLOAT);
        }
        Attr::Graph(g) => {
            a.g = MessageField::some((**g).clone());
            a.set_type(AttributeType::GRAPH);
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{PortDim, Signature};

    #[test]
    fn a_built_model_reads_back_with_its_ports() {
        let mut g = GraphBuilder::new("add_one", "test");
        let x = g.input(
            "x",
            DataType::FLOAT,
            &[Dim::Named("batch".into()), Dim::Fixed(4)],
        );
        let one = g.scalar_f32(1.0);
        let y = g.op("Add", &[&x, &one]);
        g.output(
            &y,
            "y",
            DataType::FLOAT,
            &[Dim::Named("batch".into()), Dim::Fixed(4)],
        );
        let bytes = g.to_bytes();
        let model = ModelProto::parse_from_bytes(&bytes).expect("decodes");
        assert_eq!(model.ir_version(), IR_VERSION);
        let sig = Signature::of(&model);
        assert_eq!(sig.inputs.len(), 1);
        assert_eq!(sig.inputs[0].dtype, "float32");
        assert_eq!(
            sig.inputs[0].shape,
            Some(vec![PortDim::Named("batch".into()), PortDim::Fixed(4)])
        );
        assert_eq!(sig.outputs[0].name, "y");
        assert_eq!(sig.outputs[0].to_string(), "float32 [batch, 4]");
    }
}
