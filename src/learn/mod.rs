//! Production learning (docs/design.md §4, issue 26): each device's baseline and saturation curve
//! learned from its own traffic, so a production disk is judged without a benchmark. Every
//! interval is one point of Little's law per direction (in flight = Δtime/Δt, IOPS = Δios/Δt,
//! mean latency = Δtime/Δios, plus the block layer's percentiles where that source runs);
//! points.rs turns an interval into points by what happened while the device was busy (and
//! marks mixed sizes and CPU noise); change.rs holds a step at the baseline's level out as
//! news; model.rs accumulates them into a bounded, ageing model per direction and request-size
//! class; estimate.rs turns it into a baseline, a knee (or a lower bound) and a capacity
//! with the sweep's own rules; the vocabulary (idle, ok, saturated, overloaded, unknown)
//! and the one headroom are analysis/state.rs's; store.rs keeps the model across runs.
//!
//! [`Learner`] is fed the interval reports the one replay engine produces (live: the
//! collector's; `analyze`/`report` of a recording: the replay's), so learning live and
//! analysing the recording of the same intervals say the same. The only IO is store.rs.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

pub mod change;
pub mod estimate;
pub mod model;
pub mod points;
pub mod store;

pub use crate::analysis::learned::{Learned, Summary};
use crate::analysis::shared::Shared;
pub use crate::analysis::state::State;
use crate::monitor::interval::{DeviceRow, IntervalReport};
use crate::monitor::DiskRates;
use estimate::Curve;
use model::{DeviceModel, Dir, Point};
pub use points::{points_of, Points};
use std::collections::HashMap;
use std::sync::Arc;

/// How learning is set up (config builds it from `--no-learn`, `--state-dir`, `--target-p95`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LearnSpec {
    /// Where the state is kept (None: in memory only).
    pub state_dir: Option<std::path::PathBuf>,
    /// The user's target p95 in ns (None: 3x the baseline p95).
    pub target_p95_ns: Option<f64>,
}

/// `from` written over `to` unless it is the same value already (`same`: the same shared
/// value, not only an equal one): a reference count is touched only when it changes.
fn share<T: Clone>(to: &mut Option<T>, from: &Option<T>, same: fn(&T, &T) -> bool) {
    let same = match (&*to, from) {
        (Some(a), Some(b)) => same(a, b),
        (None, None) => true,
        _ => false,
    };
    if !same {
        to.clone_from(from);
    }
}

/// [`share`] of a value that is there: `from` cloned over `to` only where `to` does not hold
/// it already.
fn share_some<T: Clone>(to: &mut Option<T>, from: &T, same: fn(&T, &T) -> bool) {
    if !to.as_ref().is_some_and(|t| same(t, from)) {
        *to = Some(from.clone());
    }
}

impl Learned {
    fn empty(m: &DeviceModel) -> Learned {
        Learned {
            state: State::Unknown,
            intervals: m.intervals_seen,
            learned_s: m.seconds_seen,
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
            flags: Default::default(),
            directions: Vec::new(),
            classes: None,
        }
    }

    /// [`Learned::empty`] written over `self` in place, its `directions` (and their
    /// allocation) left as they are and its summary kept when it is `summary` already: a
    /// judgement per device and interval moves no 400-byte value and touches no other
    /// allocation's reference count.
    fn reset(&mut self, m: &DeviceModel, summary: Option<&Summary>) {
        // Every field named (no `..`): a field added to Learned must be reset here too, and
        // in reset_interval unless a curve gives it.
        let Learned {
            state,
            intervals,
            learned_s,
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
            ceiling_other_iops,
            baseline_estimate,
            cpu_busy,
            profile_change,
            summary: old_summary,
            flags,
            directions: _,
            classes,
        } = self;
        *state = State::Unknown;
        *intervals = m.intervals_seen;
        *learned_s = m.seconds_seen;
        *direction = None;
        *size_class = None;
        *baseline_latency_ns = None;
        *baseline_p95_ns = None;
        *baseline_device_ns = None;
        *baseline_interval_ns = None;
        *knee_concurrency = None;
        *knee_range = None;
        *knee_at_least = None;
        *max_iops = None;
        *max_iops_at_least = None;
        *headroom_iops = None;
        *ratio = None;
        *fit_r_squared = None;
        *ceiling_other_iops = None;
        *baseline_estimate = None;
        *cpu_busy = false;
        *profile_change = None;
        *flags = Default::default();
        *classes = None;
        let same = matches!((&*old_summary, summary), (Some(a), Some(b)) if a.same(b));
        if !same {
            *old_summary = summary.cloned();
        }
    }

    /// `src`'s judgement written over `self`, but for `directions` (the device's judgement
    /// from its main direction's): the interval's own figures always, the curve's only when
    /// they are another curve's (the usual interval holds the same one: issue 37's cost,
    /// [`Learned::reset_to`]'s rule), the shared values (words, estimate, change) only when
    /// they are other ones, where a clone built a whole value, dropped the old one and moved
    /// the new in, touching every reference count twice.
    fn copy_judgement_from(&mut self, src: &Learned) {
        use crate::analysis::shared::Shared;
        // What reset_interval writes, copied.
        self.state = src.state;
        self.intervals = src.intervals;
        self.learned_s = src.learned_s;
        self.headroom_iops = src.headroom_iops;
        self.ratio = src.ratio;
        self.cpu_busy = src.cpu_busy;
        share(
            &mut self.profile_change,
            &src.profile_change,
            Shared::ptr_eq,
        );
        share(&mut self.flags.change, &src.flags.change, Shared::ptr_eq);
        self.flags.mixed = src.flags.mixed;
        // Held only while the requests span classes (the flag is read first: an interval
        // that does not span reads no further).
        if self.flags.spans_classes || src.flags.spans_classes {
            self.classes.clone_from(&src.classes);
        }
        self.flags.spans_classes = src.flags.spans_classes;
        self.flags.busy_cpus = src.flags.busy_cpus;
        if self.holds(src.summary.as_ref(), src.direction, src.size_class) {
            return;
        }
        // Every field named (no `..`): a field added to Learned must be copied here too.
        let Learned {
            // The interval's, copied above:
            state: _,
            intervals: _,
            learned_s: _,
            headroom_iops: _,
            ratio: _,
            cpu_busy: _,
            profile_change: _,
            classes: _,
            // The curve's:
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
            fit_r_squared,
            ceiling_other_iops,
            baseline_estimate,
            summary,
            flags,
            directions: _,
        } = self;
        *direction = src.direction;
        *size_class = src.size_class;
        *baseline_latency_ns = src.baseline_latency_ns;
        *baseline_p95_ns = src.baseline_p95_ns;
        *baseline_device_ns = src.baseline_device_ns;
        *baseline_interval_ns = src.baseline_interval_ns;
        *knee_concurrency = src.knee_concurrency;
        *knee_range = src.knee_range;
        *knee_at_least = src.knee_at_least;
        *max_iops = src.max_iops;
        *max_iops_at_least = src.max_iops_at_least;
        *fit_r_squared = src.fit_r_squared;
        *ceiling_other_iops = src.ceiling_other_iops;
        share(baseline_estimate, &src.baseline_estimate, Shared::ptr_eq);
        share(summary, &src.summary, Summary::same);
        let crate::analysis::state::Flags {
            estimate,
            change: _,
            ceiling_at_least,
            mixed: _,
            spans_classes: _,
            busy_cpus: _,
        } = flags;
        share(estimate, &src.flags.estimate, Shared::ptr_eq);
        *ceiling_at_least = src.flags.ceiling_at_least;
    }

    /// What [`Learned::reset`] resets that is not a curve's: the interval's own figures.
    /// A field that a curve does not give must be reset here as well as there.
    fn reset_interval(&mut self, m: &DeviceModel) {
        self.state = State::Unknown;
        self.intervals = m.intervals_seen;
        self.learned_s = m.seconds_seen;
        self.headroom_iops = None;
        self.ratio = None;
        self.cpu_busy = false;
        self.profile_change = None;
        self.flags.change = None;
        self.flags.mixed = false;
        if self.flags.spans_classes {
            // Held only while the flag is (Learned::classes).
            self.classes = None;
        }
        self.flags.spans_classes = false;
        self.flags.busy_cpus = false;
    }

    /// Whether the figures here are the curve `c`'s already: its words are made once per
    /// estimate and only [`Learned::reset_to`] writes them with the curve's figures (a
    /// change's words replace them, and then the figures are written again), so the same
    /// words mean the same figures.
    fn holds_curve(&self, c: &Curve) -> bool {
        self.holds(Some(&c.summary), Some(c.dir), Some(c.size_class))
    }

    /// Whether the figures here are those that go with these words, direction and class
    /// ([`Learned::holds_curve`]'s rule, for a curve or another judgement of one).
    fn holds(
        &self,
        summary: Option<&Summary>,
        dir: Option<Dir>,
        class: Option<model::SizeClass>,
    ) -> bool {
        self.summary
            .as_ref()
            .zip(summary)
            .is_some_and(|(a, b)| a.same(b))
            && self.direction == dir
            && self.size_class == class
    }

