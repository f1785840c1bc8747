//! Syntax of `iosat analyze`.

use clap::Args;

#[derive(Debug, Args)]
pub struct AnalyzeArgs {}
