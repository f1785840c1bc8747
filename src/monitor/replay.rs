//! The one reader of recordings: the record line kinds (monitor::record) honoured once, in
//! order, into a [`StatEngine`]: `R` starts a new run, `D` gives a device's sysfs facts, `I`
//! its profile id (looked up through the caller), a sample is pushed and may close an
//! interval; `U` gives the since-boot interval, `C` the CPU times of the next sample (avg-cpu);
//! `B` gives the block-latency histograms read with the next sample, whose interval then
//! carries per-device percentiles (monitor::blklat). [`Replayer`] takes the lines one by one (the
//! live collector feeds it the lines it records, so live and replay cannot disagree);
//! [`Replay`] iterates over a whole recording.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.
//!
//! Time in a file may go backwards (an NTP step or VM clock jump under pt-stalk's `TS` wall
//! clock, two runs concatenated): a sample older than the one before it starts a new base,
//! like an `R` line, with a warning naming its line, so no interval spans the step and none
//! is lost after it. A sample with no diskstats lines (an extra `TS` line) never becomes a
//! base. [`RecordingText`] is the one opener of a recording file for every command that replays
//! (`stat --replay`, `top --replay`, `report`, `analyze`): lines that are not UTF-8 and a last
//! line without its newline (a `--record` cut short by ENOSPC or a kill) are skipped with a
//! warning naming them, never the whole file refused; [`Replay::open`] is the one opener of
//! their replay. Pure but for [`RecordingText::open`] and the profile lookups.

use super::blklat::{self, BlkSample};
use super::interval::{IntervalReport, StatEngine};
use super::record::{self, Event, ParseError, Source};
use super::select::{unknown_device, unknown_recorded_device, Selection};
use super::DiskSample;
use crate::error::Error;
use crate::profile::{DeviceProfile, ProfileCache};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::Arc;

/// A recording file's text as every replay reads it, with the warnings about what was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingText {
    pub text: String,
    /// `FILE:N: ...` for each line skipped.
    pub warnings: Vec<String>,
}

impl RecordingText {
    /// Read `path` whole (sys::fs::read_text: lines that are not UTF-8 blanked).
    pub fn open(path: &Path) -> Result<RecordingText, Error> {
        Ok(RecordingText::of(path, crate::sys::fs::read_text(path)?))
    }

    /// The bytes of a file already read, for a caller that sniffed them first.
    pub fn of_bytes(path: &Path, bytes: Vec<u8>) -> RecordingText {
        RecordingText::of(path, crate::sys::fs::text_of(bytes))
    }

    /// The text already read (and its blanked lines), for a caller that sniffed it first.
    /// Pure.
    pub fn of(path: &Path, (mut text, bad): (String, Vec<usize>)) -> RecordingText {
        let mut warnings = crate::sys::fs::bad_line_warnings(path, &bad);
        if let Some(n) = cut_partial_last_line(&mut text) {
            warnings.push(format!(
                "{}:{n}: the last line has no newline (the recording was cut off while it was \
                 written), line skipped",
                path.display()
            ));
        }
        RecordingText { text, warnings }
    }
}

/// Remove a last line that has no newline and is not blank; its 1-based number when one was
/// removed.
pub fn cut_partial_last_line(text: &mut String) -> Option<usize> {
    if text.ends_with('\n') {
        return None;
    }
    let start = text.rfind('\n').map_or(0, |i| i + 1);
    let blank = text[start..].trim().is_empty();
    let n = text[..start].matches('\n').count() + 1;
    text.truncate(start);
    (!blank).then_some(n)
}

/// How a profile id becomes a profile for the engine (None: show the device without one).
pub type Lookup<'a> = dyn FnMut(&str) -> Option<Arc<DeviceProfile>> + 'a;

/// What one recording line did.
#[derive(Debug, Default)]
pub struct Fed {
    /// Set on the first sample: which profile each selected device with one is judged
    /// against (empty: none has one; the text legend then explains sat and load).
    pub started: Option<Vec<String>>,
    /// The interval this sample closed.
    pub report: Option<IntervalReport>,
    /// Lines of the sample the diskstats parser skipped; a sample older than the one
    /// before it, or without lines.
    pub warnings: Vec<String>,
}

