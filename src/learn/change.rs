//! A change of the device is news, not something to learn (issue 37): the baseline moves only
//! on evidence. An interval at the baseline's own level (about one in flight) whose mean
//! latency is [`CHANGE_RATIO`] or more away from the baseline's, either way (and at least
//! [`CHANGE_MIN_NS`]), is evidence of a change, not a point: it is held out of the model, and
//! the old baseline keeps judging (a device slowed from 2 to 8 ms reads overloaded). After
//! [`REPORT_AFTER_S`] of such intervals in a row (intervals at other levels between them neither
//! break nor extend the run) the change is reported (when, from what, to what, on how many
//! intervals), and from then on every interval is held; after [`CONFIRM_AFTER_S`] it is
//! confirmed: the device is another one now and its learning starts again. An interval back
//! within the band ends the evidence. A device judged by an estimate (never about one in
//! flight) is watched the same way at the level its estimate came from ([`Level`]). Pure.
//! Imports only: learn/model.rs, analysis/text.rs, analysis/state.rs.

use super::model::{Dir, Point};
use serde::{Deserialize, Serialize};

/// The step a change is (analysis::state: the diagnosis of an iostat log takes it too).
pub use crate::analysis::state::{CHANGE_MIN_NS, CHANGE_RATIO};
/// Seconds of evidence in a row (busy time at the baseline's level) before a change is
/// reported: one slow interval, or a second of a busy machine, is noise. In seconds, not
/// intervals, so that `-i 0.1` and `-i 1` report alike.
pub const REPORT_AFTER_S: f64 = 5.0;
/// Seconds of evidence (2 minutes) before the change is confirmed and learning starts again:
/// the horizon over which the old baseline keeps judging.
pub const CONFIRM_AFTER_S: f64 = 120.0;

/// Seconds a confirmed change stays reported after its confirmation (an hour): news for
/// whoever looks at the device that hour, in every view; then history, and the device is
/// judged by what was learned since, unflagged (a flag that never goes says nothing).
pub const REPORTED_FOR_S: f64 = 3600.0;

/// A detected change of the device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The direction whose baseline it is (the evidence's first point's).
    pub dir: Dir,
    /// The end of the first interval of evidence (wall clock, ns).
    pub since_wall_ns: i64,
    /// The baseline's mean latency before.
    pub from_ns: f64,
    /// The evidence's mean latency (request-weighted).
    pub to_ns: f64,
    /// Intervals of evidence at the baseline's level.
    pub intervals: u32,
    /// Their busy seconds.
    pub seconds: f64,
    /// Confirmed (after [`CONFIRM_AFTER_S`]): learning started again.
    pub confirmed: bool,
    /// When it was confirmed (wall clock, ns): reported until [`REPORTED_FOR_S`] after.
    #[serde(default)]
    pub confirmed_wall_ns: Option<i64>,
    /// The requests in flight of the level watched, where it is not about one (a device
    /// judged by an estimate from its lowest level, [`Level`]); None: about one in flight.
    #[serde(default)]
    pub in_flight: Option<f64>,
}

impl Change {
    /// The change in words; `relearned`: the learning started again at its confirmation
    /// judges by a curve (or an estimate) of its own now.
    pub fn words(&self, relearned: bool) -> String {
        // By hand (no core::fmt): a pending change's words are made again in each interval
        // that adds evidence, for every device that changed.
        let mut s = String::with_capacity(120);
        s.push_str("device changed: ");
        push_ms(&mut s, self.to_ns);
        match self.in_flight {
            Some(c) => {
                s.push_str(" at ");
                crate::analysis::text::fixed_into(&mut s, c, 1);
                s.push_str(" in flight, was ");
            }
            None => s.push_str(" at one in flight, was "),
        }
        push_ms(&mut s, self.from_ns);
        s.push_str(" (");
        s.push_str(itoa::Buffer::new().format(self.intervals));
        s.push_str(" intervals");
        s.push_str(match (self.confirmed, relearned) {
            (true, true) => "; confirmed, learned again since",
            (true, false) => "; confirmed, learning again",
            (false, _) => "; judged by the old baseline until confirmed",
        });
        s.push(')');
        s
    }
}

