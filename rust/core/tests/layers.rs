//! The core's layers, checked from its source tree: `cargo test --test layers`.
//!
//! Every `crate::…`, `super::…` and `self::…` path in `src/` (comments and
//! string literals aside) is resolved to the module it names. That gives a
//! dependency graph between the top-level modules (the layers), and one
//! between the files of each layer. The test fails when
//!
//! - a layer uses a layer on its own level or above ([`LAYERS`]);
//! - the layers' graph has a cycle;
//! - the files of one layer form a cycle (a parent module naming or
//!   re-exporting its children is not a use);
//! - a top-level module is missing from [`LAYERS`], or code names a crate-root
//!   re-export (`crate::EntryError`, the transitional `crate::metadata`, …)
//!   instead of the layer path, which would hide the real dependency;
//! - anything under `format/` mentions Arrow.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom first. A module may use modules on lower lines only.
const LAYERS: &[&[&str]] = &[
    &["error", "proto"],
    &["format"],
    &["processor", "metadata_store"],
    &["decode"],
    &[
        "chunks",
        "compaction",
        "offload",
        "seek",
        "bookkeeper",
        "stamp",
        "schema",
    ],
    &["layout"],
    &["pass"],
];

/// The layer that must not mention Arrow.
const NO_ARROW: &str = "format";

fn level(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

// ---------------------------------------------------------------- lexing

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Star,
    Other(char),
}

