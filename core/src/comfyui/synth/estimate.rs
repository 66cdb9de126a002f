//! A model's input and outputs as the solvers take them: the input
//! `x / sqrt(sigma^2 + sigma_data^2)`, the timestep of a sigma, and each
//! output (whatever the model predicts: noise, velocity, EDM's
//! preconditioned output, the denoised sample or LCM's boundary-scaled
//! one) as the epsilon estimate `(x - denoised) / sigma` every solver steps
//! with, so one solver serves every prediction.

use super::graph::{Family, PolicyGraph};
use super::prediction::{LCM_SIGMA_DATA, LCM_TIMESTEP_SCALING, Prediction, PredictionKind};
use super::tables::{DISTILLED_STRIDE, ModelSampling, Timesteps};
use wfstudio_onnx::builder::Attr;
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

/// `out`, `family`'s model's output at sample `x` and noise level `sigma`
/// (`[batch]`, float32 or float64), as the estimate the solvers take:
/// `(x - denoised) / sigma`; `out` itself for epsilon models.
pub(super) fn to_epsilon(
    g: &mut PolicyGraph<'_>,
    family: &Family,
    x: &str,
    sigma: &str,
    out: &str,
) -> String {
    let prediction = &family.prediction;
    // x - denoised, divided by sigma; for v and EDM without the
    // cancellation: x s / (s^2 + sd^2) +- out sd / sqrt(s^2 + sd^2).
    let out_sign = match prediction.kind {
        PredictionKind::Epsilon => return out.to_string(),
        PredictionKind::Lcm => return lcm_to_epsilon(g, family, x, sigma, out),
        PredictionKind::X0 | PredictionKind::ImgToImg => None,
        // x - denoised is the output itself.
        PredictionKind::ImgToImgVelocity => {
            let sigma = g.cast(sigma, DataType::FLOAT);
            let sigma = g.rows(&sigma);
            return g.op("Div", &[out, &sigma]);
        }
        PredictionKind::V => Some("Add"),
        PredictionKind::Edm => Some("Sub"),
    };
    let sigma = g.cast(sigma, DataType::FLOAT);
    let sigma = g.rows(&sigma);
    let Some(out_sign) = out_sign else {
        let gap = g.op("Sub", &[x, out]);
        return g.op("Div", &[&gap, &sigma]);
    };
    let sd2 = g.f(prediction.sigma_data * prediction.sigma_data);
    let s2 = g.op("Mul", &[&sigma, &sigma]);
    let total = g.op("Add", &[&s2, &sd2]);
    let x_weight = g.op("Div", &[&sigma, &total]);
    let from_x = g.op("Mul", &[x, &x_weight]);
    let root = g.op("Sqrt", &[&total]);
    let sd = g.f(prediction.sigma_data);
    let out_weight = g.op("Div", &[&sd, &root]);
    let from_out = g.op("Mul", &[out, &out_weight]);
    g.op(out_sign, &[&from_x, &from_out])
}

/// The model's input at per-row (broadcastable) `sigma`:
/// `x / sqrt(sigma^2 + sigma_data^2)`.
pub(super) fn model_input(
    g: &mut PolicyGraph<'_>,
    prediction: &Prediction,
    x: &str,
    sigma: &str,
) -> String {
    let s2 = g.op("Mul", &[sigma, sigma]);
    let sd2 = g.f(prediction.sigma_data * prediction.sigma_data);
    let v = g.op("Add", &[&s2, &sd2]);
    let r = g.op("Sqrt", &[&v]);
    g.op("Div", &[x, &r])
}

