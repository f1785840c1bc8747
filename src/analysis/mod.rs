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
                why.push(format!("the {what} (concurrency {c}) was disturbed"));
            }
        }
        if self.baseline_drift.as_ref().is_some_and(|d| d.drifted) {
            why.push("the baseline drifted during the sweep".to_string());
        }
        (!why.is_empty()).then(|| why.join("; "))
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
    /// Levels the measurement can't tell apart from the knee (lowest, highest), when their
    /// spread says so; None when the knee is clear or no spread was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee_range: Option<(u32, u32)>,
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
    /// Levels measured while something else disturbed them (CPU contention, other traffic).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed_levels: Vec<u32>,
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
}

pub mod cap;
pub mod confidence;
pub mod device;
pub mod evidence;
pub mod text;
pub mod throttle;
pub mod usl;

use text::{fmt_iops, fmt_latency_ns, fmt_ratio};

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
const POWER_TIE: f64 = 0.10;

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
    let mut all: Vec<LevelPoint> = levels.to_vec();
    all.sort_by_key(|l| l.concurrency);
    let cut_of = |l: &LevelPoint| l.disturbance.as_ref().and_then(|d| d.cut_by.clone());
    let lv: Vec<LevelPoint> = all
        .iter()
        .filter(|l| cut_of(l).is_none())
        .cloned()
        .collect();
    let (disturbance_lines, disturbed_levels) = confidence::disturbance_lines(&all);
    let cut_levels: Vec<u32> = all
        .iter()
        .filter(|l| cut_of(l).is_some())
        .map(|l| l.concurrency)
        .collect();
    if lv.is_empty() {
        let mut summary = vec!["No levels to analyse.".to_string()];
        summary.extend(disturbance_lines);
        return unjudged(None, Vec::new(), summary, cut_levels, disturbed_levels);
    }

    // The baseline: concurrency 1 (else the lowest), the better-supported of two measurements,
    // and never slower than a level that is clearly faster.
    let mut summary = Vec::new();
    let first = lv
        .iter()
        .find(|l| l.concurrency == 1)
        .unwrap_or(&lv[0])
        .clone();
    if first.concurrency != 1 {
        summary.push(format!(
            "No concurrency-1 level: the baseline is the lowest level measured (concurrency {}), \
             so every ratio is relative to it and understates saturation.",
            first.concurrency
        ));
    }
    let (baseline_drift, mut base, alt_base) = match ctx.baseline_remeasured {
        Some(again) if lv.len() >= 2 => {
            let (d, b, alt) = confidence::drift(&first, again);
            summary.push(confidence::drift_line(&d));
            (Some(d), b, alt)
        }
        _ => (None, first, None),
    };
    if lv.len() >= 2 {
        if let Some((faster, line)) = confidence::rebase(&lv, &base) {
            summary.push(line);
            base = faster;
        }
    }
    let base_mean = base.latency_ns.mean;
    let base_p95 = base.latency_ns.p95;

    let mut findings: Vec<LevelFinding> = lv.iter().map(|l| finding(l, &base)).collect();
    let peak_iops = lv.iter().map(|l| l.iops).fold(0.0, f64::max);

    if lv.len() < 2 {
        return too_few(
            &all,
            &base,
            findings,
            summary,
            disturbance_lines,
            cut_levels,
        );
    }

    let overload_concurrency = findings
        .iter()
        .find(|f| f.overloaded)
        .map(|f| f.concurrency);

    // The USL fit, only from enough levels and only when it fits.
    let distinct = lv.len();
    let fitted = (distinct >= USL_MIN_LEVELS)
        .then(|| {
            usl::fit(
                &lv.iter()
                    .map(|l| (f64::from(l.concurrency), l.iops))
                    .collect::<Vec<_>>(),
            )
        })
        .flatten();
    // Kept in the typed verdict (with its R²) even when poor; shown and used only when trusted.
    let usl = fitted;
    let trusted = usl.as_ref().filter(|u| u.trusted());

    // 1. Measured power peak (first of equal maxima).
    // A level whose IOPS × latency is far off its concurrency (a cache answered, the
    // concurrency was misrecorded) is suspect: it decides the knee only if every level is.
    let positive: Vec<usize> = (0..lv.len()).filter(|&i| findings[i].power > 0.0).collect();
    let trusted_levels: Vec<usize> = positive
        .iter()
        .copied()
        .filter(|&i| findings[i].little != LittleCheck::InFlightOff)
        .collect();
    let usable = if trusted_levels.is_empty() {
        positive
    } else {
        trusted_levels
    };
    let peak_idx = usable
        .iter()
        .copied()
        .reduce(|a, b| {
            if findings[b].power > findings[a].power {
                b
            } else {
                a
            }
        })
        .unwrap_or(0);
    let power_peak_concurrency = lv[peak_idx].concurrency;

    // 2. USL refinement among levels the measurement can't separate.
    let mut knee_idx = peak_idx;
    let mut knee_note = None;
    if let Some(np) = trusted.and_then(|u| u.power_peak_concurrency) {
        let pos = usable.iter().position(|&i| i == peak_idx).unwrap_or(0);
        let lo = pos.saturating_sub(1);
        let hi = (pos + 1).min(usable.len().saturating_sub(1));
        let best = findings[peak_idx].power;
        let tied = usable[lo..=hi]
            .iter()
            .copied()
            .filter(|&i| findings[i].power >= best * (1.0 - POWER_TIE));
        let pick = tied
            .min_by(|&a, &b| {
                let d = |i: usize| (f64::from(lv[i].concurrency).ln() - np.ln()).abs();
                d(a).total_cmp(&d(b))
            })
            .unwrap_or(peak_idx);
        if pick != peak_idx {
            knee_note = Some(format!(
                "Power at concurrency {} and {} is within {:.0} % of each other; the USL fit \
                 (optimum near {np:.0}) picks {}.",
                lv[peak_idx].concurrency,
                lv[pick].concurrency,
                POWER_TIE * 100.0,
                lv[pick].concurrency
            ));
            knee_idx = pick;
        }
    }

    // 3. Never past the overload point.
    if let Some(o) = overload_concurrency {
        if lv[knee_idx].concurrency >= o {
            let below = (0..lv.len())
                .rev()
                .find(|&i| lv[i].concurrency < o && findings[i].power > 0.0);
            if let Some(b) = below {
                knee_note = Some(format!(
                    "Power peaks at concurrency {}, but p95 is already above {OVERLOAD_P95_FACTOR}x \
                     the baseline there; the knee is the last level before overload.",
                    lv[knee_idx].concurrency
                ));
                knee_idx = b;
            }
        }
    }
    let knee = &lv[knee_idx];

    // 4. How sure: ranges from the levels' spread, a second baseline, unstable levels.
    let knee_range = confidence::knee_range(&lv, knee_idx, overload_concurrency);
    let spread_overload =
        overload_concurrency.and_then(|o| confidence::overload_range(&lv, &base, o));
    let mut overload_range = spread_overload;
    let alt_overload = alt_base.as_ref().map(|alt| {
        lv.iter()
            .map(|l| finding(l, alt))
            .find(|f| f.overloaded)
            .map(|f| f.concurrency)
    });
    if let (Some(alt), Some(o)) = (alt_overload.flatten(), overload_concurrency) {
        if alt != o {
            let (lo, hi) = overload_range.unwrap_or((o, o));
            overload_range = Some((lo.min(alt).min(o), hi.max(alt).max(o)));
        }
    }
    let unstable_flags = confidence::unstable(&lv);
    for (f, u) in findings.iter_mut().zip(&unstable_flags) {
        f.unstable = *u;
    }
    let unstable_levels: Vec<u32> = findings
        .iter()
        .filter(|f| f.unstable)
        .map(|f| f.concurrency)
        .collect();

    let linear_from_concurrency = linear_from(&lv);
    let limit = throttle::find(&lv, ctx);
    if let Some(t) = limit
        .as_ref()
        .filter(|t| t.place == throttle::LimitPlace::AboveBlockLayer)
    {
        // The short kernel queue is the throttle's doing, not a cache: Little's law closes on
        // the process side, and the table says so.
        for f in findings.iter_mut().filter(|f| {
            f.concurrency >= t.from_concurrency && f.little == LittleCheck::KernelQueueLow
        }) {
            f.little = LittleCheck::Throttled;
            f.littles_law_ok = true;
            f.littles_law_note = None;
        }
    }
    let cap = limit.as_ref().and_then(|t| cap::find(&lv, t, ctx));
    let on_device = cap.as_ref().filter(|c| c.on_device());
    let util_lesson = util_lesson(&lv);

    // The plain-words summary.
    summary.push(format!(
        "Baseline (concurrency {}): {} average latency{}, {} IOPS.",
        base.concurrency,
        fmt_latency_ns(base_mean),
        base_p95
            .map(|p| format!(", {} p95", fmt_latency_ns(p)))
            .unwrap_or_default(),
        fmt_iops(base.iops)
    ));
    let knee_words = match knee_range {
        Some((a, b)) => format!(
            "{a}–{b} (the levels' own spread can't separate them; {} measured best)",
            knee.concurrency
        ),
        None => knee.concurrency.to_string(),
    };
    summary.push(format!(
        "Knee (optimal concurrency): {knee_words} — {} IOPS at {} average latency ({} the \
         baseline).",
        fmt_iops(knee.iops),
        fmt_latency_ns(knee.latency_ns.mean),
        // Never below the baseline: a clearly faster level became the baseline above, so
        // what is left is within the noise.
        fmt_ratio(findings[knee_idx].saturation_avg.max(1.0))
    ));
    if let Some(n) = knee_note {
        summary.push(n);
    }
    if knee_idx == lv.len() - 1 {
        summary.push(
            "The knee is the highest level measured: IOPS per unit of latency was still \
             rising, so the real knee lies beyond; measure at higher concurrency."
                .to_string(),
        );
    }
    let peak_pos = (0..lv.len())
        .max_by(|&a, &b| lv[a].iops.total_cmp(&lv[b].iops))
        .expect("non-empty");
    let peak_level = &lv[peak_pos];
    summary.push(format!(
        "Max useful IOPS: {} at concurrency {}{}.",
        fmt_iops(knee.iops),
        knee.concurrency,
        if peak_level.concurrency != knee.concurrency {
            format!(
                " (the most measured: {} at concurrency {}, for {} the baseline latency)",
                fmt_iops(peak_level.iops),
                peak_level.concurrency,
                fmt_ratio(findings[peak_pos].saturation_avg)
            )
        } else {
            String::new()
        }
    ));
    match (overload_concurrency, base_p95) {
        (Some(o), Some(bp)) => {
            let f = findings.iter().find(|f| f.concurrency == o).expect("found");
            let p95 = lv
                .iter()
                .find(|l| l.concurrency == o)
                .and_then(|l| l.latency_ns.p95)
                .unwrap_or(0.0);
            let mut h = Vec::new();
            if let Some((lo, hi)) = spread_overload {
                if lo < o {
                    h.push(format!("perhaps from {lo}"));
                }
                if hi > o {
                    h.push(format!("surely from {hi}"));
                }
            }
            if let Some(a) = alt_overload.flatten().filter(|&a| a != o) {
                h.push(format!("from {a} against the re-measured baseline"));
            }
            let hedge = if h.is_empty() {
                String::new()
            } else {
                format!(", {}", h.join(", "))
            };
            summary.push(format!(
                "Overloaded from concurrency {o}{hedge}: p95 {} is {} the baseline p95 {} (more \
                 than {OVERLOAD_P95_FACTOR}x).",
                fmt_latency_ns(p95),
                fmt_ratio(f.saturation_p95.unwrap_or(0.0)),
                fmt_latency_ns(bp)
            ));
        }
        (None, Some(_)) => {
            let last = lv.last().expect("non-empty").concurrency;
            summary.push(format!(
                "Not overloaded: p95 stays within {OVERLOAD_P95_FACTOR}x the baseline up to \
                 concurrency {last}."
            ));
        }
        _ => summary
            .push("No p95 at the baseline: the 3x-p95 overload rule can't be applied.".to_string()),
    }
    match linear_from_concurrency {
        Some(n) => {
            let i = lv.iter().position(|l| l.concurrency == n).unwrap_or(0);
            let last = lv.last().expect("non-empty");
            summary.push(format!(
                "Latency turns linear (queueing) from concurrency {n}: from there to {}, \
                 concurrency grew {:.0}x, latency {:.1}x, IOPS only {:.2}x.",
                last.concurrency,
                f64::from(last.concurrency) / f64::from(n),
                last.latency_ns.mean / lv[i].latency_ns.mean,
                last.iops / lv[i].iops
            ));
        }
        None if overload_concurrency.is_none() => summary.push(
            "Latency never turns linear within the measured levels: the device may give more \
             at higher concurrency."
                .to_string(),
        ),
        None => summary.push(
            "Latency does not grow in proportion to concurrency between the measured levels, \
             but the p95 tail already says overload."
                .to_string(),
        ),
    }
    // A plateau: what limits it and where the requests wait. A throttle above the block layer
    // or a kernel limit is named by the throttle's sentence; otherwise a cap is claimed only
    // on positive evidence, and without it the sentence says that one sweep cannot tell.
    if let Some(t) = &limit {
        summary.push(match &cap {
            Some(c) if c.evidence == cap::CapEvidence::Burst => cap_sentence(c, t),
            Some(c) if c.evidence == cap::CapEvidence::BlockSizes => cap_sentence(c, t),
            Some(_) => throttle::sentence(t, ctx),
            None => plateau_sentence(t, ctx),
        });
    }
    if !ctx.limits.is_empty() && limit.as_ref().map_or(true, |t| t.io_limit.is_none()) {
        let words: Vec<String> = ctx
            .limits
            .iter()
            .map(|l| throttle::limit_words(l, ctx.device))
            .collect();
        summary.push(format!(
            "The kernel limits this process's I/O ({}); the measured throughput does not sit \
             at that limit.",
            words.join("; ")
        ));
    }
    match (trusted, &usl) {
        (Some(u), _) => {
            let max_n = f64::from(lv.last().expect("non-empty").concurrency);
            summary.push(format!(
                "USL fit: λ = {} IOPS, σ = {}, κ = {} (R² {:.3}){}{}.",
                fmt_iops(u.lambda),
                text::fmt_coef(u.sigma),
                text::fmt_coef(u.kappa),
                u.r_squared,
                u.power_peak_concurrency
                    .map(|n| format!("; best IOPS per latency near concurrency {n:.0}"))
                    .unwrap_or_default(),
                match (u.peak_concurrency, u.peak_iops) {
                    (Some(n), Some(x)) if n <= max_n * USL_MAX_EXTRAPOLATION => format!(
                        "; predicted throughput peak {} IOPS at concurrency {n:.0}",
                        fmt_iops(x)
                    ),
                    (Some(n), Some(_)) => format!(
                        "; its throughput peak (near concurrency {n:.0}) lies too far beyond the \
                         levels measured to predict"
                    ),
                    _ => "; no throughput peak predicted (no crosstalk)".to_string(),
                }
            ));
        }
        (None, Some(f)) => summary.push(format!(
            "No USL fit shown: it fits the levels poorly (R² {:.3}, below {USL_MIN_R2}).",
            f.r_squared
        )),
        (None, None) if distinct < USL_MIN_LEVELS => summary.push(format!(
            "No USL fit: {distinct} levels are too few for a curve of three parameters (at least \
             {USL_MIN_LEVELS}; through three points any such curve passes exactly)."
        )),
        (None, None) => {}
    }
    if let Some(l) = &util_lesson {
        summary.push(l.clone());
    }
    if !unstable_levels.is_empty() {
        summary.push(format!(
            "Unstable: the sub-windows of concurrency {} disagree by more than a healthy \
             device's do (CV above {:.1} %); measure {} longer (--duration, --repeat or --budget) before \
             trusting {}.",
            confidence::list(&unstable_levels),
            confidence::UNSTABLE_CV * 100.0,
            if unstable_levels.len() == 1 {
                "it"
            } else {
                "them"
            },
            if unstable_levels.len() == 1 {
                "its place in the verdict"
            } else {
                "their place in the verdict"
            }
        ));
    }
    summary.extend(disturbance_lines);
    summary.extend(littles_lines(&lv, &findings));

    // Cut levels are shown in the table with what they measured, deciding nothing.
    let mut all_findings: Vec<LevelFinding> = Vec::with_capacity(all.len());
    let mut it = findings.into_iter().peekable();
    for l in &all {
        match cut_of(l) {
            Some(sig) => {
                let mut f = finding(l, &base);
                f.overloaded = false;
                f.cut_by = Some(sig);
                all_findings.push(f);
            }
            None => all_findings.extend(it.next()),
        }
    }

    Verdict {
        baseline_concurrency: base.concurrency,
        baseline_latency_ns: base_mean,
        baseline_p95_ns: base_p95,
        levels: all_findings,
        overload_concurrency,
        power_peak_concurrency,
        knee_concurrency: knee.concurrency,
        max_useful_iops: knee.iops,
        peak_iops,
        usl,
        linear_from_concurrency,
        suspected_cap_iops: on_device.and_then(|c| c.iops),
        suspected_cap_bytes_per_s: on_device.and_then(|c| c.bytes_per_s),
        cap,
        util_lesson,
        summary,
        knee_range,
        overload_range,
        unstable_levels,
        cut_levels,
        disturbed_levels,
        baseline_drift,
        limit,
        too_few_levels: false,
    }
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

