//! What learning (learn/) says of a device, as every view reads it: the `learned` object of a
//! row, the request-size classes and the baseline estimate it names. Data only, here below the
//! monitor so that the monitor's rows can carry it without naming learn/ (issue 36.2: learning
//! is an observer of the monitor's intervals). learn/ computes it and re-exports these types.
//! Imports only: analysis/state.rs, analysis/shared.rs, analysis/text.rs.

use super::shared::{Shared, Written};
use super::state::{Dir, State};
use serde::{Deserialize, Serialize};

/// The `learned` object of a device in an interval (stat --json, analyze --json): null
/// fields until known. The figures are the series (direction and request-size class) that
/// carried most of the interval's requests (when idle: the one learned most); `state` is the
/// worst state of the directions with I/O.
///
/// Laid out in declaration order (`repr(C)`): what every view's judgement reads
/// (monitor::judge: the direction, the baseline or the estimate it judges by, the ratio, the
/// flags, the ceiling, the p95) in the first two cache lines, then the device time, the
/// directions and the counts every interval writes, then the figures only a curve's estimate
/// changes (the interval, the knee, the fit). A thousand devices' judgements (one per device
/// and one per direction) are written and read back each interval, past a core's L2: each
/// line a judgement reads is a wait (issue 37's cost; the estimate's pointer and the device
/// time sat in the fifth and third lines). The JSON keeps its own order and omissions
/// ([`Learned`]'s `Serialize`); the attributes here are for reading it back.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[repr(C)]
pub struct Learned {
    pub state: State,
    pub direction: Option<Dir>,
    pub size_class: Option<SizeClass>,
    /// The machine's CPUs (no idle time, or steal) may explain the interval's slow latency at
    /// the baseline's level: not learned (a step of 2x is still evidence of a change).
    #[serde(default)]
    pub cpu_busy: bool,
    pub max_iops_at_least: Option<bool>,
    /// Without a baseline at about one in flight: the learner's estimate in full (its point
    /// where the data gives one, its bounds, the level, the method); `flags.estimate` is what
    /// every view renders (issue 37). Never named a baseline.
    #[serde(default)]
    pub baseline_estimate: Option<Shared<Estimate>>,
    /// Current p95 (or mean) ÷ the baseline's, the ratio the state is judged on.
    pub ratio: Option<f64>,
    pub headroom_iops: Option<f64>,
    pub baseline_latency_ns: Option<f64>,
    /// What the judgement cannot claim (estimate, change, ceiling at least, mixed sizes):
    /// learning fills them, every view renders them through the judgement.
    #[serde(flatten, default)]
    pub flags: super::state::Flags,
    /// The swept profile's baseline disagrees with the traffic at its own level (about one
    /// in flight, the profile's direction and request size) the way a change of the device
    /// would (change.rs: 2x apart for [`change::REPORT_AFTER_S`] of evidence): from the
    /// profile's, to the traffic's, with the evidence. The judgement by the sweep carries it
    /// as its `change` (monitor::judge); on the direction it concerns.
    #[serde(default)]
    pub profile_change: Option<Shared<super::state::Change>>,
    pub max_iops: Option<f64>,
    pub baseline_p95_ns: Option<f64>,
    /// The baseline's own device time (issue 40: the block layer's split at about one in
    /// flight), when most of its requests were split.
    #[serde(default)]
    pub baseline_device_ns: Option<f64>,
    /// The other direction's IOPS beside which `max_iops` was measured (the curve's; None:
    /// not known). Every judgement's headroom rule reads it
    /// ([`super::state::ceiling_for_mix`]); not in the JSON (a recording judged again takes
    /// the ceiling as it is). In the third line, which a judgement reads already (the
    /// device time's).
    #[serde(skip)]
    pub ceiling_other_iops: Option<f64>,
    /// Each direction's own judgement (reads, writes: the exporter serves them apart), its
    /// `directions` empty; a direction without I/O in the interval is idle and judged by its
    /// series learned most. Not in the JSON (the object above is the device's).
    #[serde(skip)]
    pub directions: Vec<Learned>,
    /// Intervals learned from (not aged).
    pub intervals: u64,
    /// Seconds of traffic learned from (written to the millisecond: [`seconds_to_ms`]).
    pub learned_s: f64,
    pub summary: Option<Summary>,
    /// 95 % interval of the baseline's mean latency.
    pub baseline_interval_ns: Option<[f64; 2]>,
    pub knee_concurrency: Option<u32>,
    pub knee_range: Option<[u32; 2]>,
    pub knee_at_least: Option<f64>,
    pub fit_r_squared: Option<f64>,
    /// While the direction's requests span size classes (`flags.spans_classes`, and only
    /// then: an interval that does not span reads no further than the flags to clear it),
    /// each class's own judgement, the class these figures are of among them: every class's
    /// baseline is told, not only the one the direction is judged by (its worst class's).
    #[serde(default)]
    pub classes: Option<Box<[ClassJudgement]>>,
}

/// One size class of a direction whose requests span classes (learn/points.rs: a point per
/// class with a real share, each judged against its own class's curve), in the `learned`
/// object's `classes`: its share of the direction's requests in the interval, its state and
/// ratio against its own curve, and that curve's baseline and ceiling (null until learned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassJudgement {
    pub size_class: SizeClass,
    /// The class's share of the direction's requests in the interval (the kernel's counts).
    pub share: f64,
    pub state: State,
    pub ratio: Option<f64>,
    pub baseline_latency_ns: Option<f64>,
    pub baseline_p95_ns: Option<f64>,
    pub max_iops: Option<f64>,
    pub max_iops_at_least: Option<bool>,
    /// Judged against an estimate of the class's baseline (its traffic never came down to
    /// about one in flight, or not long enough yet: `baseline_latency_ns` null), not a
    /// baseline.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimate: bool,
}

