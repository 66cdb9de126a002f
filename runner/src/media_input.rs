//! Pictures, sound and files as workflow inputs: which inputs take them
//! (from the input's role and contract: one rule used by the studio's file
//! pickers), and the tensors they become. The inverse of [`crate::media`];
//! decoding the files themselves (PNG, WAV) is the caller's job.

use crate::media::Rgb8;
use crate::tensor::{DType, Data, Tensor};
use wfstudio_schema::types::contract::{Dim, TensorContract};
use wfstudio_schema::types::workflow::{InputRole, RuntimeInputRole, ValueRange, WorkflowInput};

/// What kind of file an input can be filled from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputMedia {
    /// A picture: `[B,3,H,W]` (channels first) or `[B,H,W,3]`, or the
    /// unbatched `[3,H,W]` / `[H,W,3]`.
    Image {
        /// Whether the 3-channel axis comes before height and width.
        channels_first: bool,
    },
    /// A video's frames: `[1, frames, 3, height, width]`, each frame a
    /// channels-first picture.
    Video,
    /// A waveform: `[B,C,S]`, `[C,S]` or `[S]` float samples.
    Waveform,
    /// The file's bytes as they are (`uint8 [n]` media inputs, which a
    /// component decodes itself).
    EncodedFile,
}

fn fixed(dim: &Dim, n: u64) -> bool {
    matches!(dim, Dim::Fixed(d) if *d == n)
}

/// The file an input can be filled from, if any: a 3-channel rank-3/4
/// contract is an image whatever the role, a rank-5 one with 3 channels
/// on axis 2 a video's frames; a `media` input is a waveform
/// when it is a float tensor of rank 1 to 3 and raw file bytes when it is
/// `uint8` of rank 1.
pub fn input_media(input: &WorkflowInput) -> Option<InputMedia> {
    let contract = &input.contract;
    let shape = contract.shape.as_deref().unwrap_or_default();
    let dtype = DType::from_contract(&contract.dtype)?;
    let image_dtype = dtype.is_float() || dtype == DType::U8;
    if image_dtype && shape.len() == 5 && fixed(&shape[2], 3) {
        return Some(InputMedia::Video);
    }
    if image_dtype && (shape.len() == 3 || shape.len() == 4) {
        let first = shape.len() - 3;
        if fixed(&shape[first], 3) {
            return Some(InputMedia::Image {
                channels_first: true,
            });
        }
        if fixed(&shape[shape.len() - 1], 3) {
            return Some(InputMedia::Image {
                channels_first: false,
            });
        }
    }
    let media = matches!(&input.role, InputRole::Runtime(r) if r.role == RuntimeInputRole::Media);
    match (media, dtype, shape.len()) {
        (true, DType::U8, 1) => Some(InputMedia::EncodedFile),
        (true, d, 1..=3) if d.is_float() => Some(InputMedia::Waveform),
        _ => None,
    }
}

/// Float values as `dtype` storage (uint8 by rounding, clamped).
fn float_data(dtype: DType, values: Vec<f32>) -> Result<Data, String> {
    Ok(match dtype {
        DType::F32 => Data::F32(values),
        DType::F64 => Data::F64(values.into_iter().map(f64::from).collect()),
        DType::F16 => Data::F16(values.into_iter().map(half::f16::from_f32).collect()),
        DType::Bf16 => Data::Bf16(values.into_iter().map(half::bf16::from_f32).collect()),
        DType::U8 => Data::U8(
            values
                .into_iter()
                .map(|v| v.round().clamp(0.0, 255.0) as u8)
                .collect(),
        ),
        other => return Err(format!("a picture or waveform cannot be {other}")),
    })
}

fn unit_to(range: ValueRange, byte: u8) -> f32 {
    let unit = f32::from(byte) / 255.0;
    match range {
        ValueRange::ZeroToOne => unit,
        ValueRange::NegativeOneToOne => unit * 2.0 - 1.0,
        ValueRange::ZeroTo255 => f32::from(byte),
    }
}

/// The tensor of one picture for an input of `contract`: batch 1 when the
/// contract is batched, channels where `channels_first` says, values mapped
/// into `range` (uint8 contracts take the bytes as they are). The picture
/// must already have the contract's fixed height and width.
pub fn image_tensor(
    picture: &Rgb8,
    contract: &TensorContract,
    channels_first: bool,
    range: ValueRange,
) -> Result<Tensor, String> {
    let dtype = DType::from_contract(&contract.dtype)
        .ok_or_else(|| format!("unknown dtype {}", contract.dtype))?;
    let (h, w) = (picture.height, picture.width);
    let mut shape = if channels_first {
        vec![3, h, w]
    } else {
        vec![h, w, 3]
    };
    if contract.rank == 4 {
        shape.insert(0, 1);
    }
    let mut values = Vec::with_capacity(h * w * 3);
    push_picture(picture, (channels_first, dtype, range), &mut values);
    Tensor::new(shape, float_data(dtype, values)?).map_err(|e| e.0)
}

