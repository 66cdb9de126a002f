//! Property tests of editing: any sequence of edits (refused ones change
//! nothing) undoes back to the original document exactly, redoes to the
//! same end state, and every intermediate document survives a canonical
//! save and reload unchanged.

use proptest::prelude::*;
use serde_json::json;
use wfstudio_core::edit::{Command, History};
use wfstudio_schema::{DocPath, Document, Format, Limits, parse_text};

fn fixture(name: &str) -> Document {
    let path = format!(
        "{}/../fixtures/examples/{name}/inference_metadata.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).expect("fixture");
    parse_text(&text, Format::Yaml, &Limits::default())
        .expect("parses")
        .document
}

const NAMES: [&str; 6] = [
    "latent",
    "decoded",
    "step",
    "request.steps",
    "x",
    "latent.next",
];
const PORTS: [&str; 3] = ["latent", "step", "image"];
const COMPONENTS: [&str; 3] = ["denoiser", "decoder", "ghost"];

fn step_path(index: usize) -> DocPath {
    DocPath::parse(&format!("pipeline.workflow.steps[{index}]")).expect("path")
}

/// One random command over the fixture's names (many will be refused).
fn command() -> impl Strategy<Value = Command> {
    let name = prop::sample::select(NAMES.as_slice()).prop_map(str::to_string);
    let port = prop::sample::select(PORTS.as_slice()).prop_map(str::to_string);
    let component = prop::sample::select(COMPONENTS.as_slice()).prop_map(str::to_string);
    prop_oneof![
        (name.clone(), "[a-z]{1,6}").prop_map(|(from, to)| Command::RenameValue { from, to }),
        (0..4usize, port.clone(), name).prop_map(|(i, port, value)| Command::Connect {
            step: step_path(i),
            port,
            value
        }),
        (0..4usize, port).prop_map(|(i, port)| Command::Disconnect {
            step: step_path(i),
            port
        }),
        (0..5usize, component).prop_map(|(index, component)| Command::AddInvoke {
            list: DocPath::parse("pipeline.workflow.steps").expect("path"),
            index,
            component,
        }),
        (0..5usize).prop_map(|i| Command::Remove { path: step_path(i) }),
        (
            0..4usize,
            prop::sample::select(vec!["replace", "append", "bogus"])
        )
            .prop_map(|(i, mode)| Command::Set {
                path: step_path(i).key("mode"),
                value: json!(mode),
            }),
    ]
}

fn reloads_unchanged(document: &Document) -> bool {
    let text = wfstudio_schema::save::to_yaml(document, None);
    parse_text(&text, Format::Yaml, &Limits::default())
        .is_ok_and(|loaded| &loaded.document == document)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn edits_undo_to_the_original_and_round_trip(
        package in prop::sample::select(vec!["tiny-denoise", "tiny-tone"]),
        commands in prop::collection::vec(command(), 1..24),
    ) {
        let original = fixture(package);
        let mut history = History::new(original.clone());
        let mut applied = 0;
        for command in &commands {
            let before = history.document().clone();
            match history.apply(command) {
                Ok(()) => {
                    if history.document() != &before {
                        applied += 1;
                    }
                    prop_assert!(reloads_unchanged(history.document()), "after {:?}", command);
                }
                Err(_) => prop_assert_eq!(history.document(), &before, "a refused edit changed the document"),
            }
        }
        let end = history.document().clone();
        let mut undone = 0;
        while history.undo().is_some() {
            undone += 1;
        }
        prop_assert_eq!(undone, applied);
        prop_assert_eq!(history.document(), &original);
        prop_assert!(!history.is_dirty());
        while history.redo().is_some() {}
        prop_assert_eq!(history.document(), &end);
    }
}
