//! The crate's modules must not import each other in a circle: at the top level of
//! `lockdep/src`, and among the sibling files of every folder.
//!
//! The test reads `src/**/*.rs` as text (std only, no parser crate), follows every
//! `crate::…`, `super::…` and `self::…` path (in `use` trees and inline), resolves names that
//! a folder's `mod.rs` (or `lib.rs`) re-exports to the file that defines them, and turns each
//! reference into an edge between the two modules that differ first (`map -> class` for
//! `crate::class::id::ClassId` used in `map.rs`; `dynamic -> table` for `super::table::walk`
//! used in `keys/dynamic.rs`). Comments and string literals are skipped, so doc links do not
//! count. The `use` items of `lib.rs` and of a folder's `mod.rs` are re-exports and are
//! followed; any other code in them (the crate's public functions in `lib.rs`) is a node of
//! its own, `lib.rs` or `mod.rs`, so a circle through it is found too. A strongly connected
//! set of modules fails the test, with one circle and the line that makes each of its edges.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

/// One source file: its module path and its tokens (with line numbers).
struct File {
    module: ModPath,
    /// True for `lib.rs` and `mod.rs`: the file is its module's facade.
    facade: bool,
    display: String,
    tokens: Vec<(Tok, usize)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

fn collect(dir: &Path, prefix: &[String], out: &mut Vec<File>, root: &Path) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut p = prefix.to_vec();
            p.push(name);
            collect(&path, &p, out, root);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            let mut module = prefix.to_vec();
            let facade = (prefix.is_empty() && stem == "lib") || stem == "mod";
            if !facade {
                module.push(stem.to_owned());
            }
            let text = fs::read_to_string(&path).expect("source file");
            out.push(File {
                module,
                facade,
                display: path.strip_prefix(root).unwrap().display().to_string(),
                tokens: tokenize(&text),
            });
        }
    }
}

/// Identifiers, `::` and single punctuation, with comments, strings, chars and lifetimes
/// removed.
fn tokenize(text: &str) -> Vec<(Tok, usize)> {
    let b: Vec<char> = text.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(b[i] == '\n');
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && raw_string(&b, i) {
            // r"..." or r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while b[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if b[j] == '"' && (0..hashes).all(|h| b.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                line += usize::from(b[j] == '\n');
                j += 1;
            }
            i = j;
        } else if c == '"' {
            i += 1;
            while b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                line += usize::from(b[i] == '\n');
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                i += 3;
                while b[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(b[start..i].iter().collect()), line));
        } else if c == ':' && next == Some(':') {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    out
}

fn raw_string(b: &[char], i: usize) -> bool {
    if i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_') {
        return false;
    }
    let mut j = i + 1;
    while b.get(j) == Some(&'#') {
        j += 1;
    }
    b.get(j) == Some(&'"')
}

/// Parses a use tree (or an inline path) at `tokens[*i..]`, relative to `base`, and pushes
/// every full path with the line it starts on. Inline paths end at the first token that is
/// neither a segment nor `::`.
fn parse_tree(
    tokens: &[(Tok, usize)],
    i: &mut usize,
    base: &[String],
    out: &mut Vec<(ModPath, usize)>,
) {
    let mut path = base.to_vec();
    let line = tokens.get(*i).map_or(0, |t| t.1);
    loop {
        match tokens.get(*i) {
            Some((Tok::Ident(s), _)) if s != "as" => {
                path.push(s.clone());
                *i += 1;
                if tokens.get(*i).map(|t| &t.0) == Some(&Tok::PathSep) {
                    *i += 1;
                    continue;
                }
                out.push((path, line));
                return;
            }
            Some((Tok::Punct('{'), _)) => {
                *i += 1;
                loop {
                    match tokens.get(*i).map(|t| &t.0) {
                        Some(Tok::Punct('}')) => {
                            *i += 1;
                            return;
                        }
                        Some(Tok::Punct(',')) => *i += 1,
                        Some(Tok::Ident(s)) if s == "as" => *i += 2,
                        None => return,
                        _ => parse_tree(tokens, i, &path, out),
                    }
                }
            }
            Some((Tok::Punct('*'), _)) => {
                *i += 1;
                out.push((path, line));
                return;
            }
            _ => {
                if path.len() > base.len() {
                    out.push((path, line));
                }
                return;
            }
        }
    }
}

