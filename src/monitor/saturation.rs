//! Saturation of a device against its own profile (the result of `iosat sweep
//! --save-profile`): await ÷ the profile's concurrency-1 baseline, queue ÷ the knee, and IOPS
//! left below the max useful IOPS. Pure; must not import cmd/, cli/, ui/ or load/ (profiles,
//! their loader and lookups are src/profile.rs's).

use super::DiskRates;
use crate::profile::DeviceProfile;

/// A device's interval judged against its profile; the JSON `profile` object of `iosat stat`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Saturation {
    pub id: String,
    pub baseline_latency_ns: f64,
    pub knee_concurrency: u32,
    pub max_useful_iops: f64,
    /// r_await ÷ baseline latency (None without reads in the interval, or without rates).
    pub saturation_r: Option<f64>,
    /// w_await ÷ baseline latency.
    pub saturation_w: Option<f64>,
    /// The request-weighted mean of reads' and writes' await ÷ baseline: the text `sat` column.
    pub saturation: Option<f64>,
    /// aqu-sz ÷ knee concurrency: 1 means as many requests in flight as the knee.
    pub load_vs_knee: Option<f64>,
    /// max useful IOPS − (r/s + w/s): negative when the device is driven past its knee.
    pub headroom_iops: Option<f64>,
    /// The pattern and request size the baseline was measured with.
    pub baseline_pattern: String,
    pub baseline_block_size: u64,
}

impl Saturation {
    /// Judge `rates` (None when the interval has no value) against `p`.
    pub fn compute(p: &DeviceProfile, rates: Option<&DiskRates>) -> Saturation {
        let base_ms = p.baseline_latency_ns / 1e6;
        let vs_base =
            |await_ms: Option<f64>| await_ms.and_then(|a| (base_ms > 0.0).then(|| a / base_ms));
        let mixed = rates.and_then(|r| {
            let n = r.r_s + r.w_s;
            (n > 0.0)
                .then(|| (r.r_s * r.r_await.unwrap_or(0.0) + r.w_s * r.w_await.unwrap_or(0.0)) / n)
        });
        Saturation {
            id: p.id.clone(),
            baseline_latency_ns: p.baseline_latency_ns,
            knee_concurrency: p.knee_concurrency,
            max_useful_iops: p.max_useful_iops,
            saturation_r: vs_base(rates.and_then(|r| r.r_await)),
            saturation_w: vs_base(rates.and_then(|r| r.w_await)),
            saturation: vs_base(mixed),
            load_vs_knee: rates.and_then(|r| {
                (p.knee_concurrency > 0).then(|| r.aqu_sz / f64::from(p.knee_concurrency))
            }),
            headroom_iops: rates.map(|r| p.max_useful_iops - (r.r_s + r.w_s)),
            baseline_pattern: p.pattern.clone(),
            baseline_block_size: p.block_size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::DiskDelta;

    #[test]
    fn ratios_by_hand() {
        // 1 s: 400 reads taking 800 ms in all (2 ms each), 100 writes taking 500 ms (5 ms),
        // weighted 1300 ms → aqu-sz 1.3.
        let d = DiskDelta {
            dt_ns: 1_000_000_000,
            reads: 400,
            read_ms: 800,
            writes: 100,
            write_ms: 500,
            weighted_ms: 1300,
            io_ms: 900,
            ..DiskDelta::default()
        };
        let r = DiskRates::from_delta(&d);
        let p = DeviceProfile {
            id: "x".into(),
            baseline_latency_ns: 250_000.0,
            knee_concurrency: 4,
            max_useful_iops: 2000.0,
            pattern: "randread".into(),
            block_size: 4096,
        };
        let s = Saturation::compute(&p, Some(&r));
        assert_eq!(s.saturation_r, Some(8.0));
        assert_eq!(s.saturation_w, Some(20.0));
        // (400 × 2 + 100 × 5) / 500 = 2.6 ms → 10.4x
        assert!((s.saturation.unwrap() - 10.4).abs() < 1e-12);
        assert!((s.load_vs_knee.unwrap() - 0.325).abs() < 1e-12);
        assert_eq!(s.headroom_iops, Some(1500.0));

        let idle = Saturation::compute(
            &p,
            Some(&DiskRates::from_delta(&DiskDelta {
                dt_ns: 1_000_000_000,
                ..DiskDelta::default()
            })),
        );
        assert_eq!(idle.saturation_r, None);
        assert_eq!(idle.saturation, None);
        assert_eq!(idle.load_vs_knee, Some(0.0));
        let none = Saturation::compute(&p, None);
        assert_eq!(none.headroom_iops, None);
        assert_eq!(none.id, "x");
    }
}
