//! The exporter's collector: one read of /proc/diskstats through the shared reader
//! (monitor::RawSample), devices selected as `stat` selects them (monitor::select) plus exclude
//! globs, identity and physical disks (sys::topology) from sysfs (learned once per device), the in-flight split (sys::inflight),
//! profiles (profile::ProfileCache, read again every minute so a profile saved while the exporter
//! runs is picked up), the wrap extension of the ms fields kept across scrapes, and the
//! block-latency histograms (sys::bpf) when attached, and production learning (learn/, fed
//! through the one replay engine as `stat` feeds it, at its own cadence: [`Scraper::tick`]
//! takes a sample every [`LEARN_EVERY_NS`] whatever the scrape interval, so a 15 s or 60 s
//! scraper gets the curve `stat` learns, at the same time; a scrape serves the latest
//! interval's judgement). Returns a [`Scrape`] for metrics::render.
//! Must not import: cli/, config/, cmd/, ui/, report/, load/, fsync/, import/.

use super::metrics::{DeviceScrape, Health, Identity, Scrape, WrapExtender};
use crate::monitor::select::{glob_match, DeviceMeta, Selection};
use crate::monitor::RawSample;
use crate::profile::{self, ProfileCache};
use crate::sys::device::{self, BlockDev};
use crate::sys::{clock, inflight, Root};
use std::collections::{HashMap, HashSet};

/// Which devices the exporter exports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Devices {
    /// `stat`'s selection: include patterns (names, globs), --partitions, --all.
    pub selection: Selection,
    /// Globs of kernel or friendly names never exported.
    pub exclude: Vec<String>,
}

impl Devices {
    fn selects(&self, major: u32, name: &str, meta: &DeviceMeta) -> bool {
        self.selection.selects(major, name, meta)
            && !self
                .exclude
                .iter()
                .any(|p| glob_match(p, name) || glob_match(p, &meta.display_name))
    }
}

/// Scrapes one root; keeps what must survive between scrapes.
pub struct Scraper {
    root: Root,
    devices: Devices,
    profile_dir: crate::profile::ProfileDirs,
    profiles: ProfileCache,
    /// When the profile cache was (re)made, monotonic ns.
    profiles_since_ns: u64,
    profile_refresh_ns: u64,
    wraps: WrapExtender,
    known: HashMap<(u32, u32, String), Identity>,
    warned: HashSet<String>,
    /// The block-latency source, when attached ([`Scraper::use_block_latency`]).
    blk: Option<crate::sys::bpf::BlockLatency>,
    /// Production learning, when on ([`Scraper::learn_with`]): the replay engine `stat` uses,
    /// with its learner, fed one sample per [`Scraper::tick`].
    learning: Option<crate::monitor::replay::Replayer>,
    /// Each selected device's row of the latest learned interval, by device number: what a
    /// scrape serves as its judgement.
    judged: HashMap<(u32, u32), crate::monitor::interval::DeviceRow>,
    /// The profile directory was read again: the learner's devices are identified again.
    reidentify: bool,
    /// Caps declared on the command line, by device name (issue 42).
    caps: Vec<(String, crate::analysis::declared::DeclaredCap)>,
    /// The readers of AWS volumes' own statistics (issue 42; only a device whose sysfs model
    /// is Amazon's is opened), and the devices already looked at.
    aws: crate::monitor::aws::AwsWatch,
    aws_seen: HashSet<(u32, u32)>,
    /// The last minutes of samples, fed by the learner's tick and written out when a device
    /// turns overloaded, on SIGUSR1 or on `POST /hindsight` (issue 41; monitor::hindsight).
    hindsight: Option<crate::monitor::hindsight::Hindsight>,
    /// When the learner's next second is due (the ring may tick more often).
    learn_due: Option<u64>,
    /// The short windows between scrapes (issue 41's bursts; [`Scraper::use_bursts`]).
    burst: Option<crate::monitor::burst::BurstTracker>,
    /// Who loads each device (issue 40; [`Scraper::count_cgroups`]): the per-cgroup rows read
    /// at each learner tick, and the exporter's own cumulative sums of them.
    cgroups: Option<(
        crate::monitor::cgsource::CgSource,
        super::cgroups::CgCounters,
    )>,
}