    /// [`Learned::reset`] with the figures of the curve `c` (None: none), in place; only the
    /// interval's own when they are `c`'s already (the usual interval: the same curve as
    /// the last one's, issue 37's cost).
    fn reset_to(&mut self, m: &DeviceModel, c: Option<&Curve>) {
        if c.is_some_and(|c| self.holds_curve(c)) {
            self.reset_interval(m);
            return;
        }
        self.reset(m, c.map(|c| &c.summary));
        let Some(c) = c else { return };
        self.direction = Some(c.dir);
        self.size_class = Some(c.size_class);
        if let Some(b) = &c.baseline {
            self.baseline_latency_ns = Some(b.latency_ns);
            self.baseline_p95_ns = Some(b.p95_ns);
            self.baseline_device_ns = b.device_ns;
            self.baseline_interval_ns = b.interval_ns;
            self.max_iops = c.max_iops;
            self.ceiling_other_iops = c.ceiling_other_iops;
            self.max_iops_at_least = c.max_iops.map(|_| c.max_iops_at_least);
            self.flags.ceiling_at_least = c.max_iops.is_some() && c.max_iops_at_least;
        }
        self.baseline_estimate = c.estimate.clone();
        self.flags.estimate = c.estimate_flag.clone();
        self.knee_concurrency = c.knee_concurrency;
        self.knee_range = c.knee_range;
        self.knee_at_least = c.knee_at_least;
        self.fit_r_squared = c.fit_r_squared;
    }
}

/// The point `p`'s latency against the curve `c` (its baseline's p95 where both have
/// percentiles, else the means; without a baseline, the estimate's point, or past the
/// saturated ratio its upper bound), as it is judged and given ([`ratio_figure`]); None
/// when `c` judges nothing.
fn ratio_to(p: &Point, c: &Curve) -> Option<f64> {
    let ratio = match c.baseline.as_ref() {
        Some(b) => match p.pcts_ns {
            Some([_, p95, _]) if b.from_percentiles => p95 / b.p95_ns,
            _ => p.mean_latency_ns() / b.latency_ns,
        },
        None => {
            // An estimate judges by its point; bounds only say "at least" so much over the
            // upper bound, and only past the saturated ratio.
            let e = c.estimate.as_ref()?;
            match e.latency_ns {
                Some(l) => p.mean_latency_ns() / l,
                None => Some(p.mean_latency_ns() / e.interval_ns[1])
                    .filter(|&r| r >= crate::analysis::state::SATURATED_RATIO)?,
            }
        }
    };
    Some(ratio_figure(ratio))
}

/// A ratio to the baseline as it is judged and given: to the millionth (a steady device read
/// 0.9999999999999999 of its baseline), by one multiplication, rounding and division per
/// judgement rather than a significant-digit rounding's logarithm.
fn ratio_figure(r: f64) -> f64 {
    model::round(r * 1e6) / 1e6
}

/// What a learned judgement rests on, for a view's header: "learned from 3 h 12 m of
/// traffic, 4,812 intervals".
pub fn basis_words(l: &Learned) -> String {
    let s = l.learned_s.max(0.0) as u64;
    let span = match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec} s"),
        (0, m, sec) => format!("{m} m {sec} s"),
        (h, m, _) => format!("{h} h {m} m"),
    };
    format!(
        "learned from {span} of traffic, {}",
        crate::analysis::text::counted(l.intervals, "interval")
    )
}

/// The direction and the requests' size class a learned judgement's curve is of, as words
/// say it after "learned": " (read, <=8KiB)"; empty when not known. Its ceiling is of that
/// class's requests (a 4 KiB curve's "at least 24984 IOPS" says nothing of a mix with 64 KiB
/// reads).
pub fn curve_of(l: &Learned) -> String {
    match (l.direction, l.size_class) {
        (Some(d), Some(c)) => format!(" ({}, {})", d.as_str(), c.as_str()),
        (Some(d), None) => format!(" ({})", d.as_str()),
        _ => String::new(),
    }
}

/// Each size class a learned judgement tells beside the one its figures are of
/// (`Learned::classes`), in words: " (read, <=64KiB; 48 % of the reads learned): baseline
/// 0.090 ms mean, 0.121 ms p95; at least 9000 IOPS". Shares are of the interval's requests
/// where they spanned classes, else of the requests learned. Empty without other classes.
pub fn other_classes_words(l: &Learned) -> Vec<String> {
    use crate::analysis::text::{fixed, fmt_latency_ns};
    use std::fmt::Write;
    let Some(dir) = l.direction else {
        return Vec::new();
    };
    // An interval's shares while its requests span classes, else those of the requests learned.
    let (of, learned) = if l.flags.spans_classes {
        ("of the interval's", "")
    } else {
        ("of the", " learned")
    };
    l.classes
        .iter()
        .flat_map(|c| c.iter())
        .filter(|c| Some(c.size_class) != l.size_class)
        .map(|c| {
            let mut w = format!(
                " ({}, {}; {} % {of} {}s{learned}): ",
                dir.as_str(),
                c.size_class.as_str(),
                fixed(c.share * 100.0, 0),
                dir.as_str()
            );
            match c.baseline_latency_ns {
                Some(b) => {
                    let _ = write!(w, "baseline {} mean", fmt_latency_ns(b));
                    if let Some(p) = c.baseline_p95_ns {
                        let _ = write!(w, ", {} p95", fmt_latency_ns(p));
                    }
                }
                None => w.push_str("judged by an estimate of its baseline, no baseline yet"),
            }
            if let Some(m) = c.max_iops {
                let least = if c.max_iops_at_least == Some(true) {
                    "at least "
                } else {
                    ""
                };
                let _ = write!(w, "; {least}{} IOPS", fixed(m, 0));
            }
            if let Some(r) = c.ratio {
                let _ = write!(w, "; {} at {}x", c.state.words(), fixed(r, 2));
            }
            w
        })
        .collect()
}

/// A swept baseline and a learned one further apart than both their uncertainties allow
/// (the learned one's 95 % interval, the sweep's own 10 % tolerance), in words; None when
/// they agree or the learned one is not known yet. The swept profile is what is judged by.
pub fn disagreement(l: &Learned, swept_baseline_ns: f64) -> Option<String> {
    let learned = l.baseline_latency_ns?;
    let tol = swept_baseline_ns * crate::analysis::confidence::BASELINE_TOLERANCE;
    let [lo, hi] = l.baseline_interval_ns.unwrap_or([learned, learned]);
    let apart = lo > swept_baseline_ns + tol || hi < swept_baseline_ns - tol;
    apart.then(|| {
        use crate::analysis::text::fmt_latency_ns;
        format!(
            "learned baseline {}, swept {}: the device changed, or production's requests \
             differ from the sweep's (judged by the sweep)",
            fmt_latency_ns(learned),
            fmt_latency_ns(swept_baseline_ns)
        )
    })
}

/// The level a change of the device is watched at (change.rs): the curve's baseline's,
/// else the level its estimate came from, with the mean latency learned there (the
/// estimate's upper bound, or a thin baseline's mean); None with neither.
fn watch_level(c: &Curve) -> Option<change::Level> {
    if let Some(b) = &c.baseline {
        return Some(change::Level::at_one(b.latency_ns));
    }
    let e = c.estimate.as_deref()?;
    let bucket = model::bucket_of(e.from_in_flight);
    Some(change::Level {
        bucket,
        latency_ns: match e.method {
            estimate::EstimateMethod::Thin => e.latency_ns?,
            estimate::EstimateMethod::Flat | estimate::EstimateMethod::Bounds => e.interval_ns[1],
        },
        in_flight: (bucket > 0).then_some(e.from_in_flight),
    })
}

/// Learning of one device: the model, its curves (re-estimated now and then), and whether
/// it changed since it was last saved.
#[derive(Debug, Clone, Default)]
struct Device {
    model: DeviceModel,
    curves: Vec<Curve>,
    /// Intervals since the curves were last estimated (at most 60: a u32 packs with the
    /// flags, and a device with its name in the learner's table is 384 bytes, six lines).
    since_estimate: u32,
    dirty: bool,
    /// The device's fingerprint (live only), stored with the state.
    /// Boxed: read only at load and save, its ~260 bytes were most of the struct a device
    /// with traffic reads each interval.
    fingerprint: Option<Box<store::Fingerprint>>,
    loaded: bool,
    /// One learner per device (store::Lock): None without a state directory or until the
    /// device first has traffic; not held while another run learns the device (this one
    /// judges and takes over when that one ends).
    lock: Option<store::Lock>,
    /// The lock was asked for (once: a failure is said once).
    lock_tried: bool,
    /// What an idle interval says, until the model changes (idle rows share it).
    idle: Option<Arc<Learned>>,
    /// The last interval's judgement with traffic, reused when no row holds it any more.
    last: Option<Arc<Learned>>,
    /// The evidence of a change at the baseline's level.
    watch: change::Watch,
    /// The same evidence against the swept profile's baseline (never holds learning back:
    /// it is the profile that disagrees), and the direction it was seen in.
    /// Boxed: most devices have no swept profile, and a device with traffic reads the
    /// struct each interval.
    swept: Option<Box<change::Watch>>,
    swept_dir: Option<Dir>,
    /// The change last told ([`Told`]): its words and value, reused while the change and the
    /// curve's words it leads are the same ones.
    told: Option<Box<Told>>,
    /// The swept profile's disagreement last told, and its value, reused while it is the same.
    told_profile: Option<Box<(change::Change, Shared<crate::analysis::state::Change>)>>,
    /// Which curve judged each point of the last interval, while `last` holds their figures
    /// ([`Usual`]); None where that is not known. Cleared wherever the curves change.
    usual: Option<Usual>,
}

/// The shape of a usual interval ([`Device::usual_of`]) and the curves that judged it: its
/// points' directions and size classes, the index in `curves` of each one's curve, and the
/// point whose curve the device's figures are. While the device's last judgement holds these
/// curves' figures and the next interval has the same shape, that interval is judged by
/// writing its own figures alone, without finding and comparing the curves again (issue 37's
/// cost: the checks were most of the usual judgement's instructions).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Usual {
    /// Each point's direction (None past the last point: one or two of them). Eight bytes
    /// in all keep a device at six cache lines (a685ae8).
    dirs: [Option<Dir>; 2],
    classes: [model::SizeClass; 2],
    curves: [u8; 2],
    main: u8,
    /// A change was told then: the device's words were the change's, before the curve's.
    changed: bool,
}

