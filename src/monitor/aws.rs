//! AWS EBS volumes and EC2 instance storage beside the live views (issue 42, docs/caps.md):
//! per device whose controller says it is one, its log page 0xD0 read at most once a second
//! (sys/ebsdev.rs's [`Sampler`]: read-only open, each read timed, switched off with one
//! warning after a slow read or without CAP_SYS_ADMIN), two reads turned into the share of the
//! interval each cap throttled (sys/ebs.rs), and the effective cap estimated from the rate the
//! device served while a cap's counter advanced through nearly all of an interval. A device
//! that is not Amazon's is never opened: only its sysfs model is read (ebsdev::looks_amazon),
//! and nothing is said about it. The views render [`AwsInterval`]; the exporter serves its
//! cumulative exceeded times as counters.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use crate::sys::device::BlockDev;
use crate::sys::ebs::{self, Cap, Kind, Sample};
use crate::sys::ebsdev::{NotRead, Sampler};
use crate::sys::Root;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// An interval counts towards the effective cap when a cap's counter advanced through at
/// least this share of it: demand exceeded the cap nearly throughout, so the device served
/// at its cap (a share of 0.5 would mix in half a second of unthrottled demand).
pub const THROTTLED_THROUGHOUT: f64 = 0.9;

/// How many such intervals the estimate keeps (the last minute at one read a second).
const KEEP: usize = 60;

/// The effective cap of one dimension: the median rate of the intervals a cap throttled
/// throughout.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Estimate {
    /// Requests per second (IOPS) or bytes per second.
    pub value: f64,
    /// How many intervals it is the median of.
    pub intervals: usize,
}

/// The device's own latency of one direction over an interval, from its own counters (kept
/// beside iosat's block-layer figures: the volume's view of a request, without the host's
/// queue and the network path before it).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OwnLatency {
    pub requests: u64,
    /// Its time counter over its requests, ms.
    pub mean_ms: f64,
    /// The upper bound of the histogram bin that holds the 95th percentile, ms: the p95 is at
    /// most this (the bins' resolution); absent without a histogram on the page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p95_ms_at_most: Option<f64>,
}

/// The upper bound (µs) of the bin of `bins` that holds the quantile `q` of their requests.
fn quantile_bound_us(bins: &[ebs::Bin], q: f64) -> Option<u64> {
    let total: u64 = bins.iter().map(|b| b.count).sum();
    if total == 0 {
        return None;
    }
    let rank = (q * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    bins.iter().find_map(|b| {
        seen += b.count;
        (seen >= rank).then_some(b.upper_us)
    })
}

/// One direction's own latency over an interval (None without requests).
fn own_latency(ops: u64, time_us: u64, bins: &[ebs::Bin]) -> Option<OwnLatency> {
    (ops > 0).then(|| OwnLatency {
        requests: ops,
        mean_ms: time_us as f64 / ops as f64 / 1e3,
        p95_ms_at_most: quantile_bound_us(bins, 0.95).map(|us| us as f64 / 1e3),
    })
}

/// One interval of the device's own statistics, as the views show it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AwsInterval {
    pub kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_id: Option<String>,
    /// The time between the two reads (host clock), s.
    pub secs: f64,
    /// The share of the interval each cap of the device's kind throttled.
    pub shares: Vec<ebs::Share>,
    /// The rates the device counted itself over the interval.
    pub iops: f64,
    pub bytes_per_s: f64,
    /// The device's queue length at the later read.
    pub queue_length: u64,
    /// The device's own read and write latency over the interval (absent without requests).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_latency: Option<OwnLatency>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_latency: Option<OwnLatency>,
    /// The effective IOPS and throughput caps, once some interval was throttled throughout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_iops: Option<Estimate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_bytes_per_s: Option<Estimate>,
    /// Each cap's cumulative exceeded time since the device attached, s (the exporter's
    /// `iosat_disk_cap_exceeded_seconds_total`).
    pub exceeded_total_s: Vec<(Cap, f64)>,
    /// What reading the page has cost so far (reads, the last, longest and total time in the
    /// ioctl, µs): the exporter's `iosat_aws_stats_read_seconds_total`.
    pub reader: crate::sys::ebsdev::Cost,
}

