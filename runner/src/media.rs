//! Turning output tensors into pictures and sound: image tensors
//! (`[B,3,H,W]` or `[B,H,W,3]`, or 4 channels with alpha, mapped by the
//! output's value range) into 8-bit RGB rows (and their alpha), video tensors (`[B,C,F,H,W]`, `[B,F,C,H,W]` or
//! `[B,F,H,W,C]` with 3 channels) into frames per batch row, and audio
//! tensors (`[B,C,S]`, `[C,S]` or `[S]`) into interleaved samples. Shared by `wfstudio run --out` and the studio's
//! previews.

use crate::tensor::{Data, Tensor};
use wfstudio_schema::types::workflow::ValueRange;

/// One RGB picture, row-major, 3 bytes per pixel, and its alpha where
/// it has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rgb8 {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `width * height * 3` bytes.
    pub pixels: Vec<u8>,
    /// `width * height` bytes of opacity (255 opaque), for a picture of
    /// 4 channels.
    pub alpha: Option<Vec<u8>>,
}

impl Rgb8 {
    /// The picture as `width * height * 4` bytes of RGBA (opaque where it
    /// has no alpha).
    pub fn rgba(&self) -> Vec<u8> {
        let mut rgba = Vec::with_capacity(self.width * self.height * 4);
        for (i, rgb) in self.pixels.chunks_exact(3).enumerate() {
            rgba.extend_from_slice(rgb);
            rgba.push(self.alpha.as_ref().map_or(255, |a| a[i]));
        }
        rgba
    }
}

fn to_byte(value: f64, range: Option<ValueRange>) -> u8 {
    let unit = match range {
        Some(ValueRange::NegativeOneToOne) => (value + 1.0) / 2.0,
        Some(ValueRange::ZeroTo255) => value / 255.0,
        Some(ValueRange::ZeroToOne) | None => value,
    };
    (unit.clamp(0.0, 1.0) * 255.0).round() as u8
}

/// The pictures of an image tensor, one per batch row. Channels-first
/// `[B,3,H,W]` and channels-last `[B,H,W,3]` (and unbatched `[3,H,W]`,
/// `[H,W,3]`) are understood, and the same with a fourth channel, alpha
/// (mapped as the colours are); uint8 tensors are taken as bytes.
pub fn image_rows(tensor: &Tensor, range: Option<ValueRange>) -> Result<Vec<Rgb8>, String> {
    let shape = match tensor.shape.len() {
        3 => [1, tensor.shape[0], tensor.shape[1], tensor.shape[2]],
        4 => [
            tensor.shape[0],
            tensor.shape[1],
            tensor.shape[2],
            tensor.shape[3],
        ],
        _ => {
            return Err(format!(
                "an image tensor has rank 3 or 4, not shape {:?}",
                tensor.shape
            ));
        }
    };
    // Three channels first, as before alpha was read: a channels-last
    // picture 4 rows high stays one.
    let (batch, channels, channels_first) = match shape {
        [b, 3, _, _] => (b, 3, true),
        [b, _, _, 3] => (b, 3, false),
        [b, 4, _, _] => (b, 4, true),
        [b, _, _, 4] => (b, 4, false),
        _ => {
            return Err(format!(
                "no 3- or 4-channel axis in image shape {:?}",
                tensor.shape
            ));
        }
    };
    let (height, width) = if channels_first {
        (shape[2], shape[3])
    } else {
        (shape[1], shape[2])
    };
    let byte = |i: usize| match &tensor.data {
        Data::U8(v) => v[i],
        d => to_byte(d.get_f64(i), range),
    };
    let mut rows = Vec::with_capacity(batch);
    let index = |b: usize, c: usize, y: usize, x: usize| {
        if channels_first {
            ((b * channels + c) * height + y) * width + x
        } else {
            ((b * height + y) * width + x) * channels + c
        }
    };
    for b in 0..batch {
        let mut pixels = Vec::with_capacity(width * height * 3);
        let mut alpha = Vec::with_capacity(if channels == 4 { width * height } else { 0 });
        for y in 0..height {
            for x in 0..width {
                for c in 0..3 {
                    pixels.push(byte(index(b, c, y, x)));
                }
                if channels == 4 {
                    alpha.push(byte(index(b, 3, y, x)));
                }
            }
        }
        rows.push(Rgb8 {
            width,
            height,
            pixels,
            alpha: (channels == 4).then_some(alpha),
        });
    }
    Ok(rows)
}

