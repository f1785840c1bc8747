//! Syntax of `iosat report`.

use clap::Args;

#[derive(Debug, Args)]
pub struct ReportArgs {}
