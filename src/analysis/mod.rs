//! Findings from measurements: baseline ratio, the 3x-p95 overload rule, the knee (Kleinrock power,
//! USL fit), Little's law checks, how sure each is (confidence.rs: ranges, drift, disturbance),
//! hard throughput limits (throttle.rs), verdicts in plain words. Pure: no IO.
//! Imports only: latency, units.
//!
//! The input is a list of [`LevelPoint`]s, whatever produced them (a sweep, fio JSON, sysbench
//! text), and optionally a [`Context`] (kernel limits, a re-measured baseline); the output is
//! a [`Verdict`].

use serde::{Deserialize, Serialize};

/// Latency summary of one level, in nanoseconds. Percentiles a source does not give are `None`
/// (sysbench prints only min/avg/max/95th).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyNs {
    pub min: Option<f64>,
    pub mean: f64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

impl LevelPoint {
    /// A level known only by its concurrency, IOPS, mean latency and (when known) p95, in
    /// nanoseconds: enough for [`judge::judge`] (a curve learned from production has no more).
    pub fn curve_point(concurrency: u32, iops: f64, mean_ns: f64, p95_ns: Option<f64>) -> Self {
        LevelPoint {
            concurrency,
            iops,
            latency_ns: LatencyNs {
                mean: mean_ns,
                p95: p95_ns,
                ..Default::default()
            },
            ..Default::default()
        }
    }
}

impl LatencyNs {
    /// Store the `p`th percentile (50, 90, 95, 99, 99.9) when it is one the summary keeps;
    /// others are ignored.
    pub fn set_percentile(&mut self, p: f64, ns: f64) {
        let close = |x: f64| (p - x).abs() < 1e-6;
        let slot = if close(50.0) {
            &mut self.p50
        } else if close(90.0) {
            &mut self.p90
        } else if close(95.0) {
            &mut self.p95
        } else if close(99.0) {
            &mut self.p99
        } else if close(99.9) {
            &mut self.p999
        } else {
            return;
        };
        *slot = Some(ns);
    }
}

/// One concurrency level as the analysis sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelPoint {
    /// Requests kept in flight by the load generator (threads × queue depth).
    pub concurrency: u32,
    pub iops: f64,
    pub bytes_per_s: f64,
    pub latency_ns: LatencyNs,
    /// The kernel's %util for the device over the level, when known.
    pub kernel_util_pct: Option<f64>,
    /// The kernel's aqu-sz (average requests in flight) over the level, when known.
    pub kernel_aqu_sz: Option<f64>,
    /// Requests per second the kernel completed on the device over the level (its r/s +
    /// w/s), when known: below iosat's own IOPS, a cache answered part of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_iops: Option<f64>,
    /// How far the level's sub-windows disagreed (None: measured as one window, or imported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<evidence::Spread>,
    /// What else happened while the level ran (None: unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<evidence::Disturbance>,
}

/// Universal Scalability Law fit: X(N) = λN / (1 + σ(N−1) + κN(N−1)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// Throughput of one request in flight (IOPS), λ.
    pub lambda: f64,
    /// Contention, σ.
    pub sigma: f64,
    /// Coherency (crosstalk), κ.
    pub kappa: f64,
    /// Coefficient of determination of the fit on the measured levels.
    pub r_squared: f64,
    /// Concurrency at which the fitted curve peaks: sqrt((1−σ)/κ); None when κ ≈ 0.
    pub peak_concurrency: Option<f64>,
    /// Fitted throughput at the peak.
    pub peak_iops: Option<f64>,
    /// Concurrency at which the fitted curve's Kleinrock power (X/R) peaks; None when the
    /// fitted curve scales linearly (σ = κ = 0).
    pub power_peak_concurrency: Option<f64>,
}

