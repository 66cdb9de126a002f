#!/usr/bin/env python3
"""Generates the recipes of our hand-made example packages, with expected
outputs computed independently with numpy, and the ComfyUI fixture images.

    .venv/bin/python scripts/gen_fixtures.py          # write the files
    .venv/bin/python scripts/gen_fixtures.py --check  # fail if they differ

The example packages' models are built by the product's ONNX graph builder
(tests/support/example_models.rs; tests/example_packages.rs keeps them
current), and the ComfyUI examples (tiny-img2img, ...) are written by
`wfstudio import-comfyui --package-out --stand-in-models`, their recipes by
tests/reference/diffusion_reference.py. What the models compute, which the
references below restate in numpy:

tiny-denoise: a 4-step denoising loop. The denoiser pulls a noisy 4x8x8
latent halfway towards a fixed latent picture (a ring with two eyes: a
smiley) each step; the decoder upsamples it to 3x32x32 and maps it to RGB in
[-1, 1].

tiny-tone: an 8-step audio loop. Each iteration synthesises 0.1 s of a sine
tone at 16 kHz whose pitch walks up a C-major scale, carrying the phase so
the notes join without clicks; the emits append into one waveform.

tiny-words: a text loop. A word-level tokenizer (tokenizer.json, written
here) turns the prompt into ids; each iteration looks up the word that
follows the current one in a fixed sentence ("hello world , this tiny
model speaks one word at a time .") and stops after the end-of-sequence id.
The emits append the generated ids, which the studio decodes to text.

comfyui/txt2img-sd15.{png,webp}: our own txt2img API graph
(comfyui/txt2img-sd15.api.json) embedded the way ComfyUI's image savers
embed it, written with Pillow as ComfyUI does: a PNG `tEXt` chunk `prompt`,
and a WebP EXIF IFD0 ASCII tag 0x0110 "prompt:<json>".
"""

import io
import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image, PngImagePlugin

ROOT = Path(__file__).resolve().parent.parent / "fixtures"


def smiley_latent():
    """A yellow face with dark eyes and mouth on a blue background."""
    y, x = np.mgrid[0:8, 0:8].astype(np.float32)
    face = np.hypot(x - 3.5, y - 3.5) < 3.7
    features = np.zeros((8, 8), bool)
    features[2, 2] = features[2, 5] = True
    features[5, 2:6] = True
    features[4, 1] = features[4, 6] = True
    skin = face & ~features
    background = ~face
    latent = np.full((4, 8, 8), -1.0, np.float32)
    latent[0][skin] = 1.0
    latent[1][skin] = 0.8
    latent[2][background] = 0.9
    latent[1][background] = -0.3
    return latent


MIX = np.array(
    [[1.6, 0.0, 0.0, 0.0], [0.0, 1.6, 0.0, 0.0], [0.0, 0.0, 1.6, 0.2]], np.float32
)


def denoise_reference(noise, steps):
    latent = noise.copy()
    target = smiley_latent()[None]
    for _ in range(steps):
        latent = latent + (target - latent) * np.float32(0.5)
    up = latent.repeat(4, axis=2).repeat(4, axis=3)
    rgb = np.einsum("oc,bchw->bohw", MIX, up)
    return np.tanh(rgb).astype(np.float32)


RATE = 16000
CHUNK = 1600
SCALE = np.array([261.63, 293.66, 329.63, 349.23, 392.0, 440.0, 493.88, 523.25], np.float32)
TWO_PI = np.float32(2 * np.pi)


def tone_reference(steps):
    phase = np.zeros(1, np.float32)
    t = np.arange(CHUNK, dtype=np.float32) / np.float32(RATE)
    chunks = []
    for step in range(steps):
        omega = SCALE[step] * TWO_PI
        chunks.append((np.sin(omega * t + phase) * np.float32(0.3)).astype(np.float32))
        phase = np.fmod(phase + omega * np.float32(CHUNK / RATE), TWO_PI).astype(np.float32)
    return np.concatenate(chunks).reshape(1, 1, -1)


SPECIALS = ["<unk>", "<bos>", "<eos>"]
SENTENCE = "hello world , this tiny model speaks one word at a time .".split()
VOCAB = {word: i for i, word in enumerate(SPECIALS + SENTENCE)}
EOS = VOCAB["<eos>"]


def successor_table():
    """next[id]: the word after `id` in the sentence; the end and unknown words lead to <eos>."""
    table = np.full(len(VOCAB), EOS, np.int64)
    table[VOCAB["<bos>"]] = VOCAB[SENTENCE[0]]
    for word, following in zip(SENTENCE, SENTENCE[1:]):
        table[VOCAB[word]] = VOCAB[following]
    return table


