//! A synthetic workflow for the graph and canvas benchmarks.

/// A workflow of `loops` nested loops (each inside the previous) with
/// `per_loop` chained invokes in every body.
pub fn synthetic(loops: usize, per_loop: usize) -> String {
    let port = "{dtype: float32, rank: 2, shape: [batch, 8]}";
    let mut text = format!(
        "pipeline:\n  workflow:\n    manifest: {{capabilities: [workflow_ssa, nested_control_flow]}}\n    inputs:\n      x: {{contract: {port}, role: {{kind: opaque}}, source: {{kind: application, name: x}}}}\n      n: {{contract: {{dtype: int64, rank: 0}}, role: {{kind: opaque}}, source: {{kind: literal}}, required: false, default: 1}}\n      go: {{contract: {{dtype: bool, rank: 0}}, role: {{kind: opaque}}, source: {{kind: literal}}, required: false, default: true}}\n    components:\n      f:\n        implementation: {{kind: onnx, artifact: f.onnx}}\n        ports: {{inputs: {{a: {port}}}, outputs: {{b: {port}}}}}\n    steps:\n"
    );
    let mut indent = String::from("    ");
    let mut previous = "x".to_string();
    for l in 0..loops {
        text += &format!(
            "{indent}- kind: loop\n{indent}  continue_when: go\n{indent}  max_iterations: n\n{indent}  steps:\n"
        );
        indent += "  ";
        for i in 0..per_loop {
            let value = format!("v{l}_{i}");
            text += &format!(
                "{indent}- {{kind: invoke, component: f, inputs: {{a: {previous}}}, outputs: {{b: {value}}}}}\n"
            );
            previous = value;
        }
    }
    text
}
