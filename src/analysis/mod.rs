//! Findings from measurements: baseline ratio, the 3x-p95 overload rule, the knee (Kleinrock
//! power, USL fit), Little's law checks, verdicts in plain words. Pure: no IO, no sys/ imports.
//!
//! The input is a list of [`LevelPoint`]s, whatever produced them (a sweep, fio JSON, sysbench
//! text); the output is a [`Verdict`].

use serde::{Deserialize, Serialize};

/// Latency summary of one level, in nanoseconds. Percentiles a source does not give are `None`
/// (sysbench prints only min/avg/max/95th).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyNs {
    pub min: Option<f64>,
    pub mean: f64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

/// One concurrency level as the analysis sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelPoint {
    /// Requests kept in flight by the load generator (threads × queue depth).
    pub concurrency: u32,
    pub iops: f64,
    pub bytes_per_s: f64,
    pub latency_ns: LatencyNs,
    /// The kernel's %util for the device over the level, when known.
    pub kernel_util_pct: Option<f64>,
    /// The kernel's aqu-sz (average requests in flight) over the level, when known.
    pub kernel_aqu_sz: Option<f64>,
}

/// Universal Scalability Law fit: X(N) = λN / (1 + σ(N−1) + κN(N−1)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// Throughput of one request in flight (IOPS), λ.
    pub lambda: f64,
    /// Contention, σ.
    pub sigma: f64,
    /// Coherency (crosstalk), κ.
    pub kappa: f64,
    /// Coefficient of determination of the fit on the measured levels.
    pub r_squared: f64,
    /// Concurrency at which the fitted curve peaks: sqrt((1−σ)/κ); None when κ ≈ 0.
    pub peak_concurrency: Option<f64>,
    /// Fitted throughput at the peak.
    pub peak_iops: Option<f64>,
}

/// Per-level findings, aligned with the input levels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelFinding {
    pub concurrency: u32,
    /// Average latency ÷ baseline average latency (seed 000's "saturation").
    pub saturation_avg: f64,
    /// p95 ÷ baseline p95, when both are known.
    pub saturation_p95: Option<f64>,
    /// p95 above 3× the baseline p95 (seed 001's rule).
    pub overloaded: bool,
    /// Little's law: IOPS × mean latency (s), the concurrency the measurements imply.
    pub littles_law_concurrency: f64,
    /// False when IOPS × latency differs from the offered concurrency (or from aqu-sz) by more
    /// than the tolerance: the measurement is suspect.
    pub littles_law_ok: bool,
    /// Kleinrock's power: IOPS ÷ mean latency (s).
    pub power: f64,
}

/// The verdict on a set of levels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub baseline_latency_ns: f64,
    pub baseline_p95_ns: Option<f64>,
    pub levels: Vec<LevelFinding>,
    /// The first level whose p95 exceeds 3× the baseline p95; None when none is overloaded.
    pub overload_concurrency: Option<u32>,
    /// The optimal concurrency (the knee).
    pub knee_concurrency: u32,
    /// Measured IOPS at the knee.
    pub max_useful_iops: f64,
    /// The highest IOPS measured at any level.
    pub peak_iops: f64,
    pub usl: Option<UslFit>,
    /// The first level from which average latency grows in proportion to concurrency
    /// (queueing): None when it never turns linear within the measured levels.
    pub linear_from_concurrency: Option<u32>,
    /// A throughput plateau at a round number that looks like a provisioned cap (seed 003).
    pub suspected_cap_iops: Option<f64>,
    /// The %util lesson in the user's own numbers, when the data shows it.
    pub util_lesson: Option<String>,
    /// The plain-words summary.
    pub summary: Vec<String>,
}
