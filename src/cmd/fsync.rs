//! `iosat fsync`: orchestration (spec → run → print → exit code) and the renderings of an
//! FsyncReport as text, Markdown, CSV and JSON through report::table::Table.

use crate::cli::fsync::FsyncArgs;
use crate::error::{exit, Error};
use crate::fsync::report::*;
use crate::report::table::Table;
use crate::report::Format;
use std::io::{IsTerminal, Write};

pub fn run(args: &FsyncArgs) -> anyhow::Result<i32> {
    let run = crate::config::fsync::build(args)?;
    let spec = &run.spec;
    crate::fsync::io::install_sigint_handler();
    let tty = std::io::stderr().is_terminal();
    let mut progress = |line: &str| {
        if tty {
            eprintln!("iosat fsync: {line}");
        }
    };
    let report = crate::fsync::run(spec, &mut progress)?;
    let out = match run.format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&report)?;
            s.push('\n');
            s
        }
        Format::Csv => render_csv(&report),
        Format::Markdown => render_markdown(&report),
        Format::Text { .. } | Format::Html => render_text(&report),
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    if let Some(p) = &run.html {
        let doc = serde_json::to_value(&report)?;
        crate::report::PageFile::new(p).write(&crate::report::fsync::page_html(&doc))?;
    }
    if report.interrupted {
        eprintln!("iosat: interrupted: results so far printed, test files removed");
        return Ok(exit::INTERRUPTED);
    }
    if report.verification_failed() {
        let first = report
            .cases
            .iter()
            .filter_map(|c| {
                c.verify_error
                    .as_ref()
                    .map(|e| format!("{} {} {} B: {e}", c.method.name(), c.mode.name(), c.size))
            })
            .chain(report.group_commit.iter().flat_map(|g| {
                g.levels.iter().filter_map(|l| {
                    l.verify_error
                        .as_ref()
                        .map(|e| format!("group commit {} x{}: {e}", l.layout.name(), l.committers))
                })
            }))
            .next()
            .unwrap_or_default();
        return Err(Error::Verify(first).into());
    }
    Ok(exit::OK)
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn opt_f(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

fn size_label(b: u32) -> String {
    if b >= 1024 && b % 1024 == 0 {
        format!("{}K", b / 1024)
    } else {
        b.to_string()
    }
}

/// The per-case table (seed 002's "rate, latency" plus percentiles and flush counters).
pub fn cases_table(r: &FsyncReport) -> Table {
    let mut head = vec![
        "method",
        "mode",
        "size",
        "commits/s",
        "min",
        "avg",
        "p50",
        "p95",
        "p99",
        "p99.9",
        "max",
        "flushes",
        "f/s",
        "f_await",
    ];
    let tps = r.capacity.target_tps;
    let conn_head = tps.map(|t| format!("conns@{t}tps"));
    if let Some(h) = &conn_head {
        head.push(h.as_str());
    }
    head.push("verify");
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
            size_label(c.size),
            format!("{:.1}", c.commits_per_s),
            ms(l.min),
            ms(l.mean),
            ms(l.p50),
            ms(l.p95),
            ms(l.p99),
            ms(l.p999),
            ms(l.max),
            fl.map(|f| f.flushes.to_string())
                .unwrap_or_else(|| "-".into()),
            opt_f(fl.map(|f| f.f_s), 1),
            opt_f(fl.and_then(|f| f.f_await_ms), 3),
        ];
        if tps.is_some() {
            row.push(
                c.connections_for_target_tps
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "-".into()),
            );
        }
        let mut v = match c.verify {
            VerifyStatus::Ok => "ok".to_string(),
            VerifyStatus::Skipped => "skipped".to_string(),
            VerifyStatus::Failed => "FAILED".to_string(),
        };
        if c.stopped_at_size_cap {
            v.push_str(" (size cap)");
        }
        if c.interrupted {
            v.push_str(" (interrupted)");
        }
        row.push(v);
        t.push(row);
    }
    t
}

