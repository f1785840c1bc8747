//! Syntax of `iosat info`.

use clap::Args;

#[derive(Debug, Args)]
pub struct InfoArgs {}
