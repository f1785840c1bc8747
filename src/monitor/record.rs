//! The recording file format (`iosat stat --record`/`--replay`), pure: formatting to strings and
//! parsing from text, no IO. Raw samples only, never rates (docs/design.md §2), so a replay runs
//! the same parser and formulas on the same bytes as the live run. Also reads the sample files of
//! pt-diskstats `--save-samples` and pt-stalk (`TS <epoch> ...` + /proc/diskstats lines).
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.
//!
//! ```text
//! #iosat-record 1                      header, written when the file is created
//! R <wall_ns> <interval_ns>            start of a run: no interval spans two runs
//! D <major>:<minor> <name> <kind> <display name>   sysfs facts, before the first sample
//!                                      that has the device (kind "-" when unknown)
//! I <major>:<minor> <name> <profile id>   the device's stable identity (wwid, serial, or
//!                                      model + size: the id its `iosat sweep` profile is
//!                                      saved under), so a replay finds the same profile
//! U <uptime_ns>                        the time since boot (/proc/uptime, which counts
//!                                      suspended time) read with the next sample: the
//!                                      since-boot interval (written by `--since-boot` runs)
//! C <user> <nice> <system> <idle> <iowait> <irq> <softirq> <steal>
//!                                      the `cpu` line of /proc/stat (USER_HZ ticks) read
//!                                      with the next sample: stat's avg-cpu line
//! B <dropped> <major>:<minor>/<op>/<sum_ns>/<bucket>=<count>,... ...
//!                                      the block-latency source's cumulative histograms
//!                                      (monitor::blklat), read with the next sample: one
//!                                      token per device and op (r, w, d, f) that completed
//!                                      anything, empty buckets left out; `dropped`:
//!                                      completions of devices beyond its slots. Written
//!                                      only while the source is attached. Reads' and
//!                                      writes' size classes follow as tokens
//!                                      <major>:<minor>/<op><class>/<sum_ns>/<bytes>/<bucket>=<count>,...
//!                                      (op r or w, class s, m or l: blklat::CLASS_CODES;
//!                                      the class histogram's coarser buckets); recordings
//!                                      from before them have none and replay without.
//!                                      Then each op's queue and device time (issue 40):
//!                                      <major>:<minor>/<op>Q/<sum_ns>/<unsplit>/<bucket>=<count>,...
//!                                      <major>:<minor>/<op>D/<sum_ns>/<bucket>=<count>,...
//!                                      (the total's buckets; `unsplit`: requests without
//!                                      the kernel's issue stamp). As with the class tokens,
//!                                      the header stays at 1: a reader older than these
//!                                      tokens stops at them naming the line; recordings
//!                                      without them replay with no split.
//! K <key>=<value>,... <device>        a cap declared on the command line (issue 42) for
//!                                      the device as the user named it (the rest of the
//!                                      line); keys as the profile's `declared_cap` (iops,
//!                                      read_iops, write_iops, bytes_per_s, ...): a replay
//!                                      judges the run's intervals against it, as the live
//!                                      run did. Written after the `R` of the run it holds for.
//! #S <JSON>                           the run's device selection (monitor::select::Selection:
//!                                      `{"patterns":[...],"partitions":false,"all":false}`,
//!                                      the DEVICE arguments as kernel names or globs),
//!                                      written after the `R` of the run it holds for: a replay,
//!                                      `analyze` and the recording's page show by default the
//!                                      devices the live run showed. A comment to older readers.
//! #A <major>:<minor> <JSON>             an AWS volume's own statistics (issue 42,
//!                                      monitor::aws: `devices[].aws` of `stat --json`) over
//!                                      its reader's latest interval, shown with the interval
//!                                      that ends at the next sample: a replay has `thr%` and
//!                                      the clause. A comment to older readers.
//! #G <JSON>                           the block-latency source's per-cgroup counters (issue
//!                                      40, monitor::cgroups::CgSample), read with the next
//!                                      sample: cumulative rows per cgroup, device and op, the
//!                                      names of cgroups new in the run and the limits the
//!                                      busiest are under. A comment to older readers.
//! #P <start_mono_ns> <window_ns> <major>:<minor>/<windows>/<r_iops>/<r_B/s>/<w_iops>/<w_B/s>/<at_cap> ...
//!                                      the bursts of the interval that starts at
//!                                      start_mono_ns and ends at the next sample (issue 41,
//!                                      monitor::burst): per device with at least two short
//!                                      windows, their count, each direction's peak IOPS and
//!                                      bytes/s, and the windows at the declared cap ("-":
//!                                      none declared). Derived from samples read at the
//!                                      window and not kept (ten a second would multiply the
//!                                      file); a comment line, so readers older than it skip
//!                                      it and replay without bursts.
//! T <mono_ns> <wall_ns>                a sample; the /proc/diskstats lines follow verbatim
//!  259       0 nvme0n1 212458 3 ...
//! ```
//! Other lines starting with `#` are comments.