impl Drop for Scraper {
    /// The exporter stops (a signal drops the server and its scraper): what was learned since
    /// the last periodic save (learn::SAVE_EVERY_NS) is kept.
    fn drop(&mut self) {
        self.save_learning();
        // A dump waiting for its tail is written now, its tail cut short.
        if let Some(h) = &mut self.hindsight {
            match h.write_due(clock::monotonic_ns(), true) {
                Ok(Some(p)) => crate::error::note(format_args!("hindsight: wrote {}", p.display())),
                Ok(None) => {}
                Err(e) => crate::error::warn(format_args!("hindsight: no dump written: {e}")),
            }
        }
    }
}

/// How long a loaded (or missing) profile is trusted before the directory is read again.
pub const PROFILE_REFRESH_NS: u64 = 60_000_000_000;

/// The learner's cadence: one sample a second, `stat`'s default interval, whatever the scrape
/// interval (issue 37: a 15 s scrape interval gave a first baseline after 13 minutes, and one
/// point per 15 s averages bursts and idle into levels the device never ran at).
pub const LEARN_EVERY_NS: u64 = 1_000_000_000;

fn secs(t0: u64) -> f64 {
    (clock::monotonic_ns() - t0) as f64 / 1e9
}

impl Scraper {
    /// Scrape `root`, with the profiles saved in `profile_dir` (None: no profiles).
    pub fn new(
        root: Root,
        devices: Devices,
        profile_dir: impl Into<crate::profile::ProfileDirs>,
    ) -> Scraper {
        let profile_dir = profile_dir.into();
        Scraper {
            profiles: ProfileCache::new(profile_dir.clone(), root.clone()),
            profile_dir,
            profiles_since_ns: clock::monotonic_ns(),
            profile_refresh_ns: PROFILE_REFRESH_NS,
            root,
            devices,
            wraps: WrapExtender::default(),
            known: HashMap::new(),
            warned: HashSet::new(),
            blk: None,
            learning: None,
            judged: HashMap::new(),
            reidentify: false,
            caps: Vec::new(),
            aws: Default::default(),
            aws_seen: HashSet::new(),
            hindsight: None,
            learn_due: None,
            burst: None,
            cgroups: None,
        }
    }

    /// Count each device's requests per cgroup (issue 40): the block-latency source's
    /// per-cgroup rows are read at each learner tick (one a second: the intervals the verdict
    /// is judged on are computed for it, nothing learned with learning off), at most `limit`
    /// cgroups per device with series of their own. None: off. Best called before
    /// [`Scraper::use_block_latency`], so the program is loaded once, with its cgroup code (a
    /// source attached without it is loaded again); without the source, one line says why
    /// there is nothing.
    pub fn count_cgroups(mut self, limit: Option<usize>) -> Scraper {
        let Some(limit) = limit else { return self };
        if self.learning.is_none() {
            self.learning = Some(crate::monitor::replay::Replayer::new(
                self.devices.selection.clone(),
                false,
            ));
        }
        self.cgroups = Some((Default::default(), super::cgroups::CgCounters::new(limit)));
        if self.blk.as_ref().is_some_and(|b| !b.counts_cgroups()) {
            self.blk = None;
            return self.use_block_latency(false);
        }
        self
    }

    /// Label each cgroup by its ancestor at `depth` (`--cgroup-depth`; None: its own path).
    pub fn cgroup_depth(mut self, depth: Option<usize>) -> Scraper {
        if let Some((_, sums)) = &mut self.cgroups {
            sums.set_depth(depth);
        }
        self
    }

    /// This tick's per-cgroup sample (`first`: the run's first, names go out again), fed to
    /// the exporter's sums; on a read error the cgroups are dropped, with one line.
    fn read_cgroups(&mut self, first: bool) -> Option<crate::monitor::cgroups::CgSample> {
        let (Some((src, sums)), Some(b)) = (&mut self.cgroups, &mut self.blk) else {
            return None;
        };
        if first {
            src.new_run();
        }
        match src.read(&self.root, b) {
            Ok(s) => {
                sums.feed(&s);
                Some(s)
            }
            Err(e) => {
                self.cgroups = None;
                self.warn(vec![format!(
                    "no per-cgroup figures from now on: reading the BPF map failed: {e}"
                )]);
                None
            }
        }
    }

