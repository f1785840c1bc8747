//! LevelStats → LevelResult → SweepReport: what a sweep measured, in the versioned JSON schema
//! documented in the README ("## iosat sweep"). Pure; must not import ui/, report/, sys/.

use super::{LevelSpec, LevelStats, Pattern};
use crate::analysis::{LatencyNs, LevelPoint, Verdict};
use hdrhistogram::Histogram;
use serde::Serialize;

/// Version of the sweep JSON schema; bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

pub use crate::latency::LatencySummary;

/// One direction (reads or writes) of a mixed level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DirectionResult {
    pub ios: u64,
    pub iops: f64,
    pub bytes_per_s: f64,
    pub latency_ns: LatencySummary,
}

/// Little's law on one level: the concurrency the measurements imply against the offered one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LittlesLaw {
    /// IOPS × mean latency (s).
    pub implied_concurrency: f64,
    /// Within [`crate::analysis::LITTLES_LAW_TOLERANCE`] of the offered concurrency, the rule
    /// the analysis (and so the verdict printed under the table) applies to the same level.
    pub ok: bool,
    /// The kernel's average queue size over the same interval, when known.
    pub kernel_aqu_sz: Option<f64>,
    /// aqu-sz between half of and a little above the offered concurrency; None when there is
    /// no kernel view or the kernel saw too few of our I/Os to compare (page cache, tmpfs).
    pub kernel_ok: Option<bool>,
}

/// One measured level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelResult {
    /// Requests kept in flight (threads × iodepth).
    pub concurrency: u32,
    pub threads: u32,
    pub iodepth: u32,
    /// The measured interval (after ramp-up).
    pub elapsed_ns: u64,
    pub ios: u64,
    pub iops: f64,
    pub bytes_per_s: f64,
    pub latency_ns: LatencySummary,
    /// Only for mixed patterns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<DirectionResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<DirectionResult>,
    /// The kernel's view of the device under the target over the same interval, under the key
    /// names of `iostat -x -o JSON` (`r/s`, `w/s`, `r_await`, `w_await`, `aqu-sz`, `util`, ...)
    /// plus `disk_device`; null when unknown (sim engine, no diskstats).
    pub kernel: Option<serde_json::Map<String, serde_json::Value>>,
    pub littles_law: LittlesLaw,
    /// Cut short by Ctrl-C.
    pub interrupted: bool,
}

fn direction(h: &Histogram<u64>, bytes: u64, elapsed_s: f64) -> DirectionResult {
    let ios = h.len();
    DirectionResult {
        ios,
        iops: ios as f64 / elapsed_s,
        bytes_per_s: bytes as f64 / elapsed_s,
        latency_ns: LatencySummary::from_hist(h),
    }
}

impl LevelResult {
    /// None when the level completed no I/O (stopped before measuring began).
    pub fn new(
        spec: &LevelSpec,
        stats: &LevelStats,
        kernel: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Option<LevelResult> {
        let ios = stats.read_ns.len() + stats.write_ns.len();
        if ios == 0 || stats.elapsed_ns == 0 {
            return None;
        }
        let elapsed_s = stats.elapsed_ns as f64 / 1e9;
        let mut all = stats.read_ns.clone();
        all.add(&stats.write_ns).expect("same bounds");
        let latency_ns = LatencySummary::from_hist(&all);
        let iops = ios as f64 / elapsed_s;
        let mixed = matches!(spec.pattern, Pattern::RandRw { .. });
        let offered = f64::from(spec.concurrency());
        let implied = iops * all.mean() / 1e9;
        let kernel_aqu_sz = kernel
            .as_ref()
            .and_then(|k| k.get("aqu-sz"))
            .and_then(|v| v.as_f64());
        let kernel_ios_s = kernel.as_ref().map(|k| {
            let g = |key: &str| k.get(key).and_then(|v| v.as_f64()).unwrap_or(0.0);
            g("r/s") + g("w/s")
        });
        // Compare aqu-sz only when the kernel saw (nearly) every one of our I/Os; below that
        // the page cache or another layer answered and the queue says nothing about us.
        let kernel_ok = match (kernel_aqu_sz, kernel_ios_s) {
            (Some(q), Some(k)) if k >= 0.8 * iops && k <= 1.25 * iops => {
                // Same rule as the analysis: the block layer sees only part of each I/O's
                // latency, so aqu-sz may sit below the offered concurrency, not above it.
                use crate::analysis::{AQU_SZ_MIN_SHARE, LITTLES_LAW_TOLERANCE};
                Some(
                    q <= offered * (1.0 + LITTLES_LAW_TOLERANCE) && q >= offered * AQU_SZ_MIN_SHARE,
                )
            }
            _ => None,
        };
        Some(LevelResult {
            concurrency: spec.concurrency(),
            threads: spec.threads,
            iodepth: spec.queue_depth,
            elapsed_ns: stats.elapsed_ns,
            ios,
            iops,
            bytes_per_s: (stats.read_bytes + stats.write_bytes) as f64 / elapsed_s,
            latency_ns,
            read: mixed.then(|| direction(&stats.read_ns, stats.read_bytes, elapsed_s)),
            write: mixed.then(|| direction(&stats.write_ns, stats.write_bytes, elapsed_s)),
            kernel,
            littles_law: LittlesLaw {
                implied_concurrency: implied,
                ok: (implied / offered - 1.0).abs() <= crate::analysis::LITTLES_LAW_TOLERANCE,
                kernel_aqu_sz,
                kernel_ok,
            },
            interrupted: stats.interrupted,
        })
    }

    /// The level as the analysis sees it.
    pub fn point(&self) -> LevelPoint {
        let l = &self.latency_ns;
        let f = |v: u64| Some(v as f64);
        let kf = |key: &str| {
            self.kernel
                .as_ref()
                .and_then(|k| k.get(key))
                .and_then(|v| v.as_f64())
        };
        LevelPoint {
            concurrency: self.concurrency,
            iops: self.iops,
            bytes_per_s: self.bytes_per_s,
            latency_ns: LatencyNs {
                min: f(l.min),
                mean: l.mean as f64,
                p50: f(l.p50),
                p90: f(l.p90),
                p95: f(l.p95),
                p99: f(l.p99),
                p999: f(l.p999),
                max: f(l.max),
            },
            kernel_util_pct: kf("util"),
            kernel_aqu_sz: kf("aqu-sz"),
        }
    }
}

/// What was run against.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetInfo {
    pub path: String,
    /// "temp-file" (laid out and removed by iosat), "file" or "block-device"; "none" for sim.
    pub kind: String,
    pub size_bytes: u64,
    /// The whole disk under the target (file → filesystem → partition → disk), when known.
    pub disk_device: Option<String>,
    pub logical_block_size: u32,
}

