//! A sweep result ([`SweepReport`]) as one document (text, Markdown and the HTML page are its
//! writers), CSV and JSON: the one renderer `iosat sweep` prints (and writes to `-o` and
//! `--html` after every level) and `iosat report` uses for a saved sweep, so both give the
//! same bytes. Returns strings; no IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::doc::{self, chart, Block, Doc, Item, List, TableBlock};
use super::html::{envelope_rows, envelope_tail};
use super::levels::{
    csv_num, cut_footnote, level_charts, levels_block, us_cell, verdict_list, LevelRow,
    LAT_NS_HEADERS,
};
use super::svg::{DotChart, LineChart, Series};
use super::table::Table;
use super::Format;
use crate::analysis::{direction_line, LatencyNs, LevelPoint};
use crate::load::result::{DirectionResult, LevelResult, SweepReport};
use crate::monitor::blklat::OpLatency;
use crate::units::{block_size, human_bytes};

/// The report in `format` (`Html` is the page; `Text` what a terminal gets).
pub fn render(r: &SweepReport, format: Format) -> String {
    match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(r).expect("report serialises");
            s.push('\n');
            s
        }
        // An open-loop sweep's CSV is its offered rates (the closed loop's levels are in the
        // JSON and the other formats).
        Format::Csv if !r.open_levels.is_empty() => super::open::csv(r).to_csv(),
        Format::Csv => csv(r).to_csv(),
        f => doc::write(&document(r), f),
    }
}

/// The sweep as people read it: what ran, the levels table (its `*` footnote under it),
/// reads and writes apart for a mixed pattern, the block layer's view, the verdict with the
/// per-direction and block-layer sentences and the notes; on the page the context and the
/// charts.
pub fn document(r: &SweepReport) -> Doc {
    let rows = rows(r);
    let mut blocks = vec![
        Block::Context(context(r)),
        Block::Lead {
            text: header_line(r),
            hang: 4,
        },
    ];
    // A target search is asked one question: its answer comes first.
    if let Some(a) = super::open::answer(r) {
        blocks.push(Block::List(List {
            verdict: true,
            ..List::titled("Answer", vec![Item::plain(a)])
        }));
    }
    if r.levels.is_empty() && r.open_loop.is_some() {
        // Only the open loop ran: no closed-loop table or verdict to show.
        blocks.extend(super::open::blocks(r));
        if !r.notes.is_empty() {
            blocks.push(Block::List(List {
                items: r.notes.iter().map(Item::note).collect(),
                ..Default::default()
            }));
        }
        return Doc {
            title: title(r),
            md_title: None,
            md_level: 2,
            blocks,
        };
    }
    blocks.extend(level_charts(&rows, r.verdict.as_ref()));
    blocks.push(Block::Table(levels_block(
        &rows,
        r.verdict.as_ref(),
        cut_footnote(r.verdict.as_ref(), r.levels.iter().any(|l| l.interrupted)),
    )));
    blocks.extend(direction_charts(r, &rows));
    if let Some(t) = split_table(r) {
        let mut b = TableBlock::new(t).narrow(SPLIT_NARROW);
        b.footnotes.extend(measured_footnote(r, false));
        blocks.push(Block::Table(b));
    }
    if let Some(b) = block_table(r) {
        blocks.push(Block::Table(b));
    }
    let more = direction_lines(r)
        .into_iter()
        .chain(block_line(r))
        .map(Item::plain)
        .chain(r.notes.iter().map(Item::note));
    blocks.push(Block::List(verdict_list(r.verdict.as_ref(), more)));
    blocks.extend(distribution_chart(r));
    blocks.extend(super::open::blocks(r));
    Doc {
        title: title(r),
        md_title: None,
        md_level: 2,
        blocks,
    }
}