/// LCM's output (`ComfyUI`'s `LCM` sampling type, on the distilled table):
/// `denoised = c_out (x - sigma out) + c_skip x` with `c_skip = sd^2 /
/// (T^2 + sd^2)`, `c_out = T / sqrt(T^2 + sd^2)`, `T` ten times the model's
/// timestep at `sigma` and `sd` 0.5; so the estimate is
/// `x (1 - c_out - c_skip) / sigma + c_out out`.
fn lcm_to_epsilon(
    g: &mut PolicyGraph<'_>,
    family: &Family,
    x: &str,
    sigma: &str,
    out: &str,
) -> String {
    let sigma = g.cast(sigma, DataType::DOUBLE);
    let t = model_timestep(g, &family.sampling, &sigma);
    let t = g.cast(&t, DataType::DOUBLE);
    let scaling = g.d(LCM_TIMESTEP_SCALING);
    let big_t = g.op("Mul", &[&t, &scaling]);
    let sd2 = g.d(LCM_SIGMA_DATA * LCM_SIGMA_DATA);
    let t2 = g.op("Mul", &[&big_t, &big_t]);
    let total = g.op("Add", &[&t2, &sd2]);
    let c_skip = g.op("Div", &[&sd2, &total]);
    let root = g.op("Sqrt", &[&total]);
    let c_out = g.op("Div", &[&big_t, &root]);
    let one = g.d(1.0);
    let kept = g.op("Sub", &[&one, &c_out]);
    let kept = g.op("Sub", &[&kept, &c_skip]);
    let x_weight = g.op("Div", &[&kept, &sigma]);
    let x_weight = g.cast(&x_weight, DataType::FLOAT);
    let x_weight = g.rows(&x_weight);
    let c_out = g.cast(&c_out, DataType::FLOAT);
    let c_out = g.rows(&c_out);
    let from_x = g.op("Mul", &[x, &x_weight]);
    let from_out = g.op("Mul", &[out, &c_out]);
    g.op("Add", &[&from_x, &from_out])
}

/// The model's timestep input for per-row float64 `sigma` (`[batch]`), as
/// float32: the nearest table entry's index (times 20 plus 19 on LCM's
/// distilled table), a continuous model's `0.25 ln sigma` (`2 / pi
/// atan(sigma)` for `ModelSamplingContinuousV`), or a flow model's sigma
/// times its multiplier.
pub(super) fn model_timestep(
    g: &mut PolicyGraph<'_>,
    sampling: &ModelSampling,
    sigma: &str,
) -> String {
    match sampling {
        ModelSampling::Discrete {
            sigmas,
            timesteps: Timesteps::NearestIndex,
        } => nearest_index(g, sigma, sigmas),
        ModelSampling::Discrete {
            sigmas,
            timesteps: Timesteps::Distilled,
        } => {
            let index = nearest_index(g, sigma, sigmas);
            let stride = g.f(DISTILLED_STRIDE as f64);
            let offset = g.f((DISTILLED_STRIDE - 1) as f64);
            let scaled = g.op("Mul", &[&index, &stride]);
            g.op("Add", &[&scaled, &offset])
        }
        ModelSampling::Discrete {
            timesteps: Timesteps::Arctan,
            ..
        } => {
            // ONNX Runtime's Atan takes float32 only (ComfyUI's is float32
            // too).
            let sigma = g.cast(sigma, DataType::FLOAT);
            let angle = g.op("Atan", &[&sigma]);
            let factor = g.f(2.0 / std::f64::consts::PI);
            g.op("Mul", &[&angle, &factor])
        }
        ModelSampling::Flow { multiplier, .. } => {
            let m = g.d(*multiplier);
            let t = g.op("Mul", &[sigma, &m]);
            g.cast(&t, DataType::FLOAT)
        }
        ModelSampling::Discrete {
            timesteps: Timesteps::QuarterLog,
            ..
        } => {
            let log = g.op("Log", &[sigma]);
            let quarter = g.d(0.25);
            let t = g.op("Mul", &[&log, &quarter]);
            g.cast(&t, DataType::FLOAT)
        }
    }
}

/// The index of the table entry nearest per-row float64 `s_mid` in log
/// space (ComfyUI's discrete `timestep(sigma)`), as float32.
fn nearest_index(g: &mut PolicyGraph<'_>, s_mid: &str, sigmas: &[f64]) -> String {
    let logs: Vec<f64> = sigmas.iter().map(|s| s.ln()).collect();
    let table = g.b.f64s(&logs, &[1, logs.len() as i64]);
    let log_mid = g.op("Log", &[s_mid]);
    let column = g.b.vec_i64(&[-1, 1]);
    let log_mid = g.op("Reshape", &[&log_mid, &column]);
    let gap = g.op("Sub", &[&log_mid, &table]);
    let distance = g.op("Abs", &[&gap]);
    let nearest = g.op_with(
        "ArgMin",
        &[&distance],
        &[("axis", Attr::Int(1)), ("keepdims", Attr::Int(0))],
    );
    g.cast(&nearest, DataType::FLOAT)
}