/// How it was run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadInfo {
    /// "sync", "uring" or "sim".
    pub engine: String,
    /// The engine's own description (sim parameters), if any.
    pub engine_spec: String,
    /// "randread", "randwrite", "read", "write" or "randrw".
    pub pattern: String,
    /// Percentage of reads (100 for read patterns, 0 for write patterns).
    pub read_pct: u8,
    pub block_size: u64,
    pub direct: bool,
    pub duration_ns: u64,
    pub ramp_ns: u64,
    /// "auto" or the comma-separated list asked for.
    pub levels: String,
    /// uring: the most worker threads a level is spread over.
    pub max_threads: u32,
    pub seed: u64,
}

pub fn pattern_name(p: Pattern) -> (&'static str, u8) {
    match p {
        Pattern::RandRead => ("randread", 100),
        Pattern::RandWrite => ("randwrite", 0),
        Pattern::Read => ("read", 100),
        Pattern::Write => ("write", 0),
        Pattern::RandRw { read_pct } => ("randrw", read_pct),
    }
}

/// The whole result of `iosat sweep`, written after every level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepReport {
    pub schema_version: u32,
    /// Always "sweep".
    pub kind: String,
    pub iosat_version: String,
    /// Start of the sweep, seconds since the Unix epoch.
    pub started_unix_s: u64,
    pub target: TargetInfo,
    pub workload: WorkloadInfo,
    pub levels: Vec<LevelResult>,
    /// None until at least one level is measured.
    pub verdict: Option<Verdict>,
    /// False while levels are still to come, or when Ctrl-C cut the sweep short.
    pub complete: bool,
    pub interrupted: bool,
    pub notes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pattern: Pattern, conc: u32) -> LevelSpec {
        LevelSpec {
            threads: conc,
            queue_depth: 1,
            pattern,
            block_size: 4096,
            ramp_ns: 0,
            duration_ns: 1_000_000_000,
            seed: 1,
        }
    }

    #[test]
    fn level_numbers_follow_from_the_histograms() {
        let mut st = LevelStats::new();
        // 1000 reads of 100 µs and 1000 writes of 300 µs in 0.5 s at concurrency 2... would be
        // 4000 IOPS × 200 µs = 0.8: Little's law must flag it against an offered 2.
        for _ in 0..1000 {
            st.read_ns.record(100_000).unwrap();
            st.write_ns.record(300_000).unwrap();
        }
        st.read_bytes = 1000 * 4096;
        st.write_bytes = 1000 * 4096;
        st.elapsed_ns = 500_000_000;
        let r = LevelResult::new(&spec(Pattern::RandRw { read_pct: 50 }, 2), &st, None).unwrap();
        assert_eq!(r.ios, 2000);
        assert!((r.iops - 4000.0).abs() < 1e-6);
        assert!((r.bytes_per_s - 4000.0 * 4096.0).abs() < 1e-3);
        assert!((r.latency_ns.mean as f64 - 200_000.0).abs() < 200.0);
        let rd = r.read.as_ref().unwrap();
        assert!((rd.iops - 2000.0).abs() < 1e-6);
        assert!((rd.latency_ns.p99 as f64 - 100_000.0).abs() < 100.0);
        assert!((r.littles_law.implied_concurrency - 0.8).abs() < 0.01);
        assert!(!r.littles_law.ok);
        assert_eq!(r.littles_law.kernel_ok, None);
    }

    #[test]
    fn read_only_level_has_no_split_and_closes_littles_law() {
        let mut st = LevelStats::new();
        for _ in 0..10_000 {
            st.read_ns.record(400_000).unwrap();
        }
        st.read_bytes = 10_000 * 4096;
        st.elapsed_ns = 1_000_000_000;
        let mut k = serde_json::Map::new();
        k.insert("r/s".into(), 10_000.0.into());
        k.insert("w/s".into(), 0.0.into());
        k.insert("aqu-sz".into(), 3.9.into());
        let r = LevelResult::new(&spec(Pattern::RandRead, 4), &st, Some(k)).unwrap();
        assert!(r.read.is_none() && r.write.is_none());
        assert!(r.littles_law.ok, "{:?}", r.littles_law);
        assert_eq!(r.littles_law.kernel_ok, Some(true));
        assert_eq!(r.point().kernel_aqu_sz, Some(3.9));
    }

    #[test]
    fn empty_level_is_dropped() {
        assert!(LevelResult::new(&spec(Pattern::RandRead, 1), &LevelStats::new(), None).is_none());
    }
}
