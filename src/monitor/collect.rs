//! The one live collector of interval reports (`stat` and `top`; the exporter serves raw counters,
//! so it reads `RawSample`s itself): each [`Collector::tick`] reads one raw sample of
//! /proc/diskstats (and the `cpu` line of /proc/stat), learns new devices from sysfs, appends the
//! record lines (`D`, `I`, `U` for `--since-boot`, `C`, `B` with the block-latency histograms when
//! that source is attached, the sample) to the recording when there is one, warns once per distinct
//! warning, and returns the interval report. The lines it records are the lines it feeds the one
//! replay (monitor::replay), so a replay of the recording prints what the live run printed. Also:
//! which file `--record` may append to (an iosat recording of this host) and when the next sample
//! is due ([`Schedule`], the one live schedule and stall rule of `stat` and `top`). Reads through sys/ and profile/.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use super::interval::IntervalReport;
use super::record::{self, Event};
use super::replay::Replayer;
use super::select::{DeviceMeta, Selection};
use super::series::{SeriesStore, StatSeries};
use super::RawSample;
use crate::error::Error;
use crate::profile::ProfileCache;
use crate::sys::device::{self, BlockDev};
use crate::sys::Root;
use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `stat --record FILE`: the recording, appended to (created with its header when new or
/// empty; a last line cut off without its newline, by ENOSPC or a kill, is removed first, so
/// the file stays readable). Opened at the first write, so a run refused at its first sample
/// leaves no file; [`RecordingWriter::close`] syncs it and checks the close.
pub struct RecordingWriter {
    path: PathBuf,
    interval_ns: u64,
    /// The host the samples come from (`<proc>/sys/kernel/hostname` under --proc-root).
    host: String,
    file: Option<File>,
    /// A note for the collector to say (the partial line removed).
    note: Option<String>,
}

impl RecordingWriter {
    /// `--record FILE` of a run sampled every `interval_ns` from `root`, when given.
    pub fn for_flag(path: Option<&Path>, interval_ns: u64, root: &Root) -> Option<RecordingWriter> {
        path.map(|p| RecordingWriter::new(p, interval_ns, root))
    }

    /// A run sampled every `interval_ns` (written in the run's `R` line) from `root`.
    pub fn new(path: &Path, interval_ns: u64, root: &Root) -> RecordingWriter {
        RecordingWriter {
            path: path.to_path_buf(),
            interval_ns,
            host: this_host(root),
            file: None,
            note: None,
        }
    }

    /// Sync the recording and close it, reporting what the filesystem says (NFS and FUSE
    /// report write-back errors only there).
    pub fn close(&mut self) -> Result<(), Error> {
        match self.file.take() {
            Some(f) => crate::sys::fs::close_checked(f, &self.path, true),
            None => Ok(()),
        }
    }

    fn write(&mut self, s: &str) -> Result<(), Error> {
        let path = &self.path;
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                use std::os::unix::fs::OpenOptionsExt;
                // O_NOFOLLOW: a symlink is never appended through.
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .read(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                    .open(path)
                    .map_err(|e| Error::io(path, e))?;
                let mut head = vec![0u8; 4096];
                let n = std::io::Read::read(&mut f, &mut head).map_err(|e| Error::io(path, e))?;
                let is_file = f.metadata().map_err(|e| Error::io(path, e))?.is_file();
                check_appendable(path, is_file, &head[..n], &self.host)?;
                if n == 0 {
                    let head = format!("{}#host {}\n", record::HEADER, self.host);
                    f.write_all(head.as_bytes())
                        .map_err(|e| Error::io(path, e))?;
                } else if let Some(cut) = cut_partial_tail(&f).map_err(|e| Error::io(path, e))? {
                    self.note = Some(format!(
                        "{}: its last line was cut off (no newline; {cut} bytes): removed \
                         before appending",
                        path.display()
                    ));
                }
                self.file.insert(f)
            }
        };
        file.write_all(s.as_bytes())
            .map_err(|e| Error::io(&self.path, e))
    }
}

