//! Editing commands and undo history on the tiny-denoise fixture.

use serde_json::json;
use wfstudio_core::edit::{Command, EditError, History, apply};
use wfstudio_core::{Options, validate};
use wfstudio_schema::{DocPath, Document, Format, Limits, parse_text};

fn fixture() -> Document {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/examples/tiny-denoise/inference_metadata.yaml"
    );
    let text = std::fs::read_to_string(path).expect("fixture");
    parse_text(&text, Format::Yaml, &Limits::default())
        .expect("parses")
        .document
}

fn step(index: usize) -> DocPath {
    DocPath::parse(&format!("pipeline.workflow.steps[{index}]")).expect("path")
}

fn codes(document: &Document) -> Vec<&'static str> {
    validate(document, &Options::default())
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect()
}

fn yaml(document: &Document) -> String {
    wfstudio_schema::save::to_yaml(document, None)
}

#[test]
fn connect_checks_the_port_contract() {
    let doc = fixture();
    let refused = apply(
        &doc,
        &Command::Connect {
            step: step(1),
            port: "latent".into(),
            value: "step".into(),
        },
    );
    assert_eq!(
        refused,
        Err(EditError::Incompatible {
            value: "step".into(),
            port: "latent".into(),
            reason: "has incompatible tensor contracts: int64 rank 0 -> float32 rank 4".into(),
        })
    );
    let unknown = apply(
        &doc,
        &Command::Connect {
            step: step(1),
            port: "nope".into(),
            value: "latent".into(),
        },
    );
    assert_eq!(
        unknown,
        Err(EditError::UnknownPort {
            component: "decoder".into(),
            port: "nope".into()
        })
    );
    let not_invoke = apply(
        &doc,
        &Command::Connect {
            step: step(2),
            port: "latent".into(),
            value: "latent".into(),
        },
    );
    assert_eq!(not_invoke, Err(EditError::NotAnInvoke(step(2))));
}

#[test]
fn disconnect_then_connect_restores_the_document() {
    let doc = fixture();
    let cut = apply(
        &doc,
        &Command::Disconnect {
            step: step(1),
            port: "latent".into(),
        },
    )
    .expect("disconnects");
    assert!(
        !yaml(&cut).contains("inputs: {latent: latent}")
            && !yaml(&cut)
                .contains("      inputs:\n        latent: latent\n      outputs:\n        image")
    );
    assert!(
        codes(&cut).contains(&"V-N20"),
        "unbound required port reported: {:?}",
        codes(&cut)
    );
    let joined = apply(
        &cut,
        &Command::Connect {
            step: step(1),
            port: "latent".into(),
            value: "latent".into(),
        },
    )
    .expect("connects");
    assert_eq!(joined, doc);
}

#[test]
fn rename_follows_every_reference() {
    let doc = fixture();
    let renamed = apply(
        &doc,
        &Command::RenameValue {
            from: "decoded".into(),
            to: "picture".into(),
        },
    )
    .expect("renames");
    let text = yaml(&renamed);
    assert!(!text.contains("decoded"), "{text}");
    assert_eq!(
        text.matches("picture").count(),
        2,
        "definition and the emit read"
    );
    assert_eq!(codes(&renamed), Vec::<&str>::new());

    let input = apply(
        &doc,
        &Command::RenameValue {
            from: "request.steps".into(),
            to: "request.count".into(),
        },
    )
    .expect("renames");
    let wf = &input.pipeline.as_ref().expect("pipeline").workflow;
    let keys: Vec<&str> = wf
        .inputs
        .as_ref()
        .expect("inputs")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["request.latent", "request.count", "package.continue"],
        "the key keeps its place"
    );
    assert!(yaml(&input).contains("max_iterations: request.count"));
    assert_eq!(codes(&input), Vec::<&str>::new());

    assert_eq!(
        apply(
            &doc,
            &Command::RenameValue {
                from: "decoded".into(),
                to: "latent".into()
            }
        ),
        Err(EditError::NameTaken("latent".into()))
    );
    assert_eq!(
        apply(
            &doc,
            &Command::RenameValue {
                from: "ghost".into(),
                to: "x".into()
            }
        ),
        Err(EditError::UnknownValue("ghost".into()))
    );
}

