//! The one renderer of the `iosat fsync` result: one document (text, Markdown and the HTML
//! page are its writers), CSV and JSON, all from the typed `FsyncReport`, for the live command
//! and `iosat report` alike (so `iosat fsync --markdown` and `iosat report saved.json --format
//! markdown` print the same bytes). One set of tables: latency per case, the group-commit
//! curve, the device. Only `is_fsync` looks at raw JSON (to recognise the kind before it is
//! read). No IO; imports report/, fsync::report (the type) and units only.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::doc::{self, chart, Block, Doc, Item, List, Mark, TableBlock};
use super::html::{envelope_rows, envelope_tail};
use super::svg::{DotChart, LineChart, Series};
use super::Format;
use crate::fsync::like::{Database, LikeEntry, LikeResult, Pattern};
use crate::fsync::report::*;
use crate::report::table::Table;
use crate::units::block_size;
use crate::units::ms_number;
use serde_json::Value;
use std::fmt::Write as _;

/// True for the JSON `iosat fsync --json` writes.
pub fn is_fsync(doc: &Value) -> bool {
    let kind = |k: &str| doc.get(k).and_then(Value::as_str) == Some("fsync");
    // `command` until schema 2, `kind` from then on (the envelope).
    (kind("kind") || kind("command")) && doc.get("cases").is_some_and(Value::is_array)
}

/// The result in `format`.
pub fn render(r: &FsyncReport, format: Format) -> String {
    match format {
        Format::Csv => csv(r),
        Format::Json => json(r),
        f => doc::write(&document(r), f),
    }
}

/// The run as people read it: what ran, latency per case (charts, table, skipped cases), what
/// one connection can commit, the group-commit curve, the device, the flush-honesty verdict,
/// the warnings, and whether the run was cut short.
pub fn document(r: &FsyncReport) -> Doc {
    let mut blocks = vec![
        Block::Context(context(r)),
        Block::Lead {
            text: format!(
                "iosat fsync: {} ({} s per case, latency in ms; test files removed)",
                r.dir, r.duration_s_per_case
            ),
            hang: 2,
        },
    ];
    // A --like run measures the database's settings, not the methods: its section replaces
    // the per-method one.
    if let Some(l) = &r.like {
        blocks.extend(like_blocks(l));
    }
    if r.like.is_none() || !r.cases.is_empty() {
        blocks.push(Block::Heading("Commit latency per method".into()));
        blocks.extend(case_charts(r));
        blocks.push(Block::Table(marked(cases_table(r), CASES_NARROW)));
        blocks.push(Block::List(List {
            items: skipped_lines(r).map(Item::plain).collect(),
            ..Default::default()
        }));
        blocks.push(Block::List(List::titled(
            "Commit capacity (one connection commits once per latency)",
            doc::items(&capacity_lines(r)),
        )));
    }
    if let Some(g) = &r.group_commit {
        blocks.push(Block::Heading(format!(
            "Group commit ({} of {}, {} s per level)",
            g.method.name(),
            size(g.size),
            r.duration_s_per_case
        )));
        blocks.extend(group_charts(g));
        blocks.push(Block::Table(marked(group_table(g), GROUP_NARROW)));
        blocks.push(Block::List(List {
            items: doc::items(&g.summary),
            indent: true,
            ..Default::default()
        }));
    }
    blocks.push(Block::Heading("Device".into()));
    blocks.push(Block::Table(TableBlock::new(device_table(&r.device))));
    let verdict = r.device.flush_verdict;
    blocks.push(Block::List(List {
        verdict: true,
        warn_title: !matches!(verdict, FlushVerdict::Plausible | FlushVerdict::Unknown),
        ..List::titled(
            format!("Flush honesty: {}", verdict.name()),
            doc::items(&r.device.flush_reasoning),
        )
    }));
    blocks.push(Block::List(List {
        items: r.warnings.iter().map(Item::warning).collect(),
        ..Default::default()
    }));
    if r.interrupted {
        blocks.push(Block::Para(
            "interrupted: the results above are partial".into(),
        ));
    }
    Doc {
        title: format!("iosat fsync: {}", r.dir),
        md_title: None,
        md_level: 2,
        blocks,
    }
}

