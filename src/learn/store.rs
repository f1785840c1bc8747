//! The learned state on disk: one file per device, `<state dir>/learned/<id>.json`, keyed by
//! the device's identity (profile/'s id: wwid, serial, model + size; else the kernel name),
//! versioned (`schema_version`), written atomically (a temporary file in the same directory,
//! fsync, rename, fsync of the directory, once for all the devices a save writes: a crash
//! leaves the old state or the new, never half of one), and started again when the device
//! changed (its [`Fingerprint`]: size, model, scheduler, queue settings) or is another device
//! under the same name (its identity: a loop
//! device's backing file and inode, the kernel's diskseq within one boot, wwid, serial). The
//! state directory: `--state-dir`, else `/var/lib/iosat` for root, else
//! `$XDG_STATE_HOME/iosat`, else `~/.local/state/iosat`. A place others may have touched
//! (docs/design.md §5): files are opened `O_NOFOLLOW|O_NONBLOCK` and read only when regular
//! and at most [`MAX_STATE_BYTES`]; a file that does not make sense (another schema version,
//! a series without its buckets, a figure that is not finite or beyond any device) is set
//! aside (renamed, one warning) and learning starts again; `--forget` removes only files that
//! say iosat wrote them, never through a symlinked `learned/`; as root, a state directory
//! that others can write is refused. One learner per device at a time ([`Lock`]: an flock);
//! another run learning the same device judges with the state and takes over when the holder
//! ends, reloading what it saved, so every interval of the device is learned once. The only
//! IO of learn/; reads sysfs through sys/ only.
//! Imports only: error, sys/, profile, learn/model.rs.

use super::model::{DeviceModel, HIST_BINS, NBUCKETS};
use crate::error::Error;
use crate::profile::DeviceState;
use crate::sys::device::{self, BlockDev};
use crate::sys::Root;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The version of the state file's layout; a file of another version is started again.
pub const SCHEMA_VERSION: u32 = 1;

/// What about a device, when it changes, makes what was learned about it another device's: what
/// makes a swept profile stale (profile::DeviceState: size, scheduler, model) and the queue
/// settings that shape a learned curve besides.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Fingerprint {
    #[serde(flatten)]
    pub device: DeviceState,
    pub nr_requests: Option<u32>,
    pub rotational: Option<bool>,
    pub logical_block_size: Option<u32>,
    pub write_cache: Option<String>,
    /// Identity (issue 37): the kernel's diskseq and the boot it belongs to.
    pub diskseq: Option<u64>,
    pub boot_id: Option<String>,
    /// A loop device's backing file and that file's device:inode.
    pub backing_file: Option<String>,
    pub backing_inode: Option<String>,
    pub wwid: Option<String>,
    pub serial: Option<String>,
}

impl Fingerprint {
    /// Thin IO: the device's fingerprint from sysfs, in the boot `boot_id`
    /// ([`device::boot_id`], read once by the caller for all its devices). The device's sysfs
    /// directory is resolved once: at a thousand devices, resolving it for the queue and again
    /// for the identity was most of learning's cost at start.
    pub fn read(root: &Root, dev: &BlockDev, boot_id: Option<String>) -> Fingerprint {
        let dir = device::sysfs_dir(root, dev);
        let q = dir
            .as_deref()
            .map_or_else(device::QueueInfo::default, device::queue_info_in);
        let id = dir.as_deref().map_or_else(device::Identity::default, |d| {
            device::identity_in(d, boot_id)
        });
        Fingerprint {
            device: DeviceState::of(&q),
            nr_requests: q.nr_requests,
            rotational: q.rotational,
            logical_block_size: q.logical_block_size,
            write_cache: q.write_cache,
            diskseq: id.diskseq,
            boot_id: id.boot_id,
            backing_file: id.backing_file,
            backing_inode: id.backing_inode,
            wwid: id.wwid,
            serial: id.serial,
        }
    }

