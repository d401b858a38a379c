//! No import circle among the host library's modules: a module may use
//! its own submodules and its ancestors, but two modules that are not one
//! inside the other never use each other, directly or round a longer
//! circle. A circle is what made adding a capability touch ten files.
//!
//! The graph is read from the sources: every `crate::…` and `super::…`
//! path outside comments and unit-test modules, resolved to the longest
//! module it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`capability/docker`, empty for the root) → source text.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut pending = vec![src.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable source directory") {
            let path = entry.expect("entry").path();
            let relative = path.strip_prefix(src).expect("below src").to_path_buf();
            if relative.starts_with("bin") {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).expect("readable source");
                found.insert(module_of(&relative), text);
            }
        }
    }
    found
}

fn module_of(relative: &Path) -> String {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("/")
}

/// The code of a file: no comments, no unit-test module.
fn code_of(text: &str) -> String {
    let text = text
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default();
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `a::b::c` paths after each `prefix` in `code` that is not itself
/// the tail of a longer path (`super::super::x` is read once).
fn paths_after<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = Vec<&'a str>> + 'a {
    code.match_indices(prefix)
        .filter(move |(at, _)| !code[..*at].ends_with("::"))
        .map(move |(at, _)| {
            let rest = &code[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            rest[..end]
                .split("::")
                .filter(|part| !part.is_empty())
                .collect()
        })
}

fn is_within(module: &str, ancestor: &str) -> bool {
    ancestor.is_empty() || module == ancestor || module.starts_with(&format!("{ancestor}/"))
}

/// Module → the modules it uses, other than its own ancestors and
/// descendants, and the modules it contains: using a module reaches what
/// it contains, so `state` using `capability` and `capability/log` using
/// `state` is a circle.
fn graph(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let resolve = |parts: &[&str]| {
        (1..=parts.len())
            .rev()
            .map(|len| parts[..len].join("/"))
            .find(|candidate| modules.contains_key(candidate))
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in modules {
        let code = code_of(text);
        let code = code.as_str();
        let own: Vec<&str> = module.split('/').filter(|p| !p.is_empty()).collect();
        let used = paths_after(code, "crate::")
            .filter_map(|path| resolve(&path))
            .chain(paths_after(code, "super::").filter_map(|path| {
                // One level up for the `super::` matched, one more for each
                // that follows it.
                let ups = 1 + path.iter().take_while(|part| **part == "super").count();
                let base = &own[..own.len().saturating_sub(ups)];
                let full: Vec<&str> = base
                    .iter()
                    .copied()
                    .chain(path.into_iter().skip(ups - 1))
                    .collect();
                resolve(&full)
            }));
        for target in used {
            if !is_within(module, &target) && !is_within(&target, module) {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    for module in modules.keys() {
        if let Some((parent, _)) = module.rsplit_once('/') {
            edges
                .entry(parent.to_string())
                .or_default()
                .insert(module.clone());
        }
    }
    edges
}

/// A circle in `edges`, if there is one.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|seen| seen == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}

#[test]
fn the_host_library_has_no_import_circle() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    assert!(
        modules.contains_key("capability/docker"),
        "the tree was read"
    );
    let edges = graph(&modules);
    assert!(
        edges.get("kind").is_some_and(|used| used.contains("state")),
        "the graph sees uses"
    );
    assert_eq!(circle(&edges), None);
}

#[test]
fn a_circle_is_found() {
    let modules = BTreeMap::from([
        ("a".to_string(), "use crate::b::B;".to_string()),
        ("b".to_string(), "fn f() { crate::c::g() }".to_string()),
        (
            "c".to_string(),
            "// crate::a is only a comment\nuse super::a;".to_string(),
        ),
    ]);
    let edges = graph(&modules);
    assert_eq!(
        circle(&edges),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    let deep = BTreeMap::from([
        ("a".to_string(), String::new()),
        (
            "c/d/e".to_string(),
            "use super::super::super::a::A;".to_string(),
        ),
        ("c/d".to_string(), String::new()),
        ("c".to_string(), String::new()),
    ]);
    assert!(
        graph(&deep)["c/d/e"].contains("a"),
        "each super:: is one level up"
    );
    // Using a module reaches what it contains.
    let nested = BTreeMap::from([
        (
            "state".to_string(),
            "use crate::capability::Calls;".to_string(),
        ),
        ("capability".to_string(), String::new()),
        (
            "capability/log".to_string(),
            "use crate::state::State;".to_string(),
        ),
    ]);
    assert_eq!(
        circle(&graph(&nested)),
        Some(vec![
            "capability".into(),
            "capability/log".into(),
            "state".into(),
            "capability".into()
        ])
    );
    let mut broken = modules.clone();
    broken.insert("c".into(), "// use super::a;".into());
    assert_eq!(circle(&graph(&broken)), None, "a chain is no circle");
}
