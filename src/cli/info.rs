//! Syntax of `iosat info`.
//! Imports only: cli/.

use super::{FormatArgs, RootArgs};
use clap::Args;

/// The device inventory needed to judge the numbers of `iosat stat`: model, size, rotational,
/// block sizes, scheduler, nr_requests, write cache, FUA, discard, holders, mount points,
/// partitions, dm/md members, and notes where the kernel's accounting misleads.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Devices to describe: names, /dev paths or globs (default: whole disks, dm, md).
    #[arg(value_name = "DEVICE")]
    pub devices: Vec<String>,

    /// Include partitions, loop, zram, ram and other virtual devices.
    #[arg(long)]
    pub all: bool,

    #[command(flatten)]
    pub profile: crate::cli::ProfileArgs,

    #[command(flatten)]
    pub format: FormatArgs,

    #[command(flatten)]
    pub output: super::OutputFileArgs,

    #[command(flatten)]
    pub root: RootArgs,
}
