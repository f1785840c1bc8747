//! `iostat -x` logs → per-device time series ([`DeviceSample`]). Pure. Reads sysstat's old
//! layout (`Device:` … `avgqu-sz await r_await w_await svctm %util`, with or without the
//! per-direction awaits, `rsec/s` or `rkB/s` or `rMB/s`) and the new one (`Device` … `r_await`
//! … `aqu-sz %util`, discards and flushes), the short one of `-xs` (`tps kB/s … await`: totals,
//! r/s and w/s left undefined, never zero), `-t` timestamp lines, `avg-cpu` blocks, several
//! devices and reports, concatenated runs, a decimal comma, `--pretty` and `-h` (device name
//! last, a report split into blocks, k/M/% suffixes), `-o JSON`, and the mangled forms
//! articles quote: header and row glued on one line (`%utildm-0 0.00 …`, seed 001) and a
//! header and row wrapped into two halves each (seed 004).
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, sys/.

use super::{num, perr, DeviceSeries, FileImport, Tool};
use crate::analysis::device::DeviceSample;
use crate::error::Result;
use serde_json::Value;
use std::path::Path;

/// The columns iosat reads; everything else iostat prints is known but not needed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Col {
    RPerS,
    WPerS,
    /// `-xs`: requests and kB per second over all directions but flushes.
    Tps,
    Kb(f64),
    DPerS,
    FPerS,
    /// kB/s; the factor turns the printed unit into kB (sectors: 0.5, MB: 1024).
    RKb(f64),
    WKb(f64),
    Await,
    RAwait,
    WAwait,
    DAwait,
    FAwait,
    AquSz,
    Util,
    Svctm,
    Ignored,
}

fn column(name: &str) -> Option<Col> {
    use Col::*;
    Some(match name {
        "r/s" => RPerS,
        "w/s" => WPerS,
        "tps" => Tps,
        "kB/s" => Kb(1.0),
        "MB/s" => Kb(1024.0),
        "d/s" => DPerS,
        "f/s" => FPerS,
        "rkB/s" => RKb(1.0),
        "wkB/s" => WKb(1.0),
        "rsec/s" => RKb(0.5),
        "wsec/s" => WKb(0.5),
        "rMB/s" => RKb(1024.0),
        "wMB/s" => WKb(1024.0),
        "await" => Await,
        "r_await" => RAwait,
        "w_await" => WAwait,
        "d_await" => DAwait,
        "f_await" => FAwait,
        "aqu-sz" | "avgqu-sz" => AquSz,
        "%util" => Util,
        "svctm" => Svctm,
        "rrqm/s" | "wrqm/s" | "drqm/s" | "%rrqm" | "%wrqm" | "%drqm" | "avgrq-sz" | "areq-sz"
        | "rareq-sz" | "wareq-sz" | "dareq-sz" | "dkB/s" | "dMB/s" | "dsec/s" | "rqm/s" => Ignored,
        _ => return None,
    })
}

/// `11/22/26 03:53:24`, `11/22/2026 03:53:24 AM`, `2026-11-22T03:53:26+0000`.
fn is_timestamp(l: &str) -> bool {
    let toks: Vec<&str> = l.split_whitespace().collect();
    let Some(first) = toks.first() else {
        return false;
    };
    toks.len() <= 3
        && l.contains(':')
        && first.chars().next().is_some_and(|c| c.is_ascii_digit())
        && (first.contains('/') || first.contains('-'))
        && first
            .chars()
            .all(|c| c.is_ascii_digit() || "/-T:+.Z".contains(c))
}

struct Block {
    cols: Vec<Option<Col>>,
    line: usize,
    /// The iostat run it belongs to: 0 before any "Linux ..." banner, then 1, 2, ...
    section: usize,
    /// `--pretty`/`-h`: the device name is the last column, and one report is split into
    /// several blocks (reads, writes, discards, flushes) that list the devices again.
    device_last: bool,
    /// The report (one interval) the block belongs to.
    report: usize,
}

