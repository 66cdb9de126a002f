//! One streamed pass over a model's serialized bytes for what the runner
//! keeps of them besides the session: the fingerprint that keys reused
//! results, whether it holds a random operator (then it is never reused),
//! and whether it holds value facts (labels, ranges) at all, as metadata
//! keys (then it is parsed for them).
//! A binary model file is streamed through a small buffer while ONNX
//! Runtime reads the file itself, so no copy of a large model's bytes is
//! kept; its weights (the graph's initializers, almost all of a large
//! model's bytes) are stepped over, and the identities (size, inode,
//! modification and change times) of the file and of the external-data
//! files its weights name stand for them in the fingerprint.

use memchr::memmem;
use protobuf::Message;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use wfstudio_onnx::labels::encoded_keys;
use wfstudio_onnx::proto::onnx::StringStringEntryProto;

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

/// Bytes read at a time (the walk reads a model's structure, small beside
/// its weights; every byte of the window is memory the process holds).
const CHUNK: usize = 1 << 16;

/// `ModelProto.graph`: the field the walk goes into.
const MODEL_GRAPH: u64 = 7;
/// `GraphProto.initializer`: the weights, stepped over.
const GRAPH_INITIALIZER: u64 = 5;
/// `GraphProto.input`: the graph's inputs, kept (their value facts).
const GRAPH_INPUT: u64 = 11;
/// `GraphProto.sparse_initializer`: sparse weights, stepped over.
const GRAPH_SPARSE_INITIALIZER: u64 = 15;
/// `TensorProto.external_data`: where a weight's data is kept outside.
const TENSOR_EXTERNAL_DATA: u64 = 13;

/// The most bytes of one graph input the walk keeps (a port's name, type
/// and metadata take far less; a larger one is not a model's input).
const MOST_INPUT_BYTES: u64 = 1 << 20;

/// What one pass over a model's bytes found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scan {
    /// The identity of the model's bytes, for the reuse cache's keys.
    pub fingerprint: u64,
    /// Whether results may be reused: no random operator.
    pub reusable: bool,
    /// Whether the bytes hold a value-labels or value-range key.
    pub may_have_value_facts: bool,
    /// For a walked file: its graph's inputs, encoded as a `GraphProto`
    /// that holds only them (where the value facts are), so that they are
    /// read without the weights.
    pub graph_inputs: Option<Vec<u8>>,
}

/// The identity of a file: size, device, inode, modification and change
/// times (the change time cannot be set back, so a file rewritten in place
/// with its modification time restored still differs).
fn identity(meta: &std::fs::Metadata) -> [u64; 7] {
    use std::os::unix::fs::MetadataExt;
    [
        meta.len(),
        meta.dev(),
        meta.ino(),
        meta.mtime() as u64,
        meta.mtime_nsec() as u64,
        meta.ctime() as u64,
        meta.ctime_nsec() as u64,
    ]
}

/// Scans a model file: its structure read, its weights stepped over; the
/// identities of the file and of the files its weights name (external
/// data) stand for the weights in the fingerprint.
fn scan_file(path: &Path) -> std::io::Result<Scan> {
    let file = std::fs::File::open(path)?;
    let own = identity(&file.metadata()?);
    let keys = encoded_keys();
    let mut file = BufReader::with_capacity(1 << 16, file);
    let mut scanner = Scanner::new(&keys);
    own.iter().for_each(|v| scanner.hasher.write_u64(*v));
    scanner.graph_inputs = Some(Vec::new());
    if scanner.walk_model(&mut file).is_ok() {
        let folder = path.parent().unwrap_or(Path::new("."));
        let mut locations = std::mem::take(&mut scanner.external);
        locations.sort();
        locations.dedup();
        for location in &locations {
            scanner.hasher.write(location.as_bytes());
            if let Ok(meta) = std::fs::metadata(folder.join(location)) {
                identity(&meta)
                    .iter()
                    .for_each(|v| scanner.hasher.write_u64(*v));
            }
        }
    } else {
        // Not a well-formed encoding (ONNX Runtime says why): every byte
        // is scanned instead.
        file.seek(SeekFrom::Start(0))?;
        scanner = Scanner::new(&keys);
        own.iter().for_each(|v| scanner.hasher.write_u64(*v));
        scanner.feed(&mut file, u64::MAX)?;
    }
    Ok(scanner.finish())
}

