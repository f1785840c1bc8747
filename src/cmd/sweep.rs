//! `iosat sweep`: orchestration only — validated spec in, target opened, levels run one by one
//! with the kernel's view sampled around each, the report written after every level, the
//! verdict, the output. Ctrl-C stops the level in flight, keeps what was measured, removes the
//! test file, exits 130.

use crate::cli::sweep::SweepArgs;
use crate::config::sweep::{self as config, EngineChoice, Levels, SweepSpec};
use crate::error::{Error, Result};
use crate::load::plan::auto_next;
use crate::load::result::{
    pattern_name, LevelResult, SweepReport, TargetInfo, WorkloadInfo, SCHEMA_VERSION,
};
use crate::load::target::{self, Target, TargetKind};
use crate::load::workload::{now_ns, split_concurrency};
use crate::load::{Engine, LevelCtl, LevelSpec, LevelStats};
use crate::monitor::watch::{DeviceWatch, Mark};
use crate::profile;
use crate::report::table::Table;
use crate::report::Format;
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering::Relaxed;

pub fn run(args: &SweepArgs) -> anyhow::Result<i32> {
    let spec = config::build(args)?;
    // Ctrl-C, SIGTERM, SIGHUP: stop the level, keep what was measured, remove the test file.
    // SA_RESTART keeps pread/pwrite and io_uring_enter from failing with EINTR in the workers.
    crate::sys::signal::catch_stop_signals(true);
    Ok(sweep(&spec)?)
}

/// A ready engine and a one-line remark about how it was chosen (fallback), if any.
type Chosen = (Box<dyn Engine + Send>, Option<String>);

fn make_engine(spec: &SweepSpec, target: Option<&Target>) -> Result<Chosen> {
    use crate::load::{sync::SyncEngine, uring};
    match &spec.engine {
        EngineChoice::Sim(text) => {
            let sim: crate::load::sim::SimSpec = text.parse()?;
            Ok((Box::new(crate::load::sim::SimEngine::new(sim)), None))
        }
        EngineChoice::Sync | EngineChoice::Uring => {
            let t = target.expect("real engines have a target");
            let fd = std::os::fd::AsRawFd::as_raw_fd(&t.file);
            if spec.engine == EngineChoice::Uring {
                match uring::probe(fd) {
                    None => {
                        return Ok((
                            Box::new(uring::UringEngine::new(fd, t.size_bytes, t.path.clone())),
                            None,
                        ))
                    }
                    Some(why) => {
                        let note = format!("{why}: using the sync engine instead");
                        return Ok((
                            Box::new(SyncEngine::new(fd, t.size_bytes, t.path.clone())),
                            Some(note),
                        ));
                    }
                }
            }
            Ok((
                Box::new(SyncEngine::new(fd, t.size_bytes, t.path.clone())),
                None,
            ))
        }
    }
}

fn sim_text(spec: &SweepSpec) -> &str {
    match &spec.engine {
        EngineChoice::Sim(s) => s,
        _ => "",
    }
}

/// The kernel's view of the disk under the target (monitor::watch): the block device itself,
/// or the whole disk holding the file; None when that disk is not in diskstats (tmpfs,
/// overlay, network filesystems).
fn kernel_watch(spec: &SweepSpec, target: &Target) -> Option<DeviceWatch> {
    let root = &spec.root;
    let w = match target.kind {
        TargetKind::BlockDevice => DeviceWatch::for_node(root, &target.path).ok()?,
        _ => DeviceWatch::for_path(root, &target.path).ok()?,
    };
    w.mark().map(|_| w)
}

fn kernel_view(
    w: &DeviceWatch,
    a: &Mark,
    b: &Mark,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    let d = w.delta(a, b)?;
    Some(crate::monitor::DiskRates::from_delta(&d).sysstat_json())
}

/// The progress bar on stderr (only when stderr is a terminal).
struct Progress {
    on: bool,
    total_levels: Option<usize>,
}