struct Row {
    device: String,
    values: Vec<f64>,
    line: usize,
    block: usize,
    time: Option<String>,
}

impl Row {
    /// A device row: the name and at least one value, every value a number.
    fn of(
        device: &str,
        vals: &[&str],
        line: usize,
        block: usize,
        time: &Option<String>,
    ) -> Option<Row> {
        let values: Option<Vec<f64>> = vals.iter().map(|v| value(v)).collect();
        values.filter(|v| !v.is_empty()).map(|values| Row {
            device: device.to_string(),
            values,
            line,
            block,
            time: time.clone(),
        })
    }
}

/// A value as iostat prints it: a number (decimal point or comma), or with `-h` a size with
/// a unit suffix in kB (`47.1k` = 47.1 kB, `24.7M` = 24.7 MB) or a percentage (`14.1%`).
fn value(tok: &str) -> Option<f64> {
    if let Some(v) = num(tok) {
        return Some(v);
    }
    let (n, mult) = match tok.chars().last()? {
        '%' => (&tok[..tok.len() - 1], 1.0),
        'k' => (&tok[..tok.len() - 1], 1.0),
        'M' => (&tok[..tok.len() - 1], 1024.0),
        'G' => (&tok[..tok.len() - 1], 1024.0 * 1024.0),
        'T' => (&tok[..tok.len() - 1], 1024.0 * 1024.0 * 1024.0),
        _ => return None,
    };
    num(n).map(|v| v * mult)
}

fn sample(cols: &[Option<Col>], values: &[f64], time: Option<String>) -> DeviceSample {
    let mut s = DeviceSample {
        time,
        ..Default::default()
    };
    for (c, &v) in cols.iter().zip(values) {
        match c {
            Some(Col::RPerS) => s.r_per_s = Some(v),
            Some(Col::WPerS) => s.w_per_s = Some(v),
            Some(Col::Tps) => s.tps = Some(v),
            Some(Col::Kb(f)) => s.kb_per_s = Some(v * f),
            Some(Col::DPerS) => s.d_per_s = Some(v),
            Some(Col::FPerS) => s.f_per_s = Some(v),
            Some(Col::RKb(f)) => s.rkb_per_s = Some(v * f),
            Some(Col::WKb(f)) => s.wkb_per_s = Some(v * f),
            Some(Col::Await) => s.await_ms = Some(v),
            Some(Col::RAwait) => s.r_await = Some(v),
            Some(Col::WAwait) => s.w_await = Some(v),
            Some(Col::DAwait) => s.d_await = Some(v),
            Some(Col::FAwait) => s.f_await = Some(v),
            Some(Col::AquSz) => s.aqu_sz = Some(v),
            Some(Col::Util) => s.util_pct = Some(v),
            Some(Col::Svctm) => s.svctm = Some(v),
            Some(Col::Ignored) | None => {}
        }
    }
    s
}

fn push_sample(out: &mut FileImport, device: &str, s: DeviceSample) {
    match out.devices.iter_mut().find(|d| d.device == device) {
        Some(d) => d.samples.push(s),
        None => out.devices.push(DeviceSeries {
            learned: None,
            split: Vec::new(),
            device: device.to_string(),
            samples: vec![s],
            shown_by_default: true,
        }),
    }
}

/// What one line of an iostat text log is, on its own (the assembler decides what it means
/// after the lines before it).
enum Line<'a> {
    Blank,
    /// `Linux 6.1.0 (host) ...`: a new iostat run.
    Banner,
    /// `avg-cpu:  %user ...`: its values follow on the next line.
    CpuHeader,
    /// `-t`: the time of the report that follows.
    Timestamp(&'a str),
    /// `--pretty`/`-h`: column names, then `Device`.
    PrettyHeader(Vec<Option<Col>>),
    /// `Device:`/`Device` then column names; `glued` is the first device row when the header
    /// and the row were glued into one line (`%utildm-0 0.00 …`).
    Header {
        cols: Vec<Option<Col>>,
        glued: Option<(String, Vec<f64>)>,
    },
    /// Anything else, read against the block above it.
    Body {
        toks: Vec<&'a str>,
        shape: Shape,
    },
}

