//! One document per result: a title, then blocks (the lead line, headings, paragraphs, tables
//! with their marks and footnotes, lists of sentences, charts, folded parts). Each result kind
//! builds its document once (report/sweep.rs, analyze.rs, fsync.rs, stat.rs, compare.rs); the
//! three writers (text.rs, markdown.rs, html.rs beside this file) turn it into bytes, chosen by
//! the one registration match of [`write`]. A section added to a kind so appears in every
//! format. CSV and JSON are not documents (each kind writes its own). Pure.
//! Must not import: cli/, config/, cmd/, ui/, exporter/, report/sweep.rs, report/analyze.rs, report/fsync.rs, report/stat.rs,
//! report/compare.rs, report/levels.rs.

pub mod html;
pub mod markdown;
pub mod text;

use super::table::Table;
use super::Format;

/// A result as people read it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Doc {
    /// The page's title and first heading (Markdown and HTML; text opens with the lead).
    pub title: String,
    /// The Markdown heading when it is not the title (compare names the kind only there).
    pub md_title: Option<String>,
    /// Markdown depth of the title, sections one deeper: 2 for the results that are a section
    /// of a larger report (sweep, fsync, a recording), 1 for documents of their own.
    pub md_level: usize,
    pub blocks: Vec<Block>,
}

/// One part of a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// What was measured and where, as (label, value) rows: the page's context table. Text
    /// and Markdown say it in the lead instead, so only HTML shows it.
    Context(Vec<(&'static str, String)>),
    /// Several results' contexts side by side, one column each (compare): HTML only too.
    ContextTable(Table),
    /// What ran against what, the first words of the result (a line may hold a `\n`). Text
    /// indents continuation lines by `hang`.
    Lead {
        text: String,
        hang: usize,
    },
    /// A section heading.
    Heading(String),
    /// A paragraph.
    Para(String),
    Table(TableBlock),
    /// Sentences: a verdict, a diagnosis, notes, warnings.
    List(List),
    /// An SVG chart under its heading (when it opens a section), with the note that explains
    /// it: HTML only (a terminal and Markdown have the tables).
    Chart {
        heading: Option<String>,
        svg: String,
        note: Option<String>,
    },
    /// One thing described field by field (a device of `iosat info`).
    Record(Record),
    /// A part shown folded on a page (HTML `<details>`), in full elsewhere.
    Details {
        summary: String,
        blocks: Vec<Block>,
    },
}

/// A table and what travels with it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableBlock {
    pub table: Table,
    /// The columns text shows in 80 columns (`--wide`: every one); None: all.
    pub narrow: Option<&'static [&'static str]>,
    /// Per data row, its mark (coloured in text, a class and a tag on the page).
    pub marks: Vec<Option<Mark>>,
    /// Lines under the table in every format (what a `*` in a cell means).
    pub footnotes: Vec<String>,
    /// What text's narrow and wide columns mean, under the text table (the other formats
    /// show every column under its own name).
    pub legend: Option<(&'static str, &'static str)>,
}

impl TableBlock {
    pub fn new(table: Table) -> TableBlock {
        TableBlock {
            table,
            ..Default::default()
        }
    }

    pub fn narrow(mut self, cols: &'static [&'static str]) -> TableBlock {
        self.narrow = Some(cols);
        self
    }
}

/// A thing described field by field: a heading line, (label, value) rows, then sentences said
/// behind a word ("note", "limit"). Text: the heading as it is, the rows and sentences indented
/// under it; Markdown and HTML: a heading, a two-column table, bullets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    pub heading: String,
    pub fields: Vec<(&'static str, String)>,
    /// Rows after those whose value text wraps under its column (the others never wrap).
    pub long_fields: Vec<(&'static str, String)>,
    /// (the word a sentence is said behind, the sentence).
    pub notes: Vec<(&'static str, String)>,
}

impl Record {
    /// The fields as a table of two columns, for the formats that have tables.
    pub fn table(&self) -> Table {
        let mut t = Table::new(["field", "value"]);
        for (k, v) in self.fields.iter().chain(&self.long_fields) {
            t.push([k.to_string(), v.clone()]);
        }
        t
    }
}

/// What a marked row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The optimal concurrency (green).
    Knee,
    /// An overloaded level (red).
    Overload,
    /// A failed verification (red).
    Failed,
}

impl Mark {
    /// The page's CSS class and the word beside the row's first cell.
    pub fn class(self) -> (&'static str, &'static str) {
        match self {
            Mark::Knee => ("knee", "knee"),
            Mark::Overload => ("overload", "overload"),
            Mark::Failed => ("overload", "failed"),
        }
    }
}

/// Sentences under an optional title.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct List {
    /// Text writes it as a line ending in ':' (unless it says "x: y" itself), Markdown and
    /// HTML as a heading.
    pub title: Option<String>,
    pub items: Vec<Item>,
    /// The result's verdict: a box at the top of the page (HTML), where it is seen first.
    pub verdict: bool,
    /// The title is a warning (coloured on a terminal).
    pub warn_title: bool,
    /// Text indents the items under the title (two spaces) even without one.
    pub indent: bool,
    /// Text keeps each item whole on one line behind "- " (lines a reader greps, one per
    /// pair of results: compare's differences), not wrapped.
    pub whole_lines: bool,
}

impl List {
    pub fn titled(title: impl Into<String>, items: impl IntoIterator<Item = Item>) -> List {
        List {
            title: Some(title.into()),
            items: items.into_iter().collect(),
            indent: true,
            ..Default::default()
        }
    }
}

/// One sentence of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub text: String,
    pub kind: ItemKind,
}

/// How a sentence is said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    Plain,
    /// Behind "note: ", not indented, coloured as a warning on a terminal.
    Note,
    /// Behind "warning: ", not indented, coloured as a warning on a terminal.
    Warning,
}

impl Item {
    pub fn plain(text: impl Into<String>) -> Item {
        Item {
            text: text.into(),
            kind: ItemKind::Plain,
        }
    }
    pub fn note(text: impl Into<String>) -> Item {
        Item {
            text: text.into(),
            kind: ItemKind::Note,
        }
    }
    pub fn warning(text: impl Into<String>) -> Item {
        Item {
            text: text.into(),
            kind: ItemKind::Warning,
        }
    }

    /// The prefix the sentence is said behind.
    pub fn prefix(&self) -> &'static str {
        match self.kind {
            ItemKind::Plain => "",
            ItemKind::Note => "note: ",
            ItemKind::Warning => "warning: ",
        }
    }
}

/// A chart without heading or note.
pub fn chart(svg: String) -> Block {
    Block::Chart {
        heading: None,
        svg,
        note: None,
    }
}

/// Plain sentences.
pub fn items(lines: &[String]) -> Vec<Item> {
    lines.iter().map(Item::plain).collect()
}

/// The document in `format`: the one registration of the writers (CSV and JSON are the
/// kinds' own; given one here, the document is written as text).
pub fn write(doc: &Doc, format: Format) -> String {
    match format {
        Format::Text { .. } => text::write(doc, format),
        Format::Markdown => markdown::write(doc),
        Format::Html => html::write(doc),
        Format::Csv | Format::Json => text::write(doc, Format::TEXT),
    }
}
