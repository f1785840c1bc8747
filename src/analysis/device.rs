//! Diagnosis of a device's time series as `iostat -x` prints it (rates, await, aqu-sz, %util),
//! without trusting %util or svctm (seeds 001, 003, 004). Pure: no IO.
//! Imports only: analysis/, units.
//!
//! Without an experiment we don't know the concurrency that was offered, but the kernel's
//! aqu-sz is the concurrency the device saw (Little's law: aqu-sz = IOPS × await), and await
//! at a queue of about one is the device's own baseline. The rules are those of seed 001:
//! await within a few times its low-concurrency value is fine whatever %util says; await at
//! 10x that value is overload.

use super::learned::SizeClass;
use super::state::{CHANGE_MIN_NS, CHANGE_RATIO};
use super::text::{fmt_iops, fmt_ratio};
use serde::{Deserialize, Serialize};

/// One interval of one device, in iostat's units (per second, kB, ms, %). Fields iostat's
/// version did not print are None. Serialised under sysstat's own JSON key names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceSample {
    /// The timestamp line printed with `iostat -t`, as printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// None when the layout prints totals only (`iostat -xs`: `tps`, `kB/s`).
    #[serde(rename = "r/s")]
    pub r_per_s: Option<f64>,
    #[serde(rename = "w/s")]
    pub w_per_s: Option<f64>,
    #[serde(rename = "d/s", skip_serializing_if = "Option::is_none")]
    pub d_per_s: Option<f64>,
    #[serde(rename = "f/s", skip_serializing_if = "Option::is_none")]
    pub f_per_s: Option<f64>,
    /// Requests per second over reads, writes and discards, as iostat's short layout
    /// (`-xs`) prints it instead of the directions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tps: Option<f64>,
    /// kB/s over all directions, as `iostat -xs` prints it instead of rkB/s and wkB/s.
    #[serde(rename = "kB/s", skip_serializing_if = "Option::is_none")]
    pub kb_per_s: Option<f64>,
    #[serde(rename = "rkB/s")]
    pub rkb_per_s: Option<f64>,
    #[serde(rename = "wkB/s")]
    pub wkb_per_s: Option<f64>,
    pub r_await: Option<f64>,
    pub w_await: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub d_await: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub f_await: Option<f64>,
    /// Average wait of reads, writes and discards, ms: iostat's own `await` when it prints
    /// one, else the request-weighted mean of those directions' awaits. Flushes are kept
    /// apart (`f_await`), as sysstat's `await` keeps them.
    #[serde(rename = "await")]
    pub await_ms: Option<f64>,
    #[serde(rename = "aqu-sz")]
    pub aqu_sz: Option<f64>,
    #[serde(rename = "util")]
    pub util_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub svctm: Option<f64>,
}

impl DeviceSample {
    /// Requests completed per second, all directions iostat printed (with `-xs`, its tps).
    pub fn iops(&self) -> f64 {
        let data = match (self.r_per_s, self.w_per_s, self.tps) {
            (None, None, Some(tps)) => tps,
            (r, w, _) => r.unwrap_or(0.0) + w.unwrap_or(0.0) + self.d_per_s.unwrap_or(0.0),
        };
        data + self.f_per_s.unwrap_or(0.0)
    }

    /// The mean size of a read or write, bytes (kB/s ÷ their rate; `-xs`: kB/s ÷ tps); None
    /// without either.
    pub fn mean_request_bytes(&self) -> Option<f64> {
        let (kb, n) = match (self.r_per_s, self.w_per_s, self.tps) {
            (None, None, Some(tps)) => (self.kb_per_s?, tps),
            (r, w, _) => (
                self.rkb_per_s.unwrap_or(0.0) + self.wkb_per_s.unwrap_or(0.0),
                r.unwrap_or(0.0) + w.unwrap_or(0.0),
            ),
        };
        (n > 0.0 && kb > 0.0).then(|| kb * 1024.0 / n)
    }

    /// (rate, await) of each direction iostat printed both for.
    fn directions(&self) -> [(f64, Option<f64>); 4] {
        [
            (self.r_per_s.unwrap_or(0.0), self.r_await),
            (self.w_per_s.unwrap_or(0.0), self.w_await),
            (self.d_per_s.unwrap_or(0.0), self.d_await),
            (self.f_per_s.unwrap_or(0.0), self.f_await),
        ]
    }

    /// iostat's await, or the weighted mean of the read, write and discard awaits it printed
    /// instead: sysstat's `await` (its `-xs` column, and `await` before 12) leaves flushes
    /// out, so a device doing only flushes has no await, only an f_await.
    pub fn effective_await_ms(&self) -> Option<f64> {
        if self.await_ms.is_some() {
            return self.await_ms;
        }
        weighted(&self.directions()[..3])
    }

    /// The mean number of requests in flight by Little's law, to hold against aqu-sz: since
    /// Linux 5.7 aqu-sz sums all four directions' times (docs/design.md §4), flushes included.
    pub fn littles_queue(&self) -> Option<f64> {
        let d = self.directions();
        let per_direction: f64 = d.iter().filter_map(|(r, a)| a.map(|a| r * a)).sum();
        match self.await_ms {
            Some(aw) => {
                let flush = self.f_per_s.unwrap_or(0.0) * self.f_await.unwrap_or(0.0);
                Some(((self.iops() - self.f_per_s.unwrap_or(0.0)) * aw + flush) / 1000.0)
            }
            None if d.iter().any(|(_, a)| a.is_some()) => Some(per_direction / 1000.0),
            None => None,
        }
    }
}