/// The shape of a [`Line::Body`].
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// Only column names: the second half of a wrapped header.
    ColumnNames,
    /// Only values: the second half of a wrapped row, or the avg-cpu values.
    Numbers,
    /// A device row (or a line that is none of these, which the assembler refuses).
    Other,
}

fn is_numeric(toks: &[&str]) -> bool {
    !toks.is_empty() && toks.iter().all(|x| value(x).is_some())
}

/// One line of an iostat text log, trimmed, as a [`Line`]; `n` is its number, for errors.
fn classify<'a>(path: &Path, n: usize, l: &'a str) -> Result<Line<'a>> {
    if l.is_empty() {
        return Ok(Line::Blank);
    }
    let toks: Vec<&str> = l.split_whitespace().collect();
    if l.starts_with("Linux ") {
        return Ok(Line::Banner);
    }
    if l.starts_with("avg-cpu:") {
        return Ok(Line::CpuHeader);
    }
    if is_numeric(&toks) {
        return Ok(Line::Body {
            toks,
            shape: Shape::Numbers,
        });
    }
    if is_timestamp(l) {
        return Ok(Line::Timestamp(l));
    }
    let pretty_header = toks.len() > 1
        && toks[toks.len() - 1] == "Device"
        && toks[..toks.len() - 1].iter().all(|t| column(t).is_some());
    if pretty_header {
        let cols = toks[..toks.len() - 1].iter().map(|t| column(t)).collect();
        return Ok(Line::PrettyHeader(cols));
    }
    if toks[0] == "Device:" || toks[0] == "Device" {
        return header(path, n, &toks);
    }
    let shape = if toks.iter().all(|t| column(t).is_some()) {
        Shape::ColumnNames
    } else {
        Shape::Other
    };
    Ok(Line::Body { toks, shape })
}

/// A `Device:`/`Device` header line, with the device row glued to it if there is one.
fn header<'a>(path: &Path, n: usize, toks: &[&str]) -> Result<Line<'a>> {
    let mut cols = Vec::new();
    let mut rest: Vec<String> = Vec::new();
    for (k, t) in toks[1..].iter().enumerate() {
        if let Some(c) = column(t) {
            cols.push(Some(c));
            continue;
        }
        // "%utildm-0": the last header column glued to the first device name.
        if let Some(dev) = t.strip_prefix("%util").filter(|d| !d.is_empty()) {
            cols.push(Some(Col::Util));
            rest.push(dev.to_string());
            rest.extend(toks[k + 2..].iter().map(|s| s.to_string()));
            break;
        }
        if is_numeric(&[t]) {
            return Err(perr(
                path,
                n,
                format!("expected column names after 'Device', got the number '{t}'"),
            ));
        }
        cols.push(None);
    }
    let glued = match rest.split_first() {
        None => None,
        Some((device, vals)) => {
            let values: Option<Vec<f64>> = vals.iter().map(|v| value(v)).collect();
            let values =
                values.ok_or_else(|| perr(path, n, "expected numbers after the device name"))?;
            Some((device.clone(), values))
        }
    };
    Ok(Line::Header { cols, glued })
}

/// The first 40 characters of a line, to quote it in an error.
fn quote(l: &str) -> String {
    l.chars().take(40).collect()
}

/// Builds the blocks (headers) and rows of an iostat text log from its classified lines.
#[derive(Default)]
struct Assembler {
    blocks: Vec<Block>,
    rows: Vec<Row>,
    time: Option<String>,
    cpu_values_next: bool,
    /// Rows of the current block waiting for the second half of a wrapped line.
    wrapped: Vec<usize>,
    section: usize,
    reports: usize,
}