    /// The caps declared on the command line (issue 42), over those of the devices'
    /// profiles. The share of a cap is the rate of an interval: with learning off, the
    /// intervals are computed for it all the same (one a second, [`Scraper::tick`]), nothing
    /// learned.
    pub fn declare_caps(
        mut self,
        caps: Vec<(String, crate::analysis::declared::DeclaredCap)>,
    ) -> Scraper {
        if self.learning.is_none() && !caps.is_empty() {
            self.learning = Some(crate::monitor::replay::Replayer::new(
                self.devices.selection.clone(),
                false,
            ));
        }
        if let Some(r) = self.learning.as_mut() {
            r.set_caps(caps.clone());
        }
        self.caps = caps;
        self.caps_to_ring();
        self
    }

    /// The declared caps into the hindsight ring (its dumps' `K` lines, so a dump is judged
    /// by them as the exporter judged it), whichever of the two was set up first.
    fn caps_to_ring(&mut self) {
        if let Some(h) = self.hindsight.as_mut() {
            for (dev, cap) in &self.caps {
                h.feed(&crate::monitor::record::Event::Cap {
                    dev: dev.clone(),
                    cap: *cap,
                });
            }
        }
    }

    /// Read the bursts' short windows every `window_ns` between scrapes (None: off); each
    /// scrape serves the peaks of the windows since the one before.
    pub fn use_bursts(mut self, window_ns: Option<u64>) -> Scraper {
        self.burst = window_ns.map(crate::monitor::burst::BurstTracker::new);
        self
    }

    /// How often [`Scraper::tick`] must be called: every [`LEARN_EVERY_NS`] for learning (or
    /// the judgement a declared cap or hindsight needs), more often when the hindsight ring's
    /// own interval or the bursts' window is shorter; None: never (none of them).
    pub fn tick_every_ns(&self) -> Option<u64> {
        let ring = self.hindsight.as_ref().map(|h| h.settings().interval_ns);
        let window = self.burst.as_ref().map(|b| b.window_ns());
        let learn = self.learning.is_some().then_some(LEARN_EVERY_NS);
        [ring, window, learn].into_iter().flatten().min()
    }

    /// One sample for the learner and the hindsight ring (diskstats and the block-latency
    /// histograms, read as a scrape reads them): when the learner's second is due, the
    /// interval it closes is learned from, and each selected device's row of it is what
    /// scrapes serve until the next such tick; the ring keeps it at its own cadence. Nothing
    /// without either; a failed read is warned about and skipped (the next tick's interval
    /// spans the gap, as `stat`'s does).
    pub fn tick(&mut self) {
        if self.learning.is_none() && self.hindsight.is_none() && self.burst.is_none() {
            return;
        }
        let raw = match RawSample::take(&self.root) {
            Ok(r) => r,
            Err(e) => return self.warn(vec![format!("diskstats: {e}")]),
        };
        if let Some(b) = self
            .burst
            .as_mut()
            .filter(|b| b.takes(raw.mono_ns, b.window_ns() / 20))
        {
            b.push(&raw.parse().0);
        }
        if self.learning.is_none() && self.hindsight.is_none() {
            return;
        }
        // Every tick learns unless ticks come faster than the learner's second (the ring's
        // interval, the bursts' window): then a tick within a twentieth of that second serves
        // (the ring's rule).
        let finer = self.tick_every_ns().is_some_and(|t| t < LEARN_EVERY_NS);
        let due = !finer
            || self
                .learn_due
                .map_or(true, |d| raw.mono_ns + LEARN_EVERY_NS / 20 >= d);
        if due && self.learning.is_some() {
            self.learn_due = Some(crate::monitor::collect::next_deadline(
                self.learn_due.unwrap_or(raw.mono_ns),
                LEARN_EVERY_NS,
                raw.mono_ns,
            ));
            self.tick_with(raw);
        } else {
            self.tend_hindsight(raw, false);
        }
    }

