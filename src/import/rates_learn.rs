//! Production learning over a log of rates (`iostat -x`, text or JSON): each device's series
//! run through the same [`Learner`] live `iosat stat` runs, so that `analyze` of an iostat log
//! says what live learning over the same intervals would have said (issue 26: one
//! estimator). iostat prints rates, not counters; the requests in flight per direction are
//! Little's law over its columns (r/s × r_await, exactly Δrd_ticks/Δt, the same figure stat
//! computes from the counters, to iostat's two decimals). The interval is the difference of
//! the `-t` timestamps; without them it is taken as 1 s and a note says so. Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, sys/.

use super::{DeviceSeries, FileImport};
use crate::analysis::device::DeviceSample;
use crate::learn::{LearnSpec, Learner};
use crate::monitor::DiskRates;

/// Seconds since midnight of an iostat `-t` timestamp (`11/22/26 03:53:24`, `11/22/2026
/// 03:53:24 AM`, `2026-11-22T03:53:26+0000`): the first `H:MM:SS` in it, with AM/PM.
pub fn seconds_of_day(t: &str) -> Option<f64> {
    let pm = t.contains("PM") || t.contains("pm");
    let am = t.contains("AM") || t.contains("am");
    // The time part: after a 'T' or a space, up to a zone or the end.
    let part = t
        .split(|c: char| c.is_whitespace() || c == 'T')
        .find(|p| p.matches(':').count() == 2)?;
    let hms: String = part
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ':' || *c == '.' || *c == ',')
        .collect();
    let mut it = hms.split(':');
    let h: f64 = it.next()?.parse().ok()?;
    let m: f64 = it.next()?.parse().ok()?;
    let s: f64 = super::num(it.next()?)?;
    let h = match (am, pm) {
        (true, false) if h == 12.0 => 0.0,
        (false, true) if h < 12.0 => h + 12.0,
        _ => h,
    };
    (h < 24.0 && m < 60.0 && s < 61.0).then_some(h * 3600.0 + m * 60.0 + s)
}

/// The rates of one iostat interval, as DiskRates (None: the layout printed no directions,
/// `iostat -xs`). A direction without its await (no request completed) carries no requests.
fn rates_of(s: &DeviceSample, interval_s: f64) -> Option<DiskRates> {
    let dir = |per_s: Option<f64>, await_ms: Option<f64>| match (per_s, await_ms) {
        (Some(n), Some(a)) if n > 0.0 && a.is_finite() && a >= 0.0 => (n, n * a / 1e3),
        _ => (0.0, 0.0),
    };
    s.r_per_s.or(s.w_per_s)?;
    let (r_s, read_concurrency) = dir(s.r_per_s, s.r_await);
    let (w_s, write_concurrency) = dir(s.w_per_s, s.w_await);
    Some(DiskRates {
        interval_s,
        r_s,
        w_s,
        rkb_s: s.rkb_per_s.unwrap_or(0.0),
        wkb_s: s.wkb_per_s.unwrap_or(0.0),
        r_await: s.r_await,
        w_await: s.w_await,
        aqu_sz: s.aqu_sz.unwrap_or(0.0),
        util_pct: s.util_pct.unwrap_or(0.0),
        read_concurrency,
        write_concurrency,
        ..DiskRates::default()
    })
}

/// The intervals of a series, in seconds, from its timestamps (an interval that cannot be
/// told, the first or across a clock step: the median of those that can, else 1 s), and
/// whether any had to be assumed.
fn intervals_s(samples: &[DeviceSample]) -> (Vec<f64>, bool) {
    let secs: Vec<Option<f64>> = samples
        .iter()
        .map(|s| s.time.as_deref().and_then(seconds_of_day))
        .collect();
    let mut known: Vec<Option<f64>> = vec![None; samples.len()];
    for i in 1..samples.len() {
        if let (Some(a), Some(b)) = (secs[i - 1], secs[i]) {
            // Across midnight the time of day wraps.
            let d = (b - a).rem_euclid(86_400.0);
            // Two reports with the same stamp (several blocks of one report are one
            // sample each) or a day apart tell nothing.
            if d > 0.0 && d < 3600.0 {
                known[i] = Some(d);
            }
        }
    }
    let mut ds: Vec<f64> = known.iter().flatten().copied().collect();
    ds.sort_by(f64::total_cmp);
    let typical = ds.get(ds.len() / 2).copied();
    let assumed = typical.is_none();
    let typical = typical.unwrap_or(1.0);
    (
        known.into_iter().map(|d| d.unwrap_or(typical)).collect(),
        assumed,
    )
}

