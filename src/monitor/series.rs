//! History for charts: per device, the values the stat page draws (latency, %util, aqu-sz, rates),
//! fed incrementally one recording line at a time, so `stat --record --html` redraws from memory
//! what `iosat report FILE.rec` draws from the file. Saturation is judged at
//! [`SeriesStore::series`] time against the profiles of a [`ProfileLookup`]. Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use super::interval::IntervalReport;
use super::record::{self, Event, ParseError};
use super::replay::Replayer;
use super::saturation::Saturation;
use super::select::{looks_like_partition, DeviceMeta, Selection};
use crate::profile::{Found, ProfileLookup};
use crate::sys::device::DevKind;

/// One interval of one device.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub end_wall_ns: i64,
    pub interval_s: f64,
    pub r_s: f64,
    pub w_s: f64,
    pub rkb_s: f64,
    pub wkb_s: f64,
    /// ms; None with no completed request of that direction.
    pub r_await: Option<f64>,
    pub w_await: Option<f64>,
    pub aqu_sz: f64,
    pub util_pct: f64,
    /// r_await and w_await ÷ the profile's baseline (monitor::saturation), with a profile.
    pub sat_r: Option<f64>,
    pub sat_w: Option<f64>,
    /// What learning said of each direction in this interval (kept to judge it once the
    /// profile is known, at [`SeriesStore::series`] time).
    pub learned_refs: super::judge::LearnedRefs,
    /// The block layer's p95 per direction, ms, when the recording carries that source.
    pub p95_ms: [Option<f64>; 2],
    /// Each direction's queue and device time (reads, writes), when the recording carries
    /// the split (`B` tokens; issue 40).
    pub split: [Option<super::blklat::OpSplit>; 2],
    /// The interval's one judgement (monitor::judge), set by [`SeriesStore::series`].
    pub judgement: Option<crate::analysis::state::Judgement>,
    /// The cap the recorded run declared for the device (`K` lines; the profile's is added
    /// by [`SeriesStore::series`]).
    pub cap: Option<crate::analysis::declared::DeclaredCap>,
    /// The interval's short windows (issue 41: `#P` lines), when recorded.
    pub burst: Option<super::burst::Burst>,
    /// The host's CPUs were busy in the interval (the row's `cpus_busy`; None: not known).
    pub cpus_busy: Option<bool>,
    /// A partition judged by its disk: the disk's rates, which judge the interval (the row's
    /// `judged_as`); its own rates are the figures above.
    pub judged_rates: Option<super::interval::JudgedRates>,
}

/// The time series of one device, as the stat page and its tables draw it.
#[derive(Debug, Clone, PartialEq)]
pub struct StatSeries {
    pub name: String,
    pub major: u32,
    pub minor: u32,
    pub display_name: String,
    pub points: Vec<Point>,
    /// Its profile, or why there is none (said on the page instead of the saturation chart).
    pub profile: Result<Found, String>,
    /// What production learning (learn/) said at its last interval with a value, or the
    /// device at rest where that interval judged by nothing learned
    /// (analysis::learned::Learned::for_summary): the judgement the page gives without a
    /// profile.
    pub learned: Option<std::sync::Arc<crate::analysis::learned::Learned>>,
}

/// The devices the user named (DEVICE patterns: names, friendly names or globs) first, the
/// others after them, each group in its order: the page draws what was asked for first.
pub fn selected_first(devs: &mut [StatSeries], patterns: &[String]) {
    let named = |d: &StatSeries| {
        patterns.iter().any(|p| {
            if super::select::is_glob(p) {
                super::select::glob_match(p, &d.name)
                    || super::select::glob_match(p, &d.display_name)
            } else {
                *p == d.name || *p == d.display_name
            }
        })
    };
    // A stable sort: false (named) before true.
    devs.sort_by_key(|d| !named(d));
}

/// Busy devices (some reads or writes) in first-seen order, and the idle ones' names.
pub fn split_idle(all: Vec<StatSeries>) -> (Vec<StatSeries>, Vec<String>) {
    let (busy, idle): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|s| s.points.iter().any(|p| p.r_s > 0.0 || p.w_s > 0.0));
    (busy, idle.into_iter().map(|s| s.name).collect())
}

/// Leave partitions out (their disk is there): by sysfs kind, or by name without sysfs facts
/// (pt-stalk files), as `stat` selects.
pub fn is_partition(kind: Option<DevKind>, kernel_name: &str) -> bool {
    match kind {
        Some(k) => k == DevKind::Partition,
        None => looks_like_partition(kernel_name),
    }
}

struct Track {
    name: String,
    major: u32,
    minor: u32,
    /// Its kind and friendly name: what a recorded selection selects it by.
    meta: DeviceMeta,
    /// The profile id an `I` line gave it when it first had a value.
    id: Option<String>,
    points: Vec<Point>,
    learned: Option<std::sync::Arc<crate::analysis::learned::Learned>>,
}