/// A table with its failed rows marked, `narrow` its 80-column view.
fn marked(t: Table, narrow: &'static [&'static str]) -> TableBlock {
    let marks = t
        .rows
        .iter()
        .map(|row| {
            row.last()
                .is_some_and(|v| v.starts_with("FAILED"))
                .then_some(Mark::Failed)
        })
        .collect();
    TableBlock {
        marks,
        ..TableBlock::new(t).narrow(narrow)
    }
}

/// ns → ms with 3 decimals.
fn opt<T: Copy>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "-".into(), f)
}

fn size(b: u32) -> String {
    block_size(u64::from(b))
}

fn verify_cell(v: VerifyStatus, size_cap: bool, interrupted: bool) -> String {
    let mut s = match v {
        VerifyStatus::Ok => "ok",
        VerifyStatus::Skipped => "skipped",
        VerifyStatus::Failed => "FAILED",
    }
    .to_string();
    if size_cap {
        s.push_str(" (size cap)");
    }
    if interrupted {
        s.push_str(" (interrupted)");
    }
    s
}

/// The JSON name of a verify status (CSV carries the raw value).
fn verify_name(v: VerifyStatus) -> &'static str {
    match v {
        VerifyStatus::Ok => "ok",
        VerifyStatus::Skipped => "skipped",
        VerifyStatus::Failed => "failed",
    }
}

/// One row per case (seed 002's rate and latency, plus percentiles and the device's flush
/// counters); with --target-tps, the connections that target needs.
pub fn cases_table(r: &FsyncReport) -> Table {
    let tps = r.capacity.target_tps;
    let mut head: Vec<String> = [
        "method",
        "mode",
        "size",
        "commits/s",
        "min ms",
        "avg ms",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "p99.9 ms",
        "max ms",
        "flushes",
        "f/s",
        "f_await ms",
    ]
    .map(String::from)
    .into();
    if let Some(t) = tps {
        head.push(format!("conns@{t}tps"));
    }
    head.push("verify".into());
    let mut t = Table::new(head);
    t.right[1] = false;
    let last = t.right.len() - 1;
    t.right[last] = false;
    for c in &r.cases {
        let l = &c.latency_ns;
        let fl = c.device_flushes.as_ref();
        let mut row = vec![
            c.method.name().to_string(),
            c.mode.name().to_string(),
            size(c.size),
            format!("{:.1}", c.commits_per_s),
            ms_number(l.min as f64, 3),
            ms_number(l.mean as f64, 3),
            ms_number(l.p50 as f64, 3),
            ms_number(l.p95 as f64, 3),
            ms_number(l.p99 as f64, 3),
            ms_number(l.p999 as f64, 3),
            ms_number(l.max as f64, 3),
            opt(fl.map(|f| f.flushes), |n| n.to_string()),
            opt(fl.map(|f| f.f_s), |x| format!("{x:.1}")),
            opt(fl.and_then(|f| f.f_await_ms), |x| format!("{x:.3}")),
        ];
        if tps.is_some() {
            row.push(opt(c.connections_for_target_tps, |n| n.to_string()));
        }
        row.push(verify_cell(
            c.verification.verify,
            c.stopped_at_size_cap,
            c.interrupted,
        ));
        t.push(row);
    }
    t
}

/// "PostgreSQL" for the headings.
fn db_title(db: Database) -> &'static str {
    match db {
        Database::Postgres => "PostgreSQL",
        Database::Innodb => "InnoDB",
        Database::Mariadb => "MariaDB",
    }
}

/// "1 write" / "2 writes" of a commit, "batch + 8 pages" of a page flush.
fn pattern_cell(e: &LikeEntry) -> String {
    match e.pattern {
        Pattern::Commit if e.writes_per_commit == 1 => "commit, 1 write".into(),
        Pattern::Commit => format!("commit, {} writes", e.writes_per_commit),
        Pattern::PageFlush => format!(
            "page flush, batch + {} pages",
            e.writes_per_commit.saturating_sub(1)
        ),
    }
}