/// The state a recording's lines drive: the engine, the profile ids seen, the sample count.
#[derive(Debug)]
pub struct Replayer {
    engine: StatEngine,
    ids: HashMap<(u32, u32, String), String>,
    samples: usize,
    /// The clock of the last sample pushed in this run.
    last_ns: Option<u64>,
    /// The block-latency histograms for the next sample (a `B` line).
    blk_next: Option<BlkSample>,
    /// Those of the last sample pushed in this run (the base of the next interval's).
    blk_prev: Option<BlkSample>,
    /// The bursts of the interval the next sample closes (a `#P` line).
    burst_next: Option<super::burst::BurstSample>,
    /// The AWS devices' own statistics for the next interval (`#A` lines).
    aws_next: Vec<(u32, u32, std::sync::Arc<super::aws::AwsInterval>)>,
    /// The observer of intervals (learning, when on): fed every interval, it sets each row's
    /// `learned`, live and in replay alike.
    observer: Option<Box<dyn super::observe::Observer>>,
    /// Who loads each device (issue 40: `#G` lines), across intervals.
    cgroups: super::cgroups::CgTracker,
    /// The selection is the recording's own, from the `#S` at this line, not the user's: a
    /// pattern its samples lack is a warning naming that line, not the user's DEVICE error.
    recorded_selection: Option<usize>,
    /// The recording's path as the user gave it, where it is known (Replay::open): a DEVICE
    /// that names none of its devices is said to be missing there, not from the machine.
    path: Option<String>,
}

impl Replayer {
    /// The caps declared on the command line, by device name (issue 42): over a profile's.
    pub fn set_caps(&mut self, caps: Vec<(String, crate::analysis::declared::DeclaredCap)>) {
        self.engine.set_caps(caps);
    }

    pub fn new(selection: Selection, since_boot: bool) -> Replayer {
        Replayer {
            engine: StatEngine::new(selection, since_boot),
            ids: HashMap::new(),
            samples: 0,
            last_ns: None,
            blk_next: None,
            blk_prev: None,
            burst_next: None,
            aws_next: Vec::new(),
            observer: None,
            cgroups: Default::default(),
            recorded_selection: None,
            path: None,
        }
    }

    /// The devices this replay shows.
    pub fn selection(&self) -> &Selection {
        self.engine.selection()
    }

    /// Feed every interval from now on to `observer` (learning: each row gets its `learned`).
    pub fn observe_with(&mut self, observer: Box<dyn super::observe::Observer>) {
        self.observer = Some(observer);
    }

    /// The observer, when one is set.
    pub fn observer_mut(&mut self) -> Option<&mut (dyn super::observe::Observer + 'static)> {
        self.observer.as_deref_mut()
    }

    /// What a device's learned state is kept under: its profile id (an `I` line), else its
    /// kernel name.
    pub fn learn_key(&self, major: u32, minor: u32, name: &str) -> String {
        self.id_of(major, minor, name).unwrap_or(name).to_string()
    }

    /// Honour one line. Err at the first sample when a selected pattern names no device.
    pub fn feed(&mut self, ev: Event, lookup: &mut Lookup<'_>) -> Result<Fed, Error> {
        self.feed_at(None, ev, lookup)
    }