/// Appends `picture`'s values to `values`: channels first or last, in
/// `range` (as bytes for a `uint8` dtype).
fn push_picture(
    picture: &Rgb8,
    (channels_first, dtype, range): (bool, DType, ValueRange),
    values: &mut Vec<f32>,
) {
    let (h, w) = (picture.height, picture.width);
    let start = values.len();
    values.resize(start + h * w * 3, 0.0);
    let out = &mut values[start..];
    for y in 0..h {
        for x in 0..w {
            for c in 0..3 {
                let byte = picture.pixels[(y * w + x) * 3 + c];
                let at = if channels_first {
                    (c * h + y) * w + x
                } else {
                    (y * w + x) * 3 + c
                };
                out[at] = if dtype == DType::U8 {
                    f32::from(byte)
                } else {
                    unit_to(range, byte)
                };
            }
        }
    }
}

/// The tensor of a video's `frames` for an input of `contract` (`[1,
/// frames, 3, height, width]`), values mapped into `range` as
/// [`image_tensor`] maps a picture's. Every frame must already have the
/// contract's fixed height and width, and all one size.
pub fn video_tensor(
    frames: &[Rgb8],
    contract: &TensorContract,
    range: ValueRange,
) -> Result<Tensor, String> {
    let first = frames.first().ok_or("the video has no frames")?;
    let (h, w) = (first.height, first.width);
    if let Some(other) = frames.iter().find(|f| (f.height, f.width) != (h, w)) {
        return Err(format!(
            "the video's frames differ in size ({w}×{h} and {}×{})",
            other.width, other.height
        ));
    }
    let dtype = DType::from_contract(&contract.dtype)
        .ok_or_else(|| format!("unknown dtype {}", contract.dtype))?;
    let mut values = Vec::with_capacity(frames.len() * 3 * h * w);
    for frame in frames {
        push_picture(frame, (true, dtype, range), &mut values);
    }
    Tensor::new(vec![1, frames.len(), 3, h, w], float_data(dtype, values)?).map_err(|e| e.0)
}

/// The fixed height and width an image input needs, if its contract fixes
/// them (symbolic axes take the picture's own size).
pub fn image_size(contract: &TensorContract, channels_first: bool) -> Option<(usize, usize)> {
    let shape = contract.shape.as_deref()?;
    let spatial = if channels_first {
        &shape[shape.len().checked_sub(2)?..]
    } else {
        &shape[shape.len().checked_sub(3)?..shape.len() - 1]
    };
    match spatial {
        [Dim::Fixed(h), Dim::Fixed(w)] => Some((*h as usize, *w as usize)),
        _ => None,
    }
}

/// The tensor of interleaved `samples` with `channels` channels for an
/// input of `contract`: `[1,C,S]`, `[C,S]` or `[S]` by rank. A contract
/// with one fixed channel gets the channels averaged (mono).
pub fn waveform_tensor(
    channels: usize,
    samples: &[f32],
    contract: &TensorContract,
) -> Result<Tensor, String> {
    let dtype = DType::from_contract(&contract.dtype)
        .ok_or_else(|| format!("unknown dtype {}", contract.dtype))?;
    if channels == 0 {
        return Err("the sound has no channels".into());
    }
    let frames = samples.len() / channels;
    let shape = contract.shape.as_deref().unwrap_or_default();
    let channel_axis = match contract.rank {
        3 => shape.get(1),
        2 => shape.first(),
        _ => None,
    };
    let mono = contract.rank == 1 || channel_axis.is_some_and(|d| fixed(d, 1));
    let out_channels = if mono { 1 } else { channels };
    let mut values = Vec::with_capacity(out_channels * frames);
    for c in 0..out_channels {
        for f in 0..frames {
            let frame = &samples[f * channels..(f + 1) * channels];
            values.push(if mono {
                frame.iter().sum::<f32>() / channels as f32
            } else {
                frame[c]
            });
        }
    }
    let shape = match contract.rank {
        1 => vec![frames],
        2 => vec![out_channels, frames],
        _ => vec![1, out_channels, frames],
    };
    Tensor::new(shape, float_data(dtype, values)?).map_err(|e| e.0)
}

