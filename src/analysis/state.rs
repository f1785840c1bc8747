//! The one judgement of a device in an interval, and its vocabulary: the direction (read,
//! write), the state (idle, unknown, ok, slow but not loaded, saturated, overloaded) from the
//! ratio of the current latency to the baseline, the basis that baseline came from (a swept
//! profile, else the curve learned from traffic), and the requests per second that can still
//! be added. Every view (stat, top, the recording page, analyze, the exporter) and the shipped
//! rules and alerts use these words and this one rule; the monitor builds the inputs per device
//! row (monitor/judge.rs), learning fills its part (learn/). Pure.
//! Imports only: analysis/.

use super::text::{fixed, fixed_into};
use serde::{Deserialize, Serialize};

/// At and above this ratio to the baseline, latency grows with load: at or past the knee.
/// Why 1.5: seed 000's table reads 1.07x at the knee's edge and 3.6x well past it; half again
/// the single-request latency is well above the noise of a quiet device (a few %) and the
/// first place where the extra requests visibly queue.
pub const SATURATED_RATIO: f64 = 1.5;

/// At and above this ratio: overloaded, seed 001's rule (p95 above 3x the concurrency-1 p95),
/// the same point the sweep calls its overload point.
pub const OVERLOADED_RATIO: f64 = super::OVERLOAD_P95_FACTOR;

/// Queueing explains a mean latency up to this many times the baseline per request in flight
/// while busy (Little's law: C requests in flight on a device that serves one per baseline
/// latency wait about C baselines); the 2 is for noise and requests a little larger than the
/// baseline's. The shipped rules' `device_op:iosat_disk_loaded:bool1m` is the same test.
pub const LOADED_FACTOR: f64 = 2.0;

/// A change of the device (learn/change.rs, and the iostat-style diagnosis of
/// analysis::device): a latency at the baseline's level this many times the baseline's (or this many times
/// below it) is a step, not the scatter of a device at one in flight (a few tens of % with
/// mixed requests and background flushes; the in-flight bucket of a baseline, up to 1.5, adds
/// at most half again).
pub const CHANGE_RATIO: f64 = 2.0;
/// A step smaller than this is the scatter of a fast device's wake-ups on a busy machine (a
/// 0.09 ms loop device's intervals reach 0.2 ms), not a change.
pub const CHANGE_MIN_NS: f64 = 0.2e6;
/// Requests in flight while the device was busy: aqu-sz over the busy share (%util), aqu-sz
/// when no busy time was counted (the shipped rules' `device:iosat_disk_concurrency_busy`). The
/// one formula of `stat`'s judgement (monitor::judge) and the iostat-style diagnosis
/// (analysis::device).
pub fn in_flight_while_busy(aqu_sz: f64, util_pct: f64) -> f64 {
    if util_pct > 0.0 {
        aqu_sz * 100.0 / util_pct
    } else {
        aqu_sz
    }
}

/// Whether a mean latency of `mean_ratio` times the baseline is more than queueing explains at
/// `in_flight_busy` requests in flight while busy ([`LOADED_FACTOR`]): the device itself is
/// slower, not loaded. The one rule of [`State::Slow`] ([`DirJudgement::judge_against`], and
/// the iostat-style diagnosis of analysis::device).
pub fn slower_than_its_load(mean_ratio: f64, in_flight_busy: f64) -> bool {
    mean_ratio > LOADED_FACTOR * in_flight_busy.max(1.0)
}

/// A direction of I/O: the one direction type of profiles' judgements, learning and every view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    Read,
    Write,
}

impl Dir {
    pub const ALL: [Dir; 2] = [Dir::Read, Dir::Write];

    pub fn as_str(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
        }
    }
}

/// A device's (or a direction's) state in an interval, from the least to the most urgent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// No I/O in the interval.
    Idle,
    /// No baseline to judge against yet, or no value in the interval.
    Unknown,
    /// Latency below 1.5x the baseline.
    Ok,
    /// 1.5x the baseline and more, but more than the requests in flight explain (Little's
    /// law): not load but a slow device (throttled, failing, shared) or one stalled request.
    /// The alerts' "slow but not loaded".
    Slow,
    /// 1.5x to 3x: at or past the knee, latency grows with load.
    Saturated,
    /// 3x and more: seed 001's overload.
    Overloaded,
}

impl State {
    /// Every state, in the order the exporter lists them.
    pub const ALL: [State; 6] = [
        State::Idle,
        State::Unknown,
        State::Ok,
        State::Slow,
        State::Saturated,
        State::Overloaded,
    ];

    /// `ratio` = current p95 ÷ baseline p95 (or mean ÷ baseline mean without percentiles);
    /// None: no baseline. Load is not looked at: see [`DirJudgement::judge_against`] for "slow".
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
            State::Slow => "slow",
            State::Saturated => "saturated",
            State::Overloaded => "overloaded",
        }
    }

    /// The words a person reads ("slow but not loaded" for [`State::Slow`]).
    pub fn words(self) -> &'static str {
        match self {
            State::Slow => "slow but not loaded",
            s => s.as_str(),
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
/// curve served within the target minus the current IOPS, never below zero, in whole
/// requests rounded down. The ceiling is the most IOPS intervals served, the current IOPS a
/// rate over one interval, each uncertain by far more than a request a second: a fraction of
/// one ("300.0055432561029") is a precision the figure does not have, and rounding down
/// never promises a request the ceiling does not hold.
pub fn headroom_iops(max_iops_within_target: f64, current_iops: f64) -> f64 {
    let h = (max_iops_within_target - current_iops).max(0.0);
    // Rounded down by the conversion through i64 (an instruction each way, where floor is a
    // call into libm on x86-64's baseline and u64's take several), below 10^15; past that (or
    // NaN) as it is.
    if h < 1e15 {
        h as i64 as f64
    } else {
        h
    }
}

/// The headroom of a direction with no I/O in the interval: all of its ceiling, by
/// [`headroom_iops`]'s rule (whole requests, rounded down) as any other headroom.
pub fn idle_headroom(ceiling: Option<f64>) -> Option<f64> {
    ceiling.map(|c| headroom_iops(c, 0.0))
}

/// What a direction's baseline rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// A saved profile (`iosat sweep --save-profile`): it takes precedence.
    Swept,
    /// The curve learned from the device's own traffic, its baseline measured at about one
    /// request in flight.
    Learned,
    /// Learned, but the baseline is an estimate from higher levels (see [`Estimate`]).
    LearnedEstimate,
    /// No baseline: not judged.
    #[default]
    None,
}

impl Basis {
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Swept => "swept",
            Basis::Learned => "learned",
            Basis::LearnedEstimate => "learned_estimate",
            Basis::None => "none",
        }
    }
}

/// A learned baseline that is not measured at about one request in flight: estimated from
/// the lowest level the traffic reached, with its interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The requests in flight the estimate comes from.
    pub from_level: f64,
    /// 95 % interval of the estimated baseline latency.
    pub interval_ns: Option<[f64; 2]>,
}

impl super::shared::Json for Estimate {}

/// A detected change of the device: its latency at the baseline's own level moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// When the change was first seen (wall clock).
    pub at_wall_ns: i64,
    /// The baseline latency before and after (for a device judged by an estimate, the
    /// latency at the estimate's level before and after: the evidence names the level).
    pub from_ns: f64,
    pub to_ns: f64,
    /// What shows it, in words.
    pub evidence: String,
    /// Confirmed: learning started again after it, so what judges now was learned of the
    /// device as it is (a swept profile's disagreement is never confirmed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirmed: bool,
}

/// The change as its derived `Serialize` writes it with serde_json (keys in order, the same
/// omission), by hand: a pending change's evidence counts its intervals, so each changed
/// device's change is a new value in every interval, and serde escaping its keys and words
/// one byte at a time was most of what such a device cost `stat --json` (issue 37).
impl super::shared::Json for Change {
    fn to_json(&self) -> String {
        // Every field named (no `..`): a field added here must be written here too.
        let Change {
            at_wall_ns,
            from_ns,
            to_ns,
            evidence,
            confirmed,
        } = self;
        let mut out = Vec::with_capacity(96 + evidence.len());
        out.extend_from_slice(b"{\"at_wall_ns\":");
        out.extend_from_slice(itoa::Buffer::new().format(*at_wall_ns).as_bytes());
        out.extend_from_slice(b",\"from_ns\":");
        json_value(&mut out, from_ns);
        out.extend_from_slice(b",\"to_ns\":");
        json_value(&mut out, to_ns);
        out.extend_from_slice(b",\"evidence\":");
        super::shared::json_str(&mut out, evidence);
        if *confirmed {
            out.extend_from_slice(b",\"confirmed\":true");
        }
        out.push(b'}');
        String::from_utf8(out).expect("JSON is UTF-8")
    }
}

