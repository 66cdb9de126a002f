//! The node-graph view of every corpus document: one node per input, state
//! cell, invoke, emit and output; wires for SSA values (carried state as
//! back-edges); frames for loops and branch cases; and a layout in which
//! nothing overlaps and every node sits inside its frame.

mod support;

use wfstudio_core::graph::{FrameKind, NodeKind, build, layout};
use wfstudio_core::validate::for_each_step;
use wfstudio_schema::types::steps::Step;
use wfstudio_schema::{DocPath, Format, Limits, parse_text};

#[test]
fn every_corpus_document_lays_out_without_overlaps() {
    let Some(shared) = support::shared() else {
        return;
    };
    let mut documents = support::corpus_documents(&shared);
    documents.push(support::fixtures().join("examples/tiny-denoise/inference_metadata.yaml"));
    for path in documents {
        let text = std::fs::read_to_string(&path).expect("readable");
        let doc = parse_text(&text, Format::Yaml, &Limits::default())
            .expect("parses")
            .document;
        let wf = &doc.pipeline.as_ref().expect("workflow").workflow;
        let graph = build(wf);
        let (mut invokes, mut emits, mut loops, mut branches) = (0, 0, 0, 0);
        for_each_step(&wf.steps, &DocPath::root(), &mut |step, _| match step {
            Step::Invoke(_) => invokes += 1,
            Step::Emit(_) => emits += 1,
            Step::Loop(_) => loops += 1,
            Step::Branch(_) => branches += 1,
            Step::Sequence(_) => {}
        });
        let count = |k: fn(&NodeKind) -> bool| graph.nodes.iter().filter(|n| k(&n.kind)).count();
        let name = path.display();
        assert_eq!(
            count(|k| matches!(k, NodeKind::Invoke { .. })),
            invokes,
            "{name}"
        );
        assert_eq!(count(|k| *k == NodeKind::Emit), emits, "{name}");
        assert_eq!(
            count(|k| *k == NodeKind::Input),
            wf.inputs.as_ref().map_or(0, |i| i.len()),
            "{name}"
        );
        assert_eq!(
            count(|k| *k == NodeKind::State),
            wf.state.as_ref().map_or(0, |s| s.len()),
            "{name}"
        );
        assert_eq!(
            count(|k| *k == NodeKind::Output),
            wf.outputs.as_ref().map_or(0, |o| o.len()),
            "{name}"
        );
        assert_eq!(
            graph
                .frames
                .iter()
                .filter(|f| f.kind == FrameKind::Loop)
                .count(),
            loops,
            "{name}"
        );
        assert_eq!(
            graph
                .frames
                .iter()
                .filter(|f| f.kind == FrameKind::Branch)
                .count(),
            branches,
            "{name}"
        );
        let frames_of = |kind: FrameKind| graph.frames.iter().filter(|f| f.kind == kind).count();
        let mut setups = 0;
        for_each_step(&wf.steps, &DocPath::root(), &mut |step, _| {
            if let Step::Loop(l) = step
                && l.setup.as_ref().is_some_and(|s| !s.is_empty())
            {
                setups += 1;
            }
        });
        assert_eq!(frames_of(FrameKind::Setup), setups, "{name}: setup lanes");
        assert_eq!(frames_of(FrameKind::Condition), loops, "{name}");
        assert_eq!(frames_of(FrameKind::Body), loops, "{name}");
        assert_eq!(count(|k| *k == NodeKind::LoopControl), loops, "{name}");
        assert_eq!(count(|k| *k == NodeKind::BranchSelect), branches, "{name}");
        for (n, node) in graph.nodes.iter().enumerate() {
            let wired = |port: usize| graph.edges.iter().any(|e| e.to == (n, port));
            match node.kind {
                NodeKind::LoopControl => {
                    assert!(
                        wired(0) && wired(1),
                        "{name}: {} gets continue_when and max_iterations wires",
                        node.label
                    );
                    let frame = node.frame.expect("in its condition lane");
                    assert_eq!(graph.frames[frame].kind, FrameKind::Condition);
                    if let Some(iteration) = node.outputs.first() {
                        let read = graph.nodes.iter().any(|m| {
                            m.frame.is_some() && m.inputs.iter().any(|p| p.value == iteration.value)
                        });
                        assert_eq!(
                            read,
                            graph.edges.iter().any(|e| e.from == (n, 0)),
                            "{name}: the iteration value {:?} is wired to its readers",
                            iteration.value
                        );
                    }
                }
                NodeKind::BranchSelect => {
                    assert!(wired(0), "{name}: {} gets its predicate wire", node.label);
                }
                _ => {}
            }
        }
        let steps: Vec<usize> = graph.nodes.iter().filter_map(|n| n.step).collect();
        assert_eq!(
            steps,
            (1..=invokes + emits).collect::<Vec<_>>(),
            "{name}: execution order numbers every step"
        );
        assert!(!graph.edges.is_empty(), "{name}");
        let carries: usize = {
            let mut n = 0;
            for_each_step(&wf.steps, &DocPath::root(), &mut |step, _| {
                if let Step::Loop(l) = step {
                    n += l.carried.as_ref().map_or(0, |c| c.len());
                }
            });
            n
        };
        assert_eq!(
            graph.edges.iter().filter(|e| e.back_edge).count(),
            carries,
            "{name}: one back-edge per carry"
        );

        let placed = layout(&graph);
        for (i, a) in placed.nodes.iter().enumerate() {
            assert!(a.w > 0.0 && a.h > 0.0, "{name}: node {i} has a size");
            for (j, b) in placed.nodes.iter().enumerate().skip(i + 1) {
                assert!(
                    !a.overlaps(b),
                    "{name}: nodes {} and {} overlap",
                    graph.nodes[i].label,
                    graph.nodes[j].label
                );
            }
            if let Some(f) = graph.nodes[i].frame {
                assert!(
                    placed.frames[f].contains(a),
                    "{name}: node {} outside its frame",
                    graph.nodes[i].label
                );
            }
            for (f, frame) in placed.frames.iter().enumerate() {
                let inside =
                    std::iter::successors(graph.nodes[i].frame, |x| graph.frames[*x].parent)
                        .any(|x| x == f);
                if !inside {
                    assert!(
                        !frame.overlaps(a),
                        "{name}: node {} overlaps frame {}",
                        graph.nodes[i].label,
                        graph.frames[f].label
                    );
                }
            }
        }
        for (f, frame) in graph.frames.iter().enumerate() {
            if let Some(parent) = frame.parent {
                assert!(
                    placed.frames[parent].contains(&placed.frames[f]),
                    "{name}: frame {} outside its parent",
                    frame.label
                );
            }
            for (g, other) in graph.frames.iter().enumerate().skip(f + 1) {
                if other.parent == frame.parent {
                    assert!(
                        !placed.frames[f].overlaps(&placed.frames[g]),
                        "{name}: sibling frames overlap"
                    );
                }
            }
        }
    }
}