/// The `learned` object's keys in their order since they were first written (state, counts,
/// the curve's figures, the interval's, the words), whatever the struct's layout.
impl Serialize for Learned {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        fn none<T>(x: &&Option<T>) -> bool {
            x.is_none()
        }
        fn not(x: &&bool) -> bool {
            !**x
        }
        #[derive(Serialize)]
        struct InOrder<'a> {
            state: &'a State,
            intervals: &'a u64,
            learned_s: f64,
            direction: &'a Option<Dir>,
            size_class: &'a Option<SizeClass>,
            baseline_latency_ns: &'a Option<f64>,
            baseline_p95_ns: &'a Option<f64>,
            #[serde(skip_serializing_if = "none")]
            baseline_device_ns: &'a Option<f64>,
            baseline_interval_ns: &'a Option<[f64; 2]>,
            knee_concurrency: &'a Option<u32>,
            knee_range: &'a Option<[u32; 2]>,
            knee_at_least: &'a Option<f64>,
            max_iops: &'a Option<f64>,
            max_iops_at_least: &'a Option<bool>,
            headroom_iops: &'a Option<f64>,
            ratio: &'a Option<f64>,
            fit_r_squared: &'a Option<f64>,
            #[serde(skip_serializing_if = "none")]
            baseline_estimate: &'a Option<Shared<Estimate>>,
            #[serde(skip_serializing_if = "not")]
            cpu_busy: &'a bool,
            #[serde(skip_serializing_if = "none")]
            profile_change: &'a Option<Shared<super::state::Change>>,
            #[serde(skip_serializing_if = "none")]
            classes: &'a Option<Box<[ClassJudgement]>>,
            summary: &'a Option<Summary>,
            #[serde(flatten)]
            flags: &'a super::state::Flags,
        }
        // Every field named (no `..`): a field added to Learned must be written here too.
        let Learned {
            state,
            direction,
            size_class,
            cpu_busy,
            max_iops_at_least,
            intervals,
            learned_s,
            headroom_iops,
            ratio,
            baseline_latency_ns,
            baseline_p95_ns,
            baseline_device_ns,
            max_iops,
            flags,
            profile_change,
            summary,
            directions: _,
            baseline_interval_ns,
            knee_concurrency,
            knee_range,
            knee_at_least,
            fit_r_squared,
            baseline_estimate,
            ceiling_other_iops: _,
            classes,
        } = self;
        InOrder {
            state,
            intervals,
            learned_s: seconds_to_ms(*learned_s),
            direction,
            size_class,
            baseline_latency_ns,
            baseline_p95_ns,
            baseline_device_ns,
            baseline_interval_ns,
            knee_concurrency,
            knee_range,
            knee_at_least,
            max_iops,
            max_iops_at_least,
            headroom_iops,
            ratio,
            fit_r_squared,
            baseline_estimate,
            cpu_busy,
            profile_change,
            classes,
            summary,
            flags,
        }
        .serialize(s)
    }
}

/// Seconds learned, as the `learned` object gives them: to the millisecond. They are a sum
/// of interval lengths, whose float noise (5.9999999999999165 for six hundred 10 ms
/// intervals) says nothing to a reader. Values no millisecond count holds exactly (1e12 s
/// and more, not finite) are left as they are.
pub fn seconds_to_ms(s: f64) -> f64 {
    millis(s).map_or(s, |ms| ms as f64 / 1000.0)
}

/// The whole milliseconds in `s` seconds, None where [`seconds_to_ms`] leaves `s` as it is
/// (-0.0 is 0).
fn millis(s: f64) -> Option<u64> {
    (0.0..1e12)
        .contains(&s)
        .then(|| (s * 1000.0).round() as u64)
}

/// [`seconds_to_ms`] written as serde_json writes the rounded value (the shortest decimal
/// that reads back as it: at most three decimals below 1e12 s), with integer formatting:
/// the one float every device's `learned` object formats in every interval (issue 37's
/// cost).
fn write_seconds_ms(out: &mut Vec<u8>, s: f64) {
    match millis(s) {
        Some(ms) => super::text::json_decimal_into::<3>(out, ms),
        None => serde_json::to_writer(&mut *out, &s).expect("a float serialises"),
    }
}

/// `key` then `v` as serde_json writes it (Learned::write_json and write_curve).
#[inline]
fn val<T: Serialize + ?Sized>(out: &mut Vec<u8>, key: &str, v: &T) {
    out.extend_from_slice(key.as_bytes());
    serde_json::to_writer(&mut *out, v).expect("a learned figure serialises");
}

/// `key_null` is the key followed by `null`: copied whole when `v` is None.
#[inline]
fn opt<T: Serialize>(out: &mut Vec<u8>, key_null: &str, v: &Option<T>) {
    match v {
        None => out.extend_from_slice(key_null.as_bytes()),
        Some(v) => val(out, key_of(key_null), v),
    }
}

/// [`opt`] of a float that may have been written before in the same buffer: copied from
/// there when `written` holds it with the same bits.
#[inline]
fn opt_written(out: &mut Vec<u8>, key_null: &str, v: &Option<f64>, written: &Written) {
    match v {
        None => out.extend_from_slice(key_null.as_bytes()),
        Some(v) => {
            out.extend_from_slice(key_of(key_null).as_bytes());
            written.write(out, *v);
        }
    }
}

/// The key of a `key_null` ([`opt`]): without its `null`.
fn key_of(key_null: &str) -> &str {
    &key_null[..key_null.len() - "null".len()]
}

/// `key` then a name serde writes as a string that needs no escape (or null).
#[inline]
fn name(out: &mut Vec<u8>, key: &str, name: Option<&str>) {
    out.extend_from_slice(key.as_bytes());
    match name {
        Some(n) => {
            out.push(b'"');
            out.extend_from_slice(n.as_bytes());
            out.push(b'"');
        }
        None => out.extend_from_slice(b"null"),
    }
}

impl Learned {
    /// Learning's judgement of `dir`: its own direction's, or the device's when it judged
    /// one direction only (no `directions`).
    pub fn direction(&self, dir: Dir) -> Option<&Learned> {
        if self.directions.is_empty() {
            (self.direction == Some(dir)).then_some(self)
        } else {
            self.directions.iter().find(|d| d.direction == Some(dir))
        }
    }

    /// What of this interval's learned judgement judges by something learned: the device's
    /// own object, else the direction's that does. An interval of a few writes with nothing
    /// learned of them, beside reads idle with a baseline, is the writes' (no baseline) with
    /// the reads' curve among its directions: a view that asked the device's object alone
    /// said "needs its baseline" of a device learned for minutes, for that second (`top`).
    pub fn judging(&self) -> Option<&Learned> {
        if self.judged_by().is_some() {
            return Some(self);
        }
        self.directions.iter().find(|d| d.judged_by().is_some())
    }

