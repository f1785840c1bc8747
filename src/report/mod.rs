//! Results as people read them: [`load`] turns a saved result's text into the typed [`Report`]
//! (schema version checked), and one renderer per result kind (sweep, analyze, fsync, stat, info)
//! builds one document (doc/: text, Markdown and the self-contained HTML page with svg.rs charts
//! are its three writers) on one table model (table.rs), and writes its own CSV and JSON;
//! compare.rs sets results of one kind side by side. The live commands and `iosat
//! report` call the same renderers. Returns strings; does no IO (output files are sys::fs's) and
//! reads no clock.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

pub mod analyze;
pub mod compare;
pub mod doc;
pub mod fsync;
pub mod html;
pub mod info;
pub mod levels;
pub mod open;
pub mod profile;
pub mod stat;
pub mod stat_view;
pub mod svg;
pub mod sweep;
pub mod table;
pub mod text;

use crate::fsync::FsyncReport;
use crate::import::report::AnalyzeReport;
use crate::load::result::SweepReport;
use crate::monitor::record::ParseError;
use crate::monitor::series::StatSeries;
use serde_json::Value;

/// How a result is printed or saved: chosen once in config/ (from --json/--csv/--markdown,
/// `report --format`, or an output file's extension) and handed to every renderer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned text for a terminal: tables of the columns that matter in 80 columns, or with
    /// `wide` every column (`--wide`); prose wrapped at word boundaries to `width`; ANSI
    /// colour for the knee, overload and warnings when `color` (a terminal without NO_COLOR).
    Text {
        wide: bool,
        width: usize,
        color: bool,
    },
    Json,
    Csv,
    Markdown,
    Html,
}

/// A saved iosat result, typed: what `iosat report` renders and every renderer takes.
#[derive(Debug, Clone)]
pub enum Report {
    /// `iosat sweep --json` (a document of kind "sweep").
    Sweep(Box<SweepReport>),
    /// `iosat analyze --json`, or any other document of levels.
    Analyze(Box<AnalyzeReport>),
    /// `iosat fsync --json`.
    Fsync(Box<FsyncReport>),
    /// Device series over time: `iosat stat --json` lines, or a recording replayed
    /// (monitor::series; that needs profile files, so cmd/ builds it).
    Stat {
        devices: Vec<StatSeries>,
        idle: Vec<String>,
    },
}

/// Parse a saved result (JSON, or `stat --json` lines) into its typed report, the schema
/// version checked. Err gives the line and the reason; the caller adds the file.
pub fn load(text: &str) -> Result<Report, ParseError> {
    if stat::is_stat_json(text) {
        let (devices, idle) = stat::series_from_json(text)?;
        return Ok(Report::Stat { devices, idle });
    }
    let doc: Value = serde_json::from_str(text).map_err(|e| ParseError {
        line: e.line(),
        reason: format!("not JSON nor an iosat recording: {e}"),
    })?;
    from_doc(&doc).map_err(|reason| ParseError { line: 1, reason })
}

fn from_doc(doc: &Value) -> Result<Report, String> {
    if fsync::is_fsync(doc) {
        let r = typed(doc, "fsync", crate::fsync::report::SCHEMA_VERSION, true)?;
        return Ok(Report::Fsync(Box::new(r)));
    }
    let is_levels = doc
        .get("levels")
        .and_then(Value::as_array)
        .is_some_and(|lv| lv.iter().all(|l| l.get("concurrency").is_some()));
    if !is_levels {
        return Err(
            "not an iosat result: expected a JSON object with 'levels' (sweep, \
analyze) or 'cases' (fsync)"
                .into(),
        );
    }
    if doc.get("kind").and_then(Value::as_str) == Some("sweep") {
        let r = typed(doc, "sweep", crate::load::result::SCHEMA_VERSION, false)?;
        return Ok(Report::Sweep(Box::new(r)));
    }
    let mut r: AnalyzeReport = typed(doc, "analyze", crate::import::report::SCHEMA_VERSION, false)?;
    if r.verdict.is_none() && !r.levels.is_empty() {
        // A hand-made levels file (no verdict saved): judge it as `iosat analyze` would.
        r.verdict = Some(crate::analysis::analyze(&r.points()));
    }
    Ok(Report::Analyze(Box::new(r)))
}

/// The typed result of a document whose `schema_version` this iosat reads: 1 up to
/// `supported`; a missing version is 1 unless `required` (fsync results always carried one).
fn typed<T: serde::de::DeserializeOwned>(
    doc: &Value,
    kind: &str,
    supported: u32,
    required: bool,
) -> Result<T, String> {
    check_version(doc.get("schema_version"), kind, supported, required)?;
    T::deserialize(doc).map_err(|e| format!("not a valid iosat {kind} result: {e}"))
}

