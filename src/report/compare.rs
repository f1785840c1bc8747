//! `iosat compare`: two or more saved results of one kind (sweeps, analyses, fsync runs; two
//! devices, or one device before and after a change) side by side: one table, the verdicts'
//! differences in words ("knee 8 → 16, max useful IOPS +85 %, baseline unchanged"), and an
//! HTML page with the runs' curves overlaid: one document (text, Markdown and the page are its
//! writers), CSV and JSON. Pure: takes typed reports, returns strings; no IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::doc::{self, Block, Doc, List, TableBlock};
use super::levels::us_cell;
use super::svg::{DotChart, LineChart, Series};
use super::table::Table;
use super::{Format, Report};
use crate::analysis::{LevelPoint, Verdict};
use crate::fsync::report::{CaseResult, LatencySummary};
use crate::fsync::FsyncReport;
use crate::import::report::AnalyzeReport;
use crate::load::result::SweepReport;
use crate::units::ms;
use serde::Serialize;

/// A change smaller than this share counts as "unchanged" in words: the repeat-to-repeat
/// noise of a sweep level on a quiet machine is a few percent (the sub-window spread iosat
/// measures), so smaller differences say nothing about the device.
pub const UNCHANGED_SHARE: f64 = 0.05;

/// Version of `compare --json`'s layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// One result to compare, with the name it goes by (its file name).
#[derive(Debug, Clone)]
pub struct Run {
    pub label: String,
    pub report: Report,
}

/// What was measured and where, as (label, value) rows: each kind's context table.
pub fn context_rows(r: &Report) -> Vec<(&'static str, String)> {
    match r {
        Report::Sweep(s) => super::sweep::context(s),
        Report::Analyze(a) => super::analyze::context(a),
        Report::Fsync(f) => super::fsync::context(f),
        Report::Stat { devices, idle } => super::stat::context(devices, idle),
    }
}

/// The kind of a result, in the words of the refusal and the page title.
pub fn kind(r: &Report) -> &'static str {
    match r {
        Report::Sweep(_) => "sweep",
        Report::Analyze(_) => "analyze",
        Report::Fsync(_) => "fsync",
        Report::Stat { .. } => "stat recording",
    }
}

/// The kind with its article: "a sweep", "an fsync", "an analyze".
pub fn a_kind(r: &Report) -> String {
    let k = kind(r);
    let an = matches!(
        k.as_bytes().first(),
        Some(b'a' | b'e' | b'i' | b'o' | b'u' | b'f')
    );
    format!("{} {k}", if an { "an" } else { "a" })
}

/// What can stand beside what: a sweep and an analysis with levels (fio or sysbench runs at
/// several depths, the first thing a benchmarker sets beside a sweep) are both levels by
/// concurrency; otherwise the kind.
fn family(r: &Report) -> &'static str {
    match r {
        Report::Sweep(_) => "levels",
        Report::Analyze(a) if !a.levels.is_empty() => "levels",
        other => kind(other),
    }
}

/// The first run that cannot stand beside the first run, if any (mixed kinds are refused,
/// but for a sweep beside an analysis with levels).
pub fn mixed(runs: &[Run]) -> Option<usize> {
    let first = family(&runs.first()?.report);
    runs.iter().position(|r| family(&r.report) != first)
}

/// "iosat's sweep" or "fio's runs" (the analysis' tool): who generated a run's levels.
fn generator(r: &Report) -> String {
    match r {
        Report::Analyze(a) => format!("{}'s runs", a.source.tool.name()),
        _ => format!("iosat's {}", kind(r)),
    }
}

/// Letters the table columns use for the runs: A, B, C, … (the page and text say which file
/// each is).
fn letter(i: usize) -> String {
    let c = (b'A' + (i % 26) as u8) as char;
    if i < 26 {
        c.to_string()
    } else {
        format!("{c}{}", i / 26)
    }
}

/// The levels of a sweep or analysis as compare sees them.
struct Levels {
    points: Vec<LevelPoint>,
    verdict: Option<Verdict>,
}

fn levels_of(r: &Report) -> Option<Levels> {
    match r {
        Report::Sweep(s) => Some(Levels {
            points: s.points(),
            // A sweep saved without its verdict (edited, hand-made) is judged as the sweep
            // judges its levels.
            verdict: s.verdict.clone().or_else(|| {
                let mut again = (**s).clone();
                again.refresh_verdict();
                again.verdict
            }),
        }),
        Report::Analyze(a) => Some(Levels {
            points: a.points(),
            verdict: a.verdict.clone(),
        }),
        _ => None,
    }
}

