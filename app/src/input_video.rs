//! Video files as run inputs: an animated GIF, WebP or PNG (APNG) decoded
//! with `image` into frames (a still picture is a one-frame video), each
//! resized to the input's fixed size, with the frame rate the frame
//! delays give. MP4 and other containers are not read: their codecs need
//! a decoder this build does not carry, so the error says how to convert.

use anyhow::{Context, bail};
use image::{AnimationDecoder, Frames, RgbaImage};
use std::io::BufReader;
use std::path::Path;
use wfstudio_runner::Tensor;
use wfstudio_runner::media::Rgb8;
use wfstudio_runner::media_input::{image_size, video_tensor};
use wfstudio_schema::types::contract::TensorContract;
use wfstudio_schema::types::workflow::ValueRange;

/// The most frames read from a video file.
pub const MAX_VIDEO_FRAMES: usize = 4096;
/// The most values (frames × height × width × 3) a video input holds: 1
/// GiB of float32.
pub const MAX_VIDEO_VALUES: usize = 1 << 28;

/// A video file read for an input.
pub struct ReadVideo {
    /// `[1, frames, 3, height, width]`.
    pub tensor: Tensor,
    /// Frames a second, where the file's frame delays give one.
    pub frame_rate: Option<f64>,
    /// What was read, in one line.
    pub summary: String,
}

/// Reads the video at `path` for an input of `contract`, pixels mapped
/// into `range`.
pub fn read_video(
    path: &Path,
    contract: &TensorContract,
    range: ValueRange,
) -> anyhow::Result<ReadVideo> {
    let (frames, delays_ms) = decode(path)?;
    let Some(first) = frames.first() else {
        bail!("{} holds no frames", path.display());
    };
    let (w, h) = first.dimensions();
    let (fw, fh) = image_size(contract, true).map_or((w, h), |(fh, fw)| (fw as u32, fh as u32));
    let values = frames.len() * fw as usize * fh as usize * 3;
    if values > MAX_VIDEO_VALUES {
        bail!(
            "{} is {} frames of {fw}×{fh}, over the {MAX_VIDEO_VALUES}-value limit of a video input",
            path.display(),
            frames.len()
        );
    }
    let resized = (fw, fh) != (w, h);
    let mut pictures = Vec::with_capacity(frames.len());
    for frame in frames {
        let rgb = image::DynamicImage::ImageRgba8(frame).to_rgb8();
        let rgb = match rgb.dimensions() == (fw, fh) {
            true => rgb,
            false => image::imageops::resize(&rgb, fw, fh, image::imageops::FilterType::Triangle),
        };
        pictures.push(Rgb8 {
            width: fw as usize,
            height: fh as usize,
            pixels: rgb.into_raw(),
            alpha: None,
        });
    }
    let count = pictures.len();
    let tensor = video_tensor(&pictures, contract, range).map_err(anyhow::Error::msg)?;
    let total_ms: f64 = delays_ms.iter().sum();
    let frame_rate = (total_ms > 0.0).then(|| count as f64 * 1000.0 / total_ms);
    let rate = match frame_rate {
        Some(fps) => format!("{fps:.3} fps"),
        None => "no frame rate".into(),
    };
    let resized = match resized {
        true => format!(", resized to {fw}×{fh}"),
        false => String::new(),
    };
    Ok(ReadVideo {
        tensor,
        frame_rate,
        summary: format!("{count} frames of {w}×{h} RGB, {rate}{resized}"),
    })
}

/// The frames of the file at `path` and each one's delay in milliseconds.
fn decode(path: &Path) -> anyhow::Result<(Vec<RgbaImage>, Vec<f64>)> {
    let open = || -> anyhow::Result<BufReader<std::fs::File>> {
        let file =
            std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
        Ok(BufReader::new(file))
    };
    let format = image::ImageFormat::from_path(path).ok().or_else(|| {
        image::ImageReader::new(open().ok()?)
            .with_guessed_format()
            .ok()?
            .format()
    });
    let decoding = || format!("decoding the video {}", path.display());
    let frames = match format {
        Some(image::ImageFormat::Gif) => collect(
            image::codecs::gif::GifDecoder::new(open()?)
                .with_context(decoding)?
                .into_frames(),
        ),
        Some(image::ImageFormat::WebP) => collect(
            image::codecs::webp::WebPDecoder::new(open()?)
                .with_context(decoding)?
                .into_frames(),
        ),
        Some(image::ImageFormat::Png) => {
            let png = image::codecs::png::PngDecoder::new(open()?).with_context(decoding)?;
            match png.is_apng().with_context(decoding)? {
                true => collect(png.apng().with_context(decoding)?.into_frames()),
                false => still(path),
            }
        }
        Some(image::ImageFormat::Jpeg) => still(path),
        _ => bail!(
            "{} is not an animated GIF, WebP or PNG: MP4 and other video containers are not read here; convert it first (ffmpeg -i IN.mp4 OUT.webp)",
            path.display()
        ),
    };
    frames.with_context(decoding)
}

