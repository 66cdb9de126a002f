//! Files as run inputs: a picture (PNG, JPEG, GIF) decoded with `image`,
//! resized to the input's fixed size and mapped into the chosen value
//! range; a video (see [`crate::input_video`]); a WAV file read with
//! `hound` as float samples; any other file's bytes as they are. Which input takes which kind is decided by
//! [`wfstudio_runner::media_input::input_media`]. Used by the studio's
//! inputs form.

use anyhow::{Context, bail};
use std::path::Path;
use wfstudio_runner::Tensor;
use wfstudio_runner::media::Rgb8;
use wfstudio_runner::media_input::{
    InputMedia, file_tensor, image_size, image_tensor, waveform_tensor,
};
use wfstudio_schema::types::contract::TensorContract;
use wfstudio_schema::types::workflow::ValueRange;

/// The largest file read as an input.
pub const MAX_INPUT_FILE_BYTES: u64 = 256 << 20;
/// The most samples (all channels) read from a WAV file.
pub const MAX_WAV_SAMPLES: u32 = 64 << 20;

/// File name extensions the picker offers for `media`.
pub fn extensions(media: InputMedia) -> &'static [&'static str] {
    match media {
        InputMedia::Image { .. } => &["png", "jpg", "jpeg", "gif"],
        InputMedia::Video => &["gif", "webp", "png", "apng"],
        InputMedia::Waveform => &["wav"],
        InputMedia::EncodedFile => &[],
    }
}

/// A file read as an input.
#[derive(Debug)]
pub struct ReadInput {
    /// The input's value.
    pub tensor: Tensor,
    /// What was read, in one line (size, rate, and any conversion made).
    pub summary: String,
    /// A video's frames a second, where the file gives them: the value of
    /// the input beside it ([`wfstudio_core::media::frame_rate_output`] of
    /// the input's name), where the package declares one.
    pub frame_rate: Option<f64>,
}

/// A video's frames a second as the value of the frame-rate input beside
/// it, of `contract` (a float of its rank: `[1]`, say).
pub fn frame_rate_tensor(fps: f64, contract: &TensorContract) -> anyhow::Result<Tensor> {
    let dtype = wfstudio_runner::DType::from_contract(&contract.dtype)
        .with_context(|| format!("dtype {} cannot be held on the host", contract.dtype))?;
    let value = serde_json::json!(fps);
    Ok(Tensor::from_nested(dtype, &value, contract.rank as usize)?)
}

/// The input tensor of the file at `path` and what was read.
pub fn read_input(
    path: &Path,
    media: InputMedia,
    contract: &TensorContract,
    range: ValueRange,
) -> anyhow::Result<ReadInput> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    if size > MAX_INPUT_FILE_BYTES {
        bail!(
            "{} is {size} bytes, over the {MAX_INPUT_FILE_BYTES}-byte limit",
            path.display()
        );
    }
    let read = |(tensor, summary)| ReadInput {
        tensor,
        summary,
        frame_rate: None,
    };
    match media {
        InputMedia::Video => {
            let video = crate::input_video::read_video(path, contract, range)?;
            Ok(ReadInput {
                tensor: video.tensor,
                summary: video.summary,
                frame_rate: video.frame_rate,
            })
        }
        InputMedia::Image { channels_first } => {
            let picture = image::open(path)
                .with_context(|| format!("decoding the picture {}", path.display()))?
                .to_rgb8();
            let (w, h) = picture.dimensions();
            let picture = match image_size(contract, channels_first) {
                Some((fh, fw)) if (fh, fw) != (h as usize, w as usize) => image::imageops::resize(
                    &picture,
                    fw as u32,
                    fh as u32,
                    image::imageops::FilterType::Triangle,
                ),
                _ => picture,
            };
            let (rw, rh) = picture.dimensions();
            let rgb = Rgb8 {
                width: rw as usize,
                height: rh as usize,
                pixels: picture.into_raw(),
                alpha: None,
            };
            let tensor =
                image_tensor(&rgb, contract, channels_first, range).map_err(anyhow::Error::msg)?;
            let resized = if (rw, rh) == (w, h) {
                String::new()
            } else {
                format!(", resized to {rw}×{rh}")
            };
            Ok(read((tensor, format!("{w}×{h} RGB{resized}"))))
        }
        InputMedia::Waveform => {
            let reader = hound::WavReader::open(path)
                .with_context(|| format!("reading the WAV file {}", path.display()))?;
            let spec = reader.spec();
            if reader.len() > MAX_WAV_SAMPLES {
                bail!(
                    "{} has {} samples, over the {MAX_WAV_SAMPLES}-sample limit",
                    path.display(),
                    reader.len()
                );
            }
            let samples = wav_samples(reader)
                .with_context(|| format!("reading the samples of {}", path.display()))?;
            let channels = usize::from(spec.channels);
            let tensor =
                waveform_tensor(channels, &samples, contract).map_err(anyhow::Error::msg)?;
            let seconds =
                samples.len() as f64 / channels.max(1) as f64 / f64::from(spec.sample_rate);
            Ok(read((
                tensor,
                format!(
                    "{} Hz, {channels} ch, {seconds:.2} s (the rate is not converted)",
                    spec.sample_rate
                ),
            )))
        }
        InputMedia::EncodedFile => {
            let bytes =
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            let n = bytes.len();
            Ok(read((
                file_tensor(bytes),
                format!("{n} bytes, as they are"),
            )))
        }
    }
}