/// The relative change b against a as "+85 %", "−12 %", or "unchanged".
fn change(a: f64, b: f64) -> String {
    if !(a.is_finite() && b.is_finite()) || a == 0.0 {
        return "-".into();
    }
    let d = b / a - 1.0;
    if d.abs() < UNCHANGED_SHARE {
        "unchanged".into()
    } else {
        format!(
            "{}{:.0} %",
            if d > 0.0 { "+" } else { "−" },
            d.abs() * 100.0
        )
    }
}

fn opt_u32(v: Option<u32>) -> String {
    v.map_or("none".into(), |n| n.to_string())
}

/// The verdict of `b` against `a` in words: what moved and by how much.
pub fn verdict_change(a: &Verdict, b: &Verdict) -> String {
    let mut parts = Vec::new();
    if a.too_few_levels || b.too_few_levels {
        return "a verdict needs at least two levels in both results".into();
    }
    parts.push(if a.knee_concurrency == b.knee_concurrency {
        format!("knee unchanged ({})", a.knee_concurrency)
    } else {
        format!("knee {} → {}", a.knee_concurrency, b.knee_concurrency)
    });
    parts.push(
        match change(a.max_useful_iops, b.max_useful_iops).as_str() {
            "unchanged" => format!("max useful IOPS unchanged ({:.0})", a.max_useful_iops),
            c => format!(
                "max useful IOPS {c} ({:.0} → {:.0})",
                a.max_useful_iops, b.max_useful_iops
            ),
        },
    );
    parts.push(
        match change(a.baseline_latency_ns, b.baseline_latency_ns).as_str() {
            "unchanged" => "baseline unchanged".to_string(),
            c => format!(
                "baseline {c} ({} → {})",
                ms(a.baseline_latency_ns, 3),
                ms(b.baseline_latency_ns, 3)
            ),
        },
    );
    if a.overload_concurrency != b.overload_concurrency {
        parts.push(format!(
            "overload {} → {}",
            opt_u32(a.overload_concurrency),
            opt_u32(b.overload_concurrency)
        ));
    }
    match change(a.peak_iops, b.peak_iops).as_str() {
        "unchanged" | "-" => {}
        c => parts.push(format!("peak IOPS {c}")),
    }
    parts.join(", ")
}

/// The lines saying what changed from the first run to each other one.
pub fn differences(runs: &[Run]) -> Vec<String> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, r) in runs.iter().enumerate().skip(1) {
        let head = format!("{} against {}", letter(i), letter(0));
        if let (Report::Sweep(a), Report::Sweep(b)) = (&first.report, &r.report) {
            if let Some(w) = super::open::compare_words(a, b) {
                out.push(format!("{head}: {w}"));
                if a.levels.is_empty() || b.levels.is_empty() {
                    continue;
                }
            }
        }
        match (&first.report, &r.report) {
            (Report::Fsync(a), Report::Fsync(b)) => {
                for l in fsync_changes(a, b) {
                    out.push(format!("{head}: {l}"));
                }
            }
            (x, y) => match (
                levels_of(x).and_then(|l| l.verdict),
                levels_of(y).and_then(|l| l.verdict),
            ) {
                (Some(va), Some(vb)) => out.push(format!("{head}: {}", verdict_change(&va, &vb))),
                _ => match (x, y) {
                    (Report::Analyze(a), Report::Analyze(b)) => {
                        for l in device_changes(a, b) {
                            out.push(format!("{head}: {l}"));
                        }
                    }
                    _ => out.push(format!("{head}: no verdict to compare (no levels)")),
                },
            },
        }
    }
    out
}

/// What a sweep's figures depend on beside the device's state, as (name, value): a run that
/// differs from the first in one of them measured something else.
fn sweep_terms(s: &SweepReport) -> Vec<(&'static str, String)> {
    let (w, t) = (&s.workload, &s.target);
    let arrival = match (s.levels.is_empty(), s.open_levels.is_empty()) {
        (false, true) => "closed loop (fixed concurrency)",
        (true, false) => "open loop (--rate)",
        (false, false) => "closed and open loop",
        (true, true) => "none",
    };
    vec![
        (
            "device",
            t.disk_device.clone().unwrap_or_else(|| "unknown".into()),
        ),
        (
            "pattern",
            if w.pattern == "randrw" {
                format!("randrw {} % reads", w.read_pct)
            } else {
                w.pattern.clone()
            },
        ),
        ("block size", crate::units::block_size(w.block_size)),
        ("engine", w.engine.clone()),
        ("O_DIRECT", if w.direct { "on" } else { "off" }.into()),
        ("arrival process", arrival.into()),
        ("iosat version", s.envelope.iosat_version.clone()),
    ]
}

