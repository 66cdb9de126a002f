//! What the lowered document fixes about a stand-in's extents: its
//! stage's latent channels, scale and frames, so that each stage's models
//! make latents of their own kind (a Lotus depth stage's 4 channels ahead
//! of SD3's 16).

use crate::comfyui::synth::decoded_frames;
use crate::comfyui::synth::standin::KnownExtents;
use serde_json::Value;

/// Extents the lowered document fixes for stand-in `component`, from the
/// parameters of its stage's `latent_row_shape` policy (see
/// [`stage_row_shape`]; the first stage's where it has none of its own,
/// as a stage sampling an earlier one's latent): the latent's
/// `channels`, its `scale` (pixels per
/// latent cell) and, for a video, the decoded `frames` (its `length`, less what does
/// not fill a latent frame), the sampled latent's `latent_frames` (what a
/// video encoder makes of `length` frames, and a VACE reference's
/// `leading_frames` ahead of them) and the `temporal_scale` a video
/// encoder's stand-in compresses its input's frames by; or the
/// `latent_frames` and `decoded_frames` the document states (MiniMax
/// H3's), and the `decoded_samples` of an audio part.
pub(super) fn known_extents(document: &Value, component: &str) -> KnownExtents {
    let mut known = KnownExtents::default();
    let row_shape = stage_row_shape(document, component).unwrap_or("latent_row_shape");
    let parameter = |key: &str| {
        document
            .pointer("/pipeline/workflow/components")
            .and_then(|c| c.get(row_shape))
            .and_then(|c| c.pointer(&format!("/contract/parameters/{key}")))
            .and_then(Value::as_i64)
            .filter(|n| *n > 0)
    };
    if let Some(channels) = parameter("channels") {
        known.named.insert("channels".into(), channels);
    }
    if let (Some(length), Some(temporal)) = (parameter("length"), parameter("temporal_scale")) {
        known
            .named
            .insert("frames".into(), decoded_frames(length, temporal));
        let leading = parameter("leading_frames").unwrap_or(0);
        known.named.insert(
            "latent_frames".into(),
            (length - 1) / temporal + 1 + leading,
        );
        known.temporal_scale = Some(temporal);
    }
    // A latent whose frames the graph fixes apart from a temporal scale
    // (MiniMax H3's, on its 17k + 5 grid), and the samples its audio
    // part decodes into.
    if let (Some(latent), Some(decoded)) = (parameter("latent_frames"), parameter("decoded_frames"))
    {
        known.named.insert("latent_frames".into(), latent);
        known.named.insert("frames".into(), decoded);
    }
    if let Some(samples) = parameter("decoded_samples") {
        known.named.insert("samples".into(), samples);
    }
    if let Some(scale) = parameter("scale") {
        known.latent_scale = scale;
    }
    known
}

/// The `latent_row_shape` policy of the top-level step that first invokes
/// `component` (a later stage's loop holds its own, named apart:
/// `stage2_latent_row_shape`), if that step has one stating the latent's
/// channels (a stage of an earlier stage's latent takes its shape).
fn stage_row_shape<'d>(document: &'d Value, component: &str) -> Option<&'d str> {
    let steps = document.pointer("/pipeline/workflow/steps")?.as_array()?;
    let step = steps
        .iter()
        .find(|step| invoked(step, &|c| c == component).is_some())?;
    let row_shape = invoked(step, &|c| c.ends_with("latent_row_shape"))?;
    let components = document.pointer("/pipeline/workflow/components")?;
    components
        .get(row_shape)?
        .pointer("/contract/parameters/channels")
        .is_some()
        .then_some(row_shape)
}

/// The first component `step` (or a step nested in it) invokes that
/// `wanted` accepts.
fn invoked<'d>(step: &'d Value, wanted: &dyn Fn(&str) -> bool) -> Option<&'d str> {
    match step {
        Value::Object(fields) => match fields.get("component").and_then(Value::as_str) {
            Some(name) if wanted(name) => Some(name),
            _ => fields.values().find_map(|v| invoked(v, wanted)),
        },
        Value::Array(items) => items.iter().find_map(|v| invoked(v, wanted)),
        _ => None,
    }
}
