//! The Run panel driven as a user would (egui_kittest): runs, progress,
//! timing badges, reuse, crashing and hanging workers, where nodes ran.

use super::RunPanel;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use std::path::Path;
use wfstudio_editor::Studio;

struct App {
    studio: Studio,
    run: RunPanel,
}

/// Runs the example denoising package from the panel, as a user would
/// with Ctrl+Enter, and checks what the panel and the canvas show.
#[test]
fn a_run_shows_progress_timing_timeline_value_and_preview() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/examples/tiny-denoise");
    let config = std::env::temp_dir().join(format!("wfstudio-run-panel-{}", std::process::id()));
    let mut harness = harness_for(&package, &config);
    harness.state_mut().studio.inspected_value = Some("latent.next".into());
    harness.get_by_label("Not run yet.");
    // Two denoising steps instead of the recipe's four, typed in the form.
    let steps = || {
        egui_kittest::kittest::By::new()
            .role(egui::accesskit::Role::SpinButton)
            .label("request.steps")
    };
    harness.get(steps()).focus();
    harness.run_steps(2);
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness.get(steps()).type_text("2");
    harness.key_press(egui::Key::Enter);
    harness.run_steps(2);
    run_to_the_end(&mut harness);

    // Progress and loop counter.
    harness.get_by_label("loop pipeline.workflow.steps[0]: iteration 2 of 2");
    // Timing badges on both invokes: two denoiser calls, one decoder call.
    let badges = &harness.state().studio.run_overlay.badges;
    assert!(badges["pipeline.workflow.steps[0].steps[0]"].ends_with(" ms × 2"));
    assert!(badges["pipeline.workflow.steps[1]"].ends_with(" ms × 1"));
    // The timeline counts every call; the value inspector shows the
    // clicked value's first call.
    harness.get_by_label("Timeline");
    assert_eq!(
        harness
            .query_all_by(|n| {
                n.role() == egui::accesskit::Role::Label
                    && n.value().is_some_and(|v| v.ends_with(" ms, 3 calls"))
            })
            .count(),
        1
    );
    harness.get_by_label("Value latent.next");
    harness.get_by_label("[1, 4, 8, 8]");
    harness.get_by_label("made by pipeline.workflow.steps[0].steps[0] in loop iteration 0");
    // The image output's thumbnail under its emit node.
    let thumbnails = &harness.state().studio.run_overlay.thumbnails;
    assert_eq!(
        thumbnails.get("image").map(|(_, size)| *size),
        Some(egui::vec2(32.0, 32.0))
    );
    // The image output's preview and its save button.
    harness.get_by_label("image: F32 [1, 3, 32, 32]");
    harness.get_by_label("Save image row 0 as PNG…");
    // On the CPU nothing is copied between host and device, and no line
    // says so; a run that copied (as on a GPU) is told in one line.
    let copies = |h: &Harness<'static, App>| {
        h.query_all_by(|n| {
            n.value()
                .is_some_and(|v| v.starts_with("host-device copies"))
        })
        .count()
    };
    assert_eq!(copies(&harness), 0);
    if let super::Phase::Done(finished) = &mut harness.state_mut().run.phase {
        finished.output.transfers.to_device = wfstudio_runner::transfers::Copies {
            count: 3,
            bytes: 1040,
        };
    }
    harness.run_steps(2);
    harness
        .get_by_label("host-device copies: 3 to the device (1040 bytes), 0 to the host (0 bytes)");
    let _ = std::fs::remove_dir_all(config);
}