/// Why a sweep's verdict is shaken, in a few words ("concurrency 4 and 8 disturbed; the
/// baseline drifted +60 %"); None for a quiet run.
fn shaken_words(v: &Verdict) -> Option<String> {
    if !v.shaken() {
        return None;
    }
    let mut why = Vec::new();
    if !v.disturbed_levels.is_empty() {
        why.push(format!(
            "concurrency {} disturbed",
            crate::analysis::confidence::list(&v.disturbed_levels)
        ));
    }
    if let Some(d) = v.baseline_drift.as_ref().filter(|d| d.shaken()) {
        let pct = d.change_rel() * 100.0;
        why.push(if d.first_stalled {
            format!("the first baseline stalled ({pct:+.0} % against its re-measure)")
        } else if d.drifted {
            format!("the baseline drifted {pct:+.0} %")
        } else {
            format!("the baseline's two measurements differ {pct:+.0} %")
        });
    }
    Some(why.join("; "))
}

/// What makes the runs incomparable, said before any number: a run that was disturbed or
/// whose baseline did not hold (its differences may be the disturbance, not the device), and
/// each run that differs from the first in device, pattern, block size, engine, O_DIRECT,
/// arrival process or iosat version. Empty when the runs are like for like.
pub fn caveats(runs: &[Run]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let v = levels_of(&r.report).and_then(|l| l.verdict);
        if let Some(w) = v.as_ref().and_then(shaken_words) {
            out.push(format!(
                "{} was disturbed ({w}): its figures hold the disturbance, so a difference to it \
                 may be the machine's or the moment's, not the device's.",
                letter(i)
            ));
        }
    }
    // Levels of another generator: set side by side by concurrency, each tool's own latency.
    if let Some(first) = runs.first() {
        for (i, r) in runs.iter().enumerate().skip(1) {
            let (a, b) = (generator(&first.report), generator(&r.report));
            if kind(&r.report) != kind(&first.report) || a != b {
                out.push(format!(
                    "{} is {b} and {} is {a}: the levels are set side by side by concurrency, but \
                     the generators differ (how requests are issued, the time per level, what \
                     latency each one counts), so part of a difference is theirs.",
                    letter(i),
                    letter(0),
                ));
            }
        }
    }
    let Some(Report::Sweep(first)) = runs.first().map(|r| &r.report) else {
        return out;
    };
    let a = sweep_terms(first);
    for (i, r) in runs.iter().enumerate().skip(1) {
        let Report::Sweep(s) = &r.report else {
            continue;
        };
        let diff: Vec<String> = sweep_terms(s)
            .into_iter()
            .zip(&a)
            .filter(|((_, vb), (_, va))| vb != va)
            .map(|((k, vb), (_, va))| format!("{k} {vb} against {va}"))
            .collect();
        if !diff.is_empty() {
            out.push(format!(
                "{} is not like {} — {}: the runs measured different things, so their figures \
                 differ for that reason too.",
                letter(i),
                letter(0),
                diff.join("; ")
            ));
        }
    }
    out
}

/// Which file each letter is, with what it measured (from the context header).
fn legend_lines(runs: &[Run]) -> Vec<String> {
    runs.iter()
        .enumerate()
        .map(|(i, r)| {
            let what: Vec<String> = context_rows(&r.report)
                .into_iter()
                .filter(|(k, _)| {
                    matches!(
                        *k,
                        "device" | "pattern" | "block size" | "engine" | "directory" | "source"
                    )
                })
                .map(|(_, v)| v)
                .collect();
            if what.is_empty() {
                format!("{} = {}", letter(i), r.label)
            } else {
                format!("{} = {} ({})", letter(i), r.label, what.join(", "))
            }
        })
        .collect()
}

/// Every concurrency any run measured, ascending.
fn all_concurrencies<'a>(ls: impl Iterator<Item = &'a Levels>) -> Vec<u32> {
    let mut cs: Vec<u32> = ls
        .flat_map(|l| l.points.iter().map(|p| p.concurrency))
        .collect();
    cs.sort_unstable();
    cs.dedup();
    cs
}

