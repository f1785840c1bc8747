//! A level measured as [`SUB_WINDOWS`] equal sub-windows: each worker counts its completions into a
//! small fixed array indexed by the sub-window the completion falls in (a [`WindowClock`] advances
//! the index without a division; no allocation, no lock in the hot loop), the arrays are merged
//! with `+=` after join, and [`SubWindows::figures`] turns them into per-window IOPS, mean and p95
//! — whose [`spread`] says how far the level's figures can be trusted. Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/, sys/.

use crate::analysis::evidence::Spread;
use serde::{Deserialize, Serialize};

/// Sub-windows per level. Eight windows of the default 2 s level are 250 ms each: long enough
/// for a p95 at a single request in flight on any disk faster than 80 IOPS
/// ([`MIN_IOS_FOR_P95`] completions), short enough that the spread sees a disturbance that
/// lasts a fraction of the level.
pub const SUB_WINDOWS: usize = 8;

/// Fewer completions than this in a window: its p95 is not reported (a p95 of a handful of
/// requests is their maximum).
pub const MIN_IOS_FOR_P95: u64 = 20;

/// Latency buckets per window: values below 16 ns exactly, then 8 log-linear buckets per
/// power of two (12.5 % wide) up to 2^41 ns (about 36 minutes), the top one open-ended.
const LINEAR: usize = 16;
const PER_OCTAVE: usize = 8;
const BUCKETS: usize = LINEAR + (41 - 4) * PER_OCTAVE;