/// One direction of a mixed workload judged on its own: each level's IOPS and latency of
/// that direction at the offered (total) concurrency, so its baseline, knee and overload
/// point are the direction's. Little's law is not judged per direction (the offered
/// concurrency is shared by both). One sentence, starting with `name` ("Reads").
pub fn direction_line(name: &str, levels: &[LevelPoint]) -> String {
    let v = analyze(levels);
    if v.too_few_levels {
        return format!("{name}: one level only, not judged.");
    }
    let knee = v
        .levels
        .iter()
        .find(|f| f.concurrency == v.knee_concurrency);
    let knee_lat = levels
        .iter()
        .find(|l| l.concurrency == v.knee_concurrency)
        .map_or(0.0, |l| l.latency_ns.mean);
    format!(
        "{name}: baseline {} at concurrency {}; knee {} ({} IOPS at {}, {} the baseline); {}.",
        fmt_latency_ns(v.baseline_latency_ns),
        v.baseline_concurrency,
        v.knee_concurrency,
        fmt_iops(v.max_useful_iops),
        fmt_latency_ns(knee_lat),
        fmt_ratio(knee.map_or(1.0, |f| f.saturation_avg.max(1.0))),
        match v.overload_concurrency {
            Some(o) =>
                format!("overloaded from concurrency {o} (p95 above {OVERLOAD_P95_FACTOR}x)"),
            None if v.baseline_p95_ns.is_some() => "not overloaded".to_string(),
            None => "no p95, no overload rule".to_string(),
        }
    )
}