/// Truncate an open file after its last newline when it does not end with one; the bytes
/// removed, if any. Reads backwards from the end in blocks (a `B` line can be long).
fn cut_partial_tail(f: &File) -> std::io::Result<Option<u64>> {
    use std::os::unix::fs::FileExt;
    let len = f.metadata()?.len();
    let mut end = len;
    let mut buf = vec![0u8; 64 << 10];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        f.read_exact_at(chunk, start)?;
        if end == len && chunk.last() == Some(&b'\n') {
            return Ok(None);
        }
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            let keep = start + i as u64 + 1;
            f.set_len(keep)?;
            return Ok(Some(len - keep));
        }
        end = start;
    }
    // No newline at all: the header itself is cut (check_appendable refused it already).
    Ok(None)
}

/// The one live schedule of `stat` and `top`: a sample every interval on CLOCK_MONOTONIC,
/// counted from the first sample's own read (so `-c N` intervals add up to at least N
/// intervals and deadlines don't drift), with one stall rule ([`next_deadline`]): after a
/// stall the next sample comes a whole interval after now, never at once. (The exporter
/// samples when it is scraped: it has no schedule of its own.)
#[derive(Debug, Clone)]
pub struct Schedule {
    interval_ns: u64,
    /// When the last sample was due; None before the first.
    due: Option<u64>,
}

impl Schedule {
    pub fn new(interval_ns: u64) -> Schedule {
        Schedule {
            interval_ns,
            due: None,
        }
    }

    /// A sample was read at `mono_ns`: the first one starts the schedule.
    pub fn sampled(&mut self, mono_ns: u64) {
        self.due.get_or_insert(mono_ns);
    }

    /// When the next sample is due, seen at `now`; the schedule moves on to it. Pure.
    pub fn next_at(&mut self, now: u64) -> u64 {
        let next = next_deadline(self.due.unwrap_or(now), self.interval_ns, now);
        self.due = Some(next);
        next
    }
}

/// When the next sample is due after the one due at `deadline`, taken at `now`: one interval
/// later; when that is already past (a stall: SIGSTOP, suspend, overload), one whole interval
/// after now, so the interval after a stall has its normal length (catching up at once made
/// it a few ms long).
pub fn next_deadline(deadline: u64, interval_ns: u64, now: u64) -> u64 {
    let next = deadline.saturating_add(interval_ns);
    if next < now {
        now.saturating_add(interval_ns)
    } else {
        next
    }
}

/// The host whose counters are read, for the `#host <hostname>` comment after the header:
/// `<proc>/sys/kernel/hostname` through sys/, so --proc-root names the host it points at.
fn this_host(root: &Root) -> String {
    crate::sys::hostname(root).unwrap_or_default()
}

/// `stat --record FILE` appends only to an iosat recording of this host: a missing or empty
/// file is fine; anything else must start with the recording header, and when it names its
/// host (`#host`), that must be this host. Checked before the run (the flag's value is named,
/// exit 2) and again on the opened file. The host is the one `root` reads.
pub fn check_record_target(path: &Path, root: &Root) -> Result<(), Error> {
    use std::io::Read;
    let meta = match path.symlink_metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    };
    if meta.file_type().is_symlink() {
        return Err(not_a_recording(path, "is a symlink"));
    }
    if !meta.is_file() {
        return Err(not_a_recording(path, "is not a regular file"));
    }
    let mut head = vec![0u8; 4096];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| Error::io(path, e))?;
    check_appendable(path, true, &head[..n], &this_host(root))
}

fn check_appendable(path: &Path, is_file: bool, head: &[u8], this: &str) -> Result<(), Error> {
    if !is_file {
        return Err(not_a_recording(path, "is not a regular file"));
    }
    if head.is_empty() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(head);
    if !text.starts_with(record::HEADER) {
        return Err(not_a_recording(
            path,
            "is not an iosat recording (no '#iosat-record' header)",
        ));
    }
    let host = text
        .lines()
        .take_while(|l| l.starts_with('#'))
        .find_map(|l| l.strip_prefix("#host "));
    match host {
        Some(h) if h.trim() != this => Err(not_a_recording(
            path,
            &format!("is a recording of host '{}', not of this one", h.trim()),
        )),
        _ => Ok(()),
    }
}

