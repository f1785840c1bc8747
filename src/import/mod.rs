//! Importers: fio JSON, sysbench fileio text, `iostat -x` text and JSON, iosat recordings and
//! pt-diskstats/pt-stalk sample files → the analysis types ([`LevelPoint`]s for a verdict,
//! [`DeviceSample`] series for a device diagnosis). Each parser is pure (text in, values out);
//! [`load`] is the only function that reads a file. report/analyze.rs renders what report.rs
//! builds.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, sys/.
//!
//! Recordings and pt-diskstats samples are raw counters: diskstats.rs runs them through the
//! recording reader and stat engine of `iosat stat --replay` (monitor/), not a parser of its
//! own.

use crate::analysis::device::DeviceSample;
use crate::analysis::LevelPoint;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

pub mod amzn;
pub mod diskstats;
pub mod fio;
pub mod iostat;
pub mod rates_learn;
pub mod report;
pub mod sysbench;

/// What produced a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    Fio,
    Sysbench,
    Iostat,
    /// An `iosat stat --record` file.
    Iosat,
    /// pt-diskstats `--save-samples` or pt-stalk `*-diskstats` samples.
    #[serde(rename = "pt-diskstats")]
    PtDiskstats,
}

impl Tool {
    pub fn name(self) -> &'static str {
        match self {
            Tool::Fio => "fio",
            Tool::Sysbench => "sysbench",
            Tool::Iostat => "iostat",
            Tool::Iosat => "iosat",
            Tool::PtDiskstats => "pt-diskstats",
        }
    }

    /// Does this tool's output give per-device time series (rather than benchmark levels)?
    pub fn gives_device_series(self) -> bool {
        matches!(self, Tool::Iostat | Tool::Iosat | Tool::PtDiskstats)
    }
}

/// One concurrency level read from a benchmark's output.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedLevel {
    pub point: LevelPoint,
    /// Where it came from: the job name(s) or the thread count, for messages.
    pub label: String,
    /// The line in the file where the level's result starts (1-based), for messages.
    pub line: usize,
}

/// One device's time series from an iostat log, a recording or pt-diskstats samples.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceSeries {
    pub device: String,
    pub samples: Vec<DeviceSample>,
    /// False for devices `iosat stat` does not show by default (partitions, loop, zram, ...)
    /// in raw-counter files, which hold every device: reported only when named by --device.
    /// An iosat recording whose runs recorded their selection (`#S`) shows what they showed.
    pub shown_by_default: bool,
    /// What production learning (learn/) said of the device at the file's last interval,
    /// learned over all of them (iosat recordings, pt-diskstats, iostat logs).
    pub learned: Option<crate::learn::Learned>,
    /// The block layer's split of the latency per direction over the file (issue 40; iosat
    /// recordings with `B` tokens), empty otherwise.
    pub split: Vec<crate::analysis::split::RunSplit>,
}

/// Everything one file holds.
#[derive(Debug, Clone, PartialEq)]
pub struct FileImport {
    pub path: PathBuf,
    pub tool: Tool,
    /// The tool's version as it printed it ("fio-3.33", "sysbench 1.0.20", "sysstat 12.6.1").
    pub version: Option<String>,
    /// The access pattern ("randread", "random read"), when the file says.
    pub pattern: Option<String>,
    /// Bytes per request, when the file says.
    pub block_size: Option<u64>,
    pub levels: Vec<ImportedLevel>,
    pub devices: Vec<DeviceSeries>,
    /// Things the user should know about how the numbers were read.
    pub notes: Vec<String>,
}

