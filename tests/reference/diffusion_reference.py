#!/usr/bin/env python3
"""Independent numpy reference for the ComfyUI pattern packages' recipes.

The example packages `tiny-img2img`, `tiny-inpaint`, `tiny-advanced`,
`tiny-controlnet`, `tiny-sdxl` and `tiny-flow` are written by

    wfstudio import-comfyui fixtures/comfyui/patterns/GRAPH.api.json \\
        --package-out ROOT/tiny-X --stand-in-models

and this script writes (or checks) their recipes: the inputs of each case
and the outputs (`image`, `latent`) the lowered workflow must produce.  The
expected outputs are a cross-check of the policies the importer synthesizes
(`policies/*.onnx`, the code under test), so this script never reads or runs
them: every policy is recomputed here with numpy from the formulas of
docs/COMFYUI.md ("Patterns" and "Runnable packages: what the importer
makes"), which follow ComfyUI (comfy/model_sampling.py, comfy/samplers.py)
and k-diffusion.  onnxruntime (CPU) runs only the stand-in model components
(`text_encoder`, `text_encoder_2`, `denoiser`, `controlnet`, `vae_encoder`,
`vae_decoder`).

    python tests/reference/diffusion_reference.py write ROOT
    python tests/reference/diffusion_reference.py check ROOT

`write` writes ROOT/tiny-*/recipes/NAME.json for the six packages; `check`
exits 1 naming every recipe file whose content differs (byte for byte) from
what `write` would write.

What is recomputed (batch 1, Euler, the stand-in components aside):

* Family facts from the `diffusion_schedule` contract parameters (solver,
  spacing, prediction, model_sampling, steps) and every input not in the
  recipe from its `default:` in inference_metadata.yaml.
* Schedules: `discrete` (SD 1.x / SDXL) sigma table, schedulers and
  nearest-index timesteps from tests/reference/sampler_reference.py; flow
  matching (`sd3`): the table `sigma_k = a t_k / (1 + (a - 1) t_k)`,
  `t_k = k / 1000` (k = 1..1000, `a` the shift input), the same schedulers
  over it (`normal` spaces the times evenly from 1 to sigma_min), timesteps
  `sigma * 1000`.  A final 0 closes every schedule.
* Noise: the `onnx-genai.counter-rng` counter hash + Box-Muller (from
  sampler_reference.py), offset `package.rng_offset`; contract parameter
  `scale: initial_sigma` scales it by first_sample_scale(sigma_0) (epsilon:
  sqrt(1 + sigma_0^2) at sigma_max, else sigma_0) or sigma_0 (flow) where
  the loop starts from the noise; `unit` leaves it.
* Windows: `denoise_window` start = steps - round_half_even(steps * denoise)
  (float32 product), iterations = steps - start; `step_window` last_end =
  min(end, steps), iterations = max(last_end - start, 0), and the solver's
  `final_step: full_denoise` steps to sigma 0 where step + 1 == last_end.
  The loop runs step = iteration + start.
* Start latent (windowed runs): add_noise(source, noise, sigma[start]) with
  epsilon `source + first_sample_scale(sigma) * noise`, flow `sigma * noise + (1 - sigma) *
  source`; source = vae_encoder(image) (img2img), vae_encoder(inpaint
  pixels) (inpaint) or zeros (empty latent).
* Inpainting: pixels = where(mask > threshold, masked_value, image); latent
  mask = max-pool(mask, 2g+1, pad g, stride 1) then the max over each
  scale x scale cell (g = grow_mask_by); after each solver step
  next = solved * m + add_noise(source, noise, sigma[step + 1]) * (1 - m).
* Model input: epsilon x / sqrt(sigma^2 + 1), flow x.  Guidance:
  uncond + (cond - uncond) * cfg.  Euler: x + d (sigma_next - sigma).
* ControlNet: before each denoiser call the controlnet runs on that call's
  model input, timestep and conditioning, the control image and a scale,
  and its `down_residuals` / `mid_residual` feed the call; scale = strength
  where start <= step / (schedule length - 1) < end (float32), else 0; a
  prompt the graph does not control gets 0.
* SDXL: hidden states = concat(text_encoder(ids_l), text_encoder_2(ids_g),
  axis 2); text_embeds = text_encoder_2's pooled output; time_ids = the six
  size numbers as [1, 6].

Every tensor that crosses a component boundary in the workflow (schedule,
timesteps, noise, latents, conditioning) is float32 by its contract and is
rounded to float32 here at the same boundaries; the arithmetic inside a step
is float64.  Only the standard library, numpy and onnxruntime are needed.
"""
import json
import math
import os
import re
import sys

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampler_reference as sr  # noqa: E402  (the sigma table, schedulers, noise, YAML lookup)

