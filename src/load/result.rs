//! LevelStats → LevelResult → SweepReport: what a sweep measured, in the versioned JSON schema
//! documented in docs/sweep.md ("Output") and schemas/sweep.schema.json, serialised by `sweep --json` and read back by
//! `iosat report` (older files of the same major version load through serde defaults). Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/, sys/.

use super::windows::{spread, window_span_ns, WindowFigures};
use super::{LevelSpec, LevelStats, Pattern};
use crate::analysis::evidence::{Disturbance, IoLimit, Spread};
use crate::analysis::{LatencyNs, LevelPoint, Verdict};
use crate::monitor::DiskRates;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Version of the sweep JSON schema; bump on any incompatible change. A file with a higher
/// version is refused by `iosat report` rather than misread.
pub const SCHEMA_VERSION: u32 = 1;

pub use crate::latency::LatencySummary;

/// One direction (reads or writes) of a mixed level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectionResult {
    pub ios: u64,
    pub iops: f64,
    pub bytes_per_s: f64,
    pub latency_ns: LatencySummary,
}

/// Little's law on one level: the concurrency the measurements imply against the offered one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LittlesLaw {
    /// IOPS × mean latency (s).
    pub implied_concurrency: f64,
    /// Within [`crate::analysis::LITTLES_LAW_TOLERANCE`] of the offered concurrency, the rule
    /// the analysis (and so the verdict printed under the table) applies to the same level.
    pub ok: bool,
    /// The kernel's average queue size over the same interval, when known.
    pub kernel_aqu_sz: Option<f64>,
    /// aqu-sz between half of and a little above the offered concurrency; None when there is
    /// no kernel view or the kernel saw too few of our I/Os to compare (page cache, tmpfs).
    pub kernel_ok: Option<bool>,
}

/// The kernel's view of the disk under the target over a level's measured interval, under the
/// key names of `iostat -x -o JSON` (sysstat): per second (`r/s`, `rkB/s`, `rrqm/s`), percent
/// (`rrqm`, `util`), milliseconds (`*_await`), kB (`*areq-sz`), requests (`aqu-sz`). A value
/// the kernel does not give (discards and flushes before 4.18/5.5, an await without I/O) is
/// null. Fields are in byte order of their keys, the order `sweep --json` has always written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelView {
    #[serde(rename = "aqu-sz")]
    pub aqu_sz: Option<f64>,
    /// The block layer's own per-request percentiles over the window (iosat's BPF source,
    /// monitor::blklat), when it was attached: the engine's latency minus these is the time
    /// spent above the block layer (syscall, scheduler, CPU contention).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_latency: Option<crate::monitor::blklat::Measured>,
    #[serde(rename = "d/s")]
    pub d_s: Option<f64>,
    pub d_await: Option<f64>,
    #[serde(rename = "dareq-sz")]
    pub dareq_sz: Option<f64>,
    #[serde(rename = "dkB/s")]
    pub dkb_s: Option<f64>,
    #[serde(rename = "drqm")]
    pub drqm_pct: Option<f64>,
    #[serde(rename = "drqm/s")]
    pub drqm_s: Option<f64>,
    #[serde(rename = "f/s")]
    pub f_s: Option<f64>,
    pub f_await: Option<f64>,
    #[serde(rename = "r/s")]
    pub r_s: Option<f64>,
    pub r_await: Option<f64>,
    #[serde(rename = "rareq-sz")]
    pub rareq_sz: Option<f64>,
    #[serde(rename = "rkB/s")]
    pub rkb_s: Option<f64>,
    #[serde(rename = "rrqm")]
    pub rrqm_pct: Option<f64>,
    #[serde(rename = "rrqm/s")]
    pub rrqm_s: Option<f64>,
    #[serde(rename = "util")]
    pub util_pct: Option<f64>,
    #[serde(rename = "w/s")]
    pub w_s: Option<f64>,
    pub w_await: Option<f64>,
    #[serde(rename = "wareq-sz")]
    pub wareq_sz: Option<f64>,
    #[serde(rename = "wkB/s")]
    pub wkb_s: Option<f64>,
    #[serde(rename = "wrqm")]
    pub wrqm_pct: Option<f64>,
    #[serde(rename = "wrqm/s")]
    pub wrqm_s: Option<f64>,
}

