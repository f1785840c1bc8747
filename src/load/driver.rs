//! The level driver of `iosat sweep` ([`LevelDriver`]): a [`SweepPlan`] run level by level on
//! an [`Engine`] (`--repeat` passes over the series, the deciding levels again within
//! `--budget`, then the baseline again), the kernel's view of the disk
//! ([`DeviceWatch`]) and the scheduler, CPU and pressure counters (sys::sched) sampled around each
//! measured window, each level turned into a [`LevelResult`] with its disturbance, the verdict
//! refreshed and the report so far handed to a callback after every level (partial results,
//! docs/design.md §3.4: a sweep interrupted at level 7 keeps 1–6). A stop signal (sys::signal)
//! stops the level in flight and is named in it. Also here: the notes about the target (cgroup
//! limits, sparse backing files, cache-sized working sets). Live progress goes to a
//! [`LevelProgress`] (the terminal bar lives in ui/).
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.

use super::disturb::{disturbance, OwnRate};
use super::plan::Levels;
use super::result::{
    pattern_name, KernelView, LevelResult, SweepReport, TargetInfo, WorkloadInfo, SCHEMA_VERSION,
};
use super::target::{Target, TargetKind};
use super::workload::{now_ns, split_concurrency};
use super::{Engine, LevelCtl, LevelSpec, LevelStats, Pattern};
use crate::analysis::evidence::{IoLimit, LimitKind};
use crate::error::Result;
use crate::monitor::watch::{DeviceWatch, Mark};
use crate::monitor::DiskRates;
use crate::sys::cgroup::ThrottleKind;
use crate::sys::sched::{SchedDelta, SchedMark};
use crate::sys::signal::{stop_requested, stop_signal};
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
    /// Passes over the level series (`--repeat`, at least 1).
    pub repeat: u32,
    /// Ramp + measured time the levels may take in all; what the series leaves goes to
    /// re-measuring the levels that decide the verdict ([`Verdict::deciding_levels`]). 0: none.
    ///
    /// [`Verdict::deciding_levels`]: crate::analysis::Verdict::deciding_levels
    pub budget_ns: u64,
    /// Measure the first level again after the last, to show drift.
    pub remeasure_baseline: bool,
    /// Where the scheduler and CPU counters are read (sys::sched).
    pub root: crate::sys::Root,
    /// `--rate-limit`: the engine paces its requests at this rate; the series stops after the
    /// first level the cap held back ([`held_back`]).
    pub rate_limit_iops: Option<f64>,
}

/// A level's IOPS within this share of `--rate-limit`: the cap, not the device, set its pace,
/// and higher levels would only queue behind the cap.
pub const HELD_BACK_SHARE: f64 = 0.9;

/// Whether the rate limit held the last level back (its IOPS reached
/// [`HELD_BACK_SHARE`] of the limit).
pub fn held_back(rate_limit_iops: Option<f64>, last: Option<&LevelResult>) -> bool {
    match (rate_limit_iops, last) {
        (Some(r), Some(l)) => l.iops >= HELD_BACK_SHARE * r,
        _ => false,
    }
}

impl SweepPlan {
    /// Levels the run will measure, when known in advance (a list, not `auto`): every pass
    /// plus the baseline re-measure.
    pub fn planned_levels(&self) -> Option<usize> {
        let n = self.levels.count()?;
        Some(n * self.repeat.max(1) as usize + usize::from(self.remeasure_baseline && n > 0))
    }

    /// Ramp plus measured time of the whole run, when known in advance (no layout, no sim).
    pub fn planned_ns(&self) -> Option<u64> {
        Some(self.planned_levels()? as u64 * (self.ramp_ns + self.duration_ns))
    }
}