    /// The learned object a file's summary gives (`analyze`, the recording page): what
    /// learning said at the file's last interval, `last`, where that judges by something
    /// learned ([`Learned::judged_by`]); else, where the device at rest does (`at_rest`:
    /// learn's Learner::at_rest, the series it learned most), that one: a recording whose last
    /// interval held a few writes after minutes of reads, or requests of a size class not
    /// learned, read "no baseline yet" and "let iosat learn the baseline from the traffic"
    /// on a device learned for minutes (stop 85, vda). Else `last`, which says why nothing
    /// judges (a device learning again since a confirmed change has no curve at rest either).
    /// The classes are the last interval's where its requests spanned classes; else, where
    /// the device at rest has learned two or more classes of the same direction, those (each
    /// class's baseline: a recording of 4 KiB and 64 KiB reads that ends on 4 KiB alone, or
    /// idle, told the 4 KiB baseline only).
    pub fn for_summary(
        last: Option<Learned>,
        at_rest: impl FnOnce() -> Option<Learned>,
    ) -> Option<Learned> {
        let at_rest = std::cell::LazyCell::new(at_rest);
        let mut chosen = match last {
            Some(l) if l.judged_by().is_some() => Some(l),
            last => match &*at_rest {
                Some(r) if r.judged_by().is_some() => Some(r.clone()),
                _ => last,
            },
        };
        if let Some(l) = chosen.as_mut().filter(|l| l.classes.is_none()) {
            if let Some(r) = at_rest.as_ref().filter(|r| r.direction == l.direction) {
                l.classes.clone_from(&r.classes);
            }
        }
        chosen
    }

    /// The single-request latency learning judges this interval by, and its basis (learned,
    /// or learned_estimate): the baseline; without one (the traffic never came down to about one in
    /// flight, or too little of it has: issue 37) the estimate's point; where the estimate
    /// has only bounds, its upper bound, and only in an interval learning judged by it (its
    /// latency 1.5x past that bound or more: `ratio` set; below, nothing is claimed). None:
    /// nothing to judge by yet. What every view's judgement takes (monitor::judge), so an
    /// estimate reaches each of them labelled as one, never as a baseline.
    pub fn judged_by(&self) -> Option<(f64, super::state::Basis)> {
        use super::state::Basis;
        if let Some(b) = self.baseline_latency_ns {
            let basis = match self.flags.estimate {
                Some(_) => Basis::LearnedEstimate,
                None => Basis::Learned,
            };
            return Some((b, basis));
        }
        let e = self.baseline_estimate.as_deref()?;
        match e.latency_ns {
            Some(l) => Some((l, Basis::LearnedEstimate)),
            None => self
                .ratio
                .map(|_| (e.interval_ns[1], Basis::LearnedEstimate)),
        }
    }

    /// This judgement of direction `dir` as the judgement's rule weighs it
    /// ([`super::state::Weighed::below`]): its basis (what [`Learned::judged_by`] gives),
    /// state, ratio and headroom. Learning weighs its directions by it to take the device's
    /// (learn::binding), as every view weighs its own.
    pub fn weighed(&self, dir: Dir) -> super::state::Weighed {
        super::state::Weighed {
            dir,
            basis: self
                .judged_by()
                .map_or(super::state::Basis::None, |(_, b)| b),
            state: self.state,
            ratio: self.ratio,
            headroom_iops: self.headroom_iops,
        }
    }

    /// The curve's part of [`Learned::write_json`]: `,"direction":` through
    /// `"max_iops_at_least":`, as serde writes them.
    /// Returns where in `out` the baseline's figures are (`,"baseline_latency_ns":` through
    /// the device time, or through the p95 without one).
    fn write_curve(&self, out: &mut Vec<u8>) -> std::ops::Range<usize> {
        name(out, ",\"direction\":", self.direction.map(Dir::as_str));
        name(
            out,
            ",\"size_class\":",
            self.size_class.map(SizeClass::json_name),
        );
        let start = out.len();
        // Nothing learned of the curve yet (most devices, most of their first hour): the
        // run of nulls is one copy.
        let curve_unknown = self.baseline_latency_ns.is_none()
            && self.baseline_p95_ns.is_none()
            && self.baseline_device_ns.is_none()
            && self.baseline_interval_ns.is_none()
            && self.knee_concurrency.is_none()
            && self.knee_range.is_none()
            && self.knee_at_least.is_none()
            && self.max_iops.is_none()
            && self.max_iops_at_least.is_none();
        if curve_unknown {
            out.extend_from_slice(
                concat!(
                    ",\"baseline_latency_ns\":null,\"baseline_p95_ns\":null,",
                    "\"baseline_interval_ns\":null,\"knee_concurrency\":null,",
                    "\"knee_range\":null,\"knee_at_least\":null,\"max_iops\":null,",
                    "\"max_iops_at_least\":null",
                )
                .as_bytes(),
            );
            let nulls = ",\"baseline_latency_ns\":null,\"baseline_p95_ns\":null";
            return start..start + nulls.len();
        }
        opt(
            out,
            ",\"baseline_latency_ns\":null",
            &self.baseline_latency_ns,
        );
        opt(out, ",\"baseline_p95_ns\":null", &self.baseline_p95_ns);
        if let Some(d) = &self.baseline_device_ns {
            val(out, ",\"baseline_device_ns\":", d);
        }
        let end = out.len();
        opt(
            out,
            ",\"baseline_interval_ns\":null",
            &self.baseline_interval_ns,
        );
        opt(out, ",\"knee_concurrency\":null", &self.knee_concurrency);
        opt(out, ",\"knee_range\":null", &self.knee_range);
        opt(out, ",\"knee_at_least\":null", &self.knee_at_least);
        opt(out, ",\"max_iops\":null", &self.max_iops);
        opt(out, ",\"max_iops_at_least\":null", &self.max_iops_at_least);
        start..end
    }

