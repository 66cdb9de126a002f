//! The walk from the sinks back through the sampler stages: each sampler
//! is recognised once, on first sight, after the stages it samples
//! further; a cycle through latents and an endless chain are refused.

use super::super::graph::Graph;
use super::{Plan, SAMPLER_CLASSES, custom, stage};
use crate::comfyui::lower::Refusal;
use crate::comfyui::lower::parts::Axes;
use std::collections::BTreeMap;

/// The most sampler stages one graph chains (ComfyUI has no limit; a
/// longer chain is refused rather than walked without end).
const MAX_STAGES: usize = 64;

/// The stages recognised so far, and the samplers being recognised (to
/// catch a cycle through latents).
#[derive(Default)]
pub(in crate::comfyui::lower) struct Walk {
    pub(super) stages: Vec<Plan>,
    index: BTreeMap<String, usize>,
    visiting: Vec<String>,
}

impl Walk {
    /// The stage of sampler `node`, whose output `slot` feeds input
    /// `from.1` of node `from.0`, recognised (with the stages it samples
    /// further) on first sight.
    pub(super) fn sampled(
        &mut self,
        g: &Graph<'_>,
        node: &str,
        slot: i64,
        from: (&str, &str),
    ) -> Result<usize, Refusal> {
        g.expect(node, SAMPLER_CLASSES, from.1, from)?;
        // Its denoised output is its sampled one where the schedule ends
        // at sigma 0 and the sampler's last step lands on the estimate.
        let denoised = |g: &Graph<'_>| {
            slot == 1 && super::sigmas::ends_at_zero(g, node) && custom::lands_on_estimate(g, node)
        };
        if slot != 0 && custom::is_custom(g.class(node)) && !denoised(g) {
            return Err(g.refuse(
                node,
                None,
                format!(
                    "feeds its denoised_output to node {}; the lowering takes it where the schedule ends at sigma 0 (a ManualSigmas list ending in 0, a BasicScheduler or LTXVScheduler) under {}, as the sampled output",
                    from.0,
                    listed(custom::LAST_STEP_ON_ESTIMATE)
                ),
                "use the sampler's first output",
            ));
        }
        if let Some(&stage) = self.index.get(node) {
            return Ok(stage);
        }
        if self.visiting.iter().any(|v| v == node) {
            return Err(g.refuse(
                node,
                Some("latent_image"),
                format!(
                    "samples a latent that comes back from its own result (a cycle through samplers {})",
                    self.visiting.join(", ")
                ),
                "break the cycle: start one sampler from an empty or encoded latent",
            ));
        }
        if self.visiting.len() >= MAX_STAGES {
            return Err(g.refuse(
                node,
                None,
                format!("is the sampler at depth {MAX_STAGES} of a chain; the lowering chains at most {MAX_STAGES} samplers"),
                "split the chain into several graphs",
            ));
        }
        self.visiting.push(node.to_string());
        let plan = stage(g, node, self)?;
        self.visiting.pop();
        self.stages.push(plan);
        self.index.insert(node.to_string(), self.stages.len() - 1);
        Ok(self.stages.len() - 1)
    }

    /// The checkpoint loader of stage `stage`'s model.
    pub(super) fn loader(&self, stage: usize) -> &str {
        self.stages
            .get(stage)
            .map_or("", |p| p.model.loader.as_str())
    }

    /// The latent channels of stage `stage`.
    pub(super) fn channels(&self, stage: usize) -> i64 {
        self.stages.get(stage).map_or(4, |p| p.channels)
    }

    /// The channels stage `stage`'s pictures decode to: 3, or the model
    /// family's own (Qwen-Image 2.1's RGBA).
    pub(super) fn picture_channels(&self, stage: usize) -> i64 {
        self.stages
            .get(stage)
            .and_then(|p| p.model.format)
            .map_or(3, |f| f.picture_channels)
    }

    /// The latent extents `(height, width)` of stage `stage`, where the
    /// graph fixes them.
    pub(super) fn extents(&self, stage: usize) -> Option<(i64, i64)> {
        let plan = self.stages.get(stage)?;
        super::source_extents(&plan.latent, |earlier| self.extents(earlier))
    }

    /// The sampler node of stage `stage`, when it samples by flow matching.
    pub(super) fn flow_sampler(&self, stage: usize) -> Option<&str> {
        let plan = self.stages.get(stage)?;
        plan.model.flow.as_ref().map(|_| plan.sampler.node.as_str())
    }

    /// The batch size of stage `stage`'s latent, where the graph fixes it.
    pub(super) fn batch(&self, stage: usize) -> Option<i64> {
        let plan = self.stages.get(stage)?;
        super::source_batch(&plan.latent, |earlier| self.batch(earlier))
    }

    /// The steps of stage `stage`'s audio latent (0 for another latent).
    pub(super) fn audio_length(&self, stage: usize) -> i64 {
        match self.stages.get(stage).map(|p| &p.latent) {
            Some(super::LatentSource::Audio { length, .. }) => *length,
            Some(super::LatentSource::Stage { stage, .. }) => self.audio_length(*stage),
            _ => 0,
        }
    }

    /// The latent frames of stage `stage`'s video latent, where the graph
    /// fixes them.
    pub(super) fn latent_frames(&self, stage: usize) -> Option<i64> {
        match &self.stages.get(stage)?.latent {
            super::LatentSource::Empty {
                frames: Some(f), ..
            } => Some((f.length - 1) / f.temporal + 1 + f.leading),
            super::LatentSource::Stage { stage, .. } => self.latent_frames(*stage),
            _ => None,
        }
    }

    /// The stage whose audio-video latent `LTXVSeparateAVLatent` `node`
    /// separates.
    pub(super) fn separated(&mut self, g: &Graph<'_>, node: &str) -> Result<usize, Refusal> {
        let (from, slot) = g.source(node, "av_latent")?;
        let stage = self.sampled(g, &from, slot, (node, "av_latent"))?;
        if self.axes(stage) != Axes::AudioVideo {
            return Err(g.refuse(
                node,
                Some("av_latent"),
                format!("separates sampler {from}'s latent, which is not an audio-video latent"),
                "sample an LTXVConcatAVLatent first",
            ));
        }
        Ok(stage)
    }

    /// How stage `stage`'s audio-video latent lies in its packed row, if
    /// it is one.
    pub(super) fn av_layout(&self, stage: usize) -> Option<super::av_nodes::AvLayout> {
        Some(self.stages.get(stage)?.audio.as_ref()?.layout)
    }

    /// The latent axes of stage `stage`.
    pub(super) fn axes(&self, stage: usize) -> Axes {
        self.stages.get(stage).map_or(Axes::Image, |p| p.axes)
    }
}

/// Names as a sentence lists them: `a, b or c`.
fn listed(names: &[&str]) -> String {
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}
