//! What an open-loop run and each of its levels ask for: the rates (`--rate`: a list, `auto`,
//! or a `--target-p99` search), the pool of requests in flight and why that many, one level's
//! [`OpenSpec`] and its [`Schedule`] of intended starts in time. Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/, sys/.

use crate::load::schedule::Arrivals;
use crate::load::workload::Window;
use crate::load::LevelSpec;

/// The requests an open-loop level may keep in flight when neither `--max-inflight` nor a
/// closed-loop knee says otherwise.
pub const DEFAULT_MAX_INFLIGHT: u32 = 64;

/// With a closed-loop pass, the pool is this many times its knee (at least
/// [`MIN_KNEE_POOL`]): past the knee, more requests in flight only queue, so four times it
/// keeps any schedule the device can keep, and a schedule it cannot keep shows as lateness
/// instead of an ever-growing pool.
pub const KNEE_POOL_FACTOR: u32 = 4;
/// The smallest pool a knee gives.
pub const MIN_KNEE_POOL: u32 = 16;

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

/// A level's schedule in time: the intended starts (offsets from `origin_ns`) and the window.
pub struct Schedule<'a> {
    pub starts: &'a [u64],
    pub origin_ns: u64,
    pub window: Window,
}

/// The pool for a run: `--max-inflight` when given, else [`KNEE_POOL_FACTOR`] × the closed
/// loop's knee (at least [`MIN_KNEE_POOL`]) when a closed-loop pass found one, else
/// [`DEFAULT_MAX_INFLIGHT`]; and the sentence that says which, for the report's notes.
pub fn pool_size(asked: Option<u32>, knee: Option<u32>) -> (u32, String) {
    match (asked, knee) {
        (Some(n), _) => (
            n,
            format!("open loop: at most {n} requests in flight (--max-inflight)"),
        ),
        (None, Some(k)) => {
            let n = (k.saturating_mul(KNEE_POOL_FACTOR)).max(MIN_KNEE_POOL);
            (
                n,
                format!(
                    "open loop: at most {n} requests in flight ({KNEE_POOL_FACTOR}x the closed \
                     loop's knee of {k}; --max-inflight sets it)"
                ),
            )
        }
        (None, None) => (
            DEFAULT_MAX_INFLIGHT,
            format!(
                "open loop: at most {DEFAULT_MAX_INFLIGHT} requests in flight (the default; \
                 --max-inflight sets it)"
            ),
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
/// near it, the maximum itself and one beyond it (which must show as not kept).
pub const AUTO_SHARES: [f64; 5] = [0.25, 0.5, 0.8, 1.0, 1.2];

/// An open-loop run, validated (config/sweep.rs builds it).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenPlan {
    pub rates: Rates,
    /// `--rate` as given, for the report.
    pub rates_text: String,
    pub arrivals: Arrivals,
    /// `--max-inflight`, when given ([`pool_size`]).
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
