//! Production learning (docs/design.md §4, issue 26): each device's baseline and saturation curve
//! learned from its own traffic, so a production disk is judged without a benchmark. Every
//! interval is one point of Little's law per direction (in flight = Δtime/Δt, IOPS = Δios/Δt,
//! mean latency = Δtime/Δios, plus the block layer's percentiles where that source runs);
//! model.rs accumulates them into a bounded, ageing model per direction and request-size
//! class; estimate.rs turns it into a baseline, a knee (or a lower bound) and a capacity
//! with the sweep's own rules; the vocabulary (idle, ok, saturated, overloaded, unknown)
//! and the one headroom are analysis/state.rs's; store.rs keeps the model across runs.
//!
//! [`Learner`] is fed the interval reports the one replay engine produces (live: the
//! collector's; `analyze`/`report` of a recording: the replay's), so learning live and
//! analysing the recording of the same intervals say the same. The only IO is store.rs.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

pub mod estimate;
pub mod model;
pub mod store;

pub use crate::analysis::state::State;
use crate::monitor::interval::{DeviceRow, IntervalReport};
use crate::monitor::DiskRates;
use estimate::Curve;
use model::{DeviceModel, Dir, Point};
use serde::Serialize;
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

/// The `learned` object of a device in an interval (stat --json, analyze --json): null
/// fields until known. The figures are the series (direction and request-size class) that
/// carried most of the interval's requests (when idle: the one learned most); `state` is the
/// worst state of the directions with I/O.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Learned {
    pub state: State,
    /// Intervals learned from (not aged).
    pub intervals: u64,
    /// Seconds of traffic learned from.
    pub learned_s: f64,
    pub direction: Option<Dir>,
    pub size_class: Option<model::SizeClass>,
    pub baseline_latency_ns: Option<f64>,
    pub baseline_p95_ns: Option<f64>,
    /// 95 % interval of the baseline's mean latency.
    pub baseline_interval_ns: Option<[f64; 2]>,
    pub knee_concurrency: Option<u32>,
    pub knee_range: Option<[u32; 2]>,
    pub knee_at_least: Option<f64>,
    pub max_iops: Option<f64>,
    pub max_iops_at_least: Option<bool>,
    pub headroom_iops: Option<f64>,
    /// Current p95 (or mean) ÷ the baseline's, the ratio the state is judged on.
    pub ratio: Option<f64>,
    pub fit_r_squared: Option<f64>,
    pub summary: Option<Summary>,
    /// What the judgement cannot claim (estimate, change, ceiling at least, mixed sizes):
    /// learning fills them, every view renders them through the judgement.
    #[serde(flatten, default)]
    pub flags: crate::analysis::state::Flags,
    /// Each direction's own judgement (reads, writes: the exporter serves them apart), its
    /// `directions` empty; a direction without I/O in the interval is idle and judged by its
    /// series learned most. Not in the JSON (the object above is the device's).
    #[serde(skip)]
    pub directions: Vec<Learned>,
}

/// The curve's judgement in words, shared by every interval's [`Learned`] until the next
/// estimate (a string copied per device and interval was a tenth of learning's cost).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary(pub std::sync::Arc<str>);

impl Serialize for Summary {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Summary {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Summary, D::Error> {
        String::deserialize(d).map(|s| Summary(s.into()))
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
            baseline_interval_ns: None,
            knee_concurrency: None,
            knee_range: None,
            knee_at_least: None,
            max_iops: None,
            max_iops_at_least: None,
            headroom_iops: None,
            ratio: None,
            fit_r_squared: None,
            summary: None,
            flags: Default::default(),
            directions: Vec::new(),
        }
    }

