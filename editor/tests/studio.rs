//! The studio driven as a user would (egui_kittest, no display): open a
//! package, add a node from the palette, connect it, undo, rename a value,
//! save, and check the saved file; open a corpus document and find its nodes.

use egui::accesskit::Role;
use egui::{Key, Modifiers};
use egui_kittest::Harness;
use egui_kittest::kittest::{By, Queryable};
use std::path::{Path, PathBuf};
use wfstudio_editor::Studio;

mod support;
use support::drop_file;

fn harness(studio: Studio) -> Harness<'static, Studio> {
    Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .build_ui_state(|ui, studio: &mut Studio| studio.show(ui), studio)
}

/// Steps frames until the worker has opened and analyzed the document.
fn settle(harness: &mut Harness<'static, Studio>) {
    for _ in 0..400 {
        harness.step();
        if harness.state().settled() && harness.state().doc.is_some() {
            harness.step();
            harness.step();
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("the studio did not settle: {:?}", harness.state().status);
}

fn temp_package(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wfstudio-kittest-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/examples/tiny-denoise/inference_metadata.yaml");
    std::fs::copy(source, dir.join("inference_metadata.yaml")).expect("copy fixture");
    dir
}

fn studio() -> Studio {
    // Keep the user's recent-files list out of the tests.
    let config =
        std::env::temp_dir().join(format!("wfstudio-kittest-config-{}", std::process::id()));
    // SAFETY: set before any thread of this test reads the environment.
    unsafe { std::env::set_var("WFSTUDIO_CONFIG_DIR", &config) };
    Studio::new(|| {})
}

#[test]
fn add_connect_undo_rename_and_save() {
    let dir = temp_package("edit");
    let mut studio = studio();
    studio.open(&dir);
    let mut harness = harness(studio);
    settle(&mut harness);

    // Select a node on the canvas: the inspector shows it.
    harness.get_by_label("decoder node").click_accesskit();
    harness.run_steps(2);
    assert_eq!(harness.state().selection.len(), 1);
    assert_eq!(
        harness.state().selection[0].to_string(),
        "pipeline.workflow.steps[1]"
    );
    harness.get_by_label("invoke decoder");

    // Add an invoke of `decoder` from the palette: it lands after the
    // selected step and is selected, its input unbound.
    harness.get_by_label("Edit").click();
    harness.run_steps(2);
    harness.get_by_label("Add invoke…").click();
    harness.run_steps(2);
    harness
        .get_by_role_and_label(Role::Button, "invoke decoder")
        .click();
    settle(&mut harness);
    assert_eq!(
        harness.state().selection[0].to_string(),
        "pipeline.workflow.steps[2]"
    );
    assert!(
        harness
            .state()
            .status
            .as_ref()
            .is_some_and(|s| s.text == "Add invoke decoder")
    );

    // Connect its `latent` port to the `latent` value with the binding picker.
    harness.get_by_value("(unbound)").click();
    harness.run_steps(2);
    harness
        .get_by_role_and_label(Role::Button, "latent")
        .click();
    settle(&mut harness);
    let saved_yaml = |h: &Harness<'static, Studio>| {
        wfstudio_schema::save::to_yaml(
            h.state().doc.as_ref().expect("doc").history.document(),
            None,
        )
    };
    assert!(
        saved_yaml(&harness).contains("- kind: invoke\n      component: decoder\n      inputs:\n        latent: latent\n      outputs:\n        image: decoder_image\n"),
        "{}",
        saved_yaml(&harness)
    );

    // Undo the connection.
    harness.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    settle(&mut harness);
    assert!(
        saved_yaml(&harness)
            .contains("      component: decoder\n      outputs:\n        image: decoder_image\n")
    );
    assert!(
        harness
            .state()
            .status
            .as_ref()
            .is_some_and(|s| s.text == "Undid: Connect latent -> latent")
    );

    // Rename the new invoke's output value in the inspector.
    let rename_box = || By::new().role(Role::TextInput).value("decoder_image");
    harness.get(rename_box()).focus();
    harness.key_press_modifiers(Modifiers::COMMAND, Key::A);
    harness.get(rename_box()).type_text("preview");
    harness.key_press(Key::Enter);
    settle(&mut harness);
    assert!(
        saved_yaml(&harness).contains("image: preview\n"),
        "{}",
        saved_yaml(&harness)
    );

    // Add a state cell from the Add menu: it is selected for editing.
    harness.get_by_label("Edit").click();
    harness.run_steps(2);
    harness.get_by_label("Add ⏵").hover();
    harness.run_steps(2);
    harness.get_by_label("state cell").click();
    settle(&mut harness);
    assert_eq!(
        harness.state().selection[0].to_string(),
        "pipeline.workflow.state.cell"
    );

    // Save, and read the file back.
    harness.key_press_modifiers(Modifiers::COMMAND, Key::S);
    harness.run_steps(2);
    let file = dir.join("inference_metadata.yaml");
    let text = std::fs::read_to_string(&file).expect("saved");
    let loaded =
        wfstudio_schema::parse_text(&text, wfstudio_schema::Format::Yaml, &Default::default())
            .expect("saved file parses");
    let wf = loaded.document.pipeline.expect("pipeline").workflow;
    let cells: Vec<&String> = wf.state.as_ref().expect("state").keys().collect();
    assert_eq!(cells, ["latent", "cell"]);
    let steps = &wf.steps;
    assert_eq!(steps.len(), 4);
    match &steps[2] {
        wfstudio_schema::types::steps::Step::Invoke(invoke) => {
            assert_eq!(invoke.component, "decoder");
            assert_eq!(invoke.inputs, None, "the connection was undone");
            assert_eq!(
                invoke
                    .outputs
                    .as_ref()
                    .and_then(|o| o.get("image"))
                    .map(String::as_str),
                Some("preview")
            );
        }
        other => panic!("expected the added invoke, got {other:?}"),
    }
    assert!(
        text.starts_with("# Tiny denoise"),
        "the leading comment block is kept"
    );
    assert!(
        dir.join("inference_metadata.yaml.bak").exists(),
        "the previous version is kept"
    );
    assert!(
        !harness
            .state()
            .doc
            .as_ref()
            .expect("doc")
            .history
            .is_dirty()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn opens_a_corpus_document_and_shows_its_nodes() {
    let shared = std::env::var_os("WFSTUDIO_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let package = shared.join("corpus/packages/comfyui_txt2img_sd15");
    if !package.exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the shared corpus is missing under CI"
        );
        eprintln!("skipped: no shared corpus at {}", shared.display());
        return;
    }
    let mut studio = studio();
    studio.open(&package);
    let mut harness = harness(studio);
    settle(&mut harness);
    let analysis = harness
        .state()
        .doc
        .as_ref()
        .and_then(|d| d.analysis.as_ref())
        .expect("analysed");
    assert_eq!(
        analysis.report.diagnostics.len(),
        0,
        "{:?}",
        analysis.report.diagnostics
    );
    let invokes: Vec<String> = analysis
        .graph
        .nodes
        .iter()
        .filter(|n| matches!(n.kind, wfstudio_core::graph::NodeKind::Invoke { .. }))
        .map(|n| n.label.clone())
        .collect();
    assert!(!invokes.is_empty());
    for label in &invokes {
        assert!(
            !harness
                .query_all_by_label(&format!("{label} node"))
                .collect::<Vec<_>>()
                .is_empty(),
            "node {label} is on the fitted canvas"
        );
    }
    harness.get_by_label("0 errors, 0 warnings");
}

#[test]
fn inspector_fields_edit_the_selected_item() {
    let dir = temp_package("fields");
    let mut studio = studio();
    studio.open(&dir);
    let mut harness = harness(studio);
    settle(&mut harness);
    let input = |h: &Harness<'static, Studio>| {
        let doc = h.state().doc.as_ref().expect("doc").history.document();
        let wf = &doc.pipeline.as_ref().expect("pipeline").workflow;
        serde_json::to_value(&wf.inputs.as_ref().expect("inputs")["request.steps"]).expect("json")
    };

    harness.get_by_label("request.steps node").click_accesskit();
    harness.run_steps(2);
    assert_eq!(
        harness.state().selection[0].to_string(),
        "pipeline.workflow.inputs[\"request.steps\"]"
    );

    // A number: typed, committed with Enter, kept a number.
    let default_box = || By::new().role(Role::TextInput).value("4");
    harness.get(default_box()).focus();
    harness.key_press_modifiers(Modifiers::COMMAND, Key::A);
    harness.get(default_box()).type_text("6");
    harness.key_press(Key::Enter);
    settle(&mut harness);
    assert_eq!(input(&harness)["default"], 6);
    assert!(
        harness
            .state()
            .status
            .as_ref()
            .is_some_and(|s| s.text == "Edit pipeline.workflow.inputs[\"request.steps\"].default"),
        "{:?}",
        harness.state().status
    );

    // A refused number leaves the document alone and says why.
    let six = || By::new().role(Role::TextInput).value("6");
    harness.get(six()).focus();
    harness.key_press_modifiers(Modifiers::COMMAND, Key::A);
    harness.get(six()).type_text("six");
    harness.key_press(Key::Enter);
    harness.run_steps(2);
    harness.get_by_label("`six` is not a number");
    assert_eq!(input(&harness)["default"], 6);

    // A boolean: the `required` checkbox.
    harness
        .get_by_role_and_label(Role::CheckBox, "required")
        .click();
    settle(&mut harness);
    assert_eq!(input(&harness)["required"], true);

    // The dtype picker.
    harness.get_by_value("int64").click();
    harness.run_steps(2);
    harness
        .get_by_role_and_label(Role::Button, "int32")
        .click_accesskit();
    settle(&mut harness);
    assert_eq!(input(&harness)["contract"]["dtype"], "int32");

    // Each was one undoable edit: two undos leave the first.
    harness.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    harness.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    settle(&mut harness);
    assert_eq!(input(&harness)["default"], 6);
    assert_eq!(input(&harness)["contract"]["dtype"], "int64");
    assert_eq!(input(&harness)["required"], false);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A primary-button drag over empty canvas with `modifiers` held, from
/// `from` to `to` (screen points).
fn drag_box(
    harness: &mut Harness<'static, Studio>,
    modifiers: Modifiers,
    from: egui::Pos2,
    to: egui::Pos2,
) {
    let button = |pos, pressed| egui::Event::PointerButton {
        pos,
        button: egui::PointerButton::Primary,
        pressed,
        modifiers,
    };
    harness.event(egui::Event::ModifiersChanged(modifiers));
    harness.hover_at(from);
    harness.step();
    harness.event(button(from, true));
    harness.step();
    for t in [0.25, 0.5, 0.75, 1.0] {
        harness.hover_at(from + (to - from) * t);
        harness.step();
    }
    harness.event(button(to, false));
    harness.step();
    harness.event(egui::Event::ModifiersChanged(Modifiers::NONE));
    harness.run_steps(2);
}

#[test]
fn box_select_with_ctrl_and_shift_drag() {
    let dir = temp_package("box");
    let mut studio = studio();
    studio.open(&dir);
    let mut harness = harness(studio);
    settle(&mut harness);
    // Accessibility bounds are in canvas coordinates; the canvas maps them.
    let on_screen = |h: &Harness<'static, Studio>, label: &str| {
        h.state().canvas().to_screen(h.get_by_label(label).rect())
    };
    let decoder = on_screen(&harness, "decoder node");
    let emit = on_screen(&harness, "emit image (replace) node");
    let output = on_screen(&harness, "image node");
    let selection = |h: &Harness<'static, Studio>| -> Vec<String> {
        h.state()
            .selection
            .iter()
            .map(ToString::to_string)
            .collect()
    };

    // Ctrl + drag from empty canvas above the decoder to just past the emit.
    let from = decoder.left_top() - egui::vec2(6.0, 24.0);
    let to = egui::pos2((emit.right() + output.left()) / 2.0, emit.bottom());
    let view = harness.state().canvas().scene_rect;
    drag_box(&mut harness, Modifiers::COMMAND, from, to);
    assert_eq!(
        selection(&harness),
        ["pipeline.workflow.steps[1]", "pipeline.workflow.steps[2]"]
    );

    // Shift + drag adds the output node and keeps the rest.
    let from = output.left_top() - egui::vec2(4.0, 24.0);
    drag_box(&mut harness, Modifiers::SHIFT, from, output.center());
    assert_eq!(
        selection(&harness),
        [
            "pipeline.workflow.steps[1]",
            "pipeline.workflow.steps[2]",
            "pipeline.workflow.outputs.image"
        ]
    );
    assert_eq!(
        harness.state().canvas().scene_rect,
        view,
        "a box drag does not pan the canvas"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dropping_a_package_opens_it_and_asks_before_dropping_edits() {
    let first = temp_package("drop-a");
    let second = temp_package("drop-b");
    let mut harness = harness(studio());
    harness.run_steps(2);
    let open_file = |h: &Harness<'static, Studio>| h.state().doc.as_ref().map(|d| d.path.clone());

    drop_file(&mut harness, &first);
    settle(&mut harness);
    assert_eq!(
        open_file(&harness),
        Some(first.join("inference_metadata.yaml"))
    );

    // With an unsaved edit, a drop asks first; Cancel keeps everything.
    assert!(
        harness
            .state_mut()
            .apply(&wfstudio_core::edit::Command::RenameValue {
                from: "decoded".into(),
                to: "picture".into(),
            })
    );
    harness.run_steps(2);
    drop_file(&mut harness, &second);
    harness.get_by_label(&format!(
        "Save the changes to {} before opening {}?",
        first.join("inference_metadata.yaml").display(),
        second.display()
    ));
    harness.get_by_label("Cancel").click();
    harness.run_steps(3);
    assert_eq!(
        open_file(&harness),
        Some(first.join("inference_metadata.yaml"))
    );
    assert!(
        harness
            .state()
            .doc
            .as_ref()
            .expect("doc")
            .history
            .is_dirty()
    );

    // "Save and open" writes the edit, then opens the dropped package.
    drop_file(&mut harness, &second);
    harness.get_by_label("Save and open").click();
    harness.run_steps(2);
    settle(&mut harness);
    assert_eq!(
        open_file(&harness),
        Some(second.join("inference_metadata.yaml"))
    );
    let saved = std::fs::read_to_string(first.join("inference_metadata.yaml")).expect("saved");
    assert!(saved.contains("value: picture"), "{saved}");
    for dir in [first, second] {
        let _ = std::fs::remove_dir_all(dir);
    }
}