/// `{:.2} ms` by [`fixed_into`](crate::analysis::text::fixed_into): the same digits without
/// core::fmt's slow exact path, which every whole figure takes (a change's words and a swept
/// profile's disagreement, each made anew in every interval that adds evidence).
pub(super) fn push_ms(s: &mut String, ns: f64) {
    crate::analysis::text::fixed_into(s, ns / 1e6, 2);
    s.push_str(" ms");
}

/// What the watch says of one interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing against learning it.
    Learn,
    /// Evidence of a change, or any interval once a change is reported: held out of the
    /// model.
    Hold,
    /// The change is confirmed now: start learning again from this interval.
    Restart,
}

/// The evidence of one device, fed its intervals.
#[derive(Debug, Clone)]
pub struct Watch {
    pending: Option<Change>,
    requests: f64,
    busy_ms: f64,
    /// The last change reported (confirmed, or given up when the device came back).
    last: Option<Change>,
    /// After [`CONFIRM_AFTER_S`] the change is confirmed and learning starts again; a watch
    /// against a swept profile ([`Watch::against_profile`]) never confirms: the profile
    /// stays what it is, and disagrees for as long as the evidence lasts.
    confirms: bool,
}

impl Default for Watch {
    fn default() -> Watch {
        Watch {
            pending: None,
            requests: 0.0,
            busy_ms: 0.0,
            last: None,
            confirms: true,
        }
    }
}

/// The level a device's change is watched at, and its latency there: the baseline's (about
/// one in flight), else, for a device judged by an estimate because its traffic never came
/// down to about one in flight, the lowest level the estimate came from (learn/estimate.rs).
/// A step there is a step of the device as much as at one in flight: at the same requests in
/// flight a closed loop's latency is c·S/U past the units and S below them, so twice the
/// latency at the same level is twice the service time (or half the units).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    /// The in-flight bucket (model::bucket_of).
    pub bucket: usize,
    /// The mean latency learned there.
    pub latency_ns: f64,
    /// The mean in flight learned there; None at the baseline's level (about one).
    pub in_flight: Option<f64>,
}

impl Level {
    /// The baseline's level (about one in flight), at `latency_ns`: a learned baseline's or a
    /// swept profile's.
    pub fn at_one(latency_ns: f64) -> Level {
        Level {
            bucket: 0,
            latency_ns,
            in_flight: None,
        }
    }

    /// The latency band an interval at `in_flight` keeps within when the device is the same:
    /// at the baseline's level the latency learned; at an estimate's, the latency scaled by
    /// the interval's in-flight against the level's where that is further out (within one
    /// bucket the in-flight varies up to 2x, and past the units the latency with it), so that
    /// only a step of the device, not a move within the bucket, is evidence.
    fn band_ns(&self, in_flight: f64) -> [f64; 2] {
        match self.in_flight {
            Some(c) if c > 0.0 => {
                let f = in_flight / c;
                [self.latency_ns * f.min(1.0), self.latency_ns * f.max(1.0)]
            }
            _ => [self.latency_ns; 2],
        }
    }

    /// Whether `p` (a point at this level) is at least `ratio` times the level's latency
    /// past its band ([`Level::band_ns`]): at the baseline's level its mean latency against
    /// the baseline's, at an estimate's against the band's upper end at `p`'s in-flight.
    pub fn slower(&self, p: &Point, ratio: f64) -> bool {
        p.mean_latency_ns() >= ratio * self.band_ns(p.in_flight())[1]
    }
}

impl Watch {
    /// One interval: `at_level` its point at the watched level (the baseline's, about one in
    /// flight, or an estimate's, [`Level`]; with the curve's direction and size class), if it
    /// has one; `level` the level of the curve it is judged by (None: no baseline or
    /// estimate, nothing to change from).
    pub fn observe(
        &mut self,
        wall_ns: i64,
        at_level: Option<&Point>,
        level: Option<Level>,
    ) -> Verdict {
        let (Some(p), Some(level)) = (at_level, level) else {
            // No evidence either way: held once a change is reported.
            return if self.change_pending() {
                Verdict::Hold
            } else {
                Verdict::Learn
            };
        };
        let [lo, hi] = level.band_ns(p.in_flight());
        let lat = p.mean_latency_ns();
        let base = level.latency_ns;
        let small = (lat - base).abs() < CHANGE_MIN_NS;
        if small || (lat < CHANGE_RATIO * hi && lat > lo / CHANGE_RATIO) {
            // Back within the band: the evidence ends.
            self.pending = None;
            (self.requests, self.busy_ms) = (0.0, 0.0);
            return Verdict::Learn;
        }
        self.requests += p.requests;
        self.busy_ms += p.busy_ms;
        let to_ns = self.busy_ms * 1e6 / self.requests;
        let c = self.pending.get_or_insert(Change {
            dir: p.dir,
            since_wall_ns: wall_ns,
            from_ns: base,
            to_ns,
            intervals: 0,
            seconds: 0.0,
            confirmed: false,
            confirmed_wall_ns: None,
            in_flight: level.in_flight,
        });
        c.intervals += 1;
        c.seconds += p.interval_s;
        c.to_ns = to_ns;
        if self.confirms && c.seconds >= CONFIRM_AFTER_S {
            let mut done = self.pending.take().expect("pending");
            done.confirmed = true;
            done.confirmed_wall_ns = Some(wall_ns);
            self.last = Some(done);
            (self.requests, self.busy_ms) = (0.0, 0.0);
            return Verdict::Restart;
        }
        Verdict::Hold
    }

