//! The ComfyUI import in the studio, driven as a user would (egui_kittest):
//! drop a graph, see it beside its lowered workflow, follow the links from
//! a ComfyUI node to its steps and back, see refusals as badges, lower for
//! a package with adapters, and save as a package.

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use std::path::{Path, PathBuf};
use wfstudio_editor::Studio;

mod support;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wfstudio-comfy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn harness() -> Harness<'static, Studio> {
    let config = temp_dir("config");
    let studio = Studio::with_config_dir(|| {}, Some(config));
    Harness::builder()
        .with_size(egui::vec2(1600.0, 900.0))
        .build_ui_state(|ui, studio: &mut Studio| studio.show(ui), studio)
}

/// Steps frames until the import (and any lowered document's analysis)
/// has arrived.
fn settle(harness: &mut Harness<'static, Studio>) {
    for _ in 0..400 {
        harness.step();
        if harness.state().settled() && harness.state().comfy.is_some() {
            harness.run_steps(3);
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("the import did not settle: {:?}", harness.state().status);
}

/// Drops `path` onto the window and waits for the import.
fn drop_file(harness: &mut Harness<'static, Studio>, path: &Path) {
    support::drop_file(harness, path);
    settle(harness);
}

fn selection(harness: &Harness<'static, Studio>) -> Vec<String> {
    harness
        .state()
        .selection
        .iter()
        .map(|p| p.to_string())
        .collect()
}

#[test]
fn a_dropped_graph_sits_beside_its_lowered_workflow_with_links_both_ways() {
    let mut harness = harness();
    drop_file(
        &mut harness,
        &fixtures().join("comfyui/patterns/img2img.api.json"),
    );
    let studio = harness.state();
    let comfy = studio.comfy.as_ref().expect("the ComfyUI pane");
    assert!(comfy.refusals.is_empty());
    assert!(!comfy.view.drawn_in_comfyui, "an API prompt is laid out");
    let doc = studio.doc.as_ref().expect("the lowered document");
    assert!(doc.history.is_dirty(), "an import is unsaved");
    assert!(
        doc.path
            .ends_with("img2img-package/inference_metadata.yaml")
    );
    harness.get_by_label("Save as package…");
    harness.get_by_label("denoise 0.5: sampling starts at step 3 of 5 (request.denoise)");

    // A lowered step highlights the ComfyUI nodes it came from.
    harness.get_by_label("vae_decoder node").click_accesskit();
    harness.run_steps(3);
    assert_eq!(selection(&harness), ["pipeline.workflow.steps[1]"]);
    let comfy = harness.state().comfy.as_ref().expect("pane");
    let ids: Vec<&str> = comfy
        .highlighted(&harness.state().selection)
        .into_iter()
        .map(|n| comfy.view.nodes[n].id.as_str())
        .collect();
    assert_eq!(ids, ["1", "6"], "VAEDecode and the checkpoint's VAE");

    // A ComfyUI node selects the steps it became.
    harness
        .get_by_label("ComfyUI node 4 VAEEncode")
        .click_accesskit();
    harness.run_steps(3);
    assert_eq!(selection(&harness), ["pipeline.workflow.steps[0].setup[7]"]);
    // Save as package writes canonical YAML that reads back.
    let package = temp_dir("saved").join("castle");
    harness.state_mut().save_as_package(&package);
    harness.run_steps(2);
    let file = package.join("inference_metadata.yaml");
    let text = std::fs::read_to_string(&file).expect("saved");
    let loaded = wfstudio_schema::parse_text(
        &text,
        wfstudio_schema::Format::Yaml,
        &wfstudio_schema::Limits::default(),
    )
    .expect("parses");
    let workflow = &loaded
        .document
        .pipeline
        .as_ref()
        .expect("pipeline")
        .workflow;
    assert!(
        workflow
            .inputs
            .as_ref()
            .is_some_and(|i| i.contains_key("request.denoise"))
    );
    let doc = harness.state().doc.as_ref().expect("doc");
    assert_eq!(doc.path, file);
    assert!(!doc.history.is_dirty());
}

#[test]
fn a_refused_graph_shows_its_badge_and_reason() {
    let dir = temp_dir("refused");
    let mut api: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("comfyui/patterns/img2img.api.json"))
            .expect("fixture"),
    )
    .expect("JSON");
    api["5"]["inputs"]["sampler_name"] = serde_json::json!("euler_dy");
    let path = dir.join("custom-sampler.api.json");
    std::fs::write(&path, api.to_string()).expect("write");
    let mut harness = harness();
    drop_file(&mut harness, &path);
    assert!(harness.state().doc.is_none(), "nothing is lowered");
    harness.get_by_label("ComfyUI node 5 KSampler refused");
    let reason = format!(
        "node 5 (KSampler) input `sampler_name` uses sampler 'euler_dy', which is not one of ComfyUI's core samplers (a custom node adds it) — choose one of: {}",
        wfstudio_core::comfyui::lower::sampler_names().join(", ")
    );
    harness.get_by_label(&reason).click_accesskit();
    harness.run_steps(2);
    let comfy = harness.state().comfy.as_ref().expect("pane");
    assert_eq!(
        comfy.selected.map(|n| comfy.view.nodes[n].id.as_str()),
        Some("5")
    );
    let status = harness.state().status.as_ref().expect("status");
    assert!(
        status.error && status.text.contains("refused"),
        "{status:?}"
    );
}

