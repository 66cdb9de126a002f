#!/usr/bin/env python3
"""Generates the ONNX components of our example packages and their recipes.

    .venv/bin/python scripts/gen_fixtures.py          # write the files
    .venv/bin/python scripts/gen_fixtures.py --check  # fail if they differ

tiny-denoise: a 4-step denoising loop. The denoiser pulls a noisy 4x8x8
latent halfway towards a fixed latent picture (a ring with two eyes: a
smiley) each step; the decoder upsamples it to 3x32x32 and maps it to RGB in
[-1, 1]. Written as binary .onnx files.

tiny-tone: an 8-step audio loop. Each iteration synthesises 0.1 s of a sine
tone at 16 kHz whose pitch walks up a C-major scale, carrying the phase so
the notes join without clicks; the emits append into one waveform. Written
as ONNX TextFormat (.onnx.textproto).

tiny-words: a text loop. A word-level tokenizer (tokenizer.json, written
here) turns the prompt into ids; each iteration looks up the word that
follows the current one in a fixed sentence ("hello world , this tiny
model speaks one word at a time .") and stops after the end-of-sequence id.
The emits append the generated ids, which the studio decodes to text.

tiny-img2img (and tiny-inpaint): the components of the default package layout that the
ComfyUI importer lowers fixtures/comfyui/patterns/img2img.api.json to
(docs/COMFYUI.md): a 16x16 picture is encoded to a 4x2x2 latent, noised to
the start step steps - round_half_even(steps * denoise) of a 5-step sigma
schedule, denoised by an Euler solver with classifier-free guidance for the
remaining steps, and decoded back to 16x16. Its inference_metadata.yaml is
the importer's output (`wfstudio import-comfyui ... --package`), not
written here. ONNX TextFormat. tiny-inpaint adds the three inpainting
policies for fixtures/comfyui/patterns/inpaint.api.json (VAEEncodeForInpaint,
grow_mask_by 6): the masked pixels are greyed before encoding, the mask is
grown and reduced to the latent grid, and after every step the latent
outside the mask is reset to the source noised to the next step.
tiny-controlnet runs fixtures/comfyui/patterns/controlnet.api.json
(ControlNetApplyAdvanced on both prompts, strength 0.9, active for the
first 60 % of the schedule): a control model turns the control picture and
the sample into residuals that the denoiser adds. tiny-flow runs fixtures/comfyui/patterns/flow-sd3.api.json (ModelSamplingSD3,
shift 3, 16-channel latent): the schedule policies shift a 5-step flow
schedule by the typed shift input, the model input is the sample itself, and
the Euler solver follows the predicted velocity down to sigma 0. tiny-sdxl runs
fixtures/comfyui/patterns/sdxl.api.json (CLIPTextEncodeSDXL on both
prompts): two text encoders whose states are concatenated, a pooled
embedding and size conditioning that the denoiser adds. tiny-advanced runs
fixtures/comfyui/patterns/ksampler-advanced.api.json
(KSamplerAdvanced, steps 2..8 of 10 on an empty 16x16 latent, noise added,
no leftover noise: the last step runs to sigma 0).

Each package gets a recipe whose expected outputs are computed here with
numpy, independently of the runner.

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
import onnx
from google.protobuf import text_format
from onnx import TensorProto, helper, numpy_helper
from PIL import Image, PngImagePlugin

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
OPSET = [helper.make_opsetid("", 21)]


def model(graph):
    m = helper.make_model(graph, opset_imports=OPSET, producer_name="wfstudio-gen-fixtures")
    m.ir_version = 10
    onnx.checker.check_model(m)
    return m


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


def denoise_models():
    target = numpy_helper.from_array(smiley_latent()[None], "target")
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    denoiser = helper.make_graph(
        [
            helper.make_node("Sub", ["target", "latent"], ["gap"]),
            helper.make_node("Mul", ["gap", "half"], ["move"]),
            helper.make_node("Add", ["latent", "move"], ["next_latent"]),
        ],
        "denoiser",
        [
            helper.make_tensor_value_info("latent", TensorProto.FLOAT, ["batch", 4, 8, 8]),
            helper.make_tensor_value_info("step", TensorProto.INT64, []),
        ],
        [helper.make_tensor_value_info("next_latent", TensorProto.FLOAT, ["batch", 4, 8, 8])],
        [target, half],
    )
    weights = numpy_helper.from_array(MIX.reshape(3, 4, 1, 1), "mix")
    scales = numpy_helper.from_array(np.array([1, 1, 4, 4], np.float32), "scales")
    decoder = helper.make_graph(
        [
            helper.make_node("Resize", ["latent", "", "scales"], ["up"], mode="nearest"),
            helper.make_node("Conv", ["up", "mix"], ["rgb"]),
            helper.make_node("Tanh", ["rgb"], ["image"]),
        ],
        "decoder",
        [helper.make_tensor_value_info("latent", TensorProto.FLOAT, ["batch", 4, 8, 8])],
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [weights, scales],
    )
    return model(denoiser), model(decoder)


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


def tone_model():
    table = numpy_helper.from_array(SCALE, "scale_hz")
    t = numpy_helper.from_array((np.arange(CHUNK, dtype=np.float32) / RATE), "t")
    two_pi = numpy_helper.from_array(np.array(TWO_PI, np.float32), "two_pi")
    amplitude = numpy_helper.from_array(np.array(0.3, np.float32), "amplitude")
    advance = numpy_helper.from_array(np.array(CHUNK / RATE, np.float32), "advance")
    shape = numpy_helper.from_array(np.array([1, 1, CHUNK], np.int64), "chunk_shape")
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["scale_hz", "step"], ["hz"]),
            helper.make_node("Mul", ["hz", "two_pi"], ["omega"]),
            helper.make_node("Mul", ["omega", "t"], ["angle0"]),
            helper.make_node("Add", ["angle0", "phase"], ["angle"]),
            helper.make_node("Sin", ["angle"], ["wave"]),
            helper.make_node("Mul", ["wave", "amplitude"], ["quiet"]),
            helper.make_node("Reshape", ["quiet", "chunk_shape"], ["chunk"]),
            helper.make_node("Mul", ["omega", "advance"], ["turn"]),
            helper.make_node("Add", ["phase", "turn"], ["unwrapped"]),
            helper.make_node("Mod", ["unwrapped", "two_pi"], ["next_phase"], fmod=1),
        ],
        "synth",
        [
            helper.make_tensor_value_info("step", TensorProto.INT64, [1]),
            helper.make_tensor_value_info("phase", TensorProto.FLOAT, [1]),
        ],
        [
            helper.make_tensor_value_info("chunk", TensorProto.FLOAT, [1, 1, CHUNK]),
            helper.make_tensor_value_info("next_phase", TensorProto.FLOAT, [1]),
        ],
        [table, t, two_pi, amplitude, advance, shape],
    )
    return model(graph)


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


def words_models():
    last = helper.make_graph(
        [
            helper.make_node("Slice", ["input_ids", "minus_one", "end", "one"], ["last"]),
        ],
        "last_word",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "prompt"])],
        [helper.make_tensor_value_info("last", TensorProto.INT64, [1, 1])],
        [
            numpy_helper.from_array(np.array([-1], np.int64), "minus_one"),
            numpy_helper.from_array(np.array([np.iinfo(np.int64).max], np.int64), "end"),
            numpy_helper.from_array(np.array([1], np.int64), "one"),
        ],
    )
    step = helper.make_graph(
        [
            helper.make_node("Gather", ["successor", "word"], ["next"]),
            helper.make_node("Equal", ["next", "eos"], ["ended"]),
            helper.make_node("Not", ["ended"], ["going_2d"]),
            helper.make_node("Reshape", ["going_2d", "flat"], ["going"]),
        ],
        "next_word",
        [helper.make_tensor_value_info("word", TensorProto.INT64, [1, 1])],
        [
            helper.make_tensor_value_info("next", TensorProto.INT64, [1, 1]),
            helper.make_tensor_value_info("going", TensorProto.BOOL, [1]),
        ],
        [
            numpy_helper.from_array(successor_table(), "successor"),
            numpy_helper.from_array(np.array(EOS, np.int64), "eos"),
            numpy_helper.from_array(np.array([1], np.int64), "flat"),
        ],
    )
    return model(last), model(step)


def words_reference(prompt_ids, limit):
    table = successor_table()
    word, out = prompt_ids[-1], []
    for _ in range(limit):
        word = table[word]
        out.append(word)
        if word == EOS:
            break
    return np.array([out], np.int64)


SIGMAS = np.array([2.0, 1.5, 1.0, 0.6, 0.3, 0.0], np.float32)
TIMESTEPS = np.array([999, 799, 599, 399, 199], np.float32)
EMBED = np.array([1.0, 2.0, 3.0, 4.0], np.float32) * np.float32(0.01)
ENCODE = (np.arange(12, dtype=np.float32).reshape(4, 3) % 5 - 2) * np.float32(0.4)
DECODE = (np.arange(12, dtype=np.float32).reshape(3, 4) % 3 - 1) * np.float32(0.7)


def i2i_graph(name, nodes, inputs, outputs, initializers=()):
    value = lambda n, t, s: helper.make_tensor_value_info(n, t, s)
    return model(
        helper.make_graph(
            nodes,
            name,
            [value(*i) for i in inputs],
            [value(*o) for o in outputs],
            [numpy_helper.from_array(a, n) for n, a in initializers],
        )
    )


def img2img_models():
    """The components, by artifact path, each a few ONNX operators."""
    F, I, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    latent = ["batch", "channels", "latent_height", "latent_width"]
    picture = ["batch", 3, "height", "width"]
    n = helper.make_node
    row4 = ("row4", np.array([-1, 1, 1, 1], np.int64))
    yield "policies/diffusion_schedule", i2i_graph(
        "diffusion_schedule", [n("Constant", [], ["schedule"], value=numpy_helper.from_array(SIGMAS))], [], [("schedule", F, [6])])
    yield "policies/diffusion_timesteps", i2i_graph(
        "diffusion_timesteps", [n("Constant", [], ["schedule"], value=numpy_helper.from_array(TIMESTEPS))], [], [("schedule", F, [5])])
    yield "policies/schedule_lookup", i2i_graph(
        "schedule_lookup", [n("Gather", ["schedule", "step"], ["timestep"])],
        [("schedule", F, ["schedule_length"]), ("step", I, ["batch"])], [("timestep", F, ["batch"])])
    yield "policies/model_input", i2i_graph(
        "model_input",
        [n("Gather", ["schedule", "step"], ["sigma"]), n("Reshape", ["sigma", "row4"], ["s"]), n("Mul", ["s", "s"], ["s2"]),
         n("Add", ["s2", "one"], ["v"]), n("Sqrt", ["v"], ["r"]), n("Div", ["sample", "r"], ["model_input"])],
        [("sample", F, latent), ("step", I, ["batch"]), ("schedule", F, ["schedule_length"])], [("model_input", F, latent)],
        [row4, ("one", np.array(1.0, np.float32))])
    yield "policies/continue_predicate", i2i_graph(
        "continue_predicate",
        [n("Not", ["done"], ["open"]), n("Cast", ["open"], ["o"], to=I), n("ReduceMax", ["o", "axes"], ["any"], keepdims=1),
         n("Cast", ["any"], ["continue"], to=B)],
        [("done", B, ["batch"])], [("continue", B, [1])], [("axes", np.array([0], np.int64))])
    yield "policies/latent_row_shape", i2i_graph(
        "latent_row_shape",
        [n("Shape", ["image"], ["full"], start=2), n("Div", ["full", "eight"], ["hw"]), n("Concat", ["four", "hw"], ["shape"], axis=0)],
        [("image", F, picture)], [("shape", I, [3])],
        [("eight", np.array([8], np.int64)), ("four", np.array([4], np.int64))])
    yield "policies/latent_noise", i2i_graph(
        "latent_noise",
        [n("Shape", ["seed"], ["rows"]), n("Concat", ["rows", "row_shape"], ["full"], axis=0), n("ReduceProd", ["full"], ["count"], keepdims=0),
         n("Range", ["zero", "count", "unit"], ["index"]), n("Cast", ["index"], ["x"], to=F), n("Mul", ["x", "k1"], ["a"]),
         n("Cast", ["seed"], ["sf"], to=F), n("Mul", ["sf", "k2"], ["b"]), n("Add", ["a", "b"], ["c"]), n("Sin", ["c"], ["flat"]),
         n("Reshape", ["flat", "full"], ["noise"]), n("Add", ["offset", "unit"], ["next_offset"])],
        [("seed", I, ["batch"]), ("offset", I, ["batch"]), ("row_shape", I, ["row_rank"])],
        [("noise", F, latent), ("next_offset", I, ["batch"])],
        [("zero", np.array(0, np.int64)), ("unit", np.array(1, np.int64)), ("k1", np.array(1.3, np.float32)), ("k2", np.array(0.37, np.float32))])
    yield "text_encoder/model", i2i_graph(
        "text_encoder",
        [n("Cast", ["input_ids"], ["f"], to=F), n("Unsqueeze", ["f", "axis2"], ["u"]), n("Mul", ["u", "embed"], ["encoder_hidden_states"])],
        [("input_ids", I, ["batch", "prompt_sequence"])], [("encoder_hidden_states", F, ["batch", "prompt_sequence", 4])],
        [("axis2", np.array([2], np.int64)), ("embed", EMBED)])
    yield "policies/denoise_window", i2i_graph(
        "denoise_window",
        [n("Cast", ["steps"], ["sf"], to=F), n("Mul", ["sf", "denoise"], ["p"]), n("Round", ["p"], ["r"]), n("Cast", ["r"], ["ri"], to=I),
         n("Sub", ["steps", "ri"], ["start"]), n("Sub", ["steps", "start"], ["iterations"])],
        [("steps", I, [1]), ("denoise", F, [1])], [("start", I, [1]), ("iterations", I, [1])])
    yield "policies/step_offset", i2i_graph(
        "step_offset", [n("Add", ["iteration", "start"], ["step"])],
        [("iteration", I, ["batch"]), ("start", I, [1])], [("step", I, ["batch"])])
    yield "vae_encoder/model", i2i_graph(
        "vae_encoder",
        [n("AveragePool", ["image"], ["pooled"], kernel_shape=[8, 8], strides=[8, 8]), n("Conv", ["pooled", "w"], ["latent"])],
        [("image", F, picture)], [("latent", F, latent)], [("w", ENCODE.reshape(4, 3, 1, 1))])
    yield "policies/add_noise", i2i_graph(
        "add_noise",
        [n("Gather", ["schedule", "step"], ["sigma"]), n("Mul", ["noise", "sigma"], ["scaled"]), n("Add", ["latent", "scaled"], ["noised"])],
        [("latent", F, latent), ("noise", F, latent), ("schedule", F, ["schedule_length"]), ("step", I, [1])], [("noised", F, latent)])
    yield "denoiser/model", i2i_graph(
        "denoiser",
        [n("Div", ["timestep", "thousand"], ["t"]), n("Reshape", ["t", "row4"], ["t4"]), n("Mul", ["sample", "t4"], ["st"]),
         n("Mul", ["st", "half"], ["a"]), n("ReduceMean", ["encoder_hidden_states", "axes12"], ["e"], keepdims=0),
         n("Reshape", ["e", "row4"], ["e4"]), n("Add", ["a", "e4"], ["noise_pred"])],
        [("sample", F, latent), ("timestep", F, ["batch"]), ("encoder_hidden_states", F, ["batch", "prompt_sequence", 4])],
        [("noise_pred", F, latent)],
        [row4, ("thousand", np.array(1000.0, np.float32)), ("half", np.array(0.5, np.float32)), ("axes12", np.array([1, 2], np.int64))])
    yield "policies/guidance_combine", i2i_graph(
        "guidance_combine",
        [n("Sub", ["conditional", "unconditional"], ["d"]), n("Reshape", ["scale", "row4"], ["s"]), n("Mul", ["d", "s"], ["m"]),
         n("Add", ["unconditional", "m"], ["estimate"])],
        [("unconditional", F, latent), ("conditional", F, latent), ("scale", F, ["batch"])], [("estimate", F, latent)], [row4])
    yield "policies/solver_step", i2i_graph(
        "solver_step",
        [n("Gather", ["schedule", "step"], ["sigma"]), n("Add", ["step", "unit"], ["next"]), n("Gather", ["schedule", "next"], ["sigma_next"]),
         n("Sub", ["sigma_next", "sigma"], ["dt"]), n("Reshape", ["dt", "row4"], ["dt4"]), n("Mul", ["estimate", "dt4"], ["move"]),
         n("Add", ["sample", "move"], ["next_state"])],
        [("sample", F, latent), ("estimate", F, latent), ("step", I, ["batch"]), ("schedule", F, ["schedule_length"])],
        [("next_state", F, latent)], [row4, ("unit", np.array(1, np.int64))])
    yield "vae_decoder/model", i2i_graph(
        "vae_decoder",
        [n("Resize", ["latent", "", "scales"], ["up"], mode="nearest"), n("Conv", ["up", "w"], ["rgb"]), n("Tanh", ["rgb"], ["image"])],
        [("latent", F, latent)], [("image", F, picture)],
        [("scales", np.array([1, 1, 8, 8], np.float32)), ("w", DECODE.reshape(3, 4, 1, 1))])


GROW = 6


def counter_noise(seed, shape):
    """latent_noise's output: sin(index * 1.3 + seed * 0.37), row-major."""
    f = np.float32
    index = np.arange(int(np.prod(shape)), dtype=f)
    return np.sin(index * f(1.3) + f(seed) * f(0.37)).reshape(shape).astype(f)


