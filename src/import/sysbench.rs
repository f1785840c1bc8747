//! sysbench fileio text output → levels, one per run. Pure. Reads the 1.0 format ("File
//! operations:" with `reads/s:`, "Latency (ms):"), the 1.1 format (sysbench's development line
//! since late 2017: "Throughput:" with `read:  IOPS=… MiB/s`, `write: IOPS=…`, `fsync: IOPS=…`)
//! and the 0.4/0.5 format ("Operations performed:",
//! "per-request statistics:"/"response time:", values with units), whole captures or the
//! trimmed excerpts people paste (seed 000: a `sysbench --threads=N ...` command line and the
//! result blocks). Several runs may follow each other in one file. A file with only
//! `--report-interval` lines (0.5's `[ 80s] threads: 1, tps: ...` or 1.0's `[ 10s ] thds: ...`,
//! as pasted in seed 001) gives one level per thread count from those lines.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, sys/.
//!
//! IOPS are the events sysbench counts, so that Little's law closes against its latency: in
//! 1.x an event is a read, a write or an fsync (`total number of events` = the sum of reads/s,
//! writes/s and fsyncs/s × time), so IOPS include fsyncs/s (with a note when there are any); in 0.4/0.5
//! an event is a read or a write (the `Other` fsyncs are not events). When `avg` prints as
//! `0.00` ms (a run from the page cache), the mean is `sum` ÷ events, with a note.

use super::fio::parse_size;
use super::{num, perr, FileImport, ImportedLevel, Tool};
use crate::analysis::{LatencyNs, LevelPoint};
use crate::error::Result;
use std::path::Path;

#[derive(Default)]
struct Run {
    start_line: usize,
    last_line: usize,
    threads: Option<u32>,
    // 1.0
    reads_per_s: Option<f64>,
    writes_per_s: Option<f64>,
    fsyncs_per_s: Option<f64>,
    /// `total number of events:`; 1.x's `events (avg/stddev):` × threads when that is missing.
    events: Option<f64>,
    events_per_thread: Option<f64>,
    /// The latency block's `sum:`, ns.
    sum: Option<f64>,
    read_mib_s: Option<f64>,
    written_mib_s: Option<f64>,
    // 0.x
    ops_read: Option<f64>,
    ops_write: Option<f64>,
    read_bytes: Option<f64>,
    written_bytes: Option<f64>,
    total_time_s: Option<f64>,
    // latency, ns
    min: Option<f64>,
    avg: Option<f64>,
    max: Option<f64>,
    pct: Vec<(f64, f64)>,
    has_results: bool,
}

/// `0.14` (ms by default), `87.63ms`, `1.2s`, `300.0084s`, `15us` → ns.
fn duration_ns(tok: &str, default_ms: bool) -> Option<f64> {
    let t = tok.trim();
    let (n, mult) = if let Some(v) = t.strip_suffix("ms") {
        (v, 1e6)
    } else if let Some(v) = t.strip_suffix("us") {
        (v, 1e3)
    } else if let Some(v) = t.strip_suffix("ns") {
        (v, 1.0)
    } else if let Some(v) = t.strip_suffix('s') {
        (v, 1e9)
    } else if default_ms {
        (t, 1e6)
    } else {
        (t, 1e9)
    };
    num(n).map(|v| v * mult)
}

/// sysbench 0.x sizes: `512.75Mb`, `1.5625Gb`, `0b`, `16Kb` (binary units).
fn bytes_0x(tok: &str) -> Option<f64> {
    let t = tok.trim();
    for (suf, m) in [
        ("Gb", 1u64 << 30),
        ("Mb", 1 << 20),
        ("Kb", 1 << 10),
        ("b", 1),
    ] {
        if let Some(v) = t.strip_suffix(suf) {
            return num(v).map(|x| x * m as f64);
        }
    }
    None
}

/// The value after the last ':' of a line.
fn after_colon(l: &str) -> Option<&str> {
    l.rsplit_once(':').map(|(_, v)| v.trim())
}

/// 1.1's throughput lines: `read:  IOPS=8401.28 131.27 MiB/s (137.65 MB/s)`, `write: IOPS=…`,
/// `fsync: IOPS=141.84` → (direction, IOPS, MiB/s).
fn throughput_1_1(l: &str) -> Option<(&str, f64, Option<f64>)> {
    let (dir, rest) = l.split_once(':')?;
    if !matches!(dir, "read" | "write" | "fsync") {
        return None;
    }
    let mut toks = rest.split_whitespace();
    let iops = num(toks.next()?.strip_prefix("IOPS=")?)?;
    let mib_s = match (toks.next(), toks.next()) {
        (Some(v), Some("MiB/s")) => num(v),
        _ => None,
    };
    Some((dir, iops, mib_s))
}