/// What a baseline's judgement cannot claim, filled by learning (a swept profile sets
/// `ceiling_at_least` when its sweep stopped below the knee). Rendered wherever the
/// judgement is, as "estimate", "changed", "at least", "mixed", "size classes", "busy CPUs".
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Flags {
    /// The baseline is an estimate, not measured at about one in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<super::shared::Shared<Estimate>>,
    /// The device changed (learning detected a step at the baseline's level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<super::shared::Shared<Change>>,
    /// The ceiling (max IOPS, so the headroom) is a lower bound, not a measured plateau.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ceiling_at_least: bool,
    /// The interval's request sizes are mixed: not judged against one class's curve.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mixed: bool,
    /// The direction's requests span size classes (the kernel sized each one: learn/
    /// points.rs): each class was judged against its own class's curve, but no curve is the
    /// mix's, so no ceiling is the mix's either and the headroom is not known (issue 37: no
    /// headroom from a curve the current mix does not match); 0 still while saturated or
    /// worse.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spans_classes: bool,
    /// Saturated or overloaded while the host's CPUs had no idle time (or lost a tenth of it
    /// to steal): a completion waits for a CPU too, so the machine may explain part of the
    /// latency judged (issue 37: what may have disturbed a verdict is said with it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub busy_cpus: bool,
}

impl Flags {
    /// Whether `other`'s flags are written as these: the same shared estimate and change
    /// (not only equal ones: each writes its own JSON), the same marks.
    fn writes_as(&self, other: &Flags) -> bool {
        fn same<T>(
            a: &Option<super::shared::Shared<T>>,
            b: &Option<super::shared::Shared<T>>,
        ) -> bool {
            match (a, b) {
                (None, None) => true,
                (Some(a), Some(b)) => super::shared::Shared::ptr_eq(a, b),
                _ => false,
            }
        }
        same(&self.estimate, &other.estimate)
            && same(&self.change, &other.change)
            && self.ceiling_at_least == other.ceiling_at_least
            && self.mixed == other.mixed
            && self.spans_classes == other.spans_classes
            && self.busy_cpus == other.busy_cpus
    }

    /// Whether any flag is set ([`Flags::words`] not empty), without building the words.
    pub fn any(&self) -> bool {
        self.estimate.is_some()
            || self.change.is_some()
            || self.ceiling_at_least
            || self.mixed
            || self.spans_classes
            || self.busy_cpus
    }

    /// Whether a flag qualifies the verdict itself (estimate, changed, mixed, busy CPUs): the
    /// text table marks its state `*` and words it under the table. A ceiling that is a lower
    /// bound qualifies only the headroom, which its cell marks `>=` (and the words say "at
    /// least" whenever they are given): alone it is no reason for a note, or a host whose
    /// devices never showed a plateau (most of them) had one under every row, every interval.
    pub fn qualify_state(&self) -> bool {
        self.estimate.is_some() || self.change.is_some() || self.mixed || self.busy_cpus
    }

    /// The flags in words, in a fixed order ("estimate", "changed", "at least", "mixed",
    /// "size classes", "busy CPUs").
    pub fn words(&self) -> Vec<&'static str> {
        self.each_word().collect()
    }

    /// [`Flags::words`] one by one, nothing allocated (a view's note per flagged row and
    /// interval).
    pub fn each_word(&self) -> impl Iterator<Item = &'static str> {
        Flags::WORDS
            .into_iter()
            .zip(self.each())
            .filter_map(|(w, (_, on))| on.then_some(w))
    }

    /// Every flag by its JSON key, set or not, in the words' order (the exporter's
    /// `iosat_disk_op_flag` serves each as a 0 or a 1).
    pub fn each(&self) -> [(&'static str, bool); 6] {
        [
            ("estimate", self.estimate.is_some()),
            ("change", self.change.is_some()),
            ("ceiling_at_least", self.ceiling_at_least),
            ("mixed", self.mixed),
            ("spans_classes", self.spans_classes),
            ("busy_cpus", self.busy_cpus),
        ]
    }

    /// The words of [`Flags::each`]'s flags, in its order.
    const WORDS: [&'static str; 6] = [
        "estimate",
        "changed",
        "at least",
        "mixed",
        "size classes",
        "busy CPUs",
    ];
}

/// The baseline one direction is judged against, whichever source gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub basis: Basis,
    /// Mean latency at about one in flight (the slow-but-not-loaded test uses the mean).
    pub baseline_latency_ns: f64,
    pub baseline_p95_ns: Option<f64>,
    /// The device's own mean time per request at about one in flight (issue 40: from the
    /// issue to the driver to the completion; the block layer's split), when measured.
    pub baseline_device_ns: Option<f64>,
    /// The most IOPS served within the target (a sweep's at its knee, the most learned).
    pub max_iops: Option<f64>,
    /// The ratio the source computed itself (learning: on the interval's request-size
    /// class); None: computed here from [`Observed`].
    pub ratio: Option<f64>,
    /// The other direction's IOPS beside which `max_iops` was measured (learning's); None:
    /// not known, the ceiling taken as it is ([`ceiling_for_mix`]).
    pub ceiling_other_iops: Option<f64>,
    pub flags: Flags,
}

/// What one direction did in the interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Observed {
    pub iops: f64,
    /// Mean latency (await), ms.
    pub mean_ms: Option<f64>,
    /// The block layer's p95, ms, when that source measured.
    pub p95_ms: Option<f64>,
    /// The other direction's IOPS in the same interval (reads for writes): what else the
    /// device served ([`ceiling_for_mix`]).
    pub other_iops: f64,
}

/// Why a direction's headroom is 0 whatever its IOPS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoHeadroom {
    /// Latency already grows with load: more requests only wait longer.
    Saturated,
    /// Past the target latency.
    Overloaded,
    /// Slower than its baseline without load: what it can still take is not known.
    Slow,
    /// The device changed (a step at the baseline's level, not yet confirmed, or a swept
    /// profile the traffic disagrees with): the ceiling is the device's before the change.
    Changed,
}

impl NoHeadroom {
    pub const ALL: [NoHeadroom; 4] = [
        NoHeadroom::Saturated,
        NoHeadroom::Overloaded,
        NoHeadroom::Slow,
        NoHeadroom::Changed,
    ];

    /// The reason's name, as the JSON, the CSV and the exporter's `reason` label give it.
    pub fn as_str(self) -> &'static str {
        match self {
            NoHeadroom::Saturated => "saturated",
            NoHeadroom::Overloaded => "overloaded",
            NoHeadroom::Slow => "slow",
            NoHeadroom::Changed => "changed",
        }
    }

    /// Why a direction in `state` has no headroom whatever its IOPS; None: its headroom is
    /// the ceiling less its IOPS ([`headroom_in`]).
    pub fn of(state: State) -> Option<NoHeadroom> {
        match state {
            State::Saturated => Some(NoHeadroom::Saturated),
            State::Overloaded => Some(NoHeadroom::Overloaded),
            State::Slow => Some(NoHeadroom::Slow),
            _ => None,
        }
    }

    pub fn words(self) -> &'static str {
        match self {
            NoHeadroom::Saturated => "saturated: more requests only wait longer",
            NoHeadroom::Overloaded => "overloaded: past the target latency",
            NoHeadroom::Slow => "slow but not loaded: what it can take is not known",
            NoHeadroom::Changed => "changed: its ceiling is the device's before the change",
        }
    }
}

/// One direction judged in one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirJudgement {
    #[serde(rename = "direction")]
    pub dir: Dir,
    pub basis: Basis,
    pub state: State,
    /// Current p95 ÷ baseline p95 (mean ÷ mean without percentiles); None without a
    /// baseline or without I/O.
    pub ratio: Option<f64>,
    /// Requests per second that can be added before the target; 0 while saturated,
    /// overloaded or slow (with `no_headroom` saying why); None without a ceiling.
    pub headroom_iops: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_headroom: Option<NoHeadroom>,
    pub baseline_latency_ns: Option<f64>,
    pub baseline_p95_ns: Option<f64>,
    /// The baseline's device time (issue 40), when the swept or learned baseline has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_device_ns: Option<f64>,
    #[serde(flatten)]
    pub flags: Flags,
}

impl DirJudgement {
    /// A direction nothing can be said of (no value in the interval).
    pub fn unknown(dir: Dir, reference: Option<&Reference>) -> DirJudgement {
        DirJudgement {
            dir,
            basis: reference.map_or(Basis::None, |r| r.basis),
            state: State::Unknown,
            ratio: None,
            headroom_iops: None,
            no_headroom: None,
            baseline_latency_ns: reference.map(|r| r.baseline_latency_ns),
            baseline_p95_ns: reference.and_then(|r| r.baseline_p95_ns),
            baseline_device_ns: reference.and_then(|r| r.baseline_device_ns),
            flags: reference.map(|r| r.flags.clone()).unwrap_or_default(),
        }
    }

