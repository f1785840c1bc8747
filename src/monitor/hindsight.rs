//! Hindsight (issue 41): the last minutes of a live run's raw samples kept in memory, bounded
//! in time and in bytes, and written out as an ordinary recording (monitor::record) when a
//! device turns overloaded or when asked (SIGUSR1), so that an incident can be looked at after
//! it happened with `iosat analyze`, `report` and `compare`, at the run's full resolution.
//!
//! What is kept is exactly what `--record` would have appended (the collector hands over each
//! sample's lines), so a dump replays with the same parser and formulas as the live run.
//! Device announcements (`D`, `I`) are kept apart, one per device, and written at the head of
//! every dump: a dump that begins after a device was first seen still names it.
//! A dump covers the span before its trigger and a tail after it; a trigger during the tail
//! extends it (one dump per incident). Written under a temporary name, synced and renamed;
//! the oldest dumps beyond the retention limits are removed (only files named as iosat names
//! its dumps, never through a symlink). Pure but for [`Hindsight::write_due`].
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use super::record::{self, Event};
use crate::error::Error;

/// The file names of dumps: `hindsight-<UTC time>-<reason>.rec`.
pub const PREFIX: &str = "hindsight-";
pub const SUFFIX: &str = ".rec";

/// How much hindsight to keep and where dumps go.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The span kept before a trigger, ns (0: off).
    pub span_ns: u64,
    /// The ring's own cadence, ns (`--hindsight-interval`): at most one sample this often is
    /// kept, whatever the view's interval; the live command samples between its own ticks
    /// when this is shorter ([`Hindsight::due_at`]).
    pub interval_ns: u64,
    /// Kept after a trigger before the dump is written, ns.
    pub tail_ns: u64,
    /// The most bytes of samples kept in memory; the oldest go first beyond it.
    pub max_bytes: usize,
    /// Where dumps are written (made when missing).
    pub dir: PathBuf,
    /// Retention: at most this many dumps, and at most this many bytes of them.
    pub keep: usize,
    pub keep_bytes: u64,
}

/// One sample's lines.
#[derive(Debug, Clone)]
struct Held {
    mono_ns: u64,
    wall_ns: i64,
    text: String,
}

/// A dump asked for and not yet written.
#[derive(Debug, Clone, PartialEq)]
struct Pending {
    /// Why, for the file name and the line on stderr ("overloaded-sda", "signal").
    reason: String,
    /// Write once a sample at or after this monotonic time is kept.
    due_mono_ns: u64,
    trigger_wall_ns: i64,
    /// `#trigger` lines: each trigger of the incident, and each device that turned
    /// overloaded in it with its directions, as judged live.
    triggers: String,
}

/// The ring and its dumps.
#[derive(Debug)]
pub struct Hindsight {
    settings: Settings,
    host: String,
    /// When the ring's next sample is due (its own schedule, collect::next_deadline's rule);
    /// None before the first.
    due: Option<u64>,
    /// `D` and `I` lines by device number and name (a re-created device keeps both).
    devices: BTreeMap<(u32, u32, String), String>,
    /// The run's `K` lines (caps declared on the command line).
    caps: String,
    /// The names of the cgroups seen (`#G` lines name each once a run): a dump names them all
    /// at its head, whichever samples it kept.
    cg_names: BTreeMap<u64, super::cgroups::CgName>,
    held: VecDeque<Held>,
    bytes: usize,
    /// The sample being assembled (the events fed before its `T`).
    current: String,
    pending: Option<Pending>,
    /// Devices judged overloaded in the last interval: a trigger fires when one turns so.
    overloaded: Vec<String>,
    /// Dumps written so far in this run.
    pub written: u64,
    /// Samples dropped before their span was over, to keep within `max_bytes`.
    pub dropped: u64,
    /// How long the last dump took to render and write, ns.
    pub last_dump_ns: Option<u64>,
    /// The line stating the ring's memory, said once after its first samples.
    stated: bool,
}

impl Hindsight {
    pub fn new(settings: Settings, host: String) -> Hindsight {
        Hindsight {
            settings,
            host,
            due: None,
            devices: BTreeMap::new(),
            caps: String::new(),
            cg_names: BTreeMap::new(),
            held: VecDeque::new(),
            bytes: 0,
            current: String::new(),
            pending: None,
            overloaded: Vec::new(),
            written: 0,
            dropped: 0,
            last_dump_ns: None,
            stated: false,
        }
    }