impl Usual {
    /// Whether `points` have this shape (the device's direction is weighed once they are
    /// judged: Device::judge_usual).
    fn fits(&self, points: &[Point]) -> bool {
        points.len() == 1 + usize::from(self.dirs[1].is_some())
            && points
                .iter()
                .zip(self.dirs.iter().zip(&self.classes))
                .all(|(p, (d, c))| Some(p.dir) == *d && p.size_class() == *c)
    }
}

/// The IOPS of the direction other than `dir` in the interval of `points` (one interval's:
/// the other direction's, over the whole interval, as every judgement's headroom rule reads
/// it), whether `dir` has points or is idle.
fn other_iops(points: &[Point], dir: Dir) -> f64 {
    match points.iter().find(|p| p.dir == dir) {
        Some(p) => p.other_interval_iops(),
        None => points.iter().map(Point::interval_iops).sum(),
    }
}

/// Which of a device's direction judgements (reads before writes, as judge_into makes them:
/// one or both) is the device's: the worst state, then the higher ratio (two within a tie
/// by the less room), then the judged one, then reads; the rule of every view's judgement
/// (analysis::state::Judgement::of), so that learning's device judgement and the view's
/// are one where learning alone judges. None: no direction.
fn binding(dirs: &[Learned]) -> Option<usize> {
    match dirs {
        [] => None,
        [_] => Some(0),
        [r, w, ..] => Some(usize::from(
            r.weighed(Dir::Read).below(w.weighed(Dir::Write)),
        )),
    }
}

/// A change of the device as its judgement tells it: the summary (the change's words, then
/// the curve's, `rest`) and the value the device's judgement and the changed direction's
/// share. Made once per change and curve words, not in every interval: a change stays
/// reported in every interval after it, and its words (six figures formatted, two
/// allocations) were most of such a device's learning.
#[derive(Debug, Clone)]
struct Told {
    of: change::Change,
    /// The learning started again at a confirmation judged by a curve of its own (the words
    /// say "learned again since").
    relearned: bool,
    rest: Option<Summary>,
    summary: Summary,
    change: Shared<crate::analysis::state::Change>,
}

impl Told {
    /// The words of `c` before `rest`; `known`: the value of `c` told already (before other
    /// words: the device's main direction is another one now), kept.
    fn of(
        c: &change::Change,
        relearned: bool,
        rest: Option<Summary>,
        known: Option<&Shared<crate::analysis::state::Change>>,
    ) -> Told {
        let change = match known {
            Some(k) => k.clone(),
            None => Shared::new(crate::analysis::state::Change {
                at_wall_ns: c.since_wall_ns,
                from_ns: c.from_ns,
                to_ns: c.to_ns,
                evidence: c.words(relearned),
                confirmed: c.confirmed,
            }),
        };
        // Written when first read (the JSON's `summary`): a text view never reads it, and a
        // pending change is told anew in each interval that adds evidence.
        let summary = Summary::before(change.clone(), rest.clone());
        Told {
            of: c.clone(),
            relearned,
            rest,
            summary,
            change,
        }
    }

    /// Whether these are the words of `c` leading `rest` (the same curve's words, not only
    /// equal ones).
    fn tells(&self, c: &change::Change, relearned: bool, rest: Option<&Summary>) -> bool {
        self.of == *c
            && self.relearned == relearned
            && match (&self.rest, rest) {
                (Some(a), Some(b)) => a.same(b),
                (None, None) => true,
                _ => false,
            }
    }
}

/// What [`Device::judge_into`] told anew (a change, a profile's disagreement), for the
/// device to keep and tell again while it stays the same.
#[derive(Default)]
struct Made {
    told: Option<Told>,
    profile: Option<(change::Change, Shared<crate::analysis::state::Change>)>,
}

/// The idle judgement of a device that has learned nothing (no model, no curve, no change,
/// no profile watched): the same for every such device.
fn nothing_learned() -> &'static Arc<Learned> {
    static NOTHING: std::sync::OnceLock<Arc<Learned>> = std::sync::OnceLock::new();
    NOTHING.get_or_init(|| Arc::new(Device::default().judge(&[], &[])))
}

/// Estimating a curve runs the sweep's analysis (a USL fit): not every second for every
/// device. Re-estimated after a quarter more intervals, at least every 10 intervals (a
/// baseline needs 30) and at most every 60; besides this count, Device::learn estimates at
/// once when a bucket becomes a level of the curve or the baseline (estimate::standing,
/// checked where the interval is added): a burst
/// level that reaches its tenth interval is a point of the curve in that interval, not up to
/// a minute later. Deterministic in the data, so live and replay agree. At 1 s intervals the
/// learned figures are at most a minute old, and a new level's none.
fn due(d: &Device) -> bool {
    let n = d.model.intervals_seen;
    d.curves.is_empty() || u64::from(d.since_estimate) >= (n / 4).clamp(10, 60)
}

impl Device {
    fn estimate(&mut self, target: Option<f64>) {
        self.curves = self
            .model
            .series
            .iter()
            .map(|s| estimate::estimate(s, target))
            .collect();
        self.since_estimate = 0;
        self.idle = None;
        self.usual = None;
    }

    /// Learn one interval of the device and judge it: the one path live learning, a
    /// recording's replay and an iostat log's rates all take. `busy_max`: the most of the
    /// interval its short windows allow the device to have been busy (points::points_of).
    /// `all`: where the interval's points are written, whatever it held (`observe` passes
    /// one buffer for all its devices).
    #[allow(clippy::too_many_arguments)]
    fn learn(
        &mut self,
        all: &mut Points,
        wall_ns: i64,
        rates: &DiskRates,
        lat: Option<&crate::monitor::blklat::Measured>,
        cpu: Option<&crate::sys::sched::AvgCpu>,
        busy_max: Option<f64>,
        target: Option<f64>,
        profile: Option<&crate::profile::DeviceProfile>,
    ) -> Arc<Learned> {
        if self.watch.expire(wall_ns) {
            // A confirmed change is history now: no judgement that tells it is kept.
            self.idle = None;
        }
        points::points_into(all, wall_ns, rates, lat, cpu, busy_max);
        let all = &*all;
        let points = all.as_slice();
        if points.is_empty() {
            if self.model.intervals_seen == 0
                && self.curves.is_empty()
                && self.watch.change().is_none()
                && self.swept.is_none()
            {
                // Idle and nothing learned yet: every such device's judgement is the same
                // one, shared (a host's many idle devices read one value, not one each).
                return Arc::clone(nothing_learned());
            }
            // Idle: nothing learned, the same judgement as the last idle interval's.
            return match &self.idle {
                Some(l) => Arc::clone(l),
                None => Arc::clone(self.idle.insert(Arc::new(self.at_rest()))),
            };
        }
        self.idle = None;
        let mut spare = None;
        let learn = all.to_learn(&mut spare);
        // A step at the baseline's own level is news, not a point (change.rs).
        let main = learn
            .iter()
            .max_by(|a, b| a.requests.total_cmp(&b.requests));
        let curve = main.and_then(|p| self.curve(p.dir, p.size_class()));
        let main_bucket = main.map(|p| model::bucket_of(p.in_flight()));
        let at_level = main.filter(|_| main_bucket == Some(0));
        // The level a change is watched at: the baseline's, else the estimate's lowest.
        let watched = curve.and_then(watch_level);
        let at_watched = watched.and_then(|l| main.filter(|_| main_bucket == Some(l.bucket)));
        self.watch_profile(wall_ns, at_level, profile);
        // CPU noise: at the watched level (the baseline's, else the estimate's), slow, with
        // CPUs that had no idle time. The machine may explain it as well as the device: not
        // learned (an estimate taken at 2 in flight kept such intervals and rose with them).
        // A step of 2x or more is still evidence of a change (change.rs), so a slowdown on a
        // busy host is news too.
        let cpu_noise = all.cpu_busy
            && at_watched
                .zip(watched)
                .is_some_and(|(p, l)| l.slower(p, crate::analysis::state::SATURATED_RATIO));
        let verdict = match self.watch.observe(wall_ns, at_watched, watched) {
            change::Verdict::Learn if cpu_noise => change::Verdict::Hold,
            v => v,
        };
        match verdict {
            change::Verdict::Hold => {}
            verdict => {
                if verdict == change::Verdict::Restart {
                    // Another device now: its learning starts again from this interval.
                    self.model = DeviceModel::default();
                    self.curves.clear();
                    self.usual = None;
                }
                let rose = self.model.add_interval_watching(
                    wall_ns,
                    rates.interval_s,
                    learn,
                    estimate::standing,
                );
                // Only traffic is worth a write: an idle device's state is not rewritten.
                self.dirty = true;
                self.since_estimate += 1;
                if rose || due(self) {
                    self.estimate(target);
                }
            }
        }
        // On the stack: no allocation per device and interval.
        let (mut mixed, mut n_mixed) = ([Dir::Read; 2], 0);
        for d in all.mixed_dirs() {
            mixed[n_mixed] = d;
            n_mixed += 1;
        }
        // The last interval's judgement is written over in place once its row is gone (the
        // usual case: a view drops a report before the next one): no allocation per device
        // and interval, its directions' included.
        let mut last = self.last.take();
        // The usual interval (judge_usual) or the general judgement, after which the curves
        // that judged it are found for the next interval (below).
        let mut general = true;
        let made = match last.as_mut().and_then(Arc::get_mut) {
            Some(slot) => match (n_mixed == 0)
                .then(|| self.judge_usual(slot, points))
                .flatten()
            {
                Some(made) => {
                    general = false;
                    made
                }
                None => self.judge_into(slot, points, &mixed[..n_mixed]),
            },
            None => {
                let mut l = Learned::empty(&self.model);
                let made = self.judge_into(&mut l, points, &mixed[..n_mixed]);
                last = Some(Arc::new(l));
                made
            }
        };
        if let Some(t) = made.told {
            self.told = Some(Box::new(t));
        }
        if let Some(p) = made.profile {
            self.told_profile = Some(Box::new(p));
        }
        if general {
            // Once the words told are kept: a changed device's words are those told last.
            let l = last.as_deref().expect("just set");
            self.usual = (n_mixed == 0).then(|| self.usual_of(l, points)).flatten();
        }
        let last = self.last.insert(last.expect("just set"));
        let l = Arc::get_mut(last).expect("not shared yet");
        l.cpu_busy = cpu_noise;
        // What may have disturbed the verdict is said with it: a direction saturated or
        // overloaded while the host's CPUs had no idle time may owe part of its latency to
        // the machine (a completion waits for a CPU), at whatever level (issue 37, point 7).
        if all.cpu_busy {
            l.flags.busy_cpus = l.state >= State::Slow;
            for d in &mut l.directions {
                d.flags.busy_cpus = d.state >= State::Slow;
            }
        }
        Arc::clone(last)
    }