/// "iosat sweep: randread 4 KiB on nvme0n1".
fn title(r: &SweepReport) -> String {
    let what = match (target_goal(r), r.levels.is_empty()) {
        (Some(goal), _) => format!("iosat target search ({goal}):"),
        (None, true) if r.open_loop.is_some() => "iosat open loop:".to_string(),
        _ => "iosat sweep:".to_string(),
    };
    format!(
        "{what} {} {}{}",
        r.workload.pattern,
        block_size(r.workload.block_size),
        r.target
            .disk_device
            .as_ref()
            .map(|d| format!(" on {d}"))
            .unwrap_or_default()
    )
}

/// "p99 <= 3.00 ms" for a run that searched for a target, else None.
fn target_goal(r: &SweepReport) -> Option<String> {
    let t = r.open_loop.as_ref()?.target?;
    Some(format!(
        "{} <= {:.2} ms",
        t.percentile.as_str(),
        t.limit_ns / 1e6
    ))
}

/// The levels as the shared table and charts see them: one row per concurrency, its
/// `--repeat` passes and adaptive re-measures combined as the verdict combines them (the JSON
/// keeps every measurement).
pub fn rows(r: &SweepReport) -> Vec<LevelRow> {
    r.combined_levels()
        .into_iter()
        .map(|c| LevelRow {
            point: c.point,
            kernel: c.kernel,
            littles: Some(c.littles_law),
            interrupted: c.interrupted,
        })
        .collect()
}

/// What was measured and where: the page's context table (compare sets them side by side).
pub fn context(r: &SweepReport) -> Vec<(&'static str, String)> {
    let (w, t) = (&r.workload, &r.target);
    let closed = if r.levels.is_empty() {
        ""
    } else {
        ", after a concurrency sweep"
    };
    let measured = match (target_goal(r), &r.open_loop) {
        (Some(goal), _) => {
            format!("target search: the highest offered rate with {goal} (an open loop{closed})")
        }
        (None, Some(_)) => format!("open loop at offered rates{closed}"),
        (None, None) => "concurrency sweep".to_string(),
    };
    let mut v = vec![("measured", measured)];
    v.extend(envelope_rows(&r.envelope));
    if let Some(d) = &t.disk_device {
        let about: Vec<String> = [t.disk_model.clone(), t.disk_size_bytes.map(human_bytes)]
            .into_iter()
            .flatten()
            .collect();
        v.push((
            "device",
            if about.is_empty() {
                d.clone()
            } else {
                format!("{d} ({})", about.join(", "))
            },
        ));
    }
    if t.kind != "none" {
        v.push((
            "target",
            format!("{} ({}, {})", t.path, t.kind, human_bytes(t.size_bytes)),
        ));
    }
    v.push((
        "pattern",
        if w.pattern == "randrw" {
            format!("randrw, {} % reads", w.read_pct)
        } else {
            w.pattern.clone()
        },
    ));
    v.push(("block size", block_size(w.block_size)));
    v.push((
        "engine",
        if w.engine_spec.is_empty() {
            w.engine.clone()
        } else {
            format!("{} ({})", w.engine, w.engine_spec)
        },
    ));
    v.push((
        "O_DIRECT",
        if w.direct { "yes" } else { "no (buffered)" }.into(),
    ));
    // Each concurrency once: --repeat passes and re-measures measure some again.
    let lv: Vec<u32> = r.points().iter().map(|p| p.concurrency).collect();
    v.push((
        "levels",
        lv.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
    ));
    v.push((
        "duration",
        format!(
            "{} s per level after {} s ramp{}",
            w.duration_ns as f64 / 1e9,
            w.ramp_ns as f64 / 1e9,
            if w.repeat > 1 {
                format!(", {} passes", w.repeat)
            } else {
                String::new()
            }
        ),
    ));
    if let Some(g) = gentle_words(w) {
        v.push(("gentle mode", g));
    }
    v.extend(envelope_tail(&r.envelope));
    v
}

