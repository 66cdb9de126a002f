//! Outputs as media, by the output's declared role: image tensors become
//! RGB pictures (mapped by `value_range`), video tensors frames per batch
//! row, audio tensors interleaved samples at the declared sample rate.
//! Shared by `wfstudio run --out` and the studio's previews, with the PNG,
//! animated GIF and WAV encoders both use.

use anyhow::Context;
use std::collections::BTreeMap;
use wfstudio_runner::Tensor;
use wfstudio_runner::media::Rgb8;
use wfstudio_runner::text::{PackageTokenizer, TextError, decode_rows, utf8_rows};
use wfstudio_schema::Document;
use wfstudio_schema::types::workflow::{OutputRole, WorkflowOutput};

/// What an output is, as media.
#[derive(Clone, Debug, PartialEq)]
pub enum Media {
    /// One picture per batch row.
    Image(Vec<Rgb8>),
    /// Interleaved samples of the first batch row.
    Audio {
        /// Channel count.
        channels: usize,
        /// Samples per second.
        rate: u32,
        /// Interleaved samples in [-1, 1].
        samples: Vec<f32>,
    },
    /// Frames per batch row.
    Video(Vec<Vec<Rgb8>>),
    /// Neither image, video nor audio.
    Tensor,
}

/// Sample rate used when an audio output declares none.
const DEFAULT_SAMPLE_RATE: u32 = 16_000;

/// The declared output a run's output key stands for: the key itself, a
/// row of it (`tokens.row.1`) or one of its events (`tokens.3`).
pub fn output_of<'d>(document: &'d Document, key: &str) -> Option<&'d WorkflowOutput> {
    let outputs = document.pipeline.as_ref()?.workflow.outputs.as_ref()?;
    let row = key.split(".row.").next().unwrap_or(key);
    let event = key
        .rsplit_once('.')
        .filter(|(_, n)| n.parse::<usize>().is_ok())
        .map(|(name, _)| name);
    [Some(key), Some(row), event]
        .into_iter()
        .flatten()
        .find_map(|name| outputs.get(name))
}

/// Whether output `key` holds token ids to show as text.
pub fn is_tokens(document: &Document, key: &str) -> bool {
    output_of(document, key).is_some_and(|o| o.role == OutputRole::Tokens)
}

/// The text of output `key`, one string per row, when it holds token ids
/// and the package has a `tokenizer`, or is a text output (UTF-8 bytes);
/// `None` otherwise.
pub fn text_of(
    document: &Document,
    tokenizer: Option<&PackageTokenizer>,
    key: &str,
    tensor: &Tensor,
) -> Option<Result<Vec<String>, TextError>> {
    match output_of(document, key)?.role {
        OutputRole::Tokens => Some(decode_rows(tokenizer?, tensor)),
        OutputRole::Text => utf8_rows(tensor).map(Ok),
        _ => None,
    }
}

/// The media form of output `key` (`image`, `audio.row.1`, ...) of `document`.
pub fn decode(document: &Document, key: &str, tensor: &Tensor) -> anyhow::Result<Media> {
    let Some(output) = output_of(document, key) else {
        return Ok(Media::Tensor);
    };
    Ok(match output.role {
        OutputRole::Image => Media::Image(
            wfstudio_runner::media::image_rows(tensor, output.value_range)
                .map_err(anyhow::Error::msg)?,
        ),
        OutputRole::Audio => {
            let (channels, samples) =
                wfstudio_runner::media::audio_samples(tensor).map_err(anyhow::Error::msg)?;
            let rate = output
                .media
                .as_ref()
                .and_then(|m| m.sample_rate_hz)
                .unwrap_or(DEFAULT_SAMPLE_RATE);
            Media::Audio {
                channels,
                rate,
                samples,
            }
        }
        OutputRole::Video => Media::Video(
            wfstudio_runner::media::video_frames(tensor, output.value_range)
                .map_err(anyhow::Error::msg)?,
        ),
        _ => Media::Tensor,
    })
}

/// Frames per second of a video output that carries no frame rate.
const DEFAULT_VIDEO_FPS: f64 = 8.0;

/// The frames per second of batch row `row` of video output `key` of a
/// run's `outputs`: that row's value of its frame-rate output
/// (`wfstudio_core::media`; one value serves every row) when that is a
/// positive number, else [`DEFAULT_VIDEO_FPS`].
pub fn frame_rate(outputs: &BTreeMap<String, Tensor>, key: &str, row: usize) -> f64 {
    outputs
        .get(&wfstudio_core::media::frame_rate_output(key))
        .and_then(|rate| match rate.data.len() {
            1 => Some(rate.data.get_f64(0)),
            n if row < n => Some(rate.data.get_f64(row)),
            _ => None,
        })
        .filter(|fps| fps.is_finite() && *fps > 0.0)
        .unwrap_or(DEFAULT_VIDEO_FPS)
}

