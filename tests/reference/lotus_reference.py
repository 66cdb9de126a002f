"""Lotus depth's one step, computed independently of the package's policies.

ComfyUI runs Lotus from the VAE-encoded picture with no noise
(DisableNoise) over the sigmas [first, 0] with euler. Its model predicts
the denoised latent (the IMG_TO_IMG sampling type) from the latent taken
unscaled, so euler's one step lands on the model's output at the
timestep of the first sigma: the index of SD's table sigma nearest in
log (999 for anything above the table's top, about 14.6). The model's
extra input y is the task embedding [sin 1, sin 0, cos 1, cos 0].

Usage: lotus_reference.py PACKAGE RECIPE LITERALS OUT_NPY, where
LITERALS is JSON {"prompt": [2048 numbers], "task": [4 numbers],
"first_sigma": number}: the package's own prompt (checked against
ComfyUI's node text elsewhere) and task, which is checked here.
"""
import json
import math
import sys

import numpy as np
import onnxruntime as ort


def sd_sigmas():
    """SD's 1000 training sigmas: scaled-linear betas from 0.00085 to 0.012."""
    betas = np.linspace(0.00085 ** 0.5, 0.012 ** 0.5, 1000, dtype=np.float64) ** 2
    alphas = np.cumprod(1.0 - betas)
    return ((1.0 - alphas) / alphas) ** 0.5


def main():
    pkg, recipe, literals, out = sys.argv[1:5]
    with open(literals) as f:
        lit = json.load(f)
    task = np.array(lit["task"], dtype=np.float32).reshape(1, 4)
    wanted = np.array([[math.sin(1.0), 0.0, math.cos(1.0), 1.0]], dtype=np.float32)
    assert np.array_equal(task, wanted), (task, wanted)
    prompt = np.array(lit["prompt"], dtype=np.float32).reshape(1, 2, 1024)
    with open(recipe) as f:
        given = json.load(f)["inputs"]["request.image"]
    image = np.array(given["data"], dtype=np.float32).reshape(given["shape"])

    def session(name):
        return ort.InferenceSession(f"{pkg}/{name}/model.onnx", providers=["CPUExecutionProvider"])

    latent = session("vae_encoder").run(["latent"], {"image": image})[0]
    t = float(np.argmin(np.abs(np.log(sd_sigmas()) - math.log(lit["first_sigma"]))))
    feeds = {
        "sample": latent,
        "timestep": np.full([latent.shape[0]], t, dtype=np.float32),
        "encoder_hidden_states": prompt,
        "y": task,
    }
    denoised = session("denoiser").run(["noise_pred"], feeds)[0]
    np.save(out, denoised)
    print(t)


if __name__ == "__main__":
    main()