/// Levels side by side: per concurrency, each run's IOPS, mean and p95 latency (µs), and with
/// two runs the change in IOPS.
fn levels_table(ls: &[Levels]) -> Table {
    let mut h = vec!["conc".to_string()];
    for i in 0..ls.len() {
        h.push(format!("IOPS_{}", letter(i)));
    }
    if ls.len() == 2 {
        h.push("IOPS_B/A".into());
    }
    for i in 0..ls.len() {
        h.push(format!("avg_us_{}", letter(i)));
    }
    for i in 0..ls.len() {
        h.push(format!("p95_us_{}", letter(i)));
    }
    let mut t = Table::new(h);
    for c in all_concurrencies(ls.iter()) {
        let at: Vec<Option<&LevelPoint>> = ls
            .iter()
            .map(|l| l.points.iter().find(|p| p.concurrency == c))
            .collect();
        let mut row = vec![c.to_string()];
        row.extend(
            at.iter()
                .map(|p| p.map_or("-".into(), |p| format!("{:.0}", p.iops))),
        );
        if ls.len() == 2 {
            row.push(match (at[0], at[1]) {
                (Some(a), Some(b)) => change(a.iops, b.iops),
                _ => "-".into(),
            });
        }
        row.extend(at.iter().map(|p| us_cell(p.map(|p| p.latency_ns.mean))));
        row.extend(at.iter().map(|p| us_cell(p.and_then(|p| p.latency_ns.p95))));
        t.push(row);
    }
    t
}

/// The verdicts side by side, one row per finding.
fn verdicts_table(ls: &[Levels]) -> Table {
    let mut h = vec!["finding".to_string()];
    h.extend((0..ls.len()).map(letter));
    let mut t = Table::new(h);
    t.right[0] = false;
    type Cell = fn(&Verdict) -> String;
    let rows: [(&str, Cell); 6] = [
        ("baseline avg (µs)", |v| {
            us_cell(Some(v.baseline_latency_ns))
        }),
        ("baseline p95 (µs)", |v| us_cell(v.baseline_p95_ns)),
        ("knee", |v| v.knee_concurrency.to_string()),
        ("max useful IOPS", |v| format!("{:.0}", v.max_useful_iops)),
        ("peak IOPS", |v| format!("{:.0}", v.peak_iops)),
        ("overload (3x p95)", |v| opt_u32(v.overload_concurrency)),
    ];
    for (name, f) in rows {
        let mut row = vec![name.to_string()];
        row.extend(ls.iter().map(|l| {
            l.verdict
                .as_ref()
                .filter(|v| !v.too_few_levels)
                .map_or("-".into(), f)
        }));
        t.push(row);
    }
    t
}

/// An fsync case's key: method, size, mode.
fn case_key(c: &CaseResult) -> String {
    format!(
        "{} {} {}",
        c.method.name(),
        crate::units::block_size(u64::from(c.size)),
        c.mode.name()
    )
}

/// A `--like` entry's key: setting, pattern, writes per commit ("fdatasync commit x1").
fn like_key(e: &crate::fsync::like::LikeEntry) -> String {
    format!("{} {} x{}", e.method, e.pattern.name(), e.writes_per_commit)
}

/// Every case key any run measured (its `--like` settings too), in first-seen order.
fn case_keys(rs: &[&FsyncReport]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for r in rs {
        let like = r.like.iter().flat_map(|l| l.entries.iter().map(like_key));
        for k in r.cases.iter().map(case_key).chain(like) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys
}

/// The commit latency of the case (or `--like` setting) `key` of a run.
fn case<'a>(r: &'a FsyncReport, key: &str) -> Option<&'a LatencySummary> {
    r.cases
        .iter()
        .find(|c| case_key(c) == key)
        .map(|c| &c.latency_ns)
        .or_else(|| {
            let l = r.like.as_ref()?;
            l.entries
                .iter()
                .find(|e| like_key(e) == key)
                .map(|e| &e.latency_ns)
        })
}

