//! The crate's structure keeps three rules, read from its sources:
//!
//! | Rule                                                  | Why                                                        |
//! |-------------------------------------------------------|------------------------------------------------------------|
//! | no two sibling modules import each other, at any depth | each room has one floor: the engine below the dialects, the shapes below their readers |
//! | the library's two wings (`modern`, `legacy`) import neither each other nor `layer` | one protocol generation changes without touching the other; what both need lives below them (`runtime`, `wire`) |
//! | no source file is over 600 lines                      | one concept a file, readable in one sitting                |
//!
//! A module is a file (`a/b.rs`, or `a/b/mod.rs` for the folder). An import
//! from file X of file Y counts between the two children of their nearest
//! common module that hold X and Y; a folder's `mod.rs` using its own
//! children, or a child using its folder's `mod.rs`, is a face and its rooms,
//! not two siblings. Paths are read from `use` trees and from inline
//! `crate::…` and `super::…` paths; `#[cfg(test)]` modules at the end of a
//! file are left out (their `super` is the file itself).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path: `["runtime", "drive"]` for `src/runtime/drive.rs`.
type Module = Vec<String>;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            // A binary under `bin/` is a crate of its own.
            if path.file_name().is_some_and(|name| name != "bin") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(src).expect("a file under src/");
    let mut parts: Module = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    match last.as_str() {
        "mod.rs" | "lib.rs" | "main.rs" => {}
        name => parts.push(name.trim_end_matches(".rs").to_owned()),
    }
    parts
}

/// The code of a file without its comments and its trailing test module.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim().trim_end_matches("::");
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let prefix = join(prefix, head);
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], &prefix, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], &prefix, out);
    } else if !tree.is_empty() {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        out.push(join(prefix, path));
    }
}

fn join(prefix: &str, path: &str) -> String {
    match (prefix.is_empty(), path.is_empty()) {
        (true, _) => path.to_owned(),
        (_, true) => prefix.to_owned(),
        _ => format!("{prefix}::{path}"),
    }
}

/// Every `crate::`/`super::` path a file's code names.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut other = String::new();
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        let body = ["pub(crate) use ", "pub(super) use ", "pub use ", "use "]
            .iter()
            .find_map(|keyword| trimmed.strip_prefix(keyword));
        let Some(body) = body else {
            other.push_str(line);
            other.push('\n');
            continue;
        };
        let mut statement = body.to_owned();
        while !statement.contains(';') {
            let Some(next) = lines.next() else { break };
            statement.push_str(next);
        }
        let statement = statement.split(';').next().unwrap_or_default();
        expand(statement, "", &mut out);
    }
    for root in ["crate::", "super::"] {
        let mut rest = other.as_str();
        while let Some(at) = rest.find(root) {
            let before = rest[..at].chars().next_back();
            let tail = &rest[at..];
            let end = tail
                .char_indices()
                .find(|&(_, c)| !(is_ident(c) || c == ':'))
                .map_or(tail.len(), |(i, _)| i);
            if !before.is_some_and(is_ident) {
                out.push(tail[..end].trim_end_matches(':').to_owned());
            }
            rest = &tail[root.len()..];
        }
    }
    out
}

/// The module a path names, as far as it names modules that exist.
fn resolve(from: &Module, path: &str, modules: &BTreeSet<Module>) -> Option<Module> {
    let mut segments = path.split("::").filter(|s| !s.is_empty());
    let mut base: Module = match segments.next()? {
        "crate" => Vec::new(),
        "super" => {
            let mut base = from.clone();
            base.pop()?;
            base
        }
        "self" => from.clone(),
        _ => return None,
    };
    for segment in segments {
        match segment {
            "super" => {
                base.pop()?;
            }
            name => {
                let mut next = base.clone();
                next.push(name.to_owned());
                if !modules.contains(&next) {
                    break;
                }
                base = next;
            }
        }
    }
    Some(base)
}

/// Imports between sibling modules, by their parent, with the files that
/// make each.
type Siblings = BTreeMap<Module, BTreeMap<(String, String), Vec<String>>>;

/// The source roots of the workspace's crates: the library, the gateway's
/// library and the gateway binary.
const CRATES: [&str; 3] = ["src", "gateway/src", "gateway/src/bin/mcp-tasks-gateway"];

fn sibling_imports(root: &str) -> Siblings {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(root);
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|file| module_of(&src, file)).collect();
    let mut siblings = Siblings::new();
    for file in &files {
        let from = module_of(&src, file);
        let text = std::fs::read_to_string(file).expect("read a source file");
        for path in paths(&code(&text)) {
            let Some(to) = resolve(&from, &path, &modules) else {
                continue;
            };
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            let (Some(a), Some(b)) = (from.get(common), to.get(common)) else {
                continue; // a face and its rooms
            };
            let parent = from[..common].to_vec();
            let by = format!("{} ({path})", file.strip_prefix(&src).unwrap().display());
            siblings
                .entry(parent)
                .or_default()
                .entry((a.clone(), b.clone()))
                .or_default()
                .push(by);
        }
    }
    siblings
}

/// The pairs of modules that reach each other, in each parent's graph.
fn cycles(siblings: &Siblings) -> Vec<String> {
    let mut found = Vec::new();
    for (parent, edges) in siblings {
        let reach = |start: &str| {
            let mut seen = BTreeSet::from([start.to_owned()]);
            let mut todo = vec![start.to_owned()];
            while let Some(at) = todo.pop() {
                for (a, b) in edges.keys() {
                    if *a == at && seen.insert(b.clone()) {
                        todo.push(b.clone());
                    }
                }
            }
            seen
        };
        for ((a, b), by) in edges {
            if reach(b).contains(a) {
                let place = if parent.is_empty() {
                    "crate".to_owned()
                } else {
                    parent.join("::")
                };
                found.push(format!("{place}: {a} -> {b} (by {}) and back", by[0]));
            }
        }
    }
    found
}

