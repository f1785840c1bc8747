//! Bursts (issue 41): per device and direction, the peak IOPS and bytes/s over short windows
//! (100 ms by default) within each interval, the peak-to-mean ratio and the share of windows
//! at a declared cap. The source is /proc/diskstats sampled at the window (the live command
//! reads it between its own ticks: collect), so a window's rate is Δcompletions ÷ the window's
//! measured length, the same formula as an interval's (docs/design.md §4): a burst shorter
//! than a window is averaged over it, never invented.
//!
//! The windows also bound the device's busy time more tightly than the interval can (issue
//! 37): a window was busy at most for the time its requests were in flight, Δweighted time,
//! and at most for its length; the interval's busy share is at most the sum of that over its
//! windows ÷ their time (`busy_max`). A burst that fills a third of the windows is busy at
//! most a third of the interval, whatever io_ticks say (they count in the kernel's ticks and
//! misread requests shorter than one: learn/points.rs). The kernel credits a request's time
//! in flight when it completes, so the bound holds for requests far shorter than a window
//! (learning uses it for those alone).
//!
//! A recording keeps each interval's summary, not the window samples (ten a second would
//! multiply its size): the `#P` line, a comment to readers older than it, which skip it.
//! Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use std::collections::HashMap;

use serde::Serialize;

use super::interval::IntervalReport;
use super::DiskSample;
use crate::analysis::declared::{DeclaredCap, AT_CAP};

/// The short window, when not asked otherwise.
pub const DEFAULT_WINDOW_NS: u64 = 100_000_000;

/// An interval needs at least this many windows for its bursts to say more than its mean.
pub const MIN_WINDOWS: u32 = 2;

/// The peaks of one direction over an interval's windows.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DirPeak {
    pub iops: f64,
    pub bytes_per_s: f64,
}

/// One device's windows over one interval, as a recording keeps them.
#[derive(Debug, Clone, PartialEq)]
pub struct DevBurst {
    pub major: u32,
    pub minor: u32,
    /// Windows measured in the interval.
    pub windows: u32,
    pub read: DirPeak,
    pub write: DirPeak,
    /// Windows in which a figure of the device's declared cap was reached (≥ AT_CAP of it);
    /// None without a cap.
    pub at_cap: Option<u32>,
    /// The most of the windows' time the device can have been busy (the module doc), to
    /// 1e-4; None from a recording older than it.
    pub busy_max: Option<f64>,
}

/// Every device's windows over the interval that starts at `start_mono_ns` (the `#P` line).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BurstSample {
    pub start_mono_ns: u64,
    pub window_ns: u64,
    pub devs: Vec<DevBurst>,
}

/// What a row shows of one direction's bursts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BurstDir {
    /// The highest window's IOPS and MB/s (decimal).
    pub peak_iops: f64,
    #[serde(rename = "peak_MB/s")]
    pub peak_mb_per_s: f64,
    /// The peak IOPS over the interval's mean IOPS; null when the direction was idle.
    pub peak_to_mean: Option<f64>,
}

/// What a row shows of its bursts (`burst` in `stat --json`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Burst {
    /// The window's length asked for, ms; each window's own is measured.
    pub window_ms: f64,
    pub windows: u32,
    /// Where the windows come from: "diskstats" (sampled at the window).
    pub source: &'static str,
    pub read: BurstDir,
    pub write: BurstDir,
    /// The share of windows in which a figure of the declared cap was reached (≥ 95 % of
    /// it); null without a declared cap.
    pub at_cap_share: Option<f64>,
    /// The most of the interval the device can have been busy, by its windows (the module
    /// doc); what learning places the interval's level by (learn/points.rs). Not shown.
    #[serde(skip)]
    pub busy_max: Option<f64>,
}

/// One device's windows over an exporter's scrape interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScrapeBurst {
    pub window_ns: u64,
    pub windows: u32,
    pub read: DirPeak,
    pub write: DirPeak,
    /// The mean IOPS over the same windows.
    pub mean_r_iops: f64,
    pub mean_w_iops: f64,
}

