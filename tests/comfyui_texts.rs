//! `PreviewAny` of a written value (or of one the lowering folds): the
//! text it shows, as Python's `str` writes the value, is a text output
//! (UTF-8 bytes of a literal input) that `run` prints and writes as
//! `.txt`; a graph of such previews alone lowers; a `PreviewAny` of what a
//! model computes is not an output.

mod support;

use serde_json::{Value, json};
use support::lowering::{lowered, pattern, s, scratch, workflow};
use wfstudio_core::comfyui::lower::Target;

/// Previews of a float, a boolean, a converted number, a text and an
/// empty text, with titles as the Node Basics template gives them.
fn previews() -> Value {
    json!({
        "1": {"class_type": "PrimitiveFloat", "inputs": {"value": 1.5}},
        "2": {"class_type": "PreviewAny", "inputs": {"source": ["1", 0]}, "_meta": {"title": "Preview as Text (Float)"}},
        "3": {"class_type": "PrimitiveBoolean", "inputs": {"value": true}},
        "4": {"class_type": "PreviewAny", "inputs": {"source": ["3", 0]}, "_meta": {"title": "Preview Any"}},
        "5": {"class_type": "PrimitiveStringMultiline", "inputs": {"value": "7"}},
        "6": {"class_type": "ComfyNumberConvert", "inputs": {"value": ["5", 0]}},
        "7": {"class_type": "PreviewAny", "inputs": {"source": ["6", 0]}, "_meta": {"title": "Preview as Text (Float)"}},
        "8": {"class_type": "PreviewAny", "inputs": {"source": "naïve café"}},
        "9": {"class_type": "PreviewAny", "inputs": {"source": ""}}
    })
}

#[test]
fn previews_of_written_values_are_text_outputs() {
    let l = lowered(&previews(), &Target::default());
    let w = workflow(&l);
    let outputs: Vec<&String> = w["outputs"].as_object().expect("outputs").keys().collect();
    assert_eq!(
        outputs,
        [
            "preview_as_text_float",
            "text",
            "preview_as_text_float_7",
            "text_8",
            "text_9"
        ]
    );
    let text_of = |output: &str| {
        let input = &w["inputs"][format!("package.{output}")];
        assert_eq!(input["source"]["kind"], "literal", "{output}");
        let bytes: Vec<u8> = serde_json::from_value(input["default"].clone()).expect("bytes");
        assert_eq!(
            w["outputs"][output]["contract"],
            json!({"dtype": "uint8", "rank": 1, "shape": [bytes.len()]}),
            "{output}"
        );
        assert_eq!(w["outputs"][output]["role"], "text", "{output}");
        String::from_utf8(bytes).expect("UTF-8")
    };
    assert_eq!(text_of("preview_as_text_float"), "1.5");
    assert_eq!(text_of("text"), "True");
    assert_eq!(text_of("preview_as_text_float_7"), "7.0");
    assert_eq!(text_of("text_8"), "naïve café");
    assert_eq!(text_of("text_9"), "");
    let emits: Vec<(&Value, &Value)> = w["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| (&s["value"], &s["output"]))
        .collect();
    assert_eq!(
        emits[0],
        (
            &json!("package.preview_as_text_float"),
            &json!("preview_as_text_float")
        )
    );
    // What fed the previews is used.
    for node in ["1", "3", "5", "6"] {
        assert!(l.used.iter().any(|u| u == node), "{node}: {:?}", l.used);
    }
    if !support::runtime_available() {
        return;
    }
    let root = scratch("texts");
    let (dir, out) = support::lowering::package_and_run(&root, "previews", &previews());
    for (output, text) in [("text", "True"), ("text_8", "naïve café"), ("text_9", "")] {
        let written = std::fs::read_to_string(out.join(format!("{output}.txt"))).expect("txt");
        assert_eq!(written, text);
    }
    let (code, stdout, stderr) = support::run_wfstudio(&["run", s(&dir)]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("text_8: uint8 [12]\n  \"naïve café\""),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_preview_of_a_models_result_is_not_an_output() {
    let plain = lowered(&pattern("img2img"), &Target::default());
    let mut g = pattern("img2img");
    g["30"] = json!({"class_type": "PreviewAny", "inputs": {"source": ["5", 0]}});
    g["31"] = json!({"class_type": "PreviewAny", "inputs": {"source": 4}});
    let l = lowered(&g, &Target::default());
    let outputs: Vec<&String> = workflow(&l)["outputs"]
        .as_object()
        .expect("outputs")
        .keys()
        .collect();
    assert_eq!(outputs, ["image", "text", "latent"]);
    assert!(workflow(&plain)["outputs"].get("text").is_none());
}
