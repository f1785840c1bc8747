//! Syntax of `iosat sweep`.

use clap::Args;

#[derive(Debug, Args)]
pub struct SweepArgs {}
