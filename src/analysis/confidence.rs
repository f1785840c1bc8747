//! How sure the verdict is: the baseline it judges against (re-based when a level is clearly
//! faster, checked against a re-measured baseline), the knee and overload point as ranges when the
//! levels' own spread can't separate neighbours, the levels too unstable to rely on, what other
//! traffic on the device explains (each level's intervals widened by it, the levels it does not
//! explain disturbed), levels that stalled, the intervals widened for what a disturbed or
//! drifting run leaves open (its ranges), and one line per cause of disturbance (CPU
//! contention, other traffic, a stop signal). Pure.
//! Imports only: analysis/.

use super::evidence::Spread;
use super::text::{fmt_iops, fmt_latency_ns};
use super::{LevelPoint, LITTLES_LAW_TOLERANCE, OVERLOAD_P95_FACTOR};
use serde::{Deserialize, Serialize};

/// Without a measured spread, a level whose mean latency is this much below the baseline's is
/// clearly faster: the baseline was slowed (cold start, CPU idle states, a disturbed window).
/// Sub-windows of a quiet level agree within a few percent; 10 % is well beyond that.
pub const BASELINE_TOLERANCE: f64 = 0.10;

/// A re-measured baseline counts as drifted when it differs from the first by more than this
/// and lies outside the first's 95 % interval (or the first outside its own): a level moves by
/// a few percent from one minute to the next, which no window's spread shows. A difference
/// beyond this that the intervals cover is not "the same within the noise" either: the
/// measurements scatter too much to tell ([`BaselineDrift::unsteady`]).
pub const DRIFT_TOLERANCE: f64 = 0.10;

/// A sub-window that ran at under this share of its level's rate: the load generator or the
/// device stopped for most of it (a SIGSTOP, a host pause, a device stall). A healthy level's
/// windows agree within a CV of 1–9 % (issue 25), so even its slowest window is far above it.
pub const STALL_SHARE: f64 = 0.25;

/// A level whose sub-windows' mean latency (or IOPS) varies with a CV above this is unstable:
/// its own figures can't be relied on, whatever the verdict relies on them for.
///
/// Why 17.5 %: a healthy device's eight 250 ms windows agree within a CV of 1–9 % (issue 25:
/// an idle host, and the known-truth devices whose service time is exact, where the only
/// scatter is the machine's), so the threshold sits at about twice the noisiest healthy level;
/// it is about a min–max spread of half the level's value over 8 windows (the expected range
/// of 8 normal draws is 2.8 standard deviations). A CV, not the min–max, so that re-measuring
/// a steady level does not make it look less stable. Two neighbours whose power the windows
/// can't separate are not unstable for that: the knee becomes a range ([`knee_range`]),
/// which is re-measured but never blocks a profile. (Until issue 25 a level was also called
/// unstable when its power interval was wider than the step to its neighbour, which near the
/// knee of a healthy device is every level: a 5 % CV gives a ±9 % interval.)
pub const UNSTABLE_CV: f64 = 0.175;

/// Waiting for a CPU counts as a material part of the latency from this share of it.
pub const CPU_WAIT_SHARE: f64 = 0.10;

/// CPU steal (a hypervisor running someone else) is named from this percentage.
pub const STEAL_PCT: f64 = 10.0;

/// The CPU was contended over a level when runnable tasks waited for one this share of its
/// time or more (PSI `cpu some`, measured over the level). A quiet machine sweeping the
/// known device stays far below it; a spinning thread on every core (tests/it/sweep/trust.rs)
/// or two compilers on this 2-core VM keep it at 60-100 %.
pub const CPU_CONTENDED_PSI_PCT: f64 = 50.0;

/// On a contended CPU, iosat's own threads waiting this share of the mean latency or more
/// show the contention reached the I/O path. Below [`CPU_WAIT_SHARE`] on the mean, but a
/// scheduler hands a CPU over in slices of milliseconds, so the wait falls on a few requests
/// whole, in the tail the overload point reads (issue 38: c=1 p95 5.18 ms against a 2.42 ms
/// mean under a CPU hog, 90 % busy on every core), and the path's other CPU hops (a loop
/// device's or FUSE server's kernel workers, dm's) wait behind the same load unmeasured.
/// Measured on this 2-core VM with two compilers running (PSI cpu some 99-100 %): a sweep of
/// the known device at real-time priority, which the compilers cannot hold up, waited
/// 0.5-1.9 % (20-46 µs per I/O); one at normal priority beside a 90 % hog on every core,
/// 13-60 %.
pub const CPU_WAIT_CONTENDED_SHARE: f64 = 0.03;

/// Other processes' user-space work over a level (`cpu_other_user_pct`: the machine's user and
/// nice time less iosat's own) from this share of all CPUs leaves a CPU free too seldom for
/// the I/O path's own hops: a loop device's or FUSE server's kernel workers, dm's, an NBD or
/// iSCSI daemon wait behind it, and iosat cannot measure their wait, only its own threads'.
/// Issue 38: under a hog 90 % busy on each core of this 2-core VM, PSI `cpu some` read only
/// 10-14 % and iosat's threads waited 2.8 % of the mean, while the known device's c=1 p95
/// went from 2.2 to 5.6 ms (mean 2.46 ms): the wait fell on the path, not on iosat. The hog's
/// own share is its 90 % less what iosat, the path and the hypervisor take from it (at 2000
/// IOPS of a debug build about 10-15 % of the machine): 75-88 % was measured beside other
/// load, so the bar sits at 60 %, where on two CPUs both are busy about a third of the time.
/// A quiet machine's sweeps of the known device run at a few percent; one compiler on two
/// CPUs at about 50 %; two compilers at 85-100 %.
pub const OTHER_USER_BUSY_PCT: f64 = 60.0;

