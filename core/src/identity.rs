//! Semantic identity: `onnx-genai-metadata-identity-v1:sha256:<hex>`.
//!
//! Computed from the raw document text (not the typed model), as the
//! reference does: YAML 1.2 core-schema values, keys sorted, nulls, empty
//! containers and ignorable profiles dropped, numbers as doubles in
//! positional notation, strings JSON-escaped; then SHA-256.

use sha2::{Digest, Sha256};
use wfstudio_schema::tree::{Node, NodeValue, Resolved, TreeError, parse_tree};
use wfstudio_schema::{Diagnostic, Limits};

/// The identity scheme prefix.
pub const SCHEME: &str = "onnx-genai-metadata-identity-v1:sha256";

/// Why an identity could not be computed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct IdentityError(String);

impl From<TreeError> for IdentityError {
    fn from(e: TreeError) -> Self {
        IdentityError(e.to_string())
    }
}

impl From<Vec<Diagnostic>> for IdentityError {
    fn from(d: Vec<Diagnostic>) -> Self {
        IdentityError(d.first().map_or_else(String::new, |d| d.message.clone()))
    }
}

/// The identity of the document `text`.
pub fn identity(text: &str) -> Result<String, IdentityError> {
    let canonical = canonical_text(text)?;
    let digest = Sha256::digest(canonical.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{SCHEME}:{hex}"))
}

/// The canonical string that is hashed.
pub fn canonical_text(text: &str) -> Result<String, IdentityError> {
    let tree = parse_tree(text, &Limits::default())?;
    Ok(tree
        .source_map
        .root()
        .and_then(|root| encode(root, true))
        .unwrap_or_else(|| "{}".to_string()))
}

fn key_text(node: &Node) -> &str {
    match &node.value {
        NodeValue::Scalar(s) => &s.text,
        _ => "",
    }
}

fn is_ignorable_profile(node: &Node) -> bool {
    let NodeValue::Map(entries) = &node.value else {
        return false;
    };
    entries.iter().any(|(k, v)| {
        key_text(k) == "requirement"
            && matches!(&v.value, NodeValue::Scalar(s) if s.resolved == Resolved::Str && s.text == "ignorable")
    })
}

fn encode(node: &Node, root: bool) -> Option<String> {
    match &node.value {
        NodeValue::Scalar(s) => match s.resolved {
            Resolved::Null => None,
            Resolved::Bool(b) => Some(b.to_string()),
            Resolved::Int(i) => Some(number(i as f64)),
            Resolved::UInt(u) => Some(number(u as f64)),
            Resolved::Float(f) => Some(number(f)),
            Resolved::Str => Some(serde_json::to_string(&s.text).unwrap_or_default()),
        },
        NodeValue::Seq(items) => {
            let parts: Vec<String> = items.iter().filter_map(|i| encode(i, false)).collect();
            (!parts.is_empty()).then(|| format!("[{}]", parts.join(",")))
        }
        NodeValue::Map(entries) => {
            let mut members: Vec<(&str, String)> = entries
                .iter()
                .filter_map(|(k, v)| {
                    let key = key_text(k);
                    let value = if root && key == "profiles" {
                        encode_profiles(v)
                    } else {
                        encode(v, false)
                    };
                    value.map(|v| (key, v))
                })
                .collect();
            members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            let parts: Vec<String> = members
                .into_iter()
                .map(|(k, v)| format!("{}:{v}", serde_json::to_string(k).unwrap_or_default()))
                .collect();
            (!parts.is_empty()).then(|| format!("{{{}}}", parts.join(",")))
        }
    }
}

fn encode_profiles(node: &Node) -> Option<String> {
    let NodeValue::Map(entries) = &node.value else {
        return encode(node, false);
    };
    let kept: Vec<(Node, Node)> = entries
        .iter()
        .filter(|(_, v)| !is_ignorable_profile(v))
        .cloned()
        .collect();
    encode(
        &Node {
            value: NodeValue::Map(kept),
            span: node.span,
        },
        false,
    )
}

/// A double as the scheme spells it: integral values below 1e18 as
/// integers, everything else as the shortest round-trip decimal in
/// positional notation (Rust's `Display` for `f64` is exactly that).
fn number(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e18 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> String {
        identity(text)
            .unwrap()
            .rsplit(':')
            .next()
            .unwrap()
            .to_string()
    }

    #[test]
    fn matches_the_reference_test_vectors() {
        let cases = [
            (
                "a: 0.1\nb: 1.0e-7\nc: 1.0e20\nd: -0.0\ne: 2.5\nf: 128.0\ng: 1.28e2\n",
                "{\"a\":0.1,\"b\":0.0000001,\"c\":100000000000000000000,\"d\":0,\"e\":2.5,\"f\":128,\"g\":128}",
                "0fc3013dd59bba59cbe9b6166e1bbf5df1f80e470c49204d8322e6931fd15a84",
            ),
            (
                "s: \"x/y é \\t \\u0001 \\\"q\\\"\"\nk: [1, null, [], {}, 2]\n",
                "{\"k\":[1,2],\"s\":\"x/y é \\t \\u0001 \\\"q\\\"\"}",
                "fb3019b4e51e63fb1ce43f521aa5723fe6cd82c6ebf8e258260c3252564e713c",
            ),
            (
                "profiles: {p: {kind: future, version: '1', requirement: ignorable}}\nx: {}\n",
                "{}",
                "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
            ),
            (
                "flags: [yes, no, on, off, true, True, TRUE]\n",
                "{\"flags\":[\"yes\",\"no\",\"on\",\"off\",true,true,true]}",
                "0c20a745c60047772c9ec5f10ea66fc4d7729c127cae98d80f70d4f1c7676598",
            ),
            (
                "n: 12345678901234567890\nm: 1000000000000000000\nh: 0x10\no: 0o10\n",
                "{\"h\":16,\"m\":1000000000000000000,\"n\":12345678901234567000,\"o\":8}",
                "7915ed0cce2fbae4f5707954128bf4dad07cdaa14adecb7138fd516cbbfcfb19",
            ),
            (
                "cases: {'true': a, 'false': b}\n",
                "{\"cases\":{\"false\":\"b\",\"true\":\"a\"}}",
                "1d248a1be49a9f0432bbc5db241def4331d213a12a878d0fa7231161eba5d959",
            ),
            (
                "z: ~\nw: ''\n",
                "{\"w\":\"\"}",
                "b77041ca33fa14f893d5a28bb7558a5495b3bc0b6e60b23a8871eb11a2d1fc5d",
            ),
        ];
        for (text, canonical, expected) in cases {
            assert_eq!(canonical_text(text).unwrap(), canonical, "{text}");
            assert_eq!(hex(text), expected, "{text}");
        }
        let big = "big: 1.0e300\nsmall: 5.0e-324\n";
        let canonical = format!(
            "{{\"big\":1{},\"small\":0.{}5}}",
            "0".repeat(300),
            "0".repeat(323)
        );
        assert_eq!(canonical_text(big).unwrap(), canonical);
        assert_eq!(
            hex(big),
            "e4dcf871423fb1c97bd79e4742670b231d3be140e6013fa6ca755ff650f194fa"
        );
    }
}