F32 = np.float32
TOLERANCE = {"abs": 1e-5, "rel": 1e-5}
USAGE = "usage: diffusion_reference.py write|check ROOT  (ROOT holds the tiny-* packages)"
PROVENANCE = "expected outputs computed by tests/reference/diffusion_reference.py (numpy, independent of the runner)"


# --- reading the package --------------------------------------------------------

class Package:
    """inference_metadata.yaml of one package (plain block YAML, read without PyYAML)."""

    WF = ("pipeline", "workflow")

    def __init__(self, path):
        self.path = path
        with open(os.path.join(path, "inference_metadata.yaml")) as f:
            self.meta = f.read()
        self.invokes = self._invokes()

    def has(self, component):
        try:
            sr.yaml_block(self.meta, *self.WF, "components", component)
            return True
        except KeyError:
            return False

    def params(self, component):
        """The `contract.parameters` of a component, as strings."""
        return sr.yaml_scalars(sr.yaml_block(self.meta, *self.WF, "components", component,
                                             "contract", "parameters"))

    def default(self, name):
        """A workflow input's `default:` as an array of its contract dtype."""
        block = sr.yaml_block(self.meta, *self.WF, "inputs", name)
        dtype = sr.yaml_scalars(sr.yaml_block(self.meta, *self.WF, "inputs", name, "contract"))["dtype"]
        level = min(len(l) - len(l.lstrip()) for l in block if l.strip())
        for n, line in enumerate(block):
            m = re.match(r"^(\s*)default:\s*(.*)$", line)
            if not m or len(m.group(1)) != level:
                continue
            if m.group(2):
                values = [m.group(2)]
            else:  # a block list: "- v" items below
                values = []
                for item in block[n + 1:]:
                    im = re.match(r"^\s*-\s*(\S.*)$", item)
                    if not im:
                        break
                    values.append(im.group(1))
            values = [v.strip().strip("'\"") for v in values]
            if dtype == "bool":
                return np.asarray([v == "true" for v in values], dtype=bool)
            return np.asarray([float(v) if dtype.startswith("float") else int(v) for v in values], dtype=dtype)
        raise KeyError(f"{self.path}: input {name} has no default")

    def _invokes(self):
        """Every `kind: invoke` step (setup and body alike) as (component, inputs, outputs)."""
        lines = self.meta.splitlines()
        out = []
        for n, line in enumerate(lines):
            m = re.match(r"^(\s*)- kind: invoke\s*$", line)
            if not m:
                continue
            indent = len(m.group(1))
            body = []
            for l in lines[n + 1:]:
                if l.strip() and len(l) - len(l.lstrip()) <= indent:
                    break
                body.append(l)
            component = next(re.match(r"^\s*component:\s*(\S+)", l).group(1)
                             for l in body if re.match(r"^\s*component:", l))
            ports = {}
            for key in ("inputs", "outputs"):
                try:
                    ports[key] = sr.yaml_scalars(sr.yaml_block("\n".join(body), key))
                except (KeyError, ValueError):  # `inputs: {}`
                    ports[key] = {}
            out.append((component, ports["inputs"], ports["outputs"]))
        return out

    def expect(self, component, **bindings):
        """Fail unless some invoke of `component` binds each port to the value named."""
        for comp, inputs, _ in self.invokes:
            if comp == component and all(inputs.get(k) == v for k, v in bindings.items()):
                return
        raise AssertionError(f"{self.path}: no invoke of {component} with {bindings}")