def prompt_term(ids):
    """What the denoiser adds for a prompt: the mean of text_encoder's states."""
    f = np.float32
    return (ids.astype(f)[..., None] * EMBED).mean(axis=(1, 2)).astype(f)


def scaled_input(state, sigma):
    """model_input: the sample over sqrt(sigma^2 + 1)."""
    return (state / np.sqrt(sigma * sigma + np.float32(1))).astype(np.float32)


def guided(sample, timestep, positive, negative, cfg, residual=0):
    """Both denoiser calls (sample * t/1000 * 0.5 plus the prompt's term and
    any residual) combined with classifier-free guidance."""
    f = np.float32
    t = timestep / f(1000)
    unc = sample * t * f(0.5) + negative[:, None, None, None] + residual
    cond = sample * t * f(0.5) + positive[:, None, None, None] + residual
    return unc + (cond - unc) * f(cfg)


def decoded(state, weights=DECODE):
    """vae_decoder: nearest-neighbour x8, a 1x1 channel mix, tanh."""
    up = state.repeat(8, axis=2).repeat(8, axis=3)
    return np.tanh(np.einsum("oc,bchw->bohw", weights, up)).astype(np.float32)


def components_except(skipped):
    """The img2img components other than `skipped`, by artifact path."""
    for path, component in img2img_models():
        if path not in skipped:
            yield path, component