impl Verdict {
    /// Why this verdict should not be saved as a device profile (`--save-profile` refuses it
    /// unless forced): its baseline or knee level is unstable, disturbed or cut short, the
    /// baseline drifted, or there is no verdict at all. None when it can be saved.
    pub fn profile_refusal(&self) -> Option<String> {
        let mut why = Vec::new();
        if self.too_few_levels {
            why.push("fewer than two levels, no verdict".to_string());
        }
        for (what, c) in [
            ("baseline", self.baseline_concurrency),
            ("knee", self.knee_concurrency),
        ] {
            if self.too_few_levels && what == "knee" {
                continue;
            }
            if self.unstable_levels.contains(&c) {
                why.push(format!("the {what} (concurrency {c}) is unstable"));
            }
            if self.disturbed_levels.contains(&c) {
                why.push(format!(
                    "the {what} (concurrency {c}) was disturbed {}",
                    self.disturbed_by(c)
                ));
            }
        }
        if self.baseline_drift.as_ref().is_some_and(|d| d.drifted) {
            why.push("the baseline drifted during the sweep".to_string());
        } else if self.baseline_drift.as_ref().is_some_and(|d| d.shaken()) {
            why.push("the baseline's two measurements do not agree".to_string());
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// What disturbed level `c`, in the words of a refusal: the device's other traffic (what
    /// the user's own load would change), a stall, or the machine (a CPU to wait for), which
    /// measuring again on a quieter machine settles.
    pub fn disturbed_by(&self, c: u32) -> &'static str {
        if self
            .other_traffic
            .as_ref()
            .is_some_and(|t| t.unexplained_levels.contains(&c))
        {
            "by other traffic on the device"
        } else if self.stalled_levels.contains(&c) {
            "by a stall (no request completed for part of it)"
        } else {
            "by the machine (its requests waited for a CPU)"
        }
    }

    /// The run was disturbed (a level shared the machine or the disk, or stalled) or its
    /// baseline did not hold (drifted, unsteady, stalled): its answers are ranges, and what
    /// is compared with it must say so.
    pub fn shaken(&self) -> bool {
        !self.disturbed_levels.is_empty()
            || self.baseline_drift.as_ref().is_some_and(|d| d.shaken())
    }

    /// The levels whose spread leaves the verdict open, which measuring again can settle:
    /// every level inside the knee's and the overload point's ranges, and an unstable level
    /// that is (or neighbours) the knee or the overload point. Levels cut short decide nothing
    /// and are never listed. In the order measured; empty when the verdict is settled.
    pub fn deciding_levels(&self) -> Vec<u32> {
        let conc: Vec<u32> = self.levels.iter().map(|f| f.concurrency).collect();
        let in_range = |c: u32, r: Option<(u32, u32)>| r.is_some_and(|(lo, hi)| c >= lo && c <= hi);
        let near = |c: u32, target: Option<u32>| {
            let (Some(i), Some(t)) = (
                conc.iter().position(|&x| x == c),
                target.and_then(|t| conc.iter().position(|&x| x == t)),
            ) else {
                return false;
            };
            i.abs_diff(t) <= 1
        };
        conc.iter()
            .copied()
            .filter(|&c| !self.cut_levels.contains(&c))
            .filter(|&c| {
                in_range(c, self.knee_range)
                    || in_range(c, self.overload_range)
                    || (self.unstable_levels.contains(&c)
                        && (near(c, Some(self.knee_concurrency))
                            || near(c, self.overload_concurrency)))
            })
            .collect()
    }
}

impl UslFit {
    /// Fits the levels well enough ([`USL_MIN_R2`]) to be shown and to refine the knee.
    pub fn trusted(&self) -> bool {
        self.r_squared >= USL_MIN_R2
    }
}

/// Per-level findings, aligned with the input levels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelFinding {
    pub concurrency: u32,
    /// Average latency ÷ baseline average latency (seed 000's "saturation").
    pub saturation_avg: f64,
    /// p95 ÷ baseline p95, when both are known.
    pub saturation_p95: Option<f64>,
    /// p95 above 3× the baseline p95 (seed 001's rule), at a concurrency above the baseline's.
    pub overloaded: bool,
    /// Little's law: IOPS × mean latency (s), the concurrency the measurements imply.
    pub littles_law_concurrency: f64,
    /// False when IOPS × latency differs from the offered concurrency (or from aqu-sz) by more
    /// than the tolerance: the measurement is suspect.
    pub littles_law_ok: bool,
    /// Kleinrock's power: IOPS ÷ mean latency (s).
    pub power: f64,
    /// Why Little's law does not close at this level, in plain words (None when it does).
    pub littles_law_note: Option<String>,
    /// Which of Little's law's checks judged the level (the sweep table's `little` column
    /// shows this judgement, so table and verdict agree).
    #[serde(default, skip_serializing_if = "LittleCheck::is_ok")]
    pub little: LittleCheck,
    /// The level's sub-windows disagree by more than a healthy device's do
    /// ([`confidence::UNSTABLE_CV`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unstable: bool,
    /// The signal that cut the level short: such a level is shown but decides nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_by: Option<String>,
}

