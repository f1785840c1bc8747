//! Syntax of `iosat report`.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Html,
    Markdown,
    Csv,
}

/// Render a saved iosat JSON result (sweep, fsync, analyze, stat --json) as one self-contained
/// HTML page with SVG charts, or as Markdown or CSV tables.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The iosat JSON result to render.
    #[arg(value_name = "FILE.json")]
    pub input: PathBuf,
    /// Write here instead of standard output. An existing file is not overwritten unless
    /// --force is given.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Output format (default: html, or from the extension of -o).
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Replace OUT if it exists.
    #[arg(long)]
    pub force: bool,
}