fn not_a_recording(path: &Path, why: &str) -> Error {
    Error::usage(
        "--record",
        path.display(),
        format!("{why}; iosat appends only to its own recordings of this host"),
    )
}

/// What one tick gave.
#[derive(Debug, Default)]
pub struct Tick {
    /// On the first tick: which profile each selected device with one is judged against
    /// (empty: none has one; the legend says sat/load when some has).
    pub started: Option<Vec<String>>,
    /// The interval this sample closed.
    pub report: Option<IntervalReport>,
    /// When the sample was read (CLOCK_MONOTONIC): the schedule of later samples starts here.
    pub mono_ns: u64,
}

pub struct Collector {
    root: Root,
    replayer: Replayer,
    profiles: ProfileCache,
    recording: Option<RecordingWriter>,
    series: Option<SeriesStore>,
    warned: HashSet<String>,
    /// Warnings kept instead of printed (see `hold_warnings`).
    held: Option<Vec<String>>,
    since_boot: bool,
    /// The block-latency source, when attached ([`Collector::use_block_latency`]).
    blk: Option<crate::sys::bpf::BlockLatency>,
    /// Each device's block-latency coverage over the run (the warning below 99 %).
    coverage: std::collections::HashMap<(u32, u32), super::blklat::RunCoverage>,
    /// The DEVICE patterns the user gave: their series come first on the page.
    first: Vec<String>,
    /// The caps declared on the command line: recorded as `K` lines after the run's `R`.
    caps: Vec<(String, crate::analysis::declared::DeclaredCap)>,
    /// The readers of AWS EBS / instance-store statistics (issue 42): a device is opened
    /// only when sysfs shows an Amazon model.
    aws: super::aws::AwsWatch,
    /// The last minutes of samples, written out on an incident ([`Collector::keep_hindsight`]).
    hindsight: Option<super::hindsight::Hindsight>,
    /// Hindsight turned off by the user: a SIGUSR1 is caught and answered with a warning
    /// rather than ending the run (the signal's default action).
    hindsight_off: bool,
    /// The short windows of each interval (issue 41's bursts; [`Collector::use_bursts`]).
    burst: Option<super::burst::BurstTracker>,
    /// Per-cgroup counters and names (issue 40; [`Collector::count_cgroups`]).
    cgroups: Option<super::cgsource::CgSource>,
}

impl Collector {
    pub fn new(
        root: Root,
        selection: Selection,
        since_boot: bool,
        profiles: ProfileCache,
        recording: Option<RecordingWriter>,
    ) -> Collector {
        Collector {
            root,
            first: selection.patterns.clone(),
            replayer: Replayer::new(selection, since_boot),
            profiles,
            recording,
            series: None,
            warned: HashSet::new(),
            held: None,
            since_boot,
            blk: None,
            coverage: Default::default(),
            caps: Vec::new(),
            aws: Default::default(),
            hindsight: None,
            hindsight_off: false,
            burst: None,
            cgroups: None,
        }
    }

    /// Read the block-latency source's per-cgroup counters every tick (issue 40: who loads
    /// each device); nothing without the source.
    pub fn count_cgroups(&mut self) {
        self.cgroups = Some(Default::default());
        // A source loaded without the cgroup code is loaded again with it.
        if self.blk.as_ref().is_some_and(|b| !b.counts_cgroups()) {
            self.blk = None;
            self.use_block_latency(false);
        }
    }

    /// Measure each interval's bursts over windows of `window_ns` (None: off): diskstats is
    /// read that often between the ticks ([`Collector::wait_until`]).
    pub fn use_bursts(&mut self, window_ns: Option<u64>) {
        self.burst = window_ns.map(super::burst::BurstTracker::new);
    }