/// One row per setting measured: how the database opens and syncs, the rate, the
/// percentiles and the flushes the device saw per commit.
pub fn like_table(l: &LikeResult) -> Table {
    let mut t = Table::new([
        "setting",
        "pattern",
        "size",
        "opened as",
        "per s",
        "avg ms",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "max ms",
        "flushes/commit",
        "f_await ms",
        "blk flush p50 ms",
        "blk flush p99 ms",
        "verify",
    ]);
    for i in [0, 1, 3, 14] {
        t.right[i] = false;
    }
    for e in &l.entries {
        let lat = &e.latency_ns;
        let fl = e.device_flushes.as_ref();
        let blk = fl.and_then(|f| f.block_layer.as_ref());
        let mut setting = e.method.clone();
        if !e.durable {
            setting.push_str(" (not durable)");
        }
        t.push([
            setting,
            pattern_cell(e),
            size(e.write_bytes),
            e.access.clone(),
            format!("{:.1}", e.commits_per_s),
            ms_number(lat.mean as f64, 3),
            ms_number(lat.p50 as f64, 3),
            ms_number(lat.p99 as f64, 3),
            ms_number(lat.p999 as f64, 3),
            ms_number(lat.max as f64, 3),
            opt(fl, |f| {
                format!("{:.2}", f.flushes as f64 / e.commits.max(1) as f64)
            }),
            opt(fl.and_then(|f| f.f_await_ms), |x| format!("{x:.3}")),
            opt(blk.and_then(|b| b.p50_ms), |x| format!("{x:.3}")),
            opt(blk.and_then(|b| b.p99_ms), |x| format!("{x:.3}")),
            verify_cell(e.verification.verify, false, e.interrupted),
        ]);
    }
    t
}

/// The columns of the --like table at 80 columns.
const LIKE_NARROW: &[&str] = &["setting", "pattern", "per s", "p50 ms", "p99 ms", "verify"];

/// The --like section: the recommendation first (the verdict box), the chart of p50/p99 per
/// setting, the table, the kernel's evidence per setting, what could not run, the caveats.
fn like_blocks(l: &LikeResult) -> Vec<Block> {
    let mut out = vec![Block::Heading(format!(
        "Like {}: {}",
        db_title(l.database),
        l.variable
    ))];
    let recs: Vec<String> = l.recommendations.iter().map(|r| r.text.clone()).collect();
    out.push(Block::List(List {
        verdict: true,
        ..List::titled(
            "Recommendation",
            if recs.is_empty() {
                doc::items(&["no durable setting was measured".to_string()])
            } else {
                doc::items(&recs)
            },
        )
    }));
    let rows = l
        .entries
        .iter()
        .map(|e| {
            let lat = &e.latency_ns;
            (
                format!("{} ({})", e.method, pattern_cell(e)),
                [lat.p50, lat.p99]
                    .iter()
                    .map(|&n| Some(n as f64 / 1e6))
                    .chain([e.device_flushes.as_ref().and_then(|f| f.f_await_ms)])
                    .collect(),
            )
        })
        .collect();
    let chart = DotChart {
        id: format!("like-{}", l.database.name()),
        title: format!("{} commit latency per setting", db_title(l.database)),
        x_label: "latency (ms)".into(),
        x_log: true,
        keys: vec!["p50".into(), "p99".into(), "device flush (f_await)".into()],
        rows,
    };
    out.push(Block::Chart {
        heading: None,
        svg: chart.to_svg(),
        note: None,
    });
    out.push(Block::Table(marked(like_table(l), LIKE_NARROW)));
    let evidence: Vec<String> = l
        .entries
        .iter()
        .filter(|e| e.pattern == Pattern::PageFlush || e.writes_per_commit == 1)
        .flat_map(|e| {
            e.flush_evidence
                .iter()
                .map(move |x| format!("{}: {x}", e.method))
        })
        .collect();
    out.push(Block::List(List::titled(
        "What the kernel saw per setting",
        doc::items(&evidence),
    )));
    let skipped: Vec<String> = l
        .skipped
        .iter()
        .map(|s| {
            format!(
                "{} ({}) not measured: {}",
                s.method,
                s.pattern.name(),
                s.reason
            )
        })
        .collect();
    out.push(Block::List(List {
        items: doc::items(&skipped),
        ..Default::default()
    }));
    out.push(Block::List(List::titled("Caveats", doc::items(&l.caveats))));
    out
}