/// One level (after cut levels are set aside): its figures, and no verdict.
fn too_few(
    all: &[LevelPoint],
    base: &LevelPoint,
    findings: Vec<LevelFinding>,
    mut summary: Vec<String>,
    disturbance_lines: Vec<String>,
    cut_levels: Vec<u32>,
) -> Verdict {
    summary.push(format!(
        "Only one level measured (concurrency {}): a verdict needs at least two levels, so \
         nothing is judged (no knee, no overload point, no fit).",
        base.concurrency
    ));
    summary.push(format!(
        "Baseline (concurrency {}): {} average latency{}, {} IOPS.",
        base.concurrency,
        fmt_latency_ns(base.latency_ns.mean),
        base.latency_ns
            .p95
            .map(|p| format!(", {} p95", fmt_latency_ns(p)))
            .unwrap_or_default(),
        fmt_iops(base.iops)
    ));
    summary.extend(disturbance_lines);
    let mut levels = findings;
    for l in all.iter().filter(|l| l.concurrency != base.concurrency) {
        let mut f = finding(l, base);
        f.overloaded = false;
        f.cut_by = l.disturbance.as_ref().and_then(|d| d.cut_by.clone());
        levels.push(f);
    }
    levels.sort_by_key(|f| f.concurrency);
    unjudged(Some(base), levels, summary, cut_levels, Vec::new())
}

