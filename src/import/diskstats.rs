//! Raw /proc/diskstats samples → per-device [`DeviceSample`] series: iosat recordings (`iosat stat
//! --record`) and pt-diskstats `--save-samples` / pt-stalk `*-diskstats` files. No parser of its
//! own: the one replay of `iosat stat --replay` (monitor::replay) computes each interval's
//! DiskRates, which become the same samples an `iostat -x` log gives, for the same diagnosis. Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, sys/.

use super::{perr, DeviceSeries, FileImport, Tool};
use crate::analysis::device::DeviceSample;
use crate::analysis::state::Judgement;
use crate::error::Result;
use crate::monitor::blklat::OpSplit;
use crate::monitor::interval::DeviceRow;
use crate::monitor::record::Source;
use crate::monitor::replay::{Replay, Step};
use crate::monitor::select::Selection;
use crate::monitor::DiskRates;
use crate::units::iso_utc;
use std::path::Path;

/// Is this an iosat recording or a pt-diskstats/pt-stalk sample file? Decided by the first
/// line that is not blank: the recording header, an `R`/`T` marker, or a `TS <epoch>` stamp.
pub fn detect(text: &str) -> Option<Tool> {
    let first = text.lines().find(|l| !l.trim().is_empty())?.trim_end();
    if first.starts_with("#iosat-record") {
        return Some(Tool::Iosat);
    }
    let mut f = first.split_ascii_whitespace();
    let (marker, n) = (f.next()?, f.next()?);
    let numeric = n
        .split_once('.')
        .map_or(n, |(a, _)| a)
        .bytes()
        .all(|b| b.is_ascii_digit());
    match marker {
        "TS" if numeric => Some(Tool::PtDiskstats),
        "R" | "T" if numeric => Some(Tool::Iosat),
        _ => None,
    }
}

/// One interval of one device in iostat's units. aqu-sz is the sum of the per-direction
/// times (kernel >= 5.7), so `await` is left to the request-weighted mean of the directions.
fn sample(time: String, r: &DiskRates) -> DeviceSample {
    DeviceSample {
        time: Some(time),
        r_per_s: Some(r.r_s),
        w_per_s: Some(r.w_s),
        tps: None,
        kb_per_s: None,
        d_per_s: r.d_s,
        f_per_s: r.f_s,
        rkb_per_s: Some(r.rkb_s),
        wkb_per_s: Some(r.wkb_s),
        r_await: r.r_await,
        w_await: r.w_await,
        d_await: r.d_await,
        f_await: r.f_await,
        await_ms: None,
        aqu_sz: Some(r.aqu_sz),
        util_pct: Some(r.util_pct),
        svctm: None,
    }
}

struct Track {
    major: u32,
    minor: u32,
    kernel_name: String,
    series: DeviceSeries,
    skipped: usize,
    /// Each interval's share of the cap the recorded run declared (`K` lines).
    caps: Vec<crate::analysis::declared::CapUse>,
    /// Each interval's judgement and its queue/device split (reads, writes; issue 40).
    splits: Vec<(Judgement, [Option<OpSplit>; 2])>,
    /// The busiest short window of the recording, with its interval's end (issue 41).
    peak: Option<BurstPeak>,
    /// Intervals with windows, and those whose peak-to-mean was 2 or more.
    burst_intervals: (u32, u32),
    /// Who loaded the device over the recording (issue 40: `#G` lines).
    cgroups: crate::monitor::cgroups::RunCgroups,
}

/// The busiest short window a recording's `#P` lines hold for a device.
struct BurstPeak {
    iops: f64,
    ratio: Option<f64>,
    dir: &'static str,
    end_wall_ns: i64,
    window_ms: f64,
    source: &'static str,
}