    /// When the ring wants its next sample (monotonic ns); None before its first. A live
    /// command whose own next tick comes later samples for the ring in between.
    pub fn due_at(&self) -> Option<u64> {
        self.due
    }

    /// How early a sample may come and still be the ring's due one: a twentieth of its
    /// interval (a view tick a few ms early serves).
    pub fn slack_ns(&self) -> u64 {
        self.settings.interval_ns / 20
    }

    /// Would a sample read at `mono_ns` be kept ([`Hindsight::feed`] decides the same way)?
    pub fn would_keep(&self, mono_ns: u64) -> bool {
        self.due
            .map_or(true, |due| mono_ns.saturating_add(self.slack_ns()) >= due)
    }

    /// Is a sample read at `mono_ns` kept? At the ring's own cadence: one due within
    /// [`Hindsight::slack_ns`] is taken, and the schedule moves on from when it was due, so
    /// the ring keeps one sample per interval on average.
    fn wants(&mut self, mono_ns: u64) -> bool {
        let every = self.settings.interval_ns.max(1);
        match self.due {
            Some(due) if mono_ns.saturating_add(self.slack_ns()) < due => false,
            Some(due) => {
                self.due = Some(super::collect::next_deadline(due, every, mono_ns));
                true
            }
            None => {
                self.due = Some(mono_ns.saturating_add(every));
                true
            }
        }
    }

    /// The most bytes the span takes at the ring's cadence, estimated from the samples held
    /// so far (None before one is): what the line on the ring's memory states.
    pub fn estimate_bytes(&self) -> Option<u64> {
        let n = self.held.len() as u64;
        if n == 0 {
            return None;
        }
        let per = self.bytes as u64 / n;
        let samples = self.settings.span_ns / self.settings.interval_ns.max(1) + 1;
        Some(per.saturating_mul(samples))
    }

