//! The walls of `src/`, kept by a test. Every source file's `//!` header states its wall on a
//! line of its own (running on over the next lines up to its full stop), in one of two forms:
//!
//! ```text
//! //! Must not import: cli/, cmd/, ui/, report/.
//! //! Imports only: analysis/, units.
//! ```
//!
//! An item is a module path (`cli/`, `report/html.rs`, `error`); `Imports only: nothing.` says
//! a file imports nothing else from iosat. A file may always name itself and its own
//! submodules. The test reads each header, collects every `crate::…`, `super::…` and
//! `self::…` path of the file (in `use` trees and inline), outside comments, strings and
//! `#[cfg(test)]` items, resolves it to a module path and fails naming the file, the line and
//! the wall the path crosses. Test-only files (`tests.rs`), the crate root (`lib.rs`, which
//! declares the modules) and the binary (`main.rs`, which reaches the library as `iosat::`)
//! carry no wall.

use std::path::{Path, PathBuf};

/// A wall as a header states it; each item is a module path (`["report", "html"]`).
#[derive(Debug, PartialEq)]
enum Wall {
    MustNot(Vec<Vec<String>>),
    Only(Vec<Vec<String>>),
}

const MUST_NOT: &str = "Must not import:";
const ONLY: &str = "Imports only:";

/// The wall line of a file's `//!` header; `Ok(None)` when the header states none.
fn parse_wall(text: &str) -> Result<Option<(Wall, String)>, String> {
    let header: Vec<&str> = text
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| l.trim_start_matches("//!").trim())
        .collect();
    let mut found = None;
    for (n, line) in header.iter().enumerate() {
        if !line.starts_with(MUST_NOT) && !line.starts_with(ONLY) {
            continue;
        }
        if found.is_some() {
            return Err("states two walls".to_string());
        }
        // A long wall runs on over the next lines, up to its full stop.
        let mut body = line.to_string();
        for more in &header[n + 1..] {
            if body.ends_with('.') || more.is_empty() {
                break;
            }
            body = format!("{body} {more}");
        }
        let is_only = body.starts_with(ONLY);
        let rest = &body[if is_only { ONLY.len() } else { MUST_NOT.len() }..];
        let list = rest
            .trim()
            .strip_suffix('.')
            .ok_or_else(|| format!("wall line {body:?} does not end with a full stop"))?;
        let mut items = Vec::new();
        if !(is_only && list.trim() == "nothing") {
            for item in list.split(',') {
                let item = item.trim();
                if item.is_empty() || item.contains(' ') {
                    return Err(format!(
                        "wall item {item:?} in {body:?} is not one module path"
                    ));
                }
                let item = item.trim_end_matches('/').trim_end_matches(".rs");
                items.push(
                    item.split(['/', ':'])
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect(),
                );
            }
        }
        let wall = if is_only {
            Wall::Only(items)
        } else {
            Wall::MustNot(items)
        };
        found = Some((wall, body));
    }
    Ok(found)
}

/// `src/report/mod.rs` → `report`, `src/ui/top/draw.rs` → `ui::top::draw`, `src/lib.rs` → the root.
fn module_of(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let file = segs.pop().expect("a file name");
    let stem = file.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        segs.push(stem.to_string());
    }
    segs
}

/// Whether a module path names a module of `src/`.
fn module_exists(src: &Path, module: &[String]) -> bool {
    if module.is_empty() {
        return true;
    }
    let base: PathBuf = module.iter().collect();
    src.join(&base).with_extension("rs").is_file() || src.join(&base).join("mod.rs").is_file()
}

