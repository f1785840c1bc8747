//! Device profiles: where `--save-profile` stores a sweep result and under which id, so `stat` and
//! later commands can judge live numbers against the device's own curve; and the one cache of
//! loaded profiles by id ([`ProfileCache`]) that `stat`, `report` and `info` share. monitor/ and
//! report/ use its types.
//! Imports only: sys/, error, units.
//!
//! Where profiles are looked for ([`ProfileDirs`], resolved by config/profile.rs): the own
//! directory (`--profile-dir` / `$IOSAT_PROFILE_DIR`, else `/var/lib/iosat/profiles` for root,
//! else `$XDG_STATE_HOME/iosat/profiles`, else `~/.local/state/iosat/profiles`), for root also
//! the old user location, then the shared read-only ones (`$IOSAT_PROFILE_DIRS`, else
//! `/etc/iosat/profiles`). Files `<id>.read.json` and `<id>.write.json` (older files:
//! `<id>.json`, loaded as read profiles) where id is the device's wwid, else its serial, else
//! model + size (sanitised to `[A-Za-z0-9._-]`); a model profile ([`ModelKey`]) is saved under
//! `model-<model>-<size>-<hash>` and judges every device whose model, firmware, capacity,
//! block sizes, rotational flag and scheduler match it, when no profile of its own exists.

use crate::error::{Error, Result};
use crate::sys::device::{self, BlockDev};
use crate::sys::Root;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// p95 latency at the baseline level, ns (the 3x-p95 rule's reference), when saved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_p95_ns: Option<f64>,
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

/// The sweep `report` with the device's state beside it (key `device_state`) and what `iosat
/// profile` adds ([`Extras`]), as [`save`] stores it: `stat` then says when the device changed
/// since the profile was measured.
pub fn profile_json<T: serde::Serialize>(
    report: &T,
    state: &DeviceState,
    extras: &Extras,
) -> String {
    #[derive(serde::Serialize)]
    struct WithState<'a, T> {
        #[serde(flatten)]
        report: &'a T,
        device_state: &'a DeviceState,
        #[serde(flatten)]
        extras: &'a Extras,
    }
    serde_json::to_string_pretty(&WithState {
        report,
        device_state: state,
        extras,
    })
    .expect("a sweep report serialises")
}

/// What a model profile holds of the device it was swept on, and a device must match in every
/// field (a field neither knows matches) for the profile to judge it: one sweep per model of
/// a fleet instead of one per volume.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ModelKey {
    pub model: Option<String>,
    pub firmware: Option<String>,
    pub size_bytes: Option<u64>,
    pub logical_block_size: Option<u32>,
    pub physical_block_size: Option<u32>,
    pub rotational: Option<bool>,
    pub scheduler: Option<String>,
}

impl ModelKey {
    /// Thin IO: the device's model key from sysfs (firmware: `device/firmware_rev`, NVMe, else
    /// `device/rev`, SCSI).
    pub fn read(root: &Root, dev: &BlockDev) -> ModelKey {
        let firmware = device::sysfs_dir(root, dev).and_then(|d| {
            ["device/firmware_rev", "device/rev"].iter().find_map(|f| {
                std::fs::read_to_string(d.join(f))
                    .ok()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
            })
        });
        ModelKey::of(&device::queue_info(root, dev), firmware)
    }

    /// Pure: the key from a device's queue facts and firmware revision.
    pub fn of(q: &device::QueueInfo, firmware: Option<String>) -> ModelKey {
        ModelKey {
            model: q.model.clone(),
            firmware,
            size_bytes: q.size_bytes,
            logical_block_size: q.logical_block_size,
            physical_block_size: q.physical_block_size,
            rotational: q.rotational,
            scheduler: q.scheduler.clone(),
        }
    }

    /// How a model is named to people: its model and capacity ("Amazon Elastic Block Store
    /// 100 GiB").
    pub fn label(&self) -> String {
        // A model name comes from a device or a file: never a control character raw.
        let model = crate::units::printable(self.model.as_deref().unwrap_or("unnamed model"));
        match self.size_bytes {
            Some(b) if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{model} {} GiB", b >> 30),
            Some(b) if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{model} {} MiB", b >> 20),
            Some(b) => format!("{model} {}", crate::units::human_bytes(b)),
            None => model.to_string(),
        }
    }

    /// The id a model profile is saved under: `model-<model>-<size>-<hash of the whole key>`,
    /// so two firmwares or schedulers of one model keep two profiles.
    pub fn id(&self) -> String {
        // FNV-1a over the key's JSON: stable across builds and hosts (std's hasher is not).
        let json = serde_json::to_string(self).expect("a model key serialises");
        let hash = json.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let model = sanitize(self.model.as_deref().unwrap_or("unnamed"));
        let size = self.size_bytes.map(|b| format!("-{b}")).unwrap_or_default();
        format!("model-{model}{size}-{:08x}", hash as u32)
    }

    /// Pure: how `dev` differs from this key, in words (empty: it matches).
    pub fn differences(&self, dev: &ModelKey) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |what: &str, a: Option<String>, b: Option<String>| {
            if a != b {
                let s = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
                out.push(format!("{what} {} here, {} in the profile", s(b), s(a)));
            }
        };
        cmp("model", self.model.clone(), dev.model.clone());
        cmp("firmware", self.firmware.clone(), dev.firmware.clone());
        let n = |v: Option<u64>| v.map(|v| v.to_string());
        cmp("size", n(self.size_bytes), n(dev.size_bytes));
        let n32 = |v: Option<u32>| v.map(|v| v.to_string());
        cmp(
            "logical block size",
            n32(self.logical_block_size),
            n32(dev.logical_block_size),
        );
        cmp(
            "physical block size",
            n32(self.physical_block_size),
            n32(dev.physical_block_size),
        );
        let rot =
            |v: Option<bool>| v.map(|r| if r { "rotational" } else { "non-rotational" }.into());
        cmp("rotational", rot(self.rotational), rot(dev.rotational));
        cmp("scheduler", self.scheduler.clone(), dev.scheduler.clone());
        out
    }
}

