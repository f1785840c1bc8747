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
    /// The baseline's own device time at one in flight, ns, where the sweep or learning
    /// measured the split: what the device time is judged against first (at one in flight
    /// the queue is short but not nothing, a scheduler's pass, a tag's wait).
    pub device_baseline_ns: Option<f64>,
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

/// The device time ÷ the baseline's device time, else ÷ the baseline's whole latency (None
/// without a baseline).
pub fn device_ratio(f: &SplitFacts) -> Option<f64> {
    f.device_baseline_ns
        .filter(|b| *b > 0.0)
        .or(f.baseline_ns.filter(|b| *b > 0.0))
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

/// One direction's split over a run of intervals (a recording): the queue's share of all the
/// split requests' latency, the device's own time, and how many intervals each finding had.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunSplit {
    /// "read" or "write".
    pub dir: String,
    /// Requests split into queue and device time, over the run.
    pub requests: u64,
    /// Intervals with split requests.
    pub intervals: usize,
    /// Σ queue ÷ Σ (queue + device) over every split request of the run, in %.
    pub queue_share_pct: f64,
    /// The device's own mean time over the run, ms.
    pub device_mean_ms: f64,
    /// The device's p95 in the median interval and in the worst, ms (None: no interval had
    /// one).
    pub device_p95_ms_median: Option<f64>,
    pub device_p95_ms_max: Option<f64>,
    /// The device's own mean time ÷ the baseline, in the interval judged worst by it (None
    /// without a baseline).
    pub device_ratio_max: Option<f64>,
    /// Intervals whose finding was the queue, the device, or both (analysis::split::finding).
    pub queue_intervals: usize,
    pub device_intervals: usize,
    pub both_intervals: usize,
    /// The sentence of the latest interval with the run's most frequent finding.
    pub example: Option<String>,
}

/// Builds a [`RunSplit`] one interval at a time.
#[derive(Debug, Default)]
pub struct RunSplitAcc {
    run: RunSplit,
    queue_ns: f64,
    device_ns: f64,
    p95s: Vec<f64>,
    /// The latest sentence per finding (queue, device, both).
    examples: [Option<String>; 3],
}

