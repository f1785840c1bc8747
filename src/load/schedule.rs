//! The open loop's schedule: the intended start time of every request of a level, computed
//! before the level starts (Poisson arrivals from a seeded generator, or evenly spaced), so the
//! generator's hot loop only reads the next time. Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/, sys/.
//!
//! An open loop issues requests at the rate users arrive, whether or not the device has kept
//! up, and times each from its intended start (wrk2; HdrHistogram's expected-interval
//! correction): a closed loop waits for the device and so hides the tail it causes
//! (coordinated omission, docs/design.md §4).

use super::workload::Rng;
use serde::{Deserialize, Serialize};

/// How requests arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Independent arrivals: exponential gaps of mean 1/rate (fio's `rate_process=poisson`),
    /// what many independent users produce.
    #[default]
    Poisson,
    /// One request every 1/rate exactly (fio's default `rate_process=linear`).
    Uniform,
}

impl Arrivals {
    pub fn as_str(self) -> &'static str {
        match self {
            Arrivals::Poisson => "poisson",
            Arrivals::Uniform => "uniform",
        }
    }
}

/// The most intended starts one level may hold (8 bytes each: 160 MB), so a mistyped rate
/// fails before it allocates the machine's memory.
pub const MAX_SCHEDULED: u64 = 20_000_000;

/// The intended start of every request in `[0, span_ns)`, in nanoseconds from the level's
/// start, ascending: `rate_per_s` on average, arriving as `arrivals` says, from `seed`.
/// Err when the level would hold more than [`MAX_SCHEDULED`] requests.
pub fn intended_starts(
    rate_per_s: f64,
    span_ns: u64,
    arrivals: Arrivals,
    seed: u64,
) -> Result<Vec<u64>, String> {
    if !(rate_per_s.is_finite() && rate_per_s > 0.0) {
        return Err(format!("a rate must be positive, not {rate_per_s}"));
    }
    let expected = rate_per_s * span_ns as f64 / 1e9;
    if expected > MAX_SCHEDULED as f64 {
        return Err(format!(
            "{rate_per_s:.0}/s for {:.1} s is {expected:.0} requests, more than the {MAX_SCHEDULED} \
             one level may schedule",
            span_ns as f64 / 1e9
        ));
    }
    let gap_ns = 1e9 / rate_per_s;
    // Room for the Poisson count's spread above its mean (a few standard deviations).
    let mut out = Vec::with_capacity((expected + 6.0 * expected.sqrt() + 8.0) as usize);
    match arrivals {
        Arrivals::Uniform => {
            let mut k = 0u64;
            loop {
                let t = (k as f64 * gap_ns) as u64;
                if t >= span_ns {
                    break;
                }
                out.push(t);
                k += 1;
            }
        }
        Arrivals::Poisson => {
            let mut rng = Rng::new(seed ^ 0x6F70_656E_6C6F_6F70);
            let mut t = 0f64;
            loop {
                // Uniform in (0, 1]: the top 53 bits, never 0, so ln() is finite.
                let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
                t += -u.ln() * gap_ns;
                if t >= span_ns as f64 {
                    break;
                }
                out.push(t as u64);
            }
        }
    }
    Ok(out)
}

/// How many of `starts` (ascending) fall in `[from_ns, to_ns)`.
pub fn count_between(starts: &[u64], from_ns: u64, to_ns: u64) -> u64 {
    let a = starts.partition_point(|&t| t < from_ns);
    let b = starts.partition_point(|&t| t < to_ns);
    (b - a) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(s: &[u64]) -> Vec<f64> {
        s.windows(2).map(|w| (w[1] - w[0]) as f64).collect()
    }

    fn mean_cv(v: &[f64]) -> (f64, f64) {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n;
        (m, var.sqrt() / m)
    }

    #[test]
    fn uniform_arrivals_are_evenly_spaced() {
        let s = intended_starts(1000.0, 1_000_000_000, Arrivals::Uniform, 1).unwrap();
        assert_eq!(s.len(), 1000);
        assert_eq!(s[0], 0);
        assert_eq!(s[1], 1_000_000);
        assert_eq!(*s.last().unwrap(), 999_000_000);
        let (m, cv) = mean_cv(&gaps(&s));
        assert!((m - 1e6).abs() < 1.0 && cv < 1e-6, "{m} {cv}");
    }

    #[test]
    fn poisson_arrivals_have_exponential_gaps_and_the_rate_asked() {
        let rate = 20_000.0;
        let s = intended_starts(rate, 5_000_000_000, Arrivals::Poisson, 7).unwrap();
        let n = s.len() as f64;
        // Count: Poisson with mean 100,000, sd 316: within 5 sd.
        assert!((n - 100_000.0).abs() < 5.0 * 316.0, "{n}");
        assert!(s.windows(2).all(|w| w[0] <= w[1]), "ascending");
        assert!(*s.last().unwrap() < 5_000_000_000);
        let (m, cv) = mean_cv(&gaps(&s));
        assert!((m / (1e9 / rate) - 1.0).abs() < 0.02, "mean gap {m}");
        // An exponential's coefficient of variation is 1; its median is ln 2 of its mean.
        assert!((cv - 1.0).abs() < 0.03, "cv {cv}");
        let mut g = gaps(&s);
        g.sort_by(f64::total_cmp);
        let median = g[g.len() / 2];
        assert!(
            (median / m - std::f64::consts::LN_2).abs() < 0.02,
            "{median}"
        );
    }

    #[test]
    fn a_seed_gives_the_same_schedule_and_another_seed_another() {
        let a = intended_starts(5000.0, 100_000_000, Arrivals::Poisson, 3).unwrap();
        let b = intended_starts(5000.0, 100_000_000, Arrivals::Poisson, 3).unwrap();
        let c = intended_starts(5000.0, 100_000_000, Arrivals::Poisson, 4).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn absurd_rates_are_refused_before_allocating() {
        assert!(intended_starts(0.0, 1, Arrivals::Poisson, 1).is_err());
        assert!(intended_starts(f64::NAN, 1, Arrivals::Poisson, 1).is_err());
        let e = intended_starts(1e9, 60_000_000_000, Arrivals::Uniform, 1).unwrap_err();
        assert!(e.contains("more than the 20000000"), "{e}");
    }

    #[test]
    fn counting_a_window() {
        let s = [0, 10, 20, 30, 40];
        assert_eq!(count_between(&s, 10, 40), 3);
        assert_eq!(count_between(&s, 0, 100), 5);
        assert_eq!(count_between(&s, 41, 100), 0);
    }
}