/// One row per group-commit level and layout.
pub fn group_table(g: &GroupCommit) -> Table {
    let mut t = Table::new([
        "committers",
        "layout",
        "commits/s",
        "fsyncs/s",
        "commits/fsync",
        "avg ms",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "flushes",
        "verify",
    ]);
    t.right[1] = false;
    t.right[11] = false;
    for l in &g.levels {
        let lat = &l.latency_ns;
        let syncs_per_s = (l.elapsed_ns > 0).then(|| l.syncs as f64 * 1e9 / l.elapsed_ns as f64);
        t.push([
            l.committers.to_string(),
            if l.commit_delay_us > 0 {
                format!(
                    "{} (commit_delay {} µs)",
                    l.layout.name(),
                    l.commit_delay_us
                )
            } else {
                l.layout.name().to_string()
            },
            format!("{:.1}", l.commits_per_s),
            opt(syncs_per_s, |x| format!("{x:.1}")),
            format!("{:.2}", l.commits_per_sync),
            ms_number(lat.mean as f64, 3),
            ms_number(lat.p50 as f64, 3),
            ms_number(lat.p95 as f64, 3),
            ms_number(lat.p99 as f64, 3),
            ms_number(lat.max as f64, 3),
            opt(l.device_flushes.as_ref().map(|f| f.flushes), |n| {
                n.to_string()
            }),
            verify_cell(l.verification.verify, false, l.interrupted),
        ]);
    }
    t
}

/// The device facts as key/value rows.
pub fn device_table(d: &DeviceSection) -> Table {
    let mut t = Table::new(["device", "value"]);
    t.right[1] = false;
    let known = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
    let yes_no = |v: Option<bool>| known(v.map(|b| if b { "yes" } else { "no" }.to_string()));
    let rows = [
        ("name", known(d.name.clone())),
        ("major:minor", known(d.dev.clone())),
        ("model", known(d.model.clone())),
        ("write cache", known(d.write_cache.clone())),
        ("FUA", yes_no(d.fua)),
        ("rotational", yes_no(d.rotational)),
        (
            "logical block size (bytes)",
            known(d.logical_block_size.map(|b| b.to_string())),
        ),
        ("flush verdict", d.flush_verdict.name().to_string()),
    ];
    for (label, value) in rows {
        t.push([label.to_string(), value]);
    }
    t
}

/// What one connection can commit per second with the reference and the fastest durable
/// method (and, with --target-tps, how many connections the target needs).
pub fn capacity_lines(r: &FsyncReport) -> Vec<String> {
    let cap = &r.capacity;
    let mut out = Vec::new();
    for (label, line) in [
        ("write + fsync", &cap.fsync_reference),
        ("fastest durable", &cap.best_durable),
    ] {
        let Some(c) = line else { continue };
        let mut s = format!(
            "{label}: {} {} {}, {} ms per commit → {:.0} commits/s per connection",
            c.method.name(),
            c.mode.name(),
            size(c.size),
            ms_number(c.mean_latency_ns as f64, 3),
            c.per_connection_commits_per_s
        );
        if let (Some(t), Some(n)) = (cap.target_tps, c.connections_for_target_tps) {
            let _ = write!(
                s,
                "; {t} commits/s need at least {n} connection{}",
                if n == 1 { "" } else { "s" }
            );
        }
        out.push(s);
    }
    if out.is_empty() {
        out.push("no durable case measured".into());
    }
    out
}

fn skipped_lines(r: &FsyncReport) -> impl Iterator<Item = String> + '_ {
    r.skipped.iter().map(|k| {
        format!(
            "skipped {} {} {}: {}",
            k.method.name(),
            k.mode.name(),
            size(k.size),
            k.reason
        )
    })
}