    /// A swept profile against the traffic at its own level (`at_level`: about one in flight,
    /// when the profile covers its direction and request-size class), by change.rs's rule:
    /// evidence only, never holding learning back (the profile judges, not the curve).
    fn watch_profile(
        &mut self,
        wall_ns: i64,
        at_level: Option<&Point>,
        profile: Option<&crate::profile::DeviceProfile>,
    ) {
        let swept = profile.zip(at_level).and_then(|(prof, p)| {
            let prof = match p.dir {
                Dir::Read => prof.for_reads(),
                Dir::Write => prof.for_writes(),
            }?;
            (model::SizeClass::of(prof.block_size as f64) == p.size_class())
                .then_some(prof.baseline_latency_ns)
        });
        if swept.is_none() && self.swept.is_none() {
            return;
        }
        let w = self
            .swept
            .get_or_insert_with(|| Box::new(change::Watch::against_profile()));
        w.observe(
            wall_ns,
            at_level.filter(|_| swept.is_some()),
            swept.map(change::Level::at_one),
        );
        if swept.is_some() {
            self.swept_dir = at_level.map(|p| p.dir);
        }
    }

    /// The swept profile's disagreement `c` with the traffic, as the judgement's change.
    fn profile_change(c: &change::Change) -> crate::analysis::state::Change {
        // Made anew in each interval that adds evidence (its intervals counted): the figures
        // by change.rs's push_ms and `fixed`, not core::fmt's exact path.
        let ms = |ns: f64| {
            let mut s = String::with_capacity(12);
            change::push_ms(&mut s, ns);
            s
        };
        crate::analysis::state::Change {
            at_wall_ns: c.since_wall_ns,
            from_ns: c.from_ns,
            to_ns: c.to_ns,
            evidence: format!(
                "swept profile's baseline {}, the traffic's {} at one in flight ({} intervals, \
                 {} s): the device changed since the sweep, or production's requests differ \
                 from the sweep's (judged by the sweep)",
                ms(c.from_ns),
                ms(c.to_ns),
                c.intervals,
                crate::analysis::text::fixed(c.seconds, 0)
            ),
            confirmed: false,
        }
    }

    fn curve(&self, dir: Dir, class: model::SizeClass) -> Option<&Curve> {
        self.curves
            .iter()
            .find(|c| c.dir == dir && c.size_class == class)
    }

    /// The interval's judgement from the curves and the interval's points, with each
    /// direction's own beside it.
    fn judge(&self, points: &[Point], mixed: &[Dir]) -> Learned {
        let mut l = Learned::empty(&self.model);
        self.judge_into(&mut l, points, mixed);
        l
    }

    /// [`Device::judge`] written over `l` in place (its directions' allocation reused); what
    /// it told anew is returned for the device to keep ([`Told`]).
    fn judge_into(&self, l: &mut Learned, points: &[Point], mixed: &[Dir]) -> Made {
        let mut made = Made::default();
        let mut dirs = std::mem::take(&mut l.directions);
        let mut n = 0;
        for dir in [Dir::Read, Dir::Write] {
            // points_of gives a direction's points together: one, or one per size class.
            let first = points.iter().position(|p| p.dir == dir);
            let point = first.map(|s| {
                let n = points[s..].iter().take_while(|p| p.dir == dir).count();
                &points[s..s + n]
            });
            // No I/O this way: idle, by this direction's series learned most (by requests,
            // as the device's idle judgement takes it: judge_points_into).
            let idle_curve = match point {
                Some(_) => None,
                None => match self
                    .curves
                    .iter()
                    .filter(|c| c.dir == dir)
                    .max_by(|a, b| a.requests.total_cmp(&b.requests))
                {
                    Some(c) => Some(c),
                    None => continue,
                },
            };
            if n == dirs.len() {
                dirs.push(Learned::empty(&self.model));
            }
            let d = &mut dirs[n];
            match point {
                Some(p) => self.judge_points_into(d, p, mixed),
                None => {
                    d.reset_to(&self.model, idle_curve);
                    d.state = State::Idle;
                    d.headroom_iops = crate::analysis::state::idle_headroom(
                        crate::analysis::state::ceiling_for_mix(
                            d.max_iops,
                            d.ceiling_other_iops,
                            other_iops(points, dir),
                        ),
                    );
                }
            }
            n += 1;
        }
        dirs.truncate(n);
        // Idle: the device at rest, the figures of the series it learned most
        // (judge_points_into), not the direction a rule takes between two idle ones.
        match (!points.is_empty()).then(|| binding(&dirs)).flatten() {
            // The device's judgement is its binding direction's, whole, by the judgement's
            // own rule (analysis::state::Weighed): its state, ratio, headroom, curve and
            // flags, never a state from one direction beside the figures of the other;
            // every view's judgement of a row learning alone judges is then this one
            // (monitor::judge reads it), and one judgement fewer is made per device and
            // interval (issue 37's cost).
            Some(k) => l.copy_judgement_from(&dirs[k]),
            None => self.judge_points_into(l, points, mixed),
        }
        l.directions = dirs;
        if self.watch.change().is_some() {
            let rest = l.summary.take();
            made.told = self.tell_change(l, rest.as_ref());
        }
        if let Some(p) = self.swept.as_ref().and_then(|w| w.disagreement()) {
            let c = match self.told_profile.as_deref() {
                Some((of, c)) if of == p => c.clone(),
                _ => {
                    let c = Shared::new(Device::profile_change(p));
                    made.profile = Some((p.clone(), c.clone()));
                    c
                }
            };
            for d in &mut l.directions {
                if d.direction == self.swept_dir {
                    d.profile_change = Some(c.clone());
                }
            }
            l.profile_change = Some(c);
        }
        made
    }

    /// The change of the device told on `l` (its words before `rest`, the curve's words it
    /// leads; and the value the device's judgement and the changed direction's carry), with
    /// no headroom from the ceiling before it while it is not confirmed; the words and value
    /// told last are taken again while they tell the same change before the same words.
    /// What was told anew is returned for the device to keep ([`Told`]).
    fn tell_change(&self, l: &mut Learned, rest: Option<&Summary>) -> Option<Told> {
        let c = self.watch.change()?;
        // Learned again since a confirmation: a curve (or an estimate) of the direction
        // judges by now.
        let relearned = c.confirmed && self.curves.iter().any(|v| v.dir == c.dir && v.judges());
        let told = match self.told.as_deref() {
            Some(t) if t.tells(c, relearned, rest) => None,
            t => {
                let known = t
                    .filter(|t| t.of == *c && t.relearned == relearned)
                    .map(|t| &t.change);
                Some(Told::of(c, relearned, rest.cloned(), known))
            }
        };
        let t = told
            .as_ref()
            .or(self.told.as_deref())
            .expect("told anew, or told already");
        // Written only where the judgement does not hold them already (the usual interval's
        // judgement, written over in place, holds last interval's): a reference count is an
        // atomic write to the value's line, which a thousand devices' interval finds cold
        // (issue 37's cost: perf put most of a changed device's learning on these).
        share_some(&mut l.summary, &t.summary, Summary::same);
        // The direction whose baseline changed carries it too: every view judges a device
        // by its directions (monitor::judge), and says what their flags say. While not
        // confirmed, what judges is the device's before the change: no headroom from its
        // ceiling (the judgement's rule, analysis::state).
        let pending = |d: &mut Learned| {
            if crate::analysis::state::held_by_change(Some(&t.change), d.max_iops.is_some()) {
                d.headroom_iops = Some(0.0);
            }
        };
        for d in l
            .directions
            .iter_mut()
            .filter(|d| d.direction == Some(c.dir))
        {
            share_some(&mut d.flags.change, &t.change, Shared::ptr_eq);
            pending(d);
        }
        if l.direction == Some(c.dir) {
            pending(l);
        }
        share_some(&mut l.flags.change, &t.change, Shared::ptr_eq);
        told
    }