/// One window's completions and sectors, per direction.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    reads: u64,
    rsect: u64,
    writes: u64,
    wsect: u64,
    /// Time in flight, all operations (ms).
    weighted_ms: u64,
}

/// Each device's counters of one sample, by device number.
type DevCounts = HashMap<(u32, u32), Counts>;

/// One window's rates.
#[derive(Debug, Clone, Copy, Default)]
struct Window {
    /// Its measured length, s.
    dt: f64,
    r_iops: f64,
    r_bps: f64,
    w_iops: f64,
    w_bps: f64,
    /// The most of the window the device can have been busy: its requests' time in flight,
    /// at most its length (s).
    busy_max_s: f64,
}

/// The windows of the live run: fed every sample the collector reads (its ticks' and those in
/// between), closed at each interval.
#[derive(Debug, Clone)]
pub struct BurstTracker {
    window_ns: u64,
    /// The last sample's counters and when it was read.
    prev: Option<(u64, DevCounts)>,
    /// The windows since the interval began, per device.
    windows: HashMap<(u32, u32), Vec<Window>>,
    /// The same windows since the learner's last interval, where it closes intervals of
    /// its own apart from `windows`' (the exporter: scrapes take `windows`, the learner's
    /// seconds these); None when not asked for ([`BurstTracker::keep_for_learning`]).
    learned: Option<HashMap<(u32, u32), Vec<Window>>>,
}

impl BurstTracker {
    pub fn new(window_ns: u64) -> BurstTracker {
        BurstTracker {
            window_ns,
            prev: None,
            windows: HashMap::new(),
            learned: None,
        }
    }

    /// Keep the windows for a learner closing its own intervals too, from now on
    /// ([`BurstTracker::close_learned`]).
    pub fn keep_for_learning(&mut self) {
        self.learned.get_or_insert_with(HashMap::new);
    }

    pub fn window_ns(&self) -> u64 {
        self.window_ns
    }

    /// When the next window ends (monotonic ns); None before the first sample.
    pub fn due_at(&self) -> Option<u64> {
        self.prev
            .as_ref()
            .map(|(t, _)| t.saturating_add(self.window_ns))
    }

    /// Does a sample read at `mono_ns` end a window, `early_ns` before it is due at the
    /// latest? (A sample read for something else, the hindsight ring's or a scrape's, would
    /// cut a window short: a few ms of completions are a noisy rate.)
    pub fn takes(&self, mono_ns: u64, early_ns: u64) -> bool {
        self.due_at()
            .map_or(true, |due| mono_ns.saturating_add(early_ns) >= due)
    }

    /// A sample: the window since the one before is measured. A counter that went back (a
    /// re-created device) gives no window; nor does a zero-length one.
    pub fn push(&mut self, s: &DiskSample) {
        let cur: DevCounts = s
            .lines
            .iter()
            .map(|l| {
                let c = Counts {
                    reads: l.reads,
                    rsect: l.read_sectors,
                    writes: l.writes,
                    wsect: l.write_sectors,
                    weighted_ms: l.weighted_ms,
                };
                ((l.major, l.minor), c)
            })
            .collect();
        if let Some((t0, prev)) = &self.prev {
            let dt = s.mono_ns.saturating_sub(*t0) as f64 / 1e9;
            if dt > 0.0 {
                for (k, c) in &cur {
                    let Some(p) = prev.get(k) else { continue };
                    let d = |a: u64, b: u64| b.checked_sub(a).map(|x| x as f64 / dt);
                    let w = (|| {
                        Some(Window {
                            dt,
                            r_iops: d(p.reads, c.reads)?,
                            r_bps: d(p.rsect, c.rsect)? * 512.0,
                            w_iops: d(p.writes, c.writes)?,
                            w_bps: d(p.wsect, c.wsect)? * 512.0,
                            busy_max_s: (d(p.weighted_ms, c.weighted_ms)? * dt / 1e3).min(dt),
                        })
                    })();
                    if let Some(w) = w {
                        if let Some(l) = &mut self.learned {
                            l.entry(*k).or_default().push(w);
                        }
                        self.windows.entry(*k).or_default().push(w);
                    }
                }
            }
        }
        self.prev = Some((s.mono_ns, cur));
    }