use super::blklat::{BlkSample, CLASS_CODES, OP_CODES};
use super::select::DeviceMeta;
use super::RawSample;
use crate::analysis::declared::{CapDim, DeclaredCap};
use crate::sys::device::DevKind;
use crate::sys::diskstats::{old_partition, parse_line};
use crate::sys::sched::CpuTimes;

pub const HEADER: &str = "#iosat-record 1\n";

/// One element of a recording.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Run {
        wall_ns: i64,
        interval_ns: u64,
    },
    Device {
        major: u32,
        minor: u32,
        name: String,
        meta: DeviceMeta,
    },
    /// The profile id of a device (recorded so that a replay judges against the same profile).
    Identity {
        major: u32,
        minor: u32,
        name: String,
        id: String,
    },
    /// The time since boot when the next sample was read (`<proc>/uptime`), in ns.
    Uptime {
        ns: u64,
    },
    /// The machine's CPU time counters read with the next sample (avg-cpu).
    Cpu(CpuTimes),
    Sample(RawSample),
    /// The block-latency source's cumulative histograms, read with the next sample.
    Latency(BlkSample),
    /// A cap declared on the command line for the device `dev` (as the user named it), for
    /// the rest of the run.
    Cap {
        dev: String,
        cap: DeclaredCap,
    },
    /// The short windows' peaks of the interval that ends at the next sample (`#P`, issue 41:
    /// monitor::burst; a comment to older readers).
    Burst(super::burst::BurstSample),
    /// The per-cgroup counters read with the next sample (`#G`, issue 40: monitor::cgroups;
    /// a comment to older readers).
    Cgroups(super::cgroups::CgSample),
    /// The run's device selection (`#S`: what the live run showed), for the rest of the run;
    /// a comment to older readers.
    Selection(super::select::Selection),
    /// An AWS device's own statistics over its reader's latest interval, shown with the
    /// interval that ends at the next sample (`#A`, issue 42: monitor::aws; a comment to
    /// older readers).
    Aws {
        major: u32,
        minor: u32,
        interval: std::sync::Arc<super::aws::AwsInterval>,
    },
}

/// Which tool wrote the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Iosat,
    /// pt-diskstats --save-samples or pt-stalk: wall-clock `TS` stamps only, no sysfs facts.
    PtDiskstats,
}

pub fn format_run(wall_ns: i64, interval_ns: u64) -> String {
    format!("R {wall_ns} {interval_ns}\n")
}

pub fn format_device(major: u32, minor: u32, name: &str, meta: &DeviceMeta) -> String {
    format!(
        "D {major}:{minor} {name} {} {}\n",
        meta.kind.map_or("-", DevKind::as_str),
        meta.display_name
    )
}

pub fn format_identity(major: u32, minor: u32, name: &str, id: &str) -> String {
    format!("I {major}:{minor} {name} {id}\n")
}

pub fn format_uptime(ns: u64) -> String {
    format!("U {ns}\n")
}

pub fn format_cpu(c: &CpuTimes) -> String {
    format!(
        "C {} {} {} {} {} {} {} {}\n",
        c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal
    )
}

pub fn format_sample(raw: &RawSample) -> String {
    let mut s = String::with_capacity(raw.text.len() + 48);
    s.push_str(&format!("T {} {}\n", raw.mono_ns, raw.wall_ns));
    for line in raw.text.lines().filter(|l| !l.trim().is_empty()) {
        s.push_str(line);
        s.push('\n');
    }
    s
}

pub fn format_latency(b: &BlkSample) -> String {
    let mut s = format!("B {}", b.dropped);
    for d in &b.devs {
        for (op, h) in OP_CODES.iter().zip(&d.ops) {
            if h.buckets.iter().all(|&c| c == 0) && h.sum_ns == 0 {
                continue;
            }
            s.push_str(&format!(" {}:{}/{op}/{}/", d.major, d.minor, h.sum_ns));
            push_buckets(&mut s, &h.buckets);
        }
        for (op, row) in OP_CODES.iter().zip(&d.classes) {
            for (class, h) in CLASS_CODES.iter().zip(row) {
                if h.buckets.iter().all(|&c| c == 0) && h.sum_ns == 0 {
                    continue;
                }
                s.push_str(&format!(
                    " {}:{}/{op}{class}/{}/{}/",
                    d.major, d.minor, h.sum_ns, h.bytes
                ));
                push_buckets(&mut s, &h.buckets);
            }
        }
        for (op, sp) in OP_CODES.iter().zip(&d.split) {
            let (dev, q, v) = (format!("{}:{}", d.major, d.minor), &sp.queue, &sp.device);
            if sp.unsplit > 0 || q.buckets.iter().any(|&c| c > 0) {
                s.push_str(&format!(" {dev}/{op}Q/{}/{}/", q.sum_ns, sp.unsplit));
                push_buckets(&mut s, &q.buckets);
            }
            if v.buckets.iter().any(|&c| c > 0) {
                s.push_str(&format!(" {dev}/{op}D/{}/", v.sum_ns));
                push_buckets(&mut s, &v.buckets);
            }
        }
    }
    s.push('\n');
    s
}

