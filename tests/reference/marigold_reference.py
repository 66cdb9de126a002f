"""Marigold's one step and post-processing, computed independently of the
package's policies.

ComfyUI runs Marigold from the VAE-encoded picture z with no noise
(DisableNoise) over the sigmas [0.5, 0] with euler. The model samples as
IMG_TO_IMG_VELOCITY (ModelSamplingAuraFlow's `sampling`): its start is z
itself (no noise mixed in), its input is unscaled, its timestep is the
sigma (AuraFlow's multiplier 1), and denoised = x - output, so euler's one
step from 0.5 to 0 lands on z - v. VAEDecode gives pixels in -1..1, clamped
to 0..1 as (x + 1) / 2; MarigoldV2PostProcess then makes:
- depth: the channels' mean d, (max(d) - d) / max(max(d) - min(d), 1e-6)
  per picture, on all three channels;
- normals: 2x - 1 over its L2 norm across channels (at least 1e-12),
  back to (n + 1) / 2;
- albedo: 12.92 x where x <= 0.0031308, else 1.055 x^(1/2.4) - 0.055.

The same holds for one step from any first sigma (a KSampler's, whose
noise that sampling ignores): the model's timestep is that sigma.

Usage: marigold_reference.py PACKAGE RECIPE MODE OUT_LATENT_NPY OUT_IMAGE_NPY [SIGMA]
"""
import json
import sys

import numpy as np
import onnxruntime as ort


def post(x, mode):
    if mode == "normals":
        n = x * 2.0 - 1.0
        norm = np.maximum(np.sqrt((n * n).sum(axis=1, keepdims=True)), 1e-12)
        return (n / norm + 1.0) * 0.5
    if mode == "albedo":
        curved = 1.055 * np.maximum(x, 0.0031308) ** (1.0 / 2.4) - 0.055
        return np.where(x <= 0.0031308, x * 12.92, curved)
    d = x.mean(axis=1, keepdims=True)
    lo = d.min(axis=(1, 2, 3), keepdims=True)
    hi = d.max(axis=(1, 2, 3), keepdims=True)
    out = (hi - d) / np.maximum(hi - lo, 1e-6)
    return np.repeat(out, 3, axis=1)


def main():
    pkg, recipe, mode, out_latent, out_image = sys.argv[1:6]
    sigma = float(sys.argv[6]) if len(sys.argv) > 6 else 0.5
    with open(recipe) as f:
        given = json.load(f)["inputs"]["request.image"]
    image = np.array(given["data"], dtype=np.float32).reshape(given["shape"])

    def session(name):
        return ort.InferenceSession(f"{pkg}/{name}/model.onnx", providers=["CPUExecutionProvider"])

    cond = session("loaded_conditioning").run(["encoder_hidden_states"], {})[0]
    z = session("vae_encoder").run(["latent"], {"image": image})[0]
    feeds = {
        "sample": z,
        "timestep": np.full([z.shape[0]], sigma, dtype=np.float32),
        "encoder_hidden_states": cond,
    }
    v = session("denoiser").run(["noise_pred"], feeds)[0]
    latent = z - v
    decoded = session("vae_decoder").run(["image"], {"latent": latent})[0]
    pixels = np.clip((decoded.astype(np.float64) + 1.0) / 2.0, 0.0, 1.0)
    np.save(out_latent, latent.astype(np.float32))
    np.save(out_image, post(pixels, mode).astype(np.float32))


if __name__ == "__main__":
    main()