/// Live progress of a running sweep (drawn on a terminal by ui::progress).
pub trait LevelProgress {
    /// About every 200 ms while level `idx` runs: time since its start, I/Os completed in the
    /// measured phase, and how much of the measured phase has passed.
    fn draw(&self, idx: usize, ls: &LevelSpec, elapsed_ns: u64, ops: u64, measured_ns: u64);
    /// A level finished and was kept.
    fn level_done(&self, r: &LevelResult);
    /// The next level is not one of the planned series: say what it is.
    fn extra(&self, _what: ExtraLevel) {}
    /// An open-loop level finished and was kept (load/open/).
    fn open_level_done(&self, _r: &super::open::result::OpenLevelResult) {}
}

/// A level measured beyond the planned series, as the progress bar names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtraLevel {
    /// The `nth` (from 1) of `of` deciding levels measured again in this round (`--budget`).
    Remeasure { nth: usize, of: usize },
    /// The baseline measured again after the last level.
    Baseline,
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

/// Warnings that the target's numbers may describe a cache rather than the disk: a loop
/// device over a sparse file (its holes read as zeros without I/O), or a buffered run whose
/// working set fits in free memory.
pub fn cache_notes(
    root: &crate::sys::Root,
    target: &Target,
    watch: Option<&DeviceWatch>,
) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(w) = watch {
        let backing = crate::sys::device::extra(root, &w.dev).loop_backing_file;
        if let Some(b) = backing {
            if let Ok(m) = std::fs::metadata(&b) {
                use std::os::unix::fs::MetadataExt;
                notes.extend(super::target::sparse_note(
                    std::path::Path::new(&b),
                    m.len(),
                    m.blocks(),
                ));
            }
        }
    }
    notes.extend(super::target::working_set_note(
        target.size_bytes,
        target.direct,
        crate::sys::mem::mem_available(root),
    ));
    notes
}

/// The limits the kernel applies to this process's I/O on the watched disk (cgroup io.max,
/// blkio.throttle), for the report, and one sentence each for its notes.
pub fn io_limits(watch: Option<&DeviceWatch>) -> (Vec<IoLimit>, Vec<String>) {
    let Some(w) = watch else {
        return (Vec::new(), Vec::new());
    };
    let found = crate::sys::cgroup::limits(&w.root, w.dev.major, w.dev.minor);
    let notes = found.iter().map(|l| l.sentence(&w.dev.name)).collect();
    let limits = found
        .into_iter()
        .map(|l| IoLimit {
            kind: match l.kind {
                ThrottleKind::ReadIops => LimitKind::ReadIops,
                ThrottleKind::WriteIops => LimitKind::WriteIops,
                ThrottleKind::ReadBytesPerS => LimitKind::ReadBytesPerS,
                ThrottleKind::WriteBytesPerS => LimitKind::WriteBytesPerS,
            },
            value: l.value as f64,
            dev: l.dev,
            source: l.source,
        })
        .collect();
    (limits, notes)
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
    let disk = watch.map(|w| crate::sys::device::queue_info(&w.root, &w.dev));
    SweepReport {
        envelope: crate::envelope::Envelope::now("sweep", SCHEMA_VERSION),
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
                disk_model: disk.as_ref().and_then(|q| q.model.clone()),
                disk_size_bytes: disk.as_ref().and_then(|q| q.size_bytes),
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
            repeat: plan.repeat.max(1),
            limits: None,
        },
        notes,
        ..Default::default()
    }
}

/// Called with the report after each level (verdict refreshed), to write partial results.
pub type AfterLevel<'a> = dyn FnMut(&SweepReport) -> Result<()> + 'a;

/// Re-measurement rounds at most: each round measures every deciding level once more.
pub const MAX_ROUNDS: u32 = 3;

/// The level driver: a [`SweepPlan`] run on an engine, the disk watched, progress drawn, each
/// level kept in the report and handed to `after_level`.
pub struct LevelDriver<'a> {
    engine: &'a mut (dyn Engine + Send),
    plan: &'a SweepPlan,
    watch: Option<&'a DeviceWatch>,
    progress: &'a dyn LevelProgress,
    after_level: &'a mut AfterLevel<'a>,
    /// Levels shown so far (the progress bar's index of the next one).
    shown: usize,
}