/// Request-weighted mean of the awaits of some directions; None without requests.
fn weighted(parts: &[(f64, Option<f64>)]) -> Option<f64> {
    let (mut n, mut sum) = (0.0, 0.0);
    for &(rate, aw) in parts {
        if let Some(a) = aw {
            n += rate;
            sum += rate * a;
        }
    }
    (n > 0.0).then(|| sum / n)
}

/// A queue of about one request while the device is busy (aqu-sz ÷ %util, [`in_flight_busy`]):
/// the low-concurrency reference for await.
const LOW_QUEUE: f64 = 1.5;
/// %util from which iostat readers call a device "saturated".
const BUSY_UTIL_PCT: f64 = 90.0;
/// Seed 001: await at 10x the low-concurrency value is "surely" overload; said beside the
/// state, which is overloaded from 3x (analysis::state's vocabulary, the one every view
/// judges by).
pub const FAR_OVERLOAD_AWAIT_FACTOR: f64 = 10.0;
/// Below this multiple of the low-concurrency await, requests barely wait.
const STABLE_AWAIT_FACTOR: f64 = 2.0;

fn label(i: usize, s: &DeviceSample) -> String {
    match &s.time {
        Some(t) => format!("at {t}"),
        None => format!("in sample {}", i + 1),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The diagnosis of one device's samples, in plain words, most important first.
pub fn diagnose(device: &str, samples: &[DeviceSample]) -> Vec<String> {
    let mut out = Vec::new();
    // Samples that carry something to judge: I/O happened and await and aqu-sz are known.
    let active: Vec<Active> = samples
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let aw = s.effective_await_ms()?;
            let q = s.aqu_sz?;
            (s.iops() > 0.0 && aw > 0.0).then_some((i, s, aw, q))
        })
        .collect();
    if active.is_empty() {
        out.push(format!(
            "{device}: no interval with I/O and a known await and aqu-sz: nothing to judge."
        ));
        flushes(device, samples, &mut out);
        return out;
    }

    let base = reference_await(device, &active, &mut out);
    headroom(device, &active, base, &mut out);
    util_trap(device, &active, &mut out);
    saturation(device, &active, base, &mut out);
    svctm_trap(device, &active, &mut out);
    littles_law(device, &active, &mut out);
    flushes(device, samples, &mut out);
    out
}

/// One interval worth judging: its index, the sample, its await (ms) and its aqu-sz.
type Active<'a> = (usize, &'a DeviceSample, f64, f64);

/// The low-concurrency reference await, ms: one value, or two either side of a step in it
/// (the device changed).
#[derive(Debug, Clone, Copy)]
struct Baseline {
    before_ms: f64,
    /// From this sample's index on, this one.
    after: Option<(usize, f64)>,
    /// The request-size class of the intervals it was taken from, where their sizes are known.
    class: Option<SizeClass>,
}

/// An interval's request-size class (analysis::learned::SizeClass, learning's), where known.
fn class_of(a: &Active) -> Option<SizeClass> {
    a.1.mean_request_bytes().map(SizeClass::of)
}

/// Whether interval `a` is of `class` (or either is not known: no sizes to tell apart).
fn of_class(class: Option<SizeClass>, a: &Active) -> bool {
    match (class, class_of(a)) {
        (Some(c), Some(x)) => c == x,
        _ => true,
    }
}

impl Baseline {
    /// Whether interval `a` is judged against this baseline: requests of its size class (or
    /// a size not known). A large request takes longer on any device: 1 MiB writes at 2.3 ms
    /// are not "8x" a baseline of 9 KiB requests at 0.29 ms.
    fn judges(&self, a: &Active) -> bool {
        of_class(self.class, a)
    }

    /// The baseline in force at sample `i`.
    fn at(&self, i: usize) -> f64 {
        match self.after {
            Some((from, ms)) if i >= from => ms,
            _ => self.before_ms,
        }
    }
}

/// Intervals at a queue of about one on each side of a step before it is called one: one or
/// two slow intervals are scatter (an iostat interval is a second to minutes; learning
/// reports a change after 5 s of evidence).
const STEP_MIN_INTERVALS: usize = 3;

/// A step in the await at a queue of about one, `low` in time order: where the later part
/// starts (an index into `low`), and the medians before and after. The split is where the
/// mean log-await before and after differ most for their numbers (a change point); a step
/// only where the medians are [`CHANGE_RATIO`] or more apart, either way, by at least
/// [`CHANGE_MIN_NS`] (learning's change rule, learn/change.rs), and each side's intervals lie
/// mostly (four in five) on their side of the geometric middle: two levels, not a scatter.
fn step(low: &[f64]) -> Option<(usize, f64, f64)> {
    let n = low.len();
    if n < 2 * STEP_MIN_INTERVALS {
        return None;
    }
    let logs: Vec<f64> = low.iter().map(|a| a.ln()).collect();
    let total: f64 = logs.iter().sum();
    let (mut prefix, mut best) = (0.0, None::<(f64, usize)>);
    for k in 1..n {
        prefix += logs[k - 1];
        if k < STEP_MIN_INTERVALS || n - k < STEP_MIN_INTERVALS {
            continue;
        }
        let (kb, ka) = (k as f64, (n - k) as f64);
        let score = ((total - prefix) / ka - prefix / kb).abs() * (kb * ka / n as f64).sqrt();
        if best.map_or(true, |(b, _)| score > b) {
            best = Some((score, k));
        }
    }
    let (_, k) = best?;
    let (before, after) = (median(low[..k].to_vec()), median(low[k..].to_vec()));
    let ratio = (after / before).max(before / after);
    if ratio < CHANGE_RATIO || (after - before).abs() * 1e6 < CHANGE_MIN_NS {
        return None;
    }
    let mid = (before * after).sqrt();
    let above = |x: &&f64| **x > mid;
    let (over_before, over_after) = (
        low[..k].iter().filter(above).count(),
        low[k..].iter().filter(above).count(),
    );
    let (wrong_before, wrong_after) = if after > before {
        (over_before, n - k - over_after)
    } else {
        (k - over_before, over_after)
    };
    (wrong_before * 5 <= k && wrong_after * 5 <= n - k).then_some((k, before, after))
}

