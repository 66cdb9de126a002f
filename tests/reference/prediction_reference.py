"""Independent numpy reference for what a noise-predicting model's output means and
how its sigmas map to timesteps (ComfyUI comfy/model_sampling.py), for packages
whose `diffusion_schedule` contract parameters state a ModelSamplingDiscrete or
ModelSamplingContinuousEDM or ModelSamplingContinuousV:

* `model_sampling: discrete`: SD's scaled-linear table (betas from 0.00085 to 0.012,
  sqrt-linear), with `zero_terminal_snr: true` rescaled as Lin et al. (2024):
  sqrt(alpha_cumprod) shifted to end at 0 and scaled to keep its first value, the
  last alpha_cumprod then 4.8973451890853435e-08; stored as float32; the timestep of
  sigma is the nearest table index in log sigma, sigma(t) log-linear in between.
* `model_sampling: discrete_distilled` (LCM): that table's entries 19, 39, ..., 999;
  timestep = 20 * nearest index + 19, sigma(t) interpolated at (t - 19) / 20.
* `model_sampling: continuous_edm`: 1000 sigmas exp(linspace(ln sigma_min, ln sigma_max))
  (float32); timestep 0.25 ln sigma, sigma(t) = exp(4 t).
* `model_sampling: continuous_v` (ModelSamplingContinuousV, Stable Audio's): the same
  sigmas; timestep atan(sigma) * 2 / pi, sigma(t) = tan(t pi / 2).
* `model_sampling: sd3` (ModelSamplingSD3, flow matching): 1000 sigmas
  a t / (1 + (a - 1) t) at t = k / 1000 for the package's shift a; timestep
  1000 sigma; the model's input is x and its output a velocity v (denoised =
  x - sigma v, so the estimate (x - denoised) / sigma is v itself).
* `prediction`: `epsilon` (denoised = x - sigma out), `v_prediction` (denoised =
  x sd^2 / (s^2 + sd^2) - out s sd / sqrt(s^2 + sd^2)), `edm` (the same with + and
  sigma_data 0.5), `x0` (denoised = out), `lcm` (denoised = c_out (x - s out) + c_skip x,
  c_skip = 0.25 / (T^2 + 0.25), c_out = T / sqrt(T^2 + 0.25), T = 10 timestep(s)),
  `img_to_img` (denoised = out, of x unscaled); the model's input is otherwise
  x / sqrt(s^2 + sd^2).
"""
import math

import numpy as np


def table(params, shift=None):
    """(sigma table ascending, timestep_of_sigma, sigma_of_t, percent_to_sigma)
    for the package (`shift`: a flow model's)."""
    kind = params.get("model_sampling", "discrete")
    if kind == "sd3":
        a = float(shift)
        shifted = lambda t: a * t / (1.0 + (a - 1.0) * t)
        sigmas = np.asarray([shifted(k / 1000.0) for k in range(1, 1001)], dtype=np.float64)
        percent = lambda p: 1.0 if p <= 0 else (0.0 if p >= 1 else shifted(1.0 - p))
        return sigmas, (lambda s: s * 1000.0), (lambda t: shifted(t / 1000.0)), percent
    if kind in ("continuous_edm", "continuous_v"):
        lo, hi = float(params["model_sigma_min"]), float(params["model_sigma_max"])
        sigmas = np.exp(np.linspace(math.log(lo), math.log(hi), 1000)).astype(np.float32).astype(np.float64)
        percent = lambda p: math.exp((math.log(hi) - math.log(lo)) * (1.0 - p) + math.log(lo))
        if kind == "continuous_v":
            return sigmas, (lambda s: math.atan(s) * 2.0 / math.pi), (lambda t: math.tan(t * math.pi / 2.0)), percent
        return sigmas, (lambda s: 0.25 * math.log(s)), (lambda t: math.exp(t / 0.25)), percent
    if kind not in ("discrete", "discrete_distilled"):
        raise ValueError(f"only discrete, distilled and continuous tables are implemented, not {kind!r}")
    # ComfyUI's make_beta_schedule: "linear" (SD's) is evenly spaced in
    # square root, "sqrt_linear" (AnimateDiff's) evenly spaced.
    end = float(params.get("linear_end", 0.012))
    if params.get("beta_schedule", "linear") == "sqrt_linear":
        betas = np.linspace(0.00085, end, 1000, dtype=np.float64)
    else:
        betas = np.linspace(math.sqrt(0.00085), math.sqrt(end), 1000, dtype=np.float64) ** 2
    alphas_cumprod = np.cumprod(1.0 - betas)
    sigmas = np.sqrt((1.0 - alphas_cumprod) / alphas_cumprod)
    if params.get("zero_terminal_snr") == "true":
        root = np.sqrt(1.0 / (sigmas * sigmas + 1.0))
        first, last = root[0], root[-1]
        root = (root - last) * first / (first - last)
        alphas_bar = root ** 2
        alphas_bar[-1] = 4.8973451890853435e-08
        sigmas = np.sqrt((1.0 - alphas_bar) / alphas_bar)
    sigmas = sigmas.astype(np.float32).astype(np.float64)
    # LCM's ModelSamplingDiscreteDistilled keeps timesteps 19, 39, ..., 999.
    skip, offset = (20, 19) if kind == "discrete_distilled" else (1, 0)
    sigmas = sigmas[offset::skip]
    logs = np.log(sigmas)

    def timestep_of_sigma(s):
        return float(np.argmin(np.abs(logs - math.log(s))) * skip + offset)

    def sigma_of_t(t):
        t = min(max((t - offset) / skip, 0.0), len(sigmas) - 1.0)
        low, high = int(math.floor(t)), int(math.ceil(t))
        w = t - low
        return math.exp((1.0 - w) * logs[low] + w * logs[high])

    return sigmas, timestep_of_sigma, sigma_of_t, (lambda p: sigma_of_t((1.0 - p) * 999.0))


class Prediction:
    """The package's prediction type and sigma_data (LCM's model input keeps 1;
    its boundary scaling takes 0.5 and ten times the model's timestep)."""

    def __init__(self, params, timestep_of_sigma):
        self.kind = params.get("prediction", "epsilon")
        if self.kind not in ("epsilon", "v_prediction", "edm", "x0", "img_to_img", "lcm", "flow"):
            raise ValueError(f"unsupported prediction {self.kind!r}")
        self.sigma_data = float(params.get("sigma_data", 1.0))
        self.timestep_of_sigma = timestep_of_sigma

    def model_input(self, x, sigma):
        if self.kind in ("flow", "img_to_img"):
            return x
        return x / math.sqrt(sigma ** 2 + self.sigma_data ** 2)

    def to_epsilon(self, x, sigma, out):
        """The estimate (x - denoised) / sigma of output `out` at (x, sigma)."""
        if self.kind in ("epsilon", "flow"):
            return out
        sd = self.sigma_data
        if self.kind in ("x0", "img_to_img"):
            denoised = out
        elif self.kind == "lcm":
            t = self.timestep_of_sigma(sigma) * 10.0
            c_skip = 0.25 / (t ** 2 + 0.25)
            c_out = t / math.sqrt(t ** 2 + 0.25)
            denoised = c_out * (x - out * sigma) + c_skip * x
        else:
            sign = -1.0 if self.kind == "v_prediction" else 1.0
            denoised = x * sd ** 2 / (sigma ** 2 + sd ** 2) + sign * out * sigma * sd / math.sqrt(sigma ** 2 + sd ** 2)
        return (x - denoised) / sigma
