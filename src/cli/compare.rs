//! Syntax of `iosat compare`.
//! Imports only: cli/.

use super::FormatArgs;
use clap::Args;
use std::path::PathBuf;

/// Compare two or more saved results of one kind side by side.
///
/// Sweeps (`iosat sweep --json`), fsync runs (`iosat fsync --json`) or analyses (`iosat
/// analyze --json`): two devices, or one device before and after a change. Prints a table
/// of the runs side by side and the differences in the verdicts in words ("knee 8 → 16, max
/// useful IOPS +85 %, baseline unchanged"); --html writes one page with the runs' curves
/// overlaid. Results of different kinds are refused.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The saved results, the first being the reference the others are compared against.
    #[arg(value_name = "FILE", required = true, num_args = 2..)]
    pub files: Vec<PathBuf>,

    /// Also write the comparison as one self-contained HTML page (curves overlaid) to FILE.
    /// An existing file is not overwritten unless --force is given.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Replace the --html file if it exists.
    #[arg(long)]
    pub force: bool,

    #[command(flatten)]
    pub format: FormatArgs,
}