/// The (op, class) of a class token's op field ("rs" .. "wl").
fn class_code(op: &str) -> Option<(usize, usize)> {
    let (o, c) = op.split_at_checked(1)?;
    let o = OP_CODES[..crate::sys::bpf::CLASS_OPS]
        .iter()
        .position(|&x| x == o)?;
    Some((o, CLASS_CODES.iter().position(|&x| x == c)?))
}

/// `<bucket>=<count>,...` into `buckets` (of its length).
fn parse_buckets(buckets: &str, into: &mut [u64]) -> Option<()> {
    for kv in buckets.split(',').filter(|s| !s.is_empty()) {
        let (i, c) = kv.split_once('=')?;
        let i = i.parse::<usize>().ok().filter(|&i| i < into.len())?;
        into[i] = c.parse::<u64>().ok()?;
    }
    Some(())
}

/// A `B` line's fields after the marker (see the module doc).
fn parse_latency<'a>(mut f: impl Iterator<Item = &'a str>) -> Result<BlkSample, String> {
    use crate::sys::bpf::{DevHists, RawHist, NBUCKETS};
    let dropped = f
        .next()
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or("expected 'B <dropped> <major>:<minor>/<op>/<sum_ns>/<bucket>=<count>,...'")?;
    let mut b = BlkSample {
        dropped,
        devs: Vec::new(),
    };
    for tok in f {
        let bad = || format!("bad histogram '{tok}'");
        let mut p = tok.splitn(3, '/');
        let (Some(dev), Some(op), Some(rest)) = (p.next(), p.next(), p.next()) else {
            return Err(bad());
        };
        let (major, minor) = crate::sys::device::parse_dev_t(dev).ok_or_else(bad)?;
        let idx = match b
            .devs
            .iter()
            .position(|d| d.major == major && d.minor == minor)
        {
            Some(i) => i,
            None => {
                b.devs.push(DevHists {
                    major,
                    minor,
                    ops: std::array::from_fn(|_| RawHist {
                        buckets: vec![0; NBUCKETS],
                        sum_ns: 0,
                    }),
                    classes: Default::default(),
                    split: Default::default(),
                });
                b.devs.len() - 1
            }
        };
        if let Some((o, c)) = class_code(op) {
            let mut p = rest.splitn(3, '/');
            let (Some(sum), Some(bytes), Some(buckets)) = (p.next(), p.next(), p.next()) else {
                return Err(bad());
            };
            let h = &mut b.devs[idx].classes[o][c];
            h.sum_ns = sum.parse::<u64>().map_err(|_| bad())?;
            h.bytes = bytes.parse::<u64>().map_err(|_| bad())?;
            parse_buckets(buckets, &mut h.buckets).ok_or_else(bad)?;
            continue;
        }
        if let Some(stage) = op.strip_suffix('Q').or_else(|| op.strip_suffix('D')) {
            let o = OP_CODES.iter().position(|&c| c == stage).ok_or_else(bad)?;
            let sp = &mut b.devs[idx].split[o];
            let (h, buckets) = if op.ends_with('Q') {
                let mut p = rest.splitn(3, '/');
                let (Some(sum), Some(unsplit), Some(buckets)) = (p.next(), p.next(), p.next())
                else {
                    return Err(bad());
                };
                sp.unsplit = unsplit.parse::<u64>().map_err(|_| bad())?;
                sp.queue.sum_ns = sum.parse::<u64>().map_err(|_| bad())?;
                (&mut sp.queue, buckets)
            } else {
                let (sum, buckets) = rest.split_once('/').ok_or_else(bad)?;
                sp.device.sum_ns = sum.parse::<u64>().map_err(|_| bad())?;
                (&mut sp.device, buckets)
            };
            parse_buckets(buckets, &mut h.buckets).ok_or_else(bad)?;
            continue;
        }
        let op = OP_CODES.iter().position(|&c| c == op).ok_or_else(bad)?;
        let (sum, buckets) = rest.split_once('/').ok_or_else(bad)?;
        let h = &mut b.devs[idx].ops[op];
        h.sum_ns = sum.parse::<u64>().map_err(|_| bad())?;
        parse_buckets(buckets, &mut h.buckets).ok_or_else(bad)?;
    }
    Ok(b)
}

/// The line(s) of one element, as [`parse`] reads them back.
pub fn format_event(ev: &Event) -> String {
    match ev {
        Event::Run {
            wall_ns,
            interval_ns,
        } => format_run(*wall_ns, *interval_ns),
        Event::Device {
            major,
            minor,
            name,
            meta,
        } => format_device(*major, *minor, name, meta),
        Event::Identity {
            major,
            minor,
            name,
            id,
        } => format_identity(*major, *minor, name, id),
        Event::Uptime { ns } => format_uptime(*ns),
        Event::Cpu(c) => format_cpu(c),
        Event::Sample(raw) => format_sample(raw),
        Event::Latency(b) => format_latency(b),
        Event::Cap { dev, cap } => format_cap(dev, cap),
        Event::Burst(b) => super::burst::format(b),
        Event::Cgroups(c) => format!("#G {}\n", serde_json::to_string(c).expect("plain data")),
        Event::Selection(sel) => {
            format!("#S {}\n", serde_json::to_string(sel).expect("plain data"))
        }
        Event::Aws {
            major,
            minor,
            interval,
        } => format!(
            "#A {major}:{minor} {}\n",
            serde_json::to_string(interval.as_ref()).expect("plain data")
        ),
    }
}

