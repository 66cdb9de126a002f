//! The real window under a virtual X server: `wfstudio open PATH
//! --screenshot FILE --quit` writes a PNG of the window at the asked size
//! with the graph drawn, and fails with a message for a missing document.

mod support;

use support::xvfb_run;

/// The window's screenshot of `target` (the run must succeed; the PNG has
/// the asked size).
fn window_image(target: &std::path::Path, png: &std::path::Path) -> image::RgbaImage {
    let output = open_with_screenshot(target.to_str().expect("utf-8 path"), png);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        support::exit_under_xvfb(&output),
        Some(0),
        "stderr: {stderr}"
    );
    let image = image::open(png).expect("a PNG was written").to_rgba8();
    assert_eq!(image.dimensions(), (1100, 700));
    image
}

fn open_with_screenshot(target: &str, png: &std::path::Path) -> std::process::Output {
    xvfb_run().expect("checked");
    support::under_xvfb("-screen 0 1280x1024x24")
        .arg(support::wfstudio())
        .args(["open", target, "--screenshot"])
        .arg(png)
        .args(["--quit", "--size", "1100x700"])
        .output()
        .expect("xvfb-run starts")
}

#[test]
fn screenshot_of_the_example_package() {
    if xvfb_run().is_none() {
        return;
    }
    let png = std::env::temp_dir().join(format!("wfstudio-shot-{}.png", std::process::id()));
    let example = support::fixtures().join("examples/tiny-denoise");
    let image = window_image(&example, &png);
    // The loop's denoiser node header (invoke colour) is on screen.
    let invoke_header = image.pixels().filter(|p| p.0[..3] == [60, 90, 150]).count();
    assert!(
        invoke_header > 500,
        "invoke headers drawn: {invoke_header} pixels"
    );
    let _ = std::fs::remove_file(&png);
}

#[test]
fn screenshot_mode_fails_for_a_missing_document() {
    if xvfb_run().is_none() {
        return;
    }
    let png = std::env::temp_dir().join(format!("wfstudio-noshot-{}.png", std::process::id()));
    let output = open_with_screenshot("/nonexistent/package", &png);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        support::exit_under_xvfb(&output),
        Some(1),
        "stderr: {stderr}"
    );
    assert!(
        stderr.contains("Could not open /nonexistent/package"),
        "stderr: {stderr}"
    );
    assert!(!png.exists());
}

#[test]
fn run_in_the_window_shows_the_preview() {
    if xvfb_run().is_none() || !support::runtime_available() {
        return;
    }
    let png = std::env::temp_dir().join(format!("wfstudio-runshot-{}.png", std::process::id()));
    let example = support::fixtures().join("examples/tiny-denoise");
    support::screenshot_after_run(&example, &[], &png, "1100x700");
    let image = image::open(&png).expect("a PNG was written").to_rgba8();
    // The smiley preview: bright yellow face pixels drawn by the run panel.
    let yellow = image
        .pixels()
        .filter(|p| p.0[0] > 200 && p.0[1] > 200 && p.0[2] < 80)
        .count();
    assert!(yellow > 2000, "preview pixels: {yellow}");
    let _ = std::fs::remove_file(&png);
}

#[test]
fn screenshot_of_a_refused_comfyui_graph_shows_nodes_and_the_badge() {
    if xvfb_run().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("wfstudio-comfy-shot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut api: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(support::fixtures().join("comfyui/patterns/controlnet.api.json"))
            .expect("fixture"),
    )
    .expect("JSON");
    api["5"]["inputs"]["scheduler"] = serde_json::json!("AYS SDXL");
    let graph = dir.join("refused.api.json");
    std::fs::write(&graph, api.to_string()).expect("write");
    let png = dir.join("shot.png");
    let image = window_image(&graph, &png);
    let count = |rgb: [u8; 3]| image.pixels().filter(|p| p.0[..3] == rgb).count();
    // ComfyUI node headers, and the refused sampler's red outline and badge.
    assert!(
        count([55, 75, 95]) > 2000,
        "node headers: {}",
        count([55, 75, 95])
    );
    assert!(
        count([230, 70, 60]) > 200,
        "refusal red: {}",
        count([230, 70, 60])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A ComfyUI graph that lowers opens as an unsaved document; the scripted
/// screenshot still closes the window (no "save changes?" prompt).
#[test]
fn screenshot_of_a_lowered_comfyui_graph_quits() {
    if xvfb_run().is_none() {
        return;
    }
    let png = std::env::temp_dir().join(format!("wfstudio-lowered-{}.png", std::process::id()));
    let graph = support::fixtures().join("comfyui/patterns/controlnet.api.json");
    let image = window_image(&graph, &png);
    // The ComfyUI graph's node headers are drawn.
    let headers = image.pixels().filter(|p| p.0[..3] == [55, 75, 95]).count();
    assert!(headers > 500, "node headers drawn: {headers}");
    let _ = std::fs::remove_file(&png);
}

/// `wfstudio open --templates` shows the template browser; the scripted
/// screenshot waits until every template is checked, and a reader (OCR)
/// finds each template's verdict.
#[test]
fn screenshot_of_the_template_browser_shows_each_verdict() {
    if xvfb_run().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("wfstudio-templates-shot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::copy(
        support::fixtures().join("comfyui/txt2img-sd15.api.json"),
        dir.join("sd15_txt2img.json"),
    )
    .expect("copy");
    let cloud = serde_json::json!({
        "1": {"class_type": "LoadImage", "inputs": {"image": "a.png"}},
        "2": {"class_type": "GeminiImage2Node", "inputs": {"images": ["1", 0]}},
        "3": {"class_type": "SaveImage", "inputs": {"images": ["2", 0]}}
    });
    std::fs::write(dir.join("gemini_edit.json"), cloud.to_string()).expect("graph");
    let index = serde_json::json!([{"title": "Image", "templates": [
        {"name": "sd15_txt2img", "title": "Text to image", "description": "A picture from a prompt.", "models": ["SD1.5"]},
        {"name": "gemini_edit", "title": "Edit with Gemini", "description": "An edit in the cloud.", "models": ["Nano Banana"]}
    ]}]);
    std::fs::write(dir.join("index.json"), index.to_string()).expect("index");
    let png = dir.join("shot.png");
    let output = support::under_xvfb("-screen 0 1400x900x24")
        .env("WFSTUDIO_TEMPLATES", &dir)
        .arg(support::wfstudio())
        .args(["open", "--templates", "--screenshot"])
        .arg(&png)
        .args(["--quit", "--size", "1400x900"])
        .output()
        .expect("xvfb-run starts");
    assert_eq!(
        support::exit_under_xvfb(&output),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    if let Some(text) = support::ocr(&png) {
        for words in [
            "Edit with Gemini",
            "lowers into a workflow",
            "runs on the Google Gemini service",
            "Models: SD1.5",
        ] {
            assert!(text.contains(words), "OCR finds '{words}' in:\n{text}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
