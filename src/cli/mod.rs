//! Command-line syntax only (clap derive). No clap type goes past `config/`; each subcommand's
//! arguments live in a file of their own. Must not import sys/, monitor/, load/ or fsync/.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

pub mod analyze;
pub mod compare;
pub mod exporter;
pub mod fsync;
pub mod info;
pub mod report;
pub mod stat;
pub mod sweep;
pub mod top;

/// iosat tells the truth about disk utilization and saturation on Linux.
///
/// %util says "100 %" while an NVMe drive, a RAID set or a cloud volume still has several
/// times more IOPS to give. iosat measures latency against the device's own single-request
/// baseline as concurrency grows, queue depth (Little's law), reads and writes apart, and how
/// long a durable commit really takes.
#[derive(Debug, Parser)]
#[command(
    name = "iosat",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per run; boxing buys nothing
pub enum Command {
    /// Extended per-device statistics from /proc/diskstats, like `iostat -x`, honestly labelled.
    Stat(stat::StatArgs),
    /// The device inventory needed to judge numbers: model, queue, cache, holders, mounts.
    Info(info::InfoArgs),
    /// Concurrency sweep: latency against the single-request baseline, the knee, the verdict.
    Sweep(sweep::SweepArgs),
    /// Commit latency: write+fsync, fdatasync, O_DSYNC, ...; group commit; flush honesty.
    Fsync(fsync::FsyncArgs),
    /// Analyse results made by other tools: fio JSON, sysbench, iostat -x, pt-diskstats.
    Analyze(analyze::AnalyzeArgs),
    /// Render a saved iosat result or recording as HTML, Markdown or CSV.
    Report(report::ReportArgs),
    /// Compare saved results of one kind: a side-by-side table, the differences in words.
    Compare(compare::CompareArgs),
    /// Live full-screen view: devices ranked by saturation against their profiles, four charts.
    Top(top::TopArgs),
    /// Prometheus exporter: raw disk counters and device profiles, with shipped rules and alerts.
    Exporter(exporter::ExporterArgs),
}

/// The output format flags shared by every command that prints a result.
#[derive(Debug, Clone, Default, Args)]
pub struct FormatArgs {
    /// Print JSON (versioned schema, documented in the README).
    #[arg(long, conflicts_with_all = ["csv", "markdown"])]
    pub json: bool,
    /// Print CSV.
    #[arg(long, conflicts_with_all = ["json", "markdown"])]
    pub csv: bool,
    /// Print Markdown tables.
    #[arg(long, conflicts_with_all = ["json", "csv"])]
    pub markdown: bool,
    /// Text with every column (wider than 80 columns); JSON, CSV and Markdown always have all.
    #[arg(long, conflicts_with_all = ["json", "csv", "markdown"])]
    pub wide: bool,
}

/// Where the kernel files are read from (fixtures, a copied /proc, a container's view).
#[derive(Debug, Clone, Args)]
pub struct RootArgs {
    /// Read diskstats and other proc files under this directory instead of /proc.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "/proc",
        help_heading = "Sources"
    )]
    pub proc_root: PathBuf,
    /// Read sysfs under this directory instead of /sys.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "/sys",
        help_heading = "Sources"
    )]
    pub sys_root: PathBuf,
}

/// Where device profiles (`iosat sweep --save-profile`) are read and saved: one flag, one
/// resolution (config::profile).
#[derive(Debug, Clone, Default, Args)]
pub struct ProfileArgs {
    /// Directory of device profiles saved by `iosat sweep --save-profile` (default:
    /// $IOSAT_PROFILE_DIR, else $XDG_STATE_HOME/iosat/profiles, else
    /// ~/.local/state/iosat/profiles).
    #[arg(long, value_name = "DIR", help_heading = "Profiles")]
    pub profile_dir: Option<PathBuf>,
}