impl Assembler {
    /// Takes line `n` (trimmed text `l`, classified as `line`).
    fn line(&mut self, path: &Path, n: usize, l: &str, line: Line) -> Result<()> {
        match line {
            Line::Blank => return Ok(()),
            Line::Banner => {
                self.time = None;
                self.section += 1;
                return Ok(());
            }
            Line::CpuHeader => {
                self.cpu_values_next = true;
                return Ok(());
            }
            Line::Body {
                shape: Shape::Numbers,
                ..
            } if self.cpu_values_next => {
                self.cpu_values_next = false;
                return Ok(());
            }
            _ => self.cpu_values_next = false,
        }
        match line {
            Line::Timestamp(t) => self.time = Some(t.to_string()),
            Line::PrettyHeader(cols) => self.pretty_header(n, cols),
            Line::Header { cols, glued } => {
                self.reports += 1;
                self.push_block(n, cols, false);
                if let Some((device, values)) = glued {
                    self.rows.push(Row {
                        device,
                        values,
                        line: n,
                        block: self.blocks.len() - 1,
                        time: self.time.clone(),
                    });
                }
            }
            Line::Body { toks, shape } => self.body(path, n, l, &toks, shape)?,
            Line::Blank | Line::Banner | Line::CpuHeader => unreachable!("handled above"),
        }
        Ok(())
    }

    fn push_block(&mut self, n: usize, cols: Vec<Option<Col>>, device_last: bool) {
        self.blocks.push(Block {
            cols,
            line: n,
            section: self.section,
            device_last,
            report: self.reports,
        });
        self.wrapped.clear();
    }

    fn pretty_header(&mut self, n: usize, cols: Vec<Option<Col>>) {
        // A block continues the previous pretty report unless it repeats a column of it.
        let blocks = &self.blocks;
        let same_report = blocks.last().is_some_and(|b| {
            b.device_last
                && b.section == self.section
                && blocks.iter().filter(|x| x.report == b.report).all(|x| {
                    x.cols
                        .iter()
                        .all(|c| c.map_or(true, |c| c == Col::Ignored || !cols.contains(&Some(c))))
                })
        });
        if !same_report {
            self.reports += 1;
        }
        self.push_block(n, cols, true);
    }

    /// A line under a header: a device row, or the second half of a wrapped header or row.
    fn body(&mut self, path: &Path, n: usize, l: &str, toks: &[&str], shape: Shape) -> Result<()> {
        let Some(b) = self.blocks.len().checked_sub(1) else {
            return Err(perr(
                path,
                n,
                format!(
                    "expected an iostat -x 'Device' header before '{}'",
                    quote(l)
                ),
            ));
        };
        if self.blocks[b].device_last {
            let (dev, vals) = toks.split_last().expect("non-empty line");
            return match Row::of(dev, vals, n, b, &self.time) {
                Some(row) if value(dev).is_none() => {
                    self.rows.push(row);
                    Ok(())
                }
                _ => Err(perr(
                    path,
                    n,
                    format!(
                        "expected numbers then a device name (iostat --pretty) for the header \
                         at line {}, got '{}'",
                        self.blocks[b].line,
                        quote(l)
                    ),
                )),
            };
        }
        match shape {
            // The second half of a wrapped header: only column names, no 'Device'.
            Shape::ColumnNames => {
                let want = self.blocks[b].cols.len();
                self.blocks[b].cols.extend(toks.iter().map(|t| column(t)));
                self.wrapped = (self.rows.iter().enumerate())
                    .filter(|(_, r)| r.block == b && r.values.len() == want)
                    .map(|(k, _)| k)
                    .collect();
            }
            Shape::Numbers => {
                if self.wrapped.is_empty() {
                    return Err(perr(
                        path,
                        n,
                        "expected a device name before the numbers (or a wrapped header line \
                         before a line of numbers only)",
                    ));
                }
                let k = self.wrapped.remove(0);
                self.rows[k]
                    .values
                    .extend(toks.iter().filter_map(|t| value(t)));
            }
            Shape::Other => match Row::of(toks[0], &toks[1..], n, b, &self.time) {
                Some(row) => self.rows.push(row),
                None => {
                    return Err(perr(
                        path,
                        n,
                        format!(
                            "expected a device row (a name, then numbers) for the header at \
                             line {}, got '{}'",
                            self.blocks[b].line,
                            quote(l)
                        ),
                    ))
                }
            },
        }
        Ok(())
    }