impl RunSplitAcc {
    pub fn new(dir: &str) -> RunSplitAcc {
        RunSplitAcc {
            run: RunSplit {
                dir: dir.to_string(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// One interval's facts and its device p95 (ms).
    pub fn add(&mut self, f: &SplitFacts, device_p95_ms: Option<f64>) {
        if f.count == 0 {
            return;
        }
        let r = &mut self.run;
        r.requests += f.count;
        r.intervals += 1;
        let total = f.device_mean_ns * f.count as f64;
        // share = q ÷ (q + d), so q = d × share ÷ (1 − share); a share of 100 % leaves the
        // device nothing, and its queue time cannot be recovered from the share: the interval
        // adds its device time only (it cannot happen with a device time above 0).
        let share = f.queue_share_pct / 100.0;
        self.device_ns += total;
        if share < 1.0 {
            self.queue_ns += total * share / (1.0 - share);
        }
        self.p95s.extend(device_p95_ms.filter(|v| v.is_finite()));
        if let Some(ratio) = device_ratio(f) {
            r.device_ratio_max = Some(r.device_ratio_max.map_or(ratio, |m| m.max(ratio)));
        }
        let i = match finding(f) {
            Some(Finding::Queue) => 0,
            Some(Finding::Device) => 1,
            Some(Finding::Both) => 2,
            None => return,
        };
        *[
            &mut r.queue_intervals,
            &mut r.device_intervals,
            &mut r.both_intervals,
        ][i] += 1;
        if let Some(s) = sentence(f) {
            self.examples[i] = Some(s);
        }
    }

    /// The run, or None without a split request.
    pub fn finish(mut self) -> Option<RunSplit> {
        if self.run.requests == 0 {
            return None;
        }
        let r = &mut self.run;
        let both = self.queue_ns + self.device_ns;
        r.queue_share_pct = if both > 0.0 {
            self.queue_ns / both * 100.0
        } else {
            0.0
        };
        r.device_mean_ms = self.device_ns / r.requests as f64 / 1e6;
        self.p95s.sort_by(f64::total_cmp);
        r.device_p95_ms_median = self.p95s.get(self.p95s.len() / 2).copied();
        r.device_p95_ms_max = self.p95s.last().copied();
        let counts = [r.queue_intervals, r.device_intervals, r.both_intervals];
        let most = (0..3).filter(|&i| counts[i] > 0).max_by_key(|&i| counts[i]);
        r.example = most.and_then(|i| self.examples[i].take());
        Some(self.run)
    }
}

impl RunSplit {
    /// The run in words: the share, the device's own time, the intervals by finding and one
    /// interval's verdict.
    pub fn words(&self) -> String {
        let p95 = match (self.device_p95_ms_median, self.device_p95_ms_max) {
            (Some(m), Some(x)) => {
                format!(", p95 {m:.2} ms in the median interval and {x:.2} ms at worst")
            }
            _ => String::new(),
        };
        let ratio = self
            .device_ratio_max
            .map_or(" (no baseline to judge it by)".to_string(), |r| {
                format!(", at most {r:.1}x its baseline")
            });
        let mut s = format!(
            "{}: {:.0} % of the latency of {} split requests was waiting in the kernel's \
             queue; the device's own time: mean {:.2} ms{p95}{ratio}",
            self.dir, self.queue_share_pct, self.requests, self.device_mean_ms
        );
        let n = self.queue_intervals + self.device_intervals + self.both_intervals;
        if n == 0 {
            s.push_str(&format!(
                ". No interval of {} had a finding (too few requests, or nothing to explain).",
                self.intervals
            ));
        } else {
            s.push_str(&format!(
                ". Of {} intervals, {} queueing, {} a slow device, {} both",
                self.intervals, self.queue_intervals, self.device_intervals, self.both_intervals
            ));
            match &self.example {
                Some(e) => s.push_str(&format!("; the latest such: {e}.")),
                None => s.push('.'),
            }
        }
        s
    }
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
            device_baseline_ns: None,
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
        // The device's own baseline, where measured, before the whole latency's: a device
        // at 2.2 ms against a 2.0 ms baseline whose device time was 1.0 ms is at 2.2x, slow.
        let mut own = facts(State::Overloaded, 500, 5.0, 2.2, Some(2.0));
        assert_eq!(finding(&own), None);
        own.device_baseline_ns = Some(1e6);
        assert!((device_ratio(&own).unwrap() - 2.2).abs() < 1e-9);
        assert_eq!(finding(&own), Some(Finding::Device));
        // A run: 10 queued intervals and 2 of a slow device; the shares weighted by the
        // latency, not averaged per interval.
        let mut acc = RunSplitAcc::new("read");
        for _ in 0..10 {
            acc.add(
                &facts(State::Saturated, 500, 80.0, 2.0, Some(2.0)),
                Some(2.1),
            );
        }
        for _ in 0..2 {
            acc.add(
                &facts(State::Overloaded, 500, 5.0, 8.0, Some(2.0)),
                Some(9.0),
            );
        }
        acc.add(&facts(State::Ok, 0, 0.0, 0.0, Some(2.0)), None);
        let run = acc.finish().unwrap();
        assert_eq!((run.requests, run.intervals), (6000, 12));
        assert_eq!(
            (
                run.queue_intervals,
                run.device_intervals,
                run.both_intervals
            ),
            (10, 2, 0)
        );
        // Queue: 10 × 500 × 8 ms + 2 × 500 × 0.421 ms; device: 10 × 500 × 2 + 2 × 500 × 8.
        let q = 10.0 * 500.0 * 8.0 + 2.0 * 500.0 * 8.0 * 5.0 / 95.0;
        let d = 10.0 * 500.0 * 2.0 + 2.0 * 500.0 * 8.0;
        assert!(
            (run.queue_share_pct - q / (q + d) * 100.0).abs() < 1e-9,
            "{run:?}"
        );
        assert!((run.device_mean_ms - d / 6000.0).abs() < 1e-9);
        assert_eq!(
            (run.device_p95_ms_median, run.device_p95_ms_max),
            (Some(2.1), Some(9.0))
        );
        assert_eq!(run.device_ratio_max, Some(4.0));
        let w = run.words();
        assert!(
            w.starts_with("read: 69 % of the latency of 6000 split requests"),
            "{w}"
        );
        assert!(w.contains("10 queueing, 2 a slow device, 0 both"), "{w}");
        assert!(w.contains("the latest such: read saturated — 80 %"), "{w}");
        assert!(RunSplitAcc::new("write").finish().is_none());
        // The edges are the constants'.
        let edge = facts(State::Ok, 500, QUEUE_MINOR_PCT - 0.1, 4.0, Some(2.0));
        assert_eq!(finding(&edge), Some(Finding::Device));
        let edge = facts(State::Ok, 500, QUEUE_MINOR_PCT, 4.0, Some(2.0));
        assert_eq!(finding(&edge), Some(Finding::Both));
    }
}