/// Other traffic on the device counts from this share of iosat's own IOPS...
pub const OTHER_SHARE: f64 = 0.05;
/// ...and at least this many requests per second (a few background writes are not a workload).
pub const OTHER_MIN_IOPS: f64 = 20.0;

/// Other traffic is steady when every level's rate is within this share of the levels' median
/// (or within the noise of the level's own rate, [`OTHER_SHARE`], if that is wider): then the
/// levels were judged against one workload, and what it adds is explained; a level outside
/// it shared the disk with a workload the others did not see.
pub const OTHER_VARY: f64 = 0.5;

/// The other traffic at the levels, as the verdict states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherTraffic {
    /// Averages over the levels that measured it (zeros included), requests per second and
    /// requests in flight (None when the kernel's awaits were unknown).
    pub r_s: f64,
    pub w_s: f64,
    pub in_flight: Option<f64>,
    /// The baseline's intervals widened by this (relative, ±) for what that traffic explains.
    pub baseline_widened_rel: f64,
    /// The most any deciding level's intervals were widened by.
    pub max_widened_rel: f64,
    /// Levels whose other traffic the rest do not share (it varied), or which carried more of
    /// it in flight than iosat's own: judged disturbed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unexplained_levels: Vec<u32>,
}

/// The latency elasticity of the curve at level `i` of `lv` (sorted, deciding levels): ln of
/// the mean latency's ratio over ln of the concurrency's, to the next level (from the previous
/// one at the top), clamped to 0..=1 (flat on a parallel device, proportional on a queueing one).
fn elasticity_at(lv: &[LevelPoint], i: usize) -> f64 {
    let (a, b) = match (i.checked_sub(1), lv.get(i + 1)) {
        (_, Some(next)) => (&lv[i], next),
        (Some(prev), None) => (&lv[prev], &lv[i]),
        _ => return 1.0,
    };
    let (la, lb) = (a.latency_ns.mean, b.latency_ns.mean);
    let (na, nb) = (f64::from(a.concurrency), f64::from(b.concurrency));
    if la <= 0.0 || lb <= 0.0 || na <= 0.0 || nb <= na {
        return 1.0;
    }
    ((lb / la).ln() / (nb / na).ln()).clamp(0.0, 1.0)
}

/// How far other traffic of `x` requests in flight can move a level of concurrency `n` whose
/// curve has elasticity `e` there: the level ran at concurrency n + x, not n, and the curve
/// moves latency by (1 + x/n)^e between the two.
fn widening(x: f64, n: u32, e: f64) -> f64 {
    if x <= 0.0 || n == 0 {
        return 0.0;
    }
    (1.0 + x / f64::from(n)).powf(e) - 1.0
}

fn other_in_flight(l: &LevelPoint) -> Option<f64> {
    l.disturbance.as_ref().and_then(|d| d.other_in_flight)
}

/// Fill each deciding level's `other_explains_rel` (sorted `lv`): the widening its other
/// traffic in flight explains at the curve's own slope there. Levels without it keep 0.
pub fn explain_other_traffic(lv: &mut [LevelPoint]) {
    let e: Vec<f64> = (0..lv.len()).map(|i| elasticity_at(lv, i)).collect();
    for (l, e) in lv.iter_mut().zip(e) {
        let w = other_in_flight(l).map_or(0.0, |x| widening(x, l.concurrency, e));
        if let Some(d) = l.disturbance.as_mut() {
            d.other_explains_rel = w;
        }
    }
}

/// The same for a level measured apart from `lv` (the re-measured baseline), at the slope of
/// the level of its concurrency in `lv`.
pub fn explain_like(l: &mut LevelPoint, lv: &[LevelPoint]) {
    let e = lv
        .iter()
        .position(|x| x.concurrency == l.concurrency)
        .map_or(1.0, |i| elasticity_at(lv, i));
    let w = other_in_flight(l).map_or(0.0, |x| widening(x, l.concurrency, e));
    if let Some(d) = l.disturbance.as_mut() {
        d.other_explains_rel = w;
    }
}

fn explained(l: &LevelPoint) -> f64 {
    l.disturbance.as_ref().map_or(0.0, |d| d.other_explains_rel)
}

/// The levels (any, cut ones included) whose other traffic is not explained: a material rate
/// ([`OTHER_MIN_IOPS`], [`OTHER_SHARE`] of the level's own) that is off the levels' median by
/// more than [`OTHER_VARY`] of it (or the level's own noise, if wider), or more other requests
/// in flight than the level's own concurrency.
fn unexplained(all: &[LevelPoint]) -> Vec<(u32, f64)> {
    let mut rates: Vec<f64> = all
        .iter()
        .filter_map(|l| l.disturbance.as_ref()?.other_iops)
        .collect();
    if rates.is_empty() {
        return Vec::new();
    }
    rates.sort_by(f64::total_cmp);
    let m = rates.len();
    let median = if m % 2 == 1 {
        rates[m / 2]
    } else {
        (rates[m / 2 - 1] + rates[m / 2]) / 2.0
    };
    all.iter()
        .filter_map(|l| {
            let x = l.disturbance.as_ref()?.other_iops?;
            let noise = (OTHER_SHARE * l.iops).max(OTHER_MIN_IOPS);
            let varied = (x - median).abs() > (OTHER_VARY * median).max(noise);
            let outweighs = match other_in_flight(l) {
                Some(q) => q > f64::from(l.concurrency),
                None => x > l.iops,
            };
            let material = x >= OTHER_MIN_IOPS && x >= OTHER_SHARE * l.iops;
            (material && (varied || outweighs)).then_some((l.concurrency, x))
        })
        .collect()
}

