//! Video files as run inputs: an animated GIF, WebP or PNG (APNG) decoded
//! with `image` into frames (a still picture is a one-frame video), each
//! resized to the input's fixed size as it is decoded, with the frame
//! rate the frame delays give; sizes and counts are bounded before the
//! memory is taken. MP4 and other containers are not read: their codecs need
//! a decoder this build does not carry, so the error says how to convert.

use anyhow::{Context, bail};
use image::{AnimationDecoder, Frames, ImageDecoder, RgbaImage};
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
/// The largest side of a decoded frame (the file's canvas).
const MAX_SIDE: u32 = 16384;
/// The most bytes one decoded RGBA frame may take (frames are resized
/// one by one as they are decoded, so only one is held at a time).
const MAX_FRAME_BYTES: u64 = 1 << 28;

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
    let fixed = image_size(contract, true).map(|(h, w)| (w as u32, h as u32));
    let decoding = || format!("decoding the video {}", path.display());
    let video = decode(path, fixed).with_context(decoding)?;
    let count = video.frames.len();
    let tensor = video_tensor(&video.frames, contract, range).map_err(anyhow::Error::msg)?;
    let total_ms: f64 = video.delays_ms.iter().sum();
    let frame_rate = (total_ms > 0.0).then(|| count as f64 * 1000.0 / total_ms);
    let rate = match frame_rate {
        Some(fps) => format!("{fps:.3} fps"),
        None => "no frame rate".into(),
    };
    let (w, h) = video.source;
    let resized = match fixed {
        Some((fw, fh)) if (fw, fh) != (w, h) => format!(", resized to {fw}×{fh}"),
        _ => String::new(),
    };
    Ok(ReadVideo {
        tensor,
        frame_rate,
        summary: format!("{count} frames of {w}×{h} RGB, {rate}{resized}"),
    })
}

/// Decoded frames at the size asked for, each one's delay, and the
/// file's own frame size.
struct Decoded {
    frames: Vec<Rgb8>,
    delays_ms: Vec<f64>,
    source: (u32, u32),
}

/// The frames of the file at `path`, each resized to `size` (else kept at
/// the file's size) as it is decoded.
fn decode(path: &Path, size: Option<(u32, u32)>) -> anyhow::Result<Decoded> {
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
    match format {
        Some(image::ImageFormat::Gif) => {
            let mut gif = image::codecs::gif::GifDecoder::new(open()?)?;
            let canvas = canvas(gif.dimensions())?;
            let mut limits = image::Limits::default();
            limits.max_alloc = Some(MAX_FRAME_BYTES * 2);
            gif.set_limits(limits)?;
            collect(gif.into_frames(), canvas, size, true)
        }
        Some(image::ImageFormat::WebP) => {
            let webp = image::codecs::webp::WebPDecoder::new(open()?)?;
            let canvas = canvas(webp.dimensions())?;
            match webp.has_animation() {
                true => collect(webp.into_frames(), canvas, size, false),
                false => still(path, size),
            }
        }
        Some(image::ImageFormat::Png) => {
            let png = image::codecs::png::PngDecoder::new(open()?)?;
            let canvas = canvas(png.dimensions())?;
            match png.is_apng()? {
                true => collect(png.apng()?.into_frames(), canvas, size, false),
                false => still(path, size),
            }
        }
        Some(image::ImageFormat::Jpeg) => still(path, size),
        _ => bail!(
            "{} is not an animated GIF, WebP or PNG: MP4 and other video containers are not read here; convert it first (ffmpeg -i IN.mp4 OUT.webp)",
            path.display()
        ),
    }
}

/// The file's frame size, refused over [`MAX_SIDE`] or [`MAX_FRAME_BYTES`].
fn canvas((w, h): (u32, u32)) -> anyhow::Result<(u32, u32)> {
    if w == 0 || h == 0 || w > MAX_SIDE || h > MAX_SIDE {
        bail!("its frames are {w}×{h}; a video input's frames are 1 to {MAX_SIDE} pixels a side");
    }
    if u64::from(w) * u64::from(h) * 4 > MAX_FRAME_BYTES {
        bail!("its frames are {w}×{h}, over the {MAX_FRAME_BYTES}-byte limit of one frame");
    }
    Ok((w, h))
}

