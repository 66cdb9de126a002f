//! `wfstudio run --png16 NAME[=LOW,HIGH]`: a float output of one channel
//! per row (a heightmap `[batch, height, width]`, or `[batch, 1, height,
//! width]`) written as 16-bit greyscale PNGs, one per row, `LOW` at 0 and
//! `HIGH` at 65535 (by default the output's own smallest and largest value),
//! for tools that take heightmaps as pictures.

use anyhow::{Context, bail};
use std::path::Path;
use wfstudio_runner::Tensor;

/// One `--png16` request: the output and its value range, if given.
#[derive(Clone, Debug, PartialEq)]
pub struct Png16 {
    /// The output's name.
    pub output: String,
    /// The values at black and white.
    pub range: Option<(f64, f64)>,
}

/// Reads `NAME` or `NAME=LOW,HIGH`.
pub fn parse(text: &str) -> Result<Png16, String> {
    let Some((output, range)) = text.split_once('=') else {
        return Ok(Png16 {
            output: text.to_string(),
            range: None,
        });
    };
    let numbers: Vec<f64> = range
        .split(',')
        .map(|n| n.trim().parse::<f64>().map_err(|e| format!("{n:?}: {e}")))
        .collect::<Result<_, _>>()?;
    match numbers.as_slice() {
        [low, high] if low < high && low.is_finite() && high.is_finite() => Ok(Png16 {
            output: output.to_string(),
            range: Some((*low, *high)),
        }),
        _ => Err(format!("{range:?} is not LOW,HIGH with LOW < HIGH")),
    }
}

/// Writes `tensor` (the output `request.output`) into `dir` as
/// `<name>.16bit.png` (`<name>.<row>.16bit.png` for several rows); the
/// range used.
pub fn write(dir: &Path, request: &Png16, tensor: &Tensor) -> anyhow::Result<(f64, f64)> {
    let (rows, height, width) = match tensor.shape.as_slice() {
        [h, w] => (1, *h, *w),
        [b, h, w] | [b, 1, h, w] => (*b, *h, *w),
        other => bail!(
            "--png16 {}: {other:?} is not one channel per row ([batch, height, width])",
            request.output
        ),
    };
    if height == 0 || width == 0 {
        bail!(
            "--png16 {}: the output has no pixels ({:?})",
            request.output,
            tensor.shape
        );
    }
    if !tensor.dtype().is_float() {
        bail!(
            "--png16 {}: {} is not a float output",
            request.output,
            tensor.dtype()
        );
    }
    let values: Vec<f64> = (0..tensor.numel())
        .map(|i| tensor.data.get_f64(i))
        .collect();
    let (low, high) = request.range.unwrap_or_else(|| {
        let low = values.iter().copied().fold(f64::INFINITY, f64::min);
        let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (low, if high > low { high } else { low + 1.0 })
    });
    let (w, h) = (u32::try_from(width)?, u32::try_from(height)?);
    for (row, pixels) in values.chunks(height * width).enumerate() {
        let grey: Vec<u16> = pixels
            .iter()
            .map(|v| (((v - low) / (high - low)).clamp(0.0, 1.0) * 65535.0).round() as u16)
            .collect();
        let image = image::ImageBuffer::<image::Luma<u16>, _>::from_raw(w, h, grey)
            .context("a 16-bit picture of the output")?;
        let name = match rows {
            1 => format!("{}.16bit.png", request.output),
            _ => format!("{}.{row}.16bit.png", request.output),
        };
        let mut png = Vec::new();
        image
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .with_context(|| format!("encoding {name}"))?;
        wfstudio_schema::save::write_atomic(&dir.join(&name), &png)
            .with_context(|| format!("writing {name}"))?;
    }
    Ok((low, high))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wfstudio_runner::Data;

    #[test]
    fn ranges_parse_and_rows_become_16_bit_pictures() {
        assert_eq!(parse("heights").expect("name").range, None);
        assert_eq!(
            parse("heights=0,22.5").expect("range").range,
            Some((0.0, 22.5))
        );
        assert!(parse("heights=3,1").is_err() && parse("heights=a,b").is_err());
        let dir = std::env::temp_dir().join(format!("wfstudio-png16-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let tensor = Tensor::new(vec![2, 1, 2], Data::F32(vec![0.0, 10.0, 5.0, 20.0])).expect("t");
        let request = parse("heights=0,20").expect("range");
        assert_eq!(
            write(&dir, &request, &tensor).expect("written"),
            (0.0, 20.0)
        );
        let second = image::open(dir.join("heights.1.16bit.png"))
            .expect("png")
            .to_luma16();
        assert_eq!(second.into_raw(), [16384, 65535]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
