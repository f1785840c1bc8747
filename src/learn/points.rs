//! How one interval of a device becomes points of the learned curve (issue 37): judged by what
//! happened while the device was busy, not averaged over the interval.
//!
//! - **Busy time.** An interval whose busy time (io_ticks, %util) is a fraction u of it held
//!   its requests while busy, not spread over it: its in-flight level is the weighted time over
//!   the busy time (Δtime ÷ (u·Δt)), and its IOPS the requests over the busy time. The point is
//!   the interval's busy part (its idle part, split off, teaches nothing): a burst of 24 in
//!   flight that covers a third of an interval is a point at 24, never a low-concurrency one.
//!   Below [`MIN_BUSY_SHARE`] busy, a level above one request cannot be told from the edges of
//!   a burst and the interval is left out of the curve (still judged). The busy share is
//!   bounded by the mean in flight (`busy_bound`), and more tightly by the interval's short
//!   windows where they were sampled (monitor::burst's `busy_max`: each window busy at most
//!   for its requests' time in flight). io_ticks count in the kernel's ticks: on requests
//!   shorter than [`SHORT_REQUEST_S`] they are no measure of the busy time (read 0–5 % for a
//!   disk 20 % busy, or 90 % for one at most 67 %), and the windows' bound places the level
//!   instead (the lowest level the counters allow); longer requests, or no windows: %util,
//!   within the mean in flight (a window's time in flight is credited at completion, a bound
//!   only for requests far shorter than the window).
//! - **Mixed sizes.** Without per-request sizes only the mean is known: a mean between two
//!   size classes (not within a merge's tolerance of either side's sizes) is two classes each
//!   with a real share. Such an interval is marked mixed: neither learned into nor judged
//!   against one class's curve. Class edges tolerate merges (model::SizeClass::of).
//! - **Size classes from the kernel.** Where the block-latency source sizes each request
//!   (monitor::blklat's classes), a direction whose requests span classes (more than one class
//!   with [`MIN_CLASS_SHARE`] of them, or a mean between classes) becomes one point per class
//!   with a real share, each of its own class's curve and judged against it: the class's share
//!   of the requests (the kernel's counts, scaled to diskstats'), its own latency (diskstats'
//!   time in flight apportioned by the kernel's per-class time, count × mean: Little's law per
//!   class), and its share of the busy time in the same proportion, so that each class's point
//!   sits at the device's in-flight level (its requests queued among all of them) with the
//!   IOPS the class would have at that level alone. Classes below the share are dropped (their
//!   time with them). Without the source, or with classes covering less than
//!   [`MIN_CLASS_COVERAGE`] of the requests, the interval is taken as above.
//! - **CPU noise.** An interval whose CPUs had no idle time left, or lost time to steal, may
//!   have latency the machine's own CPU wait explains (a completion waits for a CPU to be
//!   noticed): it is marked [`Points::cpu_busy`]; the learner keeps it out of the baseline's
//!   level (or the level an estimate came from) when its latency there is also 1.5x that
//!   level's (learn/mod.rs). A busy
//!   machine alone is no reason: a host whose compilers keep the CPUs busy still learns.
//!
//! Pure.
//! Imports only: learn/model.rs, monitor/, sys/sched.rs.

use super::model::{bucket_of, Dir, Point, SizeClass};
use crate::monitor::blklat::{ClassLatency, Measured, OpLatency};
use crate::monitor::DiskRates;
use crate::sys::sched::AvgCpu;

/// At and above this busy share an interval is busy throughout (io_ticks advance in jiffies:
/// a fully busy interval reads 95–100 %); below it, the busy part is split off.
pub const FULL_BUSY_SHARE: f64 = 0.95;
/// Below this busy share an interval's level above one in flight is left out: a quarter of a
/// second of a 1 s interval is mostly the ramps of a burst.
pub const MIN_BUSY_SHARE: f64 = 0.25;
/// Requests in flight shorter than this on average are shorter than a tick of some kernels
/// (HZ=100: 10 ms), and io_ticks, which count whole ticks, do not measure their busy time.
pub const SHORT_REQUEST_S: f64 = 0.010;
pub use crate::sys::sched::{CPU_BUSY_SHARE, CPU_STEAL_SHARE};

