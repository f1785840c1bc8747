//! Syntax of `iosat sweep` (clap only; validation lives in config/sweep.rs).
//! Imports only: cli/.

use super::{FormatArgs, RootArgs};
use clap::{ArgAction, Args, ValueEnum};
use std::path::PathBuf;

/// The access pattern (syntax only; config/ maps it to load::Pattern).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PatternArg {
    Randread,
    Randwrite,
    Read,
    Write,
    Randrw,
}

/// Run the concurrency sweep of Percona's "Looking at Disk Utilization and Saturation": direct
/// I/O at 1, 2, 4, ... requests in flight, latency against the single-request baseline, the
/// kernel's own view (r/s, await, aqu-sz, %util) beside it, and the verdict: knee, overload
/// point, max useful IOPS.
///
/// With no TARGET a temporary file (a tenth of the free space, at most 1 GiB) is laid out in
/// the current directory as .iosat-sweep-<pid>-<random>.tmp, filled with real data, and
/// removed at the end, Ctrl-C included (in a source checkout, .gitignore lists the name).
/// Default run: 9 levels × (0.5 s ramp + 2 s measured), about 25 s plus the layout.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// A directory (a temporary file is laid out there), an existing file (read only), or a
    /// block device (read only unless --destructive). Default: the current directory.
    #[arg(value_name = "TARGET")]
    pub target: Option<PathBuf>,

    /// Load generator: uring (io_uring, falls back to sync), sync (one pread/pwrite in flight
    /// per thread), or
    /// sim:units=K,service=DURATION[,dist=fixed|exp][,cap=IOPS][,bw=MBPS][,jitter=PCT].
    /// Default: uring, but sync on loop and zram devices (io_uring hands every I/O to worker
    /// threads there).
    #[arg(long, value_name = "ENGINE", help_heading = "Workload")]
    pub engine: Option<String>,

    /// Access pattern (fio's --rw is accepted for it).
    #[arg(
        long,
        visible_alias = "rw",
        alias = "readwrite",
        value_enum,
        default_value = "randread",
        help_heading = "Workload"
    )]
    pub pattern: PatternArg,

    /// Percentage of reads for --pattern randrw (default 70).
    #[arg(long, value_name = "N", help_heading = "Workload")]
    pub read_pct: Option<String>,

    /// Block size per request (k, m suffixes: 4k, 64k, 1m); a multiple of the target's logical
    /// block size.
    #[arg(
        long,
        default_value = "4k",
        value_name = "SIZE",
        help_heading = "Workload"
    )]
    pub bs: String,

    /// Concurrency levels (requests in flight), a comma list, or `auto`: keep doubling from 1
    /// until the device is clearly past its knee (throughput flat, latency growing).
    #[arg(
        long,
        default_value = "1,2,4,8,16,32,64,128,256",
        value_name = "LIST|auto",
        help_heading = "Workload"
    )]
    pub levels: String,

    /// Measured time per level (s, ms suffixes; bare numbers are seconds). fio's --runtime
    /// is accepted for it.
    #[arg(
        long,
        visible_alias = "runtime",
        default_value = "2s",
        value_name = "TIME",
        help_heading = "Workload"
    )]
    pub duration: String,

    /// Run the whole level series N times, one pass after another; the verdict combines the
    /// passes and each level's spread covers all of them.
    #[arg(long, default_value_t = 1, value_name = "N", help_heading = "Workload")]
    pub repeat: u32,

    /// Time the levels may take in all: what is left after the series (and the baseline's
    /// re-measure) goes to measuring again only the levels whose spread leaves the knee or the
    /// overload point open. `0` never re-measures. The default keeps a whole default sweep,
    /// laying out its test file included, to about a minute.
    #[arg(
        long,
        default_value = "50s",
        value_name = "TIME",
        help_heading = "Workload"
    )]
    pub budget: String,

    /// Warm-up per level before measuring (its I/Os are not counted).
    #[arg(
        long,
        default_value = "0.5s",
        value_name = "TIME",
        help_heading = "Workload"
    )]
    pub ramp: String,

    /// O_DIRECT (bypass the page cache). `--direct false` measures buffered I/O.
    #[arg(long, default_value_t = true, action = ArgAction::Set, value_name = "BOOL", help_heading = "Workload")]
    pub direct: bool,

    /// uring: the most worker threads a level is spread over (each keeps concurrency/threads
    /// requests in flight). sync always uses one thread per request in flight.
    #[arg(long, default_value_t = 1, value_name = "N", help_heading = "Workload")]
    pub threads: u32,

    /// Seed of the offset generator (and of the sim engine).
    #[arg(long, default_value_t = 1, value_name = "N", help_heading = "Workload")]
    pub seed: u64,

    /// Open loop: offer these request rates (IOPS, a comma list; k suffix: 2k = 2000), or
    /// `auto` (25, 50, 80, 100 and 120 % of the maximum a short closed-loop pass finds), one
    /// level each, requests issued on a schedule of intended start times whether or not the
    /// device kept up, every latency timed from its intended start (what a user waits) and
    /// from its submission (what the device took). Without --levels no closed-loop levels
    /// run for a list of rates.
    #[arg(long, value_name = "LIST|auto", help_heading = "Open loop")]
    pub rate: Option<String>,

    /// Open loop: how requests arrive: poisson (independent arrivals, exponential gaps, as
    /// fio's rate_process=poisson) or uniform (evenly spaced).
    #[arg(long, value_name = "poisson|uniform", help_heading = "Open loop")]
    pub arrivals: Option<String>,

    /// Open loop: the most requests in flight (threads of the generator's pool). Default: per
    /// level by Little's law, twice the rate times the latency expected at it plus room for
    /// bursts (64-512). A schedule that needs more falls
    /// behind, and the level says so.
    #[arg(long, value_name = "N", help_heading = "Open loop")]
    pub max_inflight: Option<u32>,

    /// Open loop: find the highest offered rate whose p99 from the intended start is at most
    /// TIME (2ms, 500us): a short closed-loop pass brackets it, then open-loop levels bisect
    /// the rate; the verdict gives max_iops_at_target with its 95 % interval (the rates that
    /// surely met and surely missed it, each level's p99 being uncertain). Same as
    /// `--target p99=TIME`.
    #[arg(long, value_name = "TIME", help_heading = "Open loop", conflicts_with_all = ["rate", "latency_target"])]
    pub target_p99: Option<String>,

    /// Open loop: as --target-p99 for any percentile: PCT=TIME with PCT one of mean, p50,
    /// p90, p95, p99, p99.9 (`--target p95=1ms`).
    #[arg(
        long = "target",
        value_name = "PCT=TIME",
        help_heading = "Open loop",
        conflicts_with = "rate"
    )]
    pub latency_target: Option<String>,
    /// Gentle mode for a production disk: no level above N requests in flight (the levels
    /// asked for are cut there; `auto` doubles up to N). A knee not reached by then is stated
    /// as a lower bound ("the knee is above N in flight").
    #[arg(long, value_name = "N", help_heading = "Gentle mode")]
    pub max_concurrency: Option<u32>,

    /// Gentle mode for a production disk: cap the requests the sweep adds at IOPS per second
    /// (a token bucket before each request; latency is still timed from the request's own
    /// start). Runs the sync engine; the series stops at the first level the cap holds back.
    #[arg(long, value_name = "IOPS", help_heading = "Gentle mode")]
    pub rate_limit: Option<String>,

    /// Size of the temporary file (default: a tenth of the free space, at most 1 GiB).
    #[arg(long, value_name = "SIZE", help_heading = "Target")]
    pub size: Option<String>,

    /// Allow writing to a block device (destroys its data). Refused anyway when the device is
    /// mounted, has mounted partitions or holders, is swap, or carries a filesystem signature.
    #[arg(long, help_heading = "Target")]
    pub destructive: bool,

    /// With --destructive: confirm that the device's data may be destroyed although it is not
    /// blank, naming what was found (`exfat`, `dos`, `data`, ... as the refusal says).
    #[arg(long, value_name = "WHAT", help_heading = "Target")]
    pub overwrite_found: Option<String>,

    /// Run on tmpfs/ramfs although that measures memory, not a disk.
    #[arg(long, help_heading = "Target")]
    pub allow_tmpfs: bool,

    /// Also write the result to FILE (same format as stdout), rewritten after every level.
    #[arg(short = 'o', long, value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,

    /// Also write the result as a self-contained HTML page with charts (as `iosat report`
    /// draws it), rewritten after every level. An existing FILE is refused, never replaced.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub html: Option<PathBuf>,

    /// Store the result as the device's profile (used by `iosat stat`).
    #[arg(long, help_heading = "Output")]
    pub save_profile: bool,

    /// With --save-profile: save it even when its baseline was unstable or disturbed.
    #[arg(long, help_heading = "Output")]
    pub force: bool,

    #[command(flatten)]
    pub profile: crate::cli::ProfileArgs,

    #[command(flatten)]
    pub cap: crate::cli::CapArgs,

    /// Never draw the progress bar (it is drawn on stderr only when that is a terminal).
    #[arg(long, help_heading = "Output")]
    pub no_progress: bool,

    /// Don't load the block-latency BPF program: no block-layer p50/p95/p99 per level (the
    /// device's time apart from the path above it), diskstats alone; saves its load (~40 ms)
    /// and its cost per request (~0.1 µs).
    #[arg(long)]
    pub no_bpf: bool,

    #[command(flatten)]
    pub format: FormatArgs,

    #[command(flatten)]
    pub fio: super::habits::FioFlags,

    #[command(flatten)]
    pub root: RootArgs,
}