impl AwsInterval {
    /// The cap that throttled the largest share of the interval (None: no cap throttled).
    pub fn worst(&self) -> Option<&ebs::Share> {
        self.shares
            .iter()
            .filter(|s| s.share > 0.0)
            .max_by(|a, b| a.share.total_cmp(&b.share))
    }

    /// The `thr%` column: the largest share, in percent (0 when nothing throttled).
    pub fn throttled_pct(&self) -> f64 {
        self.worst().map_or(0.0, |s| s.share * 100.0)
    }

    /// The verdict clause: "throttled by the volume's IOPS cap 63 % of this second; latency
    /// 4.1× its baseline" (`latency_ratio`: the judgement's ratio, when it has one). None when
    /// no cap throttled the interval.
    pub fn clause(&self, latency_ratio: Option<f64>) -> Option<String> {
        let w = self.worst()?;
        let whose = match w.cap {
            Cap::VolumeIops => "the volume's IOPS cap",
            Cap::VolumeThroughput => "the volume's throughput cap",
            Cap::InstanceIops => "the instance's IOPS limit",
            Cap::InstanceThroughput => "the instance's throughput limit",
        };
        let span = if (self.secs - 1.0).abs() < 0.05 {
            "this second".to_string()
        } else {
            format!("these {:.1} s", self.secs)
        };
        let mut s = format!("throttled by {whose} {:.0} % of {span}", w.share * 100.0);
        if let Some(r) = latency_ratio {
            s.push_str(&format!("; latency {r:.1}× its baseline"));
        }
        let est = match w.cap {
            Cap::VolumeIops | Cap::InstanceIops => self
                .effective_iops
                .map(|e| format!("{} IOPS", crate::analysis::declared::thousands(e.value))),
            Cap::VolumeThroughput | Cap::InstanceThroughput => self
                .effective_bytes_per_s
                .map(|e| format!("{:.1} MB/s", e.value / 1e6)),
        };
        if let Some(e) = est {
            s.push_str(&format!(
                "; the cap is about {e} (the rate served while it throttled)"
            ));
        }
        Some(s)
    }
}

struct Dev {
    sampler: Sampler,
    prev: Option<Sample>,
    last: Option<Arc<AwsInterval>>,
    /// Rates of the intervals an IOPS / a throughput cap throttled throughout.
    iops_at_cap: VecDeque<f64>,
    bytes_at_cap: VecDeque<f64>,
}

/// The readers of the machine's Amazon NVMe devices, by major:minor.
#[derive(Default)]
pub struct AwsWatch {
    devs: HashMap<(u32, u32), Dev>,
    warnings: Vec<String>,
}

fn median(v: &VecDeque<f64>) -> Option<Estimate> {
    let mut s: Vec<f64> = v.iter().copied().collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    Some(Estimate {
        value: s[s.len() / 2],
        intervals: s.len(),
    })
}

fn keep(q: &mut VecDeque<f64>, v: f64) {
    if q.len() == KEEP {
        q.pop_front();
    }
    q.push_back(v);
}

impl AwsWatch {
    /// Look at a device first seen: opened only when sysfs shows an Amazon model (then a
    /// failure is one warning, e.g. the capability it needs); any other device is left alone.
    pub fn announce(&mut self, root: &Root, dev: &BlockDev) {
        match Sampler::open(root, dev) {
            Ok(Some(s)) => self.add(dev.major, dev.minor, s),
            Ok(None) => {}
            Err(why) => self
                .warnings
                .push(format!("no AWS statistics for {}: {why}", dev.name)),
        }
    }

    /// Watch a device through `sampler` (tests give one over a synthetic controller).
    pub fn add(&mut self, major: u32, minor: u32, sampler: Sampler) {
        self.devs.insert(
            (major, minor),
            Dev {
                sampler,
                prev: None,
                last: None,
                iops_at_cap: VecDeque::new(),
                bytes_at_cap: VecDeque::new(),
            },
        );
    }

    pub fn is_empty(&self) -> bool {
        self.devs.is_empty()
    }