impl Track {
    /// One interval's short windows (ended at `end_wall_ns`): counted, and kept when its
    /// busiest window is the recording's busiest so far.
    fn add_burst(&mut self, b: &crate::monitor::burst::Burst, end_wall_ns: i64) {
        if b.windows == 0 {
            return;
        }
        let worst = |x: &crate::monitor::burst::BurstDir| x.peak_to_mean.unwrap_or(0.0);
        self.burst_intervals.0 += 1;
        self.burst_intervals.1 += u32::from(worst(&b.read).max(worst(&b.write)) >= 2.0);
        for (dir, x) in [("read", &b.read), ("write", &b.write)] {
            let above = self.peak.as_ref().map_or(0.0, |p| p.iops);
            if x.peak_iops > above {
                self.peak = Some(BurstPeak {
                    iops: x.peak_iops,
                    ratio: x.peak_to_mean,
                    dir,
                    end_wall_ns,
                    window_ms: b.window_ms,
                    source: b.source,
                });
            }
        }
    }
}

/// A device's bursts over the recording, in words (None without windows).
fn burst_words(t: &Track) -> Option<String> {
    let p = t.peak.as_ref()?;
    let ratio = p
        .ratio
        .map_or(String::new(), |r| format!(" ({r:.1}x its interval's mean)"));
    let (with, bursty) = t.burst_intervals;
    Some(format!(
        "{}: bursts: the busiest {:.0} ms window ran at {:.0} {} IOPS{ratio} in the interval \
         that ended at {}; peak-to-mean 2 or more in {bursty} of {with} intervals (windows \
         sampled from {})",
        t.series.device,
        p.window_ms,
        p.iops,
        p.dir,
        iso_utc(p.end_wall_ns),
        p.source
    ))
}

fn track<'a>(tracks: &'a mut Vec<Track>, d: &DeviceRow, default: &Selection) -> &'a mut Track {
    let i = match tracks
        .iter()
        .position(|t| t.major == d.major && t.minor == d.minor && t.kernel_name == d.kernel_name)
    {
        Some(i) => i,
        None => {
            tracks.push(Track {
                major: d.major,
                minor: d.minor,
                kernel_name: d.kernel_name.clone(),
                series: DeviceSeries {
                    device: d.meta.display_name.clone(),
                    samples: Vec::new(),
                    shown_by_default: default.selects(d.major, &d.kernel_name, &d.meta),
                    learned: None,
                    split: Vec::new(),
                },
                skipped: 0,
                caps: Vec::new(),
                splits: Vec::new(),
                peak: None,
                burst_intervals: (0, 0),
                cgroups: Default::default(),
            });
            tracks.len() - 1
        }
    };
    &mut tracks[i]
}

/// The overloaded directions of a row ("write", "read and write"); None when not overloaded.
fn over_dirs(d: &DeviceRow) -> Option<String> {
    use crate::analysis::state::State;
    let j = d.judgement();
    if j.state() != State::Overloaded {
        return None;
    }
    let dirs: Vec<&str> = [&j.read, &j.write]
        .iter()
        .filter(|x| x.state == State::Overloaded)
        .map(|x| x.dir.as_str())
        .collect();
    Some(dirs.join(" and "))
}

/// A hindsight dump's incident (monitor::hindsight writes `#trigger <wall_ns> <what>
/// [<device> <directions>]` lines at its head): when it was triggered and by what, the device
/// and directions iosat judged overloaded live, and the first interval judged overloaded in
/// this analysis (`first`: its end, device, directions). Nothing for another recording.
fn incident_notes(text: &str, first: Option<(i64, String, String)>) -> Vec<String> {
    let head = text.lines().take_while(|l| l.starts_with('#'));
    let mut notes: Vec<String> = head
        .filter_map(|l| l.strip_prefix("#trigger "))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let wall: i64 = f.next()?.parse().ok()?;
            let at = iso_utc(wall);
            Some(match (f.next()?, f.next(), f.next()) {
                ("overloaded", Some(dev), Some(dirs)) => {
                    let dirs = match dirs {
                        "-" => String::new(),
                        d => format!(" ({})", d.replace(',', " and ")),
                    };
                    format!(
                        "hindsight: the incident: {dev} turned overloaded{dirs} in the interval \
                         that ended at {at}, as judged live (the dump's trigger)"
                    )
                }
                (what, _, _) => format!("hindsight: the dump was asked for ({what}) at {at}"),
            })
        })
        .collect();
    if notes.is_empty() {
        return notes;
    }
    notes.push(match first {
        Some((end, dev, dirs)) => format!(
            "hindsight: the first interval judged overloaded here ended at {} ({dev}, {dirs})",
            iso_utc(end)
        ),
        None => "hindsight: no interval judged overloaded here (without the profile or \
                 learned baseline the live run judged by, an overload cannot be judged again)"
            .to_string(),
    });
    notes
}

