//! The level driver of `iosat sweep`: a [`SweepPlan`] run level by level on an [`Engine`], the
//! kernel's view of the disk sampled around each measured window ([`DeviceWatch`]), each level
//! turned into a [`LevelResult`], the verdict refreshed and the report so far handed to a
//! callback after every level (partial results, DESIGN.md §3.4: a sweep interrupted at level 7
//! keeps 1–6). Ctrl-C (sys::signal) stops the level in flight. Live progress goes to a
//! [`LevelProgress`] (the terminal bar lives in ui/). Must not import cli/, cmd/, ui/ or report/.

use super::plan::Levels;
use super::result::{
    pattern_name, KernelView, LevelResult, SweepReport, TargetInfo, WorkloadInfo, SCHEMA_VERSION,
};
use super::target::{Target, TargetKind};
use super::workload::{now_ns, split_concurrency};
use super::{Engine, LevelCtl, LevelSpec, LevelStats, Pattern};
use crate::error::Result;
use crate::monitor::watch::{DeviceWatch, Mark};
use crate::monitor::DiskRates;
use crate::sys::signal::stop_requested;
use std::sync::atomic::Ordering::Relaxed;

/// What a sweep runs, validated (config/sweep.rs builds it).
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPlan {
    pub levels: Levels,
    /// The levels flag as given, for the report.
    pub levels_text: String,
    pub pattern: Pattern,
    pub block_size: u64,
    pub direct: bool,
    pub ramp_ns: u64,
    pub duration_ns: u64,
    /// uring and sim: the most worker threads a level is spread over.
    pub max_threads: u32,
    pub seed: u64,
}

/// Live progress of a running sweep (drawn on a terminal by ui::progress).
pub trait LevelProgress {
    /// About every 200 ms while level `idx` runs: time since its start, I/Os completed in the
    /// measured phase, and how much of the measured phase has passed.
    fn draw(&self, idx: usize, ls: &LevelSpec, elapsed_ns: u64, ops: u64, measured_ns: u64);
    /// A level finished and was kept.
    fn level_done(&self, r: &LevelResult);
}

/// The kernel's view of the disk under the target: the block device itself, or the whole disk
/// holding the file; None when that disk is not in diskstats (tmpfs, overlay, network
/// filesystems).
pub fn kernel_watch(root: &crate::sys::Root, target: &Target) -> Option<DeviceWatch> {
    let w = match target.kind {
        TargetKind::BlockDevice => DeviceWatch::for_node(root, &target.path).ok()?,
        _ => DeviceWatch::for_path(root, &target.path).ok()?,
    };
    w.mark().map(|_| w)
}

/// The report before its first level: what runs, against what, and the notes so far.
pub fn start_report(
    plan: &SweepPlan,
    engine: &dyn Engine,
    engine_spec: &str,
    target: Option<&Target>,
    watch: Option<&DeviceWatch>,
    notes: Vec<String>,
) -> SweepReport {
    let (pattern, read_pct) = pattern_name(plan.pattern);
    SweepReport {
        schema_version: SCHEMA_VERSION,
        kind: "sweep".into(),
        iosat_version: env!("CARGO_PKG_VERSION").into(),
        started_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        target: match target {
            Some(t) => TargetInfo {
                path: t.path.display().to_string(),
                kind: match t.kind {
                    TargetKind::TempFile => "temp-file",
                    TargetKind::File => "file",
                    TargetKind::BlockDevice => "block-device",
                }
                .into(),
                size_bytes: t.size_bytes,
                disk_device: watch.map(DeviceWatch::friendly_name),
                logical_block_size: t.dio_align,
            },
            None => TargetInfo {
                kind: "none".into(),
                logical_block_size: 512,
                ..Default::default()
            },
        },
        workload: WorkloadInfo {
            engine: engine.name().to_string(),
            engine_spec: engine_spec.to_string(),
            pattern: pattern.into(),
            read_pct,
            block_size: plan.block_size,
            direct: plan.direct,
            duration_ns: plan.duration_ns,
            ramp_ns: plan.ramp_ns,
            levels: plan.levels_text.clone(),
            max_threads: plan.max_threads,
            seed: plan.seed,
        },
        notes,
        ..Default::default()
    }
}

/// Run the plan's levels into `report` until they are done or Ctrl-C; `after_level` gets the
/// report after each level (verdict refreshed), to write partial results. On return the
/// report is final: `complete` unless interrupted.
pub fn run_levels(
    engine: &mut (dyn Engine + Send),
    plan: &SweepPlan,
    watch: Option<&DeviceWatch>,
    report: &mut SweepReport,
    progress: &dyn LevelProgress,
    after_level: &mut dyn FnMut(&SweepReport) -> Result<()>,
) -> Result<()> {
    let mut idx = 0usize;
    while let Some(conc) = plan.levels.next(idx, &report.levels) {
        if stop_requested() {
            report.interrupted = true;
            break;
        }
        let (threads, queue_depth) = match engine.name() {
            "sync" => (conc, 1),
            _ => split_concurrency(conc, plan.max_threads),
        };
        let ls = LevelSpec {
            threads,
            queue_depth,
            pattern: plan.pattern,
            block_size: plan.block_size,
            ramp_ns: plan.ramp_ns,
            duration_ns: plan.duration_ns,
            seed: plan.seed.wrapping_add(u64::from(conc)),
        };
        let (stats, kernel) = run_level(engine, &ls, watch, progress, idx)?;
        if let Some(r) = LevelResult::new(&ls, &stats, kernel) {
            progress.level_done(&r);
            report.levels.push(r);
        }
        if stats.interrupted || stop_requested() {
            report.interrupted = true;
        }
        report.refresh_verdict();
        after_level(report)?;
        if report.interrupted {
            break;
        }
        idx += 1;
    }
    report.complete = !report.interrupted;
    report.refresh_verdict();
    Ok(())
}

/// Run one level: the engine in its own thread, this thread watching Ctrl-C, the progress bar
/// and the kernel samples at the start and end of the measured window.
fn run_level(
    engine: &mut (dyn Engine + Send),
    ls: &LevelSpec,
    watch: Option<&DeviceWatch>,
    progress: &dyn LevelProgress,
    idx: usize,
) -> Result<(LevelStats, Option<KernelView>)> {
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
            if stop_requested() {
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

fn kernel_view(w: &DeviceWatch, a: &Mark, b: &Mark) -> Option<KernelView> {
    let d = w.delta(a, b)?;
    Some(KernelView::from(&DiskRates::from_delta(&d)))
}
