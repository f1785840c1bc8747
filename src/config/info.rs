//! `iosat info` arguments → InfoSpec.

use crate::cli::info::InfoArgs;
use crate::error::Result;
use crate::sys::Root;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoSpec {
    /// Names to show (same rules as `iosat stat`); empty = whole disks, dm, md.
    pub patterns: Vec<String>,
    pub all: bool,
    pub json: bool,
    pub csv: bool,
    pub markdown: bool,
    pub root: Root,
    /// Where device profiles are looked up (see `stat`).
    pub profile_dir: Option<PathBuf>,
}

impl InfoSpec {
    pub fn from_args(a: &InfoArgs) -> Result<InfoSpec> {
        let patterns = a
            .devices
            .iter()
            .map(|d| super::stat::device_pattern(d))
            .collect::<Result<Vec<_>>>()?;
        Ok(InfoSpec {
            patterns,
            all: a.all,
            json: a.format.json,
            csv: a.format.csv,
            markdown: a.format.markdown,
            root: super::root(&a.root),
            profile_dir: super::profile::resolve(&a.profile, super::profile::Access::Read)?,
        })
    }
}