/// `--threads=16`, `--num-threads=16`, `–num-threads=1` (a dash eaten by a blog).
fn threads_flag(l: &str) -> Option<u32> {
    l.split_whitespace().find_map(|t| {
        let t = t.trim_start_matches(['-', '–', '—']);
        t.strip_prefix("threads=")
            .or_else(|| t.strip_prefix("num-threads="))
            .and_then(|v| v.parse().ok())
    })
}

fn is_run_start(l: &str) -> bool {
    let t = l.trim();
    let banner = t
        .strip_prefix("sysbench ")
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
    let command = t.contains("sysbench ")
        && (t.contains("threads=") || t.ends_with(" run") || t.contains(" run "));
    banner || command
}

/// One `--report-interval` line: 0.5's `[ 80s] threads: 1, tps: 9.30, reads/s: 130.20,
/// writes/s: 0.00 response time: 171.82ms (95%)` or 1.0's `[ 10s ] thds: 64 tps: 42.90 qps:
/// 600.60 (r/w/o: 600.60/0.00/0.00) lat (ms,95%): 2516.43 err/s: 0.00 reconn/s: 0.00`.
struct Interval {
    threads: u32,
    tps: f64,
    percentile: f64,
    lat_ns: f64,
    line: usize,
}

fn interval(l: &str, line: usize) -> Option<Interval> {
    if !l.starts_with('[') {
        return None;
    }
    let clean = l.replace(',', " ");
    let toks: Vec<&str> = clean.split_whitespace().collect();
    let after = |key: &str| {
        toks.iter()
            .position(|t| *t == key)
            .and_then(|i| toks.get(i + 1))
    };
    let threads = after("threads:").or(after("thds:"))?.parse().ok()?;
    let tps = num(after("tps:")?)?;
    let (percentile, lat_ns) = if let Some(v) = after("time:") {
        // 0.5: "response time: 171.82ms (95%)"
        let i = toks.iter().position(|t| *t == "time:")?;
        let p = toks
            .get(i + 2)
            .and_then(|t| num(t.trim_start_matches('(').trim_end_matches("%)")))?;
        (p, duration_ns(v, true)?)
    } else {
        // 1.0: "lat (ms 95%): 2516.43" once the comma is gone.
        let i = toks.iter().position(|t| *t == "lat")?;
        let p = num(toks.get(i + 2)?.trim_end_matches("%):"))?;
        (p, duration_ns(toks.get(i + 3)?, true)?)
    };
    (tps > 0.0).then_some(Interval {
        threads,
        tps,
        percentile,
        lat_ns,
        line,
    })
}

/// Levels from interval lines alone (a paste like seed 001's): throughput is transactions
/// (events) per second; the mean latency is threads ÷ tps (Little's law for a closed loop
/// with no think time); the percentile is the median of the intervals' percentiles.
fn levels_from_intervals(path: &Path, ivs: &[Interval], out: &mut FileImport) {
    let mut threads: Vec<u32> = ivs.iter().map(|i| i.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    for t in threads {
        let group: Vec<&Interval> = ivs.iter().filter(|i| i.threads == t).collect();
        let tps = group.iter().map(|i| i.tps).sum::<f64>() / group.len() as f64;
        let mut lats: Vec<f64> = group.iter().map(|i| i.lat_ns).collect();
        lats.sort_by(f64::total_cmp);
        let k = lats.len();
        let median = if k % 2 == 1 {
            lats[k / 2]
        } else {
            (lats[k / 2 - 1] + lats[k / 2]) / 2.0
        };
        let mut lat = LatencyNs {
            mean: f64::from(t) / tps * 1e9,
            ..Default::default()
        };
        lat.set_percentile(group[0].percentile, median);
        out.levels.push(ImportedLevel {
            point: LevelPoint {
                concurrency: t,
                iops: tps,
                bytes_per_s: 0.0,
                latency_ns: lat,
                kernel_util_pct: None,
                kernel_aqu_sz: None,
                ..Default::default()
            },
            label: format!("threads: {t} ({} intervals)", group.len()),
            line: group[0].line,
        });
    }
    out.notes.push(format!(
        "{}: levels from sysbench's interval lines: throughput is events (transactions) per \
         second, the mean latency is threads ÷ tps (Little's law, so it closes by \
         construction), the percentile is the median of the intervals'.",
        path.display()
    ));
}

/// What one line of sysbench output says, on its own (the assembler reads it against the
/// run so far).
enum Line<'a> {
    Blank,
    /// A `--report-interval` line.
    Interval(Interval),
    /// Any other line: whether it may start a new run, the facts of a run's header it names,
    /// and the result it gives.
    Text {
        starts_run: bool,
        facts: Facts<'a>,
        item: Item<'a>,
    },
}

