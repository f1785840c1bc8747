//! What an open-loop run and each of its levels ask for: the rates (`--rate`: a list, `auto`,
//! or a `--target-p99` search), the pool of requests in flight and why that many, one level's
//! [`OpenSpec`] and its [`Schedule`] of intended starts in time. Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/, sys/.

use crate::load::schedule::Arrivals;
use crate::load::workload::Window;
use crate::load::LevelSpec;

/// The smallest pool of a level whose latency is not known yet (no closed loop ran, no open
/// level before it) and `--max-inflight` was not given ([`UNKNOWN`]).
pub const DEFAULT_MAX_INFLIGHT: u32 = 64;

/// The smallest and the largest pool Little's law sizes ([`little_pool`]). The smallest is the
/// old default: a latency measured by a closed loop or an earlier level hides how far an
/// offered load's queue can grow (at 75 % of four units' capacity, over 18 requests are in
/// flight 1 % of the time), and a slot or a thread of 64 costs little.
pub const MIN_POOL: u32 = DEFAULT_MAX_INFLIGHT;
pub const MAX_POOL: u32 = 512;

/// A request due this close to the level's end and not yet submitted when it ends is not
/// counted as unsent: a timer wake-up can take that long on a busy machine, and the requests
/// are still being offered at the rate (only the window closed).
pub const UNSENT_GRACE_NS: u64 = 5_000_000;

/// What one open-loop level asks for beyond its [`LevelSpec`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenSpec {
    /// Requests per second offered.
    pub rate_per_s: f64,
    pub arrivals: Arrivals,
    /// Threads in the pool, hence the most requests in flight.
    pub max_inflight: u32,
}

/// One level as a generator runs it (threads.rs, uring.rs): the file its requests go to, the
/// level, its schedule and the most requests in flight (threads of the pool, slots of the ring).
pub struct LevelRun<'a> {
    pub fd: std::os::fd::RawFd,
    pub size_bytes: u64,
    pub path: &'a std::path::Path,
    pub spec: &'a LevelSpec,
    pub schedule: &'a Schedule<'a>,
    pub max_inflight: u32,
}

/// A level's schedule in time: the intended starts (offsets from `origin_ns`) and the window.
pub struct Schedule<'a> {
    pub starts: &'a [u64],
    pub origin_ns: u64,
    pub window: Window,
}

/// What a level at a rate is expected to see: the mean latency and its tail (the longest
/// measured: a stall), in ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expected {
    pub mean_ns: f64,
    pub tail_ns: f64,
}

/// The pool a level needs to keep `rate_per_s` when each request takes `e.mean_ns` (Little's
/// law: λ·W requests are in flight on average): twice that (room for the latency to double
/// before the schedule slips) plus four standard deviations of a Poisson count of that mean
/// (arrivals come in bursts) plus four; and at least what arrives while one request takes
/// the tail latency (the same count at `e.tail_ns`): a fast disk's mean hides its stalls
/// (this machine's virtio disk: p50 0.08 ms, p99 3-6 ms, max 7-12 ms at 15,000-30,000/s
/// under other traffic), and a pool sized on the mean filled in each stall, 5-50 % of the
/// requests waiting for a slot (a pool of 64 at 15,000/s, measured 2026-11-28): not kept,
/// though the device carried the rate. Within [`MIN_POOL`]..[`MAX_POOL`].
pub fn little_pool(rate_per_s: f64, e: Expected) -> u32 {
    let count = |w_ns: f64| (rate_per_s * w_ns / 1e9).max(0.0);
    let (mean, tail) = (count(e.mean_ns), count(e.tail_ns));
    let n = (2.0 * mean + 4.0 * mean.sqrt() + 4.0).max(tail + 4.0 * tail.sqrt() + 4.0);
    (n.ceil().min(f64::from(MAX_POOL)) as u32).clamp(MIN_POOL, MAX_POOL)
}

/// What a level is expected to see when nothing was measured before it (`--rate` without a
/// closed loop, its first level): a mean of 1 ms and a stall of 10 ms, the longest this
/// machine's virtio disk gave under other traffic (max 7-12 ms at 15,000-30,000/s). At a few
/// thousand a second that is the old default pool; at 13,000/s a pool of 64 filled in the
/// stalls (665 of 13,000 requests waited for a slot: not kept), this one is 180.
pub const UNKNOWN: Expected = Expected {
    mean_ns: 1e6,
    tail_ns: 10e6,
};

/// The pool of the next level: `--max-inflight` when given; else [`little_pool`] at the
/// rate with the expected latency (the closed loop's at that throughput, or the longest an
/// earlier open level measured), its stall at least [`UNKNOWN`]'s (an earlier level's
/// longest latency understates the next one's: `--rate` at 10, 25 and 50 % of this disk's
/// maximum, sized from the level before, kept the first two and filled a pool of 170-320 at
/// 50 %, where `--rate auto` with 512 slots kept it); else at [`UNKNOWN`].
pub fn pool_for(asked: Option<u32>, rate_per_s: f64, expected: Option<Expected>) -> u32 {
    match (asked, expected) {
        (Some(n), _) => n,
        (None, Some(e)) if e.mean_ns > 0.0 => {
            let tail_ns = e.tail_ns.max(UNKNOWN.tail_ns);
            little_pool(rate_per_s, Expected { tail_ns, ..e })
        }
        (None, _) => little_pool(rate_per_s, UNKNOWN),
    }
}

