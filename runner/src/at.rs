//! Where the interpreter is in the document: a path kept on the stack,
//! turned into a [`DocPath`] only when a message or a step's display name
//! needs it, so walking the steps of a run allocates nothing.

use crate::RunError;
use wfstudio_schema::DocPath;

#[derive(Clone, Copy, Debug)]
enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

/// A document path as a chain of stack frames.
#[derive(Clone, Copy, Debug)]
pub(crate) struct At<'a> {
    parent: Option<&'a At<'a>>,
    segment: Segment<'a>,
}

impl<'a> At<'a> {
    /// A path of one key at the document root.
    pub(crate) fn root(key: &'a str) -> Self {
        Self {
            parent: None,
            segment: Segment::Key(key),
        }
    }

    /// This path extended by `key`.
    pub(crate) fn key<'b>(&'b self, key: &'b str) -> At<'b> {
        At {
            parent: Some(self),
            segment: Segment::Key(key),
        }
    }

    /// This path extended by `index`.
    pub(crate) fn index<'b>(&'b self, index: usize) -> At<'b> {
        At {
            parent: Some(self),
            segment: Segment::Index(index),
        }
    }

    /// The path as the schema spells it.
    pub(crate) fn doc(&self) -> DocPath {
        let parent = self.parent.map_or_else(DocPath::root, At::doc);
        match self.segment {
            Segment::Key(k) => parent.key(k),
            Segment::Index(i) => parent.index(i),
        }
    }
}

/// A run error at `path`.
pub(crate) fn fail(path: &At<'_>, message: impl Into<String>) -> RunError {
    RunError::Step {
        path: path.doc().to_string(),
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::At;

    #[test]
    fn spells_the_path_like_the_schema() {
        let root = At::root("pipeline");
        let workflow = root.key("workflow");
        let steps = workflow.key("steps");
        let step = steps.index(2);
        assert_eq!(
            step.key("inputs").key("a.b").doc().to_string(),
            "pipeline.workflow.steps[2].inputs[\"a.b\"]"
        );
    }
}