/// A size class with at least this share of a direction's requests is a point of its own.
pub const MIN_CLASS_SHARE: f64 = 0.10;
/// The kernel's classes must hold this share of diskstats' requests to be used.
pub const MIN_CLASS_COVERAGE: f64 = 0.90;

/// Points per interval at most: two directions × three size classes.
const MAX_POINTS: usize = 6;

/// Why an interval (or one direction of it) is not learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftOut {
    /// Busy for too little of the interval to place its level.
    Partial,
    /// Its mean request size lies between two classes.
    Mixed,
}

/// The points of one interval of a device, with what the interval says of itself: no
/// allocation per device and interval. Written over in place ([`points_into`]): the learner
/// keeps one and fills it for each device in turn (issue 37's cost: initialising a fresh
/// one's six points cost ~55 instructions a row).
#[derive(Debug, Clone, Copy)]
pub struct Points {
    pts: [Point; MAX_POINTS],
    n: usize,
    /// The points left out as mixed (bit i: point i; see [`LeftOut`]).
    mixed: u8,
    /// The points left out as partial (never one also mixed).
    partial: u8,
    /// The machine's CPUs explain the interval's latency: not learned into the baseline.
    pub cpu_busy: bool,
    /// The interval's busy share (None: the source has no io_ticks).
    pub busy_share: Option<f64>,
}

/// A slot of [`Points`] not yet written.
const UNSET: Point = Point {
    dir: Dir::Read,
    wall_ns: 0,
    interval_s: 0.0,
    whole_s: 0.0,
    requests: 0.0,
    busy_ms: 0.0,
    bytes: 0.0,
    pcts_ns: None,
    device_ns: None,
    other_requests: 0.0,
};

impl Default for Points {
    /// No points.
    fn default() -> Points {
        Points {
            pts: [UNSET; MAX_POINTS],
            n: 0,
            mixed: 0,
            partial: 0,
            cpu_busy: false,
            busy_share: None,
        }
    }
}

impl Points {
    pub fn as_slice(&self) -> &[Point] {
        &self.pts[..self.n]
    }

    /// Why point `i` is left out, if it is.
    fn left_out_at(&self, i: usize) -> Option<LeftOut> {
        if self.mixed >> i & 1 == 1 {
            Some(LeftOut::Mixed)
        } else if self.partial >> i & 1 == 1 {
            Some(LeftOut::Partial)
        } else {
            None
        }
    }

    /// The points to learn from: those not left out.
    pub fn learnable(&self) -> impl Iterator<Item = &Point> {
        let out = self.mixed | self.partial;
        self.as_slice()
            .iter()
            .enumerate()
            .filter(move |(i, _)| out >> i & 1 == 0)
            .map(|(_, p)| p)
    }

    /// Why the point of `dir` is left out, if it is.
    pub fn left_out(&self, dir: Dir) -> Option<LeftOut> {
        let i = self.as_slice().iter().position(|p| p.dir == dir)?;
        self.left_out_at(i)
    }

    /// The points to learn from: all of them when none is left out (the usual interval:
    /// nothing copied), else those not left out, copied into `spare`.
    pub fn to_learn<'a>(&'a self, spare: &'a mut Option<Points>) -> &'a [Point] {
        if self.mixed | self.partial == 0 {
            return self.as_slice();
        }
        spare.insert(self.without_left_out()).as_slice()
    }

    /// The points to learn from, as points: those not left out.
    fn without_left_out(&self) -> Points {
        let mut out = Points {
            n: 0,
            mixed: 0,
            partial: 0,
            ..*self
        };
        for p in self.learnable() {
            out.pts[out.n] = *p;
            out.n += 1;
        }
        out
    }

