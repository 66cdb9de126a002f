//! The `camera_embedding` policy: ComfyUI's `WanCameraEmbedding`, the
//! Plücker embedding of a preset camera motion (Sitzmann et al. 2021, as
//! CameraCtrl computes it) that Wan's Fun camera models read beside the
//! sample. Contract parameters: `pose` (one of [`POSES`]), `speed`, the
//! intrinsics `fx`, `fy`, `cx`, `cy` (fractions of the picture) and the
//! video's `width`, `height` and `length` (`length - 1` a multiple of 4).
//!
//! Frame `i` of `length` is the camera turned by `i / length * speed *
//! pi/3` times the pose's angles (`Rz Ry Rx`) and moved by `i / length *
//! speed * 1.5` times its direction; the first frame is the origin, so
//! these are the poses relative to it. The focal lengths are fitted to a
//! 1280x720 pose picture's aspect. Each pixel's ray (through its centre)
//! is turned by the frame's rotation: its direction `d` and moment `o x
//! d` make 6 channels. The frames are grouped by fours (the first frame
//! four times, as the VAE's first latent frame holds one video frame):
//! output `[1, 24, (length + 3) / 4, height, width]`, channel `4 c + k`
//! the Plücker channel `c` of the group's frame `k`.

use super::SynthError;
use super::graph::PolicyGraph;
use serde_json::Value;
use wfstudio_onnx::builder::Attr;