#[test]
fn add_invoke_binds_fresh_outputs() {
    let doc = fixture();
    let list = DocPath::parse("pipeline.workflow.steps").expect("path");
    let added = apply(
        &doc,
        &Command::AddInvoke {
            list: list.clone(),
            index: 3,
            component: "decoder".into(),
        },
    )
    .expect("adds");
    assert!(yaml(&added).ends_with("- kind: invoke\n      component: decoder\n      outputs:\n        image: decoder_image\n"), "{}", yaml(&added));
    assert_eq!(
        codes(&added),
        vec!["V-N20"],
        "its required input is unbound"
    );
    let twice = apply(
        &added,
        &Command::AddInvoke {
            list,
            index: 0,
            component: "decoder".into(),
        },
    )
    .expect("adds");
    assert!(yaml(&twice).contains("image: decoder_image_2"));
}

#[test]
fn structural_edits_are_checked_by_the_strict_loader() {
    let doc = fixture();
    let bad = apply(
        &doc,
        &Command::Set {
            path: step(2).key("mode"),
            value: json!("sideways"),
        },
    );
    match bad {
        Err(EditError::Invalid(message)) => assert!(
            message.contains("pipeline.workflow.steps[2].mode"),
            "{message}"
        ),
        other => panic!("expected Invalid, got {other:?}"),
    }
    let unknown_field = apply(
        &doc,
        &Command::Set {
            path: step(2).key("row_ids"),
            value: json!(["x"]),
        },
    );
    assert!(matches!(unknown_field, Err(EditError::Invalid(_))));
    let appended = apply(
        &doc,
        &Command::Set {
            path: step(2).key("mode"),
            value: json!("append"),
        },
    )
    .expect("sets");
    assert!(yaml(&appended).contains("mode: append"));
    let removed = apply(&doc, &Command::Remove { path: step(2) }).expect("removes");
    assert_eq!(
        removed
            .pipeline
            .as_ref()
            .expect("pipeline")
            .workflow
            .steps
            .len(),
        2
    );
    assert_eq!(
        apply(&doc, &Command::Remove { path: step(9) }),
        Err(EditError::NotFound(step(9)))
    );
}

#[test]
fn history_undoes_to_the_exact_original_and_tracks_saves() {
    let doc = fixture();
    let mut history = History::new(doc.clone());
    assert!(!history.is_dirty());
    history
        .apply(&Command::RenameValue {
            from: "decoded".into(),
            to: "picture".into(),
        })
        .expect("renames");
    history
        .apply(&Command::Disconnect {
            step: step(1),
            port: "latent".into(),
        })
        .expect("disconnects");
    assert!(history.apply(&Command::Remove { path: step(7) }).is_err());
    history.mark_saved();
    history
        .apply(&Command::Remove { path: step(2) })
        .expect("removes");
    assert!(history.is_dirty());
    assert_eq!(
        history.undo_label(),
        Some("Delete pipeline.workflow.steps[2]")
    );
    history.undo();
    assert!(!history.is_dirty(), "back at the saved state");
    history.undo();
    history.undo();
    assert_eq!(history.undo(), None);
    assert_eq!(history.document(), &doc);
    assert!(history.is_dirty());
    history.redo();
    assert_eq!(history.redo_label(), Some("Disconnect latent"));
    history.redo();
    assert!(!history.is_dirty());
}

#[test]
fn every_new_item_template_loads_and_lands_where_it_says() {
    use wfstudio_core::edit::templates::{NewItem, add};
    let doc = fixture();
    let wf = &doc.pipeline.as_ref().expect("pipeline").workflow;
    let mut expected = vec![
        "pipeline.workflow.inputs.input",
        "pipeline.workflow.outputs.output",
        "pipeline.workflow.state.cell",
        "pipeline.workflow.components.component",
    ];
    expected.extend(["pipeline.workflow.steps[3]"; 3]);
    for (item, want) in NewItem::ALL.into_iter().zip(expected) {
        let (command, path) = add(wf, item, None);
        assert_eq!(path.to_string(), want, "{}", item.label());
        let added = apply(&doc, &command)
            .unwrap_or_else(|e| panic!("{} template refused: {e}", item.label()));
        let value = wfstudio_core::edit::tree::to_value(&added);
        assert!(
            wfstudio_core::edit::tree::get(&value, &path).is_some(),
            "{} is at {path}",
            item.label()
        );
    }
    let (command, path) = add(wf, NewItem::Emit, Some((step(0).key("steps"), 0)));
    assert_eq!(path.to_string(), "pipeline.workflow.steps[0].steps[0]");
    assert!(apply(&doc, &command).is_ok());
}