/// One path a file names, made absolute (crate-relative).
struct Ref {
    path: ModPath,
    line: usize,
    /// Named in a `use` item (in a facade: a re-export).
    in_use: bool,
}

/// Every path this file names.
fn references(f: &File, modules: &BTreeSet<ModPath>) -> Vec<Ref> {
    let mut out = Vec::new();
    let t = &f.tokens;
    let (mut i, mut in_use) = (0, false);
    while i < t.len() {
        let (tok, _) = &t[i];
        let sep_next = t.get(i + 1).map(|x| &x.0) == Some(&Tok::PathSep);
        let prev_sep = i > 0 && t[i - 1].0 == Tok::PathSep;
        match tok {
            Tok::Ident(w) if w == "use" => in_use = true,
            Tok::Punct(';') => in_use = false,
            _ => {}
        }
        let Tok::Ident(word) = tok else {
            i += 1;
            continue;
        };
        if prev_sep || !sep_next {
            i += 1;
            continue;
        }
        let mut found = Vec::new();
        match word.as_str() {
            "crate" | "self" | "super" => {
                let mut base = if word == "crate" {
                    Vec::new()
                } else {
                    f.module.clone()
                };
                if word == "super" {
                    base.pop();
                    // `super::super::…`
                    while t.get(i + 2).map(|x| &x.0) == Some(&Tok::Ident("super".into()))
                        && t.get(i + 3).map(|x| &x.0) == Some(&Tok::PathSep)
                    {
                        base.pop();
                        i += 2;
                    }
                }
                i += 2;
                parse_tree(t, &mut i, &base, &mut found);
            }
            // A child module named without a prefix (in a facade, the only files with
            // children).
            child => {
                let mut p = f.module.clone();
                p.push(child.to_owned());
                if f.facade && modules.contains(&p) {
                    parse_tree(t, &mut i, &f.module, &mut found);
                } else {
                    i += 1;
                }
            }
        }
        out.extend(
            found
                .into_iter()
                .map(|(path, line)| Ref { path, line, in_use }),
        );
    }
    out
}

/// The re-exports of each facade: (facade module, exported name) -> full path.
fn reexports(files: &[File], modules: &BTreeSet<ModPath>) -> BTreeMap<(ModPath, String), ModPath> {
    let mut map = BTreeMap::new();
    for f in files.iter().filter(|f| f.facade) {
        for r in references(f, modules).into_iter().filter(|r| r.in_use) {
            if r.path.len() > f.module.len() + 1 && r.path.starts_with(&f.module) {
                let name = r.path.last().unwrap().clone();
                map.insert((f.module.clone(), name), r.path);
            }
        }
    }
    map
}

/// The node that stands for the code of a folder's facade itself (its functions and types).
fn facade_node(module: &[String]) -> String {
    if module.is_empty() {
        "lib.rs"
    } else {
        "mod.rs"
    }
    .to_owned()
}

/// The module a path lands in: the deepest known module on it, following re-exports.
fn resolve(
    path: &[String],
    modules: &BTreeSet<ModPath>,
    re: &BTreeMap<(ModPath, String), ModPath>,
) -> ModPath {
    let mut path = path.to_vec();
    for _ in 0..8 {
        let mut m: ModPath = Vec::new();
        while m.len() < path.len() {
            let mut longer = m.clone();
            longer.push(path[m.len()].clone());
            if !modules.contains(&longer) {
                break;
            }
            m = longer;
        }
        match path
            .get(m.len())
            .and_then(|item| re.get(&(m.clone(), item.clone())))
        {
            Some(target) if target != &path => path = target.clone(),
            _ => return m,
        }
    }
    panic!("re-export loop at {path:?}")
}

/// An edge `from -> to` between sibling modules of `scope`, with an example reference.
type Edges = BTreeMap<ModPath, BTreeMap<String, BTreeMap<String, String>>>;