/// Bucket of a latency: exact below 16 ns, else the power of two and its top 3 bits below it.
#[inline]
fn bucket(ns: u64) -> usize {
    if ns < LINEAR as u64 {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros() as usize; // ≥ 4
    let sub = ((ns >> (e - 3)) & 7) as usize;
    (LINEAR + (e - 4) * PER_OCTAVE + sub).min(BUCKETS - 1)
}

/// The middle of a bucket's range, ns.
fn bucket_mid(i: usize) -> f64 {
    if i < LINEAR {
        return i as f64;
    }
    let (lo, width) = bucket_range(i);
    lo + width / 2.0
}

/// A bucket's lowest value and width, ns (width 1 for the exact ones).
fn bucket_range(i: usize) -> (f64, f64) {
    if i < LINEAR {
        return (i as f64, 1.0);
    }
    let e = (i - LINEAR) / PER_OCTAVE + 4;
    let sub = ((i - LINEAR) % PER_OCTAVE) as u64;
    let width = 1u64 << (e - 3);
    (((8 + sub) * width) as f64, width as f64)
}

/// One sub-window's completions.
#[derive(Debug, Clone)]
struct WinAcc {
    ios: u64,
    sum_ns: u64,
    buckets: [u32; BUCKETS],
}

impl Default for WinAcc {
    fn default() -> Self {
        WinAcc {
            ios: 0,
            sum_ns: 0,
            buckets: [0; BUCKETS],
        }
    }
}

/// Completions per sub-window, owned by one worker (or merged over a level's workers).
#[derive(Debug, Clone)]
pub struct SubWindows {
    wins: Box<[WinAcc; SUB_WINDOWS]>,
}

impl Default for SubWindows {
    fn default() -> Self {
        SubWindows {
            wins: Box::new(std::array::from_fn(|_| WinAcc::default())),
        }
    }
}

impl SubWindows {
    /// Count one completion of latency `ns` in window `w` (from [`WindowClock::index`]).
    #[inline]
    pub fn record(&mut self, w: usize, ns: u64) {
        let a = &mut self.wins[w.min(SUB_WINDOWS - 1)];
        a.ios += 1;
        a.sum_ns = a.sum_ns.saturating_add(ns);
        let b = &mut a.buckets[bucket(ns)];
        *b = b.saturating_add(1);
    }

    /// Completions counted over all windows.
    pub fn ios(&self) -> u64 {
        self.wins.iter().map(|w| w.ios).sum()
    }

    /// Per window: (completions, sum of their latencies in ns, how many were below `ns`),
    /// the last counted linearly inside the bucket `ns` falls in (so a threshold between
    /// two recorded values moves the count smoothly). For batch statistics over the windows
    /// (load/open/ci.rs).
    pub fn per_window_below(&self, ns: f64) -> [(u64, u64, f64); SUB_WINDOWS] {
        let b = bucket(ns.max(0.0) as u64);
        let (lo, width) = bucket_range(b);
        let frac = ((ns - lo) / width).clamp(0.0, 1.0);
        std::array::from_fn(|i| {
            let w = &self.wins[i];
            let below: u64 = w.buckets[..b].iter().map(|&c| u64::from(c)).sum();
            (
                w.ios,
                w.sum_ns,
                below as f64 + frac * f64::from(w.buckets[b]),
            )
        })
    }

    /// Per-window figures of a level whose measured phase was split into windows of
    /// `span_ns` and lasted `elapsed_ns` (the whole window, or up to the last counted completion of a level cut short).
    /// Windows that ran less than half their span (a level cut short) are left out.
    pub fn figures(&self, span_ns: u64, elapsed_ns: u64) -> Vec<WindowFigures> {
        let mut out = Vec::new();
        if span_ns == 0 {
            return out;
        }
        for (i, w) in self.wins.iter().enumerate() {
            let start = i as u64 * span_ns;
            let len = if i == SUB_WINDOWS - 1 {
                elapsed_ns.saturating_sub(start)
            } else {
                elapsed_ns.saturating_sub(start).min(span_ns)
            };
            if len < span_ns / 2 {
                continue;
            }
            // A window without a completion is a stall, kept: its IOPS are 0.
            out.push(WindowFigures {
                ios: w.ios,
                iops: w.ios as f64 * 1e9 / len as f64,
                mean_ns: if w.ios == 0 {
                    0.0
                } else {
                    w.sum_ns as f64 / w.ios as f64
                },
                p95_ns: (w.ios >= MIN_IOS_FOR_P95).then(|| quantile(&w.buckets, w.ios, 0.95)),
            });
        }
        out
    }
}

fn quantile(buckets: &[u32; BUCKETS], n: u64, q: f64) -> f64 {
    let rank = (q * n as f64).ceil().max(1.0) as u64;
    let mut seen = 0u64;
    for (i, &c) in buckets.iter().enumerate() {
        seen += u64::from(c);
        if seen >= rank {
            return bucket_mid(i);
        }
    }
    bucket_mid(BUCKETS - 1)
}

impl std::ops::AddAssign<&SubWindows> for SubWindows {
    fn add_assign(&mut self, o: &SubWindows) {
        for (a, b) in self.wins.iter_mut().zip(o.wins.iter()) {
            a.ios += b.ios;
            a.sum_ns = a.sum_ns.saturating_add(b.sum_ns);
            for (x, y) in a.buckets.iter_mut().zip(b.buckets.iter()) {
                *x = x.saturating_add(*y);
            }
        }
    }
}

/// Which sub-window a completion falls in, for one worker whose completions come in time
/// order: advances a boundary instead of dividing per I/O.
#[derive(Debug, Clone, Copy)]
pub struct WindowClock {
    span_ns: u64,
    next_ns: u64,
    cur: usize,
}

impl WindowClock {
    /// Windows of `duration_ns / SUB_WINDOWS` from `measure_from_ns`.
    pub fn new(measure_from_ns: u64, duration_ns: u64) -> WindowClock {
        let span_ns = window_span_ns(duration_ns);
        WindowClock {
            span_ns,
            next_ns: measure_from_ns + span_ns,
            cur: 0,
        }
    }

    /// The window of a completion at `t_ns` (not before the previous one's); completions
    /// after the measured phase count in the last window.
    #[inline]
    pub fn index(&mut self, t_ns: u64) -> usize {
        while t_ns >= self.next_ns && self.cur < SUB_WINDOWS - 1 {
            self.cur += 1;
            self.next_ns += self.span_ns;
        }
        self.cur
    }
}

/// The length of one sub-window of a level measured for `duration_ns` (at least 1 ns).
pub fn window_span_ns(duration_ns: u64) -> u64 {
    (duration_ns / SUB_WINDOWS as u64).max(1)
}

/// One sub-window of a level, as stored in the sweep JSON (`levels[].windows`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WindowFigures {
    /// Completions in the window.
    pub ios: u64,
    pub iops: f64,
    /// 0 when the window completed nothing.
    pub mean_ns: f64,
    /// None when the window completed fewer than [`MIN_IOS_FOR_P95`] requests.
    pub p95_ns: Option<f64>,
}

/// (CV, min, max) of a series; CV = population standard deviation ÷ mean (0 for a zero mean).
fn cv_min_max(v: &[f64]) -> (f64, f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let cv = if mean > 0.0 { var.sqrt() / mean } else { 0.0 };
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (cv, min, max)
}