    /// A device that changed and is still judged by what was learned (or swept) before the
    /// change (issue 37): no headroom from that ceiling, 0 and why, unless the state gives
    /// a reason already. Without a ceiling (`ceiling` false) there is nothing to doubt.
    fn changed_no_headroom(&mut self, ceiling: bool) {
        if self.no_headroom.is_none() && held_by_change(self.flags.change.as_deref(), ceiling) {
            self.no_headroom = Some(NoHeadroom::Changed);
            self.headroom_iops = Some(0.0);
        }
    }

    /// Judged against a baseline (swept, learned or estimated): not only learning's word that
    /// it could not judge (a mix, a change learned again: basis learned, no baseline).
    pub fn against_baseline(&self) -> bool {
        self.basis != Basis::None && self.baseline_latency_ns.is_some()
    }

    /// The headroom as a person reads it: "1200", "at least 1200", "0 (overloaded: …)",
    /// "not known".
    pub fn headroom_words(&self) -> String {
        let mut s = String::new();
        self.headroom_words_into(&mut s);
        s
    }

    /// [`DirJudgement::headroom_words`] appended to `s`.
    pub fn headroom_words_into(&self, s: &mut String) {
        match (self.headroom_iops, self.no_headroom) {
            (_, Some(why)) => {
                for part in ["0 (", why.words(), ")"] {
                    s.push_str(part);
                }
            }
            (Some(h), None) => {
                if self.flags.ceiling_at_least {
                    s.push_str("at least ");
                }
                fixed_into(s, h, 0);
            }
            (None, None) if self.flags.spans_classes => {
                s.push_str("not known (its requests span size classes: no one class's ceiling)")
            }
            // No ceiling learned (an estimate's judgement has none): said, not drawn as a dash.
            (None, None) => s.push_str("not known"),
        }
    }
}

/// Judge one direction: `obs` None when the interval has no value; `reference` what it is
/// judged against (its flags move into the judgement, not cloned); `in_flight_busy` the
/// device's requests in flight while busy (all directions: reads slowed by a flood of writes
/// are loaded), None when not known. The tests' way to judge a direction by the one rule
/// ([`DirJudgement::judge_against`]); every view judges through monitor::judge, which
/// composes the same steps per row.
#[cfg(test)]
pub(crate) fn judge_dir(
    dir: Dir,
    obs: Option<Observed>,
    reference: Option<Reference>,
    in_flight_busy: Option<f64>,
) -> DirJudgement {
    let mut j = DirJudgement::unknown(dir, None);
    let against = reference.map(|r| j.take_reference(r));
    let Some(obs) = obs else {
        return j;
    };
    match against {
        Some(a) => j.judge_against(obs, a, in_flight_busy),
        // No I/O this way: idle (no ceiling, no headroom); else nothing to judge by.
        None if obs.iops <= 0.0 => j.state = State::Idle,
        None => {}
    }
    j
}

/// The figures of a baseline a direction is judged against ([`Reference`]'s but for those
/// the judgement carries already: its basis, baseline figures and flags).
#[derive(Debug, Clone, Copy)]
pub struct Against {
    pub baseline_latency_ns: f64,
    pub baseline_p95_ns: Option<f64>,
    /// The most IOPS served within the target (the ceiling).
    pub max_iops: Option<f64>,
    /// The ratio the source computed itself (learning's); None: computed from the interval.
    pub ratio: Option<f64>,
    /// The other direction's IOPS beside which the ceiling was measured (learning's; None:
    /// not known, the ceiling taken as it is): [`ceiling_for_mix`].
    pub ceiling_other_iops: Option<f64>,
}

impl DirJudgement {
    /// The reference `r`'s basis, baseline figures and flags (moved, not cloned) written into
    /// this judgement, and the figures it is judged against ([`DirJudgement::judge_against`]).
    pub fn take_reference(&mut self, r: Reference) -> Against {
        self.basis = r.basis;
        self.baseline_latency_ns = Some(r.baseline_latency_ns);
        self.baseline_p95_ns = r.baseline_p95_ns;
        self.baseline_device_ns = r.baseline_device_ns;
        self.flags = r.flags;
        Against {
            baseline_latency_ns: r.baseline_latency_ns,
            baseline_p95_ns: r.baseline_p95_ns,
            max_iops: r.max_iops,
            ratio: r.ratio,
            ceiling_other_iops: r.ceiling_other_iops,
        }
    }

    /// The one rule of a direction judged against a baseline (`r`), for monitor::judge
    /// (which writes the basis, baseline figures and flags before it: a
    /// reference's, or learning's judgement's in place, without a [`Reference`]):
    /// idle with all of the ceiling as headroom; unknown for a mix of sizes learning judged
    /// by no curve; else the ratio (the source's, else the p95's, else the mean's), its
    /// state, slow where queueing does not explain it, and the headroom.
    // Inlined into its callers: as a call it cost ~70 instructions a learned row.
    #[inline]
    pub fn judge_against(&mut self, obs: Observed, r: Against, in_flight_busy: Option<f64>) {
        let ceiling = ceiling_now(
            r.max_iops,
            r.ceiling_other_iops,
            obs.other_iops,
            &self.flags,
        );
        if obs.iops <= 0.0 {
            // No I/O this way: idle, and all of the ceiling is headroom.
            self.state = State::Idle;
            self.headroom_iops = idle_headroom(ceiling);
            self.changed_no_headroom(self.headroom_iops.is_some());
            return;
        }
        if self.flags.mixed && r.ratio.is_none() {
            // Learning judged no one class's curve against a mix of request sizes (learn/
            // points.rs): unknown, as it says, not a ratio made here against the curve whose
            // class the mix's mean fell in.
            return;
        }
        let mean_ratio = obs
            .mean_ms
            .filter(|_| r.baseline_latency_ns > 0.0)
            .map(|m| m * 1e6 / r.baseline_latency_ns);
        let ratio = r.ratio.or_else(|| match (obs.p95_ms, r.baseline_p95_ns) {
            (Some(p), Some(b)) if b > 0.0 => Some(p * 1e6 / b),
            _ => mean_ratio,
        });
        self.ratio = ratio;
        self.state = State::of_ratio(ratio);
        let unexplained = match (mean_ratio, in_flight_busy) {
            (Some(m), Some(c)) => slower_than_its_load(m, c),
            _ => false,
        };
        if self.state >= State::Saturated && unexplained {
            self.state = State::Slow;
        }
        self.no_headroom = NoHeadroom::of(self.state);
        self.headroom_iops =
            headroom_in(self.state, ceiling, self.flags.ceiling_at_least, obs.iops);
        self.changed_no_headroom(r.max_iops.is_some());
    }
}

/// What [`Judgement::of_with_cap`] weighs of a direction's judgement to choose the device's:
/// the one rule, for a judgement built and for a view that reads a row's figures without
/// building one (monitor::judge::plain_cells).
#[derive(Debug, Clone, Copy)]
pub struct Weighed {
    pub dir: Dir,
    pub basis: Basis,
    pub state: State,
    pub ratio: Option<f64>,
    pub headroom_iops: Option<f64>,
}

impl Weighed {
    pub fn of(d: &DirJudgement) -> Weighed {
        Weighed {
            dir: d.dir,
            basis: d.basis,
            state: d.state,
            ratio: d.ratio,
            headroom_iops: d.headroom_iops,
        }
    }

    /// Whether the reads' judgement (`self`) is below the writes' (`write`): the writes' is
    /// then the device's.
    #[inline]
    pub fn below(self, write: Weighed) -> bool {
        let read = self;
        // The less room, the worse: none at all first, then a room not known (no claim
        // rather than a figure), then the least room.
        let room = |d: &Weighed| match d.headroom_iops {
            Some(h) if h <= 0.0 => (2, 0.0),
            None => (1, 0.0),
            Some(h) => (0, -h),
        };
        let (rr, rw) = (read.ratio.unwrap_or(-1.0), write.ratio.unwrap_or(-1.0));
        // Two directions at about the same ratio (both reads and writes of a mix at 1.06x,
        // differing in the third decimal) are the device's by their room, not by which
        // ratio is ahead in this interval: the device's headroom stays the binding one
        // rather than jumping between the two from one interval to the next. Only between
        // two judged ratios: an idle or unknown direction's room decides nothing.
        let tie = read.ratio.is_some()
            && write.ratio.is_some()
            && (rr - rw).abs() <= DIRECTION_TIE * rr.max(rw);
        read.state
            .cmp(&write.state)
            .then_with(|| {
                if tie {
                    let (a, b) = (room(&read), room(&write));
                    a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
                } else {
                    rr.total_cmp(&rw)
                }
            })
            .then_with(|| {
                let judged = |d: &Weighed| (d.basis != Basis::None, d.dir == Dir::Read);
                judged(&read).cmp(&judged(&write))
            })
            .is_lt()
    }
}

