//! The flush-honesty verdict: do the measured commit latencies and the device's flush counters fit
//! what the device says about itself (sysfs) and what physics allows? Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, load/, sys/.

use super::device::{DiskFacts, Watch};
use super::report::{CaseResult, DeviceSection, FlushVerdict};
use super::{Method, Mode};
use crate::units::ms;

/// One revolution of the fastest common spindle (15 000 rpm) is 4 ms, of a 7200 rpm disk
/// 8.3 ms (seed 002). A durable write that lands on the platter waits for the sector to come
/// round; a median below half the fastest revolution cannot be a rotating medium.
pub const ROTATIONAL_FLOOR_NS: u64 = 2_000_000;
/// Durable commits within this factor of the O_DIRECT-alone (no flush) latency: the flush
/// costs next to nothing.
pub const FREE_FLUSH_RATIO: f64 = 1.5;

const POWER_CUT: &str = "What cannot be known from here: whether what the device acknowledged survives a power loss. A cache protected by capacitors or a battery and a cache that acknowledges flushes it has not done look the same in every counter; only a power-cut test (write, cut power, read back, e.g. diskchecker.pl) proves durability.";

/// How the verdict names a case: the database setting under --like ("wal_sync_method =
/// open_sync 8192 B"), else iosat's method, mode and size ("osync overwrite 8192 B").
fn label(c: &CaseResult) -> String {
    match &c.setting {
        Some(s) => format!("{s} {} B", c.size),
        None => format!("{} {} {} B", c.method.name(), c.mode.name(), c.size),
    }
}

/// Commit latency this many times the device's own flush time (f_await) means most of the
/// commit is spent above the device. A commit is at least a write plus a flush; on a device
/// with a write-back cache the write is the cheaper part, so an honest commit costs between
/// one and two flushes. 3x leaves room for that and for the syscalls.
pub const ABOVE_DEVICE_RATIO: f64 = 3.0;

/// The fastest durable case: the one whose commits take least on average, the figure that
/// sets what one connection can commit per second (seed 002). The one criterion for the
/// whole report: the capacity lines and the flush verdict both use it; ties go to the lower
/// median.
pub fn fastest_durable(cases: &[CaseResult]) -> Option<&CaseResult> {
    cases
        .iter()
        .filter(|c| c.durable && c.commits > 0 && c.latency_ns.mean > 0)
        .min_by_key(|c| (c.latency_ns.mean, c.latency_ns.p50))
}

/// The durable case whose commit latency is furthest above the device's flush time, when it
/// is at least [`ABOVE_DEVICE_RATIO`] above: (case, f_await in ms, ratio).
fn above_device(cases: &[CaseResult]) -> Option<(&CaseResult, f64, f64)> {
    cases
        .iter()
        .filter(|c| c.durable && c.commits > 0)
        .filter_map(|c| {
            let f = c.device_flushes.as_ref()?.f_await_ms.filter(|f| *f > 0.0)?;
            Some((c, f, c.latency_ns.mean as f64 / 1e6 / f))
        })
        .filter(|(_, _, r)| *r >= ABOVE_DEVICE_RATIO)
        .max_by(|a, b| a.2.total_cmp(&b.2))
}

/// A durable flush-after-write case and the O_DIRECT-alone case of the same mode and size:
/// their difference is the cost of the flush.
fn flush_pair(cases: &[CaseResult]) -> Option<(&CaseResult, &CaseResult)> {
    let preferred = [
        Method::OdirectFdatasync,
        Method::OdirectFsync,
        Method::Fdatasync,
        Method::Fsync,
    ];
    for m in preferred {
        for mode in [Mode::Overwrite, Mode::Append] {
            let mut durable: Vec<&CaseResult> = cases
                .iter()
                .filter(|c| c.method == m && c.mode == mode && c.commits > 0)
                .collect();
            durable.sort_by_key(|c| c.size);
            for d in durable {
                if let Some(o) = cases.iter().find(|c| {
                    c.method == Method::Odirect
                        && c.mode == mode
                        && c.size == d.size
                        && c.commits > 0
                }) {
                    return Some((d, o));
                }
            }
        }
    }
    None
}

/// Devices whose diskstats flush counter does not count the flushes they pass down
/// (bio-based dm and md account flushes as zero-length writes or not at all).
fn counters_meaningful(dev: &DiskFacts) -> bool {
    !(dev.name.starts_with("dm-") || dev.name.starts_with("md"))
}