    /// Every row has a value per column of its header; the last row, short, was cut off.
    fn check_rows(&self, path: &Path) -> Result<()> {
        let last_line = self.rows.last().map(|r| r.line).unwrap_or(0);
        for r in &self.rows {
            let block = &self.blocks[r.block];
            let want = block.cols.len();
            if r.values.len() != want {
                let reason = if r.values.len() < want && r.line == last_line {
                    format!(
                        "truncated: expected {want} values for the columns of the header at \
                         line {}, got {}",
                        block.line,
                        r.values.len()
                    )
                } else {
                    format!(
                        "expected {want} values for the columns of the header at line {}, got {}",
                        block.line,
                        r.values.len()
                    )
                };
                return Err(perr(path, r.line, reason));
            }
        }
        Ok(())
    }

    /// One sample per (report, device): a pretty report spreads a device over several blocks.
    fn merged(&self) -> Vec<Merged> {
        let mut merged: Vec<Merged> = Vec::new();
        for r in &self.rows {
            let block = &self.blocks[r.block];
            match merged
                .iter_mut()
                .find(|m| m.report == block.report && m.device == r.device)
            {
                Some(m) => {
                    m.cols.extend(block.cols.iter().copied());
                    m.values.extend(r.values.iter().copied());
                }
                None => merged.push(Merged {
                    report: block.report,
                    device: r.device.clone(),
                    cols: block.cols.clone(),
                    values: r.values.clone(),
                    time: r.time.clone(),
                    header_line: block.line,
                }),
            }
        }
        merged
    }

    /// iostat's first report of a run averages everything since boot (seed 000: "can be
    /// safely ignored"). It is left out when the run printed more than one report; pasted
    /// excerpts without the "Linux" banner are kept whole.
    fn since_boot(&self, report: usize) -> bool {
        let blocks = &self.blocks;
        let sec = (blocks.iter().find(|b| b.report == report))
            .map(|b| b.section)
            .unwrap_or(0);
        let mut in_section: Vec<usize> = (blocks.iter().filter(|b| b.section == sec))
            .map(|b| b.report)
            .collect();
        in_section.dedup();
        sec > 0 && in_section.len() > 1 && in_section.first() == Some(&report)
    }

    /// The device series of the whole log.
    fn finish(self, path: &Path) -> Result<FileImport> {
        if self.blocks.is_empty() {
            return Err(perr(path, 1, "expected an iostat -x 'Device' header"));
        }
        self.check_rows(path)?;
        let has_any = |cols: &[Option<Col>]| {
            cols.iter().any(|c| {
                matches!(
                    c,
                    Some(Col::Await | Col::RAwait | Col::WAwait | Col::AquSz | Col::Util)
                )
            })
        };
        let mut out = FileImport::new(path, Tool::Iostat);
        let mut dropped = false;
        for m in self.merged() {
            if !has_any(&m.cols) {
                return Err(perr(
                    path,
                    m.header_line,
                    "expected iostat -x columns (await, aqu-sz or %util): without -x there is \
                     nothing to judge saturation by",
                ));
            }
            if self.since_boot(m.report) {
                dropped = true;
                continue;
            }
            push_sample(&mut out, &m.device, sample(&m.cols, &m.values, m.time));
        }
        if dropped {
            out.notes.push(format!(
                "{}: the first report of each iostat run (averages since boot) is left out; \
                 with iostat -y there is none to leave out.",
                path.display()
            ));
        }
        if out.devices.is_empty() {
            return Err(perr(
                path,
                self.blocks[0].line,
                "expected device rows after the 'Device' header",
            ));
        }
        short_layout_note(&mut out);
        Ok(out)
    }
}

/// One device's values of one report, its blocks joined.
struct Merged {
    report: usize,
    device: String,
    cols: Vec<Option<Col>>,
    values: Vec<f64>,
    time: Option<String>,
    header_line: usize,
}

