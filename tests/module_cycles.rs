//! No module of a crate reaches itself through other modules' paths
//! (`crate::a::b`, `super::x`, `use crate::{a, b::{c, d}}`): each crate's
//! files read as a graph of modules, edges from a file to the modules its
//! paths name (outside its `#[cfg(test)]` part), and any cycle among them is
//! a failure naming the modules. A parent reaches the children it declares;
//! a module naming one of its own ancestors (a child taking its parent's
//! types) is not an edge, so only loops through other modules count.
//! Comments are not read.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

/// Every `.rs` file under `src` by module path (`mod.rs`, `lib.rs` and
/// `main.rs` name their folder's module).
fn modules(src: &Path, prefix: &Module, out: &mut BTreeMap<Module, String>) {
    for entry in std::fs::read_dir(src).expect("a source folder") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_stem()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        if path.is_dir() {
            let mut inner = prefix.clone();
            inner.push(name);
            modules(&path, &inner, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut module = prefix.clone();
            if !matches!(name.as_str(), "mod" | "lib" | "main") {
                module.push(name);
            }
            let text = std::fs::read_to_string(&path).expect("readable");
            out.insert(module, code_of(&text));
        }
    }
}

/// The code of a file to read paths in: comments dropped (doc links and
/// prose may name modules), and nothing from its `#[cfg(test)]` module on.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let test_module = line.trim_start().starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "));
        if test_module {
            break;
        }
        code.push_str(line.split("//").next().unwrap_or_default());
        code.push('\n');
    }
    code
}

/// The paths a use tree starting at `text` names, each under `prefix`.
fn use_tree(text: &str, prefix: &Module, out: &mut Vec<Module>) {
    let text = text.trim_start();
    if let Some(inner) = text.strip_prefix('{') {
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    use_tree(&inner[start..i], prefix, out);
                    return;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    use_tree(&inner[start..i], prefix, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        return;
    }
    let mut path = prefix.clone();
    let mut rest = text;
    loop {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        match &rest[..end] {
            "self" => {}
            "super" => {
                path.pop();
            }
            word => path.push(word.to_string()),
        }
        rest = &rest[end..];
        match rest.strip_prefix("::") {
            Some(next) if next.starts_with('{') => return use_tree(next, &path, out),
            Some(next) => rest = next,
            None => break,
        }
    }
    out.push(path);
}

/// The modules `code` (the file of `module`) names through `crate::` and
/// `super::` paths.
fn named(module: &Module, code: &str) -> Vec<Module> {
    let mut out = Vec::new();
    for (start, _) in code.match_indices("::") {
        let before = &code[..start];
        let word_start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let word = &before[word_start..];
        let preceded = before[..word_start].ends_with("::");
        let base: Module = match (word, preceded) {
            ("crate", false) => Vec::new(),
            ("super", false) => module[..module.len().saturating_sub(1)].to_vec(),
            _ => continue,
        };
        use_tree(&code[start + 2..], &base, &mut out);
    }
    out
}

/// The cycles among `crate_dir`'s modules, each as its module names.
fn cycles(crate_dir: &Path) -> Vec<Vec<String>> {
    let mut files = BTreeMap::new();
    modules(&crate_dir.join("src"), &Vec::new(), &mut files);
    let mut edges: BTreeMap<&Module, BTreeSet<&Module>> = BTreeMap::new();
    // A parent reaches the children it declares.
    for module in files.keys() {
        if let Some((_, parent)) = module.split_last()
            && let Some((parent, _)) = files.get_key_value(parent)
        {
            edges.entry(parent).or_default().insert(module);
        }
    }
    for (module, code) in &files {
        for path in named(module, code) {
            let target = (0..=path.len())
                .rev()
                .find_map(|k| files.get_key_value(&path[..k]).map(|(m, _)| m));
            if let Some(target) = target
                && target != module
                && !module.starts_with(target)
            {
                edges.entry(module).or_default().insert(target);
            }
        }
    }
    // Modules on a cycle: those that reach themselves.
    let reach = |from: &Module| {
        let mut seen: BTreeSet<&Module> = BTreeSet::new();
        let mut todo: Vec<&Module> = edges.get(from).into_iter().flatten().copied().collect();
        while let Some(m) = todo.pop() {
            if seen.insert(m) {
                todo.extend(edges.get(m).into_iter().flatten().copied());
            }
        }
        seen
    };
    let mut found: Vec<Vec<String>> = Vec::new();
    for module in files.keys() {
        let reached = reach(module);
        if reached.contains(module) {
            let mut cycle: Vec<String> = reached
                .into_iter()
                .filter(|m| reach(m).contains(module))
                .map(|m| m.join("::"))
                .collect();
            cycle.sort();
            if !found.contains(&cycle) {
                found.push(cycle);
            }
        }
    }
    found
}

#[test]
fn no_crate_has_a_module_cycle() {
    let root = support::workspace();
    let mut report = Vec::new();
    for krate in ["schema", "onnx", "core", "editor", "runner", "app"] {
        for cycle in cycles(&root.join(krate)) {
            report.push(format!("{krate}: {}", cycle.join(" -> ")));
        }
    }
    assert!(report.is_empty(), "module cycles:\n{}", report.join("\n"));
}

#[test]
fn the_checker_sees_paths_in_use_trees_and_finds_a_loop() {
    let module: Module = vec!["a".into(), "b".into()];
    let code = "use crate::{x::{y, z::W}, self_test};\nuse super::c::D;\nlet v = crate::q::r();";
    let mut paths = named(&module, code);
    paths.sort();
    let expect = |s: &[&str]| s.iter().map(|p| p.to_string()).collect::<Module>();
    assert_eq!(
        paths,
        [
            expect(&["a", "c", "D"]),
            expect(&["q", "r"]),
            expect(&["self_test"]),
            expect(&["x", "y"]),
            expect(&["x", "z", "W"]),
        ]
    );
    let dir = std::env::temp_dir().join(format!("wfstudio-cycles-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src")).expect("mkdir");
    std::fs::write(dir.join("src/lib.rs"), "mod a;\nmod b;\nmod c;\n").expect("lib");
    std::fs::write(dir.join("src/a.rs"), "use crate::b::B;\n").expect("a");
    std::fs::write(dir.join("src/b.rs"), "pub struct B;\nuse crate::{c::C};\n").expect("b");
    std::fs::write(
        dir.join("src/c.rs"),
        "pub struct C;\nfn f() { crate::a::g() }\n#[cfg(test)]\nuse crate::b::B;\n",
    )
    .expect("c");
    assert_eq!(
        cycles(&dir),
        [vec!["a".to_string(), "b".into(), "c".into()]]
    );
    // A loop through a parent and the child it declares; a comment that
    // names a module is no edge.
    std::fs::write(dir.join("src/lib.rs"), "mod p;\nmod q;\n").expect("lib");
    for f in ["a", "b", "c"] {
        std::fs::remove_file(dir.join(format!("src/{f}.rs"))).expect("rm");
    }
    std::fs::create_dir_all(dir.join("src/p")).expect("mkdir");
    std::fs::write(dir.join("src/p/mod.rs"), "mod child;\npub struct A;\n").expect("p");
    std::fs::write(
        dir.join("src/p/child.rs"),
        "use crate::q::B;\nuse super::A;\n",
    )
    .expect("child");
    std::fs::write(
        dir.join("src/q.rs"),
        "pub struct B;\n// see crate::r\nuse crate::p::A;\n",
    )
    .expect("q");
    assert_eq!(
        cycles(&dir),
        [vec!["p".to_string(), "p::child".into(), "q".into()]]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
