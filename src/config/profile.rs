//! The profile directory, resolved one way for every command: `--profile-dir`, else
//! `$IOSAT_PROFILE_DIR`, else `$XDG_STATE_HOME/iosat/profiles`, else
//! `~/.local/state/iosat/profiles` (crate::profile::profile_dir).
//! Must not import: cmd/, ui/.

use crate::cli::ProfileArgs;
use crate::error::{Error, Result};
use std::path::PathBuf;

/// Whether the command reads profiles (an explicit directory must exist) or saves one (the
/// directory is created when the profile is written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Save,
}

/// The directory to read or save profiles in; None when no directory can be named (no flag,
/// no `$IOSAT_PROFILE_DIR`, `$XDG_STATE_HOME` or `$HOME`).
pub fn resolve(a: &ProfileArgs, access: Access) -> Result<Option<PathBuf>> {
    let explicit = a.profile_dir.as_deref();
    if let Some(d) = explicit.filter(|d| access == Access::Read && !d.is_dir()) {
        return Err(Error::usage(
            "--profile-dir",
            d.display(),
            "is not a directory (profiles are saved there by `iosat sweep --save-profile`)",
        ));
    }
    if let Some(d) = explicit.filter(|d| access == Access::Save && d.exists() && !d.is_dir()) {
        return Err(Error::usage(
            "--profile-dir",
            d.display(),
            "is not a directory: profiles could not be saved there",
        ));
    }
    let env_dir = std::env::var_os("IOSAT_PROFILE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    Ok(crate::profile::profile_dir(
        explicit.or(env_dir.as_deref()),
        std::env::var("XDG_STATE_HOME").ok().as_deref(),
        std::env::var("HOME").ok().as_deref(),
    ))
}
