//! Queue or device (issue 40): from one direction's split of an interval's latency into the
//! time requests waited in the kernel's queue and the time the device held them, and the
//! device's baseline (its mean latency alone, at one in flight, where nothing queues), which
//! of the two makes the latency: "too many requests wait for a healthy device" or "the device
//! itself is slow". A finding with its numbers, or nothing when the interval can't say.
//!
//! Pure.
//! Imports only: analysis/.

use super::state::State;

/// Split requests an interval needs before its split is judged: the queue's share of fewer
/// swings with a handful of requests (one 20 ms straggler among 20 moves the share by tens of
/// percent).
pub const MIN_SPLIT_REQUESTS: u64 = 50;
/// The queue's share of the latency from which waiting in the kernel is what makes it.
pub const QUEUE_DOMINANT_PCT: f64 = 50.0;
/// A device time up to this multiple of the baseline is the device answering as it does
/// alone: the saturation table's 1.5x (docs/design.md §4) is the first step where queueing
/// shows, so the device's own time below it has not grown.
pub const DEVICE_HEALTHY_RATIO: f64 = 1.5;
/// A device time from this multiple of the baseline is a slow device (the state machine's
/// saturated ratio, 1.5x, doubled: past it no run-to-run noise of a healthy device reaches).
pub const DEVICE_SLOW_RATIO: f64 = 2.0;
/// The queue's share below which queueing is not what makes a slow device's latency.
pub const QUEUE_MINOR_PCT: f64 = 25.0;

/// One direction's interval, as the verdict needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplitFacts {
    /// "read" or "write".
    pub dir: &'static str,
    /// The direction's judged state in the interval.
    pub state: State,
    /// Requests split into queue and device time.
    pub count: u64,
    /// Σ queue ÷ Σ (queue + device), in %.
    pub queue_share_pct: f64,
    /// The mean device time, ns.
    pub device_mean_ns: f64,
    /// The baseline's mean latency at one in flight, ns (swept or learned).
    pub baseline_ns: Option<f64>,
}

/// What the split says of a direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// Most of the latency is waiting in the kernel; the device answers as it does alone.
    Queue,
    /// The device itself is slow, with little queueing.
    Device,
    /// Both add to it.
    Both,
}

/// The device time ÷ the baseline (None without a baseline).
pub fn device_ratio(f: &SplitFacts) -> Option<f64> {
    f.baseline_ns
        .filter(|b| *b > 0.0)
        .map(|b| f.device_mean_ns / b)
}

/// The finding, or None: too few requests, a direction judged fine (nothing to explain), or
/// no baseline to judge the device's own time against while the queue does not dominate.
pub fn finding(f: &SplitFacts) -> Option<Finding> {
    if f.count < MIN_SPLIT_REQUESTS {
        return None;
    }
    let ratio = device_ratio(f);
    if ratio.is_some_and(|r| r >= DEVICE_SLOW_RATIO) {
        return Some(if f.queue_share_pct < QUEUE_MINOR_PCT {
            Finding::Device
        } else {
            Finding::Both
        });
    }
    let judged_bad = matches!(f.state, State::Saturated | State::Overloaded | State::Slow);
    if judged_bad && f.queue_share_pct >= QUEUE_DOMINANT_PCT {
        return match ratio {
            Some(r) if r > DEVICE_HEALTHY_RATIO => Some(Finding::Both),
            _ => Some(Finding::Queue),
        };
    }
    None
}

/// The finding in words, with its numbers.
pub fn sentence(f: &SplitFacts) -> Option<String> {
    let share = f.queue_share_pct;
    let ratio = device_ratio(f);
    let at = |r: f64| format!("{r:.1}x its baseline");
    Some(match (finding(f)?, ratio) {
        (Finding::Queue, Some(r)) => format!(
            "{} {} — {share:.0} % of the latency is waiting in the kernel's queue; the device \
             itself answers at {}: it is not slow, too many requests wait for it",
            f.dir,
            f.state.as_str(),
            at(r)
        ),
        (Finding::Queue, None) => format!(
            "{} {} — {share:.0} % of the latency is waiting in the kernel's queue (no baseline \
             to judge the device's own time by)",
            f.dir,
            f.state.as_str()
        ),
        (Finding::Device, Some(r)) => format!(
            "{}: the device itself is at {} with {share:.0} % queueing: the device is slow \
             (garbage collection, a cap below the block layer, a failing disk)",
            f.dir,
            at(r)
        ),
        (Finding::Both, Some(r)) => format!(
            "{}: {share:.0} % of the latency is waiting in the kernel's queue and the device \
             itself is at {}: both the queue and the device make it",
            f.dir,
            at(r)
        ),
        (_, None) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(
        state: State,
        count: u64,
        share: f64,
        dev_ms: f64,
        base_ms: Option<f64>,
    ) -> SplitFacts {
        SplitFacts {
            dir: "read",
            state,
            count,
            queue_share_pct: share,
            device_mean_ns: dev_ms * 1e6,
            baseline_ns: base_ms.map(|b| b * 1e6),
        }
    }

    #[test]
    fn the_queue_or_the_device_is_named_and_nothing_without_grounds() {
        // The two cases.
        let q = facts(State::Saturated, 500, 78.0, 2.2, Some(2.0));
        assert_eq!(finding(&q), Some(Finding::Queue));
        let s = sentence(&q).unwrap();
        assert!(
            s.starts_with("read saturated — 78 % of the latency is waiting"),
            "{s}"
        );
        assert!(
            s.contains("answers at 1.1x its baseline: it is not slow"),
            "{s}"
        );
        let d = facts(State::Overloaded, 500, 5.0, 8.0, Some(2.0));
        assert_eq!(finding(&d), Some(Finding::Device));
        let s = sentence(&d).unwrap();
        assert!(
            s.contains("itself is at 4.0x its baseline with 5 % queueing"),
            "{s}"
        );
        assert!(s.contains("the device is slow"), "{s}");
        // Both at once; a queue with no baseline says only what it knows.
        assert_eq!(
            finding(&facts(State::Overloaded, 500, 60.0, 8.0, Some(2.0))),
            Some(Finding::Both)
        );
        assert_eq!(
            finding(&facts(State::Overloaded, 500, 60.0, 3.5, Some(2.0))),
            Some(Finding::Both)
        );
        let nb = sentence(&facts(State::Saturated, 500, 90.0, 2.0, None)).unwrap();
        assert!(nb.contains("(no baseline"), "{nb}");
        // Too few requests, a direction judged fine, a slow device with no baseline: nothing.
        assert_eq!(
            finding(&facts(State::Saturated, 49, 90.0, 2.0, Some(2.0))),
            None
        );
        assert_eq!(finding(&facts(State::Ok, 500, 90.0, 2.0, Some(2.0))), None);
        assert_eq!(finding(&facts(State::Unknown, 500, 5.0, 8.0, None)), None);
        assert_eq!(
            sentence(&facts(State::Overloaded, 500, 5.0, 8.0, None)),
            None
        );
        // The edges are the constants'.
        let edge = facts(State::Ok, 500, QUEUE_MINOR_PCT - 0.1, 4.0, Some(2.0));
        assert_eq!(finding(&edge), Some(Finding::Device));
        let edge = facts(State::Ok, 500, QUEUE_MINOR_PCT, 4.0, Some(2.0));
        assert_eq!(finding(&edge), Some(Finding::Both));
    }
}
