#!/usr/bin/env python3
"""The real models: `wfstudio bench` against Python onnxruntime on the same
model files, feeds and intra-op thread count, in one run.

    python tests/reference/real_models_bench.py kokoro  [--rounds 10] [--runs 5] [--threads 2]
    python tests/reference/real_models_bench.py terrain [--steps 1] [--rounds 10] [--runs 5] [--threads 1]

Each round runs both in fresh processes, one after the other (which goes
first alternates): wfstudio's bench of the package (fixtures/real/...) on a
recipe, and a child of this script that loads the model with onnxruntime
(InferenceSession from the file path) and times the same number of warm
runs of the same work done directly: for kokoro the model on the default
recipe's tokens, the voice's style row and speed; for terrain `--steps`
calls of the UNet on the same noise, sigmas and difficulty (the
re-noising between steps in numpy). Prints per round and overall (median
of the rounds): median wall per run, load time and peak RSS (each
process's own, from wait4), and the ratios wfstudio / Python. "session"
is the model's session made on a started runtime on both sides: Python's
from the file once `import onnxruntime` has loaded the library and made
its environment, wfstudio's the model component's (`session_load_ms`,
its scan beside it) once ONNX Runtime has started (`runtime_start_ms`,
timed apart). "package" is wfstudio's whole load (document, validation,
every session: the policies too, which Python's script does in numpy)
against the same Python session.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KOKORO = os.path.join(ROOT, "fixtures", "real", "kokoro-tts")
TERRAIN = os.path.join(ROOT, "fixtures", "real", "terrain-diffusion")
# The component of each package that holds the model Python loads.
MODEL_COMPONENT = {"kokoro": "kokoro", "terrain": "unet"}


def session(path, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    start = time.perf_counter()
    made = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
    return made, time.perf_counter() - start


def kokoro_work(threads):
    with open(os.path.join(KOKORO, "recipes", "default.json"), encoding="utf-8") as f:
        inputs = json.load(f)["inputs"]
    tokens = np.asarray(inputs["request.input_ids"]["data"], np.int64).reshape(1, -1)
    voices = np.load(os.path.join(KOKORO, "source", "voices_ja.npz"))
    table = voices[list(voices.files)[inputs["request.voice"]["data"][0]]]
    style = table[min(tokens.shape[1] - 2, len(table)) - 1].reshape(1, 256).astype(np.float32)
    speed = np.asarray(inputs["request.speed"]["data"], np.float32)
    model, load = session(os.path.join(KOKORO, "model", "kokoro-v1.0.int8.onnx"), threads)
    feed = {"tokens": tokens, "style": style, "speed": speed}
    return load, lambda: model.run(None, feed)


def terrain_work(threads, steps):
    model, load = session(os.path.join(TERRAIN, "model", "terrain_consistency_unet_difficulty100.onnx"),
                          threads)
    noise = np.random.default_rng(7).standard_normal((1, 1, 128, 128), dtype=np.float32)
    a, b = 80.0 ** (1 / 7), 0.002 ** (1 / 7)
    sigmas = [(a + k / steps * (b - a)) ** 7 for k in range(steps)]
    difficulty = np.asarray([50.0 / 99.0], np.float32)

    def run():
        x = noise * np.float32(80.0)
        for k, sigma in enumerate(sigmas):
            denoised = model.run(None, {"noisy": x, "sigma": np.asarray([sigma], np.float32),
                                        "difficulty": difficulty})[0]
            if k + 1 < steps:  # re-noised with the start's noise: the same work as fresh noise
                x = denoised + np.float32(np.sqrt(sigmas[k + 1] ** 2 - 0.002 ** 2)) * noise
    return load, run


def python_child(args):
    load, run = kokoro_work(args.threads) if args.package == "kokoro" else terrain_work(args.threads, args.steps)
    walls = []
    for i in range(args.runs + 1):
        start = time.perf_counter()
        run()
        if i:
            walls.append(time.perf_counter() - start)
    print(json.dumps({"load_ms": load * 1e3, "median_wall_ms": statistics.median(walls) * 1e3}))


def measured(command):
    """Runs `command`; its JSON line and its own peak RSS in MiB."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = child.stdout.read()
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        sys.exit(f"{' '.join(command)} failed:\n{err}")
    line = [l for l in out.splitlines() if l.startswith("{")][-1]
    return json.loads(line), usage.ru_maxrss / 1024.0


def bench_recipe(args, folder):
    """The recipe wfstudio runs: kokoro's default; for terrain one row,
    difficulty 50, `--steps` steps, seed 7."""
    if args.package == "kokoro":
        return os.path.join(KOKORO, "recipes", "default.json")
    path = os.path.join(folder, "terrain.json")
    recipe = {"inputs": {
        "request.seed": {"dtype": "int64", "shape": [1], "data": [7]},
        "request.difficulty": {"dtype": "int64", "shape": [1], "data": [50]},
        "request.steps": {"dtype": "int64", "shape": [1], "data": [args.steps]}}, "outputs": {}}
    with open(path, "w") as f:
        json.dump(recipe, f)
    return path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("package", choices=["kokoro", "terrain"])
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--wfstudio", default=os.path.join(ROOT, "target", "release", "wfstudio"))
    parser.add_argument("--python-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads is None:
        args.threads = 2 if args.package == "kokoro" else 1
    if args.python_child:
        python_child(args)
        return
    package = KOKORO if args.package == "kokoro" else TERRAIN
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        recipe = bench_recipe(args, folder)
        rust_command = [args.wfstudio, "bench", package, "--recipe", recipe, "--runs", str(args.runs),
                        "--threads", str(args.threads), "--format", "json"]
        py_command = [sys.executable, __file__, args.package, "--python-child", "--runs", str(args.runs),
                      "--threads", str(args.threads), "--steps", str(args.steps)]
        for round_ in range(args.rounds):
            # Alternate which goes first, so that neither always meets the
            # other's after-effects (page cache, clock).
            if round_ % 2:
                py, py_rss = measured(py_command)
                rust, rust_rss = measured(rust_command)
            else:
                rust, rust_rss = measured(rust_command)
                py, py_rss = measured(py_command)
            model = rust["session_load_ms"][MODEL_COMPONENT[args.package]]
            row = dict(wall=(rust["median_wall_ms"], py["median_wall_ms"]), session=(model, py["load_ms"]),
                       package=(rust["load_ms"], py["load_ms"]), rss=(rust_rss, py_rss))
            rows.append(row)
            print(f"round {round_ + 1}: " + ", ".join(
                f"{k} wfstudio {a:.1f} / python {b:.1f} = {a / b:.3f}" for k, (a, b) in row.items()))
    what = f"{args.package}" + (f", {args.steps} steps" if args.package == "terrain" else "")
    print(f"{what}, {args.threads} threads, {args.rounds} rounds of {args.runs} warm runs "
          "(medians of the rounds; wall and load in ms, peak RSS in MiB):")
    for key in ("wall", "session", "package", "rss"):
        ours = statistics.median(r[key][0] for r in rows)
        theirs = statistics.median(r[key][1] for r in rows)
        print(f"  {key:7}: wfstudio {ours:8.1f}  python {theirs:8.1f}  ratio {ours / theirs:.3f}")


if __name__ == "__main__":
    main()
