//! The one field registry of `iosat stat`'s values: per field the text header, JSON key, CSV key
//! (sysstat's names where it has one), unit, kind (derived from cumulative counters or a gauge),
//! the decimals of the tables and the accessor. The stat text, CSV, Markdown and JSON views read
//! it; the TUI, the exporter and the recording rules are to read it too. Data only.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use super::blklat::Measured;
use super::saturation::Saturation;
use super::DiskRates;

/// How a field relates to the kernel's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Derived from differences of cumulative counters over the interval (a rate, a mean, a
    /// share of time, a ratio to a profile of such values).
    Counter,
    /// A value as read at the sample (requests in flight).
    Gauge,
}

/// One field of type `T` (the interval's [`DiskRates`] or its [`Saturation`]).
pub struct Field<T> {
    /// Column header of the text, wide text and Markdown tables.
    pub header: &'static str,
    /// Key in the JSON device object (the `profile` object for [`Saturation`] fields).
    pub json: &'static str,
    /// Column name in the CSV header row.
    pub csv: &'static str,
    pub unit: &'static str,
    pub kind: Kind,
    /// Decimals in the wide text and Markdown tables.
    pub decimals: usize,
    /// A whole number (JSON prints it without a fraction).
    pub integer: bool,
    pub get: fn(&T) -> Option<f64>,
}

const fn f<T>(
    header: &'static str,
    key: &'static str,
    unit: &'static str,
    get: fn(&T) -> Option<f64>,
) -> Field<T> {
    Field {
        header,
        json: key,
        csv: key,
        unit,
        kind: Kind::Counter,
        decimals: 2,
        integer: false,
        get,
    }
}

/// Every value of a device's interval, in sysstat's `iostat -x -o JSON` order, then iosat's.
pub const DISK: &[Field<DiskRates>] = &[
    f("r/s", "r/s", "1/s", |r| Some(r.r_s)),
    f("w/s", "w/s", "1/s", |r| Some(r.w_s)),
    f("d/s", "d/s", "1/s", |r| r.d_s),
    f("f/s", "f/s", "1/s", |r| r.f_s),
    f("rkB/s", "rkB/s", "KiB/s", |r| Some(r.rkb_s)),
    f("wkB/s", "wkB/s", "KiB/s", |r| Some(r.wkb_s)),
    f("dkB/s", "dkB/s", "KiB/s", |r| r.dkb_s),
    f("rrqm/s", "rrqm/s", "1/s", |r| Some(r.rrqm_s)),
    f("wrqm/s", "wrqm/s", "1/s", |r| Some(r.wrqm_s)),
    f("drqm/s", "drqm/s", "1/s", |r| r.drqm_s),
    f("%rrqm", "rrqm", "%", |r| Some(r.rrqm_pct)),
    f("%wrqm", "wrqm", "%", |r| Some(r.wrqm_pct)),
    f("%drqm", "drqm", "%", |r| r.drqm_pct),
    f("r_await", "r_await", "ms", |r| r.r_await),
    f("w_await", "w_await", "ms", |r| r.w_await),
    f("d_await", "d_await", "ms", |r| r.d_await),
    f("f_await", "f_await", "ms", |r| r.f_await),
    f("rareq-sz", "rareq-sz", "KiB", |r| r.rareq_sz),
    f("wareq-sz", "wareq-sz", "KiB", |r| r.wareq_sz),
    f("dareq-sz", "dareq-sz", "KiB", |r| r.dareq_sz),
    f("aqu-sz", "aqu-sz", "requests", |r| Some(r.aqu_sz)),
    f("%util", "util", "%", |r| Some(r.util_pct)),
    f("r_conc", "read_concurrency", "requests", |r| {
        Some(r.read_concurrency)
    }),
    f("w_conc", "write_concurrency", "requests", |r| {
        Some(r.write_concurrency)
    }),
    f("d_conc", "discard_concurrency", "requests", |r| {
        r.discard_concurrency
    }),
    f("f_conc", "flush_concurrency", "requests", |r| {
        r.flush_concurrency
    }),
    Field {
        kind: Kind::Gauge,
        decimals: 0,
        integer: true,
        ..f("inflight", "in_flight", "requests", |r| {
            Some(r.in_flight as f64)
        })
    },
];