/// The low-concurrency reference await: the median over intervals with a queue of about
/// one, else the interval with the shortest queue (said so). Where those intervals' await
/// steps ([`step`]: the device slowed down, sped up or was replaced), a baseline each side,
/// said as a change of the device, as learning says it: one median over both would be
/// neither device's (half at 2 ms and half at 8 ms gave "5 ms", and the 8 ms intervals at
/// one in flight "saturated: requests wait for one another").
fn reference_await(device: &str, active: &[Active], out: &mut Vec<String>) -> Baseline {
    // In flight while busy, not aqu-sz: an interval of bursts (6 % busy at aqu-sz 0.65, 11
    // in flight while busy, its requests waiting 5x the baseline) is no queue of one.
    let busy_queue = |a: &&Active| in_flight_busy(a.1, a.3);
    let low: Vec<&Active> = active
        .iter()
        .filter(|a| busy_queue(a) <= LOW_QUEUE)
        .collect();
    // The size class most of them are of (the smaller on a tie): the baseline is its
    // requests' alone, and only intervals of that class are judged against it.
    let class = [SizeClass::Small, SizeClass::Medium, SizeClass::Large]
        .into_iter()
        .map(|c| (low.iter().filter(|a| class_of(a) == Some(c)).count(), c))
        .filter(|(n, _)| *n > 0)
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
        .map(|(_, c)| c);
    let low: Vec<&Active> = low.into_iter().filter(|a| of_class(class, a)).collect();
    if low.is_empty() {
        let (i, s, aw, q) = *active
            .iter()
            .min_by(|a, b| busy_queue(a).total_cmp(&busy_queue(b)))
            .expect("non-empty");
        out.push(format!(
            "{device}: no interval with a queue of about one request; the reference await is \
             {aw:.2} ms {} at the shortest queue seen ({:.2} in flight while busy, aqu-sz \
             {q:.2}, {} IOPS), so the ratios below understate saturation.",
            label(i, s),
            in_flight_busy(s, q),
            fmt_iops(s.iops())
        ));
        return Baseline {
            before_ms: aw,
            after: None,
            class: s.mean_request_bytes().map(SizeClass::of),
        };
    }
    let awaits: Vec<f64> = low.iter().map(|a| a.2).collect();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if let Some((k, before, after)) = step(&awaits) {
        let (i, s, _, _) = *low[k];
        out.push(format!(
            "{device}: the device changed {}: await at a queue of about one request (≤ \
             {LOW_QUEUE} in flight while busy) went from {before:.2} ms (median of {k} intervals) to {after:.2} ms \
             (median of {}), {} {}: at one request in flight that is the device, not load \
             (learning's rule: {CHANGE_RATIO}x or more either way). Each interval is judged \
             against the baseline of its time.",
            label(i, s),
            awaits.len() - k,
            fmt_ratio((after / before).max(before / after)),
            if after > before { "slower" } else { "faster" },
        ));
        return Baseline {
            before_ms: before,
            after: Some((i, after)),
            class,
        };
    }
    let m = median(awaits);
    out.push(format!(
        "{device}: await at a queue of about one request (≤ {LOW_QUEUE} in flight while busy: \
         aqu-sz ÷ %util) is {m:.2} ms (median of {} interval{}): the device's own baseline.",
        low.len(),
        plural(low.len())
    ));
    Baseline {
        before_ms: m,
        after: None,
        class,
    }
}

/// Busy by %util, yet a short queue and no waiting: headroom.
fn headroom(device: &str, active: &[Active], base: Baseline, out: &mut Vec<String>) {
    // %util says busy, yet the queue is short and requests don't wait: headroom.
    let headroom: Vec<_> = active
        .iter()
        .filter(|a| {
            base.judges(a)
                && a.1.util_pct.is_some_and(|u| u >= BUSY_UTIL_PCT)
                && a.3 <= 2.0
                && a.2 <= STABLE_AWAIT_FACTOR * base.at(a.0)
        })
        .collect();
    if let Some(&&(i, s, aw, q)) = headroom.first() {
        out.push(format!(
            "{device}: %util {:.1} % {} with only {q:.2} requests in flight and await {aw:.2} ms \
             ({} the baseline){}: %util counts the time at least one request is in flight, not \
             capacity. A parallel device (SSD, NVMe, RAID, cloud volume) has headroom left here.",
            s.util_pct.unwrap_or(0.0),
            label(i, s),
            fmt_ratio(aw / base.at(i)),
            if headroom.len() > 1 {
                format!(" (and {} more such intervals)", headroom.len() - 1)
            } else {
                String::new()
            }
        ));
    }
}

