//! `iosat info` arguments → InfoSpec.
//! Must not import: cmd/, ui/.

use crate::cli::info::InfoArgs;
use crate::error::Result;
use crate::monitor::select::Selection;
use crate::sys::Root;

#[derive(Debug, Clone, PartialEq)]
pub struct InfoSpec {
    /// Which devices to show (same rules as `iosat stat`); no patterns = whole disks, dm,
    /// md; --all adds partitions and virtual devices.
    pub selection: Selection,
    pub root: Root,
    /// Where device profiles are looked up (see `stat`).
    pub profile_dir: crate::profile::ProfileDirs,
    /// Standard output, and `-o FILE`: the inventory written there too.
    pub output: super::output::Output,
}

impl InfoSpec {
    pub fn from_args(a: &InfoArgs) -> Result<InfoSpec> {
        let patterns = a
            .devices
            .iter()
            .map(|d| super::stat::device_pattern(d))
            .collect::<Result<Vec<_>>>()?;
        Ok(InfoSpec {
            selection: Selection {
                patterns,
                partitions: a.all,
                all: a.all,
            },
            root: super::root(&a.root),
            profile_dir: super::profile::resolve_dirs(&a.profile, super::profile::Access::Read)?,
            output: super::output::Output::stdout(super::output_format(&a.format)).file(
                "-o",
                a.output.output.as_deref(),
                super::output::force(a.output.force),
            )?,
        })
    }
}