/// A profile file as `stat` reads it: the fields it needs from the saved sweep report, each
/// typed, every other field of the report ignored. A field that is missing or of another type
/// reads as None (the error then names it), so a file from an older or newer iosat loads by
/// the fields it has. Renaming one of these fields in the sweep report breaks
/// `tests::a_profile_saved_by_iosat_0_1_still_loads`, not silently every saved profile.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct ProfileFile {
    #[serde(deserialize_with = "lenient")]
    verdict: Option<FileVerdict>,
    #[serde(deserialize_with = "lenient")]
    workload: Option<FileWorkload>,
    /// When the sweep started, seconds since the epoch.
    #[serde(deserialize_with = "lenient")]
    started_unix_s: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    device_state: Option<DeviceState>,
    #[serde(deserialize_with = "lenient")]
    target: Option<FileTarget>,
    /// Set by `iosat profile import`: the device it was imported for, from which host.
    #[serde(deserialize_with = "lenient")]
    imported: Option<Imported>,
    /// Set by `iosat profile save/import`: the device here it was saved as the profile of.
    #[serde(deserialize_with = "lenient")]
    saved_for: Option<String>,
    /// The sweep report's host.
    #[serde(deserialize_with = "lenient")]
    host: Option<String>,
    /// Set by `iosat profile save/import --model`: a model profile and what it matches.
    #[serde(deserialize_with = "lenient")]
    model_profile: Option<ModelKey>,
}

/// What `iosat profile save/import` add to the sweep report they store ([`profile_json`]):
/// typed, so the stored file and [`ProfileFile`] agree on the names.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Extras {
    /// The device here the profile was saved for (None for a model profile: it is no one
    /// device's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_for: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported: Option<Imported>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_profile: Option<ModelKey>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct FileTarget {
    #[serde(deserialize_with = "lenient")]
    disk_device: Option<String>,
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

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct FileVerdict {
    #[serde(deserialize_with = "lenient")]
    baseline_latency_ns: Option<f64>,
    #[serde(deserialize_with = "lenient")]
    knee_concurrency: Option<f64>,
    #[serde(deserialize_with = "lenient")]
    max_useful_iops: Option<f64>,
    #[serde(deserialize_with = "lenient")]
    baseline_p95_ns: Option<f64>,
    #[serde(deserialize_with = "lenient")]
    overload_concurrency: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    knee_above: Option<u64>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct FileWorkload {
    #[serde(deserialize_with = "lenient")]
    pattern: Option<String>,
    #[serde(deserialize_with = "lenient")]
    block_size: Option<u64>,
    /// The gentle mode's limits, when the sweep had any (an object; absent or null: none).
    #[serde(deserialize_with = "lenient")]
    limits: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A value of type T, or None when the file holds something else there (null, another type).
fn lenient<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Either<T> {
        Is(T),
        Other(serde::de::IgnoredAny),
    }
    Ok(match <Either<T> as serde::Deserialize>::deserialize(d)? {
        Either::Is(v) => Some(v),
        Either::Other(_) => None,
    })
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

/// The file a profile of `id` for `dir` is saved in: `<id>.read.json` for reads (and mixed
/// sweeps, whose baseline covers both), `<id>.write.json` for writes, so both can exist.
/// `<id>.json` is the name profiles had before they had a direction ([`LEGACY`]).
pub fn profile_file(id: &str, dir: Direction) -> String {
    let stem = file_stem(id);
    match dir {
        Direction::Write => format!("{stem}.write.json"),
        Direction::Read | Direction::Mixed => format!("{stem}.read.json"),
    }
}

/// The id made a plain file name (an id may come from a recording's identity line:
/// `../../tmp/x` must not leave the directory).
fn file_stem(id: &str) -> String {
    let stem = sanitize(id);
    if stem.is_empty() || stem.starts_with('.') {
        format!("_{stem}")
    } else {
        stem
    }
}

/// The file name of a profile saved before profiles had a direction: it loads as a read
/// profile (or as its pattern says) that also judges writes, as it always did.
pub fn legacy_file(id: &str) -> String {
    format!("{}.json", file_stem(id))
}

/// How to give `dev` (a kernel name, or "DEVICE") a profile, as every notice that points at a
/// sweep says it: the default sweep of a device is read-only (random 4 KiB reads), so it is
/// the right first command; on a busy production disk the gentle mode (a few requests in
/// flight, a cap on the IOPS added), a twin's or the model's profile, or the baseline learned
/// from the traffic. Writes need a spare device ([`how_to_measure_writes`]) and are never
/// suggested for the device itself.
pub fn how_to_measure(dev: &str) -> String {
    format!(
        "Measure it once (read-only): `iosat sweep /dev/{dev} --save-profile`; on a busy \
production disk gently (`--max-concurrency 8 --rate-limit 1000`), or import a twin's profile \
(`iosat profile import FILE --for /dev/{dev}`, `--model` for every disk of its model), or let \
iosat learn the baseline from the traffic."
    )
}

/// How to get a write profile: a write sweep destroys data, so only on a spare device (a twin
/// of the same model), whose profile is then imported for `dev`.
pub fn how_to_measure_writes(dev: &str) -> String {
    format!(
        "A write profile needs a spare device of the same model (a write sweep overwrites it): \
`iosat sweep /dev/SPARE --pattern randwrite --json -o w.json`, then `iosat profile import \
w.json --for /dev/{dev}`."
    )
}

/// The file names a profile of `id` is looked for under, in order: the read profile, the
/// write profile, the file of before profiles had a direction.
pub fn files_for(id: &str) -> Vec<String> {
    vec![
        profile_file(id, Direction::Read),
        profile_file(id, Direction::Write),
        legacy_file(id),
    ]
}

/// A device's profile and where it was found (a file path, or the id a `stat --json` line
/// carried).
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub profile: std::sync::Arc<DeviceProfile>,
    pub path: String,
}

/// Where device profiles come from for the recording page (`iosat report`, `stat --html`):
/// the files through [`ProfileCache`], nothing in tests.
pub trait ProfileLookup {
    /// The profile saved under `id`, or why there is none (said on the page).
    fn by_id(&mut self, id: &str) -> Result<Found, String>;
    /// The profile id of a device present on this machine, for recordings made before `I`
    /// lines existed.
    fn live_id(&mut self, major: u32, minor: u32, name: &str) -> Option<String>;
}

/// No profiles at all (`--no-profile`, tests): every lookup fails with the given reason.
pub struct NoProfiles(pub String);

impl ProfileLookup for NoProfiles {
    fn by_id(&mut self, _: &str) -> Result<Found, String> {
        Err(self.0.clone())
    }
    fn live_id(&mut self, _: u32, _: u32, _: &str) -> Option<String> {
        None
    }
}

/// The own profile directory (where profiles are saved) from an explicit choice or the
/// environment: root's beside its learned state (`/var/lib/iosat/profiles`), a user's in the
/// XDG state directory.
pub fn profile_dir(
    explicit: Option<&Path>,
    is_root: bool,
    xdg_state_home: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    if is_root {
        return Some(PathBuf::from(ROOT_PROFILE_DIR));
    }
    user_profile_dir(xdg_state_home, home)
}

/// Root's own profile directory, beside its learned state (/var/lib/iosat).
pub const ROOT_PROFILE_DIR: &str = "/var/lib/iosat/profiles";

/// The directory configuration management ships profiles to, read-only, read by default.
pub const SHARED_PROFILE_DIR: &str = "/etc/iosat/profiles";

fn user_profile_dir(xdg_state_home: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    if let Some(x) = xdg_state_home.filter(|s| !s.is_empty()) {
        return Some(Path::new(x).join("iosat").join("profiles"));
    }
    home.filter(|s| !s.is_empty())
        .map(|h| Path::new(h).join(".local/state/iosat/profiles"))
}

/// What a directory of the search is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DirRole {
    /// Where this user's (root's) profiles are saved.
    Own,
    /// Root's profiles before they moved beside the learned state (~/.local/state/iosat/
    /// profiles): still read, and said so.
    Old,
    /// Read-only, e.g. shipped by configuration management (/etc/iosat/profiles), or a
    /// further `--profile-dir`.
    Shared,
}