/// The other traffic over the levels `all` (explained, [`explain_other_traffic`]) and
/// `base`'s widening: None when no level measured a material amount of it.
pub fn other_traffic(all: &[LevelPoint], base: &LevelPoint) -> Option<OtherTraffic> {
    let ds: Vec<&LevelPoint> = all
        .iter()
        .filter(|l| {
            l.disturbance
                .as_ref()
                .is_some_and(|d| d.other_iops.is_some())
        })
        .collect();
    let material = ds.iter().any(|l| {
        let x = l
            .disturbance
            .as_ref()
            .and_then(|d| d.other_iops)
            .unwrap_or(0.0);
        x >= OTHER_MIN_IOPS && x >= OTHER_SHARE * l.iops
    });
    if !material {
        return None;
    }
    let n = ds.len() as f64;
    let avg = |f: fn(&super::evidence::Disturbance) -> Option<f64>| {
        ds.iter()
            .filter_map(|l| f(l.disturbance.as_ref()?))
            .sum::<f64>()
            / n
    };
    let in_flight = ds
        .iter()
        .all(|l| other_in_flight(l).is_some())
        .then(|| avg(|d| d.other_in_flight));
    Some(OtherTraffic {
        r_s: avg(|d| d.other_r_s.or(d.other_iops)),
        w_s: avg(|d| d.other_w_s),
        in_flight,
        baseline_widened_rel: explained(base),
        max_widened_rel: all.iter().map(explained).fold(0.0, f64::max),
        unexplained_levels: unexplained(all).into_iter().map(|(c, _)| c).collect(),
    })
}

/// The baseline re-measured at the end of a sweep, against the first measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineDrift {
    pub concurrency: u32,
    /// Mean latency at the start and at the end, ns.
    pub first_mean_ns: f64,
    pub again_mean_ns: f64,
    /// The change is beyond [`DRIFT_TOLERANCE`] and beyond the measurements' intervals.
    pub drifted: bool,
    /// Which measurement the verdict judges against.
    pub judged_against: DriftChoice,
    /// The change is beyond [`DRIFT_TOLERANCE`], but the measurements scatter so much that
    /// their intervals cover it: neither a drift nor the same, the baseline is uncertain.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsteady: bool,
    /// The first measurement stalled ([`stalled`]): its figure is the stall's, not the device's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub first_stalled: bool,
    /// The re-measure stalled and the first did not: the verdict judges against the first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remeasure_stalled: bool,
    /// Either measurement lies outside the other's 95 % interval (a change within
    /// [`DRIFT_TOLERANCE`] then is a move, not "the same within the noise").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_interval: bool,
}

impl BaselineDrift {
    /// The two measurements do not agree beyond their intervals: drifted or stalled. The
    /// verdict's headline then says so and gives ranges (unsteady ones carry intervals that
    /// already cover the change).
    pub fn shaken(&self) -> bool {
        self.drifted || self.first_stalled
    }

    /// The relative change from the first measurement to the second (0 when unknown).
    pub fn change_rel(&self) -> f64 {
        if self.first_mean_ns > 0.0 && self.again_mean_ns > 0.0 {
            self.again_mean_ns / self.first_mean_ns - 1.0
        } else {
            0.0
        }
    }
}

/// A level whose slowest sub-window ran at under [`STALL_SHARE`] of the level's rate: the
/// generator or the device stopped for part of it. Levels measured as one window never are,
/// nor a spread without its window extremes (an import or an older result: `iops_max` 0).
pub fn stalled(l: &LevelPoint) -> bool {
    l.spread.as_ref().is_some_and(|s| {
        s.windows >= 2 && l.iops > 0.0 && s.iops_max > 0.0 && s.iops_min < STALL_SHARE * l.iops
    })
}