/// Parse a recording or a pt-diskstats/pt-stalk file into device series.
pub fn parse(path: &Path, text: &str) -> Result<FileImport> {
    // Every device is computed; which ones the report shows by default is the live run's
    // selection where the recording has it, else `iosat stat`'s default (whole disks, dm,
    // md); `--device` names any other.
    let every = Selection {
        patterns: Vec::new(),
        partitions: true,
        all: true,
    };
    let mut replay = Replay::new(text, every, false, Box::new(|_| None))
        .map_err(|e| perr(path, e.line, e.reason))?;
    // The same learner live `iosat stat` runs, in memory: what it says at the last interval
    // is what live learning over the same intervals said.
    replay
        .replayer_mut()
        .observe_with(crate::learn::in_memory());
    let source = replay.source();
    let tool = match source {
        Source::Iosat => Tool::Iosat,
        Source::PtDiskstats => Tool::PtDiskstats,
    };
    let mut out = FileImport::new(path, tool);
    // What the live run showed, where the recording says (`#S`): a recording of
    // `stat loop0` shows loop0.
    let default = replay.recorded_selection().cloned().unwrap_or_default();
    let mut tracks: Vec<Track> = Vec::new();
    let mut warnings = Vec::new();
    // The first interval judged overloaded here: its end, device and directions.
    let mut first_over: Option<(i64, String, String)> = None;
    for rep in replay.by_ref().filter_map(|s| match s {
        Ok(Step::Report(r)) => Some(r),
        Ok(Step::Warning(w)) => {
            warnings.push(format!("{}: {w}", path.display()));
            None
        }
        _ => None,
    }) {
        let time = iso_utc(rep.end_wall_ns);
        if first_over.is_none() {
            first_over = rep.devices.iter().find_map(|d| {
                over_dirs(d).map(|dirs| (rep.end_wall_ns, d.meta.display_name.clone(), dirs))
            });
        }
        for d in &rep.devices {
            let t = track(&mut tracks, d, &default);
            match &d.rates {
                Ok(r) => t.series.samples.push(sample(time.clone(), r)),
                Err(_) => t.skipped += 1,
            }
            if let Some(l) = &d.learned {
                t.series.learned = Some(l.as_ref().clone());
            }
            t.caps.extend(d.cap_use());
            if let Some(b) = &d.burst {
                t.add_burst(b, rep.end_wall_ns);
            }
            if let Some(c) = &d.cgroups {
                t.cgroups.add(c);
            }
            // The split where the recording has it, judged as stat judged the interval.
            if let Some(m) = d.latency.as_ref().and_then(|l| l.measured()) {
                let sp = [m.split(false).cloned(), m.split(true).cloned()];
                if sp.iter().flatten().any(|s| s.count > 0) && d.rates.is_ok() {
                    t.splits.push((d.judgement(), sp));
                }
            }
        }
    }
    // What learning said at each device's last interval, or the device at rest where that
    // interval judged by nothing it learned (Learned::for_summary).
    for t in &mut tracks {
        let rest = || {
            replay
                .replayer()
                .learned_at_rest(t.major, t.minor, &t.kernel_name)
        };
        t.series.learned =
            crate::analysis::learned::Learned::for_summary(t.series.learned.take(), rest);
    }
    let samples = replay.replayer().samples();
    if tracks.iter().all(|t| t.series.samples.is_empty()) {
        return Err(perr(
            path,
            text.lines().count().max(1),
            format!(
                "{samples} usable sample{}: expected at least two samples of /proc/diskstats \
                 to compute rates from",
                if samples == 1 { "" } else { "s" }
            ),
        ));
    }
    out.version = match tool {
        Tool::Iosat => text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("#iosat-record "))
            .map(|v| format!("iosat-record {}", v.trim())),
        _ => None,
    };
    out.notes.extend(file_notes(
        path, source, text, first_over, warnings, &tracks,
    ));
    out.devices = tracks
        .into_iter()
        .filter(|t| !t.series.samples.is_empty())
        .map(|mut t| {
            t.series.split = crate::monitor::judge::run_split(
                t.splits
                    .iter()
                    .map(|(j, sp)| (j, [sp[0].as_ref(), sp[1].as_ref()])),
            );
            t.series
        })
        .collect();
    Ok(out)
}

