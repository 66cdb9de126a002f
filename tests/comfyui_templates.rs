//! ComfyUI's official workflow templates (the wheel `scripts/templates.sh`
//! fetches, pinned by version and sha256, into `.cache/comfyui-templates`
//! or `$WFSTUDIO_TEMPLATES`): every local template (not the cloud `api_*`
//! ones) is imported as the CLI and the studio import it with no flag
//! (the bundled node definitions), and its outcome must be the one
//! `fixtures/comfyui/template_outcomes.tsv` lists: lowered (the document
//! validates), or refused for a cause (a cloud node, a 3D mesh output,
//! language-model text generation, a class without definition, or
//! what the lowering does not build) at a node of a class (`node`), at one
//! of its inputs (`input`), or as a whole graph (`graph`). Any change fails;
//! `WFSTUDIO_UPDATE_FIXTURES=1` rewrites the table after an improvement.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use support::lowering::first_refusal;
use wfstudio_core::comfyui::lower::Target;
use wfstudio_core::comfyui::{NodeDefs, import};

/// The unpacked templates, if fetched (CI requires them).
fn templates() -> Option<PathBuf> {
    let dir = std::env::var_os("WFSTUDIO_TEMPLATES")
        .map(PathBuf::from)
        .unwrap_or_else(|| support::workspace().join(".cache/comfyui-templates"));
    if dir.join("index.json").is_file() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "the ComfyUI templates are missing at {} (run scripts/templates.sh fetch); CI requires them",
            dir.display()
        );
    }
    eprintln!("skipping: ComfyUI templates not found at {}", dir.display());
    None
}

/// Each template's first category in `index.json` (Image, Video, ...).
fn categories(dir: &std::path::Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(dir.join("index.json")).expect("index.json");
    let index: serde_json::Value = serde_json::from_str(&text).expect("index JSON");
    let mut out = BTreeMap::new();
    for category in index.as_array().expect("a list of categories") {
        let title = category["title"].as_str().unwrap_or("?");
        for template in category["templates"].as_array().into_iter().flatten() {
            if let Some(name) = template["name"].as_str() {
                out.entry(format!("{name}.json"))
                    .or_insert_with(|| title.replace(' ', "_"));
            }
        }
    }
    out
}

/// The local templates: workflow files but the cloud ones, the indexes and
/// the search options.
fn local(dir: &std::path::Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("templates folder")
        .filter_map(|e| e.ok()?.file_name().to_str().map(str::to_string))
        .filter(|n| n.ends_with(".json"))
        .filter(|n| !n.starts_with("api_") && !n.starts_with("index") && n != "fuse_options.json")
        .collect();
    files.sort();
    files
}

/// What importing one template gives, as the table's last columns.
fn outcome(path: &std::path::Path, defs: &NodeDefs) -> String {
    let bytes = std::fs::read(path).expect("template");
    let imported = match import(&bytes, Some(defs), &Target::default()) {
        Ok(imported) => imported,
        Err(error) => return format!("unreadable\t-\t-\t{error}"),
    };
    let Some(r) = first_refusal(&imported.outcome, &path.display().to_string()) else {
        return "lowered\t-\t-\t-".into();
    };
    let kind = match (r.node.is_empty(), &r.input) {
        (true, _) => "graph",
        (false, Some(_)) => "input",
        (false, None) => "node",
    };
    let class = if r.class.is_empty() { "-" } else { &r.class };
    format!("refused\t{}\t{kind}\t{class}", r.cause().name())
}

