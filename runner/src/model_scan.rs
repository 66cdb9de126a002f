//! One streamed pass over a model's serialized bytes for what the runner
//! keeps of them besides the session: the fingerprint that keys reused
//! results, whether it holds a random operator (then it is never reused),
//! and whether it holds value facts (labels, ranges) at all, as metadata
//! keys (then it is parsed for them).
//! A binary model file is streamed through a small buffer while ONNX
//! Runtime reads the file itself, so no copy of a large model's bytes is
//! kept.

use memchr::memmem;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use wfstudio_onnx::labels::encoded_keys;

/// Operators whose output is not a function of their inputs alone; a
/// model that contains one is never reused. Their names are looked for in
/// the serialized model (an operator type is stored as its plain name), so a
/// false match can only turn reuse off, never on.
const RANDOM_OPERATORS: [&[u8]; 4] = [
    b"RandomNormal",
    b"RandomUniform",
    b"Multinomial",
    b"Bernoulli",
];

/// Bytes read at a time.
const CHUNK: usize = 1 << 20;

/// What one pass over a model's bytes found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scan {
    /// The identity of the model's bytes, for the reuse cache's keys.
    pub fingerprint: u64,
    /// Whether results may be reused: no random operator.
    pub reusable: bool,
    /// Whether the bytes hold a value-labels or value-range key.
    pub may_have_value_facts: bool,
}

/// Scans the serialized model `reader` yields.
pub(crate) fn scan(mut reader: impl Read) -> std::io::Result<Scan> {
    let keys = encoded_keys();
    let fact_keys: Vec<memmem::Finder<'_>> = keys.iter().map(memmem::Finder::new).collect();
    let random_operators: Vec<memmem::Finder<'_>> =
        RANDOM_OPERATORS.iter().map(memmem::Finder::new).collect();
    let patterns: Vec<&[u8]> = RANDOM_OPERATORS
        .iter()
        .copied()
        .chain(fact_keys.iter().map(memmem::Finder::needle))
        .collect();
    let overlap = patterns.iter().map(|p| p.len()).max().unwrap_or(1) - 1;
    let (mut random, mut may_have_value_facts) = (false, false);
    let mut hasher = foldhash::fast::FixedState::with_seed(0x0dd).build_hasher();
    // The window: the last `overlap` bytes of the previous chunk, then the chunk.
    let mut window = vec![0u8; overlap + CHUNK];
    let mut carried = 0;
    loop {
        let read = read_full(&mut reader, &mut window[carried..])?;
        if read == 0 {
            break;
        }
        let filled = carried + read;
        hasher.write(&window[carried..filled]);
        let seen = &window[..filled];
        random = random || random_operators.iter().any(|f| f.find(seen).is_some());
        may_have_value_facts =
            may_have_value_facts || fact_keys.iter().any(|f| f.find(seen).is_some());
        carried = overlap.min(filled);
        window.copy_within(filled - carried..filled, 0);
    }
    Ok(Scan {
        fingerprint: hasher.finish(),
        reusable: !random,
        may_have_value_facts,
    })
}

/// Fills `buffer` as far as `reader` goes; the count read.
fn read_full(reader: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut total = 0;
    while total < buffer.len() {
        match reader.read(&mut buffer[total..]) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_across_chunk_boundaries_and_the_fingerprint_is_of_the_bytes() {
        // Random operators turn reuse off (\x0a\x0c: the op_type field).
        let mut model = vec![b'x'; CHUNK - 5];
        model.extend_from_slice(b"\x0a\x0cRandomNormal");
        model.extend(vec![b'y'; CHUNK]);
        let scanned = scan(&model[..]).expect("scans");
        assert!(!scanned.reusable && !scanned.may_have_value_facts);
        let mut labelled = vec![b'z'; 2 * CHUNK - 3];
        labelled.extend_from_slice(b"\x0a\x06labels");
        let scanned = scan(&labelled[..]).expect("scans");
        assert!(scanned.reusable && scanned.may_have_value_facts);
        // The plain word is not a metadata key.
        assert!(
            !scan(&b"no labels here"[..])
                .expect("scans")
                .may_have_value_facts
        );
        assert!(scan(&b"\x0a\x03Add"[..]).expect("scans").reusable);
        assert_eq!(
            scan(&model[..]).expect("scans").fingerprint,
            scan(&model[..]).expect("scans").fingerprint
        );
        assert_ne!(
            scan(&b"a"[..]).expect("scans").fingerprint,
            scan(&b"b"[..]).expect("scans").fingerprint
        );
    }
}
