//! The numbers of the verdict, without a word: the baseline (re-based, checked against a
//! re-measured one), the per-level findings (saturation, the 3x-p95 rule, Little's law,
//! power), the overload point, the knee (Kleinrock's power, refined by a trusted USL fit,
//! never past overload), how sure each is (ranges, unstable levels), where latency turns
//! linear, the throughput limit and the cap the evidence shows. [`judge`] returns them as a
//! typed [`Judgement`] from a plain list of [`LevelPoint`]s, whatever measured them (a sweep,
//! an import, production traffic learned interval by interval); words.rs writes the
//! sentences, mod.rs joins both into a [`Verdict`].
//!
//! Pure.
//! Imports only: analysis/.

use super::confidence::{self, BaselineDrift};
use super::text;
use super::{
    cap, throttle, usl, Context, LevelFinding, LevelPoint, LittleCheck, UslFit, Verdict,
    AQU_SZ_MIN_SHARE, LINEAR_ELASTICITY, LITTLES_LAW_TOLERANCE, OVERLOAD_P95_FACTOR, POWER_TIE,
    USL_MIN_LEVELS,
};

/// Why the knee is not the measured power peak.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KneeNote {
    /// The peak and its neighbour `pick` are within [`POWER_TIE`]; the trusted USL fit, whose
    /// power optimum is near `optimum`, picked the neighbour.
    UslTie { peak: u32, pick: u32, optimum: f64 },
    /// Power peaks at `peak`, past the overload point: the knee is the last level before it.
    PastOverload { peak: u32 },
}

/// What at least two deciding levels tell (indices into [`Judgement::levels`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// The first level whose p95 exceeds 3x the baseline's.
    pub overload: Option<u32>,
    /// The overload point's range from the levels' spread alone: (perhaps from, surely from).
    pub overload_by_spread: Option<(u32, u32)>,
    /// The overload point against the re-measured baseline, when both are judged against.
    pub overload_alt: Option<u32>,
    /// The overload point's range, both of the above combined.
    pub overload_range: Option<(u32, u32)>,
    /// The fitted USL curve (from [`USL_MIN_LEVELS`] levels on), trusted or not.
    pub usl: Option<UslFit>,
    /// The level where measured power peaks, and the knee.
    pub power_peak: usize,
    pub knee: usize,
    pub knee_note: Option<KneeNote>,
    pub knee_range: Option<(u32, u32)>,
    /// The knee was not reached: it is above this concurrency (the knee is the highest level
    /// measured, or in a gentle sweep the highest whose Little's law closes, the ones above
    /// held back by --rate-limit).
    pub knee_above: Option<u32>,
    /// The level with the most IOPS.
    pub peak: usize,
    pub unstable_levels: Vec<u32>,
    pub linear_from: Option<u32>,
    pub limit: Option<throttle::ThroughputLimit>,
    pub cap: Option<cap::CapFinding>,
    /// The run is shaken ([`Judgement::shaken`]) and the knee's range spans every deciding
    /// level: no knee can be named.
    pub knee_undecided: bool,
    /// IOPS measured at the levels of the knee's range (lowest, highest), when it is a range.
    pub max_useful_range: Option<(f64, f64)>,
    /// No level is surely overloaded, but with the run's disturbance this one perhaps is.
    pub overload_perhaps: Option<u32>,
    /// The first level surely overloaded once the run's disturbance is allowed for (on a
    /// quiet run, the overload point itself).
    pub overload_surely: Option<u32>,
    /// The run is disturbed or its baseline did not hold: answers are ranges.
    pub shaken: bool,
    /// A plateau measured while the baseline drifted: the slowdown explains it as well as a
    /// limit, so neither a cap nor a hard limit is named.
    pub plateau_in_drift: bool,
}

/// The verdict's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// Every level, sorted by concurrency (stably), those cut short included.
    pub all: Vec<LevelPoint>,
    /// The levels that decide: those not cut short.
    pub levels: Vec<LevelPoint>,
    pub cut_levels: Vec<u32>,
    /// Levels measured while something else disturbed them (stalled ones included).
    pub disturbed_levels: Vec<u32>,
    /// Levels with a sub-window far below their rate: the generator or device stopped.
    pub stalled_levels: Vec<u32>,
    /// The other traffic on the device over the levels, when material.
    pub other_traffic: Option<confidence::OtherTraffic>,
    /// The level the baseline was first taken from: concurrency 1, else the lowest. None
    /// without a deciding level.
    pub first: Option<LevelPoint>,
    pub baseline_drift: Option<BaselineDrift>,
    /// The baseline judged against, and the one before a re-base when a level was clearly
    /// faster ([`confidence::rebase`]).
    pub base: Option<LevelPoint>,
    pub rebased_from: Option<LevelPoint>,
    /// The re-measured baseline, when neither it nor the first is better supported.
    pub alt_base: Option<LevelPoint>,
    /// Per deciding level, aligned with `levels`.
    pub findings: Vec<LevelFinding>,
    /// None with fewer than two deciding levels: nothing is judged.
    pub shape: Option<Shape>,
}