impl LittlesLaw {
    /// The check of a level of `concurrency` that did `iops` at `mean_ns`, against the kernel's
    /// view of the same interval when there is one.
    pub fn of(concurrency: u32, iops: f64, mean_ns: f64, kernel: Option<&KernelView>) -> Self {
        let offered = f64::from(concurrency);
        let implied = iops * mean_ns / 1e9;
        let kernel_aqu_sz = kernel.and_then(|k| k.aqu_sz);
        let kernel_ios_s = kernel.and_then(KernelView::ios_per_s);
        // Compare aqu-sz only when the kernel saw (nearly) every one of our I/Os; below that
        // the page cache or another layer answered and the queue says nothing about us.
        let kernel_ok = match (kernel_aqu_sz, kernel_ios_s) {
            (Some(q), Some(k)) if k >= 0.8 * iops && k <= 1.25 * iops => {
                // Same rule as the analysis: the block layer sees only part of each I/O's
                // latency, so aqu-sz may sit below the offered concurrency, not above it.
                use crate::analysis::{AQU_SZ_MIN_SHARE, LITTLES_LAW_TOLERANCE};
                Some(
                    q <= offered * (1.0 + LITTLES_LAW_TOLERANCE) && q >= offered * AQU_SZ_MIN_SHARE,
                )
            }
            _ => None,
        };
        LittlesLaw {
            implied_concurrency: implied,
            ok: (implied / offered - 1.0).abs() <= crate::analysis::LITTLES_LAW_TOLERANCE,
            kernel_aqu_sz,
            kernel_ok,
        }
    }
}

impl KernelView {
    /// The field-by-field mean of several views of equal-length intervals (a field missing in
    /// some is averaged over the others, null when missing in all); None for no view.
    pub fn mean(views: &[&KernelView]) -> Option<KernelView> {
        use serde_json::{Map, Value};
        let maps: Vec<Map<String, Value>> = views
            .iter()
            .filter_map(|v| match serde_json::to_value(v) {
                Ok(Value::Object(m)) => Some(m),
                _ => None,
            })
            .collect();
        let first = maps.first()?;
        let mut out = Map::new();
        for k in first.keys() {
            let vals: Vec<f64> = maps.iter().filter_map(|m| m.get(k)?.as_f64()).collect();
            let v = if vals.is_empty() {
                Value::Null
            } else {
                serde_json::json!(vals.iter().sum::<f64>() / vals.len() as f64)
            };
            out.insert(k.clone(), v);
        }
        serde_json::from_value(Value::Object(out)).ok()
    }
}

impl From<&DiskRates> for KernelView {
    fn from(r: &DiskRates) -> KernelView {
        // Non-finite rates serialise as null, as serde_json writes them.
        let f = |v: f64| v.is_finite().then_some(v);
        let o = |v: Option<f64>| v.filter(|x| x.is_finite());
        KernelView {
            r_s: f(r.r_s),
            w_s: f(r.w_s),
            d_s: o(r.d_s),
            f_s: o(r.f_s),
            rkb_s: f(r.rkb_s),
            wkb_s: f(r.wkb_s),
            dkb_s: o(r.dkb_s),
            rrqm_s: f(r.rrqm_s),
            wrqm_s: f(r.wrqm_s),
            drqm_s: o(r.drqm_s),
            rrqm_pct: f(r.rrqm_pct),
            wrqm_pct: f(r.wrqm_pct),
            drqm_pct: o(r.drqm_pct),
            r_await: o(r.r_await),
            w_await: o(r.w_await),
            d_await: o(r.d_await),
            f_await: o(r.f_await),
            rareq_sz: o(r.rareq_sz),
            wareq_sz: o(r.wareq_sz),
            dareq_sz: o(r.dareq_sz),
            aqu_sz: f(r.aqu_sz),
            util_pct: f(r.util_pct),
            block_latency: None,
        }
    }
}

