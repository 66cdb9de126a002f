"""Independent numpy references of ComfyUI's multistep samplers whose
weights come from small linear systems or numerical integrals: DEIS's
"tab" weights, SA-Solver (with and without PECE) and UniPC. Used by
`sampler_reference.py`; each is written from ComfyUI's published code
(comfy/k_diffusion/deis.py, sa_solver.py, sampling.py and
comfy/extra_samplers/uni_pc.py), never from the policies it checks."""
import math

import numpy as np


def deis_weights(sigmas, i, order, points=10000):
    """DEIS's weights for step i: each earlier derivative's Lagrange basis
    polynomial in the VP time of EDM's schedule (sigma 0.002 to 80, epsilon
    1e-3), integrated against dsigma/dt over the step by the left-closed
    sum ComfyUI's deis.py takes (linspace of `points`, spacing span/points)."""
    eps, sigma_min, sigma_max = 1e-3, 0.002, 80.0
    beta_d = 2.0 * (np.log(sigma_min ** 2 + 1.0) / eps - np.log(sigma_max ** 2 + 1.0)) / (eps - 1.0)
    beta_min = np.log(sigma_max ** 2 + 1.0) - 0.5 * beta_d

    def time(sigma):
        return (np.sqrt(beta_min ** 2 + 2.0 * beta_d * np.log(sigma ** 2 + 1.0)) - beta_min) / beta_d

    t_cur, t_next = time(sigmas[i]), time(sigmas[i + 1])
    taus = np.linspace(t_cur, t_next, points)
    alpha = np.exp(-0.5 * taus ** 2 * beta_d - taus * beta_min)
    # d log(alpha) / d tau, and the integrand -0.5 of it over sqrt(alpha (1 - alpha)).
    d_log_alpha = -taus * beta_d - beta_min
    integrand = -0.5 * d_log_alpha / np.sqrt(alpha * (1.0 - alpha))
    nodes = [time(sigmas[i - k]) for k in range(order)]
    weights = []
    for j in range(order):
        basis = np.ones_like(taus)
        for k in range(order):
            if k != j:
                basis = basis * (taus - nodes[k]) / (nodes[j] - nodes[k])
        weights.append(float(np.sum(integrand * basis)) * (t_next - t_cur) / points)
    return weights


def sample_sa_solver(denoise, x, sigmas, noise_at, first_step, interval, use_pece=False,
                     lam=lambda s: -math.log(s)):
    """ComfyUI's `sample_sa_solver` (comfy/k_diffusion/sampling.py and
    sa_solver.py) in the model's half log-SNR `lam` (an epsilon model's -ln
    sigma by default), tau 1 (eta 1)
    from the sigma at 20% to the one at 80% of the table's timesteps
    (`percent_to_sigma`, given as `interval`), predictor order 3, corrector order 4, s_noise 1, PECE
    (evaluating the corrected sample again) where `use_pece`; its noise at step i (a plain normal draw in ComfyUI) the counter
    noise at offset first_step + i + 1. `denoise(x, sigma)` is the guided
    denoised estimate."""
    lambdas = [lam(s) if s > 0 else math.inf for s in sigmas]
    start_sigma, end_sigma = interval

    def tau_func(sigma):
        return 1.0 if start_sigma >= sigma >= end_sigma else 0.0

    def b_coeffs(sigma_next, curr, lambda_s, lambda_t, tau_t):
        # compute_stochastic_adams_b_coeffs: the exponential moments, then
        # the Vandermonde solve.
        order = len(curr)
        tau_mul = 1.0 + tau_t ** 2
        h = lambda_t - lambda_s
        p = np.arange(order, dtype=np.float64)
        product = lambda_t ** p - lambda_s ** p * math.exp(-tau_mul * h)
        m = np.zeros((order, order))
        for row in range(order):
            for col in range(row + 1):
                log = math.lgamma(row + 1) - math.lgamma(col + 1) - (row - col) * math.log(tau_mul)
                m[row, col] = math.exp(log) * (1.0 if (row - col) % 2 == 0 else -1.0)
        moments = m @ product
        vander = np.vander(np.array(curr, dtype=np.float64), order, increasing=True).T
        return sigma_next * math.exp(lambda_t) * np.linalg.solve(vander, moments)

    x_pred, h, tau_t, noise_v, preds = x, 0.0, 0.0, 0.0, []
    lower_order_to_end = sigmas[-1] == 0
    n = len(sigmas)
    for i in range(n - 1):
        denoised = denoise(x_pred, sigmas[i])
        preds = (preds + [denoised])[-4:]
        predictor_order = min(3, len(preds))
        corrector_order = 0 if (i == 0 or (sigmas[i + 1] == 0 and not use_pece)) else min(4, len(preds))
        if lower_order_to_end:
            predictor_order = min(predictor_order, n - 2 - i)
            corrector_order = min(corrector_order, n - 1 - i)
        if corrector_order == 0:
            x = x_pred
        else:
            b = b_coeffs(sigmas[i], lambdas[i - corrector_order + 1:i + 1], lambdas[i - 1], lambdas[i], tau_t)
            x = sigmas[i] / sigmas[i - 1] * math.exp(-(tau_t ** 2) * h) * x + sum(
                w * d for w, d in zip(b, preds[-corrector_order:]))
            if tau_t > 0:
                x = x + noise_v
            if use_pece:
                denoised = denoise(x, sigmas[i])
                preds[-1] = denoised
        if sigmas[i + 1] == 0:
            x = denoised
        else:
            tau_t = tau_func(sigmas[i + 1])
            b = b_coeffs(sigmas[i + 1], lambdas[i - predictor_order + 1:i + 1], lambdas[i], lambdas[i + 1], tau_t)
            h = lambdas[i + 1] - lambdas[i]
            x_pred = sigmas[i + 1] / sigmas[i] * math.exp(-(tau_t ** 2) * h) * x + sum(
                w * d for w, d in zip(b, preds[-predictor_order:]))
            if tau_t > 0:
                noise_v = noise_at(first_step + i + 1) * sigmas[i + 1] * math.sqrt(-math.expm1(-2 * tau_t ** 2 * h))
                x_pred = x_pred + noise_v
    return x