/// The file's notes (the words beside its numbers): how its rates were computed, the
/// incident, the replay's warnings, the devices without values, and each device's declared
/// cap, burst windows and cgroups.
fn file_notes(
    path: &Path,
    source: Source,
    text: &str,
    first_over: Option<(i64, String, String)>,
    mut warnings: Vec<String>,
    tracks: &[Track],
) -> Vec<String> {
    let mut notes = Vec::new();
    notes.push(match source {
        Source::Iosat => format!(
            "{}: rates from raw /proc/diskstats counters over the interval measured by the \
             monotonic clock (iosat stat's formulas)",
            path.display()
        ),
        Source::PtDiskstats => format!(
            "{}: rates from raw /proc/diskstats counters over the intervals between the TS \
             wall-clock stamps; no sysfs facts in such a file, so partitions are told from \
             disks by name",
            path.display()
        ),
    });
    notes.extend(incident_notes(text, first_over));
    notes.append(&mut warnings);
    for t in tracks.iter().filter(|t| t.series.shown_by_default) {
        if t.series.samples.is_empty() {
            notes.push(format!(
                "{}: no interval with a value (device new, reset or re-created each time)",
                t.series.device
            ));
        } else if t.skipped > 0 {
            notes.push(format!(
                "{}: {} interval{} without a value (device new, reset or re-created)",
                t.series.device,
                t.skipped,
                if t.skipped == 1 { "" } else { "s" }
            ));
        }
    }
    for t in tracks {
        // The cap the recorded run declared (issue 42), as the page says it: for any device
        // (the run named it).
        if let Some(w) = crate::analysis::declared::run_words(&t.caps) {
            notes.push(format!("{}: {w}", t.series.device));
        }
        // Windows are sampled only for the devices the run selected: each is said.
        notes.extend(burst_words(t));
        notes.extend(t.cgroups.words(&t.series.device));
    }
    notes
}