/// One measured level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelResult {
    /// Requests kept in flight (threads × iodepth).
    pub concurrency: u32,
    pub threads: u32,
    pub iodepth: u32,
    /// The measured interval (after ramp-up).
    pub elapsed_ns: u64,
    pub ios: u64,
    pub iops: f64,
    pub bytes_per_s: f64,
    pub latency_ns: LatencySummary,
    /// Only for mixed patterns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<DirectionResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<DirectionResult>,
    /// The kernel's view of the device under the target over the same interval; null when
    /// unknown (sim engine, no diskstats).
    #[serde(default)]
    pub kernel: Option<KernelView>,
    #[serde(default)]
    pub littles_law: LittlesLaw,
    /// Cut short by a stop signal (which one: `disturbance.cut_by`).
    #[serde(default)]
    pub interrupted: bool,
    /// Which pass over the level series this level belongs to (`--repeat N`: 0 .. N-1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeat: u32,
    /// The measured phase as equal sub-windows (load::windows), in time order; empty in files
    /// written before sub-windows existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<WindowFigures>,
    /// The spread of `windows` (None with fewer than two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Spread>,
    /// What else happened on the machine and the device while the level ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<Disturbance>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn single_pass(n: &u32) -> bool {
    *n <= 1
}

fn direction(h: &Histogram<u64>, bytes: u64, elapsed_s: f64) -> DirectionResult {
    let ios = h.len();
    DirectionResult {
        ios,
        iops: ios as f64 / elapsed_s,
        bytes_per_s: bytes as f64 / elapsed_s,
        latency_ns: LatencySummary::from_hist(h),
    }
}

impl LevelResult {
    /// None when the level completed no I/O (stopped before measuring began).
    pub fn new(
        spec: &LevelSpec,
        stats: &LevelStats,
        kernel: Option<KernelView>,
    ) -> Option<LevelResult> {
        let ios = stats.read_ns.len() + stats.write_ns.len();
        if ios == 0 || stats.elapsed_ns == 0 {
            return None;
        }
        let elapsed_s = stats.elapsed_ns as f64 / 1e9;
        let mut all = stats.read_ns.clone();
        all.add(&stats.write_ns).expect("same bounds");
        let latency_ns = LatencySummary::from_hist(&all);
        let iops = ios as f64 / elapsed_s;
        let mixed = matches!(spec.pattern, Pattern::RandRw { .. });
        let windows = stats
            .windows
            .figures(window_span_ns(spec.duration_ns), stats.elapsed_ns);
        let littles_law = LittlesLaw::of(spec.concurrency(), iops, all.mean(), kernel.as_ref());
        Some(LevelResult {
            concurrency: spec.concurrency(),
            threads: spec.threads,
            iodepth: spec.queue_depth,
            elapsed_ns: stats.elapsed_ns,
            ios,
            iops,
            bytes_per_s: (stats.read_bytes + stats.write_bytes) as f64 / elapsed_s,
            latency_ns,
            read: mixed.then(|| direction(&stats.read_ns, stats.read_bytes, elapsed_s)),
            write: mixed.then(|| direction(&stats.write_ns, stats.write_bytes, elapsed_s)),
            kernel,
            littles_law,
            interrupted: stats.interrupted,
            repeat: 0,
            spread: spread(&windows),
            windows,
            disturbance: None,
        })
    }

