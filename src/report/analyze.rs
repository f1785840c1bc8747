//! An analysis ([`AnalyzeReport`]) as one document (text, Markdown and the HTML page are its
//! writers), CSV and JSON: the one renderer `iosat analyze` prints and `iosat report` uses for
//! a saved analysis, so both give the same bytes. The levels go through the table and charts
//! shared with sweep (report/levels.rs). Returns strings; no IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::doc::{self, Block, Doc, List, TableBlock};
use super::html::{envelope_rows, envelope_tail};
use super::levels::{
    csv_num, cut_footnote, level_charts, levels_block, levels_csv, verdict_list, LevelRow,
};
use super::svg::{LineChart, Series};
use super::table::Table;
use super::Format;
use crate::import::report::AnalyzeReport;
use crate::units::block_size;

/// The report in `format` (`Html` is the page; `Text` what a terminal gets).
pub fn render(r: &AnalyzeReport, format: Format) -> String {
    match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(r).expect("report serialises");
            s.push('\n');
            s
        }
        Format::Csv => csv(r),
        f => doc::write(&document(r), f),
    }
}

/// The analysis as people read it: what was read; the levels (charts, table, verdict) when
/// there are levels; every device's series (charts, samples, diagnosis); the importers' notes.
pub fn document(r: &AnalyzeReport) -> Doc {
    let mut blocks = vec![
        Block::Context(context(r)),
        Block::Lead {
            text: headline(r),
            hang: 2,
        },
    ];
    // Headings only when the analysis holds both levels and device series (the title says
    // which one it is otherwise).
    let both = r.verdict.is_some() && !r.devices.is_empty();
    if let Some(v) = &r.verdict {
        let rows = rows(r);
        if both {
            blocks.push(Block::Heading("Levels".into()));
        }
        blocks.extend(level_charts(&rows, Some(v)));
        let cut = cut_footnote(Some(v), false);
        blocks.push(Block::Table(levels_block(&rows, Some(v), cut)));
        blocks.push(Block::List(verdict_list(Some(v), [])));
    }
    if !r.devices.is_empty() {
        if both {
            blocks.push(Block::Heading("Devices".into()));
        }
        blocks.extend(device_charts(r));
        let t = TableBlock::new(devices_table(r)).narrow(DEVICES_NARROW);
        blocks.push(Block::Table(t));
        blocks.push(Block::List(List {
            verdict: true,
            ..List::titled("Diagnosis", doc::items(&diagnosis(r)))
        }));
    }
    if !r.source.notes.is_empty() {
        blocks.push(Block::List(List::titled(
            "Notes",
            doc::items(&r.source.notes),
        )));
    }
    Doc {
        title: title(r),
        md_title: None,
        md_level: 1,
        blocks,
    }
}

/// "iosat analyze: fio levels", or the device series' names.
fn title(r: &AnalyzeReport) -> String {
    if r.levels.is_empty() {
        let names: Vec<&str> = r.devices.iter().map(|d| d.device.as_str()).collect();
        format!(
            "iosat analyze: {} device series ({})",
            r.source.tool.name(),
            names.join(", ")
        )
    } else {
        format!("iosat analyze: {} levels", r.source.tool.name())
    }
}

/// The levels as the shared table and charts see them.
pub fn rows(r: &AnalyzeReport) -> Vec<LevelRow> {
    r.points()
        .into_iter()
        .map(|point| LevelRow {
            point,
            ..Default::default()
        })
        .collect()
}

/// One line saying what was read.
pub fn headline(r: &AnalyzeReport) -> String {
    let files = r.source.files.len();
    let what = if r.levels.is_empty() {
        format!("{} device series", r.devices.len())
    } else {
        let n = r.levels.len();
        let mut s = format!("{n} level{}", if n == 1 { "" } else { "s" });
        if let Some(p) = &r.source.pattern {
            s.push_str(&format!(", {p}"));
        }
        if let Some(b) = r.source.block_size {
            s.push_str(&format!(", {} KiB requests", b as f64 / 1024.0));
        }
        s
    };
    format!(
        "{} results: {what}, from {files} file{}",
        r.source.tool.name(),
        if files == 1 { "" } else { "s" }
    )
}