/// What Little's law says of one level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LittleCheck {
    /// IOPS × latency matches the offered concurrency (and the kernel's aqu-sz, when known).
    #[default]
    Ok,
    /// IOPS × latency is off the offered concurrency: cache, misrecorded concurrency, bad
    /// interval.
    InFlightOff,
    /// The kernel's queue holds more than IOPS × latency: another workload on the device.
    KernelQueueHigh,
    /// The kernel's queue holds under half of IOPS × latency and no throttle explains it: the
    /// time is spent above the device (cache hits, a CPU-bound path).
    KernelQueueLow,
    /// The kernel's queue is short because a throttle above the block layer holds the
    /// requests (the verdict's throughput limit): Little's law closes on the process side.
    Throttled,
}

impl LittleCheck {
    pub fn is_ok(&self) -> bool {
        *self == LittleCheck::Ok
    }
}

/// The verdict on a set of levels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Concurrency of the baseline level: 1, or the lowest level measured when there is no 1.
    pub baseline_concurrency: u32,
    pub baseline_latency_ns: f64,
    pub baseline_p95_ns: Option<f64>,
    /// The baseline's mean latency is known within ± this share of it (95 %): its windows'
    /// spread plus what other traffic explains. None without a spread or other traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_uncertainty_rel: Option<f64>,
    pub levels: Vec<LevelFinding>,
    /// The first level whose p95 exceeds 3× the baseline p95; None when none is overloaded.
    pub overload_concurrency: Option<u32>,
    /// The measured level where Kleinrock's power (IOPS ÷ latency) peaks.
    pub power_peak_concurrency: u32,
    /// The optimal concurrency (the knee).
    pub knee_concurrency: u32,
    /// Measured IOPS at the knee.
    pub max_useful_iops: f64,
    /// The highest IOPS measured at any level.
    pub peak_iops: f64,
    pub usl: Option<UslFit>,
    /// The first level from which average latency grows in proportion to concurrency
    /// (queueing): None when it never turns linear within the measured levels.
    pub linear_from_concurrency: Option<u32>,
    /// The figure of a cap on requests (IOPS) placed on the device, that the evidence shows
    /// ([`cap::find`]: a burst before the plateau, a second block size); None when nothing
    /// tells the plateau from the device's own limit. A limit the kernel applies to this
    /// process is `limit.io_limit` (and `cap`), not this. (Until issue 25: any plateau at a
    /// round figure.)
    pub suspected_cap_iops: Option<f64>,
    /// The same for a cap on bandwidth (bytes/s).
    pub suspected_cap_bytes_per_s: Option<f64>,
    /// The %util lesson in the user's own numbers, when the data shows it.
    pub util_lesson: Option<String>,
    /// The plain-words summary.
    pub summary: Vec<String>,
    /// The plateau (else the highest throughput measured) against the cap the user declared
    /// (issue 42), on the figure it comes nearest to; None without a declaration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_cap: Option<declared::CapUse>,
    /// Levels the measurement can't tell apart from the knee (lowest, highest), when their
    /// spread says so; None when the knee is clear or no spread was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee_range: Option<(u32, u32)>,
    /// The knee was not reached: it lies above this concurrency, and max useful IOPS is a
    /// lower bound (the knee is the highest level measured, or a gentle sweep stopped below
    /// it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee_above: Option<u32>,
    /// The same for the overload point: (perhaps from, surely from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overload_range: Option<(u32, u32)>,
    /// Levels whose sub-windows disagree by more than a healthy device's do
    /// ([`confidence::UNSTABLE_CV`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unstable_levels: Vec<u32>,
    /// Levels cut short by a signal: shown, never deciding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut_levels: Vec<u32>,
    /// Levels measured while something else disturbed them (CPU contention, other traffic
    /// the levels do not share or that outweighs iosat's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed_levels: Vec<u32>,
    /// Other traffic on the device beside iosat's over the levels, when material: how much, and
    /// how far it widened the verdict's intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_traffic: Option<confidence::OtherTraffic>,
    /// The baseline measured again at the end of the sweep, and whether it drifted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_drift: Option<confidence::BaselineDrift>,
    /// A throughput plateau with latency growing in proportion to concurrency: a hard limit,
    /// and where the requests wait for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<throttle::ThroughputLimit>,
    /// The cap the evidence shows, with that evidence and where the requests wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<cap::CapFinding>,
    /// Fewer than two levels: no knee, overload or limit is judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_few_levels: bool,
    /// Levels with a sub-window far below their rate ([`confidence::stalled`]): the generator
    /// or the device stopped for part of them. Also in `disturbed_levels`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalled_levels: Vec<u32>,
    /// IOPS measured over the knee's range (lowest, highest), when the knee is a range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_useful_iops_range: Option<(f64, f64)>,
    /// The run is disturbed or its baseline did not hold, and the knee's range spans every
    /// level: no knee is named.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub knee_undecided: bool,
}