/// A device's interval judged against its profile (--wide, Markdown, CSV, JSON `profile`).
pub const PROFILE: &[Field<Saturation>] = &[
    f("sat_r", "saturation_r", "x", |s| s.saturation_r),
    f("sat_w", "saturation_w", "x", |s| s.saturation_w),
    f("sat", "saturation", "x", |s| s.saturation),
    f("load", "load_vs_knee", "x", |s| s.load_vs_knee),
    f("headroom", "headroom_iops", "1/s", |s| s.headroom_iops),
];

/// Block-layer latency percentiles per direction (the BPF source; --wide, Markdown, CSV) and
/// how many of diskstats' completions they saw. JSON nests the whole [`Measured`] instead.
pub const LATENCY: &[Field<Measured>] = &[
    f("r_p50", "r_p50_ms", "ms", |m| m.read.p50_ms),
    f("r_p95", "r_p95_ms", "ms", |m| m.read.p95_ms),
    f("r_p99", "r_p99_ms", "ms", |m| m.read.p99_ms),
    f("w_p50", "w_p50_ms", "ms", |m| m.write.p50_ms),
    f("w_p95", "w_p95_ms", "ms", |m| m.write.p95_ms),
    f("w_p99", "w_p99_ms", "ms", |m| m.write.p99_ms),
    Field {
        decimals: 1,
        ..f("cover%", "coverage_pct", "%", |m| m.coverage_pct)
    },
    f("p95/base_r", "p95_vs_baseline_r", "x", |m| {
        m.p95_vs_baseline_r
    }),
    f("p95/base_w", "p95_vs_baseline_w", "x", |m| {
        m.p95_vs_baseline_w
    }),
    // Queue or device (issue 40): the queue's share of the latency and the device's own p95.
    Field {
        decimals: 1,
        ..f("rq%", "r_queue_share_pct", "%", |m| {
            m.read_split.as_ref()?.queue_share_pct
        })
    },
    Field {
        decimals: 1,
        ..f("wq%", "w_queue_share_pct", "%", |m| {
            m.write_split.as_ref()?.queue_share_pct
        })
    },
    f("r_dev95", "r_device_p95_ms", "ms", |m| {
        m.read_split.as_ref()?.device_p95_ms
    }),
    f("w_dev95", "w_device_p95_ms", "ms", |m| {
        m.write_split.as_ref()?.device_p95_ms
    }),
];

/// A field of either table, by JSON key.
#[derive(Clone, Copy)]
pub enum Column {
    Disk(&'static Field<DiskRates>),
    Profile(&'static Field<Saturation>),
}

impl Column {
    /// The field with this JSON key (a programming error when there is none).
    pub fn by_key(key: &str) -> Column {
        DISK.iter()
            .find(|c| c.json == key)
            .map(Column::Disk)
            .or_else(|| PROFILE.iter().find(|c| c.json == key).map(Column::Profile))
            .unwrap_or_else(|| panic!("no stat field with key {key}"))
    }

    pub fn header(self) -> &'static str {
        match self {
            Column::Disk(f) => f.header,
            Column::Profile(f) => f.header,
        }
    }

    /// The value of an interval (None when it has no value, or no profile for a profile field).
    pub fn value(self, rates: Option<&DiskRates>, sat: Option<&Saturation>) -> Option<f64> {
        match self {
            Column::Disk(f) => rates.and_then(f.get),
            Column::Profile(f) => sat.and_then(f.get),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_found() {
        let keys: Vec<&str> = DISK
            .iter()
            .map(|f| f.json)
            .chain(PROFILE.iter().map(|f| f.json))
            .chain(LATENCY.iter().map(|f| f.json))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), keys.len());
        assert_eq!(Column::by_key("load_vs_knee").header(), "load");
        assert_eq!(Column::by_key("in_flight").header(), "inflight");
    }
}