    /// [`Scraper::tick`] on a sample already read (its diskstats text and the clocks it was
    /// read at), learned from at once, so the samples of a recording can be fed in order and the exporter judges
    /// the intervals `stat --replay` judges (tests/it/one_judgement.rs); the block-latency
    /// histograms are read now, as `tick` reads them right after diskstats. Nothing without
    /// learning.
    pub fn tick_with(&mut self, raw: RawSample) {
        if self.learning.is_none() {
            return;
        }
        let (hists, blk_dropped) = match self.blk.as_ref().map(|b| b.read()) {
            Some(Ok((h, dropped))) => (h, Some(dropped)),
            // The scrape that reads them next drops the source and says why.
            Some(Err(_)) | None => (Vec::new(), None),
        };
        let first = self.learning.as_ref().is_some_and(|r| r.samples() == 0);
        let cgroups = self.read_cgroups(first);
        let (sample, warnings) = raw.parse();
        self.warn(warnings);
        self.judged = self.learn(&sample, raw.wall_ns, &hists, blk_dropped, cgroups);
        self.tend_hindsight(raw, true);
    }

    /// Keep the last minutes of samples (monitor::hindsight), fed by [`Scraper::tick`] at
    /// the ring's own interval: written out when a device turns overloaded, on SIGUSR1
    /// (caught from here on) or when [`Scraper::request_hindsight`] asks. With learning off
    /// (`--no-learn`) the intervals are judged all the same (by the swept profile and the
    /// declared cap, nothing learned), so an overload still triggers a dump.
    pub fn keep_hindsight(
        mut self,
        settings: Option<crate::monitor::hindsight::Settings>,
    ) -> Scraper {
        if let Some(s) = settings {
            crate::sys::signal::catch_dump_signal();
            let host = crate::sys::hostname(&self.root).unwrap_or_default();
            let mut ring = crate::monitor::hindsight::Hindsight::new(s, host);
            // The devices the exporter exports (`#S`): a dump's replay, `analyze` and page show
            // what it exported, not `stat`'s default selection (its exclusions aside: a
            // selection records none).
            ring.feed(&crate::monitor::record::Event::Selection(
                self.devices.selection.clone(),
            ));
            self.hindsight = Some(ring);
            self.caps_to_ring();
            if self.learning.is_none() {
                self.learning = Some(crate::monitor::replay::Replayer::new(
                    self.devices.selection.clone(),
                    false,
                ));
            }
        }
        self
    }

    /// Ask for a dump of what is held (`POST /hindsight`): where it will go, and when (after
    /// the tail); None when hindsight is off.
    pub fn request_hindsight(&mut self, reason: &str) -> Option<String> {
        let h = self.hindsight.as_mut()?;
        h.trigger(reason.to_string(), clock::monotonic_ns(), clock::wall_ns());
        let s = h.settings();
        Some(format!(
            "hindsight: {:.0} s of samples held; a dump goes to {} after the {:.0} s tail\n",
            h.held_s(),
            s.dir.display(),
            s.tail_ns as f64 / 1e9
        ))
    }

    /// The ring's figures for the exposition; None when off.
    pub fn hindsight_figures(&self) -> Option<super::metrics::HindsightFigures> {
        self.hindsight
            .as_ref()
            .map(|h| super::metrics::HindsightFigures {
                dumps: h.written,
                held_bytes: h.bytes(),
                samples: h.samples(),
                dropped: h.dropped,
                last_dump_s: h.last_dump_ns.map(|ns| ns as f64 / 1e9),
            })
    }

    /// After a tick: the sample into the ring, a SIGUSR1 or a device that turned overloaded
    /// (`judged`: the tick closed a judged interval) asks for a dump, and one whose tail has
    /// passed is written, a line saying where.
    fn tend_hindsight(&mut self, raw: RawSample, judged: bool) {
        use crate::monitor::record::Event;
        let Some(h) = &mut self.hindsight else { return };
        let (mono, wall) = (raw.mono_ns, raw.wall_ns);
        h.feed(&Event::Sample(raw));
        if let Some(line) = h.take_statement() {
            crate::error::note(line);
        }
        match h.after_interval(self.judged.values(), mono, wall, judged, false) {
            Ok(Some(p)) => crate::error::note(format_args!(
                "hindsight: wrote {} ({:.0} s of samples)",
                p.display(),
                h.held_s()
            )),
            Ok(None) => {}
            Err(e) => self.warn(vec![format!("hindsight: no dump written: {e}")]),
        }
    }