/// Where the axes of a video tensor are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum VideoLayout {
    /// `[B, C, F, H, W]`.
    ChannelsFrames,
    /// `[B, F, C, H, W]`.
    FramesChannels,
    /// `[B, F, H, W, C]`.
    ChannelsLast,
}

/// The frames of a video tensor, per batch row. The 3-channel axis decides
/// the layout (`[B,3,F,H,W]` first, then `[B,F,3,H,W]`, then
/// `[B,F,H,W,3]`); uint8 tensors are taken as bytes, others mapped by
/// `range` as images are.
pub fn video_frames(tensor: &Tensor, range: Option<ValueRange>) -> Result<Vec<Vec<Rgb8>>, String> {
    let &[batch, a, b, c, d] = tensor.shape.as_slice() else {
        return Err(format!(
            "a video tensor has rank 5, not shape {:?}",
            tensor.shape
        ));
    };
    let (layout, frames, height, width) = match (a, b, d) {
        (3, _, _) => (VideoLayout::ChannelsFrames, b, c, d),
        (_, 3, _) => (VideoLayout::FramesChannels, a, c, d),
        (_, _, 3) => (VideoLayout::ChannelsLast, a, b, c),
        _ => {
            return Err(format!(
                "no 3-channel axis in video shape {:?}",
                tensor.shape
            ));
        }
    };
    let index = |n: usize, f: usize, ch: usize, y: usize, x: usize| match layout {
        VideoLayout::ChannelsFrames => (((n * 3 + ch) * frames + f) * height + y) * width + x,
        VideoLayout::FramesChannels => (((n * frames + f) * 3 + ch) * height + y) * width + x,
        VideoLayout::ChannelsLast => (((n * frames + f) * height + y) * width + x) * 3 + ch,
    };
    let byte = |i: usize| match &tensor.data {
        Data::U8(v) => v[i],
        data => to_byte(data.get_f64(i), range),
    };
    Ok((0..batch)
        .map(|n| {
            (0..frames)
                .map(|f| {
                    let mut pixels = Vec::with_capacity(width * height * 3);
                    for y in 0..height {
                        for x in 0..width {
                            for ch in 0..3 {
                                pixels.push(byte(index(n, f, ch, y, x)));
                            }
                        }
                    }
                    Rgb8 {
                        width,
                        height,
                        pixels,
                        alpha: None,
                    }
                })
                .collect()
        })
        .collect())
}