    /// Pure: what changed from `then` to `self`, in words (only what both know): the profile's
    /// own comparison, then the queue settings.
    pub fn changes_since(&self, then: &Fingerprint) -> Vec<String> {
        fn diff<T: PartialEq + std::fmt::Debug>(
            out: &mut Vec<String>,
            what: &str,
            a: &Option<T>,
            b: &Option<T>,
        ) {
            if let (Some(a), Some(b)) = (a, b) {
                if a != b {
                    out.push(format!("{what} {a:?} -> {b:?}"));
                }
            }
        }
        // Identity first: another device under the same name is the first thing to say.
        let mut out = self.identity_changes_since(then);
        out.extend(self.device.changes_since(&then.device));
        diff(
            &mut out,
            "nr_requests",
            &then.nr_requests,
            &self.nr_requests,
        );
        diff(&mut out, "rotational", &then.rotational, &self.rotational);
        diff(
            &mut out,
            "logical_block_size",
            &then.logical_block_size,
            &self.logical_block_size,
        );
        diff(
            &mut out,
            "write_cache",
            &then.write_cache,
            &self.write_cache,
        );
        out
    }

    /// Pure: whether the device is another one than the one learned, in words: a loop
    /// device over another backing file (or another file at the same path: its inode), a
    /// different wwid or serial, or, within one boot (diskseq is renumbered at boot), a
    /// different diskseq: a device created again under the same name.
    pub fn identity_changes_since(&self, then: &Fingerprint) -> Vec<String> {
        let mut out = Vec::new();
        let differ =
            |a: &Option<String>, b: &Option<String>| matches!((a, b), (Some(a), Some(b)) if a != b);
        if differ(&then.backing_file, &self.backing_file) {
            out.push(format!(
                "backing file {:?} -> {:?}",
                then.backing_file.as_deref().unwrap_or_default(),
                self.backing_file.as_deref().unwrap_or_default()
            ));
        } else if differ(&then.backing_inode, &self.backing_inode) {
            out.push(format!(
                "backing file {:?} is another file (inode {} -> {})",
                self.backing_file.as_deref().unwrap_or_default(),
                then.backing_inode.as_deref().unwrap_or_default(),
                self.backing_inode.as_deref().unwrap_or_default()
            ));
        }
        for (what, a, b) in [
            ("wwid", &then.wwid, &self.wwid),
            ("serial", &then.serial, &self.serial),
        ] {
            if differ(a, b) {
                out.push(format!(
                    "{what} {a:?} -> {b:?}",
                    a = a.as_deref().unwrap_or_default(),
                    b = b.as_deref().unwrap_or_default()
                ));
            }
        }
        let same_boot = matches!((&then.boot_id, &self.boot_id), (Some(a), Some(b)) if a == b);
        // A loop device set up again over the same file has a new diskseq but the same
        // contents: its backing file decides.
        let backed = self.backing_inode.is_some() && then.backing_inode.is_some();
        if let (true, false, Some(a), Some(b)) = (same_boot, backed, then.diskseq, self.diskseq) {
            if a != b {
                out.push(format!("created again (diskseq {a} -> {b})"));
            }
        }
        out
    }
}

/// What a state file carries to say iosat wrote it (`--forget` removes nothing else).
pub const WRITTEN_BY: &str = "iosat";

/// A state file is read only up to this size (a day of a busy device is under 64 KiB; a
/// larger file is not iosat's and is set aside, never read into memory).
pub const MAX_STATE_BYTES: u64 = 4 << 20;

/// No stored figure of a device comes near this (bytes moved in a week at 100 GB/s are
/// 6e16): anything larger, or not finite, or negative, is a file that does not make sense.
pub const MAX_FIGURE: f64 = 1e18;

#[derive(Debug, Serialize, Deserialize)]
struct StateFile {
    #[serde(default)]
    written_by: Option<String>,
    schema_version: u32,
    id: String,
    #[serde(default)]
    fingerprint: Option<Fingerprint>,
    model: DeviceModel,
}

/// The state directory from an explicit choice or the environment (None: nowhere to keep it).
pub fn state_dir(
    explicit: Option<&Path>,
    is_root: bool,
    xdg_state_home: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| crate::profile::state_home(is_root, xdg_state_home, home))
}

fn file_name(key: &str) -> String {
    let safe = crate::profile::file_safe(key);
    // Never a hidden or relative name ('.', '..'): those start with a dot.
    format!("{}.json", safe.trim_start_matches('.'))
}

