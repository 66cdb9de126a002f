//! How a sampler stage names what it defines ([`StageNames`]) and how it
//! names an earlier stage's final latent before renaming resolves it
//! ([`earlier_latent`]).

/// How stage `index` (0-based) names what it defines.
pub(in crate::comfyui::lower) struct StageNames {
    /// `stage<k>` with k counted from 1; empty for the first stage.
    tag: String,
}

impl StageNames {
    /// The names of stage `index` (0-based).
    pub(in crate::comfyui::lower) fn new(index: usize) -> StageNames {
        StageNames {
            tag: match index {
                0 => String::new(),
                k => format!("stage{}", k + 1),
            },
        }
    }

    /// A value, state cell or input name of the stage.
    pub(in crate::comfyui::lower) fn value(&self, name: &str) -> String {
        match self.tag.is_empty() {
            true => name.to_string(),
            false => format!("{}.{name}", self.tag),
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

/// The placeholder a stage names the final latent of stage `index` with
/// (no value can be called so: names do not start with `@`).
pub(super) fn earlier_latent(index: usize) -> String {
    format!("@stage{index}")
}