    /// Once, after the first samples: the line stating what the ring takes in memory, and
    /// the span the byte cap leaves when the span would take more. Said when the interval
    /// is finer than a second (asked for) or the cap cuts the span; a default ring within
    /// its cap goes unsaid (every `stat` would print it).
    pub fn take_statement(&mut self) -> Option<String> {
        if self.stated || self.held.len() < 2 {
            return None;
        }
        self.stated = true;
        let est = self.estimate_bytes()?;
        let s = &self.settings;
        if s.interval_ns >= 1_000_000_000 && est <= s.max_bytes as u64 {
            return None;
        }
        let size = crate::units::human_bytes;
        let span = span_words(s.span_ns);
        let every = span_words(s.interval_ns);
        let cap = s.max_bytes as u64;
        Some(if est <= cap {
            format!(
                "hindsight: keeping {span} of samples every {every} in memory: about {} at \
                 this many devices (at most {}, --hindsight-max-mb)",
                size(est),
                size(cap)
            )
        } else {
            let kept_ns = (s.span_ns as u128 * cap as u128 / est.max(1) as u128) as u64;
            format!(
                "hindsight: {span} of samples every {every} would take about {} at this many \
                 devices; the {} cap (--hindsight-max-mb) keeps about the last {}",
                size(est),
                size(cap),
                span_words(kept_ns)
            )
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// One element of the live run, in the order the collector feeds them. A sample (`T`)
    /// closes what came before it into one held sample.
    pub fn feed(&mut self, ev: &Event) {
        match ev {
            // The dump's own `R` carries the ring's cadence.
            Event::Run { .. } => {}
            Event::Device {
                major, minor, name, ..
            }
            | Event::Identity {
                major, minor, name, ..
            } => {
                let line = record::format_event(ev);
                let key = (*major, *minor, name.clone());
                let e = self.devices.entry(key).or_default();
                // One D and one I line per device: a D replaces a D, an I an I.
                let kind = line.as_bytes()[0];
                let mut kept: Vec<&str> = e.lines().filter(|l| l.as_bytes()[0] != kind).collect();
                kept.push(line.trim_end());
                *e = kept.join("\n") + "\n";
            }
            Event::Sample(raw) => {
                let mut text = std::mem::take(&mut self.current);
                // Not due at the ring's cadence: the lines read with it go too (the
                // histograms and CPU times are cumulative: the next kept sample has its own).
                if !self.wants(raw.mono_ns) {
                    return;
                }
                text.push_str(&record::format_sample(raw));
                self.push(Held {
                    mono_ns: raw.mono_ns,
                    wall_ns: raw.wall_ns,
                    text,
                });
            }
            // A cap declared on the command line holds for the whole run: kept with the run's
            // line, so a dump judges by it too (issue 42).
            // So is the run's device selection: a dump shows what the live view showed.
            Event::Cap { .. } | Event::Selection(_) => {
                self.caps.push_str(&record::format_event(ev))
            }
            Event::Cgroups(c) => {
                for (id, n) in &c.names {
                    self.cg_names.insert(*id, n.clone());
                }
                self.current.push_str(&record::format_event(ev));
            }
            other => self.current.push_str(&record::format_event(other)),
        }
    }

    fn push(&mut self, h: Held) {
        self.bytes += h.text.len();
        let now = h.mono_ns;
        self.held.push_back(h);
        // While a dump is pending, the span before its trigger is not aged out.
        let keep_from = match &self.pending {
            Some(_) => 0,
            None => now.saturating_sub(self.settings.span_ns),
        };
        while self.held.len() > 2
            && (self.held[0].mono_ns < keep_from || self.bytes > self.settings.max_bytes)
        {
            let old = self.held.pop_front().expect("non-empty");
            self.bytes -= old.text.len();
            if old.mono_ns >= keep_from {
                self.dropped += 1;
            }
        }
    }

    /// The samples held now.
    pub fn samples(&self) -> usize {
        self.held.len()
    }

    /// The bytes of samples held now.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The seconds of samples held now.
    pub fn held_s(&self) -> f64 {
        match (self.held.front(), self.held.back()) {
            (Some(a), Some(b)) => (b.mono_ns - a.mono_ns) as f64 / 1e9,
            _ => 0.0,
        }
    }

    /// The devices judged overloaded in the interval that ended at `mono_ns`: one that was not
    /// in the interval before triggers a dump. Without the directions: [`Hindsight::judged_dirs`].
    pub fn judged(&mut self, overloaded: Vec<String>, mono_ns: u64, wall_ns: i64) {
        let dirs = overloaded.into_iter().map(|d| (d, String::new())).collect();
        self.judged_dirs(dirs, mono_ns, wall_ns);
    }

    /// [`Hindsight::judged`] with each device's overloaded directions ("write", "read,write"):
    /// each device that turned so is written into the dump as a `#trigger` line.
    pub fn judged_dirs(&mut self, overloaded: Vec<(String, String)>, mono_ns: u64, wall_ns: i64) {
        let new: Vec<&(String, String)> = overloaded
            .iter()
            .filter(|(d, _)| !self.overloaded.contains(d))
            .collect();
        if let Some((first, _)) = new.first() {
            let reason = format!("overloaded-{}", safe_name(first));
            self.trigger(reason, mono_ns, wall_ns);
        }
        if let Some(p) = &mut self.pending {
            for (dev, dirs) in new {
                let dirs = if dirs.is_empty() { "-" } else { dirs };
                p.triggers.push_str(&format!(
                    "#trigger {wall_ns} overloaded {} {dirs}\n",
                    safe_name(dev)
                ));
            }
        }
        self.overloaded = overloaded.into_iter().map(|(d, _)| d).collect();
    }

    /// Ask for a dump of the span before `mono_ns` and the tail after it; a trigger during a
    /// pending dump's tail extends that dump.
    pub fn trigger(&mut self, reason: String, mono_ns: u64, wall_ns: i64) {
        let due = mono_ns.saturating_add(self.settings.tail_ns);
        let line = match reason.starts_with("overloaded-") {
            // Its device's line follows (judged_dirs).
            true => String::new(),
            false => format!("#trigger {wall_ns} {}\n", safe_name(&reason)),
        };
        match &mut self.pending {
            Some(p) => {
                p.due_mono_ns = p.due_mono_ns.max(due);
                p.triggers.push_str(&line);
            }
            None => {
                self.pending = Some(Pending {
                    reason,
                    due_mono_ns: due,
                    trigger_wall_ns: wall_ns,
                    triggers: line,
                })
            }
        }
    }

    /// The step after each sample, the same in every live command: a SIGUSR1 received
    /// since the last one asks for a dump; when the sample closed a judged interval
    /// (`judged`), a device of `rows` judged overloaded that was not before asks for one;
    /// and a dump whose tail has passed (any, with `end`) is written. The path written, if
    /// any.
    pub fn after_interval<'a>(
        &mut self,
        rows: impl Iterator<Item = &'a super::interval::DeviceRow>,
        mono_ns: u64,
        wall_ns: i64,
        judged: bool,
        end: bool,
    ) -> Result<Option<PathBuf>, Error> {
        if crate::sys::signal::take_dump_request() {
            self.trigger("signal".into(), mono_ns, wall_ns);
        }
        if judged && !end {
            use crate::analysis::state::State;
            let mut over: Vec<(String, String)> = rows
                .filter_map(|d| {
                    let j = d.judgement();
                    (j.state() == State::Overloaded).then(|| {
                        let dirs: Vec<&str> = [&j.read, &j.write]
                            .iter()
                            .filter(|x| x.state == State::Overloaded)
                            .map(|x| x.dir.as_str())
                            .collect();
                        (d.meta.display_name.clone(), dirs.join(","))
                    })
                })
                .collect();
            over.sort();
            self.judged_dirs(over, mono_ns, wall_ns);
        }
        self.write_due(mono_ns, end)
    }

    /// Is a dump waiting for its tail?
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The recording of what is held: header, run, devices, samples. Pure.
    pub fn render(&self) -> String {
        let mut s = String::with_capacity(self.bytes + 4096);
        s.push_str(record::HEADER);
        s.push_str(&format!("#host {}\n", self.host));
        if let Some(p) = &self.pending {
            s.push_str(&format!(
                "# hindsight: {} at wall {} ns; {} s before it kept, {} s after\n",
                p.reason,
                p.trigger_wall_ns,
                self.settings.span_ns / 1_000_000_000,
                self.settings.tail_ns / 1_000_000_000
            ));
            // What `iosat analyze` reads: `#trigger <wall_ns> <what> [<device> <directions>]`.
            s.push_str(&p.triggers);
        }
        let wall = self.held.front().map_or(0, |h| h.wall_ns);
        s.push_str(&record::format_run(wall, self.settings.interval_ns));
        s.push_str(&self.caps);
        for lines in self.devices.values() {
            s.push_str(lines);
        }
        if !self.cg_names.is_empty() {
            let names = super::cgroups::CgSample {
                names: self.cg_names.iter().map(|(i, n)| (*i, n.clone())).collect(),
                ..Default::default()
            };
            s.push_str(&record::format_event(&Event::Cgroups(names)));
        }
        for h in &self.held {
            s.push_str(&h.text);
        }
        s
    }

    /// Write the pending dump when its tail has passed (`now_mono_ns`), or at once with
    /// `now`: the end of the run cuts the tail short. The path written, if any.
    pub fn write_due(&mut self, now_mono_ns: u64, now: bool) -> Result<Option<PathBuf>, Error> {
        let due = match &self.pending {
            Some(p) => now || now_mono_ns >= p.due_mono_ns,
            None => false,
        };
        if !due || self.held.is_empty() {
            return Ok(None);
        }
        let p = self.pending.clone().expect("due");
        let t0 = crate::sys::clock::monotonic_ns();
        let text = self.render();
        self.pending = None;
        let dir = make_dir(&self.settings.dir)?;
        let path = dir.join(format!(
            "{PREFIX}{}-{}{SUFFIX}",
            utc_stamp(p.trigger_wall_ns),
            p.reason
        ));
        let path = free_name(&path);
        crate::sys::fs::replace_file(&path, text.as_bytes())?;
        self.written += 1;
        retain(&dir, self.settings.keep, self.settings.keep_bytes, &path);
        self.last_dump_ns = Some(crate::sys::clock::monotonic_ns().saturating_sub(t0));
        Ok(Some(path))
    }
}

/// The triggers a dump's head names (`#trigger <wall_ns> <what> [<device> <directions>]`):
/// each one's wall time and a label ("overloaded sda (write)", "signal"); none in another
/// recording. What the page marks on its charts.
pub fn triggers(text: &str) -> Vec<(i64, String)> {
    text.lines()
        .take_while(|l| l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("#trigger "))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let wall = f.next()?.parse().ok()?;
            let what = f.next()?;
            let label = match (f.next(), f.next()) {
                (Some(dev), Some("-")) => format!("{what} {dev}"),
                (Some(dev), Some(dirs)) => format!("{what} {dev} ({})", dirs.replace(',', ", ")),
                _ => what.to_string(),
            };
            Some((wall, label))
        })
        .collect()
}

