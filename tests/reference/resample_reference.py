"""Independent reference for ComfyUI's `area` and `lanczos` picture resizes.

Reads a JSON case from the file named by argv[1]: `picture` (float32 values of
`[1, channels, h, w]` in 0..1), `channels`, `h`, `w`, `oh`, `ow`, `method`, and
optionally `crop: "center"` (the centred part of the new aspect first, as
`comfy.utils.common_upscale` cuts it). Prints the resized `[1, channels, oh,
ow]` values as a JSON list.

* `area`: PyTorch's `interpolate(mode="area")`, which is adaptive average
  pooling: output row i averages input rows floor(i*h/oh) up to
  ceil((i+1)*h/oh), and the same for columns (numpy, integer bounds).
* `lanczos`: what `comfy.utils.lanczos` does (Pillow 13, as scripts/setup.sh pins
  it): the picture made 8-bit with
  `np.clip(255 * x, 0, 255).astype(np.uint8)`, resized by Pillow with
  `Image.Resampling.LANCZOS`, divided by 255.
"""
import json
import sys

import numpy as np
from PIL import Image


def area(x, oh, ow):
    c, h, w = x.shape
    out = np.zeros((c, oh, ow), dtype=np.float64)
    for i in range(oh):
        y0, y1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        for j in range(ow):
            x0, x1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            out[:, i, j] = x[:, y0:y1, x0:x1].astype(np.float64).mean(axis=(1, 2))
    return out


def lanczos(x, oh, ow):
    hwc = np.clip(255.0 * np.moveaxis(x, 0, -1), 0, 255).astype(np.uint8)
    image = Image.fromarray(hwc[:, :, 0] if hwc.shape[2] == 1 else hwc)
    resized = np.array(image.resize((ow, oh), resample=Image.Resampling.LANCZOS))
    resized = resized.astype(np.float32) / 255.0
    if resized.ndim == 2:
        resized = resized[:, :, None]
    return np.moveaxis(resized, -1, 0)


def centre(x, oh, ow):
    _, h, w = x.shape
    old, new = w / h, ow / oh
    dx = round((w - w * (new / old)) / 2) if old > new else 0
    dy = round((h - h * (old / new)) / 2) if old < new else 0
    return x[:, dy:h - dy, dx:w - dx]


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    x = np.array(case["picture"], dtype=np.float32).reshape(case["channels"], case["h"], case["w"])
    if case.get("crop") == "center":
        x = centre(x, case["oh"], case["ow"])
    method = {"area": area, "lanczos": lanczos}[case["method"]]
    out = method(x, case["oh"], case["ow"])
    print(json.dumps([float(v) for v in np.asarray(out, dtype=np.float64).ravel()]))


if __name__ == "__main__":
    main()
