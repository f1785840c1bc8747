//! How one interval of a device becomes points of the learned curve (issue 37): judged by what
//! happened while the device was busy, not averaged over the interval.
//!
//! - **Busy time.** An interval whose busy time (io_ticks, %util) is a fraction u of it held
//!   its requests while busy, not spread over it: its in-flight level is the weighted time over
//!   the busy time (Δtime ÷ (u·Δt)), and its IOPS the requests over the busy time. The point is
//!   the interval's busy part (its idle part, split off, teaches nothing): a burst of 24 in
//!   flight that covers a third of an interval is a point at 24, never a low-concurrency one.
//!   Below [`MIN_BUSY_SHARE`] busy, a level above one request cannot be told from the edges of
//!   a burst and the interval is left out of the curve (still judged).
//! - **Mixed sizes.** Without per-request sizes only the mean is known: a mean between two
//!   size classes (not within a merge's tolerance of either side's sizes) is two classes each
//!   with a real share. Such an interval is marked mixed: neither learned into nor judged
//!   against one class's curve. Class edges tolerate merges (model::SizeClass::of).
//! - **CPU noise.** An interval whose CPUs had no idle time left, or lost time to steal, may
//!   have latency the machine's own CPU wait explains (a completion waits for a CPU to be
//!   noticed): it is marked [`Points::cpu_busy`]; the learner keeps it out of the baseline's
//!   level when its latency there is also above the baseline's band (learn/mod.rs). A busy
//!   machine alone is no reason: a host whose compilers keep the CPUs busy still learns.
//!
//! Pure.
//! Imports only: learn/model.rs, monitor/, sys/sched.rs.

use super::model::{bucket_of, Dir, Point, SizeClass};
use crate::monitor::blklat::{Measured, OpLatency};
use crate::monitor::DiskRates;
use crate::sys::sched::AvgCpu;

/// At and above this busy share an interval is busy throughout (io_ticks advance in jiffies:
/// a fully busy interval reads 95–100 %); below it, the busy part is split off.
pub const FULL_BUSY_SHARE: f64 = 0.95;
/// Below this busy share an interval's level above one in flight is left out: a quarter of a
/// second of a 1 s interval is mostly the ramps of a burst.
pub const MIN_BUSY_SHARE: f64 = 0.25;
/// CPUs with less than this share idle (idle + iowait), or more than this share stolen, make
/// an interval's latency the machine's as much as the device's.
pub const CPU_BUSY_SHARE: f64 = 0.05;
pub const CPU_STEAL_SHARE: f64 = 0.10;

/// Why an interval (or one direction of it) is not learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftOut {
    /// Busy for too little of the interval to place its level.
    Partial,
    /// Its mean request size lies between two classes.
    Mixed,
}

/// The points of one interval of a device, on the stack (no allocation per device and
/// interval), with what the interval says of itself.
#[derive(Debug, Clone, Copy)]
pub struct Points {
    pts: [Point; 2],
    n: usize,
    /// Each point's reason to be left out of the curve, if any.
    left_out: [Option<LeftOut>; 2],
    /// The machine's CPUs explain the interval's latency: not learned into the baseline.
    pub cpu_busy: bool,
    /// The interval's busy share (None: the source has no io_ticks).
    pub busy_share: Option<f64>,
}

impl Points {
    pub fn as_slice(&self) -> &[Point] {
        &self.pts[..self.n]
    }

    /// The points to learn from: those not left out.
    pub fn learnable(&self) -> impl Iterator<Item = &Point> {
        self.as_slice()
            .iter()
            .zip(self.left_out)
            .filter(|(_, why)| why.is_none())
            .map(|(p, _)| p)
    }

    /// Why the point of `dir` is left out, if it is.
    pub fn left_out(&self, dir: Dir) -> Option<LeftOut> {
        let i = self.as_slice().iter().position(|p| p.dir == dir)?;
        self.left_out[i]
    }