    /// A watch of the traffic against a swept profile's baseline: the same evidence, never
    /// confirmed (see [`Watch::disagreement`]).
    pub fn against_profile() -> Watch {
        Watch {
            confirms: false,
            ..Watch::default()
        }
    }

    /// What a watch [`Watch::against_profile`] reports: the evidence while it lasts (after
    /// [`REPORT_AFTER_S`]), nothing once the traffic is back within the band.
    pub fn disagreement(&self) -> Option<&Change> {
        self.pending
            .as_ref()
            .filter(|c| c.seconds >= REPORT_AFTER_S)
    }

    /// A change is reported and not yet confirmed.
    fn change_pending(&self) -> bool {
        self.pending
            .as_ref()
            .is_some_and(|c| c.seconds >= REPORT_AFTER_S)
    }

    /// The last confirmed change is history once [`REPORTED_FOR_S`] have passed since its
    /// confirmation (`wall_ns`: now): no longer reported. True when it was dropped now.
    pub fn expire(&mut self, wall_ns: i64) -> bool {
        let old = self.last.as_ref().is_some_and(|c| {
            c.confirmed_wall_ns
                .is_some_and(|t| (wall_ns - t) as f64 >= REPORTED_FOR_S * 1e9)
        });
        if old {
            self.last = None;
        }
        old
    }

