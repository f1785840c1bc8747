//! The learned state on disk: one file per device, `<state dir>/learned/<id>.json`, keyed by
//! the device's identity (profile.rs's id: wwid, serial, model + size; else the kernel name),
//! versioned (`schema_version`), written atomically (a temporary file in the same directory,
//! fsync, rename, fsync of the directory: a crash leaves the old state or the new, never half
//! of one), and started again when the device changed (its [`Fingerprint`]: size, model,
//! scheduler, queue settings). The state directory: `--state-dir`, else `/var/lib/iosat` for
//! root, else `$XDG_STATE_HOME/iosat`, else `~/.local/state/iosat`. The only IO of learn/;
//! reads sysfs through sys/ only.
//! Imports only: error, sys/, profile, learn/model.rs.

use super::model::DeviceModel;
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
}

impl Fingerprint {
    /// Thin IO: the device's fingerprint from sysfs.
    pub fn read(root: &Root, dev: &BlockDev) -> Fingerprint {
        let q = device::queue_info(root, dev);
        Fingerprint {
            device: DeviceState::of(&q),
            nr_requests: q.nr_requests,
            rotational: q.rotational,
            logical_block_size: q.logical_block_size,
            write_cache: q.write_cache,
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
        let mut out = self.device.changes_since(&then.device);
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
}

#[derive(Debug, Serialize, Deserialize)]
struct StateFile {
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
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    if is_root {
        return Some(PathBuf::from("/var/lib/iosat"));
    }
    if let Some(x) = xdg_state_home.filter(|s| !s.is_empty()) {
        return Some(Path::new(x).join("iosat"));
    }
    home.filter(|s| !s.is_empty())
        .map(|h| Path::new(h).join(".local/state/iosat"))
}

fn file_name(key: &str) -> String {
    let safe: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
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

/// The state saved for `key`, and a line when it is not used (another schema version, the
/// device changed). Ok((None, None)) when there is none.
pub fn load(
    state_dir: &Path,
    key: &str,
    now: Option<&Fingerprint>,
) -> Result<(Option<DeviceModel>, Option<String>), Error> {
    let path = path_of(state_dir, key);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, None)),
        Err(e) => return Err(Error::io(&path, e)),
    };
    parse(&text, key, now).map_err(|reason| Error::Parse {
        path: path.clone(),
        line: 1,
        reason,
    })
}

/// Pure: a state file's text, judged against the device's fingerprint now.
pub fn parse(
    text: &str,
    key: &str,
    now: Option<&Fingerprint>,
) -> Result<(Option<DeviceModel>, Option<String>), String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let version = v.get("schema_version").and_then(|x| x.as_u64());
    if version != Some(u64::from(SCHEMA_VERSION)) {
        return Ok((
            None,
            Some(format!(
                "{key}: learned state of schema version {} (this iosat writes {SCHEMA_VERSION}): \
                 learning starts again",
                version.map_or("unknown".to_string(), |v| v.to_string())
            )),
        ));
    }
    let f: StateFile = serde_json::from_value(v).map_err(|e| e.to_string())?;
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

/// Pure: the text of a state file.
pub fn render(key: &str, fp: Option<&Fingerprint>, model: &DeviceModel) -> String {
    let f = StateFile {
        schema_version: SCHEMA_VERSION,
        id: key.to_string(),
        fingerprint: fp.cloned(),
        model: model.compacted(),
    };
    serde_json::to_string(&f).expect("a plain struct serialises")
}

/// Save the state of `key` atomically.
pub fn save(
    state_dir: &Path,
    key: &str,
    fp: Option<&Fingerprint>,
    model: &DeviceModel,
) -> Result<(), Error> {
    let dir = learned_dir(state_dir);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    write_atomic(&path_of(state_dir, key), render(key, fp, model).as_bytes())
}

/// Write `bytes` to `path` through a temporary file beside it: fsync, rename, fsync of the
/// directory. The temporary name is unpredictable and created with O_EXCL|O_NOFOLLOW.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = dir.join(format!(
        ".{}.tmp.{}.{nonce:x}",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

/// Remove the learned state: of the device `key`, or of every device. Returns the files
/// removed.
pub fn forget(state_dir: &Path, key: Option<&str>) -> Result<Vec<PathBuf>, Error> {
    let dir = learned_dir(state_dir);
    let targets: Vec<PathBuf> = match key {
        Some(k) => vec![path_of(state_dir, k)],
        None => match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(&dir, e)),
        },
    };
    let mut removed = Vec::new();
    for p in targets {
        match std::fs::remove_file(&p) {
            Ok(()) => removed.push(p),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&p, e)),
        }
    }
    Ok(removed)
}