def constant_row_shape(channels):
    """latent_row_shape for a fixed 2x2 latent of `channels`."""
    shape = numpy_helper.from_array(np.array([channels, 2, 2], np.int64))
    return "policies/latent_row_shape", i2i_graph(
        "latent_row_shape", [helper.make_node("Constant", [], ["shape"], value=shape)], [], [("shape", TensorProto.INT64, [3])])


# The components a graph without an input picture does not use.
PICTURE_ONLY = ("vae_encoder/model", "policies/denoise_window", "policies/add_noise", "policies/step_offset",
                "policies/latent_row_shape")


def inpaint_models():
    """The inpainting policies, by artifact path."""
    F = TensorProto.FLOAT
    I = TensorProto.INT64
    latent = ["batch", "channels", "latent_height", "latent_width"]
    mask = ["batch", 1, "height", "width"]
    small = ["batch", 1, "latent_height", "latent_width"]
    n = helper.make_node
    yield "policies/inpaint_pixels", i2i_graph(
        "inpaint_pixels",
        [n("Greater", ["mask", "half"], ["masked"]), n("Where", ["masked", "half", "image"], ["pixels"])],
        [("image", F, ["batch", 3, "height", "width"]), ("mask", F, mask)], [("pixels", F, ["batch", 3, "height", "width"])],
        [("half", np.array(0.5, np.float32))])
    yield "policies/latent_mask", i2i_graph(
        "latent_mask",
        [n("MaxPool", ["mask"], ["grown"], kernel_shape=[2 * GROW + 1] * 2, pads=[GROW] * 4, strides=[1, 1]),
         n("MaxPool", ["grown"], ["latent_mask"], kernel_shape=[8, 8], strides=[8, 8])],
        [("mask", F, mask), ("like", F, latent)], [("latent_mask", F, small)])
    yield "policies/masked_blend", i2i_graph(
        "masked_blend",
        [n("Add", ["step", "unit"], ["next"]), n("Gather", ["schedule", "next"], ["sigma"]), n("Reshape", ["sigma", "row4"], ["s"]),
         n("Mul", ["noise", "s"], ["scaled"]), n("Add", ["source", "scaled"], ["noised"]), n("Sub", ["one", "mask"], ["keep"]),
         n("Mul", ["solved", "mask"], ["inside"]), n("Mul", ["noised", "keep"], ["outside"]), n("Add", ["inside", "outside"], ["next_state"])],
        [("solved", F, latent), ("source", F, latent), ("noise", F, latent), ("mask", F, small), ("step", I, ["batch"]),
         ("schedule", F, ["schedule_length"])],
        [("next_state", F, latent)],
        [("row4", np.array([-1, 1, 1, 1], np.int64)), ("unit", np.array(1, np.int64)), ("one", np.array(1.0, np.float32))])