    /// Keep the last minutes of samples (monitor::hindsight) and write them out when a device
    /// turns overloaded or on SIGUSR1 (caught from here on), sampled at the ring's own
    /// interval ([`Collector::wait_until`] samples for it between the view's ticks).
    pub fn keep_hindsight(&mut self, settings: super::hindsight::Settings) {
        crate::sys::signal::catch_dump_signal();
        self.hindsight = Some(super::hindsight::Hindsight::new(
            settings,
            this_host(&self.root),
        ));
    }

    /// Hindsight is off (`--hindsight 0`, or nowhere to write): a SIGUSR1 is caught all the same, and said to
    /// write nothing, once, instead of ending the run as its default action would.
    pub fn hindsight_off(&mut self) {
        crate::sys::signal::catch_dump_signal();
        self.hindsight_off = true;
    }

    /// When a sample of the collector's own is due before the view's next tick at `next`
    /// (the hindsight ring's cadence); None: nothing to read until then. A due time within the
    /// ring's slack of `next` is left to the tick itself (the ring takes it).
    fn between_due(&self, next: u64) -> Option<u64> {
        let ring = self
            .hindsight
            .as_ref()
            .and_then(|h| Some((h.due_at()?, h.slack_ns())));
        // No window shorter than half the window before the tick closes the interval.
        let burst = self
            .burst
            .as_ref()
            .and_then(|b| Some((b.due_at()?, b.window_ns() / 2)));
        [ring, burst]
            .into_iter()
            .flatten()
            .filter(|(due, slack)| due.saturating_add(*slack) < next)
            .map(|(due, _)| due)
            .min()
    }

    /// A sample between the view's ticks, for the ring only: diskstats, the CPU times and
    /// the block-latency histograms, as a tick reads them (nothing is judged, recorded or
    /// charted; the devices are announced at the view's tick).
    fn between_tick(&mut self) {
        let raw = match RawSample::take(&self.root) {
            Ok(r) => r,
            // The view's next tick reads it again and says why it failed.
            Err(_) => return,
        };
        let mono_ns = raw.mono_ns;
        if let Some(b) = self
            .burst
            .as_mut()
            .filter(|b| b.takes(mono_ns, b.window_ns() / 20))
        {
            b.push(&raw.parse().0);
        }
        // The CPU times and histograms only for a sample the ring keeps.
        if !self
            .hindsight
            .as_ref()
            .is_some_and(|h| h.would_keep(mono_ns))
        {
            return;
        }
        let cpu = crate::sys::sched::read_cpu_times(&self.root);
        let blk = self.blk.as_ref().and_then(|b| b.read().ok());
        if let Some(h) = &mut self.hindsight {
            if let Some(c) = cpu {
                h.feed(&Event::Cpu(c));
            }
            if let Some((devs, dropped)) = blk {
                h.feed(&Event::Latency(super::blklat::BlkSample { dropped, devs }));
            }
            h.feed(&Event::Sample(raw));
        }
        self.tend_hindsight(None, mono_ns, false, false);
    }

    /// Wait for the view's next tick at `next` (monotonic ns), reading the samples the
    /// collector wants of its own in between; `sleep` sleeps until a time or returns early
    /// (a signal, an unpark), `stop` says the wait is over before `next`.
    pub fn wait_until(&mut self, next: u64, stop: &dyn Fn() -> bool, sleep: &dyn Fn(u64)) {
        use crate::sys::clock::monotonic_ns;
        loop {
            if stop() || monotonic_ns() >= next {
                return;
            }
            match self.between_due(next) {
                Some(due) if monotonic_ns() >= due => self.between_tick(),
                Some(due) => sleep(due),
                None => sleep(next),
            }
        }
    }

    /// An element that goes with the interval rather than the engine (`#A`, `#P`): into the
    /// recording's text, the hindsight ring and the chart history, whichever there are.
    fn keep_side_event(&mut self, ev: Event, rec: &mut String) {
        if self.recording.is_some() {
            rec.push_str(&record::format_event(&ev));
        }
        if let Some(h) = &mut self.hindsight {
            h.feed(&ev);
        }
        if let Some(s) = &mut self.series {
            s.feed(ev);
        }
    }