/// The %util lesson: busy by %util, yet more IOPS came later.
fn util_trap(device: &str, active: &[Active], out: &mut Vec<String>) {
    // The %util lesson: busy by %util, yet more IOPS came later.
    if let Some(&(i, s, _, q)) = active
        .iter()
        .find(|a| a.1.util_pct.is_some_and(|u| u >= BUSY_UTIL_PCT))
    {
        let later = active[active.iter().position(|a| a.0 == i).unwrap_or(0)..]
            .iter()
            .max_by(|a, b| a.1.iops().total_cmp(&b.1.iops()))
            .copied();
        if let Some((j, t, _, tq)) = later {
            let growth = t.iops() / s.iops();
            if growth >= 1.2 {
                out.push(format!(
                    "{device}: %util was already {:.1} % {} at {} IOPS (aqu-sz {q:.2}), yet the \
                     device delivered {} IOPS {} (aqu-sz {tq:.2}): {growth:.1}x more at the \
                     same \"saturated\" %util.",
                    s.util_pct.unwrap_or(0.0),
                    label(i, s),
                    fmt_iops(s.iops()),
                    fmt_iops(t.iops()),
                    label(j, t),
                ));
            }
        }
    }
}

/// Requests in flight while the device was busy: aqu-sz over the busy share (%util), as the
/// judgement takes it (monitor::judge::in_flight_busy); aqu-sz without %util.
fn in_flight_busy(s: &DeviceSample, aqu_sz: f64) -> f64 {
    super::state::in_flight_while_busy(aqu_sz, s.util_pct.unwrap_or(0.0))
}

/// "aqu-sz Q", and where the device was busy for under [`BUSY_UTIL_PCT`] of the interval the
/// requests in flight while it was busy beside it: an interval of bursts at aqu-sz 0.03 had 7.5
/// in flight while busy, and that is what its requests waited behind.
fn queue_words(s: &DeviceSample, aqu_sz: f64) -> String {
    match s.util_pct {
        Some(u) if u < BUSY_UTIL_PCT => format!(
            "aqu-sz {aqu_sz:.2} ({:.1} in flight while busy, {u:.1} % of the time)",
            in_flight_busy(s, aqu_sz)
        ),
        _ => format!("aqu-sz {aqu_sz:.2}"),
    }
}

/// Overload and queueing by await against the baseline, in the judgement's words
/// (analysis::state: saturated from 1.5x the baseline, overloaded from 3x, the ratios `stat`,
/// the exporter and the recording page judge by): a diagnosis that called 2.8x "not
/// saturated" and 3.2x "not overloaded" contradicted the state beside it on the page. An
/// interval slower than queueing explains at its requests in flight is the judgement's "slow
/// but not loaded" (state::slower_than_its_load), said apart: a device that got slower with
/// one request in flight is no overload, and its await is no load's.
fn saturation(device: &str, active: &[Active], base: Baseline, out: &mut Vec<String>) {
    use super::state::{
        slower_than_its_load, State, LOADED_FACTOR, OVERLOADED_RATIO, SATURATED_RATIO,
    };
    let (judged, others): (Vec<Active>, Vec<Active>) = active.iter().partition(|a| base.judges(a));
    if let Some(&(i, s, aw, _)) = others.first() {
        let kib = s.mean_request_bytes().unwrap_or(0.0) / 1024.0;
        out.push(format!(
            "{device}: {} interval{} of requests of another size (the first {}: {kib:.0} KiB \
             on average, await {aw:.2} ms) {} not judged against the baseline, which is of \
             requests {}: requests of another size take another time on any device (a larger \
             one longer), and their await is no queue's.",
            others.len(),
            if others.len() == 1 { "" } else { "s" },
            label(i, s),
            if others.len() == 1 { "is" } else { "are" },
            base.class.map_or("", |c| c.as_str()),
        ));
    }
    if judged.is_empty() {
        return;
    }
    let active = &judged[..];
    let state = |a: &Active| {
        let ratio = a.2 / base.at(a.0);
        match State::of_ratio(Some(ratio)) {
            s if s >= State::Saturated && slower_than_its_load(ratio, in_flight_busy(a.1, a.3)) => {
                State::Slow
            }
            s => s,
        }
    };
    let worst_of = |want: &dyn Fn(State) -> bool| {
        active
            .iter()
            .filter(|a| want(state(a)))
            .max_by(|a, b| (a.2 / base.at(a.0)).total_cmp(&(b.2 / base.at(b.0))))
            .copied()
    };
    let count = |st: State| active.iter().filter(|a| state(a) == st).count();
    let (overloaded, saturated, slow) = (
        count(State::Overloaded),
        count(State::Saturated),
        count(State::Slow),
    );
    if overloaded > 0 {
        let (wi, ws, waw, wq) = worst_of(&|s| s == State::Overloaded).expect("counted");
        let base_await = base.at(wi);
        let ratio = waw / base_await;
        let how_far = if ratio >= FAR_OVERLOAD_AWAIT_FACTOR {
            format!("{FAR_OVERLOAD_AWAIT_FACTOR}x or more")
        } else {
            format!("{OVERLOADED_RATIO}x or more, below {FAR_OVERLOAD_AWAIT_FACTOR}x")
        };
        out.push(format!(
            "{device}: overloaded {}: await {waw:.2} ms is {} the low-concurrency {base_await:.2} ms \
             ({how_far}) at {}{}.",
            label(wi, ws),
            fmt_ratio(ratio),
            queue_words(ws, wq),
            if overloaded > 1 {
                format!(
                    "; {overloaded} of {} intervals are overloaded ({OVERLOADED_RATIO}x or more)",
                    active.len()
                )
            } else {
                String::new()
            }
        ));
    } else if saturated > 0 {
        let (wi, ws, waw, wq) = worst_of(&|s| s == State::Saturated).expect("counted");
        out.push(format!(
            "{device}: saturated but not overloaded: await reaches {waw:.2} ms {} ({} the \
             baseline: requests wait for one another, below {OVERLOADED_RATIO}x) at {}; \
             {saturated} of {} intervals are at {SATURATED_RATIO}x or more.",
            label(wi, ws),
            fmt_ratio(waw / base.at(wi)),
            queue_words(ws, wq),
            active.len()
        ));
    } else if slow == 0 {
        let (wi, _, waw, _) = worst_of(&|_| true).expect("non-empty");
        out.push(format!(
            "{device}: not saturated: await stays within {SATURATED_RATIO}x of the baseline (at \
             most {waw:.2} ms, {}) at queues up to aqu-sz {:.2}, whatever %util says.",
            fmt_ratio(waw / base.at(wi)),
            active.iter().map(|a| a.3).fold(0.0, f64::max)
        ));
    }
    if slow > 0 {
        let (wi, ws, waw, wq) = worst_of(&|s| s == State::Slow).expect("counted");
        out.push(format!(
            "{device}: slow but not loaded {}: await {waw:.2} ms is {} the baseline with {:.2} \
             requests in flight while busy (aqu-sz {wq:.2}), more than queueing explains \
             ({LOADED_FACTOR}x the baseline per request in flight): the device itself is \
             slower there (a failing or throttled device, a write cliff), not loaded; no \
             overload is read from it{}.",
            label(wi, ws),
            fmt_ratio(waw / base.at(wi)),
            in_flight_busy(ws, wq),
            if slow > 1 {
                format!("; {slow} of {} intervals are so", active.len())
            } else {
                String::new()
            }
        ));
    }
}

