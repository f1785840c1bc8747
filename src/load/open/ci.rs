//! The 95 % confidence intervals of an open-loop level's latency from the intended start
//! ([`latency_ci`]): for each percentile the wider of two intervals, read from the level's
//! HdrHistogram —
//! - distribution-free, from order statistics: with n independent samples the q-quantile
//!   lies between the values at ranks n·q ∓ 1.96·√(n·q·(1−q));
//! - batch, over the level's sub-windows (windows.rs): consecutive requests in a busy queue
//!   wait alike, so n overstates the independent samples; the share of each window's requests
//!   below the level's q-quantile then varies from window to window more than n says, and a
//!   Student t over the windows (7 degrees of freedom for 8) turns that spread into ranks.
//!
//! The mean's interval is the wider of 1.96 standard errors and the windows' batch means
//! interval.
//!
//! What it is worth (tests below): on independent samples the intervals cover the true value
//! 96-99 % of the time (above 95 %: the wider of two) and are 1.2x as wide as order
//! statistics alone. In an M/M/1 queue at 80 % load (16,000 requests, a queue that remembers
//! for about a hundred) they cover 88-95 % for the mean and p50..p99, where order statistics
//! alone would cover 13-30 %, but the p99.9 only about 40 %: its few requests above it come
//! in two or three bursts, which eight windows can't weigh. Read the p99.9's interval, and
//! any interval near saturation (where a queue remembers for seconds, longer than a window),
//! as a lower bound of the uncertainty. An upper end beyond the sample's largest rank is the
//! largest value seen.
//! Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/, sys/.

use crate::analysis::open::LatencyCi;
use crate::latency::Recorder;
use crate::load::windows::SubWindows;

pub use crate::analysis::confidence::Z95;

fn t975(df: usize) -> f64 {
    crate::analysis::confidence::t95(u32::try_from(df).unwrap_or(u32::MAX))
}

/// The level's value at quantile `q` (clamped to 0..=1), as [`Recorder::summary`] reads it.
fn value_at(r: &Recorder, q: f64) -> u64 {
    r.hist
        .value_at_quantile(q.clamp(0.0, 1.0))
        .clamp(r.min_ns, r.max_ns)
}

/// The batch interval's half-width for a ratio Σy / Σn over windows of (n, y): the
/// ratio estimator's standard error over the windows that completed something, times
/// Student's t; None with fewer than two such windows.
fn batch_half_width(windows: &[(f64, f64)]) -> Option<f64> {
    let busy: Vec<(f64, f64)> = windows.iter().copied().filter(|w| w.0 > 0.0).collect();
    let k = busy.len();
    if k < 2 {
        return None;
    }
    let n: f64 = busy.iter().map(|w| w.0).sum();
    let ratio = busy.iter().map(|w| w.1).sum::<f64>() / n;
    let n_bar = n / k as f64;
    let var = busy
        .iter()
        .map(|&(nw, yw)| ((yw - ratio * nw) / n_bar).powi(2))
        .sum::<f64>()
        / (k * (k - 1)) as f64;
    Some(t975(k - 1) * var.sqrt())
}

/// The half-widths, in probability, of the q-quantiles in [`QUANTILES`]: the wider of the
/// order-statistic and the batch one.
fn quantile_half_widths(r: &Recorder, windows: &SubWindows) -> [f64; 5] {
    let n = r.count as f64;
    QUANTILES.map(|q| {
        let iid = Z95 * (q * (1.0 - q) / n).sqrt();
        let per = windows.per_window_below(value_at(r, q) as f64);
        let batch: Vec<(f64, f64)> = per
            .iter()
            .map(|&(ios, _, below)| (ios as f64, below))
            .collect();
        batch_half_width(&batch).map_or(iid, |b| b.max(iid))
    })
}

/// The quantiles whose intervals are given, in [`LatencyCi`]'s order.
const QUANTILES: [f64; 5] = [0.50, 0.90, 0.95, 0.99, 0.999];