/// Every device of a recording that had a value, in kernel order; the page shows those its
/// runs showed ([`SeriesStore::shown`]).
pub struct SeriesStore {
    replayer: Replayer,
    tracks: Vec<Track>,
    /// Each run's selection (`#S`; None: a run that recorded none), in order.
    runs: Vec<Option<Selection>>,
    /// What the runs so far show together (`Selection::of_recorded_runs`; None: no run
    /// recorded one), kept as `runs` changes: [`SeriesStore::shows`] asks it per row.
    shown: Option<Selection>,
    /// The devices a user named (or `--all`) for this page, over what the runs showed.
    chosen: Option<Selection>,
}

impl Default for SeriesStore {
    fn default() -> Self {
        SeriesStore::new(None)
    }
}

impl SeriesStore {
    /// An empty store; `observer` (learning in memory, as `analyze` of the recording learns)
    /// is fed every interval, so the page judges a device without a profile by the baseline its
    /// own traffic showed.
    pub fn new(observer: Option<Box<dyn super::observe::Observer>>) -> SeriesStore {
        // Every device (`all` takes partitions in too): `series` gives those the page shows.
        let sel = Selection {
            patterns: Vec::new(),
            partitions: false,
            all: true,
        };
        let mut replayer = Replayer::new(sel, false);
        if let Some(o) = observer {
            replayer.observe_with(o);
        }
        SeriesStore {
            replayer,
            tracks: Vec::new(),
            runs: Vec::new(),
            shown: None,
            chosen: None,
        }
    }

    /// A whole recording, observed by `observer`.
    pub fn from_text(
        text: &str,
        observer: Option<Box<dyn super::observe::Observer>>,
    ) -> Result<SeriesStore, ParseError> {
        let mut s = SeriesStore::new(observer);
        s.feed_text(text)?;
        Ok(s)
    }

    /// The page shows the devices `sel` selects, not those its runs showed: `stat --replay
    /// r.rec --all --html p.html` (or naming devices) draws what its replay shows. Given
    /// before the recording is fed.
    pub fn choose(&mut self, sel: Selection) {
        self.chosen = Some(sel);
    }

    /// Feed the lines of a recording (the part of a file written before this run). Its runs'
    /// selections are taken first, so that its intervals are kept by what the whole file
    /// shows, as its replay takes them.
    pub fn feed_text(&mut self, text: &str) -> Result<(), ParseError> {
        let (events, _) = record::parse(text)?;
        for ev in &events {
            self.note_run(ev);
        }
        for ev in events {
            self.feed_noted(ev);
        }
        Ok(())
    }

    /// Feed one recording line.
    pub fn feed(&mut self, ev: Event) {
        self.note_run(&ev);
        self.feed_noted(ev);
    }

    /// A run, or its selection: each run's selection as a replay of the file takes them
    /// (Replay::new), and what they show together.
    fn note_run(&mut self, ev: &Event) {
        match ev {
            Event::Run { .. } => self.runs.push(None),
            Event::Selection(s) => match self.runs.last_mut() {
                Some(r) => *r = Some(s.clone()),
                None => self.runs.push(Some(s.clone())),
            },
            _ => return,
        }
        let runs: Vec<Option<&Selection>> = self.runs.iter().map(Option::as_ref).collect();
        self.shown = Selection::of_recorded_runs(&runs);
    }

    /// [`SeriesStore::feed`] of a line whose run is noted already.
    fn feed_noted(&mut self, ev: Event) {
        // The store's selection has no patterns: feeding cannot fail.
        if let Ok(fed) = self.replayer.feed(ev, &mut |_| None) {
            if let Some(r) = fed.report {
                self.push(&r);
            }
        }
    }

    /// Whether the page shows a device: where the recording's runs recorded what they
    /// showed (`#S`), the devices their selection selects, as its replay and `analyze` show
    /// by default (`stat vda`'s page charted every disk with traffic, the loop devices among
    /// them); in an older recording (or pt-diskstats'), every device but partitions: a page
    /// takes no selection, and such a file is often of the very loop device its replay
    /// needs `--all` for.
    fn shows(&self, major: u32, name: &str, meta: &DeviceMeta) -> bool {
        match self.chosen.as_ref().or(self.shown.as_ref()) {
            Some(s) => s.selects(major, name, meta),
            None => !is_partition(meta.kind, name),
        }
    }

