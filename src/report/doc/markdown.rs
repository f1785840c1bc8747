//! The Markdown writer of a [`Doc`] (GitHub-flavoured): the title and section headings at the
//! document's depth, a blank line between blocks, every table column, lists as bullets,
//! footnotes under their table; charts and the context table left out (the page has them).
//! Must not import: cli/, config/, cmd/, ui/, exporter/, report/sweep.rs, report/analyze.rs, report/fsync.rs, report/stat.rs,
//! report/compare.rs, report/levels.rs.

use super::{Block, Doc, List, Record};

pub fn write(doc: &Doc) -> String {
    let title = doc.md_title.as_ref().unwrap_or(&doc.title);
    let mut out = format!("{} {title}\n", hashes(doc.md_level));
    blocks(&mut out, &doc.blocks, doc.md_level + 1);
    out
}

fn hashes(level: usize) -> String {
    "#".repeat(level.max(1))
}

fn blocks(out: &mut String, bs: &[Block], level: usize) {
    for b in bs {
        if let Block::Details { blocks: inner, .. } = b {
            blocks(out, inner, level);
            continue;
        }
        let s = block(b, level);
        if !s.is_empty() {
            out.push('\n');
            out.push_str(&s);
        }
    }
}

fn block(b: &Block, level: usize) -> String {
    match b {
        Block::Context(_)
        | Block::ContextTable(_)
        | Block::Chart { .. }
        | Block::Details { .. } => String::new(),
        Block::Lead { text, .. } => format!("{}\n", text.replace('\n', "  \n")),
        Block::Heading(h) => format!("{} {h}\n", hashes(level)),
        Block::Para(p) => format!("{p}\n"),
        Block::Table(t) => {
            let mut s = t.table.to_markdown();
            if !t.footnotes.is_empty() {
                s.push('\n');
                let lines: Vec<String> = t.footnotes.iter().map(|f| escape_start(f)).collect();
                s.push_str(&lines.join("  \n"));
                s.push('\n');
            }
            s
        }
        Block::List(l) => list(l, level),
        Block::Record(r) => record(r, level),
    }
}

fn record(r: &Record, level: usize) -> String {
    let mut s = format!(
        "{} {}\n\n{}",
        hashes(level),
        r.heading,
        r.table().to_markdown()
    );
    if !r.notes.is_empty() {
        s.push('\n');
        for (word, n) in &r.notes {
            s.push_str(&format!("- {word}: {n}\n"));
        }
    }
    s
}

/// A line that would start a list or a heading, escaped to stay text.
fn escape_start(s: &str) -> String {
    match s.chars().next() {
        Some('*' | '-' | '+' | '#' | '>') => format!("\\{s}"),
        _ => s.to_string(),
    }
}

fn list(l: &List, level: usize) -> String {
    let mut s = String::new();
    if let Some(t) = &l.title {
        s.push_str(&format!("{} {t}\n\n", hashes(level)));
    }
    for it in &l.items {
        s.push_str(&format!("- {}{}\n", it.prefix(), it.text));
    }
    s
}