/// The ceiling `max_iops`, measured while the other direction served `ceiling_other` IOPS,
/// as the ceiling of an interval whose other direction serves `other_now`: itself beside as
/// much of the other direction or less; beside more, by up to the plateau's tie
/// ([`super::POWER_TIE`]) of the ceiling, the ceiling less that excess (the device's units
/// serve both directions: each request of the other direction beyond the ceiling's own mix
/// is counted as one this direction cannot have, so that the headroom never exceeds the
/// room the device has left); beside more than that, None, no headroom, because what this
/// direction can still take beside that much more of the other is not known (reads' ceiling
/// learned beside 100 writes/s says nothing of their room beside 1,000). Without
/// `ceiling_other` (an older state's) the ceiling as it is. The one rule of every judgement
/// and of learning's own figures.
pub fn ceiling_for_mix(
    max_iops: Option<f64>,
    ceiling_other: Option<f64>,
    other_now: f64,
) -> Option<f64> {
    let m = max_iops?;
    match ceiling_other {
        Some(o) if other_now > o + super::POWER_TIE * m => None,
        Some(o) if other_now > o => Some(m - (other_now - o)),
        _ => Some(m),
    }
}

/// The ceiling a direction is judged by in an interval: [`ceiling_for_mix`] (a ceiling
/// measured beside less of the other direction than now is no ceiling now), and none while
/// its requests span size classes (`flags.spans_classes`: one class's ceiling is no ceiling
/// of a mix of classes, issue 37). The one rule of every judgement and of learning's own
/// figures.
pub fn ceiling_now(
    max_iops: Option<f64>,
    ceiling_other: Option<f64>,
    other_now: f64,
    flags: &Flags,
) -> Option<f64> {
    ceiling_for_mix(max_iops, ceiling_other, other_now).filter(|_| !flags.spans_classes)
}

/// Two directions' ratios this close (a share of the larger) are one for choosing the
/// device's direction ([`Judgement::of_with_cap`]): the rest of the choice is by headroom.
/// Less than the noise of one interval's ratio at a steady load (a few per cent), far less
/// than a state's span (1.5x to 3x).
pub const DIRECTION_TIE: f64 = 0.05;

/// Whether `change` holds the headroom at 0: a change not yet confirmed, so the ceiling is
/// the device's before it, and there is a ceiling (`ceiling`; without one there is nothing
/// to doubt). The one rule of the judgement ([`NoHeadroom::Changed`]) and of learning's own
/// figures.
pub fn held_by_change(change: Option<&Change>, ceiling: bool) -> bool {
    change.is_some_and(|c| !c.confirmed) && ceiling
}

/// The headroom of a direction in `state` serving `iops` below the ceiling `max_iops`: 0
/// while saturated, overloaded or slow ([`NoHeadroom::of`]), whatever the IOPS; else the
/// ceiling less the IOPS (None without a ceiling). A ceiling that is a lower bound
/// (`at_least`: no plateau seen) and that the interval reached says nothing of the headroom:
/// None, not 0 (the device serves what was seen so far; nothing says it can serve no more,
/// and a gauge at 0 would page for it). The one rule of every judgement and of learning's
/// own figures.
pub fn headroom_in(state: State, max_iops: Option<f64>, at_least: bool, iops: f64) -> Option<f64> {
    match NoHeadroom::of(state) {
        Some(_) => Some(0.0),
        None => max_iops
            .filter(|&m| !(at_least && iops >= m))
            .map(|m| headroom_iops(m, iops)),
    }
}

/// A device judged in one interval: each direction, and the device's state with the ratio
/// and headroom of the same direction (the worst one), never a state from one direction
/// beside the figures of the other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    /// The worst direction's judgement: the device's.
    #[serde(flatten)]
    pub device: DirJudgement,
    pub read: DirJudgement,
    pub write: DirJudgement,
    /// The interval against the cap the user declared (issue 42), on the figure it comes
    /// nearest to; None without a declaration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<super::declared::CapUse>,
}

/// A direction's baseline figures as a judgement writes them (`,"baseline_latency_ns":`
/// through `"baseline_device_ns":` when there is a device time), written before with the
/// same keys and floats: the figures' bits (None: absent) and the bytes.
#[derive(Debug, Clone, Copy)]
pub struct BaselineJson<'a> {
    pub figures: [Option<u64>; 3],
    pub bytes: &'a [u8],
}

/// A value as serde_json writes it (floats by ryu, non-finite as null), into `out`.
fn json_value(out: &mut Vec<u8>, v: &impl Serialize) {
    serde_json::to_writer(&mut *out, v).expect("a judgement's figure serialises");
}

impl DirJudgement {
    /// Whether `other`'s JSON fields are this one's, byte for byte: the same values, floats
    /// by their bits (-0.0 and 0.0 are written apart; a NaN is written as null either way),
    /// the shared flags when they are the same ones (their JSON is theirs).
    fn writes_as(&self, other: &DirJudgement) -> bool {
        let bits = |a: Option<f64>, b: Option<f64>| a.map(f64::to_bits) == b.map(f64::to_bits);
        self.dir == other.dir
            && self.basis == other.basis
            && self.state == other.state
            && bits(self.ratio, other.ratio)
            && bits(self.headroom_iops, other.headroom_iops)
            && self.no_headroom == other.no_headroom
            && bits(self.baseline_latency_ns, other.baseline_latency_ns)
            && bits(self.baseline_p95_ns, other.baseline_p95_ns)
            && bits(self.baseline_device_ns, other.baseline_device_ns)
            && self.flags.writes_as(&other.flags)
    }

    /// The fields of this direction's JSON object, without braces, as its derived
    /// `Serialize` writes them (keys in order, the same omissions). The estimate flag's JSON
    /// is the one kept beside it (Shared::json): a thousand devices' judgements wrote the same
    /// estimate's floats each interval (issue 37's cost).
    /// `written`: where the ratio and headroom are noted, for a later writer to copy.
    /// `known`: baseline figures written already, copied when they are this direction's.
    fn write_json_fields(
        &self,
        out: &mut Vec<u8>,
        written: Option<&mut super::shared::Written>,
        known: Option<BaselineJson>,
    ) {
        // Every field named (no `..`): a field added here must be written here too.
        let DirJudgement {
            dir,
            basis,
            state,
            ratio,
            headroom_iops,
            no_headroom,
            baseline_latency_ns,
            baseline_p95_ns,
            baseline_device_ns,
            flags,
        } = self;
        let Flags {
            estimate,
            change,
            ceiling_at_least,
            mixed,
            spans_classes,
            busy_cpus,
        } = flags;
        let key = |out: &mut Vec<u8>, k: &str| {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(b"\":");
        };
        out.extend_from_slice(b"\"direction\":\"");
        out.extend_from_slice(dir.as_str().as_bytes());
        out.extend_from_slice(b"\",\"basis\":\"");
        out.extend_from_slice(basis.as_str().as_bytes());
        out.extend_from_slice(b"\",\"state\":\"");
        out.extend_from_slice(state.as_str().as_bytes());
        out.push(b'"');
        key(out, "ratio");
        let ratio_at = out.len();
        match ratio {
            Some(r) if super::text::json_millionths_into(out, *r) => {}
            _ => json_value(out, ratio),
        }
        let ratio_end = out.len();
        key(out, "headroom_iops");
        let headroom_at = out.len();
        match headroom_iops {
            Some(h) if super::text::json_whole_into(out, *h) => {}
            _ => json_value(out, headroom_iops),
        }
        if let Some(w) = written {
            if let Some(r) = ratio {
                w.note(*r, ratio_at..ratio_end);
            }
            if let Some(h) = headroom_iops {
                w.note(*h, headroom_at..out.len());
            }
        }
        if let Some(n) = no_headroom {
            key(out, "no_headroom");
            json_value(out, n);
        }
        let baseline = |out: &mut Vec<u8>| {
            key(out, "baseline_latency_ns");
            json_value(out, baseline_latency_ns);
            key(out, "baseline_p95_ns");
            json_value(out, baseline_p95_ns);
            if let Some(d) = baseline_device_ns {
                key(out, "baseline_device_ns");
                json_value(out, d);
            }
        };
        let bits = [*baseline_latency_ns, *baseline_p95_ns, *baseline_device_ns]
            .map(|f| f.map(f64::to_bits));
        match known.filter(|k| k.figures == bits) {
            Some(k) => out.extend_from_slice(k.bytes),
            None => baseline(out),
        }
        if let Some(e) = estimate {
            key(out, "estimate");
            out.extend_from_slice(e.json().as_bytes());
        }
        if let Some(c) = change {
            // Written once per change (a changed device's every interval carries it).
            key(out, "change");
            out.extend_from_slice(c.json().as_bytes());
        }
        if *ceiling_at_least {
            out.extend_from_slice(b",\"ceiling_at_least\":true");
        }
        if *mixed {
            out.extend_from_slice(b",\"mixed\":true");
        }
        if *spans_classes {
            out.extend_from_slice(b",\"spans_classes\":true");
        }
        if *busy_cpus {
            out.extend_from_slice(b",\"busy_cpus\":true");
        }
    }
}

