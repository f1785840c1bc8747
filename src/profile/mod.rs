//! Device profiles: where `--save-profile` stores a sweep result and under which id, so `stat` and
//! later commands can judge live numbers against the device's own curve; and the one cache of
//! loaded profiles by id ([`ProfileCache`]) that `stat`, `report` and `info` share. monitor/ and
//! report/ use its types.
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
//!
//! By concern: `types.rs` (the profile and its direction), `ids.rs` (device ids), `dirs.rs`
//! (where profiles live), `file.rs` (the stored file's format), `store.rs` (file names,
//! loading, saving, listing), `model.rs` (model profiles and what they match), `cache.rs`
//! (the cache by id and the lookup), `advice.rs` (how to measure one). Everything is
//! re-exported here: callers name `crate::profile::X`.
//! Imports only: sys/, error, units.

mod advice;
mod cache;
mod dirs;
mod file;
mod ids;
mod model;
mod store;
mod types;

pub use advice::{how_to_measure, how_to_measure_writes};
pub use cache::{Found, NoProfiles, ProfileCache, ProfileLookup};
pub use dirs::{
    profile_dir, search_dirs, state_home, DirRole, ProfileDirs, ROOT_PROFILE_DIR,
    SHARED_PROFILE_DIR,
};
pub use file::{parse_profile, profile_json, Extras};
pub use ids::{device_id, file_safe, profile_id, read_identity, Identity};
pub use model::{ModelKey, ModelProfile};
pub use store::{files_for, files_of, legacy_file, list, load, profile_file, save, Listed};
pub use types::{DeviceProfile, DeviceState, Direction, Imported};

/// A sweep report of `pattern` whose baseline is `base_ns`, as the tests save it.
#[cfg(test)]
fn sweep_json(pattern: &str, base_ns: f64) -> String {
    format!(
        r#"{{"workload":{{"pattern":"{pattern}","block_size":4096}},
        "verdict":{{"baseline_latency_ns":{base_ns},"knee_concurrency":4,"max_useful_iops":1000}}}}"#
    )
}