    /// Whether `points` make a usual interval for `l` (the last interval's judgement), and
    /// by which curves: each direction with I/O has one point (no mix of sizes), judged by
    /// the curve `l`'s direction holds already; no other direction has a curve (it would be
    /// judged idle); the device's figures are those of the main point's curve already, and
    /// its words that curve's, or while a change of the device is told, the change's words
    /// told last before that curve's; no swept profile the traffic disagrees with. None: not
    /// usual.
    fn usual_of(&self, l: &Learned, points: &[Point]) -> Option<Usual> {
        let n = points.len();
        let usual = (1..=2).contains(&n)
            && l.directions.len() == n
            && (n == 1 || points[0].dir != points[1].dir)
            && self.agreed()
            && self
                .curves
                .iter()
                .all(|c| points.iter().any(|p| p.dir == c.dir));
        if !usual {
            return None;
        }
        let mut u = Usual {
            dirs: [None; 2],
            classes: [points[0].size_class(); 2],
            curves: [0; 2],
            main: 0,
            changed: self.watch.change().is_some(),
        };
        for (k, (p, d)) in points.iter().zip(&l.directions).enumerate() {
            let class = p.size_class();
            let i = self
                .curves
                .iter()
                .position(|c| c.dir == p.dir && c.size_class == class)?;
            if d.direction != Some(p.dir) || !d.holds_curve(&self.curves[i]) {
                return None;
            }
            (u.dirs[k], u.classes[k], u.curves[k]) = (Some(p.dir), class, u8::try_from(i).ok()?);
        }
        let main = binding(&l.directions)?;
        let m = &l.directions[main];
        // The device's figures are the binding direction's curve's; its words that curve's,
        // or, while a change is told, the change's told last before that curve's.
        let words = match (u.changed, self.told.as_deref()) {
            (false, _) => l.holds(m.summary.as_ref(), m.direction, m.size_class),
            (true, Some(t)) => {
                l.holds(Some(&t.summary), m.direction, m.size_class)
                    && t.rest
                        .as_ref()
                        .zip(m.summary.as_ref())
                        .is_some_and(|(a, b)| a.same(b))
            }
            (true, None) => false,
        };
        if !words {
            return None;
        }
        u.main = main as u8;
        Some(u)
    }

    /// No swept profile disagrees with the traffic.
    fn agreed(&self) -> bool {
        self.swept
            .as_ref()
            .map_or(true, |w| w.disagreement().is_none())
    }

    /// [`Device::judge_into`] for the usual interval ([`Device::usual_of`]), in place: only
    /// the interval's figures are written, what judge_into would write (debug builds check
    /// it, every interval), without finding, comparing and copying the curves' (issue 37's
    /// cost: the learner's judgement was a third of learning's instructions). The curves
    /// that judged the last interval are taken as they are while its shape holds and a
    /// change is told as it was ([`Usual`]), else found again and kept. A change told is
    /// told again as judge_into tells it ([`Device::tell_change`]: a pending change's words
    /// are new in each interval that adds evidence), so a device that changed takes this
    /// path too (issue 37's cost: its intervals were judged the general way, ~1,750
    /// instructions each). What was told anew is returned; None, `l` untouched: not the
    /// usual interval.
    fn judge_usual(&mut self, l: &mut Learned, points: &[Point]) -> Option<Made> {
        let changed = self.watch.change().is_some();
        let held = self
            .usual
            .filter(|u| u.changed == changed && u.fits(points) && self.agreed());
        let u = held.or_else(|| self.usual_of(l, points))?;
        #[cfg(debug_assertions)]
        let before = l.clone();
        for ((p, d), &c) in points.iter().zip(&mut l.directions).zip(&u.curves) {
            let ratio = ratio_to(p, &self.curves[usize::from(c)]);
            d.reset_interval(&self.model);
            d.state = State::of_ratio(ratio);
            d.ratio = ratio;
            d.headroom_iops = crate::analysis::state::headroom_in(
                d.state,
                crate::analysis::state::ceiling_for_mix(
                    d.max_iops,
                    d.ceiling_other_iops,
                    p.other_interval_iops(),
                ),
                d.flags.ceiling_at_least,
                p.interval_iops(),
            );
        }
        // The device's: its binding direction's interval figures (its curve's are there
        // already), while that is the direction whose curve the device holds; else the
        // general judgement (judge_into writes every direction over again).
        if binding(&l.directions) != Some(usize::from(u.main)) {
            return None;
        }
        self.usual = Some(u);
        let m = &l.directions[usize::from(u.main)];
        let (state, ratio, headroom) = (m.state, m.ratio, m.headroom_iops);
        l.reset_interval(&self.model);
        l.state = state;
        l.ratio = ratio;
        l.headroom_iops = headroom;
        // A change told leads the main direction's curve's words, as judge_into tells it.
        let made = Made {
            told: changed
                .then(|| {
                    // Taken out and put back: not cloned (a reference count touched).
                    let main = usize::from(u.main);
                    let rest = l.directions[main].summary.take();
                    let told = self.tell_change(l, rest.as_ref());
                    l.directions[main].summary = rest;
                    told
                })
                .flatten(),
            profile: None,
        };
        #[cfg(debug_assertions)]
        {
            // The general judgement of the same interval, from the same judgement before.
            let mut general = before;
            let g = self.judge_into(&mut general, points, &[]);
            assert!(g.profile.is_none());
            assert_eq!(
                g.told.is_some(),
                made.told.is_some(),
                "the usual judgement's words"
            );
            assert_eq!(
                format!("{l:?}"),
                format!("{general:?}"),
                "the usual judgement"
            );
        }
        Some(made)
    }

    /// The judgement of these points (one interval's, of one or both directions), written
    /// over `l` but for its `directions`.
    fn judge_points_into(&self, l: &mut Learned, points: &[Point], mixed: &[Dir]) {
        if points.is_empty() {
            // Idle: the figures of the series learned most (by requests: a direction
            // that carried a few requests in each interval does not outrank the main one).
            let best = self
                .curves
                .iter()
                .max_by(|a, b| a.requests.total_cmp(&b.requests));
            l.reset_to(&self.model, best);
            l.state = State::Idle;
            l.headroom_iops = crate::analysis::state::idle_headroom(l.max_iops);
            return;
        }
        // At most six points (reads, writes; by size class): judged on the stack, no
        // allocation per row.
        let judge = |p: &Point, c: Option<&Curve>| {
            if mixed.contains(&p.dir) {
                // Two size classes at once: no one class's curve judges it.
                return (State::Unknown, None);
            }
            let ratio = c.and_then(|c| ratio_to(p, c));
            (State::of_ratio(ratio), ratio)
        };
        let top = points
            .iter()
            .max_by(|a, b| a.requests.total_cmp(&b.requests))
            .expect("non-empty");
        // Each point judged once, by its own curve (the main point's found once for both).
        let (mut main_p, mut main_c) = (top, self.curve(top.dir, top.size_class()));
        if points.iter().filter(|p| p.dir == top.dir).nth(1).is_some() {
            // A direction whose requests span size classes is the figures of its worst class
            // whose curve judges (a baseline or an estimate): every view judges the direction
            // by the ratio it is given (monitor::judge), so 64 KiB reads at 4x their baseline
            // beside as many 4 KiB reads at 1x are the direction's overload at 4x, not an ok at
            // the 4 KiB class's 1x (which every view said while learning said overloaded); and
            // half 64 KiB reads not learned yet beside half 4 KiB reads judged ok are the 4 KiB
            // class's ok with its baseline, not an ok with no baseline that every view reads as
            // unknown. Among classes in the same state, the class learned most (its curve's
            // requests: they change slowly), not this interval's ratios or requests, which on an
            // even mix take turns: the figures every output quotes stay one class's from one
            // interval to the next.
            let judged = points
                .iter()
                .filter(|p| p.dir == top.dir)
                .filter_map(|p| {
                    let c = self.curve(p.dir, p.size_class()).filter(|c| c.judges())?;
                    Some((p, c, judge(p, Some(c)).0))
                })
                .max_by(|a, b| a.2.cmp(&b.2).then(a.1.requests.total_cmp(&b.1.requests)));
            if let Some((p, c, _)) = judged {
                (main_p, main_c) = (p, Some(c));
            }
        }
        let main = judge(main_p, main_c);
        l.reset_to(&self.model, main_c);
        let unjudged = || {
            mixed.contains(&main_p.dir) || self.watch.change().is_some_and(|c| c.dir == main_p.dir)
        };
        if main_c.is_none() && unjudged() {
            // A mix whose mean's class has no curve, or a change confirmed and learned
            // again from scratch: still this direction's judgement (unknown, flagged mixed
            // or changed: judge_into puts the change on it), so that every view says why
            // (monitor::judge::learned_unjudged) rather than "learning".
            l.direction = Some(main_p.dir);
        }
        l.state = State::worst(points.iter().map(|p| {
            if std::ptr::eq(p, main_p) {
                main.0
            } else {
                judge(p, self.curve(p.dir, p.size_class())).0
            }
        }));
        l.ratio = main.1;
        l.flags.mixed = points.iter().any(|p| mixed.contains(&p.dir));
        // The kernel sized the main direction's requests into more than one class with a
        // real share (points_of gave a point per class): each class is judged by its own
        // curve above, but the ceiling is the main class's, which the mix does not match
        // (issue 37): no headroom from it.
        l.flags.spans_classes = points.iter().filter(|p| p.dir == main_p.dir).count() > 1;
        // Each class's own judgement beside the figures of the one judged by: every class's
        // baseline told, as the curves learned them.
        l.classes = l.flags.spans_classes.then(|| {
            let of_dir = || points.iter().filter(|p| p.dir == main_p.dir);
            let all: f64 = of_dir().map(|p| p.requests).sum();
            of_dir()
                .map(|p| {
                    let c = self.curve(p.dir, p.size_class());
                    let (state, ratio) = judge(p, c);
                    // Judged against an estimate where a ratio came without a baseline.
                    let estimate = ratio.is_some() && c.is_some_and(|c| c.baseline.is_none());
                    class_judgement(
                        p.size_class(),
                        c,
                        p.requests / all,
                        (state, ratio),
                        estimate,
                    )
                })
                .collect()
        });
        // The judgements' one rule (issue 37): none while saturated or overloaded, else the
        // ceiling, a rate while busy, less the IOPS over the whole interval, idle part
        // included (busy 70 % at 1,000 IOPS while busy: 700 served, 300 more).
        l.headroom_iops = crate::analysis::state::headroom_in(
            l.state,
            crate::analysis::state::ceiling_now(
                l.max_iops,
                l.ceiling_other_iops,
                main_p.other_interval_iops(),
                &l.flags,
            ),
            l.flags.ceiling_at_least,
            main_p.interval_iops(),
        );
    }
}