/// fsync cases side by side: mean and p99 commit latency (µs) per run, the change in mean.
fn fsync_table(rs: &[&FsyncReport]) -> Table {
    let mut h = vec!["case".to_string()];
    h.extend((0..rs.len()).map(|i| format!("avg_us_{}", letter(i))));
    if rs.len() == 2 {
        h.push("avg_B/A".into());
    }
    h.extend((0..rs.len()).map(|i| format!("p99_us_{}", letter(i))));
    let mut t = Table::new(h);
    t.right[0] = false;
    for k in case_keys(rs) {
        let at: Vec<Option<&LatencySummary>> = rs.iter().map(|r| case(r, &k)).collect();
        let mut row = vec![k.clone()];
        row.extend(at.iter().map(|c| us_cell(c.map(|c| c.mean as f64))));
        if rs.len() == 2 {
            row.push(match (at[0], at[1]) {
                (Some(a), Some(b)) => change(a.mean as f64, b.mean as f64),
                _ => "-".into(),
            });
        }
        row.extend(at.iter().map(|c| us_cell(c.map(|c| c.p99 as f64))));
        t.push(row);
    }
    t
}

/// What changed between two fsync runs, in words.
fn fsync_changes(a: &FsyncReport, b: &FsyncReport) -> Vec<String> {
    let mut out = Vec::new();
    let (fa, fb) = (a.device.flush_verdict, b.device.flush_verdict);
    out.push(if fa == fb {
        format!("flush verdict unchanged ({})", fa.name())
    } else {
        format!("flush verdict {} → {}", fa.name(), fb.name())
    });
    let rec = |r: &FsyncReport| -> Vec<String> {
        r.like
            .iter()
            .flat_map(|l| l.recommendations.iter())
            .map(|x| format!("{} = {}", x.variable, x.value))
            .collect()
    };
    let (ra, rb) = (rec(a), rec(b));
    if !(ra.is_empty() && rb.is_empty()) {
        out.push(if ra == rb {
            format!("recommendation unchanged ({})", ra.join(", "))
        } else {
            format!("recommendation {} → {}", ra.join(", "), rb.join(", "))
        });
    }
    let mut same = 0;
    for k in case_keys(&[a, b]) {
        match (case(a, &k), case(b, &k)) {
            (Some(x), Some(y)) => {
                let (ma, mb) = (x.mean as f64, y.mean as f64);
                match change(ma, mb).as_str() {
                    "unchanged" | "-" => same += 1,
                    c => out.push(format!(
                        "{k}: mean commit {c} ({} → {})",
                        ms(ma, 3),
                        ms(mb, 3)
                    )),
                }
            }
            (Some(_), None) => out.push(format!("{k}: only in {}", "A")),
            (None, Some(_)) => out.push(format!("{k}: only in {}", "B")),
            (None, None) => {}
        }
    }
    if same > 0 {
        out.push(format!(
            "{same} other case{} unchanged (within ±{:.0} %)",
            if same == 1 { "" } else { "s" },
            UNCHANGED_SHARE * 100.0
        ));
    }
    out
}

/// One device series of an analysis in brief: mean requests/s, peak and mean await (ms,
/// over the samples that had I/O), mean %util.
struct DeviceBrief {
    iops: f64,
    peak_await: Option<f64>,
    mean_await: Option<f64>,
    util: Option<f64>,
}

fn brief(d: &crate::import::report::DeviceOut) -> DeviceBrief {
    let n = d.samples.len().max(1) as f64;
    let awaits: Vec<f64> = d
        .samples
        .iter()
        .filter_map(|s| s.effective_await_ms())
        .collect();
    let utils: Vec<f64> = d.samples.iter().filter_map(|s| s.util_pct).collect();
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    DeviceBrief {
        iops: d.samples.iter().map(|s| s.iops()).sum::<f64>() / n,
        peak_await: awaits.iter().copied().reduce(f64::max),
        mean_await: mean(&awaits),
        util: mean(&utils),
    }
}

/// Device series side by side: one row per run and device.
fn devices_table(rs: &[&AnalyzeReport]) -> Table {
    let mut t = Table::new([
        "run",
        "device",
        "samples",
        "mean_req/s",
        "mean_await_ms",
        "peak_await_ms",
        "mean_%util",
    ]);
    t.right[1] = false;
    let o = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.2}"));
    for (i, r) in rs.iter().enumerate() {
        for d in &r.devices {
            let b = brief(d);
            t.push([
                letter(i),
                d.device.clone(),
                d.samples.len().to_string(),
                format!("{:.1}", b.iops),
                o(b.mean_await),
                o(b.peak_await),
                o(b.util),
            ]);
        }
    }
    t
}