impl Judgement {
    /// The judgement's JSON object, byte for byte as its derived `Serialize` writes it with
    /// serde_json, written by hand (`stat --json` writes one per device and interval).
    /// Returns where the device's ratio and headroom were written (the `learned` object
    /// after it repeats them: Learned::write_json_after).
    pub fn write_json(&self, out: &mut Vec<u8>) -> super::shared::Written {
        self.write_json_with(out, None)
    }

    /// [`Judgement::write_json`] with baseline figures written already (the `learned`
    /// object's, kept with its curve until the next estimate: Summary::baseline_json), copied
    /// for a direction whose baseline figures they are, bit for bit.
    pub fn write_json_with(
        &self,
        out: &mut Vec<u8>,
        known: Option<BaselineJson>,
    ) -> super::shared::Written {
        // Every field named (no `..`): a field added here must be written here too.
        let Judgement {
            device,
            read,
            write,
            cap,
        } = self;
        // The device's fields are those of the direction it was taken from (Judgement::of):
        // written once and copied, where that direction's fields are due (a third of the
        // judgement's floats formatted per device and interval: issue 37's cost).
        let copy_of = if device.writes_as(read) {
            Some(Dir::Read)
        } else if device.writes_as(write) {
            Some(Dir::Write)
        } else {
            None
        };
        out.push(b'{');
        let start = out.len();
        let mut written = super::shared::Written::default();
        device.write_json_fields(out, Some(&mut written), known);
        let end = out.len();
        out.extend_from_slice(b",\"read\":{");
        match copy_of {
            Some(Dir::Read) => out.extend_from_within(start..end),
            _ => read.write_json_fields(out, None, known),
        }
        out.extend_from_slice(b"},\"write\":{");
        match copy_of {
            Some(Dir::Write) => out.extend_from_within(start..end),
            _ => write.write_json_fields(out, None, known),
        }
        out.push(b'}');
        if let Some(c) = cap {
            out.extend_from_slice(b",\"cap\":");
            json_value(out, c);
        }
        out.push(b'}');
        written
    }
}

impl Judgement {
    /// The device from its two directions: the worst state; among equals the higher ratio,
    /// ratios within [`DIRECTION_TIE`] of each other being equal, then the less room (no
    /// headroom first, then a headroom not known, then the smaller: the binding one); then
    /// the judged one, then reads.
    pub fn of(read: DirJudgement, write: DirJudgement) -> Judgement {
        Judgement::of_with_cap(read, write, None)
    }

    /// [`Judgement::of`] with the declared cap's use of the interval (issue 42).
    pub fn of_with_cap(
        read: DirJudgement,
        write: DirJudgement,
        cap: Option<super::declared::CapUse>,
    ) -> Judgement {
        let device = if Weighed::of(&read).below(Weighed::of(&write)) {
            write.clone()
        } else {
            read.clone()
        };
        Judgement {
            device,
            read,
            write,
            cap,
        }
    }

    pub fn dir(&self, d: Dir) -> &DirJudgement {
        match d {
            Dir::Read => &self.read,
            Dir::Write => &self.write,
        }
    }

    pub fn state(&self) -> State {
        self.device.state
    }

    /// The device's judgement in words: "overloaded (read 4.2x swept baseline), headroom 0
    /// (overloaded: …)", with the flags ("estimate", "changed", "at least", "mixed").
    pub fn words(&self) -> String {
        let mut s = String::new();
        self.words_into(&mut s);
        s
    }

    /// [`Judgement::words`] appended to `s` (a view's notes: no string built per part).
    pub fn words_into(&self, s: &mut String) {
        let d = &self.device;
        s.push_str(d.state.words());
        if let Some(r) = d.ratio {
            for part in [" (", d.dir.as_str(), " "] {
                s.push_str(part);
            }
            fixed_into(s, r, 1);
            for part in ["x ", basis_adjective(d.basis), " baseline)"] {
                s.push_str(part);
            }
        }
        s.push_str(", headroom ");
        d.headroom_words_into(s);
        for (i, f) in d.flags.each_word().enumerate() {
            s.push_str(if i == 0 { " [" } else { ", " });
            s.push_str(f);
        }
        if d.flags.any() {
            s.push(']');
        }
        // The declared cap's share (issue 42), when the interval did any I/O.
        if let Some(c) = self.cap.as_ref().filter(|c| c.used > 0.0) {
            s.push_str("; ");
            s.push_str(&c.live_words());
        }
    }
}

impl Judgement {
    /// The judgement in few words, for a one-line footer: "overloaded (read 4.2x swept),
    /// headroom 0", "ok (write 1.1x learned), headroom >=1200 [at least]".
    pub fn brief(&self) -> String {
        let d = &self.device;
        let mut s = d.state.as_str().to_string();
        if let Some(r) = d.ratio {
            s.push_str(&format!(
                " ({} {}x {})",
                d.dir.as_str(),
                fixed(r, 1),
                basis_adjective(d.basis)
            ));
        }
        s.push_str(", headroom ");
        s.push_str(&match (d.headroom_iops, d.no_headroom) {
            (_, Some(_)) => "0".to_string(),
            (Some(h), None) if d.flags.ceiling_at_least => format!(">={}", fixed(h, 0)),
            (Some(h), None) => fixed(h, 0),
            // No ceiling learned (an estimate's judgement has none): said, not drawn as a dash.
            (None, None) => "not known".to_string(),
        });
        let flags = d.flags.words();
        if !flags.is_empty() {
            s.push_str(&format!(" [{}]", flags.join(", ")));
        }
        // The declared cap's share (issue 42), when the interval did any I/O.
        if let Some(c) = self.cap.as_ref().filter(|c| c.used > 0.0) {
            s.push_str(&format!(
                ", {:.0} % of {} cap",
                c.ratio * 100.0,
                c.cap.figure(c.declared)
            ));
        }
        s
    }
}