impl Progress {
    fn draw(&self, idx: usize, ls: &LevelSpec, elapsed_ns: u64, ops: u64, measured_ns: u64) {
        if !self.on {
            return;
        }
        let total = self
            .total_levels
            .map(|n| n.to_string())
            .unwrap_or_else(|| "auto".into());
        let span = ls.ramp_ns + ls.duration_ns;
        let frac = (elapsed_ns as f64 / span.max(1) as f64).clamp(0.0, 1.0);
        let width = 20;
        let filled = (frac * width as f64).round() as usize;
        let phase = if elapsed_ns < ls.ramp_ns {
            "ramp"
        } else {
            "measure"
        };
        let iops = if measured_ns > 0 {
            format!("{:.0} IOPS", ops as f64 / (measured_ns as f64 / 1e9))
        } else {
            String::new()
        };
        let mut e = std::io::stderr().lock();
        let _ = write!(
            e,
            "\r\x1b[2Klevel {}/{} concurrency {:>4} [{}{}] {:<7} {}",
            idx + 1,
            total,
            ls.concurrency(),
            "#".repeat(filled),
            "-".repeat(width - filled),
            phase,
            iops
        );
        let _ = e.flush();
    }

    fn level_done(&self, r: &LevelResult) {
        if !self.on {
            return;
        }
        let _ = writeln!(
            std::io::stderr().lock(),
            "\r\x1b[2Kconcurrency {:>4}: {:>10.0} IOPS  avg {} µs  p95 {} µs",
            r.concurrency,
            r.iops,
            us(r.latency_ns.mean),
            us(r.latency_ns.p95)
        );
    }