/// Judge `levels` (any order; sorted here) knowing `ctx`: see [`super::analyze_with`] for the
/// rules. Callable on any list of points, e.g. a saturation curve learned from production.
pub fn judge(levels: &[LevelPoint], ctx: &Context) -> Judgement {
    let mut all: Vec<LevelPoint> = levels.to_vec();
    all.sort_by_key(|l| l.concurrency);
    let mut lv: Vec<LevelPoint> = all.iter().filter(|l| !is_cut(l)).cloned().collect();
    // What other traffic explains, from the deciding levels' own curve, widens their
    // intervals (and is said for every level; cut ones keep none).
    confidence::explain_other_traffic(&mut lv);
    for l in all.iter_mut() {
        if let Some(x) = lv.iter().find(|x| x.concurrency == l.concurrency) {
            l.disturbance.clone_from(&x.disturbance);
        }
    }
    let lv = lv;
    let (_, disturbed_levels) = confidence::disturbance_lines(&all);
    let cut_levels: Vec<u32> = all
        .iter()
        .filter(|l| is_cut(l))
        .map(|l| l.concurrency)
        .collect();
    let mut j = Judgement {
        all: Vec::new(),
        levels: Vec::new(),
        cut_levels,
        disturbed_levels,
        stalled_levels: Vec::new(),
        other_traffic: None,
        first: None,
        baseline_drift: None,
        base: None,
        rebased_from: None,
        alt_base: None,
        findings: Vec::new(),
        shape: None,
    };
    if let Some(first) = lv.iter().find(|l| l.concurrency == 1).or(lv.first()) {
        // The baseline: concurrency 1 (else the lowest), the better-supported of two
        // measurements, and never slower than a level that is clearly faster.
        let first = first.clone();
        let (drift, mut base, alt) = match ctx.baseline_remeasured {
            Some(again) if lv.len() >= 2 => {
                let mut again = again.clone();
                confidence::explain_like(&mut again, &lv);
                let (d, b, alt) = confidence::drift(&first, &again);
                (Some(d), b, alt)
            }
            _ => (None, first.clone(), None),
        };
        if lv.len() >= 2 {
            if let Some(faster) = confidence::rebase(&lv, &base) {
                j.rebased_from = Some(std::mem::replace(&mut base, faster));
            }
        }
        // A stalled level (the first baseline paused, a host pause) is disturbed; what the
        // stall, the machine and a drift leave open widens the intervals the ranges use.
        j.stalled_levels = lv
            .iter()
            .filter(|l| confidence::stalled(l))
            .map(|l| l.concurrency)
            .collect();
        for &c in &j.stalled_levels {
            if !j.disturbed_levels.contains(&c) {
                j.disturbed_levels.push(c);
            }
        }
        j.disturbed_levels.sort_unstable();
        let wide = confidence::widen_for_trust(&lv, drift.as_ref());
        let wide_base = confidence::widen_for_trust(std::slice::from_ref(&base), drift.as_ref())
            .pop()
            .unwrap_or_else(|| base.clone());
        j.findings = lv.iter().map(|l| finding(l, &base)).collect();
        if lv.len() >= 2 {
            let trust = Trust {
                wide: &wide,
                wide_base: &wide_base,
                drift: drift.as_ref().filter(|d| d.shaken()),
                shaken: !j.disturbed_levels.is_empty()
                    || drift.as_ref().is_some_and(|d| d.shaken()),
            };
            j.shape = Some(shape(&lv, alt.as_ref(), &mut j.findings, ctx, &trust));
        }
        j.other_traffic = confidence::other_traffic(&all, &base);
        (j.first, j.baseline_drift, j.base, j.alt_base) = (Some(first), drift, Some(base), alt);
    }
    (j.all, j.levels) = (all, lv);
    j
}

/// The signal that cut a level short, if one did.
fn cut_by(l: &LevelPoint) -> Option<String> {
    l.disturbance.as_ref().and_then(|d| d.cut_by.clone())
}

fn is_cut(l: &LevelPoint) -> bool {
    cut_by(l).is_some()
}