    /// Learn each exported device's baseline and curve from the traffic between scrapes
    /// (learn/, the same learner `stat` and `top` feed); None (`--no-learn`): nothing learned
    /// (the intervals another part asked for, [`Scraper::count_cgroups`], still computed).
    pub fn learn_with(mut self, spec: Option<crate::learn::LearnSpec>) -> Scraper {
        if let Some(s) = spec {
            let mut r =
                crate::monitor::replay::Replayer::new(self.devices.selection.clone(), false);
            r.observe_with(crate::learn::observer(s));
            self.learning = Some(r);
        }
        self
    }

    /// Save what was learned (at the end of a run, and when the scraper is dropped with
    /// the server); problems are warnings.
    pub fn save_learning(&mut self) {
        if let Some(l) = self.learning.as_mut().and_then(|r| r.observer_mut()) {
            l.save();
            let w = l.take_warnings();
            self.warn(w);
        }
    }

    /// Feed one sample to the learner; each selected device's judgement of the interval it
    /// closes, by device number (empty on the first sample or without learning).
    fn learn(
        &mut self,
        sample: &crate::monitor::DiskSample,
        wall_ns: i64,
        hists: &[crate::sys::bpf::DevHists],
        blk_dropped: Option<u64>,
        cgroups: Option<crate::monitor::cgroups::CgSample>,
    ) -> HashMap<(u32, u32), crate::monitor::interval::DeviceRow> {
        use crate::monitor::record::Event;
        let Some(mut r) = self.learning.take() else {
            return HashMap::new();
        };
        // The profile of each device identified now, so the learner sees what judges it (a
        // swept profile the traffic disagrees with is reported as a change).
        let mut swept: HashMap<String, std::sync::Arc<crate::profile::DeviceProfile>> =
            HashMap::new();
        let mut events = Vec::new();
        if r.samples() == 0 {
            events.push(Event::Run {
                wall_ns,
                interval_ns: 0,
            });
        }
        // Every device again after the profile directory was read again (a profile saved
        // while the exporter runs judges, and is watched, from then on).
        let again = std::mem::take(&mut self.reidentify);
        for l in &sample.lines {
            if r.has_meta(l.major, l.minor, &l.name) && !again {
                continue;
            }
            let dev = BlockDev {
                major: l.major,
                minor: l.minor,
                name: l.name.clone(),
            };
            let identity = self.identity(&dev);
            if let Some(id) = &identity.profile_id {
                if let Some(p) = self.profiles.profile_for(&dev, id) {
                    swept.insert(id.clone(), p);
                }
            }
            let meta = DeviceMeta {
                kind: identity.kind,
                display_name: identity.display_name.clone(),
            };
            events.extend(crate::monitor::collect::announce(
                &mut r,
                &self.root,
                dev,
                meta,
                identity.profile_id,
            ));
        }
        if let Some(dropped) = blk_dropped {
            events.push(Event::Latency(crate::monitor::blklat::BlkSample {
                dropped,
                devs: hists.to_vec(),
            }));
        }
        if let Some(c) = cgroups {
            events.push(Event::Cgroups(c));
        }
        // The CPU times of the same moment, as `stat` reads them with every sample: the
        // learner keeps an interval whose slow latency the machine's CPUs may explain out of
        // the baseline, and every judgement of slow or worse on busy CPUs says so
        // (`busy_cpus`, issue 37); a hindsight dump's avg-cpu line is the same. Read only for
        // hindsight until 2026-12-02: the exporter learned CPU noise into its baselines.
        if let Some(c) = crate::sys::sched::read_cpu_times(&self.root) {
            events.push(Event::Cpu(c));
        }
        let mut warnings = Vec::new();
        let mut out = HashMap::new();
        if let Some(h) = &mut self.hindsight {
            events.iter().for_each(|ev| h.feed(ev));
        }
        let mut lookup = |id: &str| swept.get(id).cloned();
        let mut closed = None;
        let fed = events
            .into_iter()
            .try_for_each(|ev| r.feed(ev, &mut lookup).map(|f| warnings.extend(f.warnings)))
            .and_then(|()| {
                // The learner's second's short windows, attached before it learns (its busy
                // share is bounded by them, as `stat`'s is: learn/points.rs).
                let burst = &mut self.burst;
                r.push_sample_with(sample.clone(), &mut |rep| {
                    if let Some(b) = burst.as_mut() {
                        let bs = b.close_learned(rep);
                        crate::monitor::burst::attach(rep, &bs);
                        b.keep_for_learning();
                        closed = Some(bs);
                    }
                })
            });
        // Held before the sample that closes them, as a recording holds them (a dump's
        // replay learns what was learned here).
        if let (Some(h), Some(bs)) = (&mut self.hindsight, closed) {
            if !bs.devs.is_empty() {
                h.feed(&Event::Burst(bs));
            }
        }
        match fed {
            Ok(f) => {
                warnings.extend(f.warnings);
                for rep in f.report.into_iter().filter(|rep| !rep.since_boot) {
                    for d in rep.devices {
                        out.insert((d.major, d.minor), d);
                    }
                }
                if let Some(l) = r.observer_mut() {
                    warnings.extend(l.take_warnings());
                }
                self.learning = Some(r);
            }
            // A selected pattern that names no device: nothing to learn, said once.
            Err(e) => warnings.push(format!("nothing learned: {e}")),
        }
        self.warn(warnings);
        out
    }

