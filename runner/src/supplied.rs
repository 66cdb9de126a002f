//! The inputs a caller supplies, matched to the declared workflow inputs by
//! name or application alias with one look-up each: the names are hashed
//! into a table once per package, not collected into a map on every run.

use crate::fastmap::FastMap;
use crate::tensor::Tensor;
use std::sync::Arc;
use wfstudio_schema::types::workflow::{InputSource, WorkflowSpec};

/// The declared inputs' names, and the values one run was given for them.
#[derive(Debug, Default)]
pub(crate) struct Supplied {
    /// Declared name or application alias -> (declared index, by alias).
    /// A declared name wins over another input's alias.
    names: FastMap<String, (usize, bool)>,
    /// By declared index: the value given this run, and whether by alias.
    given: Vec<Option<(Arc<Tensor>, bool)>>,
}

impl Supplied {
    /// The name table of `wf`'s declared inputs.
    pub(crate) fn new(wf: &WorkflowSpec) -> Self {
        let declared: Vec<_> = wf.inputs.iter().flatten().collect();
        let mut names = FastMap::default();
        for (index, (name, _)) in declared.iter().enumerate() {
            names.insert(name.to_string(), (index, false));
        }
        for (index, (_, input)) in declared.iter().enumerate() {
            if let InputSource::Application(a) = &input.source {
                names.entry(a.name.clone()).or_insert((index, true));
            }
        }
        Self {
            names,
            given: vec![None; declared.len()],
        }
    }

    /// Sorts one run's `supplied` values by declared input. A value given
    /// both by name and by alias is taken by name; returns the names that
    /// matched no input (the alias in that case), sorted.
    pub(crate) fn sort<K, V>(&mut self, supplied: impl IntoIterator<Item = (K, V)>) -> Vec<String>
    where
        K: AsRef<str>,
        V: Into<Arc<Tensor>>,
    {
        self.given.fill(None);
        let mut unmatched = Vec::new();
        // The alias of each input given by both its name and its alias.
        let mut aliases_left = Vec::new();
        for (name, value) in supplied {
            let name = name.as_ref();
            let Some(&(index, by_alias)) = self.names.get(name) else {
                unmatched.push(name.to_string());
                continue;
            };
            let slot = &mut self.given[index];
            match slot {
                Some((_, false)) if by_alias => aliases_left.push(name.to_string()),
                Some((_, true)) if !by_alias => {
                    aliases_left.push(alias_of(&self.names, index));
                    *slot = Some((value.into(), false));
                }
                _ => *slot = Some((value.into(), by_alias)),
            }
        }
        unmatched.extend(aliases_left);
        unmatched.sort();
        unmatched
    }

    /// The declared index of the input a value supplied as `name` goes to:
    /// the input of that name, else the one whose alias it is.
    pub(crate) fn index_of(&self, name: &str) -> Option<usize> {
        self.names.get(name).map(|&(index, _)| index)
    }

    /// Takes the value this run gave declared input `index`.
    pub(crate) fn take(&mut self, index: usize) -> Option<Arc<Tensor>> {
        self.given.get_mut(index)?.take().map(|(value, _)| value)
    }
}

/// The application alias of declared input `index` in `names`.
fn alias_of(names: &FastMap<String, (usize, bool)>, index: usize) -> String {
    names
        .iter()
        .find(|(_, entry)| **entry == (index, true))
        .map(|(name, _)| name.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::Supplied;
    use crate::tensor::Tensor;
    use std::path::Path;
    use std::sync::Arc;

    /// The fixture's inputs: `request.latent` (alias `latent`),
    /// `request.steps`, `package.continue`.
    fn supplied() -> Supplied {
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/examples/tiny-denoise/inference_metadata.yaml");
        let (_, loaded) =
            wfstudio_schema::load_file(&file, &wfstudio_schema::Limits::default()).expect("read");
        let document = loaded.expect("parses").document;
        Supplied::new(&document.pipeline.expect("pipeline").workflow)
    }

    fn value(n: i64) -> Arc<Tensor> {
        Arc::new(Tensor::scalar_i64(n))
    }

    #[test]
    fn values_are_matched_by_name_or_alias() {
        let mut s = supplied();
        let unmatched = s.sort([("latent", value(1)), ("request.steps", value(2))]);
        assert!(unmatched.is_empty());
        assert_eq!(s.take(0), Some(value(1)), "by alias");
        assert_eq!(s.take(1), Some(value(2)), "by name");
        assert_eq!(s.take(2), None, "not given");
        assert_eq!(s.take(0), None, "taken once");
        assert_eq!(s.index_of("latent"), Some(0), "an alias");
        assert_eq!(s.index_of("request.latent"), Some(0), "a name");
        assert_eq!(s.index_of("request.steps"), Some(1));
        assert_eq!(s.index_of("steps"), None);
    }

    #[test]
    fn the_name_wins_over_the_alias_and_the_rest_is_reported_sorted() {
        let mut s = supplied();
        let unmatched = s.sort([
            ("zeta", value(0)),
            ("latent", value(1)),
            ("request.latent", value(2)),
            ("alpha", value(0)),
        ]);
        assert_eq!(unmatched, ["alpha", "latent", "zeta"]);
        assert_eq!(s.take(0), Some(value(2)));
        // A new run forgets what the last one was given.
        assert!(s.sort([("request.steps", value(3))]).is_empty());
        assert_eq!(s.take(0), None);
        assert_eq!(s.take(1), Some(value(3)));
    }
}