pub mod cap;
pub mod confidence;
pub mod declared;
pub mod device;
pub mod evidence;
pub mod judge;
pub mod learned;
pub mod open;
pub mod shared;
pub mod split;
pub mod state;
pub mod text;
pub mod throttle;
pub mod usl;
pub mod who;
pub mod words;

/// The overload rule of seed 001: a level is overloaded when its p95 exceeds this multiple of
/// the concurrency-1 p95.
pub const OVERLOAD_P95_FACTOR: f64 = 3.0;

/// How far IOPS × mean latency may stray from the offered concurrency (and from the kernel's
/// aqu-sz) before a level is flagged, as a fraction.
///
/// Why 20 %: a healthy closed-loop measurement already strays by a few percent for reasons
/// that say nothing about the disk: printed rounding (sysbench prints 0.14 ms, ±3.6 %), the
/// time the load generator spends between requests (syscall, accounting: a few µs against
/// 100 µs reads), and sampling jitter of the kernel counters (seed 000: 0.95 s/1.05 s
/// intervals, ±5 %); sysbench's own numbers in seed 000 close within 1 %, and its iostat aqu-sz
/// within 5 %. What the check is for is an order of error no rounding explains: requests
/// served from a cache (latency far too small, IOPS × latency ≪ N), a concurrency wrongly
/// recorded (numjobs forgotten: off by 2x or more), rates divided by the wrong interval, or
/// another workload on the device (aqu-sz ≫ N). 20 % sits well above the first group and
/// well below the second.
pub const LITTLES_LAW_TOLERANCE: f64 = 0.20;

/// The smallest share of IOPS × latency the kernel's aqu-sz may show before a level is flagged:
/// below it, most of each request's latency was spent above the block layer.
pub const AQU_SZ_MIN_SHARE: f64 = 0.5;

/// Latency elasticity (d ln R / d ln N between consecutive levels) from which latency counts
/// as growing in proportion to concurrency. In a closed system X = N/R (Little), so the
/// elasticity of throughput is 1 minus this: at 0.8, quadrupling concurrency buys at most
/// 1.32x the IOPS and the extra requests mostly wait in a queue.
pub const LINEAR_ELASTICITY: f64 = 0.8;

/// Two measured levels whose power lies within this fraction of each other can't be told
/// apart by the measurement; the USL fit then decides which of them is the knee.
pub const POWER_TIE: f64 = 0.10;

/// %util at or above which a level counts as "busy" for the %util lesson.
const UTIL_BUSY_PCT: f64 = 90.0;

/// IOPS must have grown at least this much after %util was already "busy" for the lesson.
const UTIL_LESSON_MIN_GROWTH: f64 = 1.2;

/// For the flat-%util lesson: %util at the first level at least this (the device already
/// looks half busy with few requests)...
const UTIL_FLAT_MIN_PCT: f64 = 50.0;
/// ...and IOPS grown at least this much by the best level.
const UTIL_FLAT_MIN_GROWTH: f64 = 2.0;

/// %util within this many points at both ends "stayed" rather than "went from … to".
const UTIL_SAME_PTS: f64 = 2.0;

/// A fitted USL curve is trusted (shown, and used to refine the knee) only above this R².
const USL_MIN_R2: f64 = 0.9;

/// The fewest distinct levels a USL fit is made from. The curve has three parameters (λ, σ,
/// κ): through three points it passes exactly, so "R² 1.000" from three levels says nothing
/// about the device; the fourth level is the first that can disagree with the curve, so
/// from four on R² measures something (and [`USL_MIN_R2`] then decides whether it is shown).
pub const USL_MIN_LEVELS: usize = 4;

/// A predicted throughput peak is stated only up to this multiple of the highest level
/// measured: beyond it the curve extrapolates κ from levels that barely felt it.
pub const USL_MAX_EXTRAPOLATION: f64 = 2.0;