    /// The interval `r` ends: each of its devices' windows summed up (only devices with at
    /// least [`MIN_WINDOWS`]), judged against the row's declared cap; the windows start anew.
    pub fn close(&mut self, r: &IntervalReport) -> BurstSample {
        let windows = std::mem::take(&mut self.windows);
        self.sum_up(windows, r)
    }

    /// The learner's interval `r` ends ([`BurstTracker::keep_for_learning`]): its windows summed
    /// up as [`BurstTracker::close`] does, apart from the scrapes'; empty when not kept.
    pub fn close_learned(&mut self, r: &IntervalReport) -> BurstSample {
        let windows = self.learned.as_mut().map(std::mem::take);
        self.sum_up(windows.unwrap_or_default(), r)
    }

    fn sum_up(
        &self,
        mut windows: HashMap<(u32, u32), Vec<Window>>,
        r: &IntervalReport,
    ) -> BurstSample {
        let devs = r
            .devices
            .iter()
            .filter_map(|d| {
                let w = windows.remove(&(d.major, d.minor))?;
                summarise(d.major, d.minor, &w, d.cap.as_ref())
            })
            .collect();
        BurstSample {
            start_mono_ns: r.start_mono_ns,
            window_ns: self.window_ns,
            devs,
        }
    }

    /// The windows since the last call, per device with at least [`MIN_WINDOWS`] (an
    /// exporter's scrape: the peaks over the scrape interval, and the mean over the same
    /// windows); the windows start anew.
    pub fn close_all(&mut self) -> HashMap<(u32, u32), ScrapeBurst> {
        std::mem::take(&mut self.windows)
            .into_iter()
            .filter_map(|(k, w)| {
                let d = summarise(k.0, k.1, &w, None)?;
                let t: f64 = w.iter().map(|x| x.dt).sum();
                let mean = |f: fn(&Window) -> f64| w.iter().map(|x| f(x) * x.dt).sum::<f64>() / t;
                Some((
                    k,
                    ScrapeBurst {
                        window_ns: self.window_ns,
                        windows: d.windows,
                        read: d.read,
                        write: d.write,
                        mean_r_iops: mean(|x| x.r_iops),
                        mean_w_iops: mean(|x| x.w_iops),
                    },
                ))
            })
            .collect()
    }

    /// No interval closed (the first sample): the windows so far belong to none.
    pub fn forget_windows(&mut self) {
        self.windows.clear();
    }
}

fn summarise(major: u32, minor: u32, w: &[Window], cap: Option<&DeclaredCap>) -> Option<DevBurst> {
    let n = u32::try_from(w.len()).ok()?;
    if n < MIN_WINDOWS {
        return None;
    }
    let max = |f: fn(&Window) -> f64| w.iter().map(f).fold(0.0, f64::max);
    // At the precision the `#P` line keeps (IOPS to 0.1, bytes/s to 1), so a replay shows
    // the live figures exactly.
    let tenth = |x: f64| (x * 10.0).round() / 10.0;
    let at_cap = cap.map(|c| w.iter().filter(|x| reaches(x, c)).count() as u32);
    let t: f64 = w.iter().map(|x| x.dt).sum();
    let busy: f64 = w.iter().map(|x| x.busy_max_s).sum();
    let busy_max = (t > 0.0).then(|| ((busy / t).min(1.0) * 1e4).round() / 1e4);
    Some(DevBurst {
        major,
        minor,
        windows: n,
        read: DirPeak {
            iops: tenth(max(|x| x.r_iops)),
            bytes_per_s: max(|x| x.r_bps).round(),
        },
        write: DirPeak {
            iops: tenth(max(|x| x.w_iops)),
            bytes_per_s: max(|x| x.w_bps).round(),
        },
        at_cap,
        busy_max,
    })
}