    /// [`Replayer::feed`] for the element that starts at `line` of a file (named in warnings).
    pub fn feed_at(
        &mut self,
        line: Option<usize>,
        ev: Event,
        lookup: &mut Lookup<'_>,
    ) -> Result<Fed, Error> {
        let mut fed = Fed::default();
        match ev {
            Event::Run { .. } => {
                self.engine.new_run();
                self.last_ns = None;
                self.blk_prev = None;
                self.cgroups.new_run();
            }
            Event::Latency(b) => self.blk_next = Some(b),
            Event::Cgroups(c) => self.cgroups.set_next(c),
            Event::Burst(b) => self.burst_next = Some(b),
            Event::Aws {
                major,
                minor,
                interval,
            } => self.aws_next.push((major, minor, interval)),
            Event::Cap { dev, cap } => self.engine.record_cap(dev, cap),
            // What the live run showed: read once by Replay::new, for its default.
            Event::Selection(_) => {}
            Event::Uptime { ns } => self.engine.set_uptime(ns),
            Event::Cpu(c) => self.engine.set_cpu(c),
            Event::Device {
                major,
                minor,
                name,
                meta,
            } => self.engine.set_meta(major, minor, &name, meta),
            Event::Identity {
                major,
                minor,
                name,
                id,
            } => {
                self.engine.set_profile(major, minor, &name, lookup(&id));
                self.ids.insert((major, minor, name), id);
            }
            Event::Sample(raw) => {
                let (sample, mut warnings) = raw.parse();
                if sample.lines.is_empty() {
                    // An extra `TS` line, a sample cut off: nothing to be a base.
                    fed.warnings.push(format!(
                        "{}: a sample without /proc/diskstats lines, ignored",
                        self.at(line)
                    ));
                    return Ok(fed);
                }
                fed = self.push_at(line, sample, None)?;
                warnings.append(&mut fed.warnings);
                fed.warnings = warnings;
            }
        }
        Ok(fed)
    }

    /// A sample already parsed (the live collector parses it once to learn its devices).
    pub fn push_sample(&mut self, sample: DiskSample) -> Result<Fed, Error> {
        self.push_at(None, sample, None)
    }

    /// As [`Replayer::push_sample`], with `before_observe` given the interval the sample
    /// closed before the observer learns it: the live collector attaches its short windows
    /// there, where a replay attaches its `#P` line's, so both learn from the same figures.
    pub fn push_sample_with(
        &mut self,
        sample: DiskSample,
        before_observe: &mut dyn FnMut(&mut IntervalReport),
    ) -> Result<Fed, Error> {
        self.push_at(None, sample, Some(before_observe))
    }

    /// Where a sample is, for warnings: its line in the file, else its number.
    fn at(&self, line: Option<usize>) -> String {
        match line {
            Some(n) => format!("line {n}"),
            None => format!("sample {}", self.samples + 1),
        }
    }

    fn push_at(
        &mut self,
        line: Option<usize>,
        sample: DiskSample,
        before_observe: Option<&mut dyn FnMut(&mut IntervalReport)>,
    ) -> Result<Fed, Error> {
        let mut fed = Fed::default();
        if let Some(last) = self.last_ns.filter(|&l| sample.mono_ns < l) {
            fed.warnings.push(format!(
                "{}: time goes back {:.3} s from the sample before; a new base starts here (no \
                 interval spans the step)",
                self.at(line),
                (last - sample.mono_ns) as f64 / 1e9
            ));
            self.engine.new_run();
            self.blk_prev = None;
            self.cgroups.new_run();
        } else if self.last_ns == Some(sample.mono_ns) {
            // The engine keeps the earlier sample as the base: the next interval spans both.
            fed.warnings.push(format!(
                "{}: the same time as the sample before; not a base (the next interval starts \
                 at the sample before)",
                self.at(line)
            ));
        }
        self.last_ns = Some(sample.mono_ns);
        if self.samples == 0 {
            if let Some(p) = self.engine.unmatched_pattern(&sample) {
                let Some(at) = self.recorded_selection else {
                    return Err(match &self.path {
                        Some(path) => unknown_recorded_device(&p, path),
                        None => unknown_device(&p),
                    });
                };
                fed.warnings.push(format!(
                    "line {at}: the recording's selection (#S) names '{p}', which its samples \
                     do not have (name the devices to show, or --all)"
                ));
            }
            fed.started = Some(self.engine.judged());
        }
        self.samples += 1;
        let blk = self.blk_next.take();
        fed.report = self.engine.push(sample);
        if let (Some(r), Some(prev), Some(cur)) = (&mut fed.report, &self.blk_prev, &blk) {
            add_latency(r, prev, cur);
        }
        self.blk_prev = blk;
        if let (Some(r), Some(b)) = (&mut fed.report, self.burst_next.take()) {
            super::burst::attach(r, &b);
        }
        if let (Some(r), Some(f)) = (&mut fed.report, before_observe) {
            f(r);
        }
        let aws = std::mem::take(&mut self.aws_next);
        if let Some(r) = fed.report.as_mut().filter(|_| !aws.is_empty()) {
            for d in &mut r.devices {
                if let Some((_, _, a)) = aws.iter().find(|x| (x.0, x.1) == (d.major, d.minor)) {
                    d.aws = Some(a.clone());
                }
            }
        }
        if let (Some(l), Some(r)) = (&mut self.observer, &mut fed.report) {
            let ids = &self.ids;
            l.observe(r, &|d| {
                // The same key as learn_key (a borrow of `ids` alone, beside the learner).
                ids.get(&(d.major, d.minor, d.kernel_name.clone()))
                    .cloned()
                    .unwrap_or_else(|| d.kernel_name.clone())
            });
        }
        match &mut fed.report {
            Some(r) => add_cgroups(r, &mut self.cgroups),
            None => self.cgroups.seat(),
        }
        Ok(fed)
    }