    fn with_curve(mut self, c: &Curve) -> Learned {
        self.direction = Some(c.dir);
        self.size_class = Some(c.size_class);
        if let Some(b) = &c.baseline {
            self.baseline_latency_ns = Some(b.latency_ns);
            self.baseline_p95_ns = Some(b.p95_ns);
            self.baseline_interval_ns = b.interval_ns;
            self.max_iops = c.max_iops;
            self.max_iops_at_least = c.max_iops.map(|_| c.max_iops_at_least);
            self.flags.ceiling_at_least = c.max_iops.is_some() && c.max_iops_at_least;
        }
        self.knee_concurrency = c.knee_concurrency;
        self.knee_range = c.knee_range;
        self.knee_at_least = c.knee_at_least;
        self.fit_r_squared = c.fit_r_squared;
        self.summary = Some(Summary(c.summary.clone()));
        self
    }
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
    // Thousands separated, as the issue writes them: 4,812.
    let digits = l.intervals.to_string();
    let mut n = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            n.push(',');
        }
        n.push(c);
    }
    format!("learned from {span} of traffic, {n} intervals")
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

/// The points of one interval of a device, on the stack (no allocation per device and
/// interval).
#[derive(Debug, Clone, Copy)]
pub struct Points {
    pts: [Point; 2],
    n: usize,
}

impl Points {
    pub fn as_slice(&self) -> &[Point] {
        &self.pts[..self.n]
    }
}

/// The points of one device's interval: reads and writes (discards and flushes are other
/// work and are not learned). `pcts` from the block-latency source, when it measured.
pub fn points_of(
    wall_ns: i64,
    r: &DiskRates,
    lat: Option<&crate::monitor::blklat::Measured>,
) -> Points {
    let pcts = |o: &crate::monitor::blklat::OpLatency| {
        Some([o.p50_ms? * 1e6, o.p95_ms? * 1e6, o.p99_ms? * 1e6])
    };
    let dt = r.interval_s;
    [
        (
            Dir::Read,
            r.r_s,
            r.read_concurrency,
            r.rkb_s,
            lat.and_then(|m| pcts(&m.read)),
        ),
        (
            Dir::Write,
            r.w_s,
            r.write_concurrency,
            r.wkb_s,
            lat.and_then(|m| pcts(&m.write)),
        ),
    ]
    .into_iter()
    .map(|(dir, per_s, conc, kb_s, pcts_ns)| Point {
        dir,
        wall_ns,
        interval_s: dt,
        requests: per_s * dt,
        busy_ms: conc * dt * 1e3,
        bytes: kb_s * 1024.0 * dt,
        pcts_ns,
    })
    .filter(Point::usable)
    .fold(
        Points {
            pts: [Point {
                dir: Dir::Read,
                wall_ns,
                interval_s: dt,
                requests: 0.0,
                busy_ms: 0.0,
                bytes: 0.0,
                pcts_ns: None,
            }; 2],
            n: 0,
        },
        |mut acc, p| {
            acc.pts[acc.n] = p;
            acc.n += 1;
            acc
        },
    )
}

/// Learning of one device: the model, its curves (re-estimated now and then), and whether
/// it changed since it was last saved.
#[derive(Debug, Clone, Default)]
struct Device {
    model: DeviceModel,
    curves: Vec<Curve>,
    /// Intervals since the curves were last estimated.
    since_estimate: u64,
    dirty: bool,
    /// The device's fingerprint (live only), stored with the state.
    fingerprint: Option<store::Fingerprint>,
    loaded: bool,
    /// One learner per device (store::Lock): None without a state directory; not held while
    /// another run learns the device (this one judges and takes over when that one ends).
    lock: Option<store::Lock>,
    /// What an idle interval says, until the model changes (idle rows share it).
    idle: Option<Arc<Learned>>,
    /// The last interval's judgement with traffic, reused when no row holds it any more.
    last: Option<Arc<Learned>>,
}