    /// The change to report: pending after [`REPORT_AFTER_S`], else the last confirmed.
    pub fn change(&self) -> Option<&Change> {
        self.pending
            .as_ref()
            .filter(|c| c.seconds >= REPORT_AFTER_S)
            .or(self.last.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::model::Dir;

    /// The words written by hand are core::fmt's `{:.2} ms` and `{}` for every figure,
    /// confirmation and relearning.
    #[test]
    fn a_changes_words_are_the_formatters() {
        for (to, from) in [
            (4e6, 1e6),
            (2_345_678.9, 995.0),
            (0.004, 12e9),
            (1e6 / 3.0, 7.5e5),
        ] {
            for intervals in [1, 5, 120, 4_000_000] {
                for (confirmed, relearned) in [(false, false), (true, false), (true, true)] {
                    let c = Change {
                        dir: Dir::Read,
                        since_wall_ns: 0,
                        from_ns: from,
                        to_ns: to,
                        intervals,
                        seconds: 1.0,
                        confirmed,
                        confirmed_wall_ns: None,
                        in_flight: None,
                    };
                    let tail = match (confirmed, relearned) {
                        (true, true) => "; confirmed, learned again since",
                        (true, false) => "; confirmed, learning again",
                        (false, _) => "; judged by the old baseline until confirmed",
                    };
                    let want = format!(
                        "device changed: {:.2} ms at one in flight, was {:.2} ms ({intervals} \
                         intervals{tail})",
                        to / 1e6,
                        from / 1e6
                    );
                    assert_eq!(c.words(relearned), want);
                }
            }
        }
    }

    /// The baseline's level, about one in flight, at `ns`.
    fn one(ns: f64) -> Option<Level> {
        Some(Level::at_one(ns))
    }

    fn at(lat_ms: f64) -> Point {
        at_in_flight(1.0, lat_ms)
    }

    /// A second at `in_flight` requests in flight, `lat_ms` each.
    fn at_in_flight(in_flight: f64, lat_ms: f64) -> Point {
        let requests = 1000.0 * in_flight / lat_ms;
        Point {
            dir: Dir::Read,
            wall_ns: 0,
            interval_s: 1.0,
            whole_s: 1.0,
            requests,
            busy_ms: requests * lat_ms,
            bytes: requests * 4096.0,
            pcts_ns: None,
            device_ns: None,
            other_requests: 0.0,
        }
    }

    #[test]
    fn a_step_is_held_reported_then_confirmed() {
        let mut w = Watch::default();
        let base = one(2.0e6);
        assert_eq!(w.observe(0, Some(&at(2.3)), base), Verdict::Learn);
        let report_after = REPORT_AFTER_S as i64;
        for i in 1..report_after {
            assert_eq!(w.observe(i, Some(&at(8.0)), base), Verdict::Hold);
            assert!(w.change().is_none(), "one slow interval is not news");
        }
        // Before the change is reported, intervals at other levels are learned (one noisy
        // interval does not stop learning); after, they are held.
        assert_eq!(w.observe(99, None, base), Verdict::Learn);
        assert_eq!(w.observe(5, Some(&at(8.0)), base), Verdict::Hold);
        assert_eq!(w.observe(99, None, base), Verdict::Hold);
        let c = w.change().expect("reported").clone();
        assert_eq!((c.since_wall_ns, c.intervals, c.confirmed), (1, 5, false));
        assert!((c.to_ns / 8e6 - 1.0).abs() < 1e-9 && c.from_ns == 2e6);
        assert!(c.words(false).contains("8.00 ms") && c.words(true).contains("until confirmed"));
        let mut last = Verdict::Hold;
        for i in report_after..CONFIRM_AFTER_S as i64 {
            last = w.observe(i, Some(&at(8.0)), base);
        }
        assert_eq!(last, Verdict::Restart);
        assert!(w.change().unwrap().confirmed);
    }

    #[test]
    fn a_profile_watch_reports_while_the_evidence_lasts_and_never_confirms() {
        let mut w = Watch::against_profile();
        let base = one(2.0e6);
        for i in 0..(CONFIRM_AFTER_S as i64 + 10) {
            assert_eq!(w.observe(i, Some(&at(8.0)), base), Verdict::Hold);
        }
        let c = w.disagreement().expect("reported");
        assert!(!c.confirmed && c.from_ns == 2e6 && (c.to_ns / 8e6 - 1.0).abs() < 1e-9);
        w.observe(200, Some(&at(2.2)), base);
        assert!(w.disagreement().is_none(), "back within the band");
    }

    #[test]
    fn back_within_the_band_the_evidence_ends() {
        let mut w = Watch::default();
        let base = one(2.0e6);
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

    /// An estimate's level (2 in flight, 4 ms): a move within its bucket is no evidence, at
    /// either end (past the units the latency goes with the in-flight); a step of the device
    /// at the same level is, and its words name the level.
    #[test]
    fn at_an_estimates_level_a_step_is_evidence_and_a_move_within_the_bucket_is_not() {
        let level = Some(Level {
            bucket: 1,
            latency_ns: 4e6,
            in_flight: Some(2.0),
        });
        let mut w = Watch::default();
        for (i, (c, ms)) in [(2.9, 5.8), (1.5, 3.0), (2.9, 7.9), (1.5, 1.6)]
            .into_iter()
            .enumerate()
        {
            let v = w.observe(i as i64, Some(&at_in_flight(c, ms)), level);
            assert_eq!(v, Verdict::Learn, "{c} in flight at {ms} ms");
        }
        for (i, (c, ms)) in [(2.0, 16.0), (2.9, 24.0), (1.5, 1.4)]
            .into_iter()
            .enumerate()
        {
            let mut w = Watch::default();
            let v = w.observe(i as i64, Some(&at_in_flight(c, ms)), level);
            assert_eq!(v, Verdict::Hold, "{c} in flight at {ms} ms");
        }
        let mut w = Watch::default();
        for i in 0..REPORT_AFTER_S as i64 {
            w.observe(i, Some(&at_in_flight(2.0, 16.0)), level);
        }
        let c = w.change().expect("reported");
        assert_eq!(c.in_flight, Some(2.0));
        assert!(
            c.words(false)
                .starts_with("device changed: 16.00 ms at 2.0 in flight, was 4.00 ms"),
            "{}",
            c.words(false)
        );
    }
}
