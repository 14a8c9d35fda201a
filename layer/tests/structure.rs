//! The layer's shape (issue 19): no module imports a module that imports it back, the core names
//! no emulation, and no function is longer than [`MAX_FUNCTION_LINES`].
//!
//! Nodes are the crate's top-level modules (`src/x.rs`, `src/x/**`), except that every module
//! under `ext/` is its own node (`ext::bda` holds `src/ext/bda/**`; `ext` is `src/ext/mod.rs`,
//! the registry). Edges are the `crate::…` and `super::…` paths a node's files name (imports
//! and inline paths, tests included; comments are not code).
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The core: reaches the emulations only through `emulation`, `component` and the registry.
const CORE: &[&str] = &["loader_interface", "instance", "device", "dispatch", "shader_hooks", "module_rewrite", "pnext", "settings", "log"];

/// Longest function body allowed (generated code excepted: struct_sizes*.rs).
const MAX_FUNCTION_LINES: usize = 120;

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file (`src/ext/bda/buffers.rs` → ["ext", "bda", "buffers"]).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The graph node a module path belongs to.
fn node(path: &[String]) -> Option<String> {
    match path {
        [] => None,
        [first, second, ..] if first == "ext" => Some(format!("ext::{second}")),
        [first, ..] => Some(first.clone()),
    }
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The module paths (relative to the crate root, at most two segments past the base) that
/// `crate::` / `super::` paths in `text` name, `text` being the code of module `module`; brace
/// groups are expanded one level.
fn referenced(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let preceded_by_ident = text[..i].ends_with(|c: char| ident_char(c) || c == ':');
        let (mut base, mut after) = if rest.starts_with("crate::") && !preceded_by_ident {
            (Vec::new(), &rest[7..])
        } else if rest.starts_with("super::") && !preceded_by_ident {
            (module.to_vec(), rest)
        } else {
            i += rest.chars().next().map_or(1, |c| c.len_utf8());
            continue;
        };
        while let Some(r) = after.strip_prefix("super::") {
            base.pop();
            after = r;
        }
        let items: Vec<&str> = match after.strip_prefix('{') {
            Some(group) => group.split('}').next().unwrap_or("").split(',').collect(),
            None => vec![after],
        };
        for item in items {
            let segs = item.trim().split("::").map(|s| s.chars().take_while(|c| ident_char(*c)).collect::<String>()).take_while(|s| !s.is_empty());
            let mut p = base.clone();
            p.extend(segs.take(2));
            out.push(p);
        }
        i += 7;
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    // MODULE_GRAPH_SRC: check another tree (e.g. an older commit's layer/src).
    let src = std::env::var_os("MODULE_GRAPH_SRC").map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), PathBuf::from);
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(f.strip_prefix(&src).unwrap())).collect();
    let known = |p: &[String]| (1..=p.len()).rev().map(|n| p[..n].to_vec()).find(|q| modules.contains(q));
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let module = module_path(f.strip_prefix(&src).unwrap());
        let Some(from) = node(&module) else { continue };
        // Comments name modules too (documentation): only code counts.
        let text: String = std::fs::read_to_string(f).unwrap().lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        // An inline `mod tests { use super::*; }` is one level deeper than its file.
        let (code, tests) = text.split_once("#[cfg(test)]\nmod tests").unwrap_or((&text, ""));
        let test_module = [module.clone(), vec!["tests".to_string()]].concat();
        let refs = referenced(code, &module).into_iter().chain(referenced(tests, &test_module));
        let edges = g.entry(from.clone()).or_default();
        for r in refs {
            if let Some(to) = known(&r).and_then(|m| node(&m)) {
                if to != from {
                    edges.insert(to);
                }
            }
        }
    }
    g
}

/// A cycle through `start` (the nodes from `start` back to it), if there is one.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn dfs(g: &BTreeMap<String, BTreeSet<String>>, at: &str, start: &str, path: &mut Vec<String>, seen: &mut BTreeSet<String>) -> bool {
        for n in g.get(at).into_iter().flatten() {
            if n == start {
                return true;
            }
            if seen.insert(n.clone()) {
                path.push(n.clone());
                if dfs(g, n, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    dfs(g, start, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn no_import_cycles() {
    let g = graph();
    assert!(g.contains_key("device") && g.contains_key("ext::bda") && g.contains_key("tables"), "{g:?}");
    assert!(g["ext::bda"].contains("tables"), "the parser sees edges: {:?}", g["ext::bda"]);
    let cycles: Vec<_> = g.keys().filter_map(|n| cycle(&g, n)).collect();
    assert!(cycles.is_empty(), "import cycles (each from its first node back to it): {cycles:#?}");
}

#[test]
fn core_names_no_emulation() {
    let g = graph();
    for c in CORE {
        let bad: Vec<_> = g[*c].iter().filter(|n| n.starts_with("ext::") || *n == "tables").collect();
        assert!(bad.is_empty(), "core module {c} names {bad:?}");
    }
}

/// `(line, length)` of every function in `text` longer than `max` lines: from its `fn` line to the
/// closing brace at the same indentation (rustfmt's layout).
fn long_functions(text: &str, max: usize) -> Vec<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let is_fn = ["fn ", "pub fn ", "unsafe fn ", "pub unsafe fn ", "pub(crate) fn ", "pub(crate) unsafe fn ", "pub unsafe extern \"system\" fn ", "unsafe extern \"system\" fn ", "const fn ", "pub const fn "]
            .iter()
            .any(|p| t.starts_with(p));
        if !is_fn || t.ends_with(';') {
            continue;
        }
        let close = format!("{}}}", &l[..l.len() - t.len()]);
        if let Some(j) = lines[i + 1..].iter().position(|x| *x == close) {
            if j + 2 > max {
                out.push((i + 1, j + 2));
            }
        }
    }
    out
}

#[test]
fn no_long_functions() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let long: Vec<_> = files
        .iter()
        .filter(|f| !f.file_name().unwrap().to_string_lossy().starts_with("struct_sizes"))
        .flat_map(|f| long_functions(&std::fs::read_to_string(f).unwrap(), MAX_FUNCTION_LINES).into_iter().map(move |l| (f.clone(), l)))
        .collect();
    assert!(long.is_empty(), "functions over {MAX_FUNCTION_LINES} lines (file, (line, length)): {long:?}");
    let planted = format!("fn f() {{\n{}}}\n    pub unsafe fn g() {{\n    }}\n", "    x();\n".repeat(200));
    assert_eq!(long_functions(&planted, MAX_FUNCTION_LINES), vec![(1, 202)]);
}

#[test]
fn the_parser_sees_paths_and_cycles() {
    let module = vec!["ext".to_string(), "bda".to_string()];
    let r = referenced("use super::extension::{Activated, X};\nuse crate::tables::{budget, pfn};\nlet x = crate::dispatch::component::<T>(d); my_crate::no", &module);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(r, vec![s(&["ext", "extension"]), s(&["tables"]), s(&["dispatch", "component"])]);
    let deep = referenced("use super::super::emulation::PhysDev;", &["ext".into(), "bda".into(), "buffers".into()]);
    assert_eq!(deep, vec![vec!["ext".to_string(), "emulation".into(), "PhysDev".into()]]);
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(cycle(&g, "a"), Some(vec!["a".to_string(), "b".to_string()]));
    g.get_mut("b").unwrap().clear();
    assert_eq!(cycle(&g, "a"), None);
}
