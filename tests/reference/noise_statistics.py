#!/usr/bin/env python3
"""Statistics of a synthesized `latent_noise` policy (contract scale `unit`).

    python tests/reference/noise_statistics.py POLICY.onnx

Runs the policy with onnxruntime and checks that its noise
* equals the independent generator in sampler_reference.py (SplitMix64 +
  Box-Muller) to 1e-5, also for a seed above 2^63 (stored as a negative int64),
* is standard normal: mean, standard deviation, kurtosis and the
  Kolmogorov-Smirnov distance to the normal CDF over 65,536 values,
* is uncorrelated between the rows of a batch, between neighbouring seeds,
  seeds 2^32 apart and neighbouring offsets, between neighbouring elements,
  and at every circular shift against another seed's or offset's noise (a
  generator linear in its counter gives shifted copies).
Prints the figures; exits non-zero naming the first check that fails.
"""
import math
import os
import sys

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampler_reference as sr  # noqa: E402

ROW = (4, 64, 64)
ROWS = 4


def draw(session, seed, offset, rows=ROWS):
    feed = {"seed": np.full([rows], seed, np.int64), "offset": np.full([rows], offset, np.int64),
            "row_shape": np.asarray(ROW, np.int64)}
    return session.run(["noise"], feed)[0].astype(np.float64)


def corr(a, b):
    a, b = a.ravel() - a.mean(), b.ravel() - b.mean()
    return float(np.dot(a, b) / math.sqrt(np.dot(a, a) * np.dot(b, b)))


def shifted_corr(a, b):
    """The largest |correlation| of a with b circularly shifted by any amount
    (FFT cross-correlation over all len(a) shifts): a generator whose streams
    are shifted copies of each other scores near 1, independent ones about
    4.5 / sqrt(len(a))."""
    a, b = a.ravel() - a.mean(), b.ravel() - b.mean()
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    cross = np.fft.irfft(np.fft.rfft(a) * np.conj(np.fft.rfft(b)), n=a.size)
    return float(np.max(np.abs(cross)))


def check(name, value, limit):
    ok = abs(value) <= limit
    print(f"{name}: {value:.5f} (limit {limit})")
    if not ok:
        sys.exit(f"FAILED: {name} = {value}, beyond {limit}")


def main(policy):
    session = ort.InferenceSession(policy, providers=["CPUExecutionProvider"])
    z = draw(session, 42, 0)
    check("largest difference from the reference generator",
          float(np.abs(z - sr.noise(42, 0, ROW, rows=ROWS)).max()), 1e-5)
    check("seed 2^64 - 1 (int64 -1): largest difference from the reference",
          float(np.abs(draw(session, -1, 0) - sr.noise(2 ** 64 - 1, 0, ROW, rows=ROWS)).max()), 1e-5)
    flat = np.sort(z.ravel())
    n = flat.size
    check("mean", float(flat.mean()), 0.02)
    check("standard deviation - 1", float(flat.std() - 1.0), 0.02)
    check("kurtosis - 3", float(np.mean(flat ** 4) / flat.var() ** 2 - 3.0), 0.1)
    cdf = np.asarray([0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in flat])
    ks = max(float(np.max(np.arange(1, n + 1) / n - cdf)), float(np.max(cdf - np.arange(n) / n)))
    check("Kolmogorov-Smirnov distance", ks, 0.01)
    check("correlation of batch rows 0 and 1", corr(z[0], z[1]), 0.04)
    check("correlation of neighbouring elements", corr(z.ravel()[:-1], z.ravel()[1:]), 0.02)
    check("correlation of seeds 42 and 43", corr(z, draw(session, 43, 0)), 0.02)
    check("correlation of seeds 42 and 42 + 2^32", corr(z, draw(session, 42 + 2 ** 32, 0)), 0.02)
    check("correlation of offsets 0 and 1", corr(z, draw(session, 42, 1)), 0.02)
    for name, other in [("seed 43", draw(session, 43, 0)), ("offset 1", draw(session, 42, 1)),
                        ("seed 42 + 2^32", draw(session, 42 + 2 ** 32, 0))]:
        check(f"largest correlation with {name} at any circular shift", shifted_corr(z, other), 0.03)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    main(sys.argv[1])
