//! The walls of `src/`, kept by a test, in two parts.
//!
//! **A table of floors** ([`FLOORS`]) is the authority: every folder of `src/` (and every
//! file module at its root) stands on a floor, and every `crate::…`, `super::…` and `self::…`
//! path of a file points down to a lower floor or stays inside its own folder. A subfolder is
//! either part of its parent ([`Floor::WithParent`]) or a folder of its own on its own floor.
//! The few crossings the code still has are named in [`EXCEPTIONS`], each with its reason; a
//! temporary one also leaves the check for cycles between folders, which every other edge
//! (allowed or excepted) passes. A folder or root module missing from the table fails, so a
//! new folder is placed on purpose.
//!
//! **The `//!` headers** state only what the table cannot: a file's exceptions and the
//! leaves (`Imports only: nothing.`). A header may still state a wall on a line of its own
//! (running on over the next lines up to its full stop), in one of two forms, and is then
//! held to it:
//!
//! ```text
//! //! Must not import: cli/, cmd/, ui/, report/.
//! //! Imports only: analysis/, units.
//! ```
//!
//! An item is a module path (`cli/`, `report/html.rs`, `error`); `Imports only: nothing.` says
//! a file imports nothing else from iosat. A file may always name itself and its own
//! submodules. Paths are read in `use` trees and inline, outside comments, strings and
//! test-only code: any item under a `cfg` that is false whenever `test` is (`cfg(test)`,
//! `cfg(all(test, …))`, `cfg(not(not(test)))`, …), a file under `#![cfg(test)]`, and a module
//! declared under such a `cfg`. Test-only files (`tests.rs`), the crate root (`lib.rs`, which
//! declares the modules) and the binary (`main.rs`, which reaches the library as `iosat::`)
//! are not read.

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

/// A `cfg` predicate's value in a build without `test`: false, true, or not known here (a
/// feature, a target).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tri {
    No,
    Yes,
    Maybe,
}

/// Evaluates the predicate starting at `i` for a build without `test`; returns its value and
/// the index after it.
fn cfg_pred(toks: &[(String, usize)], mut i: usize) -> (Tri, usize) {
    let Some((name, _)) = toks.get(i) else {
        return (Tri::Maybe, i);
    };
    i += 1;
    match name.as_str() {
        "all" | "any" | "not" if toks.get(i).is_some_and(|t| t.0 == "(") => {
            let mut args = Vec::new();
            i += 1;
            while let Some((t, _)) = toks.get(i) {
                match t.as_str() {
                    ")" => {
                        i += 1;
                        break;
                    }
                    "," => i += 1,
                    _ => {
                        let (v, next) = cfg_pred(toks, i);
                        args.push(v);
                        i = next.max(i + 1);
                    }
                }
            }
            let v = match name.as_str() {
                "all" if args.contains(&Tri::No) => Tri::No,
                "all" if args.iter().all(|&a| a == Tri::Yes) => Tri::Yes,
                "any" if args.contains(&Tri::Yes) => Tri::Yes,
                "any" if args.iter().all(|&a| a == Tri::No) => Tri::No,
                "not" => match args.first() {
                    Some(Tri::Yes) => Tri::No,
                    Some(Tri::No) => Tri::Yes,
                    _ => Tri::Maybe,
                },
                _ => Tri::Maybe,
            };
            (v, i)
        }
        "test" => (Tri::No, i),
        _ => {
            // `feature = "x"`: the literal is blanked to its opening quote.
            if toks.get(i).is_some_and(|t| t.0 == "=") {
                i += 1;
                while toks.get(i).is_some_and(|t| t.0 != "," && t.0 != ")") {
                    i += 1;
                }
            }
            (Tri::Maybe, i)
        }
    }
}