    /// The level as the analysis sees it.
    pub fn point(&self) -> LevelPoint {
        LevelPoint {
            concurrency: self.concurrency,
            iops: self.iops,
            bytes_per_s: self.bytes_per_s,
            latency_ns: LatencyNs::from(&self.latency_ns),
            kernel_util_pct: self.kernel.as_ref().and_then(|k| k.util_pct),
            kernel_aqu_sz: self.kernel.as_ref().and_then(|k| k.aqu_sz),
            kernel_iops: self.kernel.as_ref().and_then(KernelView::ios_per_s),
            spread: self.spread.clone(),
            disturbance: self.disturbance.clone(),
        }
    }
}

impl KernelView {
    /// Requests per second the kernel completed (r/s + w/s), when it saw any.
    pub fn ios_per_s(&self) -> Option<f64> {
        match (self.r_s, self.w_s) {
            (None, None) => None,
            (r, w) => Some(r.unwrap_or(0.0) + w.unwrap_or(0.0)),
        }
    }
}

/// One point for the analysis from every measurement of one concurrency (`--repeat`): IOPS
/// and bandwidth over the summed time, each latency figure weighted by completions (min and
/// max the extremes), the spread over every sub-window of every repeat, the disturbance
/// weighted likewise (cut_by: the first cut repeat's signal).
pub fn combined_point(levels: &[&LevelResult]) -> Option<LevelPoint> {
    let (first, rest) = levels.split_first()?;
    if rest.is_empty() {
        return Some(first.point());
    }
    let ios: u64 = levels.iter().map(|l| l.ios).sum();
    let secs: f64 = levels.iter().map(|l| l.elapsed_ns as f64 / 1e9).sum();
    let w = |l: &LevelResult| l.ios as f64 / ios.max(1) as f64;
    let wavg = |f: &dyn Fn(&LevelResult) -> f64| levels.iter().map(|l| w(l) * f(l)).sum::<f64>();
    let bytes: f64 = levels
        .iter()
        .map(|l| l.bytes_per_s * l.elapsed_ns as f64 / 1e9)
        .sum();
    let mean_of = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let kernel = |f: &dyn Fn(&KernelView) -> Option<f64>| {
        mean_of(
            levels
                .iter()
                .filter_map(|l| l.kernel.as_ref().and_then(f))
                .collect(),
        )
    };
    let all_windows: Vec<WindowFigures> = levels
        .iter()
        .flat_map(|l| l.windows.iter().cloned())
        .collect();
    let pcts = |f: &dyn Fn(&LevelResult) -> Option<u64>| Some(wavg(&|l| f(l).unwrap_or(0) as f64));
    let l = |f: fn(&LatencySummary) -> u64| move |x: &LevelResult| Some(f(&x.latency_ns));
    let disturbance = {
        let ds: Vec<&Disturbance> = levels
            .iter()
            .filter_map(|l| l.disturbance.as_ref())
            .collect();
        (!ds.is_empty()).then(|| {
            let m = |f: fn(&Disturbance) -> Option<f64>| {
                mean_of(ds.iter().filter_map(|d| f(d)).collect())
            };
            Disturbance {
                cpu_wait_ns_per_io: m(|d| d.cpu_wait_ns_per_io),
                cpu_busy_pct: m(|d| d.cpu_busy_pct),
                cpu_iowait_pct: m(|d| d.cpu_iowait_pct),
                cpu_steal_pct: m(|d| d.cpu_steal_pct),
                cpu_other_user_pct: m(|d| d.cpu_other_user_pct),
                other_iops: m(|d| d.other_iops),
                other_r_s: m(|d| d.other_r_s),
                other_w_s: m(|d| d.other_w_s),
                other_in_flight: m(|d| d.other_in_flight),
                psi_io_some_pct: m(|d| d.psi_io_some_pct),
                psi_cpu_some_pct: m(|d| d.psi_cpu_some_pct),
                cut_by: ds.iter().find_map(|d| d.cut_by.clone()),
                other_explains_rel: 0.0,
            }
        })
    };
    Some(LevelPoint {
        kernel_iops: kernel(&KernelView::ios_per_s),
        concurrency: first.concurrency,
        iops: ios as f64 / secs.max(f64::MIN_POSITIVE),
        bytes_per_s: bytes / secs.max(f64::MIN_POSITIVE),
        latency_ns: LatencyNs {
            min: levels
                .iter()
                .map(|x| x.latency_ns.min)
                .min()
                .map(|v| v as f64),
            mean: wavg(&|x| x.latency_ns.mean as f64),
            p50: pcts(&l(|s| s.p50)),
            p90: pcts(&l(|s| s.p90)),
            p95: pcts(&l(|s| s.p95)),
            p99: pcts(&l(|s| s.p99)),
            p999: pcts(&l(|s| s.p999)),
            max: levels
                .iter()
                .map(|x| x.latency_ns.max)
                .max()
                .map(|v| v as f64),
        },
        kernel_util_pct: kernel(&|k| k.util_pct),
        kernel_aqu_sz: kernel(&|k| k.aqu_sz),
        spread: spread(&all_windows),
        disturbance,
    })
}