/// The directories profiles are looked for in, in search order: an exact id is looked for in
/// each in turn, then a model profile in each in turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileDirs {
    pub dirs: Vec<(PathBuf, DirRole)>,
}

impl From<Option<PathBuf>> for ProfileDirs {
    /// One directory, this user's (tests, a single `--profile-dir`).
    fn from(own: Option<PathBuf>) -> ProfileDirs {
        ProfileDirs {
            dirs: own.map(|d| (d, DirRole::Own)).into_iter().collect(),
        }
    }
}

impl ProfileDirs {
    /// Where profiles are saved (None: no directory could be named).
    pub fn own(&self) -> Option<&Path> {
        self.dirs
            .iter()
            .find(|(_, r)| *r == DirRole::Own)
            .map(|(d, _)| d.as_path())
    }

    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    /// The directories as one line: "/var/lib/iosat/profiles, /etc/iosat/profiles (shared)".
    pub fn describe(&self) -> String {
        self.dirs
            .iter()
            .map(|(d, r)| match r {
                DirRole::Own => d.display().to_string(),
                DirRole::Old => format!("{} (old location)", d.display()),
                DirRole::Shared => format!("{} (shared)", d.display()),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Pure: the search order. The own directory: the first `explicit` (`--profile-dir`,
/// repeatable; the others are read after it), else $IOSAT_PROFILE_DIR, else [`profile_dir`];
/// for root without either, the old user location after it; then always the shared ones:
/// `$IOSAT_PROFILE_DIRS` (colon-separated; set and empty: none), else [`SHARED_PROFILE_DIR`]
/// (so an exporter unit that names its own directory still reads what configuration
/// management ships).
pub fn search_dirs(
    explicit: &[PathBuf],
    env_own: Option<&Path>,
    env_shared: Option<&str>,
    is_root: bool,
    xdg_state_home: Option<&str>,
    home: Option<&str>,
) -> ProfileDirs {
    let mut dirs: Vec<(PathBuf, DirRole)> = Vec::new();
    let mut push = |d: PathBuf, r: DirRole| {
        if !dirs.iter().any(|(x, _)| *x == d) {
            dirs.push((d, r));
        }
    };
    if let Some((own, more)) = explicit.split_first() {
        push(own.clone(), DirRole::Own);
        for d in more {
            push(d.clone(), DirRole::Shared);
        }
    } else if let Some(own) = profile_dir(env_own, is_root, xdg_state_home, home) {
        push(own, DirRole::Own);
    }
    if explicit.is_empty() && env_own.is_none() && is_root {
        if let Some(old) = user_profile_dir(xdg_state_home, home) {
            push(old, DirRole::Old);
        }
    }
    match env_shared {
        Some(list) => {
            for d in list.split(':').filter(|d| !d.is_empty()) {
                push(PathBuf::from(d), DirRole::Shared);
            }
        }
        None => push(PathBuf::from(SHARED_PROFILE_DIR), DirRole::Shared),
    }
    ProfileDirs { dirs }
}

/// What identifies a device across reboots and renames, best first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub wwid: Option<String>,
    pub serial: Option<String>,
    pub model: Option<String>,
    pub size_bytes: Option<u64>,
    /// The kernel name (last resort, not stable across reboots).
    pub name: String,
}

fn sanitize(s: &str) -> String {
    let mut out: String = s
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    while out.contains("__") {
        out = out.replace("__", "_");
    }
    out.trim_matches('_').to_string()
}

/// The profile id: wwid, else serial, else model + size, else name + size.
pub fn profile_id(id: &Identity) -> String {
    let nonempty = |s: &Option<String>| s.as_deref().map(sanitize).filter(|s| !s.is_empty());
    if let Some(w) = nonempty(&id.wwid) {
        return w;
    }
    if let Some(s) = nonempty(&id.serial) {
        return format!("serial-{s}");
    }
    let size = id.size_bytes.map(|b| format!("-{b}")).unwrap_or_default();
    match nonempty(&id.model) {
        Some(m) => format!("{m}{size}"),
        None => format!("{}{size}", sanitize(&id.name)),
    }
}

/// Thin IO: the identity attributes (`wwid`, `serial`, also under `device/`) of a block device
/// whose sysfs directory is `sysfs_dir` (from `sys::device::sysfs_dir`).
pub fn read_identity(
    sysfs_dir: &Path,
    name: &str,
    model: Option<String>,
    size_bytes: Option<u64>,
) -> Identity {
    let rd = |rel: &str| {
        std::fs::read_to_string(sysfs_dir.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    Identity {
        wwid: rd("wwid").or_else(|| rd("device/wwid")),
        serial: rd("serial").or_else(|| rd("device/serial")),
        model,
        size_bytes,
        name: name.to_string(),
    }
}

/// The profile id of a block device from sysfs (None when it is not in sysfs).
pub fn device_id(root: &Root, dev: &BlockDev) -> Option<String> {
    let dir = device::sysfs_dir(root, dev)?;
    let q = device::queue_info(root, dev);
    Some(profile_id(&read_identity(
        &dir,
        &dev.name,
        q.model,
        q.size_bytes,
    )))
}

/// Pure: the numbers `stat` needs from a saved sweep report (`verdict.baseline_latency_ns`,
/// `knee_concurrency`, `max_useful_iops`; `workload.pattern`, `block_size`).
pub fn parse_profile(id: &str, json: &str) -> std::result::Result<DeviceProfile, String> {
    let file: ProfileFile = serde_json::from_str(json).map_err(|e| {
        if e.is_data() {
            "expected a sweep report with a 'verdict' object".to_string()
        } else {
            format!("not JSON ({e})")
        }
    })?;
    let verdict = file
        .verdict
        .ok_or("expected a sweep report with a 'verdict' object")?;
    let positive = |v: Option<f64>, k: &str| {
        v.filter(|x| x.is_finite() && *x > 0.0)
            .ok_or(format!("expected a positive number at verdict.{k}"))
    };
    let baseline_latency_ns = positive(verdict.baseline_latency_ns, "baseline_latency_ns")?;
    let knee = positive(verdict.knee_concurrency, "knee_concurrency")?;
    let max_useful_iops = positive(verdict.max_useful_iops, "max_useful_iops")?;
    let w = file.workload.unwrap_or_default();
    let pattern = w.pattern.unwrap_or_else(|| "unknown".into());
    Ok(DeviceProfile {
        id: id.to_string(),
        baseline_latency_ns,
        knee_concurrency: knee as u32,
        max_useful_iops,
        direction: Direction::of_pattern(&pattern),
        write: None,
        legacy: false,
        device_state: file.device_state,
        changed_since: Vec::new(),
        device: file
            .saved_for
            .or_else(|| file.target.and_then(|t| t.disk_device)),
        imported: file.imported,
        host: file.host.filter(|h| !h.is_empty()),
        model_profile: file.model_profile,
        baseline_p95_ns: verdict
            .baseline_p95_ns
            .filter(|x| x.is_finite() && *x > 0.0),
        overload_concurrency: verdict.overload_concurrency.map(|c| c as u32),
        knee_at_least: verdict.knee_above.map(|c| c as u32),
        gentle: w.limits.as_ref().is_some_and(|l| !l.is_empty()),
        measured_unix_s: file.started_unix_s,
        pattern,
        block_size: w.block_size.unwrap_or(0),
    })
}

/// The profiles of `id` in `dir`, both directions: `<id>.read.json` (else the older
/// `<id>.json`, by its pattern) with `<id>.write.json` attached as its write part; the write
/// profile alone when only it is saved. Ok(None) when neither exists; a Parse error
/// naming the file when one is not a usable sweep report.
pub fn load(dir: &Path, id: &str) -> Result<Option<DeviceProfile>> {
    let main = match load_file(&dir.join(profile_file(id, Direction::Read)), id)? {
        Some(p) => Some(p),
        None => {
            load_file(&dir.join(legacy_file(id)), id)?.map(|p| DeviceProfile { legacy: true, ..p })
        }
    };
    let write = load_file(&dir.join(profile_file(id, Direction::Write)), id)?;
    Ok(match (main, write) {
        (Some(mut m), Some(w)) if m.direction != Direction::Write => {
            m.write = Some(Box::new(w));
            Some(m)
        }
        // An old `<id>.json` of a write sweep: the write file saved since wins.
        (Some(_), Some(w)) => Some(w),
        (m, w) => m.or(w),
    })
}

/// One profile file: Ok(None) when it does not exist.
fn load_file(path: &Path, id: &str) -> Result<Option<DeviceProfile>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let path = path.to_path_buf();
    // O_NONBLOCK and a regular-file check: a FIFO or device put there never blocks a read.
    let mut f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Err(Error::io(
            &path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "is not a regular file"),
        ));
    }
    let mut text = String::new();
    f.read_to_string(&mut text)
        .map_err(|e| Error::io(&path, e))?;
    parse_profile(id, &text)
        .map(Some)
        .map_err(|reason| Error::Parse {
            path,
            line: 1,
            reason,
        })
}

/// Write the sweep report `json` as the profile of its direction (`<dir>/<id>.json` for
/// reads, `<id>.write.json` for writes: see [`profile_file`]), via a temporary file and
/// rename, so a reader never sees half a profile. Returns the path written.
pub fn save(dir: &Path, id: &str, json: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let pattern = serde_json::from_str::<ProfileFile>(json)
        .ok()
        .and_then(|f| f.workload?.pattern)
        .unwrap_or_default();
    let path = dir.join(profile_file(id, Direction::of_pattern(&pattern)));
    crate::sys::fs::replace_file(&path, json.as_bytes())?;
    Ok(path)
}

/// One profile file of the directory, as `iosat profile list` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Listed {
    pub id: String,
    /// The direction the profile judges (from its swept pattern, as its file name says).
    pub direction: Direction,
    pub path: PathBuf,
    pub profile: DeviceProfile,
}

/// The id and direction a file name stands for, when it is a profile file's name.
fn parse_file_name(name: &str) -> Option<(String, bool)> {
    let stem = name.strip_suffix(".json")?;
    let (id, legacy) = match stem.strip_suffix(".read").or(stem.strip_suffix(".write")) {
        Some(id) => (id, false),
        None => (stem, true),
    };
    (!id.is_empty() && !id.starts_with('.')).then(|| (id.to_string(), legacy))
}

/// Every iosat profile in `dir`, by id then direction; files that are not profiles (not
/// named like one, not a sweep report with a verdict) are skipped, so `rm` and `list` never
/// touch them. A missing directory has none.
pub fn list(dir: &Path) -> Result<Vec<Listed>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((id, legacy)) = parse_file_name(&name) else {
            continue;
        };
        let path = entry.path();
        let Ok(Some(p)) = load_file(&path, &id) else {
            continue;
        };
        out.push(Listed {
            id,
            direction: p.direction,
            path,
            profile: DeviceProfile { legacy, ..p },
        });
    }
    out.sort_by(|a, b| (a.id.as_str(), a.direction as u8).cmp(&(b.id.as_str(), b.direction as u8)));
    Ok(out)
}