/// What the run's trust gives [`shape`]: the levels and baseline with their intervals widened
/// for it ([`confidence::widen_for_trust`]), a baseline that did not hold, and whether the run
/// is shaken at all (disturbed levels or such a baseline).
struct Trust<'a> {
    wide: &'a [LevelPoint],
    wide_base: &'a LevelPoint,
    drift: Option<&'a BaselineDrift>,
    shaken: bool,
}

/// Overload, knee, ranges, limit and cap of at least two deciding levels `lv` (their findings
/// already judged against the baseline);
/// marks the findings unstable or throttled where that is what they are.
fn shape(
    lv: &[LevelPoint],
    alt_base: Option<&LevelPoint>,
    findings: &mut [LevelFinding],
    ctx: &Context,
    trust: &Trust,
) -> Shape {
    let overload = findings
        .iter()
        .find(|f| f.overloaded)
        .map(|f| f.concurrency);
    // The USL fit, only from enough levels; kept (with its R²) even when poor, used only
    // when trusted.
    let usl = (lv.len() >= USL_MIN_LEVELS)
        .then(|| {
            usl::fit(
                &lv.iter()
                    .map(|l| (f64::from(l.concurrency), l.iops))
                    .collect::<Vec<_>>(),
            )
        })
        .flatten();
    // On a shaken run the tails hold the disturbance: the knee is kept below the first level
    // that is surely overloaded, not below one the disturbance may have pushed over.
    let overload_surely = if trust.shaken {
        overload.and_then(|_| confidence::overload_surely(trust.wide, trust.wide_base))
    } else {
        overload
    };
    let (power_peak, knee, knee_note) = knee(lv, findings, usl.as_ref(), overload_surely);
    let top_closing = (0..lv.len())
        .rev()
        .find(|&i| findings[i].little != LittleCheck::InFlightOff);
    let knee_above = (knee == lv.len() - 1
        || (ctx.sweep_limits.is_some() && Some(knee) == top_closing))
        .then_some(lv[knee].concurrency);

    // How sure: ranges from the levels' spread (widened for the run's trust), a second
    // baseline, unstable levels.
    let knee_range = confidence::knee_range(trust.wide, knee, overload_surely);
    let overload_by_spread =
        overload.and_then(|o| confidence::overload_range(trust.wide, trust.wide_base, o));
    let knee_undecided = trust.shaken
        && knee_range
            .is_some_and(|(a, b)| a == lv[0].concurrency && b == lv[lv.len() - 1].concurrency);
    let max_useful_range = knee_range.map(|(a, b)| {
        let xs = lv
            .iter()
            .filter(|l| l.concurrency >= a && l.concurrency <= b)
            .map(|l| l.iops);
        (
            xs.clone().fold(f64::INFINITY, f64::min),
            xs.fold(0.0, f64::max),
        )
    });
    let overload_perhaps = if overload.is_none() && trust.shaken {
        confidence::overload_perhaps(trust.wide, trust.wide_base)
    } else {
        None
    };
    let overload_alt = alt_base.and_then(|alt| {
        lv.iter()
            .map(|l| finding(l, alt))
            .find(|f| f.overloaded)
            .map(|f| f.concurrency)
    });
    let mut overload_range = overload_by_spread;
    if let (Some(alt), Some(o)) = (overload_alt, overload) {
        if alt != o {
            let (lo, hi) = overload_range.unwrap_or((o, o));
            overload_range = Some((lo.min(alt).min(o), hi.max(alt).max(o)));
        }
    }
    for (f, u) in findings.iter_mut().zip(confidence::unstable(lv)) {
        f.unstable = u;
    }
    let unstable_levels = findings
        .iter()
        .filter(|f| f.unstable)
        .map(|f| f.concurrency)
        .collect();

    let limit = throttle::find(lv, ctx);
    // Only a throttle that is set (a limit read from this process's cgroup) holds requests
    // above the block layer; without one, a short kernel queue is the machine's time.
    if let Some(t) = limit
        .as_ref()
        .filter(|t| t.place == throttle::LimitPlace::AboveBlockLayer && !ctx.limits.is_empty())
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
    // A slowdown during the sweep (a drifted baseline) makes a plateau, and a level that
    // slowed half-way looks like a burst: only a kernel limit that is set still names a cap.
    let plateau_in_drift = trust.drift.is_some_and(|d| d.drifted)
        && limit.as_ref().is_some_and(|t| t.io_limit.is_none());
    let cap = limit
        .as_ref()
        .and_then(|t| cap::find(lv, t, ctx))
        .filter(|c| !plateau_in_drift || c.evidence == cap::CapEvidence::KernelLimit);
    // One decision for "latency grows in proportion": a hard limit's plateau is queueing, so
    // the queueing sentence starts no later than the plateau.
    let linear = match (linear_from(lv), limit.as_ref()) {
        (Some(a), Some(t)) => Some(a.min(t.from_concurrency)),
        (None, Some(t)) => Some(t.from_concurrency),
        (a, None) => a,
    };
    Shape {
        overload,
        overload_by_spread,
        overload_alt,
        overload_range,
        usl,
        power_peak,
        knee,
        knee_note,
        knee_range,
        knee_above,
        peak: (0..lv.len())
            .max_by(|&a, &b| lv[a].iops.total_cmp(&lv[b].iops))
            .unwrap_or(0),
        unstable_levels,
        linear_from: linear,
        limit,
        cap,
        knee_undecided,
        max_useful_range,
        overload_perhaps,
        overload_surely,
        shaken: trust.shaken,
        plateau_in_drift,
    }
}