/// What changed between two analyses of device series, per device both hold, in words.
fn device_changes(a: &AnalyzeReport, b: &AnalyzeReport) -> Vec<String> {
    let mut out = Vec::new();
    for da in &a.devices {
        let Some(db) = b.devices.iter().find(|d| d.device == da.device) else {
            out.push(format!("{}: only in A", da.device));
            continue;
        };
        let (x, y) = (brief(da), brief(db));
        let mut parts = vec![format!("requests/s {}", change(x.iops, y.iops))];
        if let (Some(p), Some(q)) = (x.mean_await, y.mean_await) {
            parts.push(format!("mean await {} ({p:.2} → {q:.2} ms)", change(p, q)));
        }
        if let (Some(p), Some(q)) = (x.peak_await, y.peak_await) {
            parts.push(format!("peak await {} ({p:.2} → {q:.2} ms)", change(p, q)));
        }
        if let (Some(p), Some(q)) = (x.util, y.util) {
            parts.push(format!("mean %util {p:.1} → {q:.1}"));
        }
        out.push(format!("{}: {}", da.device, parts.join(", ")));
    }
    for db in b
        .devices
        .iter()
        .filter(|d| !a.devices.iter().any(|x| x.device == d.device))
    {
        out.push(format!("{}: only in B", db.device));
    }
    out
}

/// The tables of a comparison (levels and verdicts, or fsync cases).
fn tables(runs: &[Run]) -> Vec<(&'static str, Table)> {
    let fs: Vec<&FsyncReport> = runs
        .iter()
        .filter_map(|r| match &r.report {
            Report::Fsync(f) => Some(f.as_ref()),
            _ => None,
        })
        .collect();
    if !fs.is_empty() {
        return vec![("Commit latency per case", fsync_table(&fs))];
    }
    let ls: Vec<Levels> = runs.iter().filter_map(|r| levels_of(&r.report)).collect();
    let open = super::open::compare_table(&sweeps(runs));
    if let (Some(t), true) = (&open, ls.iter().all(|l| l.points.is_empty())) {
        return vec![("Open loop", t.clone())];
    }
    if ls.iter().all(|l| l.points.is_empty()) {
        let an: Vec<&AnalyzeReport> = runs
            .iter()
            .filter_map(|r| match &r.report {
                Report::Analyze(a) => Some(a.as_ref()),
                _ => None,
            })
            .collect();
        return vec![("Devices", devices_table(&an))];
    }
    let mut v = vec![
        ("Levels", levels_table(&ls)),
        ("Verdicts", verdicts_table(&ls)),
    ];
    v.extend(open.map(|t| ("Open loop", t)));
    v
}

/// The sweep results among the runs, with their letters (for the open-loop table).
fn sweeps(runs: &[Run]) -> Vec<(String, &SweepReport)> {
    runs.iter()
        .enumerate()
        .filter_map(|(i, r)| match &r.report {
            Report::Sweep(s) => Some((letter(i), s.as_ref())),
            _ => None,
        })
        .collect()
}

/// The comparison as JSON: the runs, the tables' rows, the differences.
#[derive(Serialize)]
struct CompareJson<'a> {
    kind: &'static str,
    schema_version: u32,
    iosat_version: &'static str,
    of: &'static str,
    runs: Vec<RunJson<'a>>,
    /// What makes the runs incomparable ([`caveats`]); absent when they are like for like.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    caveats: Vec<String>,
    tables: Vec<TableJson<'a>>,
    differences: Vec<String>,
}

#[derive(Serialize)]
struct RunJson<'a> {
    letter: String,
    label: &'a str,
    context: Vec<(&'static str, String)>,
}

#[derive(Serialize)]
struct TableJson<'a> {
    title: &'a str,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

/// The comparison in `format`.
pub fn render(runs: &[Run], format: Format) -> String {
    let what = match runs.first() {
        Some(f) if runs.iter().any(|r| kind(&r.report) != kind(&f.report)) => "sweep and analyze",
        Some(f) => kind(&f.report),
        None => "sweep",
    };
    let tabs = tables(runs);
    let diffs = differences(runs);
    match format {
        Format::Csv => tabs
            .iter()
            .map(|(_, t)| t.to_csv())
            .collect::<Vec<_>>()
            .join("\n"),
        Format::Json => {
            let doc = CompareJson {
                kind: "compare",
                schema_version: SCHEMA_VERSION,
                iosat_version: env!("CARGO_PKG_VERSION"),
                of: what,
                runs: runs
                    .iter()
                    .enumerate()
                    .map(|(i, r)| RunJson {
                        letter: letter(i),
                        label: &r.label,
                        context: context_rows(&r.report),
                    })
                    .collect(),
                caveats: caveats(runs),
                tables: tabs
                    .iter()
                    .map(|(title, t)| TableJson {
                        title,
                        headers: t.headers.clone(),
                        rows: t.rows.clone(),
                    })
                    .collect(),
                differences: diffs,
            };
            let mut s = serde_json::to_string_pretty(&doc).expect("comparison serialises");
            s.push('\n');
            s
        }
        f => doc::write(&document(runs, what, tabs, diffs), f),
    }
}