/// Interleaved samples in [-1, 1] (integer PCM scaled by its bit depth).
fn wav_samples<R: std::io::Read>(
    mut reader: hound::WavReader<R>,
) -> Result<Vec<f32>, hound::Error> {
    let spec = reader.spec();
    match spec.sample_format {
        hound::SampleFormat::Float => reader.samples::<f32>().collect(),
        hound::SampleFormat::Int => {
            let scale = 1.0 / f64::from(1u32 << (spec.bits_per_sample.clamp(1, 32) - 1));
            reader
                .samples::<i32>()
                .map(|s| s.map(|s| (f64::from(s) * scale) as f32))
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wfstudio_runner::Data;

    fn contract(json: serde_json::Value) -> TensorContract {
        serde_json::from_value(json).expect("contract")
    }

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("wfstudio-input-media-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn a_png_becomes_a_channels_first_tensor_in_the_chosen_range() {
        let file = temp("two.png");
        image::RgbImage::from_raw(2, 1, vec![255, 0, 0, 0, 0, 255])
            .unwrap()
            .save(&file)
            .unwrap();
        let c = contract(
            serde_json::json!({"dtype": "float32", "rank": 4, "shape": ["batch", 3, "h", "w"]}),
        );
        let media = InputMedia::Image {
            channels_first: true,
        };
        let ReadInput {
            tensor: t, summary, ..
        } = read_input(&file, media, &c, ValueRange::NegativeOneToOne).unwrap();
        assert_eq!(summary, "2×1 RGB");
        assert_eq!(t.shape, [1, 3, 1, 2]);
        assert_eq!(t.data, Data::F32(vec![1.0, -1.0, -1.0, -1.0, -1.0, 1.0]));
        // A fixed 2x4 contract resizes the picture.
        let fixed =
            contract(serde_json::json!({"dtype": "uint8", "rank": 4, "shape": [1, 2, 4, 3]}));
        let ReadInput {
            tensor: t, summary, ..
        } = read_input(
            &file,
            InputMedia::Image {
                channels_first: false,
            },
            &fixed,
            ValueRange::ZeroTo255,
        )
        .unwrap();
        assert_eq!(summary, "2×1 RGB, resized to 4×2");
        assert_eq!(t.shape, [1, 2, 4, 3]);
        std::fs::write(&file, b"not a png").unwrap();
        let refused = read_input(&file, media, &c, ValueRange::ZeroToOne).unwrap_err();
        assert!(
            format!("{refused:#}").starts_with("decoding the picture"),
            "{refused:#}"
        );
    }

    /// A WAV file of `samples` (integer PCM of `bits`, or float for f32)
    /// at 8 kHz.
    fn write_wav<S: hound::Sample + Copy + 'static>(
        name: &str,
        channels: u16,
        bits: u16,
        samples: &[S],
    ) -> std::path::PathBuf {
        let file = temp(name);
        let float = std::any::TypeId::of::<S>() == std::any::TypeId::of::<f32>();
        let spec = hound::WavSpec {
            channels,
            sample_rate: 8000,
            bits_per_sample: bits,
            sample_format: if float {
                hound::SampleFormat::Float
            } else {
                hound::SampleFormat::Int
            },
        };
        let mut writer = hound::WavWriter::create(&file, spec).unwrap();
        for s in samples {
            writer.write_sample(*s).unwrap();
        }
        writer.finalize().unwrap();
        file
    }

    #[test]
    fn a_16_bit_stereo_wav_becomes_mono_samples() {
        let file = write_wav("stereo.wav", 2, 16, &[16384i16, 0, -32768, -16384]);
        let c = contract(
            serde_json::json!({"dtype": "float32", "rank": 3, "shape": ["batch", 1, "samples"]}),
        );
        let ReadInput {
            tensor: t, summary, ..
        } = read_input(&file, InputMedia::Waveform, &c, ValueRange::ZeroToOne).unwrap();
        assert_eq!(t.shape, [1, 1, 2]);
        assert_eq!(t.data, Data::F32(vec![0.25, -0.75]));
        assert_eq!(summary, "8000 Hz, 2 ch, 0.00 s (the rate is not converted)");
    }

    /// The shared corpus folder, or `None` (a skip) outside CI.
    fn shared() -> Option<std::path::PathBuf> {
        let dir = std::env::var_os("WFSTUDIO_SHARED")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
        if dir.join("corpus").is_dir() {
            return Some(dir);
        }
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the shared corpus is missing at {} (set WFSTUDIO_SHARED)",
            dir.display()
        );
        None
    }

    /// The corpus codec package run on a WAV file picked for its waveform
    /// input reproduces the recipe's output.
    #[test]
    fn a_picked_wav_runs_the_corpus_codec_to_its_reference() {
        let Some(shared) = shared() else { return };
        let package = shared.join("corpus/packages/codec");
        let recipe_text = std::fs::read_to_string(
            shared.join("corpus/expected/codec/roundtrip_two_samples.json"),
        )
        .unwrap();
        let recipe = wfstudio_runner::recipe::parse(&recipe_text).unwrap();
        let want_input = &recipe.inputs["request.waveform"];
        let Data::F32(samples) = &want_input.data else {
            panic!("float32 waveform")
        };
        let file = write_wav("codec.wav", 1, 32, samples);

        let mut runner = wfstudio_runner::Runner::load(&package, &Default::default()).unwrap();
        let input = &runner
            .document()
            .pipeline
            .as_ref()
            .unwrap()
            .workflow
            .inputs
            .as_ref()
            .unwrap()["request.waveform"];
        let media = wfstudio_runner::media_input::input_media(input);
        assert_eq!(media, Some(InputMedia::Waveform));
        let ReadInput { tensor, .. } = read_input(
            &file,
            InputMedia::Waveform,
            &input.contract,
            ValueRange::ZeroToOne,
        )
        .unwrap();
        assert_eq!(&tensor, want_input);
        let output = runner
            .run(
                [("request.waveform".to_string(), tensor)],
                wfstudio_runner::RunControl {
                    observer: None,
                    cancel: &std::sync::atomic::AtomicBool::new(false),
                    keep_bytes: 0,
                    reuse: None,
                },
            )
            .unwrap();
        let problems = wfstudio_runner::recipe::compare(
            &output.outputs,
            &recipe.outputs,
            recipe.abs,
            recipe.rel,
        );
        assert!(problems.is_empty(), "{problems:?}");
    }
}
