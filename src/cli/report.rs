//! Syntax of `iosat report`.
//! Imports only: cli/.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Html,
    Markdown,
    Csv,
    /// The text a terminal gets (80 columns; `--wide` is not offered here).
    Text,
}

/// Render a saved iosat result (sweep or analyze JSON, fsync JSON, `stat --json` lines, a
/// `stat --record` recording) as one self-contained HTML page with SVG charts, or as Markdown
/// or CSV tables.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The iosat result to render: a JSON file (sweep, analyze, fsync, or `stat --json` lines),
    /// or a recording made by `iosat stat --record` or a pt-diskstats/pt-stalk sample file
    /// (recognised by the first line).
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
    /// Write here instead of standard output. An existing file is not overwritten unless
    /// --force is given.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Output format (default: from the extension of -o (.md, .csv, .txt, else html); without
    /// -o, text on a terminal and html into a pipe or a file).
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Replace OUT if it exists.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub profile: crate::cli::ProfileArgs,
}
