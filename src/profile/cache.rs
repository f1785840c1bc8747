//! The one cache of loaded profiles by id ([`ProfileCache`]) that `stat`, `top`, `report`,
//! `info` and the exporter share: the device's own profile in each directory in turn, else a
//! model profile it matches, each file read once; and the lookup the recording page uses
//! ([`ProfileLookup`]).
//! Imports only: profile/, sys/.

use super::{
    device_id, legacy_file, list, load, profile_file, DeviceProfile, DeviceState, DirRole,
    ModelKey, ModelProfile, ProfileDirs, ROOT_PROFILE_DIR,
};
use crate::sys::device::BlockDev;
use crate::sys::Root;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

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
    use crate::profile::{profile_json, save, sweep_json, Extras};
    use std::path::PathBuf;

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
}