    /// Only the devices the runs so far show are kept (a thousand devices' partitions are
    /// not held for a page that leaves them out); [`SeriesStore::series`] asks again, as a
    /// run appended since (`stat --record --html` on an older file) may show fewer.
    fn push(&mut self, r: &IntervalReport) {
        for d in &r.devices {
            if !self.shows(d.major, &d.kernel_name, &d.meta) {
                continue;
            }
            let Ok(rates) = &d.rates else { continue };
            let idx =
                match self.tracks.iter().position(|s| {
                    s.name == d.kernel_name && s.major == d.major && s.minor == d.minor
                }) {
                    Some(i) => i,
                    None => {
                        self.tracks.push(Track {
                            name: d.kernel_name.clone(),
                            major: d.major,
                            minor: d.minor,
                            meta: d.meta.clone(),
                            id: self
                                .replayer
                                .id_of(d.major, d.minor, &d.kernel_name)
                                .map(str::to_string),
                            points: Vec::new(),
                            learned: None,
                        });
                        self.tracks.len() - 1
                    }
                };
            if d.learned.is_some() {
                self.tracks[idx].learned = d.learned.clone();
            }
            self.tracks[idx].points.push(Point {
                end_wall_ns: r.end_wall_ns,
                interval_s: rates.interval_s,
                r_s: rates.r_s,
                w_s: rates.w_s,
                rkb_s: rates.rkb_s,
                wkb_s: rates.wkb_s,
                r_await: rates.r_await,
                w_await: rates.w_await,
                aqu_sz: rates.aqu_sz,
                util_pct: rates.util_pct,
                sat_r: None,
                sat_w: None,
                learned_refs: super::judge::learned_references(d.learned.as_deref()),
                cpus_busy: d.cpus_busy,
                p95_ms: {
                    let m = d.latency.as_ref().and_then(|l| l.measured());
                    [
                        m.and_then(|m| m.read.p95_ms),
                        m.and_then(|m| m.write.p95_ms),
                    ]
                },
                split: {
                    let m = d.latency.as_ref().and_then(|l| l.measured());
                    [
                        m.and_then(|m| m.split(false)).cloned(),
                        m.and_then(|m| m.split(true)).cloned(),
                    ]
                },
                judgement: None,
                cap: d.cap,
                burst: d.burst,
                judged_rates: d.judged_as.as_ref().and_then(|j| j.rates),
            });
        }
    }

    /// The series so far, each judged against its profile: busy devices, idle names.
    pub fn series(&self, profiles: &mut dyn ProfileLookup) -> (Vec<StatSeries>, Vec<String>) {
        // A recording that carries `I` lines names every device iosat could identify; only an
        // older one (none at all) is matched against the devices present on this machine.
        let has_ids = self.replayer.has_ids();
        let all = self
            .tracks
            .iter()
            .filter(|t| self.shows(t.major, &t.name, &t.meta))
            .map(|t| {
                let id = t.id.clone().or_else(|| {
                    (!has_ids)
                        .then(|| profiles.live_id(t.major, t.minor, &t.name))
                        .flatten()
                });
                let profile = match id {
                    Some(id) => profiles.by_id(&id),
                    None if has_ids => {
                        Err("the recording names no profile id for it (no `I` line).".to_string())
                    }
                    None => Err("the recording names no profile ids, and the device is not \
identified on this machine."
                        .to_string()),
                };
                let mut points = t.points.clone();
                let swept = profile.as_ref().ok().map(|f| f.profile.as_ref());
                for p in &mut points {
                    let rates = p.as_rates();
                    if let Some(prof) = swept {
                        let sat = Saturation::compute(prof, Some(&rates));
                        p.sat_r = sat.saturation_r;
                        p.sat_w = sat.saturation_w;
                    }
                    // A partition judged by its disk is judged by the disk's rates.
                    let disk = p.judged_rates.map(|r| r.rates());
                    let judged = disk.as_ref().unwrap_or(&rates);
                    let mut j =
                        super::judge::judge_parts(swept, &p.learned_refs, Some(judged), p.p95_ms);
                    super::judge::say_busy_cpus(&mut j, p.cpus_busy);
                    // The cap the run declared (its `K` lines), figure by figure over the
                    // profile's (issue 42): the page's judgement names it as stat's did.
                    let saved = swept.and_then(|p| p.declared_cap);
                    let cap = match (p.cap, saved) {
                        (Some(g), Some(s)) => Some(g.or(s)),
                        (g, s) => g.or(s),
                    };
                    j.cap = cap.and_then(|c| super::judge::cap_use(&c, &rates));
                    p.judgement = Some(j);
                }
                StatSeries {
                    name: t.name.clone(),
                    major: t.major,
                    minor: t.minor,
                    display_name: t.meta.display_name.clone(),
                    points,
                    profile,
                    // What learning said at the last interval, or the device at rest where
                    // that interval judged by nothing learned (Learned::for_summary).
                    learned: crate::analysis::learned::Learned::for_summary(
                        t.learned.as_deref().cloned(),
                        || self.replayer.learned_at_rest(t.major, t.minor, &t.name),
                    )
                    .map(std::sync::Arc::new),
                }
            })
            .collect();
        split_idle(all)
    }
}

impl StatSeries {
    /// The recording's split per direction over its judged intervals (monitor::judge).
    pub fn run_split(&self) -> Vec<crate::analysis::split::RunSplit> {
        super::judge::run_split(self.points.iter().filter_map(|p| {
            Some((
                p.judgement.as_ref()?,
                [p.split[0].as_ref(), p.split[1].as_ref()],
            ))
        }))
    }
}

impl Point {
    /// What saturation needs of the interval's rates (r_await and w_await).
    fn as_rates(&self) -> super::DiskRates {
        super::DiskRates {
            interval_s: self.interval_s,
            r_s: self.r_s,
            w_s: self.w_s,
            rkb_s: self.rkb_s,
            wkb_s: self.wkb_s,
            r_await: self.r_await,
            w_await: self.w_await,
            aqu_sz: self.aqu_sz,
            util_pct: self.util_pct,
            ..Default::default()
        }
    }
}