/// One size class's judgement (`Learned::classes`): its share of the direction's requests
/// (to three decimals), state and ratio, and its curve's baseline, p95 and ceiling where the
/// curve has a baseline (null until then); `estimate` where an estimate judged it instead.
fn class_judgement(
    size_class: model::SizeClass,
    c: Option<&Curve>,
    share: f64,
    (state, ratio): (State, Option<f64>),
    estimate: bool,
) -> crate::analysis::learned::ClassJudgement {
    let b = c.and_then(|c| c.baseline.as_ref());
    let max = b.and(c.and_then(|c| c.max_iops));
    crate::analysis::learned::ClassJudgement {
        size_class,
        share: model::round(share * 1e3) / 1e3,
        state,
        ratio,
        baseline_latency_ns: b.map(|b| b.latency_ns),
        baseline_p95_ns: b.map(|b| b.p95_ns),
        max_iops: max,
        max_iops_at_least: max.and(c.map(|c| c.max_iops_at_least)),
        estimate,
    }
}

impl Device {
    /// The judgement of an idle interval ([`Device::judge`] of no points), with, at rest,
    /// every class of its direction a curve judges: a device that learned 4 KiB and 64 KiB
    /// reads tells both baselines, not only the class learned most (`analyze` of a recording
    /// that ended idle told one). Apart from the judgement of traffic, which never needs it.
    #[inline(never)]
    fn at_rest(&self) -> Learned {
        let mut l = self.judge(&[], &[]);
        l.classes = l.direction.and_then(|dir| self.classes_at_rest(dir));
        l
    }

    /// At rest (an idle interval, the end of a recording), each size class of `dir` whose
    /// curve judges (a baseline or an estimate of one), smallest first, with its share of
    /// the direction's requests learned: None unless two or more do. Idle, no ratio.
    fn classes_at_rest(&self, dir: Dir) -> Option<Box<[crate::analysis::learned::ClassJudgement]>> {
        let of_dir = || self.curves.iter().filter(move |c| c.dir == dir);
        of_dir().filter(|c| c.judges()).nth(1)?;
        let all: f64 = of_dir().map(|c| c.requests).sum();
        let mut classes: Vec<_> = of_dir()
            .filter(|c| c.judges())
            .map(|c| {
                let share = if all > 0.0 { c.requests / all } else { 0.0 };
                let estimate = c.baseline.is_none();
                class_judgement(c.size_class, Some(c), share, (State::Idle, None), estimate)
            })
            .collect();
        classes.sort_by_key(|c| c.size_class);
        Some(classes.into())
    }

    /// Whether an idle interval of this device would keep giving the judgement of the last
    /// one: its state loaded (with a state directory) and no other run's lock to take over,
    /// so that [`load_or_take_over`] has nothing left to do while it stays idle, and
    /// [`Device::learn`] returns its idle judgement unchanged.
    fn settled_while_idle(&self, state_dir: bool) -> bool {
        // A change reported goes (change::REPORTED_FOR_S): asked each interval meanwhile.
        (!state_dir || self.loaded)
            && self.lock.as_ref().map_or(true, store::Lock::held)
            && self.watch.change().is_none()
    }
}

/// The device's state loaded from `dir` when first seen; its lock taken when it first has
/// traffic to learn (`busy`), and the state loaded again then if another run may have saved
/// since; taken over from another run once that run has ended (its lock free): what it saved
/// is loaded, since it learned the same intervals this run judged meanwhile. An idle device
/// only reads its state: a host with a thousand idle devices makes no lock file for them
/// (a lock file created per device was most of learning's cost on idle devices, issue 37).
fn load_or_take_over(
    d: &mut Device,
    (dir, key): (&std::path::Path, &str),
    warnings: &mut Vec<String>,
    lock_refusals: &mut std::collections::HashSet<String>,
    busy: bool,
) {
    let first = !d.loaded;
    d.loaded = true;
    let mut load = first;
    if busy && !d.lock_tried {
        d.lock_tried = true;
        match store::Lock::open(dir, key) {
            Ok(l) => {
                if !l.held() {
                    warnings.push(format!(
                        "{key}: another iosat is learning this device; this run judges with \
                         what it saved and learns once it ends"
                    ));
                } else if !d.dirty {
                    // Idle until now: nothing learned here, and another run may have saved.
                    load = true;
                }
                d.lock = Some(l);
            }
            // Named for the first device it refused; the others refused the same way are
            // not named again.
            Err(e) => {
                let why = e.to_string();
                if !lock_refusals.contains(&why) {
                    warnings.push(format!(
                        "learned state of {key} not locked: {why} (said once: other devices \
                         refused for this are not named)"
                    ));
                    lock_refusals.insert(why);
                }
            }
        }
    } else if let Some(l) = d.lock.as_mut() {
        load |= !l.held() && l.try_take();
    }
    if !load {
        return;
    }
    match store::load(dir, key, d.fingerprint.as_deref()) {
        Ok((m, note)) => {
            let found = m.is_some();
            if found || first {
                d.model = m.unwrap_or_default();
                d.curves.clear();
                d.usual = None;
                d.since_estimate = 0;
                d.idle = None;
                d.dirty = false;
            }
            // Said once: a reload at the first traffic repeats what the first load said.
            if first || found {
                warnings.extend(note);
            }
        }
        Err(e) => warnings.push(format!("learned state ignored: {e}")),
    }
}

/// Learns every device of the interval reports fed to it and annotates their rows.
#[derive(Debug, Clone, Default)]
pub struct Learner {
    spec: LearnSpec,
    /// The devices, with their keys (profile id, else kernel name).
    devices: Vec<(String, Device)>,
    by_key: HashMap<String, usize>,
    /// Each major:minor's kernel name and device, so a row finds its device with one lookup
    /// and no string built per row and interval.
    slots: HashMap<(u32, u32), (String, usize)>,
    /// The device of each row position in the last report (rows come in the same order
    /// each interval): checked against the row, so most rows find their device without a
    /// hash (issue 37's cost).
    order: Vec<RowSlot>,
    warnings: Vec<String>,
    /// The wall clock of the last save (saved again every [`SAVE_EVERY_NS`]).
    saved_wall_ns: Option<i64>,
    /// This boot's id, read at the first device seen (the fingerprints' diskseq is of it).
    boot_id: Option<Option<String>>,
    /// The next report's rows are learned last to first ([`Learner::observe`]).
    backward: bool,
    /// Each partition row's disk row, by row position ([`Learner::disk_row`]).
    disks: Vec<DiskHint>,
    /// The partition rows of the report being learned and their disks' rows.
    parts: Vec<(usize, usize)>,
    /// Each partition's key and its disk's: what the partition is judged by at rest.
    disk_keys: HashMap<String, String>,
    /// Why devices' locks were refused, each said once ([`load_or_take_over`]): a state
    /// directory refused for safety (its `learned/` a symlink) refused a thousand busy
    /// devices' locks one by one, a thousand lines for one cause.
    lock_refusals: std::collections::HashSet<String>,
}

/// Where a partition row's disk was found: its row and device number (checked against the
/// rows each interval), or nowhere in a report of `rows` rows.
#[derive(Debug, Clone)]
struct DiskHint {
    part: (u32, u32),
    disk: Option<(usize, (u32, u32))>,
    rows: usize,
}

/// What `observe` keeps of a row position: the device it found there, and what that device
/// says while idle. A host's devices are mostly idle, and an idle row then reads this entry
/// alone (one array, its name inline), not the device's scattered state: at a thousand
/// devices the cache misses of the idle rows were most of learning's cost per sample.
#[derive(Debug, Clone)]
struct RowSlot {
    dev: (u32, u32),
    name: ShortName,
    i: usize,
    /// The device's judgement while it stays idle, kept once nothing else can change it (its
    /// state loaded, no other run's lock to take over); None when it must be asked.
    idle: Option<Arc<Learned>>,
}

/// A kernel device name, inline (DISK_NAME_LEN is 32 with its NUL); a longer one is never
/// equal to any name, so its row goes through the map each interval.
#[derive(Debug, Clone, Copy)]
struct ShortName {
    len: u8,
    bytes: [u8; 31],
}

impl ShortName {
    fn of(name: &str) -> ShortName {
        let mut bytes = [0; 31];
        match bytes.get_mut(..name.len()) {
            Some(b) => {
                b.copy_from_slice(name.as_bytes());
                ShortName {
                    len: name.len() as u8,
                    bytes,
                }
            }
            None => ShortName {
                len: u8::MAX,
                bytes,
            },
        }
    }

    fn is(&self, name: &str) -> bool {
        self.bytes.get(..usize::from(self.len)) == Some(name.as_bytes())
    }
}

/// The partition at row `pos` takes the judgement of its disk at row `dp`, and is judged by the
/// disk's rates ([`DeviceRow::judged_as`]).
fn judge_partition(rows: &mut [DeviceRow], pos: usize, dp: usize) {
    let disk = &rows[dp];
    let learned = disk.learned.clone();
    let rates = disk
        .rates
        .as_ref()
        .ok()
        .map(crate::monitor::interval::JudgedRates::of);
    let row = &mut rows[pos];
    row.learned = learned;
    row.judged_as = Some(Box::new(crate::monitor::interval::JudgedAs { rates }));
}