/// Did a window reach any figure of the cap (≥ AT_CAP of it, the rule an interval is
/// judged at its cap by)?
fn reaches(w: &Window, c: &DeclaredCap) -> bool {
    let at = |rate: f64, cap: Option<f64>| cap.is_some_and(|c| c > 0.0 && rate >= c * AT_CAP);
    at(w.r_iops + w.w_iops, c.iops)
        || at(w.r_iops, c.read_iops)
        || at(w.w_iops, c.write_iops)
        || at(w.r_bps + w.w_bps, c.bytes_per_s)
        || at(w.r_bps, c.read_bytes_per_s)
        || at(w.w_bps, c.write_bytes_per_s)
}

/// Each row of `r` gets its bursts from `b` (a recording's `#P` line, or the live tracker's
/// close), when `b` is of this interval. The ratio is the peak over the row's own mean.
pub fn attach(r: &mut IntervalReport, b: &BurstSample) {
    if b.start_mono_ns != r.start_mono_ns {
        return;
    }
    for d in &mut r.devices {
        let Some(x) = b
            .devs
            .iter()
            .find(|x| x.major == d.major && x.minor == d.minor)
        else {
            continue;
        };
        let Ok(rates) = &d.rates else { continue };
        let dir = |p: &DirPeak, mean: f64| BurstDir {
            peak_iops: p.iops,
            peak_mb_per_s: p.bytes_per_s / 1e6,
            peak_to_mean: (mean > 0.0).then(|| p.iops / mean),
        };
        d.burst = Some(Burst {
            window_ms: b.window_ns as f64 / 1e6,
            windows: x.windows,
            source: "diskstats",
            read: dir(&x.read, rates.r_s),
            write: dir(&x.write, rates.w_s),
            at_cap_share: x.at_cap.map(|n| f64::from(n) / f64::from(x.windows)),
            busy_max: x.busy_max,
        });
    }
}

/// The `#P` line: `#P <start_mono_ns> <window_ns>` and a token per device,
/// `<major>:<minor>/<windows>/<read iops>/<read B/s>/<write iops>/<write B/s>/<at cap or ->`
/// and `/<busy_max>` (readers older than it stop at the seventh field).
pub fn format(b: &BurstSample) -> String {
    let mut s = format!("#P {} {}", b.start_mono_ns, b.window_ns);
    for d in &b.devs {
        s.push_str(&format!(
            " {}:{}/{}/{:.1}/{:.0}/{:.1}/{:.0}/{}{}",
            d.major,
            d.minor,
            d.windows,
            d.read.iops,
            d.read.bytes_per_s,
            d.write.iops,
            d.write.bytes_per_s,
            d.at_cap.map_or("-".to_string(), |n| n.to_string()),
            d.busy_max.map_or(String::new(), |b| format!("/{b:.4}"))
        ));
    }
    s.push('\n');
    s
}