SIGMAS10 = np.linspace(2.0, 0.0, 11).astype(np.float32)
TIMESTEPS10 = np.linspace(999, 99, 10).astype(np.float32)


def advanced_models():
    """The KSamplerAdvanced components (a 10-step schedule, an empty latent,
    the step window and a solver that ends at sigma 0), by artifact path."""
    F, I = TensorProto.FLOAT, TensorProto.INT64
    latent = ["batch", "channels", "latent_height", "latent_width"]
    n = helper.make_node
    row4 = ("row4", np.array([-1, 1, 1, 1], np.int64))
    yield from components_except(("vae_encoder/model", "policies/denoise_window", "policies/diffusion_schedule",
                                  "policies/diffusion_timesteps", "policies/latent_row_shape", "policies/solver_step"))
    yield "policies/diffusion_schedule", i2i_graph(
        "diffusion_schedule", [n("Constant", [], ["schedule"], value=numpy_helper.from_array(SIGMAS10))], [], [("schedule", F, [11])])
    yield "policies/diffusion_timesteps", i2i_graph(
        "diffusion_timesteps", [n("Constant", [], ["schedule"], value=numpy_helper.from_array(TIMESTEPS10))], [], [("schedule", F, [10])])
    yield constant_row_shape(4)
    yield "policies/empty_latent", i2i_graph(
        "empty_latent", [n("Mul", ["like", "zero"], ["latent"])],
        [("row_shape", I, ["row_rank"]), ("like", F, latent)], [("latent", F, latent)], [("zero", np.array(0.0, np.float32))])
    yield "policies/step_window", i2i_graph(
        "step_window",
        [n("Min", ["end", "steps"], ["last_end"]), n("Identity", ["start"], ["first_step"]), n("Sub", ["last_end", "start"], ["iterations"])],
        [("steps", I, [1]), ("start", I, [1]), ("end", I, [1])],
        [("first_step", I, [1]), ("iterations", I, [1]), ("last_end", I, [1])])
    yield "policies/solver_step", i2i_graph(
        "solver_step",
        [n("Gather", ["schedule", "step"], ["sigma"]), n("Add", ["step", "unit"], ["next"]), n("Gather", ["schedule", "next"], ["sigma_after"]),
         n("Equal", ["next", "end_step"], ["last"]), n("Where", ["last", "zero", "sigma_after"], ["sigma_next"]),
         n("Sub", ["sigma_next", "sigma"], ["dt"]), n("Reshape", ["dt", "row4"], ["dt4"]), n("Mul", ["estimate", "dt4"], ["move"]),
         n("Add", ["sample", "move"], ["next_state"])],
        [("sample", F, latent), ("estimate", F, latent), ("step", I, ["batch"]), ("schedule", F, ["schedule_length"]), ("end_step", I, [1])],
        [("next_state", F, latent)], [row4, ("unit", np.array(1, np.int64)), ("zero", np.array(0.0, np.float32))])