/// A worker that aborts, segfaults or hangs ends the run, not the
/// studio: the document keeps its unsaved edit, the panel says what
/// happened (signal, node), and the next Run starts a fresh worker that
/// runs the edited document.
#[test]
fn a_crashing_or_hanging_worker_leaves_the_studio_and_its_edits() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/examples/tiny-denoise");
    let config = std::env::temp_dir().join(format!("wfstudio-run-crash-{}", std::process::id()));
    let mut harness = harness_for(&package, &config);
    let edit = wfstudio_core::edit::Command::RenameValue {
        from: "decoded".into(),
        to: "survivor".into(),
    };
    assert!(harness.state_mut().studio.apply(&edit));
    harness.run_steps(3);
    let revision = |h: &Harness<'static, App>| {
        let doc = h
            .state()
            .studio
            .doc
            .as_ref()
            .expect("the document stays open");
        assert!(doc.history.is_dirty(), "the edit is still unsaved");
        doc.history.revision()
    };
    let edited = revision(&harness);
    for (fault, expected) in [
        (
            "abort:denoiser",
            "killed by signal 6 (SIGABRT, aborted) while running denoiser",
        ),
        (
            "segv:decoder",
            "killed by signal 11 (SIGSEGV, invalid memory access) while running decoder",
        ),
        (
            "exit:denoiser",
            "exited with status 3 while running denoiser",
        ),
    ] {
        harness.state_mut().run.worker_config.fault = Some(fault.into());
        let message = run_to_failure(&mut harness);
        assert!(
            message.starts_with("the run crashed: the worker process ")
                && message.contains(expected)
                && message.ends_with(
                    "The document and its edits are kept; the next Run starts a fresh worker."
                ),
            "{fault}: {message}"
        );
        harness.get_by_label(&format!("Run failed: {message}"));
        assert_eq!(revision(&harness), edited);
    }
    // Cancel stops a worker that does not listen within a second.
    harness.state_mut().run.worker_config.fault = Some("hang:denoiser".into());
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Enter);
    for _ in 0..2000 {
        harness.step();
        if harness.state().run.running.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    harness.get_by_label("Cancel").click();
    let cancelled = std::time::Instant::now();
    let message = wait_for_failure(&mut harness);
    assert!(cancelled.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(
        message,
        "cancelled: the run worker did not stop within a second, so it was stopped; the \
         next Run starts a fresh one"
    );
    // A fresh worker runs the edited document.
    harness.state_mut().run.worker_config.fault = None;
    run_to_the_end(&mut harness);
    let super::Phase::Done(finished) = &harness.state().run.phase else {
        panic!("the run finished")
    };
    assert!(
        finished.output.kept.iter().any(|k| k.name == "survivor"),
        "the renamed value was made"
    );
    assert_eq!(revision(&harness), edited);
    let _ = std::fs::remove_dir_all(config);
}

/// On a plugin device, each invoke's badge says where its nodes ran,
/// and the panel marks the component whose nodes fell back to CPU.
#[test]
fn badges_say_where_each_component_ran() {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/lib");
    let installed = std::fs::read_dir(&venv)
        .into_iter()
        .flatten()
        .flatten()
        .any(|python| python.path().join("site-packages/nxrt_ep_cpu").is_dir());
    if !installed {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the nxrt-ep-cpu plugin is missing from {} under CI",
            venv.display()
        );
        return;
    }
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/examples/tiny-denoise");
    let config = std::env::temp_dir().join(format!("wfstudio-run-placed-{}", std::process::id()));
    let mut harness = harness_for(&package, &config);
    harness.state_mut().run.device = wfstudio_runner::Device::Ep {
        ep: "cpu_ep".into(),
        index: 0,
    };
    run_to_the_end(&mut harness);
    let badges = &harness.state().studio.run_overlay.badges;
    let denoiser = &badges["pipeline.workflow.steps[0].steps[0]"];
    let decoder = &badges["pipeline.workflow.steps[1]"];
    assert!(denoiser.ends_with(" ms × 4 · cpu_ep"), "{denoiser}");
    assert!(
        decoder.ends_with(" ms × 1 · cpu_ep, 3 of 3 nodes on CPU"),
        "{decoder}"
    );
    harness.get_by_label("decoder ran on cpu_ep, 3 of 3 nodes on CPU");
    harness.get_by_label("denoiser ran on cpu_ep");
    let overlay = &harness.state().studio.run_overlay;
    let fell_back: Vec<&String> = overlay.fell_back.iter().collect();
    assert_eq!(fell_back, ["pipeline.workflow.steps[1]"]);
    // The inspector tells the selected step's last run in full.
    let decoder = wfstudio_schema::DocPath::parse("pipeline.workflow.steps[1]").unwrap();
    harness.state_mut().studio.reveal(&decoder);
    harness.run_steps(2);
    harness.get_by_label("Last run");
    harness.get_by_label("decoder asked for cpu_ep");
    harness.get_by_label("CPU: 3 nodes (fallback)");
    assert!(harness.query_by_label_contains(" ms in 1 call").is_some());
    let _ = std::fs::remove_dir_all(config);
}

/// Presses Ctrl+Enter and returns the failure the run ends with.
fn run_to_failure(harness: &mut Harness<'static, App>) -> String {
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Enter);
    wait_for_failure(harness)
}

fn wait_for_failure(harness: &mut Harness<'static, App>) -> String {
    wait_until_idle(harness);
    harness
        .state()
        .run
        .failure()
        .unwrap_or_else(|| {
            panic!(
                "the run failed, outcome {:?}",
                harness.state().run.outcome()
            )
        })
        .to_string()
}

fn harness_for(package: &Path, config: &Path) -> Harness<'static, App> {
    let mut studio = Studio::with_config_dir(|| {}, Some(config.to_path_buf()));
    studio.open(package);
    let app = App {
        studio,
        run: RunPanel::default(),
    };
    let mut harness = Harness::builder()
        .with_size(egui::vec2(1400.0, 1000.0))
        .build_ui_state(
            |ui, app: &mut App| {
                app.run.show(ui, &mut app.studio);
                app.studio.show(ui);
            },
            app,
        );
    for _ in 0..400 {
        harness.step();
        if harness.state().studio.settled() && harness.state().studio.doc.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    harness
}