#[test]
fn every_local_template_has_its_listed_outcome() {
    let Some(dir) = templates() else {
        return;
    };
    let defs = NodeDefs::builtin();
    let categories = categories(&dir);
    let mut rows = Vec::new();
    let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for file in local(&dir) {
        let category = categories.get(&file).cloned().unwrap_or_else(|| "-".into());
        let got = outcome(&dir.join(&file), &defs);
        let count = counts.entry(category.clone()).or_default();
        count.0 += usize::from(got.starts_with("lowered"));
        count.1 += 1;
        rows.push(format!("{file}\t{category}\t{got}"));
    }
    let lowered: usize = counts.values().map(|c| c.0).sum();
    let summary: Vec<String> = counts
        .iter()
        .map(|(category, (l, n))| format!("{category} {l}/{n}"))
        .collect();
    let mut causes: BTreeMap<&str, usize> = BTreeMap::new();
    for row in &rows {
        if let Some(cause) = row.split('\t').nth(3).filter(|c| *c != "-") {
            *causes.entry(cause).or_default() += 1;
        }
    }
    eprintln!(
        "templates lowered: {lowered} of {} ({}); refused by cause: {causes:?}",
        rows.len(),
        summary.join(", ")
    );
    let header = "# file\tcategory\toutcome\tcause\trefused at (graph, node or input)\tclass";
    let table = format!("{header}\n{}\n", rows.join("\n"));
    let path = support::fixtures().join("comfyui/template_outcomes.tsv");
    if std::env::var("WFSTUDIO_UPDATE_FIXTURES").as_deref() == Ok("1") {
        std::fs::write(&path, &table).expect("write the table");
        return;
    }
    let listed = std::fs::read_to_string(&path).expect("fixtures/comfyui/template_outcomes.tsv");
    let want: BTreeMap<&str, &str> = listed
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .collect();
    let mut changed = Vec::new();
    for row in &rows {
        let (file, got) = row.split_once('\t').expect("row");
        if want.get(file) != Some(&got) {
            changed.push(format!(
                "{file}: {got} (listed: {})",
                want.get(file).unwrap_or(&"nothing")
            ));
        }
    }
    assert_eq!(
        want.len(),
        rows.len(),
        "every local template is listed once"
    );
    assert!(
        changed.is_empty(),
        "template outcomes changed (an improvement: rerun with WFSTUDIO_UPDATE_FIXTURES=1):\n{}",
        changed.join("\n")
    );
}

/// The search options beside the templates are not a workflow: a clear
/// error, no panic.
#[test]
fn a_file_that_is_not_a_workflow_is_refused_clearly() {
    let Some(dir) = templates() else {
        return;
    };
    let bytes = std::fs::read(dir.join("fuse_options.json")).expect("fuse_options.json");
    match import(&bytes, Some(&NodeDefs::builtin()), &Target::default()) {
        Err(error) => assert!(!error.to_string().is_empty()),
        Ok(imported) => {
            let refusals = imported.outcome.expect_err("not a workflow");
            assert!(!refusals[0].message.is_empty());
        }
    }
}

