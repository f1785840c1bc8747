//! Learning flags (`--no-learn`, `--state-dir`, `--target-p95`) into a [`LearnSpec`]: the
//! state directory resolved once (`--state-dir`, else `$IOSAT_STATE_DIR` — empty: in memory
//! only —, else /var/lib/iosat for root, else the XDG state directory; nowhere when the
//! counters come from another root than this machine's /proc), the target parsed with the
//! one duration parser. Errors name the flag.
//! Must not import: cmd/, ui/.

use crate::cli::LearnArgs;
use crate::error::{Error, Result};
use crate::learn::LearnSpec;
use crate::sys::Root;
use std::path::PathBuf;

/// None with `--no-learn`.
pub fn spec(a: &LearnArgs, root: &Root) -> Result<Option<LearnSpec>> {
    if a.no_learn {
        return Ok(None);
    }
    let target_p95_ns = match &a.target_p95 {
        Some(t) => {
            let ns = crate::units::parse_duration_ns(t)
                .map_err(|why| Error::usage("--target-p95", t, why))?;
            if ns == 0 {
                return Err(Error::usage("--target-p95", t, "must be more than zero"));
            }
            Some(ns as f64)
        }
        None => None,
    };
    Ok(Some(LearnSpec {
        state_dir: state_dir(a, root)?,
        target_p95_ns,
    }))
}

/// The state directory (`--forget` needs one even with --no-learn).
pub fn state_dir(a: &LearnArgs, root: &Root) -> Result<Option<PathBuf>> {
    if let Some(d) = &a.state_dir {
        if d.exists() && !d.is_dir() {
            return Err(Error::usage(
                "--state-dir",
                d.display(),
                "is not a directory",
            ));
        }
        return Ok(Some(d.clone()));
    }
    if let Some(v) = std::env::var_os("IOSAT_STATE_DIR") {
        // Set but empty: learn in memory, keep nothing.
        return Ok((!v.is_empty()).then(|| PathBuf::from(v)));
    }
    if *root != Root::default() {
        // Counters of a fixture tree or another system: not this machine's devices.
        return Ok(None);
    }
    let is_root = crate::sys::is_root();
    Ok(crate::learn::store::state_dir(
        None,
        is_root,
        std::env::var("XDG_STATE_HOME").ok().as_deref(),
        std::env::var("HOME").ok().as_deref(),
    ))
}