/// svctm falling while await rises (seed 004).
fn svctm_trap(device: &str, active: &[Active], out: &mut Vec<String>) {
    // svctm: falls as concurrency grows on a parallel device (seed 004).
    let with_svctm: Vec<_> = active.iter().filter(|a| a.1.svctm.is_some()).collect();
    if with_svctm.len() >= 2 {
        let lo_q = with_svctm
            .iter()
            .min_by(|a, b| a.3.total_cmp(&b.3))
            .expect("two");
        let hi_q = with_svctm
            .iter()
            .max_by(|a, b| a.3.total_cmp(&b.3))
            .expect("two");
        let (s_lo, s_hi) = (lo_q.1.svctm.unwrap_or(0.0), hi_q.1.svctm.unwrap_or(0.0));
        if s_hi < s_lo && hi_q.2 > lo_q.2 {
            out.push(format!(
                "{device}: svctm fell from {s_lo:.2} ms to {s_hi:.2} ms while await rose from \
                 {:.2} ms to {:.2} ms: svctm is %util ÷ IOPS, not a service time; on a parallel \
                 device ignore it.",
                lo_q.2, hi_q.2
            ));
        }
    }
}

/// Little's law: aqu-sz should equal IOPS × await.
fn littles_law(device: &str, active: &[Active], out: &mut Vec<String>) {
    // Little's law: aqu-sz should equal IOPS × await.
    let broken: Vec<_> = active
        .iter()
        .filter(|a| {
            let l = a.1.littles_queue().unwrap_or(0.0);
            a.3 >= 0.05 && (l / a.3 - 1.0).abs() > super::LITTLES_LAW_TOLERANCE
        })
        .collect();
    if let Some(&&(i, s, _, q)) = broken.first() {
        out.push(format!(
            "{device}: Little's law does not close in {} of {} intervals (first {}: IOPS × await \
             = {:.2}, aqu-sz {q:.2}): the interval may be skewed, or requests split or merged.",
            broken.len(),
            active.len(),
            label(i, s),
            s.littles_queue().unwrap_or(0.0)
        ));
    }
}