/// At an attribute `#[cfg(…)]` (or `#![cfg(…)]`) whose predicate is false in every build
/// without `test`: the index after its `]`.
fn test_only_cfg(toks: &[(String, usize)], i: usize) -> Option<usize> {
    let t = |k: usize| toks.get(k).map(|t| t.0.as_str());
    if t(i) != Some("#") {
        return None;
    }
    let j = if t(i + 1) == Some("!") { i + 2 } else { i + 1 };
    if t(j) != Some("[") || t(j + 1) != Some("cfg") || t(j + 2) != Some("(") {
        return None;
    }
    let (v, end) = cfg_pred(toks, j + 3);
    (v == Tri::No && t(end) == Some(")") && t(end + 1) == Some("]")).then_some(end + 2)
}

/// The index after the attribute (`#[…]` or `#![…]`) that starts at `i`.
fn skip_attr(toks: &[(String, usize)], mut i: usize) -> usize {
    let mut depth = 0;
    while let Some((t, _)) = toks.get(i) {
        i += 1;
        match t.as_str() {
            "[" => depth += 1,
            "]" => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    i
}

/// Whether the whole file is test-only (`#![cfg(test)]` among its inner attributes).
fn file_is_test_only(text: &str) -> bool {
    let toks = tokens(&code_only(text));
    let mut i = 0;
    while toks.get(i).is_some_and(|t| t.0 == "#") && toks.get(i + 1).is_some_and(|t| t.0 == "!") {
        if test_only_cfg(&toks, i).is_some() {
            return true;
        }
        i = skip_attr(&toks, i);
    }
    false
}

/// The modules a file declares under a test-only `cfg` (`#[cfg(test)] mod tests;`).
fn test_only_mods(text: &str) -> Vec<String> {
    let toks = tokens(&code_only(text));
    let mut out = Vec::new();
    for i in 0..toks.len() {
        if let Some(mut j) = test_only_cfg(&toks, i) {
            // Past further attributes and a visibility.
            while toks.get(j).is_some_and(|t| t.0 == "#") {
                j = skip_attr(&toks, j);
            }
            while toks
                .get(j)
                .is_some_and(|t| matches!(t.0.as_str(), "pub" | "(" | ")" | "crate" | "super"))
            {
                j += 1;
            }
            if toks.get(j).is_some_and(|t| t.0 == "mod") {
                if let Some((name, _)) = toks.get(j + 1) {
                    out.push(name.clone());
                }
            }
        }
    }
    out
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
        if let Some(after) = test_only_cfg(&toks, i) {
            i = skip_item(&toks, after);
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

/// Every crossing of the wall one file's header states, as "file:line: ..." lines.
fn check_file(src: &Path, rel: &Path, text: &str) -> Vec<String> {
    let shown = Path::new("src").join(rel).display().to_string();
    let module = module_of(rel);
    let (wall, line) = match parse_wall(text) {
        Err(e) => return vec![format!("{shown}: header: {e}")],
        // The table of floors holds the file; its header states no more than that.
        Ok(None) => return Vec::new(),
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

/// Where a folder (or a file module at the root of `src/`) stands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Floor {
    /// On floor N: it may import what stands on a lower floor.
    At(u8),
    /// A subfolder that is part of its parent's folder, on its floor.
    WithParent,
}
use Floor::{At, WithParent};

/// Every folder of `src/` that holds Rust files, and every file module at its root, from the
/// ground up (docs/design.md §2). Placing a new folder is a decision: one missing fails.
const FLOORS: &[(&str, Floor)] = &[
    // The vocabulary every floor speaks: errors, units, the latency recorder, build facts.
    ("error", At(0)),
    ("units", At(0)),
    ("latency", At(0)),
    ("build", At(0)),
    // The system below (the only code that touches /proc, /sys and raw system calls), pure
    // findings, and command-line syntax.
    ("sys", At(1)),
    ("analysis", At(1)),
    ("cli", At(1)),
    // What every result carries, and which device it is about.
    ("envelope", At(2)),
    ("profile", At(2)),
    // Samples, rates, the recording, the live collector.
    ("monitor", At(3)),
    // Learning, an observer of the monitor's intervals.
    ("learn", At(4)),
    // The experiments, other tools' results, the exporter.
    ("load", At(5)),
    ("fsync", At(5)),
    ("import", At(5)),
    ("exporter", At(5)),
    // The open loop (issue 36.3): a room of load/, its levels part of the sweep's result.
    ("load/open", WithParent),
    // `fsync --like`'s unit tests, in a file of their own beside like.rs.
    ("fsync/like", WithParent),
    // Results as people read them; screens.
    ("report", At(6)),
    ("report/doc", WithParent),
    ("ui", At(6)),
    ("ui/top", WithParent),
    // Validated specs from the syntax, then the commands that orchestrate everything.
    ("config", At(7)),
    ("cmd", At(8)),
];

/// Table rows for folders that another branch is adding: no failure while they are absent
/// (none now). Remove a row here once its folder has landed.
const COMING: &[&str] = &[];

/// An import across the floors that the code still makes, named with its reason.
struct Exception {
    from: &'static str,
    to: &'static str,
    /// Being removed: left out of the check for cycles (it closes one today).
    temporary: bool,
    why: &'static str,
}

const EXCEPTIONS: &[Exception] = &[];

/// One iosat path a file names: the file's module, the path's, and where.
struct Import {
    file: String,
    line: usize,
    from: Vec<String>,
    to: Vec<String>,
}

/// The table row a module belongs to (its folder, or a parent folder for a `WithParent`
/// subfolder): the longest row that is a prefix of it. A subfolder's row applies only to a
/// folder of `present` (`load/open` is a row for the folder, not for a file `load/open.rs`).
fn unit_of<'t>(
    floors: &[(&'t str, Floor)],
    present: &[String],
    module: &[String],
) -> Option<(&'t str, u8)> {
    let row = floors
        .iter()
        .filter(|(k, _)| {
            let segs: Vec<&str> = k.split('/').collect();
            (segs.len() == 1 || present.iter().any(|p| p == k))
                && module.len() >= segs.len()
                && module.iter().zip(&segs).all(|(a, b)| a == b)
        })
        .max_by_key(|(k, _)| k.split('/').count())?;
    match row.1 {
        At(n) => Some((row.0, n)),
        WithParent => {
            let parent: Vec<String> = module[..row.0.split('/').count() - 1].to_vec();
            unit_of(floors, present, &parent)
        }
    }
}

/// Every way `imports` break the table: a folder or root module of `present` not in it (or a
/// row naming nothing present), an import up or sideways that no exception names, a cycle
/// between folders, and each exception no longer used (a note on stderr, not a failure: the
/// branch that removes a crossing and this table land apart).
fn check_floors(
    present: &[String],
    imports: &[Import],
    floors: &[(&str, Floor)],
    exceptions: &[Exception],
) -> Vec<String> {
    let mut errors = Vec::new();
    for p in present {
        if !floors.iter().any(|(k, _)| k == p) {
            errors.push(format!(
                "src/{p}: not in the table of floors (tests/it/layering.rs FLOORS): place it"
            ));
        }
    }
    for (k, _) in floors {
        if !present.iter().any(|p| p == k) && !COMING.contains(k) {
            errors.push(format!(
                "the table of floors names {k}, which is not in src/"
            ));
        }
    }
    let mut edges: Vec<(&str, &str)> = Vec::new();
    let mut used = vec![false; exceptions.len()];
    for im in imports {
        let (Some((from, f)), Some((to, t))) = (
            unit_of(floors, present, &im.from),
            unit_of(floors, present, &im.to),
        ) else {
            continue; // Not placed: reported above.
        };
        if from == to {
            continue;
        }
        let excepted = exceptions.iter().position(|e| e.from == from && e.to == to);
        if let Some(x) = excepted {
            used[x] = true;
            if !exceptions[x].temporary {
                edges.push((from, to));
            }
        } else if t < f {
            edges.push((from, to));
        } else {
            // Kept for the cycle check too: a planted import up usually closes a circle.
            edges.push((from, to));
            let way = if t == f { "sideways" } else { "up" };
            errors.push(format!(
                "{}:{}: crate::{} points {way} from {from}/ (floor {f}) to {to}/ (floor {t})",
                im.file,
                im.line,
                im.to.join("::")
            ));
        }
    }
    for (e, used) in exceptions.iter().zip(used) {
        if used {
            eprintln!("layering: excepted {} → {}: {}", e.from, e.to, e.why);
        } else {
            eprintln!(
                "layering: the exception {} → {} ({}) is no longer used: remove it",
                e.from, e.to, e.why
            );
        }
    }
    edges.sort();
    edges.dedup();
    if let Some(cycle) = find_cycle(&edges) {
        errors.push(format!("a cycle between folders: {}", cycle.join(" → ")));
    }
    errors
}

/// A cycle in a directed graph, as its nodes with the first repeated at the end.
fn find_cycle<'a>(edges: &[(&'a str, &'a str)]) -> Option<Vec<&'a str>> {
    fn visit<'a>(
        n: &'a str,
        edges: &[(&'a str, &'a str)],
        path: &mut Vec<&'a str>,
        done: &mut Vec<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(at) = path.iter().position(|&p| p == n) {
            let mut c = path[at..].to_vec();
            c.push(n);
            return Some(c);
        }
        if done.contains(&n) {
            return None;
        }
        path.push(n);
        for &(a, b) in edges {
            if a == n {
                if let Some(c) = visit(b, edges, path, done) {
                    return Some(c);
                }
            }
        }
        path.pop();
        done.push(n);
        None
    }
    let mut done = Vec::new();
    edges
        .iter()
        .find_map(|&(a, _)| visit(a, edges, &mut Vec::new(), &mut done))
}

/// The folders of `src/` that hold Rust files (`report/doc`) and the file modules at its
/// root (`units`), as the table names them.
fn present_units(src: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut out: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(src).ok()?;
            let parent = rel.parent()?;
            if parent.as_os_str().is_empty() {
                let stem = rel.file_stem()?.to_str()?;
                (!matches!(stem, "lib" | "main")).then(|| stem.to_string())
            } else {
                Some(parent.to_str()?.to_string())
            }
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The files of `src/` the walls apply to, with their text: neither the crate root, nor the
/// binary, nor test-only files (`tests.rs`, `#![cfg(test)]`, a module declared under a
/// test-only `cfg`).
fn checked_files(src: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let texts: Vec<(PathBuf, String)> = files
        .into_iter()
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.strip_prefix(src).unwrap().to_path_buf(), t)
        })
        .collect();
    let test_mods: Vec<Vec<String>> = texts
        .iter()
        .flat_map(|(rel, t)| {
            let m = module_of(rel);
            test_only_mods(t).into_iter().map(move |n| {
                let mut m = m.clone();
                m.push(n);
                m
            })
        })
        .collect();
    texts
        .into_iter()
        .filter(|(rel, t)| {
            let root = rel == Path::new("main.rs") || rel == Path::new("lib.rs");
            let tests = rel.file_name().is_some_and(|f| f == "tests.rs");
            let m = module_of(rel);
            !root
                && !tests
                && !file_is_test_only(t)
                && !test_mods.iter().any(|tm| starts_with(&m, tm))
        })
        .collect()
}

/// The table of floors and the headers, on the real `src/`.
#[test]
fn every_import_points_down_or_inside_its_folder_and_headers_hold() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    rust_files(&src, &mut all);
    let files = checked_files(&src);
    assert!(
        files.len() > 100,
        "only {} files checked: is src/ where the test looks?",
        files.len()
    );
    let mut errors = Vec::new();
    let mut imports = Vec::new();
    for (rel, text) in &files {
        errors.extend(check_file(&src, rel, text));
        let module = module_of(rel);
        for (to, line) in crate_paths(text, &module) {
            imports.push(Import {
                file: Path::new("src").join(rel).display().to_string(),
                line,
                from: module.clone(),
                to,
            });
        }
    }
    errors.extend(check_floors(
        &present_units(&src, &all),
        &imports,
        FLOORS,
        EXCEPTIONS,
    ));
    assert!(
        errors.is_empty(),
        "{} wall(s) crossed:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

fn import(from: &str, to: &str) -> Import {
    Import {
        file: format!("src/{from}.rs"),
        line: 1,
        from: from.split('/').map(String::from).collect(),
        to: to.split("::").map(String::from).collect(),
    }
}

/// The three ways a change breaks the table, planted: an import up (and one sideways), a
/// cycle made of excepted imports, a folder nobody placed.
#[test]
fn planted_upward_import_cycle_and_unlisted_folder_fail() {
    let floors: &[(&str, Floor)] = &[
        ("sys", At(1)),
        ("monitor", At(3)),
        ("report", At(6)),
        ("ui", At(6)),
        ("ui/top", WithParent),
    ];
    let present = strs(&["monitor", "report", "sys", "ui", "ui/top"]);
    let ok = [
        import("monitor/collect", "sys::diskstats"),
        import("ui/top/draw", "monitor::Rates"),
        import("ui/top/draw", "ui::progress"),
    ];
    assert_eq!(
        check_floors(&present, &ok, floors, &[]),
        Vec::<String>::new()
    );

    let up = [
        import("sys/clock", "monitor::Rates"),
        import("ui/progress", "report::table"),
    ];
    assert_eq!(
        check_floors(&present, &up, floors, &[]),
        [
            "src/sys/clock.rs:1: crate::monitor::Rates points up from sys/ (floor 1) to monitor/ (floor 3)",
            "src/ui/progress.rs:1: crate::report::table points sideways from ui/ (floor 6) to report/ (floor 6)",
        ]
    );

    // Named, the upward import passes; a cycle it closes does not (unless the exception is a
    // temporary one, on its way out).
    let named = |temporary| Exception {
        from: "sys",
        to: "monitor",
        temporary,
        why: "planted",
    };
    let cycle = [
        import("sys/clock", "monitor::Rates"),
        import("monitor/collect", "sys::diskstats"),
    ];
    assert_eq!(
        check_floors(&present, &cycle, floors, &[]),
        [
            "src/sys/clock.rs:1: crate::monitor::Rates points up from sys/ (floor 1) to monitor/ (floor 3)",
            "a cycle between folders: monitor → sys → monitor",
        ]
    );
    assert_eq!(
        check_floors(&present, &cycle, floors, &[named(false)]),
        ["a cycle between folders: monitor → sys → monitor"]
    );
    assert!(check_floors(&present, &cycle, floors, &[named(true)]).is_empty());

    let mut more = present.clone();
    more.push("newfolder".into());
    assert_eq!(
        check_floors(&more, &ok, floors, &[]),
        ["src/newfolder: not in the table of floors (tests/it/layering.rs FLOORS): place it"]
    );
    // And a row for a folder that is gone.
    assert_eq!(
        check_floors(&present[..4], &ok[..1], floors, &[]),
        ["the table of floors names ui/top, which is not in src/"]
    );
}

/// Code that only a test build compiles, in any shape of `cfg`, is not read; code a build
/// without `test` may compile is.
#[test]
fn test_only_cfgs_of_any_shape_are_skipped() {
    let text = r#"//! x
#[cfg(all(test, feature = "x"))]
use crate::a;
#[cfg(not(not(test)))]
mod inline { use crate::b; }
#[cfg(any(test, target_os = "linux"))]
use crate::kept_any;
#[cfg(not(test))]
use crate::kept_not;
#[cfg(all(test))] #[allow(unused)]
fn f() { crate::c::d(); }
fn g() { crate::kept_g::h(); }
"#;
    let found: Vec<String> = crate_paths(text, &[])
        .into_iter()
        .map(|(p, _)| p.join("::"))
        .collect();
    assert_eq!(found, ["kept_any", "kept_not", "kept_g::h"]);
    assert!(file_is_test_only(
        "//! x\n#![allow(dead_code)]\n#![cfg(test)]\nuse crate::a;\n"
    ));
    assert!(!file_is_test_only(
        "//! x\n#![cfg(any(test, unix))]\nuse crate::a;\n"
    ));
    assert_eq!(
        test_only_mods("#[cfg(test)]\nmod tests;\n#[cfg(all(test, unix))]\npub(crate) mod fixtures;\nmod real;\n"),
        ["tests", "fixtures"]
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