/// The comparison as people read it: which file each letter is (on the page their contexts
/// side by side), the differences in words, the overlaid curves, the tables.
fn document(runs: &[Run], what: &str, tabs: Vec<(&str, Table)>, diffs: Vec<String>) -> Doc {
    let mut lead = format!("iosat compare: {} {what} results", runs.len());
    for l in legend_lines(runs) {
        lead.push_str("\n  ");
        lead.push_str(&l);
    }
    let mut blocks = vec![
        Block::ContextTable(context_table(runs)),
        Block::Lead {
            text: lead,
            hang: 4,
        },
    ];
    // Before any number: what makes the runs incomparable.
    let warn = caveats(runs);
    if !warn.is_empty() {
        blocks.push(Block::List(List {
            whole_lines: true,
            ..List::titled("Caveats", doc::items(&warn))
        }));
    }
    blocks.extend(charts(runs));
    for (title, t) in tabs {
        blocks.push(Block::Heading(title.to_string()));
        blocks.push(Block::Table(TableBlock::new(t)));
    }
    blocks.push(Block::List(List {
        verdict: true,
        whole_lines: true,
        ..List::titled("Differences", doc::items(&diffs))
    }));
    let names: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
    Doc {
        title: format!("iosat compare ({what}): {}", names.join(" vs ")),
        md_title: Some(format!("iosat compare: {what}")),
        md_level: 1,
        blocks,
    }
}

/// The context of every run side by side: one row per label, one column per run.
fn context_table(runs: &[Run]) -> Table {
    let ctx: Vec<Vec<(&'static str, String)>> =
        runs.iter().map(|r| context_rows(&r.report)).collect();
    let mut labels: Vec<&'static str> = Vec::new();
    for (k, _) in ctx.iter().flatten() {
        if !labels.contains(k) {
            labels.push(k);
        }
    }
    let mut h = vec![String::new()];
    h.extend(
        runs.iter()
            .enumerate()
            .map(|(i, r)| format!("{}: {}", letter(i), r.label)),
    );
    let mut t = Table::new(h);
    t.right = vec![false; t.headers.len()];
    for l in labels {
        let mut row = vec![l.to_string()];
        row.extend(ctx.iter().map(|c| {
            c.iter()
                .find(|(k, _)| *k == l)
                .map_or("-".into(), |(_, v)| v.clone())
        }));
        t.push(row);
    }
    t
}

/// Sweeps and analyses of levels: throughput, latency and the hockey stick, every run.
fn levels_overlay(runs: &[Run]) -> Vec<Block> {
    let mut body = Vec::new();
    let ls: Vec<(String, Levels)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            levels_of(&r.report).map(|l| (format!("{}: {}", letter(i), r.label), l))
        })
        .collect();
    if ls.iter().any(|(_, l)| !l.points.is_empty()) {
        let ticks: Vec<f64> = all_concurrencies(ls.iter().map(|(_, l)| l))
            .into_iter()
            .map(f64::from)
            .collect();
        let mut tput = LineChart::new(
            "compare-throughput",
            "Throughput vs concurrency",
            "concurrency (requests in flight)",
            "IOPS",
        );
        let mut lat = LineChart::new(
            "compare-latency",
            "Latency vs concurrency (avg solid, p95 dashed)",
            "concurrency (requests in flight)",
            "latency (ms)",
        );
        let mut hs = LineChart::new(
            "compare-hockey",
            "Latency vs throughput (the hockey stick)",
            "IOPS",
            "average latency (ms)",
        );
        tput.x_log = true;
        lat.x_log = true;
        lat.y_log = true;
        hs.y_log = true;
        tput.x_ticks = ticks.clone();
        lat.x_ticks = ticks;
        for (i, (name, l)) in ls.iter().enumerate() {
            let pts = |f: &dyn Fn(&LevelPoint) -> Option<f64>| -> Vec<(f64, f64)> {
                l.points
                    .iter()
                    .filter_map(|p| Some((f64::from(p.concurrency), f(p)?)))
                    .collect()
            };
            tput.series
                .push(Series::new(name.clone(), pts(&|p| Some(p.iops))).colour(i));
            lat.series.push(
                Series::new(
                    format!("{name} avg"),
                    pts(&|p| Some(p.latency_ns.mean / 1e6)),
                )
                .colour(i),
            );
            lat.series.push(
                Series::new(
                    format!("{name} p95"),
                    pts(&|p| p.latency_ns.p95.map(|v| v / 1e6)),
                )
                .colour(i)
                .dashed(),
            );
            let mut h = Series::new(
                name.clone(),
                l.points
                    .iter()
                    .map(|p| (p.iops, p.latency_ns.mean / 1e6))
                    .collect(),
            )
            .colour(i);
            h.labels = l.points.iter().map(|p| p.concurrency.to_string()).collect();
            hs.series.push(h);
        }
        body.push(headed("Throughput", tput.to_svg()));
        body.push(headed("Latency", lat.to_svg()));
        body.push(headed("The hockey stick", hs.to_svg()));
    }
    body
}

