#!/usr/bin/env python3
"""Independent numpy reference for the diffusion loop of an imported ComfyUI package.

Used by the tests as a cross-check of the policies that `wfstudio import-comfyui`
synthesizes (`policies/*.onnx`).  This script never reads or runs those policies:
every step of the sampler is recomputed here with numpy from the published
formulas, and onnxruntime is used only to run the three model files
(`text_encoder/model.onnx`, `denoiser/model.onnx`, `vae_decoder/model.onnx`).

    python tests/reference/sampler_reference.py PACKAGE_DIR OUT_DIR [SAMPLER SCHEDULER]

writes OUT_DIR/latent.npy (float32 [batch, C, h, w]) and OUT_DIR/image.npy.
Given SAMPLER and SCHEDULER (the ComfyUI graph's), it first checks that the
package names that solver and spacing: the formulas then follow the graph,
not only the package.

Formulas implemented (txt2img, full denoise or a KSamplerAdvanced window,
epsilon prediction; the batch is the recipe prompts' rows, each row its own
noise):

* ComfyUI `ModelSamplingDiscrete` (SD1.x "scaled_linear" betas): sigma table
  stored as float32, `sigma(t)` by log-linear interpolation and `timestep(sigma)`
  the nearest table index (comfy/model_sampling.py).
* Schedulers `normal`, `karras` (Karras et al. 2022, rho = 7), `simple`,
  `exponential`, `ddim_uniform`, `sgm_uniform`, `kl_optimal`, `beta` (alpha = beta = 0.6, its
  quantiles by quadrature and bisection) and `linear_quadratic` (comfy/samplers.py,
  k-diffusion sampling.py), each ending in 0; the scheduler nodes' own schedules and
  FlipSigmas from schedule_reference.py.
* Noise: the counter-hash + Box-Muller generator of the `onnx-genai.counter-rng`
  contract (SplitMix64 of (seed, offset, element index)).
* Classifier-free guidance: uncond + (cond - uncond) * cfg.
* Solvers from k-diffusion sampling.py: `euler` (also used for ComfyUI's
  `ddim`), `euler_ancestral` (eta = 1, get_ancestral_step), `dpmpp_2m`,
  `lcm`, `ddpm`, `res_multistep(_ancestral)`, `gradient_estimation`, `ipndm`,
  `ipndm_v`, `lms` (its weights by exact polynomial integration), `deis` (DEIS's "tab" weights by
  ComfyUI's own 10000-point sum), the CFG++ forms (`euler_cfg_pp`, `euler_ancestral_cfg_pp`,
  `dpmpp_2m_cfg_pp`, `res_multistep*_cfg_pp`, `gradient_estimation_cfg_pp`,
  stepping along the unconditional estimate) and the DPM-Solver++ 2M/3M SDE samplers (their fresh noise
  the counter-hash noise at offset step + 1 in place of a Brownian tree), ComfyUI's `er_sde` (ER-SDE-Solver-3:
  its default noise scaler, 200-point stage integrals, fresh noise at offset step + 1), and ComfyUI's UniPC
  (`uni_pc`, `uni_pc_bh2`) in its own VP form, ComfyUI's SA-Solver (`sa_solver`: its stochastic
  Adams predictor-corrector with the Vandermonde solve, noise at offset step + 1); the two-call samplers `heun`, `dpm_2`,
  `dpm_2_ancestral`, `dpmpp_2s_ancestral`, `dpmpp_sde` and `seeds_2` (their midpoint noise the
  counter noise at offset -(step + 1)), which call the model twice per step (two_call_reference.py), and the three-call
  samplers `heunpp2`, `seeds_3`, `dpm_fast` and the adaptive `dpm_adaptive` from three_call_reference.py.
* Model input scaling for epsilon models: x / sqrt(sigma^2 + 1); the initial
  latent is noise * sqrt(1 + sigma_0^2) where sigma_0 is sigma_max, else noise * sigma_0.
  A stated ModelSamplingDiscrete / ModelSamplingContinuousEDM (v_prediction, edm, x0,
  zero terminal SNR, continuous tables) from prediction_reference.py.

Only the standard library, numpy and onnxruntime are needed; the package's
inference_metadata.yaml is read with a tiny indentation-based lookup so that
PyYAML is not required.
"""
import json
import math
import os
import re
import sys

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from multistep_reference import deis_weights, sample_sa_solver, sample_unipc  # noqa: E402
from schedule_reference import flipped, stated_schedule  # noqa: E402
from three_call_reference import (THREE_CALL_SAMPLERS, sample_dpm_adaptive, sample_dpm_fast,  # noqa: E402
                                  three_call_step)
from two_call_reference import (SNR_SAMPLERS, TWO_CALL_SAMPLERS,  # noqa: E402
                                rf_ancestral_step, two_call_step)