def sample_unipc(denoise, x, sigmas, variant):
    """ComfyUI's `sample_unipc` (comfy/extra_samplers/uni_pc.py): UniPC's
    multistep predictor-corrector with data prediction in the VP form of
    `SigmaConvert` (alpha = 1/sqrt(1 + sigma^2), the time label is sigma),
    order min(3, steps - 1), lower order at the end, no corrector on the
    last update. `denoise(x, sigma)` is the guided denoised estimate."""
    t = np.array(sigmas, dtype=np.float64)
    if t[-1] < 0.001:
        t[-1] = 0.001
    log_alpha = lambda s: 0.5 * math.log(1.0 / (s * s + 1.0))
    alpha = lambda s: math.exp(log_alpha(s))
    std = lambda s: math.sqrt(1.0 - math.exp(2.0 * log_alpha(s)))
    lam = lambda s: log_alpha(s) - 0.5 * math.log(1.0 - math.exp(2.0 * log_alpha(s)))

    def model(xv, s):
        # eps from the k-diffusion denoiser, then the data prediction.
        xin = xv * math.sqrt(s * s + 1.0)
        eps = (xin - denoise(xin, s)) / s
        return (xv - std(s) * eps) / alpha(s)

    def update(xv, models, ts, tt, order, use_corrector):
        h = lam(tt) - lam(ts[-1])
        m0 = models[-1]
        rks, d1s = [], []
        for i in range(1, order):
            rk = (lam(ts[-(i + 1)]) - lam(ts[-1])) / h
            rks.append(rk)
            d1s.append((models[-(i + 1)] - m0) / rk)
        rks.append(1.0)
        rks = np.array(rks)
        hh = -h
        h_phi_1 = math.expm1(hh)
        h_phi_k = h_phi_1 / hh - 1.0
        b_h = hh if variant == "bh1" else math.expm1(hh)
        factorial, rows_r, b = 1, [], []
        for i in range(1, order + 1):
            rows_r.append(rks ** (i - 1))
            b.append(h_phi_k * factorial / b_h)
            factorial *= i + 1
            h_phi_k = h_phi_k / hh - 1.0 / factorial
        r_matrix, b = np.array(rows_r), np.array(b)
        x_t_ = std(tt) / std(ts[-1]) * xv - alpha(tt) * h_phi_1 * m0
        if d1s:
            rhos_p = np.array([0.5]) if order == 2 else np.linalg.solve(r_matrix[:-1, :-1], b[:-1])
            pred_res = sum(r * d for r, d in zip(rhos_p, d1s))
        else:
            pred_res = 0.0
        x_t = x_t_ - alpha(tt) * b_h * pred_res
        if not use_corrector:
            return x_t, None
        rhos_c = np.array([0.5]) if order == 1 else np.linalg.solve(r_matrix, b)
        model_t = model(x_t, tt)
        corr_res = sum(r * d for r, d in zip(rhos_c[:-1], d1s)) if d1s else 0.0
        x_t = x_t_ - alpha(tt) * b_h * (corr_res + rhos_c[-1] * (model_t - m0))
        return x_t, model_t

    steps = len(t) - 1
    order = min(3, len(t) - 2)
    xv = x / math.sqrt(1.0 + t[0] ** 2)
    models, ts = [model(xv, t[0])], [t[0]]
    for step_index in range(1, steps):
        if step_index < order:
            xv, m = update(xv, models, ts, t[step_index], step_index, True)
            models.append(m)
            ts.append(t[step_index])
            continue
        for step in range(step_index, step_index + 1 + (step_index == steps - 1)):
            step_order = min(order, steps + 1 - step)
            xv, m = update(xv, models, ts, t[step], step_order, step != steps)
            models, ts = models[1:] + [m], ts[1:] + [t[step]]
    return xv / alpha(t[-1])