    /// The `learned` object as `serde_json` writes it (the same bytes as
    /// `serde_json::to_writer(out, self)`), appended to `out`: the keys copied, not escaped
    /// one byte at a time, and the summary escaped once per estimate. `stat --json` writes
    /// one per device and interval; the object was most of what learning added to its CPU
    /// per sample (issue 37's cost). Every number is written by serde_json itself; a null
    /// is copied with its key, and the names of the state, direction and size class (plain
    /// ASCII, nothing to escape) are copied quoted as serde names them.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        self.write_json_after(out, &Written::default());
    }

    /// [`Learned::write_json`] after the device's judgement in the same buffer (`stat
    /// --json`'s device object): its ratio and headroom, which this object's usually repeat,
    /// copied from where `written` says the judgement put them when they are the same bits.
    pub fn write_json_after(&self, out: &mut Vec<u8>, written: &Written) {
        // Every field named (no `..`): a field added to Learned must be written here too.
        let Learned {
            state,
            intervals,
            learned_s,
            // Written by write_curve (and keyed by CurveKey::of):
            direction: _,
            size_class: _,
            baseline_latency_ns: _,
            baseline_p95_ns: _,
            baseline_device_ns: _,
            baseline_interval_ns: _,
            knee_concurrency: _,
            knee_range: _,
            knee_at_least: _,
            max_iops: _,
            max_iops_at_least: _,
            // Not in the JSON:
            ceiling_other_iops: _,
            headroom_iops,
            ratio,
            fit_r_squared,
            baseline_estimate,
            cpu_busy,
            profile_change,
            summary,
            flags,
            directions: _,
            classes,
        } = self;
        let super::state::Flags {
            estimate,
            change,
            ceiling_at_least,
            mixed,
            spans_classes,
            busy_cpus,
        } = flags;
        name(out, "{\"state\":", Some(state.as_str()));
        out.extend_from_slice(b",\"intervals\":");
        out.extend_from_slice(itoa::Buffer::new().format(*intervals).as_bytes());
        out.extend_from_slice(b",\"learned_s\":");
        write_seconds_ms(out, *learned_s);
        // The curve's figures (direction through max_iops_at_least) change only when the curve
        // is estimated again, as do its words: written once into the words' memo, copied
        // from there while the figures are the same ones, bit for bit (issue 37's cost: six
        // floats formatted per device and interval).
        let key = CurveKey::of(self);
        let memo = summary.as_ref().map(Summary::curve_memo);
        match memo.and_then(|m| m.get()).filter(|m| m.key == key) {
            Some(m) => out.extend_from_slice(&m.bytes),
            None => {
                let start = out.len();
                let baseline = self.write_curve(out);
                if let Some(m) = memo {
                    let _ = m.set(CurveMemo {
                        key,
                        bytes: out[start..].into(),
                        baseline: baseline.start - start..baseline.end - start,
                    });
                }
            }
        }
        // Usually the judgement's device figures, written just before: copied from there.
        opt_written(out, ",\"headroom_iops\":null", headroom_iops, written);
        opt_written(out, ",\"ratio\":null", ratio, written);
        opt(out, ",\"fit_r_squared\":null", fit_r_squared);
        // The estimate and its flag: shared until the next estimate, their JSON with them.
        if let Some(e) = baseline_estimate {
            out.extend_from_slice(b",\"baseline_estimate\":");
            out.extend_from_slice(e.json().as_bytes());
        }
        if *cpu_busy {
            val(out, ",\"cpu_busy\":", cpu_busy);
        }
        // A change's JSON is written once per change, as an estimate's.
        if let Some(c) = profile_change {
            out.extend_from_slice(b",\"profile_change\":");
            out.extend_from_slice(c.json().as_bytes());
        }
        // Only while the requests span size classes: serde's writing is enough.
        if let Some(c) = classes {
            out.extend_from_slice(b",\"classes\":");
            serde_json::to_writer(&mut *out, c).expect("class judgements serialise");
        }
        out.extend_from_slice(b",\"summary\":");
        match summary {
            Some(s) => s.write_json(out),
            None => out.extend_from_slice(b"null"),
        }
        // The flags, flattened into the object as serde writes them.
        if let Some(e) = estimate {
            out.extend_from_slice(b",\"estimate\":");
            out.extend_from_slice(e.json().as_bytes());
        }
        if let Some(c) = change {
            out.extend_from_slice(b",\"change\":");
            out.extend_from_slice(c.json().as_bytes());
        }
        if *ceiling_at_least {
            val(out, ",\"ceiling_at_least\":", ceiling_at_least);
        }
        if *mixed {
            val(out, ",\"mixed\":", mixed);
        }
        if *spans_classes {
            val(out, ",\"spans_classes\":", spans_classes);
        }
        if *busy_cpus {
            val(out, ",\"busy_cpus\":", busy_cpus);
        }
        out.push(b'}');
    }
}

impl Learned {
    /// What a device's JSON (its judgement's baseline figures, its `learned` object) copies
    /// from elsewhere on the heap, for `stat --json` to ask of memory some rows ahead
    /// (report::stat_view), in three stages, each reading only what the stage before asked
    /// for: 0, the summary (its words and its curve's memo are behind it); 1, what the summary
    /// points to (the curve's words a change's lead, the change, their JSON and the memo);
    /// 2, what those point to (the curve's words' JSON and memo behind a change's). A
    /// thousand devices' summaries, each a few cache lines of its own, were read cold one
    /// after another (issue 37's cost: perf put a third of the JSON writer's own time on the
    /// first read of each row's summary). `ask` gets an address and a size: a hint that reads
    /// nothing.
    pub fn json_heap(&self, stage: u8, mut ask: impl FnMut(*const u8, usize)) {
        let Some(s) = &self.summary else { return };
        let mut text = |s: &Summary| {
            ask(
                std::sync::Arc::as_ptr(&s.0).cast(),
                std::mem::size_of::<SummaryText>(),
            )
        };
        if stage == 0 {
            return text(s);
        }
        // A summary's JSON and its curve's memo, where written.
        fn written(s: &Summary, ask: &mut impl FnMut(*const u8, usize)) {
            if let Some(j) = s.0.json.get() {
                ask(j.as_ptr(), j.len());
            }
            if let Some(m) = s.0.curve.get() {
                ask(m.bytes.as_ptr(), m.bytes.len());
            }
        }
        match (stage, &s.0.words) {
            (1, Words::Before(change, rest)) => {
                if let Some(r) = rest {
                    text(r);
                }
                let (p, n) = change.at();
                ask(p, n);
                written(s, &mut ask);
            }
            (1, _) => written(s, &mut ask),
            (_, Words::Before(change, rest)) => {
                if let Some(j) = change.json_written() {
                    ask(j.as_ptr(), j.len());
                }
                ask(change.evidence.as_ptr(), change.evidence.len());
                if let Some(r) = rest {
                    written(r, &mut ask);
                }
            }
            _ => {}
        }
    }
}

/// The curve's judgement in words, shared by every interval's [`Learned`] until the next
/// estimate (a string copied per device and interval was a tenth of learning's cost), and
/// written only when something reads it: a curve is re-estimated every 10 to 60 intervals
/// of every device, and its words (floats formatted exactly) were a third of learning's
/// instructions while the text view reads them for no row (issue 37's cost).
#[derive(Clone)]
pub struct Summary(std::sync::Arc<SummaryText>);

struct SummaryText {
    text: std::sync::OnceLock<Box<str>>,
    /// The words as a JSON string (quoted and escaped), written when `stat --json` first
    /// writes them: every interval's `learned` object repeats them until the next estimate.
    json: std::sync::OnceLock<Box<str>>,
    /// Where the words come from when first read (written already: `text` is set).
    words: Words,
    /// The curve's part of the `learned` object (Learned::write_curve), with the figures it
    /// was written from: the words and the figures come from one estimate.
    curve: std::sync::OnceLock<CurveMemo>,
}

