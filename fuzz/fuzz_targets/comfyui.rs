//! ComfyUI readers (JSON, PNG chunks), UI -> API conversion and lowering.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wfstudio_core::comfyui::{NodeDefs, lower, read, ui_to_api};

fuzz_target!(|data: &[u8]| {
    let Ok(found) = read(data) else { return };
    if let Some(ui) = &found.ui {
        let (graph, _) = ui_to_api(ui, &NodeDefs::default());
        let api = wfstudio_core::comfyui::to_api::api_json(&graph);
        let _ = lower::lower(&api);
    }
    if let Some(api) = &found.api {
        let _ = lower::lower(api);
    }
});