/// What a line says about its run's set-up; one line may say several (a command line).
#[derive(Default)]
struct Facts<'a> {
    /// `sysbench 1.0.20 (using ...)`: the version.
    version: Option<&'a str>,
    /// `--threads=N` anywhere on the line.
    threads_flag: Option<u32>,
    /// `Number of threads: N` (inner None when N is not a number).
    number_of_threads: Option<Option<u32>>,
    /// `Doing random read test`.
    pattern: Option<&'a str>,
    /// `Block size 16Kb` (inner None when the size does not parse).
    block_size: Option<Option<u64>>,
}

/// The result a line gives, if any.
enum Item<'a> {
    /// 1.1: `read:  IOPS=8401.28 131.27 MiB/s (137.65 MB/s)`, `write: …`, `fsync: …`.
    Throughput {
        dir: &'a str,
        iops: f64,
        mib_s: Option<f64>,
    },
    ReadsPerS(Option<f64>),
    WritesPerS(Option<f64>),
    FsyncsPerS(Option<f64>),
    Events(Option<f64>),
    EventsPerThread(Option<f64>),
    ReadMibS(Option<f64>),
    WrittenMibS(Option<f64>),
    /// `Latency (ms):`, `per-request statistics:`, `response time:`: a latency block opens.
    LatencyBlock,
    /// 0.x: `32816 Read, 21877 Write, 69888 Other = 124581 Total` (outer None: a direction
    /// the line does not name).
    Operations {
        read: Option<Option<f64>>,
        write: Option<Option<f64>>,
    },
    /// 0.x: `Read 512.75Mb  Written 341.83Mb  Total transferred …`, bytes.
    Transferred {
        read: Option<f64>,
        written: Option<f64>,
    },
    TotalTimeS(Option<f64>),
    /// Lines of a latency block, meaningful only inside one (ns).
    Min(Option<f64>),
    Avg(Option<f64>),
    Max(Option<f64>),
    Percentile(Option<f64>, Option<f64>),
    Sum(Option<f64>),
    /// Nothing iosat reads (it closes a latency block).
    Other,
}

/// One line of sysbench output, trimmed, as a [`Line`]; `n` is its number.
fn classify(n: usize, l: &str) -> Line<'_> {
    if l.is_empty() {
        return Line::Blank;
    }
    if let Some(iv) = interval(l, n) {
        return Line::Interval(iv);
    }
    let version = (l.strip_prefix("sysbench "))
        .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        .map(|v| v.split([' ', ':']).next().unwrap_or(v));
    let facts = Facts {
        version,
        threads_flag: threads_flag(l),
        number_of_threads: (l.strip_prefix("Number of threads:")).map(|t| t.trim().parse().ok()),
        pattern: (l.strip_prefix("Doing ")).and_then(|r| r.strip_suffix(" test")),
        block_size: (l.strip_prefix("Block size "))
            .map(|b| parse_size(b.trim_end_matches(['b', 'B']))),
    };
    Line::Text {
        starts_run: is_run_start(l),
        facts,
        item: item(l),
    }
}