/// The product's own definitions (`assets/comfyui/node_defs_own.json`)
/// name every widget value of every node of their classes in every
/// template, cloud ones included: as many slots as values, a dynamic
/// combo's option adding its own. Classes whose saved values vary in
/// length by design (a combo's own option list, older saves of a
/// growing node) are checked to hold at least their named slots; a
/// bundled class the own definitions replace because its inputs grew, to
/// hold the bundled or the grown count.
#[test]
fn the_own_definitions_fit_every_template_node() {
    let Some(dir) = templates() else {
        return;
    };
    let own: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(support::workspace().join("assets/comfyui/node_defs_own.json"))
            .expect("own definitions"),
    )
    .expect("JSON");
    let classes = own["nodes"].as_object().expect("nodes");
    let bundled: serde_json::Value =
        serde_json::from_str(wfstudio_core::comfyui::defs::BUILTIN_JSON).expect("bundled JSON");
    // Bundled classes whose inputs grew since (the own definition keeps
    // the bundled inputs first): saves before the growth hold fewer values.
    const GROWN: &[&str] = &["ImageScaleToTotalPixels", "ModelSamplingAuraFlow"];
    let mut older = std::collections::BTreeMap::new();
    for name in classes.keys() {
        let Some(old) = bundled["nodes"].get(name) else {
            continue;
        };
        assert!(
            GROWN.contains(&name.as_str()),
            "{name} is defined by the bundled file too: the own definitions replace only grown classes"
        );
        let (old, new) = (&old["inputs"], &classes[name]["inputs"]);
        let count = old.as_array().map_or(0, Vec::len);
        assert_eq!(
            new.as_array().map(|n| &n[..count]),
            old.as_array().map(|o| &o[..]),
            "{name}"
        );
        let widgets = old
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["widget"] == true);
        older.insert(name.as_str(), widgets.count());
    }
    const VARIABLE: &[&str] = &[
        "CustomCombo",
        "TextGenerate",
        "TextGenerateLTX2Prompt",
        "ImageCompare",
        "ResolutionSelector",
    ];
    let mut checked = 0;
    let mut wrong = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("templates")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    for path in files {
        let Ok(doc) = serde_json::from_str::<serde_json::Value>(
            &std::fs::read_to_string(&path).expect("template"),
        ) else {
            continue;
        };
        let inner = doc
            .pointer("/definitions/subgraphs")
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
            .flat_map(|s| s["nodes"].as_array().into_iter().flatten());
        let top = doc["nodes"].as_array().into_iter().flatten();
        for node in top.chain(inner) {
            let Some(class) = node["type"].as_str().and_then(|t| classes.get(t)) else {
                continue;
            };
            let Some(values) = node["widgets_values"].as_array() else {
                continue;
            };
            let layout: Vec<&str> = match class["widgets_values_layout"].as_array() {
                Some(l) => l.iter().filter_map(|v| v.as_str()).collect(),
                None => {
                    let mut l = Vec::new();
                    for input in class["inputs"].as_array().into_iter().flatten() {
                        if input["widget"] == true {
                            l.push(input["name"].as_str().unwrap_or_default());
                            if input["control_after_generate"] == true {
                                l.push("<control_after_generate>");
                            }
                        }
                    }
                    l
                }
            };
            // Walk the values: a dynamic combo's option adds its widgets
            // right after it.
            let mut slots = 0;
            for name in &layout {
                let option = values
                    .get(slots)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default();
                slots += 1;
                let added = class["dynamic_combos"][*name][option].as_array();
                slots += added.map_or(0, Vec::len);
            }
            let kind = node["type"].as_str().unwrap_or_default();
            let fits = match (VARIABLE.contains(&kind), older.get(kind)) {
                (true, _) => values.len() >= layout.len().min(2),
                (false, Some(&before)) => (before..=slots).contains(&values.len()),
                (false, None) => values.len() == slots,
            };
            checked += 1;
            if !fits {
                wrong.push(format!(
                    "{} {kind}: {} values, {slots} named",
                    path.file_name().unwrap_or_default().to_string_lossy(),
                    values.len()
                ));
            }
        }
    }
    eprintln!("checked {checked} template nodes against the own definitions");
    assert!(
        checked > 500,
        "the templates use the own classes ({checked} nodes)"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The API graph of template `path` made small to run: every literal
/// `width` and `height` (and the primitives that set them) 64 (a blank
/// picture's and a resize's to both dimensions 128), video
/// `length`s two latent frames (written over a length another node
/// computes, MiniMax H3's math on seconds), batches 1, audio one second,
/// resolution selectors their least (at least 128); the samplers keep
/// their steps (64x64 stand-in steps are cheap).
fn small(path: &std::path::Path, defs: &NodeDefs) -> serde_json::Value {
    use serde_json::{Value, json};
    let found =
        wfstudio_core::comfyui::read(&std::fs::read(path).expect("template")).expect("read");
    let mut api = wfstudio_core::comfyui::import::api_of(&found, Some(defs))
        .expect("an API graph")
        .api;
    let frames = |class: &str| match class {
        "EmptyLTXVLatentVideo" | "EmptyCosmosLatentVideo" => 9,
        "EmptyMochiLatentVideo" => 7,
        _ => 5,
    };
    let mut primitives = Vec::new();
    let is_primitive = |api: &Value, origin: &str| {
        api[origin]["class_type"]
            .as_str()
            .is_some_and(|c| c.starts_with("Primitive"))
    };
    let computed_lengths: Vec<String> = api
        .as_object()
        .expect("an object")
        .iter()
        .filter(|(_, node)| {
            node["inputs"]["length"][0]
                .as_str()
                .is_some_and(|origin| !is_primitive(&api, origin))
        })
        .map(|(id, _)| id.clone())
        .collect();
    let nodes = api.as_object_mut().expect("an object");
    for (id, node) in nodes.iter_mut() {
        let class = node["class_type"].as_str().unwrap_or_default().to_string();
        let Some(inputs) = node["inputs"].as_object_mut() else {
            continue;
        };
        for (name, value) in inputs.iter_mut() {
            let small = match name.as_str() {
                // A blank picture is halved into LTX-2's latent size,
                // whose least side is 64.
                "width" | "height" if class == "EmptyImage" => json!(128),
                "width" | "height" => json!(64),
                // A picture resized to both dimensions sizes LTX-2's
                // latent, halved.
                "resize_type.width" | "resize_type.height" => json!(128),
                "length" => json!(frames(&class)),
                "batch_size" => json!(1),
                "seconds" => json!(1.0),
                "megapixels" => json!(0.01),
                // LTX-2's templates halve the selected size, and its video
                // latent's least side is 64.
                "minimum" => json!(128),
                _ => continue,
            };
            match value {
                Value::Number(_) => *value = small,
                Value::Array(_) if name == "length" && computed_lengths.contains(id) => {
                    *value = small
                }
                Value::Array(link) => {
                    if let Some(origin) = link.first().and_then(Value::as_str) {
                        primitives.push((origin.to_string(), small));
                    }
                }
                _ => {}
            }
        }
    }
    for (origin, small) in primitives {
        if is_primitive(&api, &origin) {
            api[&origin]["inputs"]["value"] = small;
        }
    }
    api
}

/// Every template that lowers becomes a package that checks and runs,
/// small (64x64, two latent frames), with stand-in models.
#[test]
fn every_lowered_template_becomes_a_package_that_checks_and_runs_small() {
    let Some(dir) = templates() else {
        return;
    };
    if !support::runtime_available() {
        return;
    }
    let listed = std::fs::read_to_string(support::fixtures().join("comfyui/template_outcomes.tsv"))
        .expect("the outcomes table");
    let lowered: Vec<&str> = listed
        .lines()
        .filter(|l| l.split('\t').nth(2) == Some("lowered"))
        .filter_map(|l| l.split('\t').next())
        .collect();
    assert!(lowered.len() >= 40, "{} templates lower", lowered.len());
    let defs = NodeDefs::builtin();
    let root = std::env::temp_dir().join(format!("wfstudio-templates-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("scratch");
    let text = |p: &std::path::Path| p.to_str().expect("utf-8").to_string();
    for file in lowered {
        let stem = file.trim_end_matches(".json");
        let graph = root.join(format!("{stem}.api.json"));
        std::fs::write(&graph, small(&dir.join(file), &defs).to_string()).expect("graph");
        let (package, out) = (root.join(stem), root.join(format!("{stem}-out")));
        let import = [
            "import-comfyui".to_string(),
            text(&graph),
            "--package-out".into(),
            text(&package),
            "--stand-in-models".into(),
        ];
        let import: Vec<&str> = import.iter().map(String::as_str).collect();
        let (code, _, stderr) = support::run_wfstudio(&import);
        assert_eq!(code, 0, "import {file}: {stderr}");
        let (code, stdout, stderr) = support::run_wfstudio(&["check", &text(&package)]);
        assert_eq!(code, 0, "check {file}: {stdout}{stderr}");
        let (code, stdout, stderr) =
            support::run_wfstudio(&["run", &text(&package), "--out", &text(&out)]);
        assert_eq!(code, 0, "run {file}: {stdout}{stderr}");
        let shown = std::fs::read_dir(&out)
            .expect("the run's outputs")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .any(|p| {
                p.extension()
                    .is_some_and(|x| ["png", "gif", "wav", "txt"].iter().any(|e| x == *e))
            });
        assert!(shown, "{file}: no picture, video, sound or text written");
        let _ = std::fs::remove_dir_all(&package);
        let _ = std::fs::remove_dir_all(&out);
    }
    let _ = std::fs::remove_dir_all(&root);
}
