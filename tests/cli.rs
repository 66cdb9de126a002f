//! The `wfstudio check` and `fmt` command-line contract: output lines,
//! JSON fields and exit codes.

mod support;

#[test]
fn check_reports_text_lines_with_help_and_exit_one() {
    let (code, stdout, _) =
        support::run_wfstudio(&["check", "fixtures/malformed/removed_emit_row_ids.yaml"]);
    assert_eq!(code, 1);
    assert_eq!(
        stdout,
        "fixtures/malformed/removed_emit_row_ids.yaml:24:7: error[S003]: \
         pipeline.workflow.steps[0].row_ids: removed field `row_ids`\n    help: `row_ids` was \
         removed from emit steps: rows are positional; use `when` or `valid_length` for per-row \
         publication\n"
    );
}

#[test]
fn check_json_is_one_array_with_the_contract_fields() {
    let (code, stdout, _) = support::run_wfstudio(&[
        "check",
        "--no-artifacts",
        "--format",
        "json",
        "fixtures/malformed/unknown_invoke_field.yaml",
        "fixtures/examples/tiny-denoise",
    ]);
    assert_eq!(code, 1);
    let value: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(
        value,
        serde_json::json!([{
            "file": "fixtures/malformed/unknown_invoke_field.yaml",
            "line": 22,
            "column": 7,
            "severity": "error",
            "code": "S002",
            "path": "pipeline.workflow.steps[0].input",
            "message": "unknown field `input`, expected one of `component`, `inputs`, `outputs`",
            "help": "did you mean `inputs`?"
        }])
    );
}