/// The curve's part of the `learned` object as written ([`Learned::write_curve`]), with the
/// figures it was written from and where in it the baseline's figures are: a judgement
/// writes those with the same keys, the same way (Summary::baseline_json).
struct CurveMemo {
    key: CurveKey,
    bytes: Box<[u8]>,
    baseline: std::ops::Range<usize>,
}

/// How a [`Summary`]'s words are made.
enum Words {
    /// Given whole ([`Summary::text`]).
    Written,
    /// By a function, when first read ([`Summary::lazy`]).
    Lazy(Box<dyn Fn() -> String + Send + Sync>),
    /// A change's evidence before another summary's words ([`Summary::before`]): made again
    /// in each interval while the change is pending, the other's only at an estimate.
    Before(super::shared::Shared<super::state::Change>, Option<Summary>),
}

/// The figures [`Learned::write_curve`] writes, floats by their bits (-0.0 and 0.0 are
/// written apart): what a memo of those bytes must match to be copied.
#[derive(Clone, Copy, PartialEq, Eq)]
struct CurveKey {
    direction: Option<Dir>,
    size_class: Option<SizeClass>,
    /// Baseline mean, p95, device time, knee at least, max IOPS.
    floats: [Option<u64>; 5],
    interval: Option<[u64; 2]>,
    knee: Option<u32>,
    knee_range: Option<[u32; 2]>,
    at_least: Option<bool>,
}

impl CurveKey {
    fn of(l: &Learned) -> CurveKey {
        let bits = |v: Option<f64>| v.map(f64::to_bits);
        CurveKey {
            direction: l.direction,
            size_class: l.size_class,
            floats: [
                bits(l.baseline_latency_ns),
                bits(l.baseline_p95_ns),
                bits(l.baseline_device_ns),
                bits(l.knee_at_least),
                bits(l.max_iops),
            ],
            interval: l.baseline_interval_ns.map(|i| i.map(f64::to_bits)),
            knee: l.knee_concurrency,
            knee_range: l.knee_range,
            at_least: l.max_iops_at_least,
        }
    }
}

impl Summary {
    fn of(words: Words) -> Summary {
        Summary(std::sync::Arc::new(SummaryText {
            text: std::sync::OnceLock::new(),
            json: std::sync::OnceLock::new(),
            words,
            curve: std::sync::OnceLock::new(),
        }))
    }

    /// Words already written.
    pub fn text(s: impl Into<String>) -> Summary {
        let summary = Summary::of(Words::Written);
        let _ = summary.0.text.set(s.into().into_boxed_str());
        summary
    }

    /// Words written by `make` when first read.
    pub fn lazy(make: impl Fn() -> String + Send + Sync + 'static) -> Summary {
        Summary::of(Words::Lazy(Box::new(make)))
    }

    /// The evidence of `change`, "; ", then `rest`'s words (a change told before the curve's
    /// words). A pending change's words are new in each interval (its evidence counts the
    /// intervals), the curve's only at an estimate: the JSON is the change's escaped words
    /// before `rest`'s, escaped once per estimate, and the curve's figures are `rest`'s memo
    /// (issue 37's cost: a changed device's summary and figures were written whole in each
    /// interval).
    pub fn before(
        change: super::shared::Shared<super::state::Change>,
        rest: Option<Summary>,
    ) -> Summary {
        Summary::of(Words::Before(change, rest))
    }

    pub fn as_str(&self) -> &str {
        let t = &*self.0;
        t.text.get_or_init(|| match &t.words {
            Words::Written => Box::default(),
            Words::Lazy(make) => make().into(),
            Words::Before(change, rest) => {
                let rest = rest.as_ref().map_or("", |s| s.as_str());
                let mut s = String::with_capacity(change.evidence.len() + 2 + rest.len());
                for part in [change.evidence.as_str(), "; ", rest] {
                    s.push_str(part);
                }
                s.into()
            }
        })
    }

    /// The words as a JSON string, quoted and escaped as serde_json writes them: escaped once
    /// per summary, not once per interval that carries it.
    pub fn as_json(&self) -> &str {
        let t = &*self.0;
        t.json.get_or_init(|| {
            let Words::Before(change, rest) = &t.words else {
                return serde_json::to_string(self.as_str())
                    .expect("a string serialises")
                    .into();
            };
            let mut s = Vec::with_capacity(
                change.evidence.len() + 4 + rest.as_ref().map_or(0, |r| r.as_json().len()),
            );
            Summary::before_json(&mut s, change, rest.as_ref());
            String::from_utf8(s).expect("JSON is UTF-8").into()
        })
    }