/// The spread of a level's windows (over all repeats when given all of them); None with
/// fewer than two windows. Latency figures over the windows that completed something; p95
/// figures only when every such window has one.
pub fn spread(windows: &[WindowFigures]) -> Option<Spread> {
    if windows.len() < 2 {
        return None;
    }
    let busy: Vec<&WindowFigures> = windows.iter().filter(|w| w.ios > 0).collect();
    if busy.is_empty() {
        return None;
    }
    let iops: Vec<f64> = windows.iter().map(|w| w.iops).collect();
    let mean: Vec<f64> = busy.iter().map(|w| w.mean_ns).collect();
    let p95: Option<Vec<f64>> = busy.iter().map(|w| w.p95_ns).collect();
    let (iops_cv, iops_min, iops_max) = cv_min_max(&iops);
    let (mean_ns_cv, mean_ns_min, mean_ns_max) = cv_min_max(&mean);
    let p = p95.map(|v| cv_min_max(&v));
    let (iops_first, iops_late, iops_late_cv) = match head_and_tail(windows) {
        Some((first, late, cv)) => (Some(first), Some(late), Some(cv)),
        None => (None, None, None),
    };
    Some(Spread {
        iops_first,
        iops_late,
        iops_late_cv,
        windows: windows.len() as u32,
        iops_cv,
        iops_min,
        iops_max,
        mean_ns_cv,
        mean_ns_min,
        mean_ns_max,
        p95_ns_cv: p.map(|p| p.0),
        p95_ns_min: p.map(|p| p.1),
        p95_ns_max: p.map(|p| p.2),
    })
}

/// Mean IOPS of the first sub-window of each full measurement in `windows` (consecutive runs
/// of [`SUB_WINDOWS`], as a level's repeats are concatenated), mean IOPS of their second
/// halves, and the second halves' CV. None without a full measurement.
fn head_and_tail(windows: &[WindowFigures]) -> Option<(f64, f64, f64)> {
    let runs: Vec<&[WindowFigures]> = windows
        .chunks(SUB_WINDOWS)
        .filter(|c| c.len() == SUB_WINDOWS)
        .collect();
    if runs.is_empty() {
        return None;
    }
    let first: Vec<f64> = runs.iter().map(|r| r[0].iops).collect();
    let late: Vec<f64> = runs
        .iter()
        .flat_map(|r| r[SUB_WINDOWS / 2..].iter().map(|w| w.iops))
        .collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    Some((mean(&first), mean(&late), cv_min_max(&late).0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_within_an_eighth() {
        let mut prev = 0;
        for ns in [1u64, 7, 15, 16, 17, 100, 1000, 123_456, 10_000_000, 1 << 40] {
            let b = bucket(ns);
            assert!(b >= prev, "{ns}");
            prev = b;
            let mid = bucket_mid(b);
            assert!(
                (mid - ns as f64).abs() <= ns as f64 / 8.0 + 0.5,
                "{ns}: {mid}"
            );
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn clock_advances_by_span_and_stops_at_the_last_window() {
        let mut c = WindowClock::new(1000, 800);
        assert_eq!(c.index(1000), 0);
        assert_eq!(c.index(1099), 0);
        assert_eq!(c.index(1100), 1);
        assert_eq!(c.index(1750), 7);
        assert_eq!(c.index(99_999), 7);
    }

    #[test]
    fn figures_and_spread_of_two_halves() {
        let mut s = SubWindows::default();
        // 8 windows of 100 ns; windows 0-3 get 100 I/Os of 50 ns, 4-7 get 50 of 100 ns.
        for w in 0..SUB_WINDOWS {
            let (n, ns) = if w < 4 { (100, 50) } else { (50, 100) };
            for _ in 0..n {
                s.record(w, ns);
            }
        }
        let mut merged = SubWindows::default();
        merged += &s;
        assert_eq!(merged.ios(), 600);
        let f = merged.figures(100, 800);
        assert_eq!(f.len(), 8);
        assert!((f[0].iops - 1e9).abs() < 1.0 && (f[7].iops - 0.5e9).abs() < 1.0);
        assert!((f[0].mean_ns - 50.0).abs() < 1e-9);
        let p = f[7].p95_ns.unwrap();
        assert!((p - 100.0).abs() <= 12.5, "{p}");
        let sp = spread(&f).unwrap();
        assert_eq!(sp.windows, 8);
        // Two equal halves at 1 and 0.5: mean 0.75, sd 0.25, CV 1/3.
        assert!((sp.iops_cv - 1.0 / 3.0).abs() < 1e-9, "{}", sp.iops_cv);
        assert_eq!((sp.iops_min, sp.iops_max), (0.5e9, 1e9));
        assert!(sp.p95_ns_cv.is_some());
        // The first window ran at 1e9, the second half at 0.5e9 flat: a burst, then a plateau.
        assert_eq!(sp.iops_first, Some(1e9));
        assert_eq!(sp.iops_late, Some(0.5e9));
        assert_eq!(sp.iops_late_cv, Some(0.0));
    }

    #[test]
    fn short_windows_of_a_cut_level_are_left_out() {
        let mut s = SubWindows::default();
        for w in 0..3 {
            for _ in 0..30 {
                s.record(w, 10);
            }
        }
        // Cut at 240 of 800 ns: windows 0 and 1 full, window 2 ran 40 of 100 ns.
        let f = s.figures(100, 240);
        assert_eq!(f.len(), 2);
        assert!(spread(&f[..1]).is_none());
        assert_eq!(spread(&f).unwrap().iops_cv, 0.0);
    }
}