/// The sentence for the report's notes that says how the pool was sized.
pub fn pool_words(asked: Option<u32>) -> String {
    match asked {
        Some(n) => format!("open loop: at most {n} requests in flight (--max-inflight)"),
        None => format!(
            "open loop: the pool sized per level by Little's law, twice the offered rate times \
             the expected latency plus room for bursts, and at least the arrivals during one \
             request's longest latency (10 ms at least), {MIN_POOL}-{MAX_POOL}; \
             --max-inflight sets it"
        ),
    }
}

/// The level spec of an open-loop level: one request per thread of the pool.
pub fn level_spec(plan: &crate::load::driver::SweepPlan, open: &OpenSpec, idx: usize) -> LevelSpec {
    LevelSpec {
        threads: open.max_inflight.max(1),
        queue_depth: 1,
        pattern: plan.pattern,
        block_size: plan.block_size,
        ramp_ns: plan.ramp_ns,
        duration_ns: plan.duration_ns,
        seed: plan.seed.wrapping_add(0x6f70_656e).wrapping_add(idx as u64),
    }
}

/// Which rates an open-loop run offers.
#[derive(Debug, Clone, PartialEq)]
pub enum Rates {
    /// Requests per second, in the order given.
    List(Vec<f64>),
    /// [`AUTO_SHARES`] of the maximum a closed-loop pass measured first.
    Auto,
    /// `--target-p99`: searched level by level (analysis::open::search_next).
    Search,
}

/// `--rate auto`: these shares of the closed loop's maximum: two well below the knee, one
/// near it, the maximum itself and one beyond it (which must show as not kept). The pool of
/// each is sized from the closed loop's latency at that throughput ([`pool_for`]), so the
/// levels the device can carry are not cut short by the pool.
pub const AUTO_SHARES: [f64; 5] = [0.25, 0.5, 0.8, 1.0, 1.2];

/// An open-loop run, validated (config/sweep.rs builds it).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenPlan {
    pub rates: Rates,
    /// `--rate` as given, for the report.
    pub rates_text: String,
    pub arrivals: Arrivals,
    /// `--max-inflight`, when given ([`pool_for`]).
    pub max_inflight: Option<u32>,
    /// Run the closed-loop levels first (`--levels` given, `--rate auto`, a target).
    pub closed_first: bool,
    /// `--target-p99` / `--target`: the latency target the search is for.
    pub target: Option<crate::analysis::open::Target>,
}

impl OpenPlan {
    /// The rates to offer, given the closed loop's maximum when one was measured; empty for
    /// `auto` without one.
    pub fn rates(&self, closed_max_iops: Option<f64>) -> Vec<f64> {
        match (&self.rates, closed_max_iops) {
            (Rates::List(v), _) => v.clone(),
            (Rates::Auto, Some(m)) if m > 0.0 => AUTO_SHARES.iter().map(|s| s * m).collect(),
            (Rates::Auto | Rates::Search, _) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_carries_the_rate_at_the_expected_latency() {
        let at = |mean_ms: f64, tail_ms: f64| Expected {
            mean_ns: mean_ms * 1e6,
            tail_ns: tail_ms * 1e6,
        };
        // 42,000/s at 0.1 ms: 4.2 in flight on average: 8.4 + 8.2 + 4, the floor.
        assert_eq!(little_pool(42_000.0, at(0.1, 0.2)), MIN_POOL);
        // 160,000/s at 0.8 ms (a disk's maximum at 128 in flight): 128 in flight.
        assert_eq!(little_pool(160_000.0, at(0.8, 1.0)), 306);
        // 40,000/s at 1 ms: 40 in flight: 80 + 25.3 + 4.
        assert_eq!(little_pool(40_000.0, at(1.0, 1.5)), 110);
        // 30,000/s at 0.12 ms with stalls of 5 ms: 150 arrive in one: 150 + 49 + 4.
        assert_eq!(little_pool(30_000.0, at(0.12, 5.0)), 203);
        assert_eq!(little_pool(10.0, at(0.001, 0.001)), MIN_POOL);
        assert_eq!(little_pool(1e9, at(1e3, 1e3)), MAX_POOL);
        assert_eq!(pool_for(Some(8), 1e6, Some(at(1.0, 1.0))), 8);
        // A stall of at least 10 ms is carried: 21,600/s from a level whose longest was 5 ms.
        assert_eq!(pool_for(None, 21_600.0, Some(at(0.1, 5.0))), 279);
        assert_eq!(pool_for(None, 2_000.0, None), DEFAULT_MAX_INFLIGHT);
        assert_eq!(pool_for(None, 13_000.0, None), 180);
    }
}