/// Judge the flushes. Returns the verdict and its reasoning, sentence by sentence.
pub fn judge(
    dev: Option<&DiskFacts>,
    cases: &[CaseResult],
    on_tmpfs: bool,
) -> (FlushVerdict, Vec<String>) {
    let mut why = Vec::new();
    let Some(best) = fastest_durable(cases) else {
        why.push("No durable method was measured, so there is nothing to judge.".to_string());
        return (FlushVerdict::Unknown, why);
    };
    if on_tmpfs {
        why.push("The test directory is on a memory filesystem (tmpfs/ramfs): there is no device and nothing to flush.".into());
        return (FlushVerdict::Unknown, why);
    }
    let Some(dev) = dev else {
        why.push(format!(
            "The test directory is not on a block device iosat could identify (a network, FUSE or overlay filesystem?), so neither the cache mode nor the flush counters are known. The fastest durable method, {}, took {} at the median.",
            label(best), ms(best.latency_ns.p50 as f64, 3)
        ));
        why.push(POWER_CUT.into());
        return (FlushVerdict::Unknown, why);
    };
    let write_back = dev.write_cache.as_deref() == Some("write back");
    why.push(device_facts(dev));
    why.push(format!(
        "Fastest durable method: {} at {} median ({:.0} commits/s).",
        label(best),
        ms(best.latency_ns.p50 as f64, 3),
        best.commits_per_s
    ));
    if let Some((c, f_await, ratio)) = above_device(cases).filter(|_| counters_meaningful(dev)) {
        why.push(format!(
            "{} commits take {} on average, {ratio:.0}x the {f_await:.3} ms the device \
             spends on a flush (f_await): most of the commit time is spent above the device \
             (the filesystem journal, waiting for a CPU, the write path), not in the flush.",
            label(c),
            ms(c.latency_ns.mean as f64, 3)
        ));
    }

    let mut verdict = judge_counters(dev, cases, write_back, &mut why);
    if verdict.is_none() && dev.rotational == Some(true) {
        verdict = judge_platter(best, &mut why);
    }
    if verdict.is_none() {
        verdict = judge_flush_cost(cases, write_back && dev.rotational != Some(true), &mut why);
    }
    let verdict = match verdict {
        Some(v) => v,
        None if dev.write_cache.is_none() && dev.rotational.is_none() => {
            why.push("sysfs does not say how the device caches writes, so the numbers cannot be judged against it.".into());
            FlushVerdict::Unknown
        }
        None => {
            why.push("The measured commit latency and the flush counters fit what the device says about itself.".into());
            FlushVerdict::Plausible
        }
    };
    why.push(POWER_CUT.into());
    (verdict, why)
}

/// "sda: write cache 'write back', FUA supported, non-rotational.": what sysfs says.
fn device_facts(dev: &DiskFacts) -> String {
    let wc = dev
        .write_cache
        .as_deref()
        .map(|s| format!("'{s}'"))
        .unwrap_or_else(|| "unknown".into());
    format!(
        "{}: write cache {wc}, FUA {}, {}.",
        dev.name,
        match dev.fua {
            Some(true) => "supported",
            Some(false) => "not supported",
            None => "unknown",
        },
        match dev.rotational {
            Some(true) => "rotational",
            Some(false) => "non-rotational",
            None => "rotational unknown",
        }
    )
}

/// Flush counters: did anything reach the device during the durable runs? A write-back cache
/// that received no flush is the one verdict they give.
fn judge_counters(
    dev: &DiskFacts,
    cases: &[CaseResult],
    write_back: bool,
    why: &mut Vec<String>,
) -> Option<FlushVerdict> {
    let durable_with_counters: Vec<&CaseResult> = cases
        .iter()
        .filter(|c| c.durable && c.commits > 0 && c.device_flushes.is_some())
        .collect();
    let flushes: u64 = durable_with_counters
        .iter()
        .filter_map(|c| c.device_flushes.as_ref().map(|f| f.flushes))
        .sum();
    let commits: u64 = durable_with_counters.iter().map(|c| c.commits).sum();
    if durable_with_counters.is_empty() {
        why.push("The device's flush counters are not available (kernel before 5.5, or the device was not found in diskstats).".into());
        return None;
    }
    if !counters_meaningful(dev) {
        why.push(format!(
            "{} is a dm/md device: its own flush counter does not count the flushes it passes down, so it is not used here; look at the devices below it.",
            dev.name
        ));
        return None;
    }
    let f_await: Vec<f64> = durable_with_counters
        .iter()
        .filter_map(|c| c.device_flushes.as_ref().and_then(|f| f.f_await_ms))
        .collect();
    why.push(format!(
        "During the durable runs ({commits} commits) the device completed {flushes} flush requests{} (device-wide counters: other processes' flushes count too).",
        if f_await.is_empty() {
            String::new()
        } else {
            format!(
                ", averaging {:.3} ms each",
                f_await.iter().sum::<f64>() / f_await.len() as f64
            )
        }
    ));
    if flushes == 0 && write_back {
        why.push("The device declares a volatile write-back cache, yet not one flush reached it: something above the device (a nobarrier mount, a hypervisor with cache=unsafe, a layer that drops REQ_PREFLUSH) is completing fsync without flushing. Acknowledged commits can be lost on power failure.".into());
        return Some(FlushVerdict::FlushesNotReachingDevice);
    }
    if flushes == 0 {
        why.push("No flushes reached the device, which is expected for a write-through cache: the kernel does not send flushes to a device that says it has nothing to flush.".into());
    }
    None
}

