#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Layers inside each crate (issue 27): no module of any workspace crate
//! depends, through its `use` lines and paths, on a module that depends
//! back on it. `ebpf`'s isa → abi → load → exec → vm, `cbpf`'s
//! isa → uapi → validate → exec stay layers because this test reads every
//! `crate::` and `super::` path and fails on a cycle.
//!
//! How it reads a crate: the module tree comes from the files under `src/`
//! (`a/b.rs` and `a/b/mod.rs` are module `a::b`; `src/bin/` holds other
//! crates and is left out); every `crate::…` and `super::…` path in a
//! module's code (comments and `#[cfg(test)]` modules left out: tests may
//! reach any layer) names the deepest known module on it, a name the crate
//! root re-exports (`pub use abi::skb;`) standing for what it re-exports.
//! A path from module `a::x` to `a::y::z` is the edge `x → y` among the
//! children of `a`; a path between a module and its own ancestor is no
//! edge (a parent declares its children, a child may use its parent's
//! items). A cycle is a strongly connected set of sibling modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

mod common;
use common::{root, rust_files};

/// `text` without comments (line, block and doc comments; newlines kept);
/// string literals are kept (a path inside one is rare and harmless).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    let mut in_str = false;
    let mut prev = ' ';
    while let Some((i, c)) = chars.next() {
        if in_str {
            out.push(c);
            if c == '\\' {
                if let Some((_, e)) = chars.next() {
                    out.push(e);
                }
            } else if c == '"' {
                in_str = false;
            }
            prev = c;
            continue;
        }
        let rest = &text[i..];
        if c == '"' && prev != '\'' {
            in_str = true;
            out.push(c);
        } else if rest.starts_with("//") {
            while chars.peek().is_some_and(|&(_, n)| n != '\n') {
                chars.next();
            }
        } else if let Some(body) = rest.strip_prefix("/*") {
            let end = body.find("*/").map_or(text.len(), |e| i + 2 + e + 2);
            out.extend(text[i..end].chars().filter(|&c| c == '\n'));
            while chars.peek().is_some_and(|&(k, _)| k < end) {
                chars.next();
            }
        } else {
            out.push(c);
        }
        prev = c;
    }
    out
}

