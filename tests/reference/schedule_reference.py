"""Independent numpy reference for the schedules of ComfyUI's scheduler nodes.

Used by sampler_reference.py for packages whose `diffusion_schedule` contract
parameters state a scheduler node's own settings beside `spacing`:

* `KarrasScheduler` (`karras` with sigma_min, sigma_max, rho): Karras et al.
  (2022) eq. 5, `(max^(1/rho) + r (min^(1/rho) - max^(1/rho)))^rho` on a 0..1
  ramp of `steps` points.
* `ExponentialScheduler` (`exponential` with bounds): evenly spaced log sigma.
* `PolyexponentialScheduler` (`polyexponential`): `exp(r^rho (ln max - ln min) +
  ln min)` on a 1..0 ramp.
* `SDTurboScheduler` (`sd_turbo`, denoise): the model's sigma at timesteps 999,
  899, ..., 99, from index `10 - int(10 denoise)`, `steps` of them at most.
* `AlignYourStepsScheduler` (`align_your_steps`, model_type, denoise): the
  paper's eleven noise levels, log-linearly interpolated (numpy interp on the
  reversed logs) to `steps + 1` points where there are not that many, the last
  `round(steps * denoise) + 1` kept and the final one set to 0.
* `FlipSigmas` (`flip: true`): the list reversed, a first 0 made 0.0001.

Each ends in 0 (a flipped one starts near it) as ComfyUI's do.
"""
import math

import numpy as np

AYS_LEVELS = {
    "SD1": [14.6146412293, 6.4745760956, 3.8636745985, 2.6946151520, 1.8841921177, 1.3943805092,
            0.9642583904, 0.6523686016, 0.3977456272, 0.1515232662, 0.0291671582],
    "SDXL": [14.6146412293, 6.3184485287, 3.7681790315, 2.1811480769, 1.3405244945, 0.8620721141,
             0.5550693289, 0.3798540708, 0.2332364134, 0.1114188177, 0.0291671582],
    "SVD": [700.00, 54.5, 15.886, 7.977, 4.248, 1.789, 0.981, 0.403, 0.173, 0.034, 0.002],
}


def stated_schedule(params, steps, sigma_of_t):
    """The schedule a scheduler node's settings in `params` give, or None where
    `spacing` is a core scheduler over the model's own sigmas."""
    spacing = params["spacing"]
    num = lambda key: float(params[key])
    if spacing in ("karras", "exponential", "polyexponential") and "sigma_min" not in params:
        return None
    if spacing == "karras":
        lo, hi, rho = num("sigma_min"), num("sigma_max"), num("rho")
        ramp = np.linspace(0.0, 1.0, steps)
        sig = (hi ** (1 / rho) + ramp * (lo ** (1 / rho) - hi ** (1 / rho))) ** rho
    elif spacing == "exponential":
        sig = np.exp(np.linspace(math.log(num("sigma_max")), math.log(num("sigma_min")), steps))
    elif spacing == "polyexponential":
        lo, hi, rho = num("sigma_min"), num("sigma_max"), num("rho")
        ramp = np.linspace(1.0, 0.0, steps) ** rho
        sig = np.exp(ramp * (math.log(hi) - math.log(lo)) + math.log(lo))
    elif spacing == "sd_turbo":
        start = 10 - int(10 * num("denoise"))
        timesteps = (np.arange(1, 11) * 100 - 1)[::-1][start:start + steps]
        sig = np.array([sigma_of_t(float(t)) for t in timesteps])
    elif spacing == "align_your_steps":
        levels = np.array(AYS_LEVELS[params["model_type"]], dtype=np.float64)
        denoise = num("denoise")
        kept = steps if denoise >= 1.0 else round(steps * denoise)
        if steps + 1 != len(levels):
            xs = np.linspace(0, 1, len(levels))
            ys = np.log(levels[::-1])
            levels = np.exp(np.interp(np.linspace(0, 1, steps + 1), xs, ys))[::-1].copy()
        out = levels[-(kept + 1):].copy()
        out[-1] = 0.0
        return out
    else:
        return None
    return np.concatenate([np.asarray(sig, dtype=np.float64), [0.0]])


def flipped(sigmas):
    """FlipSigmas: reversed, a first 0 made 0.0001."""
    out = np.asarray(sigmas, dtype=np.float64)[::-1].copy()
    if out[0] == 0:
        out[0] = 0.0001
    return out