/// The result one line gives, in the order the formats are told apart.
fn item(l: &str) -> Item<'_> {
    if let Some((dir, iops, mib_s)) = throughput_1_1(l) {
        return Item::Throughput { dir, iops, mib_s };
    }
    let value = || after_colon(l).and_then(num);
    // 1.0 results.
    if l.starts_with("reads/s:") {
        Item::ReadsPerS(value())
    } else if l.starts_with("writes/s:") {
        Item::WritesPerS(value())
    } else if l.starts_with("fsyncs/s:") {
        Item::FsyncsPerS(value())
    } else if l.starts_with("total number of events:") {
        Item::Events(value())
    } else if let Some(v) = l.strip_prefix("events (avg/stddev):") {
        Item::EventsPerThread(v.trim().split('/').next().and_then(num))
    } else if l.starts_with("read, MiB/s:") {
        Item::ReadMibS(value())
    } else if l.starts_with("written, MiB/s:") {
        Item::WrittenMibS(value())
    } else if l.starts_with("Latency (ms):") {
        Item::LatencyBlock
    } else if let Some(rest) = l.strip_prefix("Operations performed:") {
        // 0.x: "32816 Read, 21877 Write, 69888 Other = 124581 Total"
        let (mut read, mut write) = (None, None);
        let toks: Vec<&str> = rest.split_whitespace().collect();
        for w in toks.windows(2) {
            let word = w[1].trim_end_matches(',').to_ascii_lowercase();
            if word.starts_with("read") {
                read = Some(num(w[0]));
            } else if word.starts_with("write") {
                write = Some(num(w[0]));
            }
        }
        Item::Operations { read, write }
    } else if l.starts_with("Read ") && l.contains("Written ") {
        // 0.x: "Read 512.75Mb  Written 341.83Mb  Total transferred 854.58Mb  (2.8484Mb/sec)"
        let toks: Vec<&str> = l.split_whitespace().collect();
        Item::Transferred {
            read: toks.get(1).and_then(|t| bytes_0x(t)),
            written: toks.get(3).and_then(|t| bytes_0x(t)),
        }
    } else if l.starts_with("total time:") {
        Item::TotalTimeS(
            after_colon(l)
                .and_then(|v| duration_ns(v, false))
                .map(|ns| ns / 1e9),
        )
    } else if l.starts_with("per-request statistics:") || l.starts_with("response time:") {
        Item::LatencyBlock
    } else {
        latency_item(l)
    }
}

/// A line of a latency block: `min:`, `avg:`, `max:`, a percentile, `sum:`.
fn latency_item(l: &str) -> Item<'_> {
    let ns = after_colon(l).and_then(|v| duration_ns(v, true));
    if l.starts_with("min:") {
        Item::Min(ns)
    } else if l.starts_with("avg:") {
        Item::Avg(ns)
    } else if l.starts_with("max:") {
        Item::Max(ns)
    } else if l.contains("percentile:") {
        // "95th percentile:" (1.0) or "approx.  95 percentile:" (0.x)
        let p = l
            .split_whitespace()
            .filter_map(|t| {
                num(t
                    .trim_end_matches("th")
                    .trim_end_matches("st")
                    .trim_end_matches("nd")
                    .trim_end_matches("rd"))
            })
            .next();
        Item::Percentile(p, ns)
    } else if l.starts_with("sum:") {
        Item::Sum(ns)
    } else {
        Item::Other
    }
}

/// Builds the runs (and interval lines) of a sysbench file from its classified lines.
struct Assembler {
    out: FileImport,
    runs: Vec<Run>,
    cur: Run,
    in_latency: bool,
    intervals: Vec<Interval>,
}

impl Assembler {
    fn new(path: &Path) -> Self {
        Self {
            out: FileImport::new(path, Tool::Sysbench),
            runs: Vec::new(),
            cur: Run {
                start_line: 1,
                ..Default::default()
            },
            in_latency: false,
            intervals: Vec::new(),
        }
    }

    /// Takes line `n`.
    fn line(&mut self, n: usize, line: Line) {
        let (starts_run, facts, item) = match line {
            Line::Blank => return,
            Line::Interval(iv) => return self.intervals.push(iv),
            Line::Text {
                starts_run,
                facts,
                item,
            } => (starts_run, facts, item),
        };
        if starts_run && self.cur.has_results {
            self.runs.push(std::mem::take(&mut self.cur));
            self.cur.start_line = n;
            self.in_latency = false;
        }
        self.cur.last_line = n;
        self.facts(facts);
        self.item(item);
    }

    fn facts(&mut self, f: Facts) {
        if let Some(v) = f.version.filter(|_| self.out.version.is_none()) {
            self.out.version = Some(format!("sysbench {v}"));
        }
        if let Some(t) = f.threads_flag {
            self.cur.threads = Some(t);
        }
        if let Some(t) = f.number_of_threads {
            self.cur.threads = t.or(self.cur.threads);
        }
        if let Some(p) = f.pattern {
            self.out.pattern.get_or_insert_with(|| p.to_string());
        }
        if let Some(b) = f.block_size {
            if self.out.block_size.is_none() {
                self.out.block_size = b;
            }
        }
    }

