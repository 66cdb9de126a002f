#!/usr/bin/env python3
"""Kokoro-82M: `wfstudio bench` against a Python onnxruntime session on the
same model, feeds and intra-op thread count, in one run.

    python tests/reference/kokoro_bench.py [--rounds 3] [--runs 10] [--threads 2] [--wfstudio BIN]

Each round runs both in fresh processes, one after the other (which goes
first alternates): wfstudio's
bench of fixtures/real/kokoro-tts with its default recipe (the style policy
and the model), and a child of this script that loads the model with
onnxruntime (InferenceSession from the file path) and times the same
number of warm runs of the model on the recipe's tokens, the voice's style
row and speed. Prints per round and overall (median of the rounds):
median wall per run, session load time and peak RSS (each process's own,
from wait4), and the ratios wfstudio / Python.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "fixtures", "real", "kokoro-tts")
RECIPE = os.path.join(PACKAGE, "recipes", "default.json")


def python_child(runs, threads):
    import onnxruntime as ort
    with open(RECIPE, encoding="utf-8") as f:
        inputs = json.load(f)["inputs"]
    tokens = np.asarray(inputs["request.input_ids"]["data"], np.int64).reshape(1, -1)
    voices = np.load(os.path.join(PACKAGE, "source", "voices_ja.npz"))
    names = list(voices.files)
    table = voices[names[inputs["request.voice"]["data"][0]]]
    style = table[min(tokens.shape[1] - 2, len(table)) - 1].reshape(1, 256).astype(np.float32)
    speed = np.asarray(inputs["request.speed"]["data"], np.float32)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    start = time.perf_counter()
    session = ort.InferenceSession(os.path.join(PACKAGE, "model", "kokoro-v1.0.int8.onnx"),
                                   sess_options=options, providers=["CPUExecutionProvider"])
    load = time.perf_counter() - start
    feed = {"tokens": tokens, "style": style, "speed": speed}
    walls = []
    for i in range(runs + 1):
        start = time.perf_counter()
        session.run(None, feed)
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--wfstudio", default=os.path.join(ROOT, "target", "release", "wfstudio"))
    parser.add_argument("--python-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.python_child:
        python_child(args.runs, args.threads)
        return
    rows = []
    for round_ in range(args.rounds):
        rust_command = [args.wfstudio, "bench", PACKAGE, "--recipe", RECIPE, "--runs", str(args.runs),
                        "--threads", str(args.threads), "--format", "json"]
        py_command = [sys.executable, __file__, "--python-child", "--runs", str(args.runs),
                      "--threads", str(args.threads)]
        # Alternate which goes first, so that neither always meets the
        # other's after-effects (page cache, clock).
        if round_ % 2:
            py, py_rss = measured(py_command)
            rust, rust_rss = measured(rust_command)
        else:
            rust, rust_rss = measured(rust_command)
            py, py_rss = measured(py_command)
        row = dict(wall=(rust["median_wall_ms"], py["median_wall_ms"]), load=(rust["load_ms"], py["load_ms"]),
                   rss=(rust_rss, py_rss))
        rows.append(row)
        print(f"round {round_ + 1}: " + ", ".join(
            f"{k} wfstudio {a:.1f} / python {b:.1f} = {a / b:.3f}" for k, (a, b) in row.items()))
    print(f"kokoro-82M, {args.threads} threads, {args.rounds} rounds of {args.runs} warm runs "
          "(medians of the rounds; wall and load in ms, peak RSS in MiB):")
    for key in ("wall", "load", "rss"):
        ours = statistics.median(r[key][0] for r in rows)
        theirs = statistics.median(r[key][1] for r in rows)
        print(f"  {key:4}: wfstudio {ours:8.1f}  python {theirs:8.1f}  ratio {ours / theirs:.3f}")


if __name__ == "__main__":
    main()