/// The device series as one table (device, time, rates, awaits, aqu-sz, %util, svctm).
pub fn devices_table(r: &AnalyzeReport) -> Table {
    let mut t = Table::new([
        "device", "time", "r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await", "await", "aqu-sz",
        "%util", "svctm",
    ]);
    let o = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into());
    for d in &r.devices {
        for (i, s) in d.samples.iter().enumerate() {
            t.push([
                d.device.clone(),
                s.time.clone().unwrap_or_else(|| format!("#{}", i + 1)),
                o(s.r_per_s),
                o(s.w_per_s),
                o(s.rkb_per_s),
                o(s.wkb_per_s),
                o(s.r_await),
                o(s.w_await),
                o(s.effective_await_ms()),
                o(s.aqu_sz),
                o(s.util_pct),
                o(s.svctm),
            ]);
        }
    }
    t
}

/// Each device's diagnosis, then what production learning made of its traffic (issue 26:
/// the baseline, the knee or its lower bound, the ceiling) once it learned a baseline, then
/// the block layer's split of its latency where the recording has it (issue 40).
fn diagnosis(r: &AnalyzeReport) -> Vec<String> {
    r.devices
        .iter()
        .flat_map(|d| {
            // Once a baseline (or its estimate) judges (before, "no baseline yet" is no
            // diagnosis).
            let learned = d.learned.as_ref().and_then(|l| {
                l.judged_by()?;
                let s = l.summary.as_ref()?;
                let dir = crate::learn::curve_of(l);
                Some(format!(
                    "{}: learned{dir} from its own traffic ({}): {}",
                    d.device,
                    crate::learn::basis_words(l).trim_start_matches("learned from "),
                    s.as_str()
                ))
            });
            // Every other size class learned, each with its own baseline.
            let classes = d.learned.as_ref().into_iter().flat_map(|l| {
                crate::learn::other_classes_words(l)
                    .into_iter()
                    .map(|w| format!("{}: learned too{w}", d.device))
            });
            // Queue or device (issue 40), where the recording has the block layer's split.
            let split = d
                .split
                .iter()
                .map(|s| format!("{}: queue or device: {}", d.device, s.words()));
            d.diagnosis
                .iter()
                .cloned()
                .chain(learned)
                .chain(classes)
                .chain(split)
        })
        .collect()
}

/// The device series' columns in 80 columns (`--wide`: rkB/s, wkB/s, the awaits apart,
/// svctm).
const DEVICES_NARROW: &[&str] = &["device", "time", "r/s", "w/s", "await", "aqu-sz", "%util"];

/// What was read: the page's context table (compare sets them side by side).
pub fn context(r: &AnalyzeReport) -> Vec<(&'static str, String)> {
    let src = &r.source;
    let mut v = vec![(
        "measured",
        if r.levels.is_empty() {
            "device time series (diagnosis)".to_string()
        } else {
            "levels of concurrency (verdict)".to_string()
        },
    )];
    v.extend(envelope_rows(&r.envelope));
    v.push(("source", src.tool.name().to_string()));
    if !src.files.is_empty() {
        let files: Vec<String> = src
            .files
            .iter()
            .map(|f| match &f.version {
                Some(ver) => format!("{} ({} {ver})", f.path, f.tool.name()),
                None => f.path.clone(),
            })
            .collect();
        v.push(("files", files.join(", ")));
    }
    if !r.devices.is_empty() {
        let names: Vec<&str> = r.devices.iter().map(|d| d.device.as_str()).collect();
        v.push(("device", names.join(", ")));
    }
    if let Some(p) = &src.pattern {
        v.push(("pattern", p.clone()));
    }
    if let Some(b) = src.block_size {
        v.push(("block size", block_size(b)));
    }
    if !r.levels.is_empty() {
        let lv: Vec<String> = r.levels.iter().map(|l| l.concurrency.to_string()).collect();
        v.push(("levels", lv.join(", ")));
    }
    v.extend(envelope_tail(&r.envelope));
    v
}