/// Flush latency, kept apart from await (sysstat's await leaves flushes out).
fn flushes(device: &str, samples: &[DeviceSample], out: &mut Vec<String>) {
    let f: Vec<f64> = samples
        .iter()
        .filter(|s| s.f_per_s.unwrap_or(0.0) > 0.0)
        .filter_map(|s| s.f_await)
        .collect();
    if !f.is_empty() {
        out.push(format!(
            "{device}: flushes are kept apart from await (as sysstat's await): f_await {:.2} ms \
             (median of {} interval{} with flushes).",
            median(f.clone()),
            f.len(),
            if f.len() == 1 { "" } else { "s" }
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::State;
    use super::*;

    fn s(r: f64, w: f64, aqu: f64, aw: f64, svctm: f64, util: f64) -> DeviceSample {
        DeviceSample {
            r_per_s: Some(r),
            w_per_s: Some(w),
            await_ms: Some(aw),
            aqu_sz: Some(aqu),
            svctm: Some(svctm),
            util_pct: Some(util),
            ..Default::default()
        }
    }

    /// Seed 001: dm-0 at 1, 4 and 64 sysbench threads.
    fn seed001() -> Vec<DeviceSample> {
        vec![
            s(127.90, 0.70, 1.01, 7.83, 7.52, 96.68),
            s(295.40, 0.90, 4.06, 13.69, 3.38, 100.01),
            s(601.20, 0.80, 65.98, 108.72, 1.66, 100.00),
        ]
    }

    #[test]
    fn seed001_headroom_then_overload() {
        let d = diagnose("dm-0", &seed001());
        let all = d.join("\n");
        assert!(d[0].contains("7.83 ms"), "{all}");
        assert!(
            all.contains("%util 96.7 % in sample 1 with only 1.01 requests in flight"),
            "{all}"
        );
        assert!(all.contains("headroom left"), "{all}");
        assert!(
            all.contains("overloaded in sample 3: await 108.72 ms is 13.9x"),
            "{all}"
        );
        assert!(all.contains("4.7x more"), "{all}");
        assert!(all.contains("svctm fell from 7.52 ms to 1.66 ms"), "{all}");
        assert!(!all.contains("Little's law does not close"), "{all}");
    }

    #[test]
    fn seed004_overloaded_by_the_judgements_rule() {
        // Samsung 840 EVO: 13823 r/s at aqu-sz 0.78, then 72914 r/s at 15.27: await 3.5x the
        // low-concurrency 0.06 ms, which `stat` and every view judge overloaded (3x or more).
        let d = diagnose(
            "sdd",
            &[
                s(13823.0, 0.0, 0.78, 0.06, 0.06, 78.40),
                s(72914.67, 0.0, 15.27, 0.21, 0.01, 100.0),
            ],
        );
        let all = d.join("\n");
        assert!(
            all.contains(
                "sdd: overloaded in sample 2: await 0.21 ms is 3.5x the low-concurrency \
                 0.06 ms (3x or more, below 10x) at aqu-sz 15.27."
            ),
            "{all}"
        );
        assert!(!all.contains("not overloaded"), "{all}");
        assert!(!all.contains("not saturated"), "{all}");
        assert!(all.contains("svctm fell from 0.06 ms to 0.01 ms"), "{all}");
    }

    /// The diagnosis says what the judgement says of the same ratio (analysis::state): the
    /// two cases a recording page showed side by side with learning's state, 2.8x ("not
    /// saturated") and 3.2x ("not overloaded"), and the edges of the bands.
    #[test]
    fn the_diagnosis_uses_the_judgements_bands() {
        let words = |worst_await: f64| {
            diagnose(
                "sdx",
                &[
                    s(1000.0, 0.0, 1.0, 1.0, 1.0, 100.0),
                    s(4000.0, 0.0, 4.0 * worst_await, worst_await, 0.25, 100.0),
                ],
            )
            .join("\n")
        };
        for (ratio, says, state) in [
            (
                1.4,
                "sdx: not saturated: await stays within 1.5x of the baseline",
                State::Ok,
            ),
            (
                1.5,
                "sdx: saturated but not overloaded: await reaches 1.50 ms",
                State::Saturated,
            ),
            (
                2.8,
                "sdx: saturated but not overloaded: await reaches 2.80 ms",
                State::Saturated,
            ),
            (
                3.0,
                "sdx: overloaded in sample 2: await 3.00 ms is 3.0x",
                State::Overloaded,
            ),
            (
                3.2,
                "sdx: overloaded in sample 2: await 3.20 ms is 3.2x",
                State::Overloaded,
            ),
            (12.0, "(10x or more)", State::Overloaded),
        ] {
            let all = words(ratio);
            assert!(all.contains(says), "{ratio}: {all}");
            assert_eq!(State::of_ratio(Some(ratio)), state, "{ratio}");
        }
        assert!(words(2.8).contains("1 of 2 intervals are at 1.5x or more"));
        assert!(words(3.2).contains("(3x or more, below 10x)"));
    }

    /// A device that got slower without load (one request in flight, await 5x the baseline:
    /// a failing or throttled disk) is "slow but not loaded", as the judgement beside the
    /// diagnosis calls it (state's one rule, judge_against), never an overload; a queue that explains its
    /// await (the same 5x at 5 in flight while busy: bursts at 20 % util) still is one.
    #[test]
    fn a_slowdown_without_load_is_slow_not_overloaded() {
        use super::super::state::{judge_dir, Basis, Dir, Observed, Reference};
        let judged = |aw: f64, aqu: f64, util: f64| {
            let r = Reference {
                basis: Basis::Learned,
                baseline_latency_ns: 1.0e6,
                baseline_p95_ns: None,
                baseline_device_ns: None,
                max_iops: Some(1000.0),
                ratio: None,
                ceiling_other_iops: None,
                flags: Default::default(),
            };
            let o = Observed {
                iops: 200.0,
                mean_ms: Some(aw),
                p95_ms: None,
                other_iops: 0.0,
            };
            judge_dir(Dir::Read, Some(o), Some(r), Some(aqu * 100.0 / util)).state
        };
        let base = s(1000.0, 0.0, 1.0, 1.0, 1.0, 100.0);
        // Three intervals at the baseline: the reference is their median (the slow interval
        // is at a queue of about one too).
        let at = |x: DeviceSample| [base.clone(), base.clone(), base.clone(), x];
        let slow = diagnose("sdx", &at(s(200.0, 0.0, 1.0, 5.0, 5.0, 100.0)));
        let all = slow.join("\n");
        assert_eq!(judged(5.0, 1.0, 100.0), State::Slow);
        assert!(
            all.contains("sdx: slow but not loaded in sample 4: await 5.00 ms is 5.0x the baseline with 1.00 requests in flight while busy"),
            "{all}"
        );
        assert!(
            !all.contains("overloaded") && !all.contains("saturated"),
            "{all}"
        );
        assert!(!all.contains("not saturated: await stays within"), "{all}");

        // The same await at 5 in flight while busy: queueing explains it.
        let loaded = diagnose("sdx", &at(s(200.0, 0.0, 1.0, 5.0, 1.0, 20.0)));
        let all = loaded.join("\n");
        assert_eq!(judged(5.0, 1.0, 20.0), State::Overloaded);
        assert!(
            all.contains("sdx: overloaded in sample 4: await 5.00 ms is 5.0x"),
            "{all}"
        );
        // Busy a fifth of the time: what its requests waited behind is said beside aqu-sz.
        assert!(
            all.contains("at aqu-sz 1.00 (5.0 in flight while busy, 20.0 % of the time)."),
            "{all}"
        );
        assert!(!all.contains("slow but not loaded"), "{all}");

        // Both: the overload is the loaded interval's (3.5x at 8 in flight), not the slow
        // one's 6x, and each is counted in its own sentence.
        let both = diagnose(
            "sdx",
            &[
                base.clone(),
                base.clone(),
                base,
                s(200.0, 0.0, 1.0, 6.0, 5.0, 100.0),
                s(2000.0, 0.0, 8.0, 3.5, 0.5, 100.0),
            ],
        );
        let all = both.join("\n");
        assert!(
            all.contains("sdx: overloaded in sample 5: await 3.50 ms is 3.5x"),
            "{all}"
        );
        assert!(
            all.contains("sdx: slow but not loaded in sample 4: await 6.00 ms"),
            "{all}"
        );
        assert_eq!(judged(6.0, 1.0, 100.0), State::Slow);
        assert_eq!(judged(3.5, 8.0, 100.0), State::Overloaded);
    }

    /// A device whose await at one in flight steps from 2 to 8 ms (a slowdown, as learning's
    /// change watch sees it): said as a change, each side judged by its own median, not by
    /// one median of both ("5.09 ms", then the 8 ms intervals at one in flight "saturated:
    /// requests wait for one another"). A scatter in time (a bimodal device), a step under
    /// 2x, or two slow intervals are no change.
    #[test]
    fn a_step_at_one_in_flight_is_a_change_of_the_device_not_one_baseline() {
        let at = |aw: f64| s(1000.0 / aw, 0.0, 1.0, aw, aw, 99.9);
        let jitter = |i: usize| 1.0 + 0.02 * ((i * 7 % 5) as f64 - 2.0);
        let mut v: Vec<DeviceSample> = (0..90).map(|i| at(2.0 * jitter(i))).collect();
        v.extend((0..150).map(|i| at(8.0 * jitter(i))));
        let all = diagnose("sdx", &v).join("\n");
        assert!(
            all.contains(
                "sdx: the device changed in sample 91: await at a queue of about one request \
                 (≤ 1.5 in flight while busy) went from 2.00 ms (median of 90 intervals) to 8.00 ms (median of \
                 150), 4.0x slower"
            ),
            "{all}"
        );
        assert!(
            all.contains("not saturated: await stays within 1.5x"),
            "{all}"
        );
        assert!(
            !all.contains("own baseline") && !all.contains("saturated but"),
            "{all}"
        );

        // The same step, then an overload at 16 in flight after it: judged against 8 ms.
        v.push(s(2000.0, 0.0, 16.0, 30.0, 0.5, 100.0));
        let all = diagnose("sdx", &v).join("\n");
        assert!(
            all.contains(
                "overloaded in sample 241: await 30.00 ms is 3.8x the low-concurrency 8.00 ms"
            ),
            "{all}"
        );

        // A device faster after it was replaced: a change too, the other way.
        let mut w: Vec<DeviceSample> = (0..6).map(|_| at(8.0)).collect();
        w.extend((0..6).map(|_| at(0.5)));
        let all = diagnose("sdx", &w).join("\n");
        assert!(
            all.contains(
                "went from 8.00 ms (median of 6 intervals) to 0.50 ms (median of 6), 16.0x faster"
            ),
            "{all}"
        );

        // No change: two levels mixed in time (a bimodal device), a step under 2x, two slow
        // intervals at the end, or a step of less than 0.2 ms (a fast device's scatter).
        for (name, v) in [
            (
                "bimodal",
                (0..40)
                    .map(|i| at(if i % 3 == 0 { 6.0 } else { 2.0 }))
                    .collect::<Vec<_>>(),
            ),
            (
                "1.75x",
                (0..40)
                    .map(|i| at(if i < 20 { 2.0 } else { 3.5 }))
                    .collect(),
            ),
            (
                "two slow",
                (0..40)
                    .map(|i| at(if i < 38 { 2.0 } else { 8.0 }))
                    .collect(),
            ),
            (
                "0.15 ms",
                (0..40)
                    .map(|i| at(if i < 20 { 0.05 } else { 0.2 }))
                    .collect(),
            ),
        ] {
            let all = diagnose("sdx", &v).join("\n");
            assert!(!all.contains("the device changed"), "{name}: {all}");
            assert!(all.contains("the device's own baseline"), "{name}: {all}");
        }
    }

    /// Bursts in short intervals (6 % busy at aqu-sz 0.65: 11 in flight while busy, each
    /// request waiting 5x the baseline) are no queue of about one (issue 37's first case, in
    /// the diagnosis): the baseline is the 2 ms of one in flight, not a median with the
    /// bursts' 10.8 ms (nor a "change" to it), and the bursts and the heavy intervals after
    /// them are overloaded against it.
    #[test]
    fn bursts_at_a_low_mean_queue_are_not_the_baseline() {
        let mut v = vec![s(495.0, 0.0, 1.0, 2.0, 2.0, 99.5); 20];
        for _ in 0..20 {
            v.push(s(60.0, 0.0, 0.65, 10.8, 1.0, 6.0));
            v.push(s(1900.0, 0.0, 23.6, 12.4, 0.5, 99.0));
        }
        let all = diagnose("sdx", &v).join("\n");
        assert!(
            all.contains("is 2.00 ms (median of 20 intervals): the device's own baseline"),
            "{all}"
        );
        assert!(!all.contains("the device changed"), "{all}");
        assert!(all.contains("40 of 60 intervals are overloaded"), "{all}");

        // Bursts alone: the reference is the shortest queue while busy, said as such.
        let bursts = vec![
            s(60.0, 0.0, 0.65, 10.8, 1.0, 6.0),
            s(400.0, 0.0, 2.0, 5.0, 2.0, 100.0),
        ];
        let all = diagnose("sdx", &bursts).join("\n");
        assert!(all.contains("no interval with a queue of about one request; the reference await is 5.00 ms in sample 2 at the shortest queue seen (2.00 in flight while busy"), "{all}");
    }

    /// Requests of another size class are no queue of the baseline's: 1 MiB reads at 8 ms
    /// after 4 KiB ones at 1 ms (each at one in flight) are said apart and not judged against
    /// the 4 KiB baseline, neither a change of the device nor an overload; without sizes
    /// (a layout with no kB/s) the same awaits are judged as before.
    #[test]
    fn another_request_size_is_not_judged_against_the_baseline() {
        let at = |kib: f64, aw: f64| DeviceSample {
            rkb_per_s: Some(kib * 1000.0 / aw),
            ..s(1000.0 / aw, 0.0, 1.0, aw, aw, 100.0)
        };
        let mut v = vec![at(4.0, 1.0); 10];
        v.extend(vec![at(1024.0, 8.0); 5]);
        let all = diagnose("sdx", &v).join("\n");
        assert!(all.contains("is 1.00 ms (median of 10 intervals)"), "{all}");
        assert!(
            all.contains("5 intervals of requests of another size (the first in sample 11: 1024 KiB on average, await 8.00 ms) are not judged against the baseline, which is of requests <=8KiB"),
            "{all}"
        );
        assert!(
            !all.contains("changed") && !all.contains("overloaded") && !all.contains("slow"),
            "{all}"
        );
        assert!(all.contains("not saturated"), "{all}");

        // No sizes known: one class as far as the diagnosis can tell, and the step is news.
        let no_sizes: Vec<DeviceSample> = v
            .iter()
            .map(|x| DeviceSample {
                rkb_per_s: None,
                ..x.clone()
            })
            .collect();
        let all = diagnose("sdx", &no_sizes).join("\n");
        assert!(all.contains("the device changed in sample 11"), "{all}");
    }

    #[test]
    fn seed003_no_low_queue_and_util_lesson() {
        let w = |w, aqu, aw, sv| s(0.0, w, aqu, aw, sv, 100.0);
        let d = diagnose(
            "nvme1n1",
            &[
                w(10993.0, 30.13, 2.74, 0.09),
                w(13412.2, 44.84, 3.34, 0.07),
                w(16001.6, 50.15, 3.13, 0.06),
            ],
        );
        let all = d.join("\n");
        assert!(
            all.contains("no interval with a queue of about one"),
            "{all}"
        );
        assert!(all.contains("1.5x more"), "{all}");
        assert!(all.contains("not saturated"), "{all}");
    }

    #[test]
    fn weighted_await_when_only_directions_are_printed() {
        let x = DeviceSample {
            r_per_s: Some(300.0),
            w_per_s: Some(100.0),
            r_await: Some(1.0),
            w_await: Some(5.0),
            ..Default::default()
        };
        assert_eq!(x.effective_await_ms(), Some(2.0));
    }

    #[test]
    fn flushes_are_kept_apart_from_await() {
        // 100 writes at 1 ms and 50 flushes at 60 ms (aqu-sz 0.1 + 3.0): sysstat's await is
        // the writes' 1 ms; Little's law closes with the flushes' share of the queue.
        let x = DeviceSample {
            r_per_s: Some(0.0),
            w_per_s: Some(100.0),
            f_per_s: Some(50.0),
            w_await: Some(1.0),
            f_await: Some(60.0),
            aqu_sz: Some(3.1),
            ..Default::default()
        };
        assert_eq!(x.effective_await_ms(), Some(1.0));
        assert!((x.littles_queue().unwrap() - 3.1).abs() < 1e-9);
        let d = diagnose("vdb", &[x.clone(), x]).join("\n");
        assert!(
            d.contains("await at a queue of about one request") || d.contains("1.00 ms"),
            "{d}"
        );
        assert!(!d.contains("60.00 ms: the device's own baseline"), "{d}");
        assert!(
            d.contains("f_await 60.00 ms (median of 2 intervals with flushes)"),
            "{d}"
        );
        assert!(!d.contains("Little's law does not close"), "{d}");
        // A device doing only flushes: no await to judge, the flush latency said apart.
        let only = DeviceSample {
            r_per_s: Some(0.0),
            w_per_s: Some(0.0),
            f_per_s: Some(16.0),
            f_await: Some(60.0),
            aqu_sz: Some(0.96),
            util_pct: Some(96.0),
            ..Default::default()
        };
        assert_eq!(only.effective_await_ms(), None);
        let d = diagnose("vdc", &[only]).join("\n");
        assert!(!d.contains("baseline"), "{d}");
        assert!(d.contains("f_await 60.00 ms"), "{d}");
    }

    #[test]
    fn short_layout_totals() {
        // iostat -xs: tps and await over reads, writes and discards; no directions.
        let x = DeviceSample {
            tps: Some(286.27),
            await_ms: Some(0.16),
            aqu_sz: Some(0.07),
            ..Default::default()
        };
        assert_eq!(x.iops(), 286.27);
        assert!((x.littles_queue().unwrap() - 286.27 * 0.16 / 1000.0).abs() < 1e-12);
    }

    #[test]
    fn idle_device() {
        let d = diagnose("sda", &[s(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)]);
        assert_eq!(d.len(), 1);
        assert!(d[0].contains("nothing to judge"));
    }
}