/// A verdict that judges nothing: no levels, or too few. Its knee and peak are the baseline's
/// own figures (0 without one), so readers of the typed verdict find no invented finding.
fn unjudged(
    base: Option<&LevelPoint>,
    levels: Vec<LevelFinding>,
    summary: Vec<String>,
    cut_levels: Vec<u32>,
    disturbed_levels: Vec<u32>,
) -> Verdict {
    let c = base.map_or(0, |b| b.concurrency);
    let iops = base.map_or(0.0, |b| b.iops);
    Verdict {
        baseline_concurrency: c,
        baseline_latency_ns: base.map_or(0.0, |b| b.latency_ns.mean),
        baseline_p95_ns: base.and_then(|b| b.latency_ns.p95),
        levels,
        overload_concurrency: None,
        power_peak_concurrency: c,
        knee_concurrency: c,
        max_useful_iops: iops,
        peak_iops: iops,
        usl: None,
        linear_from_concurrency: None,
        suspected_cap_iops: None,
        suspected_cap_bytes_per_s: None,
        cap: None,
        util_lesson: None,
        summary,
        knee_range: None,
        overload_range: None,
        unstable_levels: Vec::new(),
        cut_levels,
        disturbed_levels,
        baseline_drift: None,
        limit: None,
        too_few_levels: true,
    }
}

