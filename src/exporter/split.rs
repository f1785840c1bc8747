//! The block layer's queue and device time (issue 40): per device and op, the time each request
//! waited in the kernel's queue and the time the device held it, as histograms of the total's
//! buckets (classic in the text format, native in protobuf: the same Sink as the total), and
//! the requests the kernel did not stamp at issue. Pure: renders what the scrape holds.
//! Imports only: exporter/, sys/.

use super::metrics::{Scrape, Sink};

pub const QUEUE: &str = "iosat_disk_request_queue_seconds";
pub const DEVICE: &str = "iosat_disk_request_device_seconds";
pub const UNSPLIT: &str = "iosat_disk_requests_unsplit_total";

/// The block layer's split of each request's latency (issue 40): the time it waited in the
/// kernel's queue and the time the device held it, as histograms of the same buckets as the
/// total, per device and op that has any; and the requests the kernel did not stamp at issue
/// (its queue has no wbt, io.latency or iocost), which are in the total only. Absent without
/// the source.
pub fn render(o: &mut dyn Sink, s: &Scrape) {
    const OPS: [&str; 4] = ["read", "write", "discard", "flush"];
    let with = |f: fn(&crate::sys::bpf::RawSplit) -> bool| {
        s.devices
            .iter()
            .filter_map(move |d| {
                let l = d.latency.as_ref()?;
                Some(
                    OPS.iter()
                        .zip(&l.split)
                        .filter(move |(_, sp)| f(sp))
                        .map(move |(op, sp)| (d, *op, sp)),
                )
            })
            .flatten()
    };
    let split = |sp: &crate::sys::bpf::RawSplit| sp.queue.buckets.iter().any(|&n| n > 0);
    if with(split).next().is_some() {
        o.family(
            QUEUE,
            "histogram",
            "Block-layer time each request waited in the kernel's queue (scheduler, tags, \
wbt), from its start to its issue to the driver (io_start_time_ns), per device and op; only \
requests the kernel stamped at issue.",
        );
        for (d, op, sp) in with(split) {
            o.histogram(QUEUE, &[("device", &d.line.name), ("op", op)], &sp.queue);
        }
        o.family(
            DEVICE,
            "histogram",
            "Time the device held each request, from its issue to the driver to its \
completion, per device and op; the same requests as iosat_disk_request_queue_seconds.",
        );
        for (d, op, sp) in with(split) {
            o.histogram(DEVICE, &[("device", &d.line.name), ("op", op)], &sp.device);
        }
    }
    let unsplit = |sp: &crate::sys::bpf::RawSplit| sp.unsplit > 0;
    if with(unsplit).next().is_some() {
        o.family(
            UNSPLIT,
            "counter",
            "Completed requests the kernel did not stamp at issue (no wbt, io.latency or iocost \
on the queue), so in iosat_disk_request_duration_seconds only, per device and op.",
        );
        for (d, op, sp) in with(unsplit) {
            o.sample(
                UNSPLIT,
                &[("device", &d.line.name), ("op", op)],
                sp.unsplit as f64,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exporter::metrics::{render, DeviceScrape, Identity};
    use crate::sys::bpf::{DevHists, RawHist, RawSplit, NBUCKETS};

    fn hist(ns: &[u64]) -> RawHist {
        let mut h = RawHist {
            buckets: vec![0; NBUCKETS],
            sum_ns: ns.iter().sum(),
        };
        for &v in ns {
            h.buckets[crate::monitor::blklat::bucket_of(v)] += 1;
        }
        h
    }

    fn scrape(split: [RawSplit; 4]) -> Scrape {
        let line = crate::sys::diskstats::parse_line("7 3 loop3 1 2 3 4 5 6 7 8 0 10 11").unwrap();
        Scrape {
            devices: vec![DeviceScrape {
                line,
                identity: Identity::default(),
                in_flight: None,
                profile: None,
                latency: Some(DevHists {
                    major: 7,
                    minor: 3,
                    ops: std::array::from_fn(|_| hist(&[])),
                    classes: Default::default(),
                    split,
                }),
                learned: None,
                judgement: None,
                cap: None,
                cap_uses: Vec::new(),
                aws: None,
                burst: None,
                cgroups: None,
            }],
            ..Scrape::default()
        }
    }

    #[test]
    fn queue_and_device_are_histograms_of_the_ops_that_have_them() {
        let mut split: [RawSplit; 4] = Default::default();
        split[0] = RawSplit {
            queue: hist(&[3_000_000, 3_000_000]),
            device: hist(&[1_000_000, 1_000_000]),
            unsplit: 0,
        };
        split[1].unsplit = 5;
        let text = render(&scrape(split));
        assert!(
            text.contains(&format!("# TYPE {QUEUE} histogram\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!("# TYPE {DEVICE} histogram\n")),
            "{text}"
        );
        // 3 ms is at or below 4.194 ms, not 2.097 ms; 1 ms at or below 1.049 ms.
        let q = format!("{QUEUE}_bucket{{device=\"loop3\",op=\"read\",le=");
        assert!(
            text.contains(&format!("{q}\"0.002097152\"}} 0\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!("{q}\"0.004194304\"}} 2\n")),
            "{text}"
        );
        assert!(text.contains(&format!(
            "{QUEUE}_sum{{device=\"loop3\",op=\"read\"}} 0.006\n"
        )));
        let d = format!("{DEVICE}_bucket{{device=\"loop3\",op=\"read\",le=");
        assert!(
            text.contains(&format!("{d}\"0.001048576\"}} 2\n")),
            "{text}"
        );
        // Writes were not stamped: counted, no histogram; discards and flushes: nothing.
        assert!(!text.contains(&format!("{QUEUE}_count{{device=\"loop3\",op=\"write\"}}")));
        assert!(text.contains(&format!("{UNSPLIT}{{device=\"loop3\",op=\"write\"}} 5\n")));
        assert!(!text.contains(&format!("{QUEUE}_count{{device=\"loop3\",op=\"discard\"}}")));
        // Nothing split and nothing unstamped: no family at all.
        let none = render(&scrape(Default::default()));
        assert!(!none.contains(QUEUE) && !none.contains(UNSPLIT), "{none}");
        // The protobuf exposition carries them as native histograms.
        let mut split: [RawSplit; 4] = Default::default();
        split[0].queue = hist(&[3_000_000]);
        split[0].device = hist(&[1_000_000]);
        let bytes = crate::exporter::proto::render(&scrape(split));
        let names = String::from_utf8_lossy(&bytes);
        assert!(names.contains(QUEUE) && names.contains(DEVICE));
    }
}