impl<'a> LevelDriver<'a> {
    pub fn new(
        engine: &'a mut (dyn Engine + Send),
        plan: &'a SweepPlan,
        watch: Option<&'a DeviceWatch>,
        progress: &'a dyn LevelProgress,
        after_level: &'a mut AfterLevel<'a>,
    ) -> LevelDriver<'a> {
        LevelDriver {
            engine,
            plan,
            watch,
            progress,
            after_level,
            shown: 0,
        }
    }

    /// Run the plan's levels into `report` until they are done or a stop signal: the level
    /// series `plan.repeat` times (each pass the concurrencies of the first, results tagged
    /// with their pass), the deciding levels again while `--budget` allows, then the first
    /// level again into `report.baseline_remeasured`. On return the report is final:
    /// `complete` unless interrupted.
    pub fn run(&mut self, report: &mut SweepReport) -> Result<()> {
        let plan = self.plan;
        let mut series: Vec<u32> = Vec::new();
        'passes: for rep in 0..plan.repeat.max(1) {
            let mut idx = 0usize;
            loop {
                let conc = if rep == 0 {
                    plan.levels.next(idx, &report.levels)
                } else {
                    series.get(idx).copied()
                };
                let Some(conc) = conc else { break };
                if stop_requested() {
                    report.interrupted = true;
                    break 'passes;
                }
                self.level(report, conc, rep)?;
                if rep == 0 {
                    series.push(conc);
                }
                if report.interrupted {
                    break 'passes;
                }
                idx += 1;
                if rep == 0 && held_back(plan.rate_limit_iops, report.levels.last()) {
                    let n = plan.rate_limit_iops.unwrap_or(0.0);
                    report.notes.push(format!(
                        "Concurrency {conc} reached the --rate-limit of {n:.0} IOPS: the series \
                         stops there (higher levels would queue behind the cap, not the device)."
                    ));
                    break;
                }
            }
        }
        if !report.interrupted {
            let level_ns = plan.ramp_ns + plan.duration_ns;
            let spent = (self.shown as u64 + u64::from(plan.remeasure_baseline)) * level_ns;
            self.remeasure_deciding(report, plan.budget_ns.saturating_sub(spent), spent)?;
        }
        if plan.remeasure_baseline && !report.interrupted {
            if let Some(&conc) = series.first() {
                self.progress.extra(ExtraLevel::Baseline);
                let (r, cut) = self.measure(conc, plan.repeat.max(1))?;
                if let Some(r) = &r {
                    self.progress.level_done(r);
                }
                report.baseline_remeasured = r.map(|mut r| {
                    r.repeat = 0;
                    r
                });
                report.interrupted |= cut;
            }
        }
        report.complete = !report.interrupted;
        report.refresh_verdict();
        Ok(())
    }

    /// One level of the series (or a re-measure) kept in the report: measured, shown, the
    /// verdict refreshed, the report handed on.
    fn level(&mut self, report: &mut SweepReport, conc: u32, rep: u32) -> Result<()> {
        let (r, cut) = self.measure(conc, rep)?;
        if let Some(r) = r {
            self.progress.level_done(&r);
            report.levels.push(r);
        }
        report.interrupted |= cut;
        report.refresh_verdict();
        (self.after_level)(report)
    }

    /// The adaptive part of a sweep: while `budget_ns` allows, measure once more the levels
    /// whose spread leaves the knee or the overload point open (each round all of them, or as
    /// many as fit, the lowest first), so that their figures combine more windows and the
    /// intervals the verdict compares narrow; stop when the verdict is settled, after
    /// [`MAX_ROUNDS`], or on a stop signal. A note says what was re-measured and whether it
    /// settled the verdict.
    fn remeasure_deciding(
        &mut self,
        report: &mut SweepReport,
        budget_ns: u64,
        spent_ns: u64,
    ) -> Result<()> {
        let level_ns = (self.plan.ramp_ns + self.plan.duration_ns).max(1);
        let mut left = budget_ns;
        let mut measured: Vec<u32> = Vec::new();
        let mut open_before = false;
        for _ in 0..MAX_ROUNDS {
            let deciding = deciding_levels(report);
            if deciding.is_empty() {
                break;
            }
            open_before = true;
            let fit = (left / level_ns) as usize;
            if fit == 0 {
                break;
            }
            let of = deciding.len().min(fit);
            for (nth, &conc) in deciding.iter().take(fit).enumerate() {
                if stop_requested() {
                    report.interrupted = true;
                    return Ok(());
                }
                self.progress
                    .extra(ExtraLevel::Remeasure { nth: nth + 1, of });
                let rep = report
                    .levels
                    .iter()
                    .filter(|l| l.concurrency == conc)
                    .count() as u32;
                self.level(report, conc, rep)?;
                left = left.saturating_sub(level_ns);
                if !measured.contains(&conc) {
                    measured.push(conc);
                }
                if report.interrupted {
                    return Ok(());
                }
            }
        }
        if open_before {
            let still = deciding_levels(report);
            report.notes.push(remeasure_note(
                &measured,
                &still,
                budget_ns,
                Pass {
                    level_ns,
                    spent_ns: spent_ns + budget_ns - left,
                },
            ));
        }
        Ok(())
    }

    /// One level of concurrency `conc` in pass `rep` (the first pass keeps the seeds sweeps
    /// have always used; later passes draw other offsets). Returns the level (None when it
    /// completed no I/O) and whether a stop signal cut it.
    fn measure(&mut self, conc: u32, rep: u32) -> Result<(Option<LevelResult>, bool)> {
        let plan = self.plan;
        let (threads, queue_depth) = match self.engine.name() {
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
            seed: plan
                .seed
                .wrapping_add(u64::from(conc))
                .wrapping_add(u64::from(rep).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        };
        let idx = self.shown;
        self.shown += 1;
        let (stats, kernel, sched) = run_level(
            &mut *self.engine,
            &ls,
            self.watch,
            &plan.root,
            self.progress,
            idx,
        )?;
        let cut = stats.interrupted || stop_requested();
        let cut_by = stats.interrupted.then(|| stop_signal().unwrap_or("stop"));
        let r = LevelResult::new(&ls, &stats, kernel).map(|mut r| {
            r.repeat = rep;
            let own = match (&r.read, &r.write) {
                (Some(rd), Some(wr)) => OwnRate {
                    r_s: rd.iops,
                    w_s: wr.iops,
                },
                _ if pattern_name(plan.pattern).1 > 0 => OwnRate {
                    r_s: r.iops,
                    w_s: 0.0,
                },
                _ => OwnRate {
                    r_s: 0.0,
                    w_s: r.iops,
                },
            };
            r.disturbance = disturbance(sched.as_ref(), r.ios, own, r.kernel.as_ref(), cut_by);
            r
        });
        Ok((r, cut))
    }
}

