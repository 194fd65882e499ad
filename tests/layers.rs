//! The layers of ARCHITECTURE.md hold: in the agent (agent/) and the writer (writer/src/),
//! every `use crate::…`, `crate::…` or `super::…` path of a module names only modules of a
//! lower layer (or the module's own folder), and no modules import each other in a circle.
//!
//! ARCHITECTURE.md lists each crate's layers in a fenced block whose info string is
//! `layers DIR`, top layer first, one layer a line, its modules separated by spaces. A module
//! stands for its folder: `capture` covers `capture/bci/natives.rs`. Tests (`mod tests`, files
//! named `tests.rs`) are left out. No JVM is started: this reads the sources as text.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The layer blocks of ARCHITECTURE.md: directory → layers, top first.
fn layer_blocks(text: &str) -> BTreeMap<String, Vec<Vec<String>>> {
    let mut blocks = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(dir) = line.trim().strip_prefix("```layers ") else {
            continue;
        };
        let mut layers = Vec::new();
        for line in lines.by_ref() {
            if line.trim_start().starts_with("```") {
                break;
            }
            // A layer's line may end with a comment after `#`.
            let modules: Vec<String> = line
                .split('#')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .map(String::from)
                .collect();
            if !modules.is_empty() {
                layers.push(modules);
            }
        }
        blocks.insert(dir.trim().to_string(), layers);
    }
    blocks
}

/// Every module of the crate under `dir`, by path (`capture::bci::natives`), with its source
/// (tests cut off).
fn modules(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(dir).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            if parts.last().is_some_and(|p| p == "tests") {
                continue;
            }
            let name = if parts.is_empty() {
                "crate".to_string()
            } else {
                parts.join("::")
            };
            let source = std::fs::read_to_string(&path).unwrap();
            out.insert(name, without_tests(&source));
        }
    }
    out
}

/// The source without its `#[cfg(test)] mod …` (by convention the last item), comments and
/// the insides of string literals.
fn without_tests(source: &str) -> String {
    let cut = source
        .find("#[cfg(test)]\nmod ")
        .map_or(source, |i| &source[..i]);
    let mut out = String::with_capacity(cut.len());
    for line in cut.lines() {
        let mut in_string = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if in_string {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => {
                        in_string = false;
                        out.push('"');
                    }
                    _ => {}
                }
                continue;
            }
            if c == '/' && chars.peek() == Some(&'/') {
                break;
            }
            if c == '"' {
                in_string = true;
            }
            out.push(c);
        }
        out.push('\n');
    }
    out
}