    /// Serve the block-layer latency histograms too, unless `off` (`--no-bpf`); one line
    /// says why not when the source can't be had.
    pub fn use_block_latency(mut self, off: bool) -> Scraper {
        match crate::sys::bpf::attach_with(&self.root, off, self.cgroups.is_some()) {
            Ok(b) => self.blk = b,
            Err(line) => self.warn(vec![line]),
        }
        if self.cgroups.is_some() && self.blk.is_none() {
            self.cgroups = None;
            self.warn(vec![
                "no per-cgroup figures: the block-latency BPF source is not attached".to_string(),
            ]);
        }
        self
    }

    /// Read the profile directory again after `ns` instead of [`PROFILE_REFRESH_NS`].
    pub fn with_profile_refresh(mut self, ns: u64) -> Scraper {
        self.profile_refresh_ns = ns;
        self
    }

    fn warn(&mut self, warnings: Vec<String>) {
        for w in warnings {
            if self.warned.insert(w.clone()) {
                crate::error::warn(w);
            }
        }
    }

    /// sysfs facts of a device, read the first time it is seen under this name.
    fn identity(&mut self, dev: &BlockDev) -> Identity {
        let key = (dev.major, dev.minor, dev.name.clone());
        if let Some(i) = self.known.get(&key) {
            return i.clone();
        }
        let q = device::queue_info(&self.root, dev);
        let ids = device::sysfs_dir(&self.root, dev)
            .map(|d| profile::read_identity(&d, &dev.name, q.model.clone(), q.size_bytes));
        let i = Identity {
            display_name: device::friendly_name(&self.root, dev),
            kind: device::kind(&self.root, dev),
            model: q.model,
            serial: ids.as_ref().and_then(|i| i.serial.clone()),
            wwid: ids.as_ref().and_then(|i| i.wwid.clone()),
            rotational: q.rotational,
            scheduler: q.scheduler,
            write_cache: q.write_cache,
            profile_id: ids.as_ref().map(profile::profile_id),
            disks: crate::sys::topology::physical_disks_in(&self.root, &dev.name),
        };
        self.known.insert(key, i.clone());
        i
    }