/// "swept", "learned", "estimated": how a baseline is named in words.
pub fn basis_adjective(b: Basis) -> &'static str {
    match b {
        Basis::Swept => "swept",
        Basis::Learned => "learned",
        Basis::LearnedEstimate => "estimated",
        Basis::None => "no",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ceiling beside more of the other direction than it was measured with (issue 37):
    /// within the tie, the excess is counted against it one for one, so that the headroom is
    /// never more than the room the device has left (a read sweep's 42,856 IOPS beside 4,255
    /// writes left 37,643 more reads claimed beside 5,213, where the device had ~33,400 in
    /// all); beyond the tie, not known; beside less or as much, the ceiling itself.
    #[test]
    fn a_ceiling_beside_more_of_the_other_direction_leaves_only_the_devices_room() {
        let read_sweep = |other_now| ceiling_for_mix(Some(42_856.0), Some(0.0), other_now);
        assert_eq!(read_sweep(0.0), Some(42_856.0));
        let c = read_sweep(4_255.0).expect("within the tie");
        assert_eq!(c, 42_856.0 - 4_255.0);
        assert_eq!(headroom_iops(c, 5_213.0), 42_856.0 - 4_255.0 - 5_213.0);
        assert_eq!(read_sweep(4_285.6), Some(42_856.0 - 4_285.6));
        assert_eq!(read_sweep(4_300.0), None);
        // Learned beside 100 writes: beside 50 the whole ceiling, beside 150 less 50.
        let learned = |other_now| ceiling_for_mix(Some(1_000.0), Some(100.0), other_now);
        assert_eq!(learned(50.0), Some(1_000.0));
        assert_eq!(learned(100.0), Some(1_000.0));
        assert_eq!(learned(150.0), Some(950.0));
        assert_eq!(learned(201.0), None);
        // An older state's ceiling, the other direction's share not kept: as it is.
        assert_eq!(ceiling_for_mix(Some(1_000.0), None, 900.0), Some(1_000.0));
        assert_eq!(ceiling_for_mix(None, Some(0.0), 0.0), None);
    }

    /// A change written by hand is serde's, byte for byte: figures that serde writes as
    /// null, words it escapes, confirmed or not.
    #[test]
    fn a_change_written_by_hand_is_serdes_byte_for_byte() {
        use crate::analysis::shared::Json;
        for evidence in ["device changed: 4.00 ms", "", "a \"step\"\\\n", "µs"] {
            for confirmed in [false, true] {
                for (at_wall_ns, from_ns, to_ns) in [
                    (1_700_000_041_000_000_000, 1e6, 4e6),
                    (i64::MIN, f64::NAN, -0.0),
                    (0, 1.0 / 3.0, f64::NEG_INFINITY),
                ] {
                    let c = Change {
                        at_wall_ns,
                        from_ns,
                        to_ns,
                        evidence: evidence.into(),
                        confirmed,
                    };
                    assert_eq!(c.to_json(), serde_json::to_string(&c).unwrap(), "{c:?}");
                }
            }
        }
    }

    fn reference(basis: Basis, max: f64) -> Reference {
        Reference {
            basis,
            baseline_latency_ns: 1e6,
            baseline_p95_ns: Some(2e6),
            baseline_device_ns: None,
            max_iops: Some(max),
            ratio: None,
            ceiling_other_iops: None,
            flags: Flags::default(),
        }
    }

    /// A change of the device from 4 ms to 1 ms at its baseline's level.
    fn change_of(confirmed: bool) -> crate::analysis::shared::Shared<Change> {
        crate::analysis::shared::Shared::new(Change {
            at_wall_ns: 1,
            from_ns: 4e6,
            to_ns: 1e6,
            evidence: "device changed".into(),
            confirmed,
        })
    }

    fn obs(iops: f64, mean_ms: f64) -> Option<Observed> {
        Some(Observed {
            iops,
            mean_ms: Some(mean_ms),
            p95_ms: None,
            other_iops: 0.0,
        })
    }

    /// A direction learning left unjudged for its mix of request sizes (flag `mixed`, no
    /// ratio of its own) stays unknown: no ratio against the curve whose class the mix's mean
    /// fell in (a 64 KiB curve's 2 ms made an 11 KiB-mean mix at 1 ms "ok 0.5x"), no headroom;
    /// its basis and flag say why. A learned ratio given with the flag, and a reference without
    /// it, are judged as ever.
    #[test]
    fn a_mix_learning_left_unjudged_is_not_judged_against_a_curve() {
        let mixed = |ratio: Option<f64>| Reference {
            ratio,
            flags: Flags {
                mixed: true,
                ..Flags::default()
            },
            ..reference(Basis::Learned, 500.0)
        };
        let j = judge_dir(Dir::Read, obs(1000.0, 0.5), Some(mixed(None)), Some(1.0));
        assert_eq!(
            (j.state, j.ratio, j.headroom_iops, j.no_headroom),
            (State::Unknown, None, None, None),
            "{j:?}"
        );
        assert!(j.basis == Basis::Learned && j.flags.mixed, "{j:?}");
        let j = judge_dir(
            Dir::Read,
            obs(100.0, 0.5),
            Some(mixed(Some(1.1))),
            Some(1.0),
        );
        assert_eq!((j.state, j.ratio), (State::Ok, Some(1.1)), "{j:?}");
        let j = judge_dir(
            Dir::Read,
            obs(100.0, 0.5),
            Some(reference(Basis::Learned, 500.0)),
            Some(1.0),
        );
        assert_eq!((j.state, j.ratio), (State::Ok, Some(0.5)), "{j:?}");
    }

    #[test]
    fn a_reason_for_no_headroom_has_one_name_in_every_output() {
        // The JSON's `no_headroom` (serde), the CSV's column and the exporter's `reason`
        // label (as_str) are the same word, and each reason has its own.
        let names: Vec<&str> = NoHeadroom::ALL.iter().map(|w| w.as_str()).collect();
        for (why, name) in NoHeadroom::ALL.iter().zip(&names) {
            assert_eq!(serde_json::to_value(why).unwrap(), *name);
        }
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
    }

    /// A ceiling that is a lower bound ("at least 500": no plateau seen) and that the
    /// interval reached says nothing of the headroom: not known, never "at least 0" (a gauge at
    /// 0 says "no headroom", and nothing says the device can serve no more); below it, "at
    /// least" the difference. A measured ceiling reached leaves 0; a state's reason, or a
    /// change not confirmed, still holds it at 0 with its reason (the ceiling is known).
    #[test]
    fn a_lower_bound_ceiling_the_traffic_reached_gives_no_headroom_figure() {
        let at_least = |max: f64| Reference {
            flags: Flags {
                ceiling_at_least: true,
                ..Flags::default()
            },
            ..reference(Basis::Learned, max)
        };
        let judge =
            |iops: f64, ms: f64, r: Reference| judge_dir(Dir::Read, obs(iops, ms), Some(r), None);
        let below = judge(300.0, 1.0, at_least(500.0));
        assert_eq!((below.state, below.headroom_iops), (State::Ok, Some(200.0)));
        assert_eq!(below.headroom_words(), "at least 200");
        for iops in [500.0, 800.0] {
            let past = judge(iops, 1.0, at_least(500.0));
            assert_eq!(
                (past.state, past.headroom_iops, past.no_headroom),
                (State::Ok, None, None),
                "{iops} IOPS"
            );
            assert_eq!(past.headroom_words(), "not known");
        }
        let measured = judge(800.0, 1.0, reference(Basis::Learned, 500.0));
        assert_eq!(measured.headroom_iops, Some(0.0));
        assert_eq!(measured.headroom_words(), "0");
        let overloaded = judge(800.0, 4.0, at_least(500.0));
        assert_eq!(
            (overloaded.headroom_iops, overloaded.no_headroom),
            (Some(0.0), Some(NoHeadroom::Overloaded))
        );
        let mut changed = at_least(500.0);
        changed.flags.change = Some(change_of(false));
        let changed = judge(800.0, 0.25, changed);
        assert_eq!(
            (changed.headroom_iops, changed.no_headroom),
            (Some(0.0), Some(NoHeadroom::Changed))
        );
        assert_eq!(headroom_in(State::Ok, Some(500.0), true, 800.0), None);
        assert_eq!(headroom_in(State::Ok, Some(500.0), false, 800.0), Some(0.0));
    }

    /// Issue 37: headroom is 0, and says why, while the device has changed and is judged by
    /// the ceiling of the device before the change (a step not yet confirmed, or a swept
    /// profile the traffic disagrees with), whatever its state: a device that became faster
    /// reads "ok 0.2x" and took its old ceiling less its IOPS as headroom. Idle too. Once
    /// confirmed (learned again since) the ceiling is the device's as it is: headroom as ever.
    /// A state's own reason comes first; no ceiling, no headroom to doubt.
    #[test]
    fn no_headroom_from_the_ceiling_of_a_device_before_its_change() {
        let changed = |confirmed: bool, max: Option<f64>| Reference {
            flags: Flags {
                change: Some(change_of(confirmed)),
                ..Flags::default()
            },
            max_iops: max,
            ..reference(Basis::Learned, 0.0)
        };
        // Reads of `ms` at `iops` against a 1 ms baseline (0.25 ms: "ok 0.2x").
        let judge = |iops: f64, ms: f64, confirmed: bool, max: Option<f64>| {
            judge_dir(
                Dir::Read,
                obs(iops, ms),
                Some(changed(confirmed, max)),
                None,
            )
        };
        let j = judge(100.0, 0.25, false, Some(500.0));
        assert_eq!(
            (j.state, j.headroom_iops, j.no_headroom),
            (State::Ok, Some(0.0), Some(NoHeadroom::Changed)),
            "{j:?}"
        );
        assert!(
            j.headroom_words().starts_with("0 (changed: "),
            "{}",
            j.headroom_words()
        );
        let idle = judge(0.0, 0.0, false, Some(500.0));
        assert_eq!(
            (idle.state, idle.headroom_iops, idle.no_headroom),
            (State::Idle, Some(0.0), Some(NoHeadroom::Changed))
        );
        let slow = judge(100.0, 4.0, false, Some(500.0));
        assert_eq!(
            (slow.state, slow.no_headroom),
            (State::Overloaded, Some(NoHeadroom::Overloaded))
        );
        let none = judge(100.0, 0.25, false, None);
        assert_eq!((none.headroom_iops, none.no_headroom), (None, None));
        let confirmed = judge(100.0, 0.25, true, Some(500.0));
        assert_eq!(
            (confirmed.headroom_iops, confirmed.no_headroom),
            (Some(400.0), None)
        );
        // Said so in the JSON: `confirmed` only once it is.
        let c = |confirmed| changed(confirmed, None).flags.change.unwrap();
        assert!(!serde_json::to_string(&*c(false))
            .unwrap()
            .contains("confirmed"));
        assert!(serde_json::to_string(&*c(true))
            .unwrap()
            .contains("\"confirmed\":true"));
    }

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
        assert!(State::Slow < State::Saturated && State::Ok < State::Slow);
    }

    /// The judgement's JSON written by hand is serde's, byte for byte: every basis, state,
    /// omission and flag, figures with fractions, whole, tiny, huge and non-finite (null), in
    /// each of the three places (device, read, write), with and without a cap.
    #[test]
    fn the_judgements_json_by_hand_is_serdes() {
        use crate::analysis::shared::Shared;
        let figures = [
            None,
            Some(1.0),
            Some(0.1 + 0.2),
            Some(1e-7),
            Some(123_456_789.987),
            Some(1e300),
            Some(f64::NAN),
            Some(-0.0),
        ];
        let estimates = [
            None,
            Some(Shared::new(Estimate {
                from_level: 2.0000000000000004,
                interval_ns: Some([2.06e6, 4.1e6]),
            })),
            Some(Shared::new(Estimate {
                from_level: 27.0,
                interval_ns: None,
            })),
        ];
        let change = crate::analysis::shared::Shared::new(Change {
            at_wall_ns: -5,
            from_ns: 2e6,
            to_ns: 8.000001e6,
            evidence: "a \"step\" at\tone in flight\n".into(),
            confirmed: false,
        });
        let mut dirs = Vec::new();
        let mut k = 0usize;
        for basis in [
            Basis::Swept,
            Basis::Learned,
            Basis::LearnedEstimate,
            Basis::None,
        ] {
            for state in State::ALL {
                for f in &figures {
                    k += 1;
                    let pick = |n: usize| figures[(k * n) % figures.len()];
                    dirs.push(DirJudgement {
                        dir: if k % 2 == 0 { Dir::Read } else { Dir::Write },
                        basis,
                        state,
                        ratio: *f,
                        headroom_iops: pick(3),
                        no_headroom: NoHeadroom::of(state),
                        baseline_latency_ns: pick(5),
                        baseline_p95_ns: pick(7),
                        baseline_device_ns: pick(11),
                        flags: Flags {
                            estimate: estimates[k % 3].clone(),
                            change: (k % 4 == 1).then(|| change.clone()),
                            ceiling_at_least: k % 5 < 2,
                            mixed: k % 7 == 3,
                            spans_classes: k % 11 == 4,
                            busy_cpus: k % 3 == 2,
                        },
                    });
                }
            }
        }
        let cap = crate::analysis::declared::CapUse {
            cap: crate::analysis::declared::CapDim::ReadIops,
            declared: 3000.0,
            used: 1234.5,
            ratio: 0.4115,
        };
        // A direction's baseline fields as serde writes them (its JSON object's, cut out).
        let baseline_bytes = |d: &DirJudgement| -> Vec<u8> {
            let json = serde_json::to_string(d).unwrap();
            let from = json.find(",\"baseline_latency_ns\":").unwrap();
            let to = [
                ",\"estimate\"",
                ",\"change\"",
                ",\"ceiling_at_least\"",
                ",\"mixed\"",
                ",\"spans_classes\"",
                ",\"busy_cpus\"",
                "}",
            ]
            .iter()
            .filter_map(|k| json[from..].find(k))
            .min()
            .unwrap();
            json.as_bytes()[from..from + to].to_vec()
        };
        for (i, d) in dirs.iter().enumerate() {
            let j = Judgement {
                device: d.clone(),
                read: dirs[(i * 7 + 1) % dirs.len()].clone(),
                write: dirs[(i * 13 + 5) % dirs.len()].clone(),
                cap: (i % 3 == 0).then_some(cap),
            };
            let mut out = b"x".to_vec();
            j.write_json(&mut out);
            let want = serde_json::to_string(&j).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), format!("x{want}"));
            // With baseline figures written before (the learned object's): those of the
            // device (copied), of the read direction, and of another case (copied only
            // where the figures are the same bits).
            for other in [d, &j.read, &dirs[(i * 5 + 2) % dirs.len()]] {
                let bytes = baseline_bytes(other);
                let known = BaselineJson {
                    figures: [
                        other.baseline_latency_ns,
                        other.baseline_p95_ns,
                        other.baseline_device_ns,
                    ]
                    .map(|f| f.map(f64::to_bits)),
                    bytes: &bytes,
                };
                let mut out = Vec::new();
                j.write_json_with(&mut out, Some(known));
                assert_eq!(String::from_utf8(out).unwrap(), want);
            }
            // The device taken from one direction (Judgement::of), whose fields are copied,
            // and near copies that must be written anew: 0.0 for -0.0, NaN for the figure,
            // an equal estimate that is another one (its JSON its own).
            let other = &dirs[(i * 7 + 1) % dirs.len()];
            let mut zero = d.clone();
            zero.ratio = zero.ratio.map(|r| if r == 0.0 { 0.0 } else { -0.0 });
            let mut estimate = d.clone();
            estimate.flags.estimate = d.flags.estimate.as_deref().cloned().map(Shared::new);
            for (read, write) in [(d, other), (other, d), (&zero, other), (other, &estimate)] {
                let j = Judgement {
                    device: d.clone(),
                    read: read.clone(),
                    write: write.clone(),
                    cap: None,
                };
                let mut out = Vec::new();
                j.write_json(&mut out);
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    serde_json::to_string(&j).unwrap()
                );
            }
        }
        // Every omission and flag was met.
        assert!(dirs
            .iter()
            .any(|d| d.flags.change.is_some() && d.flags.mixed));
        assert!(dirs
            .iter()
            .any(|d| d.no_headroom.is_none() && d.baseline_device_ns.is_none()));
    }

    #[test]
    fn headroom_is_never_negative() {
        assert_eq!(headroom_iops(100_000.0, 73_000.0), 27_000.0);
        assert_eq!(headroom_iops(1000.0, 2000.0), 0.0);
        assert_eq!(target_latency_ns(1e6, None), 3e6);
        assert_eq!(target_latency_ns(1e6, Some(2e6)), 2e6);
    }

    /// Headroom is the ceiling less the IOPS only while ok; 0 with its reason while
    /// saturated or overloaded, whatever the IOPS (never positive while overloaded).
    #[test]
    fn no_headroom_while_saturated_or_overloaded() {
        let r = reference(Basis::Swept, 5000.0);
        let ok = judge_dir(Dir::Read, obs(1000.0, 1.2), Some(r.clone()), Some(1.2));
        assert_eq!((ok.state, ok.headroom_iops), (State::Ok, Some(4000.0)));
        assert_eq!(ok.no_headroom, None);
        let sat = judge_dir(Dir::Read, obs(100.0, 2.0), Some(r.clone()), Some(2.0));
        assert_eq!(sat.state, State::Saturated);
        assert_eq!(
            (sat.headroom_iops, sat.no_headroom),
            (Some(0.0), Some(NoHeadroom::Saturated))
        );
        // Far below the ceiling, but 4x the baseline with 4 in flight: overloaded, none.
        let over = judge_dir(Dir::Read, obs(100.0, 4.0), Some(r.clone()), Some(4.0));
        assert_eq!(over.state, State::Overloaded);
        assert_eq!(over.headroom_iops, Some(0.0));
        assert_eq!(
            over.headroom_words(),
            "0 (overloaded: past the target latency)"
        );
    }

    /// One stalled second (one request in flight taking 942 ms against a 1 ms baseline) is
    /// more than queueing explains: slow but not loaded, as the shipped alerts call it; the
    /// same latency with 500 in flight is overloaded.
    #[test]
    fn a_stall_is_slow_not_overloaded() {
        let r = reference(Basis::Learned, 5000.0);
        let stall = judge_dir(Dir::Write, obs(1.0, 942.0), Some(r.clone()), Some(1.0));
        assert_eq!(stall.state, State::Slow);
        assert_eq!(stall.no_headroom, Some(NoHeadroom::Slow));
        let queued = judge_dir(Dir::Write, obs(500.0, 942.0), Some(r.clone()), Some(500.0));
        assert_eq!(queued.state, State::Overloaded);
        // Without a known load the ratio alone judges.
        let blind = judge_dir(Dir::Write, obs(1.0, 942.0), Some(r.clone()), None);
        assert_eq!(blind.state, State::Overloaded);
    }

    /// The device takes the state, ratio and headroom of one direction, its worst.
    #[test]
    fn the_device_is_its_worst_direction_whole() {
        let sw = reference(Basis::Swept, 5000.0);
        let le = Reference {
            ratio: Some(0.5),
            ceiling_other_iops: None,
            ..reference(Basis::Learned, 9000.0)
        };
        // Reads ok with much headroom, writes overloaded: the device is the writes'.
        let read = judge_dir(Dir::Read, obs(100.0, 0.5), Some(le.clone()), Some(4.0));
        let write = judge_dir(Dir::Write, obs(100.0, 4.0), Some(sw.clone()), Some(4.0));
        let j = Judgement::of(read.clone(), write.clone());
        assert_eq!(j.device, write);
        assert_eq!(j.state(), State::Overloaded);
        assert_eq!(j.device.headroom_iops, Some(0.0));
        assert!(j
            .words()
            .starts_with("overloaded (write 4.0x swept baseline), headroom 0"));
        // Both ok: the higher ratio.
        let write_ok = judge_dir(Dir::Write, obs(100.0, 1.2), Some(sw.clone()), Some(1.0));
        assert_eq!(
            Judgement::of(read.clone(), write_ok.clone()).device,
            write_ok
        );
        // Both ok at about the same ratio (within DIRECTION_TIE): the less room, whichever
        // ratio is ahead by a hair, so that the device's headroom does not jump between the
        // directions from one interval to the next (a mix at 50/50 by a 70 % sweep's shares:
        // reads' ~860 and writes' ~100, the ratios differing in the third decimal).
        let at = |dir, ms: f64, r: &Reference| {
            judge_dir(dir, obs(100.0, ms), Some(r.clone()), Some(1.0))
        };
        let roomy = Reference {
            max_iops: Some(960.0),
            ..sw.clone()
        };
        let tight = Reference {
            max_iops: Some(200.0),
            ..sw.clone()
        };
        for (r_ms, w_ms) in [(1.061, 1.060), (1.060, 1.061), (1.06, 1.06)] {
            let j = Judgement::of(at(Dir::Read, r_ms, &roomy), at(Dir::Write, w_ms, &tight));
            assert_eq!(j.device.dir, Dir::Write, "{r_ms} {w_ms}");
            assert_eq!(j.device.headroom_iops, Some(100.0));
            let j = Judgement::of(at(Dir::Read, r_ms, &tight), at(Dir::Write, w_ms, &roomy));
            assert_eq!(j.device.dir, Dir::Read, "{r_ms} {w_ms}");
        }
        // A room not known before any known figure (no claim rather than one), after none.
        let unknown_room = Reference {
            max_iops: None,
            ..sw.clone()
        };
        let j = Judgement::of(
            at(Dir::Read, 1.06, &unknown_room),
            at(Dir::Write, 1.061, &tight),
        );
        assert_eq!((j.device.dir, j.device.headroom_iops), (Dir::Read, None));
        let full = Reference {
            max_iops: Some(100.0),
            ..sw.clone()
        };
        let j = Judgement::of(
            at(Dir::Read, 1.061, &unknown_room),
            at(Dir::Write, 1.06, &full),
        );
        assert_eq!(
            (j.device.dir, j.device.headroom_iops),
            (Dir::Write, Some(0.0))
        );
        // Beyond the tie, the higher ratio still, whatever its room.
        let j = Judgement::of(at(Dir::Read, 1.3, &roomy), at(Dir::Write, 1.06, &tight));
        assert_eq!(j.device.dir, Dir::Read);
        // An unjudged direction with I/O (unknown) outranks an idle one; a judged idle one
        // outranks an unjudged idle one.
        let idle_read = judge_dir(Dir::Read, obs(0.0, 0.0), Some(le.clone()), Some(0.0));
        assert_eq!(idle_read.headroom_iops, Some(9000.0));
        let unjudged_write = judge_dir(Dir::Write, obs(10.0, 1.0), None, Some(1.0));
        assert_eq!(
            Judgement::of(idle_read.clone(), unjudged_write.clone()).device,
            unjudged_write
        );
        let idle_write = judge_dir(Dir::Write, obs(0.0, 0.0), None, Some(0.0));
        assert_eq!(
            Judgement::of(idle_read.clone(), idle_write).device,
            idle_read
        );
    }

    /// Issue 37: a direction whose requests span size classes (the kernel sized them) is
    /// judged by its classes' curves, but one class's ceiling is no ceiling of the mix: no
    /// headroom from it, and the words say why; 0 still while overloaded.
    #[test]
    fn requests_that_span_size_classes_get_no_headroom_from_one_classs_ceiling() {
        let mut r = reference(Basis::Learned, 1000.0);
        r.flags.spans_classes = true;
        r.ratio = Some(1.1);
        let d = judge_dir(Dir::Read, obs(100.0, 1.0), Some(r.clone()), Some(1.0));
        assert_eq!(d.state, State::Ok);
        assert_eq!(d.headroom_iops, None);
        assert!(
            d.headroom_words()
                .starts_with("not known (its requests span size classes"),
            "{}",
            d.headroom_words()
        );
        let j = Judgement::of(d, judge_dir(Dir::Write, obs(0.0, 0.0), None, None));
        assert!(j.words().contains("[size classes]"), "{}", j.words());
        let v = serde_json::to_value(&j).unwrap();
        assert_eq!(v["read"]["spans_classes"], true);
        assert!(v["read"]["headroom_iops"].is_null());
        // Overloaded: 0, why, whatever the mix.
        r.ratio = Some(4.0);
        let d = judge_dir(Dir::Read, obs(100.0, 1.0), Some(r.clone()), Some(1.0));
        assert_eq!(
            (d.headroom_iops, d.no_headroom),
            (Some(0.0), Some(NoHeadroom::Overloaded))
        );
        // Without the flag the same reference's ceiling is the headroom's.
        r.flags.spans_classes = false;
        r.ratio = Some(1.1);
        let d = judge_dir(Dir::Read, obs(100.0, 1.0), Some(r), Some(1.0));
        assert_eq!(d.headroom_iops, Some(900.0));
    }

    #[test]
    fn flags_are_words() {
        let f = Flags {
            estimate: Some(crate::analysis::shared::Shared::new(Estimate {
                from_level: 4.0,
                interval_ns: None,
            })),
            ceiling_at_least: true,
            mixed: true,
            ..Flags::default()
        };
        assert_eq!(f.words(), ["estimate", "at least", "mixed"]);
        // Each flag by the key the JSON gives it (the exporter's `flag` label): every flag
        // set, serialised, gives exactly these keys, in each()'s order.
        let all = Flags {
            change: Some(crate::analysis::shared::Shared::new(Change {
                at_wall_ns: 0,
                from_ns: 1e6,
                to_ns: 4e6,
                evidence: String::new(),
                confirmed: false,
            })),
            spans_classes: true,
            busy_cpus: true,
            ..f.clone()
        };
        let keys: Vec<String> = serde_json::to_value(&all)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let mut each: Vec<String> = all.each().iter().map(|(k, _)| k.to_string()).collect();
        assert!(all.each().iter().all(|(_, on)| *on));
        assert!(f
            .each()
            .iter()
            .map(|(_, on)| *on)
            .eq([true, false, true, true, false, false]));
        each.sort();
        let mut keys = keys;
        keys.sort();
        assert_eq!(each, keys);
        assert_eq!(all.words().len(), 6);
        let mut r = reference(Basis::LearnedEstimate, 1000.0);
        r.flags = f;
        // Judged (learning's ratio given): a mix without one is left unknown.
        r.ratio = Some(1.0);
        let d = judge_dir(Dir::Read, obs(100.0, 1.0), Some(r.clone()), Some(1.0));
        assert_eq!(d.headroom_words(), "at least 900");
        let j = Judgement::of(d, judge_dir(Dir::Write, obs(0.0, 0.0), None, None));
        assert!(
            j.words().ends_with("[estimate, at least, mixed]"),
            "{}",
            j.words()
        );
        // Serialised flat, and read back the same.
        let v = serde_json::to_value(&j).unwrap();
        assert_eq!(v["state"], "ok");
        assert_eq!(v["basis"], "learned_estimate");
        assert_eq!(v["read"]["mixed"], true);
        assert_eq!(v["write"]["state"], "idle");
        let back: Judgement = serde_json::from_value(v).unwrap();
        assert_eq!(back, j);
    }

    /// Issue 42: the declared cap's share is part of the judgement's words (and of the brief
    /// footer), only when the interval did I/O; it reads back from JSON.
    #[test]
    fn the_declared_cap_is_in_the_words_when_there_was_io() {
        let cap = crate::analysis::declared::DeclaredCap {
            iops: Some(3000.0),
            ..Default::default()
        };
        let mut j = Judgement::of(
            DirJudgement::unknown(Dir::Read, None),
            DirJudgement::unknown(Dir::Write, None),
        );
        j.cap = cap.nearest(2970.0, 0.0, 0.0, 0.0);
        assert!(
            j.words().ends_with(
                "; at 99 % of the declared 3,000 IOPS cap: the cap, not the device, is the limit"
            ),
            "{}",
            j.words()
        );
        assert!(
            j.brief().ends_with(", 99 % of 3,000 IOPS cap"),
            "{}",
            j.brief()
        );
        let back: Judgement = serde_json::from_value(serde_json::to_value(&j).unwrap()).unwrap();
        assert_eq!(back, j);
        j.cap = cap.nearest(0.0, 0.0, 0.0, 0.0);
        assert!(!j.words().contains("declared"), "{}", j.words());
        assert!(!j.brief().contains("cap"), "{}", j.brief());
    }
}
