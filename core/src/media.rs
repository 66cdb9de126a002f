//! Conventions between a package's media outputs and the studio that
//! shows them.

/// The output that carries the frames per second of video output
/// `video`: a float per batch row, emitted beside the video.
pub fn frame_rate_output(video: &str) -> String {
    format!("{video}_frame_rate")
}
