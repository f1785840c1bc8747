//! Syntax of `iosat stat`. Values stay strings here; src/config/stat.rs validates them so
//! that a bad value gets one line naming the flag.
//! Imports only: cli/.

use super::{FormatArgs, RootArgs};
use clap::Args;
use std::path::PathBuf;

/// What `iosat stat --help` explains below the options (the subcommand's one-line summary
/// lives in cli/mod.rs).
pub const AFTER_LONG_HELP: &str = "\
Every column uses sysstat's formula, but rates divide by the interval actually measured
(monotonic clock around each read of /proc/diskstats), not the requested one, and the
first report covers the first interval, not the time since boot (ask with --since-boot).
Reads, writes, discards and flushes are kept apart; r_conc/w_conc/d_conc/f_conc are the
mean number of requests of that direction in flight (Little's law: Δread_ms/Δt; exact on
kernels >= 5.7, where aqu-sz is their sum).

About %util: it is the share of the interval during which at least one request was in
flight (io_ticks). A device that serves one request at a time (one disk head) is saturated
at 100 %; a device that serves many at once (NVMe, SSD, RAID, cloud volumes) can be at
100 % with most of its capacity unused: one request in flight all the time is 100 %, and so
are 64. Judge saturation by latency (r_await/w_await) against the device's own
low-concurrency baseline as concurrency grows (`iosat sweep`), not by %util. On kernels
5.0 to 6.9, io_ticks is sampled per jiffy and can over- or under-count.

Saturation: for a device with a profile (`iosat sweep --save-profile`), `sat` is the
await of its reads and writes ÷ the profile's concurrency-1 baseline latency (1.0 = no
queueing; the baseline holds for the swept pattern and block size), and `load` is aqu-sz ÷
the profile's knee concurrency (above 1: past the optimal concurrency). In the default view
they replace r_conc/w_conc when a shown device has a profile; --wide and --json also give
sat_r, sat_w and the IOPS headroom below the profile's max useful IOPS.

Learning (no sweep needed): every interval is one point of Little's law per direction, and
iosat learns each device's baseline (latency at about one request in flight, once it has
30 intervals and 3,000 requests there) and its latency-vs-in-flight curve from its own
traffic, per direction and request size (<= 8 KiB, <= 64 KiB, larger). Without a profile,
the default view then shows `learned` (idle, ok < 1.5x the baseline, saturated < 3x,
overloaded from 3x, the 3x-p95 overload rule; unknown without a baseline) and `+IOPS`, the
requests per second that can be added before the p95 reaches 3x the baseline (or
--target-p95), marked >= while the traffic has not gone past the knee; --json has a
`learned` object. A swept profile takes precedence. The state is kept per device in the
state directory (--state-dir; /var/lib/iosat as root, else $XDG_STATE_HOME/iosat), ages by
half each week and restarts when the device changes; --no-learn turns learning off,
`iosat stat --forget` removes what was learned.

Devices: whole disks (and dm, md with their names) by default; --partitions adds
partitions, --all adds loop, zram, ram and other virtual devices. DEVICE may be a kernel
name (sda, dm-0), a dm name (vg0-root), a /dev path, or a glob ('nvme*').

CPU: each report starts with iostat's avg-cpu line (%user %nice %system %iowait %steal
%idle of all CPUs over the same interval, from /proc/stat; an \"avg-cpu\" object in JSON,
cpu_* columns in CSV): a busy or iowait-bound host is often the whole explanation.
--no-cpu (or -d) leaves it out.

iostat habits: `iosat stat -xz 1 5` works as in iostat. -x, -t, -k, -N and -y are accepted
(iosat already does that), -d is --no-cpu, -p [ALL|DEV,...] adds partitions (of all disks,
or of these), -z omits idle devices, -o JSON is --json; a trailing INTERVAL [COUNT] is -i,
-c. iostat's -c (CPU only) is --count here; -m, -s, -g, -j and --human get a one-line
answer naming iosat's way.";

/// Options of `iosat stat`.
#[derive(Debug, Args)]
#[command(
    after_help = "%util is time with >=1 request in flight, not capacity on parallel devices: see --help.",
    after_long_help = AFTER_LONG_HELP,
    mut_arg("no_bpf", |a| a.help(
        "Don't load the block-latency BPF program: no live p50/p95/p99, diskstats alone"
    ))
)]
pub struct StatArgs {
    /// Devices to show: names, /dev paths or globs (default: whole disks, dm, md). One or
    /// two trailing numbers are iostat's INTERVAL [COUNT] (`iosat stat 1 5`, `iosat stat sda 2
    /// 3`), the same as -i and -c.
    #[arg(value_name = "DEVICE")]
    pub devices: Vec<String>,

    /// Seconds between reports; fractions allowed (-i 0.5). Default 1.
    #[arg(short = 'i', long = "interval", value_name = "SECONDS")]
    pub interval: Option<String>,

    /// Number of reports, then exit (default: until interrupted, or to the end of --replay).
    #[arg(short = 'c', long = "count", value_name = "COUNT")]
    pub count: Option<String>,

    /// Make the first report the average since boot (what plain `iostat -x` prints).
    #[arg(long)]
    pub since_boot: bool,

    /// Include partitions.
    #[arg(long)]
    pub partitions: bool,

    /// Include every device: partitions, loop, zram, ram and other virtual devices.
    #[arg(long)]
    pub all: bool,

    /// Omit devices that did no I/O in the interval (iostat -z).
    #[arg(short = 'z', long)]
    pub omit_idle: bool,

    /// Who loads each device: the cgroups that did I/O on it (requests charged to their own
    /// cgroup in the block layer, needs the BPF source), their share of the device's time and
    /// latency, and while it is saturated the victims and likely aggressors.
    #[arg(long)]
    pub cgroups: bool,

    /// No avg-cpu line (object in JSON, columns in CSV): the CPU context of each interval
    /// (iostat -d).
    #[arg(long)]
    pub no_cpu: bool,

    #[command(flatten)]
    pub format: FormatArgs,

    /// Append the raw samples to FILE (format: docs/stat.md, "Recordings"), for --replay later.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,

    /// Compute the reports from a recording instead of /proc: an iosat --record file, or a
    /// pt-diskstats --save-samples / pt-stalk diskstats file ("TS <epoch>" + diskstats lines).
    #[arg(long, value_name = "FILE", conflicts_with = "interval")]
    pub replay: Option<PathBuf>,

    #[command(flatten)]
    pub profile: crate::cli::ProfileArgs,

    #[command(flatten)]
    pub caps: crate::cli::DeviceCapArgs,

    /// Ignore device profiles: no saturation columns.
    #[arg(long, conflicts_with = "profile_dir")]
    pub no_profile: bool,

    /// With --record (or --replay): also write the recording as a self-contained HTML page
    /// with the four charts per device (as `iosat report` draws it), rewritten as the
    /// recording grows. An existing FILE is refused, never replaced.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Also write the reports to FILE (same format as stdout). An existing FILE is refused
    /// unless --force. iostat's `-o JSON` means --json (a file named JSON: -o ./JSON).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Replace the -o FILE if it exists.
    #[arg(long, requires = "output")]
    pub force: bool,

    #[command(flatten)]
    pub iostat: super::habits::IostatFlags,

    #[command(flatten)]
    pub live: crate::cli::LiveArgs,

    #[command(flatten)]
    pub hindsight: crate::cli::HindsightArgs,

    #[command(flatten)]
    pub root: RootArgs,
}