    /// What the observer (learning) would judge this device at rest now, under the key it
    /// learns the device by (the profile id an `I` line gave it, else its kernel name, as
    /// each interval is observed): see [`super::observe::Observer::at_rest`].
    pub fn learned_at_rest(
        &self,
        major: u32,
        minor: u32,
        name: &str,
    ) -> Option<crate::analysis::learned::Learned> {
        let key = self.id_of(major, minor, name).unwrap_or(name);
        self.observer.as_deref()?.at_rest(key)
    }

    /// Is there sysfs metadata for this device under this kernel name?
    pub fn has_meta(&self, major: u32, minor: u32, name: &str) -> bool {
        self.engine.has_meta(major, minor, name)
    }

    /// The profile id an `I` line gave this device, if any.
    pub fn id_of(&self, major: u32, minor: u32, name: &str) -> Option<&str> {
        self.ids
            .get(&(major, minor, name.to_string()))
            .map(String::as_str)
    }

    /// Has any `I` line been seen? (Recordings older than `I` lines carry none.)
    pub fn has_ids(&self) -> bool {
        !self.ids.is_empty()
    }

    /// Samples fed so far.
    pub fn samples(&self) -> usize {
        self.samples
    }
}

/// Each device's cgroups over the interval, judged by the device's own judgement (issue 40).
/// Only the devices the tracker has cgroups for are judged, when it asks: a recording
/// without cgroup lines judged every device of every interval for nothing (a hash map of a
/// thousand judgements per interval, issue 37's cost).
fn add_cgroups(r: &mut IntervalReport, t: &mut super::cgroups::CgTracker) {
    let devices = &r.devices;
    // Each device number's row (the last one, should two rows share it), found once.
    let rows: std::cell::OnceCell<HashMap<(u32, u32), usize>> = std::cell::OnceCell::new();
    let mut out = t.close(r.interval_s(), &|major, minor| {
        let rows = rows.get_or_init(|| {
            let with_rates = devices.iter().enumerate().filter(|(_, d)| d.rates.is_ok());
            with_rates.map(|(i, d)| ((d.major, d.minor), i)).collect()
        });
        let j = devices[*rows.get(&(major, minor))?].judgement().device;
        Some((j.state, j.baseline_latency_ns))
    });
    for d in &mut r.devices {
        if let Some(c) = out.remove(&(d.major, d.minor)) {
            d.cgroups = Some(std::sync::Arc::new(c));
        }
    }
}

/// Each device's block-layer latency between the histograms of the interval's two samples.
fn add_latency(r: &mut IntervalReport, prev: &BlkSample, cur: &BlkSample) {
    for d in &mut r.devices {
        let Ok(rates) = &d.rates else { continue };
        let counts = blklat::diskstats_counts(rates);
        d.latency = blklat::device_latency(d.meta.kind, prev, cur, d.major, d.minor, counts);
        if let (Some(blklat::DevLatency::Measured(m)), Some(p)) = (&mut d.latency, &d.profile) {
            // As saturation judges: reads by a read (or mixed) profile, writes by the write
            // profile beside it, by a write profile, or by a legacy one that judged all.
            use crate::profile::Direction;
            let read = (p.direction != Direction::Write).then_some(p.baseline_p95_ns);
            let write = match &p.write {
                Some(w) => Some(w.baseline_p95_ns),
                None => (p.direction != Direction::Read || p.legacy).then_some(p.baseline_p95_ns),
            };
            m.judge(read.flatten(), write.flatten());
        }
    }
}