/// Animated GIF file bytes of `frames` shown at `fps`, looping forever.
/// GIF keeps delays in hundredths of a second, and players show delays
/// under two hundredths slowly: above 50 fps the GIF plays at 50.
pub fn gif_bytes(frames: &[Rgb8], fps: f64) -> anyhow::Result<Vec<u8>> {
    use image::codecs::gif::{GifEncoder, Repeat};
    let mut gif = Vec::new();
    {
        let mut encoder = GifEncoder::new_with_speed(&mut gif, 10);
        encoder.set_repeat(Repeat::Infinite)?;
        let micros = (1e6 / fps.clamp(0.01, 50.0)).round() as u32;
        let delay = image::Delay::from_numer_denom_ms(micros, 1000);
        for rgb in frames {
            let rgba = image::DynamicImage::ImageRgb8(
                image::RgbImage::from_raw(rgb.width as u32, rgb.height as u32, rgb.pixels.clone())
                    .context("frame buffer")?,
            )
            .to_rgba8();
            encoder.encode_frame(image::Frame::from_parts(rgba, 0, 0, delay))?;
        }
    }
    Ok(gif)
}

/// PNG file bytes of a picture (RGBA where it has alpha).
pub fn png_bytes(rgb: &Rgb8) -> anyhow::Result<Vec<u8>> {
    let mut png = Vec::new();
    let (w, h) = (rgb.width as u32, rgb.height as u32);
    let mut out = std::io::Cursor::new(&mut png);
    match &rgb.alpha {
        Some(_) => image::RgbaImage::from_raw(w, h, rgb.rgba())
            .context("image buffer")?
            .write_to(&mut out, image::ImageFormat::Png)?,
        None => image::RgbImage::from_raw(w, h, rgb.pixels.clone())
            .context("image buffer")?
            .write_to(&mut out, image::ImageFormat::Png)?,
    }
    Ok(png)
}

/// 16-bit PCM WAV file bytes of interleaved samples.
pub fn wav_bytes(channels: usize, rate: u32, samples: &[f32]) -> anyhow::Result<Vec<u8>> {
    let spec = hound::WavSpec {
        channels: u16::try_from(channels).context("too many audio channels")?,
        sample_rate: rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut wav = std::io::Cursor::new(Vec::new());
    let mut writer = hound::WavWriter::new(&mut wav, spec)?;
    for s in samples {
        writer.write_sample((s.clamp(-1.0, 1.0) * f32::from(i16::MAX)) as i16)?;
    }
    writer.finalize()?;
    Ok(wav.into_inner())
}

#[cfg(test)]
mod tests {
    use super::{frame_rate, gif_bytes, png_bytes};
    use image::AnimationDecoder;
    use wfstudio_runner::media::Rgb8;

    #[test]
    fn a_picture_with_alpha_is_an_rgba_png() {
        let picture = Rgb8 {
            width: 2,
            height: 1,
            pixels: vec![255, 0, 0, 0, 0, 255],
            alpha: Some(vec![255, 64]),
        };
        let png = image::load_from_memory(&png_bytes(&picture).expect("encodes")).expect("a PNG");
        assert_eq!(png.color(), image::ColorType::Rgba8);
        assert_eq!(png.to_rgba8().into_raw(), [255, 0, 0, 255, 0, 0, 255, 64]);
        let opaque = Rgb8 {
            alpha: None,
            ..picture
        };
        let png = image::load_from_memory(&png_bytes(&opaque).expect("encodes")).expect("a PNG");
        assert_eq!(png.color(), image::ColorType::Rgb8);
    }

    #[test]
    fn gif_keeps_frames_timing_and_colours() {
        let frame = |rgb: [u8; 3]| Rgb8 {
            width: 2,
            height: 2,
            pixels: rgb.repeat(4),
            alpha: None,
        };
        let frames = [frame([255, 0, 0]), frame([0, 0, 255]), frame([0, 255, 0])];
        let bytes = gif_bytes(&frames, 4.0).expect("encodes");
        let decoded = image::codecs::gif::GifDecoder::new(std::io::Cursor::new(bytes))
            .expect("a GIF")
            .into_frames()
            .collect_frames()
            .expect("frames");
        assert_eq!(decoded.len(), 3);
        for (got, want) in decoded.iter().zip(&frames) {
            assert_eq!(got.delay().numer_denom_ms(), (250, 1));
            let pixel = got.buffer().get_pixel(1, 1).0;
            for c in 0..3 {
                assert!(
                    pixel[c].abs_diff(want.pixels[c]) <= 8,
                    "{pixel:?} vs {:?}",
                    &want.pixels[..3]
                );
            }
        }
    }

    #[test]
    fn one_frame_rate_serves_every_row_and_several_one_each() {
        let outputs = |rates: &[f32]| {
            let tensor = wfstudio_runner::Tensor::from_json(
                &serde_json::json!({"dtype": "float32", "shape": [rates.len()], "data": rates}),
            )
            .expect("tensor");
            std::collections::BTreeMap::from([("video_frame_rate".to_string(), tensor)])
        };
        let one = outputs(&[16.0]);
        assert_eq!(frame_rate(&one, "video", 0), 16.0);
        assert_eq!(frame_rate(&one, "video", 1), 16.0);
        let two = outputs(&[16.0, 24.0]);
        assert_eq!(frame_rate(&two, "video", 1), 24.0);
        assert_eq!(frame_rate(&two, "video", 2), 8.0, "no value for the row");
        assert_eq!(frame_rate(&one, "other", 0), 8.0, "no frame-rate output");
    }
}