/// A file's bytes as a `uint8 [n]` tensor.
pub fn file_tensor(bytes: Vec<u8>) -> Tensor {
    Tensor {
        shape: vec![bytes.len()],
        data: Data::U8(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::{audio_samples, image_rows, video_frames};

    fn contract(dtype: &str, shape: &[Dim]) -> TensorContract {
        serde_json::from_value(serde_json::json!({
            "dtype": dtype, "rank": shape.len(), "shape": shape,
        }))
        .expect("contract")
    }

    fn sym(s: &str) -> Dim {
        Dim::Symbol(s.into())
    }

    #[test]
    fn pictures_become_tensors_and_back() {
        let picture = Rgb8 {
            width: 2,
            height: 1,
            pixels: vec![0, 128, 255, 255, 0, 51],
            alpha: None,
        };
        let nchw = contract(
            "float32",
            &[sym("batch"), Dim::Fixed(3), sym("h"), sym("w")],
        );
        let t = image_tensor(&picture, &nchw, true, ValueRange::NegativeOneToOne).unwrap();
        assert_eq!(t.shape, [1, 3, 1, 2]);
        let Data::F32(v) = &t.data else {
            panic!("float32")
        };
        let want = [-1.0, 1.0, 128.0 / 255.0 * 2.0 - 1.0, -1.0, 1.0, 0.4 - 1.0];
        for (got, want) in v.iter().zip(want) {
            assert!((got - want).abs() < 1e-6, "{v:?}");
        }
        assert_eq!(
            image_rows(&t, Some(ValueRange::NegativeOneToOne)).unwrap()[0],
            picture
        );
        let nhwc = contract("uint8", &[sym("h"), sym("w"), Dim::Fixed(3)]);
        let t = image_tensor(&picture, &nhwc, false, ValueRange::ZeroToOne).unwrap();
        assert_eq!(t.shape, [1, 2, 3]);
        assert_eq!(t.data, Data::U8(picture.pixels.clone()));
        assert_eq!(image_size(&nchw, true), None);
        let fixed = contract(
            "float32",
            &[Dim::Fixed(1), Dim::Fixed(3), Dim::Fixed(32), Dim::Fixed(16)],
        );
        assert_eq!(image_size(&fixed, true), Some((32, 16)));
    }

    #[test]
    fn video_frames_become_a_frames_channels_tensor_and_back() {
        let frame = |pixels: Vec<u8>| Rgb8 {
            width: 2,
            height: 1,
            pixels,
            alpha: None,
        };
        let frames = [
            frame(vec![0, 51, 102, 153, 204, 255]),
            frame(vec![255, 0, 0, 0, 255, 0]),
        ];
        let video = contract(
            "float32",
            &[
                Dim::Fixed(1),
                sym("frames"),
                Dim::Fixed(3),
                sym("h"),
                sym("w"),
            ],
        );
        let input: WorkflowInput = serde_json::from_value(serde_json::json!({
            "contract": video, "role": "opaque",
            "source": "request", "required": true,
        }))
        .expect("input");
        assert_eq!(input_media(&input), Some(InputMedia::Video));
        let t = video_tensor(&frames, &video, ValueRange::ZeroToOne).unwrap();
        assert_eq!(t.shape, [1, 2, 3, 1, 2]);
        let Data::F32(v) = &t.data else {
            panic!("float32")
        };
        // Frame 1, channel 0 (red): 255 then 0.
        assert_eq!(&v[6..8], [1.0, 0.0]);
        assert_eq!(
            video_frames(&t, Some(ValueRange::ZeroToOne)).unwrap()[0],
            frames
        );
        let wider = frame(vec![0; 9]);
        let odd = Rgb8 { width: 3, ..wider };
        assert!(
            video_tensor(&[frames[0].clone(), odd], &video, ValueRange::ZeroToOne)
                .unwrap_err()
                .contains("differ in size")
        );
        assert!(video_tensor(&[], &video, ValueRange::ZeroToOne).is_err());
    }

    #[test]
    fn stereo_sound_is_averaged_for_a_mono_contract() {
        // Two frames of stereo: (0.5, -0.5), (1.0, 0.0).
        let samples = [0.5, -0.5, 1.0, 0.0];
        let mono = contract("float32", &[sym("batch"), Dim::Fixed(1), sym("n")]);
        let t = waveform_tensor(2, &samples, &mono).unwrap();
        assert_eq!(t.shape, [1, 1, 2]);
        assert_eq!(t.data, Data::F32(vec![0.0, 0.5]));
        let stereo = contract("float32", &[Dim::Fixed(2), sym("n")]);
        let t = waveform_tensor(2, &samples, &stereo).unwrap();
        assert_eq!(t.shape, [2, 2]);
        assert_eq!(audio_samples(&t).unwrap(), (2, samples.to_vec()));
        assert_eq!(file_tensor(vec![1, 2]).shape, [2]);
    }
}