/// "3000 IOPS (12.3 MB/s)".
fn iops_and_mb(iops: f64, bytes_per_s: f64) -> String {
    format!("{} IOPS ({:.1} MB/s)", fmt_iops(iops), bytes_per_s / 1e6)
}

/// Where the requests wait for a plateau, in one sentence (empty when unknown).
fn place_words(t: &throttle::ThroughputLimit, whichever: &str) -> String {
    match (t.place, t.kernel_queue_share) {
        (throttle::LimitPlace::DeviceQueue, Some(q)) => format!(
            " The device's own queue holds the waiting requests (aqu-sz {:.0} % of those in \
             flight): {whichever} sits at the device or below it (a cloud volume's cap, a \
             controller), below the block layer, not in this machine's kernel.",
            q * 100.0
        ),
        _ => String::new(),
    }
}

/// A plateau nothing tells from the device's own limit (issue 25): say so, and what would.
fn plateau_sentence(t: &throttle::ThroughputLimit, ctx: &Context) -> String {
    let head = format!(
        "Throughput plateaus at about {} from concurrency {}",
        iops_and_mb(t.iops, t.bytes_per_s),
        t.from_concurrency
    );
    if ctx.simulated {
        return format!("{head}: the simulated device's own limit (it has no cap).");
    }
    format!(
        "{head}: the device's limit, or a cap placed on it — one sweep cannot tell them \
         apart.{}",
        place_words(t, "whichever it is")
    )
}