pub fn group_table(g: &GroupCommit) -> Table {
    let mut t = Table::new([
        "committers",
        "layout",
        "commits/s",
        "fsyncs/s",
        "commits/fsync",
        "avg",
        "p50",
        "p95",
        "p99",
        "max",
        "flushes",
        "verify",
    ]);
    t.right[1] = false;
    t.right[11] = false;
    for l in &g.levels {
        let lat = &l.latency_ns;
        t.push([
            l.committers.to_string(),
            l.layout.name().to_string(),
            format!("{:.1}", l.commits_per_s),
            format!(
                "{:.1}",
                if l.elapsed_ns > 0 {
                    l.syncs as f64 * 1e9 / l.elapsed_ns as f64
                } else {
                    0.0
                }
            ),
            format!("{:.2}", l.commits_per_sync),
            ms(lat.mean),
            ms(lat.p50),
            ms(lat.p95),
            ms(lat.p99),
            ms(lat.max),
            l.device_flushes
                .as_ref()
                .map(|f| f.flushes.to_string())
                .unwrap_or_else(|| "-".into()),
            match l.verify {
                VerifyStatus::Ok => "ok",
                VerifyStatus::Skipped => "skipped",
                VerifyStatus::Failed => "FAILED",
            }
            .to_string(),
        ]);
    }
    t
}

fn capacity_lines(r: &FsyncReport) -> Vec<String> {
    let mut out = Vec::new();
    let describe = |label: &str, c: &CapacityLine| {
        let mut s = format!(
            "{label}: {} {} {} B, {} ms per commit → {:.0} commits/s per connection",
            c.method.name(),
            c.mode.name(),
            c.size,
            ms(c.mean_latency_ns),
            c.per_connection_commits_per_s
        );
        if let (Some(t), Some(n)) = (r.capacity.target_tps, c.connections_for_target_tps) {
            s.push_str(&format!(
                "; {t} commits/s need at least {n} connection{}",
                if n == 1 { "" } else { "s" }
            ));
        }
        s
    };
    if let Some(c) = &r.capacity.fsync_reference {
        out.push(describe("write + fsync", c));
    }
    if let Some(c) = &r.capacity.best_durable {
        out.push(describe("fastest durable", c));
    }
    if out.is_empty() {
        out.push("no durable case measured".into());
    }
    out
}

fn device_line(d: &DeviceSection) -> String {
    match &d.name {
        Some(name) => format!(
            "{name} ({}){}: write_cache={} fua={} rotational={} logical_block_size={}",
            d.dev.as_deref().unwrap_or("?"),
            d.model
                .as_deref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default(),
            d.write_cache
                .as_deref()
                .map(|s| format!("\"{s}\""))
                .unwrap_or_else(|| "?".into()),
            d.fua
                .map(|b| (b as u8).to_string())
                .unwrap_or_else(|| "?".into()),
            d.rotational
                .map(|b| (b as u8).to_string())
                .unwrap_or_else(|| "?".into()),
            d.logical_block_size
                .map(|b| b.to_string())
                .unwrap_or_else(|| "?".into()),
        ),
        None => "unknown (not a block device iosat could identify)".into(),
    }
}

pub fn render_text(r: &FsyncReport) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "iosat fsync: {} ({} s per case, latency in ms; test files removed)\n",
        r.dir, r.duration_s_per_case
    ));
    s.push_str(&format!("device: {}\n\n", device_line(&r.device)));
    s.push_str(&cases_table(r).to_text());
    for k in &r.skipped {
        s.push_str(&format!(
            "skipped {} {} {} B: {}\n",
            k.method.name(),
            k.mode.name(),
            k.size,
            k.reason
        ));
    }
    s.push_str("\nCommit capacity (one connection commits once per latency):\n");
    for l in capacity_lines(r) {
        s.push_str(&format!("  {l}\n"));
    }
    if let Some(g) = &r.group_commit {
        s.push_str(&format!(
            "\nGroup commit ({} of {} B, {} s per level):\n",
            g.method.name(),
            g.size,
            r.duration_s_per_case
        ));
        s.push_str(&group_table(g).to_text());
        for l in &g.summary {
            s.push_str(&format!("  {l}\n"));
        }
    }
    s.push_str(&format!(
        "\nFlush honesty: {}\n",
        r.device.flush_verdict.name()
    ));
    for l in &r.device.flush_reasoning {
        s.push_str(&format!("  {l}\n"));
    }
    for w in &r.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    if r.interrupted {
        s.push_str("interrupted: the results above are partial\n");
    }
    s
}

