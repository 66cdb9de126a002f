//! How a sampler stage names what it defines ([`StageNames`]) and how it
//! names an earlier stage's final latent before renaming resolves it
//! ([`earlier_latent`]). A picture input of a `LoadImage` an earlier stage
//! reads already is that stage's input: one picture is given once; a Wan
//! node's video, mask and embeddings an earlier stage made are that
//! stage's values, made once.

use super::super::recognise::Chain;
use std::collections::BTreeMap;

/// How stage `index` (0-based) names what it defines.
pub(in crate::comfyui::lower) struct StageNames {
    /// `stage<k>` with k counted from 1; empty for the first stage.
    tag: String,
    /// Its picture inputs that an earlier stage declares and the values
    /// an earlier stage made, by that stage's names.
    aliases: BTreeMap<String, String>,
}

/// Stage `index`'s tag: `stage<k>` with k counted from 1, empty for the
/// first stage.
fn tag(index: usize) -> String {
    match index {
        0 => String::new(),
        k => format!("stage{}", k + 1),
    }
}

/// `name` as stage `tag` names it.
fn tagged(tag: &str, name: &str) -> String {
    match tag.is_empty() {
        true => name.to_string(),
        false => format!("{tag}.{name}"),
    }
}

impl StageNames {
    /// The names of stage `index` (0-based) of `chain`.
    pub(in crate::comfyui::lower) fn new(chain: &Chain, index: usize) -> StageNames {
        let mut aliases = BTreeMap::new();
        for (input, loader) in super::pictures::inputs(&chain.stages[index]) {
            let first = chain.stages[..index]
                .iter()
                .enumerate()
                .find_map(|(k, plan)| {
                    super::pictures::inputs(plan)
                        .into_iter()
                        .find(|(_, l)| *l == loader)
                        .map(|(earlier, _)| tagged(&tag(k), &earlier))
                });
            if let Some(first) = first {
                aliases.insert(input, first);
            }
        }
        let made = super::frames::frames(&chain.stages[index]).and_then(|own| {
            chain.stages[..index]
                .iter()
                .position(|p| super::frames::frames(p).is_some_and(|f| f.node == own.node))
        });
        if let Some(k) = made {
            for value in super::frames::VALUES {
                aliases.insert(value.to_string(), tagged(&tag(k), value));
            }
        }
        StageNames {
            tag: tag(index),
            aliases,
        }
    }

    /// Whether `name` is an earlier stage's (a picture input or a value
    /// that stage made).
    pub(super) fn reused(&self, name: &str) -> bool {
        self.aliases.contains_key(name)
    }

    /// The names the stage takes from earlier stages, by its own name.
    pub(super) fn aliases(&self) -> &BTreeMap<String, String> {
        &self.aliases
    }

    /// A value, state cell or input name of the stage.
    pub(in crate::comfyui::lower) fn value(&self, name: &str) -> String {
        match self.aliases.get(name) {
            Some(alias) => alias.clone(),
            None => tagged(&self.tag, name),
        }
    }

    /// A policy component, application input name or shape symbol of the
    /// stage (no dots allowed there).
    pub(super) fn word(&self, name: &str) -> String {
        match self.tag.is_empty() {
            true => name.to_string(),
            false => format!("{}_{name}", self.tag),
        }
    }
}

/// The input each loaded picture of `chain`'s stages is given by, by
/// `LoadImage` node: the first stage's that reads it (as one of its
/// pictures, or as its ControlNet's picture); and each control video's,
/// by `LoadVideo` node.
pub(super) fn loaded_inputs(chain: &Chain) -> BTreeMap<String, String> {
    let mut loaded = BTreeMap::new();
    for (k, plan) in chain.stages.iter().enumerate() {
        let names = StageNames::new(chain, k);
        let control = plan
            .control
            .as_ref()
            .and_then(|c| c.image.loader())
            .map(|loader| ("request.control_image".to_string(), loader));
        let video = super::frames::frames(plan)
            .and_then(|f| f.control_video())
            .map(|loader| (super::control_video::INPUT.to_string(), loader));
        for (input, loader) in super::pictures::inputs(plan)
            .into_iter()
            .chain(control)
            .chain(video)
        {
            loaded
                .entry(loader.clone())
                .or_insert_with(|| names.value(&input));
        }
    }
    loaded
}

/// The placeholder a stage names the final latent of stage `index` with
/// (no value can be called so: names do not start with `@`).
pub(super) fn earlier_latent(index: usize) -> String {
    format!("@stage{index}")
}