    /// One scrape. Never fails: a failed read is a collector with success 0.
    pub fn scrape(&mut self) -> Scrape {
        let t0 = clock::monotonic_ns();
        let raw = match RawSample::take(&self.root) {
            Ok(r) => r,
            Err(e) => {
                self.warn(vec![format!("diskstats: {e}")]);
                let health = vec![Health {
                    collector: "diskstats",
                    success: false,
                    duration_s: secs(t0),
                }];
                return Scrape {
                    health,
                    ..Scrape::default()
                };
            }
        };
        // Right after diskstats; a failed read drops the source, with one line.
        let mut hists = Vec::new();
        let mut blk_dropped = None;
        if let Some(b) = &self.blk {
            match b.read() {
                Ok((h, dropped)) => {
                    hists = h;
                    blk_dropped = Some(dropped);
                }
                Err(e) => {
                    self.blk = None;
                    self.warn(vec![format!(
                        "no live latency percentiles from now on: reading the BPF maps failed: {e}"
                    )]);
                }
            }
        }
        let (sample, warnings) = raw.parse();
        self.warn(warnings);
        // The short windows since the last scrape, the last one ending now.
        let mut bursts = match &mut self.burst {
            Some(b) => {
                // The scrape's sample ends the last window unless it would be under half one.
                if b.takes(sample.mono_ns, b.window_ns() / 2) {
                    b.push(&sample);
                }
                b.close_all()
            }
            None => HashMap::new(),
        };
        // The latest learned interval (Scraper::tick), each device's row with what was
        // learned of it.
        let mut rows = self.judged.clone();
        let numbers = sample.lines.iter().map(|l| (l.major, l.minor)).collect();
        self.free_latency_slots(&numbers, blk_dropped);
        // A long-running exporter sees profiles saved (or replaced) after it started.
        if t0.saturating_sub(self.profiles_since_ns) >= self.profile_refresh_ns {
            self.profiles = ProfileCache::new(self.profile_dir.clone(), self.root.clone());
            self.profiles_since_ns = t0;
            self.reidentify = true;
        }
        // The AWS statistics (each device at most once a second, whatever the scrape rate).
        if !self.aws.is_empty() {
            self.aws.tick();
        }
        let aws_warnings = self.aws.take_warnings();
        self.warn(aws_warnings);
        let mut devices = Vec::new();
        let mut present = HashSet::new();
        for line in &sample.lines {
            let dev = BlockDev {
                major: line.major,
                minor: line.minor,
                name: line.name.clone(),
            };
            present.insert((dev.major, dev.minor, dev.name.clone()));
            let identity = self.identity(&dev);
            let meta = DeviceMeta {
                kind: identity.kind,
                display_name: identity.display_name.clone(),
            };
            if !self.devices.selects(dev.major, &dev.name, &meta) {
                continue;
            }
            if self.aws_seen.insert((dev.major, dev.minor)) {
                self.aws.announce(&self.root, &dev);
            }
            let profile = identity
                .profile_id
                .as_deref()
                .and_then(|id| self.profiles.profile_for(&dev, id));
            let latency = hists
                .iter()
                .position(|h| h.major == dev.major && h.minor == dev.minor)
                .map(|i| hists.swap_remove(i));
            let row = rows.remove(&(dev.major, dev.minor)).map(|mut row| {
                // Judged against the profile served (the one the scrape found).
                row.profile = profile.clone();
                row
            });
            let cap = crate::monitor::interval::cap_for(
                &self.caps,
                &dev.name,
                &identity.display_name,
                profile.as_deref(),
            );
            let cap_uses = match (&cap, row.as_ref().and_then(|r| r.rates.as_ref().ok())) {
                (Some(c), Some(r)) => crate::monitor::judge::cap_uses(c, r),
                _ => Vec::new(),
            };
            devices.push(DeviceScrape {
                latency,
                line: self.wraps.extend(line, sample.mono_ns),
                in_flight: inflight::read(&self.root, &dev),
                identity,
                profile,
                judgement: row.as_ref().map(|r| r.judgement()),
                cgroups: self.cgroups.as_ref().and_then(|(_, c)| {
                    c.device(
                        dev.major,
                        dev.minor,
                        row.as_ref().and_then(|r| r.cgroups.as_deref()),
                    )
                }),
                learned: row.and_then(|r| r.learned),
                cap,
                cap_uses,
                aws: self.aws.get(dev.major, dev.minor),
                burst: bursts.remove(&(dev.major, dev.minor)),
            });
        }
        self.wraps.retain(&present);
        self.known.retain(|k, _| present.contains(k));
        let warnings = self.profiles.take_warnings();
        self.warn(warnings);
        Scrape {
            devices,
            health: vec![Health {
                collector: "diskstats",
                success: true,
                duration_s: secs(t0),
            }],
            blk_dropped,
            hindsight: self.hindsight_figures(),
            build: None,
            cgroup_unattributed: self.cgroups.as_ref().map(|(_, c)| c.unattributed()),
            cgroup_pressure: self
                .cgroups
                .as_ref()
                .map_or_else(Vec::new, |(_, c)| c.pressure()),
        }
    }

    /// The block-latency slots of devices gone from `sample` come back; dropped completions
    /// are warned about once (`BlockLatency::tend`).
    fn free_latency_slots(&mut self, present: &HashSet<(u32, u32)>, dropped: Option<u64>) {
        let Some(b) = &mut self.blk else { return };
        let lines = b.tend(present, dropped.unwrap_or(0));
        self.warn(lines);
    }
}
