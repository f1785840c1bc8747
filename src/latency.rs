//! Latency distributions, one way for every experiment: a [`Recorder`] each worker owns
//! (HdrHistogram plus exact count, sum, min and max; merged with `+=` after join, docs/design.md
//! §3.9) and the [`LatencySummary`] every result carries, in integer nanoseconds. Used by load/
//! (sweep levels) and fsync/ (commit cases, group commit).
//! Imports only: nothing.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latency distribution of one level, case or direction, integer nanoseconds: min, mean
/// (rounded) and max exact when recorded through a [`Recorder`], percentiles to HdrHistogram's
/// 3 significant digits. Fields missing from an older file read as 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LatencySummary {
    pub min: u64,
    pub mean: u64,
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl LatencySummary {
    /// From a histogram alone (its mean is the histogram's, to its precision).
    pub fn from_hist(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            min: h.min(),
            mean: h.mean().round() as u64,
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p95: h.value_at_quantile(0.95),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

/// Latencies of one worker: an HdrHistogram (1 ns to 100 s, 3 significant digits) for the
/// percentiles, plus the exact count, sum, min and max. Allocated before the timed loop;
/// `record` does not allocate.
#[derive(Debug, Clone)]
pub struct Recorder {
    pub hist: Histogram<u64>,
    pub count: u64,
    pub sum_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            hist: Histogram::new_with_bounds(1, 100_000_000_000, 3)
                .expect("valid histogram bounds"),
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        let ns = ns.max(1);
        self.hist.saturating_record(ns);
        self.count += 1;
        self.sum_ns += ns as u128;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// min, mean and max exact; percentiles to HdrHistogram's 3 significant digits, clamped to
    /// the exact min and max.
    pub fn summary(&self) -> LatencySummary {
        if self.count == 0 {
            return LatencySummary::default();
        }
        let q = |p: f64| {
            self.hist
                .value_at_quantile(p)
                .clamp(self.min_ns, self.max_ns)
        };
        LatencySummary {
            min: self.min_ns,
            mean: ((self.sum_ns + self.count as u128 / 2) / self.count as u128) as u64,
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: self.max_ns,
        }
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

/// Merge another worker's latencies (after join).
impl std::ops::AddAssign<&Recorder> for Recorder {
    fn add_assign(&mut self, o: &Recorder) {
        self.hist.add(&o.hist).expect("same histogram bounds");
        self.count += o.count;
        self.sum_ns += o.sum_ns;
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_is_exact_where_it_can_be() {
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        // 1..=1000 µs: p50 = 500 µs, p99 = 990 µs, mean 500.5 µs.
        for i in 1..=1000u64 {
            if i % 2 == 0 {
                a.record(i * 1000 + 7)
            } else {
                b.record(i * 1000 + 7)
            }
        }
        a += &b;
        let s = a.summary();
        assert_eq!(s.min, 1007);
        assert_eq!(s.max, 1_000_007);
        assert_eq!(s.mean, 500_507);
        for (got, want) in [
            (s.p50, 500_007u64),
            (s.p95, 950_007),
            (s.p99, 990_007),
            (s.p999, 999_007),
        ] {
            let err = got.abs_diff(want) as f64 / want as f64;
            assert!(err <= 0.001, "{got} vs {want}");
        }
        assert!(s.min <= s.p50 && s.p999 <= s.max);
        assert_eq!(Recorder::new().summary(), LatencySummary::default());
    }

    #[test]
    fn older_files_without_p90_still_load() {
        let s: LatencySummary =
            serde_json::from_str(r#"{"min":1,"mean":2,"p50":2,"p95":3,"p99":4,"p999":5,"max":6}"#)
                .unwrap();
        assert_eq!((s.p90, s.p95, s.max), (0, 3, 6));
    }
}
