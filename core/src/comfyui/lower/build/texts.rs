//! The texts `PreviewAny` nodes show (`recognise::TextSink`): each text's
//! UTF-8 bytes a literal input (`package.<output>`, `uint8 [bytes]`)
//! emitted as a text output, named by the node's title (`text` for
//! ComfyUI's default one, the node id added where the name is taken).

use super::super::parts::{Steps, contract, opaque_literal};
use super::super::recognise::TextSink;
use serde_json::{Map, Value, json};

/// ComfyUI's own title of `PreviewAny`, not worth naming an output after.
const DEFAULT_TITLE: &str = "Preview Any";

/// Declares and emits an output for each of `texts`.
pub(super) fn emit_texts(
    texts: &[TextSink],
    (inputs, outputs): (&mut Map<String, Value>, &mut Map<String, Value>),
    after: &mut Steps,
) {
    for shown in texts {
        let name = output_name(shown, outputs, inputs);
        let bytes = shown.text.as_bytes();
        let c = contract("uint8", json!([bytes.len()]), false);
        let input = format!("package.{name}");
        inputs.insert(input.clone(), opaque_literal(c.clone(), json!(bytes)));
        outputs.insert(
            name.clone(),
            json!({"contract": c, "role": "text", "stage": "pre_adapter"}),
        );
        after.push(
            json!({"kind": "emit", "value": input, "output": name, "mode": "replace"}),
            &[&shown.node],
        );
    }
}

/// The output name of `shown`: its title as a word, else `text`; the node
/// id added where that (or its input) is taken.
fn output_name(
    shown: &TextSink,
    outputs: &Map<String, Value>,
    inputs: &Map<String, Value>,
) -> String {
    let base = shown
        .title
        .as_deref()
        .filter(|t| *t != DEFAULT_TITLE)
        .map(super::word)
        .filter(|w| !w.is_empty())
        .unwrap_or_else(|| "text".to_string());
    let free = |name: &String| {
        name != "latent"
            && !outputs.contains_key(name)
            && !inputs.contains_key(&format!("package.{name}"))
    };
    super::first_free(base, &shown.node, free)
}
