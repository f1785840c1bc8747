//! Findings of an open-loop sweep (`sweep --rate`): which offered rates were kept, where the
//! device stopped keeping up, what the open loop shows that the closed loop hid at the same
//! throughput (coordinated omission), and the highest rate meeting a latency target
//! (`--target-p99`): from open-loop levels, each judged on its percentile's 95 % interval
//! (surely met, surely missed, undecided), as an interval with a point estimate, searched
//! without bisecting inside the noise; or, labelled as an estimate, from a closed-loop curve.
//! Pure: no IO.
//! Imports only: analysis/, units.

use super::{LatencyNs, LevelPoint};
use crate::units::ms;
use serde::{Deserialize, Serialize};

/// One open-loop level as the analysis sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenPoint {
    pub offered_iops: f64,
    pub iops: f64,
    /// From the intended start.
    pub latency_ns: LatencyNs,
    /// From submission.
    pub service_latency_ns: LatencyNs,
    /// The rate was really offered (load/open/result.rs `Behind::kept`).
    pub kept: bool,
    /// Whose lateness it was when the level fell behind its schedule (or was kept with
    /// lateness above [`SLOW_WAKEUP_P99_NS`]): [`lag_cause`]; None when on time, and in files
    /// written before it was recorded.
    pub lag: Option<Lag>,
    /// 95 % confidence intervals of `latency_ns` (load/open/ci.rs); None for a level read
    /// from a file written before they were recorded, whose figures are then taken as exact.
    pub latency_ci_ns: Option<LatencyCi>,
}

/// Whose lateness a level's was ([`lag_cause`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lag {
    /// The device held the pool full: its latency at the offered rate needs more requests in
    /// flight than the pool has (Little's law), with no sign of the machine.
    Device,
    /// The machine: the generator waited for a CPU (scheduler run delay, a CPU quota) or was
    /// woken late while the pool had room for what the device held.
    Machine,
}

/// Lateness p99 above this, in a level that was kept, is the machine's: its timer wake-ups
/// were slow (a busy CPU), not the device.
pub const SLOW_WAKEUP_P99_NS: f64 = 1_000_000.0;

/// The share of the generator threads' time spent waiting for a CPU (load/open/result.rs
/// `GenWait`: each thread's scheduler run delay over the level, summed, over the time they
/// ran it) from which a level's lateness is the machine's: on a quiet machine a thread
/// sleeps until its next request and, woken, waits tens of microseconds; a 0.2-CPU quota
/// holds it off most of every period. Per thread, not per request: a share of the requests'
/// latency shrank as they queued inside iosat (0.008 under that quota, issue 38).
pub const MACHINE_CPU_WAIT_SHARE: f64 = 0.05;

/// The share of the pool the device must hold (achieved rate × latency from submission, by
/// Little's law) for a level not kept to be the device's: below it the pool had room, and
/// requests went out late because the generator did.
pub const DEVICE_HELD_POOL_SHARE: f64 = 0.5;

/// What tells whose lateness a level's was.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagEvidence {
    pub kept: bool,
    /// p99 of submission minus intended start.
    pub late_p99_ns: f64,
    /// Completions per second.
    pub iops: f64,
    /// Mean latency from submission.
    pub service_mean_ns: f64,
    /// The pool: the most requests in flight.
    pub pool: u32,
    /// Requests found the pool full (more than the kept share waited, or some were never sent).
    pub pool_full: bool,
    /// The share of the generator threads' time spent waiting for a CPU (0..=1); None when
    /// not measured (the sim, another OS, no schedstats).
    pub cpu_wait_share: Option<f64>,
    /// Requests the kernel saw in flight on the device on average (its `aqu-sz` over the
    /// level): the device's own view, which a starved generator does not inflate (the
    /// latency from submission does: a thread reaps its completion only once it runs); None
    /// when unknown.
    pub kernel_in_flight: Option<f64>,
    /// The most requests the kernel holds for the device at once (its queue's
    /// `nr_requests`); None when unknown. A pool larger than it can never be held whole: the
    /// rest wait for a tag outside the kernel's count (this machine's virtio disk, 256, under a
    /// pool of 512 at 120 % of its maximum: `aqu-sz` 245 of 512).
    pub kernel_queue_limit: Option<u32>,
}

/// Whose lateness a level's was: None when it was kept on time. A kept level late beyond
/// [`SLOW_WAKEUP_P99_NS`] was late because of the machine (its timer wake-ups). A level not
/// kept is the machine's when the generator waited for a CPU ([`MACHINE_CPU_WAIT_SHARE`])
/// unless the kernel saw the device hold [`DEVICE_HELD_POOL_SHARE`] of the pool, or of its
/// own queue when that is smaller, or more (a device at its limit on a busy host is still at
/// its limit), when its submissions went out late while the pool had room, or when the pool was full
/// but the device held less than [`DEVICE_HELD_POOL_SHARE`] of it (the rest were the
/// generator's: a stall, completions not yet reaped); it is the device's when the requests
/// went out on time and did not complete at the rate, or when the device held the pool full.
pub fn lag_cause(e: &LagEvidence) -> Option<Lag> {
    let late = e.late_p99_ns > SLOW_WAKEUP_P99_NS;
    if e.kept {
        return late.then_some(Lag::Machine);
    }
    let pool = f64::from(e.pool.max(1));
    let holdable = e
        .kernel_queue_limit
        .map_or(pool, |n| pool.min(f64::from(n.max(1))));
    let kernel_held = e
        .kernel_in_flight
        .is_some_and(|q| q >= DEVICE_HELD_POOL_SHARE * holdable);
    if e.cpu_wait_share
        .is_some_and(|w| w >= MACHINE_CPU_WAIT_SHARE)
        && !kernel_held
    {
        return Some(Lag::Machine);
    }
    let held = e.iops * e.service_mean_ns / 1e9;
    let device = !late || e.pool_full && held >= DEVICE_HELD_POOL_SHARE * pool;
    Some(if device { Lag::Device } else { Lag::Machine })
}

/// The confidence level of [`LatencyCi`] and of every decision made with it.
pub const CONFIDENCE: f64 = 0.95;

/// 95 % confidence intervals of one level's latency figures, `[low, high]` in integer
/// nanoseconds, each containing the figure itself (load/open/ci.rs says how they are made).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LatencyCi {
    pub mean: [u64; 2],
    pub p50: [u64; 2],
    pub p90: [u64; 2],
    pub p95: [u64; 2],
    pub p99: [u64; 2],
    pub p999: [u64; 2],
}

/// A latency target: a percentile (`p99`, `p95`, `p999`, `p50`, `p90`, `mean`) at most
/// `limit_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub percentile: Percentile,
    pub limit_ns: f64,
}

/// The percentile a target is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Percentile {
    Mean,
    P50,
    P90,
    P95,
    P99,
    P999,
}

impl Percentile {
    pub fn parse(s: &str) -> Option<Percentile> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "mean" | "avg" => Percentile::Mean,
            "p50" => Percentile::P50,
            "p90" => Percentile::P90,
            "p95" => Percentile::P95,
            "p99" => Percentile::P99,
            "p999" | "p99.9" => Percentile::P999,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Percentile::Mean => "mean",
            Percentile::P50 => "p50",
            Percentile::P90 => "p90",
            Percentile::P95 => "p95",
            Percentile::P99 => "p99",
            Percentile::P999 => "p99.9",
        }
    }

    /// This figure's 95 % interval in `ci`, ns.
    pub fn ci_of(self, ci: &LatencyCi) -> (f64, f64) {
        let [lo, hi] = match self {
            Percentile::Mean => ci.mean,
            Percentile::P50 => ci.p50,
            Percentile::P90 => ci.p90,
            Percentile::P95 => ci.p95,
            Percentile::P99 => ci.p99,
            Percentile::P999 => ci.p999,
        };
        (lo as f64, hi as f64)
    }

    /// The value of this percentile in `l`, when the source gave it.
    pub fn of(self, l: &LatencyNs) -> Option<f64> {
        match self {
            Percentile::Mean => Some(l.mean),
            Percentile::P50 => l.p50,
            Percentile::P90 => l.p90,
            Percentile::P95 => l.p95,
            Percentile::P99 => l.p99,
            Percentile::P999 => l.p999,
        }
    }
}

