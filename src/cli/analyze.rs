//! Syntax of `iosat analyze`.

use super::FormatArgs;
use clap::Args;
use std::path::PathBuf;

/// Analyse results made by other tools, without running anything again.
///
/// fio JSON (--output-format=json or json+; one file per iodepth/numjobs level, or one file
/// with stonewalled jobs), sysbench fileio outputs at several --threads, and iostat -x logs
/// (old and new sysstat layouts, -t timestamps, -o JSON). Benchmarks give the verdict of
/// `iosat sweep` (baseline, saturation, 3x-p95 overload, knee, max useful IOPS); iostat logs
/// give per-device time series and a diagnosis that does not trust %util.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Result files: fio JSON, sysbench fileio output, iostat -x output.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,

    /// Only this device from iostat logs (repeat for several).
    #[arg(long = "device", value_name = "NAME")]
    pub devices: Vec<String>,

    #[command(flatten)]
    pub format: FormatArgs,
}
