//! An analysis ([`AnalyzeReport`]) as text, Markdown, CSV, JSON and an HTML page: the one
//! renderer `iosat analyze` prints and `iosat report` uses for a saved analysis, so both give
//! the same bytes. The levels go through the table shared with sweep (report/levels.rs).
//! Returns strings; no IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::levels::{
    bullets, csv_num, indented_fit, levels_csv, levels_table, levels_text, LevelRow,
};
use super::table::Table;
use super::text::wrap;
use super::Format;
use crate::import::report::AnalyzeReport;

/// The report in `format` (`Html` is the page; `Text` what a terminal gets).
pub fn render(r: &AnalyzeReport, format: Format) -> String {
    match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(r).expect("report serialises");
            s.push('\n');
            s
        }
        Format::Text { .. } => text(r, format),
        Format::Markdown => markdown(r),
        Format::Csv => csv(r),
        Format::Html => super::html::analyze_page(r),
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

fn diagnosis(r: &AnalyzeReport) -> Vec<String> {
    r.devices
        .iter()
        .flat_map(|d| d.diagnosis.iter().cloned())
        .collect()
}

/// The device series' columns in 80 columns (`--wide`: rkB/s, wkB/s, the awaits apart,
/// svctm).
const DEVICES_NARROW: &[&str] = &["device", "time", "r/s", "w/s", "await", "aqu-sz", "%util"];

/// Text: narrow tables (80 columns) or every column with `--wide`, the verdict, diagnosis
/// and notes wrapped to the terminal's width; knee and overload rows coloured on a terminal.
fn text(r: &AnalyzeReport, format: Format) -> String {
    let Format::Text { wide, width, .. } = format else {
        return text(r, Format::TEXT);
    };
    let mut s = wrap(&headline(r), "", "  ", width);
    s.push('\n');
    if let Some(v) = &r.verdict {
        let (table, legend) = levels_text(&rows(r), Some(v), format);
        s.push_str(&table);
        s.push_str(&legend);
        s.push('\n');
        s.push_str(&indented_fit("Verdict:", &v.summary, width));
    }
    if !r.devices.is_empty() {
        if r.verdict.is_some() {
            s.push('\n');
        }
        let t = devices_table(r);
        s.push_str(&if wide { t } else { t.select(DEVICES_NARROW) }.to_text());
        s.push('\n');
        s.push_str(&indented_fit("Diagnosis:", &diagnosis(r), width));
    }
    if !r.source.notes.is_empty() {
        s.push('\n');
        s.push_str(&indented_fit("Notes:", &r.source.notes, width));
    }
    s
}

fn markdown(r: &AnalyzeReport) -> String {
    let mut s = format!("# iosat analyze\n\n{}\n", headline(r));
    if let Some(v) = &r.verdict {
        s.push_str("\n## Levels\n\n");
        s.push_str(&levels_table(&rows(r), Some(v)).to_markdown());
        s.push_str("\n## Verdict\n\n");
        s.push_str(&bullets(&v.summary, ""));
    }
    if !r.devices.is_empty() {
        s.push_str("\n## Devices\n\n");
        s.push_str(&devices_table(r).to_markdown());
        s.push_str("\n## Diagnosis\n\n");
        s.push_str(&bullets(&diagnosis(r), ""));
    }
    if !r.source.notes.is_empty() {
        s.push_str("\n## Notes\n\n");
        s.push_str(&bullets(&r.source.notes, ""));
    }
    s
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
