//! A change of the device is news, not something to learn (issue 37): the baseline moves only
//! on evidence. An interval at the baseline's own level (about one in flight) whose mean
//! latency is [`CHANGE_RATIO`] or more away from the baseline's, either way, is evidence of a
//! change, not a point: it is held out of the model, and so is every interval while evidence is
//! pending, and the old baseline keeps judging (a device slowed from 2 to 8 ms reads
//! overloaded). After [`REPORT_AFTER`] such intervals in a row the change is reported (when,
//! from what, to what, on how many intervals); after [`CONFIRM_AFTER`] it is confirmed: the
//! device is another one now and its learning starts again. An interval back within the band
//! ends the evidence. Pure.
//! Imports only: learn/model.rs.

use super::model::Point;
use serde::{Deserialize, Serialize};

/// A latency at the baseline's level this many times the baseline's (or this many times
/// below it) is a step, not the scatter of a device at one in flight (a few tens of % with
/// mixed requests and background flushes; the in-flight bucket of a baseline, up to 1.5, adds
/// at most half again).
pub const CHANGE_RATIO: f64 = 2.0;
/// Intervals in a row (5 s at 1 s) before a change is reported: one slow interval is noise.
pub const REPORT_AFTER: u32 = 5;
/// Intervals of evidence (2 minutes at 1 s intervals at the baseline's level) before the
/// change is confirmed and learning starts again: the horizon over which the old baseline
/// keeps judging.
pub const CONFIRM_AFTER: u32 = 120;

/// A detected change of the device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The end of the first interval of evidence (wall clock, ns).
    pub since_wall_ns: i64,
    /// The baseline's mean latency before.
    pub from_ns: f64,
    /// The evidence's mean latency (request-weighted).
    pub to_ns: f64,
    /// Intervals of evidence at the baseline's level.
    pub intervals: u32,
    /// Confirmed (after [`CONFIRM_AFTER`] intervals): learning started again.
    pub confirmed: bool,
}

impl Change {
    pub fn words(&self) -> String {
        format!(
            "device changed: {} at one in flight, was {} ({} intervals{})",
            fmt_ms(self.to_ns),
            fmt_ms(self.from_ns),
            self.intervals,
            if self.confirmed {
                "; confirmed, learning again"
            } else {
                "; judged by the old baseline until confirmed"
            }
        )
    }
}

fn fmt_ms(ns: f64) -> String {
    format!("{:.2} ms", ns / 1e6)
}

/// What the watch says of one interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing against learning it.
    Learn,
    /// Evidence of a change is pending: the interval is held out of the model.
    Hold,
    /// The change is confirmed now: start learning again from this interval.
    Restart,
}

/// The evidence of one device, fed its intervals.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    pending: Option<Change>,
    requests: f64,
    busy_ms: f64,
    /// The last change reported (confirmed, or given up when the device came back).
    last: Option<Change>,
}

impl Watch {
    /// One interval: `at_level` its point at the baseline's level (about one in flight, with
    /// the baseline's direction and size class), if it has one; `baseline_ns` the mean latency
    /// of the baseline it is judged by (None: no baseline, nothing to change from).
    pub fn observe(
        &mut self,
        wall_ns: i64,
        at_level: Option<&Point>,
        baseline_ns: Option<f64>,
    ) -> Verdict {
        let (Some(p), Some(base)) = (at_level, baseline_ns) else {
            // No evidence either way: held while a change is pending.
            return if self.pending.is_some() {
                Verdict::Hold
            } else {
                Verdict::Learn
            };
        };
        let ratio = p.mean_latency_ns() / base;
        if ratio < CHANGE_RATIO && ratio > 1.0 / CHANGE_RATIO {
            // Back within the band: the evidence ends.
            self.pending = None;
            (self.requests, self.busy_ms) = (0.0, 0.0);
            return Verdict::Learn;
        }
        self.requests += p.requests;
        self.busy_ms += p.busy_ms;
        let to_ns = self.busy_ms * 1e6 / self.requests;
        let c = self.pending.get_or_insert(Change {
            since_wall_ns: wall_ns,
            from_ns: base,
            to_ns,
            intervals: 0,
            confirmed: false,
        });
        c.intervals += 1;
        c.to_ns = to_ns;
        if c.intervals >= CONFIRM_AFTER {
            let mut done = self.pending.take().expect("pending");
            done.confirmed = true;
            self.last = Some(done);
            (self.requests, self.busy_ms) = (0.0, 0.0);
            return Verdict::Restart;
        }
        Verdict::Hold
    }

    /// The change to report: pending after [`REPORT_AFTER`] intervals, else the last confirmed.
    pub fn change(&self) -> Option<&Change> {
        self.pending
            .as_ref()
            .filter(|c| c.intervals >= REPORT_AFTER)
            .or(self.last.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::model::Dir;

    fn at(lat_ms: f64) -> Point {
        let requests = 1000.0 / lat_ms;
        Point {
            dir: Dir::Read,
            wall_ns: 0,
            interval_s: 1.0,
            requests,
            busy_ms: requests * lat_ms,
            bytes: requests * 4096.0,
            pcts_ns: None,
        }
    }

    #[test]
    fn a_step_is_held_reported_then_confirmed() {
        let mut w = Watch::default();
        let base = Some(2.0e6);
        assert_eq!(w.observe(0, Some(&at(2.3)), base), Verdict::Learn);
        for i in 1..REPORT_AFTER {
            assert_eq!(w.observe(i as i64, Some(&at(8.0)), base), Verdict::Hold);
            assert!(w.change().is_none(), "one slow interval is not news");
        }
        // Intervals at other levels are held while the evidence is pending.
        assert_eq!(w.observe(99, None, base), Verdict::Hold);
        assert_eq!(w.observe(5, Some(&at(8.0)), base), Verdict::Hold);
        let c = w.change().expect("reported").clone();
        assert_eq!(
            (c.since_wall_ns, c.intervals, c.confirmed),
            (1, REPORT_AFTER, false)
        );
        assert!((c.to_ns / 8e6 - 1.0).abs() < 1e-9 && c.from_ns == 2e6);
        assert!(c.words().contains("8.00 ms") && c.words().contains("until confirmed"));
        let mut last = Verdict::Hold;
        for i in REPORT_AFTER..CONFIRM_AFTER {
            last = w.observe(i as i64, Some(&at(8.0)), base);
        }
        assert_eq!(last, Verdict::Restart);
        assert!(w.change().unwrap().confirmed);
    }

    #[test]
    fn back_within_the_band_the_evidence_ends() {
        let mut w = Watch::default();
        let base = Some(2.0e6);
        for i in 0..10 {
            w.observe(i, Some(&at(0.5)), base);
        }
        assert!(w.change().is_some(), "faster is a change too");
        assert_eq!(w.observe(10, Some(&at(2.5)), base), Verdict::Learn);
        assert!(w.change().is_none());
        assert_eq!(
            w.observe(11, Some(&at(8.0)), None),
            Verdict::Learn,
            "no baseline"
        );
    }
}