    /// The directions whose requests are of mixed size classes.
    pub fn mixed_dirs(&self) -> impl Iterator<Item = Dir> + '_ {
        let mixed = self.mixed;
        self.as_slice()
            .iter()
            .enumerate()
            .filter(move |(i, _)| mixed >> i & 1 == 1)
            .map(|(_, p)| p.dir)
    }

    /// Some direction's requests are of mixed size classes.
    pub fn mixed(&self) -> bool {
        self.mixed != 0
    }
}

/// Whether the interval's CPUs explain its latency (see [`CPU_BUSY_SHARE`]).
pub fn cpu_busy(cpu: Option<&AvgCpu>) -> bool {
    cpu.is_some_and(AvgCpu::busy)
}

/// The most of the interval the device can have been busy: the mean number of requests in
/// flight over it (Little's law: a busy instant holds at least one request), or all of it.
/// io_ticks count in the kernel's ticks (1–10 ms), so on requests shorter than a tick %util
/// can read above this bound (measured on this project's VM, kernel 6.18: 90 % busy where the
/// requests' own time gives at most 67 %), which would place the interval's level below one
/// in flight and its busy rate above what was served. Infinite when the source gave no time
/// in flight (no bound known).
fn busy_bound(r: &DiskRates) -> f64 {
    let conc = r.read_concurrency
        + r.write_concurrency
        + r.discard_concurrency.unwrap_or(0.0)
        + r.flush_concurrency.unwrap_or(0.0);
    let q = r.aqu_sz.max(conc);
    if q.is_finite() && q > 0.0 {
        q
    } else {
        f64::INFINITY
    }
}

/// The interval's busy share (the module doc): %util within the bounds, or the windows'
/// bound where the requests are too short for io_ticks to measure; None when the source has
/// neither and more than one request was in flight on average (the interval is then taken
/// whole).
pub fn busy_share(r: &DiskRates, windows: Option<f64>) -> Option<f64> {
    let any = r.r_s + r.w_s > 0.0;
    let q = busy_bound(r);
    // Windows, and the requests' time, asked only where there are windows (issue 37's
    // cost: ~30 instructions a row).
    if let Some(w) = windows {
        // Each request's mean time in flight: the time in flight over the requests.
        let requests = (r.r_s + r.w_s + r.d_s.unwrap_or(0.0) + r.f_s.unwrap_or(0.0)) * r.interval_s;
        let short =
            q.is_finite() && requests > 0.0 && q * r.interval_s / requests < SHORT_REQUEST_S;
        // Windows without time in flight (a source with none) are no bound. A window's time
        // in flight is credited when its requests complete: a fair bound for requests far
        // shorter than a window, not for long ones, which %util measures.
        if any && w > 0.0 && w.is_finite() && short {
            return Some(q.min(1.0).min(w));
        }
    }
    match (r.util_pct.is_finite() && r.util_pct > 0.0 && any).then(|| r.util_pct / 100.0) {
        Some(u) => Some(u.min(q).min(1.0)),
        // No io_ticks: taken whole, but never below one in flight while busy.
        None => (q < 1.0).then_some(q),
    }
}

/// The points of one device's interval: reads and writes (discards and flushes are other
/// work and are not learned), each its busy part. `lat` from the block-latency source, when
/// it measured; `cpu` the interval's avg-cpu, when read; `busy_max` the most of the interval
/// its short windows allow the device to have been busy, when they were sampled.
pub fn points_of(
    wall_ns: i64,
    r: &DiskRates,
    lat: Option<&Measured>,
    cpu: Option<&AvgCpu>,
    busy_max: Option<f64>,
) -> Points {
    let mut out = Points::default();
    points_into(&mut out, wall_ns, r, lat, cpu, busy_max);
    out
}