/// The directory of the per-device files.
pub fn learned_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("learned")
}

/// The file of a device's state.
pub fn path_of(state_dir: &Path, key: &str) -> PathBuf {
    learned_dir(state_dir).join(file_name(key))
}

/// The state saved for `key`, and a line when it is not used (another device or its
/// settings changed; a file that does not make sense, which is set aside). Ok((None, None))
/// when there is none. Err: the state directory cannot be used (refused as root, unreadable).
pub fn load(
    state_dir: &Path,
    key: &str,
    now: Option<&Fingerprint>,
) -> Result<(Option<DeviceModel>, Option<String>), Error> {
    check_dir(state_dir)?;
    let path = path_of(state_dir, key);
    let bytes = match read_bounded(&path) {
        Ok(None) => return Ok((None, None)),
        Ok(Some(b)) => b,
        Err(Unusable::Bad(reason)) => return Ok((None, Some(set_aside(&path, &reason)))),
        Err(Unusable::Io(e)) => return Err(Error::io(&path, e)),
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(_) => return Ok((None, Some(set_aside(&path, "not UTF-8 text")))),
    };
    match parse(&text, key, now) {
        Ok(loaded) => Ok(loaded),
        Err(reason) => Ok((None, Some(set_aside(&path, &reason)))),
    }
}

/// Why a file at a state path is not read.
enum Unusable {
    /// Not a regular file, too large, a symlink: set aside.
    Bad(String),
    Io(std::io::Error),
}

/// Open flags for anything in the state directory: never through a symlink, never blocked
/// by a FIFO (`open` of a FIFO without a writer would wait with the stop signals caught).
const SAFE_OPEN: libc::c_int = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;

/// Thin IO: the bytes of a state file, when it is a regular file of at most
/// [`MAX_STATE_BYTES`]; None when there is nothing at `path`.
fn read_bounded(path: &Path) -> Result<Option<Vec<u8>>, Unusable> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(SAFE_OPEN)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(Unusable::Bad("a symlink (never followed)".into()))
        }
        Err(e) => return Err(Unusable::Io(e)),
    };
    read_open(f).map(Some)
}