    /// [`Summary::as_json`] appended to `out`. A pending change's words are new in each
    /// interval (its evidence counts them) and no later interval writes them again: they are
    /// written straight into `out`, not kept (a string made, copied and dropped per device and
    /// interval, whose freed pages were faulted in again in the next: 32 page faults a sample
    /// at 1,000 changed devices, issue 37's cost).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match &self.0.words {
            Words::Before(change, rest) if !change.confirmed && self.0.json.get().is_none() => {
                Summary::before_json(out, change, rest.as_ref())
            }
            _ => out.extend_from_slice(self.as_json().as_bytes()),
        }
    }

    /// The JSON of a change's words before `rest`'s, appended to `out`. serde_json escapes
    /// each character by itself: the escape of the words joined is the escapes joined. The
    /// change's (by the string writer that copies words needing no escape whole), without its
    /// closing quote, then the rest's (escaped once per estimate) without its opening one.
    fn before_json(out: &mut Vec<u8>, change: &super::state::Change, rest: Option<&Summary>) {
        super::shared::json_str(out, &change.evidence);
        out.pop();
        out.extend_from_slice(b"; ");
        match rest.map(Summary::as_json) {
            Some(r) => out.extend_from_slice(&r.as_bytes()[1..]),
            None => out.push(b'"'),
        }
    }

    /// Where the curve's figures are kept: a change told before a curve's words keeps them
    /// in that curve's summary, which lasts until the next estimate.
    fn curve_memo(&self) -> &std::sync::OnceLock<CurveMemo> {
        match &self.0.words {
            Words::Before(_, Some(rest)) => rest.curve_memo(),
            _ => &self.0.curve,
        }
    }

    /// The baseline's figures as the `learned` object last wrote them with this summary
    /// (`,"baseline_latency_ns":` through the device time, the keys and floats a
    /// judgement writes too), with the figures' bits: None until it was written.
    pub fn baseline_json(&self) -> Option<super::state::BaselineJson<'_>> {
        let m = self.curve_memo().get()?;
        let f = m.key.floats;
        Some(super::state::BaselineJson {
            figures: [f[0], f[1], f[2]],
            bytes: &m.bytes[m.baseline.clone()],
        })
    }

    /// The same words, not only equal ones (no string compared).
    pub fn same(&self, other: &Summary) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::ops::Deref for Summary {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for Summary {
    fn eq(&self, other: &Summary) -> bool {
        self.same(other) || self.as_str() == other.as_str()
    }
}

impl Serialize for Summary {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Summary {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Summary, D::Error> {
        String::deserialize(d).map(Summary::text)
    }
}

/// Request-size class of an interval's mean request: 4 KiB reads are never judged against
/// 1 MiB ones (a large request takes longer on any device). The block-latency program classes
/// each request by these edges (bpf/iolat.bpf.c's SMALL_MAX_BYTES, MEDIUM_MAX_BYTES); without
/// it only the mean is known and a mean between classes is mixed (learn/points.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeClass {
    /// ≤ 8 KiB (and its merges): database pages, random I/O.
    Small,
    /// ≤ 64 KiB (and its merges).
    Medium,
    /// Larger: sequential, bulk.
    Large,
}

/// A request merged from pages is a little larger than its class's edge (8 KiB read ahead into
/// 8.05 KiB): a class's edge tolerates this share over it.
pub const MERGE_TOLERANCE: f64 = 1.25;

impl SizeClass {
    /// The class of a mean request size, its edges tolerating merges: up to 10 KiB is the
    /// small class (8 KiB × [`MERGE_TOLERANCE`]), up to 80 KiB the medium one.
    pub fn of(bytes: f64) -> SizeClass {
        if bytes <= 8192.0 * MERGE_TOLERANCE {
            SizeClass::Small
        } else if bytes <= 65536.0 * MERGE_TOLERANCE {
            SizeClass::Medium
        } else {
            SizeClass::Large
        }
    }

    /// A mean size between two classes: above a class's edge by more than a merge, and below
    /// the next power of two by more than one (10–12.8 KiB, 80–102.4 KiB). Requests come in
    /// powers of two (pages, database blocks, read-ahead windows), so such a mean is two classes
    /// each carrying a real share, not one class's requests.
    pub fn mixed(bytes: f64) -> bool {
        // Each edge in turn, not over an array (which compiled to vector code costing ~20
        // instructions a call): a mean within the small class, the usual one, is two
        // comparisons (issue 37's cost).
        let between =
            |edge: f64| bytes > edge * MERGE_TOLERANCE && bytes < 2.0 * edge / MERGE_TOLERANCE;
        between(8192.0) || between(65536.0)
    }

    /// The name serde gives it (snake_case), for the JSON written by hand.
    pub fn json_name(self) -> &'static str {
        match self {
            SizeClass::Small => "small",
            SizeClass::Medium => "medium",
            SizeClass::Large => "large",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SizeClass::Small => "<=8KiB",
            SizeClass::Medium => "<=64KiB",
            SizeClass::Large => ">64KiB",
        }
    }
}

/// How an [`Estimate`] was come by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EstimateMethod {
    /// About one in flight, but fewer intervals than a baseline needs.
    Thin,
    /// The two lowest levels' latencies agree (within `learn::estimate::FLAT`): both below the units, where
    /// latency is the service time, so the lowest level's latency is the baseline's.
    Flat,
    /// One level only, or levels whose IOPS no longer grew: only the bounds.
    Bounds,
}

/// The baseline estimated where the traffic never came down to about one request in flight
/// (issue 37): from the lowest learned level L. Why these bounds: a closed loop of c requests
/// on U parallel units of service S answers in S while c ≤ U and in c·S/U past them, so the
/// lowest level's latency L(c) is at most c/U times S and at least S... turned round, S lies
/// in [L(c)/c, L(c)] (U between 1 and c). A point estimate is only given when the next level
/// up, with at least half again the in-flight, answered within `learn::estimate::FLAT` of it: latency flat
/// between them means both are at or below the units, where latency is S. This is the lowest
/// levels' extrapolation (a flat line to one in flight), not an M/M/c-style correction, which
/// would need the number of units and the arrival process, neither of which the counters give.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Estimate {
    /// The mean in flight of the level it came from.
    pub from_in_flight: f64,
    /// The estimated single-request latency; None: only the bounds are known.
    pub latency_ns: Option<f64>,
    /// Where the single-request latency lies.
    pub interval_ns: [f64; 2],
    pub method: EstimateMethod,
}

impl super::shared::Json for Estimate {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::state::{Change, Flags};

    /// Two classes' judgements, one judged against its baseline (its p95 not a number) and one
    /// by an estimate with nothing else known: every key and omission of `classes`.
    fn two_classes() -> Box<[ClassJudgement]> {
        Box::new([
            ClassJudgement {
                size_class: SizeClass::Small,
                share: 0.5,
                state: State::Ok,
                ratio: Some(1.0),
                baseline_latency_ns: Some(2.08e6),
                baseline_p95_ns: Some(f64::NAN),
                max_iops: Some(1.0 / 3.0),
                max_iops_at_least: Some(true),
                estimate: false,
            },
            ClassJudgement {
                size_class: SizeClass::Large,
                share: 0.5,
                state: State::Unknown,
                ratio: None,
                baseline_latency_ns: None,
                baseline_p95_ns: None,
                max_iops: None,
                max_iops_at_least: None,
                estimate: true,
            },
        ])
    }

    fn bare() -> Learned {
        Learned {
            state: State::Unknown,
            intervals: 50,
            learned_s: 0.5000000000000002,
            direction: None,
            size_class: None,
            baseline_latency_ns: None,
            baseline_p95_ns: None,
            baseline_device_ns: None,
            baseline_interval_ns: None,
            knee_concurrency: None,
            knee_range: None,
            knee_at_least: None,
            max_iops: None,
            max_iops_at_least: None,
            headroom_iops: None,
            ratio: None,
            fit_r_squared: None,
            ceiling_other_iops: None,
            baseline_estimate: None,
            cpu_busy: false,
            profile_change: None,
            summary: None,
            flags: Flags::default(),
            directions: Vec::new(),
            classes: None,
        }
    }

