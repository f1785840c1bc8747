//! Syntax of `iosat fsync`.

use clap::Args;

#[derive(Debug, Args)]
pub struct FsyncArgs {}