/// The fields after `#P`; None when malformed.
pub fn parse(text: &str) -> Option<BurstSample> {
    let mut f = text.split_whitespace();
    let start_mono_ns = f.next()?.parse().ok()?;
    let window_ns = f.next()?.parse().ok()?;
    let devs = f
        .map(|tok| {
            let mut p = tok.split('/');
            let (maj, min) = p.next()?.split_once(':')?;
            let num = |s: Option<&str>| {
                s?.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
            };
            let windows = p.next()?.parse().ok()?;
            let read = DirPeak {
                iops: num(p.next())?,
                bytes_per_s: num(p.next())?,
            };
            let write = DirPeak {
                iops: num(p.next())?,
                bytes_per_s: num(p.next())?,
            };
            let at_cap = match p.next()? {
                "-" => None,
                n => Some(n.parse().ok()?),
            };
            let busy_max = match p.next() {
                None => None,
                b => Some(num(b).filter(|x| *x <= 1.0)?),
            };
            Some(DevBurst {
                major: maj.parse().ok()?,
                minor: min.parse().ok()?,
                windows,
                read,
                write,
                at_cap,
                busy_max,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(BurstSample {
        start_mono_ns,
        window_ns,
        devs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::interval::StatEngine;
    use crate::sys::diskstats::parse as parse_stats;

    const MS: u64 = 1_000_000;

    fn engine() -> StatEngine {
        let sel = crate::monitor::select::Selection {
            patterns: vec!["loop0".into()],
            ..Default::default()
        };
        let mut e = StatEngine::new(sel, false);
        e.set_meta(
            7,
            0,
            "loop0",
            crate::monitor::select::DeviceMeta {
                kind: Some(crate::sys::device::DevKind::Loop),
                display_name: "loop0".into(),
            },
        );
        e
    }

    fn sample(mono_ns: u64, reads: u64, writes: u64) -> DiskSample {
        DiskSample {
            mono_ns,
            wall_ns: 1_795_000_000_000_000_000 + mono_ns as i64,
            lines: parse_stats(&format!(
                "   7 0 loop0 {reads} 0 {} 0 {writes} 0 {} 0 0 0 0 0 0 0 0 0 0\n",
                reads * 8,
                writes * 8
            ))
            .lines,
        }
    }

    /// One second in ten windows, reads only in the odd ones (200 per window: 2,000/s in a
    /// burst, 1,000/s on average), a steady 50 writes per window; the interval closed by an
    /// engine over the same two ends.
    fn second(cap: Option<DeclaredCap>) -> (IntervalReport, BurstSample) {
        let mut e = engine();
        if let Some(c) = cap {
            e.set_caps(vec![("loop0".into(), c)]);
        }
        let mut t = BurstTracker::new(100 * MS);
        let (mut r, mut w) = (0, 0);
        let first = sample(0, 0, 0);
        t.push(&first);
        assert!(e.push(first).is_none());
        let mut last = None;
        for i in 1..=10u64 {
            if i % 2 == 1 {
                r += 200;
            }
            w += 50;
            let s = sample(i * 100 * MS, r, w);
            t.push(&s);
            last = Some(s);
        }
        let mut rep = e.push(last.unwrap()).unwrap();
        let b = t.close(&rep);
        attach(&mut rep, &b);
        (rep, b)
    }

    #[test]
    fn the_peak_window_and_the_mean_of_the_interval() {
        let (rep, b) = second(None);
        assert_eq!(b.devs.len(), 1);
        let x = rep.devices[0].burst.unwrap();
        assert_eq!(x.windows, 10);
        assert!((x.read.peak_iops - 2000.0).abs() < 1e-6, "{x:?}");
        assert!((x.read.peak_mb_per_s - 2000.0 * 4096.0 / 1e6).abs() < 1e-6);
        assert!((x.read.peak_to_mean.unwrap() - 2.0).abs() < 1e-9);
        // A steady load: peak = mean.
        assert!((x.write.peak_to_mean.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(x.at_cap_share, None);
        assert_eq!(x.source, "diskstats");
    }

    #[test]
    fn the_share_of_windows_at_the_declared_cap() {
        let cap = DeclaredCap {
            iops: Some(2000.0),
            ..Default::default()
        };
        // The bursting windows do 2,500 IOPS (reads and writes together), the others 500.
        let (rep, _) = second(Some(cap));
        assert_eq!(rep.devices[0].burst.unwrap().at_cap_share, Some(0.5));
    }

    #[test]
    fn the_line_reads_back_and_older_readers_skip_it() {
        let (_, b) = second(None);
        let line = format(&b);
        assert!(line.starts_with("#P 0 100000000 7:0/10/2000.0/"), "{line}");
        let back = parse(line.strip_prefix("#P ").unwrap().trim_end()).unwrap();
        assert_eq!(back.devs[0].windows, 10);
        assert_eq!(back.devs[0].read.iops, 2000.0);
        assert_eq!(back.devs[0].at_cap, None);
        // In a recording: an event before its sample; a bad one names its line.
        let text =
            format!("#iosat-record 1\nR 1 0\n{line}T 1 2\n 7 0 loop0 1 0 8 0 0 0 0 0 0 0 0\n");
        let (ev, _) = crate::monitor::record::parse(&text).unwrap();
        assert!(matches!(&ev[1], crate::monitor::record::Event::Burst(x) if *x == back));
        let bad = crate::monitor::record::parse(
            "#iosat-record 1\n#P 1 x\nT 1 2\n 7 0 loop0 1 0 8 0 0 0 0 0 0 0 0\n",
        )
        .unwrap_err();
        assert_eq!(bad.line, 2);
        assert!(bad.reason.contains("burst"), "{}", bad.reason);
    }

    #[test]
    fn the_windows_bound_the_busy_time_by_the_time_in_flight() {
        // Ten windows of 100 ms: reads in the odd ones, 240 ms in flight in each (a burst of
        // 2.4 in flight, busy throughout: counted as 100 ms), nothing in the even ones; one
        // more pair of windows at 30 ms in flight each (at most 30 % busy).
        let at = |mono_ns: u64, reads: u64, weighted: u64| DiskSample {
            mono_ns,
            wall_ns: 1_795_000_000_000_000_000 + mono_ns as i64,
            lines: parse_stats(&format!(
                "   7 0 loop0 {reads} 0 {} 0 0 0 0 0 0 0 {weighted} 0 0 0 0 0 0\n",
                reads * 8
            ))
            .lines,
        };
        let mut e = engine();
        let mut t = BurstTracker::new(100 * MS);
        let (mut r, mut w) = (0, 0);
        t.push(&at(0, 0, 0));
        e.push(at(0, 0, 0));
        let mut last = None;
        for i in 1..=10u64 {
            if i % 2 == 1 {
                (r, w) = (r + 200, w + 240);
            }
            let s = at(i * 100 * MS, r, w);
            t.push(&s);
            last = Some(s);
        }
        let rep = e.push(last.unwrap()).unwrap();
        let b = t.close(&rep);
        assert_eq!(b.devs[0].busy_max, Some(0.5), "{b:?}");
        // Over the whole interval the time in flight (1.2 s) allows it busy throughout: the
        // windows say half.
        assert!(rep.devices[0].rates.as_ref().unwrap().aqu_sz > 1.0);
        for i in 11..=12u64 {
            (r, w) = (r + 10, w + 30);
            t.push(&at(i * 100 * MS, r, w));
        }
        let rep = e.push(at(12 * 100 * MS, r, w)).unwrap();
        let b = t.close(&rep);
        assert_eq!(b.devs[0].busy_max, Some(0.3), "{b:?}");
        // The `#P` line keeps it; a line without it (an older recording) reads as unknown.
        let line = format(&b);
        assert!(line.trim_end().ends_with("/-/0.3000"), "{line}");
        let back = parse(line.strip_prefix("#P ").unwrap().trim_end()).unwrap();
        assert_eq!(back, b);
        let old = parse("0 100000000 7:0/10/2000.0/8192000/0.0/0/-").unwrap();
        assert_eq!(old.devs[0].busy_max, None);
        assert!(parse("0 100000000 7:0/10/2000.0/8192000/0.0/0/-/1.5").is_none());
    }

    #[test]
    fn one_window_says_nothing_and_a_counter_going_back_gives_none() {
        let mut t = BurstTracker::new(100 * MS);
        t.push(&sample(0, 10, 0));
        t.push(&sample(100 * MS, 5, 0));
        t.push(&sample(200 * MS, 50, 0));
        // The window whose reads went back is not one: one window left, fewer than two.
        let mut e = engine();
        e.push(sample(0, 10, 0));
        let rep = e.push(sample(200 * MS, 50, 0)).unwrap();
        assert!(t.close(&rep).devs.is_empty());
    }
}