    /// After a sample: a SIGUSR1 or a device that turned overloaded (`judged`: the sample
    /// closed a view's interval) asks for a dump; a dump whose tail has passed (or any, at
    /// the end: `end`) is written, and a line says where.
    fn tend_hindsight(
        &mut self,
        report: Option<&IntervalReport>,
        mono_ns: u64,
        judged: bool,
        end: bool,
    ) {
        if self.hindsight_off && crate::sys::signal::take_dump_request() {
            self.warn(vec![
                "SIGUSR1: hindsight is off (--hindsight 0, or no state directory and no \
                 --hindsight-dir), so there is nothing to write"
                    .into(),
            ]);
        }
        let Some(h) = &mut self.hindsight else { return };
        if let Some(line) = h.take_statement() {
            match &mut self.held {
                Some(held) => held.push(line),
                None => crate::error::note(line),
            }
        }
        let Some(h) = &mut self.hindsight else { return };
        let wall = crate::sys::clock::wall_ns();
        let rows = report.into_iter().flat_map(|r| r.devices.iter());
        match h.after_interval(rows, mono_ns, wall, judged, end) {
            Ok(Some(p)) => {
                let line = format!(
                    "hindsight: wrote {} ({:.0} s of samples, {:.1} MiB held)",
                    p.display(),
                    h.held_s(),
                    h.bytes() as f64 / f64::from(1 << 20)
                );
                match &mut self.held {
                    Some(held) => held.push(line),
                    None => crate::error::note(line),
                }
            }
            Ok(None) => {}
            Err(e) => self.warn(vec![format!("hindsight: no dump written: {e}")]),
        }
    }

    /// The caps declared on the command line, by device name (issue 42): over a profile's,
    /// and recorded with the run, so a replay and the page judge by them too.
    pub fn declare_caps(&mut self, caps: Vec<(String, crate::analysis::declared::DeclaredCap)>) {
        self.caps.clone_from(&caps);
        self.replayer.set_caps(caps);
    }

    /// Attach the block-latency source (live percentiles per device and direction) unless
    /// `off` (`--no-bpf`). When it can't be had, one line says why and the collector carries
    /// on with diskstats alone; counters from a fixture tree (`--proc-root`) are silently
    /// not this kernel's. The kernel's BTF is looked for under the sys root.
    pub fn use_block_latency(&mut self, off: bool) {
        match crate::sys::bpf::attach_with(&self.root, off, self.cgroups.is_some()) {
            Ok(b) => self.blk = b,
            Err(line) => self.warn(vec![line]),
        }
    }

    /// Feed every interval to `observer` (learning: each device's baseline and curve from its
    /// traffic, its state loaded when a device is first seen and saved now and then and by
    /// [`Collector::save_learning`]).
    pub fn observe_with(&mut self, observer: Box<dyn super::observe::Observer>) {
        self.replayer.observe_with(observer);
    }

    /// Save what the observer made (at the end of a run); problems are warnings.
    pub fn save_learning(&mut self) {
        if let Some(l) = self.replayer.observer_mut() {
            l.save();
            let w = l.take_warnings();
            self.warn(w);
        }
    }

    /// Is the block-latency source attached?
    pub fn has_block_latency(&self) -> bool {
        self.blk.is_some()
    }

    /// The source's histograms now; on a read error the source is dropped, with one line.
    fn read_block_latency(&mut self) -> Option<super::blklat::BlkSample> {
        match self.blk.as_ref()?.read() {
            Ok((devs, dropped)) => Some(super::blklat::BlkSample { dropped, devs }),
            Err(e) => {
                self.blk = None;
                self.warn(vec![format!(
                    "no live latency percentiles from now on: reading the BPF maps failed: {e}"
                )]);
                None
            }
        }
    }

