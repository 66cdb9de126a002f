"""Independent reference for ComfyUI's `ImageInvert` and `Canny` nodes.

Reads a JSON case from the file named by argv[1]: `picture` (float32 values of
`[1, 3, h, w]` in 0..1), `h`, `w` and `ops`, a list of `["invert"]`,
`["canny", low, high]` or `["cut", m]` applied in order. Prints `{"values":
the result [1, 3, h', w'], "ties": pixels (row * w' + column)}`, where `ties`
are the pixels
whose non-maximum suppression compares equal magnitudes (within 1e-5 of the
magnitude): there the answer depends on the order of the float sums of the
blur, which no two implementations share (PyTorch's convolution neither).

* `invert`: `1 - x`.
* `canny`: what `kornia.filters.canny` computes with ComfyUI's arguments
  (kernel 5x5, sigma 1, hysteresis on, eps 1e-6), in float32, written from
  its definition with numpy:
  grey `0.299 r + 0.587 g + 0.114 b`; a separable Gaussian (rows, then
  columns) over a reflection-padded picture; Sobel gradients (correlation)
  over an edge-padded picture; magnitude `sqrt(gx^2 + gy^2 + eps)`;
  non-maximum suppression along `round(atan2(gy, gx) / 45deg)`, comparing
  with the two neighbours that direction and its opposite point at (zero
  outside the picture); weak (> low) and strong (> high) edges; weak edges
  joined to strong ones through their 8 neighbours, repeated until stable.
  The edges (0 or 1) go on all three channels.
* `cut`: what ComfyUI's `VAEEncode` crops before encoding: each side cut to a
  whole multiple of `m`, keeping the middle (`(side % m) // 2` off the start).
"""
import json
import sys

import numpy as np

F = np.float32


def grey(x):
    return F(0.299) * x[0] + F(0.587) * x[1] + F(0.114) * x[2]


def correlate(padded, kernel, h, w):
    kh, kw = kernel.shape
    out = np.zeros((h, w), dtype=F)
    for i in range(kh):
        for j in range(kw):
            if kernel[i, j] != 0:
                out += kernel[i, j] * padded[i : i + h, j : j + w]
    return out


def gaussian(x):
    h, w = x.shape
    k = np.exp(-(np.arange(-2, 3, dtype=F) ** 2) / F(2.0)).astype(F)
    k = (k / k.sum()).astype(F)
    rows = correlate(np.pad(x, ((0, 0), (2, 2)), mode="reflect"), k[None, :], h, w)
    return correlate(np.pad(rows, ((2, 2), (0, 0)), mode="reflect"), k[:, None], h, w)


def canny(x, low, high):
    g = gaussian(grey(x))
    h, w = g.shape
    padded = np.pad(g, 1, mode="edge")
    sobel = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=F)
    gx = correlate(padded, sobel, h, w)
    gy = correlate(padded, sobel.T, h, w)
    magnitude = np.sqrt(gx * gx + gy * gy + F(1e-6)).astype(F)
    sector = np.round(np.arctan2(gy, gx).astype(F) * F(4 / np.pi)).astype(np.int64)
    # Row and column steps of directions 0..7 (0 along +x, then towards +y).
    steps = [(0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1)]
    around = np.pad(magnitude, 1)
    kept = np.zeros_like(magnitude)
    ties = []
    for r in range(h):
        for c in range(w):
            m = magnitude[r, c]
            ahead = steps[sector[r, c] % 8]
            behind = steps[(sector[r, c] + 4) % 8]
            a = around[r + 1 + ahead[0], c + 1 + ahead[1]]
            b = around[r + 1 + behind[0], c + 1 + behind[1]]
            if min(m - a, m - b) > 0:
                kept[r, c] = m
            if abs(min(m - a, m - b)) <= 1e-5 * m:
                ties.append(r * w + c)
    strong = kept > high
    weak = (kept > low) & ~strong
    while True:
        grown = np.pad(strong, 1)
        beside = np.zeros_like(strong)
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                beside |= grown[1 + dr : 1 + dr + h, 1 + dc : 1 + dc + w]
        joined = weak & beside
        if not joined.any():
            break
        strong = strong | joined
        weak = weak & ~joined
    edges = strong.astype(F)
    return np.stack([edges, edges, edges]), ties


def cut(x, ties, m):
    h, w = x.shape[1:]
    nh, nw = h // m * m, w // m * m
    oy, ox = (h % m) // 2, (w % m) // 2
    kept = [
        (t // w - oy) * nw + (t % w - ox)
        for t in ties
        if oy <= t // w < oy + nh and ox <= t % w < ox + nw
    ]
    return x[:, oy : oy + nh, ox : ox + nw], kept


def main():
    case = json.load(open(sys.argv[1]))
    x = np.array(case["picture"], dtype=F).reshape(3, case["h"], case["w"])
    ties = []
    for op in case["ops"]:
        if op[0] == "invert":
            x = F(1.0) - x
        elif op[0] == "cut":
            x, ties = cut(x, ties, op[1])
        else:
            x, ties = canny(x, F(op[1]), F(op[2]))
    print(json.dumps({"values": [float(v) for v in x.reshape(-1)], "ties": ties}))


if __name__ == "__main__":
    main()