/// Every frame of an animation and its delay, up to [`MAX_VIDEO_FRAMES`].
fn collect(frames: Frames<'_>) -> anyhow::Result<(Vec<RgbaImage>, Vec<f64>)> {
    let mut pictures = Vec::new();
    let mut delays = Vec::new();
    for frame in frames {
        if pictures.len() == MAX_VIDEO_FRAMES {
            bail!("over the {MAX_VIDEO_FRAMES}-frame limit of a video input");
        }
        let frame = frame?;
        let (numer, denom) = frame.delay().numer_denom_ms();
        delays.push(f64::from(numer) / f64::from(denom.max(1)));
        pictures.push(frame.into_buffer());
    }
    Ok((pictures, delays))
}

/// A still picture as a one-frame video with no delay.
fn still(path: &Path) -> anyhow::Result<(Vec<RgbaImage>, Vec<f64>)> {
    let picture = image::open(path)?.to_rgba8();
    Ok((vec![picture], vec![0.0]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::codecs::gif::GifEncoder;
    use image::{Delay, Frame, Rgba};

    fn contract(json: serde_json::Value) -> TensorContract {
        serde_json::from_value(json).expect("contract")
    }

    /// A GIF of `colours` frames, 4×2, each `delay_ms` long.
    fn gif(path: &Path, colours: &[[u8; 3]], delay_ms: u32) {
        let file = std::fs::File::create(path).expect("create");
        let mut encoder = GifEncoder::new(file);
        for [r, g, b] in colours {
            let picture = RgbaImage::from_pixel(4, 2, Rgba([*r, *g, *b, 255]));
            let delay = Delay::from_numer_denom_ms(delay_ms, 1);
            encoder
                .encode_frame(Frame::from_parts(picture, 0, 0, delay))
                .expect("frame");
        }
    }

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("wfstudio-video-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp");
        dir.join(name)
    }

    #[test]
    fn an_animated_gif_becomes_frames_at_its_frame_rate() {
        let path = temp("three.gif");
        gif(&path, &[[255, 0, 0], [0, 255, 0], [0, 0, 255]], 100);
        let video = contract(serde_json::json!({
            "dtype": "float32", "rank": 5, "shape": [1, "frames", 3, "h", "w"],
        }));
        let read = read_video(&path, &video, ValueRange::ZeroToOne).expect("read");
        assert_eq!(read.tensor.shape, [1, 3, 3, 2, 4]);
        assert_eq!(read.frame_rate, Some(10.0));
        assert_eq!(read.summary, "3 frames of 4×2 RGB, 10.000 fps");
        let wfstudio_runner::Data::F32(v) = &read.tensor.data else {
            panic!("float32")
        };
        // Frame 1 is green: its red plane 0, its green plane 1.
        let plane = 2 * 4;
        assert_eq!(v[3 * plane], 0.0);
        assert_eq!(v[4 * plane], 1.0);

        let fixed = contract(serde_json::json!({
            "dtype": "float32", "rank": 5, "shape": [1, "frames", 3, 4, 8],
        }));
        let read = read_video(&path, &fixed, ValueRange::NegativeOneToOne).expect("read");
        assert_eq!(read.tensor.shape, [1, 3, 3, 4, 8]);
        assert!(
            read.summary.ends_with(", resized to 8×4"),
            "{}",
            read.summary
        );
    }

    #[test]
    fn an_mp4_is_refused_with_how_to_convert_it() {
        let path = temp("clip.mp4");
        std::fs::write(&path, b"\0\0\0\x18ftypmp42").expect("write");
        let video = contract(serde_json::json!({
            "dtype": "float32", "rank": 5, "shape": [1, "frames", 3, "h", "w"],
        }));
        let error = read_video(&path, &video, ValueRange::ZeroToOne)
            .err()
            .expect("refused");
        assert!(
            format!("{error:#}").contains("ffmpeg -i IN.mp4 OUT.webp"),
            "{error:#}"
        );
    }
}