/// Estimating a curve runs the sweep's analysis (a USL fit): not every second for every
/// device. Re-estimated after a quarter more intervals, at least every 10 intervals (a
/// baseline needs 30) and at most every 60; deterministic in the count, so live and replay
/// agree. At 1 s intervals the learned figures are at most a minute old.
fn due(d: &Device) -> bool {
    let n = d.model.intervals_seen;
    d.curves.is_empty() || d.since_estimate >= (n / 4).clamp(10, 60)
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
    }

    /// Learn one interval of the device and judge it: the one path live learning, a
    /// recording's replay and an iostat log's rates all take.
    fn learn(
        &mut self,
        wall_ns: i64,
        rates: &DiskRates,
        lat: Option<&crate::monitor::blklat::Measured>,
        target: Option<f64>,
    ) -> Arc<Learned> {
        let points = points_of(wall_ns, rates, lat);
        let points = points.as_slice();
        if points.is_empty() {
            // Idle: nothing learned, the same judgement as the last idle interval's.
            return match &self.idle {
                Some(l) => Arc::clone(l),
                None => Arc::clone(self.idle.insert(Arc::new(self.judge(&[])))),
            };
        }
        self.idle = None;
        self.model.add_interval(wall_ns, rates.interval_s, points);
        // Only traffic is worth a write: an idle device's state is not rewritten.
        self.dirty = true;
        self.since_estimate += 1;
        if due(self) {
            self.estimate(target);
        }
        let l = self.judge(points);
        // The last interval's judgement is written over in place once its row is gone (the
        // usual case: a view drops a report before the next one): no allocation per device
        // and interval.
        match self.last.as_mut().and_then(Arc::get_mut) {
            Some(slot) => *slot = l,
            None => self.last = Some(Arc::new(l)),
        }
        Arc::clone(self.last.as_ref().expect("just set"))
    }

    fn curve(&self, dir: Dir, class: model::SizeClass) -> Option<&Curve> {
        self.curves
            .iter()
            .find(|c| c.dir == dir && c.size_class == class)
    }

    /// The interval's judgement from the curves and the interval's points, with each
    /// direction's own beside it.
    fn judge(&self, points: &[Point]) -> Learned {
        let mut l = self.judge_points(points);
        l.directions = [Dir::Read, Dir::Write]
            .into_iter()
            .filter_map(|dir| {
                // points_of gives at most one point per direction.
                if let Some(p) = points.iter().find(|p| p.dir == dir) {
                    return Some(self.judge_points(std::slice::from_ref(p)));
                }
                // No I/O this way: idle, by this direction's series learned most.
                let c = self
                    .curves
                    .iter()
                    .filter(|c| c.dir == dir)
                    .max_by(|a, b| a.intervals.total_cmp(&b.intervals))?;
                let mut l = Learned::empty(&self.model).with_curve(c);
                l.state = State::Idle;
                l.headroom_iops = l.max_iops;
                Some(l)
            })
            .collect();
        l
    }

    /// The judgement of these points (one interval's, of one or both directions).
    fn judge_points(&self, points: &[Point]) -> Learned {
        let empty = Learned::empty(&self.model);
        if points.is_empty() {
            // Idle: the figures of the series learned most (by requests: a direction
            // that carried a few requests in each interval does not outrank the main one).
            let best = self
                .curves
                .iter()
                .max_by(|a, b| a.requests.total_cmp(&b.requests));
            let mut l = best.map_or(empty.clone(), |c| empty.clone().with_curve(c));
            l.state = State::Idle;
            l.headroom_iops = l.max_iops;
            return l;
        }
        // At most two points (reads, writes): judged on the stack, no allocation per row.
        let judge = |p: &Point| {
            let c = self.curve(p.dir, p.size_class());
            let ratio = c.and_then(|c| {
                let b = c.baseline.as_ref()?;
                Some(match p.pcts_ns {
                    Some([_, p95, _]) if b.from_percentiles => p95 / b.p95_ns,
                    _ => p.mean_latency_ns() / b.latency_ns,
                })
            });
            (State::of_ratio(ratio), ratio)
        };
        let main_p = points
            .iter()
            .max_by(|a, b| a.requests.total_cmp(&b.requests))
            .expect("non-empty");
        let main = judge(main_p);
        let mut l = match self.curve(main_p.dir, main_p.size_class()) {
            Some(c) => empty.with_curve(c),
            None => empty,
        };
        l.state = State::worst(points.iter().map(|p| judge(p).0));
        l.ratio = main.1;
        l.headroom_iops = l
            .max_iops
            .map(|m| crate::analysis::state::headroom_iops(m, main_p.iops()));
        l
    }
}