/// The interval of the `q`-quantile of half-width `h` (in probability), read from the
/// histogram on both sides.
fn quantile_ci(r: &Recorder, q: f64, h: f64) -> [u64; 2] {
    let x = value_at(r, q);
    [value_at(r, q - h).min(x), value_at(r, q + h).max(x)]
}

/// The mean's interval: the wider of 1.96 standard errors and the windows' batch means
/// interval, clamped to the values seen.
fn mean_ci(r: &Recorder, windows: &SubWindows, mean: u64) -> [u64; 2] {
    let iid = Z95 * r.hist.stdev() / (r.count as f64).sqrt();
    let batch: Vec<(f64, f64)> = windows
        .per_window_below(0.0)
        .iter()
        .map(|&(ios, sum, _)| (ios as f64, sum as f64))
        .collect();
    let h = batch_half_width(&batch).map_or(iid, |b| b.max(iid));
    let m = mean as f64;
    [
        ((m - h).max(r.min_ns as f64).round() as u64).min(mean),
        ((m + h).min(r.max_ns as f64).round() as u64).max(mean),
    ]
}

/// The 95 % intervals of every figure of `r.summary()`, given the same requests counted per
/// sub-window in `windows`; None when nothing was recorded.
pub fn latency_ci(r: &Recorder, windows: &SubWindows) -> Option<LatencyCi> {
    if r.count == 0 {
        return None;
    }
    let s = r.summary();
    let h = quantile_half_widths(r, windows);
    Some(LatencyCi {
        mean: mean_ci(r, windows, s.mean),
        p50: quantile_ci(r, QUANTILES[0], h[0]),
        p90: quantile_ci(r, QUANTILES[1], h[1]),
        p95: quantile_ci(r, QUANTILES[2], h[2]),
        p99: quantile_ci(r, QUANTILES[3], h[3]),
        p999: quantile_ci(r, QUANTILES[4], h[4]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::windows::SUB_WINDOWS;
    use crate::load::workload::Rng;

    /// Uniform in (0, 1].
    fn unit(rng: &mut Rng) -> f64 {
        ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    fn exp(rng: &mut Rng, mean: f64) -> f64 {
        -mean * unit(rng).ln()
    }

    /// `n` latencies from `next`, recorded as the open engine records them: the whole level
    /// and, in order, [`SUB_WINDOWS`] equal windows.
    fn level(n: usize, mut next: impl FnMut() -> f64) -> (Recorder, SubWindows) {
        let (mut r, mut w) = (Recorder::new(), SubWindows::default());
        for i in 0..n {
            let ns = next().max(1.0) as u64;
            r.record(ns);
            w.record(i * SUB_WINDOWS / n, ns);
        }
        (r, w)
    }

    /// How often, over `seeds` levels, each figure's interval held its true value.
    fn coverage(
        seeds: u64,
        truth: [f64; 6],
        mut make: impl FnMut(u64) -> (Recorder, SubWindows),
    ) -> [f64; 6] {
        let mut hit = [0u32; 6];
        for seed in 0..seeds {
            let (r, w) = make(seed);
            let ci = latency_ci(&r, &w).unwrap();
            let s = r.summary();
            let all = [ci.mean, ci.p50, ci.p90, ci.p95, ci.p99, ci.p999];
            let vals = [s.mean, s.p50, s.p90, s.p95, s.p99, s.p999];
            for (i, ([lo, hi], v)) in all.iter().zip(vals).enumerate() {
                assert!(lo <= &v && &v <= hi, "{i}: {lo} {v} {hi}");
                // HdrHistogram's buckets are 0.1 % wide: a bound may sit that far off.
                let (lo, hi) = (*lo as f64 * 0.999, *hi as f64 * 1.001);
                hit[i] += u32::from(lo <= truth[i] && truth[i] <= hi);
            }
        }
        hit.map(|h| f64::from(h) / seeds as f64)
    }

    /// Exponential latencies (mean 1 ms): quantile q at −ln(1−q) ms.
    fn exp_truth() -> [f64; 6] {
        let q = |q: f64| -(1.0f64 - q).ln() * 1e6;
        [1e6, q(0.5), q(0.9), q(0.95), q(0.99), q(0.999)]
    }

    #[test]
    fn independent_samples_are_covered_at_least_95_percent_of_the_time_and_not_much_wider() {
        // 300 levels of 8,000 independent exponential latencies. The batch interval is the
        // wider one about half the time, so the coverage is above the order-statistic
        // interval's 95 %, never below; the price is a somewhat wider interval.
        let (mut width, mut iid_width) = (0.0, 0.0);
        let cov = coverage(300, exp_truth(), |seed| {
            let mut rng = Rng::new(seed);
            let (r, w) = level(8000, || exp(&mut rng, 1e6));
            let [lo, hi] = latency_ci(&r, &w).unwrap().p99;
            width += (hi - lo) as f64;
            let [lo, hi] = latency_ci(&r, &SubWindows::default()).unwrap().p99;
            iid_width += (hi - lo) as f64;
            (r, w)
        });
        for (name, c) in ["mean", "p50", "p90", "p95", "p99", "p99.9"]
            .iter()
            .zip(cov)
        {
            assert!((0.93..=0.995).contains(&c), "{name}: {c} ({cov:?})");
        }
        let wider = width / iid_width;
        // Measured: 96-99 % coverage, intervals 1.23x as wide.
        assert!((1.0..1.4).contains(&wider), "{wider}");
    }

    #[test]
    fn the_order_statistic_interval_alone_is_a_95_percent_interval() {
        // The same levels without windows (one window: no batch interval).
        let truth = exp_truth();
        let mut hit = 0;
        let seeds = 400;
        for seed in 0..seeds {
            let mut rng = Rng::new(1000 + seed);
            let mut r = Recorder::new();
            for _ in 0..4000 {
                r.record(exp(&mut rng, 1e6) as u64);
            }
            let ci = latency_ci(&r, &SubWindows::default()).unwrap();
            let [lo, hi] = ci.p99;
            hit += u32::from(lo as f64 * 0.999 <= truth[4] && truth[4] <= hi as f64 * 1.001);
        }
        let c = f64::from(hit) / f64::from(seeds as u32);
        assert!((0.92..=0.98).contains(&c), "{c}");
    }

    /// An M/M/1 queue at load `rho` < 1 (service mean 1 ms), from its stationary state: each
    /// request's time in the system by Lindley's recursion. Its sojourn time is exponential
    /// with mean 1/(μ − λ) (5 ms at 80 %), and consecutive requests wait alike.
    fn mm1(seed: u64, n: usize, rho: f64) -> (Recorder, SubWindows) {
        let (mu, lambda) = (1.0 / 1e6, rho / 1e6);
        let mut rng = Rng::new(seed);
        // Stationary waiting time: 0 with probability 1 − ρ, else exponential(μ − λ).
        let mut wait = if unit(&mut rng) < rho {
            exp(&mut rng, 1.0 / (mu - lambda))
        } else {
            0.0
        };
        level(n, || {
            let service = exp(&mut rng, 1.0 / mu);
            let sojourn = wait + service;
            wait = (sojourn - exp(&mut rng, 1.0 / lambda)).max(0.0);
            sojourn
        })
    }

    #[test]
    fn a_busy_queue_widens_the_interval_to_keep_its_coverage() {
        let q = |q: f64| -(1.0f64 - q).ln() * 5e6;
        let truth = [5e6, q(0.5), q(0.9), q(0.95), q(0.99), q(0.999)];
        let seeds = 200;
        let cov = coverage(seeds, truth, |seed| mm1(seed, 16_000, 0.8));
        // What independent samples would claim: the order-statistic interval alone.
        let naive = coverage(seeds, truth, |seed| {
            let (r, _) = mm1(seed, 16_000, 0.8);
            (r, SubWindows::default())
        });
        assert!(naive[4] < 0.75, "the naive interval covers {naive:?}");
        // Eight batches of a queue that remembers for a few hundred requests: the batch
        // interval holds most of its promise (measured: 91 % for the mean, 88-95 % for
        // p50..p99, where independent samples' intervals would cover 13-30 %). The p99.9 is
        // the least sure: its 16 requests above it come in two or three bursts, which eight
        // windows can't weigh (measured 40 %; module docs).
        for (name, c) in ["mean", "p50", "p90", "p95", "p99"].iter().zip(cov) {
            assert!(c >= 0.85, "{name}: {c} ({cov:?})");
            assert!(
                c > naive[0].max(naive[4]) + 0.5,
                "{cov:?} against {naive:?}"
            );
        }
        assert!(cov[5] > naive[5] + 0.2, "p99.9: {cov:?} against {naive:?}");
    }

    /// An open-loop level of `secs` at `rate` IOPS on the M/M/1 queue of [`mm1`] (1,000 IOPS
    /// at most): kept below 97 % load, as a real level would fall behind above.
    fn mm1_level(seed: u64, rate: f64, secs: f64) -> crate::analysis::open::OpenPoint {
        let rho = (rate / 1000.0).min(0.97);
        let (r, w) = mm1(seed, (rate * secs) as usize, rho);
        let lat = crate::analysis::LatencyNs::from(&r.summary());
        crate::analysis::open::OpenPoint {
            offered_iops: rate,
            iops: rate,
            latency_ns: lat.clone(),
            service_latency_ns: lat,
            kept: rate / 1000.0 < 0.97,
            lag: (rate / 1000.0 >= 0.97).then_some(crate::analysis::open::Lag::Device),
            latency_ci_ns: latency_ci(&r, &w),
        }
    }

    #[test]
    fn the_target_search_on_a_simulated_queue_brackets_the_true_crossing() {
        use crate::analysis::open::{at_target, search_next, Percentile, Target, MAX_PROBES};
        // p99 <= 10 ms on the M/M/1 queue: its p99 is ln(100)/(μ − λ), so the highest rate
        // meeting it is 1000 − ln(100)/10 ms ≈ 539.5 IOPS. Levels of 8 s, as the search runs
        // them from a closed-loop maximum of 1000 and an estimate of 800.
        let t = Target {
            percentile: Percentile::P99,
            limit_ns: 10e6,
        };
        let truth = 1000.0 - 100f64.ln() / 10e-3;
        let seeds = 40u64;
        let (mut held, mut near) = (0, 0);
        for seed in 0..seeds {
            let mut levels = Vec::new();
            while let Some(rate) = search_next(&levels, t, 1000.0, Some(800.0)) {
                levels.push(mm1_level(seed * 100 + levels.len() as u64, rate, 8.0));
            }
            assert!(levels.len() <= MAX_PROBES);
            let a = at_target(&levels, t).unwrap();
            let h = a.high_iops.expect("a rate surely missed");
            assert!(a.low_iops <= a.iops && a.iops <= h, "{a:?}");
            held += u32::from(a.low_iops <= truth && truth <= h);
            near += u32::from((a.iops - truth).abs() <= 0.1 * truth);
        }
        let (held, near) = (
            f64::from(held) / seeds as f64,
            f64::from(near) / seeds as f64,
        );
        // The interval holds the true crossing at least about 95 % of the time (each end is
        // wrong at most 2.5 %), and the point estimate is within 10 % of it mostly. Measured:
        // held in 39 of 40 runs, 50 % of the crossing wide on average, the estimate within
        // 10 % in 37; the same levels judged on their p99s alone (the rule before the
        // intervals) bracketed it in 22 of 40, with an interval of 16 %.
        assert!(
            held >= 0.9,
            "the interval held the crossing in {held} of the runs"
        );
        assert!(
            near >= 0.8,
            "the estimate was within 10 % in {near} of the runs"
        );
    }

    #[test]
    fn a_single_value_has_a_point_interval_and_nothing_recorded_has_none() {
        let (r, w) = level(100, || 5000.0);
        let ci = latency_ci(&r, &w).unwrap();
        assert_eq!(ci.p99, [5000, 5000]);
        assert_eq!(ci.mean, [5000, 5000]);
        assert!(latency_ci(&Recorder::new(), &SubWindows::default()).is_none());
    }
}