/// The levels whose spread leaves the verdict open (none without a verdict).
fn deciding_levels(report: &SweepReport) -> Vec<u32> {
    report
        .verdict
        .as_ref()
        .map(crate::analysis::Verdict::deciding_levels)
        .unwrap_or_default()
}

/// What one more pass of re-measures costs: the time per level (ramp + measured) and what the
/// sweep spent so far, so a note can say which `--budget` buys it.
#[derive(Debug, Clone, Copy)]
pub struct Pass {
    pub level_ns: u64,
    pub spent_ns: u64,
}

impl Pass {
    /// (seconds one more pass of `open` takes, the whole --budget that would buy it), rounded up.
    fn cost(self, open: &[u32]) -> (f64, f64) {
        let need = self.level_ns * open.len() as u64;
        (
            (need as f64 / 1e9).ceil(),
            ((self.spent_ns + need) as f64 / 1e9).ceil(),
        )
    }
}

/// What the adaptive re-measure did, in one sentence, with the `--budget` that one more pass
/// of the levels still open needs.
pub fn remeasure_note(measured: &[u32], still_open: &[u32], budget_ns: u64, pass: Pass) -> String {
    use crate::analysis::confidence::list;
    let (need, budget) = pass.cost(still_open);
    if measured.is_empty() {
        return format!(
            "The spread of concurrency {} leaves the verdict open, and the --budget left {:.1} s, \
             too little to measure {} again (about {need:.0} s): give --budget {budget:.0}s or \
             more, or --repeat.",
            list(still_open),
            budget_ns as f64 / 1e9,
            if still_open.len() == 1 { "it" } else { "them" },
        );
    }
    let head = format!(
        "Measured concurrency {} again (their spread left the verdict open); the verdict \
         combines every measurement of a level",
        list(measured)
    );
    if still_open.is_empty() {
        format!("{head}, and that settled it.")
    } else {
        format!(
            "{head}; concurrency {} still can't be told apart within the --budget: the ranges \
             given are the measurement's honest uncertainty; one more pass (about {need:.0} s, \
             --budget {budget:.0}s or more) or --repeat may narrow them.",
            list(still_open),
        )
    }
}