/// One step of a replay.
#[derive(Debug)]
pub enum Step {
    /// The first sample was read; `judged`: which profile each selected device with one is
    /// judged against (empty: none has a profile).
    Start {
        judged: Vec<String>,
    },
    Report(IntervalReport),
    /// Something the user should know, said once per distinct text (a skipped diskstats
    /// line, a sample older than the one before it).
    Warning(String),
}

/// A whole recording (iosat's or pt-diskstats/pt-stalk samples) as steps. Below's store
/// "advance" is the model: an iterator advancing over stored samples.
pub struct Replay<'a> {
    events: std::vec::IntoIter<(usize, Event)>,
    source: Source,
    replayer: Replayer,
    lookup: Box<Lookup<'a>>,
    pending: VecDeque<Step>,
    failed: bool,
    warned: HashSet<String>,
    /// The selection the recording's runs showed (`#S`), when they recorded one.
    recorded: Option<Selection>,
}

impl<'a> Replay<'a> {
    /// Parse `text`; the steps come as the iterator is advanced. `selection` as the user gave
    /// it: the default one (no DEVICE, `--partitions` or `--all`) shows what the recording's
    /// runs showed ([`Replay::recorded_selection`]) where they recorded it.
    pub fn new(
        text: &str,
        selection: Selection,
        since_boot: bool,
        lookup: Box<Lookup<'a>>,
    ) -> Result<Replay<'a>, ParseError> {
        let (events, source) = record::parse_numbered(text)?;
        // Each run's selection: its `#S`, else (a run appended by an iosat from before `#S`)
        // the default one it showed. None where no run recorded one.
        let mut runs: Vec<Option<&Selection>> = Vec::new();
        // The line of the first `#S` (named if its patterns name no device).
        let mut first = None;
        for (n, e) in &events {
            match e {
                Event::Run { .. } => runs.push(None),
                Event::Selection(s) => {
                    first.get_or_insert(*n);
                    match runs.last_mut() {
                        Some(r) => *r = Some(s),
                        None => runs.push(Some(s)),
                    }
                }
                _ => {}
            }
        }
        let recorded = Selection::of_recorded_runs(&runs);
        let (selection, own) = match &recorded {
            Some(r) if selection == Selection::default() => (r.clone(), first),
            _ => (selection, None),
        };
        let mut replayer = Replayer::new(selection, since_boot);
        replayer.recorded_selection = own;
        Ok(Replay {
            events: events.into_iter(),
            source,
            replayer,
            lookup,
            pending: VecDeque::new(),
            failed: false,
            warned: HashSet::new(),
            recorded,
        })
    }

    /// The device selection the recording's runs showed (`#S`: [`Selection::of_runs`]); None
    /// for a recording without one (older, pt-diskstats).
    pub fn recorded_selection(&self) -> Option<&Selection> {
        self.recorded.as_ref()
    }

    /// The one opener of a recording's replay (`stat --replay`, `top --replay`, `report`): each
    /// device's profile looked up in `profiles`, what a lookup noticed left to `notes` (given
    /// the cache and the id: printed, drawn or dropped, as the view can); a file that is not a
    /// recording an error naming `path`; `observer` (learning) fed every interval.
    pub fn open(
        text: &str,
        path: &Path,
        selection: Selection,
        since_boot: bool,
        profiles: &'a mut ProfileCache,
        mut notes: impl FnMut(&mut ProfileCache, &str) + 'a,
        observer: Option<Box<dyn super::observe::Observer>>,
    ) -> Result<Replay<'a>, Error> {
        let lookup = Box::new(move |id: &str| {
            let p = profiles.profile(id);
            notes(profiles, id);
            p
        });
        let mut steps = Replay::new(text, selection, since_boot, lookup).map_err(|e| e.at(path))?;
        steps.replayer.path = Some(path.display().to_string());
        if let Some(o) = observer {
            steps.replayer.observe_with(o);
        }
        Ok(steps)
    }

    /// Which tool wrote the file.
    pub fn source(&self) -> Source {
        self.source
    }

    /// The state the lines read so far left.
    pub fn replayer(&self) -> &Replayer {
        &self.replayer
    }

    /// The same, to attach a learner (learn/) before the first step.
    pub fn replayer_mut(&mut self) -> &mut Replayer {
        &mut self.replayer
    }
}