/// The cases' columns in 80 columns (`--wide`: min, p50, p95, p99.9, max, flushes, f/s,
/// connections for the target).
const CASES_NARROW: &[&str] = &[
    "method",
    "mode",
    "size",
    "commits/s",
    "avg ms",
    "p99 ms",
    "f_await ms",
    "verify",
];

/// The group-commit levels' columns in 80 columns.
const GROUP_NARROW: &[&str] = &[
    "committers",
    "layout",
    "commits/s",
    "commits/fsync",
    "avg ms",
    "p99 ms",
    "verify",
];

/// CSV: one table, a row per case and per group-commit level, the JSON's raw numbers (ns).
pub fn csv(r: &FsyncReport) -> String {
    let mut t = Table::new([
        "kind",
        "method",
        "mode",
        "size",
        "committers",
        "commits",
        "elapsed_ns",
        "commits_per_s",
        "min_ns",
        "mean_ns",
        "p50_ns",
        "p95_ns",
        "p99_ns",
        "p999_ns",
        "max_ns",
        "device_flushes",
        "f_s",
        "f_await_ms",
        "blk_flush_p50_ms",
        "blk_flush_p99_ms",
        "verify",
        "flush_verdict",
    ]);
    let verdict = r.device.flush_verdict.name();
    let f3 = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x:.3}"));
    // The cells after kind, method, mode and size: what one case or level measured.
    let measured = |committers: u32,
                    commits: u64,
                    elapsed_ns: u64,
                    commits_per_s: f64,
                    l: &LatencySummary,
                    fl: Option<&FlushStats>,
                    verify: VerifyStatus| {
        let mut row = vec![
            committers.to_string(),
            commits.to_string(),
            elapsed_ns.to_string(),
            format!("{commits_per_s:.3}"),
        ];
        row.extend([l.min, l.mean, l.p50, l.p95, l.p99, l.p999, l.max].map(|n| n.to_string()));
        row.push(fl.map_or(String::new(), |f| f.flushes.to_string()));
        row.push(f3(fl.map(|f| f.f_s)));
        row.push(f3(fl.and_then(|f| f.f_await_ms)));
        let blk = fl.and_then(|f| f.block_layer.as_ref());
        row.push(f3(blk.and_then(|b| b.p50_ms)));
        row.push(f3(blk.and_then(|b| b.p99_ms)));
        row.push(verify_name(verify).to_string());
        row.push(verdict.to_string());
        row
    };
    for c in &r.cases {
        let mut row = vec![
            "case".to_string(),
            c.method.name().to_string(),
            c.mode.name().to_string(),
            c.size.to_string(),
        ];
        row.extend(measured(
            1,
            c.commits,
            c.elapsed_ns,
            c.commits_per_s,
            &c.latency_ns,
            c.device_flushes.as_ref(),
            c.verification.verify,
        ));
        t.push(row);
    }
    if let Some(like) = &r.like {
        for e in &like.entries {
            let pattern = match e.pattern {
                Pattern::Commit => format!("commit_{}_writes", e.writes_per_commit),
                Pattern::PageFlush => format!("page_flush_{}_writes", e.writes_per_commit),
            };
            let mut row = vec![
                like.database.name().to_string(),
                e.method.clone(),
                pattern,
                e.write_bytes.to_string(),
            ];
            row.extend(measured(
                1,
                e.commits,
                e.elapsed_ns,
                e.commits_per_s,
                &e.latency_ns,
                e.device_flushes.as_ref(),
                e.verification.verify,
            ));
            t.push(row);
        }
    }
    if let Some(g) = &r.group_commit {
        for l in &g.levels {
            let mut row = vec![
                format!("group_{}", l.layout.name()),
                g.method.name().to_string(),
                "overwrite".to_string(),
                g.size.to_string(),
            ];
            row.extend(measured(
                l.committers,
                l.commits,
                l.elapsed_ns,
                l.commits_per_s,
                &l.latency_ns,
                l.device_flushes.as_ref(),
                l.verification.verify,
            ));
            t.push(row);
        }
    }
    t.to_csv()
}
/// The JSON `iosat fsync --json` prints (schema_version 2), pretty, with a final newline.
pub fn json(r: &FsyncReport) -> String {
    let mut s = serde_json::to_string_pretty(r).expect("an fsync report serialises");
    s.push('\n');
    s
}