/// Scans the model at `path`: `bytes` when it is held in memory (a
/// TextFormat model, encoded), else the file.
pub(crate) fn scan_model(path: &Path, bytes: Option<&[u8]>) -> std::io::Result<Scan> {
    match bytes {
        Some(bytes) => scan(bytes),
        None => scan_file(path),
    }
}

/// Scans every byte of the serialized model `reader` yields (a model held
/// in memory).
fn scan(mut reader: impl Read) -> std::io::Result<Scan> {
    let keys = encoded_keys();
    let mut scanner = Scanner::new(&keys);
    scanner.feed(&mut reader, u64::MAX)?;
    Ok(scanner.finish())
}

/// The pass in progress: the hash so far, what was found, and the last
/// bytes seen (a name may straddle two reads).
struct Scanner<'k> {
    hasher: foldhash::fast::FoldHasher<'static>,
    random_operators: Vec<memmem::Finder<'static>>,
    fact_keys: Vec<memmem::Finder<'k>>,
    overlap: usize,
    window: Vec<u8>,
    carried: usize,
    /// Bytes of the input consumed so far, stepped-over ones included.
    position: u64,
    /// The graph inputs' fields met so far, when they are kept.
    graph_inputs: Option<Vec<u8>>,
    /// The files the weights met so far keep their data in (external
    /// data `location`s, relative to the model's folder).
    external: Vec<String>,
    random: bool,
    may_have_value_facts: bool,
}

impl<'k> Scanner<'k> {
    fn new(keys: &'k [Vec<u8>]) -> Self {
        let fact_keys: Vec<memmem::Finder<'k>> = keys.iter().map(memmem::Finder::new).collect();
        let random_operators: Vec<memmem::Finder<'static>> =
            RANDOM_OPERATORS.iter().map(memmem::Finder::new).collect();
        let overlap = RANDOM_OPERATORS
            .iter()
            .map(|p| p.len())
            .chain(keys.iter().map(Vec::len))
            .max()
            .unwrap_or(1)
            - 1;
        Scanner {
            hasher: foldhash::fast::FixedState::with_seed(0x0dd).build_hasher(),
            random_operators,
            fact_keys,
            overlap,
            window: vec![0u8; overlap + CHUNK],
            carried: 0,
            position: 0,
            graph_inputs: None,
            external: Vec::new(),
            random: false,
            may_have_value_facts: false,
        }
    }

    /// Scans up to `limit` bytes of `reader` (fewer at its end); the count.
    fn feed(&mut self, reader: &mut impl Read, limit: u64) -> std::io::Result<u64> {
        let mut total = 0u64;
        while total < limit {
            let room = (self.window.len() - self.carried)
                .min((limit - total).try_into().unwrap_or(usize::MAX));
            let read = read_full(reader, &mut self.window[self.carried..self.carried + room])?;
            if read == 0 {
                break;
            }
            total += read as u64;
            let filled = self.carried + read;
            self.hasher.write(&self.window[self.carried..filled]);
            let seen = &self.window[..filled];
            self.random =
                self.random || self.random_operators.iter().any(|f| f.find(seen).is_some());
            self.may_have_value_facts =
                self.may_have_value_facts || self.fact_keys.iter().any(|f| f.find(seen).is_some());
            self.carried = self.overlap.min(filled);
            self.window.copy_within(filled - self.carried..filled, 0);
        }
        Ok(total)
    }