/// Every device's time series (requests per second, latency, %util, load), on a wall-clock
/// axis when every sample carries a UTC time.
fn device_charts(r: &AnalyzeReport) -> Vec<Block> {
    let mut body = Vec::new();
    for d in &r.devices {
        let id = d.device.replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        // A wall-clock axis when every sample carries a UTC time (pt-diskstats, recordings),
        // else the sample number (iostat -t prints local time in the locale's format).
        let clock: Option<Vec<f64>> = d
            .samples
            .iter()
            .map(|s| Some(crate::units::parse_iso_utc(s.time.as_deref()?)? as f64 / 1e9))
            .collect();
        let clock = clock.filter(|c| c.windows(2).all(|w| w[1] > w[0]));
        let x_of = |i: usize| clock.as_ref().map_or((i + 1) as f64, |c| c[i]);
        let x_label = if clock.is_some() {
            "time (UTC)"
        } else {
            "sample (interval number)"
        };
        let pts = |f: &dyn Fn(&crate::analysis::device::DeviceSample) -> Option<f64>| {
            d.samples
                .iter()
                .enumerate()
                .filter_map(|(i, s)| Some((x_of(i), f(s)?)))
                .collect::<Vec<_>>()
        };
        let n = d.samples.len();
        let extent = if n > 0 {
            vec![x_of(0), x_of(n - 1)]
        } else {
            Vec::new()
        };
        // A gap: more than one and a half of the usual (median) step between samples.
        let mut steps: Vec<f64> = (1..n).map(|i| x_of(i) - x_of(i - 1)).collect();
        steps.sort_by(f64::total_cmp);
        let step = steps.get(steps.len() / 2).copied().unwrap_or(1.0);
        let chart = |name: &str, title: &str, y: &str, ss: Vec<Series>| -> Option<String> {
            let mut c = LineChart::new(&format!("{id}-{name}"), title, x_label, y);
            c.series = ss.into_iter().filter(|s| !s.points.is_empty()).collect();
            c.x_extent = extent.clone();
            c.x_gap = Some(step * 1.5);
            c.x_clock = clock.is_some();
            (!c.series.is_empty()).then(|| c.to_svg())
        };
        let mut svgs = Vec::new();
        svgs.extend(chart(
            "throughput",
            &format!("{}: requests per second", d.device),
            "requests/s",
            vec![
                Series::new("r/s", pts(&|s| s.r_per_s)),
                Series::new("w/s", pts(&|s| s.w_per_s)),
            ],
        ));
        svgs.extend(chart(
            "latency",
            &format!("{}: latency", d.device),
            "await (ms)",
            vec![
                Series::new(
                    "r_await",
                    pts(&|s| s.r_await.filter(|_| s.r_per_s != Some(0.0))),
                ),
                Series::new(
                    "w_await",
                    pts(&|s| s.w_await.filter(|_| s.w_per_s != Some(0.0))),
                ),
            ],
        ));
        svgs.extend(chart(
            "util",
            &format!("{}: %util", d.device),
            "%util",
            vec![Series::new("%util", pts(&|s| s.util_pct))],
        ));
        svgs.extend(chart(
            "queue",
            &format!("{}: load", d.device),
            "aqu-sz (requests in flight)",
            vec![Series::new("aqu-sz", pts(&|s| s.aqu_sz))],
        ));
        // The device's name heads its first chart.
        for (i, svg) in svgs.into_iter().enumerate() {
            body.push(Block::Chart {
                heading: (i == 0).then(|| d.device.clone()),
                svg,
                note: None,
            });
        }
    }
    body
}

/// CSV for machines: the levels (levels::levels_csv), or the device series when there are no
/// levels (both, separated by an empty line, when the input held both). Numbers unrounded in
/// the units of sysstat's JSON keys (ms awaits, kB, percent util), empty when missing.
fn csv(r: &AnalyzeReport) -> String {
    let mut s = String::new();
    if let Some(v) = &r.verdict {
        s.push_str(&levels_csv(&rows(r), Some(v)).to_csv());
    }
    if !r.devices.is_empty() {
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(&devices_csv(r).to_csv());
    }
    s
}

/// The device series for machines: sample number and time (empty when the log had none),
/// then sysstat's JSON keys.
fn devices_csv(r: &AnalyzeReport) -> Table {
    let mut t = Table::new([
        "device", "sample", "time", "r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await", "await",
        "aqu-sz", "util", "svctm",
    ]);
    for d in &r.devices {
        for (i, s) in d.samples.iter().enumerate() {
            let mut row = vec![
                d.device.clone(),
                (i + 1).to_string(),
                s.time.clone().unwrap_or_default(),
            ];
            row.extend(
                [
                    s.r_per_s,
                    s.w_per_s,
                    s.rkb_per_s,
                    s.wkb_per_s,
                    s.r_await,
                    s.w_await,
                    s.effective_await_ms(),
                    s.aqu_sz,
                    s.util_pct,
                    s.svctm,
                ]
                .map(csv_num),
            );
            t.push(row);
        }
    }
    t
}
