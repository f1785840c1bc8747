//! The text writer of a [`Doc`]: what a terminal or a pipe gets. No title line (the lead
//! says what ran); a blank line between blocks (none after a heading); tables narrow (80
//! columns) unless `--wide`, their marked rows coloured on a terminal; prose wrapped at word
//! boundaries to the width; charts and the context table left out (the page has them).
//! Must not import: cli/, config/, cmd/, ui/, exporter/, report/sweep.rs, report/analyze.rs, report/fsync.rs, report/stat.rs,
//! report/compare.rs, report/levels.rs.

use super::{Block, Doc, Item, ItemKind, List, Mark, Record, TableBlock};
use crate::report::text::{paint, wrap, wrap_lines, Paint};
use crate::report::Format;

/// The document as text in `format` (any other format: plain 80 columns).
pub fn write(doc: &Doc, format: Format) -> String {
    let Format::Text { wide, width, color } = format else {
        return write(doc, Format::TEXT);
    };
    let opts = Opts { wide, width, color };
    let mut out = String::new();
    blocks(&mut out, &doc.blocks, &opts, &mut false);
    out
}

struct Opts {
    wide: bool,
    width: usize,
    color: bool,
}

/// Each block after a blank line (none before the first, none after a heading).
fn blocks(out: &mut String, bs: &[Block], o: &Opts, after_heading: &mut bool) {
    for b in bs {
        if let Block::Details { blocks: inner, .. } = b {
            blocks(out, inner, o, after_heading);
            continue;
        }
        let s = block(b, o);
        if s.is_empty() {
            continue;
        }
        if !out.is_empty() && !*after_heading {
            out.push('\n');
        }
        *after_heading = matches!(b, Block::Heading(_));
        out.push_str(&s);
    }
}

fn block(b: &Block, o: &Opts) -> String {
    match b {
        Block::Context(_)
        | Block::ContextTable(_)
        | Block::Chart { .. }
        | Block::Details { .. } => String::new(),
        Block::Lead { text, hang } => wrap_lines(text, o.width, *hang),
        Block::Heading(h) => format!("{}\n", title_line(h)),
        Block::Para(p) => wrap(p, "", "", o.width),
        Block::Table(t) => table(t, o),
        Block::List(l) => list(l, o),
        Block::Record(r) => record(r),
    }
}

/// A record: labels in a column 13 wide (long values wrapped under their column), sentences wrapped at 80 columns behind their word,
/// all indented two spaces under the heading (as `iosat info` has always printed a device).
fn record(r: &Record) -> String {
    let mut s = format!("{}\n", r.heading);
    for (k, v) in &r.fields {
        s.push_str(&format!("  {k:<13} {v}\n"));
    }
    for (k, v) in &r.long_fields {
        s.push_str(&wrap(v, &format!("  {k:<13} "), &" ".repeat(16), 80));
    }
    for (word, n) in &r.notes {
        let first = format!("  {word}: ");
        s.push_str(&wrap(n, &first, &" ".repeat(first.len()), 80));
    }
    s
}

/// A title as a text line: with a closing ':' unless it says "x: y" itself.
fn title_line(t: &str) -> String {
    if t.contains(": ") || t.ends_with(':') {
        t.to_string()
    } else {
        format!("{t}:")
    }
}

fn paint_of(m: Mark) -> Paint {
    match m {
        Mark::Knee => Paint::Knee,
        Mark::Overload | Mark::Failed => Paint::Overload,
    }
}

fn table(t: &TableBlock, o: &Opts) -> String {
    let (shown, fit) = match t.narrow {
        Some(cols) if !o.wide => (t.table.select(cols), o.width.min(80)),
        _ => (t.table.clone(), usize::MAX),
    };
    let mut s = shown.to_text_fit(fit, o.color, |i| {
        t.marks.get(i).copied().flatten().map(paint_of)
    });
    for f in &t.footnotes {
        s.push_str(&wrap(f, "", "  ", o.width));
    }
    if let Some((narrow, wide)) = t.legend {
        let legend = if o.wide || t.narrow.is_none() {
            wide
        } else {
            narrow
        };
        s.push_str(&wrap(legend, "", "", o.width));
    }
    s
}

fn list(l: &List, o: &Opts) -> String {
    let mut s = String::new();
    if let Some(t) = &l.title {
        let line = title_line(t);
        let p = if l.warn_title {
            Some(Paint::Warning)
        } else {
            None
        };
        s.push_str(&painted(&format!("{line}\n"), p, o.color));
    }
    for it in &l.items {
        if l.whole_lines {
            let lead = if l.indent { "  " } else { "" };
            s.push_str(&format!("{lead}- {}{}\n", it.prefix(), it.text));
        } else {
            s.push_str(&item(it, l.indent, o));
        }
    }
    s
}

fn item(it: &Item, indent: bool, o: &Opts) -> String {
    match it.kind {
        ItemKind::Plain => {
            let first = if indent { "  " } else { "" };
            wrap(&it.text, first, &format!("{first}  "), o.width)
        }
        ItemKind::Note | ItemKind::Warning => {
            let prefix = it.prefix();
            let w = wrap(&it.text, prefix, &" ".repeat(prefix.len()), o.width);
            painted(&w, Some(Paint::Warning), o.color)
        }
    }
}

/// Each line of `s` coloured as `p` on a terminal.
fn painted(s: &str, p: Option<Paint>, color: bool) -> String {
    match p {
        Some(p) if color => s
            .lines()
            .map(|l| format!("{}\n", paint(l, p, true)))
            .collect(),
        _ => s.to_string(),
    }
}