/// The span (s) of a recording's intervals for device `dev` (kernel or display name) and the
/// requests (reads and writes) /proc/diskstats counted for it over them: what the AWS
/// counters of the same period are set beside (import::amzn). None when the device has no
/// interval with a value.
pub fn totals(text: &str, dev: &str) -> Option<(f64, f64)> {
    let every = Selection {
        patterns: Vec::new(),
        partitions: true,
        all: true,
    };
    let replay = Replay::new(text, every, false, Box::new(|_| None)).ok()?;
    let (mut secs, mut requests, mut any) = (0.0, 0.0, false);
    for rep in replay.filter_map(|s| match s {
        Ok(Step::Report(r)) => Some(r),
        _ => None,
    }) {
        for d in &rep.devices {
            if d.kernel_name != dev && d.meta.display_name != dev {
                continue;
            }
            if let Ok(r) = &d.rates {
                secs += r.interval_s;
                requests += (r.r_s + r.w_s) * r.interval_s;
                any = true;
            }
        }
    }
    any.then_some((secs, requests))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::record::HEADER;

    #[test]
    fn detects_recordings_and_pt_files() {
        assert_eq!(detect("#iosat-record 1\nR 1 2\n"), Some(Tool::Iosat));
        assert_eq!(
            detect("T 5 6\n 8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n"),
            Some(Tool::Iosat)
        );
        assert_eq!(
            detect("\nTS 1344561790.012 2012-08-09 21:23:10\n"),
            Some(Tool::PtDiskstats)
        );
        assert_eq!(detect("TS x\n"), None);
        assert_eq!(detect("Device r/s\n"), None);
    }

    #[test]
    fn pt_stalk_pair_by_hand() {
        let text = "TS 100.0 x\n 8 0 sda 10 0 80 20 10 0 80 40 0 50 60\n 8 1 sda1 1 0 8 1 0 0 0 0 0 1 1\n\
                    TS 102.0 x\n 8 0 sda 210 0 1680 420 110 0 880 540 3 1050 960\n 8 1 sda1 2 0 16 2 0 0 0 0 0 2 2\n";
        let f = parse(Path::new("s.txt"), text).unwrap();
        assert_eq!(f.tool, Tool::PtDiskstats);
        let sda = &f.devices[0];
        assert!(sda.shown_by_default);
        assert!(
            !f.devices[1].shown_by_default,
            "sda1 is a partition by name"
        );
        let s = &sda.samples[0];
        // +200 reads in 400 ms, +100 writes in 500 ms, io +1000 ms, weighted +900 over 2 s.
        assert_eq!((s.r_per_s, s.w_per_s), (Some(100.0), Some(50.0)));
        assert_eq!((s.r_await, s.w_await), (Some(2.0), Some(5.0)));
        assert_eq!(s.aqu_sz, Some(0.45));
        assert_eq!(s.util_pct, Some(50.0));
        assert_eq!(s.effective_await_ms(), Some(3.0));
        assert_eq!(s.time.as_deref(), Some("1970-01-01T00:01:42.000Z"));
    }

    #[test]
    fn a_recording_shows_the_devices_its_run_showed() {
        // A disk and a loop device, two samples; `stat loop0 --record` writes `#S`.
        let body = "R 1 1000000000\nD 8:0 sda disk sda\nD 7:0 loop0 loop loop0\n\
                    T 1000000000 1000000000\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n 7 0 loop0 1 0 8 1 0 0 0 0 0 1 1\n\
                    T 2000000000 2000000000\n 8 0 sda 9 0 72 9 0 0 0 0 0 9 9\n 7 0 loop0 9 0 72 9 0 0 0 0 0 9 9\n";
        let shown = |text: &str| -> Vec<String> {
            let f = parse(Path::new("r.rec"), text).unwrap();
            f.devices
                .iter()
                .filter(|d| d.shown_by_default)
                .map(|d| d.device.clone())
                .collect()
        };
        let with = |sel: &str| body.replacen("D 8:0", &format!("#S {sel}\nD 8:0"), 1);
        // Without the line (a recording from before it): stat's default, the disk.
        assert_eq!(shown(&format!("{HEADER}{body}")), ["sda"]);
        assert_eq!(
            shown(&format!(
                "{HEADER}{}",
                with(r#"{"patterns":["loop0"],"partitions":false,"all":false}"#)
            )),
            ["loop0"]
        );
        assert_eq!(
            shown(&format!(
                "{HEADER}{}",
                with(r#"{"patterns":[],"partitions":false,"all":true}"#)
            )),
            ["sda", "loop0"]
        );
    }

    #[test]
    fn one_sample_is_not_enough() {
        let e = parse(
            Path::new("one.txt"),
            "TS 1.0\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("one.txt:2: 1 usable sample: expected at least two"),
            "{e}"
        );
    }
}