/// Interleaved float samples and the channel count of an audio tensor's
/// first batch row.
pub fn audio_samples(tensor: &Tensor) -> Result<(usize, Vec<f32>), String> {
    let (channels, frames) = match tensor.shape.as_slice() {
        [s] => (1, *s),
        [c, s] => (*c, *s),
        [_, c, s] => (*c, *s),
        other => {
            return Err(format!(
                "an audio tensor has rank 1 to 3, not shape {other:?}"
            ));
        }
    };
    if channels == 0 {
        return Err("the audio tensor has no channels".into());
    }
    let mut out = Vec::with_capacity(channels * frames);
    for f in 0..frames {
        for c in 0..channels {
            out.push(tensor.data.get_f64(c * frames + f) as f32);
        }
    }
    Ok((channels, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_first_negative_one_to_one() {
        let t = Tensor::new(
            vec![1, 3, 1, 2],
            Data::F32(vec![-1.0, 1.0, 0.0, 0.5, 1.0, -1.0]),
        )
        .unwrap();
        let rows = image_rows(&t, Some(ValueRange::NegativeOneToOne)).unwrap();
        assert_eq!(rows[0].pixels, [0, 128, 255, 255, 191, 0]);
        assert_eq!(rows[0].alpha, None);
    }

    #[test]
    fn a_fourth_channel_is_alpha_in_either_layout() {
        // Two pixels: red half transparent, blue opaque (0..1).
        let first = vec![1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.5, 1.0];
        let last = vec![1.0, 0.0, 0.0, 0.5, 0.0, 0.0, 1.0, 1.0];
        for (shape, data) in [(vec![1, 4, 1, 2], first), (vec![1, 1, 2, 4], last)] {
            let t = Tensor::new(shape.clone(), Data::F32(data)).unwrap();
            let rows = image_rows(&t, Some(ValueRange::ZeroToOne)).unwrap();
            assert_eq!(rows[0].pixels, [255, 0, 0, 0, 0, 255], "{shape:?}");
            assert_eq!(rows[0].alpha, Some(vec![128, 255]), "{shape:?}");
            assert_eq!(rows[0].rgba(), [255, 0, 0, 128, 0, 0, 255, 255]);
        }
        // Channels-last RGB four rows high is still RGB.
        let tall = Tensor::new(vec![1, 4, 1, 3], Data::F32(vec![0.0; 12])).unwrap();
        let rows = image_rows(&tall, None).unwrap();
        assert_eq!(
            (rows[0].height, rows[0].width, &rows[0].alpha),
            (4, 1, &None)
        );
        let two = Tensor::new(vec![1, 2, 1, 2], Data::F32(vec![0.0; 4])).unwrap();
        assert!(image_rows(&two, None).is_err_and(|e| e.contains("3- or 4-channel")));
    }

    #[test]
    fn video_layouts_give_the_same_frames() {
        // One row, 2 frames of 1x2 pixels; frame f, pixel x, channel c has
        // value 100*f + 10*x + c (uint8, so taken as bytes).
        let value = |f: usize, x: usize, c: usize| (100 * f + 10 * x + c) as u8;
        let want = vec![vec![
            Rgb8 {
                width: 2,
                height: 1,
                pixels: vec![0, 1, 2, 10, 11, 12],
                alpha: None,
            },
            Rgb8 {
                width: 2,
                height: 1,
                pixels: vec![100, 101, 102, 110, 111, 112],
                alpha: None,
            },
        ]];
        let mut cf = Vec::new(); // [1, 3, 2, 1, 2]
        for c in 0..3 {
            for f in 0..2 {
                for x in 0..2 {
                    cf.push(value(f, x, c));
                }
            }
        }
        let mut fc = Vec::new(); // [1, 2, 3, 1, 2]
        let mut last = Vec::new(); // [1, 2, 1, 2, 3]
        for f in 0..2 {
            for c in 0..3 {
                for x in 0..2 {
                    fc.push(value(f, x, c));
                }
            }
            for x in 0..2 {
                for c in 0..3 {
                    last.push(value(f, x, c));
                }
            }
        }
        for (shape, data) in [
            (vec![1, 3, 2, 1, 2], cf),
            (vec![1, 2, 3, 1, 2], fc),
            (vec![1, 2, 1, 2, 3], last),
        ] {
            let t = Tensor::new(shape.clone(), Data::U8(data)).unwrap();
            assert_eq!(video_frames(&t, None).unwrap(), want, "{shape:?}");
        }
        let floats = Tensor::new(vec![1, 3, 1, 1, 1], Data::F32(vec![-1.0, 0.0, 1.0])).unwrap();
        assert_eq!(
            video_frames(&floats, Some(ValueRange::NegativeOneToOne)).unwrap()[0][0].pixels,
            [0, 128, 255]
        );
        let flat = Tensor::new(vec![1, 2, 2], Data::U8(vec![0; 4])).unwrap();
        assert!(video_frames(&flat, None).unwrap_err().contains("rank 5"));
    }

    #[test]
    fn channels_last_bytes_and_audio_interleaving() {
        let t = Tensor::new(vec![1, 1, 1, 3], Data::U8(vec![1, 2, 3])).unwrap();
        assert_eq!(image_rows(&t, None).unwrap()[0].pixels, [1, 2, 3]);
        let a = Tensor::new(vec![1, 2, 2], Data::F32(vec![0.1, 0.2, -0.1, -0.2])).unwrap();
        assert_eq!(audio_samples(&a).unwrap(), (2, vec![0.1, -0.1, 0.2, -0.2]));
    }
}