/// A rotating disk: is the fastest durable median possible for a platter?
fn judge_platter(best: &CaseResult, why: &mut Vec<String>) -> Option<FlushVerdict> {
    if best.latency_ns.p50 < ROTATIONAL_FLOOR_NS {
        why.push(format!(
            "A rotating disk cannot make a write durable in much less than one revolution (8.3 ms at 7200 rpm, 4 ms at 15 000 rpm); a median of {} is too fast for a platter, so a cache (drive, RAID controller or hypervisor) acknowledges the flush. That is safe only if that cache is battery- or flash-backed. (Virtual disks often report rotational=1 whatever the host stores them on.)",
            ms(best.latency_ns.p50 as f64, 3)
        ));
        return Some(FlushVerdict::TooFastForPhysics);
    }
    why.push(format!(
        "A median of {} is consistent with a rotating disk waiting for the platter (one revolution is 8.3 ms at 7200 rpm).",
        ms(best.latency_ns.p50 as f64, 3)
    ));
    None
}

/// What the flush costs over O_DIRECT alone; `volatile_flash`: a non-rotating device that
/// declares a write-back cache, for which an almost free flush is suspect.
fn judge_flush_cost(
    cases: &[CaseResult],
    volatile_flash: bool,
    why: &mut Vec<String>,
) -> Option<FlushVerdict> {
    let (d, o) = flush_pair(cases)?;
    let ratio = d.latency_ns.p50 as f64 / o.latency_ns.p50.max(1) as f64;
    why.push(format!(
        "{} {} B takes {} at the median against {} for O_DIRECT alone (no flush): the flush costs {:.2}×.",
        d.method.name(),
        d.size,
        ms(d.latency_ns.p50 as f64, 3),
        ms(o.latency_ns.p50 as f64, 3),
        ratio
    ));
    if ratio < FREE_FLUSH_RATIO && volatile_flash {
        why.push("A device that declares a volatile write-back cache but flushes it for almost nothing is either protected (power-loss capacitors, which normally make it report 'write through') or acknowledging flushes it has not done.".into());
        return Some(FlushVerdict::TooFastForPhysics);
    }
    None
}

