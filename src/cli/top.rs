//! Syntax of `iosat top`. Values stay strings here; src/config/top.rs validates them so that a
//! bad value gets one line naming the flag.
//! Imports only: cli/.

use super::RootArgs;
use clap::Args;
use std::path::PathBuf;

/// What `iosat top --help` explains below the options.
pub const AFTER_LONG_HELP: &str = "\
A full-screen view that refreshes in place: the devices ranked by saturation against their
own profiles (`iosat sweep --save-profile`), and for the selected device the four charts:
latency per direction with the profile's baseline, %busy, requests in flight per direction
with the knee, saturation with the 1.5x (saturated) and 3x (overloaded) lines. With the
block-latency source (live, as root; or a recording with its `B` lines), r_p95/w_p95 are the
block layer's p95 per direction, drawn beside await, and with a profile r_p95/b, w_p95/b are
that p95 ÷ the profile's baseline p95 (3x: the 3x-p95 overload rule); --no-bpf turns it off.

Keys: q or Ctrl-C quit, ? help, Esc close or clear the filter, p or space pause (n steps one
interval while paused), arrows or j/k select, left/right or </> sort column, r reverse it,
/ filter devices, Tab switch pane, +/- chart window, a all devices (loop, zram, partitions).

%busy is %util: time with at least one request in flight, not capacity (see `iosat stat
--help`).";

/// Options of `iosat top`.
#[derive(Debug, Args)]
#[command(
    after_long_help = AFTER_LONG_HELP,
    mut_arg("no_bpf", |a| a.help("Don't load the block-latency BPF program: no live p95 columns \
        or chart lines, diskstats alone (with --replay: the recording's percentiles are not \
        shown)"))
)]
pub struct TopArgs {
    /// Devices to show: names, /dev paths or globs (default: whole disks, dm, md).
    #[arg(value_name = "DEVICE")]
    pub devices: Vec<String>,

    /// Seconds between refreshes; fractions allowed (-i 0.5). With --replay: the playback
    /// pace, one recorded interval per refresh. Default 1.
    #[arg(short = 'i', long = "interval", value_name = "SECONDS")]
    pub interval: Option<String>,

    /// Include partitions (also with the `a` key).
    #[arg(long)]
    pub partitions: bool,

    /// Include every device: partitions, loop, zram, ram (also with the `a` key).
    #[arg(long)]
    pub all: bool,

    /// Append the raw samples to FILE, the recording `iosat stat --record` writes.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,

    /// Watch a recording (iosat --record, pt-diskstats or pt-stalk samples) instead of /proc.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,

    #[command(flatten)]
    pub profile: crate::cli::ProfileArgs,

    #[command(flatten)]
    pub caps: crate::cli::DeviceCapArgs,

    /// Who loads each device: a pane (Tab) with the selected device's busiest cgroups (requests
    /// charged to their own cgroup in the block layer, needs the BPF source) and, while it is
    /// saturated, the victims and likely aggressors. With --replay: what the recording holds.
    #[arg(long)]
    pub cgroups: bool,

    /// Ignore device profiles: no saturation columns.
    #[arg(long, conflicts_with = "profile_dir")]
    pub no_profile: bool,

    #[command(flatten)]
    pub live: crate::cli::LiveArgs,

    #[command(flatten)]
    pub hindsight: crate::cli::HindsightArgs,

    #[command(flatten)]
    pub root: RootArgs,
}