def controlnet_models():
    """The ControlNet components over the txt2img base, by artifact path."""
    F, I, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    latent = ["batch", "channels", "latent_height", "latent_width"]
    hidden = ["batch", "prompt_sequence", 4]
    mid = ["batch", "mid_channels", "mid_height", "mid_width"]
    n = helper.make_node
    row4 = ("row4", np.array([-1, 1, 1, 1], np.int64))
    yield from components_except(PICTURE_ONLY + ("denoiser/model",))
    yield constant_row_shape(4)
    yield "policies/control_scale", i2i_graph(
        "control_scale",
        [n("Shape", ["schedule"], ["length"]), n("Sub", ["length", "unit"], ["steps"]), n("Cast", ["steps"], ["sf"], to=F),
         n("Cast", ["step"], ["k"], to=F), n("Div", ["k", "sf"], ["percent"]), n("GreaterOrEqual", ["percent", "start"], ["after"]),
         n("Less", ["percent", "end"], ["before"]), n("And", ["after", "before"], ["active"]),
         n("Where", ["active", "strength", "zero"], ["scale"])],
        [("strength", F, [1]), ("start", F, [1]), ("end", F, [1]), ("step", I, ["batch"]), ("schedule", F, ["schedule_length"])],
        [("scale", F, [1])], [("unit", np.array([1], np.int64)), ("zero", np.array([0.0], np.float32))])
    yield "controlnet/model", i2i_graph(
        "controlnet",
        [n("AveragePool", ["image"], ["pooled"], kernel_shape=[8, 8], strides=[8, 8]),
         n("ReduceMean", ["pooled", "axis1"], ["hint"], keepdims=1), n("Add", ["sample", "hint"], ["mixed"]),
         n("Mul", ["mixed", "scale"], ["mid_residual"]), n("Flatten", ["mid_residual"], ["flat"], axis=1),
         n("Mul", ["flat", "half"], ["down_residuals"])],
        [("sample", F, latent), ("timestep", F, ["batch"]), ("encoder_hidden_states", F, hidden),
         ("image", F, ["batch", 3, "height", "width"]), ("scale", F, [1])],
        [("down_residuals", F, ["batch", "down_residual_elements"]), ("mid_residual", F, mid)],
        [("axis1", np.array([1], np.int64)), ("half", np.array(0.5, np.float32))])
    yield "denoiser/model", i2i_graph(
        "denoiser",
        [n("Div", ["timestep", "thousand"], ["t"]), n("Reshape", ["t", "row4"], ["t4"]), n("Mul", ["sample", "t4"], ["st"]),
         n("Mul", ["st", "half"], ["a"]), n("ReduceMean", ["encoder_hidden_states", "axes12"], ["e"], keepdims=0),
         n("Reshape", ["e", "row4"], ["e4"]), n("Add", ["a", "e4"], ["base"]),
         n("ReduceMean", ["down_residuals", "axis1"], ["d"], keepdims=0), n("Reshape", ["d", "row4"], ["d4"]),
         n("Mul", ["d4", "tenth"], ["dd"]), n("Mul", ["mid_residual", "fifth"], ["mm"]), n("Add", ["base", "dd"], ["b1"]),
         n("Add", ["b1", "mm"], ["noise_pred"])],
        [("sample", F, latent), ("timestep", F, ["batch"]), ("encoder_hidden_states", F, hidden),
         ("down_residuals", F, ["batch", "down_residual_elements"]), ("mid_residual", F, mid)],
        [("noise_pred", F, latent)],
        [row4, ("thousand", np.array(1000.0, np.float32)), ("half", np.array(0.5, np.float32)),
         ("axes12", np.array([1, 2], np.int64)), ("axis1", np.array([1], np.int64)), ("tenth", np.array(0.1, np.float32)),
         ("fifth", np.array(0.2, np.float32))])


EMBED_G = np.array([0.5, -0.5, 0.25, 1.0], np.float32) * np.float32(0.02)
POOL = np.array([0.1, 0.2], np.float32)


DECODE16 = (np.arange(48, dtype=np.float32).reshape(3, 16) % 5 - 2) * np.float32(0.2)
BASE_FLOW = np.linspace(1.0, 0.0, 6).astype(np.float32)


def shifted(shift):
    """The flow schedule, time-shifted: s' = shift s / (1 + (shift - 1) s)."""
    f = np.float32
    return (f(shift) * BASE_FLOW / (f(1) + (f(shift) - f(1)) * BASE_FLOW)).astype(f)