/// For a mixed pattern: reads and writes apart, IOPS and latency against concurrency.
fn direction_charts(r: &SweepReport, rows: &[LevelRow]) -> Vec<Block> {
    let ticks: Vec<f64> = rows
        .iter()
        .map(|r| f64::from(r.point.concurrency))
        .collect();
    let mixed: Vec<_> = r
        .levels
        .iter()
        .filter_map(|l| {
            Some((
                f64::from(l.concurrency),
                l.read.as_ref()?,
                l.write.as_ref()?,
            ))
        })
        .collect();
    if mixed.is_empty() {
        return Vec::new();
    }
    {
        let mut tput = LineChart::new(
            "directions-throughput",
            "Reads and writes: IOPS vs concurrency",
            "concurrency (requests in flight)",
            "IOPS",
        );
        let mut lat = LineChart::new(
            "directions-latency",
            "Reads and writes: latency vs concurrency (avg solid, p99 dashed)",
            "concurrency (requests in flight)",
            "latency (ms)",
        );
        tput.x_log = true;
        lat.x_log = true;
        lat.y_log = true;
        tput.x_ticks = ticks.clone();
        lat.x_ticks = ticks.clone();
        type Pick = fn(&crate::load::result::DirectionResult) -> f64;
        for (i, (name, dir)) in [("reads", 0usize), ("writes", 1)].into_iter().enumerate() {
            let pts = |f: Pick| -> Vec<(f64, f64)> {
                mixed
                    .iter()
                    .map(|(c, rd, wr)| (*c, f(if dir == 0 { rd } else { wr })))
                    .collect()
            };
            tput.series
                .push(Series::new(name, pts(|d| d.iops)).colour(i));
            lat.series.push(
                Series::new(
                    format!("{name} avg"),
                    pts(|d| d.latency_ns.mean as f64 / 1e6),
                )
                .colour(i),
            );
            lat.series.push(
                Series::new(
                    format!("{name} p99"),
                    pts(|d| d.latency_ns.p99 as f64 / 1e6),
                )
                .colour(i)
                .dashed(),
            );
        }
        vec![
            Block::Chart {
                heading: Some("Reads and writes".into()),
                svg: tput.to_svg(),
                note: None,
            },
            chart(lat.to_svg()),
        ]
    }
}

/// The percentiles of every level's latency histogram.
fn distribution_chart(r: &SweepReport) -> Option<Block> {
    if r.levels.is_empty() {
        return None;
    }
    {
        let chart = DotChart {
            id: "distribution".into(),
            title: "Latency distribution per level".into(),
            x_label: "latency (ms)".into(),
            x_log: true,
            keys: ["p50", "p90", "p99", "p99.9", "max"]
                .map(String::from)
                .to_vec(),
            rows: r
                .levels
                .iter()
                .map(|l| {
                    let s = &l.latency_ns;
                    (
                        format!("concurrency {}", l.concurrency),
                        [s.p50, s.p90, s.p99, s.p999, s.max]
                            .iter()
                            .map(|&n| (n > 0).then(|| n as f64 / 1e6))
                            .collect(),
                    )
                })
                .collect(),
        };
        Some(Block::Chart {
            heading: Some("Latency distribution per level".into()),
            svg: chart.to_svg(),
            note: Some(
                "The percentiles of every level's recorded latency histogram: a widening spread \
at higher concurrency is requests queueing."
                    .into(),
            ),
        })
    }
}

/// The per-direction table's columns in 80 columns.
const SPLIT_NARROW: &[&str] = &[
    "conc", "dir", "IOPS", "MB/s", "avg_us", "p50_us", "p95_us", "p99_us", "max_us",
];

/// The gentle mode's limits in words ("at most 8 in flight, at most 500 added IOPS").
fn gentle_words(w: &crate::load::result::WorkloadInfo) -> Option<String> {
    let g = w.limits.filter(|g| !g.is_none())?;
    let mut parts = Vec::new();
    if let Some(n) = g.max_concurrency {
        parts.push(format!("at most {n} in flight"));
    }
    if let Some(iops) = g.rate_limit_iops {
        parts.push(format!("at most {iops:.0} added IOPS"));
    }
    Some(parts.join(", "))
}