/// The measured power peak and the knee (indices into `lv`), with why they differ: see
/// [`super::analyze_with`]'s rules 1–3.
fn knee(
    lv: &[LevelPoint],
    findings: &[LevelFinding],
    usl: Option<&UslFit>,
    overload: Option<u32>,
) -> (usize, usize, Option<KneeNote>) {
    // 1. Measured power peak (first of equal maxima). A level whose IOPS × latency is far off
    // its concurrency (a cache answered, the concurrency was misrecorded) is suspect: it
    // decides the knee only if every level is.
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
    let peak = usable
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

    // 2. USL refinement among levels the measurement can't separate.
    let mut knee = peak;
    let mut note = None;
    if let Some(np) = usl
        .filter(|u| u.trusted())
        .and_then(|u| u.power_peak_concurrency)
    {
        let pos = usable.iter().position(|&i| i == peak).unwrap_or(0);
        let lo = pos.saturating_sub(1);
        let hi = (pos + 1).min(usable.len().saturating_sub(1));
        let best = findings[peak].power;
        let pick = usable[lo..=hi]
            .iter()
            .copied()
            .filter(|&i| findings[i].power >= best * (1.0 - POWER_TIE))
            .min_by(|&a, &b| {
                let d = |i: usize| (f64::from(lv[i].concurrency).ln() - np.ln()).abs();
                d(a).total_cmp(&d(b))
            })
            .unwrap_or(peak);
        if pick != peak {
            note = Some(KneeNote::UslTie {
                peak: lv[peak].concurrency,
                pick: lv[pick].concurrency,
                optimum: np,
            });
            knee = pick;
        }
    }

    // 3. Never past the overload point.
    if let Some(o) = overload.filter(|&o| lv[knee].concurrency >= o) {
        let below = (0..lv.len())
            .rev()
            .find(|&i| lv[i].concurrency < o && findings[i].power > 0.0);
        if let Some(b) = below {
            note = Some(KneeNote::PastOverload {
                peak: lv[knee].concurrency,
            });
            knee = b;
        }
    }
    (peak, knee, note)
}

impl Judgement {
    /// The knee's concurrency, when at least two levels were judged.
    pub fn knee_concurrency(&self) -> Option<u32> {
        let s = self.shape.as_ref()?;
        Some(self.levels[s.knee].concurrency)
    }

    /// The first overloaded level (p95 above 3x the baseline's), when judged and found.
    pub fn overload_concurrency(&self) -> Option<u32> {
        self.shape.as_ref()?.overload
    }

    /// The typed verdict, with the sentences `summary` and the %util lesson written for it.
    pub fn into_verdict(self, summary: Vec<String>, util_lesson: Option<String>) -> Verdict {
        let (Some(base), Some(shape)) = (self.base.as_ref(), self.shape.as_ref()) else {
            return self.unjudged(summary);
        };
        let lv = &self.levels;
        let knee = &lv[shape.knee];
        let on_device = shape.cap.as_ref().filter(|c| c.on_device());
        Verdict {
            baseline_concurrency: base.concurrency,
            baseline_latency_ns: base.latency_ns.mean,
            baseline_p95_ns: base.latency_ns.p95,
            baseline_uncertainty_rel: confidence::baseline_uncertainty_rel(
                base,
                self.baseline_drift.as_ref(),
            ),
            levels: self.all_findings(base, false),
            overload_concurrency: shape.overload,
            power_peak_concurrency: lv[shape.power_peak].concurrency,
            knee_concurrency: knee.concurrency,
            max_useful_iops: knee.iops,
            peak_iops: lv[shape.peak].iops,
            usl: shape.usl.clone(),
            linear_from_concurrency: shape.linear_from,
            suspected_cap_iops: on_device.and_then(|c| c.iops),
            suspected_cap_bytes_per_s: on_device.and_then(|c| c.bytes_per_s),
            cap: shape.cap.clone(),
            util_lesson,
            summary,
            declared_cap: None,
            knee_range: shape.knee_range,
            knee_above: shape.knee_above,
            overload_range: shape.overload_range,
            unstable_levels: shape.unstable_levels.clone(),
            cut_levels: self.cut_levels,
            disturbed_levels: self.disturbed_levels,
            other_traffic: self.other_traffic,
            baseline_drift: self.baseline_drift,
            limit: shape.limit.clone(),
            too_few_levels: false,
            stalled_levels: self.stalled_levels,
            max_useful_iops_range: shape.max_useful_range,
            knee_undecided: shape.knee_undecided,
        }
    }

