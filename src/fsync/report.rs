//! The result of `iosat fsync` and its JSON (schema_version 2: the envelope), both ways: written by
//! the run, read back by `iosat report` (version 1 files and older ones load through serde
//! defaults; a schema_version this build does not know is refused). Plain data; the one renderer is
//! report/fsync.rs.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, load/.

use super::{Method, Mode};
use serde::{Deserialize, Serialize};

/// 2: the envelope (`kind` for `command`, host, kernel, cpus, start); 1 still loads.
pub const SCHEMA_VERSION: u32 = 2;

pub use crate::latency::LatencySummary;

/// What the device's flush counters (/proc/diskstats fields 19–20, kernel ≥ 5.5) did during
/// one measured run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlushStats {
    /// Flush requests the device completed during the run.
    pub flushes: u64,
    /// Flushes per second (iostat's f/s).
    pub f_s: f64,
    /// Average time of a flush at the device in ms (iostat's f_await); None with no flushes.
    pub f_await_ms: Option<f64>,
    /// Average flushes in flight (Δflush_ms / Δt, Little's law).
    pub flush_concurrency: Option<f64>,
    /// The measured interval the counters span, seconds.
    pub interval_s: f64,
    /// The block-latency source's view of the same window (None without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_layer: Option<BlockFlushes>,
}

/// The flushes the block-latency source (BPF) timed at the device during one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockFlushes {
    /// Flush completions the histogram saw.
    pub flushes: u64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifyStatus {
    Ok,
    /// `--no-verify` (and the default when a file does not say).
    #[default]
    Skipped,
    Failed,
}

/// A read-back's outcome as a case, a level or a setting states it: the status and what was
/// wrong. Flattened into each, so its fields stand in the JSON as they did before it existed;
/// the default is a read-back skipped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    #[serde(default)]
    pub verify: VerifyStatus,
    #[serde(default)]
    pub verify_error: Option<String>,
}

impl Verification {
    pub fn of(check: std::result::Result<(), String>) -> Verification {
        match check {
            Ok(()) => Verification {
                verify: VerifyStatus::Ok,
                verify_error: None,
            },
            Err(e) => Verification {
                verify: VerifyStatus::Failed,
                verify_error: Some(e),
            },
        }
    }

    pub fn failed(&self) -> bool {
        self.verify == VerifyStatus::Failed
    }
}

/// One measured case: a method, a write size, a mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub method: Method,
    pub size: u32,
    pub mode: Mode,
    #[serde(default)]
    pub description: String,
    /// Under --like: the database setting this case stands for ("wal_sync_method =
    /// open_sync"), the name the verdict's lines use instead of iosat's method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<String>,
    pub durable: bool,
    pub commits: u64,
    pub elapsed_ns: u64,
    /// Commits per second over the run (one connection: one commit at a time).
    pub commits_per_s: f64,
    pub latency_ns: LatencySummary,
    /// 1 / mean latency: what one connection can commit per second (seed 002).
    pub per_connection_commits_per_s: f64,
    /// ceil(target TPS × mean latency), with `--target-tps`.
    pub connections_for_target_tps: Option<u64>,
    /// None when the device or its flush counters are unknown.
    pub device_flushes: Option<FlushStats>,
    /// The read-back (`verify`, `verify_error` in the JSON, where they always stood).
    #[serde(flatten)]
    pub verification: Verification,
    /// An append case that reached the file-size cap before its duration ended.
    #[serde(default)]
    pub stopped_at_size_cap: bool,
    /// Ctrl-C arrived during this case: it is partial.
    #[serde(default)]
    pub interrupted: bool,
}

/// A case that was not run, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub method: Method,
    pub size: u32,
    pub mode: Mode,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// All committers append to one log; a leader fsyncs for every writer waiting.
    SharedLog,
    /// Each committer writes and fsyncs its own file.
    SeparateFiles,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::SharedLog => "shared_log",
            Layout::SeparateFiles => "separate_files",
        }
    }
}

/// One group-commit level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupLevel {
    pub committers: u32,
    pub layout: Layout,
    /// PostgreSQL's commit_delay emulated (µs the leader waits before its flush, only with
    /// at least commit_siblings other committers); 0: none.
    #[serde(default)]
    pub commit_delay_us: u32,
    pub commits: u64,
    pub elapsed_ns: u64,
    pub commits_per_s: f64,
    /// fsync calls made (shared log: one per group).
    pub syncs: u64,
    pub commits_per_sync: f64,
    /// Each commit: from its write to the moment a flush covering it returned.
    pub latency_ns: LatencySummary,
    pub device_flushes: Option<FlushStats>,
    /// The read-back (`verify`, `verify_error` in the JSON, where they always stood).
    #[serde(flatten)]
    pub verification: Verification,
    #[serde(default)]
    pub interrupted: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupCommit {
    pub method: Method,
    pub size: u32,
    pub levels: Vec<GroupLevel>,
    /// Level with the best commits/s per unit of mean latency (Kleinrock's power) per layout.
    pub knee_shared_log: Option<u32>,
    pub knee_separate_files: Option<u32>,
    #[serde(default)]
    pub summary: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlushVerdict {
    Plausible,
    TooFastForPhysics,
    FlushesNotReachingDevice,
    #[default]
    Unknown,
}

impl FlushVerdict {
    pub fn name(self) -> &'static str {
        match self {
            FlushVerdict::Plausible => "plausible",
            FlushVerdict::TooFastForPhysics => "too_fast_for_physics",
            FlushVerdict::FlushesNotReachingDevice => "flushes_not_reaching_device",
            FlushVerdict::Unknown => "unknown",
        }
    }
}