/// A LoRA graph lowers on its own with the LoRA merged into the new
/// package's models (a note says so); choosing a package with adapters
/// routes it through them instead.
#[test]
fn a_lora_graph_lowers_merged_and_routes_through_a_package_with_adapters() {
    let target = temp_dir("lora-target");
    std::fs::copy(
        fixtures().join("comfyui/lora-target/inference_metadata.yaml"),
        target.join("inference_metadata.yaml"),
    )
    .expect("copy");
    let mut harness = harness();
    drop_file(
        &mut harness,
        &fixtures().join("comfyui/patterns/lora.api.json"),
    );
    let merged = harness.state().doc.as_ref().expect("lowered");
    assert!(merged.history.document().adapters.is_none());
    harness.get_by_label(
        "`denoiser` is node 1's weights with LoRA 'styles/watercolor.safetensors' (node 12) at strength 0.8: export it with these merged",
    );
    // The lowered workflow is unsaved, so lowering again asks first.
    harness.state_mut().lower_for_package(&target);
    harness.run_steps(2);
    harness.get_by_label("Discard and lower").click();
    harness.run_steps(2);
    settle(&mut harness);
    let studio = harness.state();
    let comfy = studio.comfy.as_ref().expect("pane");
    assert!(comfy.refusals.is_empty(), "{:?}", comfy.refusals);
    assert_eq!(comfy.target.as_deref(), Some(target.as_path()));
    let doc = studio.doc.as_ref().expect("lowered");
    assert_eq!(doc.path, target.join("inference_metadata.yaml"));
    assert!(doc.history.document().adapters.is_some());
    harness.get_by_label(
        "LoRA 'watercolor' is adapter 0 at scale 0.8: pass it in the adapter selection inputs",
    );
}

#[test]
fn a_png_with_an_embedded_graph_opens_as_an_import() {
    let mut harness = harness();
    drop_file(&mut harness, &fixtures().join("comfyui/txt2img-sd15.png"));
    let studio = harness.state();
    let comfy = studio.comfy.as_ref().expect("pane");
    assert_eq!(comfy.view.nodes.len(), 7);
    assert!(studio.doc.is_some());
    harness.get_by_label("ComfyUI node 14 KSampler");
}

#[test]
fn edits_turn_the_links_off_and_save_as_package_never_overwrites() {
    let mut harness = harness();
    drop_file(
        &mut harness,
        &fixtures().join("comfyui/patterns/img2img.api.json"),
    );
    // A folder that holds another package's document is refused.
    let occupied = temp_dir("occupied");
    std::fs::write(occupied.join("inference_metadata.json"), "{}").expect("write");
    harness.state_mut().save_as_package(&occupied);
    harness.run_steps(2);
    let status = harness.state().status.clone().expect("status");
    assert!(
        status.error && status.text.contains("already holds"),
        "{status:?}"
    );
    assert!(!occupied.join("inference_metadata.yaml").exists());

    // After an edit the step paths may shift: the links are turned off.
    let edit = wfstudio_core::edit::Command::Set {
        path: wfstudio_schema::DocPath::parse(
            "pipeline.workflow.inputs[\"request.denoise\"].default",
        )
        .expect("path"),
        value: serde_json::json!(0.25),
    };
    assert!(
        harness.state_mut().apply(&edit),
        "{:?}",
        harness.state().status
    );
    harness.run_steps(3);
    harness.get_by_label(
        "Edited since the import: the links between ComfyUI nodes and steps are off.",
    );
    harness
        .get_by_label("ComfyUI node 4 VAEEncode")
        .click_accesskit();
    harness.run_steps(2);
    assert!(harness.state().selection.is_empty(), "no steps selected");

    // Lowering again asks what to do with the edit.
    let relower = temp_dir("relower");
    harness.state_mut().lower_for_package(&relower);
    harness.run_steps(2);
    harness.get_by_label("Discard and lower").click();
    harness.run_steps(2);
    settle(&mut harness);
    let doc = harness.state().doc.as_ref().expect("lowered again");
    assert_eq!(doc.path, relower.join("inference_metadata.yaml"));
}

