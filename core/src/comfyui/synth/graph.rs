//! The graph of one policy under construction, with its ports taken from
//! the component's declared contracts, and the sampling facts every policy
//! of a document shares.

use super::SynthError;
use super::prediction::Prediction;
use super::spacing::Schedule;
use super::tables::ModelSampling;
use serde_json::{Map, Value};
use wfstudio_onnx::builder::{Attr, Dim, GraphBuilder};
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// Who made a synthesized model (its `producer_name`).
pub const PRODUCER: &str = "wfstudio";

/// What the lowering recorded about the sampling, from the
/// `diffusion_schedule` component's contract parameters.
#[derive(Clone, Debug)]
pub struct Family {
    /// How the model maps noise levels to timesteps.
    pub sampling: ModelSampling,
    /// What the model's output means.
    pub prediction: Prediction,
    /// The sampler (`euler`, `euler_ancestral`, `ddim`, `dpmpp_2m`).
    pub solver: String,
    /// The schedule (`normal`, `karras`, a scheduler node's own, ...).
    pub schedule: Schedule,
    /// The schedule's step count.
    pub steps: usize,
}

impl Family {
    /// Reads the sampling facts of one sampler stage (`stage` is its
    /// policies' name prefix, empty for the first) from the document's
    /// components.
    pub fn of(components: &Map<String, Value>, stage: &str) -> Result<Family, SynthError> {
        let schedule = format!("{stage}diffusion_schedule");
        let fail = |reason: &str| SynthError {
            component: schedule.clone(),
            reason: reason.into(),
        };
        let parameters = components
            .get(&schedule)
            .and_then(|c| c.pointer("/contract/parameters"))
            .ok_or_else(|| {
                fail(&format!(
                    "the document declares no {schedule} contract parameters"
                ))
            })?;
        let text = |key: &str| {
            parameters
                .get(key)
                .and_then(Value::as_str)
                .ok_or_else(|| fail(&format!("its contract parameters lack `{key}`")))
        };
        let sampling = ModelSampling::read(parameters).map_err(|reason| fail(&reason))?;
        let prediction = Prediction::read(parameters).map_err(|reason| fail(&reason))?;
        let steps = parameters
            .get("steps")
            .and_then(Value::as_u64)
            .filter(|s| (1..=10_000).contains(s))
            .ok_or_else(|| {
                fail("its contract parameter `steps` is not a step count in 1..=10000")
            })?;
        Ok(Family {
            sampling,
            prediction,
            solver: text("solver")?.to_string(),
            schedule: Schedule::read(parameters).map_err(|reason| fail(&reason))?,
            steps: steps as usize,
        })
    }

    /// The solver steps the schedule has (see `Schedule::run_steps`).
    pub fn run_steps(&self) -> usize {
        self.schedule.run_steps(&self.sampling, self.steps)
    }

    /// The step count the scheduler computes its sigmas for: one more where
    /// the penultimate sigma is discarded.
    pub fn computed_steps(&self) -> usize {
        self.steps + usize::from(self.schedule.discard_penultimate)
    }

    /// The schedule's sigmas where they are known at import (see
    /// `Schedule::constant`).
    pub fn constant_schedule(&self) -> Option<Vec<f64>> {
        self.schedule.constant(&self.sampling, self.steps)
    }

    /// Whether the model predicts a flow velocity (else epsilon noise).
    pub fn is_flow(&self) -> bool {
        matches!(self.sampling, ModelSampling::Flow { .. })
    }
}

/// A policy graph whose ports follow the component's declaration.
pub struct PolicyGraph<'a> {
    /// The graph builder.
    pub b: GraphBuilder,
    name: &'a str,
    component: &'a Value,
    /// The input ports declared so far.
    inputs: Vec<String>,
}