/// The device holding the test directory, as sysfs reports it, and the flush-honesty verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceSection {
    pub name: Option<String>,
    /// "major:minor".
    pub dev: Option<String>,
    pub model: Option<String>,
    /// queue/write_cache: "write back" (volatile cache, flushes needed) or "write through".
    pub write_cache: Option<String>,
    /// queue/fua: the device honours Force Unit Access writes.
    pub fua: Option<bool>,
    /// queue/rotational.
    pub rotational: Option<bool>,
    pub logical_block_size: Option<u32>,
    #[serde(default)]
    pub flush_verdict: FlushVerdict,
    #[serde(default)]
    pub flush_reasoning: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    pub target_tps: Option<f64>,
    /// The fastest durable case measured.
    pub best_durable: Option<CapacityLine>,
    /// The seed's reference method: write + fsync (overwrite mode, smallest size) if measured.
    pub fsync_reference: Option<CapacityLine>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityLine {
    pub method: Method,
    pub size: u32,
    pub mode: Mode,
    pub mean_latency_ns: u64,
    pub per_connection_commits_per_s: f64,
    pub connections_for_target_tps: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FsyncReport {
    /// kind "fsync" (`command` before schema 2), versions, host, start (crate::envelope).
    #[serde(flatten)]
    pub envelope: crate::envelope::Envelope,
    pub dir: String,
    pub duration_s_per_case: f64,
    #[serde(default)]
    pub verify: bool,
    #[serde(default)]
    pub interrupted: bool,
    pub cases: Vec<CaseResult>,
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    #[serde(default)]
    pub capacity: Capacity,
    pub group_commit: Option<GroupCommit>,
    pub device: DeviceSection,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// `--like postgres|innodb|mariadb`: one entry per setting, the recommendation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub like: Option<super::like::LikeResult>,
}

impl FsyncReport {
    /// Read a saved `iosat fsync --json` result. Err says why in words: a schema_version this
    /// build does not know (a newer iosat wrote it) or a field of the wrong type.
    pub fn verification_failed(&self) -> bool {
        self.cases.iter().any(|c| c.verification.failed())
            || self
                .like
                .as_ref()
                .is_some_and(|l| l.entries.iter().any(|e| e.verification.failed()))
            || self
                .group_commit
                .as_ref()
                .is_some_and(|g| g.levels.iter().any(|l| l.verification.failed()))
    }
}

impl CaseResult {
    /// A case as measured: commits/s over the interval, what one connection can commit per
    /// second (1 / mean latency), and with a target the connections it needs. Verified `Ok`
    /// until the read-back says otherwise.
    pub fn measured(
        (method, mode, size): (Method, Mode, u32),
        latency_ns: LatencySummary,
        (commits, elapsed_ns): (u64, u64),
        target_tps: Option<f64>,
        device_flushes: Option<FlushStats>,
    ) -> CaseResult {
        let mean = latency_ns.mean;
        CaseResult {
            method,
            size,
            mode,
            description: method.describe().into(),
            setting: None,
            durable: method.durable(),
            commits,
            elapsed_ns,
            commits_per_s: per_second(commits, elapsed_ns),
            latency_ns,
            per_connection_commits_per_s: if mean > 0 { 1e9 / mean as f64 } else { 0.0 },
            connections_for_target_tps: match target_tps {
                Some(t) if mean > 0 => Some(connections_for(t, mean)),
                _ => None,
            },
            device_flushes,
            verification: Verification::of(Ok(())),
            stopped_at_size_cap: false,
            interrupted: false,
        }
    }
}

#[cfg(test)]
impl FlushStats {
    /// `flushes` over one second, each taking `f_await_ms` when there were any.
    pub(crate) fn sample(flushes: u64, f_await_ms: f64, flush_concurrency: f64) -> FlushStats {
        FlushStats {
            flushes,
            f_s: flushes as f64,
            f_await_ms: (flushes > 0).then_some(f_await_ms),
            flush_concurrency: Some(flush_concurrency),
            interval_s: 1.0,
            block_layer: None,
        }
    }
}

/// `count` events over `elapsed_ns` as a rate per second; 0 over an empty interval.
pub fn per_second(count: u64, elapsed_ns: u64) -> f64 {
    if elapsed_ns > 0 {
        count as f64 * 1e9 / elapsed_ns as f64
    } else {
        0.0
    }
}

/// ceil(tps × latency): connections needed when each can only commit once per latency.
pub fn connections_for(target_tps: f64, mean_latency_ns: u64) -> u64 {
    let need = target_tps * mean_latency_ns as f64 / 1e9;
    // Round away float noise (200 × 0.020 s = 4.000000000000001) before the ceiling.
    let need = (need * 1e9).round() / 1e9;
    (need.ceil() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_follow_the_seed() {
        // Seed 002: 200 write transactions/s at 18 ms per fsync need at least 4 connections.
        assert_eq!(connections_for(200.0, 18_000_000), 4);
        assert_eq!(connections_for(200.0, 20_000_000), 4);
        assert_eq!(connections_for(200.0, 20_000_001), 5);
        assert_eq!(connections_for(56.0, 18_000_000), 2);
        assert_eq!(connections_for(1.0, 1_000), 1);
    }
}