/// The bytes of an open file once it is known to be regular and small enough.
fn read_open(f: std::fs::File) -> Result<Vec<u8>, Unusable> {
    use std::io::Read;
    let meta = f.metadata().map_err(Unusable::Io)?;
    if !meta.is_file() {
        return Err(Unusable::Bad(format!(
            "not a regular file ({})",
            kind_of(&meta.file_type())
        )));
    }
    if meta.len() > MAX_STATE_BYTES {
        return Err(Unusable::Bad(format!(
            "{} bytes, more than a state file ever holds ({MAX_STATE_BYTES})",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    f.take(MAX_STATE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(Unusable::Io)?;
    if bytes.len() as u64 > MAX_STATE_BYTES {
        return Err(Unusable::Bad(
            "grew beyond a state file's size while read".into(),
        ));
    }
    Ok(bytes)
}

fn kind_of(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// Rename a state file that does not make sense out of the way (`<name>.set-aside-<time>`),
/// so that learning starts again and the file stays for whoever wants to look; the warning
/// line says where it went.
fn set_aside(path: &Path, reason: &str) -> String {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let to = path.with_file_name(format!("{name}.set-aside-{stamp}-{}", std::process::id()));
    match std::fs::rename(path, &to) {
        Ok(()) => format!(
            "learned state {}: {reason}; set aside as {}: learning starts again",
            path.display(),
            to.display()
        ),
        Err(e) => format!(
            "learned state {}: {reason}; not used (could not set it aside: {e}): learning \
             starts again",
            path.display()
        ),
    }
}

/// Pure: a state file's text, judged against the device's fingerprint now: the model, or
/// None and why (the device changed: learning starts again); Err: the file does not make
/// sense (another schema version, not a state file, a figure no device has).
pub fn parse(
    text: &str,
    key: &str,
    now: Option<&Fingerprint>,
) -> Result<(Option<DeviceModel>, Option<String>), String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let version = v.get("schema_version").and_then(|x| x.as_u64());
    if version != Some(u64::from(SCHEMA_VERSION)) {
        return Err(format!(
            "schema version {} (this iosat reads {SCHEMA_VERSION})",
            version.map_or("unknown".to_string(), |v| v.to_string())
        ));
    }
    let f: StateFile = serde_json::from_value(v).map_err(|e| e.to_string())?;
    validate(&f.model)?;
    if let (Some(then), Some(now)) = (&f.fingerprint, now) {
        let changes = now.changes_since(then);
        if !changes.is_empty() {
            return Ok((
                None,
                Some(format!(
                    "{key}: the device changed since it was learned ({}): learning starts again",
                    changes.join(", ")
                )),
            ));
        }
    }
    Ok((Some(f.model), None))
}

/// Pure: does a loaded model make sense? Every series has its [`NBUCKETS`] buckets and
/// appears once; every figure is finite, not negative and below [`MAX_FIGURE`]; histogram
/// bins are in range and ascending. What the estimator and the judgement may assume of a
/// model they are given.
pub fn validate(m: &DeviceModel) -> Result<(), String> {
    let ok = |what: &str, x: f64| {
        if x.is_finite() && (0.0..=MAX_FIGURE).contains(&x) {
            Ok(())
        } else {
            Err(format!("{what} is {x}, which no device has"))
        }
    };
    ok("seconds_seen", m.seconds_seen)?;
    ok("intervals_seen", m.intervals_seen as f64)?;
    let mut seen = Vec::new();
    for s in &m.series {
        let name = format!("series {} {}", s.dir.as_str(), s.size_class.as_str());
        if seen.contains(&(s.dir, s.size_class)) {
            return Err(format!("{name} appears twice"));
        }
        seen.push((s.dir, s.size_class));
        if s.buckets.len() != NBUCKETS {
            return Err(format!(
                "{name} has {} in-flight buckets, not {NBUCKETS}",
                s.buckets.len()
            ));
        }
        for (i, b) in s.buckets.iter().enumerate() {
            let at = |f: &str| format!("{name} bucket {i} {f}");
            for (f, x) in [
                ("intervals", b.intervals),
                ("intervals_sq", b.intervals_sq),
                ("requests", b.requests),
                ("seconds", b.seconds),
                ("busy_ms", b.busy_ms),
                ("bytes", b.bytes),
                ("lat_ms", b.lat_ms),
                ("lat_ms_sq", b.lat_ms_sq),
                ("pct_requests", b.pct_requests),
                ("max_iops", b.max_iops),
            ] {
                ok(&at(f), x)?;
            }
            let mut last = None;
            for &(bin, w) in &b.hist {
                if usize::from(bin) >= HIST_BINS || last.is_some_and(|l| l >= bin) {
                    return Err(format!(
                        "{} has bin {bin} out of order or range",
                        at("hist")
                    ));
                }
                last = Some(bin);
                ok(&at("hist"), f64::from(w))?;
            }
        }
    }
    Ok(())
}

/// Pure: the text of a state file.
pub fn render(key: &str, fp: Option<&Fingerprint>, model: &DeviceModel) -> String {
    let f = StateFile {
        written_by: Some(WRITTEN_BY.to_string()),
        schema_version: SCHEMA_VERSION,
        id: key.to_string(),
        fingerprint: fp.cloned(),
        model: model.compacted(),
    };
    serde_json::to_string(&f).expect("a plain struct serialises")
}

/// Save the state of `key` atomically: a [`Saving`] of one device.
pub fn save(
    state_dir: &Path,
    key: &str,
    fp: Option<&Fingerprint>,
    model: &DeviceModel,
) -> Result<(), Error> {
    let mut saving = Saving::start(state_dir)?;
    saving.save(key, fp, model)?;
    saving.finish()
}

/// Saving many devices' state, each atomically as [`save`] saves one, with the directory
/// checked once and synced once, after the last rename ([`Saving::finish`]): at a thousand
/// busy devices a save every five minutes made, checked and synced `learned/` a thousand
/// times (issue 37's cost). A crash before the sync leaves each device's old state or its
/// new one, as one save does.
pub struct Saving {
    dir: PathBuf,
    written: bool,
}

impl Saving {
    /// `state_dir`'s `learned/`, made when missing and checked (Err: nothing can be saved).
    pub fn start(state_dir: &Path) -> Result<Saving, Error> {
        Ok(Saving {
            dir: make_learned_dir(state_dir)?,
            written: false,
        })
    }

    /// Write the state of `key` (the directory not synced yet).
    pub fn save(
        &mut self,
        key: &str,
        fp: Option<&Fingerprint>,
        model: &DeviceModel,
    ) -> Result<(), Error> {
        let path = self.dir.join(file_name(key));
        crate::sys::fs::replace_file_unsynced_dir(&path, render(key, fp, model).as_bytes())?;
        self.written = true;
        Ok(())
    }

    /// Sync the directory once, when anything was written.
    pub fn finish(self) -> Result<(), Error> {
        match self.written {
            true => crate::sys::fs::sync_dir(&self.dir),
            false => Ok(()),
        }
    }
}

/// `learned/` made when missing, and refused when it is not a directory of its own (a
/// symlink is never followed: root would write wherever it points).
fn make_learned_dir(state_dir: &Path) -> Result<PathBuf, Error> {
    check_dir(state_dir)?;
    let dir = learned_dir(state_dir);
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(m) => {
            return Err(Error::Safety(format!(
                "learned state: {} is {}, not a directory; iosat does not follow it",
                dir.display(),
                if m.file_type().is_symlink() {
                    "a symlink"
                } else {
                    kind_of(&m.file_type())
                }
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        }
        Err(e) => return Err(Error::io(&dir, e)),
    }
    Ok(dir)
}

/// As root, a state directory (or its `learned/`) that another user can write is refused:
/// another user could plant a FIFO or a symlink there for root to open, follow or remove.
/// Err names the directory, its owner and mode, and what to do, in one line.
pub fn check_dir(state_dir: &Path) -> Result<(), Error> {
    if !crate::sys::is_root() {
        return Ok(());
    }
    check_dir_as_root(state_dir)
}

fn check_dir_as_root(state_dir: &Path) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let learned = learned_dir(state_dir);
    // The state directory itself may be a symlink the administrator made (followed); what
    // is inside it is judged as it is (lstat).
    for (d, meta) in [
        (state_dir, std::fs::metadata(state_dir)),
        (learned.as_path(), std::fs::symlink_metadata(&learned)),
    ] {
        let m = match meta {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(d, e)),
        };
        if m.file_type().is_symlink() {
            return Err(Error::Safety(format!(
                "learned state: {} is a symlink; iosat as root does not follow it (remove it, \
                 or pass --state-dir)",
                d.display()
            )));
        }
        if m.uid() != 0 || m.mode() & 0o022 != 0 {
            return Err(Error::Safety(format!(
                "learned state: {} can be written by others (owner uid {}, mode {:o}); iosat \
                 as root keeps no state there (--state-dir a directory only root can write, \
                 or --no-learn)",
                d.display(),
                m.uid(),
                m.mode() & 0o7777
            )));
        }
    }
    Ok(())
}

/// Remove the learned state: of the device `key`, or of every device. Only files that say
/// iosat wrote them are removed (others are named in a warning and left); a `learned/` that
/// is a symlink is refused, never followed. Returns the files removed.
pub fn forget(state_dir: &Path, key: Option<&str>) -> Result<Vec<PathBuf>, Error> {
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    check_dir(state_dir)?;
    let dir = learned_dir(state_dir);
    // The directory is opened once, without following a symlink, and every file is opened
    // and removed relative to that descriptor: a `learned` swapped for a symlink meanwhile
    // leads nowhere.
    let d = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | SAFE_OPEN)
        .open(&dir)
    {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
            return Err(Error::Safety(format!(
                "learned state: {} is not a directory (a symlink?); iosat removes nothing \
                 through it",
                dir.display()
            )))
        }
        Err(e) => return Err(Error::io(&dir, e)),
    };
    let names: Vec<std::ffi::OsString> = match key {
        Some(k) => vec![file_name(k).into()],
        None => std::fs::read_dir(format!("/proc/self/fd/{}", d.as_raw_fd()))
            .or_else(|_| std::fs::read_dir(&dir))
            .map_err(|e| Error::io(&dir, e))?
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .filter(|n| n.as_bytes().ends_with(b".json") && !n.as_bytes().starts_with(b"."))
            .collect(),
    };
    let mut removed = Vec::new();
    for name in names {
        let path = dir.join(&name);
        let Ok(c) = std::ffi::CString::new(name.as_bytes()) else {
            continue;
        };
        // SAFETY: openat with a valid directory descriptor and a NUL-terminated name.
        let fd = unsafe { libc::openat(d.as_raw_fd(), c.as_ptr(), libc::O_RDONLY | SAFE_OPEN) };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            match e.kind() {
                std::io::ErrorKind::NotFound => continue,
                _ if e.raw_os_error() == Some(libc::ELOOP) => {
                    crate::error::warn(format_args!(
                        "left {}: a symlink, not a learned-state file iosat wrote",
                        path.display()
                    ));
                    continue;
                }
                _ => return Err(Error::io(&path, e)),
            }
        }
        // SAFETY: fd was just opened and is owned by nothing else.
        let f = unsafe { std::fs::File::from_raw_fd(fd) };
        let ours = match read_open(f) {
            Ok(bytes) => written_by_iosat(&bytes),
            Err(Unusable::Io(e)) => return Err(Error::io(&path, e)),
            Err(Unusable::Bad(_)) => false,
        };
        if !ours {
            crate::error::warn(format_args!(
                "left {}: not a learned-state file iosat wrote",
                path.display()
            ));
            continue;
        }
        // SAFETY: unlinkat with a valid directory descriptor and a NUL-terminated name.
        if unsafe { libc::unlinkat(d.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::NotFound {
                return Err(Error::io(&path, e));
            }
            continue;
        }
        removed.push(path);
    }
    Ok(removed)
}

/// Pure: does a file say iosat wrote it? Its `written_by` is iosat's; files of before that
/// field are iosat's when they have a state file's three keys and nothing else.
pub fn written_by_iosat(bytes: &[u8]) -> bool {
    let Ok(serde_json::Value::Object(o)) = serde_json::from_slice::<serde_json::Value>(bytes)
    else {
        return false;
    };
    match o.get("written_by") {
        Some(w) => w.as_str() == Some(WRITTEN_BY),
        None => {
            let known = ["schema_version", "id", "fingerprint", "model"];
            ["schema_version", "id", "model"]
                .iter()
                .all(|k| o.contains_key(*k))
                && o.keys().all(|k| known.contains(&k.as_str()))
        }
    }
}

/// One learner of a device at a time: an flock on `learned/.<name>.lock`, held while a run
/// learns the device and released when it ends (a crash included: the kernel drops it).
/// Another run that finds it held learns nothing into the file; it tries again at every
/// interval and, once it holds the lock, reloads what the previous holder saved.
#[derive(Debug, Clone)]
pub struct Lock {
    /// Shared by a cloned learner: an flock belongs to the open file, not to a copy.
    file: std::sync::Arc<std::fs::File>,
    held: bool,
}

impl Lock {
    /// Open the device's lock file (made when missing) and try to take it once.
    pub fn open(state_dir: &Path, key: &str) -> Result<Lock, Error> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = make_learned_dir(state_dir)?;
        let path = dir.join(format!(
            ".{}.lock",
            file_name(key).trim_end_matches(".json")
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(SAFE_OPEN)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        if !file.metadata().map_err(|e| Error::io(&path, e))?.is_file() {
            return Err(Error::Safety(format!(
                "learned state: {} is not a regular file",
                path.display()
            )));
        }
        let mut l = Lock {
            file: std::sync::Arc::new(file),
            held: false,
        };
        l.try_take();
        Ok(l)
    }

    /// Whether this run holds the lock.
    pub fn held(&self) -> bool {
        self.held
    }

    /// Take the lock if it is free now (one system call); true when held.
    pub fn try_take(&mut self) -> bool {
        use std::os::fd::AsRawFd;
        if !self.held {
            // SAFETY: flock on a descriptor this struct owns.
            self.held =
                unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        }
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::model::{Dir, Point};

    fn tmpdir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    fn a_model() -> DeviceModel {
        let mut m = DeviceModel::default();
        for i in 0..40 {
            let p = Point {
                dir: Dir::Read,
                wall_ns: i * 1_000_000_000,
                interval_s: 1.0,
                whole_s: 1.0,
                requests: 500.0,
                busy_ms: 1000.0,
                bytes: 500.0 * 4096.0,
                pcts_ns: None,
                device_ns: None,
                other_requests: 0.0,
            };
            m.add_interval(p.wall_ns, 1.0, &[p]);
        }
        m
    }

    /// Issue 39 case 3: a file that does not make sense is set aside (renamed, one line) and
    /// learning starts again, never a panic later.
    #[test]
    fn case3_a_state_file_that_makes_no_sense_is_set_aside() {
        let good = render("dev", None, &a_model());
        let cases: Vec<(String, &str)> = vec![
            // Too few buckets (the panic in model.rs).
            (
                good.replacen("\"buckets\":[{", "\"buckets\":[{\"intervals\":1},{", 1)
                    .replace(
                        &good[good.find("\"buckets\":[").unwrap()..],
                        "\"buckets\":[{}]}]}}",
                    ),
                "in-flight buckets",
            ),
            (
                good.replacen("\"requests\":", "\"requests\":1e308,\"x\":", 1),
                "no device has",
            ),
            (
                good.replacen("\"seconds_seen\":40", "\"seconds_seen\":-1", 1),
                "no device has",
            ),
            (
                good.replacen("\"schema_version\":1", "\"schema_version\":7", 1),
                "schema version 7",
            ),
            (
                "{\"schema_version\":1,\"id\":\"dev\",\"model\":{\"series\":3}}".into(),
                "expected a sequence",
            ),
        ];
        for (text, want) in cases {
            let dir = tmpdir();
            std::fs::create_dir_all(learned_dir(dir.path())).unwrap();
            let path = path_of(dir.path(), "dev");
            std::fs::write(&path, &text).unwrap();
            let (m, note) = load(dir.path(), "dev", None).unwrap();
            assert!(m.is_none(), "{want}: {text}");
            let note = note.unwrap();
            assert!(note.contains(want) && note.contains("set aside"), "{note}");
            assert!(!path.exists(), "renamed away");
            let aside: Vec<_> = std::fs::read_dir(learned_dir(dir.path()))
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            assert!(
                aside.iter().any(|n| n.starts_with("dev.json.set-aside-")),
                "{aside:?}"
            );
        }
        // NaN cannot be written in JSON; the model check refuses it all the same.
        let mut m = a_model();
        m.series[0].buckets[0].busy_ms = f64::NAN;
        assert!(validate(&m).unwrap_err().contains("busy_ms"));
        let mut m = a_model();
        m.series[0].buckets.truncate(3);
        assert!(validate(&m).is_err());
        assert!(validate(&a_model()).is_ok());
    }

    /// Issue 39 case 4: a FIFO, a device node or a huge file at the state path is never
    /// waited on or read into memory.
    #[test]
    fn case4_a_fifo_or_a_huge_file_is_not_read() {
        let dir = tmpdir();
        std::fs::create_dir_all(learned_dir(dir.path())).unwrap();
        let path = path_of(dir.path(), "dev");
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let (m, note) = load(dir.path(), "dev", None).unwrap();
        assert!(m.is_none());
        assert!(note.unwrap().contains("a FIFO"));
        // A symlink to /dev/zero: not followed.
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        let (m, note) = load(dir.path(), "dev", None).unwrap();
        assert!(m.is_none() && note.unwrap().contains("symlink"));
        // A sparse file far beyond a state file's size: refused on its size.
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(MAX_STATE_BYTES + 1).unwrap();
        let (m, note) = load(dir.path(), "dev", None).unwrap();
        assert!(m.is_none() && note.unwrap().contains("bytes"));
    }

    /// Issue 39 case 1: --forget removes only the files iosat wrote, never through a
    /// symlinked learned/.
    #[test]
    fn case1_forget_removes_only_iosat_files_and_never_follows_a_symlink() {
        let dir = tmpdir();
        save(dir.path(), "a", None, &a_model()).unwrap();
        let learned = learned_dir(dir.path());
        let old_style = "{\"schema_version\":1,\"id\":\"b\",\"model\":{}}";
        std::fs::write(learned.join("b.json"), old_style).unwrap();
        std::fs::write(learned.join("notes.json"), "{\"mine\":true}").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", learned.join("link.json")).unwrap();
        let removed = forget(dir.path(), None).unwrap();
        let mut names: Vec<_> = removed
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        names.sort();
        assert_eq!(names, ["a.json", "b.json"]);
        assert!(learned.join("notes.json").exists());
        assert!(learned.join("link.json").symlink_metadata().is_ok());
        // learned -> another directory: refused, nothing there removed.
        let victim = tmpdir();
        std::fs::write(victim.path().join("precious.json"), old_style).unwrap();
        std::fs::remove_dir_all(&learned).unwrap();
        std::os::unix::fs::symlink(victim.path(), &learned).unwrap();
        assert!(forget(dir.path(), None).is_err());
        assert!(forget(dir.path(), Some("precious")).is_err());
        assert!(victim.path().join("precious.json").exists());
        assert!(save(dir.path(), "c", None, &a_model()).is_err());
        assert!(!victim.path().join("c.json").exists());
    }

    /// Issue 39 case 7: as root, a state directory others can write is refused.
    #[test]
    fn case7_a_directory_others_can_write_is_refused_as_root() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tmpdir();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_dir_as_root(dir.path()).unwrap_err().to_string();
        assert!(e.contains("written by others") && e.contains("777"), "{e}");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        if crate::sys::is_root() {
            assert!(check_dir_as_root(dir.path()).is_ok());
            std::fs::create_dir(learned_dir(dir.path())).unwrap();
            std::fs::set_permissions(
                learned_dir(dir.path()),
                std::fs::Permissions::from_mode(0o1777),
            )
            .unwrap();
            assert!(load(dir.path(), "x", None).is_err());
            assert!(forget(dir.path(), None).is_err());
        }
    }

    /// Issue 39 case 5: one learner per device; a second one finds the lock held and takes it
    /// once the first has dropped it.
    #[test]
    fn case5_one_learner_per_device_at_a_time() {
        let dir = tmpdir();
        let a = Lock::open(dir.path(), "dev").unwrap();
        let mut b = Lock::open(dir.path(), "dev").unwrap();
        assert!(a.held() && !b.held());
        assert!(!b.try_take());
        let other = Lock::open(dir.path(), "other").unwrap();
        assert!(other.held());
        drop(a);
        assert!(b.try_take() && b.held());
        // The lock file is not a state file: --forget leaves it.
        assert!(forget(dir.path(), None).unwrap().is_empty());
    }

    /// Issue 37 point 3: a device created again under the same name is another device.
    #[test]
    fn a_device_created_again_is_another_device() {
        let then = Fingerprint {
            diskseq: Some(9),
            boot_id: Some("b1".into()),
            backing_file: Some("/tmp/a.img".into()),
            backing_inode: Some("2049:12".into()),
            ..Fingerprint::default()
        };
        assert!(then.changes_since(&then).is_empty());
        // Over another file.
        let mut now = then.clone();
        now.backing_file = Some("/tmp/b.img".into());
        now.backing_inode = Some("2049:13".into());
        now.diskseq = Some(10);
        let c = now.changes_since(&then);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(c[0].contains("/tmp/b.img"), "{c:?}");
        // Another file at the same path.
        let mut now = then.clone();
        now.backing_inode = Some("2049:99".into());
        assert!(now.changes_since(&then)[0].contains("inode"));
        // The same file set up again: a new diskseq, the same contents.
        let mut now = then.clone();
        now.diskseq = Some(10);
        assert!(now.changes_since(&then).is_empty());
        // Without a backing file (zram, a disk without serial): diskseq within one boot.
        let plain = Fingerprint {
            diskseq: Some(9),
            boot_id: Some("b1".into()),
            ..Fingerprint::default()
        };
        let mut now = plain.clone();
        now.diskseq = Some(12);
        assert!(now.changes_since(&plain)[0].contains("diskseq 9 -> 12"));
        now.boot_id = Some("b2".into());
        assert!(now.changes_since(&plain).is_empty(), "renumbered at boot");
        // A state file of before identity (no fields): nothing to compare, kept.
        assert!(plain.changes_since(&Fingerprint::default()).is_empty());
    }
}