/// The module a path names, seen from `from` (`crate::a::b`, `super::x`), if it is one of
/// `known` (the longest prefix that is).
fn target(path: &[&str], from: &str, known: &BTreeSet<String>) -> Option<String> {
    let mut segments: Vec<&str> = Vec::new();
    let mut rest = path;
    match rest.first() {
        Some(&"crate") => rest = &rest[1..],
        Some(&"super") => {
            segments = from.split("::").collect();
            if from == "crate" {
                segments.clear();
            }
            while rest.first() == Some(&"super") {
                segments.pop();
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    segments.extend(rest.iter().copied());
    (1..=segments.len())
        .rev()
        .map(|k| segments[..k].join("::"))
        .find(|candidate| known.contains(candidate))
}

/// The modules each module names (its own folder's aside).
fn imports(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let known: BTreeSet<String> = modules.keys().cloned().collect();
    let nested = |a: &str, b: &str| {
        a == b || a.starts_with(&format!("{}::", b)) || b.starts_with(&format!("{}::", a))
    };
    let mut out = BTreeMap::new();
    for (name, source) in modules {
        let mut found = BTreeSet::new();
        let mut add = |path: &[&str]| {
            if let Some(t) = target(path, name, &known) {
                if !nested(&t, name) && t != "crate" {
                    found.insert(t);
                }
            }
        };
        // `use crate::{a, b::{c, d}}`: each path of the tree.
        for (at, _) in source.match_indices("use ") {
            let rest = &source[at + 4..];
            let Some(end) = rest.find(';') else { continue };
            let tree = without_renames(&rest[..end]).replace(char::is_whitespace, "");
            let mut paths = Vec::new();
            use_paths("", &tree, &mut paths);
            for path in paths {
                let path: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
                if matches!(path.first(), Some(&"crate") | Some(&"super")) {
                    add(&path);
                }
            }
        }
        // Every other `crate::…` and `super::…` path.
        let bytes = source.as_bytes();
        for start in ["crate::", "super::"] {
            for (at, _) in source.match_indices(start) {
                if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                    continue;
                }
                let text: String = source[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let path: Vec<&str> = text.split("::").filter(|s| !s.is_empty()).collect();
                add(&path);
            }
        }
        out.insert(name.clone(), found);
    }
    out
}

/// A `use` tree without its renames (`a as b`, `c as _`).
fn without_renames(tree: &str) -> String {
    let mut out = String::new();
    let mut words = tree.split_whitespace().peekable();
    while let Some(word) = words.next() {
        if word == "as" {
            // The new name, and whatever punctuation follows it.
            if let Some(name) = words.next() {
                out.extend(name.chars().filter(|c| !(c.is_alphanumeric() || *c == '_')));
            }
            continue;
        }
        out.push_str(word);
        out.push(' ');
    }
    out
}

/// The paths of a `use` tree (`a::{b, c::{d, e}}` without spaces), each after `prefix`.
fn use_paths(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let (head, group) = match tree.find("::{") {
        Some(i) if tree.ends_with('}') => (&tree[..i], Some(&tree[i + 3..tree.len() - 1])),
        _ => (tree, None),
    };
    let path = match (prefix.is_empty(), head.is_empty()) {
        (true, _) => head.to_string(),
        (false, true) => prefix.to_string(),
        (false, false) => format!("{}::{}", prefix, head),
    };
    let Some(group) = group else {
        out.push(path.trim_end_matches("::self").to_string());
        return;
    };
    // The group's items, split at its own commas (not those of nested groups).
    let (mut depth, mut from) = (0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                use_paths(&path, &group[from..i], out);
                from = i + 1;
            }
            _ => {}
        }
    }
    if from < group.len() {
        use_paths(&path, &group[from..], out);
    }
}

/// The circles among modules (strongly connected groups of more than one).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Kosaraju: finishing order on the graph, then components on its reverse.
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    fn visit<'a>(
        n: &'a str,
        g: &'a BTreeMap<String, BTreeSet<String>>,
        seen: &mut BTreeSet<&'a str>,
        order: &mut Vec<&'a str>,
    ) {
        if !seen.insert(n) {
            return;
        }
        for m in g.get(n).into_iter().flatten() {
            visit(m, g, seen, order);
        }
        order.push(n);
    }
    for n in graph.keys() {
        visit(n, graph, &mut seen, &mut order);
    }
    let mut reverse: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, bs) in graph {
        for b in bs {
            reverse.entry(b.as_str()).or_default().push(a.as_str());
        }
    }
    let mut assigned = BTreeSet::new();
    let mut out = Vec::new();
    for &n in order.iter().rev() {
        if assigned.contains(n) {
            continue;
        }
        let mut group = Vec::new();
        let mut todo = vec![n];
        while let Some(m) = todo.pop() {
            if !assigned.insert(m) {
                continue;
            }
            group.push(m.to_string());
            todo.extend(reverse.get(m).into_iter().flatten().copied());
        }
        if group.len() > 1 {
            group.sort();
            out.push(group);
        }
    }
    out
}

