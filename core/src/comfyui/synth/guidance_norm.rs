//! `cfg_norm`: ComfyUI's `CFGNorm` post-guidance function on a flow model.
//! With the call's sample `x` (a flow model's input is the sample itself)
//! at sigma `s = timestep / multiplier`, the guided denoised sample
//! `D = x - s v` (`v` the input `guided`) and the conditional one `D_c`
//! (from input `conditional`) are compared by their norms over the channel
//! axis at every position: `D' = D min(1, |D_c| / (|D| + 1e-8)) strength`
//! (never below 0), given back as the velocity `(x - D') / s` (output
//! `estimate`). In float32, as ComfyUI's model runs.
use super::SynthError;
use super::graph::{Family, PolicyGraph};
use super::tables::ModelSampling;
use wfstudio_onnx::builder::Attr;

/// Builds the policy.
pub fn cfg_norm(g: &mut PolicyGraph<'_>, family: &Family) -> Result<(), SynthError> {
    let ModelSampling::Flow { multiplier, .. } = &family.sampling else {
        return Err(g.error("CFGNorm is built for flow-matching models only"));
    };
    let x = g.input("sample")?;
    let timestep = g.input("timestep")?;
    let guided = g.input("guided")?;
    let conditional = g.input("conditional")?;
    let strength = g.input("strength")?;
    let per = g.f(1.0 / multiplier);
    let sigma = g.op("Mul", &[&timestep, &per]);
    let sigma = g.rows(&sigma);
    let denoised = |g: &mut PolicyGraph<'_>, v: &str| {
        let moved = g.op("Mul", &[&sigma, v]);
        g.op("Sub", &[&x, &moved])
    };
    let (d, d_c) = (denoised(g, &guided), denoised(g, &conditional));
    let norm = |g: &mut PolicyGraph<'_>, v: &str| {
        let squared = g.op("Mul", &[v, v]);
        let channels = g.b.vec_i64(&[1]);
        let sum = g.op_with(
            "ReduceSum",
            &[&squared, &channels],
            &[("keepdims", Attr::Int(1))],
        );
        g.op("Sqrt", &[&sum])
    };
    let (n, n_c) = (norm(g, &d), norm(g, &d_c));
    let eps = g.f(1e-8);
    let padded = g.op("Add", &[&n, &eps]);
    let ratio = g.op("Div", &[&n_c, &padded]);
    let (zero, one) = (g.f(0.0), g.f(1.0));
    let scale = g.op("Clip", &[&ratio, &zero, &one]);
    let scaled = g.op("Mul", &[&d, &scale]);
    let strength = g.rows(&strength);
    let scaled = g.op("Mul", &[&scaled, &strength]);
    let gap = g.op("Sub", &[&x, &scaled]);
    let tiny = g.f(1e-12);
    let sigma = g.op("Max", &[&sigma, &tiny]);
    let out = g.op("Div", &[&gap, &sigma]);
    g.output(&out, "estimate")
}
