//! The models of the hand-made example packages (`tiny-denoise`,
//! `tiny-tone`, `tiny-words`), built with the product's ONNX graph builder.
//! Their recipes' expected outputs are computed independently, with numpy,
//! by `scripts/gen_fixtures.py`.

use wfstudio_onnx::builder::{Attr, Dim, GraphBuilder};
use wfstudio_onnx::proto::onnx::tensor_proto::DataType;

const PRODUCER: &str = "wfstudio-example-fixtures";

/// One model file: its path under `fixtures/examples/` and its bytes.
pub type ModelFile = (&'static str, Vec<u8>);

fn named(n: &str) -> Dim {
    Dim::Named(n.into())
}

fn fixed(n: i64) -> Dim {
    Dim::Fixed(n)
}

/// The smiley latent `[1, 4, 8, 8]` the tiny denoiser pulls towards: a
/// yellow face with dark eyes and mouth on a blue background.
fn smiley_latent() -> Vec<f32> {
    let mut latent = vec![-1.0f32; 4 * 64];
    for y in 0..8 {
        for x in 0..8 {
            let face = ((x as f32 - 3.5).hypot(y as f32 - 3.5)) < 3.7;
            let feature = matches!((y, x), (2, 2) | (2, 5) | (4, 1) | (4, 6))
                || (y == 5 && (2..6).contains(&x));
            let at = |c: usize| c * 64 + y * 8 + x;
            if face && !feature {
                latent[at(0)] = 1.0;
                latent[at(1)] = 0.8;
            }
            if !face {
                latent[at(2)] = 0.9;
                latent[at(1)] = -0.3;
            }
        }
    }
    latent
}

/// `tiny-denoise`: the denoiser (half-way towards the smiley each step) and
/// the decoder (nearest x4, a 1x1 channel mix, tanh).
pub fn denoise() -> Vec<ModelFile> {
    let latent_dims = [named("batch"), fixed(4), fixed(8), fixed(8)];
    let mut g = GraphBuilder::new("denoiser", PRODUCER);
    let latent = g.input("latent", DataType::FLOAT, &latent_dims);
    g.input("step", DataType::INT64, &[]);
    let target = g.f32s(&smiley_latent(), &[1, 4, 8, 8]);
    let half = g.scalar_f32(0.5);
    let gap = g.op("Sub", &[&target, &latent]);
    let pulled = g.op("Mul", &[&gap, &half]);
    let next = g.op("Add", &[&latent, &pulled]);
    g.output(&next, "next_latent", DataType::FLOAT, &latent_dims);
    let denoiser = g.to_bytes();

    let mix: [f32; 12] = [1.6, 0.0, 0.0, 0.0, 0.0, 1.6, 0.0, 0.0, 0.0, 0.0, 1.6, 0.2];
    let mut g = GraphBuilder::new("decoder", PRODUCER);
    let latent = g.input("latent", DataType::FLOAT, &latent_dims);
    let weights = g.f32s(&mix, &[3, 4, 1, 1]);
    let scales = g.vec_f32(&[1.0, 1.0, 4.0, 4.0]);
    let up = g.op_with(
        "Resize",
        &[&latent, "", &scales],
        &[("mode", Attr::Str("nearest".into()))],
    );
    let rgb = g.op("Conv", &[&up, &weights]);
    let image = g.op("Tanh", &[&rgb]);
    g.output(
        &image,
        "image",
        DataType::FLOAT,
        &[named("batch"), fixed(3), fixed(32), fixed(32)],
    );
    vec![
        ("tiny-denoise/denoiser/model.onnx", denoiser),
        ("tiny-denoise/decoder/model.onnx", g.to_bytes()),
    ]
}

/// `tiny-tone`: 0.1 s of a sine note per step, its pitch walking up a
/// C-major scale, the phase carried so the notes join.
pub fn tone() -> Vec<ModelFile> {
    const RATE: f32 = 16000.0;
    const CHUNK: usize = 1600;
    let scale = [
        261.63f32, 293.66, 329.63, 349.23, 392.0, 440.0, 493.88, 523.25,
    ];
    let mut g = GraphBuilder::new("synth", PRODUCER);
    let step = g.input("step", DataType::INT64, &[fixed(1)]);
    let phase = g.input("phase", DataType::FLOAT, &[fixed(1)]);
    let table = g.vec_f32(&scale);
    let times: Vec<f32> = (0..CHUNK).map(|i| i as f32 / RATE).collect();
    let t = g.vec_f32(&times);
    let two_pi = g.scalar_f32((2.0 * std::f64::consts::PI) as f32);
    let amplitude = g.scalar_f32(0.3);
    let advance = g.scalar_f32((CHUNK as f64 / RATE as f64) as f32);
    let chunk_shape = g.vec_i64(&[1, 1, CHUNK as i64]);
    let hz = g.op("Gather", &[&table, &step]);
    let omega = g.op("Mul", &[&hz, &two_pi]);
    let angle0 = g.op("Mul", &[&omega, &t]);
    let angle = g.op("Add", &[&angle0, &phase]);
    let wave = g.op("Sin", &[&angle]);
    let quiet = g.op("Mul", &[&wave, &amplitude]);
    let chunk = g.op("Reshape", &[&quiet, &chunk_shape]);
    let turn = g.op("Mul", &[&omega, &advance]);
    let unwrapped = g.op("Add", &[&phase, &turn]);
    let next = g.op_with("Mod", &[&unwrapped, &two_pi], &[("fmod", Attr::Int(1))]);
    g.output(
        &chunk,
        "chunk",
        DataType::FLOAT,
        &[fixed(1), fixed(1), fixed(CHUNK as i64)],
    );
    g.output(&next, "next_phase", DataType::FLOAT, &[fixed(1)]);
    vec![("tiny-tone/synth/model.onnx.textproto", text(g))]
}

/// The words of `tiny-words`' vocabulary, by id.
const VOCAB: [&str; 16] = [
    "<unk>", "<bos>", "<eos>", "hello", "world", ",", "this", "tiny", "model", "speaks", "one",
    "word", "at", "a", "time", ".",
];

/// `tiny-words`: the prompt's last word, and the word that follows a word
/// in the sentence (ending with `<eos>`).
pub fn words() -> Vec<ModelFile> {
    let mut g = GraphBuilder::new("last_word", PRODUCER);
    let ids = g.input("input_ids", DataType::INT64, &[fixed(1), named("prompt")]);
    let start = g.vec_i64(&[-1]);
    let end = g.vec_i64(&[i64::MAX]);
    let axes = g.vec_i64(&[1]);
    let last = g.op("Slice", &[&ids, &start, &end, &axes]);
    g.output(&last, "last", DataType::INT64, &[fixed(1), fixed(1)]);
    let last_word = text(g);

    let eos = 2i64;
    let mut successor = vec![eos; VOCAB.len()];
    successor[1] = 3; // <bos> -> hello
    // Each word of the sentence (ids 3..) leads to the next; "." to <eos>.
    for (id, next) in successor
        .iter_mut()
        .enumerate()
        .take(VOCAB.len() - 1)
        .skip(3)
    {
        *next = id as i64 + 1;
    }
    let mut g = GraphBuilder::new("next_word", PRODUCER);
    let word = g.input("word", DataType::INT64, &[fixed(1), fixed(1)]);
    let table = g.vec_i64(&successor);
    let eos = g.scalar_i64(eos);
    let flat = g.vec_i64(&[1]);
    let next = g.op("Gather", &[&table, &word]);
    let ended = g.op("Equal", &[&next, &eos]);
    let going = g.op("Not", &[&ended]);
    let going = g.op("Reshape", &[&going, &flat]);
    g.output(&next, "next", DataType::INT64, &[fixed(1), fixed(1)]);
    g.output(&going, "going", DataType::BOOL, &[fixed(1)]);
    vec![
        ("tiny-words/last_word/model.onnx.textproto", last_word),
        ("tiny-words/next_word/model.onnx.textproto", text(g)),
    ]
}

fn text(g: GraphBuilder) -> Vec<u8> {
    wfstudio_onnx::to_textproto(&g.finish()).into_bytes()
}