    fn clear(&self) {
        if self.on {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

/// Run one level: the engine in its own thread, this thread watching Ctrl-C, the progress bar
/// and the kernel samples at the start and end of the measured window.
fn run_level(
    engine: &mut (dyn Engine + Send),
    ls: &LevelSpec,
    watch: Option<&DeviceWatch>,
    progress: &Progress,
    idx: usize,
) -> Result<(
    LevelStats,
    Option<serde_json::Map<String, serde_json::Value>>,
)> {
    let ctl = LevelCtl::default();
    let simulated = engine.name() == "sim";
    std::thread::scope(|s| {
        let handle = s.spawn(|| engine.run_level(ls, &ctl));
        let t0 = now_ns();
        let measure_at = t0 + ls.ramp_ns;
        let end_at = measure_at + ls.duration_ns;
        let mut first = None;
        let mut last = None;
        let mut next_draw = t0;
        while !handle.is_finished() {
            if crate::sys::signal::stop_requested() {
                ctl.stop.store(true, Relaxed);
            }
            let now = now_ns();
            if !simulated {
                if let Some(w) = watch {
                    if first.is_none() && now >= measure_at {
                        first = w.mark();
                    }
                    if last.is_none() && now >= end_at {
                        last = w.mark();
                    }
                }
                if now >= next_draw {
                    let measured = now.saturating_sub(measure_at).min(ls.duration_ns);
                    progress.draw(idx, ls, now - t0, ctl.ops_done.load(Relaxed), measured);
                    next_draw = now + 200_000_000;
                }
            }
            // Wake for the next event: a sample point, a redraw, or a Ctrl-C check.
            let mut wake = now + 50_000_000;
            for t in [measure_at, end_at] {
                if t > now {
                    wake = wake.min(t);
                }
            }
            let nap = wake.saturating_sub(now).max(500_000);
            std::thread::sleep(std::time::Duration::from_nanos(nap));
        }
        let stats = handle.join().expect("engine thread panicked")?;
        let kernel = match (watch, first) {
            (Some(w), Some(a)) => {
                let b = last.or_else(|| w.mark());
                b.and_then(|b| kernel_view(w, &a, &b))
            }
            _ => None,
        };
        Ok((stats, kernel))
    })
}

fn sweep(spec: &SweepSpec) -> Result<i32> {
    let progress = Progress {
        on: !spec.no_progress && std::io::stderr().is_terminal(),
        total_levels: match &spec.levels {
            Levels::List(v) => Some(v.len()),
            Levels::Auto => None,
        },
    };
    let is_sim = matches!(spec.engine, EngineChoice::Sim(_));
    let target = if is_sim {
        None
    } else {
        if progress.on && spec.target.path.as_ref().map_or(true, |p| p.is_dir()) {
            let _ = write!(std::io::stderr().lock(), "laying out the test file ...");
        }
        let t = target::open(&spec.target, crate::sys::signal::stop_flag());
        progress.clear();
        Some(t?)
    };
    if let Some(t) = &target {
        if t.size_bytes < spec.block_size {
            return Err(Error::usage(
                "TARGET",
                t.path.display(),
                format!("is smaller than one block of {} bytes", spec.block_size),
            ));
        }
    }
    let (mut engine, engine_note) = make_engine(spec, target.as_ref())?;
    let watch = target.as_ref().and_then(|t| kernel_watch(spec, t));

    let mut notes: Vec<String> = Vec::new();
    if let Some(t) = &target {
        // Warnings that the numbers may not be about a disk (tmpfs, page cache) go to stderr
        // too, so `--json > file` does not hide them.
        for n in &t.notes {
            eprintln!("iosat: warning: {n}");
        }
        notes.extend(t.notes.iter().cloned());
    }
    if let Some(n) = engine_note {
        eprintln!("iosat: note: {n}");
        notes.push(n);
    }
    let (pattern, read_pct) = pattern_name(spec.pattern);
    let mut report = SweepReport {
        schema_version: SCHEMA_VERSION,
        kind: "sweep".into(),
        iosat_version: env!("CARGO_PKG_VERSION").into(),
        started_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        target: match &target {
            Some(t) => TargetInfo {
                path: t.path.display().to_string(),
                kind: match t.kind {
                    TargetKind::TempFile => "temp-file",
                    TargetKind::File => "file",
                    TargetKind::BlockDevice => "block-device",
                }
                .into(),
                size_bytes: t.size_bytes,
                disk_device: watch.as_ref().map(DeviceWatch::friendly_name),
                logical_block_size: t.dio_align,
            },
            None => TargetInfo {
                path: String::new(),
                kind: "none".into(),
                size_bytes: 0,
                disk_device: None,
                logical_block_size: 512,
            },
        },
        workload: WorkloadInfo {
            engine: engine.name().to_string(),
            engine_spec: sim_text(spec).to_string(),
            pattern: pattern.into(),
            read_pct,
            block_size: spec.block_size,
            direct: spec.target.direct,
            duration_ns: spec.duration_ns,
            ramp_ns: spec.ramp_ns,
            levels: spec.levels_text.clone(),
            max_threads: spec.max_threads,
            seed: spec.seed,
        },
        levels: Vec::new(),
        verdict: None,
        complete: false,
        interrupted: false,
        notes,
    };

    let mut page = spec.html.as_deref().map(crate::report::PageFile::new);
    let mut out_file = spec
        .output
        .as_deref()
        .map(|p| crate::report::PageFile::for_flag("-o", p));
    let mut idx = 0usize;
    loop {
        let conc = match &spec.levels {
            Levels::List(v) => match v.get(idx) {
                Some(&c) => c,
                None => break,
            },
            Levels::Auto => match auto_next(&report.levels, config::MAX_CONCURRENCY) {
                Some(c) => c,
                None => break,
            },
        };
        if crate::sys::signal::stop_requested() {
            report.interrupted = true;
            break;
        }
        let (threads, queue_depth) = match engine.name() {
            "sync" => (conc, 1),
            _ => split_concurrency(conc, spec.max_threads),
        };
        let ls = LevelSpec {
            threads,
            queue_depth,
            pattern: spec.pattern,
            block_size: spec.block_size,
            ramp_ns: spec.ramp_ns,
            duration_ns: spec.duration_ns,
            seed: spec.seed.wrapping_add(u64::from(conc)),
        };
        let (stats, kernel) = run_level(engine.as_mut(), &ls, watch.as_ref(), &progress, idx)?;
        if let Some(r) = LevelResult::new(&ls, &stats, kernel) {
            progress.level_done(&r);
            report.levels.push(r);
        }
        if stats.interrupted || crate::sys::signal::stop_requested() {
            report.interrupted = true;
        }
        report.verdict = verdict(&report.levels);
        // Partial results after every level (DESIGN.md §3.4).
        if let Some(out) = out_file.as_mut() {
            out.write(&render(&report, spec.format))?;
        }
        write_page(page.as_mut(), &report)?;
        if report.interrupted {
            break;
        }
        idx += 1;
    }
    progress.clear();
    report.complete = !report.interrupted;
    report.verdict = verdict(&report.levels);
    let text = render(&report, spec.format);
    if let Some(out) = out_file.as_mut() {
        out.write(&text)?;
    }
    write_page(page.as_mut(), &report)?;
    {
        let mut so = std::io::stdout().lock();
        so.write_all(text.as_bytes())
            .and_then(|_| so.flush())
            .map_err(|e| Error::io("<stdout>", e))?;
    }
    if spec.save_profile && report.complete {
        save_profile(spec, &report, watch.as_ref())?;
    }
    drop(target);
    if report.interrupted {
        return Err(Error::Interrupted);
    }
    Ok(crate::error::exit::OK)
}

/// `--html`: the page `iosat report` draws for this result.
fn write_page(page: Option<&mut crate::report::PageFile>, report: &SweepReport) -> Result<()> {
    let Some(page) = page else { return Ok(()) };
    let doc = serde_json::to_value(report).expect("report serialises");
    page.write(&crate::report::html::sweep_page(&doc))
}

fn save_profile(spec: &SweepSpec, report: &SweepReport, watch: Option<&DeviceWatch>) -> Result<()> {
    let dir = spec.profile_dir.clone().ok_or_else(|| {
        Error::usage(
            "--save-profile",
            "",
            "needs a profile directory: set --profile-dir, $XDG_STATE_HOME or $HOME",
        )
    })?;
    let Some(id) = watch.and_then(|w| profile::device_id(&w.root, &w.dev)) else {
        let _ = writeln!(
            std::io::stderr().lock(),
            "iosat: note: no device identity known for this target; profile not saved"
        );
        return Ok(());
    };
    let json = serde_json::to_string_pretty(report).expect("report serialises");
    let path = profile::save(&dir, &id, &json)?;
    let _ = writeln!(
        std::io::stderr().lock(),
        "iosat: profile saved to {}",
        path.display()
    );
    Ok(())
}

/// The verdict over the levels measured so far (None before the first level).
fn verdict(levels: &[LevelResult]) -> Option<crate::analysis::Verdict> {
    if levels.is_empty() {
        return None;
    }
    let points: Vec<_> = levels.iter().map(|l| l.point()).collect();
    Some(crate::analysis::analyze(&points))
}

/// Microseconds with sensible precision for a table cell.
fn us(ns: u64) -> String {
    let v = ns as f64 / 1e3;
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 1000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

fn kernel_cell(r: &LevelResult, key: &str, decimals: usize) -> String {
    r.kernel
        .as_ref()
        .and_then(|k| k.get(key))
        .and_then(|v| v.as_f64())
        .map(|v| format!("{v:.decimals$}"))
        .unwrap_or_else(|| "-".into())
}

fn level_table(report: &SweepReport) -> Table {
    let mut t = Table::new([
        "conc", "IOPS", "MB/s", "min_us", "avg_us", "p50_us", "p90_us", "p95_us", "p99_us",
        "p99.9_us", "max_us", "x_base", "r/s", "w/s", "r_await", "w_await", "aqu-sz", "%util",
        "little",
    ]);
    let findings = report.verdict.as_ref().map(|v| &v.levels);
    for (i, r) in report.levels.iter().enumerate() {
        let l = &r.latency_ns;
        let sat = findings
            .and_then(|f| f.get(i))
            .map(|f| format!("{:.2}x", f.saturation_avg))
            .unwrap_or_else(|| "-".into());
        let little = match (r.littles_law.ok, r.littles_law.kernel_ok) {
            (true, Some(false)) => {
                format!("aqu {:.1}?", r.littles_law.kernel_aqu_sz.unwrap_or(0.0))
            }
            (true, _) => "ok".to_string(),
            (false, _) => format!("{:.1}!", r.littles_law.implied_concurrency),
        };
        t.push([
            format!("{}{}", r.concurrency, if r.interrupted { "*" } else { "" }),
            format!("{:.0}", r.iops),
            format!("{:.1}", r.bytes_per_s / 1e6),
            us(l.min),
            us(l.mean),
            us(l.p50),
            us(l.p90),
            us(l.p95),
            us(l.p99),
            us(l.p999),
            us(l.max),
            sat,
            kernel_cell(r, "r/s", 0),
            kernel_cell(r, "w/s", 0),
            kernel_cell(r, "r_await", 2),
            kernel_cell(r, "w_await", 2),
            kernel_cell(r, "aqu-sz", 2),
            kernel_cell(r, "util", 1),
            little,
        ]);
    }
    t
}

fn split_table(report: &SweepReport) -> Option<Table> {
    if !report.levels.iter().any(|l| l.read.is_some()) {
        return None;
    }
    let mut t = Table::new([
        "conc", "dir", "IOPS", "MB/s", "avg_us", "p50_us", "p95_us", "p99_us", "p99.9_us", "max_us",
    ]);
    t.right[1] = false;
    for r in &report.levels {
        for (name, d) in [("read", &r.read), ("write", &r.write)] {
            if let Some(d) = d {
                let l = &d.latency_ns;
                t.push([
                    r.concurrency.to_string(),
                    name.to_string(),
                    format!("{:.0}", d.iops),
                    format!("{:.1}", d.bytes_per_s / 1e6),
                    us(l.mean),
                    us(l.p50),
                    us(l.p95),
                    us(l.p99),
                    us(l.p999),
                    us(l.max),
                ]);
            }
        }
    }
    Some(t)
}

fn header_line(report: &SweepReport) -> String {
    let w = &report.workload;
    let t = &report.target;
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
    s
}

fn verdict_lines(report: &SweepReport) -> Vec<String> {
    // The analysis' own sentences (baseline, knee, max useful IOPS, overload, queueing, cap,
    // USL, the %util lesson, Little's law), the same ones `iosat analyze` prints.
    match &report.verdict {
        Some(v) => v.summary.clone(),
        None => vec!["no level completed: no verdict".into()],
    }
}

/// The report in the chosen format (also what `-o` gets).
fn render(report: &SweepReport, format: Format) -> String {
    match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(report).expect("report serialises");
            s.push('\n');
            s
        }
        Format::Csv => csv(report).to_csv(),
        Format::Markdown => {
            let mut s = format!(
                "## iosat sweep\n\n{}\n\n",
                header_line(report).replace('\n', "  \n")
            );
            s.push_str(&level_table(report).to_markdown());
            if let Some(t) = split_table(report) {
                s.push('\n');
                s.push_str(&t.to_markdown());
            }
            s.push_str("\n### Verdict\n\n");
            for l in verdict_lines(report) {
                s.push_str(&format!("- {l}\n"));
            }
            for n in &report.notes {
                s.push_str(&format!("- note: {n}\n"));
            }
            s
        }
        Format::Text { .. } | Format::Html => {
            let mut s = header_line(report);
            s.push_str("\n\n");
            s.push_str(&level_table(report).to_text());
            if let Some(t) = split_table(report) {
                s.push('\n');
                s.push_str(&t.to_text());
            }
            if report.levels.iter().any(|l| l.interrupted) {
                s.push_str("* level cut short by Ctrl-C\n");
            }
            s.push_str("x_base = avg latency / baseline avg; r/s .. %util = the kernel's view of the disk (iostat -x); little = Little's law check (IOPS x latency vs concurrency)\n\nVerdict:\n");
            for l in verdict_lines(report) {
                s.push_str("  ");
                s.push_str(&l);
                s.push('\n');
            }
            for n in &report.notes {
                s.push_str(&format!("note: {n}\n"));
            }
            s
        }
    }
}

fn csv(report: &SweepReport) -> Table {
    let kernel_keys = ["r/s", "w/s", "r_await", "w_await", "aqu-sz", "util"];
    let mut headers: Vec<String> = [
        "concurrency",
        "threads",
        "iodepth",
        "elapsed_ns",
        "ios",
        "iops",
        "bytes_per_s",
        "lat_min_ns",
        "lat_mean_ns",
        "lat_p50_ns",
        "lat_p90_ns",
        "lat_p95_ns",
        "lat_p99_ns",
        "lat_p999_ns",
        "lat_max_ns",
        "read_iops",
        "read_lat_mean_ns",
        "read_lat_p99_ns",
        "write_iops",
        "write_lat_mean_ns",
        "write_lat_p99_ns",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    headers.extend(kernel_keys.iter().map(|k| format!("kernel_{k}")));
    headers.extend(["littles_implied_concurrency", "littles_ok", "interrupted"].map(String::from));
    let mut t = Table::new(headers);
    for r in &report.levels {
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
        row.extend(
            [l.min, l.mean, l.p50, l.p90, l.p95, l.p99, l.p999, l.max].map(|v| v.to_string()),
        );
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
        for k in kernel_keys {
            row.push(
                r.kernel
                    .as_ref()
                    .and_then(|m| m.get(k))
                    .and_then(|v| v.as_f64())
                    .map(|v| format!("{v}"))
                    .unwrap_or_default(),
            );
        }
        row.push(format!("{:.3}", r.littles_law.implied_concurrency));
        row.push(r.littles_law.ok.to_string());
        row.push(r.interrupted.to_string());
        t.push(row);
    }
    t
}