/// The selection after `#S` (JSON); None when malformed, or when a pattern is empty, longer
/// than a device's name can be, or holds a control character (a file may have been planted:
/// what it selects is only which devices are shown, each pattern a name or glob).
fn parse_selection(rest: &str) -> Option<super::select::Selection> {
    let s: super::select::Selection = serde_json::from_str(rest).ok()?;
    let sane = |p: &String| !p.is_empty() && p.len() <= 255 && !p.chars().any(char::is_control);
    s.patterns.iter().all(sane).then_some(s)
}

/// The fields after `#A`: the device and its AWS interval (JSON); None when malformed.
fn parse_aws(rest: &str) -> Option<Event> {
    let (dev, json) = rest.split_once(' ')?;
    let (major, minor) = dev.split_once(':')?;
    Some(Event::Aws {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        interval: std::sync::Arc::new(serde_json::from_str(json).ok()?),
    })
}

/// The key of a figure in a `K` line: the profile's `declared_cap` key (bytes per second).
fn cap_key(d: CapDim) -> &'static str {
    match d {
        CapDim::Iops => "iops",
        CapDim::ReadIops => "read_iops",
        CapDim::WriteIops => "write_iops",
        CapDim::BytesPerS => "bytes_per_s",
        CapDim::ReadBytesPerS => "read_bytes_per_s",
        CapDim::WriteBytesPerS => "write_bytes_per_s",
    }
}

/// `K iops=1000,bytes_per_s=125000000 nvme1n1` (f64's shortest form reads back exactly).
pub fn format_cap(dev: &str, cap: &DeclaredCap) -> String {
    let figures: Vec<String> = cap
        .figures()
        .map(|(d, v)| format!("{}={v}", cap_key(d)))
        .collect();
    format!("K {} {dev}\n", figures.join(","))
}

/// `K`: the figures, then the device (the rest of the line); None when the form is wrong or
/// a figure is not a positive number.
fn cap_event(t: &str) -> Option<Event> {
    let mut g = t.splitn(3, ' ').skip(1);
    let (figures, dev) = (g.next()?, g.next().filter(|d| !d.trim().is_empty())?);
    let mut cap = DeclaredCap::default();
    for part in figures.split(',') {
        let (k, v) = part.split_once('=')?;
        let dim = CapDim::ALL.into_iter().find(|d| cap_key(*d) == k)?;
        cap.set(dim, crate::analysis::declared::parse_value(v)?);
    }
    (!cap.is_empty()).then(|| Event::Cap {
        dev: dev.trim().to_string(),
        cap,
    })
}

/// A parse failure: 1-based line number and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub reason: String,
}

impl ParseError {
    /// The error of the file at `path` this was read from.
    pub fn at(self, path: impl Into<std::path::PathBuf>) -> crate::error::Error {
        crate::error::Error::parse(path, self.line, self.reason)
    }
}

fn err(line: usize, reason: impl Into<String>) -> ParseError {
    ParseError {
        line,
        reason: reason.into(),
    }
}

/// "1344561790.012145298" → ns since the epoch, exactly (no float rounding).
fn parse_epoch_ns(s: &str) -> Option<i64> {
    crate::units::decimal_seconds_ns(s).and_then(|ns| i64::try_from(ns).ok())
}

/// Parse a recording. Strict: a line that is not a marker, a comment or a valid diskstats
/// line is an error naming the line.
pub fn parse(text: &str) -> Result<(Vec<Event>, Source), ParseError> {
    let (events, source) = parse_numbered(text)?;
    Ok((events.into_iter().map(|(_, e)| e).collect(), source))
}

/// [`parse`], each element with the 1-based line it starts at (for warnings that name it).
pub fn parse_numbered(text: &str) -> Result<(Vec<(usize, Event)>, Source), ParseError> {
    let mut asm = Assembler::default();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        asm.push(n, classify(n, line)?)?;
    }
    asm.finish(text.lines().count().max(1))
}

/// The comment lines that carry an element (older readers skip them): each marker, what the
/// line is, the form its fields take, and their parser (Err: why not, or nothing to add).
type CommentParse = fn(&str) -> Result<Event, String>;
const COMMENT_EVENTS: [(&str, &str, &str, CommentParse); 4] = [
    (
        "#P ",
        "burst",
        "#P <start_mono_ns> <window_ns> <major>:<minor>/<windows>/<r iops>/<r B/s>/<w iops>/\
         <w B/s>/<at cap>[/<busy max, 0-1>]...",
        |r| {
            super::burst::parse(r)
                .map(Event::Burst)
                .ok_or_else(String::new)
        },
    ),
    ("#G ", "cgroup", "#G <JSON>", |r| {
        serde_json::from_str(r)
            .map(Event::Cgroups)
            .map_err(|e| e.to_string())
    }),
    (
        "#S ",
        "selection",
        "#S {\"patterns\":[<device or glob>, ...],\"partitions\":<bool>,\"all\":<bool>}",
        |r| {
            parse_selection(r)
                .map(Event::Selection)
                .ok_or_else(String::new)
        },
    ),
    (
        "#A ",
        "AWS statistics",
        "#A <major>:<minor> <JSON of the interval>",
        |r| parse_aws(r).ok_or_else(String::new),
    ),
];