    /// Read every watched device (each at most once a second); an interval replaces the
    /// device's last one. A device whose counters went backwards gets none, and a warning.
    pub fn tick(&mut self) {
        for dev in self.devs.values_mut() {
            let now = match dev.sampler.sample() {
                Ok(s) => s,
                Err(NotRead::TooSoon) => continue,
                Err(NotRead::Off(_)) => {
                    dev.last = None;
                    continue;
                }
                Err(NotRead::Failed(why)) => {
                    self.warnings.push(why);
                    continue;
                }
            };
            self.warnings.extend(dev.sampler.take_warnings());
            let Some(prev) = dev.prev.replace(now.clone()) else {
                continue;
            };
            match ebs::interval(&prev, &now) {
                Ok(i) => dev.last = Some(Arc::new(dev.interval(&i, &now))),
                Err(e) => {
                    dev.last = None;
                    self.warnings
                        .push(format!("AWS statistics of {}: {e}", dev.sampler.name()));
                }
            }
        }
    }

    /// The device's last interval, if it has one.
    pub fn get(&self, major: u32, minor: u32) -> Option<Arc<AwsInterval>> {
        self.devs.get(&(major, minor))?.last.clone()
    }

    /// What reading cost so far, per watched device (name, cost).
    pub fn costs(&self) -> Vec<(String, crate::sys::ebsdev::Cost)> {
        self.devs
            .values()
            .map(|d| (d.sampler.name().to_string(), d.sampler.cost()))
            .collect()
    }