/// ComfyUI's camera motions: (name, angles, direction).
pub const POSES: &[(&str, [f64; 3], [f64; 3])] = &[
    ("Static", [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]),
    ("Pan Up", [0.0, 0.0, 0.0], [0.0, -1.0, 0.0]),
    ("Pan Down", [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
    ("Pan Left", [0.0, 0.0, 0.0], [-1.0, 0.0, 0.0]),
    ("Pan Right", [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
    ("Zoom In", [0.0, 0.0, 0.0], [0.0, 0.0, 2.0]),
    ("Zoom Out", [0.0, 0.0, 0.0], [0.0, 0.0, -2.0]),
    ("Anti Clockwise (ACW)", [0.0, 0.0, -1.0], [0.0, 0.0, 0.0]),
    ("ClockWise (CW)", [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]),
];

/// The largest video the policy embeds: frames and sides.
const MAX_LENGTH: i64 = 16384;
const MAX_SIDE: i64 = 16384;

/// The pose pictures' aspect the focal lengths are fitted to.
const POSE_ASPECT: f64 = 1280.0 / 720.0;

/// Builds the `camera_embedding` policy.
pub(super) fn camera_embedding(g: &mut PolicyGraph<'_>) -> Result<(), SynthError> {
    let pose = g
        .parameter("pose")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(&(_, angles, direction)) = POSES.iter().find(|(name, _, _)| *name == pose) else {
        return Err(g.error(format!(
            "pose `{pose}` is not one of ComfyUI's camera motions"
        )));
    };
    let number = |g: &PolicyGraph<'_>, key: &str, top: f64| {
        g.parameter(key)
            .and_then(Value::as_f64)
            .filter(|v| (0.0..=top).contains(v))
            .ok_or_else(|| g.error(format!("its contract parameter `{key}` is not in 0..{top}")))
    };
    let speed = number(g, "speed", 10.0)?;
    let (fx, fy) = (number(g, "fx", 1.0)?, number(g, "fy", 1.0)?);
    let (cx, cy) = (number(g, "cx", 1.0)?, number(g, "cy", 1.0)?);
    let (width, height) = (g.positive_integer("width")?, g.positive_integer("height")?);
    let length = g.positive_integer("length")?;
    if length > MAX_LENGTH || width > MAX_SIDE || height > MAX_SIDE || (length - 1) % 4 != 0 {
        return Err(g.error(format!(
            "length must be 1 more than a multiple of 4, at most {MAX_LENGTH}; width and height at most {MAX_SIDE}"
        )));
    }
    if fx == 0.0 || fy == 0.0 {
        return Err(g.error("the focal lengths fx and fy must be above 0"));
    }
    // The focal lengths fitted to the pose pictures' aspect, in pixels.
    let (w, h) = (width as f64, height as f64);
    let (fx, fy) = match POSE_ASPECT > w / h {
        true => (h * POSE_ASPECT * fx / w, fy),
        false => (fx, w / POSE_ASPECT * fy / h),
    };
    let intrinsics = [fx * w, fy * h, cx * w, cy * h].map(|v| v as f32);
    let (turns, moves) = poses(length, speed, (angles, direction));
    let rays = pixel_rays(g, (width, height), intrinsics);
    // Each frame's rotation turns the rays: d R^T.
    let turns = g.b.f32s(&turns, &[length, 3, 3]);
    let d = g.op("MatMul", &[&rays, &turns]);
    let o = g.b.f32s(&moves, &[length, 1, 3]);
    let component = |g: &mut PolicyGraph<'_>, x: &str, k: i64| {
        let (start, end, axis) = (g.b.vec_i64(&[k]), g.b.vec_i64(&[k + 1]), g.b.vec_i64(&[2]));
        g.op("Slice", &[x, &start, &end, &axis])
    };
    let (dx, dy, dz) = (
        component(g, &d, 0),
        component(g, &d, 1),
        component(g, &d, 2),
    );
    let (ox, oy, oz) = (
        component(g, &o, 0),
        component(g, &o, 1),
        component(g, &o, 2),
    );
    let mut cross = |a: (&str, &str), b: (&str, &str)| {
        let first = g.op("Mul", &[a.0, a.1]);
        let second = g.op("Mul", &[b.0, b.1]);
        g.op("Sub", &[&first, &second])
    };
    let mx = cross((&oy, &dz), (&oz, &dy));
    let my = cross((&oz, &dx), (&ox, &dz));
    let mz = cross((&ox, &dy), (&oy, &dx));
    let plucker = g.op_with("Concat", &[&mx, &my, &mz, &d], &[("axis", Attr::Int(2))]);
    let shape = g.b.vec_i64(&[length, height, width, 6]);
    let plucker = g.op("Reshape", &[&plucker, &shape]);
    // Groups of four frames, the first frame four times.
    let groups = (length + 3) / 4;
    let picks: Vec<i64> = (0..groups * 4).map(|t| (t - 3).max(0)).collect();
    let picks = g.b.vec_i64(&picks);
    let picked = g.op_with("Gather", &[&plucker, &picks], &[("axis", Attr::Int(0))]);
    let shape = g.b.vec_i64(&[groups, 4, height, width, 6]);
    let grouped = g.op("Reshape", &[&picked, &shape]);
    let grouped = g.op_with(
        "Transpose",
        &[&grouped],
        &[("perm", Attr::Ints(vec![0, 4, 1, 2, 3]))],
    );
    let shape = g.b.vec_i64(&[groups, 24, height, width]);
    let channels = g.op("Reshape", &[&grouped, &shape]);
    let out = g.op_with(
        "Transpose",
        &[&channels],
        &[("perm", Attr::Ints(vec![1, 0, 2, 3]))],
    );
    let axis = g.b.vec_i64(&[0]);
    let out = g.op("Unsqueeze", &[&out, &axis]);
    g.output(&out, "embedding")
}

/// Each frame's rotation, transposed (`[length, 3, 3]`, row-major), and
/// position (`[length, 3]`), as float32: frame `i` turned by `i / length *
/// speed * pi/3 * angles` (`Rz Ry Rx`) and moved by `i / length * speed *
/// 1.5 * direction`.
fn poses(
    length: i64,
    speed: f64,
    (angles, direction): ([f64; 3], [f64; 3]),
) -> (Vec<f32>, Vec<f32>) {
    let (mut turns, mut moves) = (Vec::new(), Vec::new());
    for i in 0..length {
        let along = i as f64 / length as f64 * speed;
        let [ax, ay, az] = angles.map(|a| along * std::f64::consts::FRAC_PI_3 * a);
        let rx = [
            [1.0, 0.0, 0.0],
            [0.0, ax.cos(), -ax.sin()],
            [0.0, ax.sin(), ax.cos()],
        ];
        let ry = [
            [ay.cos(), 0.0, ay.sin()],
            [0.0, 1.0, 0.0],
            [-ay.sin(), 0.0, ay.cos()],
        ];
        let rz = [
            [az.cos(), -az.sin(), 0.0],
            [az.sin(), az.cos(), 0.0],
            [0.0, 0.0, 1.0],
        ];
        let r = product(&rz, &product(&ry, &rx));
        // R transposed, row-major: R's columns in turn.
        turns.extend((0..3).flat_map(|column| r.map(|row| row[column] as f32)));
        moves.extend(direction.map(|t| (along * 1.5 * t) as f32));
    }
    (turns, moves)
}

/// The 3x3 product `a b`.
fn product(a: &[[f64; 3]; 3], b: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let mut out = [[0.0; 3]; 3];
    for (row, out_row) in out.iter_mut().enumerate() {
        for (column, cell) in out_row.iter_mut().enumerate() {
            *cell = (0..3).map(|k| a[row][k] * b[k][column]).sum();
        }
    }
    out
}

/// The unit direction `[1, height * width, 3]` of each pixel's ray through
/// its centre, `((x + 0.5 - cx) / fx, (y + 0.5 - cy) / fy, 1)` normalised,
/// for `intrinsics` `[fx, fy, cx, cy]` in pixels (float32, as ComfyUI
/// computes them).
fn pixel_rays(
    g: &mut PolicyGraph<'_>,
    (width, height): (i64, i64),
    intrinsics: [f32; 4],
) -> String {
    let [fx, fy, cx, cy] = intrinsics;
    let along = |g: &mut PolicyGraph<'_>, n: i64, centre: f32, focal: f32| {
        let (start, end, step) = (g.f(0.0), g.f(n as f64), g.f(1.0));
        let index = g.op("Range", &[&start, &end, &step]);
        let half = g.f(0.5);
        let at = g.op("Add", &[&index, &half]);
        let centre = g.b.scalar_f32(centre);
        let offset = g.op("Sub", &[&at, &centre]);
        let focal = g.b.scalar_f32(focal);
        g.op("Div", &[&offset, &focal])
    };
    let xs = along(g, width, cx, fx);
    let ys = along(g, height, cy, fy);
    let grid = g.b.vec_i64(&[height, width]);
    let row = g.b.vec_i64(&[1, width]);
    let column = g.b.vec_i64(&[height, 1]);
    let xs = g.op("Reshape", &[&xs, &row]);
    let xs = g.op("Expand", &[&xs, &grid]);
    let ys = g.op("Reshape", &[&ys, &column]);
    let ys = g.op("Expand", &[&ys, &grid]);
    let one = g.f(1.0);
    let zs = g.op("Expand", &[&one, &grid]);
    let squares: Vec<String> = [&xs, &ys, &zs]
        .into_iter()
        .map(|v| g.op("Mul", &[v, v]))
        .collect();
    let sum = g.op("Add", &[&squares[0], &squares[1]]);
    let sum = g.op("Add", &[&sum, &squares[2]]);
    let norm = g.op("Sqrt", &[&sum]);
    let last = g.b.vec_i64(&[2]);
    let unit: Vec<String> = [&xs, &ys, &zs]
        .into_iter()
        .map(|v| {
            let u = g.op("Div", &[v, &norm]);
            g.op("Unsqueeze", &[&u, &last])
        })
        .collect();
    let d = g.op_with(
        "Concat",
        &[&unit[0], &unit[1], &unit[2]],
        &[("axis", Attr::Int(2))],
    );
    let shape = g.b.vec_i64(&[1, height * width, 3]);
    g.op("Reshape", &[&d, &shape])
}
