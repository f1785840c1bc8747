//! The bursts' families (issue 41): each device's peak IOPS and bytes/s per direction over the
//! short windows read since the last scrape (`iosat_disk_peak_iops`,
//! `iosat_disk_peak_bytes_per_second`, `window` the window's length), and the peak over the
//! mean of the same windows (`iosat_disk_peak_to_mean_ratio`). Gauges over the scrape
//! interval: what a 15 s rate of the counters averages away. Pure: renders what the scrape
//! holds.
//! Imports only: exporter/, monitor/burst.rs.

use super::metrics::{Scrape, Sink};

pub const PEAK_IOPS: &str = "iosat_disk_peak_iops";
pub const PEAK_BYTES: &str = "iosat_disk_peak_bytes_per_second";
pub const PEAK_TO_MEAN: &str = "iosat_disk_peak_to_mean_ratio";

/// `100ms`, `1s`, `250ms`: the window as a label.
fn window_label(ns: u64) -> String {
    if ns % 1_000_000_000 == 0 {
        format!("{}s", ns / 1_000_000_000)
    } else {
        format!("{}ms", ns / 1_000_000)
    }
}

/// The three families, each only when some device has windows.
pub fn render(o: &mut dyn Sink, s: &Scrape) {
    let rows: Vec<(&str, String, &crate::monitor::burst::ScrapeBurst)> = s
        .devices
        .iter()
        .filter_map(|d| {
            let b = d.burst.as_ref()?;
            Some((d.line.name.as_str(), window_label(b.window_ns), b))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    o.family(
        PEAK_IOPS,
        "gauge",
        "The highest requests per second of one short window (window) among those read from \
/proc/diskstats since the last scrape, per direction (op): a burst the scrape interval's rate \
averages away.",
    );
    for (dev, w, b) in &rows {
        for (op, p) in [("read", &b.read), ("write", &b.write)] {
            o.sample(
                PEAK_IOPS,
                &[("device", dev), ("op", op), ("window", w)],
                p.iops,
            );
        }
    }
    o.family(
        PEAK_BYTES,
        "gauge",
        "The highest bytes per second of one short window (window) since the last scrape, per \
direction (op).",
    );
    for (dev, w, b) in &rows {
        for (op, p) in [("read", &b.read), ("write", &b.write)] {
            o.sample(
                PEAK_BYTES,
                &[("device", dev), ("op", op), ("window", w)],
                p.bytes_per_s,
            );
        }
    }
    o.family(
        PEAK_TO_MEAN,
        "gauge",
        "The peak window's requests per second over the mean of the same windows since the \
last scrape, per direction (op); absent for a direction without requests. 1 is a steady load.",
    );
    for (dev, w, b) in &rows {
        for (op, peak, mean) in [
            ("read", b.read.iops, b.mean_r_iops),
            ("write", b.write.iops, b.mean_w_iops),
        ] {
            if mean > 0.0 {
                o.sample(
                    PEAK_TO_MEAN,
                    &[("device", dev), ("op", op), ("window", w)],
                    peak / mean,
                );
            }
        }
    }
}