/// A span as the line on the ring's memory says it: "100 ms", "1 s", "15 min", "1 h 05 min".
fn span_words(ns: u64) -> String {
    if ns < 1_000_000_000 {
        format!("{} ms", ns / 1_000_000)
    } else if ns % 1_000_000_000 != 0 && ns < 10_000_000_000 {
        format!("{:.1} s", ns as f64 / 1e9)
    } else {
        crate::units::duration_words(ns as f64 / 1e9)
    }
}

/// A device name as a file-name part: letters, digits, `-`, `_` and `.` kept, the rest `_`.
fn safe_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `20261129T031200Z` of a wall time in ns (units::iso_utc without its separators).
fn utc_stamp(wall_ns: i64) -> String {
    let iso = crate::units::iso_utc(wall_ns);
    let (date, time) = iso.split_at(10);
    format!("{}{}Z", date.replace('-', ""), time[..9].replace(':', ""))
}

/// `path`, or `path` with `-2`, `-3`, … before the suffix when taken: a dump never replaces one.
fn free_name(path: &Path) -> PathBuf {
    if std::fs::symlink_metadata(path).is_err() {
        return path.to_path_buf();
    }
    let stem = path.to_string_lossy();
    let stem = stem.strip_suffix(SUFFIX).unwrap_or(&stem).to_string();
    (2..)
        .map(|n| PathBuf::from(format!("{stem}-{n}{SUFFIX}")))
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .expect("some free name")
}