    /// Scans exactly `len` bytes of the input, or fails at a premature end.
    fn feed_exactly(&mut self, reader: &mut impl Read, len: u64) -> std::io::Result<()> {
        if self.feed(reader, len)? != len {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.advance(len)
    }

    /// Counts `len` more bytes of the input consumed.
    fn advance(&mut self, len: u64) -> std::io::Result<()> {
        self.position = self
            .position
            .checked_add(len)
            .ok_or(std::io::ErrorKind::InvalidData)?;
        Ok(())
    }

    /// Steps over `len` bytes (hashing their length): within the buffer
    /// when they are few (many small weights), without a read.
    fn skip(&mut self, file: &mut BufReader<impl Read + Seek>, len: u64) -> std::io::Result<()> {
        let skipped = i64::try_from(len).map_err(|_| std::io::ErrorKind::InvalidData)?;
        file.seek_relative(skipped)?;
        self.advance(len)?;
        self.hasher.write_u64(len);
        self.carried = 0;
        Ok(())
    }

    /// The next `len` bytes (at most `most`), not scanned.
    fn take_field(
        &mut self,
        file: &mut impl Read,
        len: u64,
        most: u64,
    ) -> std::io::Result<Vec<u8>> {
        if len > most {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        let mut field = Vec::new();
        (&mut *file).take(len).read_to_end(&mut field)?;
        if field.len() as u64 != len {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.advance(len)?;
        Ok(field)
    }

    /// Walks a `ModelProto`: every field scanned, the graph walked into.
    fn walk_model(&mut self, file: &mut BufReader<impl Read + Seek>) -> std::io::Result<()> {
        while let Some((field, wire)) = self.key(file)? {
            match (field, wire) {
                (MODEL_GRAPH, 2) => {
                    let len = self
                        .varint(file)?
                        .ok_or(std::io::ErrorKind::UnexpectedEof)?;
                    self.walk_graph(file, len)?;
                }
                _ => self.value(file, wire)?,
            }
        }
        Ok(())
    }

    /// Walks the `len` bytes of a message, handing each field (number,
    /// wire type) to `field`, which consumes its value; fails unless the
    /// fields end where the message does.
    fn message<R: Read + Seek>(
        &mut self,
        file: &mut BufReader<R>,
        len: u64,
        mut field: impl FnMut(&mut Self, &mut BufReader<R>, u64, u8) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let end = self
            .position
            .checked_add(len)
            .ok_or(std::io::ErrorKind::InvalidData)?;
        while self.position < end {
            let (number, wire) = self.key(file)?.ok_or(std::io::ErrorKind::UnexpectedEof)?;
            field(self, file, number, wire)?;
        }
        if self.position == end {
            Ok(())
        } else {
            Err(std::io::ErrorKind::InvalidData.into())
        }
    }

    /// Walks `len` bytes of a `GraphProto`: initializers walked for where
    /// their data is (the data stepped over), inputs kept, every other
    /// field scanned.
    fn walk_graph(
        &mut self,
        file: &mut BufReader<impl Read + Seek>,
        len: u64,
    ) -> std::io::Result<()> {
        self.message(file, len, |this, file, number, wire| match (number, wire) {
            (GRAPH_INITIALIZER, 2) => {
                let len = this.length(file)?;
                this.walk_tensor(file, len)
            }
            (GRAPH_SPARSE_INITIALIZER, 2) => {
                let len = this.length(file)?;
                this.skip(file, len)
            }
            (GRAPH_INPUT, 2) if this.graph_inputs.is_some() => {
                let len = this.length(file)?;
                let field = this.take_field(file, len, MOST_INPUT_BYTES)?;
                this.feed(&mut &field[..], len)?;
                if let Some(kept) = this.graph_inputs.as_mut() {
                    // The field again as protobuf encodes it (key, length,
                    // bytes), so the kept fields parse as a `GraphProto`.
                    let mut out = protobuf::CodedOutputStream::vec(kept);
                    out.write_bytes(GRAPH_INPUT as u32, &field)
                        .and_then(|()| out.flush())
                        .map_err(|_| std::io::ErrorKind::InvalidData)?;
                }
                Ok(())
            }
            _ => this.value(file, wire),
        })
    }

    /// Walks `len` bytes of an initializer's `TensorProto`: its data
    /// stepped over, the files its external data names noted.
    fn walk_tensor(
        &mut self,
        file: &mut BufReader<impl Read + Seek>,
        len: u64,
    ) -> std::io::Result<()> {
        self.message(file, len, |this, file, number, wire| match (number, wire) {
            (TENSOR_EXTERNAL_DATA, 2) => {
                let len = this.length(file)?;
                let entry = this.take_field(file, len, MOST_INPUT_BYTES)?;
                let entry = StringStringEntryProto::parse_from_bytes(&entry)
                    .map_err(|_| std::io::ErrorKind::InvalidData)?;
                if entry.key() == "location" {
                    this.external.push(entry.value().to_string());
                }
                Ok(())
            }
            (_, 2) => {
                let len = this.length(file)?;
                this.skip(file, len)
            }
            (_, 0) => this
                .varint(file)?
                .map(|_| ())
                .ok_or(std::io::ErrorKind::UnexpectedEof.into()),
            (_, 1) => this.skip(file, 8),
            (_, 5) => this.skip(file, 4),
            _ => Err(std::io::ErrorKind::InvalidData.into()),
        })
    }

    /// The length of a length-delimited field.
    fn length(&mut self, file: &mut impl Read) -> std::io::Result<u64> {
        Ok(self
            .varint(file)?
            .ok_or(std::io::ErrorKind::UnexpectedEof)?)
    }

    /// The next field's number and wire type, or `None` at the end.
    fn key(&mut self, file: &mut impl Read) -> std::io::Result<Option<(u64, u8)>> {
        Ok(self.varint(file)?.map(|key| (key >> 3, (key & 7) as u8)))
    }

    /// Scans the value of a field of wire type `wire`.
    fn value(&mut self, file: &mut impl Read, wire: u8) -> std::io::Result<()> {
        match wire {
            0 => self
                .varint(file)?
                .map(|_| ())
                .ok_or(std::io::ErrorKind::UnexpectedEof.into()),
            1 => self.feed_exactly(file, 8),
            2 => {
                let len = self
                    .varint(file)?
                    .ok_or(std::io::ErrorKind::UnexpectedEof)?;
                self.feed_exactly(file, len)
            }
            5 => self.feed_exactly(file, 4),
            _ => Err(std::io::ErrorKind::InvalidData.into()),
        }
    }

    /// A varint, its bytes scanned; `None` at the end of the input.
    fn varint(&mut self, file: &mut impl Read) -> std::io::Result<Option<u64>> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let mut byte = [0u8];
            if read_full(file, &mut byte)? == 0 {
                return if shift == 0 {
                    Ok(None)
                } else {
                    Err(std::io::ErrorKind::UnexpectedEof.into())
                };
            }
            self.hasher.write_u8(byte[0]);
            self.position += 1;
            value |= u64::from(byte[0] & 0x7f) << shift;
            if byte[0] & 0x80 == 0 {
                return Ok(Some(value));
            }
        }
        Err(std::io::ErrorKind::InvalidData.into())
    }

    fn finish(self) -> Scan {
        Scan {
            fingerprint: self.hasher.finish(),
            reusable: !self.random,
            may_have_value_facts: self.may_have_value_facts,
            graph_inputs: self.graph_inputs,
        }
    }
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
    use protobuf::Message;
    use wfstudio_onnx::proto::onnx::{
        GraphProto, ModelProto, NodeProto, StringStringEntryProto, TensorProto, ValueInfoProto,
    };

    /// A model with one node of `op` and a weight whose bytes are `weight`.
    fn model(op: &str, weight: &[u8]) -> Vec<u8> {
        let mut node = NodeProto::new();
        node.op_type = Some(op.into());
        node.input = vec!["x".into(), "w".into()];
        node.output = vec!["y".into()];
        let mut tensor = TensorProto::new();
        tensor.name = Some("w".into());
        tensor.dims = vec![weight.len() as i64];
        tensor.data_type = Some(2); // uint8
        tensor.raw_data = Some(weight.to_vec());
        let mut graph = GraphProto::new();
        graph.node.push(node);
        graph.initializer.push(tensor);
        let mut model = ModelProto::new();
        model.ir_version = Some(9);
        model.graph = Some(graph).into();
        model.write_to_bytes().expect("encodes")
    }

    fn scan_bytes_as_file(name: &str, bytes: &[u8]) -> Scan {
        let path =
            std::env::temp_dir().join(format!("wfstudio-scan-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).expect("write");
        let scanned = scan_file(&path).expect("scans");
        let _ = std::fs::remove_file(&path);
        scanned
    }

    /// A file's weights are stepped over: a random operator's name among
    /// them is no operator, one in a node is; the fingerprint follows the
    /// structure and the file, and an encoding the walk does not follow is
    /// scanned whole.
    #[test]
    fn a_files_weights_are_stepped_over_and_its_nodes_read() {
        let weights_only = model("Add", b"....RandomNormal....");
        assert!(scan_bytes_as_file("weights", &weights_only).reusable);
        assert!(
            !scan(&weights_only[..]).expect("scans").reusable,
            "a held model is scanned whole"
        );
        let random = model("RandomNormal", b"plain");
        assert!(!scan_bytes_as_file("random", &random).reusable);
        // The same file scans the same; another file with the same bytes
        // (its weights could differ in a file of the same size) does not.
        let path = std::env::temp_dir().join(format!("wfstudio-scan-{}-same", std::process::id()));
        std::fs::write(&path, &weights_only).expect("write");
        let once = scan_file(&path).expect("scans").fingerprint;
        assert_eq!(scan_file(&path).expect("scans").fingerprint, once);
        let other =
            std::env::temp_dir().join(format!("wfstudio-scan-{}-other", std::process::id()));
        std::fs::write(&other, &weights_only).expect("write");
        assert_ne!(scan_file(&other).expect("scans").fingerprint, once);
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&other);
        // The graph's inputs come out of the walk, their value facts with
        // them, without the weights.
        let mut labelled = ModelProto::parse_from_bytes(&weights_only).expect("parses");
        let mut input = ValueInfoProto::new();
        input.name = Some("voice".into());
        let mut entry = StringStringEntryProto::new();
        entry.key = Some(wfstudio_onnx::labels::LABELS_KEY.into());
        entry.value = Some(r#"["low","high"]"#.into());
        input.metadata_props.push(entry);
        labelled.graph.mut_or_insert_default().input.push(input);
        let bytes = labelled.write_to_bytes().expect("encodes");
        let scanned = scan_bytes_as_file("labelled", &bytes);
        assert!(scanned.may_have_value_facts);
        let facts = crate::session::graph_input_facts(&scanned.graph_inputs.expect("kept"));
        assert_eq!(
            facts["voice"].labels.as_deref(),
            Some(&["low".to_string(), "high".to_string()][..])
        );
        // Rewritten in place with other weights of the same size, its
        // modification time put back: still another fingerprint.
        let path =
            std::env::temp_dir().join(format!("wfstudio-scan-{}-rewritten", std::process::id()));
        std::fs::write(&path, model("Add", b"weights one")).expect("write");
        let before = scan_file(&path).expect("scans").fingerprint;
        let modified = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .expect("mtime");
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, model("Add", b"weights two")).expect("write");
        std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(modified))
            .expect("mtime put back");
        assert_ne!(scan_file(&path).expect("scans").fingerprint, before);
        let _ = std::fs::remove_file(&path);
        // Weights kept in another file: a change there is a change.
        let folder =
            std::env::temp_dir().join(format!("wfstudio-scan-{}-external", std::process::id()));
        std::fs::create_dir_all(&folder).expect("folder");
        let mut external = ModelProto::parse_from_bytes(&model("Add", b"")).expect("parses");
        let tensor = &mut external.graph.mut_or_insert_default().initializer[0];
        tensor.raw_data = None;
        let mut location = StringStringEntryProto::new();
        location.key = Some("location".into());
        location.value = Some("weights.bin".into());
        tensor.external_data.push(location);
        tensor.data_location = Some(protobuf::EnumOrUnknown::from_i32(1));
        std::fs::write(
            folder.join("model.onnx"),
            external.write_to_bytes().expect("encodes"),
        )
        .expect("write");
        std::fs::write(folder.join("weights.bin"), b"0123").expect("write");
        let before = scan_file(&folder.join("model.onnx")).expect("scans");
        assert!(before.graph_inputs.is_some(), "walked");
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(folder.join("weights.bin"), b"4567").expect("write");
        assert_ne!(
            scan_file(&folder.join("model.onnx"))
                .expect("scans")
                .fingerprint,
            before.fingerprint
        );
        let _ = std::fs::remove_dir_all(&folder);
        // A file cut anywhere scans (walked, or whole), without a panic.
        let labelled_bytes = bytes.clone();
        for cut in 0..labelled_bytes.len() {
            let _ = scan_bytes_as_file("cut", &labelled_bytes[..cut]);
        }
        // Not an encoding the walk follows (a group, wire type 3): every
        // byte is looked at, the weights' too.
        let mut odd = b"\x0b".to_vec();
        odd.extend_from_slice(&weights_only);
        assert!(!scan_bytes_as_file("odd", &odd).reusable);
    }

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