/// What one line of a recording is, read on its own.
enum Line<'a> {
    /// Blank or a `#` comment.
    Skip,
    /// A /proc/diskstats line (trailing blanks trimmed): it belongs to the open sample.
    Stats(&'a str),
    /// `T` or `TS`: opens a sample. The fields' verdict waits until the source is checked, so a
    /// file that mixes the two is named as such first.
    Stamp(Source, Result<RawSample, ParseError>),
    /// Any other element.
    Event(Event),
}

/// One line → what it is, its fields parsed; a malformed marker line is an error naming it.
fn classify(n: usize, line: &str) -> Result<Line<'_>, ParseError> {
    let t = line.trim_end();
    for (marker, what, form, parse) in COMMENT_EVENTS {
        if let Some(rest) = t.strip_prefix(marker) {
            return parse(rest).map(Line::Event).map_err(|why| ParseError {
                line: n,
                reason: format!(
                    "malformed {what} line (expected '{form}'){}{why}: '{}'",
                    if why.is_empty() { "" } else { ": " },
                    t.chars().take(120).collect::<String>()
                ),
            });
        }
    }
    if t.trim().is_empty() || t.starts_with('#') {
        return Ok(Line::Skip);
    }
    let mut f = t.split_ascii_whitespace();
    let first = f.next().unwrap_or("");
    if first.as_bytes()[0].is_ascii_digit() {
        return Ok(Line::Stats(t));
    }
    let expected = |form: &str| err(n, format!("expected '{form}', got '{t}'"));
    let event = match first {
        "T" => {
            let sample = iosat_stamp(f).ok_or_else(|| expected("T <mono_ns> <wall_ns>"));
            return Ok(Line::Stamp(Source::Iosat, sample));
        }
        "TS" => {
            let sample = pt_stamp(f).ok_or_else(|| expected("TS <epoch seconds> ..."));
            return Ok(Line::Stamp(Source::PtDiskstats, sample));
        }
        "R" => run_event(f).ok_or_else(|| expected("R <wall_ns> <interval_ns>"))?,
        "B" => Event::Latency(parse_latency(f).map_err(|r| err(n, r))?),
        "U" => uptime_event(f).ok_or_else(|| expected("U <uptime_ns>"))?,
        "C" => cpu_event(f).ok_or_else(|| {
            expected("C <user> <nice> <system> <idle> <iowait> <irq> <softirq> <steal>")
        })?,
        "I" => {
            identity_event(f).ok_or_else(|| expected("I <major>:<minor> <name> <profile id>"))?
        }
        "K" => cap_event(t).ok_or_else(|| {
            expected("K <key>=<positive number>,... <device> (keys: iops, bytes_per_s, ...)")
        })?,
        "D" => device_event(n, t)?
            .ok_or_else(|| expected("D <major>:<minor> <name> <kind> <display name>"))?,
        other => {
            return Err(err(
                n,
                format!("not a recording line (unknown marker '{other}'): '{t}'"),
            ))
        }
    };
    Ok(Line::Event(event))
}

/// `T <mono_ns> <wall_ns>`'s fields, exactly two.
fn iosat_stamp<'a>(mut f: impl Iterator<Item = &'a str>) -> Option<RawSample> {
    let mono_ns = f.next()?.parse::<u64>().ok()?;
    let wall_ns = f.next()?.parse::<i64>().ok()?;
    f.next().is_none().then(|| RawSample {
        mono_ns,
        wall_ns,
        text: String::new(),
    })
}

/// `TS <epoch seconds> ...`: the wall clock is the only clock, so it is the monotonic one too.
fn pt_stamp<'a>(mut f: impl Iterator<Item = &'a str>) -> Option<RawSample> {
    let ns = f.next().and_then(parse_epoch_ns)?;
    Some(RawSample {
        mono_ns: u64::try_from(ns).unwrap_or(0),
        wall_ns: ns,
        text: String::new(),
    })
}

fn run_event<'a>(mut f: impl Iterator<Item = &'a str>) -> Option<Event> {
    let wall_ns = f.next()?.parse::<i64>().ok()?;
    let interval_ns = f.next()?.parse::<u64>().ok()?;
    Some(Event::Run {
        wall_ns,
        interval_ns,
    })
}

fn uptime_event<'a>(mut f: impl Iterator<Item = &'a str>) -> Option<Event> {
    let ns = f.next()?.parse::<u64>().ok()?;
    f.next().is_none().then_some(Event::Uptime { ns })
}