/// A cap the evidence shows: its figure, the evidence, and where the requests wait.
fn cap_sentence(c: &cap::CapFinding, t: &throttle::ThroughputLimit) -> String {
    let figure = match (c.iops, c.bytes_per_s) {
        (_, Some(b)) => format!("{:.1} MB/s", b / 1e6),
        (Some(x), None) => format!("{} IOPS", fmt_iops(x)),
        (None, None) => iops_and_mb(c.plateau_iops, c.plateau_bytes_per_s),
    };
    let why =
        match (&c.burst, c.other_block_size) {
            (Some(b), _) => format!(
            "after a burst: concurrency {}'s first sub-window ran {} IOPS, its second half {}. \
             A device's own limit gives no burst: this is a cap placed on the device (a token \
             bucket with burst credit, like a cloud volume's provisioned IOPS or throughput), \
             at about {figure}.",
            b.concurrency,
            fmt_iops(b.first_iops),
            fmt_iops(b.late_iops)
        ),
            (None, Some((bs, iops))) => format!(
            "and at {:.0} KiB per request the plateau is {} IOPS ({:.1} MB/s): it keeps its {}, \
             where a device's own limit would move with the request size. This is a {} cap \
             placed on the device, at about {figure}.",
            bs / 1024.0,
            fmt_iops(iops),
            iops * bs / 1e6,
            if c.bytes_per_s.is_some() { "bytes/s" } else { "IOPS" },
            if c.bytes_per_s.is_some() { "bandwidth" } else { "IOPS" },
        ),
            (None, None) => String::new(),
        };
    let place = match c.place {
        throttle::LimitPlace::DeviceQueue => place_words(t, "the cap"),
        _ => String::new(),
    };
    format!(
        "Throughput plateaus at about {} from concurrency {} {why}{place}",
        iops_and_mb(c.plateau_iops, c.plateau_bytes_per_s),
        c.from_concurrency
    )
}