/// What ran against what, two or three lines.
fn header_line(r: &SweepReport) -> String {
    let w = &r.workload;
    let t = &r.target;
    let pattern = if w.pattern == "randrw" {
        format!("randrw {}% reads", w.read_pct)
    } else {
        w.pattern.clone()
    };
    let mut s = format!(
        "iosat sweep: {pattern}, {} B blocks, {}, engine {}, {:.2} s per level after {:.2} s ramp",
        w.block_size,
        if w.direct { "O_DIRECT" } else { "buffered" },
        w.engine,
        w.duration_ns as f64 / 1e9,
        w.ramp_ns as f64 / 1e9
    );
    if t.kind != "none" {
        s.push_str(&format!(
            "\ntarget: {} ({}, {} MiB{})",
            t.path,
            t.kind,
            t.size_bytes >> 20,
            t.disk_device
                .as_ref()
                .map(|d| format!(", on {d}"))
                .unwrap_or_default()
        ));
    }
    if let Some(g) = gentle_words(w) {
        s.push_str(&format!("\ngentle mode: {g}"));
    }
    s
}

/// A mixed sweep judged per direction: one line for reads, one for writes (none otherwise).
fn direction_lines(r: &SweepReport) -> Vec<String> {
    if !r.levels.iter().any(|l| l.read.is_some()) || r.levels.len() < 2 {
        return Vec::new();
    }
    let points = |pick: fn(&LevelResult) -> Option<&DirectionResult>| -> Vec<LevelPoint> {
        r.levels
            .iter()
            .filter_map(|l| {
                pick(l).filter(|d| d.ios > 0).map(|d| LevelPoint {
                    concurrency: l.concurrency,
                    iops: d.iops,
                    bytes_per_s: d.bytes_per_s,
                    latency_ns: LatencyNs::from(&d.latency_ns),
                    ..Default::default()
                })
            })
            .collect()
    };
    let mut out = Vec::new();
    for (name, pts) in [
        ("Reads", points(|l| l.read.as_ref())),
        ("Writes", points(|l| l.write.as_ref())),
    ] {
        if !pts.is_empty() {
            out.push(direction_line(name, &pts));
        }
    }
    out
}

/// Which measurement of its concurrency a row is: "8" for the first, "8 (2nd)" for a
/// `--repeat` pass or an adaptive re-measure, "1 (end)" for the baseline taken again after the
/// last level, so that no table shows a concurrency twice without saying why.
fn measured_label(l: &LevelResult, end: bool) -> String {
    if end {
        return format!("{} (end)", l.concurrency);
    }
    match l.repeat {
        0 => l.concurrency.to_string(),
        n => {
            let k = n + 1;
            let th = match (k % 10, k % 100) {
                (2, x) if x != 12 => "nd",
                (3, x) if x != 13 => "rd",
                _ => "th",
            };
            format!("{} ({k}{th})", l.concurrency)
        }
    }
}

/// What a measured level's label means, under a table that lists every measurement (None when
/// no concurrency was measured twice). `end`: the table shows the baseline's re-measure.
fn measured_footnote(r: &SweepReport, end: bool) -> Option<String> {
    let again = r.levels.iter().any(|l| l.repeat > 0);
    let end = end && r.baseline_remeasured.is_some();
    (again || end).then(|| {
        let mut parts = Vec::new();
        if again {
            parts.push("\"8 (2nd)\" is concurrency 8 measured a second time (--repeat or the adaptive re-measure; the levels table combines them)");
        }
        if end {
            parts.push("\"1 (end)\" is the baseline measured again after the last level");
        }
        format!("{}.", parts.join("; "))
    })
}

/// Completions iosat itself made at level `l` in the direction `write` (its main one).
fn own_ios(l: &LevelResult, write: bool) -> u64 {
    match (&l.read, &l.write) {
        (Some(r), _) if !write => r.ios,
        (_, Some(w)) if write => w.ios,
        _ => l.ios,
    }
}

/// The block histogram counts every process's requests on the disk: its percentiles are
/// iosat's own only while it counted no more than this share beyond iosat's completions
/// (splits of large requests count too, which leaves the share out rather than wrong).
pub const BLOCK_OTHER_SHARE: f64 = 0.05;

