//! The video preview: one batch row's frames as textures, a scrubber,
//! play/pause at a chosen frame rate, saving the shown frame as PNG and the
//! row as an animated GIF.

use crate::output_media::{gif_bytes, png_bytes};
use wfstudio_runner::media::Rgb8;

/// Playback state of one video output (its frames stay in the run's media).
pub struct VideoPlayer {
    /// The frames' textures per batch row, uploaded once.
    textures: Vec<Vec<egui::TextureHandle>>,
    /// The frame shown.
    pub frame: usize,
    /// Whether it advances by itself.
    pub playing: bool,
    /// Playback rate (frames per second).
    pub fps: f64,
    /// When the shown frame appeared (egui time, seconds).
    shown_at: f64,
}

impl VideoPlayer {
    /// Uploads the frames of `key` as textures (nearest-neighbour zoom),
    /// to play at `fps`.
    pub fn new(ctx: &egui::Context, key: &str, frames: &[Vec<Rgb8>], fps: f64) -> Self {
        let textures = frames
            .iter()
            .enumerate()
            .map(|(b, row)| {
                row.iter()
                    .enumerate()
                    .map(|(f, rgb)| super::pixels::texture(ctx, format!("{key}.{b}.frame{f}"), rgb))
                    .collect()
            })
            .collect();
        VideoPlayer {
            textures,
            frame: 0,
            playing: false,
            fps,
            shown_at: 0.0,
        }
    }

    /// Frames per batch row.
    fn frame_count(&self) -> usize {
        self.textures.first().map_or(0, Vec::len)
    }

    /// Draws every batch row at the shown frame, and the controls; `frames`
    /// are the pictures the player was made from (saved and exported).
    pub fn show(&mut self, ui: &mut egui::Ui, key: &str, frames: &[Vec<Rgb8>], zoom: f32) {
        let count = self.frame_count();
        if count == 0 {
            ui.weak("(no frames)");
            return;
        }
        let now = ui.input(|i| i.time);
        if self.playing {
            let period = 1.0 / self.fps.max(0.1);
            if now - self.shown_at >= period {
                self.frame = (self.frame + 1) % count;
                self.shown_at = now;
            }
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_secs_f64(period));
        }
        self.frame = self.frame.min(count - 1);
        for row in &self.textures {
            let handle = &row[self.frame];
            ui.add(egui::Image::new((handle.id(), handle.size_vec2() * zoom)));
        }
        ui.horizontal(|ui| {
            let label = if self.playing {
                "⏸ Pause"
            } else {
                "▶ Play"
            };
            if ui.button(label).clicked() {
                self.playing = !self.playing;
                self.shown_at = now;
            }
            ui.add(egui::Slider::new(&mut self.frame, 0..=count - 1).text("frame"));
        });
        ui.horizontal(|ui| {
            ui.add(
                egui::DragValue::new(&mut self.fps)
                    .range(0.1..=240.0)
                    .max_decimals(2)
                    .suffix(" fps"),
            );
            if ui.small_button("Save frame as PNG…").clicked()
                && let Some(file) = rfd::FileDialog::new()
                    .set_file_name(format!("{key}.frame{}.png", self.frame))
                    .save_file()
                && let Ok(bytes) = png_bytes(&frames[0][self.frame])
            {
                let _ = wfstudio_schema::save::write_atomic(&file, &bytes);
            }
            if ui.small_button("Export GIF…").clicked()
                && let Some(file) = rfd::FileDialog::new()
                    .set_file_name(format!("{key}.gif"))
                    .save_file()
                && let Ok(bytes) = gif_bytes(&frames[0], self.fps)
            {
                let _ = wfstudio_schema::save::write_atomic(&file, &bytes);
            }
        });
    }
}