    /// What the interval's block-layer latency says once per device: coverage below 99 % over
    /// the run, and a queue the kernel does not stamp at issue (issue 40).
    fn warn_of_latency(&mut self, r: &IntervalReport) {
        let cover = &mut self.coverage;
        let low: Vec<String> = r
            .devices
            .iter()
            .filter_map(|d| {
                let m = d.latency.as_ref()?.measured()?;
                let run = cover.entry((d.major, d.minor)).or_default();
                run.add(m, &d.meta.display_name)
            })
            .collect();
        self.warn(low);
        let unsplit: Vec<String> = r
            .devices
            .iter()
            .filter(|d| {
                let m = d.latency.as_ref().and_then(|l| l.measured());
                m.is_some_and(|m| m.split_unavailable())
            })
            .map(|d| super::blklat::split_unavailable_line(&d.meta.display_name))
            .collect();
        self.warn(unsplit);
    }

    /// The per-cgroup sample of this tick (with the source and `count_cgroups`); on a read
    /// error the cgroups are dropped, with one line.
    fn read_cgroups(&mut self, first: bool) -> Option<super::cgroups::CgSample> {
        let (Some(c), Some(b)) = (&mut self.cgroups, &mut self.blk) else {
            return None;
        };
        if first {
            c.new_run();
        }
        match c.read(&self.root, b) {
            Ok(s) => Some(s),
            Err(e) => {
                self.cgroups = None;
                self.warn(vec![format!(
                    "no per-cgroup figures from now on: reading the BPF map failed: {e}"
                )]);
                None
            }
        }
    }

    /// The slots of devices gone from `sample` come back to the block-latency program (loop,
    /// dm and nbd devices come and go during a long `stat` or `top`); dropped completions are
    /// warned about once.
    fn tend_block_latency(&mut self, sample: &super::DiskSample, dropped: u64) {
        let Some(b) = &mut self.blk else { return };
        let present = sample.lines.iter().map(|l| (l.major, l.minor)).collect();
        let lines = b.tend(&present, dropped);
        self.warn(lines);
    }

    /// Also keep the chart history (`--html`), starting from `store` (what the recording
    /// held before this run).
    pub fn keep_series(&mut self, store: SeriesStore) {
        self.series = Some(store);
    }

    /// Keep the warnings for [`Collector::take_warnings`] instead of printing them (`top`:
    /// the screen is the terminal's).
    pub fn hold_warnings(&mut self) {
        self.held = Some(Vec::new());
    }

