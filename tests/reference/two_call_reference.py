"""Samplers that call the model twice per step, and the ancestral steps the
samplers share, written out from k-diffusion's sampling.py as ComfyUI runs them
(numpy, float64): `heun`, `dpm_2`, `dpm_2_ancestral`, `dpmpp_2s_ancestral`
(ComfyUI's _RF forms on flow models), `dpmpp_2s_ancestral_cfg_pp`,
`dpmpp_sde` and `seeds_2` (in the model's half log-SNR); see two_call_step.
"""
import math


TWO_CALL_SAMPLERS = ("heun", "dpm_2", "dpm_2_ancestral", "dpmpp_2s_ancestral", "dpmpp_2s_ancestral_cfg_pp",
                     "dpmpp_sde", "dpmpp_sde_gpu", "seeds_2")


# The samplers ComfyUI steps in the model's half log-SNR from an offset first
# sigma (offset_first_sigma_for_snr).
SNR_SAMPLERS = ("dpmpp_sde", "dpmpp_sde_gpu", "dpmpp_2m_sde", "dpmpp_2m_sde_gpu", "dpmpp_2m_sde_heun",
                "dpmpp_2m_sde_heun_gpu", "dpmpp_3m_sde", "dpmpp_3m_sde_gpu", "er_sde", "seeds_2", "seeds_3",
                "sa_solver", "sa_solver_pece")


def rf_ancestral_step(sigma, sigma_next):
    """The rectified-flow ancestral step of ComfyUI's *_RF samplers (eta 1):
    (sigma_down, renoise coefficient, alpha_next / alpha_down)."""
    sigma_down = sigma_next * (sigma_next / sigma)
    alpha_next, alpha_down = 1.0 - sigma_next, 1.0 - sigma_down
    renoise = math.sqrt(sigma_next ** 2 - sigma_down ** 2 * alpha_next ** 2 / alpha_down ** 2)
    return sigma_down, renoise, alpha_next / alpha_down


def ancestral_step(sigma_from, sigma_to):
    """k-diffusion's get_ancestral_step (eta 1): (sigma_down, sigma_up)."""
    if sigma_to == 0:
        return 0.0, 0.0
    sigma_up = min(sigma_to, math.sqrt(sigma_to ** 2 * (sigma_from ** 2 - sigma_to ** 2) / sigma_from ** 2))
    return math.sqrt(sigma_to ** 2 - sigma_up ** 2), sigma_up


