//! The HTML writer of a [`Doc`]: the page frame of report/html.rs (CSS, escaping, the context
//! table) around the blocks; the verdict boxed right under what was measured, where it is
//! seen first, as a short summary (its first findings and every warning of trust) with the
//! rest of it folded (`<details>`) at the end of the page, after the charts and tables; marked
//! table rows tagged; footnotes and chart notes in small print; folded parts as `<details>`.
//! Must not import: cli/, config/, cmd/, ui/, exporter/, report/sweep.rs, report/analyze.rs, report/fsync.rs, report/stat.rs,
//! report/compare.rs, report/levels.rs.

use super::{Block, Doc, Item, ItemKind, List, TableBlock};
use crate::report::html::{context_block, esc, html_table, html_table_marked, page};
use std::fmt::Write as _;

pub fn write(doc: &Doc) -> String {
    // The context and the lead first, then the verdict, then the rest in order.
    let lead = doc
        .blocks
        .iter()
        .take_while(|b| {
            matches!(
                b,
                Block::Context(_) | Block::ContextTable(_) | Block::Lead { .. }
            )
        })
        .count();
    let is_verdict = |b: &Block| matches!(b, Block::List(l) if l.verdict);
    let mut body = String::new();
    for b in &doc.blocks[..lead] {
        block(&mut body, b);
    }
    // The answer first: a few lines a reader of a ticket sees without scrolling; the rest of
    // the verdict folded at the end, after the charts.
    let mut rest = String::new();
    for b in doc.blocks[lead..].iter().filter(|b| is_verdict(b)) {
        if let Block::List(l) = b {
            let (summary, more) = split_verdict(l);
            list(&mut body, &summary);
            if !more.items.is_empty() {
                let _ = write!(
                    rest,
                    "<details class=\"more\"><summary>{} ({} more findings)</summary>",
                    esc(l.title.as_deref().unwrap_or("The whole verdict")),
                    more.items.len()
                );
                list(&mut rest, &more);
                rest.push_str("</details>");
            }
        }
    }
    for b in doc.blocks[lead..].iter().filter(|b| !is_verdict(b)) {
        block(&mut body, b);
    }
    body.push_str(&rest);
    page(&doc.title, &body)
}

/// The findings a summary shows: at most this many in order, warnings (how far the run can
/// be trusted) always.
const SUMMARY_FINDINGS: usize = 5;

/// A verdict split into its summary and the rest, each keeping the items' order.
fn split_verdict(l: &List) -> (List, List) {
    let mut summary = List {
        items: Vec::new(),
        ..l.clone()
    };
    let mut more = List {
        items: Vec::new(),
        title: None,
        verdict: false,
        ..l.clone()
    };
    for it in &l.items {
        let plain = summary
            .items
            .iter()
            .filter(|i| i.kind != ItemKind::Warning)
            .count();
        if it.kind == ItemKind::Warning || plain < SUMMARY_FINDINGS {
            summary.items.push(it.clone());
        } else {
            more.items.push(it.clone());
        }
    }
    (summary, more)
}

fn block(s: &mut String, b: &Block) {
    match b {
        Block::Context(rows) => s.push_str(&context_block(rows)),
        Block::ContextTable(t) => {
            s.push_str("<div class=\"context\">");
            s.push_str(&html_table(t));
            s.push_str("</div>");
        }
        Block::Lead { text, .. } => {
            let _ = write!(
                s,
                "<p class=\"lead\">{}</p>",
                esc(text).replace('\n', "<br>")
            );
        }
        Block::Heading(h) => {
            let _ = write!(s, "<h2>{}</h2>", esc(h));
        }
        Block::Para(p) => {
            let _ = write!(s, "<p>{}</p>", esc(p));
        }
        Block::Table(t) => table(s, t),
        Block::List(l) => list(s, l),
        Block::Record(r) => {
            let _ = write!(s, "<h2>{}</h2>", esc(&r.heading));
            s.push_str(&html_table(&r.table()));
            if !r.notes.is_empty() {
                s.push_str("<ul>");
                for (word, n) in &r.notes {
                    let _ = write!(s, "<li><strong>{}:</strong> {}</li>", esc(word), esc(n));
                }
                s.push_str("</ul>");
            }
        }
        Block::Chart { heading, svg, note } => {
            if let Some(h) = heading {
                let _ = write!(s, "<h2>{}</h2>", esc(h));
            }
            s.push_str(svg);
            if let Some(n) = note {
                let _ = write!(s, "<p class=\"note\">{}</p>", esc(n));
            }
        }
        Block::Details { summary, blocks } => {
            let _ = write!(s, "<details><summary>{}</summary>", esc(summary));
            for b in blocks {
                block(s, b);
            }
            s.push_str("</details>");
        }
    }
}

fn table(s: &mut String, t: &TableBlock) {
    let mark = |i: usize| t.marks.get(i).copied().flatten().map(|m| m.class());
    s.push_str(&html_table_marked(&t.table, &mark));
    for f in &t.footnotes {
        let _ = write!(s, "<p class=\"note\">{}</p>", esc(f));
    }
}

fn item(it: &Item) -> String {
    match it.kind {
        ItemKind::Plain => esc(&it.text),
        ItemKind::Note | ItemKind::Warning => format!(
            "<strong>{}</strong> {}",
            esc(it.prefix().trim_end()),
            esc(&it.text)
        ),
    }
}

fn list(s: &mut String, l: &List) {
    if l.verdict {
        s.push_str("<div class=\"verdict\">");
        if let Some(t) = &l.title {
            let _ = write!(s, "<h2>{}</h2>", esc(t));
        }
        for it in &l.items {
            let _ = write!(s, "<p>{}</p>", item(it));
        }
        s.push_str("</div>");
        return;
    }
    if let Some(t) = &l.title {
        let _ = write!(s, "<h2>{}</h2>", esc(t));
    }
    if !l.items.is_empty() {
        s.push_str("<ul>");
        for it in &l.items {
            let _ = write!(s, "<li>{}</li>", item(it));
        }
        s.push_str("</ul>");
    }
}
