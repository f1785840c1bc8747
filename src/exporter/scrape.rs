//! The exporter's collector: one read of /proc/diskstats through the shared reader
//! (monitor::RawSample), devices selected as `stat` selects them (monitor::select) plus exclude
//! globs, identity from sysfs (learned once per device), the in-flight split (sys::inflight),
//! profiles (profile::ProfileCache, read again every minute so a profile saved while the exporter
//! runs is picked up), the wrap extension of the ms fields kept across scrapes, and the
//! block-latency histograms (sys::bpf) when attached. Returns a [`Scrape`] for metrics::render.
//! Must not import: cli/, config/, cmd/, ui/, report/, load/, fsync/, import/.

use super::metrics::{DeviceScrape, Health, Identity, Scrape, WrapExtender};
use crate::monitor::select::{glob_match, DeviceMeta, Selection};
use crate::monitor::RawSample;
use crate::profile::{self, ProfileCache};
use crate::sys::device::{self, BlockDev};
use crate::sys::{clock, inflight, Root};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

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
    profile_dir: Option<PathBuf>,
    profiles: ProfileCache,
    /// When the profile cache was (re)made, monotonic ns.
    profiles_since_ns: u64,
    profile_refresh_ns: u64,
    wraps: WrapExtender,
    known: HashMap<(u32, u32, String), Identity>,
    warned: HashSet<String>,
    /// The block-latency source, when attached ([`Scraper::use_block_latency`]).
    blk: Option<crate::sys::bpf::BlockLatency>,
    /// The dropped completions were warned about (once).
    warned_dropped: bool,
}

/// How long a loaded (or missing) profile is trusted before the directory is read again.
pub const PROFILE_REFRESH_NS: u64 = 60_000_000_000;

fn secs(t0: u64) -> f64 {
    (clock::monotonic_ns() - t0) as f64 / 1e9
}

impl Scraper {
    /// Scrape `root`, with the profiles saved in `profile_dir` (None: no profiles).
    pub fn new(root: Root, devices: Devices, profile_dir: Option<PathBuf>) -> Scraper {
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
            warned_dropped: false,
        }
    }

    /// Serve the block-layer latency histograms too, unless `off` (`--no-bpf`); one line
    /// says why not when the source can't be had.
    pub fn use_block_latency(mut self, off: bool) -> Scraper {
        match crate::sys::bpf::attach(&self.root, off) {
            Ok(b) => self.blk = b,
            Err(line) => self.warn(vec![line]),
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
                    devices: vec![],
                    health,
                    blk_dropped: None,
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
        let numbers = sample.lines.iter().map(|l| (l.major, l.minor)).collect();
        self.free_latency_slots(&numbers, blk_dropped);
        // A long-running exporter sees profiles saved (or replaced) after it started.
        if t0.saturating_sub(self.profiles_since_ns) >= self.profile_refresh_ns {
            self.profiles = ProfileCache::new(self.profile_dir.clone(), self.root.clone());
            self.profiles_since_ns = t0;
        }
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
            let profile = identity
                .profile_id
                .as_deref()
                .and_then(|id| self.profiles.profile(id));
            let latency = hists
                .iter()
                .position(|h| h.major == dev.major && h.minor == dev.minor)
                .map(|i| hists.swap_remove(i));
            devices.push(DeviceScrape {
                latency,
                line: self.wraps.extend(line, sample.mono_ns),
                in_flight: inflight::read(&self.root, &dev),
                identity,
                profile,
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
        }
    }

    /// The block-latency slots of devices gone from `sample` come back (device churn: loop,
    /// dm, nbd); completions dropped for want of a slot are warned about once.
    fn free_latency_slots(&mut self, present: &HashSet<(u32, u32)>, dropped: Option<u64>) {
        let Some(b) = &mut self.blk else { return };
        if let Err(e) = b.free_gone(present) {
            self.warn(vec![format!(
                "block-latency slots of removed devices could not be freed: {e}"
            )]);
        }
        if dropped.is_some_and(|d| d > 0) && !self.warned_dropped {
            self.warned_dropped = true;
            self.warn(vec![format!(
                "block latency: all {} device slots are taken by devices still present; the \
                 completions of further devices are not in any histogram (counted in \
                 iosat_block_latency_dropped_completions_total)",
                crate::sys::bpf::MAX_SLOTS
            )]);
        }
    }
}