/// A concurrency's measurements combined (see [`SweepReport::combined_levels`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CombinedLevel {
    pub point: LevelPoint,
    pub kernel: Option<KernelView>,
    pub littles_law: LittlesLaw,
    pub interrupted: bool,
    /// Measurements combined (`--repeat` passes and the adaptive re-measures).
    pub runs: u32,
}

/// What was run against.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TargetInfo {
    pub path: String,
    /// "temp-file" (laid out and removed by iosat), "file" or "block-device"; "none" for sim.
    pub kind: String,
    pub size_bytes: u64,
    /// The whole disk under the target (file → filesystem → partition → disk), when known.
    pub disk_device: Option<String>,
    /// That disk's model (`device/model`) and size, when sysfs gives them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_size_bytes: Option<u64>,
    pub logical_block_size: u32,
}

/// How it was run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadInfo {
    /// "sync", "uring" or "sim".
    pub engine: String,
    /// The engine's own description (sim parameters), if any.
    pub engine_spec: String,
    /// "randread", "randwrite", "read", "write" or "randrw".
    pub pattern: String,
    /// Percentage of reads (100 for read patterns, 0 for write patterns).
    pub read_pct: u8,
    pub block_size: u64,
    pub direct: bool,
    pub duration_ns: u64,
    pub ramp_ns: u64,
    /// "auto" or the comma-separated list asked for.
    pub levels: String,
    /// uring: the most worker threads a level is spread over.
    pub max_threads: u32,
    pub seed: u64,
    /// Passes over the level series (`--repeat`); written only above 1, and 0 (absent) in
    /// older files means 1.
    #[serde(skip_serializing_if = "single_pass")]
    pub repeat: u32,
    /// The gentle mode's limits (`--max-concurrency`, `--rate-limit`); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::analysis::evidence::SweepLimits>,
}

pub fn pattern_name(p: Pattern) -> (&'static str, u8) {
    match p {
        Pattern::RandRead => ("randread", 100),
        Pattern::RandWrite => ("randwrite", 0),
        Pattern::Read => ("read", 100),
        Pattern::Write => ("write", 0),
        Pattern::RandRw { read_pct } => ("randrw", read_pct),
    }
}

