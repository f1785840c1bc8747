//! Profiles on disk: the file names of an id (`<id>.read.json`, `<id>.write.json`, the older
//! `<id>.json` loaded as a read profile; an id from a recording stays a plain file name), and
//! loading, saving (atomically), listing and finding the profile files of a directory.
//! Imports only: profile/, error, sys/.

use super::file::{parse_profile, swept_pattern};
use super::ids::sanitize;
use super::{DeviceProfile, Direction};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

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

/// The file names a profile of `id` is looked for under, in order: the read profile, the
/// write profile, the file of before profiles had a direction.
pub fn files_for(id: &str) -> Vec<String> {
    vec![
        profile_file(id, Direction::Read),
        profile_file(id, Direction::Write),
        legacy_file(id),
    ]
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
        .map_err(|reason| Error::parse(path, 1, reason))
}

/// Write the sweep report `json` as the profile of its direction (`<dir>/<id>.json` for
/// reads, `<id>.write.json` for writes: see [`profile_file`]), via a temporary file and
/// rename, so a reader never sees half a profile. Returns the path written.
pub fn save(dir: &Path, id: &str, json: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let pattern = swept_pattern(json);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{sweep_json, ProfileCache, ProfileLookup};
    use crate::sys::Root;

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
    fn atomic_write_replaces() {
        let d = tempfile::tempdir().unwrap();
        let p = save(d.path(), "dev", "{\"a\":1}").unwrap();
        save(d.path(), "dev", "{\"a\":2}").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"a\":2}");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
