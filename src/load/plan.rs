//! Which concurrency comes next: a fixed list, or `auto` (keep doubling until the device is clearly
//! past its knee). Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/, sys/.

use super::result::LevelResult;

/// The highest concurrency a level may ask for (and where `auto` stops doubling).
pub const MAX_CONCURRENCY: u32 = 4096;

/// Which levels a sweep runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Levels {
    List(Vec<u32>),
    /// Double from 1 until the device is clearly past its knee ([`auto_next`]).
    Auto,
}

impl Levels {
    /// The concurrency of level `idx` given the levels measured so far, or None when done.
    pub fn next(&self, idx: usize, done: &[LevelResult]) -> Option<u32> {
        match self {
            Levels::List(v) => v.get(idx).copied(),
            Levels::Auto => auto_next(done, MAX_CONCURRENCY),
        }
    }

    /// How many levels will run, when known in advance.
    pub fn count(&self) -> Option<usize> {
        match self {
            Levels::List(v) => Some(v.len()),
            Levels::Auto => None,
        }
    }
}

/// IOPS growth below this between two doublings counts as "flat".
pub const FLAT_GAIN: f64 = 1.10;

/// The next level of an `auto` sweep after `done` (measured in order, doubling from 1), or None
/// to stop. Stops when throughput went flat for two doublings in a row, fell below 90 % of the
/// best level, or went flat while p95 is past 3× the baseline's (seed 001's overload rule).
pub fn auto_next(done: &[LevelResult], max_concurrency: u32) -> Option<u32> {
    let Some(last) = done.last() else {
        return Some(1);
    };
    let next = last.concurrency.checked_mul(2)?;
    if next > max_concurrency {
        return None;
    }
    if done.len() < 3 {
        return Some(next);
    }
    let n = done.len();
    let gain = |i: usize| done[i].iops / done[i - 1].iops.max(f64::MIN_POSITIVE);
    let best = done.iter().map(|l| l.iops).fold(0.0, f64::max);
    let flat_twice = gain(n - 1) < FLAT_GAIN && gain(n - 2) < FLAT_GAIN;
    let falling = last.iops < 0.9 * best;
    let base_p95 = done[0].latency_ns.p95.max(1) as f64;
    let overloaded = last.latency_ns.p95 as f64 > 3.0 * base_p95;
    if flat_twice || falling || (overloaded && gain(n - 1) < FLAT_GAIN) {
        None
    } else {
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::result::{LatencySummary, LittlesLaw};

    fn level(c: u32, iops: f64, p95: u64) -> LevelResult {
        LevelResult {
            concurrency: c,
            threads: c,
            iodepth: 1,
            elapsed_ns: 1,
            ios: 1,
            iops,
            bytes_per_s: 0.0,
            latency_ns: LatencySummary {
                p95,
                ..Default::default()
            },
            read: None,
            write: None,
            kernel: None,
            littles_law: LittlesLaw {
                implied_concurrency: 0.0,
                ok: true,
                kernel_aqu_sz: None,
                kernel_ok: None,
            },
            interrupted: false,
            ..Default::default()
        }
    }

    #[test]
    fn doubles_while_throughput_grows() {
        let done = [
            level(1, 100.0, 10),
            level(2, 200.0, 10),
            level(4, 390.0, 11),
        ];
        assert_eq!(auto_next(&[], 4096), Some(1));
        assert_eq!(auto_next(&done[..1], 4096), Some(2));
        assert_eq!(auto_next(&done, 4096), Some(8));
        assert_eq!(auto_next(&done, 4), None, "cap");
    }

    #[test]
    fn stops_after_two_flat_doublings() {
        let mut done = vec![
            level(1, 100.0, 10),
            level(2, 200.0, 10),
            level(4, 400.0, 11),
            level(8, 420.0, 20),
        ];
        assert_eq!(
            auto_next(&done, 4096),
            Some(16),
            "one flat step is not enough"
        );
        done.push(level(16, 430.0, 25));
        assert_eq!(auto_next(&done, 4096), None);
    }

    #[test]
    fn stops_when_overloaded_and_flat_or_falling() {
        let done = [
            level(1, 100.0, 10),
            level(2, 200.0, 10),
            level(4, 400.0, 11),
            level(8, 420.0, 40),
        ];
        assert_eq!(auto_next(&done, 4096), None);
        let done = [
            level(1, 100.0, 10),
            level(2, 200.0, 10),
            level(4, 400.0, 11),
            level(8, 300.0, 12),
        ];
        assert_eq!(auto_next(&done, 4096), None);
    }
}