/// The device section of the report, with the verdict.
pub fn device_section(watch: &Watch, cases: &[CaseResult], warnings: &[String]) -> DeviceSection {
    let on_tmpfs = warnings
        .iter()
        .any(|w| w.contains("tmpfs") || w.contains("ramfs"));
    let (flush_verdict, flush_reasoning) = judge(watch.device.as_ref(), cases, on_tmpfs);
    let d = watch.device.as_ref();
    DeviceSection {
        name: d.map(|d| d.name.clone()),
        dev: d.map(|d| format!("{}:{}", d.major, d.minor)),
        model: d.and_then(|d| d.model.clone()),
        write_cache: d.and_then(|d| d.write_cache.clone()),
        fua: d.and_then(|d| d.fua),
        rotational: d.and_then(|d| d.rotational),
        logical_block_size: d.and_then(|d| d.logical_block_size),
        flush_verdict,
        flush_reasoning,
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::*;
    use super::*;

    fn case(method: Method, p50_ns: u64, flushes: Option<u64>) -> CaseResult {
        let latency = LatencySummary {
            min: p50_ns / 2,
            mean: p50_ns,
            p50: p50_ns,
            p90: p50_ns,
            p95: p50_ns,
            p99: p50_ns,
            p999: p50_ns,
            max: p50_ns,
        };
        CaseResult::measured(
            (method, Mode::Overwrite, 4096),
            latency,
            (100, 100 * p50_ns),
            None,
            flushes.map(|f| FlushStats::sample(f, 0.5, 0.5)),
        )
    }

    fn dev(rot: bool, wc: &str) -> DiskFacts {
        DiskFacts {
            name: "sda".into(),
            major: 8,
            minor: 0,
            write_cache: Some(wc.into()),
            fua: Some(false),
            rotational: Some(rot),
            ..Default::default()
        }
    }

    #[test]
    fn seed_hdd_at_18ms_is_plausible() {
        let cases = [case(Method::Fsync, 18_000_000, Some(200))];
        let (v, why) = judge(Some(&dev(true, "write back")), &cases, false);
        assert_eq!(v, FlushVerdict::Plausible, "{why:?}");
        assert!(why.last().unwrap().contains("power-cut"));
    }

    #[test]
    fn hdd_at_0_2ms_is_too_fast() {
        // Seed 002: the Perc with BBU at 0.04 ms, the O_DIRECT-with-cache 0.22 ms.
        let cases = [case(Method::Fdatasync, 200_000, Some(100))];
        let (v, _) = judge(Some(&dev(true, "write back")), &cases, false);
        assert_eq!(v, FlushVerdict::TooFastForPhysics);
    }

    #[test]
    fn write_back_without_flushes_is_caught() {
        let cases = [case(Method::Fsync, 100_000, Some(0))];
        let (v, _) = judge(Some(&dev(false, "write back")), &cases, false);
        assert_eq!(v, FlushVerdict::FlushesNotReachingDevice);
        // Write-through devices get no flushes from the kernel: that is normal.
        let (v, _) = judge(Some(&dev(false, "write through")), &cases, false);
        assert_eq!(v, FlushVerdict::Plausible);
    }

    #[test]
    fn ssd_flush_as_cheap_as_odirect_is_suspicious() {
        let cases = [
            case(Method::OdirectFdatasync, 60_000, Some(100)),
            case(Method::Odirect, 50_000, Some(0)),
        ];
        let (v, _) = judge(Some(&dev(false, "write back")), &cases, false);
        assert_eq!(v, FlushVerdict::TooFastForPhysics);
        // The same SSD paying a real flush (1.4 ms vs 0.05 ms, seed 002's 960 PRO) is plausible.
        let cases = [
            case(Method::OdirectFdatasync, 1_400_000, Some(100)),
            case(Method::Odirect, 50_000, Some(0)),
        ];
        let (v, _) = judge(Some(&dev(false, "write back")), &cases, false);
        assert_eq!(v, FlushVerdict::Plausible);
    }

    #[test]
    fn nothing_known_is_unknown() {
        let cases = [case(Method::Fsync, 1_000_000, None)];
        assert_eq!(judge(None, &cases, false).0, FlushVerdict::Unknown);
        assert_eq!(
            judge(Some(&dev(false, "write back")), &cases, true).0,
            FlushVerdict::Unknown
        );
        assert_eq!(
            judge(Some(&dev(true, "write back")), &[], false).0,
            FlushVerdict::Unknown
        );
        let bare = DiskFacts {
            name: "x".into(),
            ..Default::default()
        };
        assert_eq!(judge(Some(&bare), &cases, false).0, FlushVerdict::Unknown);
    }

    #[test]
    fn commits_far_above_the_flush_time_are_spent_above_the_device() {
        // 4 ms commits while the device flushes in 0.5 ms (FlushStats::sample's f_await).
        let cases = [case(Method::Fsync, 4_000_000, Some(100))];
        let (_, why) = judge(Some(&dev(false, "write back")), &cases, false);
        let line = why
            .iter()
            .find(|w| w.contains("above the device"))
            .unwrap_or_else(|| panic!("{why:#?}"));
        assert!(line.contains("8x the 0.500 ms"), "{line}");
        assert!(line.contains("journal"), "{line}");
        // 1 ms commits over 0.5 ms flushes: a write plus a flush, nothing to say.
        let cases = [case(Method::Fsync, 1_000_000, Some(100))];
        let (_, why) = judge(Some(&dev(false, "write back")), &cases, false);
        assert!(
            !why.iter().any(|w| w.contains("above the device")),
            "{why:#?}"
        );
    }

    #[test]
    fn fastest_durable_is_one_criterion_the_mean() {
        // A lower median but a higher mean (a long tail): the mean decides, as for capacity.
        let mut tail = case(Method::Fdatasync, 100_000, Some(100));
        tail.latency_ns.mean = 900_000;
        let steady = case(Method::Fsync, 200_000, Some(100));
        let cases = [tail, steady];
        assert_eq!(fastest_durable(&cases).unwrap().method, Method::Fsync);
        let (_, why) = judge(Some(&dev(false, "write through")), &cases, false);
        assert!(
            why.iter()
                .any(|w| w.starts_with("Fastest durable method: fsync")),
            "{why:#?}"
        );
    }

    #[test]
    fn dm_devices_do_not_count_flushes() {
        let mut d = dev(false, "write back");
        d.name = "dm-0".into();
        let cases = [case(Method::Fsync, 1_000_000, Some(0))];
        assert_ne!(
            judge(Some(&d), &cases, false).0,
            FlushVerdict::FlushesNotReachingDevice
        );
    }
}