/// The share of iosat's median latency spent below the block layer, in %, when the histogram
/// holds iosat's requests only ([`BLOCK_OTHER_SHARE`]) and the share is one a request's own
/// time can have (0–100 %, one histogram bucket above read as 100 %); None otherwise.
fn below_pct(l: &LevelResult, (b, write): (&OpLatency, bool)) -> Option<f64> {
    let own = own_ios(l, write) as f64;
    let engine = l.latency_ns.p50 as f64;
    if own <= 0.0 || engine <= 0.0 || b.count as f64 > own * (1.0 + BLOCK_OTHER_SHARE) {
        return None;
    }
    let pct = b.p50_ms? * 1e6 / engine * 100.0;
    // The block layer's median is interpolated in buckets an eighth of an octave wide: up to
    // one bucket above iosat's own median is all of it, more is not one request's share.
    if pct > 100.0 * (1.0 + BLOCK_BUCKET) {
        return None;
    }
    (pct >= 0.0).then_some(pct.min(100.0))
}

/// The width of a block-latency histogram bucket, relative (an eighth of an octave).
const BLOCK_BUCKET: f64 = 0.125;

/// A level's block-layer percentiles (iosat's BPF source) of its main direction (the one
/// with more completions, `true` for writes), when the source was attached.
fn block_of(l: &LevelResult) -> Option<(&OpLatency, bool)> {
    let b = l.kernel.as_ref()?.block_latency.as_ref()?;
    let write = b.write.count > b.read.count;
    let op = if write { &b.write } else { &b.read };
    (op.count > 0).then_some((op, write))
}

/// The block layer's own p50/p95 beside the engine's per level, every measurement labelled
/// ([`measured_label`]), and the share of the engine's p50 spent below the block layer (from
/// request start to completion) where the histogram is iosat's own ([`below_pct`]).
fn block_table(r: &SweepReport) -> Option<TableBlock> {
    if !r.levels.iter().any(|l| block_of(l).is_some()) {
        return None;
    }
    let mut t = Table::new([
        "conc",
        "p50_us",
        "blk_p50_us",
        "p95_us",
        "blk_p95_us",
        "below_%",
        "blk_cover%",
    ]);
    let mut hidden = false;
    for (l, end) in r.level_rows() {
        let Some(bw) = block_of(l) else { continue };
        let b = bw.0;
        let us = |v: Option<f64>| us_cell(v.map(|ms| ms * 1e6));
        let engine_p50 = l.latency_ns.p50 as f64;
        let below = below_pct(l, bw);
        hidden |= below.is_none() && b.p50_ms.is_some();
        let cover = l
            .kernel
            .as_ref()
            .and_then(|k| k.block_latency.as_ref()?.coverage_pct);
        t.push([
            measured_label(l, end),
            us_cell(Some(engine_p50)),
            us(b.p50_ms),
            us_cell(Some(l.latency_ns.p95 as f64)),
            us(b.p95_ms),
            below.map_or("-".into(), |v| format!("{v:.0}")),
            cover.map_or("-".into(), |v| format!("{v:.1}")),
        ]);
    }
    let mut block = TableBlock::new(t);
    if hidden {
        block.footnotes.push(format!(
            "below_% is shown only where the block layer's histogram holds iosat's own \
             requests: it counts every process's requests on the disk, and where it counted more \
             than {:.0} % beyond iosat's (other traffic, split requests) the share would not be \
             iosat's.",
            BLOCK_OTHER_SHARE * 100.0
        ));
    }
    block.footnotes.extend(measured_footnote(r, true));
    Some(block)
}