/// What live learning says of a device at the last interval of its iostat series (None:
/// the layout printed no directions). The second value: the interval had to be assumed.
pub fn learn_series(d: &DeviceSeries) -> (Option<crate::learn::Learned>, bool) {
    let (dts, assumed) = intervals_s(&d.samples);
    let mut learner = Learner::new(LearnSpec::default());
    let mut wall_ns: i64 = 0;
    let mut last = None;
    for (s, dt) in d.samples.iter().zip(dts) {
        wall_ns = wall_ns.saturating_add((dt * 1e9) as i64);
        if let Some(r) = rates_of(s, dt) {
            last = Some(learner.observe_rates(&d.device, wall_ns, &r));
        }
    }
    // The device at rest where the last interval judged by nothing learned
    // (Learned::for_summary).
    let last =
        crate::analysis::learned::Learned::for_summary(last.map(|l| l.as_ref().clone()), || {
            learner.at_rest(&d.device)
        });
    (last, assumed)
}

/// Learn every device of an iostat import, noting when the interval was assumed.
pub fn learn(mut out: FileImport) -> FileImport {
    let mut assumed_any = false;
    for d in &mut out.devices {
        let (l, assumed) = learn_series(d);
        // Said only when something judges from the assumed intervals (a baseline, or its
        // estimate: Learned::judged_by).
        assumed_any |= assumed && l.as_ref().is_some_and(|l| l.judged_by().is_some());
        d.learned = l;
    }
    if assumed_any {
        out.notes.push(format!(
            "{}: no iostat -t timestamps: each interval taken as 1 s for learning (the \
             learned figures hold; the counts of requests behind them scale with the real \
             interval)",
            out.path.display()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_of_every_form() {
        assert_eq!(seconds_of_day("11/22/26 03:53:24"), Some(14_004.0));
        assert_eq!(
            seconds_of_day("11/22/2026 03:53:24 PM"),
            Some(14_004.0 + 43_200.0)
        );
        assert_eq!(seconds_of_day("11/22/2026 12:00:01 AM"), Some(1.0));
        assert_eq!(seconds_of_day("2026-11-22T03:53:26+0000"), Some(14_006.0));
        assert_eq!(seconds_of_day("no time"), None);
    }

    fn sample(time: &str, r_s: f64, r_await: f64) -> DeviceSample {
        DeviceSample {
            time: Some(time.into()),
            r_per_s: Some(r_s),
            w_per_s: Some(0.0),
            rkb_per_s: Some(r_s * 4.0),
            wkb_per_s: Some(0.0),
            r_await: Some(r_await),
            ..DeviceSample::default()
        }
    }

    /// 500 reads a second of 4 KiB at 2 ms, one in flight: `sample(_, 500.0, 2.0)` as live
    /// rates.
    fn reads_at_one() -> DiskRates {
        DiskRates {
            interval_s: 1.0,
            r_s: 500.0,
            rkb_s: 2000.0,
            r_await: Some(2.0),
            read_concurrency: 1.0,
            ..DiskRates::default()
        }
    }

    #[test]
    fn an_iostat_series_is_learned_like_live_intervals() {
        // 40 s at one read in flight of 2 ms (500 r/s), across midnight.
        let samples: Vec<DeviceSample> = (0..40)
            .map(|i| {
                let t = (86_380 + i) % 86_400;
                let time = format!("11/22/26 {:02}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
                sample(&time, 500.0, 2.0)
            })
            .collect();
        let d = DeviceSeries {
            device: "sda".into(),
            samples,
            shown_by_default: true,
            learned: None,
            split: Vec::new(),
        };
        let (l, assumed) = learn_series(&d);
        assert!(!assumed);
        let l = l.unwrap();
        assert_eq!(l.intervals, 40);
        assert!((l.learned_s - 40.0).abs() < 1e-9, "{}", l.learned_s);
        let b = l.baseline_latency_ns.expect("a baseline");
        assert!((b / 2e6 - 1.0).abs() < 1e-6, "{b}");
        assert_eq!(l.knee_concurrency, None);
        assert!((l.knee_at_least.unwrap() - 1.0).abs() < 1e-6);
        // Live learning over the same intervals: the same judgement.
        let mut live = Learner::new(LearnSpec::default());
        let mut last = None;
        for i in 1..=40i64 {
            last = Some(live.observe_rates("sda", i * 1_000_000_000, &reads_at_one()));
        }
        assert_eq!(last.unwrap().as_ref(), &l);
    }

    #[test]
    fn a_series_that_ends_on_a_few_writes_keeps_the_reads_baseline() {
        // 40 s of reads at one in flight of 2 ms, then one interval of 2 writes and no read
        // (a journal's flush at the end of a log): the last interval's judgement is the
        // writes', which learned nothing; the summary is the device at rest, the reads'.
        let mut samples: Vec<DeviceSample> = (0..40)
            .map(|i| sample(&format!("11/22/26 10:00:{i:02}"), 500.0, 2.0))
            .collect();
        samples.push(DeviceSample {
            time: Some("11/22/26 10:00:40".into()),
            r_per_s: Some(0.0),
            w_per_s: Some(2.0),
            rkb_per_s: Some(0.0),
            wkb_per_s: Some(8.0),
            w_await: Some(0.5),
            ..DeviceSample::default()
        });
        let d = DeviceSeries {
            device: "sda".into(),
            samples,
            shown_by_default: true,
            learned: None,
            split: Vec::new(),
        };
        let (l, _) = learn_series(&d);
        let l = l.unwrap();
        assert_eq!(
            l.direction,
            Some(crate::analysis::state::Dir::Read),
            "{l:?}"
        );
        let b = l.baseline_latency_ns.expect("the reads' baseline");
        assert!((b / 2e6 - 1.0).abs() < 1e-6, "{b}");
        assert!(l
            .summary
            .as_ref()
            .unwrap()
            .as_str()
            .starts_with("baseline 2.00 ms"));
        // What live learning said in that interval: the writes', nothing judged.
        let mut live = Learner::new(LearnSpec::default());
        let mut last = None;
        for i in 1..=41i64 {
            let r = if i <= 40 {
                reads_at_one()
            } else {
                DiskRates {
                    interval_s: 1.0,
                    w_s: 2.0,
                    wkb_s: 8.0,
                    w_await: Some(0.5),
                    write_concurrency: 0.001,
                    ..DiskRates::default()
                }
            };
            last = Some(live.observe_rates("sda", i * 1_000_000_000, &r));
        }
        let last = last.unwrap();
        assert!(last.judged_by().is_none(), "{last:?}");
        assert_eq!(live.at_rest("sda").as_ref(), Some(&l));
    }

    #[test]
    fn without_timestamps_the_interval_is_assumed() {
        let mut s = sample("", 500.0, 2.0);
        s.time = None;
        let d = DeviceSeries {
            device: "sda".into(),
            samples: vec![s; 5],
            shown_by_default: true,
            learned: None,
            split: Vec::new(),
        };
        let (l, assumed) = learn_series(&d);
        assert!(assumed);
        assert_eq!(l.unwrap().intervals, 5);
    }

    #[test]
    fn the_assumed_interval_is_noted_once_a_baseline_rests_on_it() {
        let mut s = sample("", 500.0, 2.0);
        s.time = None;
        let import = |n: usize| {
            let mut f = FileImport::new(std::path::Path::new("io.log"), super::super::Tool::Iostat);
            f.devices.push(DeviceSeries {
                device: "sda".into(),
                samples: vec![s.clone(); n],
                shown_by_default: true,
                learned: None,
                split: Vec::new(),
            });
            learn(f)
        };
        // Too few intervals for a baseline: nothing to note.
        assert!(import(5).notes.is_empty());
        let f = import(40);
        assert!(f.devices[0]
            .learned
            .as_ref()
            .unwrap()
            .baseline_latency_ns
            .is_some());
        assert_eq!(f.notes.len(), 1, "{:?}", f.notes);
        assert!(f.notes[0].contains("taken as 1 s"), "{:?}", f.notes);
    }
}