/// `code` with every `#[cfg(test)]` inline module blanked (newlines kept),
/// and the names of `#[cfg(test)] mod name;` file modules.
fn strip_test_modules(code: &str) -> (String, Vec<String>) {
    let mut out = code.to_string();
    let mut test_files = Vec::new();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]").map(|a| from + a) {
        let after = at + "#[cfg(test)]".len();
        let rest = out[after..].trim_start();
        let rest = rest.strip_prefix("pub(crate) ").or_else(|| rest.strip_prefix("pub ")).unwrap_or(rest);
        let Some(decl) = rest.strip_prefix("mod ") else {
            from = after;
            continue;
        };
        let name: String = decl.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let after_name = decl[name.len()..].trim_start();
        if after_name.starts_with(';') {
            test_files.push(name);
            from = after;
            continue;
        }
        // An inline module: blank up to its closing brace.
        let Some(open) = out[after..].find('{').map(|o| after + o) else { break };
        let mut depth = 0usize;
        let mut end = out.len();
        for (k, ch) in out[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        // Same length in bytes, so later offsets stay right.
        let blank: String =
            out[at..end].chars().flat_map(|c| if c == '\n' { vec!['\n'] } else { vec![' '; c.len_utf8()] }).collect();
        out.replace_range(at..end, &blank);
        from = end;
    }
    (out, test_files)
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths of a path tree starting at `s` (after `crate::` or a `use`
/// prefix): `a::b::{c, d::e as f, g::*}` gives `[a,b,c]`, `[a,b,d,e]`,
/// `[a,b,g]`; each with the name it binds (`c`, `f`, `g`).
fn path_tree(s: &str) -> Vec<(ModPath, String)> {
    fn parse(s: &str, prefix: &ModPath, out: &mut Vec<(ModPath, String)>) -> usize {
        let mut path = prefix.clone();
        let mut i = 0;
        let b = s.as_bytes();
        loop {
            while i < b.len() && (b[i] as char).is_whitespace() {
                i += 1;
            }
            if i < b.len() && b[i] == b'{' {
                i += 1;
                loop {
                    i += parse(&s[i..], &path, out);
                    while i < b.len() && (b[i] as char).is_whitespace() {
                        i += 1;
                    }
                    match b.get(i) {
                        Some(b',') => i += 1,
                        Some(b'}') => return i + 1,
                        _ => return i,
                    }
                    while i < b.len() && (b[i] as char).is_whitespace() {
                        i += 1;
                    }
                    if b.get(i) == Some(&b'}') {
                        return i + 1;
                    }
                }
            }
            let ident: String = s[i..].chars().take_while(|&c| is_ident(c)).collect();
            if ident.is_empty() {
                // `*` or the end of the path.
                if b.get(i) == Some(&b'*') {
                    i += 1;
                }
                if path.len() > prefix.len() {
                    let name = path.last().cloned().unwrap_or_default();
                    out.push((path, name));
                }
                return i;
            }
            i += ident.len();
            if ident != "self" {
                path.push(ident);
            }
            if s[i..].starts_with("::") {
                i += 2;
                continue;
            }
            let rest = s[i..].trim_start();
            let name = match rest.strip_prefix("as ") {
                Some(r) => {
                    let alias: String = r.trim_start().chars().take_while(|&c| is_ident(c)).collect();
                    i = s.len() - r.trim_start().len() + alias.len();
                    alias
                }
                None => path.last().cloned().unwrap_or_default(),
            };
            out.push((path, name));
            return i;
        }
    }
    let mut out = Vec::new();
    parse(s, &Vec::new(), &mut out);
    out
}

/// One crate: its modules (path → file) and the names its root re-exports.
struct Crate {
    modules: BTreeMap<ModPath, PathBuf>,
    reexports: BTreeMap<String, ModPath>,
}

impl Crate {
    fn read(src: &Path) -> Option<Crate> {
        let root_file = [src.join("lib.rs"), src.join("main.rs")].into_iter().find(|p| p.exists())?;
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let mut modules = BTreeMap::new();
        for f in files {
            let rel = f.strip_prefix(src).unwrap_or(&f).with_extension("");
            let mut parts: ModPath = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if parts.first().is_some_and(|p| p == "bin") {
                continue;
            }
            if parts.last().is_some_and(|l| l == "mod")
                || (parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main"))
            {
                parts.pop();
            }
            if parts.is_empty() && f != root_file {
                continue;
            }
            modules.insert(parts, f);
        }
        let mut krate = Crate { modules, reexports: BTreeMap::new() };
        let code = strip_comments(&std::fs::read_to_string(&root_file).ok()?);
        let mut reexports = BTreeMap::new();
        for (at, _) in code.match_indices("pub use ") {
            for (path, name) in path_tree(&code[at + "pub use ".len()..]) {
                let path: ModPath = path.into_iter().skip_while(|p| p == "crate").collect();
                reexports.insert(name, krate.resolve(&path));
            }
        }
        krate.reexports = reexports;
        Some(krate)
    }

    /// The deepest module named by `path` (from the crate root), through
    /// the root's re-exports for its first name.
    fn resolve(&self, path: &[String]) -> ModPath {
        let mut at: ModPath = Vec::new();
        for (k, seg) in path.iter().enumerate() {
            let mut next = at.clone();
            next.push(seg.clone());
            if self.modules.contains_key(&next) {
                at = next;
            } else if k == 0 {
                match self.reexports.get(seg) {
                    Some(target) if target.as_slice() != path => {
                        let mut full = target.clone();
                        full.extend(path[1..].iter().cloned());
                        return self.resolve(&full);
                    }
                    _ => return at,
                }
            } else {
                break;
            }
        }
        at
    }

    /// `(from, to, where)` for every path in a module's code to another
    /// module that is neither its ancestor nor its descendant.
    fn references(&self) -> Vec<(ModPath, ModPath, String)> {
        let test_modules: BTreeSet<ModPath> = self
            .modules
            .iter()
            .flat_map(|(m, f)| {
                let code = strip_comments(&std::fs::read_to_string(f).unwrap_or_default());
                let (_, tests) = strip_test_modules(&code);
                tests.into_iter().map(move |t| {
                    let mut p = m.clone();
                    p.push(t);
                    p
                })
            })
            .collect();
        let mut out = Vec::new();
        for (module, file) in &self.modules {
            if test_modules.iter().any(|t| module.starts_with(t)) {
                continue;
            }
            let text = std::fs::read_to_string(file).unwrap_or_default();
            let (code, _) = strip_test_modules(&strip_comments(&text));
            for (n, line) in code.lines().enumerate() {
                let mut targets = Vec::new();
                for (at, _) in line.match_indices("crate::") {
                    if line[..at].chars().next_back().is_some_and(is_ident) {
                        continue;
                    }
                    // A `use crate::{..}` group may span lines: read on.
                    let offset: usize = code.lines().take(n).map(|l| l.len() + 1).sum::<usize>() + at;
                    for (path, _) in path_tree(&code[offset + "crate::".len()..]) {
                        targets.push(self.resolve(&path));
                    }
                }
                for (at, _) in line.match_indices("super::") {
                    if line[..at].chars().next_back().is_some_and(|c| is_ident(c) || c == ':') {
                        continue;
                    }
                    let mut rest = &line[at..];
                    let mut base = module.clone();
                    while let Some(r) = rest.strip_prefix("super::") {
                        base.pop();
                        rest = r;
                    }
                    let offset = line.len() - rest.len();
                    let line_offset: usize = code.lines().take(n).map(|l| l.len() + 1).sum();
                    for (path, _) in path_tree(&code[line_offset + offset..]) {
                        let mut full = base.clone();
                        full.extend(path);
                        targets.push(self.resolve(&full));
                    }
                }
                for target in targets {
                    if target.starts_with(module) || module.starts_with(&target) {
                        continue;
                    }
                    let shared = module.iter().zip(&target).take_while(|(a, b)| a == b).count();
                    let from = module[..=shared].to_vec();
                    let to = target[..=shared].to_vec();
                    let place = format!("{}:{}: {}", file.display(), n + 1, line.trim());
                    out.push((from, to, place));
                }
            }
        }
        out
    }
}

/// The strongly connected sets of more than one module (Tarjan).
fn cycles(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<ModPath, usize>,
        low: BTreeMap<ModPath, usize>,
        stack: Vec<ModPath>,
        on: BTreeSet<ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    fn visit(s: &mut State<'_>, v: &ModPath) {
        let n = s.index.len();
        s.index.insert(v.clone(), n);
        s.low.insert(v.clone(), n);
        s.stack.push(v.clone());
        s.on.insert(v.clone());
        let next: Vec<ModPath> = s.edges.get(v).map(|e| e.iter().cloned().collect()).unwrap_or_default();
        for w in next {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let lw = s.low[&w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(&w) {
                let iw = s.index[&w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(&w);
                let done = &w == v;
                comp.push(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: Vec<ModPath> = edges.keys().cloned().collect();
    for v in nodes {
        if !s.index.contains_key(&v) {
            visit(&mut s, &v);
        }
    }
    s.out
}

/// Every module cycle of the crate at `src`, each with the lines that
/// make its edges.
fn crate_cycles(src: &Path) -> Vec<String> {
    let Some(krate) = Crate::read(src) else { return Vec::new() };
    let refs = krate.references();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (from, to, _) in &refs {
        edges.entry(from.clone()).or_default().insert(to.clone());
    }
    let show = |m: &ModPath| if m.is_empty() { "crate".to_string() } else { m.join("::") };
    cycles(&edges)
        .into_iter()
        .map(|comp| {
            let members: BTreeSet<&ModPath> = comp.iter().collect();
            let mut text = format!("cycle {}:", comp.iter().map(show).collect::<Vec<_>>().join(" <-> "));
            let mut seen = BTreeSet::new();
            for (from, to, place) in &refs {
                if members.contains(from) && members.contains(to) && seen.insert((from, to)) {
                    text.push_str(&format!("\n    {} -> {}: {place}", show(from), show(to)));
                }
            }
            text
        })
        .collect()
}

/// The `src/` of every workspace crate.
fn workspace_sources() -> Vec<PathBuf> {
    let root = root();
    let mut out: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .map(|d| d.flatten().map(|e| e.path().join("src")).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    out.push(root.join("xtask/src"));
    out.push(root.join("benches/src"));
    out.sort();
    out
}

#[test]
fn no_crate_has_a_module_cycle() {
    let sources = workspace_sources();
    assert!(sources.len() >= 15, "{} crates found", sources.len());
    let mut found = Vec::new();
    for src in &sources {
        for cycle in crate_cycles(src) {
            found.push(format!("{}: {cycle}", src.display()));
        }
    }
    assert!(found.is_empty(), "module cycles (each layer may use only those below it):\n{}", found.join("\n"));
}

/// The reader on a small crate written here: a cycle through `use`
/// groups, `super::` paths and a root re-export is found; the layered
/// version of the same crate is not flagged.
#[test]
fn the_reader_finds_a_cycle_and_only_a_cycle() {
    let dir = std::env::temp_dir().join(format!("module-cycles-{}", std::process::id()));
    let src = dir.join("src");
    let write = |rel: &str, text: &str| {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("lib.rs", "pub mod low;\npub mod high;\npub use low::Thing;\n");
    write("low/mod.rs", "pub mod a;\npub mod b;\npub struct Thing;\n");
    write("low/a.rs", "use super::b::B;\n/// crate::high is only named in a comment.\npub struct A;\n");
    write("low/b.rs", "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::low::a::A;\n}\n");
    write("high.rs", "use crate::{low::a::A, Thing};\n");
    assert_eq!(crate_cycles(&src), Vec::<String>::new());
    // b now uses a (a uses b): a cycle among the children of `low`.
    write("low/b.rs", "pub struct B(crate::low::a::A);\n");
    let found = crate_cycles(&src);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("cycle low::a <-> low::b:"), "{found:?}");
    // low uses high through the root re-export of a high item: a cycle
    // between the root's children.
    write("low/b.rs", "pub struct B;\n");
    write("lib.rs", "pub mod low;\npub mod high;\npub use low::Thing;\npub use high::H;\n");
    write("high.rs", "use crate::{low::a::A, Thing};\npub struct H;\n");
    write("low/a.rs", "use crate::H;\npub struct A;\n");
    let found = crate_cycles(&src);
    assert!(found.len() == 1 && found[0].starts_with("cycle high <-> low:"), "{found:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn path_trees_expand_groups_and_renames() {
    let paths: Vec<(String, String)> =
        path_tree("a::b::{c, d::e as f, g::*, self};").into_iter().map(|(p, n)| (p.join("::"), n)).collect();
    assert_eq!(
        paths,
        [("a::b::c", "c"), ("a::b::d::e", "f"), ("a::b::g", "g"), ("a::b", "b")]
            .map(|(p, n)| (p.to_string(), n.to_string()))
    );
}
