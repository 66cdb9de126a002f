//! Graphs embedded in image files: the `(key, text)` pairs ComfyUI's image
//! savers write. A PNG carries them as `tEXt` / `iTXt` chunks; a WebP as
//! ASCII tags of EXIF IFD0 whose text is `"key:json"`. Every length is
//! checked before it is used, and a text block larger than
//! [`MAX_CHUNK_BYTES`] is refused.

use super::ReadError;

/// Largest PNG text chunk or WebP EXIF chunk accepted.
pub const MAX_CHUNK_BYTES: usize = 32 * 1024 * 1024;

/// The PNG file signature.
pub const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// Whether `bytes` start like a WebP file (a RIFF container of form `WEBP`).
pub fn is_webp(bytes: &[u8]) -> bool {
    bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP"
}

fn too_large(what: &str, len: usize) -> ReadError {
    ReadError(format!(
        "a {what} of {len} bytes exceeds the {MAX_CHUNK_BYTES}-byte limit"
    ))
}

/// The `(keyword, text)` pairs of a PNG's `tEXt` and uncompressed `iTXt`
/// chunks, walking the chunk list with every length checked.
pub fn png_text_chunks(bytes: &[u8]) -> Result<Vec<(String, String)>, ReadError> {
    let mut out = Vec::new();
    let mut at = PNG_SIGNATURE.len();
    while at + 8 <= bytes.len() {
        let len =
            u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
        let kind = &bytes[at + 4..at + 8];
        let start = at + 8;
        let end = start
            .checked_add(len)
            .filter(|e| *e + 4 <= bytes.len())
            .ok_or_else(|| ReadError("truncated PNG chunk".into()))?;
        if (kind == b"tEXt" || kind == b"iTXt") && len > MAX_CHUNK_BYTES {
            return Err(too_large("PNG text chunk", len));
        }
        let data = &bytes[start..end];
        let split = |d: &[u8]| d.iter().position(|b| *b == 0);
        if kind == b"tEXt"
            && let Some(nul) = split(data)
        {
            let key = String::from_utf8_lossy(&data[..nul]).into_owned();
            // tEXt is Latin-1: every byte is one character.
            let text: String = data[nul + 1..].iter().map(|&b| b as char).collect();
            out.push((key, text));
        } else if kind == b"iTXt"
            && let Some(nul) = split(data)
            && data.len() > nul + 2
            && data[nul + 1] == 0
        {
            // keyword\0 compression_flag compression_method language\0 translated\0 text
            let rest = &data[nul + 3..];
            let mut parts = rest.splitn(3, |b| *b == 0);
            let (_, _, text) = (parts.next(), parts.next(), parts.next());
            if let Some(text) = text {
                let key = String::from_utf8_lossy(&data[..nul]).into_owned();
                out.push((key, String::from_utf8_lossy(text).into_owned()));
            }
        }
        if kind == b"IEND" {
            break;
        }
        at = end + 4;
    }
    Ok(out)
}

/// The payload of a WebP's `EXIF` chunk, if it has one: the RIFF chunk list
/// is walked with every length checked (chunks are padded to even sizes).
fn webp_exif_chunk(bytes: &[u8]) -> Result<Option<&[u8]>, ReadError> {
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let kind = &bytes[at..at + 4];
        let len = u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]])
            as usize;
        let start = at + 8;
        let end = start
            .checked_add(len)
            .filter(|e| *e <= bytes.len())
            .ok_or_else(|| ReadError("truncated WebP chunk".into()))?;
        if kind == b"EXIF" {
            if len > MAX_CHUNK_BYTES {
                return Err(too_large("WebP EXIF chunk", len));
            }
            return Ok(Some(&bytes[start..end]));
        }
        at = end + (len & 1);
    }
    Ok(None)
}

/// The `(key, text)` pairs of a WebP's EXIF IFD0 ASCII tags written as
/// `"key:text"` (ComfyUI: 0x010F `workflow:`, 0x0110 `prompt:`). Tags
/// without a `key:` prefix are skipped.
pub fn webp_exif_texts(bytes: &[u8]) -> Result<Vec<(String, String)>, ReadError> {
    let Some(chunk) = webp_exif_chunk(bytes)? else {
        return Ok(Vec::new());
    };
    // Some writers keep the JPEG APP1 marker in front of the TIFF header.
    let tiff = chunk.strip_prefix(b"Exif\0\0").unwrap_or(chunk);
    let exif = exif::Reader::new()
        .read_raw(tiff.to_vec())
        .map_err(|e| ReadError(format!("the WebP EXIF chunk is not valid TIFF: {e}")))?;
    let mut out = Vec::new();
    for field in exif.fields() {
        if field.ifd_num != exif::In::PRIMARY {
            continue;
        }
        let exif::Value::Ascii(strings) = &field.value else {
            continue;
        };
        for text in strings {
            let text = String::from_utf8_lossy(text);
            if let Some((key, value)) = text.split_once(':') {
                out.push((key.to_string(), value.to_string()));
            }
        }
    }
    Ok(out)
}