impl FileImport {
    fn new(path: &Path, tool: Tool) -> Self {
        FileImport {
            path: path.to_path_buf(),
            tool,
            version: None,
            pattern: None,
            block_size: None,
            levels: Vec::new(),
            devices: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// A parse error at `line` of `path`.
pub(crate) fn perr(path: &Path, line: usize, reason: impl Into<String>) -> Error {
    Error::parse(path, line, reason)
}

/// Which tool wrote `text`, by its content: JSON (fio's `jobs` or iostat's `sysstat`),
/// sysbench's banner or result blocks, or an iostat `Device` header.
pub fn detect(text: &str) -> Option<Tool> {
    if let Some(t) = diskstats::detect(text) {
        return Some(t);
    }
    let json_start = text.lines().find(|l| l.trim_start().starts_with('{'));
    if let Some(first) = json_start {
        let rest = &text[text.find(first).unwrap_or(0)..];
        if rest.contains("\"sysstat\"") {
            return Some(Tool::Iostat);
        }
        if rest.contains("\"jobs\"") || rest.contains("\"fio version\"") {
            return Some(Tool::Fio);
        }
    }
    let has = |s: &str| text.lines().any(|l| l.contains(s));
    if has("sysbench")
        || has("File operations:")
        || has("Operations performed:")
        || has("Latency (ms):")
        || (has("tps:") && (has("response time:") || has("lat (ms,")))
    {
        return Some(Tool::Sysbench);
    }
    if text.lines().any(|l| {
        let t = l.trim_start();
        (t.starts_with("Device:") || t.starts_with("Device ") || t.ends_with(" Device"))
            && (t.contains("%util") || t.contains("await") || t.contains("r/s"))
    }) {
        return Some(Tool::Iostat);
    }
    None
}

/// Parse a file's text (already read) as whatever tool wrote it.
pub fn parse(path: &Path, text: &str) -> Result<FileImport> {
    if text.trim().is_empty() {
        return Err(perr(
            path,
            1,
            "empty file: expected fio JSON, sysbench fileio output, iostat -x output, an iosat \
             recording or pt-diskstats samples",
        ));
    }
    match detect(text) {
        Some(Tool::Fio) => fio::parse(path, text),
        Some(Tool::Sysbench) => sysbench::parse(path, text),
        Some(Tool::Iostat) => iostat::parse(path, text).map(rates_learn::learn),
        Some(Tool::Iosat | Tool::PtDiskstats) => diskstats::parse(path, text),
        None => Err(perr(
            path,
            1,
            "not a known result: expected fio JSON (--output-format=json), sysbench fileio \
             output, iostat -x output, an iosat recording or pt-diskstats/pt-stalk samples \
             ('TS <epoch>' + /proc/diskstats lines)",
        )),
    }
}

/// A device of a recording and the profile id its `I` line gives (name, id).
pub type Ids = Vec<(String, String)>;

/// Read and parse one file: a recording through the one recording opener (a cut-off last line
/// or a line that is not UTF-8 skipped with a warning), any other result as [`parse`] reads
/// it. With a recording, the profile ids its devices were recorded with.
pub fn load(path: &Path) -> Result<(FileImport, Ids)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]);
    if diskstats::detect(&head).is_none() {
        return Ok((parse(path, &String::from_utf8_lossy(&bytes))?, Vec::new()));
    }
    let rec = crate::monitor::replay::RecordingText::of_bytes(path, bytes);
    rec.warnings.into_iter().for_each(crate::error::warn);
    let ids = crate::monitor::record::parse(&rec.text)
        .map(|(events, _)| {
            events
                .into_iter()
                .filter_map(|e| match e {
                    crate::monitor::record::Event::Identity { name, id, .. } => Some((name, id)),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    Ok((parse(path, &rec.text)?, ids))
}

/// What `iosat analyze` diagnoses in a recording's `text` (already read; `path` names it in
/// what the parser says), each device's lines in order: the one diagnosis the recording page
/// of `iosat report` and of `stat --html` both carry. None when the text gives the importer
/// nothing to read.
pub fn recording_diagnosis(path: &Path, text: &str) -> Vec<String> {
    let Ok(import) = parse(path, text) else {
        return Vec::new();
    };
    report::build(&[import], &[])
        .map(|r| r.devices.into_iter().flat_map(|d| d.diagnosis).collect())
        .unwrap_or_default()
}

/// Parse a number as the tools print it: `1234.56`, `1,234.56` is not used by them, but a
/// decimal comma (`0,00`, sysstat under a European locale) is.
pub(crate) fn num(tok: &str) -> Option<f64> {
    let t = tok.trim();
    let v = t.parse::<f64>().ok().or_else(|| {
        if t.matches(',').count() == 1 && !t.contains('.') {
            t.replace(',', ".").parse().ok()
        } else {
            None
        }
    })?;
    v.is_finite().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_content() {
        assert_eq!(
            detect("{\n \"fio version\" : \"fio-3.33\",\n \"jobs\": []}"),
            Some(Tool::Fio)
        );
        assert_eq!(
            detect("note: x\n{\"sysstat\": {\"hosts\": []}}"),
            Some(Tool::Iostat)
        );
        assert_eq!(
            detect("sysbench 1.0.20 (using bundled LuaJIT)"),
            Some(Tool::Sysbench)
        );
        assert_eq!(
            detect(
                "Device:  rrqm/s wrqm/s r/s w/s rkB/s wkB/s avgrq-sz avgqu-sz await svctm %util"
            ),
            Some(Tool::Iostat)
        );
        assert_eq!(detect("hello\nworld"), None);
    }

    #[test]
    fn numbers_in_both_locales() {
        assert_eq!(num("7612.80"), Some(7612.8));
        assert_eq!(num("0,97"), Some(0.97));
        assert_eq!(num("1,234.5"), None);
        assert_eq!(num("nan"), None);
    }

    #[test]
    fn unknown_and_empty_input_name_the_file_and_line() {
        let e = parse(Path::new("x.txt"), "hello\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.txt:1: not a known result"), "{e}");
        let e = parse(Path::new("y.txt"), " \n").unwrap_err().to_string();
        assert!(e.starts_with("y.txt:1: empty file"), "{e}");
    }
}
