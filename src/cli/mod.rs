//! Command-line syntax only (clap derive). No clap type goes past `config/`; each subcommand's
//! arguments live in a file of their own.
//! Imports only: cli/, build.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

pub mod analyze;
pub mod compare;
pub mod exporter;
pub mod fsync;
pub mod habits;
pub mod info;
pub mod profile;
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
    version = crate::build::LONG_VERSION,
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
    /// Device profiles: list, show, rm, export; save one from a sweep result; import a twin's.
    Profile(profile::ProfileCmdArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the man page (roff): iosat(1), or one subcommand's page.
    Man(ManArgs),
}

/// `iosat completions SHELL`.
#[derive(Debug, Args)]
#[command(
    after_help = "bash: iosat completions bash > ~/.local/share/bash-completion/completions/iosat
zsh:  iosat completions zsh > \"${fpath[1]}/_iosat\"
fish: iosat completions fish > ~/.config/fish/completions/iosat.fish"
)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `iosat man [SUBCOMMAND]`.
#[derive(Debug, Args)]
#[command(after_help = "Read it: iosat man | man -l -
Install it: iosat man > ~/.local/share/man/man1/iosat.1")]
pub struct ManArgs {
    /// A subcommand's page (iosat-SUBCOMMAND(1)) instead of iosat(1).
    #[arg(value_name = "SUBCOMMAND")]
    pub subcommand: Option<String>,
}

/// Write the result to a file as well as to standard output (`-o FILE`), as sweep and report
/// do: an existing FILE is refused unless --force.
#[derive(Debug, Clone, Default, Args)]
pub struct OutputFileArgs {
    /// Also write the result to FILE (same format as stdout). An existing FILE is refused
    /// unless --force.
    #[arg(short = 'o', long, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,
    /// Replace the -o FILE if it exists.
    #[arg(long, requires = "output", help_heading = "Output")]
    pub force: bool,
}