    fn item(&mut self, item: Item) {
        let cur = &mut self.cur;
        match item {
            Item::Throughput { dir, iops, mib_s } => match dir {
                "read" => {
                    cur.reads_per_s = Some(iops);
                    cur.read_mib_s = mib_s;
                    cur.has_results = true;
                }
                "write" => {
                    cur.writes_per_s = Some(iops);
                    cur.written_mib_s = mib_s;
                }
                _ => cur.fsyncs_per_s = Some(iops),
            },
            Item::ReadsPerS(v) => {
                cur.reads_per_s = v;
                cur.has_results = true;
            }
            Item::WritesPerS(v) => cur.writes_per_s = v,
            Item::FsyncsPerS(v) => cur.fsyncs_per_s = v,
            Item::Events(v) => cur.events = v,
            Item::EventsPerThread(v) => cur.events_per_thread = v,
            Item::ReadMibS(v) => cur.read_mib_s = v,
            Item::WrittenMibS(v) => cur.written_mib_s = v,
            Item::LatencyBlock => self.in_latency = true,
            Item::Operations { read, write } => {
                cur.has_results = true;
                if let Some(v) = read {
                    cur.ops_read = v;
                }
                if let Some(v) = write {
                    cur.ops_write = v;
                }
            }
            Item::Transferred { read, written } => {
                cur.read_bytes = read;
                cur.written_bytes = written;
            }
            Item::TotalTimeS(v) => cur.total_time_s = v,
            _ if !self.in_latency => {}
            Item::Min(ns) => cur.min = ns,
            Item::Avg(ns) => cur.avg = ns,
            Item::Max(ns) => cur.max = ns,
            Item::Percentile(p, ns) => {
                if let (Some(p), Some(ns)) = (p, ns) {
                    cur.pct.push((p, ns));
                }
            }
            Item::Sum(ns) => cur.sum = ns,
            Item::Other => self.in_latency = false,
        }
    }

    /// The levels of the whole file: one per run with results, else from interval lines.
    fn finish(mut self, path: &Path) -> Result<FileImport> {
        if self.cur.has_results || self.runs.is_empty() {
            self.runs.push(self.cur);
        }
        let mut out = self.out;
        if self.runs.iter().all(|r| !r.has_results) && !self.intervals.is_empty() {
            levels_from_intervals(path, &self.intervals, &mut out);
            return Ok(out);
        }
        if self.runs.iter().all(|r| !r.has_results) {
            return Err(perr(
                path,
                1,
                "expected sysbench fileio results ('File operations:' with reads/s, \
                 'Throughput:' with 'read:  IOPS=', or 'Operations performed:')",
            ));
        }
        for r in self.runs.into_iter().filter(|r| r.has_results) {
            let level = level(path, r, &mut out.notes)?;
            out.levels.push(level);
        }
        Ok(out)
    }
}

/// One run's level; notes (a mean recomputed from sum ÷ events, fsyncs counted as events)
/// go to `notes`.
fn level(path: &Path, r: Run, notes: &mut Vec<String>) -> Result<ImportedLevel> {
    let threads = r.threads.ok_or_else(|| {
        perr(
            path,
            r.start_line,
            "expected the thread count of this run ('Number of threads: N' or a \
             --threads=N command line)",
        )
    })?;
    let mut avg = r.avg.ok_or_else(|| {
        perr(
            path,
            r.last_line,
            "truncated sysbench output: expected the latency block ('Latency (ms):' or \
             'per-request statistics:') with avg",
        )
    })?;
    let mut pct = r.pct;
    let mut min = r.min;
    if avg == 0.0 {
        // Printed with two decimals, a page-cache run's mean rounds to 0.00 ms; sysbench
        // also prints the sum of all latencies and the event count, which give it.
        let events = r
            .events
            .or(r.events_per_thread.map(|e| e * f64::from(threads)));
        if let (Some(sum), Some(ev)) = (r.sum, events.filter(|e| *e > 0.0)) {
            avg = sum / ev;
            // A min or percentile printed as 0.00 is below the print's resolution too.
            pct.retain(|(_, ns)| *ns > 0.0);
            min = min.filter(|ns| *ns > 0.0);
            notes.push(format!(
                "{}: --threads={threads}: avg prints as 0.00 ms; the mean is sum ÷ events \
                 = {:.2} ms ÷ {ev} = {:.6} ms (min and percentiles printed as 0.00 are left \
                 out)",
                path.display(),
                sum / 1e6,
                avg / 1e6
            ));
        }
    }
    let (iops, bytes_per_s) = if let Some(rd) = r.reads_per_s {
        let wr = r.writes_per_s.unwrap_or(0.0);
        let fs = r.fsyncs_per_s.unwrap_or(0.0);
        let bytes = (r.read_mib_s.unwrap_or(0.0) + r.written_mib_s.unwrap_or(0.0)) * 1_048_576.0;
        if fs > 0.0 {
            notes.push(format!(
                "{}: --threads={threads}: IOPS count sysbench's events, reads + writes + \
                 fsyncs ({rd} + {wr} + {fs} per s), since its latency averages over all \
                 three; the throughput is reads and writes only",
                path.display()
            ));
        }
        (rd + wr + fs, bytes)
    } else {
        let t = r.total_time_s.filter(|t| *t > 0.0).ok_or_else(|| {
            perr(
                path,
                r.last_line,
                "truncated sysbench output: expected 'total time:'",
            )
        })?;
        let ops = r.ops_read.unwrap_or(0.0) + r.ops_write.unwrap_or(0.0);
        let bytes = r.read_bytes.unwrap_or(0.0) + r.written_bytes.unwrap_or(0.0);
        (ops / t, bytes / t)
    };
    let mut lat = LatencyNs {
        min,
        mean: avg,
        max: r.max,
        ..Default::default()
    };
    for (p, ns) in pct {
        lat.set_percentile(p, ns);
    }
    Ok(ImportedLevel {
        point: LevelPoint {
            concurrency: threads,
            iops,
            bytes_per_s,
            latency_ns: lat,
            kernel_util_pct: None,
            kernel_aqu_sz: None,
            ..Default::default()
        },
        label: format!("--threads={threads}"),
        line: r.start_line,
    })
}