/// The dump directory, made (0700) when missing; refused when it is a symlink or not a
/// directory, or, as root, writable by others (someone could plant files for root to remove).
fn make_dir(dir: &Path) -> Result<PathBuf, Error> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {
            if crate::sys::is_root() && (m.uid() != 0 || m.mode() & 0o022 != 0) {
                return Err(Error::Safety(format!(
                    "{} can be written by others (owner uid {}, mode {:o}); iosat \
                     as root writes no dumps there (--hindsight-dir a directory only root can \
                     write)",
                    dir.display(),
                    m.uid(),
                    m.mode() & 0o7777
                )));
            }
        }
        Ok(_) => {
            return Err(Error::Safety(format!(
                "{} is not a directory of its own (a symlink or a file); iosat \
                 does not follow it",
                dir.display()
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| Error::io(dir, e))?;
        }
        Err(e) => return Err(Error::io(dir, e)),
    }
    Ok(dir.to_path_buf())
}

/// Remove the oldest dumps (regular files named as iosat names them) beyond `keep` files or
/// `keep_bytes` bytes, never `newest`.
/// Whether the file at `path` begins as a dump of iosat's own does (the recording's header,
/// the host line, the hindsight line): a file of the user's under a name like a dump's is
/// never removed by retention. Read without following a symlink or waiting on a FIFO.
fn written_by_hindsight(path: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    else {
        return false;
    };
    let mut head = Vec::with_capacity(4096);
    if f.take(4096).read_to_end(&mut head).is_err() {
        return false;
    }
    let head = String::from_utf8_lossy(&head);
    let Some(rest) = head.strip_prefix(record::HEADER) else {
        return false;
    };
    let mut lines = rest.lines();
    lines.next().is_some_and(|l| l.starts_with("#host "))
        && lines.next().is_some_and(|l| l.starts_with("# hindsight: "))
}