class Models:
    """The package's model components on onnxruntime's CPU provider."""

    def __init__(self, path):
        self.path, self.sessions = path, {}

    def __call__(self, component, **feed):
        if component not in self.sessions:
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            self.sessions[component] = ort.InferenceSession(
                os.path.join(self.path, component, "model.onnx"), options, providers=["CPUExecutionProvider"])
        session = self.sessions[component]
        declared = {i.name: i.type for i in session.get_inputs()}
        if set(declared) != set(feed):
            raise ValueError(f"{component}: inputs {sorted(declared)}, fed {sorted(feed)}")
        cast = {"tensor(float)": np.float32, "tensor(int64)": np.int64}
        feed = {k: np.ascontiguousarray(v, dtype=cast[declared[k]]) for k, v in feed.items()}
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, feed)))


# --- model sampling and schedules -----------------------------------------------

def flow_sampling(shift):
    """ComfyUI ModelSamplingDiscreteFlow (SD3, multiplier 1000) at shift `shift`:
    the ascending 1000-entry sigma table and sigma(t) / t(sigma) on the 0..1000 scale."""
    a = float(shift)
    shifted = lambda t: a * t / (1.0 + (a - 1.0) * t)
    table = np.asarray([shifted(k / 1000.0) for k in range(1, 1001)], dtype=np.float64)
    return dict(sigmas=table, sigma_of_t=lambda t: shifted(t / 1000.0),
                timestep_of_sigma=lambda sigma: sigma * 1000.0)


def schedules(pkg, family, value):
    """(sigmas [steps + 1], timesteps [steps]), both float32 as the schedule ports declare."""
    steps, spacing = int(family["steps"]), family["spacing"]
    if family["model_sampling"] == "discrete":
        sigmas = sr.schedule(spacing, steps)
        timesteps = [sr.timestep_of_sigma(s) for s in sigmas[:steps]]
    elif family["model_sampling"] == "sd3":
        pkg.expect("diffusion_schedule", shift="request.flow_shift")
        sampling = flow_sampling(value("request.flow_shift")[0])
        sigmas = sr.schedule(spacing, steps, **sampling)
        timesteps = [sampling["timestep_of_sigma"](s) for s in sigmas[:steps]]
    else:
        raise ValueError(f"unsupported model sampling {family['model_sampling']!r}")
    return np.asarray(sigmas, F32).astype(np.float64), np.asarray(timesteps, F32)


def add_noise(prediction, latent, noise, sigma, first=False):
    """The latent noised to sigma; the run's first sample of an epsilon model
    takes ComfyUI's first_sample_scale(sigma) in place of sigma."""
    if prediction == "flow":
        return sigma * noise + (1.0 - sigma) * latent
    return latent + (sr.first_sample_scale(sigma) if first else sigma) * noise


def max_pool(x, size, stride, pad=0):
    """2-D max pooling over the last two axes; padding counts as -inf."""
    x = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(pad, pad)] * 2, constant_values=-np.inf)
    h = (x.shape[-2] - size) // stride + 1
    w = (x.shape[-1] - size) // stride + 1
    out = np.full(x.shape[:-2] + (h, w), -np.inf)
    for dy in range(size):
        for dx in range(size):
            out = np.maximum(out, x[..., dy:dy + stride * (h - 1) + 1:stride, dx:dx + stride * (w - 1) + 1:stride])
    return out