/// The text with comments, string and character literals replaced by spaces (newlines kept,
/// so line numbers stay).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if b[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'r' if (i == 0
                || !ident(b[i - 1])
                || (b[i - 1] == b'b' && (i < 2 || !ident(b[i - 2]))))
                && matches!(b.get(i + 1), Some(b'"') | Some(b'#')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let mut close = vec![b'"'];
                close.resize(1 + hashes, b'#');
                let start = i + 2 + hashes;
                let end = (start..b.len())
                    .find(|&j| b[j..].starts_with(&close))
                    .map_or(b.len(), |j| j + close.len());
                blank(&mut out, start, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(b.len());
                blank(&mut out, i + 1, end);
                i = end;
            }
            b'\'' => {
                // A character literal ('x', '\n', '\u{7f}', '{'), else a lifetime ('a).
                let end = if b.get(i + 1) == Some(&b'\\') {
                    (i + 3..b.len())
                        .find(|&j| b[j] == b'\'')
                        .map_or(b.len(), |j| j + 1)
                } else if b.get(i + 1).is_some() && b.get(i + 2) == Some(&b'\'') {
                    i + 3
                } else if b.get(i + 1).is_some_and(|&c| c >= 0x80) {
                    // A multi-byte character literal.
                    (i + 2..b.len().min(i + 7))
                        .find(|&j| b[j] == b'\'')
                        .map_or(i + 1, |j| j + 1)
                } else {
                    i + 1
                };
                if end > i + 1 {
                    blank(&mut out, i + 1, end);
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Tokens of code (identifiers, `::`, single punctuation) with their 1-based line.
fn tokens(code: &str) -> Vec<(String, usize)> {
    let b = code.as_bytes();
    let (mut out, mut line, mut i) = (Vec::new(), 1, 0);
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            let len = b[i..]
                .iter()
                .take_while(|&&c| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80)
                .count();
            out.push((code[i..i + len].to_string(), line));
            i += len;
        } else if b[i..].starts_with(b"::") {
            out.push(("::".to_string(), line));
            i += 2;
        } else {
            out.push(((c as char).to_string(), line));
            i += 1;
        }
    }
    out
}

/// The index after the item that starts at `i` (attributes, then up to its `;` or the `}`
/// that closes its first top-level `{`).
fn skip_item(toks: &[(String, usize)], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < toks.len() {
        match toks[i].0.as_str() {
            "(" | "[" => depth += 1,
            ")" | "]" => depth -= 1,
            ";" if depth == 0 => return i + 1,
            "{" if depth == 0 => {
                let mut braces = 0;
                while i < toks.len() {
                    match toks[i].0.as_str() {
                        "{" => braces += 1,
                        "}" => {
                            braces -= 1;
                            if braces == 0 {
                                return i + 1;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                return i;
            }
            _ => {}
        }
        i += 1;
    }
    i
}

fn is_cfg_test(toks: &[(String, usize)], i: usize) -> bool {
    let want = ["#", "[", "cfg", "(", "test", ")", "]"];
    toks.len() >= i + want.len() && want.iter().zip(&toks[i..]).all(|(w, (t, _))| w == t)
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Expands one `use` tree starting at `i` (after `use`) into full paths; returns the index
/// after the tree.
fn use_tree(
    toks: &[(String, usize)],
    mut i: usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, usize)>,
) -> usize {
    let mut path = prefix.to_vec();
    let mut line = toks.get(i).map_or(0, |t| t.1);
    loop {
        let Some((t, l)) = toks.get(i) else { return i };
        match t.as_str() {
            "::" => i += 1,
            "{" => {
                i += 1;
                loop {
                    match toks.get(i).map(|t| t.0.as_str()) {
                        Some("}") => return i + 1,
                        Some(",") => i += 1,
                        None => return i,
                        _ => i = use_tree(toks, i, &path, out),
                    }
                }
            }
            "*" => {
                out.push((path, line));
                return i + 1;
            }
            "self" if !prefix.is_empty() && path.len() == prefix.len() => {
                // `a::{self, b}` names `a` itself.
                out.push((path, *l));
                return i + 1;
            }
            "as" => {
                out.push((path, line));
                return i + 2;
            }
            t if is_ident(t) => {
                if path.len() == prefix.len() {
                    line = *l;
                }
                path.push(t.to_string());
                i += 1;
            }
            _ => {
                out.push((path, line));
                return i;
            }
        }
    }
}

/// A path as written (`crate::a::b`, `super::x`, `self::y`, or a name) resolved against the
/// file's module; `None` when it is not a path into iosat.
fn resolve(path: &[String], module: &[String]) -> Option<Vec<String>> {
    let first = path.first()?.as_str();
    match first {
        "crate" => Some(path[1..].to_vec()),
        "self" | "super" => {
            // The module a `self::` path starts from: for a.rs (module a), a itself.
            let mut base = module.to_vec();
            let mut rest = path;
            if rest[0] == "self" {
                rest = &rest[1..];
            }
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            Some(base)
        }
        _ => None,
    }
}

/// Every iosat path of a file outside `#[cfg(test)]` items, resolved, with its line.
fn crate_paths(text: &str, module: &[String]) -> Vec<(Vec<String>, usize)> {
    let toks = tokens(&code_only(text));
    let mut written = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if is_cfg_test(&toks, i) {
            i = skip_item(&toks, i + 7);
            continue;
        }
        let t = toks[i].0.as_str();
        if t == "use" {
            i = use_tree(&toks, i + 1, &[], &mut written);
            continue;
        }
        let after_path = i > 0 && toks[i - 1].0 == "::";
        if matches!(t, "crate" | "super" | "self")
            && !after_path
            && toks.get(i + 1).map(|t| t.0.as_str()) == Some("::")
        {
            let mut path = vec![t.to_string()];
            let mut j = i + 1;
            while toks.get(j).map(|t| t.0.as_str()) == Some("::")
                && toks.get(j + 1).is_some_and(|t| is_ident(&t.0))
            {
                path.push(toks[j + 1].0.clone());
                j += 2;
            }
            written.push((path, toks[i].1));
            i = j;
            continue;
        }
        i += 1;
    }
    written
        .into_iter()
        .filter_map(|(p, line)| resolve(&p, module).map(|r| (r, line)))
        .collect()
}

fn starts_with(path: &[String], prefix: &[String]) -> bool {
    path.len() >= prefix.len() && path[..prefix.len()] == *prefix
}

/// The item of the wall a path crosses, if it does.
fn crossed(wall: &Wall, path: &[String], module: &[String]) -> Option<String> {
    if path.is_empty() || starts_with(path, module) && !module.is_empty() {
        return None;
    }
    match wall {
        Wall::MustNot(items) => items
            .iter()
            .find(|it| starts_with(path, it))
            .map(|it| it.join("/")),
        Wall::Only(items) => {
            (!items.iter().any(|it| starts_with(path, it))).then(|| "not in the list".to_string())
        }
    }
}

/// Every wall crossing of one file, as "file:line: ..." lines.
fn check_file(src: &Path, rel: &Path, text: &str) -> Vec<String> {
    let shown = Path::new("src").join(rel).display().to_string();
    let module = module_of(rel);
    let (wall, line) = match parse_wall(text) {
        Err(e) => return vec![format!("{shown}: header: {e}")],
        Ok(None) => {
            return vec![format!(
                "{shown}: its //! header states no wall (a line `//! {MUST_NOT} ….` or `//! {ONLY} ….`)"
            )];
        }
        Ok(Some(found)) => found,
    };
    let mut errors = Vec::new();
    let (Wall::MustNot(items) | Wall::Only(items)) = &wall;
    for it in items {
        if !module_exists(src, it) {
            errors.push(format!(
                "{shown}: header names {}, which is no module of src/",
                it.join("/")
            ));
        }
    }
    for (path, n) in crate_paths(text, &module) {
        if let Some(item) = crossed(&wall, &path, &module) {
            errors.push(format!(
                "{shown}:{n}: crate::{} crosses the wall `{line}` ({item})",
                path.join("::")
            ));
        }
    }
    errors
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_module_keeps_the_wall_its_header_states() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut errors = Vec::new();
    let mut checked = 0;
    for path in &files {
        let rel = path.strip_prefix(&src).expect("under src/");
        let root = rel == Path::new("main.rs") || rel == Path::new("lib.rs");
        if root || rel.file_name().is_some_and(|f| f == "tests.rs") {
            continue;
        }
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        checked += 1;
        errors.extend(check_file(&src, rel, &text));
    }
    assert!(
        checked > 100,
        "only {checked} files checked: is src/ where the test looks?"
    );
    assert!(
        errors.is_empty(),
        "{} wall(s) crossed or unstated:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_wall_line_is_parsed_into_module_paths() {
    let text =
        "//! What it owns.\n//! Must not import: cli/, report/html.rs, error.\n\nfn f() {}\n";
    let (wall, _) = parse_wall(text).unwrap().unwrap();
    assert_eq!(
        wall,
        Wall::MustNot(vec![
            strs(&["cli"]),
            strs(&["report", "html"]),
            strs(&["error"])
        ])
    );
    let (wall, _) = parse_wall("//! Imports only: nothing.\n").unwrap().unwrap();
    assert_eq!(wall, Wall::Only(vec![]));
    assert!(
        parse_wall("//! Must not import: cli/ or cmd/.\n").is_err(),
        "an `or` list is refused"
    );
    assert!(
        parse_wall("//! Must not import: cli/\n").is_err(),
        "the full stop is required"
    );
    assert_eq!(
        parse_wall("//! Nothing here.\nuse crate::x;\n").unwrap(),
        None
    );
}

#[test]
fn paths_are_found_in_use_trees_and_inline_but_not_in_tests_comments_or_strings() {
    let text = r##"//! x
use crate::{a::{self, b::C}, d::*};
use super::e as f;
pub(crate) fn g() -> crate::h::I {
    let s = "crate::in_a_string::x"; // crate::in_a_comment
    let c = '{';
    let r = r#"crate::raw"#;
    super::super::j::k();
    Self::m();
}
#[cfg(test)]
mod tests {
    use crate::only_in_tests;
}
#[cfg(test)]
use crate::test_import;
fn after() { crate::l::m(); }
"##;
    let found: Vec<(String, usize)> = crate_paths(text, &strs(&["p", "q"]))
        .into_iter()
        .map(|(p, n)| (p.join("::"), n))
        .collect();
    let want = [
        ("a", 2),
        ("a::b::C", 2),
        ("d", 2),
        ("p::e", 3),
        ("h::I", 4),
        ("j::k", 8),
        ("l::m", 17),
    ];
    let want: Vec<(String, usize)> = want.iter().map(|(p, n)| (p.to_string(), *n)).collect();
    assert_eq!(found, want);
}

#[test]
fn a_crossing_names_file_line_and_wall() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let text =
        "//! Must not import: ui/.\nuse crate::units;\nfn f() { crate::ui::progress::x(); }\n";
    let errors = check_file(&src, Path::new("report/table.rs"), text);
    assert_eq!(
        errors,
        ["src/report/table.rs:3: crate::ui::progress::x crosses the wall `Must not import: ui/.` (ui)"]
    );
    let text = "//! Imports only: analysis/.\nuse super::Verdict;\nuse crate::sys::clock;\n";
    let errors = check_file(&src, Path::new("analysis/usl.rs"), text);
    assert_eq!(
        errors,
        ["src/analysis/usl.rs:3: crate::sys::clock crosses the wall `Imports only: analysis/.` (not in the list)"]
    );
    let errors = check_file(
        &src,
        Path::new("report/table.rs"),
        "//! Must not import: nosuch/.\n",
    );
    assert_eq!(
        errors,
        ["src/report/table.rs: header names nosuch, which is no module of src/"]
    );
}

/// Every `docs/design.md §N` or `§N.M` the code cites names a section (`## N.`) of
/// docs/design.md, and `§N.M` a numbered point `M.` of it, so a citation can't point nowhere.
#[test]
fn every_design_citation_names_a_section_that_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let design = std::fs::read_to_string(root.join("docs/design.md")).expect("docs/design.md");
    let section = |n: &str| -> Option<String> {
        let head = format!("## {n}. ");
        let start = design.find(&head)?;
        let body = &design[start + head.len()..];
        Some(body[..body.find("\n## ").unwrap_or(body.len())].to_string())
    };
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("tests/it"), &mut files);
    let cite = "docs/design.md §";
    let (mut cited, mut errors) = (0, Vec::new());
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for (i, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices(cite) {
                let num: String = line[at + cite.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                let num = num.trim_end_matches('.');
                if num.is_empty() {
                    continue; // This file's own prose (`§N`).
                }
                let (sec, point) = num.split_once('.').unwrap_or((num, ""));
                let found = section(sec).is_some_and(|body| {
                    point.is_empty() || body.lines().any(|l| l.starts_with(&format!("{point}. ")))
                });
                cited += 1;
                if !found {
                    let shown = path.strip_prefix(root).unwrap().display();
                    errors.push(format!(
                        "{shown}:{}: cites §{num}, not in docs/design.md",
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(cited > 20, "only {cited} citations found");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