/// [`points_of`] written over `out`, whatever it held: each point is written once, in its
/// slot, and a direction's per-request figures are read only where it has points (issue
/// 37's cost).
pub fn points_into(
    out: &mut Points,
    wall_ns: i64,
    r: &DiskRates,
    lat: Option<&Measured>,
    cpu: Option<&AvgCpu>,
    busy_max: Option<f64>,
) {
    let dt = r.interval_s;
    let busy_share = busy_share(r, busy_max);
    let busy_s = match busy_share {
        Some(u) if u < FULL_BUSY_SHARE => dt * u,
        _ => dt,
    };
    let thin = busy_share.is_some_and(|u| u < MIN_BUSY_SHARE);
    out.n = 0;
    out.mixed = 0;
    out.partial = 0;
    out.cpu_busy = cpu_busy(cpu);
    out.busy_share = busy_share;
    for dir in [Dir::Read, Dir::Write] {
        let (per_s, conc, kb_s, other_s) = match dir {
            Dir::Read => (r.r_s, r.read_concurrency, r.rkb_s, r.w_s),
            Dir::Write => (r.w_s, r.write_concurrency, r.wkb_s, r.r_s),
        };
        let i = out.n;
        let p = &mut out.pts[i];
        *p = Point {
            dir,
            wall_ns,
            // The busy part: requests, their time in flight and bytes all fell in it.
            interval_s: busy_s,
            whole_s: dt,
            requests: per_s * dt,
            busy_ms: conc * dt * 1e3,
            bytes: kb_s * 1024.0 * dt,
            pcts_ns: None,
            device_ns: None,
            other_requests: other_s * dt,
        };
        if !p.usable() {
            continue;
        }
        let partial = thin && bucket_of(p.in_flight()) > 0;
        let mixed = SizeClass::mixed(p.bytes / p.requests);
        if let Some(m) = lat {
            let write = dir == Dir::Write;
            p.pcts_ns = pcts(if write { &m.write } else { &m.read });
            p.device_ns = device_ns(m, write);
            let p = *p;
            if let Some(split) = m.classes(write).and_then(|c| by_class(&p, c, mixed)) {
                for q in split.iter().flatten() {
                    out.pts[out.n] = *q;
                    out.partial |= u8::from(partial) << out.n;
                    out.n += 1;
                }
                continue;
            }
        }
        if mixed {
            out.mixed |= 1 << i;
        } else if partial {
            out.partial |= 1 << i;
        }
        out.n += 1;
    }
}

/// A direction's block-layer percentiles, in ns.
fn pcts(o: &OpLatency) -> Option<[f64; 3]> {
    Some([o.p50_ms? * 1e6, o.p95_ms? * 1e6, o.p99_ms? * 1e6])
}

/// The device's own mean time (issue 40), where most of the direction's requests were
/// split: a handful split among many unstamped would stand for all of them.
fn device_ns(m: &Measured, write: bool) -> Option<f64> {
    let sp = m.split(write)?;
    let all = if write { m.write.count } else { m.read.count };
    (sp.count > 0 && sp.count * 2 >= all).then_some(sp.device_mean_ms? * 1e6)
}