/// One verdict sentence: how much of the engine's median latency the block layer accounts
/// for at the lowest and highest level, and what is left above it.
fn block_line(r: &SweepReport) -> Option<String> {
    // Only levels whose histogram is iosat's own: elsewhere the share is other processes'.
    let with: Vec<(&LevelResult, (&OpLatency, bool))> = r
        .levels
        .iter()
        .filter_map(|l| Some((l, block_of(l)?)))
        .filter(|(l, b)| below_pct(l, *b).is_some())
        .collect();
    // The lowest and highest concurrency measured (re-measures come after the series, so the
    // last level measured need not be the deepest).
    let (lo, lo_b) = with.iter().min_by_key(|(l, _)| l.concurrency)?;
    let (hi, hi_b) = with.iter().max_by_key(|(l, _)| l.concurrency)?;
    let part = |l: &LevelResult, b: (&OpLatency, bool)| -> Option<(f64, f64)> {
        let engine = l.latency_ns.p50 as f64;
        let pct = below_pct(l, b)?;
        Some((pct, engine * (1.0 - pct / 100.0) / 1e3))
    };
    let (lo_pct, lo_above) = part(lo, *lo_b)?;
    let (hi_pct, hi_above) = part(hi, *hi_b)?;
    Some(if lo.concurrency == hi.concurrency {
        format!(
            "The block layer accounts for {lo_pct:.0} % of the median latency at concurrency \
             {}; the other {lo_above:.1} us are spent above it (syscall, scheduler, CPU \
             contention).",
            lo.concurrency
        )
    } else {
        format!(
            "The block layer accounts for {lo_pct:.0} % of the median latency at concurrency \
             {} and {hi_pct:.0} % at {}; above it (syscall, scheduler, CPU contention) \
             {lo_above:.1} us and {hi_above:.1} us are spent.",
            lo.concurrency, hi.concurrency
        )
    })
}

/// Reads and writes apart, for mixed patterns only.
fn split_table(r: &SweepReport) -> Option<Table> {
    if !r.levels.iter().any(|l| l.read.is_some()) {
        return None;
    }
    let mut t = Table::new([
        "conc", "dir", "IOPS", "MB/s", "avg_us", "p50_us", "p95_us", "p99_us", "p99.9_us", "max_us",
    ]);
    t.right[1] = false;
    for l in &r.levels {
        for (name, d) in [("read", &l.read), ("write", &l.write)] {
            if let Some(d) = d {
                let us = |ns: u64| us_cell(Some(ns as f64));
                let lat = &d.latency_ns;
                t.push([
                    measured_label(l, false),
                    name.to_string(),
                    format!("{:.0}", d.iops),
                    format!("{:.1}", d.bytes_per_s / 1e6),
                    us(lat.mean),
                    us(lat.p50),
                    us(lat.p95),
                    us(lat.p99),
                    us(lat.p999),
                    us(lat.max),
                ]);
            }
        }
    }
    Some(t)
}

/// The machine-readable rows: integer nanoseconds, the kernel's numbers unrounded.
fn csv(r: &SweepReport) -> Table {
    let head = [
        "concurrency",
        "threads",
        "iodepth",
        "elapsed_ns",
        "ios",
        "iops",
        "bytes_per_s",
    ];
    let mut t = Table::new(head.into_iter().chain(LAT_NS_HEADERS).chain([
        "read_iops",
        "read_lat_mean_ns",
        "read_lat_p99_ns",
        "write_iops",
        "write_lat_mean_ns",
        "write_lat_p99_ns",
        "kernel_r/s",
        "kernel_w/s",
        "kernel_r_await_ms",
        "kernel_w_await_ms",
        "kernel_aqu_sz",
        "kernel_util_pct",
        "littles_implied_concurrency",
        "littles_ok",
        "interrupted",
        "saturation_avg",
        "saturation_p95",
        "overloaded",
        "measured",
    ]));
    for (l, end) in r.level_rows() {
        let mut row = csv_row(l);
        // The verdict's view of the level (over every repeat of its concurrency).
        let f = r
            .verdict
            .as_ref()
            .and_then(|v| v.levels.iter().find(|f| f.concurrency == l.concurrency));
        row.extend([
            csv_num(f.map(|f| f.saturation_avg)),
            csv_num(f.and_then(|f| f.saturation_p95)),
            f.map(|f| f.overloaded.to_string()).unwrap_or_default(),
            // Which measurement of the concurrency: "first", "again 2" (the third), "end".
            match (end, l.repeat) {
                (true, _) => "end".to_string(),
                (false, 0) => "first".to_string(),
                (false, n) => format!("again {n}"),
            },
        ]);
        t.push(row);
    }
    t
}