/// The profile files of `id` in `dir` (only ones that are iosat profiles), optionally of one
/// direction.
pub fn files_of(dir: &Path, id: &str, only: Option<Direction>) -> Result<Vec<Listed>> {
    Ok(list(dir)?
        .into_iter()
        .filter(|l| {
            l.id == id
                && only.map_or(true, |d| {
                    l.direction == d || (d == Direction::Read && l.direction == Direction::Mixed)
                })
        })
        .collect())
}

/// Why a device has no profile.
#[derive(Debug, Clone, PartialEq)]
enum Missing {
    /// No directory to look in.
    NoDir,
    /// No file of the id in any directory (described), and no model profile matched.
    NotSaved(String),
    /// A file is there but unreadable or not a sweep report.
    Unreadable(String),
}

/// A model profile of one of the directories: where, its id, what it matches.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelProfile {
    pub dir: PathBuf,
    pub id: String,
    pub key: ModelKey,
}

/// Device profiles by id, each file read once, for every command that judges devices
/// against their profiles (`stat`, `top`, `report`, `info`, the exporter): the device's own
/// profile (its exact id) in each directory in turn, else a model profile it matches. An
/// unreadable profile is one warning (taken with [`ProfileCache::take_warnings`]), then the
/// device is shown without one.
#[derive(Debug)]
pub struct ProfileCache {
    dirs: ProfileDirs,
    root: Root,
    cache: HashMap<String, std::result::Result<Found, Missing>>,
    warnings: Vec<String>,
    /// The state of devices of this machine by profile id, learnt in [`Self::device_id`], to
    /// tell a profile older than the device's last change.
    live: HashMap<String, DeviceState>,
    /// The model key of devices of this machine by profile id (from [`Self::device_id`]).
    keys: HashMap<String, ModelKey>,
    /// The model profiles of every directory, listed once when first needed.
    models: Option<Vec<ModelProfile>>,
}

