#!/usr/bin/env python3
"""The terrain consistency model fed directly with onnxruntime: the
independent reference for fixtures/real/terrain-diffusion.

    python tests/reference/terrain_reference.py PACKAGE_DIR INPUTS.npz OUT.npy
    python tests/reference/terrain_reference.py --case STEPS fresh|seeded|variation DIR

INPUTS.npz holds `seed` [b], `difficulty` [b] (classes 0..99, fed as
class / 99 as generator.py feeds its 1..100 as (class - 1) / 99), `steps`
[1], optionally `noise` [b, 1, 128, 128] (else the seeded noise at offset
0), and for a variation `source` [b, 128, 128] and `strength` [1].
Recomputes with numpy, from the published rules (the package's
generator.py; Song et al. 2023 for the multistep rule), and writes the
heights [b, 128, 128]:

* start: fresh `noise * 80` at sigma 80; variation: the source to model space
  (lowest point at 0, clip to [0, H], asinh(h / 0.1) / asinh(H / 0.1) * 2 - 1)
  plus `noise * sigma`, sigma = 0.002 * (80 / 0.002) ** strength;
* schedule: sigma_k = (a + k / steps * (b - a)) ** 7, a = sigma_start ** (1/7),
  b = 0.002 ** (1/7), k = 0..steps-1;
* each step: denoised = model(x, sigma_k, difficulty); before the next step
  x = denoised + sqrt(sigma_(k+1)^2 - 0.002^2) * z_k, z_k the counter-hash
  noise of each row's seed at offset k + 1 (sampler_reference.noise; row r
  continues its seed's stream after r rows' worth);
* heights: 0.1 * sinh(clip((v + 1) / 2, 0, 1) * asinh(H / 0.1)), clip to [0, H]
  (in float32, the output's dtype).

`--case` writes a test case into DIR: `inputs.npz` and the same inputs as
the package's recipe `recipe.json` (two rows: seeds 5 and 9, difficulties
50 and 20; `fresh` and `variation` give numpy noise from seed 7 as the
request's noise, `seeded` leaves the noise to the seeds; a variation adds a
source terrain and strength 0.4).
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampler_reference as sr  # noqa: E402  (the counter-hash noise)

F32 = np.float32
H, SCALE, SIGMA_MIN, SIGMA_MAX = 22.16864013671875, 0.1, 0.002, 80.0
NORMALIZER = np.arcsinh(H / SCALE)


def to_model(heights):
    v = heights - heights.min(axis=(-2, -1), keepdims=True)
    v = np.clip(v, 0.0, H)
    return ((np.arcsinh(v / SCALE) / NORMALIZER) * 2.0 - 1.0)[:, None]


def to_heights(model):
    """In float32, as the package's output is."""
    v = model[:, 0].astype(F32)
    unit = np.clip((v + F32(1.0)) * F32(0.5), F32(0.0), F32(1.0))
    return np.clip(F32(SCALE) * np.sinh(unit * F32(NORMALIZER)), F32(0.0), F32(H))


def main(package, inputs, out):
    feed = np.load(inputs)
    rows = len(feed["seed"])
    if "noise" in feed.files:
        noise = feed["noise"].astype(np.float64)
    else:  # the seeded noise at offset 0; row r continues its seed's stream
        noise = np.stack([sr.noise(int(s), 0, (1, 128, 128), rows=r + 1)[r]
                          for r, s in enumerate(feed["seed"])])
    # The classes 0..99 as generator.py feeds its 1..100: (class - 1) / 99.
    seeds = feed["seed"]
    difficulty = (feed["difficulty"].astype(np.float64) / 99.0).astype(F32)
    steps = int(feed["steps"][0])
    if "source" in feed.files:
        sigma_start = SIGMA_MIN * (SIGMA_MAX / SIGMA_MIN) ** float(feed["strength"][0])
        x = to_model(feed["source"].astype(np.float64)) + noise * sigma_start
    else:
        sigma_start = SIGMA_MAX
        x = noise * sigma_start
    a, b = sigma_start ** (1 / 7), SIGMA_MIN ** (1 / 7)
    sigmas = [(a + k / steps * (b - a)) ** 7 for k in range(steps)]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # as `wfstudio run` (its default --threads)
    session = ort.InferenceSession(
        os.path.join(package, "model", "terrain_consistency_unet_difficulty100.onnx"),
        sess_options=options, providers=["CPUExecutionProvider"])
    for k, sigma in enumerate(sigmas):
        denoised = session.run(None, {"noisy": x.astype(F32), "sigma": np.full(rows, sigma, F32),
                                      "difficulty": difficulty})[0].astype(np.float64)
        if k + 1 < steps:
            # Row r continues its seed's stream after r rows' worth.
            z = np.stack([sr.noise(int(s), k + 1, (1, 128, 128), rows=r + 1)[r]
                          for r, s in enumerate(seeds)])
            x = denoised + np.sqrt(sigmas[k + 1] ** 2 - SIGMA_MIN ** 2) * z
        else:
            x = denoised
    np.save(out, to_heights(x).astype(F32))


def write_case(steps, kind, out_dir):
    noise = np.random.default_rng(7).standard_normal((2, 1, 128, 128), dtype=F32)
    arrays = {"seed": np.asarray([5, 9], np.int64),
              "difficulty": np.asarray([50, 20], np.int64), "steps": np.asarray([int(steps)], np.int64)}
    names = {"noise": "request.noise", "seed": "request.seed", "difficulty": "request.difficulty",
             "steps": "request.steps"}
    if kind != "seeded":
        arrays["noise"] = noise
    if kind == "variation":
        y, x = np.mgrid[0:128, 0:128].astype(np.float64)
        hill = 12.0 * np.exp(-((x - 64) ** 2 + (y - 50) ** 2) / 800.0) + 0.02 * x
        arrays.update(source=np.stack([hill, hill[::-1]]).astype(F32), strength=np.asarray([0.4], F32))
        names.update(source="request.source", strength="request.strength")
    os.makedirs(out_dir, exist_ok=True)
    np.savez(os.path.join(out_dir, "inputs.npz"), **arrays)
    recipe = {"inputs": {names[k]: {"dtype": str(a.dtype), "shape": list(a.shape), "data": a.ravel().tolist()}
                         for k, a in arrays.items()}, "outputs": {}}
    with open(os.path.join(out_dir, "recipe.json"), "w") as f:
        json.dump(recipe, f)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--case":
        write_case(*sys.argv[2:])
    elif len(sys.argv) == 4:
        main(*sys.argv[1:])
    else:
        sys.exit(__doc__.split("\n\n")[1])
