//! Recipe JSON reading and comparison.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(recipe) = wfstudio_runner::recipe::parse(text) {
        let _ = wfstudio_runner::recipe::compare(&recipe.outputs, &recipe.outputs, recipe.abs, recipe.rel);
    }
});
