//! What a noise-predicting model's output means (ComfyUI's `EPS`,
//! `V_PREDICTION`, `EDM`, `X0`, `IMG_TO_IMG` and `IMG_TO_IMG_VELOCITY`
//! sampling types), as the lowering records
//! it in the schedule contract (`steps::to_epsilon` turns an output into
//! the estimate every solver steps with).

use serde_json::Value;

/// A model's prediction type and its `sigma_data`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    pub kind: PredictionKind,
    /// The data's standard deviation the model was trained with (1, or
    /// 0.5 for EDM models): its input is `x / sqrt(sigma^2 + sigma_data^2)`.
    pub sigma_data: f64,
}

/// What the model's output is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PredictionKind {
    /// The noise (`denoised = x - sigma out`), or a flow velocity.
    Epsilon,
    /// The velocity `v` of Salimans and Ho: `denoised = x sd^2 / (s^2 +
    /// sd^2) - out s sd / sqrt(s^2 + sd^2)`.
    V,
    /// EDM's preconditioned output: as `V` with the output's sign turned.
    Edm,
    /// The denoised sample itself.
    X0,
    /// The denoised sample itself, of the noisy sample taken unscaled
    /// (Lotus').
    ImgToImg,
    /// A flow model's velocity from the noisy sample to the picture,
    /// whole rather than per unit of sigma (`denoised = x - out`), its
    /// start latent taken without noise (Marigold's).
    ImgToImgVelocity,
    /// LCM's: epsilon scaled to its consistency boundary (see
    /// `estimate::to_epsilon`), on the distilled 50-timestep table.
    Lcm,
}

/// LCM's `sigma_data` in its boundary scaling (the model input keeps 1).
pub const LCM_SIGMA_DATA: f64 = 0.5;

/// LCM's timestep scaling in its boundary condition.
pub const LCM_TIMESTEP_SCALING: f64 = 10.0;

impl Prediction {
    /// An epsilon (or flow) model's.
    pub const EPSILON: Prediction = Prediction {
        kind: PredictionKind::Epsilon,
        sigma_data: 1.0,
    };

    /// The `prediction` contract parameter's name for the kind.
    pub fn name(&self) -> &'static str {
        match self.kind {
            PredictionKind::Epsilon => "epsilon",
            PredictionKind::V => "v_prediction",
            PredictionKind::Edm => "edm",
            PredictionKind::X0 => "x0",
            PredictionKind::ImgToImg => "img_to_img",
            PredictionKind::ImgToImgVelocity => "img_to_img_velocity",
            PredictionKind::Lcm => "lcm",
        }
    }

    /// Writes `prediction` and a `sigma_data` other than 1 into contract
    /// `parameters` (what [`Prediction::read`] reads).
    pub fn write(&self, parameters: &mut Value) {
        parameters["prediction"] = self.name().into();
        if self.sigma_data != 1.0 {
            parameters["sigma_data"] = self.sigma_data.into();
        }
    }

    /// Whether the model takes the sample as it is rather than scaled by
    /// `1 / sqrt(sigma^2 + sigma_data^2)` (flow models take it so too).
    pub fn unscaled_input(&self) -> bool {
        self.kind == PredictionKind::ImgToImg
    }

    /// Reads `prediction` (`epsilon` and `flow` step with the output as it
    /// is) and `sigma_data` (1 where absent) from contract parameters.
    pub fn read(parameters: &Value) -> Result<Prediction, String> {
        let kind = match parameters.get("prediction").and_then(Value::as_str) {
            None | Some("epsilon" | "flow") => PredictionKind::Epsilon,
            Some("v_prediction") => PredictionKind::V,
            Some("edm") => PredictionKind::Edm,
            Some("x0") => PredictionKind::X0,
            Some("img_to_img") => PredictionKind::ImgToImg,
            Some("img_to_img_velocity") => PredictionKind::ImgToImgVelocity,
            Some("lcm") => PredictionKind::Lcm,
            Some(other) => return Err(format!("unknown prediction `{other}`")),
        };
        let sigma_data = match parameters.get("sigma_data") {
            None => 1.0,
            Some(value) => value
                .as_f64()
                .filter(|v| *v > 0.0 && v.is_finite())
                .ok_or("its contract parameter `sigma_data` is not a positive number")?,
        };
        Ok(Prediction { kind, sigma_data })
    }
}