/// Parse sysbench text.
pub fn parse(path: &Path, text: &str) -> Result<FileImport> {
    let mut asm = Assembler::new(path);
    for (i, raw) in text.lines().enumerate() {
        asm.line(i + 1, classify(i + 1, raw.trim()));
    }
    asm.finish(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 000's excerpts as published: a command line, then the result blocks.
    const SEED000: &str = "root@ts140i:/mnt/data# sysbench  --threads=1 --time=600 --max-requests=0  fileio --file-num=1 --file-total-size=100G --file-io-mode=sync --file-extra-flags=direct --file-test-mode=rndrd run
 
File operations:
   reads/s:                      7113.16
   writes/s:                     0.00
   fsyncs/s:                     0.00
 
Throughput:
   read, MiB/s:                  111.14
   written, MiB/s:               0.00
 
General statistics:
   total time:                          600.0001s
   total number of events:              4267910
 
Latency (ms):
        min:                                  0.07
        avg:                                  0.14
        max:                                  6.18
        95th percentile:                      0.17
sysbench  --threads=4 --time=600 --max-requests=0  fileio --file-num=1 --file-total-size=100G --file-io-mode=sync --file-extra-flags=direct --file-test-mode=rndrd run
File operations:
   reads/s:                      26248.44
   writes/s:                     0.00
   fsyncs/s:                     0.00
 
Throughput:
   read, MiB/s:                  410.13
   written, MiB/s:               0.00
 
General statistics:
   total time:                          600.0002s
   total number of events:              15749205
 
Latency (ms):
        min:                                  0.06
        avg:                                  0.15
        max:                                  8.73
        95th percentile:                      0.21
";

    #[test]
    fn seed000_excerpts() {
        let imp = parse(Path::new("seed000.txt"), SEED000).unwrap();
        assert_eq!(imp.levels.len(), 2);
        let a = &imp.levels[0].point;
        assert_eq!(a.concurrency, 1);
        assert_eq!(a.iops, 7113.16);
        assert!((a.bytes_per_s - 111.14 * 1_048_576.0).abs() < 1.0);
        assert_eq!(a.latency_ns.mean, 140_000.0);
        assert_eq!(a.latency_ns.p95, Some(170_000.0));
        assert_eq!(a.latency_ns.max, Some(6_180_000.0));
        let b = &imp.levels[1].point;
        assert_eq!(b.concurrency, 4);
        assert_eq!(b.latency_ns.p95, Some(210_000.0));
        assert_eq!(imp.levels[1].line, 21);
    }

    /// sysbench 0.4.12's layout (units on every value, "Operations performed").
    const V04: &str = "sysbench 0.4.12:  multi-threaded system evaluation benchmark

Running the test with following options:
Number of threads: 16
Initializing random number generator from timer.

Extra file open flags: 16384
128 files, 16Mb each
2Gb total file size
Block size 16Kb
Number of random requests for random IO: 0
Read/Write ratio for combined random IO test: 1.50
Periodic FSYNC enabled, calling fsync() each 100 requests.
Calling fsync() at the end of test, Enabled.
Using synchronous I/O mode
Doing random r/w test
Threads started!
Time limit exceeded, exiting...
(last message repeated 15 times)
Done.

Operations performed:  32816 Read, 21877 Write, 69888 Other = 124581 Total
Read 512.75Mb  Written 341.83Mb  Total transferred 854.58Mb  (2.8484Mb/sec)
  182.30 Requests/sec executed

Test execution summary:
    total time:                          300.0084s
    total number of events:              54693
    total time taken by event execution: 4792.5006
    per-request statistics:
         min:                                  0.01ms
         avg:                                 87.63ms
         max:                               1591.94ms
         approx.  95 percentile:             385.48ms

Threads fairness:
    events (avg/stddev):           3418.3125/58.61
    execution time (avg/stddev):   299.5313/0.06
";

    #[test]
    fn version_0_4_layout() {
        let imp = parse(Path::new("v04.txt"), V04).unwrap();
        assert_eq!(imp.version.as_deref(), Some("sysbench 0.4.12"));
        assert_eq!(imp.pattern.as_deref(), Some("random r/w"));
        assert_eq!(imp.block_size, Some(16384));
        let p = &imp.levels[0].point;
        assert_eq!(p.concurrency, 16);
        assert!((p.iops - (32816.0 + 21877.0) / 300.0084).abs() < 1e-6);
        assert!((p.bytes_per_s - (512.75 + 341.83) * 1_048_576.0 / 300.0084).abs() < 1.0);
        assert_eq!(p.latency_ns.mean, 87_630_000.0);
        assert_eq!(p.latency_ns.p95, Some(385_480_000.0));
        assert_eq!(p.latency_ns.min, Some(10_000.0));
    }

    /// Seed 001's interval lines (sysbench 0.5 OLTP at 1, 4 and 64 threads), as published.
    const SEED001: &str = "[ 80s] threads: 1, tps: 9.30, reads/s: 130.20, writes/s: 0.00 response time: 171.82ms (95%)
[ 90s] threads: 1, tps: 9.20, reads/s: 128.80, writes/s: 0.00 response time: 157.72ms (95%)
[ 100s] threads: 1, tps: 9.00, reads/s: 126.00, writes/s: 0.00 response time: 215.38ms (95%)
[ 110s] threads: 1, tps: 9.30, reads/s: 130.20, writes/s: 0.00 response time: 141.39ms (95%)
[ 110s] threads: 4, tps: 21.10, reads/s: 295.40, writes/s: 0.00 response time: 312.09ms (95%)
[ 120s] threads: 4, tps: 22.00, reads/s: 308.00, writes/s: 0.00 response time: 297.05ms (95%)
[ 130s] threads: 4, tps: 22.40, reads/s: 313.60, writes/s: 0.00 response time: 335.34ms (95%)
[ 70s] threads: 64, tps: 42.90, reads/s: 600.60, writes/s: 0.00 response time: 2516.43ms (95%)
[ 80s] threads: 64, tps: 42.40, reads/s: 593.60, writes/s: 0.00 response time: 2613.15ms (95%)
[ 90s] threads: 64, tps: 44.80, reads/s: 627.20, writes/s: 0.00 response time: 2404.49ms (95%)
";

    #[test]
    fn seed001_interval_lines_give_levels() {
        let imp = parse(Path::new("seed001.txt"), SEED001).unwrap();
        let c: Vec<u32> = imp.levels.iter().map(|l| l.point.concurrency).collect();
        assert_eq!(c, [1, 4, 64]);
        let one = &imp.levels[0].point;
        assert!((one.iops - 9.2).abs() < 1e-9);
        // Median of 141.39, 157.72, 171.82, 215.38.
        assert!((one.latency_ns.p95.unwrap() - 164.77e6).abs() < 1.0);
        assert!((one.latency_ns.mean - 1e9 / 9.2).abs() < 1.0);
        assert_eq!(imp.levels[2].point.latency_ns.p95, Some(2516.43e6));
        let v = crate::analysis::analyze(
            &imp.levels
                .iter()
                .map(|l| l.point.clone())
                .collect::<Vec<_>>(),
        );
        assert_eq!(v.overload_concurrency, Some(64));
        assert!(!v.levels[1].overloaded);
        assert!(imp.notes[0].contains("interval lines"));
    }

    #[test]
    fn sysbench_1_0_interval_lines() {
        let text = "[ 10s ] thds: 8 tps: 1200.50 qps: 24010.00 (r/w/o: 16807.00/4802.00/2401.00) lat (ms,95%): 9.73 err/s: 0.00 reconn/s: 0.00\n\
                    [ 20s ] thds: 8 tps: 1199.50 qps: 23990.00 (r/w/o: 16793.00/4798.00/2399.00) lat (ms,95%): 9.91 err/s: 0.00 reconn/s: 0.00\n";
        let imp = parse(Path::new("oltp.txt"), text).unwrap();
        let p = &imp.levels[0].point;
        assert_eq!(p.concurrency, 8);
        assert!((p.iops - 1200.0).abs() < 1e-9);
        assert!((p.latency_ns.p95.unwrap() - 9.82e6).abs() < 1.0);
    }

    #[test]
    fn missing_threads_and_truncation_are_named() {
        let no_threads = "File operations:\n reads/s: 10.0\nLatency (ms):\n avg: 1.0\n";
        let e = parse(Path::new("a.txt"), no_threads)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("a.txt:1: expected the thread count"), "{e}");
        let cut = &SEED000[..SEED000.find("Latency (ms):").unwrap()];
        let e = parse(Path::new("b.txt"), cut).unwrap_err().to_string();
        assert!(e.starts_with("b.txt:14: truncated sysbench output"), "{e}");
        let e = parse(
            Path::new("c.txt"),
            "sysbench 1.0.20\nNumber of threads: 4\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("c.txt:1: expected sysbench fileio results"),
            "{e}"
        );
    }

    fn fixture(name: &str) -> String {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/import")
            .join(name);
        std::fs::read_to_string(p).unwrap()
    }

    #[test]
    fn sysbench_1_1_throughput_layout() {
        // Hand-made in 1.1's layout (sysbench's tests/t/test_fileio.t) from the numbers of
        // sysbench-rndrw-t2.txt, so both layouts must give the same level.
        let new = parse(Path::new("n.txt"), &fixture("sysbench-1.1-rndrw-t2.txt")).unwrap();
        let old = parse(Path::new("o.txt"), &fixture("sysbench-rndrw-t2.txt")).unwrap();
        assert_eq!(new.version.as_deref(), Some("sysbench 1.1.0-df89d34"));
        let (a, b) = (&new.levels[0].point, &old.levels[0].point);
        assert_eq!(a.concurrency, 2);
        // sysbench's events: reads + writes + fsyncs per second.
        assert!(
            (a.iops - (8401.28 + 5599.52 + 141.84)).abs() < 1e-9,
            "{}",
            a.iops
        );
        assert!((a.bytes_per_s - (131.27 + 87.49) * 1_048_576.0).abs() < 1.0);
        assert_eq!(a.latency_ns.mean, 140_000.0);
        assert_eq!(a.latency_ns.p95, Some(240_000.0));
        assert_eq!(a.latency_ns.max, Some(5_960_000.0));
        assert_eq!(a, b);
    }

    #[test]
    fn rndrw_iops_count_fsyncs_as_sysbench_does() {
        // 14157 events in 1.0003 s at a mean of 0.14 ms on 2 threads: Little's law closes
        // only when the fsyncs are counted (sum 1986.01 ms / 1.0003 s = 1.985 busy threads).
        let imp = parse(Path::new("rw.txt"), &fixture("sysbench-rndrw-t2.txt")).unwrap();
        let p = &imp.levels[0].point;
        assert!((p.iops - 14_142.64).abs() < 1e-6, "{}", p.iops);
        assert!((p.iops * 1.0003 - 14157.0).abs() < 15.0);
        let little = p.iops * p.latency_ns.mean / 1e9;
        assert!((little - 1.98).abs() < 0.01, "{little}");
        assert!(imp
            .notes
            .iter()
            .any(|n| n.contains("fsyncs (8401.28 + 5599.52 + 141.84")));
    }

    #[test]
    fn avg_rounded_to_zero_is_sum_over_events() {
        // A page-cache run of the installed sysbench 1.0.20: avg 0.00, sum 915.45 ms over
        // 536860 events.
        let imp = parse(Path::new("pc.txt"), &fixture("sysbench-pagecache-t1.txt")).unwrap();
        let p = &imp.levels[0].point;
        assert!((p.latency_ns.mean - 915.45e6 / 536_860.0).abs() < 1e-6);
        assert_eq!(p.latency_ns.p95, None);
        assert_eq!(p.latency_ns.min, None);
        assert!((p.latency_ns.max.unwrap() - 4.1e6).abs() < 1e-3);
        assert_eq!(p.iops, 536_439.84);
        assert!(imp.notes[0].contains("sum ÷ events"), "{:?}", imp.notes);
        // Without the event total, 1.x's per-thread fairness line × threads gives it.
        let cut = fixture("sysbench-pagecache-t1.txt").replace("total number of events", "x");
        let imp = parse(Path::new("pc.txt"), &cut).unwrap();
        assert!((imp.levels[0].point.latency_ns.mean - 915.45e6 / 536_860.0).abs() < 1e-6);
    }
}
