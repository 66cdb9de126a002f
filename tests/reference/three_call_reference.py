"""Samplers that call the model three times per step, written out from
k-diffusion's sampling.py as ComfyUI runs them on epsilon models (numpy,
float64; the run's sigmas as float32 values):

* `heunpp2` (sample_heunpp2, s_churn 0): Euler to the run's last sigma,
  weighted Heun on the step before it, Heun++ otherwise; sigmas compared by
  value.
* `seeds_3` (sample_seeds_3, eta 1, r_1 1/3, r_2 2/3, in the model's half
  log-SNR: -ln sigma, or a flow model's ln((1 - sigma) / sigma)): its three plain normal draws are the counter noise at offsets
  -(step + 1), -(step + 1) - 2^32 and step + 1.
* `dpm_fast` (ComfyUI's dpm_fast_function and DPMSolver.dpm_solver_fast,
  eta 0): floor(n / 3) + 1 steps evenly spaced in t = -ln sigma between the
  run's first and last nonzero sigma, orders 3, ..., then 2, 1 or n % 3,
  each point's sigma kept as float32.
* `dpm_adaptive` (DPMSolver.dpm_solver_adaptive with ComfyUI's defaults:
  order 3, rtol 0.05, atol 0.0078, h_init 0.05, PID 0/1/0, accept_safety 0.81,
  eta 0): the controller's (t, h) kept as float32 between iterations and its
  limiter's atan taken in float32, as the package keeps and computes them (the
  workflow's state cells hold no float64, ONNX Runtime's Atan takes none).

`guided(x, sigma)` returns the guided epsilon estimate at (x, sigma).
"""
import math

import numpy as np


THREE_CALL_SAMPLERS = ("heunpp2", "seeds_3")


def f32(value):
    return float(np.float32(value))


def three_call_step(solver, x, d, sigmas, i, guided, noise_at, step, snr=None):
    """Step i of sample_heunpp2 or sample_seeds_3 over the run's `sigmas`;
    `snr` is the model's (half log-SNR of sigma, sigma of a half log-SNR),
    an epsilon model's (-ln sigma, e^-lambda) by default."""
    lam, sigma_of = snr or (lambda s: -math.log(s), lambda l: math.exp(-l))
    sigma, sigma_next = sigmas[i], sigmas[i + 1]
    if solver == "heunpp2":
        s_end = sigmas[-1]
        dt = sigma_next - sigma
        if sigma_next == s_end:
            return x + d * dt
        x_2 = x + d * dt
        d_2 = guided(x_2, sigma_next)
        if sigmas[i + 2] == s_end:
            w2 = sigma_next / (2 * sigmas[0])
            return x + (d * (1 - w2) + d_2 * w2) * dt
        dt_2 = sigmas[i + 2] - sigma_next
        x_3 = x_2 + d_2 * dt_2
        d_3 = guided(x_3, sigmas[i + 2])
        w2 = sigma_next / (3 * sigmas[0])
        w3 = sigmas[i + 2] / (3 * sigmas[0])
        return x + (d * (1 - w2 - w3) + d_2 * w2 + d_3 * w3) * dt
    # seeds_3
    denoised = x - sigma * d
    if sigma_next == 0:
        return denoised
    eta, r_1, r_2 = 1.0, 1.0 / 3.0, 2.0 / 3.0
    ei_h_phi_1 = math.expm1
    ei_h_phi_2 = lambda h: (math.expm1(h) - h) / h
    lambda_s, lambda_t = lam(sigma), lam(sigma_next)
    h = lambda_t - lambda_s
    h_eta = h * (eta + 1)
    lambda_s_1 = lambda_s + r_1 * h
    lambda_s_2 = lambda_s + r_2 * h
    sigma_s_1, sigma_s_2 = sigma_of(lambda_s_1), sigma_of(lambda_s_2)
    alpha_s_1 = sigma_s_1 * math.exp(lambda_s_1)
    alpha_s_2 = sigma_s_2 * math.exp(lambda_s_2)
    alpha_t = sigma_next * math.exp(lambda_t)
    x_2 = sigma_s_1 / sigma * math.exp(-r_1 * h * eta) * x - alpha_s_1 * ei_h_phi_1(-r_1 * h_eta) * denoised
    sde_noise = math.sqrt(-math.expm1(-2 * r_1 * h * eta)) * noise_at(-(step + 1))
    x_2 = x_2 + sde_noise * sigma_s_1
    denoised_2 = x_2 - sigma_s_1 * guided(x_2, sigma_s_1)
    a3_2 = r_2 / r_1 * ei_h_phi_2(-r_2 * h_eta)
    a3_1 = ei_h_phi_1(-r_2 * h_eta) - a3_2
    x_3 = sigma_s_2 / sigma * math.exp(-r_2 * h * eta) * x - alpha_s_2 * (a3_1 * denoised + a3_2 * denoised_2)
    segment = (r_1 - r_2) * h * eta
    sde_noise = sde_noise * math.exp(segment) + math.sqrt(-math.expm1(2 * segment)) * noise_at(-(step + 1) - 2 ** 32)
    x_3 = x_3 + sde_noise * sigma_s_2
    denoised_3 = x_3 - sigma_s_2 * guided(x_3, sigma_s_2)
    b3 = ei_h_phi_2(-h_eta) / r_2
    b1 = ei_h_phi_1(-h_eta) - b3
    x = sigma_next / sigma * math.exp(-h * eta) * x - alpha_t * (b1 * denoised + b3 * denoised_3)
    segment = (r_2 - 1) * h * eta
    sde_noise = sde_noise * math.exp(segment) + math.sqrt(-math.expm1(2 * segment)) * noise_at(step + 1)
    return x + sde_noise * sigma_next