/// What is wrong with the crate under `dir` against its `layers`: one line each.
fn violations(dir: &Path, layers: &[Vec<String>]) -> Vec<String> {
    let modules = modules(dir);
    let graph = imports(&modules);
    let layer_of = |module: &str| -> Option<(usize, String)> {
        let mut best: Option<(usize, String)> = None;
        for (i, layer) in layers.iter().enumerate() {
            for listed in layer {
                let covers = module == listed || module.starts_with(&format!("{}::", listed));
                if covers && best.as_ref().is_none_or(|(_, b)| listed.len() > b.len()) {
                    best = Some((i, listed.clone()));
                }
            }
        }
        best
    };
    let mut out = Vec::new();
    for module in modules.keys().filter(|m| *m != "crate") {
        if layer_of(module).is_none() {
            out.push(format!("{}: not in any layer of ARCHITECTURE.md", module));
        }
    }
    for (from, targets) in &graph {
        let Some((from_layer, from_unit)) = layer_of(from) else {
            continue;
        };
        for to in targets {
            let Some((to_layer, to_unit)) = layer_of(to) else {
                continue;
            };
            if from_unit == to_unit {
                continue;
            }
            if to_layer <= from_layer {
                let how = if to_layer == from_layer {
                    "sideways, within its layer"
                } else {
                    "up"
                };
                out.push(format!("{} imports {} ({})", from, to, how));
            }
        }
    }
    for circle in circles(&graph) {
        out.push(format!("a circle: {}", circle.join(" -> ")));
    }
    out
}

fn architecture() -> String {
    std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

#[test]
fn the_agent_and_the_writer_import_only_what_lies_below() {
    let blocks = layer_blocks(&architecture());
    for dir in ["agent", "writer/src"] {
        let layers = blocks
            .get(dir)
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no `layers {}` block", dir));
        let wrong = violations(&root().join(dir), layers);
        assert!(
            wrong.is_empty(),
            "{}: imports against ARCHITECTURE.md's layers:\n{}",
            dir,
            wrong.join("\n")
        );
    }
}

/// The check itself catches what it is for: an upward import, a sideways one and a circle,
/// in a crate made up here.
#[test]
fn an_upward_import_or_a_circle_is_caught() {
    let dir = std::env::temp_dir().join(format!("jlive-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("low")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write("lib.rs", "mod top; mod mid; mod low;\n");
    write("top.rs", "use crate::mid::Thing;\n");
    write(
        "mid.rs",
        "use crate::low::{deep::Deeper, Low};\npub struct Thing;\n",
    );
    write("low/mod.rs", "pub mod deep;\npub struct Low;\n");
    write("low/deep.rs", "use super::Low;\npub struct Deeper;\n");
    let layers = layer_blocks("```layers x\ntop\nmid # a comment\nlow\n```\n")["x"].clone();
    assert_eq!(violations(&dir, &layers), Vec::<String>::new());

    // Upward: low names mid, which also closes a circle.
    write(
        "low/deep.rs",
        "use super::Low;\npub struct Deeper;\nfn f() { let _ = crate::mid::Thing; }\n",
    );
    let wrong = violations(&dir, &layers);
    assert!(
        wrong.contains(&"low::deep imports mid (up)".to_string()),
        "{:?}",
        wrong
    );
    assert!(
        wrong.iter().any(|w| w.starts_with("a circle: ")),
        "{:?}",
        wrong
    );

    // Sideways, and a module in no layer.
    write("low/deep.rs", "use super::Low;\npub struct Deeper;\n");
    write("side.rs", "use crate::mid::Thing;\n");
    write("lib.rs", "mod top; mod mid; mod low; mod side;\n");
    let layers = layer_blocks("```layers x\ntop\nmid side\nlow\n```\n")["x"].clone();
    let wrong = violations(&dir, &layers);
    assert_eq!(wrong, ["side imports mid (sideways, within its layer)"]);
    write("extra.rs", "\n");
    assert!(violations(&dir, &layers)
        .contains(&"extra: not in any layer of ARCHITECTURE.md".to_string()));
    let _ = std::fs::remove_dir_all(&dir);
}
