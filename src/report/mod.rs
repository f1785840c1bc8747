//! Report types with a schema_version, and one exporter per output format. Exporters return
//! bytes and do no IO.

pub mod analyze;
pub mod fsync;
pub mod html;
pub mod info;
pub mod levels;
pub mod stat;
pub mod stat_view;
pub mod svg;
pub mod sweep;
pub mod table;

use crate::error::Error;
use serde_json::Value;
use std::path::Path;

/// How a result is printed or saved: chosen once in config/ (from --json/--csv/--markdown,
/// `report --format`, or an output file's extension) and handed to every renderer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned text for a terminal; `wide` puts every column on one line (stat --wide).
    Text {
        wide: bool,
    },
    Json,
    Csv,
    Markdown,
    Html,
}

/// What kind of iosat result a JSON document is, from its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A sweep or an analysis of levels: `levels[]` with `concurrency`.
    Levels,
    /// `iosat fsync --json`: `command` "fsync" with `cases[]`.
    Fsync,
}

pub fn kind_of(doc: &Value) -> Option<Kind> {
    if fsync::is_fsync(doc) {
        return Some(Kind::Fsync);
    }
    let levels = doc.get("levels")?.as_array()?;
    levels
        .iter()
        .all(|l| l.get("concurrency").is_some())
        .then_some(Kind::Levels)
}

/// Render a JSON result; Err names what the document lacks.
pub fn render(doc: &Value, format: Format) -> Result<String, String> {
    let kind = kind_of(doc).ok_or_else(|| {
        "not an iosat result: expected a JSON object with 'levels' (sweep, analyze) or 'cases' (fsync)"
            .to_string()
    })?;
    Ok(match (kind, format) {
        (Kind::Levels, f @ (Format::Html | Format::Markdown | Format::Csv)) => {
            levels::render_doc(doc, f)?
        }
        (Kind::Fsync, f) => fsync::render(&crate::fsync::FsyncReport::from_json(doc.clone())?, f),
        (_, f) => return Err(format!("iosat report does not write {f:?}")),
    })
}

/// Write a file iosat creates: refuses to replace an existing file unless `force`, and
/// writes through a temporary file renamed into place, so a failed write never leaves half a
/// report where the user's file was.
pub fn write_new_file(path: &Path, bytes: &[u8], force: bool) -> crate::error::Result<()> {
    if path.exists() && !force {
        return Err(Error::usage(
            "--output",
            path.display(),
            "names a file that exists; pass --force to replace it",
        ));
    }
    crate::sys::fs::replace_file(path, bytes)
}

/// Refuse an output file (`flag` names it: `--html`, `-o`) that exists, before a run starts
/// (so a long run does not end in a refusal, and a user's file is never replaced).
pub fn check_new_file(flag: &str, path: &Path) -> crate::error::Result<()> {
    if path.exists() {
        return Err(Error::usage(
            flag,
            path.display(),
            "names a file that exists; iosat never overwrites it (pick another name or remove it)",
        ));
    }
    Ok(())
}

/// `--html FILE`: see [`check_new_file`].
pub fn check_new_page(path: &Path) -> crate::error::Result<()> {
    check_new_file("--html", path)
}

/// A file a run writes and rewrites (`--html FILE` after each level or interval, sweep's
/// `-o FILE`): the first write refuses an existing file; later writes replace what this run
/// wrote.
#[derive(Debug)]
pub struct PageFile {
    pub path: std::path::PathBuf,
    flag: &'static str,
    written: bool,
}

impl PageFile {
    /// The page of `--html FILE`.
    pub fn new(path: &Path) -> PageFile {
        PageFile::for_flag("--html", path)
    }

    /// The output file given by `flag`.
    pub fn for_flag(flag: &'static str, path: &Path) -> PageFile {
        PageFile {
            path: path.to_path_buf(),
            flag,
            written: false,
        }
    }

    pub fn write(&mut self, html: &str) -> crate::error::Result<()> {
        if !self.written {
            check_new_file(self.flag, &self.path)?;
        }
        crate::sys::fs::replace_file(&self.path, html.as_bytes())?;
        self.written = true;
        Ok(())
    }
}