/// What one level measured: the engine's stats, the kernel's view of the disk and the
/// scheduler counters over the measured window (both None for the sim).
pub(crate) type LevelRun = (LevelStats, Option<KernelView>, Option<SchedDelta>);

/// Run one level: the engine in its own thread, this thread watching for stop signals,
/// drawing the progress bar and sampling the kernel (diskstats, schedstat, /proc/stat, PSI) at
/// the start and end of the measured window.
pub(crate) fn run_level(
    engine: &mut (dyn Engine + Send),
    ls: &LevelSpec,
    watch: Option<&DeviceWatch>,
    root: &crate::sys::Root,
    progress: &dyn LevelProgress,
    idx: usize,
) -> Result<LevelRun> {
    let ctl = LevelCtl::default();
    let simulated = engine.name() == "sim";
    // Real workers wait at the window's end until it has been read (their schedstat).
    ctl.hold.store(!simulated, Relaxed);
    std::thread::scope(|s| {
        let handle = s.spawn(|| engine.run_level(ls, &ctl));
        let t0 = now_ns();
        let measure_at = t0 + ls.ramp_ns;
        let end_at = measure_at + ls.duration_ns;
        let mut first = None;
        let mut last = None;
        let mut sched_first = None;
        let mut sched_last = None;
        let mut next_draw = t0;
        while !handle.is_finished() {
            if stop_requested() {
                ctl.stop.store(true, Relaxed);
            }
            let now = now_ns();
            if !simulated {
                if sched_first.is_none() && now >= measure_at {
                    first = watch.and_then(DeviceWatch::mark);
                    sched_first = Some(SchedMark::read(root));
                }
                if sched_last.is_none() && now >= end_at {
                    last = watch.and_then(DeviceWatch::mark);
                    sched_last = Some(SchedMark::read(root));
                    ctl.released.store(true, Relaxed);
                }
                if now >= next_draw {
                    let measured = now.saturating_sub(measure_at).min(ls.duration_ns);
                    progress.draw(idx, ls, now - t0, ctl.ops_done.load(Relaxed), measured);
                    next_draw = now + 200_000_000;
                }
            }
            // Wake for the next event: a sample point, a redraw, or a stop check.
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
        // A level cut short ends before `end_at`: its workers are gone, so the threads'
        // delays read now miss them; the CPU shares still hold.
        let sched = sched_first.and_then(|a| {
            let b = sched_last.unwrap_or_else(|| SchedMark::read(root));
            SchedMark::between(&a, &b)
        });
        Ok((stats, kernel, sched))
    })
}

fn kernel_view(w: &DeviceWatch, a: &Mark, b: &Mark) -> Option<KernelView> {
    let d = w.delta(a, b)?;
    let mut k = KernelView::from(&DiskRates::from_delta(&d));
    k.block_latency = w.block_latency(a, b);
    Some(k)
}