    /// Every level's findings, cut ones included (shown, never overloaded, labelled by their
    /// signal), in concurrency order. `sort`: sort them again (the one-level case lists the
    /// baseline first).
    fn all_findings(&self, base: &LevelPoint, sort: bool) -> Vec<LevelFinding> {
        let mut out = Vec::with_capacity(self.all.len());
        let mut it = self.findings.iter().cloned();
        for l in &self.all {
            match cut_by(l) {
                Some(sig) => {
                    let mut f = finding(l, base);
                    f.overloaded = false;
                    f.cut_by = Some(sig);
                    out.push(f);
                }
                None => out.extend(it.next()),
            }
        }
        if sort {
            out.sort_by_key(|f| f.concurrency);
        }
        out
    }

    /// A verdict that judges nothing: no levels, or too few. Its knee and peak are the
    /// baseline's own figures (0 without one), so readers of the typed verdict find no
    /// invented finding.
    fn unjudged(self, summary: Vec<String>) -> Verdict {
        let base = self.base.as_ref();
        let c = base.map_or(0, |b| b.concurrency);
        let iops = base.map_or(0.0, |b| b.iops);
        let levels = match base {
            Some(b) => self.all_findings(b, true),
            None => Vec::new(),
        };
        Verdict {
            baseline_concurrency: c,
            baseline_latency_ns: base.map_or(0.0, |b| b.latency_ns.mean),
            baseline_p95_ns: base.and_then(|b| b.latency_ns.p95),
            baseline_uncertainty_rel: base.and_then(confidence::uncertainty_rel),
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
            declared_cap: None,
            knee_range: None,
            knee_above: None,
            overload_range: None,
            unstable_levels: Vec::new(),
            cut_levels: self.cut_levels,
            // The one-level verdict lists no disturbed levels (its lines still say them).
            disturbed_levels: if base.is_some() {
                Vec::new()
            } else {
                self.disturbed_levels
            },
            other_traffic: self.other_traffic,
            baseline_drift: None,
            limit: None,
            too_few_levels: true,
            stalled_levels: self.stalled_levels,
            max_useful_iops_range: None,
            knee_undecided: false,
        }
    }
}

/// `a ÷ b`, 0 when `b` is not a positive number.
pub fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 && a.is_finite() {
        a / b
    } else {
        0.0
    }
}

/// The per-level findings against the baseline.
pub fn finding(l: &LevelPoint, base: &LevelPoint) -> LevelFinding {
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
    // The other traffic's requests in flight (measured) are not ours: the kernel's queue is
    // compared with ours without them.
    let other_q = l
        .disturbance
        .as_ref()
        .and_then(|d| d.other_in_flight)
        .unwrap_or(0.0);
    if let Some(q) = l.kernel_aqu_sz.map(|q| q - other_q).filter(|q| *q > 0.0) {
        let kernel = if q > in_flight * (1.0 + LITTLES_LAW_TOLERANCE) {
            notes.push(format!(
                "the kernel's aqu-sz {q:.2} exceeds IOPS × latency = {in_flight:.2}: another workload on the device?"
            ));
            LittleCheck::KernelQueueHigh
        } else if q < in_flight * AQU_SZ_MIN_SHARE {
            // Name the cause the evidence shows: measured waiting for a CPU, else the usual
            // suspects (a throttle is named by the verdict's limit line instead).
            // The same decision as the run's trust line (confidence::machine_share).
            let cpu_wait = l
                .disturbance
                .as_ref()
                .and_then(|d| d.cpu_wait_ns_per_io)
                .filter(|w| {
                    confidence::machine_share(l) > 0.0
                        && *w >= confidence::CPU_WAIT_CONTENDED_SHARE * l.latency_ns.mean
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
pub fn linear_from(lv: &[LevelPoint]) -> Option<u32> {
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
