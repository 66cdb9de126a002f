//! Canonical YAML text from a JSON-like value: block style, two-space
//! indentation, sequences flush with their key, and scalars quoted only when
//! a YAML 1.1 or 1.2 reader could take them for something else. The output
//! re-reads to the same data with any conforming YAML parser.

use crate::tree::{Resolved, resolve_plain};
use serde_json::{Map, Number, Value};

/// Renders `value` (normally a mapping) as a YAML document.
pub fn to_yaml(value: &Value) -> String {
    let mut lines = Vec::new();
    match value {
        Value::Object(map) if !map.is_empty() => render_map(map, 0, &mut lines),
        Value::Array(items) if !items.is_empty() => render_seq(items, 0, &mut lines),
        scalar => lines.push(inline(scalar)),
    }
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

fn is_block(value: &Value) -> bool {
    match value {
        Value::Object(map) => !map.is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => false,
    }
}

fn render_map(map: &Map<String, Value>, indent: usize, lines: &mut Vec<String>) {
    let pad = " ".repeat(indent);
    for (key, value) in map {
        let key = scalar_string(key);
        match value {
            Value::Object(child) if !child.is_empty() => {
                lines.push(format!("{pad}{key}:"));
                render_map(child, indent + 2, lines);
            }
            Value::Array(items) if !items.is_empty() => {
                lines.push(format!("{pad}{key}:"));
                render_seq(items, indent, lines);
            }
            scalar => lines.push(format!("{pad}{key}: {}", inline(scalar))),
        }
    }
}

fn render_seq(items: &[Value], indent: usize, lines: &mut Vec<String>) {
    let pad = " ".repeat(indent);
    for item in items {
        if is_block(item) {
            let first = lines.len();
            match item {
                Value::Object(map) => render_map(map, indent + 2, lines),
                Value::Array(inner) => render_seq(inner, indent + 2, lines),
                _ => unreachable!("is_block holds only for collections"),
            }
            let line = &mut lines[first];
            line.replace_range(..indent + 2, &format!("{pad}- "));
        } else {
            lines.push(format!("{pad}- {}", inline(item)));
        }
    }
}

fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => scalar_string(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

fn number(n: &Number) -> String {
    if let Some(f) = n.as_f64().filter(|_| n.is_f64()) {
        float(f)
    } else {
        n.to_string()
    }
}

/// A float spelled so that YAML 1.1 and 1.2 readers both take it as a float:
/// always a decimal point, and an explicitly signed exponent.
pub fn float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let repr = format!("{f:?}");
    match repr.split_once('e') {
        Some((mantissa, exponent)) => {
            let mantissa = if mantissa.contains('.') {
                mantissa.to_string()
            } else {
                format!("{mantissa}.0")
            };
            let exponent = if exponent.starts_with('-') {
                exponent.to_string()
            } else {
                format!("+{exponent}")
            };
            format!("{mantissa}e{exponent}")
        }
        None => repr,
    }
}

const YAML11_WORDS: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off",
    "OFF", "<<", "=",
];

fn needs_double_quotes(s: &str) -> bool {
    s.chars().any(|c| {
        c.is_control()
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{85}')
            || ('\u{80}'..='\u{9f}').contains(&c)
    })
}

fn looks_numeric(s: &str) -> bool {
    let first = s.chars().next().unwrap_or(' ');
    (first.is_ascii_digit() || matches!(first, '+' | '-' | '.'))
        && s.chars()
            .all(|c| c.is_ascii_hexdigit() || "xXoObB_.:+-eE".contains(c))
}

fn needs_quotes(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return true;
    };
    resolve_plain(s) != Resolved::Str
        || YAML11_WORDS.contains(&s)
        || "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || first.is_whitespace()
        || s.ends_with(char::is_whitespace)
        || s.ends_with(':')
        || s.contains(": ")
        || s.contains(" #")
        || looks_numeric(s)
}

/// A string scalar, plain when safe, else single- or double-quoted.
pub fn scalar_string(s: &str) -> String {
    if needs_double_quotes(s) {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if needs_double_quotes(c.encode_utf8(&mut [0; 4])) => {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    } else if needs_quotes(s) {
        format!("'{}'", s.replace('\'', "''"))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_block_style_with_safe_scalars() {
        let value = json!({
            "version": "1.0",
            "capabilities": ["workflow_ssa", "yes"],
            "steps": [{"kind": "invoke", "inputs": {}, "outputs": {"a": "b"}}],
            "cases": {"true": "x"},
            "n": 3, "f": 1.0, "tiny": 1e-7, "huge": 1e300,
            "text": "line\nnext", "quote": "it's",
            "nested": [[1, 2]],
        });
        let text = to_yaml(&value);
        assert_eq!(
            text,
            "version: '1.0'\ncapabilities:\n- workflow_ssa\n- 'yes'\nsteps:\n- kind: invoke\n  inputs: {}\n  outputs:\n    a: b\ncases:\n  'true': x\n'n': 3\nf: 1.0\ntiny: 1.0e-7\nhuge: 1.0e+300\ntext: \"line\\nnext\"\nquote: it's\nnested:\n- - 1\n  - 2\n"
        );
    }
}