def words_tokenizer():
    """A Hugging Face tokenizer.json: lower-cased, split on whitespace and punctuation, <bos> prepended."""
    special = lambda token: {"id": VOCAB[token], "content": token, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [special(t) for t in SPECIALS],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<bos>": {"id": "<bos>", "ids": [VOCAB["<bos>"]], "tokens": ["<bos>"]}},
        },
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": VOCAB, "unk_token": "<unk>"},
    }


def words_reference(prompt_ids, limit):
    table = successor_table()
    word, out = prompt_ids[-1], []
    for _ in range(limit):
        word = table[word]
        out.append(word)
        if word == EOS:
            break
    return np.array([out], np.int64)


def tensor(array):
    data = array.reshape(-1).tolist()
    dtype = {np.dtype(np.float32): "float32", np.dtype(np.int64): "int64", np.dtype(bool): "bool"}[array.dtype]
    if dtype == "float32":
        data = [float(np.float32(v)) for v in data]
    return {"dtype": dtype, "shape": list(array.shape), "data": data}


def recipe(description, inputs, outputs, tolerance):
    return json.dumps(
        {
            "description": description,
            "inputs": {k: tensor(v) for k, v in inputs.items()},
            "outputs": {k: tensor(v) for k, v in outputs.items()},
            "tolerance": tolerance,
        },
        indent=1,
    ) + "\n"


def files():
    noise = (np.sin(np.arange(4 * 8 * 8, dtype=np.float32) * np.float32(1.7)) * np.float32(1.5)).reshape(1, 4, 8, 8).astype(np.float32)
    steps = 4
    yield "examples/tiny-denoise/recipes/smiley.json", recipe(
        "4 denoising steps from a fixed noise latent; expected image computed with numpy by scripts/gen_fixtures.py",
        {
            "request.latent": noise,
            "request.steps": np.array([steps], np.int64),
            "package.continue": np.array([True]),
        },
        {"image": denoise_reference(noise, steps)},
        {"abs": 1e-5, "rel": 1e-5},
    ).encode()
    yield "examples/tiny-tone/recipes/scale.json", recipe(
        "8 notes of a C-major scale, 0.1 s each at 16 kHz; expected waveform computed with numpy by scripts/gen_fixtures.py",
        {
            "request.notes": np.array([8], np.int64),
            "package.continue": np.array([True]),
            "package.phase0": np.zeros(1, np.float32),
        },
        {"audio": tone_reference(8)},
        {"abs": 1e-4, "rel": 1e-5},
    ).encode()
    yield "examples/tiny-words/tokenizer.json", (json.dumps(words_tokenizer(), indent=1) + "\n").encode()
    prompt = np.array([VOCAB["<bos>"], VOCAB["hello"]], np.int64)
    yield "examples/tiny-words/recipes/hello.json", recipe(
        'the prompt "hello" (ids of <bos> hello); expected ids, up to and including <eos>, computed with numpy by scripts/gen_fixtures.py',
        {"request.input_ids": prompt[None], "request.max_new_tokens": np.array([16], np.int64)},
        {"tokens": words_reference(prompt, 16)},
        {"abs": 0, "rel": 0},
    ).encode()


def comfyui_images():
    """The txt2img API graph embedded in a PNG and in a WebP, as ComfyUI saves them."""
    prompt = json.dumps(json.loads((ROOT / "comfyui" / "txt2img-sd15.api.json").read_text()))
    picture = Image.new("RGB", (8, 8), (40, 90, 160))
    info = PngImagePlugin.PngInfo()
    info.add_text("prompt", prompt)
    png = io.BytesIO()
    picture.save(png, format="PNG", pnginfo=info)
    yield "comfyui/txt2img-sd15.png", png.getvalue()
    exif = picture.getexif()
    exif[0x0110] = "prompt:" + prompt
    webp = io.BytesIO()
    picture.save(webp, format="WEBP", lossless=True, exif=exif)
    yield "comfyui/txt2img-sd15.webp", webp.getvalue()


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for relative, content in [*files(), *comfyui_images()]:
        path = ROOT / relative
        if check:
            if not path.is_file() or path.read_bytes() != content:
                stale.append(relative)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        print(f"wrote {path.relative_to(ROOT.parent)}")
    if stale:
        print("stale generated fixtures (run scripts/gen_fixtures.py):", ", ".join(stale), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
