//! The profile directories, resolved one way for every command (crate::profile::search_dirs):
//! where profiles are saved — the first `--profile-dir`, else `$IOSAT_PROFILE_DIR`, else
//! `/var/lib/iosat/profiles` for root, else `$XDG_STATE_HOME/iosat/profiles`, else
//! `~/.local/state/iosat/profiles` — and, for reading, after it the further `--profile-dir`s
//! (else root's old location) and the shared read-only ones (`$IOSAT_PROFILE_DIRS`, else
//! `/etc/iosat/profiles`).
//! Must not import: cmd/, ui/.

use crate::cli::ProfileArgs;
use crate::error::{Error, Result};
use crate::profile::ProfileDirs;
use std::path::PathBuf;

/// Whether the command reads profiles (an explicit directory must exist) or saves one (the
/// directory is created when the profile is written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Save,
}

/// The directory to save profiles in (the own one); None when no directory can be named (no
/// flag, no `$IOSAT_PROFILE_DIR`, not root, no `$XDG_STATE_HOME` or `$HOME`).
pub fn resolve(a: &ProfileArgs, access: Access) -> Result<Option<PathBuf>> {
    Ok(resolve_dirs(a, access)?.own().map(PathBuf::from))
}

/// The directories a view reads profiles from: none with `--no-profile` (stat, top, exporter).
pub fn read_dirs(a: &ProfileArgs, no_profile: bool) -> Result<ProfileDirs> {
    if no_profile {
        return Ok(ProfileDirs::default());
    }
    resolve_dirs(a, Access::Read)
}

/// Every directory profiles are read from, in search order.
pub fn resolve_dirs(a: &ProfileArgs, access: Access) -> Result<ProfileDirs> {
    for d in &a.profile_dir {
        if access == Access::Read && !d.is_dir() {
            return Err(Error::usage(
                "--profile-dir",
                d.display(),
                "is not a directory (profiles are saved there by `iosat sweep --save-profile`)",
            ));
        }
        if access == Access::Save && d.exists() && !d.is_dir() {
            return Err(Error::usage(
                "--profile-dir",
                d.display(),
                "is not a directory: profiles could not be saved there",
            ));
        }
    }
    let env_dir = std::env::var_os("IOSAT_PROFILE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let shared = std::env::var_os("IOSAT_PROFILE_DIRS").map(|v| v.to_string_lossy().into_owned());
    let is_root = crate::sys::is_root();
    Ok(crate::profile::search_dirs(
        &a.profile_dir,
        env_dir.as_deref(),
        shared.as_deref(),
        is_root,
        std::env::var("XDG_STATE_HOME").ok().as_deref(),
        std::env::var("HOME").ok().as_deref(),
    ))
}

/// The device a `--for DEVICE` (or a result's `target.disk_device`) names: a /dev path (its
/// st_rdev) or a kernel name looked up in `<sys>/class/block/NAME/dev`. A name that is no
/// block device here is a usage error naming `flag`.
pub fn device(
    root: &crate::sys::Root,
    flag: &str,
    arg: &str,
) -> Result<crate::sys::device::BlockDev> {
    use crate::sys::device::{self, BlockDev};
    let p = std::path::Path::new(arg);
    if p.is_absolute() && p.exists() {
        return device::blockdev_for_node(root, p)
            .map_err(|_| Error::usage(flag, arg, "is not a block device of this machine"));
    }
    let name = arg.strip_prefix("/dev/").unwrap_or(arg);
    let dev_t = (!name.is_empty() && !name.contains('/'))
        .then(|| std::fs::read_to_string(root.sys.join("class/block").join(name).join("dev")).ok())
        .flatten()
        .and_then(|s| device::parse_dev_t(s.trim()));
    let Some((major, minor)) = dev_t else {
        return Err(Error::usage(
            flag,
            arg,
            "is not a block device of this machine (a name like sdb or a /dev path)",
        ));
    };
    Ok(BlockDev {
        major,
        minor,
        name: name.to_string(),
    })
}

/// `--direction read|write` of `iosat profile show/rm/export`.
pub fn direction(arg: Option<&str>) -> Result<Option<crate::profile::Direction>> {
    use crate::profile::Direction;
    match arg {
        None => Ok(None),
        Some("read") => Ok(Some(Direction::Read)),
        Some("write") => Ok(Some(Direction::Write)),
        Some(v) => Err(Error::usage("--direction", v, "must be read or write")),
    }
}