def flow_models():
    """The flow-matching components over the txt2img base, by artifact path."""
    F, I = TensorProto.FLOAT, TensorProto.INT64
    latent = ["batch", "channels", "latent_height", "latent_width"]
    n = helper.make_node
    yield from components_except(PICTURE_ONLY + ("policies/diffusion_schedule", "policies/diffusion_timesteps",
                                                 "policies/model_input", "vae_decoder/model"))
    shift_nodes = lambda out: [
        n("Mul", ["base", "shift"], ["top"]), n("Sub", ["shift", "one"], ["s1"]), n("Mul", ["base", "s1"], ["b1"]),
        n("Add", ["b1", "one"], ["bottom"]), n("Div", ["top", "bottom"], [out])]
    init = [("base", BASE_FLOW), ("one", np.array(1.0, np.float32))]
    yield "policies/diffusion_schedule", i2i_graph(
        "diffusion_schedule", shift_nodes("schedule"), [("shift", F, [1])], [("schedule", F, [6])], init)
    yield "policies/diffusion_timesteps", i2i_graph(
        "diffusion_timesteps",
        shift_nodes("sigmas") + [n("Slice", ["sigmas", "zero", "five"], ["head"]), n("Mul", ["head", "thousand"], ["schedule"])],
        [("shift", F, [1])], [("schedule", F, [5])],
        init + [("zero", np.array([0], np.int64)), ("five", np.array([5], np.int64)), ("thousand", np.array(1000.0, np.float32))])
    yield "policies/model_input", i2i_graph(
        "model_input", [n("Identity", ["sample"], ["model_input"])],
        [("sample", F, latent), ("step", I, ["batch"]), ("schedule", F, ["schedule_length"])], [("model_input", F, latent)])
    yield constant_row_shape(16)
    yield "vae_decoder/model", i2i_graph(
        "vae_decoder",
        [n("Resize", ["latent", "", "scales"], ["up"], mode="nearest"), n("Conv", ["up", "w"], ["rgb"]), n("Tanh", ["rgb"], ["image"])],
        [("latent", F, latent)], [("image", F, ["batch", 3, "height", "width"])],
        [("scales", np.array([1, 1, 8, 8], np.float32)), ("w", DECODE16.reshape(3, 16, 1, 1))])


def flow_reference(ids, negative_ids, seed, cfg, shift, steps=5):
    """The lowered flow-matching workflow in numpy."""
    f = np.float32
    sigmas = shifted(shift)
    timesteps = (sigmas[:steps] * f(1000)).astype(f)
    state = counter_noise(seed, (1, 16, 2, 2))
    for step in range(steps):
        velocity = guided(state, timesteps[step], prompt_term(ids), prompt_term(negative_ids), cfg)
        state = (state + velocity * (sigmas[step + 1] - sigmas[step])).astype(f)
    return decoded(state, DECODE16), state


def sdxl_models():
    """The SDXL components over the txt2img base, by artifact path."""
    F, I = TensorProto.FLOAT, TensorProto.INT64
    latent = ["batch", "channels", "latent_height", "latent_width"]
    n = helper.make_node
    row4 = ("row4", np.array([-1, 1, 1, 1], np.int64))
    yield from components_except(PICTURE_ONLY + ("denoiser/model",))
    yield constant_row_shape(4)
    yield "text_encoder_2/model", i2i_graph(
        "text_encoder_2",
        [n("Cast", ["input_ids"], ["f"], to=F), n("Unsqueeze", ["f", "axis2"], ["u"]), n("Mul", ["u", "embed"], ["encoder_hidden_states"]),
         n("ReduceMean", ["f", "axis1"], ["m"], keepdims=1), n("Mul", ["m", "pool"], ["text_embeds"])],
        [("input_ids", I, ["batch", "prompt_sequence"])],
        [("encoder_hidden_states", F, ["batch", "prompt_sequence", 4]), ("text_embeds", F, ["batch", 2])],
        [("axis2", np.array([2], np.int64)), ("axis1", np.array([1], np.int64)), ("embed", EMBED_G), ("pool", POOL)])
    yield "policies/sdxl_conditioning", i2i_graph(
        "sdxl_conditioning",
        [n("Concat", ["hidden_l", "hidden_g"], ["encoder_hidden_states"], axis=2), n("Identity", ["pooled"], ["text_embeds"]),
         n("Unsqueeze", ["size", "axis0"], ["time_ids"])],
        [("hidden_l", F, ["batch", "prompt_sequence", 4]), ("hidden_g", F, ["batch", "prompt_sequence", 4]),
         ("pooled", F, ["batch", 2]), ("size", F, [6])],
        [("encoder_hidden_states", F, ["batch", "prompt_sequence", 8]), ("text_embeds", F, ["batch", 2]), ("time_ids", F, [1, 6])],
        [("axis0", np.array([0], np.int64))])
    yield "denoiser/model", i2i_graph(
        "denoiser",
        [n("Div", ["timestep", "thousand"], ["t"]), n("Reshape", ["t", "row4"], ["t4"]), n("Mul", ["sample", "t4"], ["st"]),
         n("Mul", ["st", "half"], ["a"]), n("ReduceMean", ["encoder_hidden_states", "axes12"], ["e"], keepdims=0),
         n("Reshape", ["e", "row4"], ["e4"]), n("Add", ["a", "e4"], ["base"]),
         n("ReduceMean", ["text_embeds", "axis1"], ["p"], keepdims=0), n("Reshape", ["p", "row4"], ["p4"]),
         n("ReduceMean", ["time_ids", "axis1"], ["s"], keepdims=0), n("Reshape", ["s", "row4"], ["s4"]),
         n("Mul", ["s4", "tiny"], ["ss"]), n("Add", ["base", "p4"], ["b1"]), n("Add", ["b1", "ss"], ["noise_pred"])],
        [("sample", F, latent), ("timestep", F, ["batch"]), ("encoder_hidden_states", F, ["batch", "prompt_sequence", 8]),
         ("text_embeds", F, ["batch", 2]), ("time_ids", F, ["batch", 6])],
        [("noise_pred", F, latent)],
        [row4, ("thousand", np.array(1000.0, np.float32)), ("half", np.array(0.5, np.float32)),
         ("axes12", np.array([1, 2], np.int64)), ("axis1", np.array([1], np.int64)), ("tiny", np.array(1e-4, np.float32))])


def sdxl_reference(prompts, seed, cfg, size, steps=5):
    """The lowered SDXL workflow in numpy; `prompts` maps (g, l) ids for
    the positive and the negative prompt."""
    f = np.float32
    state = counter_noise(seed, (1, 4, 2, 2))

    def condition(ids_g, ids_l):
        hidden = np.concatenate([ids_l.astype(f)[..., None] * EMBED, ids_g.astype(f)[..., None] * EMBED_G], axis=2)
        pooled = ids_g.astype(f).mean(axis=1, keepdims=True) * POOL
        extra = pooled.mean(axis=1) + f(np.mean(np.array(size, f))) * f(1e-4)
        return (hidden.mean(axis=(1, 2)) + extra).astype(f)

    positive, negative = condition(*prompts[0]), condition(*prompts[1])
    for step in range(steps):
        sigma = SIGMAS[step]
        estimate = guided(scaled_input(state, sigma), TIMESTEPS[step], positive, negative, cfg)
        state = (state + estimate * (SIGMAS[step + 1] - sigma)).astype(f)
    return decoded(state), state