/// Little's law's complaints, one line per kind of complaint (not one per level).
fn littles_lines(lv: &[LevelPoint], findings: &[LevelFinding]) -> Vec<String> {
    let mut out = Vec::new();
    for kind in [
        LittleCheck::InFlightOff,
        LittleCheck::KernelQueueHigh,
        LittleCheck::KernelQueueLow,
    ] {
        let hit: Vec<(&LevelPoint, &LevelFinding)> = lv
            .iter()
            .zip(findings)
            .filter(|(_, f)| f.little == kind && f.littles_law_note.is_some())
            .collect();
        match hit.as_slice() {
            [] => {}
            [(l, f)] => out.push(format!(
                "Little's law does not close at concurrency {}: {}; treat this level as suspect.",
                l.concurrency,
                f.littles_law_note.as_deref().unwrap_or_default()
            )),
            many => {
                let levels: Vec<u32> = many.iter().map(|(l, _)| l.concurrency).collect();
                let why = match kind {
                    LittleCheck::InFlightOff => {
                        "IOPS × latency differs from the concurrency offered (a cache answered, \
                         the concurrency was misrecorded, or rates used the wrong interval)"
                    }
                    LittleCheck::KernelQueueHigh => {
                        "the kernel's aqu-sz exceeds IOPS × latency: another workload on the \
                         device?"
                    }
                    _ if many.iter().all(|(_, f)| {
                        f.littles_law_note
                            .as_deref()
                            .is_some_and(|n| n.contains("waiting for a CPU"))
                    }) =>
                    {
                        "the kernel's aqu-sz is under half of IOPS × latency: most of the \
                         latency is spent above the device, waiting for a CPU (the machine was \
                         busy)"
                    }
                    _ => {
                        "the kernel's aqu-sz is under half of IOPS × latency: most of the \
                         latency is spent above the device (cache hits, CPU-bound path)"
                    }
                };
                out.push(format!(
                    "Little's law does not close at concurrency {}: {why}; treat these levels as \
                     suspect (the table's note column has each level's figures).",
                    confidence::list(&levels)
                ));
            }
        }
    }
    out
}

/// `a ÷ b`, 0 when `b` is not a positive number.
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 && a.is_finite() {
        a / b
    } else {
        0.0
    }
}

/// The per-level findings against the baseline.
fn finding(l: &LevelPoint, base: &LevelPoint) -> LevelFinding {
    let mean_s = l.latency_ns.mean / 1e9;
    let saturation_p95 = match (l.latency_ns.p95, base.latency_ns.p95) {
        (Some(p), Some(b)) if b > 0.0 => Some(p / b),
        _ => None,
    };
    let in_flight = l.iops * mean_s;
    let n = f64::from(l.concurrency);
    let mut notes = Vec::new();
    let mut little = LittleCheck::Ok;
    if n > 0.0 && (in_flight / n - 1.0).abs() > LITTLES_LAW_TOLERANCE {
        notes.push(format!(
            "IOPS × latency = {in_flight:.2} in flight against {} offered",
            l.concurrency
        ));
        little = LittleCheck::InFlightOff;
    }
    // The kernel's aqu-sz counts only the time requests spend below the block layer; the
    // load generator's latency also holds the syscall and (on VMs) the hypervisor path, so
    // aqu-sz sits somewhat below IOPS × latency on a healthy run (20-30 % on virtio). Only an
    // aqu-sz clearly above it (another workload on the device) or below half of it (most of
    // the latency is spent above the device: cache hits, a CPU-bound path, or a throttle the
    // verdict recognises as such) is flagged.
    if let Some(q) = l.kernel_aqu_sz.filter(|q| *q > 0.0) {
        let kernel = if q > in_flight * (1.0 + LITTLES_LAW_TOLERANCE) {
            notes.push(format!(
                "the kernel's aqu-sz {q:.2} exceeds IOPS × latency = {in_flight:.2}: another workload on the device?"
            ));
            LittleCheck::KernelQueueHigh
        } else if q < in_flight * AQU_SZ_MIN_SHARE {
            // Name the cause the evidence shows: measured waiting for a CPU, else the usual
            // suspects (a throttle is named by the verdict's limit line instead).
            let cpu_wait = l
                .disturbance
                .as_ref()
                .and_then(|d| d.cpu_wait_ns_per_io)
                .filter(|w| {
                    l.latency_ns.mean > 0.0 && *w / l.latency_ns.mean >= confidence::CPU_WAIT_SHARE
                });
            let why = match cpu_wait {
                Some(w) => format!("waiting for a CPU ({}/IO of it)", text::fmt_latency_ns(w)),
                None => "cache hits, CPU-bound path".to_string(),
            };
            notes.push(format!(
                "the kernel's aqu-sz {q:.2} is under half of IOPS × latency = {in_flight:.2}: most of the latency is spent above the device ({why})"
            ));
            LittleCheck::KernelQueueLow
        } else {
            LittleCheck::Ok
        };
        if little == LittleCheck::Ok {
            little = kernel;
        }
    }
    LevelFinding {
        concurrency: l.concurrency,
        saturation_avg: ratio(l.latency_ns.mean, base.latency_ns.mean),
        saturation_p95,
        // A level below the baseline (one slowed by a cold start or a disturbance, after the
        // verdict re-based on a faster level) cannot be overloaded: overload is what more
        // concurrency than the baseline's does to the tail.
        overloaded: l.concurrency > base.concurrency
            && saturation_p95.is_some_and(|r| r > OVERLOAD_P95_FACTOR),
        littles_law_concurrency: in_flight,
        littles_law_ok: notes.is_empty(),
        power: if mean_s > 0.0 { l.iops / mean_s } else { 0.0 },
        littles_law_note: (!notes.is_empty()).then(|| notes.join(", ")),
        little,
        unstable: false,
        cut_by: None,
    }
}