impl Iterator for Replay<'_> {
    type Item = Result<Step, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.pending.is_empty() {
            if self.failed {
                return None;
            }
            let (line, ev) = self.events.next()?;
            match self.replayer.feed_at(Some(line), ev, &mut *self.lookup) {
                Ok(fed) => {
                    for w in fed.warnings {
                        if self.warned.insert(w.clone()) {
                            self.pending.push_back(Step::Warning(w));
                        }
                    }
                    if let Some(judged) = fed.started {
                        self.pending.push_back(Step::Start { judged });
                    }
                    if let Some(r) = fed.report {
                        self.pending.push_back(Step::Report(r));
                    }
                }
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
        self.pending.pop_front().map(Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_last_line_is_cut_and_named_and_bad_bytes_are_blanked() {
        let full =
            "#iosat-record 1\nR 1 1000000000\nT 1000000000 5\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n";
        let bytes = format!("{full}T 2000000000 6\n 8 0 sda 3 0 2").into_bytes();
        let r = RecordingText::of(Path::new("r.rec"), crate::sys::fs::text_of(bytes));
        assert_eq!(r.text, format!("{full}T 2000000000 6\n"));
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        assert!(r.warnings[0].starts_with("r.rec:6: the last line has no newline"));
        // Whole lines, or a last line that is blank: nothing cut, nothing said.
        for ok in [full.to_string(), format!("{full}  ")] {
            let r = RecordingText::of(Path::new("r.rec"), (ok, Vec::new()));
            assert_eq!((r.text.as_str(), r.warnings.len()), (full, 0));
        }
        // A byte that is not UTF-8 blanks its line, named; the rest replays.
        let mut bytes = full.as_bytes().to_vec();
        bytes.extend_from_slice(b"# \xff\n");
        let r = RecordingText::of(Path::new("r.rec"), crate::sys::fs::text_of(bytes));
        assert_eq!(r.warnings, ["r.rec:5: not UTF-8, line skipped"]);
        assert!(Replay::new(&r.text, Selection::default(), false, Box::new(|_| None)).is_ok());
    }

    #[test]
    fn steps_start_then_reports() {
        let text =
            "#iosat-record 1\nR 1 1000000000\nT 1000000000 5\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n\
                    T 2000000000 6\n 8 0 sda 3 0 24 2 0 0 0 0 0 2 2\n";
        let steps: Vec<Step> = Replay::new(text, Selection::default(), false, Box::new(|_| None))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(matches!(&steps[0], Step::Start { judged } if judged.is_empty()));
        let Step::Report(r) = &steps[1] else { panic!() };
        assert_eq!(r.devices[0].rates.as_ref().unwrap().r_s, 2.0);
        assert_eq!(steps.len(), 2);
    }

    #[test]
    fn unknown_pattern_fails_at_the_first_sample() {
        let text = "T 1 5\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n";
        let sel = Selection {
            patterns: vec!["nvme9".into()],
            ..Selection::default()
        };
        let mut r = Replay::new(text, sel, false, Box::new(|_| None)).unwrap();
        assert!(r.next().unwrap().is_err());
        assert!(r.next().is_none());
    }

    #[test]
    fn the_recorded_selection_shows_by_default_and_one_naming_nothing_is_a_warning() {
        let body = "T 1000000000 5\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n 7 0 loop0 1 0 8 1 0 0 0 0 0 1 1\n\
                    T 2000000000 6\n 8 0 sda 3 0 24 2 0 0 0 0 0 2 2\n 7 0 loop0 3 0 24 2 0 0 0 0 0 2 2\n";
        let rec = |pattern: &str| {
            format!(
                "#iosat-record 1\nR 1 1000000000\n#S {{\"patterns\":[\"{pattern}\"],\
                 \"partitions\":false,\"all\":false}}\n{body}"
            )
        };
        let rows = |s: &[Step]| -> Vec<String> {
            s.iter()
                .filter_map(|s| match s {
                    Step::Report(r) => Some(r.devices.iter().map(|d| d.kernel_name.clone())),
                    _ => None,
                })
                .flatten()
                .collect()
        };
        assert_eq!(rows(&steps(&rec("loop0"))), ["loop0"]);
        // A run from before `#S` appended to (or followed by) one with it: the two showed
        // different devices, so every device is shown, the old run's disk among them.
        let old_run = format!(
            "R 3 1000000000\n{}",
            body.replace("T 1", "T 3").replace("T 2", "T 4")
        );
        let mixed = format!("{}{old_run}", rec("loop0"));
        let shown = rows(&steps(&mixed));
        assert!(shown.contains(&"sda".to_string()) && shown.contains(&"loop0".to_string()));
        // The user's selection wins over the recording's.
        let sda = Selection {
            patterns: vec!["sda".into()],
            ..Selection::default()
        };
        let s: Vec<Step> = Replay::new(&rec("loop0"), sda, false, Box::new(|_| None))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows(&s), ["sda"]);
        // A recorded pattern the samples lack (an edited or planted line) is no DEVICE error
        // of the user's: a warning naming the line, and nothing of it shown.
        let s = steps(&rec("nvme9"));
        assert!(rows(&s).is_empty());
        assert!(
            s.iter().any(|s| matches!(s, Step::Warning(w)
                if w.starts_with("line 3: the recording's selection (#S) names 'nvme9'"))),
            "{s:?}"
        );
    }

    fn steps(text: &str) -> Vec<Step> {
        Replay::new(text, Selection::default(), false, Box::new(|_| None))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn time_going_back_starts_a_new_base_with_one_warning() {
        // An empty TS at the top, then the clock steps back 60 s between the 2nd and 3rd
        // samples (an NTP step): intervals 1→2 and 3→4, none across the step.
        let text = "TS 1000.0\nTS 100.0\n 8 0 sda 10 0 80 5 0 0 0 0 0 5 5\n\
                    TS 101.0\n 8 0 sda 20 0 160 10 0 0 0 0 0 10 10\n\
                    TS 41.0\n 8 0 sda 30 0 240 15 0 0 0 0 0 15 15\n\
                    TS 43.0\n 8 0 sda 70 0 560 35 0 0 0 0 0 35 35\n";
        let s = steps(text);
        let warnings: Vec<&str> = s
            .iter()
            .filter_map(|x| match x {
                Step::Warning(w) => Some(w.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            warnings,
            [
                "line 1: a sample without /proc/diskstats lines, ignored",
                "line 6: time goes back 60.000 s from the sample before; a new base starts \
                 here (no interval spans the step)"
            ]
        );
        let reports: Vec<&IntervalReport> = s
            .iter()
            .filter_map(|x| match x {
                Step::Report(r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(reports.len(), 2);
        assert_eq!(reports[0].interval_s(), 1.0);
        assert_eq!(reports[0].devices[0].rates.as_ref().unwrap().r_s, 10.0);
        assert_eq!(reports[1].interval_s(), 2.0);
        assert_eq!(reports[1].devices[0].rates.as_ref().unwrap().r_s, 20.0);
    }

    #[test]
    fn a_duplicate_time_is_warned_and_not_a_base() {
        let text = "TS 10.0\n 8 0 sda 10 0 80 5 0 0 0 0 0 5 5\nTS 10.0\n 8 0 sda 11 0 88 5 0 0 0 0 0 5 5\n\
                    TS 12.0\n 8 0 sda 14 0 112 5 0 0 0 0 0 5 5\n";
        let s = steps(text);
        assert!(matches!(&s[1], Step::Warning(w) if w.starts_with("line 3: the same time")));
        let Step::Report(r) = &s[2] else { panic!() };
        assert_eq!(r.interval_s(), 2.0);
        assert_eq!(r.devices[0].rates.as_ref().unwrap().r_s, 2.0);
        assert_eq!(s.len(), 3);
    }
}