/// The state is saved this often while a run lasts (and at its end): a crash loses at most
/// this much learning.
pub const SAVE_EVERY_NS: i64 = 300 * 1_000_000_000;

/// How many rows ahead [`Learner::observe`] starts asking for a device's state
/// ([`Learner::prefetch_ahead`]).
const AHEAD: usize = 8;

impl Learner {
    pub fn new(spec: LearnSpec) -> Learner {
        Learner {
            spec,
            ..Learner::default()
        }
    }

    /// The device known under `key` (profile id, else kernel name) has this fingerprint
    /// (live: read from sysfs when the device is first seen).
    pub fn set_fingerprint(&mut self, key: &str, fp: store::Fingerprint) {
        let i = self.index(key);
        self.devices[i].1.fingerprint = Some(Box::new(fp));
        self.forget_idle(i);
    }

    /// The idle judgement of device `i`'s rows asked again: its state changed outside
    /// `observe`.
    fn forget_idle(&mut self, i: usize) {
        for o in self.order.iter_mut().filter(|o| o.i == i) {
            o.idle = None;
        }
    }

    /// The device learned under `key`, added when new.
    fn index(&mut self, key: &str) -> usize {
        if let Some(&i) = self.by_key.get(key) {
            return i;
        }
        self.devices.push((key.to_string(), Device::default()));
        self.by_key.insert(key.to_string(), self.devices.len() - 1);
        self.devices.len() - 1
    }

    /// Learn from one interval report and set each device row's `learned`. `key_of` names a
    /// device's state (its profile id, else its kernel name).
    pub fn observe(&mut self, r: &mut IntervalReport, key_of: &dyn Fn(&DeviceRow) -> String) {
        if r.since_boot {
            // An average since boot is no interval of traffic: nothing to learn.
            return;
        }
        let target = self.spec.target_p95_ns;
        let cpu = r.cpu;
        // Each device's interval is written over this one buffer of points in turn: no
        // buffer initialised per device (issue 37's cost).
        let mut points = Points::default();
        // Every other report is learned last row first. A thousand busy devices' state does
        // not fit in a core's L2 beside the rows: learned in the same order each interval,
        // every device's lines were the ones least recently used when it came round again.
        // Turned round, the devices learned last are learned first, and the rows the report
        // was built with last (monitor::interval) are read while still cached; the view,
        // which reads the rows first to last, then finds the judgements written last first.
        // Measured (BENCHMARKS, 2026-12-07 04:00, bench/learn_ab.sh): 5.7 % less CPU a sample
        // in text and 3.9 % in JSON than first to last each time at a thousand steady
        // devices; last to first each time measured the same as turning round, so the rows
        // and judgements are as much of it as the devices' own state (issue 37's cost). Only
        // once every row has its place in `order` (a new row goes to its end, first to last).
        let n = r.devices.len();
        let backward = self.backward && self.order.len() >= n;
        self.backward = !backward;
        // What a row's device had to say (its state set aside, another run learning it),
        // each row's lines together, put back in row order after a pass last to first.
        let mut said_backward: Vec<Vec<String>> = Vec::new();
        // The row learned last, whose partitions (waiting in `parts`) take its judgement
        // while it is still in the caches.
        let mut done = None;
        for k in 0..n {
            let pos = if backward { n - 1 - k } else { k };
            if let Some(dp) = done.take() {
                self.judge_partitions_of(&mut r.devices, dp);
            }
            if self.judged_by_disk(&mut r.devices, pos, backward, key_of) {
                continue;
            }
            done = Some(pos);
            self.prefetch_ahead(&r.devices, pos, backward);
            let row = &mut r.devices[pos];
            let dev = (row.major, row.minor);
            // The hint holds while the row's device number and name are the hint's (a
            // device re-created under another name goes through the map, which checks both).
            let hint = self
                .order
                .get_mut(pos)
                .filter(|o| o.dev == dev && o.name.is(&row.kernel_name) && o.i != usize::MAX);
            let hint = match hint {
                Some(o) => match &o.idle {
                    Some(l) if row.rates.is_ok() && !row.has_traffic() => {
                        row.learned = Some(Arc::clone(l));
                        continue;
                    }
                    // Traffic, or counters that cannot be used: the device is asked.
                    _ => {
                        o.idle = None;
                        Some(o.i)
                    }
                },
                None => None,
            };
            let i = match hint {
                Some(i) => i,
                None => {
                    let i = match self.slots.get(&dev) {
                        Some((n, i)) if *n == row.kernel_name => *i,
                        _ => {
                            let i = self.index(&key_of(row));
                            self.slots.insert(dev, (row.kernel_name.clone(), i));
                            i
                        }
                    };
                    let slot = RowSlot {
                        dev,
                        name: ShortName::of(&row.kernel_name),
                        i,
                        idle: None,
                    };
                    match self.order.get_mut(pos) {
                        Some(o) => *o = slot,
                        None => self.order.push(slot),
                    }
                    i
                }
            };
            let (spec, warnings, refusals) =
                (&self.spec, &mut self.warnings, &mut self.lock_refusals);
            let (key, d) = &mut self.devices[i];
            let key = key.as_str();
            if let Some(dir) = &spec.state_dir {
                let before = warnings.len();
                load_or_take_over(d, (dir, key), warnings, refusals, row.has_traffic());
                if backward && warnings.len() > before {
                    said_backward.push(warnings.split_off(before));
                }
            }
            let Ok(rates) = &row.rates else {
                let mut l = d.judge(&[], &[]);
                l.state = State::Unknown;
                for d in &mut l.directions {
                    d.state = State::Unknown;
                }
                row.learned = Some(Arc::new(l));
                continue;
            };
            let lat = row.latency.as_ref().and_then(|l| l.measured());
            let profile = row.profile.as_deref();
            let busy_max = row.burst.as_ref().and_then(|b| b.busy_max);
            let l = d.learn(
                &mut points,
                r.end_wall_ns,
                rates,
                lat,
                cpu.as_ref(),
                busy_max,
                target,
                profile,
            );
            if !row.has_traffic() && d.settled_while_idle(spec.state_dir.is_some()) {
                if let Some(o) = self.order.get_mut(pos).filter(|o| o.i == i) {
                    o.idle = Some(Arc::clone(&l));
                }
            }
            row.learned = Some(l);
        }
        self.warnings
            .extend(said_backward.into_iter().rev().flatten());
        if let Some(dp) = done {
            self.judge_partitions_of(&mut r.devices, dp);
        }
        // A disk that comes after its partitions in a pass first to last (not diskstats'
        // order), or before them last to first: learned by now.
        while let Some((pos, dp)) = self.parts.pop() {
            judge_partition(&mut r.devices, pos, dp);
        }
        if self.spec.state_dir.is_some() {
            let last = *self.saved_wall_ns.get_or_insert(r.end_wall_ns);
            if r.end_wall_ns - last >= SAVE_EVERY_NS {
                self.save();
            }
        }
    }

    /// Whether the row at `pos` is a partition whose disk is in the report: then it waits in
    /// `parts` for its disk's judgement (taken at once when the disk is learned already in
    /// this pass, `backward` or not) and nothing of its own is learned ([`Learner::disk_row`]).
    fn judged_by_disk(
        &mut self,
        rows: &mut [DeviceRow],
        pos: usize,
        backward: bool,
        key_of: &dyn Fn(&DeviceRow) -> String,
    ) -> bool {
        let row = &rows[pos];
        let dev = (row.major, row.minor);
        // The row's slot, read once: a device's (most rows: no partition), a partition's
        // placeholder (a partition, not classified again) or none that holds.
        let slot = self
            .order
            .get(pos)
            .filter(|o| o.dev == dev && o.name.is(&row.kernel_name))
            .map(|o| o.i == usize::MAX);
        let Some(dp) = (match slot {
            Some(false) => None,
            Some(true) => self.disk_row(rows, pos, true, key_of),
            None => self.disk_row(rows, pos, false, key_of),
        }) else {
            return false;
        };
        self.parts.push((pos, dp));
        if (dp < pos) != backward {
            self.judge_partitions_of(rows, dp);
        }
        true
    }

    /// The partitions waiting in `parts` for the disk at row `dp` take its judgement.
    fn judge_partitions_of(&mut self, rows: &mut [DeviceRow], dp: usize) {
        self.parts.retain(|&(pos, d)| {
            if d != dp {
                return true;
            }
            judge_partition(rows, pos, dp);
            false
        });
    }