/// The stall of level `l` in words: "concurrency 1 stalled (a window ran at 3 IOPS against the
/// level's 480)".
pub fn stall_words(l: &LevelPoint) -> String {
    let min = l.spread.as_ref().map_or(0.0, |s| s.iops_min);
    format!(
        "concurrency {} stalled (a window ran at {} IOPS against the level's {})",
        l.concurrency,
        fmt_iops(min),
        fmt_iops(l.iops)
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftChoice {
    First,
    Remeasured,
    /// Neither is better supported: the verdict is widened to cover both.
    Both,
}

/// The standard normal's 97.5 % quantile: the z of a two-sided 95 % interval.
pub const Z95: f64 = 1.959_964;

/// Student's t for a two-sided 95 % interval with `df` degrees of freedom (df ≥ 1): the one
/// table (the open loop's intervals and learning use it too).
pub fn t95(df: u32) -> f64 {
    const T: [f64; 10] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    ];
    match df {
        0 => f64::INFINITY,
        1..=10 => T[df as usize - 1],
        11..=15 => 2.131,
        16..=20 => 2.086,
        21..=30 => 2.042,
        31..=60 => 2.000,
        _ => Z95,
    }
}

/// Half-width, relative to the figure, of its 95 % confidence interval from `n` sub-windows
/// whose (population) coefficient of variation is `cv`: t · s ÷ √n with s the sample standard
/// deviation (cv · √(n ÷ (n − 1))), i.e. t · cv ÷ √(n − 1). It narrows as windows are added
/// (`--repeat`, the adaptive re-measure), which the windows' min–max never does. Neighbouring
/// windows of one level are not independent (a disturbance spans several), so this is the
/// interval of a level that was steady; [`unstable`] flags the others by their CV.
pub fn rel_half_width(cv: f64, n: u32) -> f64 {
    if n < 2 || !cv.is_finite() {
        return 0.0;
    }
    t95(n - 1) * cv / f64::from(n - 1).sqrt()
}

/// The 95 % interval `(lo, hi)` of figure `v` whose windows' CV is `cv`, or the figure itself
/// when no spread was measured; widened by `extra` (relative) for what other traffic explains.
fn interval(v: f64, cv: Option<f64>, n: u32, extra: f64) -> (f64, f64) {
    let rel = match cv {
        Some(c) if n >= 2 => rel_half_width(c, n),
        _ => 0.0,
    } + extra;
    if v <= 0.0 || rel <= 0.0 {
        return (v, v);
    }
    let h = v * rel;
    ((v - h).max(0.0), v + h)
}

fn mean_interval(l: &LevelPoint) -> (f64, f64) {
    let s = l.spread.as_ref();
    interval(
        l.latency_ns.mean,
        s.map(|s| s.mean_ns_cv),
        s.map_or(0, |s| s.windows),
        explained(l),
    )
}

fn p95_interval(l: &LevelPoint) -> Option<(f64, f64)> {
    let p = l.latency_ns.p95?;
    let s = l.spread.as_ref();
    Some(interval(
        p,
        s.and_then(|s| s.p95_ns_cv),
        s.map_or(0, |s| s.windows),
        explained(l),
    ))
}

/// Kleinrock's power (IOPS ÷ mean latency) as an interval from the level's windows.
pub fn power_interval(l: &LevelPoint) -> (f64, f64) {
    let s = l.spread.as_ref();
    let (x_lo, x_hi) = interval(
        l.iops,
        s.map(|s| s.iops_cv),
        s.map_or(0, |s| s.windows),
        explained(l),
    );
    let (r_lo, r_hi) = mean_interval(l);
    if r_hi <= 0.0 {
        return (0.0, 0.0);
    }
    if r_lo <= 0.0 {
        // Latency known only from above: power has no upper bound.
        return (x_lo / r_hi * 1e9, f64::INFINITY);
    }
    (x_lo / r_hi * 1e9, x_hi / r_lo * 1e9)
}

/// The most a level's intervals are widened for the run's trust ([`widen_for_trust`]): the
/// lower bound of its latency stays above zero.
pub const MAX_TRUST_WIDENING: f64 = 0.9;

/// The share of a level's latency the machine, not the device, may account for; 0 when it
/// is not material. The one decision behind the run's trust line, the disturbance sentence
/// and the widened intervals: iosat's own wait for a CPU of [`CPU_WAIT_SHARE`] and more (that
/// share), the CPU time the hypervisor stole ([`STEAL_PCT`] and more: that share), or a
/// contended CPU ([`CPU_CONTENDED_PSI_PCT`]) that iosat's threads measurably waited for
/// ([`CPU_WAIT_CONTENDED_SHARE`]), or CPUs other processes kept busy
/// ([`OTHER_USER_BUSY_PCT`], [`busy_cpus`]): then at least [`CPU_WAIT_SHARE`], the least the
/// machine counts for once material, since the tail and the path's unmeasured hops hold more
/// than the mean wait shows.
pub fn machine_share(l: &LevelPoint) -> f64 {
    let Some(d) = &l.disturbance else { return 0.0 };
    let wait = cpu_wait_share(l);
    let steal = d.cpu_steal_pct.unwrap_or(0.0);
    let own = if wait >= CPU_WAIT_SHARE {
        wait
    } else if (contended(l) && wait >= CPU_WAIT_CONTENDED_SHARE) || busy_cpus(l).is_some() {
        CPU_WAIT_SHARE
    } else {
        0.0
    };
    let stolen = if steal >= STEAL_PCT {
        steal / 100.0
    } else {
        0.0
    };
    own.max(stolen).min(1.0)
}

/// iosat's own wait for a CPU per I/O as a share of the level's mean latency (0 unknown).
fn cpu_wait_share(l: &LevelPoint) -> f64 {
    match l.disturbance.as_ref().and_then(|d| d.cpu_wait_ns_per_io) {
        Some(w) if l.latency_ns.mean > 0.0 => w / l.latency_ns.mean,
        _ => 0.0,
    }
}

/// Other processes' user-space work over the level, percent of all CPUs, when it reached
/// [`OTHER_USER_BUSY_PCT`].
pub fn busy_cpus(l: &LevelPoint) -> Option<f64> {
    l.disturbance
        .as_ref()?
        .cpu_other_user_pct
        .filter(|&p| p >= OTHER_USER_BUSY_PCT)
}

/// The machine counts at level `l` ([`machine_share`]) only because other processes kept the
/// CPUs busy ([`busy_cpus`]): iosat's own threads did not wait enough to show it, nor did the
/// hypervisor steal. What is said of it is what was measured: the CPUs' load, not a wait.
pub fn only_busy_cpus(l: &LevelPoint) -> bool {
    let steal = l
        .disturbance
        .as_ref()
        .and_then(|d| d.cpu_steal_pct)
        .unwrap_or(0.0);
    let wait = cpu_wait_share(l);
    busy_cpus(l).is_some()
        && wait < CPU_WAIT_SHARE
        && !(contended(l) && wait >= CPU_WAIT_CONTENDED_SHARE)
        && steal < STEAL_PCT
}

/// Runnable tasks waited for a CPU [`CPU_CONTENDED_PSI_PCT`] of the level or more.
fn contended(l: &LevelPoint) -> bool {
    l.disturbance
        .as_ref()
        .and_then(|d| d.psi_cpu_some_pct)
        .is_some_and(|p| p >= CPU_CONTENDED_PSI_PCT)
}

/// Copies of `lv` whose intervals are widened for what the run's trust leaves open: each level
/// by the share of its latency the machine accounts for ([`machine_share`]: the device's own
/// latency lies anywhere between the figure without that wait and the figure), and every level
/// by half a drifted or unsteady baseline's move (the device was somewhere between its two
/// states while the levels ran), at most [`MAX_TRUST_WIDENING`]. A quiet run's copies are
/// the levels themselves. The knee's and overload point's ranges are read from these.
pub fn widen_for_trust(lv: &[LevelPoint], drift: Option<&BaselineDrift>) -> Vec<LevelPoint> {
    let moved = drift
        .filter(|d| d.drifted)
        .map_or(0.0, |d| d.change_rel().abs() / 2.0);
    lv.iter()
        .map(|l| {
            let mut l = l.clone();
            let w = (machine_share(&l) + moved).min(MAX_TRUST_WIDENING);
            if w > 0.0 {
                let d = l.disturbance.get_or_insert_with(Default::default);
                d.other_explains_rel = (d.other_explains_rel + w).min(MAX_TRUST_WIDENING);
            }
            l
        })
        .collect()
}

/// The noisier of the level's IOPS and mean latency windows, as a CV.
fn noisiest_cv(s: &Spread) -> f64 {
    s.iops_cv.max(s.mean_ns_cv)
}

/// Relative noise of a level's mean latency: its interval's half-width, or 0.
fn mean_noise(l: &LevelPoint) -> f64 {
    let (lo, hi) = mean_interval(l);
    if l.latency_ns.mean > 0.0 {
        (hi - lo) / 2.0 / l.latency_ns.mean
    } else {
        0.0
    }
}

/// How well a level's mean latency is known: its 95 % interval's half-width relative to it
/// (windows' spread plus what other traffic explains); None when neither was measured.
pub fn uncertainty_rel(l: &LevelPoint) -> Option<f64> {
    (l.spread.is_some() || explained(l) > 0.0).then(|| mean_noise(l))
}

/// The baseline's stated uncertainty: [`uncertainty_rel`], plus half the difference between
/// its two measurements when the sweep took it again at the end. The windows of one
/// measurement share its moment (the machine's load then, the device's state), so their
/// spread misses how much a level moves from one minute to the next; the re-measure shows it.
pub fn baseline_uncertainty_rel(base: &LevelPoint, drift: Option<&BaselineDrift>) -> Option<f64> {
    let own = uncertainty_rel(base);
    let moved = drift
        .filter(|d| d.first_mean_ns > 0.0 && d.again_mean_ns > 0.0 && base.latency_ns.mean > 0.0)
        .map(|d| (d.again_mean_ns - d.first_mean_ns).abs() / 2.0 / base.latency_ns.mean);
    match (own, moved) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

/// The baseline's better-supported value when the sweep measured it twice. The one whose
/// windows agree better (smaller CV) is better supported; without spreads neither is, and the
/// verdict is widened over both (`alt` returned).
pub fn drift(
    first: &LevelPoint,
    again: &LevelPoint,
) -> (BaselineDrift, LevelPoint, Option<LevelPoint>) {
    let (a, b) = (first.latency_ns.mean, again.latency_ns.mean);
    let beyond = a > 0.0 && b > 0.0 && (b / a - 1.0).abs() > DRIFT_TOLERANCE;
    // Each against the other's 95 % interval: a stalled or noisy measurement has a wide one,
    // which must not swallow a change the other, steady one places far outside its own.
    // A measurement without windows has no interval: the tolerance alone judges it.
    let out_of = |l: &LevelPoint, v: f64| {
        uncertainty_rel(l).is_some() && {
            let (lo, hi) = mean_interval(l);
            v < lo || v > hi
        }
    };
    let outside = out_of(first, b) || out_of(again, a);
    let no_intervals = uncertainty_rel(first).is_none() && uncertainty_rel(again).is_none();
    let (first_stalled, again_stalled) = (stalled(first), stalled(again));
    // A stall explains any difference: the stalled measurement is set aside, not called a
    // drift of the device, and not taken as the other's confirmation when they agree (both
    // may hold the same busy machine: a stalled 4.46 ms against a clean 4.83 ms, each twice
    // the device's 2.3 ms, was called "the same within the noise: the device did not
    // change").
    let stall = first_stalled != again_stalled;
    let drifted = beyond && (outside || no_intervals) && !stall;
    let unsteady = beyond && !(outside || no_intervals) && !stall;
    let choice = if stall {
        if first_stalled {
            DriftChoice::Remeasured
        } else {
            DriftChoice::First
        }
    } else if !beyond || unsteady {
        // Within the intervals: the first measurement stands, as for no change at all.
        DriftChoice::First
    } else {
        match (&first.spread, &again.spread) {
            (Some(x), Some(y)) if y.mean_ns_cv * 2.0 < x.mean_ns_cv => DriftChoice::Remeasured,
            (Some(x), Some(y)) if x.mean_ns_cv * 2.0 < y.mean_ns_cv => DriftChoice::First,
            _ => DriftChoice::Both,
        }
    };
    let d = BaselineDrift {
        concurrency: first.concurrency,
        first_mean_ns: a,
        again_mean_ns: b,
        drifted,
        judged_against: choice,
        unsteady,
        first_stalled: stall && first_stalled,
        remeasure_stalled: stall && again_stalled,
        outside_interval: outside,
    };
    match choice {
        DriftChoice::First => (d, first.clone(), None),
        DriftChoice::Remeasured => (d, again.clone(), None),
        DriftChoice::Both => (d, first.clone(), Some(again.clone())),
    }
}

/// The drift in one sentence.
pub fn drift_line(d: &BaselineDrift) -> String {
    let (a, b) = (d.first_mean_ns, d.again_mean_ns);
    let head = format!(
        "Baseline re-measured at the end: concurrency {} took {} at the start and {} at the end",
        d.concurrency,
        fmt_latency_ns(a),
        fmt_latency_ns(b)
    );
    let pct = d.change_rel() * 100.0;
    if d.first_stalled {
        return format!(
            "{head} ({pct:+.0} %): the first measurement stalled (a window ran far below the \
             level's rate: the generator or the device stopped), so the verdict judges against \
             the re-measure."
        );
    }
    if d.unsteady {
        return format!(
            "{head} ({pct:+.0} %): more than the {:.0} % a level moves between minutes, but \
             the measurements' windows scatter too much to tell a drift from the noise; the \
             baseline is uncertain, and the verdict judges against the first.",
            DRIFT_TOLERANCE * 100.0
        );
    }
    if d.remeasure_stalled || !d.drifted && pct.abs() > DRIFT_TOLERANCE * 100.0 {
        // Beyond the tolerance, within the intervals: only a stall of the re-measure does that.
        return format!(
            "{head} ({pct:+.0} %): the re-measure stalled, so the verdict judges against the \
             first measurement."
        );
    }
    if !d.drifted && d.outside_interval {
        return format!(
            "{head} ({pct:+.0} %): beyond the measurements' intervals, but within the {:.0} % a \
             level moves between minutes, so not judged a drift.",
            DRIFT_TOLERANCE * 100.0
        );
    }
    if !d.drifted {
        return format!(
            "{head}, the same within the noise: the device did not change during the sweep."
        );
    }
    let how = match d.judged_against {
        DriftChoice::First => {
            "the first measurement's windows agree better, so the verdict judges against it"
        }
        DriftChoice::Remeasured => {
            "the second measurement's windows agree better, so the verdict judges against it"
        }
        DriftChoice::Both => "neither is better supported, so the overload point is given for both",
    };
    format!(
        "{head} ({:+.0} %): the baseline drifted, the device or the machine changed during the \
         sweep; {how}.",
        (b / a - 1.0) * 100.0
    )
}

/// Re-base when a level is clearly faster than the baseline (its mean latency below the
/// baseline's by more than the noise, its Little's law closing): a knee "at 0.28x the
/// baseline" means the baseline was slowed, not that the device got faster under load. The
/// fastest such level becomes the baseline; returns it ([`rebase_line`] says so).
pub fn rebase(lv: &[LevelPoint], base: &LevelPoint) -> Option<LevelPoint> {
    let tol = BASELINE_TOLERANCE.max(mean_noise(base));
    // Only a level whose own Little's law closes: a level served from a cache (IOPS ×
    // latency far below the concurrency) is fast for the wrong reason.
    let closes = |l: &LevelPoint| {
        let n = f64::from(l.concurrency);
        n > 0.0 && (l.iops * l.latency_ns.mean / 1e9 / n - 1.0).abs() <= LITTLES_LAW_TOLERANCE
    };
    let fastest = lv
        .iter()
        .filter(|l| l.latency_ns.mean > 0.0 && closes(l))
        .min_by(|a, b| a.latency_ns.mean.total_cmp(&b.latency_ns.mean))?;
    let (m, b) = (fastest.latency_ns.mean, base.latency_ns.mean);
    if fastest.concurrency == base.concurrency || m >= b * (1.0 - tol.max(mean_noise(fastest))) {
        return None;
    }
    Some(fastest.clone())
}

/// The re-base in one sentence: `fastest` became the baseline instead of `slowed`.
pub fn rebase_line(fastest: &LevelPoint, slowed: &LevelPoint) -> String {
    format!(
        "Concurrency {} took {} on average, less than concurrency {}'s {}: the baseline \
         level was slowed (a cold start, CPU idle states, a disturbed window), so the \
         verdict takes its baseline from concurrency {}.",
        fastest.concurrency,
        fmt_latency_ns(fastest.latency_ns.mean),
        slowed.concurrency,
        fmt_latency_ns(slowed.latency_ns.mean),
        fastest.concurrency
    )
}

/// The levels the measurement can't tell apart from the knee: neighbours (below the overload
/// point) whose power's 95 % interval overlaps the knee's. None without spreads or when the knee is
/// clear.
pub fn knee_range(lv: &[LevelPoint], knee: usize, overload: Option<u32>) -> Option<(u32, u32)> {
    // An interval needs the level's windows, or a widening (other traffic, the run's trust).
    let known = |l: &LevelPoint| l.spread.is_some() || explained(l) > 0.0;
    if !known(&lv[knee]) {
        return None;
    }
    let k = power_interval(&lv[knee]);
    let overlaps = |i: usize| {
        known(&lv[i]) && {
            let p = power_interval(&lv[i]);
            p.1 >= k.0 && k.1 >= p.0
        }
    };
    let mut lo = knee;
    while lo > 0 && overlaps(lo - 1) {
        lo -= 1;
    }
    let mut hi = knee;
    while hi + 1 < lv.len()
        && overload.map_or(true, |o| lv[hi + 1].concurrency < o)
        && overlaps(hi + 1)
    {
        hi += 1;
    }
    (lo != hi).then(|| (lv[lo].concurrency, lv[hi].concurrency))
}

/// The overload point's uncertainty: (the lowest level that is perhaps overloaded, the first
/// that surely is) given the 95 % intervals of the levels' p95 against the baseline's. None when both are
/// the overload point itself.
pub fn overload_range(lv: &[LevelPoint], base: &LevelPoint, overload: u32) -> Option<(u32, u32)> {
    let (b_lo, b_hi) = p95_interval(base)?;
    let o = lv.iter().position(|l| l.concurrency == overload)?;
    let perhaps =
        |l: &LevelPoint| p95_interval(l).is_some_and(|p| p.1 > OVERLOAD_P95_FACTOR * b_lo);
    let surely = |l: &LevelPoint| p95_interval(l).is_some_and(|p| p.0 > OVERLOAD_P95_FACTOR * b_hi);
    let mut lo = o;
    while lo > 0 && lv[lo - 1].concurrency != base.concurrency && perhaps(&lv[lo - 1]) {
        lo -= 1;
    }
    let hi = (o..lv.len()).find(|&i| surely(&lv[i])).unwrap_or(o);
    (lo != o || hi != o).then(|| (lv[lo].concurrency, lv[hi].concurrency))
}

/// With no level surely overloaded: the first above the baseline whose p95 interval reaches
/// above 3x the lower end of the baseline's (both widened for the run's trust), if any.
pub fn overload_perhaps(lv: &[LevelPoint], base: &LevelPoint) -> Option<u32> {
    let (b_lo, _) = p95_interval(base)?;
    lv.iter()
        .filter(|l| l.concurrency > base.concurrency)
        .find(|l| p95_interval(l).is_some_and(|p| p.1 > OVERLOAD_P95_FACTOR * b_lo))
        .map(|l| l.concurrency)
}

/// The first level above the baseline whose p95 interval lies wholly above 3x the upper end
/// of the baseline's (both widened for the run's trust): surely overloaded, whatever the
/// disturbance did to the tails.
pub fn overload_surely(lv: &[LevelPoint], base: &LevelPoint) -> Option<u32> {
    let (_, b_hi) = p95_interval(base)?;
    lv.iter()
        .filter(|l| l.concurrency > base.concurrency)
        .find(|l| p95_interval(l).is_some_and(|p| p.0 > OVERLOAD_P95_FACTOR * b_hi))
        .map(|l| l.concurrency)
}

/// Per level: its windows disagree by more than a healthy device's do (a CV above
/// [`UNSTABLE_CV`] in IOPS or mean latency). Levels measured as one window are never unstable.
pub fn unstable(lv: &[LevelPoint]) -> Vec<bool> {
    lv.iter()
        .map(|l| {
            l.spread
                .as_ref()
                .is_some_and(|s| noisiest_cv(s) > UNSTABLE_CV)
        })
        .collect()
}

/// The other traffic in one sentence: how much, how far it widened the verdict, and the levels
/// it does not explain (`odd`: concurrency and other IOPS).
pub fn other_traffic_line(t: &OtherTraffic, odd: &[(u32, f64)], psi_io: f64) -> String {
    let in_flight = t
        .in_flight
        .map(|q| format!(" ({q:.1} in flight)"))
        .unwrap_or_default();
    let psi = if psi_io > 0.0 {
        format!("; PSI io some {psi_io:.0} %")
    } else {
        String::new()
    };
    let head = format!(
        "The device served other traffic beside iosat's: {} r/s, {} w/s on average{in_flight}{psi}",
        fmt_iops(t.r_s),
        fmt_iops(t.w_s)
    );
    if odd.is_empty() {
        return format!(
            "{head}, steady across the levels, so each level is judged at its own concurrency \
             plus that, and the uncertainty widened by ±{:.0} % at the baseline (±{:.0} % at \
             most) for what it explains at the curve's own slope.",
            t.baseline_widened_rel * 100.0,
            t.max_widened_rel * 100.0
        );
    }
    let parts: Vec<String> = odd
        .iter()
        .map(|&(n, x)| format!("{} IOPS at {n}", fmt_iops(x)))
        .collect();
    format!(
        "{head}; it varied between the levels or outweighed iosat's own ({}): {} the disk with \
         another workload, so {} less than the device can do.",
        parts.join(", "),
        if odd.len() == 1 {
            "that level shared"
        } else {
            "those levels shared"
        },
        if odd.len() == 1 {
            "it measures"
        } else {
            "they measure"
        }
    )
}

/// "4", "4 and 8", "4, 8 and 16".
pub fn list(levels: &[u32]) -> String {
    let s: Vec<String> = levels.iter().map(u32::to_string).collect();
    match s.len() {
        0 => String::new(),
        1 => s[0].clone(),
        n => format!("{} and {}", s[..n - 1].join(", "), s[n - 1]),
    }
}

/// One line per cause of disturbance over the levels (cut levels included), and the levels
/// found disturbed (CPU contention or other traffic).
pub fn disturbance_lines(all: &[LevelPoint]) -> (Vec<String>, Vec<u32>) {
    let mut lines = Vec::new();
    let mut disturbed = Vec::new();

    // Waiting for a CPU inside the measured latency; CPUs other processes kept busy.
    let mut cpu = Vec::new();
    let mut loaded = Vec::new();
    let mut busy: f64 = 0.0;
    let mut steal: f64 = 0.0;
    let mut psi_cpu: f64 = 0.0;
    let mut other_user: f64 = 0.0;
    for l in all {
        let Some(d) = &l.disturbance else { continue };
        if machine_share(l) > 0.0 {
            let wait = d.cpu_wait_ns_per_io.unwrap_or(0.0);
            if only_busy_cpus(l) {
                loaded.push((l.concurrency, wait, cpu_wait_share(l)));
            } else {
                cpu.push((l.concurrency, wait, cpu_wait_share(l)));
            }
            busy = busy.max(d.cpu_busy_pct.unwrap_or(0.0));
            steal = steal.max(d.cpu_steal_pct.unwrap_or(0.0));
            psi_cpu = psi_cpu.max(d.psi_cpu_some_pct.unwrap_or(0.0));
            other_user = other_user.max(d.cpu_other_user_pct.unwrap_or(0.0));
        }
    }
    let mut evidence = Vec::new();
    if busy > 0.0 {
        evidence.push(format!("CPU {busy:.0} % busy"));
    }
    if other_user > 0.0 {
        evidence.push(format!("{other_user:.0} % in other processes' user time"));
    }
    if steal >= STEAL_PCT {
        evidence.push(format!("{steal:.0} % stolen by the hypervisor"));
    }
    if psi_cpu > 0.0 {
        evidence.push(format!("PSI cpu some {psi_cpu:.0} %"));
    }
    let evidence = if evidence.is_empty() {
        String::new()
    } else {
        format!(" ({})", evidence.join(", "))
    };
    if !cpu.is_empty() {
        let parts: Vec<String> = cpu
            .iter()
            .enumerate()
            .map(|(i, &(n, w, s))| {
                let at = if i == 0 { "Latency at" } else { "at" };
                format!(
                    "{at} {n} includes {}/IO of waiting for a CPU ({:.0} % of it)",
                    fmt_latency_ns(w),
                    s * 100.0
                )
            })
            .collect();
        let this = if cpu.len() == 1 {
            "this level measures"
        } else {
            "these levels measure"
        };
        // A wait below the material share counted only because the CPU was contended: say
        // why it still counts.
        let tail = if cpu.iter().any(|c| c.2 < CPU_WAIT_SHARE) {
            " (on a contended CPU the wait falls whole on a few requests, in the tail, and the \
             I/O path's kernel workers wait behind the same load unmeasured)"
        } else {
            ""
        };
        lines.push(format!(
            "{}: the machine was busy{evidence}, {this} the CPU, not the disk{tail}.",
            parts.join("; "),
        ));
        disturbed.extend(cpu.iter().map(|c| c.0));
    }
    if !loaded.is_empty() {
        // What was measured is the CPUs' load and iosat's own small wait; the path's wait
        // behind that load is inferred, and said as such.
        let levels: Vec<u32> = loaded.iter().map(|c| c.0).collect();
        let waits: Vec<String> = loaded
            .iter()
            .map(|&(_, w, s)| format!("{}/IO ({:.1} %)", fmt_latency_ns(w), s * 100.0))
            .collect();
        let (at, this) = if levels.len() == 1 {
            ("concurrency", "this level may measure")
        } else {
            ("concurrencies", "these levels may measure")
        };
        lines.push(format!(
            "Other processes kept the CPUs busy at {at} {}{evidence}: iosat's own threads \
             waited {} for a CPU, but the I/O path's kernel workers (a loop device's, a FUSE \
             server's, dm's) wait behind that load where iosat cannot measure it, so {this} \
             the machine as much as the disk.",
            list(&levels),
            waits.join(", "),
        ));
        disturbed.extend(levels);
    }

    // Other traffic on the same device: said whenever it was material; the levels it does
    // not explain (it varied, or outweighed iosat's own) are disturbed.
    let psi_io = all
        .iter()
        .filter_map(|l| l.disturbance.as_ref()?.psi_io_some_pct)
        .fold(0.0, f64::max);
    let base = all.first();
    if let Some(t) = base.and_then(|b| other_traffic(all, b)) {
        lines.push(other_traffic_line(&t, &unexplained(all), psi_io));
        for n in t.unexplained_levels {
            if !disturbed.contains(&n) {
                disturbed.push(n);
            }
        }
    }
    disturbed.sort_unstable();

    // Levels cut short, grouped by signal.
    let mut signals: Vec<(String, Vec<u32>)> = Vec::new();
    for l in all {
        if let Some(sig) = l.disturbance.as_ref().and_then(|d| d.cut_by.clone()) {
            match signals.iter_mut().find(|(s, _)| *s == sig) {
                Some((_, v)) => v.push(l.concurrency),
                None => signals.push((sig, vec![l.concurrency])),
            }
        }
    }
    for (sig, levels) in signals {
        lines.push(format!(
            "Concurrency {} {} cut short by {sig}: shown, but it decides nothing in this verdict.",
            list(&levels),
            if levels.len() == 1 { "was" } else { "were" }
        ));
    }
    (lines, disturbed)
}
