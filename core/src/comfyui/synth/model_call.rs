//! A model call within a sampler's step, at a point of the solver's
//! choosing: the call's model input and timestep as a policy's outputs,
//! and the denoised sample of its estimate.

use super::SynthError;
use super::estimate::model_timestep;
use super::graph::{Family, PolicyGraph};
use super::steps::combine;

/// A model call within a step.
pub(super) struct ModelCall<'a> {
    family: &'a Family,
}

impl<'a> ModelCall<'a> {
    /// The calls of `family`'s model; every port the policy shares with
    /// its sampler's step is declared (only some points draw noise or read
    /// the memory).
    pub(super) fn on(
        g: &mut PolicyGraph<'_>,
        family: &'a Family,
    ) -> Result<ModelCall<'a>, SynthError> {
        g.declare_inputs()?;
        Ok(ModelCall { family })
    }

    /// The call's model input (`sample` at per-row float64 sigma `s_mid`,
    /// scaled by `1 / sqrt(s_mid^2 + sigma_data^2)`; a flow model's is the
    /// sample itself) and timestep as outputs `<call>_input` and
    /// `<call>_timestep`.
    pub(super) fn build(
        &self,
        g: &mut PolicyGraph<'_>,
        sample: &str,
        s_mid: &str,
        call: &str,
    ) -> Result<(), SynthError> {
        let timestep = model_timestep(g, &self.family.sampling, s_mid);
        if self.family.is_flow() || self.family.prediction.unscaled_input() {
            let model_input = g.op("Identity", &[sample]);
            g.output(&model_input, &format!("{call}_input"))?;
            return g.output(&timestep, &format!("{call}_timestep"));
        }
        let s2 = g.op("Mul", &[s_mid, s_mid]);
        let sigma_data = self.family.prediction.sigma_data;
        let sd2 = g.d(sigma_data * sigma_data);
        let v = g.op("Add", &[&s2, &sd2]);
        let r = g.op("Sqrt", &[&v]);
        let one = g.d(1.0);
        let c_in = g.op("Div", &[&one, &r]);
        let model_input = combine(g, &[(c_in, sample.to_string())]);
        g.output(&model_input, &format!("{call}_input"))?;
        g.output(&timestep, &format!("{call}_timestep"))
    }
}

/// `x - sigma e` with a per-row float64 `sigma`.
pub(super) fn denoised_at(g: &mut PolicyGraph<'_>, x: &str, sigma: &str, e: &str) -> String {
    let one = g.d(1.0);
    let minus = g.op("Neg", &[sigma]);
    combine(g, &[(one, x.to_string()), (minus, e.to_string())])
}