/// Every frame of an animation of frames `canvas` large, resized to
/// `size` as it comes, and its delay, up to [`MAX_VIDEO_FRAMES`] frames
/// and [`MAX_VIDEO_VALUES`] values. A GIF's delays under 20 ms count as
/// 100 ms, as browsers play them (`gif_delays`).
fn collect(
    frames: Frames<'_>,
    canvas: (u32, u32),
    size: Option<(u32, u32)>,
    gif_delays: bool,
) -> anyhow::Result<Decoded> {
    let (w, h) = size.unwrap_or(canvas);
    let per_frame = w as usize * h as usize * 3;
    let mut pictures = Vec::new();
    let mut delays = Vec::new();
    for frame in frames {
        if pictures.len() == MAX_VIDEO_FRAMES {
            bail!("over the {MAX_VIDEO_FRAMES}-frame limit of a video input");
        }
        if (pictures.len() + 1) * per_frame > MAX_VIDEO_VALUES {
            bail!(
                "over the {MAX_VIDEO_VALUES}-value limit of a video input after {} frames of {w}×{h}",
                pictures.len()
            );
        }
        let frame = frame?;
        let (numer, denom) = frame.delay().numer_denom_ms();
        let ms = f64::from(numer) / f64::from(denom.max(1));
        delays.push(if gif_delays && ms < 20.0 { 100.0 } else { ms });
        pictures.push(rgb(frame.into_buffer(), (w, h)));
    }
    Ok(Decoded {
        frames: pictures,
        delays_ms: delays,
        source: canvas,
    })
}

/// `picture` as RGB bytes of size `(w, h)`.
fn rgb(picture: RgbaImage, (w, h): (u32, u32)) -> Rgb8 {
    let rgb = image::DynamicImage::ImageRgba8(picture).to_rgb8();
    let rgb = match rgb.dimensions() == (w, h) {
        true => rgb,
        false => image::imageops::resize(&rgb, w, h, image::imageops::FilterType::Triangle),
    };
    Rgb8 {
        width: w as usize,
        height: h as usize,
        pixels: rgb.into_raw(),
        alpha: None,
    }
}

/// A still picture as a one-frame video with no delay (its format read
/// from its bytes; sides and memory bounded as an animation's frames).
fn still(path: &Path, size: Option<(u32, u32)>) -> anyhow::Result<Decoded> {
    let mut reader = image::ImageReader::open(path)?.with_guessed_format()?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_FRAME_BYTES);
    reader.limits(limits);
    let picture = reader.decode()?.to_rgba8();
    let source = canvas(picture.dimensions())?;
    Ok(Decoded {
        frames: vec![rgb(picture, size.unwrap_or(source))],
        delays_ms: vec![0.0],
        source,
    })
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
    fn a_still_webp_is_one_frame_and_a_huge_canvas_is_refused() {
        let video = contract(serde_json::json!({
            "dtype": "float32", "rank": 5, "shape": [1, "frames", 3, "h", "w"],
        }));
        let still = temp("still.webp");
        image::RgbImage::from_pixel(3, 2, image::Rgb([0, 255, 0]))
            .save(&still)
            .expect("webp");
        let read = read_video(&still, &video, ValueRange::ZeroToOne).expect("read");
        assert_eq!(read.tensor.shape, [1, 1, 3, 2, 3]);
        assert_eq!(read.frame_rate, None);
        let wide = temp("wide.gif");
        let mut encoder = GifEncoder::new(std::fs::File::create(&wide).expect("gif"));
        let picture = RgbaImage::from_pixel(20_000, 1, Rgba([0, 0, 0, 255]));
        encoder
            .encode_frame(Frame::from_parts(
                picture,
                0,
                0,
                Delay::from_numer_denom_ms(100, 1),
            ))
            .expect("frame");
        drop(encoder);
        let error = read_video(&wide, &video, ValueRange::ZeroToOne)
            .err()
            .expect("refused");
        assert!(
            format!("{error:#}").contains(
                "its frames are 20000×1; a video input's frames are 1 to 16384 pixels a side"
            ),
            "{error:#}"
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
