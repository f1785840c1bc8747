//! Syntax only: the flags iostat and fio users type out of habit, so that clap accepts them
//! and config/habits.rs can give them iostat's or fio's meaning, or answer with one line
//! naming iosat's way. Hidden from `--help` (each command's long help names them).
//! Imports only: cli/.

use clap::Args;

/// iostat's flags on `iosat stat` (sysstat's iostat(1)). `-z`, `-o JSON` and the positional
/// `[interval [count]]` are in cli/stat.rs with iosat's own flags.
#[derive(Debug, Clone, Default, Args)]
pub struct IostatFlags {
    /// iostat -x: extended statistics (what iosat stat always shows).
    #[arg(short = 'x', hide = true)]
    pub x: bool,
    /// iostat -d: the device report only (no avg-cpu line), as --no-cpu.
    #[arg(short = 'd', hide = true)]
    pub d: bool,
    /// iostat -p [ALL|DEV,...]: partitions, of every disk or of these.
    #[arg(
        short = 'p',
        hide = true,
        value_name = "ALL|DEV,...",
        num_args = 0..=1,
        default_missing_value = "ALL"
    )]
    pub p: Option<String>,
    /// iostat -y: skip the since-boot report (iosat never prints it unless --since-boot).
    #[arg(short = 'y', hide = true, conflicts_with = "since_boot")]
    pub y: bool,
    /// iostat -t: a timestamp per report (iosat's reports always carry one).
    #[arg(short = 't', hide = true)]
    pub t: bool,
    /// iostat -k: kilobytes per second (iosat's unit).
    #[arg(short = 'k', hide = true)]
    pub k: bool,
    /// iostat -m: megabytes per second (answered with iosat's way).
    #[arg(short = 'm', hide = true)]
    pub m: bool,
    /// iostat -N: device-mapper names (iosat shows them already).
    #[arg(short = 'N', hide = true)]
    pub n: bool,
    /// iostat -h (human-readable) is --help here; iostat -c (CPU only) is --count here.
    /// iostat -s (short lines): answered with iosat's way.
    #[arg(short = 's', hide = true)]
    pub s: bool,
    /// iostat -g GROUP: answered with iosat's way.
    #[arg(short = 'g', hide = true, value_name = "GROUP")]
    pub g: Option<String>,
    /// iostat -j ID: answered with iosat's way.
    #[arg(short = 'j', hide = true, value_name = "ID")]
    pub j: Option<String>,
    /// iostat --human: answered with iosat's way.
    #[arg(long = "human", hide = true)]
    pub human: bool,
}

/// fio's job options that have no one-to-one iosat flag, on `sweep` and `fsync`: each is
/// answered with one line naming iosat's flag (config/habits.rs). The ones that map cleanly
/// are aliases on the commands' own flags (`--rw` → `--pattern`, `--runtime` → `--duration`).
#[derive(Debug, Clone, Default, Args)]
pub struct FioFlags {
    #[arg(long, hide = true, value_name = "N")]
    pub iodepth: Option<String>,
    #[arg(long, hide = true, value_name = "N")]
    pub numjobs: Option<String>,
    #[arg(long, hide = true, value_name = "ENGINE")]
    pub ioengine: Option<String>,
    #[arg(long, hide = true, value_name = "FILE")]
    pub filename: Option<String>,
    #[arg(long, hide = true, value_name = "DIR")]
    pub directory: Option<String>,
    #[arg(long = "output-format", hide = true, value_name = "FORMAT")]
    pub output_format: Option<String>,
    #[arg(long, hide = true, value_name = "NAME")]
    pub name: Option<String>,
    #[arg(long = "time_based", hide = true, num_args = 0..=1, default_missing_value = "1")]
    pub time_based: Option<String>,
}

/// fio's options that `iosat fsync` answers and `sweep` has as its own flags.
#[derive(Debug, Clone, Default, Args)]
pub struct FioFsyncFlags {
    #[arg(long = "rw", alias = "readwrite", hide = true, value_name = "PATTERN")]
    pub rw: Option<String>,
    #[arg(long, hide = true, value_name = "SIZE")]
    pub size: Option<String>,
    #[arg(long = "fsync", hide = true, value_name = "N")]
    pub fsync: Option<String>,
    #[arg(long = "fdatasync", hide = true, value_name = "N")]
    pub fdatasync: Option<String>,
    #[arg(long = "sync", hide = true, value_name = "BOOL")]
    pub sync: Option<String>,
    #[arg(long = "direct", hide = true, value_name = "BOOL")]
    pub direct: Option<String>,
}
