//! The output previews of a finished run: images per batch row (saved as
//! PNG), videos, audio waveforms with Play/Stop and Save WAV, and the
//! textures they are drawn with.

use super::run_job::Finished;
use crate::output_media::{Media, png_bytes, wav_bytes};
use std::collections::BTreeMap;

/// What the output previews keep between frames.
#[derive(Default)]
pub(super) struct MediaState {
    /// Image textures per output, one per batch row.
    pub(super) textures: BTreeMap<String, Vec<egui::TextureHandle>>,
    /// Video players per output.
    pub(super) videos: BTreeMap<String, super::video_player::VideoPlayer>,
    /// Audio playback (one output at a time).
    pub(super) audio: super::audio_player::AudioPlayer,
    /// Why the last Play made no sound.
    pub(super) audio_note: Option<String>,
}

/// The output previews, the selected output first.
pub(super) fn previews(
    ui: &mut egui::Ui,
    finished: &Finished,
    media: &mut MediaState,
    zoom: f32,
    selected: Option<&str>,
) {
    let mut keys: Vec<&String> = finished.media.keys().collect();
    if let Some(first) = selected {
        keys.sort_by_key(|k| k.as_str() != first);
    }
    let zoom = if zoom > 0.0 { zoom } else { 4.0 };
    for key in keys {
        let tensor = &finished.output.outputs[key];
        ui.strong(format!("{key}: {:?} {:?}", tensor.dtype(), tensor.shape));
        match &finished.media[key] {
            Media::Image(rows) => {
                for (b, handle) in media.textures.get(key).into_iter().flatten().enumerate() {
                    let size = handle.size_vec2() * zoom;
                    ui.add(egui::Image::new((handle.id(), size)));
                    if ui
                        .small_button(format!("Save {key} row {b} as PNG…"))
                        .clicked()
                        && let Some(file) = rfd::FileDialog::new()
                            .set_file_name(format!("{key}.png"))
                            .save_file()
                        && let Ok(bytes) = png_bytes(&rows[b])
                    {
                        let _ = wfstudio_schema::save::write_atomic(&file, &bytes);
                    }
                }
            }
            Media::Audio {
                channels,
                rate,
                samples,
            } => {
                waveform(ui, *channels, samples);
                ui.label(format!(
                    "{channels} ch, {rate} Hz, {:.2} s",
                    samples.len() as f64 / (*channels).max(1) as f64 / f64::from(*rate)
                ));
                ui.horizontal(|ui| {
                    if media.audio.is_playing() {
                        if ui.small_button("⏹ Stop").clicked() {
                            media.audio.stop();
                        }
                        ui.ctx()
                            .request_repaint_after(std::time::Duration::from_millis(200));
                    } else if ui.small_button("▶ Play").clicked() {
                        media.audio_note = media.audio.play(*channels, *rate, samples).err();
                    }
                    if ui.small_button("Save WAV…").clicked()
                        && let Some(file) = rfd::FileDialog::new()
                            .set_file_name(format!("{key}.wav"))
                            .save_file()
                        && let Ok(bytes) = wav_bytes(*channels, *rate, samples)
                    {
                        let _ = wfstudio_schema::save::write_atomic(&file, &bytes);
                    }
                });
                if let Some(note) = &media.audio_note {
                    ui.weak(note);
                }
            }
            Media::Video(rows) => {
                if let Some(player) = media.videos.get_mut(key.as_str()) {
                    player.show(ui, key, rows, zoom);
                }
            }
            Media::Tensor => {}
        }
    }
}

/// A min/max waveform of the first channel, one column per pixel.
fn waveform(ui: &mut egui::Ui, channels: usize, samples: &[f32]) {
    let (rect, _) = ui.allocate_exact_size(
        egui::vec2(ui.available_width().min(280.0), 80.0),
        egui::Sense::hover(),
    );
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 2.0, ui.visuals().extreme_bg_color);
    let mono: Vec<f32> = samples.iter().step_by(channels.max(1)).copied().collect();
    let columns = rect.width() as usize;
    if mono.is_empty() || columns == 0 {
        return;
    }
    let color = ui.visuals().selection.stroke.color;
    for x in 0..columns {
        let chunk = &mono[x * mono.len() / columns
            ..((x + 1) * mono.len() / columns)
                .max(x * mono.len() / columns + 1)
                .min(mono.len())];
        let (lo, hi) = chunk
            .iter()
            .fold((0f32, 0f32), |(lo, hi), s| (lo.min(*s), hi.max(*s)));
        let px = rect.left() + x as f32;
        let y = |v: f32| rect.center().y - v.clamp(-1.0, 1.0) * rect.height() / 2.0;
        painter.line_segment(
            [egui::pos2(px, y(hi)), egui::pos2(px, y(lo))],
            egui::Stroke::new(1.0, color),
        );
    }
}