/// `C`: the eight counters, read up to the first that is not a number.
fn cpu_event<'a>(f: impl Iterator<Item = &'a str>) -> Option<Event> {
    let v: Vec<u64> = f.map_while(|x| x.parse().ok()).collect();
    let [user, nice, system, idle, iowait, irq, softirq, steal] = v[..] else {
        return None;
    };
    Some(Event::Cpu(CpuTimes {
        user,
        nice,
        system,
        idle,
        iowait,
        irq,
        softirq,
        steal,
    }))
}

fn identity_event<'a>(mut f: impl Iterator<Item = &'a str>) -> Option<Event> {
    let (major, minor) = f.next().and_then(crate::sys::device::parse_dev_t)?;
    let (Some(name), Some(id), None) = (f.next(), f.next(), f.next()) else {
        return None;
    };
    Some(Event::Identity {
        major,
        minor,
        name: name.to_string(),
        id: id.to_string(),
    })
}

/// `D`: split on single spaces, the display name being the rest of the line. `None` when the
/// form is wrong; an error when only the kind is unknown.
fn device_event(n: usize, t: &str) -> Result<Option<Event>, ParseError> {
    let mut g = t.splitn(5, ' ').skip(1);
    let dev = g.next().and_then(crate::sys::device::parse_dev_t);
    let name = g.next().filter(|s| !s.is_empty());
    let kind = g.next();
    let display = g.next().filter(|s| !s.is_empty());
    let (Some((major, minor)), Some(name), Some(kind), Some(display)) = (dev, name, kind, display)
    else {
        return Ok(None);
    };
    let kind = match kind {
        "-" => None,
        k => Some(DevKind::parse(k).ok_or_else(|| err(n, format!("unknown device kind '{k}'")))?),
    };
    Ok(Some(Event::Device {
        major,
        minor,
        name: name.to_string(),
        meta: DeviceMeta {
            kind,
            display_name: display.to_string(),
        },
    }))
}

/// Puts classified lines together: the open sample gathers the diskstats lines that follow
/// its stamp until the next element closes it; each element keeps the line it starts at.
#[derive(Default)]
struct Assembler {
    events: Vec<(usize, Event)>,
    source: Option<Source>,
    open: Option<(usize, RawSample)>,
}

impl Assembler {
    fn push(&mut self, n: usize, line: Line<'_>) -> Result<(), ParseError> {
        match line {
            Line::Skip => {}
            Line::Stats(t) => self.stats(n, t)?,
            Line::Stamp(source, sample) => {
                self.set_source(source, n)?;
                let sample = sample?;
                self.close();
                self.open = Some((n, sample));
            }
            Line::Event(ev) => {
                self.close();
                self.events.push((n, ev));
            }
        }
        Ok(())
    }

    /// A diskstats line joins the open sample, verbatim, once it parses.
    fn stats(&mut self, n: usize, t: &str) -> Result<(), ParseError> {
        let Some((_, s)) = self.open.as_mut() else {
            return Err(err(n, "diskstats line before the first 'T' or 'TS' line"));
        };
        // A pre-2.6.25 partition line is valid: the sample's parser skips it with a warning.
        if old_partition(t).is_none() {
            parse_line(t).map_err(|r| err(n, format!("bad diskstats line: {r}")))?;
        }
        s.text.push_str(t);
        s.text.push('\n');
        Ok(())
    }

    fn set_source(&mut self, s: Source, n: usize) -> Result<(), ParseError> {
        match self.source {
            Some(x) if x != s => Err(err(n, "mixes iosat 'T' and pt-diskstats 'TS' samples")),
            _ => {
                self.source = Some(s);
                Ok(())
            }
        }
    }

    fn close(&mut self) {
        if let Some((at, s)) = self.open.take() {
            self.events.push((at, Event::Sample(s)));
        }
    }

    /// The elements, once every line is in; `last_line` is where a file without samples fails.
    fn finish(mut self, last_line: usize) -> Result<(Vec<(usize, Event)>, Source), ParseError> {
        self.close();
        let Some(source) = self.source else {
            return Err(err(
                last_line,
                "no samples (no 'T' or 'TS' line): not an iosat recording or pt-diskstats file",
            ));
        };
        Ok((self.events, source))
    }
}

