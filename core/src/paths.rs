//! Document paths the rules, derivations and edits share.

use wfstudio_schema::DocPath;

/// `pipeline.workflow`.
pub fn workflow_path() -> DocPath {
    DocPath::root().key("pipeline").key("workflow")
}
