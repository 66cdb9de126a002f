//! Reading a model's ports (the port check of `import-comfyui --models`)
//! from arbitrary bytes as a binary ONNX model, and checking them against
//! a declared component.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protobuf::Message;
use wfstudio_onnx::proto::onnx::ModelProto;

fuzz_target!(|data: &[u8]| {
    if let Ok(model) = ModelProto::parse_from_bytes(data) {
        let signature = wfstudio_onnx::Signature::of(&model);
        let declared = serde_json::json!({"ports": {
            "inputs": {"sample": {"dtype": "float32", "rank": 2, "shape": ["batch", 4]}},
            "outputs": {"y": {"dtype": "int64", "rank": 1, "shape": [3]}}}});
        let _ = wfstudio_core::comfyui::package::ports::check("c", &declared, &signature);
        for port in signature.inputs.iter().chain(&signature.outputs) {
            let _ = port.to_string();
        }
    }
});