/// A histogram's non-zero buckets as `i=count`, comma-separated (the per-op and the per-class
/// tokens of a `B` line alike).
fn push_buckets(s: &mut String, buckets: &[u64]) {
    for (n, (i, c)) in buckets
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .enumerate()
    {
        if n > 0 {
            s.push(',');
        }
        s.push_str(&format!("{i}={c}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_lines_roundtrip() {
        use crate::sys::bpf::{DevHists, RawHist, NBUCKETS};
        let mut h = RawHist {
            buckets: vec![0; NBUCKETS],
            sum_ns: 123_456_789,
        };
        h.buckets[3] = 7;
        h.buckets[NBUCKETS - 1] = 1;
        let zero = RawHist {
            buckets: vec![0; NBUCKETS],
            sum_ns: 0,
        };
        let mut b = BlkSample {
            dropped: 2,
            devs: vec![DevHists {
                major: 259,
                minor: 1,
                ops: [zero.clone(), zero.clone(), zero.clone(), h],
                classes: Default::default(),
                split: Default::default(),
            }],
        };
        let line = format_latency(&b);
        assert_eq!(line, "B 2 259:1/f/123456789/3=7,215=1\n");
        let (ev, _) = parse(&format!("{HEADER}{line}T 1 2\n")).unwrap();
        assert_eq!(ev[0], Event::Latency(b.clone()));
        // Size classes: reads' medium class, writes' large one.
        let c = &mut b.devs[0].classes;
        c[0][1].buckets[40] = 3;
        c[0][1].sum_ns = 9_000_000;
        c[0][1].bytes = 3 * 65536;
        c[1][2].buckets[0] = 1;
        c[1][2].sum_ns = 100;
        c[1][2].bytes = 1 << 20;
        let line = format_latency(&b);
        assert_eq!(
            line,
            "B 2 259:1/f/123456789/3=7,215=1 259:1/rm/9000000/196608/40=3 \
             259:1/wl/100/1048576/0=1\n"
        );
        let (ev, _) = parse(&format!("{HEADER}{line}T 1 2\n")).unwrap();
        assert_eq!(ev[0], Event::Latency(b.clone()));
        // Queue and device time of reads; a write without issue stamps.
        let sp = &mut b.devs[0].split;
        sp[0].queue.buckets[10] = 4;
        sp[0].queue.sum_ns = 5000;
        sp[0].device.buckets[60] = 4;
        sp[0].device.sum_ns = 9_000_000;
        sp[1].unsplit = 2;
        let line = format_latency(&b);
        assert!(
            line.ends_with(" 259:1/rQ/5000/0/10=4 259:1/rD/9000000/60=4 259:1/wQ/0/2/\n"),
            "{line}"
        );
        let (ev, _) = parse(&format!("{HEADER}{line}T 1 2\n")).unwrap();
        assert_eq!(ev[0], Event::Latency(b));
        // A recording from before the split reads with none.
        let (ev, _) = parse("#iosat-record 1\nB 0 8:0/r/1/1=1\nT 1 2\n").unwrap();
        assert!(matches!(&ev[0], Event::Latency(b) if b.devs[0].split[0].unsplit == 0));
        for bad in [
            "B 0 8:0/xQ/1/1/",
            "B 0 8:0/rQ/1/",
            "B 0 8:0/rQ/1/x/1=1",
            "B 0 8:0/rD/1/999=1",
        ] {
            assert!(parse(&format!("{bad}\nT 1 2\n")).is_err(), "{bad}");
        }
        for bad in [
            "B 0 8:0/rx/1/1/",
            "B 0 8:0/dm/1/1/",
            "B 0 8:0/rs/1/",
            "B 0 8:0/rs/1/1/108=1",
        ] {
            assert!(parse(&format!("{bad}\nT 1 2\n")).is_err(), "{bad}");
        }
        let (ev, _) = parse("B 0\nT 1 2\n").unwrap();
        assert_eq!(ev[0], Event::Latency(BlkSample::default()));
        for bad in ["B", "B x", "B 0 8:0/q/1/", "B 0 8:0/r/1/999=1", "B 0 8:0/r"] {
            assert!(parse(&format!("{bad}\nT 1 2\n")).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_declared_cap_roundtrips_and_a_bad_one_names_its_line() {
        let cap = DeclaredCap {
            iops: Some(1000.0),
            write_bytes_per_s: Some(131_072_000.0),
            read_iops: Some(62.5),
            ..Default::default()
        };
        let line = format_cap("/dev/mapper/vg0 data", &cap);
        assert_eq!(
            line,
            "K iops=1000,read_iops=62.5,write_bytes_per_s=131072000 /dev/mapper/vg0 data\n"
        );
        let (ev, _) = parse(&format!("{line}T 1 2\n")).unwrap();
        assert_eq!(
            ev[0],
            Event::Cap {
                dev: "/dev/mapper/vg0 data".into(),
                cap
            }
        );
        for bad in [
            "K iops=1000",
            "K iops=0 sda",
            "K iops=-3 sda",
            "K speed=3 sda",
            "K iops sda",
            "K  sda",
        ] {
            let e = parse(&format!("R 1 1\n{bad}\n")).unwrap_err();
            assert_eq!(e.line, 2, "{bad}");
            assert!(e.reason.contains("'K <key>="), "{bad}: {}", e.reason);
        }
    }

    #[test]
    fn a_runs_selection_roundtrips_and_a_bad_one_names_its_line() {
        let sel = super::super::select::Selection {
            patterns: vec!["loop0".into(), "nvme*".into(), "vg0 data".into()],
            partitions: true,
            all: false,
        };
        let line = format_event(&Event::Selection(sel.clone()));
        assert_eq!(
            line,
            "#S {\"patterns\":[\"loop0\",\"nvme*\",\"vg0 data\"],\"partitions\":true,\"all\":false}\n"
        );
        let (ev, _) = parse(&format!("R 1 1\n{line}T 1 2\n")).unwrap();
        assert_eq!(ev[1], Event::Selection(sel));
        for bad in [
            "#S",
            "#S {",
            "#S {\"patterns\":[\"\"],\"partitions\":false,\"all\":false}",
            "#S {\"patterns\":[\"a\\u0007b\"],\"partitions\":false,\"all\":false}",
            "#S {\"patterns\":\"sda\",\"partitions\":false,\"all\":false}",
            "#S {\"patterns\":[],\"partitions\":1,\"all\":false}",
        ] {
            let Err(e) = parse(&format!("R 1 1\n{bad}\nT 1 2\n")) else {
                // "#S" alone is a comment (no blank after the marker), as "#G" alone is.
                assert_eq!(bad, "#S");
                continue;
            };
            assert_eq!(e.line, 2, "{bad}");
            assert!(e.reason.contains("'#S {"), "{bad}: {}", e.reason);
        }
        let long = format!(
            "#S {{\"patterns\":[\"{}\"],\"partitions\":false,\"all\":false}}",
            "a".repeat(256)
        );
        assert!(parse(&format!("{long}\nT 1 2\n")).is_err());
    }

    #[test]
    fn roundtrip() {
        let raw = RawSample {
            mono_ns: 5_000_000_123,
            wall_ns: 1_763_000_000_000_000_000,
            text: "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n 253 0 dm-0 1 2 3 4 5 6 7 8 9 10 11 0 0 0 0 0 0\n"
                .into(),
        };
        let meta = DeviceMeta {
            kind: Some(DevKind::Dm),
            display_name: "vg0-root".into(),
        };
        let text = format!(
            "{HEADER}{}{}{}",
            format_run(1, 1_000_000_000),
            format_device(253, 0, "dm-0", &meta),
            format_sample(&raw)
        );
        let text = text.replace(
            "T 5",
            &format!(
                "{}{}T 5",
                format_identity(8, 0, "sda", "naa.5000c5"),
                format_uptime(86_400_000_000_000)
            ),
        );
        let (mut ev, src) = parse(&text).unwrap();
        assert_eq!(src, Source::Iosat);
        assert_eq!(
            ev.remove(3),
            Event::Uptime {
                ns: 86_400_000_000_000
            }
        );
        let cpu = CpuTimes {
            user: 1,
            nice: 2,
            system: 3,
            idle: 4,
            iowait: 5,
            irq: 6,
            softirq: 7,
            steal: 8,
        };
        let (c, _) = parse(&format!("{}T 1 2\n", format_cpu(&cpu))).unwrap();
        assert_eq!(c[0], Event::Cpu(cpu));
        assert!(parse("C 1 2 3\nT 1 2\n")
            .unwrap_err()
            .reason
            .contains("'C <user>"));
        assert!(parse("U 1 2\nT 1 2\n")
            .unwrap_err()
            .reason
            .contains("'U <uptime_ns>'"));
        assert_eq!(ev.len(), 4);
        assert_eq!(
            ev[1],
            Event::Device {
                major: 253,
                minor: 0,
                name: "dm-0".into(),
                meta
            }
        );
        assert_eq!(
            ev[2],
            Event::Identity {
                major: 8,
                minor: 0,
                name: "sda".into(),
                id: "naa.5000c5".into()
            }
        );
        assert_eq!(ev[3], Event::Sample(raw));
        assert!(parse("I 8:0 sda\nT 1 2\n")
            .unwrap_err()
            .reason
            .contains("'I <major>"));
    }

    #[test]
    fn pt_stalk_ts_lines() {
        let text = "TS 1344561790.012145298 2012-08-09 21:23:10\n 202 0 xvda 1 2 3 4 5 6 7 8 9 10 11\nTS 1344561791.5 2012-08-09 21:23:11\n 202 0 xvda 2 2 3 4 5 6 7 8 9 10 11\n";
        let (ev, src) = parse(text).unwrap();
        assert_eq!(src, Source::PtDiskstats);
        let Event::Sample(a) = &ev[0] else { panic!() };
        let Event::Sample(b) = &ev[1] else { panic!() };
        assert_eq!(a.wall_ns, 1_344_561_790_012_145_298);
        assert_eq!(b.mono_ns - a.mono_ns, 1_487_854_702);
    }

    #[test]
    fn pre_2_6_25_partition_lines_are_valid_and_events_carry_their_line() {
        let text = "TS 10.0 x\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n 8 1 sda1 5024 46400 6662 13324\nTS 11.0 x\n";
        let (ev, _) = parse_numbered(text).unwrap();
        assert_eq!(ev.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 4]);
        let Event::Sample(s) = &ev[0].1 else { panic!() };
        assert!(s.text.contains("sda1 5024"));
    }

    #[test]
    fn malformed_lines_name_the_line() {
        let e = parse("#iosat-record 1\nT 1 2\n 8 0 sda 1 2 3\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.reason.contains("bad diskstats line"), "{}", e.reason);
        let e = parse("T 1 x\n").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse("T 1 2\nhello world\n").unwrap_err();
        assert!(e.reason.contains("'hello'"), "{}", e.reason);
        let e = parse(" 8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse("# only a comment\n").unwrap_err();
        assert!(e.reason.contains("no samples"));
        let e = parse("T 1 2\nTS 3\n").unwrap_err();
        assert_eq!(e.line, 2);
    }
}