    /// The points to learn from, as points: those not left out.
    pub fn to_learn(&self) -> Points {
        let mut out = Points {
            n: 0,
            left_out: [None; 2],
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
        self.as_slice()
            .iter()
            .zip(self.left_out)
            .filter(|(_, why)| *why == Some(LeftOut::Mixed))
            .map(|(p, _)| p.dir)
    }

    /// Some direction's requests are of mixed size classes.
    pub fn mixed(&self) -> bool {
        self.left_out[..self.n].contains(&Some(LeftOut::Mixed))
    }
}

/// Whether the interval's CPUs explain its latency (see [`CPU_BUSY_SHARE`]).
pub fn cpu_busy(cpu: Option<&AvgCpu>) -> bool {
    cpu.is_some_and(|c| {
        c.idle + c.iowait < CPU_BUSY_SHARE * 100.0 || c.steal > CPU_STEAL_SHARE * 100.0
    })
}

/// The points of one device's interval: reads and writes (discards and flushes are other
/// work and are not learned), each its busy part. `lat` from the block-latency source, when
/// it measured; `cpu` the interval's avg-cpu, when read.
pub fn points_of(
    wall_ns: i64,
    r: &DiskRates,
    lat: Option<&Measured>,
    cpu: Option<&AvgCpu>,
) -> Points {
    let pcts = |o: &OpLatency| Some([o.p50_ms? * 1e6, o.p95_ms? * 1e6, o.p99_ms? * 1e6]);
    let dt = r.interval_s;
    // The busy share: None when the source has none (util 0 with requests completed: no
    // io_ticks, as on some virtual devices), and then the interval is taken whole.
    let any = r.r_s + r.w_s > 0.0;
    let busy_share =
        (r.util_pct.is_finite() && r.util_pct > 0.0 && any).then(|| (r.util_pct / 100.0).min(1.0));
    let busy_s = match busy_share {
        Some(u) if u < FULL_BUSY_SHARE => dt * u,
        _ => dt,
    };
    let empty = Point {
        dir: Dir::Read,
        wall_ns,
        interval_s: busy_s,
        requests: 0.0,
        busy_ms: 0.0,
        bytes: 0.0,
        pcts_ns: None,
    };
    let mut out = Points {
        pts: [empty; 2],
        n: 0,
        left_out: [None; 2],
        cpu_busy: cpu_busy(cpu),
        busy_share,
    };
    for (dir, per_s, conc, kb_s, pcts_ns) in [
        (
            Dir::Read,
            r.r_s,
            r.read_concurrency,
            r.rkb_s,
            lat.and_then(|m| pcts(&m.read)),
        ),
        (
            Dir::Write,
            r.w_s,
            r.write_concurrency,
            r.wkb_s,
            lat.and_then(|m| pcts(&m.write)),
        ),
    ] {
        let p = Point {
            dir,
            wall_ns,
            // The busy part: requests, their time in flight and bytes all fell in it.
            interval_s: busy_s,
            requests: per_s * dt,
            busy_ms: conc * dt * 1e3,
            bytes: kb_s * 1024.0 * dt,
            pcts_ns,
        };
        if !p.usable() {
            continue;
        }
        let partial =
            busy_share.is_some_and(|u| u < MIN_BUSY_SHARE) && bucket_of(p.in_flight()) > 0;
        let mixed = SizeClass::mixed(p.bytes / p.requests);
        out.left_out[out.n] = if mixed {
            Some(LeftOut::Mixed)
        } else if partial {
            Some(LeftOut::Partial)
        } else {
            None
        };
        out.pts[out.n] = p;
        out.n += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let p = points_of(0, &rates(667.0, 8.0, 33.3, 4.0), None, None);
        let pt = p.learnable().next().expect("learned");
        assert!((pt.in_flight() - 24.0).abs() < 0.1, "{}", pt.in_flight());
        assert!((pt.iops() - 2000.0).abs() < 10.0, "{}", pt.iops());
        assert!((pt.mean_latency_ns() - 12e6).abs() < 0.1e6);
        assert_eq!(bucket_of(pt.in_flight()), 5);
    }

    #[test]
    fn light_traffic_at_one_in_flight_stays_a_baseline_point() {
        // 100 requests of 2 ms: 20 % busy, one at a time while busy.
        let p = points_of(0, &rates(100.0, 0.2, 20.0, 4.0), None, None);
        let pt = p.learnable().next().expect("learned");
        assert!((pt.in_flight() - 1.0).abs() < 1e-9);
        assert_eq!(bucket_of(pt.in_flight()), 0);
        // A fully busy interval is taken whole.
        let p = points_of(0, &rates(500.0, 1.0, 97.0, 4.0), None, None);
        assert_eq!(p.as_slice()[0].interval_s, 1.0);
    }

    #[test]
    fn the_edge_of_a_burst_is_left_out_not_learned_low() {
        // 5 % busy at 24 in flight while busy: the ramps of a burst.
        let p = points_of(0, &rates(100.0, 1.2, 5.0, 4.0), None, None);
        assert_eq!(p.learnable().count(), 0);
        assert_eq!(p.left_out(Dir::Read), Some(LeftOut::Partial));
        assert_eq!(p.as_slice().len(), 1, "still judged");
        // Without io_ticks (util 0 with requests): taken whole, as before.
        let p = points_of(0, &rates(100.0, 1.2, 0.0, 4.0), None, None);
        assert_eq!(p.learnable().count(), 1);
        assert_eq!(p.busy_share, None);
    }

    #[test]
    fn a_mean_between_classes_is_mixed_and_merges_keep_their_class() {
        // 91 % 4 KiB and 9 % 64 KiB: a mean of 9.4 KiB is the small class's (4 KiB dominate).
        let p = points_of(0, &rates(500.0, 1.0, 100.0, 9.4), None, None);
        assert!(!p.mixed());
        assert_eq!(p.as_slice()[0].size_class(), SizeClass::Small);
        // 8 KiB merged to 8.05 KiB: still the 8 KiB class.
        let p = points_of(0, &rates(500.0, 1.0, 100.0, 8.05), None, None);
        assert_eq!(p.as_slice()[0].size_class(), SizeClass::Small);
        // Half 4 KiB, half 20 KiB: 12 KiB, between the classes.
        let p = points_of(0, &rates(500.0, 1.0, 100.0, 12.0), None, None);
        assert!(p.mixed());
        assert_eq!(p.learnable().count(), 0);
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
