//! Device profiles: where `--save-profile` stores a sweep result and under which id, so `stat` and
//! later commands can judge live numbers against the device's own curve; and the one cache of
//! loaded profiles by id ([`ProfileCache`]) that `stat`, `report` and `info` share. monitor/ and
//! report/ use its types.
//! Imports only: sys/, error.
//!
//! Location: `--profile-dir` / `$IOSAT_PROFILE_DIR`, else `$XDG_STATE_HOME/iosat/profiles`,
//! else `~/.local/state/iosat/profiles`; files `<id>.read.json` and `<id>.write.json` (older
//! files: `<id>.json`, loaded as read profiles) where id is the device's wwid, else its serial, else model + size (sanitised to
//! `[A-Za-z0-9._-]`).

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

/// The sweep `report` with the device's state beside it (key `device_state`), as [`save`]
/// stores it: `stat` then says when the device changed since the profile was measured.
pub fn profile_json<T: serde::Serialize>(report: &T, state: &DeviceState) -> String {
    #[derive(serde::Serialize)]
    struct WithState<'a, T> {
        #[serde(flatten)]
        report: &'a T,
        device_state: &'a DeviceState,
    }
    serde_json::to_string_pretty(&WithState {
        report,
        device_state: state,
    })
    .expect("a sweep report serialises")
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
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct FileWorkload {
    #[serde(deserialize_with = "lenient")]
    pattern: Option<String>,
    #[serde(deserialize_with = "lenient")]
    block_size: Option<u64>,
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
/// the right first command, short on a busy production disk; a twin's profile can be
/// imported instead. Writes need a spare device and are never the default.
pub fn how_to_measure(dev: &str) -> String {
    format!(
        "Measure it once (read-only): `iosat sweep /dev/{dev} --save-profile`; on a busy \
production disk a short one (`--levels 1,2,4 --duration 1s`), or import a twin's profile: \
`iosat profile import FILE --for /dev/{dev}`."
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

/// The profile directory from an explicit choice or the environment.
pub fn profile_dir(
    explicit: Option<&Path>,
    xdg_state_home: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    if let Some(x) = xdg_state_home.filter(|s| !s.is_empty()) {
        return Some(Path::new(x).join("iosat").join("profiles"));
    }
    home.filter(|s| !s.is_empty())
        .map(|h| Path::new(h).join(".local/state/iosat/profiles"))
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
        baseline_p95_ns: verdict
            .baseline_p95_ns
            .filter(|x| x.is_finite() && *x > 0.0),
        overload_concurrency: verdict.overload_concurrency.map(|c| c as u32),
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

/// Why a profile id has no profile.
#[derive(Debug, Clone, PartialEq)]
enum Missing {
    /// No directory to look in.
    NoDir,
    /// No `<id>.json` in the directory.
    NotSaved(PathBuf),
    /// The file is there but unreadable or not a sweep report.
    Unreadable(String),
}

/// Device profiles by id, each file read once, for every command that judges devices
/// against their profiles (`stat`, `report`, `info`). An unreadable profile is one warning
/// (taken with [`ProfileCache::take_warnings`]), then the device is shown without one.
#[derive(Debug)]
pub struct ProfileCache {
    dir: Option<PathBuf>,
    root: Root,
    cache: HashMap<String, std::result::Result<Found, Missing>>,
    warnings: Vec<String>,
    /// The state of devices of this machine by profile id, learnt in [`Self::device_id`], to
    /// tell a profile older than the device's last change.
    live: HashMap<String, DeviceState>,
}

impl ProfileCache {
    /// Profiles in `dir` (None: there are none); devices are identified under `root`.
    pub fn new(dir: Option<PathBuf>, root: Root) -> ProfileCache {
        ProfileCache {
            dir,
            root,
            cache: HashMap::new(),
            warnings: Vec::new(),
            live: HashMap::new(),
        }
    }

    fn lookup(&mut self, id: &str) -> &std::result::Result<Found, Missing> {
        let (dir, warnings, live) = (&self.dir, &mut self.warnings, &self.live);
        self.cache.entry(id.to_string()).or_insert_with(|| {
            let Some(dir) = dir else {
                return Err(Missing::NoDir);
            };
            match load(dir, id) {
                Ok(Some(mut p)) => {
                    if let (Some(then), Some(now)) = (&p.device_state, live.get(id)) {
                        p.changed_since = now.changes_since(then);
                    }
                    let file = if p.legacy {
                        legacy_file(id)
                    } else {
                        profile_file(id, p.direction)
                    };
                    Ok(Found {
                        path: dir.join(file).display().to_string(),
                        profile: Arc::new(p),
                    })
                }
                Ok(None) => Err(Missing::NotSaved(dir.clone())),
                Err(e) => {
                    warnings.push(format!("profile ignored: {e}"));
                    Err(Missing::Unreadable(e.to_string()))
                }
            }
        })
    }

    /// The profile saved under `id`, for the stat engine (None when there is none).
    pub fn profile(&mut self, id: &str) -> Option<Arc<DeviceProfile>> {
        self.lookup(id)
            .as_ref()
            .ok()
            .map(|f| Arc::clone(&f.profile))
    }

    /// The profile id of a device of this machine (None when it is not in sysfs); its
    /// current state is remembered to compare with the profile's.
    pub fn device_id(&mut self, dev: &BlockDev) -> Option<String> {
        let id = device_id(&self.root, dev)?;
        self.live
            .insert(id.clone(), DeviceState::read(&self.root, dev));
        Some(id)
    }

    /// The directory profiles are looked for in (None: none could be named).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
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
            Missing::NotSaved(dir) => format!("no profile {id}.json in {}.", dir.display()),
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
            profile_dir(Some(Path::new("/x")), Some("/s"), Some("/h")),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(
            profile_dir(None, Some("/s"), Some("/h")),
            Some(PathBuf::from("/s/iosat/profiles"))
        );
        assert_eq!(
            profile_dir(None, Some(""), Some("/h")),
            Some(PathBuf::from("/h/.local/state/iosat/profiles"))
        );
        assert_eq!(profile_dir(None, None, None), None);
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
        let json = profile_json(&report, &then);
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
        let again = parse_profile("dev", &profile_json(&report, &state)).unwrap();
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
        assert!(a.contains("--levels 1,2,4"), "{a}");
        assert!(!a.contains("write"), "{a}");
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
