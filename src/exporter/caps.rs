//! The declared caps' families (issue 42): each device's declared figures
//! (`iosat_disk_declared_cap_iops`, `iosat_disk_declared_cap_bytes_per_second`) and the
//! latest interval's share of each (`iosat_disk_cap_used_ratio`), with a `cap` label naming
//! the figure; and an AWS volume's own exceeded-time counters
//! (`iosat_disk_cap_exceeded_seconds_total{cap="volume|instance",dim="iops|throughput"}`).
//! Pure: renders what the scrape holds.
//! Imports only: exporter/, analysis/declared.rs.

use super::metrics::{Scrape, Sink};
use crate::analysis::declared::CapUse;

pub const DECLARED_IOPS: &str = "iosat_disk_declared_cap_iops";
pub const DECLARED_BYTES: &str = "iosat_disk_declared_cap_bytes_per_second";
pub const USED_RATIO: &str = "iosat_disk_cap_used_ratio";
pub const EXCEEDED: &str = "iosat_disk_cap_exceeded_seconds_total";

/// An AWS volume's own counters (monitor::aws): the time demand exceeded each cap, since
/// the device attached, as the device counts it (its counter, not iosat's: it starts at
/// the device's value, and goes down only when the device was reset or replaced).
fn render_exceeded(o: &mut dyn Sink, s: &Scrape) {
    let rows: Vec<(&str, &str, &str, f64)> = s
        .devices
        .iter()
        .filter_map(|d| Some((d.line.name.as_str(), d.aws.as_ref()?)))
        .flat_map(|(dev, a)| {
            a.exceeded_total_s.iter().map(move |(c, secs)| {
                let (cap, dim) = c.labels();
                (dev, cap, dim, *secs)
            })
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    o.family(
        EXCEEDED,
        "counter",
        "Seconds during which demand exceeded the AWS volume's (cap=\"volume\") or the \
instance's (cap=\"instance\") IOPS or throughput cap (dim), as the device counts them (NVMe log \
page 0xD0 of an EBS volume or instance storage; docs/caps.md): its rate is the share of time \
throttled.",
    );
    for (dev, cap, dim, v) in rows {
        o.sample(EXCEEDED, &[("device", dev), ("cap", cap), ("dim", dim)], v);
    }
}

pub const READ_SECONDS: &str = "iosat_aws_stats_read_seconds_total";
pub const READS: &str = "iosat_aws_stats_reads_total";

/// What reading an AWS device's statistics page has cost (issue 42: the reader's cost
/// measured and served): the reads and the time spent in the ioctl, per device.
fn render_reader(o: &mut dyn Sink, s: &Scrape) {
    let rows: Vec<(&str, u64, u64)> = s
        .devices
        .iter()
        .filter_map(|d| {
            let r = d.aws.as_ref()?.reader;
            Some((d.line.name.as_str(), r.reads, r.total_us))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    o.family(
        READS,
        "counter",
        "Reads of the AWS device's statistics page (NVMe log page 0xD0) by iosat, at most one \
a second.",
    );
    for (dev, reads, _) in &rows {
        o.sample(READS, &[("device", dev)], *reads as f64);
    }
    o.family(
        READ_SECONDS,
        "counter",
        "Seconds iosat spent reading the AWS device's statistics page (in the ioctl); a read \
over the reader's limit switches it off with a warning.",
    );
    for (dev, _, us) in &rows {
        o.sample(READ_SECONDS, &[("device", dev)], *us as f64 / 1e6);
    }
}

/// The families, each only when some device has a value.
pub fn render(o: &mut dyn Sink, s: &Scrape) {
    render_exceeded(o, s);
    render_reader(o, s);
    for (name, bytes, help) in [
        (
            DECLARED_IOPS,
            false,
            "The requests per second the device was provisioned with, as declared (--cap, \
--cap-iops or its profile); cap=\"iops\" for reads and writes together, \"read_iops\" and \
\"write_iops\" per direction.",
        ),
        (
            DECLARED_BYTES,
            true,
            "The bytes per second the device was provisioned with, as declared (--cap, \
--cap-mbps or its profile); cap=\"bytes\" for reads and writes together, \"read_bytes\" and \
\"write_bytes\" per direction.",
        ),
    ] {
        let rows: Vec<(&str, &'static str, f64)> = s
            .devices
            .iter()
            .filter_map(|d| Some((d.line.name.as_str(), d.cap.as_ref()?)))
            .flat_map(|(dev, c)| {
                c.figures()
                    .filter(|(k, _)| k.is_bytes() == bytes)
                    .map(move |(k, v)| (dev, k.label(), v))
                    .collect::<Vec<_>>()
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        o.family(name, "gauge", help);
        for (dev, cap, v) in rows {
            o.sample(name, &[("device", dev), ("cap", cap)], v);
        }
    }
    let used: Vec<(&str, &CapUse)> = s
        .devices
        .iter()
        .flat_map(|d| d.cap_uses.iter().map(move |u| (d.line.name.as_str(), u)))
        .filter(|(_, u)| u.ratio.is_finite())
        .collect();
    if used.is_empty() {
        return;
    }
    o.family(
        USED_RATIO,
        "gauge",
        "The latest interval's rate over the declared cap it is compared with (cap label as in \
iosat_disk_declared_cap_*): from 0.95 the cap, not the device, is the limit; above 1.05 the \
device is not held to the cap declared.",
    );
    for (dev, u) in used {
        o.sample(
            USED_RATIO,
            &[("device", dev), ("cap", u.cap.label())],
            u.ratio,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::declared::DeclaredCap;
    use crate::exporter::metrics::{render, DeviceScrape, Identity};

    #[test]
    fn declared_figures_and_the_used_ratio_carry_a_cap_label() {
        let line = crate::sys::diskstats::parse_line("7 0 loop0 1 2 3 4 5 6 7 8 0 10 11").unwrap();
        let cap = DeclaredCap {
            iops: Some(1000.0),
            bytes_per_s: Some(125e6),
            ..Default::default()
        };
        let dev = |cap: Option<DeclaredCap>, uses: Vec<CapUse>| DeviceScrape {
            learned: None,
            judgement: None,
            latency: None,
            line: line.clone(),
            identity: Identity::default(),
            in_flight: None,
            profile: None,
            cap,
            cap_uses: uses,
            aws: None,
            burst: None,
            cgroups: None,
        };
        let uses = cap.uses(990.0, 0.0, 990.0 * 4096.0, 0.0);
        let text = render(&Scrape {
            devices: vec![dev(Some(cap), uses)],
            ..Default::default()
        });
        assert!(
            text.contains("# TYPE iosat_disk_cap_used_ratio gauge"),
            "{text}"
        );
        assert!(
            text.contains("iosat_disk_cap_used_ratio{device=\"loop0\",cap=\"iops\"} 0.99\n"),
            "{text}"
        );
        assert!(
            text.contains("iosat_disk_declared_cap_iops{device=\"loop0\",cap=\"iops\"} 1000\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "iosat_disk_declared_cap_bytes_per_second{device=\"loop0\",cap=\"bytes\"} 125000000\n"
            ),
            "{text}"
        );
        // An EBS volume's own counters: one counter per cap and dimension.
        use crate::sys::ebs::{Cap, Kind};
        let aws = crate::monitor::aws::AwsInterval {
            kind: Kind::EbsVolume,
            volume_id: None,
            secs: 1.0,
            shares: Vec::new(),
            iops: 0.0,
            bytes_per_s: 0.0,
            queue_length: 0,
            read_latency: None,
            write_latency: None,
            effective_iops: None,
            effective_bytes_per_s: None,
            exceeded_total_s: vec![(Cap::VolumeIops, 12.5), (Cap::InstanceThroughput, 0.25)],
            reader: Default::default(),
        };
        let mut aws = aws;
        aws.reader.reads = 61;
        aws.reader.total_us = 15_250;
        let mut d = dev(None, Vec::new());
        d.aws = Some(std::sync::Arc::new(aws));
        let text = render(&Scrape {
            devices: vec![d],
            ..Default::default()
        });
        assert!(
            text.contains("# TYPE iosat_disk_cap_exceeded_seconds_total counter"),
            "{text}"
        );
        for l in [
            "iosat_disk_cap_exceeded_seconds_total{device=\"loop0\",cap=\"volume\",dim=\"iops\"} 12.5\n",
            "iosat_disk_cap_exceeded_seconds_total{device=\"loop0\",cap=\"instance\",dim=\"throughput\"} 0.25\n",
            // What reading the page cost.
            "iosat_aws_stats_reads_total{device=\"loop0\"} 61\n",
            "iosat_aws_stats_read_seconds_total{device=\"loop0\"} 0.01525\n",
        ] {
            assert!(text.contains(l), "{text}");
        }
        // Without a declaration: none of the families.
        let text = render(&Scrape {
            devices: vec![dev(None, Vec::new())],
            ..Default::default()
        });
        assert!(
            !text.contains("iosat_disk_cap")
                && !text.contains("declared_cap")
                && !text.contains("iosat_aws"),
            "{text}"
        );
    }
}
