//! The profile types: what a saved sweep gives `stat` and every judgement ([`DeviceProfile`]:
//! baseline, knee, pattern, direction, where and when it was swept, and what it says in
//! words), the direction a profile judges ([`Direction`]), the device state that makes a
//! profile stale ([`DeviceState`]) and what `iosat profile import` records ([`Imported`]).
//! Imports only: profile/, sys/, units, analysis/declared.rs.

use super::ModelKey;
use crate::analysis::declared::DeclaredCap;
use crate::sys::device::{self, BlockDev};
use crate::sys::Root;

/// What `stat` needs from a saved sweep: the verdict's numbers and what they were measured
/// with (the baseline holds for the swept pattern and block size only).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DeviceProfile {
    /// The profile id (file name without `.json`): wwid, serial, or model + size.
    pub id: String,
    /// Mean latency at the baseline level (concurrency 1) of the sweep, ns.
    pub baseline_latency_ns: f64,
    pub knee_concurrency: u32,
    /// Measured IOPS at the knee.
    pub max_useful_iops: f64,
    /// The swept pattern ("randread", ...): the baseline is for this pattern.
    pub pattern: String,
    /// The swept request size, bytes.
    pub block_size: u64,
    /// A mixed (randrw) sweep's share of reads, percent (`workload.read_pct`): its max useful
    /// IOPS are reads and writes together in this share. None for a one-direction sweep, or
    /// a mixed one whose file does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_pct: Option<u8>,
    /// p95 latency at the baseline level, ns (the 3x-p95 rule's reference), when saved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_p95_ns: Option<f64>,
    /// The device's own mean time at the baseline level, ns (issue 40: the block layer's
    /// split of the level at concurrency 1), when the sweep had the block-latency source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_device_ns: Option<f64>,
    /// The first overloaded level of the sweep (p95 above 3x the baseline's), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overload_concurrency: Option<u32>,
    /// When the sweep started, seconds since the epoch (its `started_unix_s`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_unix_s: Option<u64>,
    /// Which requests the baseline holds for (from the swept pattern; a file from before
    /// directions existed loads by its pattern, and as a read profile when it has none).
    #[serde(default, skip_serializing_if = "Direction::is_read")]
    pub direction: Direction,
    /// The write profile saved beside a read one (`<id>.write.json`), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<Box<DeviceProfile>>,
    /// Saved before profiles had a direction (as `<id>.json`): such a file judged every
    /// request, so it still judges writes when no write profile exists, and `stat` says so.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub legacy: bool,
    /// The device as it was when the profile was measured (the file's `device_state`, added
    /// by [`with_device_state`] on save); None in files that don't record it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_state: Option<DeviceState>,
    /// How the device changed since (size, scheduler, model), when the device is present
    /// now: the profile may no longer describe it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed_since: Vec<String>,
    /// The device it is the profile of: the one `iosat profile save/import` saved it for,
    /// else the disk the sweep measured (the report's `target.disk_device`), when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Set when the profile was imported (`iosat profile import`) rather than swept here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported: Option<Imported>,
    /// The host the sweep ran on (the report's `host`), when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Set on a model profile: what a device must match for this profile to judge it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_profile: Option<ModelKey>,
    /// The sweep did not reach the knee (its `verdict.knee_above`): the knee lies above this
    /// many in flight, `knee_concurrency` is only the highest level judged, and max useful
    /// IOPS and the headroom from it are lower bounds ([`Self::bound`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knee_at_least: Option<u32>,
    /// The sweep ran in gentle mode (its `workload.limits`: `--max-concurrency`,
    /// `--rate-limit`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gentle: bool,
    /// The cap the device was provisioned with, as declared (`iosat profile save
    /// --cap-iops/--cap-mbps`, or the sweep's own `--cap-iops/--cap-mbps`): judged against
    /// in every view (issue 42).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declared_cap: Option<DeclaredCap>,
}

/// What about a device, when it changes, makes its profile stale.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct DeviceState {
    pub size_bytes: Option<u64>,
    pub scheduler: Option<String>,
    pub model: Option<String>,
}

impl DeviceState {
    /// Thin IO: the device's size, scheduler and model from sysfs.
    pub fn read(root: &Root, dev: &BlockDev) -> DeviceState {
        DeviceState::of(&device::queue_info(root, dev))
    }

    /// Pure: the part of a device's queue facts that makes a profile stale.
    pub fn of(q: &device::QueueInfo) -> DeviceState {
        DeviceState {
            size_bytes: q.size_bytes,
            scheduler: q.scheduler.clone(),
            model: q.model.clone(),
        }
    }