def two_call_step(solver, x, d, sigma, sigma_next, guided, noise_at, step, flow=False, snr=None):
    """One step of k-diffusion's sample_heun, sample_dpm_2, sample_dpm_2_ancestral,
    sample_dpmpp_2s_ancestral (and ComfyUI's _cfg_pp form), sample_dpmpp_sde or ComfyUI's
    sample_seeds_2 (s_churn 0,
    eta 1, s_noise 1, r 1/2),
    with the model called a second time through `guided`.  Fresh noise is the
    counter noise at offset step + 1; dpmpp_sde's midpoint noise (a Brownian tree
    in ComfyUI) is the counter noise at offset -(step + 1).  On a flow model
    (`flow`) dpm_2_ancestral and dpmpp_2s_ancestral take ComfyUI's _RF forms;
    dpmpp_sde and seeds_2 step in the model's half log-SNR (`snr`: lambda of
    sigma and sigma of lambda, an epsilon model's -ln sigma by default)."""
    denoised = x - sigma * d
    lam, sigma_of = snr or (lambda s: -math.log(s), lambda l: math.exp(-l))
    t_fn = lambda s: -math.log(s)
    sigma_fn = lambda t: math.exp(-t)
    if solver == "heun":
        dt = sigma_next - sigma
        if sigma_next == 0:
            return x + d * dt
        x_2 = x + d * dt
        d_2 = guided(x_2, sigma_next)
        return x + (d + d_2) / 2 * dt
    if solver == "dpm_2":
        if sigma_next == 0:
            return x + d * (sigma_next - sigma)
        sigma_mid = math.exp(math.log(sigma) + 0.5 * (math.log(sigma_next) - math.log(sigma)))
        x_2 = x + d * (sigma_mid - sigma)
        d_2 = guided(x_2, sigma_mid)
        return x + d_2 * (sigma_next - sigma)
    if solver == "dpm_2_ancestral" and flow:
        # sample_dpm_2_ancestral_RF.
        if sigma_next == 0:
            return x - d * sigma
        sigma_down, renoise, rescale = rf_ancestral_step(sigma, sigma_next)
        sigma_mid = math.exp(math.log(sigma) + 0.5 * (math.log(sigma_down) - math.log(sigma)))
        x_2 = x + d * (sigma_mid - sigma)
        d_2 = guided(x_2, sigma_mid)
        x = x + d_2 * (sigma_down - sigma)
        return rescale * x + noise_at(step + 1) * renoise
    if solver == "dpmpp_2s_ancestral" and flow:
        # sample_dpmpp_2s_ancestral_RF: its midpoint in lambda = ln((1 - s) / s)
        # (at 0.9999 where sigma is 1).
        if sigma_next == 0:
            return denoised
        sigma_down, renoise, rescale = rf_ancestral_step(sigma, sigma_next)
        if sigma == 1.0:
            sigma_s = 0.9999
        else:
            lam = lambda s: math.log((1.0 - s) / s)
            t_i, t_down = lam(sigma), lam(sigma_down)
            sigma_s = 1.0 / (math.exp(t_i + 0.5 * (t_down - t_i)) + 1.0)
        ratio = sigma_s / sigma
        u = ratio * x + (1 - ratio) * denoised
        denoised_2 = u - sigma_s * guided(u, sigma_s)
        ratio = sigma_down / sigma
        x = ratio * x + (1 - ratio) * denoised_2
        return rescale * x + noise_at(step + 1) * renoise
    if solver == "dpm_2_ancestral":
        sigma_down, sigma_up = ancestral_step(sigma, sigma_next)
        if sigma_down == 0:
            x = x + d * (sigma_down - sigma)
        else:
            sigma_mid = math.exp(math.log(sigma) + 0.5 * (math.log(sigma_down) - math.log(sigma)))
            x_2 = x + d * (sigma_mid - sigma)
            d_2 = guided(x_2, sigma_mid)
            x = x + d_2 * (sigma_down - sigma)
        if sigma_next > 0:
            x = x + noise_at(step + 1) * sigma_up
        return x
    if solver == "dpmpp_2s_ancestral":
        sigma_down, sigma_up = ancestral_step(sigma, sigma_next)
        if sigma_down == 0:
            x = x + d * (sigma_down - sigma)
        else:
            t, t_next = t_fn(sigma), t_fn(sigma_down)
            r = 0.5
            h = t_next - t
            s = t + r * h
            x_2 = (sigma_fn(s) / sigma_fn(t)) * x - math.expm1(-h * r) * denoised
            denoised_2 = x_2 - sigma_fn(s) * guided(x_2, sigma_fn(s))
            x = (sigma_fn(t_next) / sigma_fn(t)) * x - math.expm1(-h) * denoised_2
        if sigma_next > 0:
            x = x + noise_at(step + 1) * sigma_up
        return x
    if solver == "dpmpp_2s_ancestral_cfg_pp":
        # ComfyUI's sample_dpmpp_2s_ancestral_cfg_pp: its post-CFG hook keeps
        # the latest call's unconditional pass, so the midpoint moves along
        # the first call's and the step along the second call's.
        denoised_u = x - sigma * guided.unconditional
        sigma_down, sigma_up = ancestral_step(sigma, sigma_next)
        if sigma_down == 0:
            x = denoised
        else:
            t, t_next = t_fn(sigma), t_fn(sigma_down)
            h = t_next - t
            s = t + 0.5 * h
            x_2 = (sigma_fn(s) / sigma_fn(t)) * (x + (denoised - denoised_u)) - math.expm1(-h * 0.5) * denoised
            d_2 = guided(x_2, sigma_fn(s))
            denoised_2 = x_2 - sigma_fn(s) * d_2
            denoised_u2 = x_2 - sigma_fn(s) * guided.unconditional
            x = (sigma_fn(t_next) / sigma_fn(t)) * (x + (denoised - denoised_u2)) - math.expm1(-h) * denoised_2
        if sigma_next > 0:
            x = x + noise_at(step + 1) * sigma_up
        return x
    if solver == "seeds_2":
        # ComfyUI's sample_seeds_2 (eta 1, s_noise 1, r 1/2) for an epsilon
        # model: half log-SNR lambda = -ln sigma, alpha 1; its two noises
        # (plain normal draws in ComfyUI) the counter noise at offsets
        # -(step + 1) and step + 1.
        if sigma_next == 0:
            return denoised
        eta, r = 1.0, 0.5
        lambda_s, lambda_t = lam(sigma), lam(sigma_next)
        h = lambda_t - lambda_s
        h_eta = h * (eta + 1)
        lambda_s_1 = lambda_s + r * (lambda_t - lambda_s)
        sigma_s_1 = sigma_of(lambda_s_1)
        alpha_s_1, alpha_t = sigma_s_1 * math.exp(lambda_s_1), sigma_next * math.exp(lambda_t)
        x_2 = sigma_s_1 / sigma * math.exp(-r * h * eta) * x - alpha_s_1 * math.expm1(-r * h_eta) * denoised
        sde_noise = math.sqrt(-math.expm1(-2 * r * h * eta)) * noise_at(-(step + 1))
        x_2 = x_2 + sde_noise * sigma_s_1
        denoised_2 = x_2 - sigma_s_1 * guided(x_2, sigma_s_1)
        fac = 1 / (2 * r)
        denoised_d = denoised + fac * (denoised_2 - denoised)
        x = sigma_next / sigma * math.exp(-h * eta) * x - alpha_t * math.expm1(-h_eta) * denoised_d
        segment_factor = (r - 1) * h * eta
        sde_noise = sde_noise * math.exp(segment_factor)
        sde_noise = sde_noise + math.sqrt(-math.expm1(2 * segment_factor)) * noise_at(step + 1)
        return x + sde_noise * sigma_next
    # dpmpp_sde, dpmpp_sde_gpu: ComfyUI's form in the model's half log-SNR,
    # its ancestral steps between the sigmas e^-lambda (sigma / alpha).
    if sigma_next == 0:
        return denoised
    r = 0.5
    lambda_s, lambda_t = lam(sigma), lam(sigma_next)
    h = lambda_t - lambda_s
    lambda_s_1 = lambda_s + r * h
    fac = 1 / (2 * r)
    sigma_s_1 = sigma_of(lambda_s_1)
    alpha_s = sigma * math.exp(lambda_s)
    alpha_s_1 = sigma_s_1 * math.exp(lambda_s_1)
    alpha_t = sigma_next * math.exp(lambda_t)
    sd, su = ancestral_step(math.exp(-lambda_s), math.exp(-lambda_s_1))
    h_ = -math.log(sd) - lambda_s
    x_2 = (alpha_s_1 / alpha_s) * math.exp(-h_) * x - alpha_s_1 * math.expm1(-h_) * denoised
    x_2 = x_2 + alpha_s_1 * noise_at(-(step + 1)) * su
    denoised_2 = x_2 - sigma_s_1 * guided(x_2, sigma_s_1)
    sd, su = ancestral_step(math.exp(-lambda_s), math.exp(-lambda_t))
    h_ = -math.log(sd) - lambda_s
    denoised_d = (1 - fac) * denoised + fac * denoised_2
    x = (alpha_t / alpha_s) * math.exp(-h_) * x - alpha_t * math.expm1(-h_) * denoised_d
    return x + alpha_t * noise_at(step + 1) * su