def sample_dpm_fast(x, sigmas, guided):
    """ComfyUI's dpm_fast over the run's sigmas (eta 0)."""
    if len(sigmas) <= 1:
        return x
    sigma_min = sigmas[-1] if sigmas[-1] != 0 else sigmas[-2]
    nfe = len(sigmas) - 1
    t_start, t_end = -math.log(f32(sigmas[0])), -math.log(f32(sigma_min))
    m = nfe // 3 + 1
    ts = np.linspace(t_start, t_end, m + 1)
    # Each point's sigma as the run keeps it (float32), t from there.
    ts = [-math.log(f32(math.exp(-t))) for t in ts]
    if nfe % 3 == 0:
        orders = [3] * (m - 2) + [2, 1]
    else:
        orders = [3] * (m - 1) + [nfe % 3]
    sigma_of = lambda t: math.exp(-t)
    eps_at = lambda x, t: guided(x, sigma_of(t))
    for i, order in enumerate(orders):
        t, t_next = ts[i], ts[i + 1]
        h = t_next - t
        eps = eps_at(x, t)
        x_1 = x - sigma_of(t_next) * math.expm1(h) * eps
        if order == 1:
            x = x_1
        elif order == 2:
            r_1 = 0.5
            s_1 = t + r_1 * h
            u_1 = x - sigma_of(s_1) * math.expm1(r_1 * h) * eps
            eps_r1 = eps_at(u_1, s_1)
            x = x_1 - sigma_of(t_next) / (2 * r_1) * math.expm1(h) * (eps_r1 - eps)
        else:
            r_1, r_2 = 1.0 / 3.0, 2.0 / 3.0
            s_1, s_2 = t + r_1 * h, t + r_2 * h
            u_1 = x - sigma_of(s_1) * math.expm1(r_1 * h) * eps
            eps_r1 = eps_at(u_1, s_1)
            u_2 = (x - sigma_of(s_2) * math.expm1(r_2 * h) * eps
                   - sigma_of(s_2) * (r_2 / r_1) * (math.expm1(r_2 * h) / (r_2 * h) - 1) * (eps_r1 - eps))
            eps_r2 = eps_at(u_2, s_2)
            x = x_1 - sigma_of(t_next) / r_2 * (math.expm1(h) / h - 1) * (eps_r2 - eps)
    return x