    /// The row of the disk of the partition at row `pos`, when that row is a partition
    /// (sysfs or the recording says so, else its name) and its disk is in the same report:
    /// the partition is judged by its disk. A partition shares its disk's queue: its own
    /// requests in flight leave out its sibling partitions' (the disk's counters hold them
    /// all: the kernel counts a partition's I/O in its disk's too), so its own traffic at one
    /// in flight can wait behind twenty of theirs, and a curve learned from it would take
    /// that queueing for its baseline (issue 37); the block-latency source sends a partition
    /// to its disk the same way (monitor::blklat). A partition shown without its disk is
    /// learned on its own, as any device. Found once by name (the kernel's rule) and kept by
    /// row position, checked against the rows each interval; the partition's row keeps a
    /// placeholder in `order` so that the rows after it keep their places.
    /// `known`: the row holds a partition's placeholder already (not classified again).
    fn disk_row(
        &mut self,
        rows: &[DeviceRow],
        pos: usize,
        known: bool,
        key_of: &dyn Fn(&DeviceRow) -> String,
    ) -> Option<usize> {
        use crate::sys::device::DevKind;
        let row = &rows[pos];
        let part = (row.major, row.minor);
        // What sysfs says, else (a file with no sysfs facts) the name, as the selection tells
        // partitions (monitor::select::looks_like_partition).
        let partition = known
            || match row.meta.kind {
                Some(k) => k == DevKind::Partition,
                None => crate::monitor::select::looks_like_partition(&row.kernel_name),
            };
        if !partition {
            return None;
        }
        let held = self
            .disks
            .get(pos)
            .filter(|h| h.part == part)
            .and_then(|h| {
                match &h.disk {
                    Some((dp, dev)) => rows
                        .get(*dp)
                        .filter(|d| (d.major, d.minor) == *dev)
                        .map(|_| Some(*dp)),
                    // No disk in a report of as many rows: none in this one either.
                    None => (h.rows == rows.len()).then_some(None),
                }
            });
        let dp = match held {
            Some(dp) => dp,
            None => {
                let disk =
                    crate::monitor::select::disk_of_partition(&row.kernel_name).and_then(|name| {
                        let is_disk = |d: &DeviceRow| {
                            d.kernel_name == name && d.meta.kind != Some(DevKind::Partition)
                        };
                        // Its disk comes just before its partitions in diskstats' order.
                        let near = pos.saturating_sub(64)..pos;
                        let dp = near
                            .rev()
                            .find(|&i| is_disk(&rows[i]))
                            .or_else(|| rows.iter().position(is_disk))?;
                        Some((dp, (rows[dp].major, rows[dp].minor)))
                    });
                if let Some((dp, _)) = &disk {
                    self.disk_keys.insert(key_of(row), key_of(&rows[*dp]));
                }
                let hint = DiskHint {
                    part,
                    disk,
                    rows: rows.len(),
                };
                if self.disks.len() <= pos {
                    self.disks.resize(
                        pos + 1,
                        DiskHint {
                            part: (u32::MAX, u32::MAX),
                            disk: None,
                            rows: 0,
                        },
                    );
                }
                self.disks[pos] = hint;
                disk.map(|d| d.0)
            }
        }?;
        // The row's place in `order`, held by a slot of no device.
        if !known {
            let slot = RowSlot {
                dev: part,
                name: ShortName::of(&row.kernel_name),
                i: usize::MAX,
                idle: None,
            };
            match self.order.get_mut(pos) {
                Some(o) => *o = slot,
                None => self.order.push(slot),
            }
        }
        Some(dp)
    }

    /// What learning the rows after `pos` (before it, `backward`) will read of their devices,
    /// asked of memory ahead (sys::cache), in two stages: of the row [`AHEAD`] on the
    /// device's last judgement, its series and its curves; of the row AHEAD/2 on the
    /// directions of that judgement and the bucket of each series at the row's level (their
    /// addresses are in what was asked AHEAD/2 rows before). A thousand devices' state (about
    /// 2 KB each over the heap) does not stay in a core's L2 from one interval to the next:
    /// learning a row waited on its device's lines one after another (issue 37's cost;
    /// without this, 4 % more CPU a sample: BENCHMARKS, 2026-12-07 04:00). The row's level is
    /// its requests in flight while busy by %util (points.rs bounds the busy share further,
    /// rarely moving the level); a bucket asked for in vain costs two lines. A hint: it
    /// changes nothing learned.
    fn prefetch_ahead(&self, rows: &[DeviceRow], pos: usize, backward: bool) {
        use crate::sys::cache::{prefetch, prefetch_slice};
        let device = |k: usize| {
            let at = if backward {
                pos.checked_sub(k)?
            } else {
                pos + k
            };
            let o = self.order.get(at)?;
            let row = rows.get(at).filter(|r| (r.major, r.minor) == o.dev)?;
            Some((&self.devices.get(o.i)?.1, row))
        };
        if let Some((d, _)) = device(AHEAD) {
            if let Some(l) = &d.last {
                prefetch(&**l, 3);
            }
            prefetch_slice(&d.model.series, 2);
            prefetch_slice(&d.curves, 4);
        }
        let Some((d, row)) = device(AHEAD / 2) else {
            return;
        };
        if let Some(l) = &d.last {
            for x in &l.directions {
                prefetch(x, 3);
            }
        }
        let Ok(r) = &row.rates else { return };
        // By %util alone: points::busy_share cost ~120 instructions a row here.
        let busy = match r.util_pct / 100.0 {
            u if u > 0.0 && u < 1.0 => u,
            _ => 1.0,
        };
        for s in &d.model.series {
            let in_flight = match s.dir {
                Dir::Read => r.read_concurrency,
                Dir::Write => r.write_concurrency,
            };
            if let Some(b) = s.buckets.get(model::bucket_of(in_flight / busy)) {
                prefetch(b, 2);
            }
        }
    }

    /// Learn one interval of the device under `key` from its rates alone, for files that
    /// hold rates rather than counters (iostat logs: r/s, w/s, rkB/s, wkB/s and the awaits,
    /// the requests in flight per direction by Little's law, r/s × r_await): the same model,
    /// the same estimator and the same judgement as live learning. No state is loaded.
    pub fn observe_rates(&mut self, key: &str, wall_ns: i64, rates: &DiskRates) -> Arc<Learned> {
        let target = self.spec.target_p95_ns;
        let i = self.index(key);
        self.forget_idle(i);
        let d = &mut self.devices[i].1;
        d.loaded = true;
        d.learn(
            &mut Points::default(),
            wall_ns,
            rates,
            None,
            None,
            None,
            target,
            None,
        )
    }

    /// The key a device is judged under: its disk's for a partition judged by its disk
    /// ([`Learner::disk_row`]), else its own.
    fn judged_as<'a>(&'a self, key: &'a str) -> &'a str {
        self.disk_keys.get(key).map_or(key, String::as_str)
    }

    /// The device's curves estimated from everything learned (the end of a recording).
    pub fn finish(&mut self, key: &str) -> Option<Learned> {
        let target = self.spec.target_p95_ns;
        let i = *self.by_key.get(self.judged_as(key))?;
        self.forget_idle(i);
        let d = &mut self.devices[i].1;
        d.estimate(target);
        Some(d.at_rest())
    }

    /// What the device under `key` would be judged at rest, now (an idle interval: the
    /// figures of the series it learned most, state idle), without estimating again: what
    /// live learning would say of it in its next idle interval. None: no device under `key`.
    pub fn at_rest(&self, key: &str) -> Option<Learned> {
        let i = *self.by_key.get(self.judged_as(key))?;
        Some(self.devices[i].1.at_rest())
    }

    /// Save every device learned since the last save; problems become warnings.
    pub fn save(&mut self) {
        let Some(dir) = self.spec.state_dir.clone() else {
            return;
        };
        let mut last = None;
        // A device another run learns (its lock held elsewhere) is saved by that run.
        let learner = |d: &Device| d.lock.as_ref().map_or(true, store::Lock::held);
        let mut due = self
            .devices
            .iter_mut()
            .filter(|(_, d)| d.dirty && learner(d))
            .peekable();
        if due.peek().is_none() {
            return;
        }
        // The directory checked and synced once for all the devices saved; refused, said once
        // for all of them (and tried again at the next save, not in every interval).
        let mut saving = store::Saving::start(&dir);
        let (mut refused, mut first) = (0, None);
        for (key, d) in due {
            let key = key.as_str();
            last = last.max(d.model.last_wall_ns);
            match &mut saving {
                Ok(s) => match s.save(key, d.fingerprint.as_deref(), &d.model) {
                    Ok(()) => d.dirty = false,
                    Err(e) => self
                        .warnings
                        .push(format!("learned state of {key} not saved: {e}")),
                },
                Err(_) => {
                    refused += 1;
                    first.get_or_insert(key);
                }
            }
        }
        match (saving, first) {
            (Ok(s), _) => {
                if let Err(e) = s.finish() {
                    self.warnings
                        .push(format!("learned state: {} not synced: {e}", dir.display()));
                }
            }
            (Err(e), Some(first)) => {
                let named = match refused {
                    1 => first.to_string(),
                    n => format!("{n} devices ({first}, ...)"),
                };
                self.warnings
                    .push(format!("learned state of {named} not saved: {e}"));
            }
            (Err(_), None) => {}
        }
        if let Some(l) = last {
            self.saved_wall_ns = Some(l);
        }
    }

    /// Warnings since the last call (a state file unreadable or reset).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

#[cfg(test)]
mod tests;

/// Learning as the monitor's observer of intervals (monitor/observe.rs): the collector and the
/// replay feed it every interval and tell it of each device first found in sysfs.
impl crate::monitor::observe::Observer for Learner {
    fn observe(&mut self, report: &mut IntervalReport, key_of: &dyn Fn(&DeviceRow) -> String) {
        Learner::observe(self, report, key_of);
    }

    /// What makes learned state another device's: read once, when first seen.
    fn device_seen(
        &mut self,
        root: &crate::sys::Root,
        dev: &crate::sys::device::BlockDev,
        key: &str,
    ) {
        let boot_id = self
            .boot_id
            .get_or_insert_with(|| crate::sys::device::boot_id(root))
            .clone();
        self.set_fingerprint(key, store::Fingerprint::read(root, dev, boot_id));
    }

    fn save(&mut self) {
        Learner::save(self);
    }

    fn take_warnings(&mut self) -> Vec<String> {
        Learner::take_warnings(self)
    }

    fn at_rest(&self, key: &str) -> Option<Learned> {
        Learner::at_rest(self, key)
    }
}

/// A learner set up by `spec`, as the monitor's observer.
pub fn observer(spec: LearnSpec) -> Box<dyn crate::monitor::observe::Observer> {
    Box::new(Learner::new(spec))
}

/// Learning in memory only (no state directory): what `analyze`, `report` and the recording
/// page learn from a recording's own intervals.
pub fn in_memory() -> Box<dyn crate::monitor::observe::Observer> {
    observer(LearnSpec::default())
}
