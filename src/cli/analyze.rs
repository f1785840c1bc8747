//! Syntax of `iosat analyze`.
//! Imports only: cli/.

use super::FormatArgs;
use clap::Args;
use std::path::PathBuf;

/// Analyse results made by other tools, without running anything again.
///
/// fio JSON (--output-format=json or json+; one file per iodepth/numjobs level, or one file
/// with stonewalled jobs), sysbench fileio outputs at several --threads, iostat -x logs
/// (old and new sysstat layouts, -t timestamps, -o JSON), iosat stat recordings and
/// pt-diskstats/pt-stalk sample files. Benchmarks give the verdict of `iosat sweep`
/// (baseline, saturation, 3x-p95 overload, knee, max useful IOPS); iostat logs, recordings
/// and pt-diskstats samples give per-device time series and a diagnosis that does not trust
/// %util.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Result files: fio JSON, sysbench fileio output, iostat -x output, iosat recording,
    /// pt-diskstats/pt-stalk samples.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,

    /// Only this device from iostat logs, recordings and pt-diskstats samples (repeat for
    /// several). Recordings and samples hold every device: by default the report shows those
    /// `iosat stat` shows (whole disks, dm, md); name partitions, loop or zram here.
    #[arg(long = "device", value_name = "NAME")]
    pub devices: Vec<String>,

    /// Also write the result as a self-contained HTML page with charts (as `iosat report`
    /// draws it). An existing FILE is refused, never replaced.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,

    /// Estimate from the closed-loop levels the highest rate whose p99 stays within TIME
    /// (2ms, 500us), labelled as an estimate: a closed loop hides the queueing of an offered
    /// rate, so the real answer (`iosat sweep --target-p99`) is lower.
    #[arg(long, value_name = "TIME")]
    pub target_p99: Option<String>,

    #[command(flatten)]
    pub cap: super::CapArgs,

    /// An AWS volume's own counters beside a recording of the same period: FILE holds `nvme
    /// amzn stats -o json` (or `ebsnvme stats --json`) run at the recording's start and at its
    /// end, appended, or one `ebsnvme stats -i N` session; DEV is the device in the recording
    /// (repeatable). Says the share of the period each cap throttled it (docs/caps.md)
    #[arg(
        long = "aws-stats",
        value_name = "DEV=FILE",
        help_heading = "Declared caps"
    )]
    pub aws_stats: Vec<String>,

    #[command(flatten)]
    pub output: super::OutputFileArgs,

    #[command(flatten)]
    pub format: FormatArgs,
}
