//! What the analysis is told besides a level's throughput and latency: how much the level's own
//! sub-windows disagreed ([`Spread`]), what else was happening while it ran ([`Disturbance`]), and
//! the limits the kernel applies to this process ([`IoLimit`]). The measuring side (load/, sys/)
//! fills these; the verdict (analysis/) weighs them. Plain data, serialised in sweep results
//! (absent in older files and in imports, hence every field is optional or defaulted).
//! Imports only: nothing.

use serde::{Deserialize, Serialize};

/// The level measured as several equal sub-windows: their spread says how far the level's
/// figures can be trusted. CV = standard deviation ÷ mean over the windows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spread {
    /// Sub-windows measured (with `--repeat N`, over all repeats).
    pub windows: u32,
    pub iops_cv: f64,
    pub iops_min: f64,
    pub iops_max: f64,
    /// Mean latency per window, ns.
    pub mean_ns_cv: f64,
    pub mean_ns_min: f64,
    pub mean_ns_max: f64,
    /// p95 latency per window, ns (None when windows are too short to have one).
    pub p95_ns_cv: Option<f64>,
    pub p95_ns_min: Option<f64>,
    pub p95_ns_max: Option<f64>,
    /// Mean IOPS of each measurement's first sub-window, and of its second half, with the
    /// second half's CV: a first window clearly faster than the rest is a burst followed by a
    /// plateau, the mark of a token bucket with burst credit (a cloud volume's cap, a
    /// throttle), which a device's own limit does not show. None when no measurement of the
    /// level was a full set of sub-windows (older files, imports, a level cut short).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iops_first: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iops_late: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iops_late_cv: Option<f64>,
}

/// What else happened on the machine and the device over one level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Disturbance {
    /// This process's time runnable but not running (`/proc/self/task/*/schedstat`, field 2),
    /// per completed I/O, ns: waiting for a CPU inside the measured latency.
    pub cpu_wait_ns_per_io: Option<f64>,
    /// The machine's CPU over the level (`/proc/stat`), percent of all CPUs.
    pub cpu_busy_pct: Option<f64>,
    pub cpu_iowait_pct: Option<f64>,
    pub cpu_steal_pct: Option<f64>,
    /// Other processes' user-space work over the level (`/proc/stat` user + nice less this
    /// process's `utime`), percent of all CPUs: a hog or compilers, not the I/O path's kernel
    /// work. None in older files and where a counter was missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_other_user_pct: Option<f64>,
    /// Requests per second the device completed beyond iosat's own (the kernel's r/s + w/s
    /// minus ours); None when the kernel's view is unknown.
    pub other_iops: Option<f64>,
    /// The same per direction: the kernel's r/s and w/s minus iosat's own reads and writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_r_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_w_s: Option<f64>,
    /// Requests of that other traffic in flight on average (Little's law with the kernel's
    /// r_await and w_await over the level): what it added to the level's own concurrency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_in_flight: Option<f64>,
    /// PSI `some avg10`-style share of the level's time, percent, from the `total` counters of
    /// `/proc/pressure/io` and `/proc/pressure/cpu` (None where the kernel has no PSI).
    pub psi_io_some_pct: Option<f64>,
    pub psi_cpu_some_pct: Option<f64>,
    /// The signal that cut the level short ("SIGINT", "SIGTERM", "SIGHUP"), if one did.
    pub cut_by: Option<String>,
    /// Relative widening of the level's intervals that the other traffic explains (0: none).
    /// Derived by the analysis from the curve (analysis::confidence::explain_other_traffic),
    /// never measured nor stored.
    #[serde(skip)]
    pub other_explains_rel: f64,
}

/// A sweep kept gentle on purpose (a production disk): its levels stop at `max_concurrency`
/// (`--max-concurrency`) and the requests it adds are capped at `rate_limit_iops`
/// (`--rate-limit`). The verdict then states a knee or ceiling it did not reach as a lower
/// bound, never more.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SweepLimits {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit_iops: Option<f64>,
}

impl SweepLimits {
    /// Neither limit was given.
    pub fn is_none(&self) -> bool {
        self.max_concurrency.is_none() && self.rate_limit_iops.is_none()
    }
}

/// Which requests a limit applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    ReadIops,
    WriteIops,
    ReadBytesPerS,
    WriteBytesPerS,
}

/// A limit the kernel applies to this process's I/O on the target's device: cgroup v2
/// `io.max` or v1 `blkio.throttle.*` along the process's cgroup path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IoLimit {
    pub kind: LimitKind,
    /// The limit: IOPS, or bytes per second.
    pub value: f64,
    /// `major:minor` of the device it applies to.
    pub dev: String,
    /// The file it was read from (`/sys/fs/cgroup/…/io.max`).
    pub source: String,
}