#[test]
fn no_two_sibling_modules_import_each_other() {
    for root in CRATES {
        let siblings = sibling_imports(root);
        assert!(
            siblings.values().map(|edges| edges.len()).sum::<usize>() >= 5,
            "the reader finds the imports of {root}"
        );
        let found = cycles(&siblings);
        assert!(
            found.is_empty(),
            "module cycles in {root}:\n{}",
            found.join("\n")
        );
    }
}

/// The library's wings, one per protocol generation.
const WINGS: [&str; 2] = ["modern", "legacy"];

/// Whether an import from module `from` of module `to` leaves a wing for
/// the other wing or for the layer above both.
fn crosses(from: &Module, to: &Module) -> bool {
    let (Some(wing), Some(target)) = (from.first(), to.first()) else {
        return false;
    };
    WINGS.contains(&wing.as_str())
        && target != wing
        && (WINGS.contains(&target.as_str()) || target == "layer")
}

/// The names `lib.rs` re-exports from a wing or the layer: `crate::Name`
/// reaches that module as surely as its path does.
fn reexports(src: &Path) -> BTreeMap<String, Module> {
    let text = std::fs::read_to_string(src.join("lib.rs")).expect("read lib.rs");
    let mut found = Vec::new();
    for line in code(&text).lines() {
        if let Some(tree) = line.trim().strip_prefix("pub use ") {
            expand(tree.trim_end_matches(';'), "", &mut found);
        }
    }
    found
        .into_iter()
        .filter_map(|path| {
            let mut segments: Vec<&str> = path.split("::").collect();
            let name = segments.pop()?.to_owned();
            let top = segments.first()?;
            (WINGS.contains(top) || *top == "layer").then(|| (name, vec![(*top).to_owned()]))
        })
        .collect()
}

/// Every import that leaves a wing of the library for the other wing or for
/// the layer, as `file (path)`; and how many imports of the wings were read.
fn wing_crossings() -> (Vec<String>, usize) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|file| module_of(&src, file)).collect();
    let names = reexports(&src);
    let (mut found, mut read) = (Vec::new(), 0);
    for file in &files {
        let from = module_of(&src, file);
        if !from
            .first()
            .is_some_and(|top| WINGS.contains(&top.as_str()))
        {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read a source file");
        for path in paths(&code(&text)) {
            let Some(mut to) = resolve(&from, &path, &modules) else {
                continue;
            };
            if to.is_empty() {
                let name = path.trim_start_matches("crate::").split("::").next();
                match name.and_then(|name| names.get(name)) {
                    Some(module) => to = module.clone(),
                    None => continue,
                }
            }
            read += 1;
            if crosses(&from, &to) {
                let file = file.strip_prefix(&src).unwrap().display();
                found.push(format!("{file} ({path})"));
            }
        }
    }
    (found, read)
}

#[test]
fn the_wings_import_neither_each_other_nor_the_layer() {
    let (found, read) = wing_crossings();
    assert!(read >= 20, "the reader finds the wings' imports ({read})");
    assert!(
        found.is_empty(),
        "imports out of a wing, to the other wing or the layer:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_wing_check_sees_a_wing_reach_across_or_up() {
    let module = |path: &str| -> Module { path.split("::").map(str::to_owned).collect() };
    assert!(crosses(
        &module("modern::push"),
        &module("legacy::sessions")
    ));
    assert!(crosses(
        &module("legacy::push"),
        &module("modern::push::listen")
    ));
    assert!(crosses(
        &module("legacy::route"),
        &module("layer::classify")
    ));
    assert!(!crosses(
        &module("modern::methods"),
        &module("modern::route")
    ));
    assert!(!crosses(&module("legacy::push"), &module("runtime::feed")));
    assert!(!crosses(
        &module("layer::classify"),
        &module("legacy::route")
    ));
}

#[test]
fn the_cycle_check_sees_a_cycle_between_two_files() {
    let mut siblings = Siblings::new();
    let edge = |a: &str, b: &str| ((a.to_owned(), b.to_owned()), vec!["x".to_owned()]);
    siblings.insert(
        vec!["wire".to_owned()],
        BTreeMap::from([edge("envelope", "scan"), edge("scan", "envelope")]),
    );
    assert_eq!(cycles(&siblings).len(), 2);
    siblings.insert(Vec::new(), BTreeMap::from([edge("a", "b"), edge("b", "c")]));
    siblings.remove(&vec!["wire".to_owned()]);
    assert!(cycles(&siblings).is_empty());
}

#[test]
fn use_trees_and_inline_paths_are_read_whole() {
    let text = "use crate::{a::{b, c as d}, e};\nfn f() { super::g::h(); xcrate::no(); }";
    let found = paths(&code(text));
    assert_eq!(
        found,
        ["crate::a::b", "crate::a::c", "crate::e", "super::g::h"]
    );
}

#[test]
fn no_source_file_is_over_600_lines() {
    let mut files = Vec::new();
    for root in CRATES {
        sources(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join(root),
            &mut files,
        );
    }
    let long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(file).ok()?.lines().count();
            (lines > 600).then(|| format!("{} ({lines} lines)", file.display()))
        })
        .collect();
    assert!(long.is_empty(), "files over 600 lines: {long:?}");
}