#[test]
fn check_of_a_clean_package_folder_exits_zero() {
    let (code, stdout, stderr) =
        support::run_wfstudio(&["check", "--no-artifacts", "fixtures/examples/tiny-denoise"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "");
    assert_eq!(stderr, "checked 1 path(s): 0 error(s), 0 warning(s)\n");
}

#[test]
fn warnings_alone_exit_zero() {
    let (code, stdout, _) =
        support::run_wfstudio(&["check", "fixtures/malformed/duplicate_key_warning.yaml"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("warning[S008]"), "{stdout}");
}

#[test]
fn io_and_usage_failures_exit_two() {
    let (code, _, stderr) = support::run_wfstudio(&["check", "no/such/file.yaml"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("cannot read no/such/file.yaml"), "{stderr}");
    assert_eq!(
        stderr.matches("(os error 2)").count(),
        1,
        "the reason is said once: {stderr}"
    );
    let (code, _, stderr) = support::run_wfstudio(&["check", "fixtures"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("holds no inference_metadata"), "{stderr}");
    let (code, _, _) = support::run_wfstudio(&["check"]);
    assert_eq!(code, 2);
    let (code, _, _) = support::run_wfstudio(&["fmt", "x", "--to", "toml"]);
    assert_eq!(code, 2);
}

#[test]
fn fmt_keeps_the_leading_comment_and_writes_atomically() {
    let dir = std::env::temp_dir().join(format!("wfstudio-fmt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = dir.join("out.yaml");
    let out_arg = out.to_string_lossy().into_owned();
    let (code, stdout, stderr) =
        support::run_wfstudio(&["fmt", "fixtures/examples/tiny-denoise", "-o", &out_arg]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "");
    let text = std::fs::read_to_string(&out).expect("written");
    assert!(text.starts_with("# Tiny denoise: the smallest package"));
    assert!(text.contains("\n      capabilities:\n      - workflow_ssa\n"));
    let leftovers: Vec<_> = std::fs::read_dir(&dir).expect("dir").collect();
    assert_eq!(leftovers.len(), 1, "no temporary file is left behind");

    let (code, json, _) = support::run_wfstudio(&["fmt", &out_arg, "--to", "json"]);
    assert_eq!(code, 0);
    let value: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(value["pipeline"]["workflow"]["steps"][0]["kind"], "loop");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn fmt_of_an_invalid_document_prints_diagnostics_and_exits_one() {
    let (code, stdout, stderr) =
        support::run_wfstudio(&["fmt", "fixtures/malformed/transfer_step.yaml"]);
    assert_eq!(code, 1);
    assert_eq!(stdout, "");
    assert!(stderr.contains("error[S006]"), "{stderr}");
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wfstudio-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn identity_prints_the_reference_identity() {
    let Some(shared) = support::shared() else {
        return;
    };
    let doc = shared.join("corpus/catalogue/07-stable-diffusion-text-to-image.yaml");
    let (code, stdout, _) = support::run_wfstudio(&["identity", &doc.to_string_lossy()]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        "onnx-genai-metadata-identity-v1:sha256:5e82865bbb14af217cf9f8b0bcd1e3608db94c13ecf8ac835fbd3b1c3eeddecc\n"
    );
}

#[test]
fn check_reports_semantic_errors_with_line_and_fix_hint() {
    let Some(shared) = support::shared() else {
        return;
    };
    let original = std::fs::read_to_string(
        shared.join("corpus/catalogue/07-stable-diffusion-text-to-image.yaml"),
    )
    .expect("readable");
    let dir = temp_dir("semantic");
    let doc = dir.join("inference_metadata.yaml");
    std::fs::write(
        &doc,
        original.replace(
            "max_iterations: request.max_iterations",
            "max_iterations: steps",
        ),
    )
    .expect("write");
    let (code, stdout, _) =
        support::run_wfstudio(&["check", "--no-artifacts", &doc.to_string_lossy()]);
    assert_eq!(code, 1);
    let line = original
        .lines()
        .position(|l| l.contains("max_iterations: request.max_iterations"))
        .expect("line")
        + 1;
    assert_eq!(
        stdout,
        format!(
            "{}:{line}:7: error[V-N11]: pipeline.workflow.steps[0].max_iterations: references value 'steps' before definition\n    help: define the value before this step, in a scope visible here\n",
            doc.display()
        )
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn check_fix_adds_missing_capabilities_in_place() {
    let Some(shared) = support::shared() else {
        return;
    };
    let original = std::fs::read_to_string(
        shared.join("corpus/catalogue/07-stable-diffusion-text-to-image.yaml"),
    )
    .expect("readable");
    let item = "      - nested_control_flow\n";
    assert!(original.contains(item));
    let broken = original.replace(item, "");
    let dir = temp_dir("fix");
    let doc = dir.join("inference_metadata.yaml");
    std::fs::write(&doc, &broken).expect("write");
    let doc_arg = doc.to_string_lossy().into_owned();
    let (code, _, _) = support::run_wfstudio(&["check", "--no-artifacts", &doc_arg]);
    assert_eq!(code, 1, "the broken copy fails V-C1");
    let (code, stdout, stderr) =
        support::run_wfstudio(&["check", "--no-artifacts", "--fix", &doc_arg]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "fixed: added to pipeline.workflow.manifest.capabilities: nested_control_flow"
        ),
        "{stderr}"
    );
    let fixed = std::fs::read_to_string(&doc).expect("fixed file");
    let expected = broken.replace(
        "      - loop_induction_values\n",
        "      - loop_induction_values\n      - nested_control_flow\n",
    );
    assert_eq!(
        fixed, expected,
        "only the missing item is added; comments and layout stay"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_empty_node_defs_variable_counts_as_unset() {
    // The bundled definitions convert a UI workflow; an empty
    // WFSTUDIO_NODE_DEFS (an unset shell variable exported) is not a path.
    let graph = support::fixtures().join("comfyui/set-get-nodes.ui.json");
    let out = std::process::Command::new(support::wfstudio())
        .args([
            "import-comfyui",
            graph.to_str().expect("utf-8"),
            "--emit-api",
        ])
        .env("WFSTUDIO_NODE_DEFS", "")
        .output()
        .expect("wfstudio runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("reading node definitions"), "{stderr}");
}