/// Parse iostat output (text or `-o JSON`).
pub fn parse(path: &Path, text: &str) -> Result<FileImport> {
    if text.trim_start().starts_with('{') {
        return parse_json(path, text);
    }
    let mut asm = Assembler::default();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        asm.line(path, i + 1, l, classify(path, i + 1, l)?)?;
    }
    asm.finish(path)
}

/// `iostat -xs` (sysstat 12's short extended layout) prints totals, not directions: say so,
/// rather than show reads and writes as zero.
fn short_layout_note(out: &mut FileImport) {
    let short = out
        .devices
        .iter()
        .flat_map(|d| &d.samples)
        .any(|s| s.tps.is_some() && s.r_per_s.is_none() && s.w_per_s.is_none());
    if short {
        out.notes.push(format!(
            "{}: iostat's short layout (-s): tps, kB/s and await are totals over reads, writes \
             and discards (flushes left out); r/s, w/s and the per-direction values are not in \
             the file.",
            out.path.display()
        ));
    }
}

/// `iostat -x -o JSON`: sysstat.hosts[].statistics[].disk[] under the text column names.
fn parse_json(path: &Path, text: &str) -> Result<FileImport> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        let what = e.to_string();
        let what = what.split(" at line ").next().unwrap_or(&what).to_string();
        if e.is_eof() {
            perr(
                path,
                e.line(),
                "truncated iostat JSON: the file ends inside the JSON object",
            )
        } else {
            perr(path, e.line(), format!("expected iostat JSON: {what}"))
        }
    })?;
    let hosts = root
        .pointer("/sysstat/hosts")
        .and_then(Value::as_array)
        .ok_or_else(|| perr(path, 1, "expected iostat JSON with \"sysstat\".\"hosts\""))?;
    let mut out = FileImport::new(path, Tool::Iostat);
    let key = |d: &Value, k: &str| d.get(k).and_then(Value::as_f64);
    let mut dropped = false;
    for host in hosts {
        let mut stats = host
            .get("statistics")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        // As in text: the first report averages everything since boot.
        if stats.len() > 1 {
            stats.remove(0);
            dropped = true;
        }
        for st in stats {
            let time = st
                .get("timestamp")
                .and_then(Value::as_str)
                .map(str::to_string);
            for d in st
                .get("disk")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
            {
                let Some(name) = d.get("disk_device").and_then(Value::as_str) else {
                    continue;
                };
                let kb = |k: &str, s: &str, m: &str| {
                    key(&d, k)
                        .or_else(|| key(&d, s).map(|v| v * 0.5))
                        .or_else(|| key(&d, m).map(|v| v * 1024.0))
                };
                let s = DeviceSample {
                    time: time.clone(),
                    r_per_s: key(&d, "r/s"),
                    w_per_s: key(&d, "w/s"),
                    tps: key(&d, "tps"),
                    kb_per_s: key(&d, "kB/s").or_else(|| key(&d, "MB/s").map(|v| v * 1024.0)),
                    d_per_s: key(&d, "d/s"),
                    f_per_s: key(&d, "f/s"),
                    rkb_per_s: kb("rkB/s", "rsec/s", "rMB/s"),
                    wkb_per_s: kb("wkB/s", "wsec/s", "wMB/s"),
                    r_await: key(&d, "r_await"),
                    w_await: key(&d, "w_await"),
                    d_await: key(&d, "d_await"),
                    f_await: key(&d, "f_await"),
                    await_ms: key(&d, "await"),
                    aqu_sz: key(&d, "aqu-sz").or_else(|| key(&d, "avgqu-sz")),
                    util_pct: key(&d, "util"),
                    svctm: key(&d, "svctm"),
                };
                push_sample(&mut out, name, s);
            }
        }
    }
    if out.devices.is_empty() {
        return Err(perr(
            path,
            1,
            "expected device statistics (\"disk\") in iostat JSON",
        ));
    }
    if dropped {
        out.notes.push(format!(
            "{}: the first report of each iostat run (averages since boot) is left out; with \
             iostat -y there is none to leave out.",
            path.display()
        ));
    }
    short_layout_note(&mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Vec<DeviceSeries> {
        parse(Path::new("t.txt"), text).unwrap().devices
    }

    #[test]
    fn seed001_glued_one_line_form() {
        let d = one("Device: rrqm/s wrqm/s r/s w/s rsec/s wsec/s avgrq-sz avgqu-sz await svctm %utildm-0 0.00 0.00 127.90 0.70 4070.40 28.00 31.87 1.01 7.83 7.52 96.68\n");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].device, "dm-0");
        let s = &d[0].samples[0];
        assert_eq!(s.r_per_s, Some(127.90));
        assert_eq!(s.rkb_per_s, Some(2035.2));
        assert_eq!(s.aqu_sz, Some(1.01));
        assert_eq!(s.await_ms, Some(7.83));
        assert_eq!(s.svctm, Some(7.52));
        assert_eq!(s.util_pct, Some(96.68));
        assert_eq!(s.r_await, None);
    }

    #[test]
    fn seed003_single_spaced_integers() {
        let d = one("Device: rrqm/s wrqm/s r/s w/s   rkB/s wkB/s avgrq-sz avgqu-sz await r_await w_await svctm %util\nnvme1n1 0 0 0 10993 0 43972 8 30.13 2.74 0 2.74 0.09 100.08\n");
        let s = &d[0].samples[0];
        assert_eq!(s.w_per_s, Some(10993.0));
        assert_eq!(s.wkb_per_s, Some(43972.0));
        assert_eq!(s.w_await, Some(2.74));
        assert_eq!(s.util_pct, Some(100.08));
    }

    #[test]
    fn seed004_wrapped_halves() {
        let text = "Device:     rrqm/s   wrqm/s       r/s     w/s    rkB/s    wkB/s avgrq-sz 
sdd           0.00     0.00  13823.00    0.00 55292.00     0.00     8.00
             avgqu-sz   await r_await w_await  svctm  %util
                 0.78    0.06    0.06    0.00   0.06  78.40

Device:     rrqm/s   wrqm/s       r/s     w/s    rkB/s    wkB/s avgrq-sz
sdd           0.00     0.00  72914.67    0.00 291658.67    0.00     8.00
             avgqu-sz   await r_await w_await  svctm  %util
                15.27    0.21    0.21    0.00   0.01 100.00
";
        let d = one(text);
        assert_eq!(d[0].samples.len(), 2);
        assert_eq!(d[0].samples[0].aqu_sz, Some(0.78));
        assert_eq!(d[0].samples[0].util_pct, Some(78.40));
        assert_eq!(d[0].samples[1].r_per_s, Some(72914.67));
        assert_eq!(d[0].samples[1].svctm, Some(0.01));
    }

    #[test]
    fn decimal_comma_and_several_devices() {
        let text = "Device:         rrqm/s   wrqm/s     r/s     w/s    rkB/s    wkB/s avgrq-sz avgqu-sz   await r_await w_await  svctm  %util
sda               0,00     1,00    2,00    3,00    8,00    16,00     6,40     0,01    2,00    1,00    2,67   1,00   0,50
sdb               0,00     0,00    0,00    0,00    0,00     0,00     0,00     0,00    0,00    0,00    0,00   0,00   0,00
";
        let d = one(text);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].samples[0].w_await, Some(2.67));
        assert_eq!(d[1].device, "sdb");
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse(
            Path::new("x.txt"),
            "Device: r/s w/s await %util\nsda 1.0 2.0\n",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "x.txt:2: truncated: expected 4 values for the columns of the header at line 1, got 2"
        );
        let e = parse(
            Path::new("y.txt"),
            "Device: r/s w/s await %util\nsda 1.0 2.0 x 4\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("y.txt:2: expected a device row"), "{e}");
        let e = parse(Path::new("z.txt"), "Device tps kB_read/s\nsda 1 2\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("z.txt:1: expected iostat -x columns"), "{e}");
    }
}
