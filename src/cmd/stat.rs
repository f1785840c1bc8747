//! `iosat stat`: orchestration only. Live: sample /proc/diskstats on a monotonic schedule,
//! look up new devices in sysfs, optionally append the raw samples to a recording, and print
//! each interval. Replay: the same engine and views fed from a recording, so the output is
//! byte-identical to the live run that made it.

use crate::cli::stat::StatArgs;
use crate::config::stat::StatSpec;
use crate::error::Error;
use crate::monitor::interval::StatEngine;
use crate::monitor::record::{self, Event, Source};
use crate::monitor::saturation::DeviceProfile;
use crate::monitor::select::DeviceMeta;
use crate::monitor::view;
use crate::monitor::{DiskSample, RawSample};
use crate::profile;
use crate::sys::device::{self, BlockDev};
use crate::sys::{clock, Root};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub fn run(args: &StatArgs) -> anyhow::Result<i32> {
    let spec = StatSpec::from_args(args)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match &spec.replay {
        Some(path) => {
            replay(&spec, path, &mut out)?;
            if let (Some(html), Some(rec)) = (&spec.html, &spec.replay) {
                write_page(
                    &mut crate::report::PageFile::new(html),
                    rec,
                    spec.profile_dir.as_deref(),
                )?;
            }
        }
        None => {
            // Ctrl-C (or SIGTERM, SIGHUP) ends the run between samples: the recording ends on
            // a whole sample and the --html page is drawn from all of it before exiting 130.
            crate::sys::signal::catch_stop_signals(false);
            live(&spec, &mut out)?
        }
    }
    Ok(crate::error::exit::OK)
}

/// `--html`: the page `iosat report` draws for the recording at `rec`.
fn write_page(
    page: &mut crate::report::PageFile,
    rec: &Path,
    profile_dir: Option<&Path>,
) -> Result<(), Error> {
    let text = std::fs::read_to_string(rec).map_err(|e| Error::io(rec, e))?;
    let html =
        crate::cmd::report::render_recording(rec, &text, crate::report::Format::Html, profile_dir)?;
    page.write(&html)
}

/// While recording with --html, the page is redrawn at most this often (it replays the whole
/// recording) and once more at the end.
const PAGE_EVERY_NS: u64 = 5_000_000_000;

fn emit(out: &mut impl Write, s: &str) -> Result<(), Error> {
    if s.is_empty() {
        return Ok(());
    }
    out.write_all(s.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| Error::io("<stdout>", e))
}

fn unknown_device(pattern: &str) -> Error {
    Error::usage(
        "DEVICE",
        pattern,
        "matches no device in /proc/diskstats (see `iosat info --all`)",
    )
}

/// Device profiles by id, each file read once; an unreadable profile is one warning, then
/// the device is shown without one.
struct Profiles {
    dir: Option<PathBuf>,
    cache: HashMap<String, Option<Arc<DeviceProfile>>>,
}

impl Profiles {
    fn new(dir: Option<PathBuf>) -> Profiles {
        Profiles {
            dir,
            cache: HashMap::new(),
        }
    }

    fn get(&mut self, id: &str) -> Option<Arc<DeviceProfile>> {
        let dir = self.dir.as_deref()?;
        self.cache
            .entry(id.to_string())
            .or_insert_with(|| match profile::load(dir, id) {
                Ok(p) => p.map(Arc::new),
                Err(e) => {
                    eprintln!("iosat: warning: profile ignored: {e}");
                    None
                }
            })
            .clone()
    }
}

