//! Audio playback of an audio output through rodio. The output device is
//! opened on the first Play; a machine without one (a server, CI) gets a
//! message, never a panic, and the preview keeps working without sound.

use rodio::buffer::SamplesBuffer;
use rodio::{DeviceSinkBuilder, MixerDeviceSink, Player};
use std::num::NonZero;

/// The open output and what plays on it.
#[derive(Default)]
pub struct AudioPlayer {
    output: Option<(MixerDeviceSink, Player)>,
}

impl AudioPlayer {
    /// Plays interleaved `samples` (`channels` channels at `rate` Hz) from
    /// the start, replacing whatever was playing.
    pub fn play(&mut self, channels: usize, rate: u32, samples: &[f32]) -> Result<(), String> {
        let channels = u16::try_from(channels)
            .ok()
            .and_then(NonZero::new)
            .ok_or_else(|| format!("cannot play audio with {channels} channels"))?;
        let rate = NonZero::new(rate).ok_or_else(|| "cannot play audio at 0 Hz".to_string())?;
        if self.output.is_none() {
            let mut sink = DeviceSinkBuilder::open_default_sink()
                .map_err(|e| format!("cannot play audio: no output device ({e})"))?;
            sink.log_on_drop(false);
            let player = Player::connect_new(sink.mixer());
            self.output = Some((sink, player));
        }
        if let Some((_, player)) = &self.output {
            player.stop();
            player.append(SamplesBuffer::new(channels, rate, samples.to_vec()));
            player.play();
        }
        Ok(())
    }

    /// Stops playback (the device stays open for the next Play).
    pub fn stop(&mut self) {
        if let Some((_, player)) = &self.output {
            player.stop();
        }
    }

    /// Whether something is playing.
    pub fn is_playing(&self) -> bool {
        self.output.as_ref().is_some_and(|(_, p)| !p.empty())
    }
}

#[cfg(test)]
mod tests {
    use super::AudioPlayer;

    #[test]
    fn bad_formats_are_refused_before_any_device_is_opened() {
        let mut player = AudioPlayer::default();
        assert_eq!(
            player.play(0, 16_000, &[0.0; 4]),
            Err("cannot play audio with 0 channels".into())
        );
        assert_eq!(
            player.play(1, 0, &[0.0; 4]),
            Err("cannot play audio at 0 Hz".into())
        );
        assert!(player.output.is_none());
    }

    /// With a sound device this plays and stops; without one (CI) it says so.
    #[test]
    fn playing_either_plays_or_says_there_is_no_device() {
        let mut player = AudioPlayer::default();
        let tone: Vec<f32> = (0..16_000).map(|i| (i as f32 * 0.1).sin() * 0.01).collect();
        match player.play(1, 16_000, &tone) {
            Ok(()) => {
                assert!(player.is_playing());
                player.stop();
                assert!(!player.is_playing());
            }
            Err(message) => {
                assert!(
                    message.starts_with("cannot play audio: no output device ("),
                    "{message}"
                );
                assert!(!player.is_playing());
            }
        }
    }
}