/// Device series (analyses of iostat, pt-diskstats, recordings): per device, each run's
/// await over its samples, overlaid.
fn devices_overlay(runs: &[Run]) -> Vec<Block> {
    let mut body = Vec::new();
    let an: Vec<(String, &AnalyzeReport)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match &r.report {
            Report::Analyze(a) if a.levels.is_empty() => {
                Some((format!("{}: {}", letter(i), r.label), a.as_ref()))
            }
            _ => None,
        })
        .collect();
    let mut names: Vec<&str> = Vec::new();
    for d in an.iter().flat_map(|(_, a)| a.devices.iter()) {
        if !names.contains(&d.device.as_str()) {
            names.push(&d.device);
        }
    }
    for name in names {
        let id = name.replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        let mut c = LineChart::new(
            &format!("compare-{id}-await"),
            &format!("{name}: await per sample"),
            "sample (interval number)",
            "await (ms)",
        );
        c.x_gap = Some(1.5);
        for (i, (label, a)) in an.iter().enumerate() {
            if let Some(d) = a.devices.iter().find(|d| d.device == name) {
                let pts: Vec<(f64, f64)> = d
                    .samples
                    .iter()
                    .enumerate()
                    .filter_map(|(j, s)| Some(((j + 1) as f64, s.effective_await_ms()?)))
                    .collect();
                c.series.push(Series::new(label.clone(), pts).colour(i));
            }
        }
        body.push(headed(name, c.to_svg()));
    }
    body
}

/// fsync runs: each case's percentiles per run on one dot chart.
fn fsync_overlay(runs: &[Run]) -> Vec<Block> {
    let mut body = Vec::new();
    let fs: Vec<(String, &FsyncReport)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match &r.report {
            Report::Fsync(f) => Some((letter(i), f.as_ref())),
            _ => None,
        })
        .collect();
    if !fs.is_empty() {
        let reports: Vec<&FsyncReport> = fs.iter().map(|(_, f)| *f).collect();
        let mut rows = Vec::new();
        for k in case_keys(&reports) {
            for (l, f) in &fs {
                if let Some(lt) = case(f, &k) {
                    rows.push((
                        format!("{k} ({l})"),
                        [lt.p50, lt.p95, lt.p99]
                            .iter()
                            .map(|&n| Some(n as f64 / 1e6))
                            .collect(),
                    ));
                }
            }
        }
        let chart = DotChart {
            id: "compare-commit-latency".into(),
            title: "Commit latency per case and run".into(),
            x_label: "latency (ms)".into(),
            x_log: true,
            keys: vec!["p50".into(), "p95".into(), "p99".into()],
            rows,
        };
        body.push(headed("Commit latency", chart.to_svg()));
    }
    body
}

/// The runs' curves overlaid: levels (throughput, latency, the hockey stick), device
/// series (await per sample), fsync cases (commit latency per case and run).
fn charts(runs: &[Run]) -> Vec<Block> {
    let mut body = levels_overlay(runs);
    body.extend(devices_overlay(runs));
    body.extend(fsync_overlay(runs));
    body
}

fn headed(heading: &str, svg: String) -> Block {
    Block::Chart {
        heading: Some(heading.into()),
        svg,
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_in_words() {
        assert_eq!(change(100.0, 185.0), "+85 %");
        assert_eq!(change(100.0, 60.0), "−40 %");
        assert_eq!(change(100.0, 103.0), "unchanged");
        assert_eq!(change(0.0, 3.0), "-");
        assert_eq!(letter(0), "A");
        assert_eq!(letter(27), "B1");
    }
}
