//! Which concurrency comes next: a fixed list, or `auto` (keep doubling until throughput has
//! plateaued past the overload point). Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/, sys/.

use super::result::LevelResult;
use crate::analysis::OVERLOAD_P95_FACTOR;

/// The highest concurrency a level may ask for (and where `auto` stops doubling).
pub const MAX_CONCURRENCY: u32 = 4096;

/// Which levels a sweep runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Levels {
    List(Vec<u32>),
    /// Double from 1 until throughput has plateaued past the overload point ([`auto_next`]).
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

/// IOPS growth below this between two doublings counts as "flat" (or below the two levels'
/// own noise, when that is wider: see [`grew`]).
pub const FLAT_GAIN: f64 = 1.10;

/// Doublings in a row without growth after which `auto` stops even without an overload (a
/// device whose p95 is unknown, or whose tail never passes 3x).
pub const MAX_FLAT_DOUBLINGS: usize = 3;

/// Whether level `b` (the doubling after `a`) gave more IOPS than `a` beyond the noise: more
/// than [`FLAT_GAIN`], and more than the two levels' IOPS intervals (95 %, from their
/// sub-windows) can explain.
fn grew(a: &LevelResult, b: &LevelResult) -> bool {
    use crate::analysis::confidence::rel_half_width;
    let noise = |l: &LevelResult| {
        l.spread
            .as_ref()
            .map_or(0.0, |s| rel_half_width(s.iops_cv, s.windows))
    };
    let gain = b.iops / a.iops.max(f64::MIN_POSITIVE);
    gain > (FLAT_GAIN - 1.0).max(noise(a) + noise(b)) + 1.0
}

/// The next level of an `auto` sweep after `done` (measured in order, doubling from 1), or None
/// to stop. `auto` must find the plateau, not stop at the first overload or the first noisy
/// step (issue 25: it stopped at 16 on a device that gave 100k IOPS at 64): it keeps doubling
/// while IOPS still grows beyond the noise, and stops once IOPS has plateaued (two doublings
/// in a row without growth) past the overload point (p95 above 3x the first level's, seed 001),
/// after [`MAX_FLAT_DOUBLINGS`] flat doublings whatever the tail, or at `max_concurrency`.
pub fn auto_next(done: &[LevelResult], max_concurrency: u32) -> Option<u32> {
    let Some(last) = done.last() else {
        return Some(1);
    };
    let next = last.concurrency.checked_mul(2)?;
    if next > max_concurrency {
        return None;
    }
    // Doublings at the end of the series that gave no growth beyond the noise.
    let flat = done
        .windows(2)
        .rev()
        .take_while(|w| !grew(&w[0], &w[1]))
        .count();
    let base_p95 = done[0].latency_ns.p95;
    let overloaded =
        base_p95 > 0 && last.latency_ns.p95 as f64 > OVERLOAD_P95_FACTOR * base_p95 as f64;
    if (flat >= 2 && overloaded) || flat >= MAX_FLAT_DOUBLINGS {
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
    fn stops_once_flat_twice_past_the_overload_point() {
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
        // Flat twice, but p95 still within 3x the baseline's: the overload point is ahead.
        assert_eq!(auto_next(&done, 4096), Some(32));
        done.push(level(32, 435.0, 50));
        assert_eq!(auto_next(&done, 4096), None);
    }

    #[test]
    fn one_flat_or_falling_step_past_overload_does_not_stop_it() {
        // Issue 25: a noisy step at 16 (p95 already past 3x) stopped a device that gave 100k
        // IOPS at 64. One step without growth is not a plateau.
        let mut done = vec![
            level(1, 10_000.0, 100),
            level(2, 20_000.0, 100),
            level(4, 40_000.0, 110),
            level(8, 60_000.0, 200),
            level(16, 58_000.0, 400),
        ];
        assert_eq!(auto_next(&done, 4096), Some(32));
        done.push(level(32, 90_000.0, 500));
        assert_eq!(auto_next(&done, 4096), Some(64));
        done.push(level(64, 100_000.0, 900));
        assert_eq!(auto_next(&done, 4096), Some(128), "still growing");
        done.push(level(128, 101_000.0, 1800));
        assert_eq!(auto_next(&done, 4096), Some(256), "one flat step");
        done.push(level(256, 99_000.0, 3600));
        assert_eq!(
            auto_next(&done, 4096),
            None,
            "plateau past the overload point"
        );
    }

    #[test]
    fn growth_within_the_noise_is_flat_and_three_flat_doublings_stop() {
        use crate::analysis::evidence::Spread;
        let noisy = |c: u32, iops: f64| LevelResult {
            spread: Some(Spread {
                windows: 8,
                iops_cv: 0.15,
                ..Default::default()
            }),
            ..level(c, iops, 0)
        };
        // +15 % per doubling, but each level's IOPS interval is about ±13 %: no growth.
        let done = [
            noisy(1, 1000.0),
            noisy(2, 2000.0),
            noisy(4, 2300.0),
            noisy(8, 2650.0),
        ];
        assert_eq!(auto_next(&done, 4096), Some(16), "two flat, no p95: go on");
        let mut more = done.to_vec();
        more.push(noisy(16, 3050.0));
        assert_eq!(auto_next(&more, 4096), None, "three flat doublings");
        // The same gains measured quietly are growth.
        let quiet: Vec<LevelResult> = more
            .iter()
            .map(|l| level(l.concurrency, l.iops, 0))
            .collect();
        assert_eq!(auto_next(&quiet, 4096), Some(32));
    }

    /// `auto` on the sim engine: doubling until the plateau, past the overload point.
    fn auto_on_sim(spec: &str, seed: u64) -> Vec<LevelResult> {
        use crate::load::sim::SimEngine;
        use crate::load::{Engine, LevelCtl, LevelSpec, Pattern};
        let mut e = SimEngine::new(spec.parse().unwrap());
        let mut done: Vec<LevelResult> = Vec::new();
        while let Some(c) = Levels::Auto.next(done.len(), &done) {
            let ls = LevelSpec {
                threads: c,
                queue_depth: 1,
                pattern: Pattern::RandRead,
                block_size: 4096,
                ramp_ns: 50_000_000,
                duration_ns: 400_000_000,
                seed: seed + u64::from(c),
            };
            let stats = e.run_level(&ls, &LevelCtl::default()).unwrap();
            done.push(LevelResult::new(&ls, &stats, None).unwrap());
        }
        done
    }

    #[test]
    fn auto_finds_the_plateau_of_a_simulated_device() {
        // 64 units of 1 ms: 64 000 IOPS from 64 on, overloaded (p95 > 3 ms) from 256. Auto
        // must measure past 64 and stop on the plateau, over several seeds.
        for seed in [1, 2, 3] {
            let done = auto_on_sim("sim:units=64,service=1ms,dist=exp", seed);
            let conc: Vec<u32> = done.iter().map(|l| l.concurrency).collect();
            let top = *conc.last().unwrap();
            assert!((256..=1024).contains(&top), "seed {seed}: {conc:?}");
            let best = done.iter().map(|l| l.iops).fold(0.0, f64::max);
            assert!((best / 64_000.0 - 1.0).abs() < 0.05, "seed {seed}: {best}");
        }
    }
}