/// The first level from which average latency grows in proportion to concurrency on every
/// following step (elasticity ≥ [`LINEAR_ELASTICITY`]). Requiring every later step, not just
/// one, keeps a single noisy step from being read as queueing.
fn linear_from(lv: &[LevelPoint]) -> Option<u32> {
    let pts: Vec<&LevelPoint> = lv
        .iter()
        .filter(|l| l.latency_ns.mean > 0.0 && l.concurrency > 0)
        .collect();
    let mut from = None;
    for w in pts.windows(2).rev() {
        let (a, b) = (w[0], w[1]);
        if b.concurrency <= a.concurrency {
            continue;
        }
        let e = (b.latency_ns.mean / a.latency_ns.mean).ln()
            / (f64::from(b.concurrency) / f64::from(a.concurrency)).ln();
        if e >= LINEAR_ELASTICITY {
            from = Some(a.concurrency);
        } else {
            break;
        }
    }
    from
}

/// The %util lesson: the first level whose %util is already "busy" (≥ 90 %), and how much
/// IOPS still grew after it.
fn util_lesson(lv: &[LevelPoint]) -> Option<String> {
    let Some((i, util)) = lv.iter().enumerate().find_map(|(i, l)| {
        l.kernel_util_pct
            .filter(|&u| u >= UTIL_BUSY_PCT)
            .map(|u| (i, u))
    }) else {
        return util_flat_lesson(lv);
    };
    let busy = &lv[i];
    let best = lv[i..].iter().max_by(|a, b| a.iops.total_cmp(&b.iops))?;
    let growth = ratio(best.iops, busy.iops);
    (growth >= UTIL_LESSON_MIN_GROWTH)
        .then(|| {
            format!(
                "%util reached {util:.0} % at concurrency {}, yet IOPS still grew {growth:.1}x up \
                 to concurrency {}.",
                busy.concurrency, best.concurrency
            )
        })
        .or_else(|| util_flat_lesson(lv))
}

/// The same trap on kernels or devices where %util never gets near 100: it barely moves
/// while throughput multiplies (kernels since 5.0 sample io_ticks per jiffy, and a device
/// serving requests in parallel is "busy" as soon as one is in flight).
fn util_flat_lesson(lv: &[LevelPoint]) -> Option<String> {
    let first = lv.iter().find(|l| l.kernel_util_pct.is_some())?;
    let best = lv
        .iter()
        .filter(|l| l.kernel_util_pct.is_some())
        .max_by(|a, b| a.iops.total_cmp(&b.iops))?;
    let (u0, u1) = (first.kernel_util_pct?, best.kernel_util_pct?);
    let growth = ratio(best.iops, first.iops);
    let util_growth = ratio(u1, u0);
    (u0 >= UTIL_FLAT_MIN_PCT && growth >= UTIL_FLAT_MIN_GROWTH && util_growth * 2.0 <= growth).then(
        || {
            // "went only from 75 % to 69 %" reads wrong: say it fell, or stayed.
            let moved = if (u1 - u0).abs() < UTIL_SAME_PTS {
                format!("%util stayed at about {u0:.0} % ({u0:.0} % to {u1:.0} %)")
            } else if u1 < u0 {
                format!("%util even fell from {u0:.0} % to {u1:.0} %")
            } else {
                format!("%util went only from {u0:.0} % to {u1:.0} %")
            };
            format!(
                "{moved} between concurrency {} and {}, while IOPS grew {growth:.1}x: %util is \
                 time busy, not capacity.",
                first.concurrency, best.concurrency
            )
        },
    )
}

#[cfg(test)]
mod tests;