impl ProfileCache {
    /// Profiles in `dirs` (none: there are none); devices are identified under `root`.
    pub fn new(dirs: impl Into<ProfileDirs>, root: Root) -> ProfileCache {
        ProfileCache {
            dirs: dirs.into(),
            root,
            cache: HashMap::new(),
            warnings: Vec::new(),
            live: HashMap::new(),
            keys: HashMap::new(),
            models: None,
        }
    }

    fn lookup(&mut self, id: &str) -> &std::result::Result<Found, Missing> {
        if !self.cache.contains_key(id) {
            let found = self.resolve(id);
            self.cache.insert(id.to_string(), found);
        }
        &self.cache[id]
    }

    /// The profile of `id`: its own in each directory in turn, else the first model profile
    /// its device matches.
    fn resolve(&mut self, id: &str) -> std::result::Result<Found, Missing> {
        if self.dirs.is_empty() {
            return Err(Missing::NoDir);
        }
        let mut unreadable = None;
        let dirs = self.dirs.dirs.clone();
        for (dir, role) in &dirs {
            match load(dir, id) {
                Ok(Some(p)) => {
                    if *role == DirRole::Old {
                        self.warnings.push(format!(
                            "profile {id} read from the old location {}: root's profiles now live \
in {ROOT_PROFILE_DIR}; move it there",
                            dir.display()
                        ));
                    }
                    return Ok(self.found(dir, id, p));
                }
                Ok(None) => {}
                Err(e) => {
                    self.warnings.push(format!("profile ignored: {e}"));
                    unreadable.get_or_insert(e.to_string());
                }
            }
        }
        if let Some(m) = self.model_match(id) {
            match load(&m.dir, &m.id) {
                Ok(Some(p)) => return Ok(self.found(&m.dir, id, p)),
                Ok(None) => {}
                Err(e) => {
                    self.warnings.push(format!("profile ignored: {e}"));
                    unreadable.get_or_insert(e.to_string());
                }
            }
        }
        Err(match unreadable {
            Some(e) => Missing::Unreadable(e),
            None => Missing::NotSaved(self.dirs.describe()),
        })
    }

    /// A loaded profile judging the device of `id`, with how the device changed since.
    fn found(&self, dir: &Path, id: &str, mut p: DeviceProfile) -> Found {
        if let (Some(then), Some(now)) = (&p.device_state, self.live.get(id)) {
            p.changed_since = now.changes_since(then);
        }
        let file = if p.legacy {
            legacy_file(&p.id)
        } else {
            profile_file(&p.id, p.direction)
        };
        Found {
            path: dir.join(file).display().to_string(),
            profile: Arc::new(p),
        }
    }

    /// The model profiles of every directory, in search order (listed once).
    pub fn model_profiles(&mut self) -> &[ModelProfile] {
        if self.models.is_none() {
            let mut all: Vec<ModelProfile> = Vec::new();
            for (dir, _) in &self.dirs.dirs {
                for l in list(dir).unwrap_or_default() {
                    let Some(key) = l.profile.model_profile.clone() else {
                        continue;
                    };
                    if !all.iter().any(|m| m.dir == *dir && m.id == l.id) {
                        all.push(ModelProfile {
                            dir: dir.clone(),
                            id: l.id,
                            key,
                        });
                    }
                }
            }
            self.models = Some(all);
        }
        self.models.as_deref().unwrap_or_default()
    }