/// The one version check: a `schema_version` of 1 up to `supported` passes; a missing one is
/// 1 unless `required`.
fn check_version(
    version: Option<&Value>,
    kind: &str,
    supported: u32,
    required: bool,
) -> Result<(), String> {
    match version {
        None if required => return Err(format!("an {kind} result without schema_version")),
        None => {}
        Some(v) => match v.as_u64() {
            Some(n) if (1..=u64::from(supported)).contains(&n) => {}
            Some(n) if n > u64::from(supported) => {
                return Err(format!(
                    "{kind} result of schema_version {n}, newer than this iosat {} reads (up \
to version {supported}): render it with the iosat that wrote it or a newer one",
                    env!("CARGO_PKG_VERSION")
                ))
            }
            _ => return Err(format!("{kind} result of unknown schema_version {v}")),
        },
    }
    Ok(())
}

impl Format {
    /// Plain 80-column text without colour: what a pipe or a file gets.
    pub const TEXT: Format = Format::Text {
        wide: false,
        width: 80,
        color: false,
    };

    /// The same format for a file (`-o`): text at 80 columns and never coloured, whatever
    /// the terminal the command runs in.
    pub fn for_file(self) -> Format {
        match self {
            Format::Text { wide, .. } => Format::Text {
                wide,
                width: 80,
                color: false,
            },
            f => f,
        }
    }
}

/// A typed result in `format`: one renderer per kind, the same one the live command uses.
pub fn render(r: &Report, format: Format) -> String {
    match r {
        Report::Sweep(r) => sweep::render(r, format),
        Report::Analyze(r) => analyze::render(r, format),
        Report::Fsync(r) => fsync::render(r, format),
        Report::Stat { devices, idle } => stat::render(devices, idle, format),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fsync_doc(doc: Value) -> Result<FsyncReport, String> {
        match from_doc(&doc)? {
            Report::Fsync(r) => Ok(*r),
            other => panic!("not an fsync report: {other:?}"),
        }
    }

    #[test]
    fn schema_versions_are_checked() {
        let doc = |v: serde_json::Value| {
            let mut d: serde_json::Value = serde_json::from_str(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/report/fsync.json"
            )))
            .unwrap();
            d["schema_version"] = v;
            d
        };
        let r = fsync_doc(doc(1.into())).unwrap();
        assert_eq!(r.envelope.kind, "fsync");
        assert_eq!(r.cases.len(), 32);
        // Written before latency_ns had p90: it defaults to 0.
        assert_eq!(r.cases[0].latency_ns.p90, 0);
        let e = fsync_doc(doc(3.into())).unwrap_err();
        assert!(e.contains("schema_version 3, newer"), "{e}");
        // Version 2: the envelope, `kind` for `command`.
        let mut d = doc(2.into());
        d.as_object_mut().unwrap().remove("command");
        d["kind"] = "fsync".into();
        d["host"] = "db1".into();
        assert_eq!(fsync_doc(d).unwrap().envelope.host, "db1");
        let e = fsync_doc(doc(0.into())).unwrap_err();
        assert!(e.contains("unknown schema_version 0"), "{e}");
        let e = fsync_doc(doc("1".into())).unwrap_err();
        assert!(e.contains("unknown schema_version \"1\""), "{e}");
        let mut d = doc(1.into());
        d.as_object_mut().unwrap().remove("schema_version");
        assert!(fsync_doc(d).unwrap_err().contains("without"));
        // Older files: the optional parts may be missing.
        let mut d = doc(1.into());
        for k in ["skipped", "warnings", "group_commit", "capacity"] {
            d.as_object_mut().unwrap().remove(k);
        }
        let r = fsync_doc(d).unwrap();
        assert!(r.group_commit.is_none() && r.skipped.is_empty());
        // A field of the wrong type is named.
        let mut d = doc(1.into());
        d["cases"][0]["method"] = "fsnyc".into();
        assert!(fsync_doc(d).unwrap_err().contains("fsnyc"));
    }

    #[test]
    fn files_get_plain_80_column_text() {
        let tty = Format::Text {
            wide: true,
            width: 132,
            color: true,
        };
        let plain = Format::Text {
            wide: true,
            width: 80,
            color: false,
        };
        assert_eq!(tty.for_file(), plain);
        assert_eq!(Format::Csv.for_file(), Format::Csv);
    }

    #[test]
    fn a_newer_schema_is_refused_with_its_reason() {
        let doc = serde_json::json!({"schema_version": 2, "kind": "sweep", "levels": []});
        let e = from_doc(&doc).map(|_| ()).unwrap_err();
        assert!(
            e.contains("schema_version 2") && e.contains("up to version 1"),
            "{e}"
        );
        let doc = serde_json::json!({"schema_version": 9, "levels": []});
        let e = from_doc(&doc).map(|_| ()).unwrap_err();
        assert!(e.starts_with("analyze result of schema_version 9"), "{e}");
    }
}