class PIDStepSizeController:
    """k-diffusion's PID step size controller (ComfyUI's defaults: p 0, i 1, d 0,
    order 3, accept_safety 0.81, eps 1e-8); the limiter's atan as float32."""

    def __init__(self, h, pcoeff=0.0, icoeff=1.0, dcoeff=0.0, order=3, accept_safety=0.81, eps=1e-8):
        self.h = h
        self.b1 = (pcoeff + icoeff + dcoeff) / order
        self.b2 = -(pcoeff + 2 * dcoeff) / order
        self.b3 = dcoeff / order
        self.accept_safety = accept_safety
        self.eps = eps
        self.errs = []

    def propose_step(self, error):
        inv_error = 1 / (float(error) + self.eps)
        if not self.errs:
            self.errs = [inv_error, inv_error, inv_error]
        self.errs[0] = inv_error
        factor = self.errs[0] ** self.b1 * self.errs[1] ** self.b2 * self.errs[2] ** self.b3
        factor = 1 + f32(math.atan(f32(factor - 1)))
        accept = factor >= self.accept_safety
        if accept:
            self.errs[2] = self.errs[1]
            self.errs[1] = self.errs[0]
        self.h *= factor
        return accept


ADAPTIVE_ITERATIONS = 500


def sample_dpm_adaptive(x, sigmas, guided):
    """ComfyUI's dpm_adaptive (DPM-Solver-23, rtol 0.05, atol 0.0078, h_init 0.05,
    eta 0) from the run's first sigma to its last nonzero one; the controller's
    place (t, h) kept as float32 between iterations (the package's state cell),
    at most ADAPTIVE_ITERATIONS iterations (the package's max_iterations)."""
    if len(sigmas) <= 1:
        return x
    sigma_min = sigmas[-1] if sigmas[-1] != 0 else sigmas[-2]
    t_start, t_end = -math.log(f32(sigmas[0])), -math.log(f32(sigma_min))
    rtol, atol = 0.05, 0.0078
    sigma_of = lambda t: math.exp(-t)
    s, x_prev = t_start, x
    pid = PIDStepSizeController(0.05)
    for _ in range(ADAPTIVE_ITERATIONS):
        if not s < t_end - 1e-5:
            break
        t = min(t_end, s + pid.h)
        h = t - s
        eps = guided(x, sigma_of(s))
        r_1, r_2 = 1.0 / 3.0, 2.0 / 3.0
        s_1, s_2 = s + r_1 * h, s + r_2 * h
        u_1 = x - sigma_of(s_1) * math.expm1(r_1 * h) * eps
        eps_r1 = guided(u_1, sigma_of(s_1))
        u_2 = (x - sigma_of(s_2) * math.expm1(r_2 * h) * eps
               - sigma_of(s_2) * (r_2 / r_1) * (math.expm1(r_2 * h) / (r_2 * h) - 1) * (eps_r1 - eps))
        eps_r2 = guided(u_2, sigma_of(s_2))
        first = x - sigma_of(t) * math.expm1(h) * eps
        x_low = first - sigma_of(t) / (2 * r_1) * math.expm1(h) * (eps_r1 - eps)
        x_high = first - sigma_of(t) / r_2 * (math.expm1(h) / h - 1) * (eps_r2 - eps)
        delta = np.maximum(atol, rtol * np.maximum(np.abs(x_low), np.abs(x_prev)))
        error = np.linalg.norm((x_low - x_high) / delta) / x.size ** 0.5
        if pid.propose_step(error):
            x_prev = x_low
            x = x_high
            s = t
        s, pid.h = f32(s), f32(pid.h)
    return x