    /// For a device known by `id` only (a recording's `I` line: no model facts), when it has
    /// no profile of its own and model profiles exist: that they cannot be matched, in one
    /// line. None when it has a profile or no model profile exists.
    pub fn model_facts_missing(&mut self, id: &str) -> Option<String> {
        if self.keys.contains_key(id)
            || self.profile(id).is_some()
            || self.model_profiles().is_empty()
        {
            return None;
        }
        Some(format!(
            "no profile {id}; the recording holds the device's id only, not the model facts \
(model, firmware, size, block sizes, rotational, scheduler) a model profile in {} is matched by",
            self.dirs.describe()
        ))
    }

    /// The first model profile the device of `id` matches (None: its key is unknown, or none
    /// matches).
    pub fn model_match(&mut self, id: &str) -> Option<ModelProfile> {
        let key = self.keys.get(id)?.clone();
        self.model_profiles().iter().find(|m| m.key == key).cloned()
    }

    /// The model key of the device of `id`, when [`Self::device_id`] read it.
    pub fn model_key(&self, id: &str) -> Option<&ModelKey> {
        self.keys.get(id)
    }

    /// The profile saved under `id`, for the stat engine (None when there is none).
    pub fn profile(&mut self, id: &str) -> Option<Arc<DeviceProfile>> {
        self.lookup(id)
            .as_ref()
            .ok()
            .map(|f| Arc::clone(&f.profile))
    }

    /// The profile judging `dev`, whose profile id the caller knows (`id`): its state and model
    /// key are read once per cache, so a model profile can match it (the exporter's path).
    pub fn profile_for(&mut self, dev: &BlockDev, id: &str) -> Option<Arc<DeviceProfile>> {
        if !self.keys.contains_key(id) {
            self.live
                .insert(id.to_string(), DeviceState::read(&self.root, dev));
            self.keys
                .insert(id.to_string(), ModelKey::read(&self.root, dev));
        }
        self.profile(id)
    }

    /// The profile id of a device of this machine (None when it is not in sysfs); its
    /// current state and model key are remembered, to compare with the profile's and to
    /// match model profiles.
    pub fn device_id(&mut self, dev: &BlockDev) -> Option<String> {
        let id = device_id(&self.root, dev)?;
        self.live
            .insert(id.clone(), DeviceState::read(&self.root, dev));
        self.keys
            .insert(id.clone(), ModelKey::read(&self.root, dev));
        Some(id)
    }

    /// The directories profiles are looked for in, in order.
    pub fn dirs(&self) -> &ProfileDirs {
        &self.dirs
    }

    /// Warnings about unreadable profiles since the last call.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

impl ProfileLookup for ProfileCache {
    fn by_id(&mut self, id: &str) -> std::result::Result<Found, String> {
        self.lookup(id).clone().map_err(|m| match m {
            Missing::NoDir => "no profile directory (--profile-dir, $IOSAT_PROFILE_DIR, \
$XDG_STATE_HOME or $HOME)."
                .into(),
            Missing::NotSaved(dirs) => {
                format!("no profile {id}.json in {dirs}, and no model profile that matches.")
            }
            Missing::Unreadable(e) => format!("{e}."),
        })
    }