fn edges(src: &Path) -> Edges {
    let mut files = Vec::new();
    collect(src, &[], &mut files, src.parent().unwrap());
    let mut modules: BTreeSet<ModPath> = BTreeSet::new();
    for f in &files {
        for k in 0..=f.module.len() {
            modules.insert(f.module[..k].to_vec());
        }
    }
    let re = reexports(&files, &modules);
    let folders: BTreeSet<ModPath> = files
        .iter()
        .filter(|f| f.facade)
        .map(|f| f.module.clone())
        .collect();
    let mut edges: Edges = BTreeMap::new();
    for f in &files {
        let mut from = f.module.clone();
        if f.facade {
            from.push(facade_node(&f.module));
        }
        for r in references(f, &modules) {
            if f.facade && r.in_use {
                continue; // a re-export, followed by `resolve`
            }
            let mut target = resolve(&r.path, &modules, &re);
            if r.path.len() > target.len() && folders.contains(&target) {
                // An item defined in a facade file (a function in lib.rs, say).
                target.push(facade_node(&target));
            }
            let common = from.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common < from.len() && common < target.len() {
                let example = format!(
                    "{}:{} names crate::{}",
                    f.display,
                    r.line,
                    r.path.join("::")
                );
                edges
                    .entry(from[..common].to_vec())
                    .or_default()
                    .entry(from[common].clone())
                    .or_default()
                    .entry(target[common].clone())
                    .or_insert(example);
            }
        }
    }
    edges
}

/// Strongly connected components with more than one node (Tarjan's algorithm).
fn circles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    struct S<'a> {
        g: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut S<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        if let Some(next) = s.g.get(v) {
            for w in next.keys() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if s.on.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = S {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// One circle through `start` inside `comp` (a breadth-first search back to `start`).
fn one_circle(
    graph: &BTreeMap<String, BTreeMap<String, String>>,
    comp: &[String],
) -> Vec<(String, String, String)> {
    let start = &comp[0];
    let mut parent: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in graph[v].keys().filter(|w| comp.contains(w)) {
            if w == start {
                let mut path = vec![(v.clone(), w.clone(), graph[v][w].clone())];
                let mut at = v;
                while at != start {
                    let p = parent[at];
                    path.push((p.clone(), at.clone(), graph[p][at].clone()));
                    at = p;
                }
                path.reverse();
                return path;
            }
            if !parent.contains_key(w) {
                parent.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    unreachable!("a strongly connected component has a circle")
}

fn report(src: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for (scope, graph) in edges(src) {
        for comp in circles(&graph) {
            let scope = if scope.is_empty() {
                "the crate's top-level modules".to_owned()
            } else {
                format!("the modules of {}/", scope.join("/"))
            };
            let mut msg = format!("import circle among {scope}: {}\n", comp.join(", "));
            for (from, to, example) in one_circle(&graph, &comp) {
                msg.push_str(&format!("  {from} -> {to}   ({example})\n"));
            }
            problems.push(msg);
        }
    }
    problems
}

#[test]
fn lockdep_modules_import_each_other_in_one_direction() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = report(&src);
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The checker itself: a circle through a re-export and one between siblings are found; an
/// acyclic tree passes.
#[test]
fn the_checker_finds_circles_through_reexports_and_between_siblings() {
    let dir = std::env::temp_dir().join(format!("lockdep-module-graph-{}", std::process::id()));
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    };
    let _ = fs::remove_dir_all(&dir);
    write("src/lib.rs", "mod a;\nmod b;\npub use b::Thing;\n");
    write(
        "src/a.rs",
        "// crate::b::x in a comment does not count\nuse crate::Thing;\n",
    );
    write("src/b/mod.rs", "mod x;\nmod y;\npub use x::Thing;\n");
    write(
        "src/b/x.rs",
        "pub struct Thing;\nfn f() { super::y::g() }\n",
    );
    write(
        "src/b/y.rs",
        "pub fn g() { let _ = \"crate::a\"; crate::b::x::Thing; }\n",
    );
    let found = report(&dir.join("src"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("the modules of b/: x, y"), "{}", found[0]);
    write(
        "src/b/x.rs",
        "pub struct Thing;\nfn f() { crate::a::h() }\n",
    );
    let found = report(&dir.join("src"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("top-level modules: a, b"), "{}", found[0]);
    assert!(found[0].contains("a -> b"), "{}", found[0]);
    write("src/a.rs", "pub fn h() {}\n");
    assert!(report(&dir.join("src")).is_empty());
    // Through a function of the crate root: lib.rs calls into b, b calls the root function.
    write("src/lib.rs", "mod a;\nmod b;\npub fn api() { b::Thing; }\n");
    write("src/b/y.rs", "pub fn g() { crate::api() }\n");
    let found = report(&dir.join("src"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("top-level modules: b, lib.rs"),
        "{}",
        found[0]
    );
    let _ = fs::remove_dir_all(&dir);
}