pub fn render_markdown(r: &FsyncReport) -> String {
    let mut s = format!(
        "## iosat fsync: {}\n\n{} s per case, latency in ms. Device: {}\n\n",
        r.dir,
        r.duration_s_per_case,
        device_line(&r.device)
    );
    s.push_str(&cases_table(r).to_markdown());
    if !r.skipped.is_empty() {
        s.push('\n');
        for k in &r.skipped {
            s.push_str(&format!(
                "- skipped {} {} {} B: {}\n",
                k.method.name(),
                k.mode.name(),
                k.size,
                k.reason
            ));
        }
    }
    s.push_str("\n### Commit capacity\n\n");
    for l in capacity_lines(r) {
        s.push_str(&format!("- {l}\n"));
    }
    if let Some(g) = &r.group_commit {
        s.push_str(&format!(
            "\n### Group commit ({} of {} B)\n\n",
            g.method.name(),
            g.size
        ));
        s.push_str(&group_table(g).to_markdown());
        s.push('\n');
        for l in &g.summary {
            s.push_str(&format!("- {l}\n"));
        }
    }
    s.push_str(&format!(
        "\n### Flush honesty: `{}`\n\n",
        r.device.flush_verdict.name()
    ));
    for l in &r.device.flush_reasoning {
        s.push_str(&format!("- {l}\n"));
    }
    if !r.warnings.is_empty() {
        s.push('\n');
        for w in &r.warnings {
            s.push_str(&format!("> warning: {w}\n"));
        }
    }
    s
}

/// One CSV table: a row per case and per group-commit level, raw numbers (ns).
pub fn render_csv(r: &FsyncReport) -> String {
    // One CSV writer for a live run and for `iosat report` of its JSON: the same bytes.
    crate::report::fsync::csv(&serde_json::to_value(r).expect("fsync report serialises"))
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
        CaseResult {
            method,
            size,
            mode,
            description: method.describe(),
            durable: method.durable(),
            commits: 1_000_000 / (p50_us * 11 / 10),
            elapsed_ns: 1_000_000_000,
            commits_per_s: 1e9 / l.mean as f64,
            latency_ns: l,
            per_connection_commits_per_s: 1e9 / l.mean as f64,
            connections_for_target_tps: Some(connections_for(200.0, l.mean)),
            device_flushes: flushes.map(|f| FlushStats {
                flushes: f,
                f_s: f as f64,
                f_await_ms: (f > 0).then_some(0.125),
                flush_concurrency: Some(0.1),
                interval_s: 1.0,
            }),
            verify: VerifyStatus::Ok,
            verify_error: None,
            stopped_at_size_cap: false,
            interrupted: false,
        }
    }

    /// The seed's 7200 rpm disk: 18 ms fsync, 8.5 ms fdatasync, 0.22 ms O_DIRECT into the cache.
    fn seed_report() -> FsyncReport {
        let cases = vec![
            case(Method::Fsync, Mode::Overwrite, 512, 18_000, Some(112)),
            case(Method::Fdatasync, Mode::Overwrite, 512, 8_500, Some(118)),
            case(Method::Odirect, Mode::Overwrite, 512, 220, Some(0)),
        ];
        let level = |n: u32, layout: Layout, cps: f64, per_sync: f64| GroupLevel {
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
            verify: VerifyStatus::Ok,
            verify_error: None,
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
            schema_version: SCHEMA_VERSION,
            command: "fsync",
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
            warnings: vec![],
        }
    }

    #[test]
    fn text_output() {
        insta::assert_snapshot!(render_text(&seed_report()));
    }

    #[test]
    fn markdown_output() {
        insta::assert_snapshot!(render_markdown(&seed_report()));
    }

    #[test]
    fn csv_output() {
        insta::assert_snapshot!(render_csv(&seed_report()));
    }

    #[test]
    fn json_keys_are_the_issue_s() {
        let v = serde_json::to_value(seed_report()).unwrap();
        assert_eq!(v["schema_version"], 1);
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
