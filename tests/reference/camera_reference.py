"""ComfyUI's WanCameraEmbedding computed independently with numpy.

A preset camera motion (angles and a direction) over `length` frames: frame
i is turned by i / length * speed * pi/3 times the angles (Rz Ry Rx) and
moved by i / length * speed * 1.5 times the direction, relative to the
first. The focal lengths are fitted to a 1280x720 pose picture's aspect.
Each pixel's ray through its centre gives the Plücker coordinates (o x d,
d) per frame; the frames are grouped by four, the first frame four times,
into 24 channels: [1, 24, (length + 3) / 4, height, width]. Float32 where
ComfyUI computes in float32 (the poses and the rays).

Usage: camera_reference.py SETTINGS_JSON OUT_NPY
"""
import json
import sys

import numpy as np

POSES = {
    "Static": ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]),
    "Pan Up": ([0.0, 0.0, 0.0], [0.0, -1.0, 0.0]),
    "Pan Down": ([0.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
    "Pan Left": ([0.0, 0.0, 0.0], [-1.0, 0.0, 0.0]),
    "Pan Right": ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
    "Zoom In": ([0.0, 0.0, 0.0], [0.0, 0.0, 2.0]),
    "Zoom Out": ([0.0, 0.0, 0.0], [0.0, 0.0, -2.0]),
    "Anti Clockwise (ACW)": ([0.0, 0.0, -1.0], [0.0, 0.0, 0.0]),
    "ClockWise (CW)": ([0.0, 0.0, 1.0], [0.0, 0.0, 0.0]),
}


def rotation(ax, ay, az):
    rx = np.array([[1, 0, 0], [0, np.cos(ax), -np.sin(ax)], [0, np.sin(ax), np.cos(ax)]])
    ry = np.array([[np.cos(ay), 0, np.sin(ay)], [0, 1, 0], [-np.sin(ay), 0, np.cos(ay)]])
    rz = np.array([[np.cos(az), -np.sin(az), 0], [np.sin(az), np.cos(az), 0], [0, 0, 1]])
    return rz @ (ry @ rx)


def embedding(s):
    angles, direction = (np.array(v, dtype=np.float64) for v in POSES[s["pose"]])
    n, width, height, speed = s["length"], s["width"], s["height"], s["speed"]
    c2w = []
    for i in range(n):
        along = i / n * speed
        m = np.eye(4)
        m[:3, :3] = rotation(*(along * np.pi / 3 * angles))
        m[:3, 3] = along * 1.5 * direction
        c2w.append(m)
    first = np.linalg.inv(c2w[0])
    poses = np.array([np.eye(4)] + [first @ m for m in c2w[1:]], dtype=np.float32)
    fx, fy, cx, cy = s["fx"], s["fy"], s["cx"], s["cy"]
    if 1280 / 720 > width / height:
        fx = height * (1280 / 720) * fx / width
    else:
        fy = width / (1280 / 720) * fy / height
    k = np.array([fx * width, fy * height, cx * width, cy * height], dtype=np.float32)
    rows, columns = np.meshgrid(np.arange(height, dtype=np.float32), np.arange(width, dtype=np.float32), indexing="ij")
    x = (columns.reshape(-1) + np.float32(0.5) - k[2]) / k[0]
    y = (rows.reshape(-1) + np.float32(0.5) - k[3]) / k[1]
    d = np.stack([x, y, np.ones_like(x)], axis=-1)
    d = d / np.linalg.norm(d, axis=-1, keepdims=True)
    rays = d[None] @ np.transpose(poses[:, :3, :3], (0, 2, 1))
    origins = np.broadcast_to(poses[:, None, :3, 3], rays.shape)
    plucker = np.concatenate([np.cross(origins, rays), rays], axis=-1).reshape(n, height, width, 6)
    video = plucker.transpose(3, 0, 1, 2)[None]
    video = np.concatenate([np.repeat(video[:, :, :1], 4, axis=2), video[:, :, 1:]], axis=2)
    video = video.transpose(0, 2, 1, 3, 4)
    b, f, c, h, w = video.shape
    video = video.reshape(b, f // 4, 4, c, h, w).transpose(0, 1, 3, 2, 4, 5)
    return video.reshape(b, f // 4, c * 4, h, w).transpose(0, 2, 1, 3, 4).astype(np.float32)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        settings = json.load(f)
    np.save(sys.argv[2], embedding(settings))
