//! A generate request and the values it gives `source: request` inputs by
//! their runtime role: prompt tokens, `max_new_tokens` as max iterations /
//! output tokens, the seed, and the sampling controls (greedy: temperature
//! 0, top-k 1, top-p 1, min-p 0). Other roles get nothing from a request.

use crate::tensor::{Data, Tensor};
use wfstudio_schema::types::contract::TensorContract;
use wfstudio_schema::types::workflow::RuntimeInputRole;

/// Sampling controls of a request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sampling {
    /// Greedy decoding.
    Greedy,
    /// Explicit controls.
    Sample {
        /// Temperature.
        temperature: f32,
        /// Top-k.
        top_k: i64,
        /// Top-p.
        top_p: f32,
        /// Min-p.
        min_p: f32,
    },
}

/// A generate request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Request {
    /// One token list per row (all rows the same length).
    pub prompt_tokens: Vec<Vec<i64>>,
    /// `max_new_tokens`.
    pub max_new_tokens: Option<i64>,
    /// The seed (absent: the input's declared default applies).
    pub seed: Option<i64>,
    /// Sampling controls (`None`: the request says nothing about them).
    pub sampling: Option<Sampling>,
}

fn scalar(contract: &TensorContract, data: Data) -> Result<Option<Tensor>, String> {
    let shape = match contract.rank {
        0 => Vec::new(),
        1 => vec![1],
        r => {
            return Err(format!(
                "a request scalar binds only rank 0 or 1 contracts, not rank {r}"
            ));
        }
    };
    Tensor::new(shape, data).map(Some).map_err(|e| e.0)
}

impl Request {
    /// The value this request gives an input of `role` and `contract`.
    pub fn bind(
        &self,
        role: RuntimeInputRole,
        contract: &TensorContract,
    ) -> Result<Option<Tensor>, String> {
        use RuntimeInputRole as R;
        let sampling = |pick: fn(Sampling) -> Data| self.sampling.map(pick);
        let data = match role {
            R::PromptTokens => return self.prompt(contract),
            R::PromptText => {
                return Err("prompt_text needs a tokenizer adapter; pass token ids instead".into());
            }
            R::MaxIterations | R::MaxOutputTokens => {
                self.max_new_tokens.map(|n| Data::I64(vec![n]))
            }
            // A request without a seed leaves the input to its declared default.
            R::Seed => self.seed.map(|seed| Data::I64(vec![seed])),
            R::SamplingTemperature => sampling(|s| match s {
                Sampling::Greedy => Data::F32(vec![0.0]),
                Sampling::Sample { temperature, .. } => Data::F32(vec![temperature]),
            }),
            R::SamplingTopK => sampling(|s| match s {
                Sampling::Greedy => Data::I64(vec![1]),
                Sampling::Sample { top_k, .. } => Data::I64(vec![top_k]),
            }),
            R::SamplingTopP => sampling(|s| match s {
                Sampling::Greedy => Data::F32(vec![1.0]),
                Sampling::Sample { top_p, .. } => Data::F32(vec![top_p]),
            }),
            R::SamplingMinP => sampling(|s| match s {
                Sampling::Greedy => Data::F32(vec![0.0]),
                Sampling::Sample { min_p, .. } => Data::F32(vec![min_p]),
            }),
            _ => None,
        };
        match data {
            Some(data) => scalar(contract, data),
            None => Ok(None),
        }
    }

    fn prompt(&self, contract: &TensorContract) -> Result<Option<Tensor>, String> {
        let Some(first) = self.prompt_tokens.first() else {
            return Ok(None);
        };
        if self
            .prompt_tokens
            .iter()
            .any(|row| row.len() != first.len())
        {
            return Err("prompt rows must all have the same length".into());
        }
        let rows = self.prompt_tokens.len();
        let shape = match (contract.rank, rows) {
            (1, 1) => vec![first.len()],
            (2, _) => vec![rows, first.len()],
            (1, _) => return Err("several prompt rows need a rank-2 prompt_tokens contract".into()),
            (r, _) => {
                return Err(format!(
                    "prompt_tokens binds rank 1 or 2 contracts, not rank {r}"
                ));
            }
        };
        let data = Data::I64(self.prompt_tokens.concat());
        Tensor::new(shape, data).map(Some).map_err(|e| e.0)
    }
}