/// One direction's point `p` as points of its size classes, when the kernel's classes cover
/// its requests and they span classes (`mixed`: the mean lies between two); see the module
/// doc for the apportioning. None: take `p` whole.
fn by_class(p: &Point, classes: &[ClassLatency; 3], mixed: bool) -> Option<[Option<Point>; 3]> {
    let seen: u64 = classes.iter().map(|c| c.count).sum();
    if seen == 0 || (seen as f64) < MIN_CLASS_COVERAGE * p.requests {
        return None;
    }
    let share = |c: &ClassLatency| c.count as f64 / seen as f64;
    let real = |c: &ClassLatency| share(c) >= MIN_CLASS_SHARE && c.mean_ms.is_some();
    if classes.iter().filter(|c| real(c)).count() < 2 && !mixed {
        return None;
    }
    // Each class's time in flight by the kernel (requests × mean), all classes'.
    let time = |c: &ClassLatency| p.requests * share(c) * c.mean_ms.unwrap_or(0.0);
    let all: f64 = classes.iter().map(time).sum();
    if all <= 0.0 {
        return None;
    }
    let mut out = [None; 3];
    for (slot, c) in out.iter_mut().zip(classes).filter(|(_, c)| real(c)) {
        let f = time(c) / all;
        let requests = p.requests * share(c);
        let pcts = |c: &ClassLatency| Some([c.p50_ms? * 1e6, c.p95_ms? * 1e6, c.p99_ms? * 1e6]);
        let q = Point {
            interval_s: p.interval_s * f,
            requests,
            busy_ms: p.busy_ms * f,
            bytes: requests * c.mean_bytes.unwrap_or(0.0),
            pcts_ns: pcts(c),
            // The split is per direction, not per class: a class's own device time is
            // not known.
            device_ns: None,
            ..*p
        };
        *slot = q.usable().then_some(q);
    }
    Some(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::monitor::blklat::CLASSES;

    /// The kernel's class `k` (of monitor::blklat's CLASSES) of `count` requests of `bytes`
    /// each, `ms` long on average (p50 the mean, p95 1.1x, p99 1.2x).
    pub(crate) fn class_latency(k: usize, count: u64, bytes: f64, ms: f64) -> ClassLatency {
        ClassLatency {
            class: Some(CLASSES[k]),
            count,
            mean_bytes: Some(bytes),
            mean_ms: Some(ms),
            p50_ms: Some(ms),
            p95_ms: Some(ms * 1.1),
            p99_ms: Some(ms * 1.2),
        }
    }

    /// One interval of 1 s: `iops`, `conc` requests in flight on average over it, `util` %
    /// busy, requests of `kib`.
    fn rates(iops: f64, conc: f64, util: f64, kib: f64) -> DiskRates {
        DiskRates {
            interval_s: 1.0,
            r_s: iops,
            rkb_s: iops * kib,
            read_concurrency: conc,
            util_pct: util,
            ..DiskRates::default()
        }
    }

    #[test]
    fn a_burst_covering_a_third_of_an_interval_is_a_point_at_its_own_level() {
        // 24 in flight at 12 ms for a third of a second: 667 requests, 8 in flight on
        // average over the second, 33 % busy.
        let p = points_of(0, &rates(667.0, 8.0, 33.3, 4.0), None, None, None);
        let pt = p.learnable().next().expect("learned");
        assert!((pt.in_flight() - 24.0).abs() < 0.1, "{}", pt.in_flight());
        assert!((pt.iops() - 2000.0).abs() < 10.0, "{}", pt.iops());
        assert!((pt.mean_latency_ns() - 12e6).abs() < 0.1e6);
        assert_eq!(bucket_of(pt.in_flight()), 5);
    }

    #[test]
    fn light_traffic_at_one_in_flight_stays_a_baseline_point() {
        // 100 requests of 2 ms: 20 % busy, one at a time while busy.
        let p = points_of(0, &rates(100.0, 0.2, 20.0, 4.0), None, None, None);
        let pt = p.learnable().next().expect("learned");
        assert!((pt.in_flight() - 1.0).abs() < 1e-9);
        assert_eq!(bucket_of(pt.in_flight()), 0);
        // A fully busy interval is taken whole.
        let p = points_of(0, &rates(500.0, 1.0, 97.0, 4.0), None, None, None);
        assert_eq!(p.as_slice()[0].interval_s, 1.0);
    }

    #[test]
    fn util_above_the_time_in_flight_is_bounded_by_it() {
        // 5,000 requests of 0.134 ms: 0.67 in flight on average, so at most 67 % busy; the
        // kernel's io_ticks read 90 % (vda, kernel 6.18). Taken at its word, the interval
        // would sit at 0.74 in flight, fewer than the one request a busy device holds, and
        // serve 5,556 IOPS while busy.
        let p = points_of(0, &rates(5000.0, 0.67, 90.0, 4.0), None, None, None);
        assert!((p.busy_share.unwrap() - 0.67).abs() < 1e-9);
        let pt = p.learnable().next().expect("learned");
        assert!((pt.in_flight() - 1.0).abs() < 1e-9, "{}", pt.in_flight());
        assert!((pt.iops() - 5000.0 / 0.67).abs() < 1.0, "{}", pt.iops());
        // Writes, discards and flushes hold the device too: the bound is all of them.
        let mut r = rates(5000.0, 0.67, 90.0, 4.0);
        r.write_concurrency = 0.2;
        r.aqu_sz = 0.87;
        let p = points_of(0, &r, None, None, None);
        assert!((p.busy_share.unwrap() - 0.87).abs() < 1e-9);
        // No time in flight from the source: util as it reads.
        let p = points_of(0, &rates(5000.0, 0.0, 90.0, 4.0), None, None, None);
        assert_eq!(p.busy_share, Some(0.9));
    }

    #[test]
    fn short_requests_are_placed_by_the_windows_not_by_io_ticks() {
        // 2,000 requests of 0.11 ms, one at a time, spread over the second (every window
        // 22 % busy at most): io_ticks read 2 % (vda, kernel 6.18), which would put the
        // interval at 11 in flight and leave it out as the ramp of a burst.
        let r = rates(2000.0, 0.22, 2.0, 4.0);
        assert_eq!(
            points_of(0, &r, None, None, None).left_out(Dir::Read),
            Some(LeftOut::Partial),
            "without windows: %util is all there is"
        );
        let p = points_of(0, &r, None, None, Some(0.22));
        let pt = p.learnable().next().expect("learned");
        assert!((pt.in_flight() - 1.0).abs() < 1e-9, "{}", pt.in_flight());
        assert_eq!(bucket_of(pt.in_flight()), 0);
        // The same requests in a burst that fills a third of the windows, 24 in flight: the
        // windows bound the busy share to a third, and the level is the burst's.
        let r = rates(72_000.0, 8.0, 2.0, 4.0);
        let p = points_of(0, &r, None, None, Some(1.0 / 3.0));
        let pt = p.learnable().next().expect("learned");
        assert!((pt.in_flight() - 24.0).abs() < 1e-6, "{}", pt.in_flight());
        // Requests long enough for io_ticks (12 ms): %util stands, whatever the windows say
        // (their time in flight is credited at completion: a window a long request spans
        // without completing gets none of it).
        let r = rates(667.0, 8.0, 33.3, 4.0);
        let p = points_of(0, &r, None, None, Some(0.5));
        assert!((p.busy_share.unwrap() - 0.333).abs() < 1e-9);
        let p = points_of(0, &r, None, None, Some(0.2));
        assert!((p.busy_share.unwrap() - 0.333).abs() < 1e-9);
        // Windows without time in flight (a source with none) are no bound.
        let p = points_of(0, &rates(100.0, 0.2, 20.0, 4.0), None, None, Some(0.0));
        assert!((p.busy_share.unwrap() - 0.2).abs() < 1e-9);
    }

    #[test]
    fn the_edge_of_a_burst_is_left_out_not_learned_low() {
        // 5 % busy at 24 in flight while busy: the ramps of a burst.
        let p = points_of(0, &rates(100.0, 1.2, 5.0, 4.0), None, None, None);
        assert_eq!(p.learnable().count(), 0);
        assert_eq!(p.left_out(Dir::Read), Some(LeftOut::Partial));
        assert_eq!(p.as_slice().len(), 1, "still judged");
        // Without io_ticks (util 0 with requests): taken whole, as before.
        let p = points_of(0, &rates(100.0, 1.2, 0.0, 4.0), None, None, None);
        assert_eq!(p.learnable().count(), 1);
        assert_eq!(p.busy_share, None);
        // ... but never below one in flight (0.2 on average: busy a fifth at most).
        let p = points_of(0, &rates(100.0, 0.2, 0.0, 4.0), None, None, None);
        assert_eq!(p.busy_share, Some(0.2));
        assert!((p.as_slice()[0].in_flight() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_mean_between_classes_is_mixed_and_merges_keep_their_class() {
        // 91 % 4 KiB and 9 % 64 KiB: a mean of 9.4 KiB is the small class's (4 KiB dominate).
        let p = points_of(0, &rates(500.0, 1.0, 100.0, 9.4), None, None, None);
        assert!(!p.mixed());
        assert_eq!(p.as_slice()[0].size_class(), SizeClass::Small);
        // 8 KiB merged to 8.05 KiB: still the 8 KiB class.
        let p = points_of(0, &rates(500.0, 1.0, 100.0, 8.05), None, None, None);
        assert_eq!(p.as_slice()[0].size_class(), SizeClass::Small);
        // Half 4 KiB, half 20 KiB: 12 KiB, between the classes.
        let p = points_of(0, &rates(500.0, 1.0, 100.0, 12.0), None, None, None);
        assert!(p.mixed());
        assert_eq!(p.learnable().count(), 0);
    }

    #[test]
    fn the_devices_own_time_rides_with_a_direction_mostly_split() {
        use crate::monitor::blklat::{OpLatency, OpSplit};
        let m = |split: u64| Measured {
            read: OpLatency {
                count: 100,
                ..OpLatency::default()
            },
            read_split: Some(OpSplit {
                count: split,
                device_mean_ms: Some(1.5),
                queue_share_pct: Some(10.0),
                ..OpSplit::default()
            }),
            ..Measured::default()
        };
        let r = rates(100.0, 0.2, 20.0, 4.0);
        let p = points_of(0, &r, Some(&m(100)), None, None);
        assert_eq!(p.as_slice()[0].device_ns, Some(1.5e6));
        // A handful split among many unstamped stands for nothing.
        let p = points_of(0, &r, Some(&m(10)), None, None);
        assert_eq!(p.as_slice()[0].device_ns, None);
        assert_eq!(
            points_of(0, &r, None, None, None).as_slice()[0].device_ns,
            None
        );
    }

    #[test]
    fn with_the_kernels_sizes_an_even_mix_is_a_point_per_class_at_the_devices_level() {
        // Half 4 KiB at 2 ms, half 20 KiB at 4 ms, one in flight: 333 requests a second
        // (1/3 ms mean), diskstats' in flight 1.0.
        let class = class_latency;
        let m = Measured {
            read_classes: Some(Box::new([
                class(0, 166, 4096.0, 2.0),
                class(1, 167, 20480.0, 4.0),
                ClassLatency::default(),
            ])),
            ..Measured::default()
        };
        let r = rates(333.0, 1.0, 100.0, 12.0);
        let p = points_of(0, &r, Some(&m), None, None);
        assert!(!p.mixed());
        let pts: Vec<&Point> = p.learnable().collect();
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[0].size_class(), SizeClass::Small);
        assert_eq!(pts[1].size_class(), SizeClass::Medium);
        for (pt, ms) in [(pts[0], 2.0), (pts[1], 4.0)] {
            // Its own latency (the kernel's, scaled to diskstats' time: here they agree
            // within a request), at the device's level, with its own p95.
            assert!(
                (pt.mean_latency_ns() / (ms * 1e6) - 1.0).abs() < 0.01,
                "{pt:?}"
            );
            assert!((pt.in_flight() - 1.0).abs() < 1e-9, "{pt:?}");
            assert_eq!(pt.pcts_ns.unwrap()[1], ms * 1.1e6);
        }
        // The requests and the time add up to the interval's.
        let n: f64 = pts.iter().map(|p| p.requests).sum();
        let t: f64 = pts.iter().map(|p| p.interval_s).sum();
        assert!((n - 333.0).abs() < 1e-6 && (t - 1.0).abs() < 1e-9);
        // The 4 KiB class at this level alone: 1 / 2 ms.
        assert!((pts[0].iops() - 500.0).abs() < 5.0, "{}", pts[0].iops());
        // Without the source: mixed, as before.
        assert!(points_of(0, &r, None, None, None).mixed());
        // A class below the share is dropped: 95 % 4 KiB, 5 % 20 KiB with a mixed-looking
        // mean is the 4 KiB class's alone.
        let m2 = Measured {
            read_classes: Some(Box::new([
                class(0, 95, 4096.0, 2.0),
                class(1, 5, 20480.0, 4.0),
                ClassLatency::default(),
            ])),
            ..Measured::default()
        };
        let p = points_of(0, &rates(100.0, 0.21, 21.0, 10.5), Some(&m2), None, None);
        assert_eq!(p.learnable().count(), 1);
        assert_eq!(p.as_slice()[0].size_class(), SizeClass::Small);
        // Classes covering too few of diskstats' requests: taken whole (mixed).
        let p = points_of(0, &rates(1000.0, 1.0, 100.0, 12.0), Some(&m), None, None);
        assert!(p.mixed());
    }

    #[test]
    fn a_buffer_written_over_keeps_nothing_of_the_interval_before() {
        // Both directions split by class, left out as partial, on busy CPUs: six points.
        let class = class_latency;
        let classes = || {
            Some(Box::new([
                class(0, 100, 4096.0, 2.0),
                class(1, 100, 20480.0, 4.0),
                class(2, 100, 262_144.0, 8.0),
            ]))
        };
        let m = Measured {
            read_classes: classes(),
            write_classes: classes(),
            ..Measured::default()
        };
        let mut r = rates(300.0, 1.4, 10.0, 95.0);
        r.w_s = 300.0;
        r.wkb_s = 300.0 * 95.0;
        r.write_concurrency = 1.4;
        let cpu = AvgCpu {
            user: 100.0,
            nice: 0.0,
            system: 0.0,
            iowait: 0.0,
            steal: 0.0,
            idle: 0.0,
        };
        let mut buf = points_of(0, &r, Some(&m), Some(&cpu), None);
        assert_eq!(buf.as_slice().len(), 6);
        assert_eq!(buf.learnable().count(), 0);
        assert!(buf.cpu_busy);
        // Then a write-only interval of mixed size, and one of no traffic.
        for r in [
            DiskRates {
                interval_s: 1.0,
                w_s: 500.0,
                wkb_s: 500.0 * 12.0,
                write_concurrency: 1.0,
                util_pct: 100.0,
                ..DiskRates::default()
            },
            DiskRates::default(),
        ] {
            points_into(&mut buf, 1, &r, None, None, None);
            let fresh = points_of(1, &r, None, None, None);
            assert_eq!(buf.as_slice(), fresh.as_slice());
            for dir in [Dir::Read, Dir::Write] {
                assert_eq!(buf.left_out(dir), fresh.left_out(dir));
            }
            assert_eq!(
                buf.mixed_dirs().collect::<Vec<_>>(),
                fresh.mixed_dirs().collect::<Vec<_>>()
            );
            assert_eq!(buf.learnable().count(), fresh.learnable().count());
            assert_eq!(
                (buf.cpu_busy, buf.busy_share),
                (fresh.cpu_busy, fresh.busy_share)
            );
        }
    }

    #[test]
    fn cpus_without_idle_time_mark_the_interval() {
        let c = |idle: f64, steal: f64| AvgCpu {
            user: 100.0 - idle - steal,
            nice: 0.0,
            system: 0.0,
            iowait: 0.0,
            steal,
            idle,
        };
        assert!(cpu_busy(Some(&c(1.0, 0.0))));
        assert!(cpu_busy(Some(&c(50.0, 20.0))));
        assert!(!cpu_busy(Some(&c(40.0, 1.0))));
        assert!(!cpu_busy(None));
    }
}