/// The whole result of `iosat sweep`, written after every level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SweepReport {
    /// kind "sweep", versions, host, start of the sweep (crate::envelope).
    #[serde(flatten)]
    pub envelope: crate::envelope::Envelope,
    pub target: TargetInfo,
    pub workload: WorkloadInfo,
    pub levels: Vec<LevelResult>,
    /// None until at least one level is measured.
    pub verdict: Option<Verdict>,
    /// False while levels are still to come, or when Ctrl-C cut the sweep short.
    pub complete: bool,
    pub interrupted: bool,
    pub notes: Vec<String>,
    /// The single-request baseline measured again after the last level, to show drift
    /// (compare with the level of concurrency 1 in `levels`); None when not re-measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_remeasured: Option<LevelResult>,
    /// Limits the kernel applies to this process's I/O on the target's disk (cgroup io.max,
    /// blkio.throttle), read at the start of the sweep.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<IoLimit>,
    /// The cap the user declares the device was provisioned with (`--cap-iops`,
    /// `--cap-mbps`): the verdict matches its plateau to it (issue 42). Saved with the
    /// profile, it judges `stat`, `top` and the exporter too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_cap: Option<crate::analysis::declared::DeclaredCap>,
    /// The open loop's set-up and verdict (`--rate`); absent for a closed-loop sweep.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<super::open::result::OpenLoopInfo>,
    /// Open-loop levels, one per offered rate, in the order measured.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub open_levels: Vec<super::open::result::OpenLevelResult>,
}

impl SweepReport {
    /// Every closed-loop level in the order measured, then the re-measured baseline; each with
    /// whether it is that re-measurement (the tables' rows).
    pub fn level_rows(&self) -> impl Iterator<Item = (&LevelResult, bool)> {
        self.levels
            .iter()
            .map(|l| (l, false))
            .chain(self.baseline_remeasured.iter().map(|l| (l, true)))
    }

    /// The verdict over the levels measured so far (None before the first level).
    pub fn refresh_verdict(&mut self) {
        if self.levels.is_empty() {
            self.verdict = None;
            return;
        }
        let again = self.baseline_remeasured.as_ref().map(LevelResult::point);
        let ctx = crate::analysis::Context {
            limits: &self.limits,
            baseline_remeasured: again.as_ref(),
            // A sim's own parallel units are its limit; a cap it is configured with (`cap=`,
            // `bw=`) stands for a provisioned one and is judged like a real device's.
            simulated: self.workload.engine == "sim"
                && self
                    .workload
                    .engine_spec
                    .parse::<super::sim::SimSpec>()
                    .is_ok_and(|s| s.cap_iops.is_none() && s.bw_bytes_per_s.is_none()),
            read_share: Some(f64::from(self.workload.read_pct) / 100.0),
            device: self.target.disk_device.as_deref(),
            sweep_limits: self.workload.limits,
            declared_cap: self.declared_cap,
            ..Default::default()
        };
        self.verdict = Some(crate::analysis::analyze_with(&self.points(), &ctx));
    }

    /// One entry per concurrency for tables and charts, in the order first measured: the
    /// combined point (as the analysis sees it), the mean kernel view, Little's law on the
    /// combined figures, whether any measurement was cut short, and how many were combined.
    pub fn combined_levels(&self) -> Vec<CombinedLevel> {
        self.by_concurrency()
            .into_iter()
            .filter_map(|(c, same)| {
                if let [one] = same.as_slice() {
                    return Some(CombinedLevel {
                        point: one.point(),
                        kernel: one.kernel.clone(),
                        littles_law: one.littles_law.clone(),
                        interrupted: one.interrupted,
                        runs: 1,
                    });
                }
                let point = combined_point(&same)?;
                let views: Vec<&KernelView> =
                    same.iter().filter_map(|l| l.kernel.as_ref()).collect();
                let kernel = KernelView::mean(&views);
                Some(CombinedLevel {
                    littles_law: LittlesLaw::of(
                        c,
                        point.iops,
                        point.latency_ns.mean,
                        kernel.as_ref(),
                    ),
                    point,
                    kernel,
                    interrupted: same.iter().any(|l| l.interrupted),
                    runs: same.len() as u32,
                })
            })
            .collect()
    }

    /// What the analysis sees: one point per concurrency, combining every repeat
    /// ([`combined_point`]), in the order the concurrencies were first measured.
    pub fn points(&self) -> Vec<LevelPoint> {
        self.by_concurrency()
            .into_iter()
            .filter_map(|(_, same)| combined_point(&same))
            .collect()
    }