/// Rust source → tokens, without comments, string or char literals.
fn lex(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let n = c.len();
    while i < n {
        let ch = c[i];
        if ch == '/' && i + 1 < n && c[i + 1] == '/' {
            while i < n && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && i + 1 < n && c[i + 1] == '*' {
            let mut depth = 0;
            while i < n {
                if c[i] == '/' && i + 1 < n && c[i + 1] == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && i + 1 < n && c[i + 1] == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            i += 1;
            while i < n && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if (ch == 'r' || (ch == 'b' && i + 1 < n && c[i + 1] == 'r'))
            && raw_string_start(&c, i).is_some()
        {
            let (hashes, body) = raw_string_start(&c, i).unwrap();
            i = body;
            loop {
                if i >= n {
                    break;
                }
                if c[i] == '"' && (0..hashes).all(|k| i + 1 + k < n && c[i + 1 + k] == '#') {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
        } else if ch == '\'' {
            // A char literal ('a', '\n', '\u{..}') or a lifetime ('a).
            if i + 1 < n && c[i + 1] == '\\' {
                i += 2;
                while i < n && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if i + 2 < n && c[i + 2] == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let s = i;
            while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[s..i].iter().collect();
            // b"..", b'..' prefixes: the literal follows.
            if word == "b" && i < n && (c[i] == '"' || c[i] == '\'') {
                continue;
            }
            out.push(Tok::Ident(word));
        } else if ch == ':' && i + 1 < n && c[i + 1] == ':' {
            out.push(Tok::PathSep);
            i += 2;
        } else {
            out.push(match ch {
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                '*' => Tok::Star,
                _ => Tok::Other(ch),
            });
            i += 1;
        }
    }
    out.retain(|t| !matches!(t, Tok::Other(c) if c.is_whitespace()));
    out
}

/// `r"`, `r#"`, `br"`, … at `i`: the number of `#` and where the body starts.
fn raw_string_start(c: &[char], i: usize) -> Option<(usize, usize)> {
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    let mut j = i + if c[i] == 'b' { 2 } else { 1 };
    let mut hashes = 0;
    while j < c.len() && c[j] == '#' {
        hashes += 1;
        j += 1;
    }
    (j < c.len() && c[j] == '"').then_some((hashes, j + 1))
}

// ---------------------------------------------------------------- paths

/// One file's module path and the absolute module paths it names.
struct File {
    rel: String,
    module: Vec<String>,
    uses: Vec<Vec<String>>,
    tokens: Vec<Tok>,
}

/// Parses a path tree after its first segment: `::a::b`, `::{a, b::c}`, `::*`.
fn path_tree(t: &[Tok], mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix;
    while i + 1 < t.len() && t[i] == Tok::PathSep {
        match &t[i + 1] {
            Tok::Ident(s) => {
                path.push(s.clone());
                i += 2;
            }
            Tok::Open => return group(t, i + 1, &path, out),
            Tok::Star => {
                out.push(path);
                return i + 2;
            }
            _ => break,
        }
    }
    out.push(path);
    i
}

/// Parses `{item, item, …}` at `t[i]` under `path`; returns the index after `}`.
fn group(t: &[Tok], mut i: usize, path: &[String], out: &mut Vec<Vec<String>>) -> usize {
    i += 1;
    loop {
        match t.get(i) {
            Some(Tok::Ident(s)) => {
                let mut sub = path.to_vec();
                if s != "self" {
                    sub.push(s.clone());
                }
                i = path_tree(t, i + 1, sub, out);
            }
            Some(Tok::Star) => {
                out.push(path.to_vec());
                i += 1;
            }
            Some(Tok::Open) => i = group(t, i, path, out),
            _ => {}
        }
        match t.get(i) {
            Some(Tok::Comma) => i += 1,
            Some(Tok::Close) => return i + 1,
            None => return i,
            // `as name` and anything unexpected: skip to the next item.
            Some(_) => {
                while i < t.len() && t[i] != Tok::Comma && t[i] != Tok::Close {
                    i += 1;
                }
            }
        }
    }
}

/// Every `crate::`, `super::` and `self::` path of a file, made absolute.
/// Inline `mod name { … }` blocks shift what `super` and `self` mean.
fn uses(tokens: &[Tok], module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Tok::Open => depth += 1,
            Tok::Close => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d > depth) {
                    inline.pop();
                }
            }
            Tok::Ident(kw) if kw == "mod" => {
                if let (Some(Tok::Ident(name)), Some(Tok::Open)) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    inline.push((name.clone(), depth + 1));
                }
            }
            Tok::Ident(first)
                if (first == "crate" || first == "super" || first == "self")
                    && tokens.get(i + 1) == Some(&Tok::PathSep)
                    && !(i > 0 && tokens[i - 1] == Tok::PathSep) =>
            {
                let mut here: Vec<String> = module.to_vec();
                here.extend(inline.iter().map(|(n, _)| n.clone()));
                let mut base = match first.as_str() {
                    "crate" => Vec::new(),
                    "self" => here.clone(),
                    _ => {
                        here.pop();
                        here
                    }
                };
                let mut j = i + 1;
                // super::super::…
                while tokens.get(j) == Some(&Tok::PathSep)
                    && tokens.get(j + 1) == Some(&Tok::Ident("super".into()))
                {
                    base.pop();
                    j += 2;
                }
                let mut found = Vec::new();
                i = path_tree(tokens, j, base, &mut found);
                out.extend(found);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn read_tree(dir: &Path, root: &Path, files: &mut Vec<File>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_tree(&path, root, files);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(root).unwrap();
        let mut module: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if module.last().is_some_and(|m| m == "mod" || m == "lib") {
            module.pop();
        }
        let src = fs::read_to_string(&path).unwrap();
        let tokens = lex(&src);
        let uses = uses(&tokens, &module);
        files.push(File {
            rel: rel.to_string_lossy().into_owned(),
            module,
            uses,
            tokens,
        });
    }
}

fn source() -> Vec<File> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_tree(&root, &root, &mut files);
    assert!(
        files.len() > 20,
        "read {} files under {root:?}",
        files.len()
    );
    files
}

/// The cycles of a graph (each reported once, by its smallest node).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn walk(
        g: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        node: &str,
        path: &mut Vec<String>,
        out: &mut Vec<Vec<String>>,
    ) {
        for next in g.get(node).into_iter().flatten() {
            if next == start {
                let mut c = path.clone();
                c.push(start.to_string());
                out.push(c);
            } else if next.as_str() > start && !path.contains(next) {
                path.push(next.clone());
                walk(g, start, next, path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    for start in graph.keys() {
        walk(graph, start, start, &mut vec![start.clone()], &mut out);
    }
    out
}

// ---------------------------------------------------------------- the checks

/// One cross-layer use: `(file, layer it is in, layer it uses, the path)`.
type LayerUse = (String, String, String, String);

/// Every cross-layer use, and every path through a crate-root re-export.
fn layer_uses(files: &[File]) -> (Vec<LayerUse>, Vec<String>) {
    let mut out = Vec::new();
    let mut misnamed = Vec::new();
    let tops: BTreeSet<&str> = files
        .iter()
        .filter_map(|f| f.module.first().map(String::as_str))
        .chain(["proto"])
        .collect();
    for f in files {
        let Some(own) = f.module.first() else {
            continue; // lib.rs: declares the layers and the re-exports
        };
        for u in &f.uses {
            let Some(first) = u.first() else { continue };
            if !tops.contains(first.as_str()) {
                misnamed.push(format!("{}: crate::{}", f.rel, u.join("::")));
            } else if first != own {
                out.push((f.rel.clone(), own.clone(), first.clone(), u.join("::")));
            }
        }
    }
    (out, misnamed)
}

#[test]
fn every_top_level_module_is_in_a_layer() {
    let files = source();
    let unplaced: BTreeSet<&str> = files
        .iter()
        .filter_map(|f| f.module.first().map(String::as_str))
        .filter(|m| level(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "top-level modules missing from LAYERS in tests/layers.rs: {unplaced:?}"
    );
}

#[test]
fn code_names_modules_by_their_layer_path() {
    let (_, misnamed) = layer_uses(&source());
    assert!(
        misnamed.is_empty(),
        "paths through crate-root re-exports (name the layer, e.g. crate::format::frame::EntryView):\n{}",
        misnamed.join("\n")
    );
}

#[test]
fn layers_use_only_layers_below_them() {
    let (uses, _) = layer_uses(&source());
    assert!(
        uses.len() > 50,
        "found only {} cross-layer uses",
        uses.len()
    );
    let wrong: Vec<String> = uses
        .iter()
        .filter(|(_, own, used, _)| match (level(own), level(used)) {
            (Some(a), Some(b)) => b >= a,
            _ => true,
        })
        .map(|(file, own, used, path)| format!("{file}: {own} uses {used} (crate::{path})"))
        .collect();
    assert!(
        wrong.is_empty(),
        "a layer uses one on its own level or above (order: {LAYERS:?}):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_cycle_between_layers() {
    let (uses, _) = layer_uses(&source());
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, own, used, _) in uses {
        graph.entry(own).or_default().insert(used);
    }
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "cycles between top-level modules: {found:?}"
    );
}

#[test]
fn no_cycle_between_the_files_of_a_layer() {
    let files = source();
    // The modules that are files or folders: `decode::entries`, `chunks`, …
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    // The longest module that a path names.
    let owner = |path: &[String]| -> Vec<String> {
        (1..=path.len())
            .rev()
            .map(|k| path[..k].to_vec())
            .find(|m| modules.contains(m))
            .unwrap_or_default()
    };
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files.iter().filter(|f| !f.module.is_empty()) {
        for u in &f.uses {
            let to = owner(u);
            let (from, to_s) = (f.module.join("::"), to.join("::"));
            // Same layer only; a module naming its own descendants (a parent
            // declaring or re-exporting its children) is not a use.
            if to.first() != f.module.first() || to.starts_with(&f.module) {
                continue;
            }
            graph.entry(from).or_default().insert(to_s);
        }
    }
    assert!(graph.len() > 20, "only {} modules use others", graph.len());
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "cycles between modules of a layer: {found:?}"
    );
}

#[test]
fn format_has_no_arrow() {
    let files = source();
    let format: Vec<&File> = files
        .iter()
        .filter(|f| f.module.first().is_some_and(|m| m == NO_ARROW))
        .collect();
    assert!(
        format.len() >= 10,
        "found {} files in {NO_ARROW}/",
        format.len()
    );
    let mut found = Vec::new();
    for f in format {
        for t in &f.tokens {
            if let Tok::Ident(word) = t {
                if word.to_ascii_lowercase().contains("arrow") || word == "RecordBatch" {
                    found.push(format!("{}: {word}", f.rel));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "{NO_ARROW}/ is the byte layer and must not use Arrow:\n{}",
        found.join("\n")
    );
}

// ---------------------------------------------------------------- the checker itself

#[test]
fn the_checker_resolves_paths_and_finds_cycles() {
    let src = r#"
        use crate::format::frame::{EntryView, split};
        use super::{columns::Cols, schema};
        // use crate::chunks::Hidden;
        const S: &str = "crate::offload::InString";
        fn f<'a>(x: &'a u8) -> char { let _ = crate::proto::X; 'c' }
        mod tests { use super::*; use super::super::entries::Rows; }
    "#;
    let module = vec!["decode".to_string(), "decoder".to_string()];
    let got: Vec<String> = uses(&lex(src), &module)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        got,
        [
            "format::frame::EntryView",
            "format::frame::split",
            "decode::columns::Cols",
            "decode::schema",
            "proto::X",
            "decode::decoder",
            "decode::entries::Rows",
        ]
    );

    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    assert!(cycles(&g).is_empty());
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(cycles(&g), [vec!["a", "b", "c", "a"]]);
}
