//! Stable Audio's graphs: `EmptyLatentAudio`'s latent (64 channels, one
//! step per 2048 samples at 44.1 kHz), `ConditioningStableAudio`'s start
//! and total seconds on the prompts (the denoiser's `seconds_start` and
//! `seconds_total`), and the sampling of a model that samples such a latent
//! without a ModelSampling node: ComfyUI's Stable Audio checkpoints',
//! v-prediction on continuous sigmas 0.03..500 with timesteps `atan(sigma)
//! * 2 / pi` (`ModelSamplingContinuousV`).

use super::super::graph::Graph;
use super::model::TableSampling;
use super::walk::Walk;
use super::{Conditioning, LatentSource};
use crate::comfyui::lower::Refusal;
use crate::comfyui::lower::parts::Axes;
use crate::comfyui::synth::tables::Table;

/// Samples a second of Stable Audio's waveforms.
pub(in crate::comfyui::lower) const SAMPLE_RATE: i64 = 44100;
/// Samples per latent step.
pub(in crate::comfyui::lower) const SAMPLES_PER_STEP: i64 = 2048;
/// Latent channels.
pub(in crate::comfyui::lower) const CHANNELS: i64 = 64;
/// Waveform channels the VAE decodes (stereo).
pub(in crate::comfyui::lower) const WAVE_CHANNELS: i64 = 2;

/// The node that sets the prompts' seconds.
pub(super) const CONDITIONING: &str = "ConditioningStableAudio";

/// `ConditioningStableAudio`'s values.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::comfyui::lower) struct Seconds {
    pub node: String,
    pub start: f64,
    pub total: f64,
}

/// Steps back through a `ConditioningStableAudio` at `node` (output
/// `slot`: 0 positive, 1 negative), recording its seconds.
pub(super) fn seconds(
    g: &Graph<'_>,
    node: &mut String,
    slot: &mut i64,
    from: &mut (String, String),
) -> Result<Option<Seconds>, Refusal> {
    if g.class(node) != CONDITIONING {
        return Ok(None);
    }
    let here = node.clone();
    let seconds = Seconds {
        start: g.number_in(&here, "seconds_start", 0.0..=1000.0, "time")?,
        total: g.number_in(&here, "seconds_total", 0.0..=1000.0, "time")?,
        node: here,
    };
    g.through_prompt_pair(
        node,
        slot,
        from,
        "which gives conditionings on outputs 0 and 1 only",
    )?;
    Ok(Some(seconds))
}

/// The seconds an audio latent's denoiser takes: the prompts' shared
/// `ConditioningStableAudio` values, else ComfyUI's defaults for the
/// latent's length; refused on a latent that is not audio, or where the
/// prompts' differ.
pub(super) fn seconds_taken(
    g: &Graph<'_>,
    walk: &Walk,
    latent: &LatentSource,
    axes: Axes,
    prompts: &[&Conditioning],
) -> Result<Option<Seconds>, Refusal> {
    let stated = prompts.iter().find_map(|c| c.seconds.as_ref());
    if axes != Axes::Audio {
        return match stated {
            Some(s) => Err(g.refuse(
                &s.node,
                None,
                "sets an audio model's seconds on the prompts of a sampler whose latent is not audio".into(),
                "remove ConditioningStableAudio, or sample an EmptyLatentAudio",
            )),
            None => Ok(None),
        };
    }
    let (node, length) = match latent {
        LatentSource::Audio { node, length, .. } => (node.as_str(), *length),
        LatentSource::Stage { stage, .. } => ("", walk.audio_length(*stage)),
        _ => ("", 0),
    };
    let default = default_seconds(node, length);
    let side = |c: &Conditioning| c.seconds.clone().unwrap_or_else(|| default.clone());
    let first = side(prompts[0]);
    if let Some(other) = prompts[1..]
        .iter()
        .map(|c| side(c))
        .find(|s| (s.start, s.total) != (first.start, first.total))
    {
        let node = stated.map_or(&other.node, |s| &s.node);
        return Err(g.refuse(
            node,
            None,
            "gives the sampler's prompts different seconds, and the lowering passes one start and total to all of them".into(),
            "condition every prompt through one ConditioningStableAudio",
        ));
    }
    Ok(Some(first))
}

/// The seconds a prompt without `ConditioningStableAudio` gives the model,
/// as ComfyUI's Stable Audio model defaults them: start 0, total the
/// latent's length over 21.53 steps a second, truncated.
fn default_seconds(node: &str, latent_length: i64) -> Seconds {
    Seconds {
        node: node.to_string(),
        start: 0.0,
        total: (latent_length as f64 / 21.53).trunc(),
    }
}

/// The latent length of `seconds` of audio: `round(seconds * 44100 / 2048
/// / 2) * 2` steps (`EmptyLatentAudio`'s, Python's half-even `round`).
pub(super) fn latent_length(seconds: f64) -> i64 {
    let half = seconds * SAMPLE_RATE as f64 / SAMPLES_PER_STEP as f64 / 2.0;
    super::round_half_even(half) as i64 * 2
}

/// Stable Audio's own sampling, assumed where `node`'s audio latent is
/// sampled without a ModelSampling node.
pub(super) fn sampling(node: &str) -> TableSampling {
    TableSampling::v_prediction(
        node,
        Table::ContinuousV {
            sigma_min: 0.03,
            sigma_max: 500.0,
        },
    )
}