    /// Pure: what differs from `then` to `self` (only what both know), in words.
    pub fn changes_since(&self, then: &DeviceState) -> Vec<String> {
        let mut out = Vec::new();
        if let (Some(a), Some(b)) = (then.size_bytes, self.size_bytes) {
            if a != b {
                out.push(format!("size {} MiB -> {} MiB", a >> 20, b >> 20));
            }
        }
        for (what, a, b) in [
            ("scheduler", &then.scheduler, &self.scheduler),
            ("model", &then.model, &self.model),
        ] {
            if let (Some(a), Some(b)) = (a, b) {
                if a != b {
                    out.push(format!("{what} {a} -> {b}"));
                }
            }
        }
        out
    }
}

/// What `iosat profile import` adds to a profile file (key `imported`): the device here it
/// was imported for, the host it was swept on, when it was imported.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Imported {
    pub for_device: String,
    pub from_host: Option<String>,
    pub unix_s: u64,
}

/// The direction a profile judges: a read sweep gives the read baseline and knee, a write
/// sweep the write ones; a mixed (randrw) sweep's baseline is of the mix, so it judges both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Read,
    Write,
    Mixed,
}

impl Direction {
    /// From a sweep's pattern name; unknown patterns (old or hand-written files) are reads.
    pub fn of_pattern(pattern: &str) -> Direction {
        match pattern {
            "write" | "randwrite" => Direction::Write,
            "randrw" | "rw" | "readwrite" => Direction::Mixed,
            _ => Direction::Read,
        }
    }

    pub fn is_read(&self) -> bool {
        *self == Direction::Read
    }
}

impl DeviceProfile {
    /// The profile reads are judged against (None: only a write profile is saved).
    pub fn for_reads(&self) -> Option<&DeviceProfile> {
        (self.direction != Direction::Write).then_some(self)
    }

    /// The profile writes are judged against (None: "no write profile"; never the read
    /// baseline, which says nothing about how long a write takes, except for a legacy file
    /// that always did).
    pub fn for_writes(&self) -> Option<&DeviceProfile> {
        if let Some(w) = self.write.as_deref() {
            return Some(w);
        }
        match self.direction {
            Direction::Write | Direction::Mixed => Some(self),
            Direction::Read => self.legacy.then_some(self),
        }
    }

    /// When the sweep did not reach the knee, what that means for every judgement against
    /// the profile, in words: "swept gently on 2026-11-25: the knee is above 8 in flight, so
    /// max useful IOPS (at least 9000) and the headroom are lower bounds". None for a profile
    /// with a knee.
    pub fn bound(&self) -> Option<String> {
        let k = self.knee_at_least?;
        let how = if self.gentle { "swept gently" } else { "swept" };
        let when = match self.day() {
            Some(d) => format!("{how} on {d}"),
            None => how.to_string(),
        };
        let reached = if self.gentle { "" } else { " (not reached)" };
        Some(format!(
            "{when}: the knee is above {k} in flight{reached}, so max useful IOPS (at least {:.0}) \
and the headroom are lower bounds",
            self.max_useful_iops
        ))
    }

    /// The knee as people read it: "8", or "> 8" when the sweep did not reach it.
    pub fn knee_text(&self) -> String {
        match self.knee_at_least {
            Some(k) => format!("> {k}"),
            None => self.knee_concurrency.to_string(),
        }
    }

    /// The day the sweep started (UTC, "2026-11-25"), when known.
    fn day(&self) -> Option<String> {
        self.measured_unix_s.map(|s| {
            let iso = crate::units::utc_of_unix_s(s);
            if s > crate::units::LAST_DATE_UNIX_S {
                return iso;
            }
            iso.get(..10).unwrap_or(&iso).to_string()
        })
    }

    /// Which profile a judgement used, as every judgement says it: "the model profile of
    /// 'Amazon Elastic Block Store 100 GiB', swept on host-a 2026-11-20" or "the profile
    /// serial-S3X, swept on host-a 2026-11-20".
    pub fn judged_against(&self) -> String {
        let what = match &self.model_profile {
            Some(k) => format!("the model profile of '{}'", k.label()),
            None => format!("the profile {}", crate::units::printable(&self.id)),
        };
        let host = self.host.as_deref().map(crate::units::printable);
        match (host, self.day()) {
            (Some(h), Some(d)) => format!("{what}, swept on {h} {d}"),
            (Some(h), None) => format!("{what}, swept on {h}"),
            (None, Some(d)) => format!("{what}, swept {d}"),
            (None, None) => what,
        }
    }
}
