//! A model's typed ports, read from its graph: the inputs a caller must
//! feed (initializers listed as inputs by old exporters are left out) and
//! the outputs, each with dtype and shape.

use crate::dtype::dtype_name;
use crate::proto::onnx::{ModelProto, ValueInfoProto, tensor_shape_proto, type_proto};
use std::collections::HashSet;
use std::fmt;

/// One extent of a port's shape as the model declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortDim {
    /// A fixed extent.
    Fixed(i64),
    /// A named symbolic extent (`dim_param`).
    Named(String),
    /// An extent the model leaves open (neither value nor name).
    Open,
}

impl fmt::Display for PortDim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortDim::Fixed(n) => write!(f, "{n}"),
            PortDim::Named(s) => f.write_str(s),
            PortDim::Open => f.write_str("?"),
        }
    }
}

/// One tensor port of a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port {
    /// The port's name in the graph.
    pub name: String,
    /// The document's dtype name (`float32`, ...), or `elem:N`; `non-tensor`
    /// for sequence, map or optional types.
    pub dtype: String,
    /// The declared shape, or `None` when the model gives no shape (any rank).
    pub shape: Option<Vec<PortDim>>,
}

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.dtype)?;
        match &self.shape {
            None => f.write_str(" [any rank]"),
            Some(dims) => {
                let dims: Vec<String> = dims.iter().map(ToString::to_string).collect();
                write!(f, " [{}]", dims.join(", "))
            }
        }
    }
}

/// The inputs and outputs of a model's main graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signature {
    /// The inputs a caller feeds, in graph order.
    pub inputs: Vec<Port>,
    /// The outputs, in graph order.
    pub outputs: Vec<Port>,
}

impl Signature {
    /// The ports of `model`'s graph.
    pub fn of(model: &ModelProto) -> Signature {
        let graph = &model.graph;
        let initialized: HashSet<&str> = graph.initializer.iter().map(|t| t.name()).collect();
        Signature {
            inputs: graph
                .input
                .iter()
                .filter(|v| !initialized.contains(v.name()))
                .map(port)
                .collect(),
            outputs: graph.output.iter().map(port).collect(),
        }
    }

    /// The input named `name`.
    pub fn input(&self, name: &str) -> Option<&Port> {
        self.inputs.iter().find(|p| p.name == name)
    }

    /// The output named `name`.
    pub fn output(&self, name: &str) -> Option<&Port> {
        self.outputs.iter().find(|p| p.name == name)
    }
}

fn port(value: &ValueInfoProto) -> Port {
    let name = value.name().to_string();
    let Some(type_proto::Value::TensorType(tensor)) = &value.type_.value else {
        return Port {
            name,
            dtype: "non-tensor".into(),
            shape: None,
        };
    };
    let shape = tensor.shape.as_ref().map(|shape| {
        shape
            .dim
            .iter()
            .map(|d| match &d.value {
                Some(tensor_shape_proto::dimension::Value::DimValue(n)) => PortDim::Fixed(*n),
                Some(tensor_shape_proto::dimension::Value::DimParam(s)) if !s.is_empty() => {
                    PortDim::Named(s.clone())
                }
                _ => PortDim::Open,
            })
            .collect()
    });
    Port {
        name,
        dtype: dtype_name(tensor.elem_type()),
        shape,
    }
}
