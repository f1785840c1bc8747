//! Syntax of `iosat stat`.

use clap::Args;

#[derive(Debug, Args)]
pub struct StatArgs {}