/// The highest rate meeting a target, with its interval.
///
/// Measured (open loop): each level is judged at [`CONFIDENCE`] ([`decide`]): surely met, surely
/// missed, or undecided (the percentile's interval straddles the target). If the percentile
/// grows with the rate, the crossing lies in `[low_iops, high_iops]` with at least 95 %
/// confidence (each end is wrong with at most 2.5 %: one side of a 95 % interval).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetAnswer {
    pub target: Target,
    /// The point estimate of the rate where the percentile crosses the target. Measured: a
    /// least-squares fit of log(percentile) against offered rate over the kept levels from
    /// `low_iops` to `high_iops` (the undecided ones between included), each weighted by the
    /// inverse variance of its percentile's interval (all alike when one has none), read at the target
    /// and kept inside the interval; the interval's middle when the fit has fewer than two
    /// levels or does not rise; `low_iops` when nothing surely missed. Estimate: interpolated
    /// between the two closed-loop levels around the crossing.
    pub iops: f64,
    /// Measured: the highest rate that surely met the target (kept, the percentile's 95 %
    /// interval at or below it) below `high_iops`; 0 when none did. Estimate: the highest
    /// closed-loop throughput that met it.
    pub low_iops: f64,
    /// Measured: the lowest rate that surely missed it (not kept, or the interval's low end
    /// above it); None when none did. Estimate: the throughput of the first closed-loop level
    /// that missed it.
    pub high_iops: Option<f64>,
    /// True when derived from a closed-loop curve (`analyze`): the closed loop hides the
    /// queueing of an offered rate, so the open loop's answer is lower; such an answer has
    /// no confidence.
    pub estimate: bool,
    /// The confidence of `[low_iops, high_iops]` (0.95) when measured; None for an estimate.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Measured rates below `high_iops` whose percentile's interval holds the target
    /// (neither surely met nor surely missed: within the noise), ascending.
    #[serde(default)]
    pub undecided_iops: Vec<f64>,
    /// Measured rates that missed the target below a kept rate whose percentile was within
    /// it, or kept with their percentile's interval wholly above that of a kept rate higher
    /// up (not monotone: the device's percentile does not fall as the rate rises, so the
    /// miss was a stall of the machine, not the device): left out of the point estimate's
    /// fit and counted with the undecided ones
    /// (in `undecided_iops` too), never as the bracket's high end; ascending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_monotone_iops: Vec<f64>,
    /// Measured rates kept on schedule that missed the target while this machine made the
    /// generator late ([`Lag::Machine`]): a stall that wakes the generator late also holds
    /// the completions (and a device served on this machine), so the miss may be the
    /// machine's; counted with the undecided ones (in `undecided_iops` too), never as the
    /// bracket's high end; ascending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_missed_iops: Vec<f64>,
    /// Measured rates left out because they fell behind because of this machine
    /// ([`Decision::Machine`]); ascending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_iops: Vec<f64>,
}

/// A level's verdict on a target, at [`CONFIDENCE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Kept, and the percentile's 95 % interval at or below the target.
    Met,
    /// Not kept (the rate was not offered), no such percentile, or the interval's low end
    /// above the target.
    Missed,
    /// The interval holds the target: the level can't tell.
    Undecided,
    /// Behind because of this machine ([`Lag::Machine`]) and not met: it says nothing about
    /// the device, and is left out of the answer.
    Machine,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Met => "met",
            Decision::Missed => "missed",
            Decision::Undecided => "undecided",
            Decision::Machine => "machine",
        }
    }
}

/// What the open loop found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OpenVerdict {
    /// The highest offered rate whose schedule was kept.
    pub max_kept_iops: Option<f64>,
    /// The lowest offered rate above every kept one that the device could not keep (not
    /// kept, [`Lag::Device`]); levels behind because of the machine are not counted.
    pub beyond_capacity_from_iops: Option<f64>,
    /// Offered rates that fell behind because of the machine ([`Lag::Machine`], not kept):
    /// they say nothing about the device.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_behind_iops: Vec<f64>,
    /// `--target-p99` and friends: the highest rate meeting the target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_iops_at_target: Option<TargetAnswer>,
    /// The findings in plain words.
    pub words: Vec<String>,
}

/// The closed loop's latency at throughput `iops`: interpolated linearly between the two
/// closed-loop levels (in concurrency order) whose throughputs surround it; None when no
/// level reached it or the percentile is missing.
pub fn closed_at(closed: &[LevelPoint], iops: f64, pct: Percentile) -> Option<f64> {
    let mut prev: Option<&LevelPoint> = None;
    for p in closed {
        let v = pct.of(&p.latency_ns)?;
        if p.iops >= iops {
            return Some(match prev.and_then(|q| Some((q, pct.of(&q.latency_ns)?))) {
                Some((q, qv)) if p.iops > q.iops && q.iops <= iops => {
                    qv + (v - qv) * (iops - q.iops) / (p.iops - q.iops)
                }
                _ => v,
            });
        }
        prev = Some(p);
    }
    None
}

/// " (low-high ms, 95 %)" for a figure's interval; nothing without one.
fn interval_words(ci: Option<(f64, f64)>) -> String {
    ci.map_or(String::new(), |(lo, hi)| {
        format!(
            " ({:.2}-{}, {:.0} %)",
            lo / 1e6,
            ms(hi, 2),
            100.0 * CONFIDENCE
        )
    })
}

/// The verdict over the open-loop levels measured so far, beside the closed loop's levels
/// when there are any, and the target when one was asked for.
pub fn verdict(open: &[OpenPoint], closed: &[LevelPoint], target: Option<Target>) -> OpenVerdict {
    let mut v = OpenVerdict::default();
    let mut by_rate: Vec<&OpenPoint> = open.iter().collect();
    by_rate.sort_by(|a, b| a.offered_iops.total_cmp(&b.offered_iops));
    v.max_kept_iops = by_rate
        .iter()
        .filter(|p| p.kept)
        .map(|p| p.offered_iops)
        .fold(None, |m, x| Some(m.map_or(x, |m: f64| m.max(x))));
    let device_behind = |p: &&&OpenPoint| !p.kept && p.lag != Some(Lag::Machine);
    v.machine_behind_iops = by_rate
        .iter()
        .filter(|p| !p.kept && p.lag == Some(Lag::Machine))
        .map(|p| p.offered_iops)
        .collect();
    // Kept/not kept must be monotone in the rate: a device that kept a higher rate did not
    // reach its capacity at a lower one (a stall of the generator or of the host did).
    let top_kept = v.max_kept_iops.unwrap_or(0.0);
    let stray: Vec<f64> = by_rate
        .iter()
        .filter(device_behind)
        .filter(|p| p.offered_iops < top_kept)
        .map(|p| p.offered_iops)
        .collect();
    v.beyond_capacity_from_iops = by_rate
        .iter()
        .filter(device_behind)
        .find(|p| p.offered_iops > top_kept)
        .map(|p| p.offered_iops);
    let closed_max = closed.iter().map(|p| p.iops).fold(0.0, f64::max);
    // What the closed loop hid: the highest kept rate it also reached.
    let shown = by_rate
        .iter()
        .rev()
        .filter(|p| p.kept)
        .find_map(|p| Some((*p, closed_at(closed, p.iops, Percentile::P99)?)));
    if let Some((p, closed_p99)) = shown {
        if let Some(p99) = p.latency_ns.p99 {
            // The claim of a longer tail holds only if the p99's whole interval is above.
            let (lo, _) = p
                .latency_ci_ns
                .map_or((p99, p99), |ci| Percentile::P99.ci_of(&ci));
            v.words.push(format!(
                "At {:.0} % of the closed-loop maximum ({:.0} IOPS offered), p99 from the \
                 intended start is {}{}; the closed loop reported {} at the same throughput{}.",
                100.0 * p.offered_iops / closed_max.max(f64::MIN_POSITIVE),
                p.offered_iops,
                ms(p99, 2),
                interval_words(p.latency_ci_ns.map(|ci| Percentile::P99.ci_of(&ci))),
                ms(closed_p99, 2),
                if lo.min(p99) > 1.2 * closed_p99 {
                    format!(
                        " ({:.1}x: requests waiting for the device are what a closed loop does \
                         not send)",
                        p99 / closed_p99
                    )
                } else {
                    String::new()
                }
            ));
        }
    } else if let Some(p) = by_rate.iter().rev().find(|p| p.kept) {
        if let (Some(a), Some(b)) = (p.latency_ns.p99, p.service_latency_ns.p99) {
            v.words.push(format!(
                "At {:.0} IOPS offered, p99 from the intended start is {}{}, from submission {}.",
                p.offered_iops,
                ms(a, 2),
                interval_words(p.latency_ci_ns.map(|ci| Percentile::P99.ci_of(&ci))),
                ms(b, 2)
            ));
        }
    }
    if let Some(r) = v.beyond_capacity_from_iops {
        v.words.push(format!(
            "From {r:.0} IOPS offered the schedule was not kept (requests went out late or not \
             at all) while the device held the pool full: beyond what the device delivers at \
             this concurrency bound; those levels are not judged as if the rate had been \
             offered."
        ));
    }
    if !stray.is_empty() {
        v.words.push(format!(
            "Not monotone: the schedule was not kept at {} IOPS offered but was at {top_kept:.0}: \
             those levels fell behind for a while (a stall), which is not the device's capacity.",
            list(&stray)
        ));
    }
    if !v.machine_behind_iops.is_empty() {
        v.words.push(format!(
            "At {} IOPS offered the generator fell behind because of this machine, not the \
             device (it waited for a CPU, or its requests went out late while the device held \
             less than half the pool): those levels say nothing about the device; a quieter \
             host, or fewer threads in the pool, measures them.",
            list(&v.machine_behind_iops)
        ));
    }
    if let Some(t) = target {
        v.max_iops_at_target = at_target(open, t);
        if let Some(a) = &v.max_iops_at_target {
            v.words.push(target_words(a));
        }
    }
    v
}