import prediction_reference  # noqa: E402


# --- reading the package --------------------------------------------------------

def yaml_block(text, *keys):
    """Return the lines nested under the mapping path `keys` (plain block YAML only)."""
    lines = text.splitlines()
    start, indent = 0, -1
    for key in keys:
        pat = re.compile(r"^(\s*)" + re.escape(key) + r":\s*(.*)$")
        for n in range(start, len(lines)):
            m = pat.match(lines[n])
            if m and len(m.group(1)) > indent:
                start, indent = n + 1, len(m.group(1))
                break
            if lines[n].strip() and len(lines[n]) - len(lines[n].lstrip()) <= indent:
                raise KeyError(keys)
        else:
            raise KeyError(keys)
    out = []
    for line in lines[start:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        out.append(line)
    return out


def yaml_scalars(lines):
    """Scalar `key: value` pairs directly under a block (first indentation level)."""
    body = [l for l in lines if l.strip()]
    level = min(len(l) - len(l.lstrip()) for l in body)
    pairs = (re.match(r"^\s*([\w.]+):\s*(\S.*)$", l) for l in body
             if len(l) - len(l.lstrip()) == level)
    return {m.group(1): m.group(2).strip().strip("'\"") for m in pairs if m}


def read_package(pkg):
    with open(os.path.join(pkg, "inference_metadata.yaml")) as f:
        meta = f.read()
    wf = ("pipeline", "workflow")
    comp = wf + ("components",)
    sched = yaml_scalars(yaml_block(meta, *comp, "diffusion_schedule", "contract", "parameters"))
    shape = yaml_scalars(yaml_block(meta, *comp, "latent_row_shape", "contract", "parameters"))
    seed = int(yaml_scalars(yaml_block(meta, *wf, "inputs", "request.seed"))["default"])
    cfg = float(yaml_scalars(yaml_block(meta, *wf, "inputs", "request.guidance_scale"))["default"])
    with open(os.path.join(pkg, "recipes", "default.json")) as f:
        inputs = json.load(f)["inputs"]

    def tensor(name):
        t = inputs[name]
        return np.asarray(t["data"], dtype=t["dtype"]).reshape(t["shape"])

    scale = int(shape["scale"])
    row = (int(shape["channels"]), int(shape["height"]) // scale, int(shape["width"]) // scale)
    # A KSamplerAdvanced window: its start and end steps and whether the end
    # fully denoises (the solver's final_step).
    window = None
    if "request.start_step:" in meta:
        start = int(yaml_scalars(yaml_block(meta, *wf, "inputs", "request.start_step"))["default"])
        end = int(yaml_scalars(yaml_block(meta, *wf, "inputs", "request.end_step"))["default"])
        solver = yaml_scalars(yaml_block(meta, *comp, "solver_step", "contract", "parameters"))
        window = (start, end, solver.get("final_step") == "full_denoise")
    # A flow model's shift (SD3's constant one).
    shift = None
    if "request.flow_shift:" in meta:
        shift = float(yaml_scalars(yaml_block(meta, *wf, "inputs", "request.flow_shift"))["default"])
    return dict(solver=sched["solver"], spacing=sched["spacing"], schedule=sched, shift=shift,
                prediction=sched["prediction"], model_sampling=sched["model_sampling"],
                steps=int(sched["steps"]), discard=sched.get("discard_penultimate") == "true", seed=seed, cfg=cfg, row=row, window=window,
                ids=tensor("request.input_ids"), neg_ids=tensor("request.negative_input_ids"))


# --- model sampling (ComfyUI ModelSamplingDiscrete, SD1.x) ----------------------

betas = np.linspace(math.sqrt(0.00085), math.sqrt(0.012), 1000, dtype=np.float64) ** 2
alphas_cumprod = np.cumprod(1.0 - betas)
SIGMAS = np.sqrt((1.0 - alphas_cumprod) / alphas_cumprod).astype(np.float32).astype(np.float64)
LOG_SIGMAS = np.log(SIGMAS)
SIGMA_MIN, SIGMA_MAX = SIGMAS[0], SIGMAS[-1]


def sigma_of_t(t):
    low, high = int(math.floor(t)), int(math.ceil(t))
    w = t - low
    return math.exp((1.0 - w) * LOG_SIGMAS[low] + w * LOG_SIGMAS[high])


def timestep_of_sigma(sigma):
    """ComfyUI's ModelSamplingDiscrete.timestep: the nearest table index in log sigma."""
    return float(np.argmin(np.abs(LOG_SIGMAS - math.log(sigma))))


def schedule(spacing, steps, sigmas=None, sigma_of_t=sigma_of_t, timestep_of_sigma=timestep_of_sigma,
             beta_shapes=(0.6, 0.6)):
    """ComfyUI's scheduler `spacing` over `steps` steps, with a final 0 (float64).

    The model sampling defaults to the discrete SD 1.x table above; another one
    (flow matching, say) passes its own ascending sigma table `sigmas` and its
    `sigma_of_t` / `timestep_of_sigma` (timesteps on the table's 0..1000 scale)."""
    table = SIGMAS if sigmas is None else np.asarray(sigmas, dtype=np.float64)
    sigma_min, sigma_max = table[0], table[-1]
    if spacing == "normal":
        ts = np.linspace(timestep_of_sigma(sigma_max), timestep_of_sigma(sigma_min), steps)
        sig = [sigma_of_t(t) for t in ts]
    elif spacing == "karras":
        ramp = np.linspace(0.0, 1.0, steps)
        lo, hi = sigma_min ** (1 / 7), sigma_max ** (1 / 7)
        sig = list((hi + ramp * (lo - hi)) ** 7)
    elif spacing == "simple":
        ss = len(table) / steps
        sig = [table[-(1 + int(x * ss))] for x in range(steps)]
    elif spacing == "exponential":
        sig = list(np.exp(np.linspace(math.log(sigma_max), math.log(sigma_min), steps)))
    elif spacing == "ddim_uniform":
        stride = max(len(table) // steps, 1)
        sig = [table[i] for i in range(1, len(table), stride)][::-1]
    elif spacing == "sgm_uniform":
        ts = np.linspace(timestep_of_sigma(sigma_max), timestep_of_sigma(sigma_min), steps + 1)[:-1]
        sig = [sigma_of_t(t) for t in ts]
    elif spacing == "kl_optimal":
        r = np.arange(steps, dtype=np.float64) / (steps - 1)
        sig = list(np.tan(r * math.atan(sigma_min) + (1 - r) * math.atan(sigma_max)))
    elif spacing == "beta":
        ts = 1 - np.linspace(0, 1, steps, endpoint=False)
        picked, last = [], -1
        for t in np.rint(np.array([beta_ppf(x, *beta_shapes) for x in ts]) * (len(table) - 1)):
            if t != last:
                picked.append(table[int(t)])
            last = t
        sig = picked
    elif spacing == "linear_quadratic":
        # Mochi's schedule (threshold noise 0.025, the first half linear).
        if steps == 1:
            return np.array([1.0, 0.0]) * sigma_max
        lin = steps // 2
        quad = steps - lin
        diff = lin - 0.025 * steps
        qc = diff / (lin * quad ** 2)
        lc = 0.025 / lin - 2 * diff / quad ** 2
        rising = [i * 0.025 / lin for i in range(lin)]
        rising += [qc * i * i + lc * i + qc * lin * lin for i in range(lin, steps)] + [1.0]
        return np.asarray([(1.0 - x) * sigma_max for x in rising], dtype=np.float64)
    else:
        raise ValueError(f"unsupported scheduler {spacing!r}")
    return np.asarray(list(sig) + [0.0], dtype=np.float64)


def beta_ppf(p, a, b):
    """The beta(a, b) quantile by bisection on its CDF, the CDF by 64-point
    Gauss-Legendre quadrature after t = u^(1/a) (which removes the t^(a-1)
    singularity; above 1/2 the mirrored integral removes (1-t)^(b-1))."""
    nodes, weights = np.polynomial.legendre.leggauss(64)

    def lower(x, a, b):
        # integral_0^x t^(a-1) (1-t)^(b-1) dt = (1/a) integral_0^(x^a) (1 - u^(1/a))^(b-1) du
        top = x ** a
        u = 0.5 * top * (nodes + 1.0)
        return 0.5 * top * np.sum(weights * (1.0 - u ** (1.0 / a)) ** (b - 1.0)) / a

    whole = lower(0.5, a, b) + lower(0.5, b, a)
    cdf = lambda x: lower(x, a, b) / whole if x <= 0.5 else 1.0 - lower(1.0 - x, b, a) / whole
    if p <= 0.0 or p >= 1.0:
        return min(max(p, 0.0), 1.0)
    if a == b and p == 0.5:
        return 0.5  # the median of a symmetric law, exactly (as SciPy returns it)
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return 0.5 * (lo + hi)


# --- counter-hash noise ---------------------------------------------------------

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z):
    """SplitMix64's finaliser (Steele, Lea and Flood 2014) on a uint64 array."""
    z = z ^ (z >> np.uint64(30))
    z = z * np.uint64(0xBF58476D1CE4E5B9)
    z = z ^ (z >> np.uint64(27))
    z = z * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def noise(seed, offset, row, rows=1):
    """Standard normal noise [rows, *row]: row b's key mix(mix(seed + G) ^ offset),
    element n = b * count + i hashed as mix(key + G * (n + 1)); the top 24 bits and
    the 24 below them are the Box-Muller uniforms (bits + 0.5) / 2^24."""
    seed_u = np.asarray([(seed + GOLDEN) & MASK64], dtype=np.uint64)
    key = mix64(mix64(seed_u) ^ np.asarray([offset & MASK64], dtype=np.uint64))
    count = int(np.prod(row))
    n = np.arange(1, rows * count + 1, dtype=np.uint64)
    h = mix64(key + np.uint64(GOLDEN) * n)
    scale = np.float32(2.0 ** -24)
    u1 = ((h >> np.uint64(40)).astype(np.float32) + np.float32(0.5)) * scale
    u2 = (((h >> np.uint64(16)) & np.uint64(0xFFFFFF)).astype(np.float32) + np.float32(0.5)) * scale
    u1, u2 = u1.astype(np.float64), u2.astype(np.float64)
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    return z.reshape((rows,) + tuple(row))


def first_sample_scale(sigma, sigma_max=None):
    """ComfyUI's noise_scaling for epsilon models: sqrt(1 + sigma^2) where the run
    starts at sigma_max (math.isclose, rel_tol 1e-5, or above), else sigma."""
    sigma_max = SIGMA_MAX if sigma_max is None else sigma_max
    at_max = math.isclose(sigma, sigma_max, rel_tol=1e-5) or sigma > sigma_max
    return math.sqrt(1.0 + sigma ** 2) if at_max else sigma


# --- the sampler ----------------------------------------------------------------

def run(pkg, out_dir, expected=None):
    p = read_package(pkg)
    if expected is not None and (p["solver"], p["spacing"]) != expected:
        raise ValueError(f"the package runs {(p['solver'], p['spacing'])}, the graph asked for {expected}")
    # The package's sigma table, timesteps and prediction (SD's epsilon table
    # unless a ModelSampling node states another).
    global SIGMAS, LOG_SIGMAS, SIGMA_MIN, SIGMA_MAX, sigma_of_t, timestep_of_sigma
    SIGMAS, timestep_of_sigma, sigma_of_t, percent_to_sigma = prediction_reference.table(p["schedule"], p["shift"])
    LOG_SIGMAS = np.log(SIGMAS)
    SIGMA_MIN, SIGMA_MAX = SIGMAS[0], SIGMAS[-1]
    prediction = prediction_reference.Prediction(p["schedule"], timestep_of_sigma)
    session = lambda name: ort.InferenceSession(os.path.join(pkg, name, "model.onnx"),
                                                providers=["CPUExecutionProvider"])
    text_encoder, denoiser, vae = session("text_encoder"), session("denoiser"), session("vae_decoder")
    cond = text_encoder.run(["encoder_hidden_states"], {"input_ids": p["ids"]})[0]
    uncond = text_encoder.run(["encoder_hidden_states"], {"input_ids": p["neg_ids"]})[0]

    steps, solver, seed, cfg = p["steps"], p["solver"], p["seed"], p["cfg"]
    if p["discard"]:
        # KSampler's DISCARD_PENULTIMATE_SIGMA_SAMPLERS (dpm_2, dpm_2_ancestral,
        # uni_pc, uni_pc_bh2): the schedule for steps + 1, its penultimate
        # sigma dropped.
        sigmas = schedule(p["spacing"], steps + 1, sigma_of_t=sigma_of_t, timestep_of_sigma=timestep_of_sigma)
        sigmas = np.concatenate([sigmas[:-2], sigmas[-1:]])
    else:
        sigmas = stated_schedule(p["schedule"], steps, sigma_of_t)
        if sigmas is None:
            shapes = (float(p["schedule"].get("alpha", 0.6)), float(p["schedule"].get("beta", 0.6)))
            sigmas = schedule(p["spacing"], steps, sigma_of_t=sigma_of_t,
                              timestep_of_sigma=timestep_of_sigma, beta_shapes=shapes)
    if "first_sigma" in p["schedule"]:
        # SetFirstSigma, before any flip.
        sigmas = np.concatenate([[float(p["schedule"]["first_sigma"])], sigmas[1:]])
    if p["schedule"].get("flip") == "true":
        sigmas = flipped(sigmas)
    # ComfyUI keeps a run's sigmas as float32 tensors (so does the package):
    # the steps' arithmetic is float64 from there. It matters where a
    # two-call sampler's midpoint falls exactly between two table sigmas
    # (its nearest timestep is then decided by the last bit).
    sigmas = sigmas.astype(np.float32).astype(np.float64)
    # Fresh noise is drawn at offset (schedule step + 1), the step counted
    # from the schedule's start, not the window's.
    first_step = 0
    if p["window"] is not None:
        # KSamplerAdvanced runs sigmas[start:end + 1], the last set to 0 when
        # it fully denoises.
        start, end, full = p["window"]
        first_step = start
        sigmas = sigmas[start:min(end, len(sigmas) - 1) + 1].copy()
        if full:
            sigmas[-1] = 0.0
    rows = p["ids"].shape[0]
    flow = p["prediction"] == "flow"
    # A flow model's first sample is sigma_0 noise (its empty latent is 0).
    x = noise(seed, 0, p["row"], rows) * (sigmas[0] if flow else first_sample_scale(sigmas[0]))
    # The model's half log-SNR lambda = ln(alpha / sigma) and its inverse:
    # -ln sigma for epsilon models, ln((1 - sigma) / sigma) for flow models.
    if flow:
        snr = (lambda s: math.log((1.0 - s) / s), lambda l: 1.0 / (1.0 + math.exp(l)))
    else:
        snr = (lambda s: -math.log(s), lambda l: math.exp(-l))
    lam = snr[0]
    alpha_of = lambda s: s * math.exp(lam(s))
    if flow and solver in SNR_SAMPLERS and sigmas[0] >= 1:
        # offset_first_sigma_for_snr: percent_to_sigma(1e-4), held as float32.
        sigmas = sigmas.copy()
        sigmas[0] = float(np.float32(percent_to_sigma(1e-4)))

    def guided(x, sigma):
        """The guided estimate d (dx/dsigma) of the model at (x, sigma)."""
        feed = {"sample": prediction.model_input(x, sigma).astype(np.float32),
                "timestep": np.full([rows], timestep_of_sigma(sigma), dtype=np.float32)}
        eps_u = denoiser.run(None, dict(feed, encoder_hidden_states=uncond))[0].astype(np.float64)
        eps_c = denoiser.run(None, dict(feed, encoder_hidden_states=cond))[0].astype(np.float64)
        guided.unconditional = prediction.to_epsilon(x, sigma, eps_u)
        return prediction.to_epsilon(x, sigma, eps_u + (eps_c - eps_u) * cfg)

    if solver in ("uni_pc", "uni_pc_bh2"):
        x = sample_unipc(lambda x, sigma: x - sigma * guided(x, sigma), x, sigmas,
                         "bh2" if solver == "uni_pc_bh2" else "bh1")
    if solver in ("sa_solver", "sa_solver_pece"):
        # The stochastic interval: percent_to_sigma of 0.2 and 0.8.
        interval = (percent_to_sigma(0.2), percent_to_sigma(0.8))
        x = sample_sa_solver(lambda x, sigma: x - sigma * guided(x, sigma), x, sigmas,
                             lambda offset: noise(seed, offset, p["row"], rows), first_step,
                             interval, use_pece=solver == "sa_solver_pece", lam=lam)
    if solver == "dpm_fast":
        x = sample_dpm_fast(x, sigmas, guided)
    if solver == "dpm_adaptive":
        x = sample_dpm_adaptive(x, sigmas, guided)
    denoised_prev = None
    denoised_1 = denoised_2 = h_1 = h_2 = old_d = old_sigma_down = None
    er_old = er_old_d = None
    buffer = []
    # Schedules that pick table entries (ddim_uniform, beta) may run more or
    # fewer steps than asked for.
    for i in range(0 if solver.startswith(("uni_pc", "sa_solver", "dpm_fast", "dpm_adaptive")) else len(sigmas) - 1):
        sigma, sigma_next = sigmas[i], sigmas[i + 1]
        d = guided(x, sigma)
        # CFG++ samplers step along the unconditional estimate.
        d_u = guided.unconditional
        denoised_u = x - sigma * d_u
        denoised = x - sigma * d
        if solver in ("euler", "ddim"):
            x = x + d * (sigma_next - sigma)
        elif solver == "euler_ancestral" and flow:
            # ComfyUI's sample_euler_ancestral_RF (eta 1).
            if sigma_next == 0:
                x = denoised
            else:
                sigma_down, renoise, rescale = rf_ancestral_step(sigma, sigma_next)
                ratio = sigma_down / sigma
                x = rescale * (ratio * x + (1 - ratio) * denoised) \
                    + noise(seed, first_step + i + 1, p["row"], rows) * renoise
        elif solver == "euler_ancestral":
            sigma_up = min(sigma_next,
                           math.sqrt(sigma_next ** 2 * (sigma ** 2 - sigma_next ** 2) / sigma ** 2))
            sigma_down = math.sqrt(sigma_next ** 2 - sigma_up ** 2)
            x = x + d * (sigma_down - sigma) + noise(seed, first_step + i + 1, p["row"], rows) * sigma_up
        elif solver == "er_sde":
            # ComfyUI's ER-SDE-Solver-3 (max_stage 3, noise scaler
            # x (e^(x^0.3) + 10), 200 integration points) over the model's
            # er_lambda = e^-lambda = sigma / alpha (sigma itself, alpha 1, on
            # epsilon models); noise at offset i + 1.
            erl = lambda s: math.exp(-lam(s))
            if sigma_next == 0:
                x = denoised
            else:
                phi = lambda v: v * (np.exp(v ** 0.3) + 10.0)
                el_s, el_t = erl(sigma), erl(sigma_next)
                alpha_s, alpha_t = sigma / el_s, sigma_next / el_t
                r = phi(el_t) / phi(el_s)
                x = alpha_t / alpha_s * r * x + alpha_t * (1 - r) * denoised
                if i >= 1:
                    dt = el_t - el_s
                    spacing = -dt / 200.0
                    points = el_t + np.arange(200, dtype=np.float64) * spacing
                    s_int = np.sum(1 / phi(points)) * spacing
                    er_d = (denoised - er_old) / (el_s - erl(sigmas[i - 1]))
                    x = x + alpha_t * (dt + s_int * phi(el_t)) * er_d
                    if i >= 2:
                        s_u = np.sum((points - el_s) / phi(points)) * spacing
                        er_u = (er_d - er_old_d) / ((el_s - erl(sigmas[i - 2])) / 2)
                        x = x + alpha_t * (dt ** 2 / 2 + s_u * phi(el_t)) * er_u
                    er_old_d = er_d
                spread = el_t ** 2 - (el_s * r) ** 2
                x = x + alpha_t * noise(seed, first_step + i + 1, p["row"], rows) * math.sqrt(max(spread, 0.0))
            er_old = denoised
        elif solver == "dpmpp_2m":
            if sigma_next == 0:
                x = denoised
            else:
                h = -math.log(sigma_next) + math.log(sigma)
                if denoised_prev is None:
                    target = denoised
                else:
                    r = (-math.log(sigma) + math.log(sigmas[i - 1])) / h
                    target = (1 + 1 / (2 * r)) * denoised - (1 / (2 * r)) * denoised_prev
                x = (sigma_next / sigma) * x - math.expm1(-h) * target
            denoised_prev = denoised
        elif solver.startswith(("dpmpp_2m_sde", "dpmpp_3m_sde")):
            # k-diffusion's DPM-Solver++(2M/3M) SDE, eta 1, in the model's
            # half log-SNR (alpha_t = sigma' e^lambda'); noise at offset i + 1.
            if sigma_next == 0:
                x = denoised
            else:
                h = lam(sigma_next) - lam(sigma)
                h_eta = 2.0 * h
                alpha_t = alpha_of(sigma_next)
                x = sigma_next / sigma * math.exp(-h) * x + alpha_t * (-math.expm1(-h_eta)) * denoised
                phi_2 = math.expm1(-h_eta) / h_eta + 1.0
                if solver.startswith("dpmpp_3m_sde") and h_2 is not None:
                    r0, r1 = h_1 / h, h_2 / h
                    d1_0 = (denoised - denoised_1) / r0
                    d1_1 = (denoised_1 - denoised_2) / r1
                    d1 = d1_0 + (d1_0 - d1_1) * r0 / (r0 + r1)
                    d2 = (d1_0 - d1_1) / (r0 + r1)
                    phi_3 = phi_2 / h_eta - 0.5
                    x = x + alpha_t * (phi_2 * d1 - phi_3 * d2)
                elif h_1 is not None:
                    r = h_1 / h
                    if solver.startswith("dpmpp_2m_sde_heun"):
                        x = x + alpha_t * (-math.expm1(-h_eta) / (-h_eta) + 1.0) * (1.0 / r) * (denoised - denoised_1)
                    elif solver.startswith("dpmpp_2m_sde"):
                        x = x + 0.5 * alpha_t * (-math.expm1(-h_eta)) * (1.0 / r) * (denoised - denoised_1)
                    else:
                        x = x + alpha_t * phi_2 * (denoised - denoised_1) / r
                x = x + noise(seed, first_step + i + 1, p["row"], rows) * sigma_next * math.sqrt(-math.expm1(-h_eta))
            denoised_1, denoised_2 = denoised, denoised_1
            h_1, h_2 = (h if sigma_next != 0 else h_1), h_1
        elif solver in ("euler_cfg_pp", "euler_ancestral_cfg_pp"):
            # ComfyUI's euler_ancestral_cfg_pp (eta 1; euler_cfg_pp eta 0),
            # alpha = sigma e^lambda: 1 for epsilon models, 1 - sigma for
            # flow models (numpy float64, so that alpha 0 at sigma 1 gives
            # inf as torch does, and get_ancestral_step's min keeps sigma_to
            # over a NaN).
            if sigma_next == 0:
                x = denoised
            else:
                alpha_s = np.float64(1.0 - sigma if flow else 1.0)
                alpha_t = np.float64(1.0 - sigma_next if flow else 1.0)
                if solver == "euler_ancestral_cfg_pp":
                    with np.errstate(divide="ignore", invalid="ignore"):
                        s_from, s_to = np.float64(sigma) / alpha_s, np.float64(sigma_next) / alpha_t
                        up = np.sqrt(s_to ** 2 * (s_from ** 2 - s_to ** 2) / s_from ** 2)
                    sigma_up = up if up < s_to else s_to
                    sigma_down = alpha_t * math.sqrt(s_to ** 2 - sigma_up ** 2)
                else:
                    sigma_down, sigma_up = sigma_next, 0.0
                x = alpha_t * denoised + sigma_down * (x - alpha_s * denoised_u) / sigma
                if sigma_up:
                    x = x + alpha_t * noise(seed, first_step + i + 1, p["row"], rows) * sigma_up
        elif solver == "dpmpp_2m_cfg_pp":
            h = math.log(sigma) - math.log(sigma_next) if sigma_next > 0 else math.inf
            if denoised_1 is None or sigma_next == 0:
                mix = -math.exp(-h) * denoised_u
            else:
                r = (math.log(sigmas[i - 1]) - math.log(sigma)) / h
                mix = -math.exp(-h) * denoised_u - math.expm1(-h) * (1 / (2 * r)) * (denoised - denoised_1)
            x = denoised + mix + math.exp(-h) * x
            denoised_1 = denoised_u
        elif solver.startswith("res_multistep"):
            # k-diffusion's res_multistep (eta 0) / _ancestral (eta 1), and
            # their CFG++ forms.
            cfg_pp = solver.endswith("_cfg_pp")
            eta = 1.0 if solver.startswith("res_multistep_ancestral") else 0.0
            if eta:
                sigma_up = min(sigma_next, math.sqrt(sigma_next ** 2 * (sigma ** 2 - sigma_next ** 2) / sigma ** 2))
                sigma_down = math.sqrt(sigma_next ** 2 - sigma_up ** 2)
            else:
                sigma_down, sigma_up = sigma_next, 0.0
            if sigma_down == 0 or denoised_1 is None:
                if cfg_pp:
                    x = denoised + (x - denoised_u) / sigma * sigma_down
                else:
                    x = x + d * (sigma_down - sigma)
            else:
                t, t_old = -math.log(sigma), -math.log(old_sigma_down)
                t_next, t_prev = -math.log(sigma_down), -math.log(sigmas[i - 1])
                h = t_next - t
                c2 = (t_prev - t_old) / h
                phi1 = math.expm1(-h) / -h
                phi2 = (phi1 - 1.0) / -h
                b1, b2 = phi1 - phi2 / c2, phi2 / c2
                if cfg_pp:
                    x = x + (denoised - denoised_u)
                    x = math.exp(-h) * x + h * (b1 * denoised_u + b2 * denoised_1)
                else:
                    x = math.exp(-h) * x + h * (b1 * denoised + b2 * denoised_1)
            if sigma_next > 0:
                x = x + noise(seed, first_step + i + 1, p["row"], rows) * sigma_up
            denoised_1, old_sigma_down = (denoised_u if cfg_pp else denoised), sigma_down
        elif solver.startswith("gradient_estimation"):
            cfg_pp = solver.endswith("_cfg_pp")
            slope = (x - denoised_u) / sigma if cfg_pp else d
            if sigma_next == 0:
                x = denoised
            else:
                dt = sigma_next - sigma
                x = denoised + slope * sigma_next if cfg_pp else x + slope * dt
                if i >= 1:
                    x = x + (2.0 - 1.0) * (slope - old_d) * dt
            old_d = slope
        elif solver in ("ipndm", "ipndm_v"):
            # zju-pi diff-solvers' iPNDM (fixed or variable-step weights), as
            # ComfyUI runs it; buffer[-1] is the latest earlier derivative.
            order = min(4, i + 1)
            t = sigmas
            dt = sigma_next - sigma
            if sigma_next == 0:
                x = denoised
            elif order == 1:
                x = x + dt * d
            elif solver == "ipndm":
                weights = {2: [3 / 2, -1 / 2], 3: [23 / 12, -16 / 12, 5 / 12],
                           4: [55 / 24, -59 / 24, 37 / 24, -9 / 24]}[order]
                x = x + dt * sum(w * v for w, v in zip(weights, [d] + buffer[::-1]))
            else:
                hn, hn1 = dt, sigma - t[i - 1]
                c1, c2 = (2 + hn / hn1) / 2, -(hn / hn1) / 2
                if order == 2:
                    x = x + dt * (c1 * d + c2 * buffer[-1])
                else:
                    hn2 = t[i - 1] - t[i - 2]
                    temp1 = (1 - hn / (3 * (hn + hn1)) * (hn * (hn + hn1)) / (hn1 * (hn1 + hn2))) / 2
                    if order == 3:
                        x = x + dt * ((c1 + temp1) * d + (c2 - (1 + hn1 / hn2) * temp1) * buffer[-1]
                                      + temp1 * hn1 / hn2 * buffer[-2])
                    else:
                        hn3 = t[i - 2] - t[i - 3]
                        m = hn1 * (hn1 + hn2) / (hn2 * (hn2 + hn3))
                        temp2 = ((1 - hn / (3 * (hn + hn1))) / 2 + (1 - hn / (2 * (hn + hn1))) * hn / (6 * (hn + hn1 + hn2))) \
                            * (hn * (hn + hn1) * (hn + hn1 + hn2)) / (hn1 * (hn1 + hn2) * (hn1 + hn2 + hn3))
                        x = x + dt * ((c1 + temp1 + temp2) * d
                                      + (c2 - (1 + hn1 / hn2) * temp1 - (1 + hn1 / hn2 + m) * temp2) * buffer[-1]
                                      + (temp1 * hn1 / hn2 + (hn1 / hn2 + m * (1 + hn2 / hn3)) * temp2) * buffer[-2]
                                      - temp2 * m * hn1 / hn2 * buffer[-3])
            buffer = (buffer + [d])[-3:]
        elif solver == "lms":
            # k-diffusion's linear multistep: the weight of each earlier
            # derivative (newest first) is the integral over [sigma,
            # sigma_next] of its Lagrange basis polynomial through the last
            # `order` sigmas, here by numpy's exact polynomial integration
            # (ComfyUI integrates by quadrature).
            order = min(4, i + 1)
            if sigma_next == 0:
                x = denoised
            else:
                nodes = [sigmas[i - k] for k in range(order)]
                derivatives = ([d] + buffer[::-1])[:order]
                step = 0.0
                for j in range(order):
                    basis = np.poly1d([1.0])
                    for k in range(order):
                        if k != j:
                            basis = basis * np.poly1d([1.0, -nodes[k]]) / (nodes[j] - nodes[k])
                    antiderivative = basis.integ()
                    step = step + (antiderivative(sigma_next) - antiderivative(sigma)) * derivatives[j]
                x = x + step
            buffer = (buffer + [d])[-3:]
        elif solver == "deis":
            # DEIS ("tab", order up to 3) as ComfyUI's port of zju-pi's
            # diff-solvers runs it: Euler first, then the last derivatives
            # weighed by deis_weights.
            order = min(3, i + 1)
            if sigma_next == 0:
                x = denoised
            elif order == 1:
                x = x + (sigma_next - sigma) * d
            else:
                weights = deis_weights(sigmas, i, order)
                x = x + sum(w * v for w, v in zip(weights, [d] + buffer[::-1]))
            buffer = (buffer + [d])[-2:]
        elif solver in TWO_CALL_SAMPLERS:
            x = two_call_step(solver, x, d, sigma, sigma_next, guided,
                              lambda offset: noise(seed, offset, p["row"], rows), first_step + i, flow, snr)
        elif solver in THREE_CALL_SAMPLERS:
            x = three_call_step(solver, x, d, sigmas, i, guided,
                                lambda offset: noise(seed, offset, p["row"], rows), first_step + i, snr)
        elif solver == "lcm":
            # Renoised as the model noises: flow models keep 1 - sigma of it.
            x = denoised * (1.0 - sigma_next if flow else 1.0)
            if sigma_next > 0:
                x = x + noise(seed, first_step + i + 1, p["row"], rows) * sigma_next
        elif solver == "ddpm":
            # k-diffusion's DDPMSampler_step on x / sqrt(1 + sigma^2), then
            # scaled back by sqrt(1 + sigma_next^2) where sigma_next > 0.
            ac = 1.0 / (sigma * sigma + 1.0)
            ac_prev = 1.0 / (sigma_next * sigma_next + 1.0)
            alpha = ac / ac_prev
            mu = math.sqrt(1.0 / alpha) * (x * math.sqrt(ac) - (1.0 - alpha) * d / math.sqrt(1.0 - ac))
            if sigma_next > 0:
                mu = mu + math.sqrt((1.0 - alpha) * (1.0 - ac_prev) / (1.0 - ac)) * noise(seed, first_step + i + 1, p["row"], rows)
                mu = mu * math.sqrt(1.0 + sigma_next ** 2)
            x = mu
        else:
            raise ValueError(f"unsupported solver {solver!r}")

    latent = x.astype(np.float32)
    image = vae.run(None, {"latent": latent})[0]
    os.makedirs(out_dir, exist_ok=True)
    np.save(os.path.join(out_dir, "latent.npy"), latent)
    np.save(os.path.join(out_dir, "image.npy"), image.astype(np.float32))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 5):
        sys.exit(__doc__.split("\n\n")[2])
    run(sys.argv[1], sys.argv[2], tuple(sys.argv[3:5]) if len(sys.argv) == 5 else None)
