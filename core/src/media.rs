//! Conventions between a package's media inputs and outputs and the
//! studio that reads and shows them.

/// The output that carries the frames per second of video output
/// `video`: a float per batch row, emitted beside the video; for a video
/// input, the input beside it that a read file's frame rate sets.
pub fn frame_rate_output(video: &str) -> String {
    format!("{video}_frame_rate")
}
