//! ONNX TextFormat model parsing and re-encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(model) = wfstudio_runner::model::parse_textproto(text) {
        use protobuf::Message;
        let _ = model.write_to_bytes();
    }
});