    /// The warnings since the last call.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

impl Dev {
    fn interval(&mut self, i: &ebs::Interval, now: &Sample) -> AwsInterval {
        let iops = (i.read_ops + i.write_ops) as f64 / i.secs;
        let bytes_per_s = (i.read_bytes + i.write_bytes) as f64 / i.secs;
        let throttled = |dim: [Cap; 2]| {
            i.shares
                .iter()
                .any(|s| dim.contains(&s.cap) && s.share >= THROTTLED_THROUGHOUT)
        };
        if throttled([Cap::VolumeIops, Cap::InstanceIops]) {
            keep(&mut self.iops_at_cap, iops);
        }
        if throttled([Cap::VolumeThroughput, Cap::InstanceThroughput]) {
            keep(&mut self.bytes_at_cap, bytes_per_s);
        }
        let id = self.sampler.identity();
        AwsInterval {
            kind: id.kind,
            volume_id: id.volume_id.clone(),
            secs: i.secs,
            shares: i.shares.clone(),
            iops,
            bytes_per_s,
            queue_length: i.queue_length,
            read_latency: own_latency(i.read_ops, i.read_time_us, &i.read_latency),
            write_latency: own_latency(i.write_ops, i.write_time_us, &i.write_latency),
            effective_iops: median(&self.iops_at_cap),
            effective_bytes_per_s: median(&self.bytes_at_cap),
            exceeded_total_s: id
                .kind
                .caps()
                .iter()
                .map(|c| (*c, now.counters.exceeded_us(*c) as f64 / 1e6))
                .collect(),
            reader: self.sampler.cost(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::ebs::synth;
    use crate::sys::ebsdev::Controller;
    use std::io;
    use std::sync::Mutex;
    use std::time::Duration;

    /// A synthetic EBS volume whose counters advance at set rates on a shared fake clock: each
    /// second `iops` requests of 4 KiB, and `throttled` of the second over the volume's IOPS
    /// cap.
    struct Volume {
        now: Arc<Mutex<Duration>>,
        iops: u64,
        throttled: f64,
        reads: Arc<Mutex<u64>>,
    }

    impl Controller for Volume {
        fn identify(&mut self) -> io::Result<Vec<u8>> {
            Ok(synth::identify(
                ebs::VENDOR_AMAZON,
                "vol0123456789abcdef0",
                ebs::MODEL_EBS,
            ))
        }
        fn log_page(&mut self, _nsid: u32, len: usize) -> io::Result<Vec<u8>> {
            *self.reads.lock().unwrap() += 1;
            let t = self.now.lock().unwrap().as_secs_f64() - 100.0;
            let ops = (self.iops as f64 * t) as u64;
            let exceeded = (self.throttled * t * 1e6) as u64;
            Ok(synth::page(
                len,
                ebs::MAGIC_EBS,
                0,
                [ops, 0, ops * 4096, 0, ops * 500, 0, exceeded, 0, 0, 0, 16],
            ))
        }
    }

    fn watch(iops: u64, throttled: f64) -> (AwsWatch, Arc<Mutex<Duration>>, Arc<Mutex<u64>>) {
        let now = Arc::new(Mutex::new(Duration::from_secs(100)));
        let reads = Arc::new(Mutex::new(0));
        let vol = Volume {
            now: now.clone(),
            iops,
            throttled,
            reads: reads.clone(),
        };
        let clock_now = now.clone();
        let clock = Box::new(move || *clock_now.lock().unwrap());
        let s = Sampler::with("nvme1n1", Box::new(vol), None, clock)
            .unwrap()
            .unwrap();
        let mut w = AwsWatch::default();
        w.add(259, 0, s);
        (w, now, reads)
    }

    #[test]
    fn a_volume_throttled_63_percent_of_each_second_is_said_so() {
        let (mut w, now, reads) = watch(3000, 0.63);
        w.tick();
        assert!(w.get(259, 0).is_none(), "one read is no interval");
        // Ticks faster than once a second read nothing more.
        *now.lock().unwrap() += Duration::from_millis(400);
        w.tick();
        assert_eq!(*reads.lock().unwrap(), 1);
        *now.lock().unwrap() += Duration::from_millis(600);
        w.tick();
        let i = w.get(259, 0).unwrap();
        assert_eq!(*reads.lock().unwrap(), 2);
        assert!((i.secs - 1.0).abs() < 1e-9, "{i:?}");
        assert!((i.iops - 3000.0).abs() < 1.0, "{i:?}");
        assert!((i.throttled_pct() - 63.0).abs() < 0.01, "{i:?}");
        assert_eq!(i.volume_id.as_deref(), Some("vol-0123456789abcdef0"));
        assert_eq!(
            i.clause(Some(4.1)).unwrap(),
            "throttled by the volume's IOPS cap 63 % of this second; latency 4.1× its baseline"
        );
        // The device's own latency beside: reads at 500 us each by its time counter; no
        // writes; the synthetic histogram did not move, so no p95 is claimed.
        let r = i.read_latency.unwrap();
        assert_eq!(r.requests, 3000);
        assert!((r.mean_ms - 0.5).abs() < 1e-9, "{r:?}");
        assert_eq!(r.p95_ms_at_most, None);
        assert_eq!(i.write_latency, None);
        // Its cost so far: the two reads that made the interval.
        assert_eq!(i.reader.reads, 2);
        assert!(i.reader.max_us >= i.reader.last_us && i.reader.total_us >= i.reader.max_us);
        // 63 % is not throughout: no estimate of the cap from it.
        assert_eq!(i.effective_iops, None);
        assert_eq!(i.exceeded_total_s[0].0, Cap::VolumeIops);
        assert!((i.exceeded_total_s[0].1 - 0.63).abs() < 1e-6, "{i:?}");
        assert!(w.take_warnings().is_empty());
    }

    #[test]
    fn a_recording_keeps_the_interval_and_its_replay_shows_it() {
        use crate::monitor::record::{format_event, Event};
        use crate::monitor::replay::{Replay, Step};
        let (mut w, now, _) = watch(3000, 0.63);
        w.tick();
        *now.lock().unwrap() += Duration::from_secs(1);
        w.tick();
        let i = w.get(259, 0).unwrap();
        let line = format_event(&Event::Aws {
            major: 259,
            minor: 0,
            interval: i.clone(),
        });
        assert!(
            line.starts_with("#A 259:0 {") && line.ends_with("}\n"),
            "{line}"
        );
        // Before the sample that closes the second interval: that interval's row has it.
        let text = format!(
            "#iosat-record 1\nR 1000000000 1000000000\nD 259:0 nvme1n1 disk nvme1n1\n\
T 1000000000 1000000000\n 259 0 nvme1n1 1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n\
T 2000000000 2000000000\n 259 0 nvme1n1 3001 0 24008 1501 0 0 0 0 0 1001 1501 0 0 0 0 0 0\n\
{line}T 3000000000 3000000000\n 259 0 nvme1n1 6001 0 48008 3001 0 0 0 0 0 2001 3001 0 0 0 0 0 0\n"
        );
        let sel = crate::monitor::select::Selection::default();
        let rows: Vec<Option<Arc<AwsInterval>>> =
            Replay::new(&text, sel, false, Box::new(|_| None))
                .unwrap()
                .filter_map(|s| match s.unwrap() {
                    Step::Report(r) => Some(r.devices[0].aws.clone()),
                    _ => None,
                })
                .collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0], None);
        assert_eq!(rows[1].as_deref(), Some(i.as_ref()));
        assert_eq!(
            rows[1].as_ref().unwrap().clause(None).unwrap(),
            "throttled by the volume's IOPS cap 63 % of this second"
        );
        // A broken line is named, not skipped.
        let bad = text.replace("#A 259:0 {", "#A 259:0 {oops");
        let e = Replay::new(
            &bad,
            crate::monitor::select::Selection::default(),
            false,
            Box::new(|_| None),
        )
        .err()
        .map(|e| e.reason)
        .or_else(|| {
            Replay::new(
                &bad,
                crate::monitor::select::Selection::default(),
                false,
                Box::new(|_| None),
            )
            .unwrap()
            .find_map(|s| s.err().map(|e| e.to_string()))
        })
        .unwrap();
        assert!(e.contains("malformed AWS statistics line"), "{e}");
    }

    #[test]
    fn the_p95_is_at_most_the_upper_bound_of_the_bin_that_holds_it() {
        let bin = |lower_us, upper_us, count| ebs::Bin {
            lower_us,
            upper_us,
            count,
        };
        let bins = [bin(0, 100, 90), bin(100, 200, 5), bin(200, 400, 5)];
        assert_eq!(quantile_bound_us(&bins, 0.95), Some(200));
        assert_eq!(quantile_bound_us(&bins, 0.96), Some(400));
        assert_eq!(quantile_bound_us(&bins, 0.5), Some(100));
        assert_eq!(quantile_bound_us(&[bin(0, 100, 0)], 0.95), None);
        let l = own_latency(100, 25_000, &bins).unwrap();
        assert!((l.mean_ms - 0.25).abs() < 1e-12);
        assert_eq!(l.p95_ms_at_most, Some(0.2));
        assert_eq!(own_latency(0, 0, &bins), None);
    }

    #[test]
    fn the_effective_cap_is_the_rate_served_while_throttled_throughout() {
        let (mut w, now, _) = watch(3000, 1.0);
        for _ in 0..5 {
            w.tick();
            *now.lock().unwrap() += Duration::from_secs(1);
        }
        let i = w.get(259, 0).unwrap();
        let e = i.effective_iops.unwrap();
        assert_eq!(e.intervals, 4, "{i:?}");
        assert!((e.value - 3000.0).abs() < 1.0, "{e:?}");
        assert_eq!(i.effective_bytes_per_s, None);
        assert!(i.clause(None).unwrap().ends_with(
            "100 % of this second; the cap is about 3,000 IOPS (the rate served while it \
             throttled)"
        ));
        // Unthrottled: nothing said.
        let (mut w, now, _) = watch(3000, 0.0);
        w.tick();
        *now.lock().unwrap() += Duration::from_secs(1);
        w.tick();
        let i = w.get(259, 0).unwrap();
        assert_eq!((i.throttled_pct(), i.clause(Some(1.0))), (0.0, None));
    }

    #[test]
    fn a_device_that_is_not_amazons_is_not_watched() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root {
            proc: dir.path().join("proc"),
            sys: dir.path().join("sys"),
        };
        let mut w = AwsWatch::default();
        w.announce(
            &root,
            &BlockDev {
                major: 8,
                minor: 0,
                name: "sda".into(),
            },
        );
        assert!(w.is_empty());
        assert!(w.take_warnings().is_empty());
    }
}