def controlnet_reference(control, ids, negative_ids, seed, cfg, strength, start, end, steps=5):
    """The lowered ControlNet workflow in numpy."""
    f = np.float32
    state = counter_noise(seed, (1, 4, 2, 2))
    hint = control.reshape(1, 3, 2, 8, 2, 8).mean(axis=(3, 5)).mean(axis=1, keepdims=True).astype(f)
    for step in range(steps):
        sigma = SIGMAS[step]
        percent = f(step) / f(steps)
        scale = f(strength) if start <= percent < end else f(0)
        model_input = scaled_input(state, sigma)
        mid = ((model_input + hint) * scale).astype(f)
        down = (mid.reshape(1, -1) * f(0.5)).astype(f)
        residual = down.mean(axis=1)[:, None, None, None] * f(0.1) + mid * f(0.2)
        estimate = guided(model_input, TIMESTEPS[step], prompt_term(ids), prompt_term(negative_ids), cfg, residual)
        state = (state + estimate * (SIGMAS[step + 1] - sigma)).astype(f)
    return decoded(state), state


def advanced_reference(ids, negative_ids, seed, cfg, start, end, steps=10):
    """The lowered KSamplerAdvanced workflow in numpy."""
    f = np.float32
    end = min(end, steps)
    state = (counter_noise(seed, (1, 4, 2, 2)) * SIGMAS10[start]).astype(f)
    for step in range(start, end):
        sigma = SIGMAS10[step]
        sigma_next = f(0) if step + 1 == end else SIGMAS10[step + 1]
        estimate = guided(scaled_input(state, sigma), TIMESTEPS10[step], prompt_term(ids), prompt_term(negative_ids), cfg)
        state = (state + estimate * (sigma_next - sigma)).astype(f)
    return decoded(state), state