/// A clap error as one message without clap's "to pass '-x' as a value, use '-- -x'" tip,
/// which misleads iostat and fio users (their flags are answered by config/habits.rs).
pub fn error_text(err: &clap::Error) -> String {
    let text = err.render().to_string();
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    for l in text.lines() {
        if l.contains("tip: to pass '") && l.contains("as a value") {
            continue;
        }
        // The tip leaves a second blank line behind: one is enough.
        if l.trim().is_empty() && blank {
            continue;
        }
        blank = l.trim().is_empty();
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// The output format flags shared by every command that prints a result.
#[derive(Debug, Clone, Default, Args)]
pub struct FormatArgs {
    /// Print JSON (versioned schema: docs/output-formats.md, schemas/).
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

/// What a live view (`stat`, `top`, `exporter`) reads beside diskstats: the block-latency BPF
/// program and the learning group. `--no-bpf` drops something else in each view, so each words
/// its help (`#[command(mut_arg("no_bpf", ...))]` on its own struct).
#[derive(Debug, Clone, Args)]
pub struct LiveArgs {
    #[arg(long)]
    pub no_bpf: bool,

    /// The short window of the burst figures: the peak IOPS and MB/s of each direction
    /// within each interval, and peak ÷ mean, from /proc/diskstats read this often between
    /// the samples (default: 100ms; 0: off; from 10ms).
    #[arg(long, value_name = "DURATION")]
    pub burst_window: Option<String>,

    #[command(flatten)]
    pub learn: LearnArgs,
}

/// Production learning (learn/): each device's baseline and saturation curve learned from
/// its own traffic, kept in a state directory. One group for every live command.
#[derive(Debug, Clone, Default, Args)]
pub struct LearnArgs {
    /// Don't learn devices' baselines and curves from their traffic (no `learned` object,
    /// nothing read from or written to the state directory).
    #[arg(long, help_heading = "Learning")]
    pub no_learn: bool,
    /// Where learned state is kept (default: $IOSAT_STATE_DIR, else /var/lib/iosat for root,
    /// else $XDG_STATE_HOME/iosat, else ~/.local/state/iosat; with --proc-root, nowhere).
    #[arg(long, value_name = "DIR", help_heading = "Learning")]
    pub state_dir: Option<PathBuf>,
    /// The p95 a device may reach before it counts as overloaded and headroom runs out
    /// (default: 3x its learned baseline p95), e.g. 2ms.
    #[arg(long, value_name = "DURATION", help_heading = "Learning")]
    pub target_p95: Option<String>,
    /// `iosat stat --forget`: remove everything learned (the state directory's learned/
    /// files) and exit.
    #[arg(long, help_heading = "Learning")]
    pub forget: bool,
}

/// Hindsight (issue 41): the last minutes of samples kept in memory and written out as a
/// recording when a device turns overloaded, or on SIGUSR1 (docs/stat.md, "Hindsight").
#[derive(Debug, Clone, Default, Args)]
pub struct HindsightArgs {
    /// How much to keep before an incident, e.g. 15m (default: 15m; 0: keep nothing, write
    /// no dumps). Kept only where dumps can go (--hindsight-dir, or the state directory).
    #[arg(long, value_name = "DURATION", help_heading = "Hindsight")]
    pub hindsight: Option<String>,
    /// How long to go on recording after the trigger before the dump is written (default:
    /// 60s); a new trigger in that time extends the same dump.
    #[arg(long, value_name = "DURATION", help_heading = "Hindsight")]
    pub hindsight_tail: Option<String>,
    /// How often the kept samples are taken, whatever the view's interval (default: 1s; 100ms
    /// for sub-second incidents, 10ms the least): the live command reads the counters for
    /// hindsight between its own ticks when this is shorter.
    #[arg(long, value_name = "DURATION", help_heading = "Hindsight")]
    pub hindsight_interval: Option<String>,
    /// Where dumps are written (default: the state directory's hindsight/).
    #[arg(long, value_name = "DIR", help_heading = "Hindsight")]
    pub hindsight_dir: Option<PathBuf>,
    /// The most memory the samples may take, in MiB (default: 64); the oldest go first.
    #[arg(long, value_name = "MIB", help_heading = "Hindsight")]
    pub hindsight_max_mb: Option<String>,
}

/// A declared cap (issue 42) for the one device a command measures or saves: what it was
/// provisioned with, judged against by the verdict and every live view (docs/caps.md).
#[derive(Debug, Clone, Default, Args)]
pub struct CapArgs {
    /// The IOPS the device was provisioned with (a gp3 volume's 3000, an io2 volume's 16000):
    /// a plateau or an interval at it is named "at the declared cap".
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Declared caps"
    )]
    pub cap_iops: Option<String>,
    /// The MB/s (10^6 bytes/s) the device was provisioned with (a gp3 volume's 125; AWS
    /// quotes MiB/s: 125 MiB/s is 131 MB/s).
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Declared caps"
    )]
    pub cap_mbps: Option<String>,
}

/// Declared caps for the devices a live command (`stat`, `top`, `exporter`) shows: --cap-iops
/// and --cap-mbps for the one device named, or --cap per device.
#[derive(Debug, Clone, Default, Args)]
pub struct DeviceCapArgs {
    #[command(flatten)]
    pub one: CapArgs,
    /// A device's declared cap, DEV:KEY=N[,KEY=N...] (keys: iops, mbps, read_iops,
    /// write_iops, read_mbps, write_mbps), e.g. nvme1n1:iops=3000,mbps=125; repeatable. Over
    /// the cap its profile declares.
    #[arg(long = "cap", value_name = "DEV:KEY=N", help_heading = "Declared caps")]
    pub cap: Vec<String>,
}

/// Where device profiles (`iosat sweep --save-profile`) are read and saved: one flag, one
/// resolution (config::profile).
#[derive(Debug, Clone, Default, Args)]
pub struct ProfileArgs {
    /// Directory of device profiles (repeatable: the first is where profiles are saved, the
    /// others are read too, after it). Default: $IOSAT_PROFILE_DIR, else
    /// /var/lib/iosat/profiles as root, else $XDG_STATE_HOME/iosat/profiles or
    /// ~/.local/state/iosat/profiles. The shared $IOSAT_PROFILE_DIRS (colon-separated; empty:
    /// none), else /etc/iosat/profiles, are always read last.
    #[arg(long, value_name = "DIR", help_heading = "Profiles")]
    pub profile_dir: Vec<PathBuf>,
}