/// What was measured and where: the page's context table (compare sets them side by side).
pub fn context(r: &crate::fsync::FsyncReport) -> Vec<(&'static str, String)> {
    let d = &r.device;
    let mut v = vec![("measured", "commit latency (fsync and friends)".to_string())];
    v.extend(envelope_rows(&r.envelope));
    let dev: Vec<String> = [
        d.name.clone(),
        d.model.clone(),
        d.dev.clone().map(|x| format!("dev {x}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !dev.is_empty() {
        v.push(("device", dev.join(", ")));
    }
    v.push(("directory", r.dir.clone()));
    if let Some(wc) = &d.write_cache {
        v.push(("write cache", wc.clone()));
    }
    if let Some(rot) = d.rotational {
        v.push(("rotational", if rot { "yes" } else { "no" }.into()));
    }
    let mut sizes: Vec<u32> = r.cases.iter().map(|c| c.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut methods: Vec<&str> = Vec::new();
    for c in &r.cases {
        if !methods.contains(&c.method.name()) {
            methods.push(c.method.name());
        }
    }
    v.push(("methods", methods.join(", ")));
    v.push((
        "block size",
        sizes
            .iter()
            .map(|&b| block_size(u64::from(b)))
            .collect::<Vec<_>>()
            .join(", "),
    ));
    v.push(("duration", format!("{} s per case", r.duration_s_per_case)));
    v.extend(envelope_tail(&r.envelope));
    v
}

/// Latency per method, one dot chart per mode (rows: method × size), the device's own flush
/// time beside each commit.
fn case_charts(r: &FsyncReport) -> Vec<Block> {
    let mut svgs = Vec::new();
    let mut modes = Vec::new();
    for c in &r.cases {
        if !modes.contains(&c.mode) {
            modes.push(c.mode);
        }
    }
    for mode in modes {
        let rows = r
            .cases
            .iter()
            .filter(|c| c.mode == mode)
            .map(|c| {
                let l = &c.latency_ns;
                // The device's own flush time beside the commit: how much of a commit is
                // the device's flush.
                let flush = c.device_flushes.as_ref().and_then(|f| f.f_await_ms);
                (
                    format!("{} {}", c.method.name(), size(c.size)),
                    [l.p50, l.p95, l.p99]
                        .iter()
                        .map(|&n| Some(n as f64 / 1e6))
                        .chain([flush])
                        .collect(),
                )
            })
            .collect();
        let chart = DotChart {
            id: format!("latency-{}", mode.name()),
            title: format!("Commit latency, {} mode", mode.name()),
            x_label: "latency (ms)".into(),
            x_log: true,
            keys: vec![
                "p50".into(),
                "p95".into(),
                "p99".into(),
                "device flush (f_await)".into(),
            ],
            rows,
        };
        svgs.push(chart.to_svg());
    }
    let note = "device flush (f_await): the mean time the device took to complete a flush \
request over the case (the kernel's f_await); a commit far slower than it waits elsewhere (the \
filesystem journal), one faster than any flush did not reach the device.";
    let n = svgs.len();
    svgs.into_iter()
        .enumerate()
        .map(|(i, svg)| Block::Chart {
            heading: None,
            svg,
            note: (i + 1 == n).then(|| note.to_string()),
        })
        .collect()
}

/// Commits per second and latency against the committers, per layout.
fn group_charts(g: &GroupCommit) -> Vec<Block> {
    let pts = |layout: Layout, f: &dyn Fn(&GroupLevel) -> f64| -> Vec<(f64, f64)> {
        g.levels
            .iter()
            .filter(|l| l.layout == layout)
            .map(|l| (f64::from(l.committers), f(l)))
            .collect()
    };
    let mut tput = LineChart::new(
        "group-throughput",
        "Commits per second vs committers",
        "concurrent committers",
        "commits/s",
    );
    tput.x_log = true;
    let mut latc = LineChart::new(
        "group-latency",
        "Commit latency vs committers",
        "concurrent committers",
        "latency (ms)",
    );
    latc.x_log = true;
    latc.y_log = true;
    // The committer counts measured are the x ticks.
    let mut counts: Vec<f64> = g.levels.iter().map(|l| f64::from(l.committers)).collect();
    counts.sort_by(f64::total_cmp);
    counts.dedup();
    tput.x_ticks = counts.clone();
    latc.x_ticks = counts;
    for (colour, layout) in [Layout::SharedLog, Layout::SeparateFiles]
        .into_iter()
        .enumerate()
    {
        let p = pts(layout, &|l| l.commits_per_s);
        if p.is_empty() {
            continue;
        }
        let name = layout.name();
        tput.series.push(Series::new(name, p).colour(colour));
        latc.series.push(
            Series::new(
                format!("{name} avg"),
                pts(layout, &|l| l.latency_ns.mean as f64 / 1e6),
            )
            .colour(colour),
        );
        latc.series.push(
            Series::new(
                format!("{name} p99"),
                pts(layout, &|l| l.latency_ns.p99 as f64 / 1e6),
            )
            .dashed()
            .colour(colour),
        );
    }
    vec![
        Block::Chart {
            heading: None,
            svg: tput.to_svg(),
            note: Some(
                "shared_log: all committers append to one log and one fsync covers every \
commit waiting (group commit); separate_files: each committer writes and fsyncs its own file."
                    .into(),
            ),
        },
        chart(latc.to_svg()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsync::{Method, Mode};

    fn case(
        method: Method,
        mode: Mode,
        size: u32,
        p50_us: u64,
        flushes: Option<u64>,
    ) -> CaseResult {
        let l = LatencySummary {
            min: p50_us * 700,
            mean: p50_us * 1100,
            p50: p50_us * 1000,
            p90: p50_us * 1000,
            p95: p50_us * 1500,
            p99: p50_us * 2000,
            p999: p50_us * 4000,
            max: p50_us * 5000,
        };
        let mut c = CaseResult::measured(
            (method, mode, size),
            l,
            (1_000_000 / (p50_us * 11 / 10), 1_000_000_000),
            Some(200.0),
            flushes.map(|f| FlushStats::sample(f, 0.125, 0.1)),
        );
        // The seed's rate is its latency's, not the rounded count's.
        c.commits_per_s = 1e9 / l.mean as f64;
        c
    }

    /// The seed's 7200 rpm disk: 18 ms fsync, 8.5 ms fdatasync, 0.22 ms O_DIRECT into the cache.
    fn seed_report() -> FsyncReport {
        let cases = vec![
            case(Method::Fsync, Mode::Overwrite, 512, 18_000, Some(112)),
            case(Method::Fdatasync, Mode::Overwrite, 512, 8_500, Some(118)),
            case(Method::Odirect, Mode::Overwrite, 512, 220, Some(0)),
        ];
        let level = |n: u32, layout: Layout, cps: f64, per_sync: f64| GroupLevel {
            commit_delay_us: 0,
            committers: n,
            layout,
            commits: cps as u64,
            elapsed_ns: 1_000_000_000,
            commits_per_s: cps,
            syncs: (cps / per_sync) as u64,
            commits_per_sync: per_sync,
            latency_ns: LatencySummary {
                min: 9_000_000,
                mean: (n as f64 * 1e9 / cps) as u64,
                p50: (n as f64 * 1e9 / cps) as u64,
                p90: (n as f64 * 1e9 / cps) as u64,
                p95: 30_000_000,
                p99: 40_000_000,
                p999: 50_000_000,
                max: 60_000_000,
            },
            device_flushes: None,
            verification: Verification::of(Ok(())),
            interrupted: false,
        };
        let levels = vec![
            level(1, Layout::SharedLog, 55.0, 1.0),
            level(1, Layout::SeparateFiles, 56.0, 1.0),
            level(4, Layout::SharedLog, 160.0, 3.0),
            level(4, Layout::SeparateFiles, 60.0, 1.0),
        ];
        let dev = crate::fsync::device::DiskFacts {
            name: "sda".into(),
            major: 8,
            minor: 0,
            model: Some("WDC WD2502ABYS-18B7A0".into()),
            write_cache: Some("write back".into()),
            fua: Some(false),
            rotational: Some(true),
            logical_block_size: Some(512),
        };
        let (flush_verdict, flush_reasoning) =
            crate::fsync::verdict::judge(Some(&dev), &cases, false);
        FsyncReport {
            envelope: crate::envelope::Envelope {
                kind: "fsync".into(),
                schema_version: SCHEMA_VERSION,
                iosat_version: "0.1.0".into(),
                host: "db1".into(),
                kernel: "6.1.0".into(),
                cpus: 8,
                started_unix_s: 1_795_336_333,
                started: "2026-11-22T08:32:13.000Z".into(),
            },
            dir: "/var/lib/mysql".into(),
            duration_s_per_case: 1.0,
            verify: true,
            interrupted: false,
            capacity: Capacity {
                target_tps: Some(200.0),
                best_durable: None,
                fsync_reference: Some(CapacityLine {
                    method: Method::Fsync,
                    size: 512,
                    mode: Mode::Overwrite,
                    mean_latency_ns: cases[0].latency_ns.mean,
                    per_connection_commits_per_s: cases[0].per_connection_commits_per_s,
                    connections_for_target_tps: cases[0].connections_for_target_tps,
                }),
            },
            cases,
            skipped: vec![],
            group_commit: Some(GroupCommit {
                method: Method::Fsync,
                size: 4096,
                knee_shared_log: Some(4),
                knee_separate_files: Some(1),
                summary: vec!["shared log: example".into()],
                levels,
            }),
            device: DeviceSection {
                name: Some("sda".into()),
                dev: Some("8:0".into()),
                model: dev.model.clone(),
                write_cache: dev.write_cache.clone(),
                fua: dev.fua,
                rotational: dev.rotational,
                logical_block_size: Some(512),
                flush_verdict,
                flush_reasoning,
            },
            like: None,
            warnings: vec![],
        }
    }

    #[test]
    fn text_output() {
        insta::assert_snapshot!(render(&seed_report(), Format::TEXT));
    }

    #[test]
    fn text_fits_80_columns_and_wide_has_every_column() {
        let narrow = render(&seed_report(), Format::TEXT);
        for l in narrow.lines() {
            assert!(l.chars().count() <= 80, "{l}");
        }
        assert!(!narrow.contains('\x1b'));
        let wide = Format::Text {
            wide: true,
            width: 80,
            color: true,
        };
        let wide = render(&seed_report(), wide);
        for col in ["p99.9 ms", "conns@200tps", "fsyncs/s", "min ms"] {
            assert!(wide.contains(col) && !narrow.contains(col), "{col}");
        }
    }

    #[test]
    fn markdown_output() {
        insta::assert_snapshot!(render(&seed_report(), Format::Markdown));
    }

    #[test]
    fn csv_output() {
        insta::assert_snapshot!(csv(&seed_report()));
    }

    #[test]
    fn json_keys_are_the_issue_s() {
        let v = serde_json::to_value(seed_report()).unwrap();
        assert_eq!(v["schema_version"], 2);
        let c = &v["cases"][0];
        for k in ["method", "size", "mode", "commits_per_s", "latency_ns"] {
            assert!(c.get(k).is_some(), "case lacks {k}");
        }
        assert_eq!(c["method"], "fsync");
        assert_eq!(c["mode"], "overwrite");
        for k in ["min", "mean", "p50", "p95", "p99", "p999", "max"] {
            assert!(c["latency_ns"][k].is_u64(), "latency_ns lacks {k}");
        }
        let d = &v["device"];
        assert_eq!(d["write_cache"], "write back");
        assert_eq!(d["fua"], false);
        assert_eq!(d["rotational"], true);
        assert_eq!(d["flush_verdict"], "plausible");
        assert!(d["flush_reasoning"].as_array().unwrap().len() >= 2);
        insta::assert_json_snapshot!(v);
    }
}