def grown_latent_mask(mask):
    """The mask dilated by GROW pixels, then the max over each 8x8 cell."""
    padded = np.pad(mask, ((0, 0), (0, 0), (GROW, GROW), (GROW, GROW)), constant_values=-np.inf)
    h, w = mask.shape[2:]
    size = 2 * GROW + 1
    grown = np.array([[padded[:, :, y:y + size, x:x + size].max(axis=(2, 3)) for x in range(w)] for y in range(h)])
    grown = grown.transpose(2, 3, 0, 1)
    return grown.reshape(1, 1, h // 8, 8, w // 8, 8).max(axis=(3, 5)).astype(np.float32)


def img2img_reference(image, ids, negative_ids, seed, cfg, denoise, steps=5, mask=None):
    """The lowered img2img (or, with `mask`, inpaint) workflow, step by step
    in numpy."""
    f = np.float32
    start = steps - int(np.round(f(steps) * f(denoise)))  # numpy rounds half to even
    if mask is not None:
        image = np.where(mask > f(0.5), f(0.5), image).astype(f)
    pooled = image.reshape(1, 3, 2, 8, 2, 8).mean(axis=(3, 5)).astype(f)
    latent = np.einsum("oc,bchw->bohw", ENCODE, pooled).astype(f)
    noise = counter_noise(seed, latent.shape)
    state = (latent + noise * SIGMAS[start]).astype(f)
    keep = None if mask is None else grown_latent_mask(mask)
    for step in range(start, steps):
        sigma = SIGMAS[step]
        estimate = guided(scaled_input(state, sigma), TIMESTEPS[step], prompt_term(ids), prompt_term(negative_ids), cfg)
        state = (state + estimate * (SIGMAS[step + 1] - sigma)).astype(f)
        if keep is not None:
            noised = latent + noise * SIGMAS[step + 1]
            state = (state * keep + noised * (f(1) - keep)).astype(f)
    return decoded(state), state


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
    denoiser, decoder = denoise_models()
    noise = (np.sin(np.arange(4 * 8 * 8, dtype=np.float32) * np.float32(1.7)) * np.float32(1.5)).reshape(1, 4, 8, 8).astype(np.float32)
    steps = 4
    yield "examples/tiny-denoise/denoiser/model.onnx", denoiser.SerializeToString()
    yield "examples/tiny-denoise/decoder/model.onnx", decoder.SerializeToString()
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
    yield "examples/tiny-tone/synth/model.onnx.textproto", text_format.MessageToString(tone_model()).encode()
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
    last, step = words_models()
    yield "examples/tiny-words/tokenizer.json", (json.dumps(words_tokenizer(), indent=1) + "\n").encode()
    yield "examples/tiny-words/last_word/model.onnx.textproto", text_format.MessageToString(last).encode()
    yield "examples/tiny-words/next_word/model.onnx.textproto", text_format.MessageToString(step).encode()
    prompt = np.array([VOCAB["<bos>"], VOCAB["hello"]], np.int64)
    yield "examples/tiny-words/recipes/hello.json", recipe(
        'the prompt "hello" (ids of <bos> hello); expected ids, up to and including <eos>, computed with numpy by scripts/gen_fixtures.py',
        {"request.input_ids": prompt[None], "request.max_new_tokens": np.array([16], np.int64)},
        {"tokens": words_reference(prompt, 16)},
        {"abs": 0, "rel": 0},
    ).encode()
    for path, component in img2img_models():
        yield f"examples/tiny-img2img/{path}.onnx.textproto", text_format.MessageToString(component).encode()
    y, x = np.mgrid[0:16, 0:16].astype(np.float32)
    photo = np.stack([np.sin(x / 3), np.cos(y / 4), np.sin((x + y) / 5)])[None].astype(np.float32)
    ids = np.array([[1, 2, 3]], np.int64)
    negative_ids = np.array([[4, 5, 6]], np.int64)
    image, state = img2img_reference(photo, ids, negative_ids, seed=7, cfg=6.5, denoise=0.5)
    yield "examples/tiny-img2img/recipes/photo.json", recipe(
        "img2img at denoise 0.5 of 5 steps (starts at step 3), the graph's seed and cfg; expected outputs computed with numpy by scripts/gen_fixtures.py",
        {"request.input_ids": ids, "request.negative_input_ids": negative_ids, "request.image": photo},
        {"image": image, "latent": state},
        {"abs": 1e-5, "rel": 1e-5},
    ).encode()
    for path, component in [*img2img_models(), *inpaint_models()]:
        yield f"examples/tiny-inpaint/{path}.onnx.textproto", text_format.MessageToString(component).encode()
    hole = np.zeros((1, 1, 16, 16), np.float32)
    hole[:, :, 0:2, 0:2] = 1.0
    image, state = img2img_reference(photo, ids, negative_ids, seed=7, cfg=6.5, denoise=1.0, mask=hole)
    yield "examples/tiny-inpaint/recipes/hole.json", recipe(
        "inpainting a 2x2 hole (grown by 6 pixels: one latent cell) over 5 steps; expected outputs computed with numpy by scripts/gen_fixtures.py",
        {"request.input_ids": ids, "request.negative_input_ids": negative_ids, "request.image": photo, "request.mask": hole},
        {"image": image, "latent": state},
        {"abs": 1e-5, "rel": 1e-5},
    ).encode()
    for path, component in controlnet_models():
        yield f"examples/tiny-controlnet/{path}.onnx.textproto", text_format.MessageToString(component).encode()
    image, state = controlnet_reference(photo, ids, negative_ids, seed=7, cfg=6.5, strength=0.9, start=0.0, end=0.6)
    yield "examples/tiny-controlnet/recipes/edges.json", recipe(
        "ControlNet at strength 0.9 on both prompts for the first 60 % of 5 steps; expected outputs computed with numpy by scripts/gen_fixtures.py",
        {"request.input_ids": ids, "request.negative_input_ids": negative_ids, "request.control_image": photo},
        {"image": image, "latent": state},
        {"abs": 1e-5, "rel": 1e-5},
    ).encode()
    for path, component in flow_models():
        yield f"examples/tiny-flow/{path}.onnx.textproto", text_format.MessageToString(component).encode()
    for shift, name in [(3.0, "shift_3"), (1.0, "shift_1")]:
        image, state = flow_reference(ids, negative_ids, seed=7, cfg=4.0, shift=shift)
        inputs = {"request.input_ids": ids, "request.negative_input_ids": negative_ids}
        if shift != 3.0:
            inputs["request.flow_shift"] = np.array([shift], np.float32)
        yield f"examples/tiny-flow/recipes/{name}.json", recipe(
            f"flow matching over 5 steps at shift {shift} (the graph's is 3.0); expected outputs computed with numpy by scripts/gen_fixtures.py",
            inputs,
            {"image": image, "latent": state},
            {"abs": 1e-5, "rel": 1e-5},
        ).encode()
    for path, component in sdxl_models():
        yield f"examples/tiny-sdxl/{path}.onnx.textproto", text_format.MessageToString(component).encode()
    ids_l = np.array([[7, 8, 9]], np.int64)
    negative_l = np.array([[3, 3, 3]], np.int64)
    size = [1024.0, 1024.0, 0.0, 0.0, 1024.0, 1024.0]
    image, state = sdxl_reference([(ids, ids_l), (negative_ids, negative_l)], seed=7, cfg=6.5, size=size)
    yield "examples/tiny-sdxl/recipes/castle.json", recipe(
        "SDXL prompts (text_g and text_l ids) over 5 steps with the graph's size conditioning; expected outputs computed with numpy by scripts/gen_fixtures.py",
        {"request.input_ids": ids, "request.input_ids_l": ids_l, "request.negative_input_ids": negative_ids,
         "request.negative_input_ids_l": negative_l},
        {"image": image, "latent": state},
        {"abs": 1e-5, "rel": 1e-5},
    ).encode()
    for path, component in advanced_models():
        yield f"examples/tiny-advanced/{path}.onnx.textproto", text_format.MessageToString(component).encode()
    image, state = advanced_reference(ids, negative_ids, seed=7, cfg=6.5, start=2, end=8)
    yield "examples/tiny-advanced/recipes/steps_2_to_8.json", recipe(
        "KSamplerAdvanced steps 2..8 of 10 from an empty latent, the last step to sigma 0; expected outputs computed with numpy by scripts/gen_fixtures.py",
        {"request.input_ids": ids, "request.negative_input_ids": negative_ids},
        {"image": image, "latent": state},
        {"abs": 1e-5, "rel": 1e-5},
    ).encode()
    image, state = advanced_reference(ids, negative_ids, seed=7, cfg=6.5, start=4, end=10000)
    yield "examples/tiny-advanced/recipes/steps_4_to_end.json", recipe(
        "KSamplerAdvanced from step 4 with end_at_step 10000 (clipped to the 10 steps); expected outputs computed with numpy by scripts/gen_fixtures.py",
        {
            "request.input_ids": ids,
            "request.negative_input_ids": negative_ids,
            "request.start_step": np.array([4], np.int64),
            "request.end_step": np.array([10000], np.int64),
        },
        {"image": image, "latent": state},
        {"abs": 1e-5, "rel": 1e-5},
    ).encode()
    # 5 * 0.9 = 4.5 rounds half to even, to 4: the run starts at step 1
    # (rounding half up would start at step 0).
    image, state = img2img_reference(photo, ids, negative_ids, seed=7, cfg=6.5, denoise=0.9)
    yield "examples/tiny-img2img/recipes/denoise_0p9.json", recipe(
        "img2img at denoise 0.9 of 5 steps: 4.5 rounds half to even, so it starts at step 1; expected outputs computed with numpy by scripts/gen_fixtures.py",
        {
            "request.input_ids": ids,
            "request.negative_input_ids": negative_ids,
            "request.image": photo,
            "request.denoise": np.array([0.9], np.float32),
        },
        {"image": image, "latent": state},
        {"abs": 1e-5, "rel": 1e-5},
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