    /// Seconds learned go out to the millisecond, written by integer formatting as the same
    /// bytes serde writes for the rounded value: whole seconds, every number of decimals, the
    /// noise of summed intervals, halves of a millisecond, the edge and beyond it.
    #[test]
    fn seconds_learned_are_written_to_the_millisecond_as_serde_writes_them() {
        let mut cases = vec![
            0.0,
            -0.0,
            0.001,
            0.0005,
            0.02,
            0.1,
            0.5000000000000002,
            1.0000000000000007,
            5.9999999999999165,
            6.0,
            12.345,
            12.3405,
            86_400.25,
            999_999_999_999.999,
            1e12,
            1e300,
            f64::INFINITY,
        ];
        // Sums of 10 ms and 1 s intervals, as the model adds them up.
        let (mut a, mut b) = (0.0, 0.0);
        for _ in 0..5000 {
            a += 0.01;
            b += 1.0003;
            cases.extend([a, b]);
        }
        for s in cases {
            let mut out = Vec::new();
            write_seconds_ms(&mut out, s);
            let serde = serde_json::to_string(&seconds_to_ms(s)).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), serde, "{s}");
        }
        assert_eq!(
            serde_json::to_string(&seconds_to_ms(5.9999999999999165)).unwrap(),
            "6.0"
        );
        assert_eq!(
            serde_json::to_string(&seconds_to_ms(0.0005)).unwrap(),
            "0.001"
        );
    }

    /// `stat --json` writes the `learned` object by hand (Learned::write_json): the same bytes
    /// as serde's, with every optional field absent, null and present, and words that need
    /// escaping.
    #[test]
    fn the_learned_object_written_by_hand_is_serdes_byte_for_byte() {
        let change = crate::analysis::shared::Shared::new(Change {
            at_wall_ns: -3,
            from_ns: 2.08e6,
            to_ns: 7.69e6,
            evidence: "a step \"2x\"\n\tat one in flight \u{1}".into(),
            confirmed: false,
        });
        let estimate = crate::analysis::shared::Shared::new(Estimate {
            from_in_flight: 2.0,
            latency_ns: Some(4.1e6),
            interval_ns: [2.05e6, 4.1e6],
            method: EstimateMethod::Bounds,
        });
        let full = Learned {
            state: State::Overloaded,
            intervals: u64::MAX,
            learned_s: 1e300,
            direction: Some(Dir::Write),
            size_class: Some(SizeClass::Large),
            baseline_latency_ns: Some(1.0 / 3.0),
            baseline_p95_ns: Some(f64::NAN),
            baseline_device_ns: Some(1.5e6),
            baseline_interval_ns: Some([0.9e6, f64::INFINITY]),
            knee_concurrency: Some(4),
            knee_range: Some([2, 8]),
            knee_at_least: Some(6.0),
            max_iops: Some(3400.0),
            max_iops_at_least: Some(true),
            headroom_iops: Some(-0.0),
            ratio: Some(3.1),
            fit_r_squared: Some(0.987654321),
            ceiling_other_iops: None,
            baseline_estimate: Some(estimate),
            cpu_busy: true,
            profile_change: Some(change.clone()),
            summary: Some(Summary::text(
                "baseline 2.08 ms \"mean\" \\ at 1.0 in flight",
            )),
            flags: Flags {
                estimate: Some(crate::analysis::shared::Shared::new(
                    crate::analysis::state::Estimate {
                        from_level: 2.0,
                        interval_ns: None,
                    },
                )),
                change: Some(change),
                ceiling_at_least: true,
                mixed: true,
                spans_classes: true,
                busy_cpus: true,
            },
            directions: vec![bare()],
            classes: Some(two_classes()),
        };
        let lazy = Learned {
            summary: Some(Summary::lazy(|| "no baseline yet: 41 intervals".into())),
            state: State::Idle,
            flags: Flags {
                mixed: true,
                ..Flags::default()
            },
            ..bare()
        };
        // The same words with other figures (a zero's sign, another ceiling, no interval):
        // the memo of full's curve figures, made from those words, is not theirs.
        let other_figures = Learned {
            knee_at_least: Some(-0.0),
            max_iops: Some(3400.5),
            baseline_interval_ns: None,
            ..full.clone()
        };
        // A change told before the curve's words (Summary::before): the words' JSON joined
        // from the two escapes (the change's words need escaping too), the curve's figures
        // kept in the curve's own summary, which `full` carries as well with other figures:
        // the memo is used only for its own figures, whichever wrote it first.
        let change = full.flags.change.clone().expect("full has a change");
        let told = Learned {
            summary: Some(Summary::before(change.clone(), full.summary.clone())),
            ..other_figures.clone()
        };
        let told_alone = Learned {
            summary: Some(Summary::before(change.clone(), None)),
            ..bare()
        };
        let mut checked = 0;
        let words = told.summary.as_ref().unwrap();
        assert_eq!(
            words.as_str(),
            format!(
                "{}; {}",
                change.evidence,
                full.summary.as_ref().unwrap().as_str()
            )
        );
        assert_eq!(
            told_alone.summary.as_ref().unwrap().as_str(),
            format!("{}; ", change.evidence)
        );
        for l in [told, bare(), full, other_figures, lazy, told_alone] {
            // Before the learned object is written, its summary holds no baseline bytes
            // for a judgement (unless another object with the summary wrote them).
            let mut out = b"[".to_vec();
            l.write_json(&mut out);
            // After: the baseline's figures as a judgement of the same figures writes them
            // (a judgement's JSON cut from its `,"baseline_latency_ns":` to what follows).
            if let Some(k) = l.summary.as_ref().and_then(Summary::baseline_json) {
                let figures = [
                    l.baseline_latency_ns,
                    l.baseline_p95_ns,
                    l.baseline_device_ns,
                ];
                if k.figures == figures.map(|f| f.map(f64::to_bits)) {
                    let j = crate::analysis::state::DirJudgement {
                        baseline_latency_ns: figures[0],
                        baseline_p95_ns: figures[1],
                        baseline_device_ns: figures[2],
                        ..crate::analysis::state::DirJudgement::unknown(Dir::Read, None)
                    };
                    let json = serde_json::to_string(&j).unwrap();
                    let from = json.find(",\"baseline_latency_ns\":").unwrap();
                    assert_eq!(
                        std::str::from_utf8(k.bytes).unwrap(),
                        &json[from..json.len() - 1]
                    );
                    checked += 1;
                }
            }
            // Twice: the summary's escaped words, the estimates' JSON and the curve's figures
            // are kept from the first time.
            out.push(b',');
            l.write_json(&mut out);
            out.push(b']');
            let want = serde_json::to_string(&[&l, &l]).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
        // Figures and nulls, with and without a device time, were met.
        assert!(checked >= 4, "{checked}");
    }

    /// The `learned` object after a judgement in the same buffer copies the ratio and
    /// headroom the judgement wrote only when they are the same bits: the bytes are serde's
    /// whether copied or written (0.0 beside -0.0, a NaN, figures the judgement did not
    /// write, a judgement that wrote none).
    #[test]
    fn the_learned_object_after_a_judgement_is_serdes_whatever_was_copied() {
        let figures = [3.1, -0.0, 0.0, 300.0055432561029, f64::NAN, 1e300];
        for (i, ratio) in figures.into_iter().enumerate() {
            for headroom in [figures[(i + 1) % 6], ratio, figures[(i + 3) % 6]] {
                for noted in [[ratio, headroom], [headroom, ratio], [-ratio, 0.0]] {
                    let l = Learned {
                        ratio: Some(ratio),
                        headroom_iops: Some(headroom),
                        ..bare()
                    };
                    // The judgement's part of the buffer: its floats as serde writes them.
                    let mut out = b"{\"judged\":[".to_vec();
                    let mut written = crate::analysis::shared::Written::default();
                    for (k, v) in noted.into_iter().enumerate() {
                        if k > 0 {
                            out.push(b',');
                        }
                        let at = out.len();
                        serde_json::to_writer(&mut out, &v).unwrap();
                        written.note(v, at..out.len());
                    }
                    out.extend_from_slice(b"],\"learned\":");
                    let prefix = String::from_utf8(out.clone()).unwrap();
                    l.write_json_after(&mut out, &written);
                    out.push(b'}');
                    let want = format!("{prefix}{}}}", serde_json::to_string(&l).unwrap());
                    assert_eq!(String::from_utf8(out).unwrap(), want);
                }
            }
        }
    }

    /// A summary led by a change (its words escaped by the string writer, the rest's joined
    /// to them) is serde's escape of the words joined, whatever the change's words hold,
    /// confirmed or not, with and without other words after them.
    #[test]
    fn a_summary_led_by_a_change_is_serdes_escape_of_its_words() {
        let words = [
            "device changed: 8.21 ms at one in flight, was 2.14 ms (19 intervals)",
            "",
            "\"",
            "a \"quoted\" step",
            "ends with a backslash \\",
            "two lines\nand a tab\t",
            "\u{1} control first",
            "µs and 2× in UTF-8",
            ":\"evidence\":\"planted\"",
        ];
        let rest = Summary::text("baseline 2.08 ms \"mean\" at 1.0 in flight");
        for evidence in words {
            for confirmed in [false, true] {
                let c = crate::analysis::shared::Shared::new(Change {
                    at_wall_ns: -1_700_000_000_000_000_000,
                    from_ns: f64::NAN,
                    to_ns: 7.69e6,
                    evidence: evidence.into(),
                    confirmed,
                });
                for r in [None, Some(rest.clone())] {
                    let s = Summary::before(c.clone(), r);
                    // Written straight (a pending change's, before any as_json), then kept.
                    let mut direct = Vec::new();
                    s.write_json(&mut direct);
                    assert_eq!(
                        s.as_json(),
                        serde_json::to_string(s.as_str()).unwrap(),
                        "{evidence:?} confirmed {confirmed}"
                    );
                    assert_eq!(direct, s.as_json().as_bytes(), "{evidence:?}");
                    let mut kept = Vec::new();
                    s.write_json(&mut kept);
                    assert_eq!(kept, direct);
                }
            }
        }
    }

    /// What a view asks of memory ahead of a device's JSON (`json_heap`): in stage 0 the
    /// summary, in stage 1 what the summary points to (a change's and the curve words it
    /// leads, the summary's own JSON), in stage 2 what those point to (the evidence, the curve
    /// words' JSON) — each within the value it names, and nothing without a summary.
    #[test]
    fn the_heap_a_devices_json_copies_is_asked_for_stage_by_stage() {
        let asked = |l: &Learned, stage: u8| {
            let mut v = Vec::new();
            l.json_heap(stage, |p, n| v.push((p as usize, n)));
            v
        };
        let within = |v: &[(usize, usize)], p: *const u8, n: usize| {
            v.iter().any(|&(a, m)| a == p as usize && m == n)
        };
        let rest = Summary::text("baseline 2.08 ms mean at 1.0 in flight");
        let rest_json = rest.as_json().to_string();
        let change = crate::analysis::shared::Shared::new(Change {
            at_wall_ns: 0,
            from_ns: 2.08e6,
            to_ns: 8.21e6,
            evidence: "device changed: 8.21 ms at one in flight".into(),
            confirmed: false,
        });
        let mut l = bare();
        l.summary = None;
        assert!(asked(&l, 0).is_empty() && asked(&l, 1).is_empty());
        l.summary = Some(Summary::before(change.clone(), Some(rest.clone())));
        let s = l.summary.clone().unwrap();
        let text = |s: &Summary| {
            (
                std::sync::Arc::as_ptr(&s.0).cast::<u8>(),
                std::mem::size_of::<SummaryText>(),
            )
        };
        let (p, n) = text(&s);
        assert_eq!(asked(&l, 0), [(p as usize, n)]);
        let one = asked(&l, 1);
        let (p, n) = text(&rest);
        assert!(within(&one, p, n), "the curve's words: {one:?}");
        let (p, n) = change.at();
        assert!(within(&one, p, n), "the change: {one:?}");
        let two = asked(&l, 2);
        let ev = &change.evidence;
        assert!(within(&two, ev.as_ptr(), ev.len()), "the evidence: {two:?}");
        let j = rest.as_json();
        assert_eq!(j, rest_json);
        assert!(
            within(&two, j.as_ptr(), j.len()),
            "the curve words' JSON: {two:?}"
        );
        // A curve's own words: their JSON once written, nothing further behind them.
        l.summary = Some(rest.clone());
        let one = asked(&l, 1);
        assert!(within(&one, j.as_ptr(), j.len()), "{one:?}");
        assert!(asked(&l, 2).is_empty());
    }

    /// The names written by hand (state, direction, size class) are serde's, for every one.
    #[test]
    fn every_name_written_by_hand_is_serdes() {
        let states = State::ALL;
        let classes = [SizeClass::Small, SizeClass::Medium, SizeClass::Large];
        for (k, state) in states.into_iter().enumerate() {
            let l = Learned {
                state,
                direction: Some(Dir::ALL[k % 2]),
                size_class: Some(classes[k % 3]),
                ..bare()
            };
            let mut out = Vec::new();
            l.write_json(&mut out);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&l).unwrap()
            );
        }
    }
}