    /// The warnings held since the last call (each distinct one once).
    pub fn take_warnings(&mut self) -> Vec<String> {
        self.held.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn warn(&mut self, warnings: Vec<String>) {
        for w in warnings {
            if self.warned.insert(w.clone()) {
                match &mut self.held {
                    Some(h) => h.push(w),
                    None => crate::error::warn(w),
                }
            }
        }
    }

    /// Feed a line to the engine and the chart history; its text goes to `rec` when there
    /// is a recording.
    fn feed(&mut self, ev: Event, rec: &mut String) -> Result<(), Error> {
        if self.recording.is_some() {
            rec.push_str(&record::format_event(&ev));
        }
        if let Some(h) = &mut self.hindsight {
            h.feed(&ev);
        }
        if let Some(s) = &mut self.series {
            s.feed(ev.clone());
        }
        let profiles = &mut self.profiles;
        self.replayer.feed(ev, &mut |id| profiles.profile(id))?;
        Ok(())
    }

    /// Look up devices seen for the first time (or re-created under another name) in sysfs.
    fn learn_devices(&mut self, devs: Vec<BlockDev>, rec: &mut String) -> Result<(), Error> {
        for dev in devs {
            if self.replayer.has_meta(dev.major, dev.minor, &dev.name) {
                continue;
            }
            let meta = DeviceMeta {
                kind: device::kind(&self.root, &dev),
                display_name: device::friendly_name(&self.root, &dev),
            };
            let id = self.profiles.device_id(&dev);
            self.aws.announce(&self.root, &dev);
            for ev in announce(&mut self.replayer, &self.root, dev, meta, id) {
                self.feed(ev, rec)?;
            }
        }
        Ok(())
    }

    /// Read one sample and return what it closes. Err on the first tick when a selected
    /// pattern names no device (before anything is recorded).
    pub fn tick(&mut self) -> Result<Tick, Error> {
        let raw = RawSample::take(&self.root)?;
        // The CPU times of the same moment, for the avg-cpu line (absent without <proc>/stat).
        let cpu = crate::sys::sched::read_cpu_times(&self.root);
        // Right after diskstats, so both describe (nearly) the same moment.
        let blk = self.read_block_latency();
        let mono_ns = raw.mono_ns;
        let first = self.replayer.samples() == 0;
        // The since-boot interval is the uptime of the root the counters come from, read
        // right after them (iostat divides by /proc/uptime too).
        let uptime = if first && self.since_boot {
            Some(crate::sys::uptime::read_ns(&self.root)?)
        } else {
            None
        };
        let (sample, warnings) = raw.parse();
        self.warn(warnings);
        if let Some(b) = &mut self.burst {
            b.push(&sample);
        }
        let mut rec = String::new();
        if first {
            let run = Event::Run {
                wall_ns: raw.wall_ns,
                interval_ns: self.recording.as_ref().map_or(0, |r| r.interval_ns),
            };
            self.feed(run, &mut rec)?;
            for (dev, cap) in self.caps.clone() {
                self.feed(Event::Cap { dev, cap }, &mut rec)?;
            }
            // What this run shows: a replay, `analyze` and the page show the same devices.
            let sel = self.replayer.selection().clone();
            self.feed(Event::Selection(sel), &mut rec)?;
        }
        // Only the devices not known yet (no name copied per line and tick).
        let devs: Vec<BlockDev> = sample
            .lines
            .iter()
            .filter(|l| !self.replayer.has_meta(l.major, l.minor, &l.name))
            .map(|l| BlockDev {
                major: l.major,
                minor: l.minor,
                name: l.name.clone(),
            })
            .collect();
        self.learn_devices(devs, &mut rec)?;
        if let Some(ns) = uptime {
            self.feed(Event::Uptime { ns }, &mut rec)?;
        }
        if let Some(c) = cpu {
            self.feed(Event::Cpu(c), &mut rec)?;
        }
        let warnings = self.profiles.take_warnings();
        self.warn(warnings);
        if let Some(b) = blk {
            self.tend_block_latency(&sample, b.dropped);
            self.feed(Event::Latency(b), &mut rec)?;
        }
        if let Some(c) = self.read_cgroups(first) {
            self.feed(Event::Cgroups(c), &mut rec)?;
        }
        // The AWS statistics of the same moment (at most once a second each; nothing on a
        // machine without such a device).
        if !self.aws.is_empty() {
            self.aws.tick();
        }
        let w = self.aws.take_warnings();
        self.warn(w);
        // The interval's short windows, judged against each row's declared cap, attached
        // before the learner sees the interval (its busy share is bounded by them), as a
        // replay attaches its `#P` line; recorded before its closing sample, as the
        // histograms are.
        let mut closed = None;
        let tracker = &mut self.burst;
        let mut fed = self.replayer.push_sample_with(sample, &mut |r| {
            if let Some(b) = tracker.as_mut() {
                let bs = b.close(r);
                super::burst::attach(r, &bs);
                closed = Some(bs);
            }
        })?;
        if let (false, Some(r)) = (self.aws.is_empty(), &mut fed.report) {
            for d in &mut r.devices {
                d.aws = self.aws.get(d.major, d.minor);
            }
        }
        // No interval closed (the first sample): the windows so far belong to none.
        if let (Some(b), None) = (&mut self.burst, &fed.report) {
            b.forget_windows();
        }
        let burst = closed.filter(|bs| !bs.devs.is_empty()).map(Event::Burst);
        if let Some(r) = &fed.report {
            self.warn_of_latency(r);
        }
        if let Some(l) = self.replayer.observer_mut() {
            let w = l.take_warnings();
            self.warn(w);
        }
        // What the AWS devices' own counters said of the interval (`#A`, for a replay's thr%
        // and clause) and its short windows (`#P`): recorded, held and charted alike.
        let aws = fed
            .report
            .iter()
            .flat_map(|r| r.devices.iter())
            .filter_map(|d| {
                Some(Event::Aws {
                    major: d.major,
                    minor: d.minor,
                    interval: d.aws.clone()?,
                })
            });
        for ev in aws.chain(burst) {
            self.keep_side_event(ev, &mut rec);
        }
        let sample = Event::Sample(raw);
        // Not formatted at all without a recording (a large part of a tick at 1,000 devices).
        if self.recording.is_some() {
            rec.push_str(&record::format_event(&sample));
        }
        if let Some(h) = &mut self.hindsight {
            h.feed(&sample);
        }
        if let Some(s) = &mut self.series {
            s.feed(sample);
        }
        self.tend_hindsight(fed.report.as_ref(), mono_ns, true, false);
        if let Some(r) = &mut self.recording {
            r.write(&rec)?;
            if let Some(n) = r.note.take() {
                self.warn(vec![n]);
            }
        }
        Ok(Tick {
            started: fed.started,
            report: fed.report,
            mono_ns,
        })
    }

    /// End the run: the recording synced and closed, its errors reported.
    pub fn finish(&mut self) -> Result<(), Error> {
        // A dump waiting for its tail is written now, its tail cut short.
        self.tend_hindsight(None, crate::sys::clock::monotonic_ns(), false, true);
        match &mut self.recording {
            Some(r) => r.close(),
            None => Ok(()),
        }
    }

    /// The chart history so far, judged against the profiles (None without `keep_series`).
    pub fn series(&mut self) -> Option<(Vec<StatSeries>, Vec<String>)> {
        let store = self.series.as_ref()?;
        let (mut devs, idle) = store.series(&mut self.profiles);
        // The devices the user named first (the page draws them first).
        super::series::selected_first(&mut devs, &self.first);
        Some((devs, idle))
    }
}

/// The lines that introduce a device first found in sysfs (its kind and name, then its profile
/// id when it has one), the replayer's observer told of it first, under the key its state is
/// kept by: the one announcer of new devices, the collector's and the exporter's.
pub fn announce(
    replayer: &mut Replayer,
    root: &Root,
    dev: BlockDev,
    meta: DeviceMeta,
    id: Option<String>,
) -> Vec<Event> {
    if let Some(o) = replayer.observer_mut() {
        let key = id.clone().unwrap_or_else(|| dev.name.clone());
        o.device_seen(root, &dev, &key);
    }
    let BlockDev { major, minor, name } = dev;
    let mut lines = vec![Event::Device {
        major,
        minor,
        name: name.clone(),
        meta,
    }];
    if let Some(id) = id {
        lines.push(Event::Identity {
            major,
            minor,
            name,
            id,
        });
    }
    lines
}

#[cfg(test)]
mod schedule_tests {
    use super::next_deadline;

    #[test]
    fn the_interval_after_a_stall_has_its_normal_length() {
        let s = 1_000_000_000u64;
        // On time: one interval later.
        assert_eq!(next_deadline(10 * s, s, 10 * s + 3_000_000), 11 * s);
        // Resumed 9.5 s late: the next sample comes a whole interval after now, not at once.
        let now = 19 * s + s / 2;
        assert_eq!(next_deadline(10 * s, s, now), now + s);
        assert_eq!(next_deadline(u64::MAX - 1, s, 0), u64::MAX);
    }

    #[test]
    fn the_schedule_counts_from_the_first_sample_and_never_catches_up() {
        let s = 1_000_000_000u64;
        let mut sch = super::Schedule::new(s);
        sch.sampled(5 * s);
        // A later sample's own read time does not move the schedule.
        assert_eq!(sch.next_at(5 * s + 1), 6 * s);
        sch.sampled(6 * s + 40_000_000);
        assert_eq!(sch.next_at(6 * s + 50_000_000), 7 * s);
        // Stopped for 9.5 s: a whole interval after now, then on from there.
        let now = 16 * s + s / 2;
        assert_eq!(sch.next_at(now), now + s);
        assert_eq!(sch.next_at(now + s + 1), now + 2 * s);
    }
}