/// Rates in words: "1000, 2000 and 3000".
fn list(rates: &[f64]) -> String {
    let words: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
    match words.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A rate in words: thousands grouped, "about" figures to three significant digits.
fn rate(x: f64, about: bool) -> String {
    let mut v = x.max(0.0).round() as u64;
    if about && v >= 1000 {
        let scale = 10u64.pow(v.ilog10() - 2);
        v = (v + scale / 2) / scale * scale;
    }
    super::declared::thousands(v as f64)
}

/// The sentence for a target's answer.
pub fn target_words(a: &TargetAnswer) -> String {
    let t = a.target;
    let goal = format!("{} <= {}", t.percentile.as_str(), ms(t.limit_ns, 2));
    if a.estimate {
        let head = "Estimate from the closed loop (an open loop gives less)";
        return match a.high_iops {
            _ if a.low_iops <= 0.0 => {
                format!("{head}: no rate measured met {goal}; the lowest one's is above it.")
            }
            Some(h) => format!(
                "{head}: at most about {:.0} IOPS with {goal} (met at {:.0}, missed at {:.0}).",
                a.iops, a.low_iops, h
            ),
            None => format!(
                "{head}: at least {:.0} IOPS with {goal} (every rate measured met it).",
                a.low_iops
            ),
        };
    }
    let head = "Measured with an offered load";
    let pct = format!("{:.0} %", 100.0 * a.confidence.unwrap_or(CONFIDENCE));
    let noise = match a.undecided_iops.as_slice() {
        [] => String::new(),
        u => format!(
            "; within the noise at {}",
            u.iter()
                .map(|&r| rate(r, false))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let noise = match a.not_monotone_iops.as_slice() {
        [] => noise,
        s => format!(
            "{noise}; missed at {} though a higher rate measured less (not monotone: a stall \
             of this machine, not the device)",
            s.iter()
                .map(|&r| rate(r, false))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let noise = match a.machine_missed_iops.as_slice() {
        [] => noise,
        s => format!(
            "{noise}; missed at {} while this machine made the generator late (its stall \
             holds the completions too): not counted as the device's",
            s.iter()
                .map(|&r| rate(r, false))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    match a.high_iops {
        Some(h) if a.low_iops > 0.0 => format!(
            "{head}: about {} IOPS with {goal} ({}-{}, {pct}: surely met at {}, surely \
             missed at {}{noise}).",
            rate(a.iops, true),
            rate(a.low_iops, false),
            rate(h, false),
            rate(a.low_iops, false),
            rate(h, false),
        ),
        Some(h) if a.undecided_iops.is_empty() => format!(
            "{head}: no rate measured met {goal}; the lowest, {}, surely missed it.",
            rate(h, false)
        ),
        Some(h) => format!(
            "{head}: at most about {} IOPS with {goal} (0-{}, {pct}: no rate measured surely \
             met it, {} surely missed it{noise}).",
            rate(a.iops, true),
            rate(h, false),
            rate(h, false)
        ),
        None if a.low_iops > 0.0 => format!(
            "{head}: at least {} IOPS with {goal} (surely met at {}; no rate measured surely \
             missed it{noise}).",
            rate(a.low_iops, false),
            rate(a.low_iops, false)
        ),
        None if a.undecided_iops.is_empty() && !a.machine_iops.is_empty() => format!(
            "{head}: undecided: every rate measured ({}) fell behind because of this machine, \
             and says nothing about the device against {goal}.",
            a.machine_iops
                .iter()
                .map(|&r| rate(r, false))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => {
            format!("{head}: undecided: every rate measured is within the noise of {goal}{noise}.")
        }
    }
}

/// Whether an open-loop level met the target, at [`CONFIDENCE`]: [`Decision`]. A level
/// without intervals (a file written before they were recorded) is judged on its figure.
///
/// A level whose lateness was the machine's ([`Lag::Machine`]) can meet the target but never
/// miss it because of that lateness ([`Decision::Machine`]): only when the lateness changed
/// the answer. A level kept on schedule whose latency from submission alone is above the
/// target missed it whatever the generator's lateness (the issue 27 rule: judge against the
/// disturbance, refuse only what it changed), and is judged as any other level; a search that
/// called every such level the machine's could climb past the device's answer and never
/// bracket it.
pub fn decide(p: &OpenPoint, t: Target) -> Decision {
    let over_from_submission = t
        .percentile
        .of(&p.service_latency_ns)
        .is_some_and(|s| s > t.limit_ns);
    let machine = p.lag == Some(Lag::Machine) && !(p.kept && over_from_submission);
    let Some(v) = t.percentile.of(&p.latency_ns).filter(|_| p.kept) else {
        return if machine {
            Decision::Machine
        } else {
            Decision::Missed
        };
    };
    let (lo, hi) = p.latency_ci_ns.map_or((v, v), |ci| t.percentile.ci_of(&ci));
    if hi.max(v) <= t.limit_ns {
        Decision::Met
    } else if machine {
        Decision::Machine
    } else if lo.min(v) > t.limit_ns {
        Decision::Missed
    } else {
        Decision::Undecided
    }
}

/// The highest rate meeting `t` among open-loop levels ([`TargetAnswer`] says what each
/// field means); None without levels.
pub fn at_target(open: &[OpenPoint], t: Target) -> Option<TargetAnswer> {
    if open.is_empty() {
        return None;
    }
    // A level behind because of the machine is met or left out, never missed (decide): it
    // does not push the answer down.
    let judged: Vec<(&OpenPoint, Decision)> = open.iter().map(|p| (p, decide(p, t))).collect();
    // Never below a level that surely met the target: a miss under it (not monotone) was a
    // stall, and the bracket starts at the highest rate met.
    let low_iops = judged
        .iter()
        .filter(|(_, d)| *d == Decision::Met)
        .map(|(p, _)| p.offered_iops)
        .fold(0.0, f64::max);
    // Nor below a kept level whose percentile itself (not its whole interval) was within the
    // target: a miss under it is not monotone either (on this VM the host's stolen
    // milliseconds put a 2 ms device's p99 above 5 ms at 231/s and under it at 463 and
    // 929/s, 2026-11-29); it is counted as undecided, which only widens the bracket.
    let within = |p: &OpenPoint| {
        p.kept
            && p.lag.is_none()
            && t.percentile
                .of(&p.latency_ns)
                .is_some_and(|v| v <= t.limit_ns)
    };
    let top_within = open
        .iter()
        .filter(|p| within(p))
        .map(|p| p.offered_iops)
        .fold(0.0, f64::max);
    // Nor a kept miss whose percentile's whole interval lies above that of a kept level at a
    // higher rate: the percentile fell as the rate rose, so a stall of the machine made the
    // miss (on this VM a level at 1,211/s measured p99 25.3 ms, 17.6-37.3, and one at
    // 1,441/s 5.88 ms, 5.07-8.25, 2026-11-29).
    let bounds = |p: &OpenPoint| {
        let v = t.percentile.of(&p.latency_ns)?;
        Some(p.latency_ci_ns.map_or((v, v), |ci| t.percentile.ci_of(&ci)))
    };
    let fell_above = |p: &OpenPoint| {
        p.kept
            && bounds(p).is_some_and(|(lo, _)| {
                open.iter().any(|q| {
                    q.kept
                        && q.lag.is_none()
                        && q.offered_iops > p.offered_iops
                        && bounds(q).is_some_and(|(_, hi)| hi < lo)
                })
            })
    };
    let mut not_monotone_iops: Vec<f64> = judged
        .iter()
        .filter(|(_, d)| *d == Decision::Missed)
        .filter(|(p, _)| {
            p.offered_iops > low_iops
                && (p.offered_iops < top_within || (p.lag.is_none() && fell_above(p)))
        })
        .map(|(p, _)| p.offered_iops)
        .collect();
    not_monotone_iops.sort_by(f64::total_cmp);
    // Nor does a miss of a level kept while the machine made it late: on this VM an RT
    // generator 3-9 ms late at p99 came with 9-35 ms from submission on the known device
    // (its loop worker stalled as well) at 949-1,203/s, and closed the bracket at 934-949/s
    // where the truth crossed at 1,149/s and a level on time missed only from 1,432/s
    // (2026-11-29). The search then goes on above it.
    let mut machine_missed_iops: Vec<f64> = judged
        .iter()
        .filter(|(p, d)| *d == Decision::Missed && p.kept && p.lag == Some(Lag::Machine))
        .map(|(p, _)| p.offered_iops)
        .filter(|&r| r > low_iops && !not_monotone_iops.contains(&r))
        .collect();
    machine_missed_iops.sort_by(f64::total_cmp);
    let high_iops = judged
        .iter()
        .filter(|(p, d)| *d == Decision::Missed && p.offered_iops > low_iops)
        .map(|(p, _)| p.offered_iops)
        .filter(|r| !not_monotone_iops.contains(r) && !machine_missed_iops.contains(r))
        .min_by(f64::total_cmp);
    let below_high = |r: f64| high_iops.map_or(true, |h| r < h);
    let mut undecided_iops: Vec<f64> = judged
        .iter()
        .filter(|(p, d)| *d == Decision::Undecided && below_high(p.offered_iops))
        .map(|(p, _)| p.offered_iops)
        .chain(not_monotone_iops.iter().copied())
        .chain(
            machine_missed_iops
                .iter()
                .copied()
                .filter(|&r| below_high(r)),
        )
        .collect();
    undecided_iops.sort_by(f64::total_cmp);
    let mut machine_iops: Vec<f64> = judged
        .iter()
        .filter(|(_, d)| *d == Decision::Machine)
        .map(|(p, _)| p.offered_iops)
        .collect();
    machine_iops.sort_by(f64::total_cmp);
    // The stalls named above tell nothing of the crossing: left out of the fit.
    let stalled: Vec<f64> = not_monotone_iops
        .iter()
        .chain(&machine_missed_iops)
        .copied()
        .collect();
    let iops = point_estimate(open, t, (low_iops, high_iops), &undecided_iops, &stalled);
    Some(TargetAnswer {
        target: t,
        iops,
        low_iops,
        high_iops,
        estimate: false,
        confidence: Some(CONFIDENCE),
        undecided_iops,
        not_monotone_iops,
        machine_missed_iops,
        machine_iops,
    })
}

/// [`TargetAnswer::iops`] for a measured answer.
fn point_estimate(
    open: &[OpenPoint],
    t: Target,
    (low, high): (f64, Option<f64>),
    undecided: &[f64],
    stalled: &[f64],
) -> f64 {
    let nothing_met = low <= 0.0 && undecided.is_empty();
    if high.is_none() && low > 0.0 || nothing_met {
        // "At least" (nothing above was surely missed), or nothing met at all.
        return low;
    }
    let in_bracket = |r: f64| r >= low && high.map_or(true, |h| r <= h);
    let pts: Vec<(f64, f64, Option<f64>)> = open
        .iter()
        .filter(|p| p.kept && p.lag.is_none() && in_bracket(p.offered_iops))
        .filter(|p| !stalled.contains(&p.offered_iops))
        .filter_map(|p| {
            let v = t.percentile.of(&p.latency_ns).filter(|v| *v > 0.0)?;
            Some((p.offered_iops, v.ln(), log_weight(p, t)))
        })
        .collect();
    // Every level weighted by how well its interval knows its percentile, or (a level
    // without one: an older file) all alike.
    let pts: Vec<(f64, f64, f64)> = if pts.iter().all(|p| p.2.is_some()) {
        pts.iter().map(|p| (p.0, p.1, p.2.unwrap_or(1.0))).collect()
    } else {
        pts.iter().map(|p| (p.0, p.1, 1.0)).collect()
    };
    let top = high.unwrap_or_else(|| undecided.last().copied().unwrap_or(low).max(low));
    let bottom = if low > 0.0 {
        low
    } else {
        undecided.first().copied().unwrap_or(0.0)
    };
    if let Some((a, b)) = fit_line(&pts) {
        if b > 0.0 {
            return ((t.limit_ns.ln() - a) / b).clamp(bottom.min(top), top);
        }
    }
    if top <= 0.0 {
        0.0
    } else {
        (bottom + top) / 2.0
    }
}

/// The weight of a level's log-percentile in the point estimate's fit: the inverse variance
/// its 95 % interval gives (on the log scale, half-width ÷ 1.96 as the standard deviation);
/// None without an interval. A level a stall of the machine hit in a few of its windows has
/// an interval many times its figure and counts for little: on the known device one kept
/// level at 1,100/s measured p99 8.27 ms, interval 4.0-39.7 ms, between levels at 1,003 and
/// 1,243/s that measured 3.85 and 4.81 ms, and pulled an unweighted fit's crossing down to
/// the bracket's low end, 1,003/s, where the truth crossed near 1,250/s (2026-11-29; in the
/// full suite, 951/s against 1,215/s).
fn log_weight(p: &OpenPoint, t: Target) -> Option<f64> {
    let (lo, hi) = t.percentile.ci_of(p.latency_ci_ns.as_ref()?);
    // A floor on the spread: an interval of one histogram bucket is not exact knowledge.
    let sd = ((hi.max(1.0) / lo.max(1.0)).ln() / (2.0 * 1.96)).max(0.01);
    Some(1.0 / (sd * sd))
}

/// Weighted least squares `y = a + b·x` over points `(x, y, weight)` with at least two
/// distinct x; None otherwise.
fn fit_line(pts: &[(f64, f64, f64)]) -> Option<(f64, f64)> {
    let w: f64 = pts.iter().map(|p| p.2).sum();
    if pts.len() < 2 || w <= 0.0 {
        return None;
    }
    let mx = pts.iter().map(|p| p.2 * p.0).sum::<f64>() / w;
    let my = pts.iter().map(|p| p.2 * p.1).sum::<f64>() / w;
    let sxx: f64 = pts.iter().map(|p| p.2 * (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| p.2 * (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| (my - sxy / sxx * mx, sxy / sxx))
}

/// The estimate `analyze --target-p99` gives from a closed-loop curve: the throughput where
/// the closed loop's percentile crosses the target (interpolated between levels in
/// concurrency order). An upper bound of the open loop's answer, labelled as an estimate.
pub fn estimate_from_closed(closed: &[LevelPoint], t: Target) -> Option<TargetAnswer> {
    let mut low: Option<(f64, f64)> = None;
    for p in closed {
        let v = t.percentile.of(&p.latency_ns)?;
        if v <= t.limit_ns {
            if !low.is_some_and(|(iops, _)| p.iops <= iops) {
                low = Some((p.iops, v));
            }
            continue;
        }
        let (iops, high) = match low {
            Some((li, lv)) if p.iops > li && v > lv => (
                li + (p.iops - li) * (t.limit_ns - lv) / (v - lv),
                Some(p.iops),
            ),
            // More requests in flight gave no more throughput: the closed loop's maximum met
            // the target, and no higher rate was measured.
            Some((li, _)) => (li, None),
            None => (0.0, Some(p.iops)),
        };
        return Some(TargetAnswer {
            target: t,
            iops,
            low_iops: low.map_or(0.0, |l| l.0),
            high_iops: high,
            estimate: true,
            confidence: None,
            undecided_iops: Vec::new(),
            not_monotone_iops: Vec::new(),
            machine_missed_iops: Vec::new(),
            machine_iops: Vec::new(),
        });
    }
    low.map(|(iops, _)| TargetAnswer {
        target: t,
        iops,
        low_iops: iops,
        high_iops: None,
        estimate: true,
        confidence: None,
        undecided_iops: Vec::new(),
        not_monotone_iops: Vec::new(),
        machine_missed_iops: Vec::new(),
        machine_iops: Vec::new(),
    })
}

/// The next rate to try when narrowing the interval of the highest rate meeting `t`: the
/// middle of the widest gap between the rates decided and those within the noise (from the
/// highest surely met to the lowest undecided, and from the highest undecided to the lowest
/// surely missed; the whole bracket without undecided rates); None when that gap is within
/// `resolution` (a share of the lower end) — no point bisecting inside the noise — or one
/// side of the bracket is missing.
pub fn next_probe(open: &[OpenPoint], t: Target, resolution: f64) -> Option<f64> {
    let a = at_target(open, t)?;
    let high = a.high_iops?;
    if a.low_iops <= 0.0 {
        // Nothing surely met yet: halve below the lowest tried.
        let bottom = open.iter().map(|p| p.offered_iops).fold(high, f64::min);
        return (bottom > 1.0).then_some(bottom / 2.0);
    }
    let inside: Vec<f64> = a
        .undecided_iops
        .iter()
        .copied()
        .filter(|&r| r > a.low_iops && r < high)
        .collect();
    let gaps = match (inside.first(), inside.last()) {
        (Some(&u0), Some(&u1)) => vec![(a.low_iops, u0), (u1, high)],
        _ => vec![(a.low_iops, high)],
    };
    let (lo, hi) = gaps
        .into_iter()
        .max_by(|x, y| (x.1 - x.0).total_cmp(&(y.1 - y.0)))?;
    (hi - lo > resolution * a.low_iops).then_some((lo + hi) / 2.0)
}

/// `--target-p99`'s search stops when the rates that surely met and surely missed the
/// target, or the gaps between them and the rates within the noise, are within this share
/// of each other.
pub const SEARCH_RESOLUTION: f64 = 0.05;
/// ... or after this many open-loop levels: at the default 0.5 s ramp and 2 s levels, 25 s
/// after the closed loop's 9 levels (about 23 s): under a minute in all.
pub const MAX_PROBES: usize = 10;
/// The highest rate the search offers, as a share of the closed loop's maximum: beyond it
/// the device can't keep the rate at all.
pub const SEARCH_CEILING: f64 = 1.2;

/// The next rate `--target-p99` offers, given the open-loop levels so far, the closed loop's
/// maximum and its estimate for the target ([`estimate_from_closed`]): first the estimate
/// (within 5 % .. 100 % of the maximum), then up by a quarter from the highest rate while
/// none surely missed the target (to [`SEARCH_CEILING`] of the maximum) or down by half from
/// the lowest while none surely met it, then [`next_probe`] to [`SEARCH_RESOLUTION`]; None
/// when done.
pub fn search_next(
    open: &[OpenPoint],
    t: Target,
    closed_max_iops: f64,
    estimate_iops: Option<f64>,
) -> Option<f64> {
    if open.len() >= MAX_PROBES || closed_max_iops <= 0.0 {
        return None;
    }
    let ceiling = SEARCH_CEILING * closed_max_iops;
    let Some(a) = at_target(open, t) else {
        let e = estimate_iops.unwrap_or(closed_max_iops / 2.0);
        return Some(e.clamp(0.05 * closed_max_iops, closed_max_iops));
    };
    let rates = open.iter().map(|p| p.offered_iops);
    match a.high_iops {
        // Nothing surely missed it: go higher, up to the ceiling: doubling while below half
        // the closed loop's maximum (a start at 5 % of it, where the closed loop's lowest
        // level already missed, reaches the maximum in five probes, not fourteen), then by a
        // quarter.
        // Nothing decided: every level fell behind because of this machine. Lower rates ask
        // less of it (on this VM the search otherwise climbed from 57,000/s to 78,000/s, each
        // level the machine's, and ended undecided, 2026-11-29): halve below the lowest.
        None if a.low_iops <= 0.0 && a.undecided_iops.is_empty() => {
            let bottom = rates.fold(f64::MAX, f64::min) / 2.0;
            (bottom >= 0.005 * closed_max_iops).then_some(bottom)
        }
        None => {
            let top = rates.fold(0.0, f64::max);
            let step = if top < 0.5 * closed_max_iops {
                2.0
            } else {
                1.25
            };
            (top < ceiling * 0.999).then(|| (top * step).min(ceiling))
        }
        Some(h) if a.low_iops <= 0.0 => {
            // Nothing surely met it, but a level on time whose percentile is within the
            // target: bisect above it, where the crossing is (the levels below it hold fewer
            // requests and wider intervals: halving from 919/s to 12/s on the known device
            // spent half the probes where none could decide, 2026-11-29).
            let within = open
                .iter()
                .filter(|p| p.kept && p.lag.is_none() && p.offered_iops < h)
                .filter(|p| {
                    t.percentile
                        .of(&p.latency_ns)
                        .is_some_and(|v| v <= t.limit_ns)
                })
                .map(|p| p.offered_iops)
                .fold(0.0, f64::max);
            if within > 0.0 {
                let above = open
                    .iter()
                    .map(|p| p.offered_iops)
                    .filter(|&r| r > within)
                    .fold(h, f64::min);
                return (above - within > SEARCH_RESOLUTION * within)
                    .then_some((within + above) / 2.0);
            }
            // Else halve, down to half a percent of the maximum.
            let bottom = rates.fold(h, f64::min) / 2.0;
            (bottom >= 0.005 * closed_max_iops).then_some(bottom)
        }
        Some(_) => next_probe(open, t, SEARCH_RESOLUTION),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lat(mean_ms: f64, p99_ms: f64) -> LatencyNs {
        LatencyNs {
            mean: mean_ms * 1e6,
            p99: Some(p99_ms * 1e6),
            ..Default::default()
        }
    }

    fn open(offered: f64, p99_ms: f64, kept: bool) -> OpenPoint {
        OpenPoint {
            offered_iops: offered,
            iops: if kept { offered } else { offered * 0.8 },
            latency_ns: lat(p99_ms / 2.0, p99_ms),
            service_latency_ns: lat(1.0, 2.0),
            kept,
            lag: (!kept).then_some(Lag::Device),
            latency_ci_ns: None,
        }
    }

    fn closed(c: u32, iops: f64, p99_ms: f64) -> LevelPoint {
        let mut p = LevelPoint::curve_point(c, iops, p99_ms * 0.5e6, None);
        p.latency_ns.p99 = Some(p99_ms * 1e6);
        p
    }

    const P99_2MS: Target = Target {
        percentile: Percentile::P99,
        limit_ns: 2e6,
    };

    #[test]
    fn the_closed_loop_is_read_at_the_same_throughput() {
        let c = [
            closed(1, 500.0, 2.0),
            closed(2, 1000.0, 2.0),
            closed(4, 2000.0, 2.4),
        ];
        assert_eq!(closed_at(&c, 1500.0, Percentile::P99), Some(2.2e6));
        assert_eq!(closed_at(&c, 400.0, Percentile::P99), Some(2.0e6));
        assert_eq!(closed_at(&c, 2500.0, Percentile::P99), None);
    }

    #[test]
    fn the_verdict_names_what_the_closed_loop_hid_and_where_capacity_ends() {
        let c = [closed(1, 500.0, 2.0), closed(4, 2000.0, 2.3)];
        let o = [
            open(500.0, 2.5, true),
            open(1800.0, 6.1, true),
            open(2400.0, 300.0, false),
        ];
        let v = verdict(&o, &c, None);
        assert_eq!(v.max_kept_iops, Some(1800.0));
        assert_eq!(v.beyond_capacity_from_iops, Some(2400.0));
        assert!(
            v.words[0].starts_with("At 90 % of the closed-loop maximum (1800 IOPS offered), p99 from the intended start is 6.10 ms; the closed loop reported 2.2"),
            "{:?}",
            v.words
        );
        assert!(
            v.words[1].starts_with("From 2400 IOPS offered"),
            "{:?}",
            v.words
        );
        // With the p99's interval: said, and the "longer tail" claimed only when the whole
        // interval is above 1.2x the closed loop's.
        let sure = [noisy(1800.0, 6.1, 5.8, 6.5)];
        let w = &verdict(&sure, &c, None).words[0];
        assert!(
            w.contains("is 6.10 ms (5.80-6.50 ms, 95 %); the closed loop reported 2.2")
                && w.contains("x: requests waiting"),
            "{w}"
        );
        let unsure = [noisy(1800.0, 3.0, 2.5, 3.6)];
        let w = &verdict(&unsure, &c, None).words[0];
        assert!(
            w.contains("(2.50-3.60 ms, 95 %)") && !w.contains("x: requests waiting"),
            "{w}"
        );
    }

    #[test]
    fn the_target_is_bracketed_and_interpolated() {
        let o = [
            open(500.0, 1.0, true),
            open(1000.0, 1.5, true),
            open(1500.0, 2.5, true),
            open(2000.0, 9.0, false),
        ];
        let a = at_target(&o, P99_2MS).unwrap();
        assert_eq!(a.low_iops, 1000.0);
        assert_eq!(a.high_iops, Some(1500.0));
        // log(p99) is a line through the two levels: it reaches ln 2 ms at
        // 1000 + 500 · ln(2/1.5)/ln(2.5/1.5).
        let want = 1000.0 + 500.0 * (2.0f64 / 1.5).ln() / (2.5f64 / 1.5).ln();
        assert!((a.iops - want).abs() < 1e-6, "{a:?} {want}");
        assert!(!a.estimate);
        assert_eq!(a.confidence, Some(0.95));
        assert!(a.undecided_iops.is_empty());
        assert_eq!(next_probe(&o, P99_2MS, 0.05), Some(1250.0));
        let o2 = [open(1000.0, 1.5, true), open(1040.0, 2.5, true)];
        assert_eq!(next_probe(&o2, P99_2MS, 0.05), None, "within 5 %");
        // A level not kept fails the target whatever its percentile says.
        let o3 = [open(1000.0, 1.5, true), open(1200.0, 1.0, false)];
        let a = at_target(&o3, P99_2MS).unwrap();
        assert_eq!((a.low_iops, a.high_iops), (1000.0, Some(1200.0)));
        assert_eq!(a.iops, 1100.0);
        assert!(
            target_words(&a)
                .contains("about 1,100 IOPS with p99 <= 2.00 ms (1,000-1,200, 95 %: surely met at 1,000, surely missed at 1,200)"),
            "{}",
            target_words(&a)
        );
    }

    #[test]
    fn a_closed_loop_gives_an_estimate_labelled_as_one() {
        let c = [
            closed(1, 500.0, 1.0),
            closed(2, 1000.0, 1.5),
            closed(4, 1500.0, 2.5),
        ];
        let a = estimate_from_closed(&c, P99_2MS).unwrap();
        assert!(a.estimate);
        assert!((a.iops - 1250.0).abs() < 1e-6, "{a:?}");
        assert!(target_words(&a).starts_with("Estimate from the closed loop"));
        // Past the maximum the throughput fell and the p99 missed: the maximum is the answer.
        let past = [
            closed(1, 500.0, 1.0),
            closed(4, 1500.0, 1.5),
            closed(8, 1400.0, 3.0),
        ];
        let a = estimate_from_closed(&past, P99_2MS).unwrap();
        assert_eq!((a.iops, a.low_iops, a.high_iops), (1500.0, 1500.0, None));
        let all = estimate_from_closed(&c[..2], P99_2MS).unwrap();
        assert_eq!((all.iops, all.high_iops), (1000.0, None));
    }

    #[test]
    fn the_search_brackets_then_bisects_to_the_resolution() {
        // A device whose p99 from the intended start crosses 2 ms at 1300 IOPS.
        let device = |r: f64| {
            open(
                r,
                if r <= 1300.0 { 1.0 + r / 1300.0 } else { 3.0 },
                r < 2000.0,
            )
        };
        let mut levels: Vec<OpenPoint> = Vec::new();
        while let Some(r) = search_next(&levels, P99_2MS, 2000.0, Some(1800.0)) {
            assert!(r <= 2400.0 && r > 0.0, "{r}");
            levels.push(device(r));
        }
        assert!(levels.len() <= MAX_PROBES, "{}", levels.len());
        let a = at_target(&levels, P99_2MS).unwrap();
        let h = a.high_iops.unwrap();
        assert!(a.low_iops <= 1300.0 && h > 1300.0, "{a:?}");
        assert!(
            h - a.low_iops <= SEARCH_RESOLUTION * a.low_iops + 1e-9,
            "{a:?}"
        );
        // A target every rate meets: up to the ceiling, then stop.
        let easy = Target {
            percentile: Percentile::P99,
            limit_ns: 1e9,
        };
        let mut levels = Vec::new();
        while let Some(r) = search_next(&levels, easy, 2000.0, None) {
            levels.push(open(r, 1.0, true));
        }
        let top = levels.iter().map(|p| p.offered_iops).fold(0.0, f64::max);
        assert!((top - 2400.0).abs() < 1e-6, "{top}");
    }

    /// A kept level whose p99 is `p99_ms`, its 95 % interval `lo_ms..hi_ms`.
    fn noisy(offered: f64, p99_ms: f64, lo_ms: f64, hi_ms: f64) -> OpenPoint {
        let ns = |ms: f64| (ms * 1e6) as u64;
        OpenPoint {
            latency_ci_ns: Some(LatencyCi {
                p99: [ns(lo_ms), ns(hi_ms)],
                ..Default::default()
            }),
            ..open(offered, p99_ms, true)
        }
    }

    fn evidence(kept: bool, late_ms: f64, iops: f64, svc_ms: f64, cpu: Option<f64>) -> LagEvidence {
        LagEvidence {
            kept,
            late_p99_ns: late_ms * 1e6,
            iops,
            service_mean_ns: svc_ms * 1e6,
            pool: 32,
            pool_full: !kept,
            cpu_wait_share: cpu,
            kernel_in_flight: None,
            kernel_queue_limit: None,
        }
    }

    #[test]
    fn lateness_is_the_devices_only_when_it_held_the_pool_and_the_cpu_was_free() {
        assert_eq!(
            lag_cause(&evidence(true, 0.2, 20_000.0, 0.1, Some(0.0))),
            None
        );
        assert_eq!(
            lag_cause(&evidence(true, 3.9, 42_000.0, 0.1, Some(0.0))),
            Some(Lag::Machine),
            "kept, woken late"
        );
        // 20,000/s at 0.1 ms holds 2 of 32: the pool had room, the generator was late.
        assert_eq!(
            lag_cause(&evidence(false, 16.0, 20_000.0, 0.1, Some(0.0))),
            Some(Lag::Machine)
        );
        // 20,000/s at 1.5 ms holds 30 of 32: the device.
        assert_eq!(
            lag_cause(&evidence(false, 16.0, 20_000.0, 1.5, Some(0.01))),
            Some(Lag::Device)
        );
        // ... unless the generator waited for a CPU a tenth of the time.
        assert_eq!(
            lag_cause(&evidence(false, 16.0, 20_000.0, 1.5, Some(0.1))),
            Some(Lag::Machine)
        );
        // ... but not when the kernel saw the device hold the pool (28 of 32) all the same:
        // a device at its limit on a busy host; a starved generator leaves it a short queue.
        let held = |q: f64| LagEvidence {
            kernel_in_flight: Some(q),
            ..evidence(false, 16.0, 20_000.0, 1.5, Some(0.3))
        };
        assert_eq!(lag_cause(&held(28.0)), Some(Lag::Device));
        assert_eq!(lag_cause(&held(3.0)), Some(Lag::Machine));
        // A pool larger than the kernel's queue: held when the queue is (this machine's disk
        // at 120 % of its maximum: aqu-sz 245 under nr_requests 256 and a pool of 512).
        let big = |q: f64, limit: Option<u32>| LagEvidence {
            pool: 512,
            kernel_queue_limit: limit,
            kernel_in_flight: Some(q),
            ..evidence(false, 16.0, 48_000.0, 10.6, Some(0.05))
        };
        assert_eq!(lag_cause(&big(245.0, Some(256))), Some(Lag::Device));
        assert_eq!(lag_cause(&big(245.0, None)), Some(Lag::Machine));
        // ... and at 50 % of it, 36 of 256 is a queue with room: the machine's.
        assert_eq!(lag_cause(&big(36.0, Some(256))), Some(Lag::Machine));
        assert_eq!(
            lag_cause(&evidence(false, 16.0, 20_000.0, 1.5, None)),
            Some(Lag::Device)
        );
        // Sent on time and not completed at the rate: the device, whatever the pool.
        assert_eq!(
            lag_cause(&evidence(false, 0.1, 2_000.0, 0.1, None)),
            Some(Lag::Device)
        );
        // Late with the pool free: the generator.
        let free = LagEvidence {
            pool_full: false,
            ..evidence(false, 16.0, 20_000.0, 1.5, None)
        };
        assert_eq!(lag_cause(&free), Some(Lag::Machine));
    }

    /// A level of the run: p99 `p99_ms`, kept or behind because of `lag`.
    fn lagged(offered: f64, p99_ms: f64, kept: bool, lag: Option<Lag>) -> OpenPoint {
        OpenPoint {
            kept,
            lag,
            ..open(offered, p99_ms, true)
        }
    }

    #[test]
    fn a_stall_below_a_kept_rate_is_never_called_the_devices_capacity() {
        // --rate 10k,20k,40k: 20k behind (the pool had room: the machine), 40k kept.
        let o = [
            lagged(10_000.0, 0.3, true, None),
            lagged(20_140.0, 16.0, false, Some(Lag::Machine)),
            lagged(39_950.0, 1.04, true, None),
        ];
        let v = verdict(&o, &[], None);
        let all = v.words.join(" ");
        assert_eq!(v.beyond_capacity_from_iops, None, "{all}");
        assert_eq!(v.machine_behind_iops, vec![20_140.0]);
        assert!(all.contains("At 39950 IOPS offered, p99"), "{all}");
        assert!(!all.contains("beyond what the device delivers"), "{all}");
        assert!(all.contains("because of this machine"), "{all}");
        // Behind with the device holding the pool, below a kept rate: not monotone, said so.
        let o = [
            lagged(10_000.0, 0.3, true, None),
            lagged(20_140.0, 16.0, false, Some(Lag::Device)),
            lagged(39_950.0, 1.04, true, None),
            lagged(60_000.0, 40.0, false, Some(Lag::Device)),
        ];
        let v = verdict(&o, &[], None);
        let all = v.words.join(" ");
        assert_eq!(v.beyond_capacity_from_iops, Some(60_000.0), "{all}");
        assert!(
            all.contains("Not monotone: the schedule was not kept at 20140"),
            "{all}"
        );
        assert!(!all.contains("From 20140"), "{all}");
    }

    #[test]
    fn a_miss_below_a_rate_within_the_target_or_made_by_the_machine_does_not_end_the_bracket() {
        let t = Target {
            percentile: Percentile::P99,
            limit_ns: 5e6,
        };
        // The known device (four units of 2 ms) under --target-p99 5ms on a busy VM
        // (2026-11-29): p99 from the intended start and its interval per offered rate; the
        // truth (its units simulated at the run's own service times) crossed at 1,131/s.
        let mut o = vec![
            noisy(26.0, 4.49, 3.10, 4.49),
            noisy(58.0, 4.67, 3.33, 7.02),
            noisy(109.0, 5.01, 3.30, 5.66),
            noisy(231.0, 6.01, 4.95, 6.34),
            noisy(463.0, 4.26, 3.82, 5.21),
            noisy(929.0, 4.40, 3.54, 6.99),
            noisy(1394.0, 5.65, 4.92, 13.26),
            noisy(1496.0, 7.76, 5.07, 19.34),
            noisy(1596.0, 14.46, 8.56, 26.19),
            lagged(1886.0, 101.0, false, Some(Lag::Device)),
        ];
        let a = at_target(&o, t).unwrap();
        // The bracket holds the truth; the point estimate (the fit over every level, 408/s)
        // does not come near it: the percentile is flat within the noise up to the knee. (An
        // estimate from the last crossing, 929 to 1,394/s, read 1,166/s here but lost the
        // M/M/1 search of load/open/ci.rs: within 10 % in 29-31 of 40 runs against 37.)
        assert_eq!((a.low_iops, a.high_iops), (26.0, Some(1496.0)), "{a:?}");
        assert!(a.low_iops <= 1131.0 && 1131.0 <= 1496.0);
        assert!(a.not_monotone_iops.is_empty(), "{a:?}");
        // The same run with 231/s surely missed (its interval above 5 ms): 463 and 929/s,
        // within the target, say it was a stall; the bracket does not end at 231.
        o[3] = noisy(231.0, 6.01, 5.10, 6.34);
        let a = at_target(&o, t).unwrap();
        assert_eq!(decide(&o[3], t), Decision::Missed);
        assert_eq!(a.not_monotone_iops, vec![231.0], "{a:?}");
        assert_eq!((a.low_iops, a.high_iops), (26.0, Some(1496.0)), "{a:?}");
        assert!(a.undecided_iops.contains(&231.0), "{a:?}");
        let w = target_words(&a);
        assert!(
            w.contains("missed at 231 though a higher rate measured less"),
            "{w}"
        );
        // The busy VM's next run: misses while the machine made the generator late
        // (lateness p99 1.9-9.4 ms at real-time priority) at 949-1,203/s, the first miss on
        // time at 1,432/s; the truth crossed at 1,149/s.
        // p99 from submission beside each: over the target too, so each one's own decision
        // stays "missed" (the issue 27 rule); only the bracket leaves them out.
        let late = |r: f64, p99: f64, lo: f64, hi: f64, sub: f64| OpenPoint {
            lag: Some(Lag::Machine),
            service_latency_ns: lat(2.3, sub),
            ..noisy(r, p99, lo, hi)
        };
        let o = [
            lagged(1897.0, 119.8, false, Some(Lag::Device)),
            noisy(934.0, 3.84, 3.52, 4.53),
            noisy(1432.0, 6.14, 5.32, 8.42),
            late(1203.0, 6.57, 5.36, 11.47, 6.15),
            late(1044.0, 44.86, 28.0, 56.8, 35.19),
            late(1007.0, 21.36, 18.0, 35.0, 18.38),
            late(1010.0, 10.75, 7.79, 18.27, 9.63),
            late(949.0, 10.19, 9.05, 13.43, 8.63),
        ];
        assert!(o[3..].iter().all(|p| decide(p, t) == Decision::Missed));
        let a = at_target(&o, t).unwrap();
        assert_eq!((a.low_iops, a.high_iops), (934.0, Some(1432.0)), "{a:?}");
        assert_eq!(a.machine_missed_iops.len(), 5, "{a:?}");
        assert!((a.iops - 1149.0).abs() < 0.1 * 1149.0, "{a:?}");
        let w = target_words(&a);
        assert!(
            w.contains("while this machine made the generator late"),
            "{w}"
        );
        // A miss above every rate within the target stays the bracket's end.
        let o = [noisy(500.0, 3.0, 2.5, 3.5), noisy(1000.0, 7.0, 6.0, 8.0)];
        let a = at_target(&o, t).unwrap();
        assert_eq!((a.high_iops, a.not_monotone_iops.len()), (Some(1000.0), 0));
    }

    #[test]
    fn with_nothing_surely_met_the_search_bisects_above_a_level_within_the_target() {
        let t = Target {
            percentile: Percentile::P99,
            limit_ns: 5e6,
        };
        // The known device (closed-loop maximum about 1,800/s): 1,866/s not kept, 919/s
        // undecided at 4.64 ms (3.77-8.48): the crossing is between them, not below 919.
        let mut o = vec![
            lagged(1866.0, 108.0, false, Some(Lag::Device)),
            noisy(919.0, 4.64, 3.77, 8.48),
        ];
        assert_eq!(
            search_next(&o, t, 1800.0, None),
            Some((919.0 + 1866.0) / 2.0)
        );
        // Above the limit at 1,392/s: between 919 and 1,392 next.
        o.push(noisy(1392.5, 5.9, 4.5, 9.0));
        assert_eq!(
            search_next(&o, t, 1800.0, None),
            Some((919.0 + 1392.5) / 2.0)
        );
        // No level within the target: halve below the lowest, as before.
        let o = [
            lagged(1866.0, 108.0, false, Some(Lag::Device)),
            noisy(919.0, 5.5, 3.77, 8.48),
        ];
        assert_eq!(search_next(&o, t, 1800.0, None), Some(919.0 / 2.0));
    }

    #[test]
    fn with_every_level_the_machines_the_search_goes_down_and_says_why_it_is_undecided() {
        let t = Target {
            percentile: Percentile::P99,
            limit_ns: 1e6,
        };
        // --target-p99 1ms on this VM's disk (closed-loop maximum 64,976/s): 57,057/s not
        // kept, its generator threads waiting for a CPU 48 % of their time.
        let o = [lagged(57_057.0, 14.0, false, Some(Lag::Machine))];
        let a = at_target(&o, t).unwrap();
        assert_eq!(a.machine_iops, vec![57_057.0]);
        let w = target_words(&a);
        assert!(w.contains("fell behind because of this machine"), "{w}");
        assert!(!w.contains("within the noise"), "{w}");
        assert_eq!(search_next(&o, t, 64_976.0, None), Some(57_057.0 / 2.0));
    }

    #[test]
    fn the_target_search_never_answers_below_a_kept_level_that_met_it() {
        let t = Target {
            percentile: Percentile::P99,
            limit_ns: 1e6,
        };
        // Two levels behind because of the machine below a kept level at 8,330/s with p99
        // 0.99 ms: they do not push the answer down.
        let o = [
            lagged(2_230.0, 3.0, false, Some(Lag::Machine)),
            lagged(4_000.0, 2.5, true, Some(Lag::Machine)),
            lagged(8_330.0, 0.99, true, None),
            lagged(12_000.0, 1.6, true, None),
        ];
        let a = at_target(&o, t).unwrap();
        assert_eq!(a.low_iops, 8_330.0, "{a:?}");
        assert_eq!(a.high_iops, Some(12_000.0), "{a:?}");
        assert!(a.iops >= 8_330.0, "{a:?}");
        // A miss by the device below a met level (not monotone) does not either.
        let o = [
            lagged(4_000.0, 2.5, true, None),
            lagged(8_330.0, 0.99, true, None),
        ];
        let a = at_target(&o, t).unwrap();
        assert_eq!((a.low_iops, a.high_iops), (8_330.0, None), "{a:?}");
        assert_eq!(decide(&o[0], t), Decision::Missed);
        // Late because of the machine, p99 2 ms from submission: the lateness did not change
        // the answer, the device's latency missed it.
        let machine = lagged(4_000.0, 2.5, true, Some(Lag::Machine));
        assert_eq!(decide(&machine, t), Decision::Missed);
        // 0.8 ms from submission, 2.5 ms from the intended start: the machine's lateness
        // made the miss.
        let machine = OpenPoint {
            service_latency_ns: lat(0.4, 0.8),
            ..machine
        };
        assert_eq!(decide(&machine, t), Decision::Machine);
        // Behind schedule because of the machine: never missed, whatever its latency.
        let behind = lagged(4_000.0, 2.5, false, Some(Lag::Machine));
        assert_eq!(decide(&behind, t), Decision::Machine);
    }

    #[test]
    fn a_level_surely_meets_surely_misses_or_cannot_tell() {
        let d = |p: OpenPoint| decide(&p, P99_2MS);
        assert_eq!(
            d(noisy(1000.0, 1.8, 1.7, 2.0)),
            Decision::Met,
            "at the limit"
        );
        assert_eq!(d(noisy(1000.0, 1.9, 1.8, 2.1)), Decision::Undecided);
        assert_eq!(d(noisy(1000.0, 2.1, 1.9, 2.2)), Decision::Undecided);
        assert_eq!(d(noisy(1000.0, 2.2, 2.01, 2.4)), Decision::Missed);
        // Not kept: missed whatever its interval says.
        let behind = OpenPoint {
            kept: false,
            ..noisy(1000.0, 1.0, 0.9, 1.1)
        };
        assert_eq!(d(behind), Decision::Missed);
        // Without intervals (an older file): judged on the figure.
        assert_eq!(d(open(1000.0, 1.99, true)), Decision::Met);
        assert_eq!(d(open(1000.0, 2.01, true)), Decision::Missed);
        // An interval that leaves out its own figure (a hand-edited file) is widened to it.
        assert_eq!(d(noisy(1000.0, 2.5, 1.0, 1.5)), Decision::Undecided);
    }

    #[test]
    fn the_interval_runs_from_surely_met_to_surely_missed_across_the_noise() {
        // The device (4 units of 2 ms, p99 <= 5 ms): non-monotone p99s near the
        // crossing, each uncertain by several per cent.
        let t = Target {
            percentile: Percentile::P99,
            limit_ns: 5e6,
        };
        let o = [
            noisy(1100.0, 4.30, 4.10, 4.55),
            noisy(1284.0, 4.89, 4.65, 5.15),
            noisy(1313.0, 4.94, 4.70, 5.20),
            noisy(1338.0, 5.06, 4.80, 5.35),
            noisy(1410.0, 5.34, 5.05, 5.65),
            noisy(1470.0, 5.03, 4.75, 5.30),
        ];
        let a = at_target(&o, t).unwrap();
        assert_eq!((a.low_iops, a.high_iops), (1100.0, Some(1410.0)), "{a:?}");
        assert_eq!(a.undecided_iops, [1284.0, 1313.0, 1338.0], "{a:?}");
        // The fit over 1100..1410 crosses 5 ms between the last level under it and the first
        // over it.
        assert!(a.iops > 1313.0 && a.iops < 1338.0, "{a:?}");
        let w = target_words(&a);
        assert!(
            w.starts_with("Measured with an offered load: about 1,3")
                && w.contains("IOPS with p99 <= 5.00 ms (1,100-1,410, 95 %: surely met at 1,100, surely missed at 1,410; within the noise at 1,284, 1,313, 1,338)."),
            "{w}"
        );
        // Bisecting inside the noise is pointless: the next probe splits the widest gap to a
        // decided rate (1100..1284), and none once the gaps are within the resolution.
        assert_eq!(next_probe(&o, t, 0.05), Some(1192.0));
        let mut o2 = o.to_vec();
        o2.push(noisy(1250.0, 4.6, 4.4, 4.9));
        o2.push(noisy(1380.0, 5.3, 5.05, 5.6));
        let a2 = at_target(&o2, t).unwrap();
        assert_eq!((a2.low_iops, a2.high_iops), (1250.0, Some(1380.0)));
        assert_eq!(next_probe(&o2, t, 0.05), None, "{a2:?}");
        // Only a rate that surely missed: no answer but that.
        let none = at_target(&o[4..5], t).unwrap();
        assert_eq!(
            (none.iops, none.low_iops, none.high_iops),
            (0.0, 0.0, Some(1410.0))
        );
        assert!(
            target_words(&none).ends_with(
                "no rate measured met p99 <= 5.00 ms; the lowest, 1,410, surely missed it."
            ),
            "{}",
            target_words(&none)
        );
        // Every rate within the noise: undecided, said so.
        let all = at_target(&o[1..4], t).unwrap();
        assert_eq!((all.low_iops, all.high_iops), (0.0, None));
        assert!(target_words(&all).contains("undecided"), "{all:?}");
        // Nothing surely missed: at least the highest surely met, the noise above named.
        let up = at_target(&o[..3], t).unwrap();
        assert_eq!((up.low_iops, up.high_iops, up.iops), (1100.0, None, 1100.0));
        assert!(
            target_words(&up).contains("at least 1,100 IOPS"),
            "{}",
            target_words(&up)
        );
    }

    #[test]
    fn a_level_a_stall_hit_counts_for_what_its_interval_knows() {
        // The known device (4 units of 2 ms, p99 <= 5 ms; the truth near 1,250/s), measured
        // on this VM on 2026-11-29: 1,100/s caught a stall (p99 8.27 ms, interval 4.0-39.7).
        let t = Target {
            percentile: Percentile::P99,
            limit_ns: 5e6,
        };
        let o = [
            noisy(735.0, 4.10, 3.35, 9.75),
            noisy(957.0, 3.93, 3.51, 10.39),
            noisy(1003.0, 3.85, 3.69, 4.24),
            noisy(1100.0, 8.27, 4.04, 39.65),
            noisy(1243.0, 4.81, 4.44, 5.72),
            noisy(1343.0, 5.07, 4.44, 11.21),
            noisy(1438.0, 6.55, 5.58, 8.52),
        ];
        let a = at_target(&o, t).unwrap();
        assert_eq!((a.low_iops, a.high_iops), (1003.0, Some(1438.0)), "{a:?}");
        // Unweighted, the stalled level pulled the crossing to the bracket's low end (1,003).
        assert!(a.iops > 1200.0 && a.iops < 1350.0, "{a:?}");
        // A kept miss whose interval lies wholly above a higher rate's (the same VM, the next
        // run: the truth near 1,258/s) was a stall: neither the bracket's end nor in the fit.
        let late = |r: f64, p99: f64, lo: f64, hi: f64| OpenPoint {
            lag: Some(Lag::Machine),
            ..noisy(r, p99, lo, hi)
        };
        let run = [
            lagged(1905.0, 93.65, false, Some(Lag::Device)),
            noisy(939.0, 3.51, 3.21, 4.32),
            noisy(1441.0, 5.88, 5.07, 8.25),
            noisy(1211.0, 25.33, 17.61, 37.34),
            noisy(1051.0, 9.53, 4.60, 18.07),
            noisy(1145.0, 4.87, 4.28, 7.43),
            late(1035.0, 7.49, 5.85, 11.25),
            late(967.0, 9.36, 7.26, 16.22),
            late(1149.0, 20.89, 17.27, 28.87),
            late(1195.0, 9.63, 7.45, 15.40),
        ];
        let r = at_target(&run, t).unwrap();
        assert_eq!((r.low_iops, r.high_iops), (939.0, Some(1441.0)), "{r:?}");
        assert_eq!(r.not_monotone_iops, vec![1211.0], "{r:?}");
        assert!((r.iops - 1258.0).abs() < 0.2 * 1258.0, "{r:?}");
        assert!(
            target_words(&r).contains("missed at 1,211 though a higher rate measured less"),
            "{}",
            target_words(&r)
        );
        // Without intervals (an older file) every level counts alike, as before.
        let bare: Vec<OpenPoint> = o
            .iter()
            .map(|p| OpenPoint {
                latency_ci_ns: None,
                ..p.clone()
            })
            .collect();
        let b = at_target(&bare, t).unwrap();
        assert!(
            b.iops >= b.low_iops && b.high_iops.is_none_or(|h| b.iops <= h),
            "{b:?}"
        );
    }

    #[test]
    fn the_search_stops_inside_the_noise_with_the_crossing_in_its_interval() {
        // A device whose p99 grows by 0.1 % per IOPS and crosses 2 ms at 1300 IOPS, measured
        // with a 95 % interval of ±8 % and a seeded error inside it.
        let mut rng = 0x9E37_79B9u64;
        let device = |r: f64, rng: &mut u64| {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            let err = 1.0 + 0.06 * ((*rng % 2001) as f64 / 1000.0 - 1.0);
            let p99 = 2.0 * (0.001 * (r - 1300.0)).exp() * err;
            noisy(r, p99, p99 / 1.08, p99 * 1.08)
        };
        let mut levels: Vec<OpenPoint> = Vec::new();
        while let Some(r) = search_next(&levels, P99_2MS, 2000.0, Some(1800.0)) {
            levels.push(device(r, &mut rng));
        }
        assert!(levels.len() <= MAX_PROBES, "{}", levels.len());
        let a = at_target(&levels, P99_2MS).unwrap();
        let h = a.high_iops.unwrap();
        assert!(
            a.low_iops > 0.0 && a.low_iops <= 1300.0 && h >= 1300.0,
            "{a:?}"
        );
        assert!(a.low_iops <= a.iops && a.iops <= h, "{a:?}");
        // ±8 % of p99 is ±77 IOPS of rate here: the interval is wider than the resolution,
        // and honest about it.
        assert!(h - a.low_iops > SEARCH_RESOLUTION * a.low_iops, "{a:?}");
        assert!((a.iops - 1300.0).abs() < 100.0, "{a:?}");
    }

    #[test]
    fn rates_read_as_people_write_them() {
        assert_eq!(rate(1326.4, false), "1,326");
        assert_eq!(rate(1326.4, true), "1,330");
        assert_eq!(rate(987.6, true), "988");
        assert_eq!(rate(1_234_567.0, true), "1,230,000");
        assert_eq!(rate(0.0, false), "0");
    }

    #[test]
    fn percentiles_parse() {
        assert_eq!(Percentile::parse("p99"), Some(Percentile::P99));
        assert_eq!(Percentile::parse("P99.9"), Some(Percentile::P999));
        assert_eq!(Percentile::parse("p42"), None);
    }
}