fn replay(spec: &StatSpec, path: &Path, out: &mut impl Write) -> Result<(), Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let (events, source) = record::parse(&text).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        line: e.line,
        reason: e.reason,
    })?;
    if spec.since_boot && source == Source::PtDiskstats {
        return Err(Error::usage(
            "--since-boot",
            path.display(),
            "needs an iosat recording: pt-diskstats/pt-stalk files carry no monotonic clock",
        ));
    }
    let mut engine = StatEngine::new(spec.selection.clone(), spec.since_boot);
    let mut profiles = Profiles::new(spec.profile_dir.clone());
    let mut checked = false;
    let mut reports = 0u64;
    for ev in events {
        match ev {
            Event::Run { .. } => engine.new_run(),
            Event::Device {
                major,
                minor,
                name,
                meta,
            } => engine.set_meta(major, minor, &name, meta),
            Event::Identity {
                major,
                minor,
                name,
                id,
            } => engine.set_profile(major, minor, &name, profiles.get(&id)),
            Event::Sample(raw) => {
                let (sample, _) = raw.parse();
                if !checked {
                    checked = true;
                    if let Some(p) = engine.unmatched_pattern(&sample) {
                        return Err(unknown_device(&p));
                    }
                    emit(out, &view::preamble(spec.format, engine.has_profiles()))?;
                }
                if let Some(r) = engine.push(sample) {
                    emit(out, &view::render(&r, spec.format))?;
                    reports += 1;
                    if spec.count.is_some_and(|c| reports >= c) {
                        break;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Look up devices seen for the first time (or re-created under another name) in sysfs; the
/// `D` (and `I`) lines for the recording are appended to `rec`.
fn learn_devices(
    root: &Root,
    engine: &mut StatEngine,
    profiles: &mut Profiles,
    sample: &DiskSample,
    rec: &mut String,
) {
    for l in &sample.lines {
        if engine.has_meta(l.major, l.minor, &l.name) {
            continue;
        }
        let dev = BlockDev {
            major: l.major,
            minor: l.minor,
            name: l.name.clone(),
        };
        let meta = DeviceMeta {
            kind: device::kind(root, &dev),
            display_name: device::friendly_name(root, &dev),
        };
        rec.push_str(&record::format_device(l.major, l.minor, &l.name, &meta));
        engine.set_meta(l.major, l.minor, &l.name, meta);
        let id = profile::device_id(root, &dev);
        if let Some(id) = &id {
            rec.push_str(&record::format_identity(l.major, l.minor, &l.name, id));
        }
        let p = id.and_then(|id| profiles.get(&id));
        engine.set_profile(l.major, l.minor, &l.name, p);
    }
}

struct Recorder {
    file: File,
    path: std::path::PathBuf,
}

impl Recorder {
    fn open(path: &Path) -> Result<Recorder, Error> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        let mut r = Recorder {
            file,
            path: path.to_path_buf(),
        };
        let len = r.file.metadata().map_err(|e| Error::io(path, e))?.len();
        if len == 0 {
            r.write(record::HEADER)?;
        }
        Ok(r)
    }

    fn write(&mut self, s: &str) -> Result<(), Error> {
        self.file
            .write_all(s.as_bytes())
            .map_err(|e| Error::io(&self.path, e))
    }
}

fn warn_once(seen: &mut HashSet<String>, warnings: Vec<String>) {
    for w in warnings {
        if seen.insert(w.clone()) {
            eprintln!("iosat: warning: {w}");
        }
    }
}

fn sleep_until(deadline_ns: u64) {
    // Woken early only by a signal; the loop checks whether it was a stop.
    clock::sleep_until_ns(deadline_ns);
}

fn live(spec: &StatSpec, out: &mut impl Write) -> Result<(), Error> {
    let root = &spec.root;
    let mut engine = StatEngine::new(spec.selection.clone(), spec.since_boot);
    let mut profiles = Profiles::new(spec.profile_dir.clone());
    let mut seen_warnings = HashSet::new();

    let raw = RawSample::take(root)?;
    let (sample, warnings) = raw.parse();
    warn_once(&mut seen_warnings, warnings);
    let mut d_lines = String::new();
    learn_devices(root, &mut engine, &mut profiles, &sample, &mut d_lines);
    if let Some(p) = engine.unmatched_pattern(&sample) {
        return Err(unknown_device(&p));
    }
    let mut recorder = match &spec.record {
        Some(p) => {
            let mut r = Recorder::open(p)?;
            r.write(&format!(
                "{}{}{}",
                record::format_run(raw.wall_ns, spec.interval_ns),
                d_lines,
                record::format_sample(&raw)
            ))?;
            Some(r)
        }
        None => None,
    };

    emit(out, &view::preamble(spec.format, engine.has_profiles()))?;
    let mut page = spec.html.as_deref().map(crate::report::PageFile::new);
    let mut page_at = raw.mono_ns;
    let mut reports = 0u64;
    let mut deadline = raw.mono_ns;
    if let Some(r) = engine.push(sample) {
        emit(out, &view::render(&r, spec.format))?;
        reports += 1;
    }
    let mut stopped = false;
    while !spec.count.is_some_and(|c| reports >= c) {
        deadline += spec.interval_ns;
        let now = clock::monotonic_ns();
        if deadline < now {
            // We fell behind (suspended, overloaded): measure from now on, don't catch up.
            deadline = now;
        }
        sleep_until(deadline);
        if crate::sys::signal::stop_requested() {
            stopped = true;
            break;
        }
        let raw = RawSample::take(root)?;
        let (sample, warnings) = raw.parse();
        warn_once(&mut seen_warnings, warnings);
        let mut d_lines = String::new();
        learn_devices(root, &mut engine, &mut profiles, &sample, &mut d_lines);
        if let Some(rec) = recorder.as_mut() {
            rec.write(&format!("{d_lines}{}", record::format_sample(&raw)))?;
        }
        if let Some(r) = engine.push(sample) {
            emit(out, &view::render(&r, spec.format))?;
            reports += 1;
        }
        if let (Some(p), Some(rec)) = (page.as_mut(), &spec.record) {
            let now = clock::monotonic_ns();
            if now.saturating_sub(page_at) >= PAGE_EVERY_NS {
                write_page(p, rec, spec.profile_dir.as_deref())?;
                page_at = now;
            }
        }
    }
    if let (Some(p), Some(rec)) = (page.as_mut(), &spec.record) {
        write_page(p, rec, spec.profile_dir.as_deref())?;
    }
    if stopped {
        return Err(Error::Interrupted);
    }
    Ok(())
}