    /// Every measurement of each concurrency (`--repeat` passes, re-measures), the
    /// concurrencies in the order first measured.
    fn by_concurrency(&self) -> Vec<(u32, Vec<&LevelResult>)> {
        let mut order: Vec<u32> = Vec::new();
        for l in &self.levels {
            if !order.contains(&l.concurrency) {
                order.push(l.concurrency);
            }
        }
        order
            .into_iter()
            .map(|c| {
                (
                    c,
                    self.levels.iter().filter(|l| l.concurrency == c).collect(),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pattern: Pattern, conc: u32) -> LevelSpec {
        LevelSpec {
            threads: conc,
            queue_depth: 1,
            pattern,
            block_size: 4096,
            ramp_ns: 0,
            duration_ns: 1_000_000_000,
            seed: 1,
        }
    }

    #[test]
    fn level_numbers_follow_from_the_histograms() {
        let mut st = LevelStats::new();
        // 1000 reads of 100 µs and 1000 writes of 300 µs in 0.5 s at concurrency 2... would be
        // 4000 IOPS × 200 µs = 0.8: Little's law must flag it against an offered 2.
        for _ in 0..1000 {
            st.read_ns.record(100_000).unwrap();
            st.write_ns.record(300_000).unwrap();
        }
        st.read_bytes = 1000 * 4096;
        st.write_bytes = 1000 * 4096;
        st.elapsed_ns = 500_000_000;
        let r = LevelResult::new(&spec(Pattern::RandRw { read_pct: 50 }, 2), &st, None).unwrap();
        assert_eq!(r.ios, 2000);
        assert!((r.iops - 4000.0).abs() < 1e-6);
        assert!((r.bytes_per_s - 4000.0 * 4096.0).abs() < 1e-3);
        assert!((r.latency_ns.mean as f64 - 200_000.0).abs() < 200.0);
        let rd = r.read.as_ref().unwrap();
        assert!((rd.iops - 2000.0).abs() < 1e-6);
        assert!((rd.latency_ns.p99 as f64 - 100_000.0).abs() < 100.0);
        assert!((r.littles_law.implied_concurrency - 0.8).abs() < 0.01);
        assert!(!r.littles_law.ok);
        assert_eq!(r.littles_law.kernel_ok, None);
    }

    #[test]
    fn read_only_level_has_no_split_and_closes_littles_law() {
        let mut st = LevelStats::new();
        for _ in 0..10_000 {
            st.read_ns.record(400_000).unwrap();
        }
        st.read_bytes = 10_000 * 4096;
        st.elapsed_ns = 1_000_000_000;
        let k = KernelView {
            r_s: Some(10_000.0),
            w_s: Some(0.0),
            aqu_sz: Some(3.9),
            ..Default::default()
        };
        let r = LevelResult::new(&spec(Pattern::RandRead, 4), &st, Some(k)).unwrap();
        assert!(r.read.is_none() && r.write.is_none());
        assert!(r.littles_law.ok, "{:?}", r.littles_law);
        assert_eq!(r.littles_law.kernel_ok, Some(true));
        assert_eq!(r.point().kernel_aqu_sz, Some(3.9));
    }

    #[test]
    fn kernel_view_writes_the_sysstat_keys_of_the_rates() {
        let r = DiskRates {
            interval_s: 1.0,
            r_s: 10.0,
            w_s: 2.5,
            d_s: None,
            f_s: Some(1.0),
            rkb_s: 40.0,
            wkb_s: 10.0,
            dkb_s: None,
            rrqm_s: 0.0,
            wrqm_s: 1.0,
            drqm_s: None,
            rrqm_pct: 0.0,
            wrqm_pct: 28.5,
            drqm_pct: None,
            r_await: Some(0.25),
            w_await: None,
            d_await: None,
            f_await: Some(3.0),
            rareq_sz: Some(4.0),
            wareq_sz: Some(4.0),
            dareq_sz: None,
            aqu_sz: 0.75,
            util_pct: f64::NAN,
            read_concurrency: 0.0,
            write_concurrency: 0.0,
            discard_concurrency: None,
            flush_concurrency: None,
            in_flight: 0,
        };
        let typed = serde_json::to_string(&KernelView::from(&r)).unwrap();
        let keyed = serde_json::to_string(&r.sysstat_json()).unwrap();
        assert_eq!(typed, keyed);
        let back: KernelView = serde_json::from_str(&typed).unwrap();
        assert_eq!(back, KernelView::from(&r));
    }

    #[test]
    fn repeats_combine_into_one_point_per_concurrency() {
        let lvl = |c: u32, rep: u32, ios: u64, mean: u64, iops: f64| LevelResult {
            concurrency: c,
            repeat: rep,
            ios,
            iops,
            elapsed_ns: 1_000_000_000,
            latency_ns: LatencySummary {
                mean,
                p95: 2 * mean,
                min: mean / 2,
                max: 3 * mean,
                ..Default::default()
            },
            windows: vec![
                WindowFigures {
                    ios: ios / 2,
                    iops,
                    mean_ns: mean as f64,
                    p95_ns: None,
                };
                2
            ],
            ..Default::default()
        };
        let r = SweepReport {
            levels: vec![
                lvl(1, 0, 1000, 100, 1000.0),
                lvl(2, 0, 2000, 100, 2000.0),
                lvl(1, 1, 3000, 200, 3000.0),
            ],
            ..Default::default()
        };
        let p = r.points();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].concurrency, 1);
        // 4000 I/Os in 2 s; the mean weighted by I/Os: (1000·100 + 3000·200)/4000.
        assert!((p[0].iops - 2000.0).abs() < 1e-9);
        assert!((p[0].latency_ns.mean - 175.0).abs() < 1e-9);
        assert_eq!(p[0].latency_ns.min, Some(50.0));
        assert_eq!(p[0].latency_ns.max, Some(600.0));
        let sp = p[0].spread.as_ref().unwrap();
        assert_eq!(sp.windows, 4);
        assert_eq!((sp.iops_min, sp.iops_max), (1000.0, 3000.0));
        assert_eq!(p[1], r.levels[1].point());
    }

    #[test]
    fn combined_levels_are_one_per_concurrency_with_mean_kernel_view() {
        let lvl = |c: u32, rep: u32, r_s: f64, aqu: f64| LevelResult {
            concurrency: c,
            repeat: rep,
            ios: 1000,
            iops: 1000.0,
            elapsed_ns: 1_000_000_000,
            latency_ns: LatencySummary {
                mean: 1_000_000,
                p95: 2_000_000,
                ..Default::default()
            },
            kernel: Some(KernelView {
                r_s: Some(r_s),
                aqu_sz: Some(aqu),
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = SweepReport {
            levels: vec![
                lvl(1, 0, 1000.0, 0.9),
                lvl(2, 0, 1000.0, 0.9),
                lvl(1, 1, 1100.0, 1.1),
            ],
            ..Default::default()
        };
        let c = r.combined_levels();
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].point.concurrency, c[0].runs), (1, 2));
        let k = c[0].kernel.as_ref().unwrap();
        assert!((k.r_s.unwrap() - 1050.0).abs() < 1e-9 && (k.aqu_sz.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(k.w_s, None);
        assert!((c[0].littles_law.implied_concurrency - 1.0).abs() < 1e-9);
        assert_eq!(c[0].littles_law.kernel_ok, Some(true));
        assert_eq!((c[1].point.concurrency, c[1].runs), (2, 1));
        assert_eq!(c[1].point, r.levels[1].point());
    }

    #[test]
    fn empty_level_is_dropped() {
        assert!(LevelResult::new(&spec(Pattern::RandRead, 1), &LevelStats::new(), None).is_none());
    }
}