impl<'a> PolicyGraph<'a> {
    /// An empty graph for component `name`, declared as `component`.
    pub fn new(name: &'a str, component: &'a Value) -> PolicyGraph<'a> {
        PolicyGraph {
            b: GraphBuilder::new(name, PRODUCER),
            name,
            component,
            inputs: Vec::new(),
        }
    }

    /// The component's name.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// An error about this policy.
    pub fn error(&self, reason: impl Into<String>) -> SynthError {
        SynthError {
            component: self.name.to_string(),
            reason: reason.into(),
        }
    }

    /// The component's contract parameter `key`.
    pub fn parameter(&self, key: &str) -> Option<&'a Value> {
        self.component
            .pointer(&format!("/contract/parameters/{key}"))
    }

    /// The component's contract parameter `key` as text.
    pub fn text(&self, key: &str) -> Result<String, SynthError> {
        self.parameter(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| self.error(format!("its contract parameter `{key}` is not text")))
    }

    /// The component's contract parameter `key` as a positive integer.
    pub fn positive_integer(&self, key: &str) -> Result<i64, SynthError> {
        self.parameter(key)
            .and_then(Value::as_i64)
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                self.error(format!(
                    "its contract parameter `{key}` is not a positive integer"
                ))
            })
    }

    /// The component's contract parameter `key` as a positive number.
    pub fn positive_number(&self, key: &str) -> Result<f64, SynthError> {
        self.parameter(key)
            .and_then(Value::as_f64)
            .filter(|n| *n > 0.0)
            .ok_or_else(|| {
                self.error(format!(
                    "its contract parameter `{key}` is not a positive number"
                ))
            })
    }

    /// Whether the component declares input port `port`.
    pub fn has_input(&self, port: &str) -> bool {
        self.component
            .pointer(&format!("/ports/inputs/{port}"))
            .is_some()
    }

    /// Declares input `port` with its declared contract (once, however
    /// often it is read); returns its name.
    pub fn input(&mut self, port: &str) -> Result<String, SynthError> {
        if self.inputs.iter().any(|p| p == port) {
            return Ok(port.to_string());
        }
        let (dtype, dims) = self.contract("inputs", port)?;
        self.inputs.push(port.to_string());
        Ok(self.b.input(port, dtype, &dims))
    }

    /// Declares every input port of the component (a policy that reads
    /// only some still takes all it is bound to).
    pub fn declare_inputs(&mut self) -> Result<(), SynthError> {
        let ports: Vec<String> = self
            .component
            .pointer("/ports/inputs")
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for port in ports {
            self.input(&port)?;
        }
        Ok(())
    }

    /// Declares output `port` carrying `value`.
    pub fn output(&mut self, value: &str, port: &str) -> Result<(), SynthError> {
        let (dtype, dims) = self.contract("outputs", port)?;
        self.b.output(value, port, dtype, &dims);
        Ok(())
    }

    fn contract(&self, side: &str, port: &str) -> Result<(DataType, Vec<Dim>), SynthError> {
        let c = self
            .component
            .pointer(&format!("/ports/{side}/{port}"))
            .ok_or_else(|| self.error(format!("it declares no {side} port `{port}`")))?;
        port_type(c).map_err(|reason| self.error(format!("port `{port}`: {reason}")))
    }

    /// Adds a node with one output.
    pub fn op(&mut self, op: &str, inputs: &[&str]) -> String {
        self.b.op(op, inputs)
    }

    /// Adds a node with one output and attributes.
    pub fn op_with(&mut self, op: &str, inputs: &[&str], attrs: &[(&str, Attr)]) -> String {
        self.b.op_with(op, inputs, attrs)
    }

    /// `Cast` to `to`.
    pub fn cast(&mut self, x: &str, to: DataType) -> String {
        self.b.cast(x, to)
    }

    /// A float32 scalar constant.
    pub fn f(&mut self, value: f64) -> String {
        self.b.scalar_f32(value as f32)
    }

    /// A float64 scalar constant.
    pub fn d(&mut self, value: f64) -> String {
        self.b.scalar_f64(value)
    }

    /// An int64 scalar constant.
    pub fn i(&mut self, value: i64) -> String {
        self.b.scalar_i64(value)
    }

    /// Float64 `x`, with zeros replaced by 1 (a guard for divisions whose
    /// result is only used where `x` is not zero).
    pub fn nonzero(&mut self, x: &str) -> String {
        let zero = self.d(0.0);
        let one = self.d(1.0);
        let is_zero = self.op("Equal", &[x, &zero]);
        self.op("Where", &[&is_zero, &one, x])
    }

    /// `schedule[step + offset]` per row as float64 (the index clamped at
    /// 0, for steps before the first, which callers read only where they
    /// exist).
    pub fn sigma_at(&mut self, schedule: &str, step: &str, offset: i64) -> String {
        let k = self.i(offset);
        let index = self.op("Add", &[step, &k]);
        let zero = self.i(0);
        let index = self.op("Max", &[&index, &zero]);
        let sigma = self.gather(schedule, &index);
        self.cast(&sigma, DataType::DOUBLE)
    }

    /// `values[index]` along axis 0.
    pub fn gather(&mut self, values: &str, index: &str) -> String {
        self.op_with("Gather", &[values, index], &[("axis", Attr::Int(0))])
    }

    /// A per-row value `[batch]` reshaped to broadcast over the policy's
    /// latents (its highest-rank ports: an audio latent's rank 3, a
    /// picture's 4, a video's 5).
    pub fn rows(&mut self, x: &str) -> String {
        let mut shape = vec![1; self.latent_rank().max(1)];
        shape[0] = -1;
        let shape = self.b.vec_i64(&shape);
        self.op("Reshape", &[x, &shape])
    }

    /// The highest rank the component's ports declare.
    fn latent_rank(&self) -> usize {
        ["inputs", "outputs"]
            .iter()
            .filter_map(|side| self.component.pointer(&format!("/ports/{side}")))
            .filter_map(Value::as_object)
            .flat_map(|ports| ports.values())
            .filter_map(|c| port_type(c).ok())
            .map(|(_, dims)| dims.len())
            .max()
            .unwrap_or(4)
    }

    /// The finished model's bytes.
    pub fn finish(self) -> Vec<u8> {
        self.b.to_bytes()
    }
}

/// The ONNX element type and dims of a declared tensor contract.
pub fn port_type(contract: &Value) -> Result<(DataType, Vec<Dim>), String> {
    let dtype_name = contract
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or("no dtype")?;
    let dtype = wfstudio_onnx::dtype::elem_type(dtype_name)
        .ok_or_else(|| format!("dtype `{dtype_name}` has no ONNX element type"))?;
    let dims = match contract.get("shape").and_then(Value::as_array) {
        Some(shape) => shape
            .iter()
            .map(|d| match d {
                Value::String(s) => Ok(Dim::Named(s.clone())),
                Value::Number(n) => n
                    .as_i64()
                    .filter(|n| *n >= 0)
                    .map(Dim::Fixed)
                    .ok_or_else(|| format!("extent {n} is not a size")),
                other => Err(format!("extent {other} is not a size or a name")),
            })
            .collect::<Result<_, _>>()?,
        None => {
            let rank = contract.get("rank").and_then(Value::as_u64).unwrap_or(0);
            (0..rank).map(|i| Dim::Named(format!("d{i}"))).collect()
        }
    };
    Ok((dtype, dims))
}