/// Steps frames until `done` holds (the worker writes and opens packages).
fn wait_for(harness: &mut Harness<'static, Studio>, done: impl Fn(&Studio) -> bool) {
    for _ in 0..1000 {
        harness.step();
        if done(harness.state()) && harness.state().settled() {
            harness.run_steps(2);
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("not done: {:?}", harness.state().status);
}

#[test]
fn save_as_package_writes_a_runnable_package_with_the_chosen_models() {
    let mut harness = harness();
    drop_file(
        &mut harness,
        &fixtures().join("comfyui/patterns/img2img.api.json"),
    );
    harness.get_by_label("Save as package…").click();
    harness.run_steps(2);
    harness.get_by_label("Stand-in models (tiny, seeded, with the declared ports)");
    harness.get_by_label("From a models folder (ports checked against the workflow)");
    harness.get_by_label("The workflow document only");
    // The folder comes from a native dialog; set it as the dialog would.
    let out = temp_dir("written").join("img2img");
    harness
        .state_mut()
        .package_dialog
        .as_mut()
        .expect("the dialog is open")
        .out = Some(out.clone());
    harness.run_steps(2);
    harness.get_by_label("Write package").click();
    wait_for(&mut harness, |s| {
        s.doc
            .as_ref()
            .is_some_and(|d| d.path == out.join("inference_metadata.yaml"))
    });
    assert!(harness.state().package_dialog.is_none());
    for file in [
        "inference_metadata.yaml",
        "policies/solver_step.onnx",
        "vae_encoder/model.onnx",
        "tokenizer.json",
        "recipes/default.json",
    ] {
        assert!(out.join(file).is_file(), "{file}");
    }
    let doc = harness
        .state()
        .doc
        .as_ref()
        .expect("the written package is open");
    assert!(!doc.history.is_dirty());
    assert!(
        harness.state().comfy.is_none(),
        "a saved package opens as itself"
    );
    let analysis = doc.analysis.as_ref().expect("analysed");
    assert!(
        analysis.report.diagnostics.is_empty(),
        "{:?}",
        analysis.report.diagnostics
    );
}

#[test]
fn run_with_stand_ins_writes_a_scratch_package_keeps_the_pane_and_asks_for_a_run() {
    let mut harness = harness();
    drop_file(
        &mut harness,
        &fixtures().join("comfyui/txt2img-sd15.api.json"),
    );
    harness.get_by_label("▶ Run with stand-ins").click();
    wait_for(&mut harness, |s| {
        s.doc.as_ref().is_some_and(|d| {
            d.path
                .ends_with("comfyui-runs/txt2img-sd15/inference_metadata.yaml")
        })
    });
    let studio = harness.state_mut();
    assert!(
        studio.comfy.is_some(),
        "the ComfyUI pane stays beside the run"
    );
    assert!(
        studio.take_run_request(),
        "the run panel is asked to run it"
    );
    assert!(!studio.take_run_request(), "once");
    let status = studio.status.clone().expect("status");
    assert!(
        status.text.starts_with("Opened") || status.text.starts_with("Wrote the package"),
        "{status:?}"
    );
}

#[test]
fn the_template_browser_shows_each_outcome_and_opens_a_template_beside_its_workflow() {
    let dir = temp_dir("templates");
    std::fs::copy(
        fixtures().join("comfyui/txt2img-sd15.api.json"),
        dir.join("sd15_txt2img.json"),
    )
    .expect("copy");
    let cloud = serde_json::json!({
        "1": {"class_type": "LoadImage", "inputs": {"image": "a.png"}},
        "2": {"class_type": "GeminiImage2Node", "inputs": {"images": ["1", 0], "prompt": "a hat"}},
        "3": {"class_type": "SaveImage", "inputs": {"images": ["2", 0]}}
    });
    for name in ["gemini_edit", "api_gemini"] {
        std::fs::write(dir.join(format!("{name}.json")), cloud.to_string()).expect("graph");
    }
    let index = serde_json::json!([{"title": "Image", "templates": [
        {"name": "sd15_txt2img", "title": "Text to image (SD 1.5)",
         "description": "A picture from a prompt.", "models": ["SD1.5"], "mediaType": "image"},
        {"name": "gemini_edit", "title": "Edit with Gemini", "description": "", "mediaType": "image"},
        {"name": "api_gemini", "title": "Gemini in the cloud", "description": "", "mediaType": "image"}
    ]}]);
    std::fs::write(dir.join("index.json"), index.to_string()).expect("index");
    let mut harness = harness();
    harness.state_mut().templates.dir = Some(dir);
    harness.state_mut().templates.open = true;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while harness.state().templates.progress() != (3, 3) && std::time::Instant::now() < deadline {
        harness.step();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    harness.run_steps(2);
    assert_eq!(harness.state().templates.progress(), (3, 3));
    harness.get_by_label("Image (1 of 2 lower)");
    harness.get_by_label("✔ lowers into a workflow");
    harness.get_by_label("Models: SD1.5");
    harness.get_by_label("refused: cloud node: runs on the Google Gemini service");
    harness.get_by_label(
        "node 2 (GeminiImage2Node) is a cloud node: it runs on the Google Gemini service, which a local package cannot call",
    );
    assert!(
        harness.query_by_label("Gemini in the cloud").is_none(),
        "cloud templates are hidden until asked for"
    );
    harness
        .get_all_by_label("Open")
        .next()
        .expect("an Open button")
        .click();
    settle(&mut harness);
    let studio = harness.state();
    assert!(!studio.templates.open, "the browser closes on Open");
    let comfy = studio
        .comfy
        .as_ref()
        .expect("the template beside its workflow");
    assert!(comfy.refusals.is_empty());
    assert!(studio.doc.is_some(), "the lowered workflow is open");
}