    fn live_id(&mut self, major: u32, minor: u32, name: &str) -> Option<String> {
        self.device_id(&BlockDev {
            major,
            minor,
            name: name.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_precedence() {
        assert_eq!(
            profile_dir(Some(Path::new("/x")), true, Some("/s"), Some("/h")),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(
            profile_dir(None, false, Some("/s"), Some("/h")),
            Some(PathBuf::from("/s/iosat/profiles"))
        );
        assert_eq!(
            profile_dir(None, false, Some(""), Some("/h")),
            Some(PathBuf::from("/h/.local/state/iosat/profiles"))
        );
        assert_eq!(profile_dir(None, false, None, None), None);
        // Root's beside its learned state (/var/lib/iosat), whatever its environment says.
        assert_eq!(
            profile_dir(None, true, Some("/s"), Some("/root")),
            Some(PathBuf::from("/var/lib/iosat/profiles"))
        );
    }

    /// The search order: the own directory, root's old one, the shared ones; an explicit
    /// `--profile-dir` list is exactly that list.
    #[test]
    fn search_order() {
        let paths = |d: ProfileDirs| {
            d.dirs
                .into_iter()
                .map(|(p, r)| (p.display().to_string(), r))
                .collect::<Vec<_>>()
        };
        use DirRole::*;
        assert_eq!(
            paths(search_dirs(&[], None, None, true, None, Some("/root"))),
            [
                ("/var/lib/iosat/profiles".into(), Own),
                ("/root/.local/state/iosat/profiles".into(), Old),
                ("/etc/iosat/profiles".into(), Shared),
            ]
        );
        assert_eq!(
            paths(search_dirs(
                &[],
                None,
                Some("/a::/b"),
                false,
                None,
                Some("/h")
            )),
            [
                ("/h/.local/state/iosat/profiles".into(), Own),
                ("/a".into(), Shared),
                ("/b".into(), Shared),
            ]
        );
        // $IOSAT_PROFILE_DIR names the own one (no old location); an empty
        // $IOSAT_PROFILE_DIRS: no shared one.
        assert_eq!(
            paths(search_dirs(
                &[],
                Some(Path::new("/p")),
                Some(""),
                true,
                None,
                Some("/root")
            )),
            [("/p".into(), Own)]
        );
        // --profile-dir names the own one and more to read; the shared one is still read.
        let explicit = [PathBuf::from("/x"), PathBuf::from("/y")];
        let d = search_dirs(&explicit, Some(Path::new("/p")), None, true, None, None);
        assert_eq!(d.own(), Some(Path::new("/x")));
        assert_eq!(
            paths(d),
            [
                ("/x".into(), Own),
                ("/y".into(), Shared),
                ("/etc/iosat/profiles".into(), Shared)
            ]
        );
        let d = search_dirs(&explicit[..1], None, Some(""), true, None, Some("/root"));
        assert_eq!(paths(d), [("/x".into(), Own)]);
    }

    #[test]
    fn id_precedence_and_sanitising() {
        let mut id = Identity {
            wwid: Some("eui.0025 3859 01a2/b".into()),
            serial: Some("S3X".into()),
            model: Some("Samsung SSD 970".into()),
            size_bytes: Some(1000),
            name: "nvme0n1".into(),
        };
        assert_eq!(profile_id(&id), "eui.0025_3859_01a2_b");
        id.wwid = None;
        assert_eq!(profile_id(&id), "serial-S3X");
        id.serial = Some("  ".into());
        assert_eq!(profile_id(&id), "Samsung_SSD_970-1000");
        id.model = None;
        assert_eq!(profile_id(&id), "nvme0n1-1000");
    }

    #[test]
    fn a_hostile_id_stays_a_plain_file_name_in_the_directory() {
        let d = Path::new("/p");
        let profile_path = |d: &Path, id: &str| d.join(legacy_file(id));
        for id in [
            "../../../../tmp/x",
            "/etc/passwd",
            "..",
            "",
            "a/../../b",
            ".hidden",
        ] {
            for p in [
                profile_path(d, id),
                d.join(profile_file(id, Direction::Read)),
                d.join(profile_file(id, Direction::Write)),
            ] {
                assert_eq!(p.parent(), Some(d), "{id} -> {}", p.display());
                let name = p.file_name().unwrap().to_str().unwrap();
                assert!(
                    !name.starts_with('.') && !name.contains('/'),
                    "{id} -> {name}"
                );
            }
        }
        assert_eq!(
            profile_path(d, "eui.0025_3859"),
            Path::new("/p/eui.0025_3859.json")
        );
    }

    #[test]
    fn a_fifo_in_place_of_a_profile_is_refused_not_waited_on() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("dev.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = load(t.path(), "dev").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn identity_from_a_sysfs_like_directory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("device")).unwrap();
        std::fs::write(d.path().join("device/wwid"), "naa.5000c500a1b2c3d4\n").unwrap();
        std::fs::write(d.path().join("serial"), "\n").unwrap();
        let id = read_identity(d.path(), "sda", Some("ST4000".into()), Some(4));
        assert_eq!(id.wwid.as_deref(), Some("naa.5000c500a1b2c3d4"));
        assert_eq!(id.serial, None, "blank serial is no serial");
        assert_eq!(profile_id(&id), "naa.5000c500a1b2c3d4");
    }

    #[test]
    fn profile_from_a_sweep_report() {
        let json = r#"{"schema_version":1,"kind":"sweep",
            "workload":{"pattern":"randread","block_size":4096},
            "verdict":{"baseline_latency_ns":120500.5,"knee_concurrency":16,"max_useful_iops":98000.0}}"#;
        let p = parse_profile("dev", json).unwrap();
        assert_eq!(p.baseline_latency_ns, 120500.5);
        assert_eq!(p.knee_concurrency, 16);
        assert_eq!(p.max_useful_iops, 98000.0);
        assert_eq!((p.pattern.as_str(), p.block_size), ("randread", 4096));
        let e = parse_profile("dev", r#"{"verdict":null}"#).unwrap_err();
        assert!(e.contains("'verdict'"), "{e}");
        let e = parse_profile("dev", r#"{"verdict":{"baseline_latency_ns":0}}"#).unwrap_err();
        assert!(e.contains("verdict.baseline_latency_ns"), "{e}");

        let d = tempfile::tempdir().unwrap();
        assert_eq!(load(d.path(), "none").unwrap(), None);
        std::fs::write(d.path().join("bad.json"), "{").unwrap();
        let e = load(d.path(), "bad").unwrap_err().to_string();
        assert!(e.contains("bad.json:1: not JSON"), "{e}");
    }

    fn sweep_json(pattern: &str, base_ns: f64) -> String {
        format!(
            r#"{{"workload":{{"pattern":"{pattern}","block_size":4096}},
            "verdict":{{"baseline_latency_ns":{base_ns},"knee_concurrency":4,"max_useful_iops":1000}}}}"#
        )
    }

    #[test]
    fn read_and_write_profiles_live_side_by_side() {
        let d = tempfile::tempdir().unwrap();
        let r = save(d.path(), "dev", &sweep_json("randread", 100_000.0)).unwrap();
        assert!(r.ends_with("dev.read.json"), "{}", r.display());
        let p = load(d.path(), "dev").unwrap().unwrap();
        assert_eq!(p.direction, Direction::Read);
        assert!(p.for_reads().is_some() && p.for_writes().is_none());
        let w = save(d.path(), "dev", &sweep_json("randwrite", 900_000.0)).unwrap();
        assert!(w.ends_with("dev.write.json"), "{}", w.display());
        let p = load(d.path(), "dev").unwrap().unwrap();
        assert_eq!(p.for_reads().unwrap().baseline_latency_ns, 100_000.0);
        assert_eq!(p.for_writes().unwrap().baseline_latency_ns, 900_000.0);
        // Only a write profile: reads have none.
        std::fs::remove_file(&r).unwrap();
        let p = load(d.path(), "dev").unwrap().unwrap();
        assert!(p.for_reads().is_none());
        assert_eq!(p.for_writes().unwrap().baseline_latency_ns, 900_000.0);
    }

    #[test]
    fn an_old_profile_file_loads_as_a_read_profile() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("dev.json"), sweep_json("randread", 100_000.0)).unwrap();
        let p = load(d.path(), "dev").unwrap().unwrap();
        assert!(p.legacy);
        assert_eq!(p.direction, Direction::Read);
        assert_eq!(p.for_reads().unwrap().baseline_latency_ns, 100_000.0);
        // A newer read profile takes its place; a write profile is attached to either.
        save(d.path(), "dev", &sweep_json("randread", 120_000.0)).unwrap();
        save(d.path(), "dev", &sweep_json("randwrite", 900_000.0)).unwrap();
        let p = load(d.path(), "dev").unwrap().unwrap();
        assert!(!p.legacy);
        assert_eq!(p.baseline_latency_ns, 120_000.0);
        assert_eq!(p.for_writes().unwrap().baseline_latency_ns, 900_000.0);
        let mut cache = ProfileCache::new(Some(d.path().to_path_buf()), Root::default());
        let found = cache.by_id("dev").unwrap();
        assert!(found.path.ends_with("dev.read.json"), "{}", found.path);
    }

    #[test]
    fn a_profile_older_than_the_device_s_change_is_told() {
        let base = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sysroot1");
        let root = Root {
            proc: PathBuf::from(base).join("proc"),
            sys: PathBuf::from(base).join("sys"),
        };
        let dev = BlockDev {
            major: 259,
            minor: 0,
            name: "nvme0n1".into(),
        };
        let now = DeviceState::read(&root, &dev);
        assert!(now.size_bytes.is_some(), "{now:?}");
        let id = device_id(&root, &dev).unwrap();
        let d = tempfile::tempdir().unwrap();
        // Saved when the device was half the size and ran another scheduler.
        let then = DeviceState {
            size_bytes: now.size_bytes.map(|b| b / 2),
            scheduler: Some("bfq".into()),
            model: now.model.clone(),
        };
        let report: serde_json::Value =
            serde_json::from_str(&sweep_json("randread", 100_000.0)).unwrap();
        let json = profile_json(&report, &then, &Extras::default());
        save(d.path(), &id, &json).unwrap();
        let p = load(d.path(), &id).unwrap().unwrap();
        assert_eq!(p.device_state.as_ref(), Some(&then));
        let mut cache = ProfileCache::new(Some(d.path().to_path_buf()), root);
        assert_eq!(cache.device_id(&dev).as_deref(), Some(id.as_str()));
        let p = cache.profile(&id).unwrap();
        assert!(
            p.changed_since[0].starts_with("size "),
            "{:?}",
            p.changed_since
        );
        if now.scheduler.is_some() {
            assert!(p
                .changed_since
                .iter()
                .any(|c| c.starts_with("scheduler bfq -> ")));
        }
        // The same state: nothing to say; a file without a state: nothing known.
        assert!(now.changes_since(&now).is_empty());
        assert!(now.changes_since(&DeviceState::default()).is_empty());
    }

    /// A profile file as iosat 0.1 saved it (the sweep report pretty-printed with sorted keys,
    /// `device_state` among them): every field `stat` uses still loads from it, so renaming
    /// one in the typed reader (or the report) fails here instead of disabling saved profiles.
    #[test]
    fn a_profile_saved_by_iosat_0_1_still_loads() {
        let d = tempfile::tempdir().unwrap();
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/profile/saved-0.1.read.json"
        );
        std::fs::copy(fixture, d.path().join("dev.read.json")).unwrap();
        let p = load(d.path(), "dev").unwrap().unwrap();
        assert_eq!(p.baseline_latency_ns, 8_001_536.0);
        assert_eq!(p.baseline_p95_ns, Some(8_003_583.0));
        assert_eq!(p.knee_concurrency, 4);
        assert_eq!(p.overload_concurrency, Some(16));
        assert_eq!(p.max_useful_iops, 500.0);
        assert_eq!((p.pattern.as_str(), p.block_size), ("randread", 4096));
        assert_eq!(p.direction, Direction::Read);
        assert_eq!(p.measured_unix_s, Some(1_795_336_333));
        let state = p.device_state.unwrap();
        assert_eq!(state.size_bytes, Some(1_000_204_886_016));
        assert_eq!(state.scheduler.as_deref(), Some("none"));
        assert_eq!(state.model.as_deref(), Some("Samsung SSD 980 PRO 1TB"));
        // What this iosat saves reads back the same: the fixture's report, with its state.
        let mut report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
        report.as_object_mut().unwrap().remove("device_state");
        let again =
            parse_profile("dev", &profile_json(&report, &state, &Extras::default())).unwrap();
        assert_eq!(again.baseline_p95_ns, p.baseline_p95_ns);
        assert_eq!(again.device_state, Some(state));
        // A field of another type reads as missing and is named; an array is no report.
        let e = parse_profile("dev", r#"{"verdict":{"baseline_latency_ns":"1"}}"#).unwrap_err();
        assert!(e.contains("verdict.baseline_latency_ns"), "{e}");
        let e = parse_profile("dev", "[1]").unwrap_err();
        assert!(e.contains("'verdict'"), "{e}");
        let p = parse_profile(
            "dev",
            r#"{"verdict":{"baseline_latency_ns":1,"knee_concurrency":2,"max_useful_iops":3,
                "overload_concurrency":2.5},"workload":{"block_size":"4k"},"device_state":7}"#,
        )
        .unwrap();
        assert_eq!((p.overload_concurrency, p.block_size), (None, 0));
        assert_eq!((p.pattern.as_str(), p.device_state), ("unknown", None));
    }

    /// The default sweep of a device is read-only: the advice says so, names the device, and
    /// offers a short sweep and an import, never a write sweep.
    #[test]
    fn the_advice_to_measure_is_read_only_and_names_the_device() {
        let a = how_to_measure("vda");
        assert!(
            a.contains("(read-only): `iosat sweep /dev/vda --save-profile`"),
            "{a}"
        );
        assert!(
            a.contains("`iosat profile import FILE --for /dev/vda`"),
            "{a}"
        );
        assert!(a.contains("--max-concurrency 8 --rate-limit"), "{a}");
        assert!(a.contains("learn"), "{a}");
        assert!(!a.contains("write"), "{a}");
        // Writes: only ever on a spare device.
        let w = how_to_measure_writes("vda");
        assert!(w.contains("/dev/SPARE --pattern randwrite"), "{w}");
        assert!(!w.contains("sweep /dev/vda"), "{w}");
    }

    #[test]
    fn atomic_write_replaces() {
        let d = tempfile::tempdir().unwrap();
        let p = save(d.path(), "dev", "{\"a\":1}").unwrap();
        save(d.path(), "dev", "{\"a\":2}").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"a\":2}");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