/// Steps the UI until the run in flight ends (at most about 10 s).
fn wait_until_idle(harness: &mut Harness<'static, App>) {
    harness.step();
    for _ in 0..2000 {
        harness.step();
        if !harness.state().run.running() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    harness.run_steps(5);
}

/// Presses Ctrl+Enter and waits for the run to end successfully.
fn run_to_the_end(harness: &mut Harness<'static, App>) {
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Enter);
    wait_until_idle(harness);
    assert_eq!(
        harness.state().run.outcome(),
        Some(true),
        "{:?}",
        harness.state().run.failure()
    );
}

/// Types prompt text into the tokenizer's box, runs, and reads the
/// decoded text; a second prompt reuses the calls the two share, and an
/// unchanged re-run reuses them all, as the canvas badges say.
#[test]
fn prompt_text_runs_and_the_output_reads_as_text_with_reuse_shown() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/examples/tiny-words");
    let config = std::env::temp_dir().join(format!("wfstudio-run-words-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&config);
    let mut harness = harness_for(&package, &config);
    let prompt = || {
        egui_kittest::kittest::By::new()
            .role(egui::accesskit::Role::MultilineTextInput)
            .label("request.input_ids")
    };
    // The tokenizer loads on a background thread; then the box appears.
    for _ in 0..400 {
        harness.step();
        if harness.query(prompt()).is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    harness.get(prompt()).click();
    harness.run_steps(2);
    harness.get(prompt()).type_text("tiny");
    harness.run_steps(2);
    harness.get_by_label("→ 2 ids [1, 7]");
    run_to_the_end(&mut harness);
    harness.get_by_label("tokens (text)");
    harness.get_by_label("model speaks one word at a time .");
    harness.get_by_label("raw ids").click();
    harness.run_steps(2);
    harness.get_by_label("[8, 9, 10, 11, 12, 13, 14, 15, 2]");

    harness.get(prompt()).click();
    harness.run_steps(2);
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness.get(prompt()).type_text("hello");
    harness.run_steps(2);
    run_to_the_end(&mut harness);
    harness.get_by_label("9 of 14 calls reused (same component and inputs as an earlier call)");
    let overlay = &harness.state().studio.run_overlay;
    let body = "pipeline.workflow.steps[0].steps[0]";
    assert!(
        overlay.badges[body].ends_with(" ms × 13 (9 reused)"),
        "{}",
        overlay.badges[body]
    );
    assert!(!overlay.reused.contains(body));

    run_to_the_end(&mut harness);
    harness.get_by_label("14 of 14 calls reused (same component and inputs as an earlier call)");
    let overlay = &harness.state().studio.run_overlay;
    assert_eq!(overlay.badges[body], "reused × 13");
    assert!(overlay.reused.contains(body));
    // Without reuse every call runs again.
    harness.get_by_label("Reuse unchanged results").click();
    harness.run_steps(2);
    run_to_the_end(&mut harness);
    assert!(harness.query_by_label_contains("calls reused").is_none());
    assert!(harness.state().studio.run_overlay.reused.is_empty());
    let _ = std::fs::remove_dir_all(config);
}

/// A text output (what a ComfyUI `PreviewAny` shows: UTF-8 bytes) reads
/// as text after the run.
#[test]
fn a_text_output_reads_as_text() {
    let root = std::env::temp_dir().join(format!("wfstudio-run-text-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let package = root.join("package");
    std::fs::create_dir_all(&package).expect("mkdir");
    let text = "naïve café";
    let contract = serde_json::json!({"dtype": "uint8", "rank": 1, "shape": [text.len()]});
    let document = serde_json::json!({"schema_version": "v1", "pipeline": {"workflow": {
        "manifest": {"capabilities": ["workflow_ssa", "linear_effects", "nested_control_flow", "loop_induction_values", "typed_emit"]},
        "inputs": {"package.text": {"contract": contract, "role": {"kind": "opaque"}, "source": {"kind": "literal"}, "required": false, "default": text.as_bytes()}},
        "outputs": {"text": {"contract": contract, "role": "text", "stage": "pre_adapter"}},
        "components": {},
        "steps": [{"kind": "emit", "value": "package.text", "output": "text", "mode": "replace"}]
    }}});
    std::fs::write(
        package.join("inference_metadata.json"),
        document.to_string(),
    )
    .expect("write");
    let mut harness = harness_for(&package, &root.join("config"));
    run_to_the_end(&mut harness);
    harness.get_by_label("text (text)");
    harness.get_by_label(text);
    let _ = std::fs::remove_dir_all(root);
}