def bilinear(x, out_h, out_w):
    """PyTorch's bilinear interpolation (align_corners=False, no antialias)
    of the last two axes to out_h x out_w, as torch.nn.functional.interpolate
    computes it: source index (i + 0.5) * in / out - 0.5, below 0 taken as 0,
    between the two nearest samples (the last repeated)."""
    def weights(n_in, n_out):
        src = np.maximum((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0.0)
        low = np.minimum(np.floor(src).astype(int), n_in - 1)
        high = np.minimum(low + 1, n_in - 1)
        lam = src - low
        out = np.zeros((n_out, n_in))
        np.add.at(out, (np.arange(n_out), low), 1.0 - lam)
        np.add.at(out, (np.arange(n_out), high), lam)
        return out
    rows, cols = weights(x.shape[-2], out_h), weights(x.shape[-1], out_w)
    return np.einsum("oh,...hw,pw->...op", rows, x, cols)


# --- the lowered workflow ---------------------------------------------------------

def reference(pkg_dir, inputs, controlled=("positive", "negative")):
    """Run the lowered workflow of the package at `pkg_dir` on the recipe `inputs`
    (name -> array; the rest take the document's defaults).  `controlled` names the
    prompts the graph's ControlNet applies to.  Returns (outputs, facts)."""
    pkg, model = Package(pkg_dir), Models(pkg_dir)
    value = lambda name: np.asarray(inputs[name]) if name in inputs else pkg.default(name)
    family = pkg.params("diffusion_schedule")
    prediction, steps = family["prediction"], int(family["steps"])
    if family["solver"] != "euler":
        raise ValueError(f"only euler is implemented here, not {family['solver']!r}")
    sigmas, timesteps = schedules(pkg, family, value)
    facts = dict(steps=steps, spacing=family["spacing"])
    if family["model_sampling"] == "sd3":
        facts.update(shift=float(value("request.flow_shift")[0]))

    # Latent row shape, noise.
    shape = pkg.params("latent_row_shape")
    scale = int(shape["scale"])
    if shape.get("from") == "image":
        height, width = value("request.image").shape[2:]
    else:
        height, width = int(shape["height"]), int(shape["width"])
    row = (int(shape["channels"]), height // scale, width // scale)
    pkg.expect("latent_noise", seed="request.seed", offset="package.rng_offset")
    pkg.expect("guidance_combine", scale="request.guidance_scale")
    seed = int(value("request.seed")[0])
    if value("request.input_ids").shape[0] != 1:
        raise ValueError(f"{pkg_dir}: this reference recomputes batch 1 only")
    noise = sr.noise(seed, int(value("package.rng_offset")[0]), row).astype(F32).astype(np.float64)
    cfg = float(value("request.guidance_scale")[0])

    # Conditioning: per prompt, the denoiser's (and controlnet's) text inputs.
    if pkg.has("text_encoder_2"):
        def condition(ids_g, ids_l, size):
            pkg.expect("text_encoder", input_ids=ids_l)
            pkg.expect("text_encoder_2", input_ids=ids_g)
            pkg.expect("sdxl_conditioning", size=size)
            hidden_l = model("text_encoder", input_ids=value(ids_l))["encoder_hidden_states"]
            g = model("text_encoder_2", input_ids=value(ids_g))
            return dict(encoder_hidden_states=np.concatenate([hidden_l, g["encoder_hidden_states"]], axis=2),
                        text_embeds=g["text_embeds"], time_ids=value(size).astype(F32).reshape(1, 6))
        prompts = {"negative": condition("request.negative_input_ids", "request.negative_input_ids_l",
                                         "request.negative_size"),
                   "positive": condition("request.input_ids", "request.input_ids_l", "request.positive_size")}
    else:
        def condition(ids):
            pkg.expect("text_encoder", input_ids=ids)
            return dict(encoder_hidden_states=model("text_encoder", input_ids=value(ids))["encoder_hidden_states"])
        prompts = {"negative": condition("request.negative_input_ids"), "positive": condition("request.input_ids")}

    # The window of steps the loop runs.
    last_end, full_denoise = None, False
    if pkg.has("denoise_window") or pkg.has("step_window"):
        steps = int(value("package.steps")[0])  # the schedule length, as a literal input
        if steps != len(sigmas) - 1:
            raise AssertionError(f"{pkg_dir}: package.steps {steps}, schedule of {len(sigmas) - 1} steps")
    if pkg.has("denoise_window"):
        pkg.expect("denoise_window", steps="package.steps", denoise="request.denoise")
        denoise = value("request.denoise").astype(F32)[0]
        start = steps - int(np.round(F32(steps) * denoise))  # numpy rounds half to even
        iterations = steps - start
        facts.update(denoise=float(denoise))
    elif pkg.has("step_window"):
        pkg.expect("step_window", steps="package.steps", start="request.start_step", end="request.end_step")
        start, end = int(value("request.start_step")[0]), int(value("request.end_step")[0])
        last_end = min(end, steps)
        iterations = max(last_end - start, 0)
        full_denoise = pkg.params("solver_step").get("final_step") == "full_denoise"
        facts.update(end=end, last_end=last_end, full_denoise=full_denoise)
    else:
        start, iterations = 0, int(value("request.max_iterations")[0])
    facts.update(start=start, iterations=iterations)

    # The start latent.
    source = mask = None
    if pkg.has("inpaint_pixels"):
        pkg.expect("inpaint_pixels", image="request.image", mask="request.mask")
        p = pkg.params("inpaint_pixels")
        pixels = np.where(value("request.mask") > F32(p["threshold"]), F32(p["masked_value"]),
                          value("request.image")).astype(F32)
        source = model("vae_encoder", image=pixels)["latent"]
    elif pkg.has("vae_encoder"):
        pkg.expect("vae_encoder", image="request.image")
        source = model("vae_encoder", image=value("request.image"))["latent"]
    elif pkg.has("empty_latent"):
        source = np.zeros_like(noise, dtype=F32)
    if source is not None:
        source = source.astype(np.float64)
        x = add_noise(prediction, source, noise, sigmas[start], first=True)
    else:
        noise_scale = pkg.params("latent_noise")["scale"]
        if noise_scale == "initial_sigma":
            x = noise * (sigmas[0] if prediction == "flow" else sr.first_sample_scale(sigmas[0]))
        else:
            x = noise
    x = x.astype(F32).astype(np.float64)
    if pkg.has("latent_mask"):
        pkg.expect("latent_mask", mask="request.mask")
        p = pkg.params("latent_mask")
        grow = int(p["grow_mask_by"])
        # ComfyUI: VAEEncodeForInpaint rounds its mask and grows it by a
        # grow x grow window padded by ceil((grow - 1) / 2), cut back to the
        # mask's size; the sampler resizes the mask to the latent bilinearly.
        pixels = value("request.mask").astype(np.float64)
        if p.get("round"):
            pixels = np.round(pixels)
        if grow > 0:
            h, w = pixels.shape[-2:]
            pixels = max_pool(pixels, grow, 1, grow // 2)[..., :h, :w]  # grow // 2 = ceil((grow - 1) / 2)
        mask = bilinear(pixels, x.shape[-2], x.shape[-1])
        mask = mask.astype(F32).astype(np.float64)
        facts.update(grow=grow, mask_weight=round(float(mask.sum()), 4), cells=int(mask.size))

    # ControlNet.
    control = pkg.has("controlnet")
    if control:
        pkg.expect("controlnet", image="request.control_image")
        pkg.expect("control_scale", strength="request.control_strength", start="request.control_start",
                   end="request.control_end")
        control_image = value("request.control_image").astype(F32)
        strength, c_start, c_end = (value(n).astype(F32)[0] for n in
                                    ("request.control_strength", "request.control_start", "request.control_end"))
        facts.update(control_strength=float(strength), control_start=float(c_start), control_end=float(c_end))

    # The loop.
    for iteration in range(iterations):
        step = start + iteration
        sigma, sigma_next = sigmas[step], sigmas[step + 1]
        if full_denoise and step + 1 == last_end:
            sigma_next = 0.0
        sample = (x if prediction == "flow" else x / math.sqrt(sigma ** 2 + 1.0)).astype(F32)
        timestep = timesteps[step:step + 1]
        if control:
            percent = F32(step) / F32(len(sigmas) - 1)
            control_scale = strength if c_start <= percent < c_end else F32(0)
        preds = {}
        for name, cond in prompts.items():
            feed = dict(cond, sample=sample, timestep=timestep)
            if control:
                scale = control_scale if name in controlled else F32(0)
                residuals = model("controlnet", sample=sample, timestep=timestep,
                                  encoder_hidden_states=cond["encoder_hidden_states"], image=control_image,
                                  scale=np.asarray([scale], F32))
                feed.update(down_residuals=residuals["down_residuals"], mid_residual=residuals["mid_residual"])
            preds[name] = model("denoiser", **feed)["noise_pred"].astype(np.float64)
        d = preds["negative"] + (preds["positive"] - preds["negative"]) * cfg
        x = x + d * (sigma_next - sigma)
        if mask is not None:
            x = x * mask + add_noise(prediction, source, noise, sigmas[step + 1]) * (1.0 - mask)
        x = x.astype(F32).astype(np.float64)

    latent = x.astype(F32)
    image = model("vae_decoder", latent=latent)["image"].astype(F32)
    return {"image": image, "latent": latent}, facts


# --- the recipes --------------------------------------------------------------------

def photo():
    """The test picture: float32 [1, 3, 16, 16], channels sin(x/3), cos(y/4), sin((x+y)/5)."""
    y, x = np.mgrid[0:16, 0:16].astype(np.float64)
    return np.stack([np.sin(x / 3), np.cos(y / 4), np.sin((x + y) / 5)])[None].astype(F32)


def hole_mask():
    mask = np.zeros((1, 1, 16, 16), F32)
    mask[:, :, 6:8, 6:8] = 1  # at a cell corner: growth decides how many latent cells it reaches
    return mask


PROMPTS = {"request.input_ids": np.array([[1, 2, 3]], np.int64),
           "request.negative_input_ids": np.array([[4, 5, 6]], np.int64)}


def i64(v):
    return np.array([v], np.int64)


def f32(v):
    return np.array([v], F32)


# package -> [(recipe name, inputs, description(facts))]; the graph is
# fixtures/comfyui/patterns/<graph>.api.json.
RECIPES = {
    "tiny-img2img": [  # img2img.api.json
        ("photo", dict(PROMPTS, **{"request.image": photo()}),
         lambda f: f"img2img of the photo at the graph's denoise {f['denoise']:g} of {f['steps']} {f['spacing']} steps "
                   f"(starts at step {f['start']}), the graph's seed and cfg"),
        ("denoise_0p9", dict(PROMPTS, **{"request.image": photo(), "request.denoise": f32(0.9)}),
         lambda f: f"img2img of the photo at denoise 0.9 of {f['steps']} steps: {f['steps']} * 0.9 = 4.5 rounds half "
                   f"to even, so it starts at step {f['start']}"),
    ],
    "tiny-inpaint": [  # inpaint.api.json
        ("hole", dict(PROMPTS, **{"request.image": photo(), "request.mask": hole_mask()}),
         lambda f: f"inpainting a 2x2 hole in the photo (grown by a {f['grow']}-pixel window and resized "
                   f"bilinearly to the latent: weight {f['mask_weight']:g} over its {f['cells']} cells) over "
                   f"{f['steps']} steps from step {f['start']}"),
    ],
    "tiny-advanced": [  # ksampler-advanced.api.json
        ("steps_2_to_8", dict(PROMPTS),
         lambda f: f"KSamplerAdvanced steps {f['start']}..{f['end']} of {f['steps']} ({f['spacing']}) from an empty "
                   f"latent, the last step to sigma 0 (return_with_leftover_noise disabled)"),
        ("steps_4_to_end", dict(PROMPTS, **{"request.start_step": i64(4), "request.end_step": i64(10000)}),
         lambda f: f"KSamplerAdvanced from step {f['start']} with end_at_step {f['end']} (clipped to the "
                   f"{f['steps']} steps)"),
    ],
    "tiny-controlnet": [  # controlnet.api.json
        ("edges", dict(PROMPTS, **{"request.control_image": photo()}),
         lambda f: f"ControlNetApplyAdvanced with the photo as control image at strength {f['control_strength']:g} "
                   f"on both prompts from {f['control_start']:.0%} to {f['control_end']:.0%} of {f['steps']} steps"),
    ],
    "tiny-sdxl": [  # sdxl.api.json
        ("castle", {"request.input_ids": np.array([[1, 2, 3]], np.int64),
                    "request.input_ids_l": np.array([[7, 8, 9]], np.int64),
                    "request.negative_input_ids": np.array([[4, 5, 6]], np.int64),
                    "request.negative_input_ids_l": np.array([[3, 3, 3]], np.int64)},
         lambda f: f"SDXL prompts (text_g and text_l ids) over {f['steps']} steps with the graph's size conditioning"),
    ],
    "tiny-flow": [  # flow-sd3.api.json
        ("shift_3", dict(PROMPTS),
         lambda f: f"flow matching (SD3) over {f['steps']} {f['spacing']} steps at the graph's shift "
                   f"{f['shift']:g}"),
        ("shift_1", dict(PROMPTS, **{"request.flow_shift": f32(1.0)}),
         lambda f: f"flow matching (SD3) over {f['steps']} {f['spacing']} steps at shift {f['shift']:g} "
                   f"(the graph's is 3)"),
    ],
}


def tensor(array):
    array = np.asarray(array)
    if array.dtype == np.float32:
        data = [float(v) for v in array.reshape(-1)]
    elif array.dtype == np.int64:
        data = [int(v) for v in array.reshape(-1)]
    else:
        raise TypeError(f"unexpected dtype {array.dtype}")
    return {"dtype": str(array.dtype), "shape": list(array.shape), "data": data}


def recipe_text(pkg_dir, inputs, describe):
    outputs, facts = reference(pkg_dir, inputs)
    return json.dumps({
        "description": f"{describe(facts)}; {PROVENANCE}",
        "inputs": {k: tensor(v) for k, v in inputs.items()},
        "outputs": {k: tensor(v) for k, v in outputs.items()},
        "tolerance": TOLERANCE,
    }, indent=1) + "\n"


def main(argv):
    if len(argv) != 3 or argv[1] not in ("write", "check"):
        sys.exit(USAGE)
    mode, root = argv[1], argv[2]
    missing = [name for name in RECIPES if not os.path.isdir(os.path.join(root, name))]
    if missing:
        sys.exit(f"{root}: no package {', '.join(missing)}")
    differing = []
    for name, recipes in RECIPES.items():
        pkg_dir = os.path.join(root, name)
        for recipe, inputs, describe in recipes:
            path = os.path.join(pkg_dir, "recipes", recipe + ".json")
            text = recipe_text(pkg_dir, inputs, describe).encode()
            if mode == "write":
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(text)
                print(f"wrote {path}")
            else:
                try:
                    with open(path, "rb") as f:
                        current = f.read()
                except FileNotFoundError:
                    current = None
                if current != text:
                    differing.append(path)
    for path in differing:
        print(f"differs from the reference: {path}", file=sys.stderr)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