/// The device's state loaded from `dir` when first seen (with its lock taken if free), and
/// taken over from another run once that run has ended (its lock free): what it saved is
/// loaded, since it learned the same intervals this run judged meanwhile.
fn load_or_take_over(d: &mut Device, dir: &std::path::Path, key: &str, warnings: &mut Vec<String>) {
    let first = !d.loaded;
    if d.loaded {
        let Some(l) = d.lock.as_mut() else { return };
        if l.held() || !l.try_take() {
            return;
        }
    } else {
        d.loaded = true;
        match store::Lock::open(dir, key) {
            Ok(l) => {
                if !l.held() {
                    warnings.push(format!(
                        "{key}: another iosat is learning this device; this run judges with \
                         what it saved and learns once it ends"
                    ));
                }
                d.lock = Some(l);
            }
            Err(e) => warnings.push(format!("learned state of {key} not locked: {e}")),
        }
    }
    match store::load(dir, key, d.fingerprint.as_ref()) {
        Ok((m, note)) => {
            if m.is_some() || first {
                d.model = m.unwrap_or_default();
                d.curves.clear();
                d.since_estimate = 0;
                d.idle = None;
                d.dirty = false;
            }
            warnings.extend(note);
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
    warnings: Vec<String>,
    /// The wall clock of the last save (saved again every [`SAVE_EVERY_NS`]).
    saved_wall_ns: Option<i64>,
}

/// The state is saved this often while a run lasts (and at its end): a crash loses at most
/// this much learning.
pub const SAVE_EVERY_NS: i64 = 300 * 1_000_000_000;

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
        self.devices[i].1.fingerprint = Some(fp);
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
        for row in &mut r.devices {
            let dev = (row.major, row.minor);
            let i = match self.slots.get(&dev) {
                Some((n, i)) if *n == row.kernel_name => *i,
                _ => {
                    let i = self.index(&key_of(row));
                    self.slots.insert(dev, (row.kernel_name.clone(), i));
                    i
                }
            };
            let (spec, warnings) = (&self.spec, &mut self.warnings);
            let (key, d) = &mut self.devices[i];
            let key = key.as_str();
            if let Some(dir) = &spec.state_dir {
                load_or_take_over(d, dir, key, warnings);
            }
            let Ok(rates) = &row.rates else {
                let mut l = d.judge(&[]);
                l.state = State::Unknown;
                for d in &mut l.directions {
                    d.state = State::Unknown;
                }
                row.learned = Some(Arc::new(l));
                continue;
            };
            let lat = row.latency.as_ref().and_then(|l| l.measured());
            row.learned = Some(d.learn(r.end_wall_ns, rates, lat, target));
        }
        if self.spec.state_dir.is_some() {
            let last = *self.saved_wall_ns.get_or_insert(r.end_wall_ns);
            if r.end_wall_ns - last >= SAVE_EVERY_NS {
                self.save();
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
        let d = &mut self.devices[i].1;
        d.loaded = true;
        d.learn(wall_ns, rates, None, target)
    }

    /// The device's curves estimated from everything learned (the end of a recording).
    pub fn finish(&mut self, key: &str) -> Option<Learned> {
        let target = self.spec.target_p95_ns;
        let i = *self.by_key.get(key)?;
        let d = &mut self.devices[i].1;
        d.estimate(target);
        Some(d.judge(&[]))
    }

    /// Save every device learned since the last save; problems become warnings.
    pub fn save(&mut self) {
        let Some(dir) = self.spec.state_dir.clone() else {
            return;
        };
        let mut last = None;
        // A device another run learns (its lock held elsewhere) is saved by that run.
        let learner = |d: &Device| d.lock.as_ref().map_or(true, store::Lock::held);
        for (key, d) in self
            .devices
            .iter_mut()
            .filter(|(_, d)| d.dirty && learner(d))
        {
            let key = key.as_str();
            match store::save(&dir, key, d.fingerprint.as_ref(), &d.model) {
                Ok(()) => d.dirty = false,
                Err(e) => self
                    .warnings
                    .push(format!("learned state of {key} not saved: {e}")),
            }
            last = last.max(d.model.last_wall_ns);
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