fn retain(dir: &Path, keep: usize, keep_bytes: u64, newest: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut dumps: Vec<(String, PathBuf, u64)> = rd
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().to_string_lossy().into_owned();
            let m = e.path().symlink_metadata().ok()?;
            (name.starts_with(PREFIX)
                && name.ends_with(SUFFIX)
                && m.is_file()
                && written_by_hindsight(&e.path()))
            .then(|| (name, e.path(), m.len()))
        })
        .collect();
    // Names start with the UTC time: oldest first.
    dumps.sort();
    let mut total: u64 = dumps.iter().map(|d| d.2).sum();
    let mut count = dumps.len();
    for (_, path, len) in dumps {
        if count <= keep && total <= keep_bytes {
            break;
        }
        if path == newest {
            continue;
        }
        if std::fs::remove_file(&path).is_ok() {
            count -= 1;
            total -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::RawSample;

    fn settings(dir: &Path) -> Settings {
        Settings {
            span_ns: 10_000_000_000,
            interval_ns: 1_000_000_000,
            tail_ns: 2_000_000_000,
            max_bytes: 1 << 20,
            dir: dir.to_path_buf(),
            keep: 3,
            keep_bytes: 1 << 30,
        }
    }

    const WALL0: i64 = 1_795_000_000_000_000_000;

    /// Second `t` of a run: one diskstats line with `t` reads.
    fn sample(h: &mut Hindsight, t: u64) {
        let raw = RawSample {
            mono_ns: t * 1_000_000_000,
            wall_ns: WALL0 + t as i64 * 1_000_000_000,
            text: format!(
                "   7       0 loop0 {t} 0 {} {t} 0 0 0 0 0 {t} {t} 0 0 0 0 0 0\n",
                t * 8
            ),
        };
        h.feed(&Event::Sample(raw));
    }

    fn ring(dir: &Path) -> Hindsight {
        let mut h = Hindsight::new(settings(dir), "testhost".into());
        h.feed(&Event::Run {
            wall_ns: WALL0,
            interval_ns: 1_000_000_000,
        });
        h.feed(&Event::Device {
            major: 7,
            minor: 0,
            name: "loop0".into(),
            meta: crate::monitor::select::DeviceMeta {
                kind: None,
                display_name: "loop0".into(),
            },
        });
        h
    }

    #[test]
    fn a_declared_cap_outlives_the_samples_it_came_with() {
        let d = tempfile::tempdir().unwrap();
        let mut h = ring(d.path());
        let cap = crate::analysis::declared::DeclaredCap {
            iops: Some(1000.0),
            ..Default::default()
        };
        h.feed(&Event::Cap {
            dev: "loop0".into(),
            cap,
        });
        for t in 0..100 {
            sample(&mut h, t);
        }
        // The first samples aged out; the run's K line is still in the dump, after its R.
        let text = h.render();
        let (events, _) = record::parse(&text).unwrap();
        assert!(matches!(events[0], Event::Run { .. }), "{text}");
        assert_eq!(
            events[1],
            Event::Cap {
                dev: "loop0".into(),
                cap
            }
        );
        assert_eq!(text.matches("K iops=1000 loop0\n").count(), 1, "{text}");
    }

    #[test]
    fn a_dump_names_every_cgroup_seen_though_its_first_sample_aged_out() {
        use crate::monitor::cgroups::{CgName, CgSample};
        let d = tempfile::tempdir().unwrap();
        let mut h = ring(d.path());
        let named = |id: u64, path: &str| CgSample {
            rows: vec![(id, 7, 0, 0, 1, 4096, 1000, 0, 1000, 1, vec![])],
            names: vec![(
                id,
                CgName {
                    name: path.into(),
                    path: path.into(),
                    v1: true,
                },
            )],
            ..Default::default()
        };
        // Each cgroup is named once, in the run's first #G that has it.
        h.feed(&Event::Cgroups(named(10, "/db")));
        sample(&mut h, 0);
        h.feed(&Event::Cgroups(named(20, "/batch")));
        for t in 1..100 {
            sample(&mut h, t);
        }
        let text = h.render();
        let (events, _) = record::parse(&text).unwrap();
        let names: Vec<&CgSample> = events
            .iter()
            .filter_map(|e| match e {
                Event::Cgroups(c) if c.rows.is_empty() => Some(c),
                _ => None,
            })
            .collect();
        assert_eq!(names.len(), 1, "{text}");
        let ids: Vec<u64> = names[0].names.iter().map(|n| n.0).collect();
        assert_eq!(ids, [10, 20]);
        // Before the first sample the dump holds.
        let at = |p: &str| text.find(p).unwrap();
        assert!(at("#G {\"rows\":[]") < at("\nT "), "{text}");
    }

    #[test]
    fn the_ring_keeps_its_span_and_its_bytes() {
        let d = tempfile::tempdir().unwrap();
        let mut h = ring(d.path());
        for t in 0..100 {
            sample(&mut h, t);
        }
        // 10 s of span: samples 89..=99 (the first at exactly span before the last is kept).
        assert_eq!(h.held.len(), 11);
        assert!((h.held_s() - 10.0).abs() < 1e-9);
        let mut small = Hindsight::new(
            Settings {
                max_bytes: 300,
                ..settings(d.path())
            },
            "h".into(),
        );
        for t in 0..100 {
            sample(&mut small, t);
        }
        assert!(small.bytes() <= 300, "{}", small.bytes());
        assert!(small.held.len() >= 2);
    }

    #[test]
    fn a_dump_replays_as_a_recording_of_the_span_and_its_tail() {
        let d = tempfile::tempdir().unwrap();
        let mut h = ring(d.path());
        for t in 0..30 {
            sample(&mut h, t);
            if t == 20 {
                h.judged(vec!["loop0".into()], t * 1_000_000_000, WALL0);
            }
            // Still overloaded: no second trigger.
            if t == 21 {
                h.judged(vec!["loop0".into()], t * 1_000_000_000, WALL0);
            }
            let w = h.write_due(t * 1_000_000_000, false).unwrap();
            assert_eq!(w.is_some(), t == 22, "second {t}");
        }
        let files: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1);
        let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("hindsight-20") && name.ends_with("-overloaded-loop0.rec"));
        let text = std::fs::read_to_string(&files[0]).unwrap();
        let (events, source) = record::parse(&text).unwrap();
        assert_eq!(source, record::Source::Iosat);
        let stamps: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                Event::Sample(r) => Some(r.mono_ns / 1_000_000_000),
                _ => None,
            })
            .collect();
        // The 10 s before the trigger at 20 and the 2 s tail.
        assert_eq!(stamps, (10..=22).collect::<Vec<_>>());
        assert!(matches!(events[0], Event::Run { .. }));
        assert!(matches!(events[1], Event::Device { .. }));
    }

    #[test]
    fn a_trigger_in_the_tail_extends_the_dump_and_the_oldest_dumps_go() {
        let d = tempfile::tempdir().unwrap();
        let mut h = ring(d.path());
        // The user's files, one named like a dump: retention leaves them.
        let mine = d
            .path()
            .join(format!("{PREFIX}20000101T000000Z-mine{SUFFIX}"));
        std::fs::write(&mine, "#iosat-record 1\n#host mine\nT 1 1\n").unwrap();
        std::fs::write(d.path().join("notes.txt"), "mine").unwrap();
        let mut written = Vec::new();
        for t in 0..200 {
            sample(&mut h, t);
            // Overloaded at 5, again at 6 (a new device), then every 20 s a new incident.
            if t == 5 || t % 20 == 0 && t > 0 {
                h.judged(
                    vec![format!("d{t}")],
                    t * 1_000_000_000,
                    WALL0 + t as i64 * 1_000_000_000,
                );
            } else if t == 6 {
                h.judged(vec!["d5".into(), "e6".into()], t * 1_000_000_000, WALL0);
            } else {
                h.judged(Vec::new(), t * 1_000_000_000, WALL0);
            }
            if let Some(p) = h.write_due(t * 1_000_000_000, false).unwrap() {
                written.push((t, p));
            }
        }
        // The trigger at 6 moved the first dump from 7 to 8.
        assert_eq!(written[0].0, 8);
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(left.len(), 3 + 2, "retention keeps 3 of {}", written.len());
        assert!(mine.exists() && d.path().join("notes.txt").exists());
        // Every dump it wrote is its own by its head.
        assert!(written_by_hindsight(&written.last().unwrap().1));
        assert!(!written_by_hindsight(&mine));
        assert!(written.last().unwrap().1.exists());
        assert!(!written[0].1.exists());
    }

    #[test]
    fn the_end_of_a_run_writes_a_pending_dump_at_once() {
        let d = tempfile::tempdir().unwrap();
        let mut h = ring(d.path());
        sample(&mut h, 0);
        sample(&mut h, 1);
        h.trigger("signal".into(), 1_000_000_000, WALL0);
        assert!(h.write_due(1_000_000_000, false).unwrap().is_none());
        let p = h.write_due(1_000_000_000, true).unwrap().unwrap();
        assert!(p.to_string_lossy().ends_with("-signal.rec"));
        assert!(!h.is_pending());
    }

    #[test]
    fn a_dump_dir_that_is_a_symlink_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        let link = d.path().join("hs");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut h = ring(&link);
        sample(&mut h, 0);
        h.trigger("signal".into(), 0, WALL0);
        let e = h.write_due(0, true).unwrap_err();
        assert!(e.to_string().contains("does not follow"), "{e}");
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    }

    #[test]
    fn the_ring_keeps_one_sample_per_its_own_interval_and_states_its_memory() {
        let d = tempfile::tempdir().unwrap();
        let mut h = ring(d.path());
        // Samples every 100 ms (a view at 0.1 s), a few ms late or early: one a second kept.
        for i in 0..100u64 {
            let jitter = [0, 3_000_000, 0, 0, 0, 0, 0, 0, 0, 0][(i % 10) as usize];
            let mono = i * 100_000_000 + jitter;
            h.feed(&Event::Sample(RawSample {
                mono_ns: mono,
                wall_ns: WALL0 + mono as i64,
                text: "   7       0 loop0 1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n".into(),
            }));
        }
        // 0, 1 s, … 9 s: ten, then the span (10 s) holds them all.
        assert_eq!(h.samples(), 10);
        // At a second, within its cap: not said.
        assert!(h.take_statement().is_none());
        let mut fine = Hindsight::new(
            Settings {
                interval_ns: 100_000_000,
                ..settings(d.path())
            },
            "h".into(),
        );
        for t in 0..3 {
            sample(&mut fine, t);
        }
        let line = fine.take_statement().unwrap();
        assert!(
            line.contains("keeping 10 s of samples every 100 ms"),
            "{line}"
        );
        assert!(fine.take_statement().is_none(), "said once");
        // A tiny cap: the statement says what it leaves, and the dropped are counted.
        let mut small = Hindsight::new(
            Settings {
                max_bytes: 300,
                ..settings(d.path())
            },
            "h".into(),
        );
        for t in 0..20 {
            sample(&mut small, t);
        }
        assert!(small.dropped > 0);
        let line = small.take_statement().unwrap();
        assert!(
            line.contains("cap (--hindsight-max-mb) keeps about the last"),
            "{line}"
        );
    }

    #[test]
    fn a_dump_names_its_triggers_and_the_directions_judged() {
        let d = tempfile::tempdir().unwrap();
        let mut h = ring(d.path());
        sample(&mut h, 0);
        h.judged_dirs(vec![("sda".into(), "write".into())], 0, WALL0);
        // A second device during the tail, and a signal: the same dump, three lines.
        h.judged_dirs(
            vec![
                ("sda".into(), "write".into()),
                ("sdb".into(), "read,write".into()),
            ],
            0,
            WALL0 + 1,
        );
        h.trigger("signal".into(), 0, WALL0 + 2);
        let text = h.render();
        let got = triggers(&text);
        assert_eq!(
            got,
            vec![
                (WALL0, "overloaded sda (write)".to_string()),
                (WALL0 + 1, "overloaded sdb (read, write)".to_string()),
                (WALL0 + 2, "signal".to_string()),
            ],
            "{text}"
        );
        // Still a recording its readers take.
        assert!(record::parse(&text).is_ok());
        assert!(triggers("#iosat-record 1\nR 1 0\n").is_empty());
    }

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        // 2026-11-29 03:12:00 UTC.
        assert_eq!(utc_stamp(1_795_921_920 * 1_000_000_000), "20261129T031200Z");
    }
}