fn csv_row(r: &LevelResult) -> Vec<String> {
    let l = &r.latency_ns;
    let mut row: Vec<String> = vec![
        r.concurrency.to_string(),
        r.threads.to_string(),
        r.iodepth.to_string(),
        r.elapsed_ns.to_string(),
        r.ios.to_string(),
        format!("{:.1}", r.iops),
        format!("{:.0}", r.bytes_per_s),
    ];
    row.extend([l.min, l.mean, l.p50, l.p90, l.p95, l.p99, l.p999, l.max].map(|v| v.to_string()));
    for d in [&r.read, &r.write] {
        match d {
            Some(d) => row.extend([
                format!("{:.1}", d.iops),
                d.latency_ns.mean.to_string(),
                d.latency_ns.p99.to_string(),
            ]),
            None => row.extend(["", "", ""].map(String::from)),
        }
    }
    let k = r.kernel.clone().unwrap_or_default();
    row.extend([k.r_s, k.w_s, k.r_await, k.w_await, k.aqu_sz, k.util_pct].map(csv_num));
    row.push(format!("{:.3}", r.littles_law.implied_concurrency));
    row.push(r.littles_law.ok.to_string());
    row.push(r.interrupted.to_string());
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> SweepReport {
        let text = include_str!("../../tests/fixtures/report/sim_sweep.json");
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_sweep_header_names_where_and_on_what() {
        let mut r = SweepReport::default();
        r.envelope.host = "db7".into();
        r.envelope.kernel = "6.18.0".into();
        r.envelope.cpus = 2;
        r.target.kind = "temp-file".into();
        r.target.disk_device = Some("nvme0n1".into());
        r.target.disk_model = Some("Samsung SSD 990".into());
        r.target.disk_size_bytes = Some(1 << 40);
        // A pass measured again (--repeat, the adaptive re-measure) lists each level once.
        for (c, rep) in [(1, 0), (2, 0), (4, 0), (2, 1), (4, 1)] {
            r.levels.push(crate::load::result::LevelResult {
                concurrency: c,
                repeat: rep,
                ios: 100,
                elapsed_ns: 1_000_000,
                ..Default::default()
            });
        }
        let rows = context(&r);
        let get = |k: &str| rows.iter().find(|(l, _)| *l == k).map(|(_, v)| v.clone());
        assert_eq!(get("host").as_deref(), Some("db7"));
        assert_eq!(get("kernel").as_deref(), Some("6.18.0"));
        assert_eq!(get("CPUs").as_deref(), Some("2"));
        assert_eq!(get("levels").as_deref(), Some("1, 2, 4"));
        let dev = get("device").unwrap();
        assert!(
            dev.starts_with("nvme0n1 (Samsung SSD 990, ") && dev.contains("TiB"),
            "{dev}"
        );
    }

    #[test]
    fn text_at_80_columns() {
        let s = render(&fixture(), Format::TEXT);
        for l in s.lines() {
            assert!(
                l.chars().count() <= 80,
                "{} columns: {l}",
                l.chars().count()
            );
        }
        insta::assert_snapshot!(s);
    }

    #[test]
    fn wide_text_has_every_column_and_colour_marks_knee_and_overload() {
        let wide = Format::Text {
            wide: true,
            width: 80,
            color: true,
        };
        let s = render(&fixture(), wide);
        for col in ["p99.9_us", "x_base_p95", "r_await", "little"] {
            assert!(s.contains(col), "{col}");
        }
        let knee = s.lines().find(|l| l.contains("knee")).unwrap();
        assert!(knee.starts_with("\x1b[32m"), "{knee:?}");
        let over = s
            .lines()
            .find(|l| l.contains("overload from here"))
            .unwrap();
        assert!(over.starts_with("\x1b[31m"), "{over:?}");
        assert!(!render(&fixture(), Format::TEXT).contains('\x1b'));
    }
}
