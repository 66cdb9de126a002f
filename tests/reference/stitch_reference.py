"""Independent reference for ComfyUI's `ImageStitch` node on two pictures.

Reads a JSON case from the file named by argv[1]: `first` and `second`
(float32 values of `[1, 3, h, w]` in 0..1, their sides `first_hw`,
`second_hw`), `direction` (`right`, `down`, `left`, `up`), `match_size`,
`spacing` (even) and `colour` (`white`, `black`, `red`, `green`, `blue`).
Prints `{"shape": [1, 3, h, w], "values": [...]}` of the stitched picture.

Written from the node's documented behaviour, with numpy and Pillow:
* with `match_size` the second picture is resized to the first's height
  (`right`, `left`) or width (`down`, `up`), its other side
  `int(side * (w2 / h2))` (or `int(w1 / (w2 / h2))`), by Pillow's LANCZOS on
  its 8-bit form (`clip(255 x, 0, 255)` cast to uint8), as ComfyUI's
  `common_upscale` does for lanczos, back in 0..1;
* without it, the smaller one is padded to the other's height (or width),
  `(larger - own) // 2` before and the rest after, with the colour's grey
  (white 1, black 0) or 0 for red, green and blue;
* a strip `spacing` wide (or high) of the colour's RGB goes between them;
* `left` and `up` put the second picture first.
"""
import json
import sys

import numpy as np
from PIL import Image

COLOURS = {
    "white": (1.0, 1.0, 1.0),
    "black": (0.0, 0.0, 0.0),
    "red": (1.0, 0.0, 0.0),
    "green": (0.0, 1.0, 0.0),
    "blue": (0.0, 0.0, 1.0),
}


def lanczos(picture, height, width):
    """`picture` ([3, h, w] in 0..1) resized by Pillow's LANCZOS on 8 bits."""
    hwc = np.clip(255.0 * picture.transpose(1, 2, 0), 0, 255).astype(np.uint8)
    resized = Image.fromarray(hwc).resize((width, height), resample=Image.LANCZOS)
    return np.asarray(resized).astype(np.float32).transpose(2, 0, 1) / 255.0


def pad(picture, axis, larger, value):
    missing = larger - picture.shape[axis]
    before = missing // 2
    widths = [(0, 0), (0, 0), (0, 0)]
    widths[axis] = (before, missing - before)
    return np.pad(picture, widths, constant_values=value)


def main():
    case = json.load(open(sys.argv[1]))
    first = np.array(case["first"], dtype=np.float32).reshape([3] + case["first_hw"])
    second = np.array(case["second"], dtype=np.float32).reshape([3] + case["second_hw"])
    horizontal = case["direction"] in ("right", "left")
    rgb = COLOURS[case["colour"]]
    h1, w1 = first.shape[1:]
    h2, w2 = second.shape[1:]
    if case["match_size"]:
        aspect = w2 / h2
        if horizontal:
            second = lanczos(second, h1, int(h1 * aspect))
        else:
            second = lanczos(second, int(w1 / aspect), w1)
    else:
        grey = rgb[0] if rgb[0] == rgb[1] == rgb[2] else 0.0
        axis = 1 if horizontal else 2
        larger = max(first.shape[axis], second.shape[axis])
        first, second = pad(first, axis, larger, grey), pad(second, axis, larger, grey)
    parts = [second, first] if case["direction"] in ("left", "up") else [first, second]
    axis = 2 if horizontal else 1
    if case["spacing"] > 0:
        shape = list(parts[0].shape)
        shape[axis] = case["spacing"]
        strip = np.ones(shape, dtype=np.float32) * np.array(rgb, dtype=np.float32)[:, None, None]
        parts.insert(1, strip)
    out = np.concatenate(parts, axis=axis)
    print(json.dumps({"shape": [1] + list(out.shape), "values": out.ravel().tolist()}))


main()
