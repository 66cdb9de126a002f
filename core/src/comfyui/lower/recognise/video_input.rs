//! Loaded videos: a `LoadVideo` taken apart by `GetVideoComponents`,
//! whose frames (output 0) are a workflow input that a video sink shows
//! (maybe through an upscale model and a resize), whose frame rate
//! (output 2) may set the sink's, and whose sound track (output 1) the
//! package does not carry: it reads frames only (see the runner's video
//! inputs), so a sink that adds that track makes a silent video, as a
//! note says.

use super::super::graph::Graph;
use crate::comfyui::lower::Refusal;

/// ComfyUI's node that takes a video apart.
pub(super) const COMPONENTS: &str = "GetVideoComponents";

/// ComfyUI's video loader.
const LOADER: &str = "LoadVideo";

/// What each output of `GetVideoComponents` gives, for messages.
const OUTPUTS: [&str; 3] = ["frames", "sound track", "frame rate"];

/// The `LoadVideo` whose sound track `CreateVideo` node `create` adds
/// (its `audio` from a `GetVideoComponents`), if it adds one so.
pub(super) fn sound_track(g: &Graph<'_>, create: &str) -> Result<Option<String>, Refusal> {
    if !g.has(create, "audio") {
        return Ok(None);
    }
    let (source, slot) = g.source(create, "audio")?;
    if g.class(&source) != COMPONENTS {
        return Ok(None);
    }
    loader(g, &source, ((create, "audio"), slot, 1)).map(Some)
}

/// The `LoadVideo` whose video `GetVideoComponents` node `node` takes
/// apart, where input `from` reads its output `slot`, which must be
/// `wanted` (0: frames, 1: sound, 2: frame rate).
pub(super) fn loader(
    g: &Graph<'_>,
    node: &str,
    (from, slot, wanted): ((&str, &str), i64, usize),
) -> Result<String, Refusal> {
    if usize::try_from(slot) != Ok(wanted) {
        let gives = usize::try_from(slot)
            .ok()
            .and_then(|slot| OUTPUTS.get(slot))
            .copied()
            .unwrap_or("nothing");
        return Err(g.refuse(
            from.0,
            Some(from.1),
            format!(
                "reads output {slot} of node {node} ({COMPONENTS}: the video's {gives}) as its {}",
                OUTPUTS.get(wanted).copied().unwrap_or_default()
            ),
            &format!("connect output {wanted} of the {COMPONENTS}"),
        ));
    }
    let (video, _) = g.source(node, "video")?;
    g.expect(&video, &[LOADER], "video", (node, "video"))?;
    Ok(video)
}
