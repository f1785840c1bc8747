//! The one vocabulary and the one headroom every view uses (stat, top, the exporter, the
//! shipped rules and alerts): a device's state from the ratio of its current latency to its
//! baseline, and the requests per second that can still be added. Defined once here so that
//! no two views call the same interval by two names. Pure.
//! Imports only: analysis/.

use serde::{Deserialize, Serialize};

/// At and above this ratio to the baseline, latency grows with load: at or past the knee.
/// Why 1.5: seed 000's table reads 1.07x at the knee's edge and 3.6x well past it; half again
/// the single-request latency is well above the noise of a quiet device (a few %) and the
/// first place where the extra requests visibly queue.
pub const SATURATED_RATIO: f64 = 1.5;

/// At and above this ratio: overloaded, seed 001's rule (p95 above 3x the concurrency-1 p95),
/// the same point the sweep calls its overload point.
pub const OVERLOADED_RATIO: f64 = crate::analysis::OVERLOAD_P95_FACTOR;

/// A device's (or a direction's) state in an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// No I/O in the interval.
    Idle,
    /// No baseline to judge against yet.
    Unknown,
    /// Latency below 1.5x the baseline.
    Ok,
    /// 1.5x to 3x: at or past the knee, latency grows with load.
    Saturated,
    /// 3x and more: seed 001's overload.
    Overloaded,
}

impl State {
    /// `ratio` = current p95 ÷ baseline p95 (or mean ÷ baseline mean without percentiles);
    /// None: no baseline.
    pub fn of_ratio(ratio: Option<f64>) -> State {
        match ratio {
            None => State::Unknown,
            Some(r) if r >= OVERLOADED_RATIO => State::Overloaded,
            Some(r) if r >= SATURATED_RATIO => State::Saturated,
            Some(_) => State::Ok,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Unknown => "unknown",
            State::Ok => "ok",
            State::Saturated => "saturated",
            State::Overloaded => "overloaded",
        }
    }

    /// The numeric value of the exporter's state gauge (0 idle … 4 overloaded; unknown is
    /// -1 so that alerts on `>= 3` never fire on it).
    pub fn gauge(self) -> i32 {
        match self {
            State::Unknown => -1,
            State::Idle => 0,
            State::Ok => 1,
            State::Saturated => 2,
            State::Overloaded => 3,
        }
    }

    /// The state of a device from its directions': the worst judged one (a judged direction
    /// outranks an unknown one; idle only when all are).
    pub fn worst(states: impl IntoIterator<Item = State>) -> State {
        states.into_iter().max().unwrap_or(State::Idle)
    }
}

/// The latency a device may reach before it counts as overloaded: a user's target p95
/// (`--target-p95`), else 3x the baseline p95.
pub fn target_latency_ns(baseline_p95_ns: f64, user_target_ns: Option<f64>) -> f64 {
    user_target_ns.unwrap_or(baseline_p95_ns * OVERLOADED_RATIO)
}

/// Requests per second that can be added before the target is reached: the most IOPS the
/// curve served within the target minus the current IOPS, never below zero (an overloaded
/// device has none to add; its state says by how much it is over).
pub fn headroom_iops(max_iops_within_target: f64, current_iops: f64) -> f64 {
    (max_iops_within_target - current_iops).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_by_ratio() {
        assert_eq!(State::of_ratio(None), State::Unknown);
        assert_eq!(State::of_ratio(Some(1.0)), State::Ok);
        assert_eq!(State::of_ratio(Some(1.49)), State::Ok);
        assert_eq!(State::of_ratio(Some(1.5)), State::Saturated);
        assert_eq!(State::of_ratio(Some(2.99)), State::Saturated);
        assert_eq!(State::of_ratio(Some(3.0)), State::Overloaded);
        assert_eq!(
            State::worst([State::Ok, State::Unknown, State::Idle]),
            State::Ok
        );
        assert_eq!(State::worst([State::Idle, State::Unknown]), State::Unknown);
        assert_eq!(State::worst([]), State::Idle);
        assert_eq!(State::Overloaded.as_str(), "overloaded");
    }

    #[test]
    fn headroom_is_never_negative() {
        assert_eq!(headroom_iops(100_000.0, 73_000.0), 27_000.0);
        assert_eq!(headroom_iops(1000.0, 2000.0), 0.0);
        assert_eq!(target_latency_ns(1e6, None), 3e6);
        assert_eq!(target_latency_ns(1e6, Some(2e6)), 2e6);
    }
}