/// What the analysis is told beside the levels (a sweep knows it; an import mostly not).
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    /// Limits the kernel applies to this process's I/O on the target's device.
    pub limits: &'a [evidence::IoLimit],
    /// The baseline level measured again at the end of the sweep.
    pub baseline_remeasured: Option<&'a LevelPoint>,
    /// The levels come from a simulated device without a cap: a plateau is its own limit.
    pub simulated: bool,
    /// Share of reads in the workload (1 for reads, 0 for writes), to match a kernel limit
    /// per direction; None: unknown.
    pub read_share: Option<f64>,
    /// The device's name for sentences ("vda"); None: the limit's major:minor.
    pub device: Option<&'a str>,
    /// The same workload measured at a second block size, when the data has one: a plateau
    /// that keeps its IOPS or bytes/s across the two is a cap ([`cap::find`]).
    pub other_block_size: Option<&'a [LevelPoint]>,
    /// The sweep was kept gentle on purpose: a knee it did not reach is a lower bound.
    pub sweep_limits: Option<evidence::SweepLimits>,
    /// What the user declares the device was provisioned with (issue 42): a plateau is
    /// matched to it, and one well below it is the device's own limit.
    pub declared_cap: Option<declared::DeclaredCap>,
}

/// [`analyze_with`] knowing nothing beside the levels.
pub fn analyze(levels: &[LevelPoint]) -> Verdict {
    analyze_with(levels, &Context::default())
}

/// Analyse a set of levels: saturation against the baseline, the 3x-p95 overload point,
/// Little's law, Kleinrock's power, the USL fit, the knee, how sure each is, and the
/// plain-words summary.
///
/// Levels are expected sorted by concurrency (they are sorted again here, stably). The
/// baseline is the concurrency-1 level, else the lowest level (said so in the summary); when
/// another level is clearly faster, that one (see [`confidence::rebase`]); when the context
/// has it measured again, the better-supported of the two (see [`confidence::drift`]).
/// Levels cut short by a signal are shown but decide nothing; fewer than two levels give no
/// verdict at all.
///
/// # The knee
/// The knee is the optimal concurrency: throughput still grows and latency has not yet
/// turned linear. Kleinrock's power P = X/R (throughput ÷ latency) captures exactly that: in
/// a closed system X = N/R, so P = N/R² and dP/dN = 0 where d ln R / d ln N = 1/2, i.e. where
/// latency grows half as fast as concurrency — half-way between flat latency (pure scaling)
/// and linear latency (pure queueing), while throughput still grows as N^½. So:
/// 1. the knee is the measured level with the highest power (for X = min(N,k)/S that is
///    exactly k; for seed 000 it is 16, within the article's "between 16 and 64");
/// 2. when a neighbour level's power is within 10 % of the peak, the measurements can't tell
///    them apart, and the USL fit (if trusted) decides: of the tied levels, the one nearest
///    (on a log scale) to the fitted curve's own power optimum;
/// 3. a knee must not be overloaded by seed 001's rule: if it is, the knee moves down to the
///    highest level below the overload point;
/// 4. with measured spreads, the neighbours whose power interval overlaps the knee's make the
///    knee a range ("knee 4–8").
///
/// `max_useful_iops` is the measured IOPS at that knee, so the figure is one that was seen.
pub fn analyze_with(levels: &[LevelPoint], ctx: &Context) -> Verdict {
    let j = judge::judge(levels, ctx);
    let summary = words::summary(&j, ctx);
    let util = j
        .shape
        .is_some()
        .then(|| words::util_lesson(&j.levels))
        .flatten();
    let declared = words::declared_use(&j, ctx);
    let mut v = j.into_verdict(summary, util);
    v.declared_cap = declared;
    v
}

impl From<&crate::latency::LatencySummary> for LatencyNs {
    /// A recorded summary (integer ns, every percentile known) as the analysis reads it.
    fn from(l: &crate::latency::LatencySummary) -> LatencyNs {
        let f = |v: u64| Some(v as f64);
        LatencyNs {
            min: f(l.min),
            mean: l.mean as f64,
            p50: f(l.p50),
            p90: f(l.p90),
            p95: f(l.p95),
            p99: f(l.p99),
            p999: f(l.p999),
            max: f(l.max),
        }
    }
}

pub use words::direction_line;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_sure;
#[cfg(test)]
mod tests_trust;
